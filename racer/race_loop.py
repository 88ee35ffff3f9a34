"""The race loop: ask a block, evaluate it, tell the race; one driver for every front end.

A :class:`~racer.engine.Race` is an ask/tell state machine: it never runs anything itself. The
loop that drives it lives here, once, and every front end uses it:

* :meth:`racer.Race.run` and :func:`racer.race` (:func:`run_race`: ``evaluate(candidate,
  instance)`` in this process, on racer's :class:`~racer.execution.WorkerPool` or on any
  ``concurrent.futures.Executor``: a thread pool, Dask's ``client.get_executor()``, a
  :class:`~racer.ray_executor.RayExecutor`);
* the scikit-learn and Optuna adapters, and the ``racer`` command's tuner
  (:mod:`racer.tuning.dispatch`), with a back end and hooks of their own (:func:`drive`).

:func:`drive` owns what every loop needs: the ask -> pending re-ask cycle (evaluations handed
out earlier but never told, after an interruption, are evaluated again), cells a front end
already knows (an elite's cached result) told without running, a front end's stop rules
before each block, the progress listener, telling each result as it arrives, and stopping
the block's other evaluations when anything raises. A **back end** only runs evaluations: its
``results(batch)`` yields ``(evaluation, ok, value)`` as each finishes (``ok`` False: ``value``
is the exception or a message such as ``"timed out after 2.0 s"``), and may yield a
:class:`NotRun` for an evaluation it decided not to make. A **front end** supplies what is its
own: the unit-evaluation callable or submit function, and, if it needs one, how an outcome
is told (``settle``; the default is :func:`tell_outcome`, the ``on_error`` policy's hand-off).

>>> from racer import Race
>>> from racer.racing.base import KeepAll
>>> race = Race([1, 2, 3], test=KeepAll(), first_test=2, instances=range(4), random_state=0)
>>> drive(race, InProcess(lambda c, i: abs(c - 2)))
True
>>> race.result().best, race.n_evaluations
(2, 12)
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Protocol

from racer._text import short_repr
from racer.execution import (
    WorkerPool,
    check_timeout,
    effective_n_jobs,
    evaluation_name,
    pickle_for_workers,
)

__all__ = [
    "Backend",
    "InProcess",
    "NotRun",
    "OnExecutor",
    "OnWorkerPool",
    "backend_for",
    "check_evaluate",
    "drive",
    "item_text",
    "progress_line",
    "run_race",
    "tell_outcome",
]

Outcome = tuple  # (Evaluation, ok: bool, value)


class NotRun:
    """What a back end yields for an evaluation it chose not to make (the ``racer`` command
    skips the later runs of a configuration that failed): the race records it as failed
    with ``message`` and does not charge it to the budget."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"NotRun({self.message!r})"


class Backend(Protocol):
    """Where evaluations run. ``results(batch)`` runs the Evaluations of ``batch`` and yields
    ``(evaluation, ok, value)`` as each finishes; closing the iterator early (an exception in
    the driver) must stop or cancel the rest."""

    def results(self, batch: list) -> Iterator[Outcome]: ...


def _candidate_and_instance(ev: Any) -> tuple:
    return (ev.candidate, ev.instance)


class InProcess:
    """Run ``fn(*args_of(evaluation))`` here, one after the other (``n_jobs=1``, no timeout).

    >>> from racer.engine import Evaluation
    >>> ev = Evaluation(0, 1, "c", 4)
    >>> [(ok, value) for _, ok, value in InProcess(lambda c, i: 1 / i).results([ev])]
    [(True, 0.25)]
    """

    def __init__(self, fn: Callable, args_of: Callable = _candidate_and_instance) -> None:
        self._fn = fn
        self._args_of = args_of

    def results(self, batch: list) -> Iterator[Outcome]:
        for ev in batch:
            try:
                value = self._fn(*self._args_of(ev))
            except Exception as exc:  # noqa: BLE001 - told as a failure (or raised by the policy)
                yield ev, False, exc
                continue
            yield ev, True, value


