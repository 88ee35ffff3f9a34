"""What Python users write runs on racer's worker processes: the README's example
pasted into a script without a main guard, run under ``python -c``, piped on standard input,
typed into a notebook; lambdas and closures under ``timeout=``. ``evaluate`` travels by value
(cloudpickle) to workers that never re-run the user's main module (racer/execution.py).

Each form runs with ``n_jobs=2``, with and without ``timeout=``, and checks the race's winner
and number of evaluations against the same race in this process (decisions do not depend on
where evaluations run), that the user's main code ran once, and that no worker is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from racer import Race, race
from racer.racing.base import KeepAll

from _helpers.processes import wait_gone

pytestmark = [
    pytest.mark.slow,  # worker processes, subprocesses: `pytest -m "not slow"` skips them
    pytest.mark.skipif(not hasattr(signal, "SIGKILL") or not os.path.isdir("/proc"),
                       reason="POSIX worker launch; walks /proc to find workers"),
]

# The README's example with its placeholders filled: a cost to minimise over dict candidates.
# It appends each evaluating process's id to the file named by $RACER_PID_LOG, so the test
# knows the workers.
EVALUATE_SOURCE = '''
import os

PID_LOG = os.environ["RACER_PID_LOG"]

def run_my_solver(candidate, instance):
    return (candidate["x"] - 3) ** 2 + 0.5 * ((7 * candidate["x"] + 3 * instance) % 5)

def evaluate(candidate, instance):            # any callable -> float
    with open(PID_LOG, "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    return run_my_solver(candidate, instance)

candidates = [{"x": x} for x in range(8)]
instances = list(range(30))
'''

# No `if __name__ == "__main__":`: the race runs at import, as users paste it. What follows the
# race reports, as one JSON line, the result and which logged worker processes still run.
SCRIPT = EVALUATE_SOURCE + '''
import json
import racer

result = racer.race(evaluate, candidates, instances,
                    direction="minimize",
                    budget=5_000,
                    random_state=0,
                    storage="race.sqlite",
                    n_jobs=2__TIMEOUT__)
print(result.summary())

def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False

workers = sorted({int(p) for p in open(PID_LOG).read().split()})
print("RESULT " + json.dumps({"best": result.best, "n_evaluations": result.n_evaluations,
                              "workers": workers, "main": os.getpid(),
                              "running": [p for p in workers if running(p)]}))
'''


def _expected():
    """The same race in this process (no pool): its winner and number of evaluations."""
    namespace: dict = {}
    exec(EVALUATE_SOURCE.replace('os.environ["RACER_PID_LOG"]', "None"), namespace)
    res = race(lambda c, i: namespace["run_my_solver"](c, i), namespace["candidates"],
               namespace["instances"], direction="minimize", budget=5_000, random_state=0,
               progress=False)
    return res.best, res.n_evaluations


def _env(pid_log) -> dict:
    return dict(os.environ, RACER_PID_LOG=str(pid_log),
                PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def _check_report(stdout: str, expected) -> None:
    reports = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    # Exactly one: the workers did not run the script's race again.
    assert len(reports) == 1, stdout
    report = json.loads(reports[0][len("RESULT "):])
    best, n_evaluations = expected
    assert report["best"] == best and report["n_evaluations"] == n_evaluations
    # Evaluated in worker processes (one may do all of a small race while the other starts).
    assert 1 <= len(report["workers"]) <= 2 and report["main"] not in report["workers"]
    assert report["running"] == []  # every worker ended with the race
    assert wait_gone(report["workers"]) == []


@pytest.fixture(scope="module")
def expected():
    return _expected()


@pytest.mark.parametrize("timeout", [None, 30.0], ids=["n_jobs", "n_jobs+timeout"])
@pytest.mark.parametrize("form", ["script", "python -c", "stdin"])
def test_readme_example_without_main_guard_runs_on_workers(tmp_path, form, timeout, expected):
    code = SCRIPT.replace("__TIMEOUT__", "" if timeout is None else f", timeout={timeout}")
    assert 'if __name__ == "__main__"' not in code
    script = tmp_path / "readme_example.py"
    script.write_text(code)
    run = dict(cwd=tmp_path, env=_env(tmp_path / "pids.txt"), capture_output=True, text=True,
               timeout=300)
    if form == "script":
        proc = subprocess.run([sys.executable, str(script)], **run)
    elif form == "python -c":
        proc = subprocess.run([sys.executable, "-c", code], **run)
    else:
        with open(script) as stdin:
            proc = subprocess.run([sys.executable, "-"], stdin=stdin, **run)
    assert proc.returncode == 0, proc.stderr
    _check_report(proc.stdout, expected)
    assert (tmp_path / "race.sqlite").exists()  # the journal of the README's example


def _pids(log) -> set[int]:
    with open(log) as fh:
        return {int(line) for line in fh}


def _square_distance(c, i):
    return (c - 3) ** 2 + 0.1 * ((5 * c + i) % 4)


def test_lambda_and_closure_under_timeout_on_two_workers(tmp_path):
    expected = race(_square_distance, list(range(6)), range(20), random_state=1, progress=False)
    log = str(tmp_path / "pids.txt")

    def make_closure(target):
        def evaluate(c, i):
            with open(log, "a") as fh:
                fh.write(f"{os.getpid()}\n")
            return (c - target) ** 2 + 0.1 * ((5 * c + i) % 4)
        return evaluate

    logging_lambda = lambda c, i: (  # noqa: E731 - the point: a lambda
        open(log, "a").write(f"{os.getpid()}\n") and _square_distance(c, i))
    for evaluate in (logging_lambda, make_closure(3)):
        res = race(evaluate, list(range(6)), range(20), random_state=1, n_jobs=2, timeout=30,
                   progress=False)
        assert (res.best, res.n_evaluations) == (expected.best, expected.n_evaluations)
        assert not res.failures
        pids = _pids(log)
        assert 1 <= len(pids) <= 2 and os.getpid() not in pids
        assert wait_gone(pids) == []
        os.remove(log)


def test_timeout_kills_a_hanging_lambda_and_the_race_goes_on(tmp_path):
    log = str(tmp_path / "pids.txt")
    hang = lambda c, i: (  # noqa: E731
        open(log, "a").write(f"{os.getpid()}\n")
        and (time.sleep(3600) if (c, i) == (2, 1) else c + 0.1 * i))
    start = time.monotonic()
    res = Race([0, 1, 2, 3], test=KeepAll(), max_instances=3, first_test=3, random_state=0).run(
        hang, range(10), n_jobs=2, timeout=0.5, progress=False)
    assert time.monotonic() - start < 60  # the evaluation would otherwise sleep for an hour
    assert res.failures == ((2, 1, "timed out after 0.5 s"),)
    assert res.n_evaluations == 12 and res.stop_reason == "max_instances"
    assert res.best == 0
    pids = _pids(log)
    assert 2 <= len(pids) <= 3  # the killed worker, the other, and maybe its replacement
    assert os.getpid() not in pids
    assert wait_gone(pids) == []


NOTEBOOK_CELLS = [
    EVALUATE_SOURCE,
    '''
import dataclasses
import racer

@dataclasses.dataclass(frozen=True)
class Setting:          # a class typed into the notebook, as the candidates
    x: int

def by_setting(setting, instance):
    return evaluate({"x": setting.x}, instance)
''',
    '''
result = racer.race(evaluate, candidates, instances, direction="minimize", budget=5_000,
                    random_state=0, n_jobs=2, progress=False)
print("RESULT", result.best["x"], result.n_evaluations)
''',
    '''
result = racer.race(by_setting, [Setting(c["x"]) for c in candidates], instances,
                    budget=5_000, random_state=0, n_jobs=2, timeout=30, progress=False)
assert isinstance(result.best, Setting)
print("RESULT", result.best.x, result.n_evaluations)
''',
]


def test_notebook_functions_and_classes_run_on_workers(tmp_path, expected, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(src)) for src in NOTEBOOK_CELLS]
    log = tmp_path / "pids.txt"
    monkeypatch.setenv("RACER_PID_LOG", str(log))  # the kernel inherits it
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=240,
                                     resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        outputs = []
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
            # One cell's stdout as one text: the kernel flushes print's separate writes on a
            # timer, so "RESULT 3 62" can arrive as two stream outputs ("RESULT", " 3 62").
            outputs.append("".join(o.get("text", "") for o in cell.outputs
                                   if o.output_type == "stream" and o.get("name") == "stdout"))
        # Checked while the kernel (the race's process) is still alive: the pool's own
        # closing ended the workers, not the parent-death guards.
        workers = _pids(log)
        assert workers and os.getpid() not in workers
        assert wait_gone(workers, limit=5.0) == []
    reports = [line.split() for text in outputs for line in text.splitlines()
               if line.startswith("RESULT")]
    best, n_evaluations = expected
    assert reports == [["RESULT", str(best["x"]), str(n_evaluations)]] * 2


SKLEARN_SCRIPT = '''
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from racer.adapters.sklearn import RaceSearchCV

class Threshold(ClassifierMixin, BaseEstimator):      # defined in the script itself
    def __init__(self, cut=0.0):
        self.cut = cut
    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self
    def predict(self, X):
        return (X[:, 0] > self.cut).astype(int)

rng = np.random.default_rng(0)
X = rng.normal(size=(120, 2))
y = (X[:, 0] > 0.3).astype(int)
for extra in ({}, {"timeout": 30}):
    search = RaceSearchCV(Threshold(), {"cut": [-1.0, 0.3, 1.5]}, cv=3, n_repeats=2,
                          n_jobs=2, refit=False, random_state=0, **extra)
    search.fit(X, y)
    print("BEST", search.best_params_["cut"])
'''


def test_sklearn_estimator_defined_in_an_unguarded_script(tmp_path):
    pytest.importorskip("sklearn")
    script = tmp_path / "search.py"
    script.write_text(SKLEARN_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(tmp_path / "p"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # joblib (n_jobs) and racer's pool (timeout) both ran the script's class; the script ran once.
    assert proc.stdout.split() == ["BEST", "0.3", "BEST", "0.3"]


def test_iterated_race_takes_a_lambda_on_two_workers():
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    target = 0.3
    res = IteratedRace(lambda p, i: (p["x"] - target) ** 2 + 0.001 * i,
                       {"x": FloatDistribution(0, 1)}, list(range(6)), budget=60, n_jobs=2,
                       timeout=30, random_state=3).run()
    assert res.n_evaluations <= 60
    assert not [m for r in res.races for _, _, m in r.failures]
    assert abs(res.best_params["x"] - target) < 0.3


ROUND_TRIP_SCRIPT = '''
import racer

class SolverError(Exception):          # defined in __main__: travels by value both ways
    pass

class Setting:
    def __init__(self, x):
        self.x = x

def evaluate(setting, instance):
    if setting.x == 1 and instance == 2:
        raise SolverError(f"diverged on {instance}")
    return float(setting.x) + 0.1 * instance

try:
    racer.race(evaluate, [Setting(0), Setting(1)], range(4), first_test=4, n_jobs=2,
               on_error="raise", progress=False, random_state=0)
except SolverError as exc:              # the same class as above, not a copy
    print("CAUGHT", exc)
'''


def test_main_module_classes_travel_both_ways(tmp_path):
    proc = subprocess.run([sys.executable, "-c", ROUND_TRIP_SCRIPT], cwd=tmp_path,
                          env=_env(tmp_path / "p"), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CAUGHT", "diverged", "on", "2"]
