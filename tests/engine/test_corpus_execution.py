"""Corpus of malformed inputs and faults around where evaluations run (timeout, n_jobs,
executor, worker pool): each gets a clear error naming the argument, or the documented
behaviour (racer/execution.py, Race.run)."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import math
import sys
import threading
import types

import numpy as np
import pytest

from racer import Race, RaceFailedError, race
from racer.racing.base import KeepAll
from racer.execution import WorkerPool, check_timeout


def linear(candidate, instance):
    return candidate + 0.1 * instance


def write_to(log, candidate, instance):
    log.write(f"{candidate}")
    return 0.0


def returns_a_generator(candidate, instance):
    return (x for x in range(3))


class Unpicklable(Exception):
    def __init__(self, lock):
        super().__init__("has a lock")
        self.lock = lock

    def __reduce__(self):
        raise TypeError("cannot pickle this exception")


def raises_unpicklable(candidate, instance):
    if candidate == 1:
        raise Unpicklable(threading.Lock())
    return float(candidate)


def _race(**run_kwargs):
    return race(linear, [0, 1], range(3), test=KeepAll(), first_test=3, progress=False,
                random_state=0, **run_kwargs)


BAD_TIMEOUTS = [
    (0, ValueError), (-1.5, ValueError), (math.nan, ValueError), (math.inf, ValueError),
    ("2", TypeError), (True, TypeError), ([1.0], TypeError), (np.float64(-0.0), ValueError),
]


@pytest.mark.parametrize("timeout,error", BAD_TIMEOUTS)
def test_bad_timeout_is_refused_naming_it(timeout, error):
    with pytest.raises(error, match="`timeout`"):
        _race(timeout=timeout)
    with pytest.raises(error, match="`timeout`"):
        Race([0, 1], test=KeepAll()).run(linear, range(3), timeout=timeout, progress=False)


def test_bad_timeout_is_refused_before_a_journal_is_opened(tmp_path):
    journal = tmp_path / "race.sqlite"
    with pytest.raises(ValueError, match="`timeout`"):
        race(linear, [0, 1], range(3), timeout=-1, storage=journal, progress=False)
    assert not journal.exists()


def test_numpy_timeout_is_accepted():
    assert check_timeout(np.float32(0.25)) == 0.25 and check_timeout(2) == 2.0


def test_timeout_with_a_user_executor_is_refused():
    with cf.ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="`timeout`.*`executor`"):
        _race(executor=pool, timeout=1.0)


@pytest.mark.parametrize("n_jobs,error", [(0, ValueError), ("2", TypeError), (1.5, TypeError)])
def test_bad_n_jobs_is_refused_naming_it(n_jobs, error):
    with pytest.raises(error, match="`n_jobs`"):
        _race(n_jobs=n_jobs)


def test_executor_without_submit_is_refused():
    with pytest.raises(TypeError, match="`executor`"):
        _race(executor=object())


@pytest.mark.parametrize("kwargs", [{"n_jobs": 2}, {"timeout": 5.0}])
def test_unpicklable_evaluate_is_reported_before_any_evaluation_naming_the_culprit(kwargs, tmp_path):
    # Closures are sent by value (cloudpickle); an open file they capture cannot be.
    calls = []
    log = open(tmp_path / "log.txt", "w")

    def nested(candidate, instance):
        calls.append(1)
        log.write("x")
        return 0.0

    try:
        with pytest.raises(TypeError, match=r"`evaluate` \(.*nested.*\) cannot be pickled.*"
                           r"the variable `log` it captures \(_io\.TextIOWrapper.*"
                           r"Create such objects .* inside the function"):
            race(nested, [0, 1], range(3), test=KeepAll(), progress=False, **kwargs)
        with pytest.raises(TypeError, match=r"cannot be pickled.*its argument #0 \(_io\.TextIOWrapper"):
            race(functools.partial(write_to, log), [0, 1], range(3), test=KeepAll(),
                 progress=False, **kwargs)
    finally:
        log.close()
    assert calls == []


@pytest.mark.slow
def test_evaluate_that_workers_cannot_import_is_reported():
    # A module that exists only in this process, like a function typed into a notebook.
    module = types.ModuleType("racer_corpus_only_here")
    exec("def evaluate(c, i):\n    return 0.0\n", module.__dict__)
    sys.modules[module.__name__] = module
    try:
        with pytest.raises(TypeError, match="`evaluate` could not be loaded in a worker process"):
            race(module.evaluate, [0, 1], range(3), test=KeepAll(), first_test=3, n_jobs=2,
                 progress=False)
    finally:
        del sys.modules[module.__name__]


@pytest.mark.slow
def test_unpicklable_candidate_is_reported_naming_it():
    lock = threading.Lock()
    with pytest.raises(TypeError, match="arguments of candidate #0 .* cannot be pickled"):
        race(linear, [lock, lock], range(3), test=KeepAll(), first_test=3, n_jobs=2,
             progress=False)


@pytest.mark.slow
def test_unpicklable_return_value_is_a_recorded_failure():
    # Every evaluation fails here, so the race has no winner (RaceFailedError); each
    # failure was recorded with its reason.
    with pytest.raises(RaceFailedError, match="returned an unpicklable value") as info:
        race(returns_a_generator, [0, 1], range(2), test=KeepAll(), first_test=2,
             n_jobs=2, progress=False, random_state=0)
    assert len(info.value.failures) == 4
    assert all("returned an unpicklable value" in m for _, _, m in info.value.failures)


@pytest.mark.slow
def test_unpicklable_exception_is_a_recorded_failure_quoting_it():
    res = race(raises_unpicklable, [0, 1], range(2), test=KeepAll(), first_test=2,
               n_jobs=2, progress=False, random_state=0)
    assert [(c, i) for c, i, _ in res.failures] == [(1, 0), (1, 1)]
    assert all("raised Unpicklable: has a lock" in m for _, _, m in res.failures)
    assert res.best == 0


@pytest.mark.parametrize("n_workers,error", [(0, ValueError), (None, TypeError), ("2", TypeError)])
def test_worker_pool_bad_n_workers(n_workers, error):
    with pytest.raises(error, match="`n_workers`"):
        WorkerPool(linear, n_workers)


@pytest.mark.slow
def test_worker_pool_refuses_a_non_callable_and_use_after_close():
    with pytest.raises(TypeError, match="`evaluate` must be callable"):
        WorkerPool(42, 1)
    pool = WorkerPool(linear, 1)
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        list(pool.imap_unordered([(0, (1, 2))]))


def test_adapters_refuse_bad_timeouts_and_timeout_with_executor():
    pytest.importorskip("sklearn")
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution
    from sklearn.neighbors import KNeighborsClassifier

    from racer.adapters.optuna import IteratedRace
    from racer.adapters.sklearn import RaceSearchCV

    X, y = np.arange(40.0).reshape(20, 2), np.arange(20) % 2
    with pytest.raises(ValueError, match="`timeout`"):
        RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 3]}, timeout=-1).fit(X, y)
    with cf.ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="`timeout`.*`executor`"):
        RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 3]}, timeout=1,
                     executor=pool).fit(X, y)
    space = {"x": FloatDistribution(0, 1)}
    with pytest.raises(TypeError, match="`timeout`"):
        IteratedRace(linear, space, [0, 1], budget=10, timeout="1")
    with cf.ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="`executor`.*`n_jobs`"):
        IteratedRace(linear, space, [0, 1], budget=10, n_jobs=2, executor=pool)
    with pytest.raises(ValueError, match="`n_jobs`"):
        IteratedRace(linear, space, [0, 1], budget=10, n_jobs=0)
    del optuna