class OnWorkerPool:
    """Run on racer's :class:`~racer.execution.WorkerPool` (its ``fn`` gets ``args_of(ev)``):
    ``timeout`` stops one evaluation, a dead worker is charged to the evaluation it ran."""

    def __init__(self, pool: WorkerPool, *, timeout: float | None = None,
                 args_of: Callable = _candidate_and_instance,
                 describe: Callable[[Any], str] = evaluation_name) -> None:
        self.pool = pool
        self._timeout = timeout
        self._args_of = args_of
        self._describe = describe

    def results(self, batch: list) -> Iterator[Outcome]:
        tasks = ((ev, self._args_of(ev)) for ev in batch)
        running = self.pool.imap_unordered(tasks, timeout=self._timeout, describe=self._describe)
        try:
            yield from running
        finally:
            running.close()  # on an error in the driver: stop the block's other evaluations now


class OnExecutor:
    """Run through ``submit(evaluation) -> Future`` (a ``concurrent.futures`` executor, Dask's
    ``client.get_executor()``, Ray's): every evaluation of the block is submitted at once and
    told as it completes; futures of other frameworks (not ``concurrent.futures.Future``) are
    waited for in submission order (decisions do not depend on the order results are told).
    On an exception in the driver the futures not yet done are cancelled."""

    def __init__(self, submit: Callable[[Any], Any]) -> None:
        self._submit = submit

    @classmethod
    def of(cls, executor: Any, fn: Callable,
           args_of: Callable = _candidate_and_instance) -> OnExecutor:
        """``executor.submit(fn, *args_of(evaluation))`` for each evaluation."""
        return cls(lambda ev: executor.submit(fn, *args_of(ev)))

    def results(self, batch: list) -> Iterator[Outcome]:
        futures = {self._submit(ev): ev for ev in batch}
        if all(isinstance(fut, cf.Future) for fut in futures):
            arrivals = cf.as_completed(futures)
        else:
            arrivals = iter(futures)
        try:
            for fut in arrivals:
                try:
                    value = fut.result()
                except BrokenProcessPool:
                    raise  # the pool is gone: no later evaluation can run either
                except Exception as exc:  # noqa: BLE001 - told as a failure (or raised)
                    yield futures[fut], False, exc
                    continue
                yield futures[fut], True, value
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise


def backend_for(fn: Callable, *, executor: Any = None, n_jobs: int | None = None,
                timeout: float | None = None, args_of: Callable = _candidate_and_instance,
                describe: Callable[[Any], str] = evaluation_name,
                name: str = "evaluate") -> tuple[Backend, Callable[[], None]]:
    """The back end for ``fn`` and the options of :meth:`racer.Race.run`, and how to close it.

    ``executor`` -> :class:`OnExecutor`; no executor, ``n_jobs`` 1 (or None) and no
    ``timeout`` -> :class:`InProcess`; otherwise a :class:`~racer.execution.WorkerPool` of
    ``n_jobs`` workers running ``fn`` (:class:`OnWorkerPool`), closed by the returned
    function. Conflicting options are refused (ValueError/TypeError naming them).

    >>> backend, close = backend_for(abs)
    >>> type(backend).__name__
    'InProcess'
    >>> backend_for(abs, executor=object())
    Traceback (most recent call last):
    ...
    TypeError: `executor` must be a concurrent.futures.Executor (with submit()); got <object object at ...>
    """
    timeout = check_timeout(timeout)
    if executor is not None:
        if n_jobs not in (None, 1):
            raise ValueError(
                f"give either `executor` or `n_jobs`, not both; got n_jobs={n_jobs!r} with an executor"
            )
        if not hasattr(executor, "submit"):
            raise TypeError(
                f"`executor` must be a concurrent.futures.Executor (with submit()); got {executor!r}"
            )
        if timeout is not None:
            # Decision: refuse. A Future's result(timeout) only stops waiting: the work goes on
            # holding a Dask/Ray/thread worker, and since a block is submitted at once the
            # clock would also count queueing time. Stopping work is the executor's job.
            raise ValueError(
                f"`timeout`={timeout!r} cannot be combined with a user `executor`: racer can "
                "only stop evaluations in its own worker processes (use n_jobs=...), not work "
                "already sent to an executor; use the executor's own time limits instead"
            )
        return OnExecutor.of(executor, fn, args_of), _nothing
    workers = effective_n_jobs(n_jobs)
    if workers == 1 and timeout is None:
        return InProcess(fn, args_of), _nothing
    pool = WorkerPool(fn, workers, name=name)
    return OnWorkerPool(pool, timeout=timeout, args_of=args_of, describe=describe), pool.close


