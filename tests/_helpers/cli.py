"""The ``racer`` command on a small irace scenario: a Python target runner, the scenario files,
reading racer's outputs, running racer in a subprocess, and the ``kill -9`` and resume kit."""

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from _helpers import ROOT
from _helpers.processes import alive, pids_alive, wait_gone

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}

# A runner that costs a few milliseconds: a noisy quadratic whose optimum is x = 1.5 (mode a)
# and whose mode b is worse by `pen`; each instance shifts every cost equally.
RUNNER = """
import os, random, sys, time
cid, iid, seed, inst = sys.argv[1:5]
opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
with open(os.path.join("pids", str(os.getpid())), "w"):
    pass
delay = float(os.environ.get("RUNNER_DELAY", "0"))
if delay:
    time.sleep(delay)
rng = random.Random(int(seed) * 1000 + int(cid))
x = float(opts["--x"])
cost = (x - 1.5) ** 2 + float(inst.rsplit("-", 1)[1]) + rng.gauss(0, 0.05)
if opts["--mode"] == "b":
    cost += float(opts["--pen"])
if os.environ.get("RUNNER_HANG") == cid:
    time.sleep(60)
if os.environ.get("RUNNER_FAIL") in (cid, "all"):
    print("solver crashed", file=sys.stderr)
    sys.exit(3)
print(cost if not os.environ.get("RUNNER_TIME") else f"{cost} {os.environ['RUNNER_TIME']}")
"""

PARAMS = """
mode  "--mode " c (a, b)
x     "--x "    r (-5, 5)
pen   "--pen "  o (1, 2, 4)  | mode == "b"
"""


def make_scenario(tmp_path, extra="", budget=90, runner=RUNNER, params=PARAMS):
    (tmp_path / "arena" / "pids").mkdir(parents=True)
    (tmp_path / "parameters.txt").write_text(textwrap.dedent(params).lstrip())
    r = tmp_path / "target-runner"
    r.write_text(f"#!{sys.executable}\n" + textwrap.dedent(runner))
    r.chmod(0o755)
    (tmp_path / "train.txt").write_text("".join(f"inst-{i}\n" for i in range(1, 9)))
    (tmp_path / "test.txt").write_text("".join(f"test-{i}\n" for i in range(1, 5)))
    (tmp_path / "scenario.txt").write_text(textwrap.dedent(f"""
        parameterFile = "parameters.txt"
        targetRunner = "target-runner"
        execDir = "arena"
        trainInstancesDir = ""
        trainInstancesFile = "train.txt"
        testInstancesDir = ""
        testInstancesFile = "test.txt"
        maxExperiments = {budget}
        seed = 3
        """) + textwrap.dedent(extra))
    return str(tmp_path / "scenario.txt")


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def read_runs(tmp_path):
    return read_csv(tmp_path / "arena" / "runs.csv")


def racer_command(scen, *extra):
    return [sys.executable, "-c", "import sys; from racer.cli import main; sys.exit(main())",
            "--scenario", scen, "--parallel", "2", "-q", "1", *extra]


def wait_for_runs(tmp_path, n, proc, limit=30.0):
    deadline = time.monotonic() + limit
    path = tmp_path / "arena" / "runs.csv"
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and len(path.read_text().splitlines()) > n:
            return True
        time.sleep(0.02)
    return False


# One variable parameter (mode is fixed): two iterations on a budget of 60 runs.
PARAMS_1 = """
mode  "--mode " c (a)
x     "--x "    r (-5, 5)
"""



# --------------------------------------------------------------------- kill -9, then resume

PARALLEL = 2
BUDGET = 60

# The runner above (same costs), plus a stall: a run on instance $RUNNER_STALL
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
        from racer.tuning import sampler
        sampler.Sampler.update_model = stall
    elif where == "outputs":
        from racer.tuning import output
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
        if needle in env and alive(int(name)):
            found.append(int(name))
    return found


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
    # Look-ahead runs a race did not use (racer.tuning.lookahead) depend on timing: compared
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
    assert wait_gone([int(p) for p in os.listdir(pid_dir)], limit=10.0) == []
    assert pids_alive(pid_dir) == []
    killed_rows = max(n_lines(folder / "arena" / "runs.csv") - 1, 0)
    return killed_rows, seen


def rows_at_least(folder, n):
    return lambda proc: wait_until(lambda: n_lines(folder / "arena" / "runs.csv") > n, proc)


def marked(path):
    return lambda proc: wait_until(lambda: os.path.exists(path), proc)


def stalled(folder, n=1):
    return lambda proc: wait_until(lambda: len(os.listdir(folder / "arena" / "stalled")) >= n, proc)


