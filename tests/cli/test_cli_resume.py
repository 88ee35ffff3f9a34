"""``kill -9`` of racer's whole process group at several points of a run, then the same command:
it resumes, repeats at most the runs that were in flight, loses none, leaves no runner (nor,
with ``--executor dask``/``ray``, any cluster process) behind, and ends with the same outputs
as an uninterrupted run of the same seed (issue 10)."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from racer.cli import EXIT_OK, main
from racer.cli.lookahead import UNUSED

from test_cli_main import ENV, PARAMS_1, RUNNER, _pids_alive, make_scenario, read_csv, read_runs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="kill -9 of a process group, /proc")

PARALLEL = 2
BUDGET = 60

# The runner of test_cli_main (same costs), plus a stall: a run on instance $RUNNER_STALL
# marks itself in arena/stalled/ and sleeps, so the test can kill racer while it is in flight.
_PID_LINE = 'with open(os.path.join("pids", str(os.getpid())), "w"):\n    pass\n'
assert _PID_LINE in RUNNER
STALL_RUNNER = RUNNER.replace(_PID_LINE, _PID_LINE + (
    'if os.environ.get("RUNNER_STALL") == inst:\n'
    '    open(os.path.join("stalled", str(os.getpid())), "w").close()\n'
    '    time.sleep(120)\n'))

# racer's console entry point, able to stall inside racer itself: with RACER_STALL=sampling,
# where an iteration after the first updates the sampling model (the previous race is over, the
# next has not begun: no run in flight); with RACER_STALL=outputs, after elites.txt is written
# and before the other outputs; with RACER_STALL=register, right after a runner started. The
# stall marks itself in $RACER_STALL_MARK.
ENTRY = """
import os, sys, time
where = os.environ.get("RACER_STALL")
if where:
    def stall(*args, **kwargs):
        open(os.environ["RACER_STALL_MARK"], "w").close()
        time.sleep(120)
    if where == "sampling":
        from racer.cli import sampler
        sampler.Sampler.update_model = stall
    elif where == "outputs":
        from racer.cli import output
        output.write_eliminations = stall
    elif where == "register":
        # A runner started, racer not yet back from starting it (it has not told its reaper).
        from racer.cli import target_runner
        target_runner.Reaper.add = stall
    else:
        raise SystemExit("unknown RACER_STALL " + where)