def _nothing() -> None:
    return None


def item_text(obj: Any) -> str:
    """How a race's messages and logs name a candidate, an instance or ``evaluate``: its
    repr without memory addresses, cut at 80 characters.

    >>> item_text({"lr": 0.1}), item_text(object())
    ("{'lr': 0.1}", '<object object>')
    """
    return short_repr(obj, 80, stable=True)


def check_evaluate(evaluate: Any, executor: Any = None) -> None:
    """Refuse an ``evaluate`` that cannot work, before any evaluation is spent on it: not
    callable, a coroutine function, a signature that cannot take ``(candidate, instance)``,
    or (on a user's ``ProcessPoolExecutor``) not picklable. racer's own WorkerPool makes the
    same pickling check when it starts (:func:`racer.execution.pickle_for_workers`).

    >>> check_evaluate(lambda c: c)
    Traceback (most recent call last):
    ...
    TypeError: `evaluate` must accept two positional arguments, evaluate(candidate, instance); <function <lambda>> has signature (c) (too many positional arguments)
    """
    import inspect
    import pickle

    if not callable(evaluate):
        raise TypeError(f"`evaluate` must be callable; got {item_text(evaluate)}")
    if inspect.iscoroutinefunction(evaluate):
        raise TypeError(
            f"`evaluate` must return a score, but {item_text(evaluate)} is a coroutine function "
            "(async def); run the coroutine inside a plain function"
        )
    try:
        signature = inspect.signature(evaluate)
    except (TypeError, ValueError):
        signature = None  # builtins and extension functions without one: cannot check
    if signature is not None:
        try:
            signature.bind(None, None)
        except TypeError as exc:
            raise TypeError(
                f"`evaluate` must accept two positional arguments, evaluate(candidate, "
                f"instance); {item_text(evaluate)} has signature {signature} ({exc})"
            ) from None
    # A user's ProcessPoolExecutor pickles with the plain pickle (no lambdas, closures or
    # functions of __main__ by value) and would fail every evaluation in its workers.
    if isinstance(executor, cf.ProcessPoolExecutor):
        pickle_for_workers(
            evaluate, "evaluate", dumps=pickle.dumps,
            purpose="to run in worker processes (the executor is a ProcessPoolExecutor)",
            advice="Pass n_jobs= instead of the executor (racer's own workers take lambdas, "
                   "closures and functions of notebooks), define it at module level, or use "
                   "a thread pool",
        )


def tell_outcome(race: Any, ev: Any, ok: bool, value: Any, *, raise_errors: bool = False) -> None:
    """Tell ``race`` one outcome: the score, or the failure. With ``raise_errors``
    (``on_error="raise"``) an exception ``evaluate`` raised is raised again as it is; a
    failure message (a timeout, a dead worker) is told, and the race raises its
    EvaluationError."""
    if ok:
        race.tell(ev, value)
    elif raise_errors and isinstance(value, BaseException):
        raise value
    else:
        race.tell(ev, error=value)


