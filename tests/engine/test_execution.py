"""racer's worker pool: per-evaluation time limits, dying workers, and workers that never
outlive their race (racer/execution.py, Race.run(timeout=..., n_jobs=...))."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from racer import BayesianTest, Race, race
from racer.racing.base import KeepAll
from racer.execution import WorkerPool
from racer.engine import EvaluationError

from _helpers.processes import descendants, wait_gone

pytestmark = [pytest.mark.slow,  # worker processes, subprocesses: `pytest -m "not slow"` skips them
              pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")]


# Evaluations run in worker processes, which import this module by name: keep them top level.


def hang_on_c2_i1(candidate, instance):
    if candidate == 2 and instance == 1:
        time.sleep(3600)
    return candidate + 0.1 * instance


def die_on_c1_i2(candidate, instance):
    if candidate == 1 and instance == 2:
        os._exit(1)
    return candidate + 0.1 * instance


def segfault_on_c3_i0(candidate, instance):
    if candidate == 3 and instance == 0:
        os.kill(os.getpid(), signal.SIGSEGV)
    return candidate + 0.1 * instance


def deterministic(candidate, instance):
    return math.sin(1.7 * candidate + 0.3 * instance) + 0.05 * candidate


def pid_score(candidate, instance):
    return float(os.getpid())


def logged_die_on_c1_i2(candidate, instance):
    log, i = instance
    with open(log, "a") as fh:
        fh.write(f"{candidate},{i}\n")
    if candidate == 1 and i == 2:
        os._exit(1)
    return candidate + 0.1 * i


def pid_logged_raise(candidate, instance):
    log, i = instance
    with open(log, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    if candidate == 0 and i == 1:
        raise ValueError("boom")
    time.sleep(0.05)
    return float(candidate)


def test_hanging_evaluation_is_stopped_recorded_and_the_race_goes_on():
    start = time.monotonic()
    res = Race([0, 1, 2, 3], test=KeepAll(), max_instances=3, first_test=3, random_state=0,
               direction="maximize").run(
        hang_on_c2_i1, range(10), n_jobs=2, timeout=0.5, progress=False
    )
    # Generous bound: the evaluation would otherwise sleep for an hour.
    assert time.monotonic() - start < 30
    assert res.failures == ((2, 1, "timed out after 0.5 s"),)
    assert np.isnan(res.scores[1, 2])
    assert res.n_evaluations == 12 and res.stop_reason == "max_instances"
    ok = ~np.isnan(res.scores)
    expected = np.add.outer(0.1 * np.arange(3), np.arange(4.0))
    np.testing.assert_array_equal(res.scores[ok], expected[ok])  # the same float expressions
    assert res.best == 3


def test_timeout_with_n_jobs_1_runs_in_one_worker_process():
    res = race(hang_on_c2_i1, [0, 2], range(2), test=KeepAll(), first_test=2, timeout=0.5,
               progress=False, random_state=0)
    assert res.failures == ((1, 1, "timed out after 0.5 s"),)
    res = race(pid_score, [0, 1], range(2), test=KeepAll(), first_test=2, timeout=10,
               progress=False, random_state=0)
    pids = set(res.scores.ravel().astype(int).tolist())
    assert len(pids) == 1 and os.getpid() not in pids  # one worker, not this process


def test_timeout_under_on_error_raise_names_the_evaluation():
    with pytest.raises(EvaluationError, match=r"candidate #1 2 on instance #1 1 timed out after 0.5 s"):
        race(hang_on_c2_i1, [0, 2], range(2), test=KeepAll(), first_test=2, timeout=0.5,
             on_error="raise", progress=False, random_state=0)


def test_worker_exit_is_recorded_with_candidate_instance_and_exit_code():
    res = Race([0, 1, 2], test=KeepAll(), max_instances=4, first_test=4, random_state=0).run(
        die_on_c1_i2, range(10), n_jobs=2, progress=False
    )
    assert len(res.failures) == 1
    ci, ii, message = res.failures[0]
    assert (ci, ii) == (1, 2)
    assert "worker process died while evaluating candidate #1 1 on instance #2 2" in message
    assert message.endswith("exited with code 1")
    # The pool was rebuilt: every other evaluation, later blocks included, has its score.
    assert res.n_evaluations == 12 and np.isnan(res.scores).sum() == 1
    assert res.scores[3, 1] == 1 + 0.1 * 3


def test_worker_segfault_is_recorded_with_the_signal_name():
    res = Race([0, 1, 2, 3], test=KeepAll(), max_instances=2, first_test=2, random_state=0).run(
        segfault_on_c3_i0, range(10), n_jobs=2, progress=False
    )
    ((ci, ii, message),) = res.failures
    assert (ci, ii) == (3, 0)
    assert "candidate #3 3 on instance #0 0" in message and message.endswith("killed by SIGSEGV")
    assert np.isnan(res.scores).sum() == 1


def test_journaled_race_resumes_past_a_dead_worker_without_rerunning_it(tmp_path):
    log = str(tmp_path / "calls.txt")
    journal = tmp_path / "race.sqlite"
    instances = [(log, i) for i in range(6)]
    kwargs = dict(test=KeepAll(), first_test=2, random_state=5, storage=journal)
    # First run: stopped after 3 instances (as if the process had died there).
    with Race([0, 1, 2], **kwargs) as first:
        first.run(logged_die_on_c1_i2, instances[:3], n_jobs=2, progress=False)
    with open(log) as fh:
        first_calls = fh.read().splitlines()
    assert first_calls.count("1,2") == 1
    with Race([0, 1, 2], **kwargs) as second:
        res = second.run(logged_die_on_c1_i2, instances, n_jobs=2, progress=False)
    with open(log) as fh:
        calls = fh.read().splitlines()
    assert calls.count("1,2") == 1  # the dead evaluation came from the journal
    assert sorted(calls[len(first_calls):]) == sorted(f"{c},{i}" for c in range(3) for i in (3, 4, 5))
    ((ci, ii, message),) = res.failures
    assert (ci, ii) == (1, 2) and "exited with code 1" in message
    assert res.n_evaluations == 18


@pytest.mark.parametrize("n_jobs,timeout", [(2, None), (2, 30.0), (1, 30.0)])
def test_decisions_on_the_pool_equal_decisions_in_process(n_jobs, timeout):
    kwargs = dict(test=BayesianTest(), max_instances=25, random_state=11)
    serial = Race(list(range(6)), **kwargs).run(deterministic, range(40), progress=False)
    pooled = Race(list(range(6)), **kwargs).run(
        deterministic, range(40), n_jobs=n_jobs, timeout=timeout, progress=False
    )
    assert [
        (h.candidate_index, h.n_instances, h.reason, h.by_index, h.probability) for h in serial.history
    ] == [
        (h.candidate_index, h.n_instances, h.reason, h.by_index, h.probability) for h in pooled.history
    ]
    assert len(serial.history) > 0
    np.testing.assert_array_equal(serial.scores, pooled.scores)  # same function, same inputs
    assert serial.best == pooled.best and serial.n_evaluations == pooled.n_evaluations


def test_workers_end_with_the_race_and_after_an_exception(tmp_path):
    res = race(pid_score, [0, 1, 2], range(3), test=KeepAll(), first_test=3, n_jobs=2,
               progress=False, random_state=0)
    pids = set(res.scores.ravel().astype(int).tolist())
    assert len(pids) >= 1 and os.getpid() not in pids
    assert wait_gone(pids) == []

    log = str(tmp_path / "pids.txt")
    with pytest.raises(ValueError, match="boom"):
        race(pid_logged_raise, [0, 1, 2, 3], [(log, i) for i in range(4)], test=KeepAll(),
             first_test=4, n_jobs=2, on_error="raise", progress=False, random_state=0)
    with open(log) as fh:
        pids = {int(line) for line in fh}
    assert pids and wait_gone(pids) == []


def test_pool_reports_exceptions_unpicklable_values_and_keeps_order_free():
    with WorkerPool(deterministic, 2) as pool:
        first = pool.pids()
        out = dict((k, (ok, v)) for k, ok, v in pool.imap_unordered([(i, (i, 1)) for i in range(5)]))
        assert out == {i: (True, deterministic(i, 1)) for i in range(5)}
        assert pool.pids() == first  # nothing died, nothing was replaced
    assert wait_gone(first) == []


@pytest.mark.slow
def test_a_worker_killed_between_tasks_is_charged_to_the_next_task_unless_replaced():
    # racer.tune stops a look-ahead run by killing its worker; the kill can land just after
    # the run ended. Left alone, the dead idle worker is charged to the next task (what a
    # tuning on examples/tsp-sa once stopped on); replace_killed gives a new worker first.
    with WorkerPool(deterministic, 1) as pool:
        (pid,) = pool.pids()
        assert list(pool.imap_unordered([(0, (0, 1))])) == [(0, True, deterministic(0, 1))]
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)  # the kill has landed before the next task is sent
        ((_, ok, value),) = pool.imap_unordered([(1, (1, 1))])
        assert not ok and "worker process died while evaluating 1" in value
        (pid,) = pool.pids()  # the pool replaced it after the death it charged
        assert list(pool.imap_unordered([(2, (2, 1))])) == [(2, True, deterministic(2, 1))]
        os.kill(pid, signal.SIGKILL)
        pool.replace_killed([pid])
        assert pool.pids() != [pid]
        assert list(pool.imap_unordered([(3, (3, 1))])) == [(3, True, deterministic(3, 1))]
        pool.replace_killed([pid])  # no longer the pool's: nothing happens
        assert list(pool.imap_unordered([(4, (4, 1))])) == [(4, True, deterministic(4, 1))]


SIGKILL_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from racer import race
    from racer.racing import KeepAll

    def sleepy(candidate, instance):
        with open(sys.argv[1], "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        time.sleep(600)
        return 0.0

    if __name__ == "__main__":
        race(sleepy, [0, 1, 2, 3], range(5), test=KeepAll(), n_jobs=2, progress=False,
             random_state=0)
    """
)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="walks /proc to find the workers")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_sigkilled_race_leaves_no_worker_behind(tmp_path, signum):
    """SIGKILL: the parent-death guards end the workers. SIGINT (Ctrl-C): KeyboardInterrupt
    in the race process, whose run() closes the pool on the way out (the guards would catch
    what it missed). Either way, no worker may remain."""
    script = tmp_path / "sleepy_race.py"
    script.write_text(SIGKILL_SCRIPT)
    log = tmp_path / "pids.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, str(script), str(log)], env=env)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            assert proc.poll() is None, "the race script ended early"
            if log.exists():
                workers = {int(x) for x in log.read_text().split()}
            time.sleep(0.1)
        assert len(workers) == 2, "the two workers never started evaluating"
        family = descendants(proc.pid)  # workers, the fork server, the resource tracker
        assert workers <= family
        os.kill(proc.pid, signum)
        assert proc.wait(timeout=20) != 0
        assert wait_gone(family, limit=20.0) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------- adapters

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
except ImportError:  # pragma: no cover - the sklearn extra is not installed
    BaseEstimator = ClassifierMixin = object