from racer.cli import main
sys.exit(main())
"""


def racer_args(scen, *extra):
    return ["--scenario", scen, "--parallel", str(PARALLEL), "-q", "1", "--no-report", *extra]


def scenario(folder):
    folder.mkdir()
    scen = make_scenario(folder, budget=BUDGET, params=PARAMS_1, runner=STALL_RUNNER)
    (folder / "arena" / "stalled").mkdir()
    return scen


def n_lines(path):
    return len(path.read_text().splitlines()) if path.exists() else 0


def wait_until(condition, proc, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        if condition():
            return True
        time.sleep(0.01)
    return False


def wait_dead(pids, limit=10.0):
    """The ones of ``pids`` still alive (not zombies) after up to ``limit`` seconds."""
    deadline = time.monotonic() + limit
    alive = [p for p in pids if _alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _alive(p)]
    return alive


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def tagged(tag):
    """PIDs of the live processes whose environment holds RESUME_TEST_TAG=tag: everything
    racer started (its runners, a local cluster's processes) inherits it."""
    needle = f"RESUME_TEST_TAG={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env and _alive(int(name)):
            found.append(int(name))
    return found


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run (threads) of the scenario every test kills."""
    folder = tmp_path_factory.mktemp("resume") / "ref"
    scen = scenario(folder)
    assert main(racer_args(scen)) == EXIT_OK
    runs = read_runs(folder)
    iterations = [r["iteration"] for r in runs]
    # The kill points below need two iterations and a test phase in the reference.
    assert {"1", "2"} <= set(iterations) and iterations.count("0") == 4
    assert iterations == sorted(iterations, key=lambda it: (it == "0", int(it)))
    return folder


def outputs(folder):
    arena = folder / "arena"
    results = json.loads((arena / "results.json").read_text())
    return {"elites.txt": (arena / "elites.txt").read_text(),
            "eliminations.csv": read_csv(arena / "eliminations.csv"),
            "test.csv": read_csv(arena / "test.csv"), "results.json": results}


def key(row):
    return row["iteration"], row["configuration"], row["instance_id"]


def check_resumed(ref, folder, killed_rows, in_flight):
    """``folder``'s run was killed with ``killed_rows`` lines in runs.csv and at most
    ``in_flight`` runs in flight, then resumed: the same outputs as ``ref``, every run of the
    killed session reused or (if in flight) repeated, nothing else run twice."""
    assert outputs(folder) == outputs(ref)
    # Look-ahead runs a race did not use (racer.cli.lookahead) depend on timing: compared
    # apart from the runs used, which do not.
    ref_unused = sum(r["status"] == "speculative-unused" for r in read_runs(ref))
    run_unused = sum(r["status"] == "speculative-unused" for r in read_runs(folder))
    ref_runs = [r for r in read_runs(ref) if r["status"] != "speculative-unused"]
    runs = [r for r in read_runs(folder) if r["status"] != "speculative-unused"]
    ref_cost = {key(r): r["cost"] for r in ref_runs}
    assert len(ref_cost) == len(ref_runs)
    # The same runs, with the same costs (same runner, same seeds): none lost, none extra.
    assert {key(r): r["cost"] for r in runs} == ref_cost
    killed_rows -= sum(r["status"] == "speculative-unused" for r in read_runs(folder)[:killed_rows])
    killed, resumed = runs[:killed_rows], runs[killed_rows:]
    resumed_keys = {key(r) for r in resumed}
    assert len(resumed_keys) == len(resumed)  # the resumed session runs nothing twice
    repeated = [key(r) for r in killed if key(r) in resumed_keys]
    # A run logged before the kill and run again must have been in flight (logged, not yet
    # journaled); the others were reused from the journal.
    assert len(repeated) <= in_flight, repeated
    # Runner processes (one pid file per start), counting those killed in flight and those
    # never logged: at most `in_flight` more than the uninterrupted run. Unused look-ahead
    # runs are logged once each but may be killed before writing their pid file, so they
    # bound the count on either side instead of being subtracted.
    n_ref = len(os.listdir(ref / "arena" / "pids"))
    n_run = len(os.listdir(folder / "arena" / "pids"))
    assert n_ref - ref_unused <= n_run <= n_ref + in_flight + run_unused
    return repeated


def kill(folder, scen, *, when, env=None, executor=(), tag=None):
    """Start racer on ``scen`` (a new session: racer is the leader of its process group), wait
    for ``when(proc)``, kill the whole group with SIGKILL and check that no runner outlives
    it. Returns the number of runs.csv rows before the kill and, with ``tag``, the processes
    tagged with it just before the kill."""
    args = racer_args(scen, *executor)
    seen = []
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, *args], env={**ENV, **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert when(proc), "racer ended before it could be killed: " + proc.stderr.read().decode()
        if tag is not None:
            seen = tagged(tag)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stderr.close()
    pid_dir = folder / "arena" / "pids"
    assert wait_dead([int(p) for p in os.listdir(pid_dir)]) == []
    assert _pids_alive(pid_dir) == []
    killed_rows = max(n_lines(folder / "arena" / "runs.csv") - 1, 0)
    return killed_rows, seen


def rows_at_least(folder, n):
    return lambda proc: wait_until(lambda: n_lines(folder / "arena" / "runs.csv") > n, proc)


def marked(path):
    return lambda proc: wait_until(lambda: os.path.exists(path), proc)


def stalled(folder, n=1):
    return lambda proc: wait_until(lambda: len(os.listdir(folder / "arena" / "stalled")) >= n, proc)


def _iteration_rows(ref, iteration):
    return sum(r["iteration"] == str(iteration) for r in read_runs(ref))


# Where to kill, and how many runs can be in flight there.
KILL_POINTS = {
    # 3 runs logged: the first race's first block (it has firstTest = 5 rows) is under way.
    "first block": lambda ref, folder: (rows_at_least(folder, 3), {}, PARALLEL),
    # Between the first and the second race, while the sampling model is updated: no run in
    # flight, so none may be repeated.
    "between iterations": lambda ref, folder: (
        marked(folder / "mark"), {"RACER_STALL": "sampling", "RACER_STALL_MARK": str(folder / "mark")}, 0),
    # 3 runs into the second (elitist) race.
    "elitist race": lambda ref, folder: (
        rows_at_least(folder, _iteration_rows(ref, 1) + 3), {}, PARALLEL),
    # The test phase, with runs on test-3 in flight.
    "test phase": lambda ref, folder: (stalled(folder), {"RUNNER_STALL": "test-3"}, PARALLEL),
    # Every run done, elites.txt written, the other outputs not yet.
    "writing outputs": lambda ref, folder: (
        marked(folder / "mark"), {"RACER_STALL": "outputs", "RACER_STALL_MARK": str(folder / "mark")}, 0),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_at_any_point_resumes_to_the_same_outputs(reference, tmp_path, point):
    folder = tmp_path / "run"
    scen = scenario(folder)
    when, env, in_flight = KILL_POINTS[point](reference, folder)
    killed_rows, _ = kill(folder, scen, when=when, env=env)
    # Killed where meant to (runs.csv rows of the uninterrupted run: iteration 1, then the
    # later iterations, then the 4 test runs). Rows of unused look-ahead runs depend on timing,
    # so both sides count the runs used only; the elitist kill point (3 rows into iteration 2,
    # unused rows included) is then at least 1 used run into iteration 2.
    used = [r for r in read_runs(reference) if r["status"] != UNUSED]
    n_total, n_first = len(used), sum(r["iteration"] == "1" for r in used)
    used_killed = killed_rows - sum(r["status"] == UNUSED for r in read_runs(folder)[:killed_rows])
    expected = {"first block": (3, n_first - 1), "between iterations": (n_first, n_first),
                "elitist race": (n_first + 1, n_total - 5), "test phase": (n_total - 4, n_total - 1),
                "writing outputs": (n_total, n_total)}[point]
    assert expected[0] <= used_killed <= expected[1]
    if point == "writing outputs":
        assert (folder / "arena" / "elites.txt").read_text() == (reference / "arena" / "elites.txt").read_text()
        assert not (folder / "arena" / "results.json").exists()
    # The same command, in this process this time.
    assert main(racer_args(scen)) == EXIT_OK
    check_resumed(reference, folder, killed_rows, in_flight)


def test_a_runner_racer_did_not_live_to_register_dies_too(tmp_path):
    # Found by this file: racer tells its reaper about a runner once Popen has returned; a
    # kill in between left the runner (in a session of its own) running, here for a minute.
    # The reaper now also kills every process carrying its token in the environment.
    folder = tmp_path / "run"
    scen = scenario(folder)
    mark = folder / "mark"
    pid_dir = folder / "arena" / "pids"
    # Every runner sleeps a minute; kill() fails unless they die within seconds of racer.
    kill(folder, scen, env={"RACER_STALL": "register", "RACER_STALL_MARK": str(mark),
                            "RUNNER_DELAY": "60"},
         when=lambda proc: wait_until(lambda: mark.exists() and os.listdir(pid_dir), proc))


@pytest.mark.parametrize("executor", ["dask", "ray"])
def test_kill_9_with_a_local_cluster_leaves_nothing_and_resumes(reference, tmp_path, executor):
    # A local Dask cluster (worker processes in racer's process group) or Ray instance (its
    # own processes, outside racer's group), both busy with a runner that would run for two
    # minutes: a few seconds after kill -9 of racer's group nothing racer started is alive,
    # and the same command resumes to the outputs of the threads run. Found by this test:
    # with Dask the runners (sessions of their own, started by the workers, which racer's
    # reaper did not know) ran on; Ray's workers kill their children as they exit.
    pytest.importorskip({"dask": "distributed", "ray": "ray"}[executor])
    folder = tmp_path / "run"
    scen = scenario(folder)
    tag = uuid.uuid4().hex
    first = read_runs(reference)[0]["instance"]
    env = {"RUNNER_STALL": first, "RESUME_TEST_TAG": tag}
    killed_rows, seen = kill(folder, scen, env=env, executor=("--executor", executor), tag=tag,
                             when=stalled(folder, PARALLEL))
    runners = {int(p) for p in os.listdir(folder / "arena" / "stalled")}
    # racer, its reaper, the stalled runners and the cluster's processes.
    assert runners < set(seen) and len(seen) >= len(runners) + 3
    assert wait_dead(sorted(set(seen) | set(tagged(tag))), limit=20.0) == []
    assert wait_dead(tagged(tag), limit=5.0) == []  # nothing started after the snapshot either
    # The same command again, in a process of its own: at its normal end too, nothing it
    # started may be left (in this process, multiprocessing's resource tracker would stay).
    again = subprocess.run([sys.executable, "-c", ENTRY, *racer_args(scen, "--executor", executor)],
                           env={**ENV, "RESUME_TEST_TAG": tag}, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == EXIT_OK, again.stderr
    check_resumed(reference, folder, killed_rows, PARALLEL)
    assert wait_dead(tagged(tag), limit=20.0) == []  # nor after a run that ends normally


def test_a_torn_last_line_of_runs_csv_is_ended_before_new_rows(tmp_path):
    # A racer killed while appending a row can leave the row torn (no newline); the resumed
    # session's first row used to complete that line, giving one garbled row for two.
    from racer.cli.iterated import Configuration, Task
    from racer.cli.output import RUN_FIELDS, RunLog
    from racer.cli.scenario import Instance
    from racer.cli.target_runner import RunResult

    path = tmp_path / "runs.csv"
    path.write_text(",".join(RUN_FIELDS) + "\n1,1,1,7,inst-1,0.5,,ok,1,0.0100,\n1,2,1,7,in")
    log = RunLog(str(path))
    log(1, Configuration(2, {}), Task(1, Instance("inst-1"), 7),
        RunResult("ok", 0.25, None, "", [], 0, "", "", 0.01))
    log.close()
    rows = read_csv(path)
    assert len(rows) == 3 and rows[1]["cost"] is None  # the torn row stays unreadable
    assert [rows[2][k] for k in ("iteration", "configuration", "instance_id", "seed", "cost")] == \
        ["1", "2", "1", "7", "0.25"]


def test_outputs_are_replaced_whole_or_not_at_all(tmp_path):
    # elites.txt, eliminations.csv and test.csv were written in place: a racer killed while
    # writing them left a truncated file (here, an error halfway stands for the kill).
    from racer.cli.output import write_eliminations

    class Unreadable:
        @property
        def history(self):
            raise RuntimeError("killed here")

    path = tmp_path / "eliminations.csv"
    path.write_text("previous\n")
    with pytest.raises(RuntimeError, match="killed here"):
        write_eliminations(str(path), [(1, Unreadable(), [])])
    assert path.read_text() == "previous\n"
    assert os.listdir(tmp_path) == ["eliminations.csv"]