def drive(
    race: Any,
    backend: Backend,
    *,
    settle: Callable[[Any, Any, bool, Any], None] | None = None,
    known: Callable[[Any], tuple[bool, Any] | None] | None = None,
    before_block: Callable[[Any], None] | None = None,
    before_runs: Callable[[Any, list], bool] | None = None,
    after_block: Callable[[Any, list], None] | None = None,
    raise_errors: bool = False,
) -> bool:
    """Drive ``race`` block by block until it finishes; True if it did, False if
    ``before_runs`` ended the driving first.

    Each round: ``before_block(race)`` (a front end's stop rule: it may call
    ``race.stop(...)``), ask the block (or, if everything was handed out, re-ask the
    evaluations pending since an interruption); split off the cells ``known(ev)`` answers with
    ``(ok, value)`` (told as they are, never run); ``before_runs(race, runs)`` returning False
    stops driving without running them (a budget the race does not know; the front end may
    ``race.stop(...)`` first); tell the known cells; run the rest on ``backend`` and tell each
    result as it arrives with ``settle(race, ev, ok, value)`` (default :func:`tell_outcome`
    with ``raise_errors``), a :class:`NotRun` as an uncharged failure; ``after_block(race,
    batch)``. An exception anywhere stops the back end's evaluations of the block.
    """
    if settle is None:
        def settle(race: Any, ev: Any, ok: bool, value: Any) -> None:
            tell_outcome(race, ev, ok, value, raise_errors=raise_errors)
    while not race.finished:
        if before_block is not None:
            before_block(race)
            if race.finished:
                break
        batch = race.ask() or race.pending()
        if not batch:
            break
        answers, runs = [], []
        for ev in batch:
            answer = known(ev) if known is not None else None
            if answer is None:
                runs.append(ev)
            else:
                answers.append((ev, answer))
        if before_runs is not None and not before_runs(race, runs):
            return False
        for ev, (ok, value) in answers:
            if ok:
                race.tell(ev, value)
            else:
                race.tell(ev, error=value)
        # Even an empty list: a back end may have work to settle at each block (the
        # command line's look-ahead drops runs of configurations eliminated meanwhile).
        _tell_results(race, backend.results(runs), settle)
        if after_block is not None:
            after_block(race, batch)
    return True


def _tell_results(race: Any, results: Iterator[Outcome], settle: Callable) -> None:
    try:
        for ev, ok, value in results:
            if isinstance(value, NotRun):
                race.tell(ev, error=value.message, charge=False)
            else:
                settle(race, ev, ok, value)
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # a generator back end stops (or cancels) the block's other evaluations


@contextlib.contextmanager
def progress_line(race: Any, enabled: bool = True) -> Iterator[None]:
    """Show :class:`~racer.progress.ProgressLine` while the body runs, updated after every
    evaluation the race records (replayed ones of a resumed race too), closed at the end."""
    if not enabled:
        yield
        return
    from racer.progress import ProgressLine

    bar = ProgressLine(race)
    # The race's own listener list: the line then also moves while a resumed race replays
    # its journaled evaluations, which no tell of the driver would show.
    race._listeners.append(bar.update)
    try:
        yield
    finally:
        race._listeners.remove(bar.update)
        bar.close()


def run_race(race: Any, evaluate: Callable, *, executor: Any = None, n_jobs: int | None = None,
             timeout: float | None = None, progress: bool = True,
             raise_errors: bool = False) -> Any:
    """:meth:`racer.Race.run` once its arguments are checked: drive ``race`` to its end with
    ``evaluate(candidate, instance)`` on the back end the options name
    (:func:`backend_for`), then return its :class:`~racer.result.RaceResult`. The back end is
    closed at the end, on an exception or a KeyboardInterrupt alike (workers never outlive
    the race); the race's journal stays open, so it can be continued. ``raise_errors``: the
    race's ``on_error="raise"`` (see :func:`tell_outcome`)."""
    backend, close = backend_for(evaluate, executor=executor, n_jobs=n_jobs, timeout=timeout)
    try:
        with progress_line(race, progress):
            drive(race, backend, raise_errors=raise_errors)
    finally:
        close()
    return race.result()

