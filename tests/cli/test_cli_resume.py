"""``kill -9`` of racer's whole process group at several points of a run, then the same command:
it resumes, repeats at most the runs that were in flight, loses none, leaves no runner (nor,
with ``--executor dask``/``ray``, any cluster process) behind, and ends with the same outputs
as an uninterrupted run of the same seed."""

import os
import subprocess
import sys
import uuid

import pytest

from racer.cli import EXIT_OK, main
from racer.tuning.lookahead import UNUSED

from _helpers.cli import (ENTRY, ENV, PARALLEL, check_resumed, kill, marked, racer_args, read_csv,
                          read_runs, rows_at_least, scenario, stalled, tagged, wait_until)
from _helpers.processes import wait_gone

pytestmark = [pytest.mark.slow,  # worker processes, subprocesses: `pytest -m "not slow"` skips them
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="kill -9 of a process group, /proc")]


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
    assert wait_gone(sorted(set(seen) | set(tagged(tag))), limit=20.0) == []
    assert wait_gone(tagged(tag), limit=5.0) == []  # nothing started after the snapshot either
    # The same command again, in a process of its own: at its normal end too, nothing it
    # started may be left (in this process, multiprocessing's resource tracker would stay).
    again = subprocess.run([sys.executable, "-c", ENTRY, *racer_args(scen, "--executor", executor)],
                           env={**ENV, "RESUME_TEST_TAG": tag}, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == EXIT_OK, again.stderr
    check_resumed(reference, folder, killed_rows, PARALLEL)
    assert wait_gone(tagged(tag), limit=20.0) == []  # nor after a run that ends normally


def test_a_torn_last_line_of_runs_csv_is_ended_before_new_rows(tmp_path):
    # A racer killed while appending a row can leave the row torn (no newline); the resumed
    # session's first row used to complete that line, giving one garbled row for two.
    from racer.tuning.tuner import Configuration, Task
    from racer.tuning.output import RUN_FIELDS, RunLog
    from racer.tuning.instances import Instance
    from racer.tuning.runner import RunResult

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
    from racer.tuning.output import write_eliminations

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