class SleepyMajority(ClassifierMixin, BaseEstimator):
    """Predicts the majority class; ``fit`` sleeps ``sleep`` seconds first."""

    def __init__(self, sleep=0.0, shift=0):
        self.sleep = sleep
        self.shift = shift

    def fit(self, X, y):
        if self.sleep:
            time.sleep(self.sleep)
        values, counts = np.unique(y, return_counts=True)
        self.classes_ = values
        self.label_ = values[(np.argmax(counts) + self.shift) % len(values)]
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


def test_race_search_cv_timeout_stops_a_hanging_fit_and_records_it():
    pytest.importorskip("sklearn")
    from racer.adapters.sklearn import RaceSearchCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (np.arange(60) % 3 == 0).astype(int)
    search = RaceSearchCV(
        SleepyMajority(), {"sleep": [0.0, 3600.0], "shift": [0]}, cv=3, n_repeats=2,
        first_test=2, timeout=1.0, n_jobs=2, refit=False, random_state=0,
    )
    start = time.monotonic()
    with pytest.warns(Warning, match="timed out after 1.0 s"):
        search.fit(X, y)
    assert time.monotonic() - start < 60
    failed = search.cv_results_["n_fits_failed"]
    assert failed[0] == 0 and failed[1] >= 1
    assert all("timed out after 1.0 s" in m and ci == 1 for ci, _, m in search.race_.failures)
    assert search.best_params_["sleep"] == 0.0


def hang_when_large(params, instance):
    # Every instance of the first three: races meet instances in an order of their own
    # (the shared Tuner reorders them per race), and a large x must meet one in its first test.
    if params["x"] > 0.7 and instance < 3:
        time.sleep(3600)
    return (params["x"] - 0.3) ** 2 + 0.01 * instance


def test_iterated_race_timeout_records_the_hanging_evaluations_and_finishes():
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    start = time.monotonic()
    res = IteratedRace(hang_when_large, {"x": FloatDistribution(0, 1)}, list(range(8)),
                       budget=80, n_jobs=2, timeout=0.3, random_state=3).run()
    assert time.monotonic() - start < 60
    messages = [m for r in res.races for _, _, m in r.failures]
    # Each names the evaluation (racer.tune's runner's text) and why it failed.
    assert messages and all(m.startswith("evaluate({'x': ") and m.endswith(
        "timed out after 0.3 s") for m in messages)
    assert res.n_evaluations <= 80 and res.best_params["x"] <= 0.7


def raise_on_c1(candidate, instance):
    if candidate == 1:
        raise KeyError(f"no setting {candidate}")
    return float(candidate)


def test_on_error_raise_reraises_the_worker_exception_with_its_traceback():
    with pytest.raises(KeyError, match="no setting 1") as info:
        race(raise_on_c1, [0, 1], range(2), test=KeepAll(), first_test=2, n_jobs=2,
             on_error="raise", progress=False, random_state=0)
    cause = info.value.__cause__
    assert cause is not None and "in raise_on_c1" in str(cause)
