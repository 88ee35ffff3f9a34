"""Where evaluations run: in this process, on a process pool, or on any Executor.

:meth:`racer.Race.run` hands each block to :func:`run_block`. In process, evaluations run one
after the other with no Future overhead; otherwise every evaluation of the block is submitted
at once to a ``concurrent.futures.Executor`` (a ``ProcessPoolExecutor`` built from ``n_jobs``,
or the user's own: a thread pool, Dask's ``client.get_executor()``, Ray's...), and results are
told to the race as they complete. The race's decisions depend only on which values arrived,
never on the order they arrived in.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from ._validation import check_int

__all__ = ["resolve_executor", "run_block", "effective_n_jobs"]


def effective_n_jobs(n_jobs: int | None) -> int:
    """Number of workers for ``n_jobs`` (None -> 1, -1 -> every CPU, -2 -> all but one...)."""
    if n_jobs is None:
        return 1
    n = check_int(n_jobs, "n_jobs")
    if n == 0:
        raise ValueError("`n_jobs` must be a positive number of workers or negative (-1 = all CPUs); got 0")
    if n < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n)
    return n


def resolve_executor(executor: Any, n_jobs: int | None) -> tuple[cf.Executor | None, bool]:
    """Return ``(executor, owned)``: None means run in this process; ``owned`` executors are
    shut down by the caller."""
    if executor is not None:
        if n_jobs not in (None, 1):
            raise ValueError(
                f"give either `executor` or `n_jobs`, not both; got n_jobs={n_jobs!r} with an executor"
            )
        if not hasattr(executor, "submit"):
            raise TypeError(
                f"`executor` must be a concurrent.futures.Executor (with submit()); got {executor!r}"
            )
        return executor, False
    workers = effective_n_jobs(n_jobs)
    if workers == 1:
        return None, False
    return cf.ProcessPoolExecutor(max_workers=workers), True


def run_block(race, evaluate: Callable, batch: list, executor: cf.Executor | None, *, raise_errors: bool) -> None:
    """Evaluate ``batch`` (Evaluations from ``race.ask()``) and tell the race every result."""
    if executor is None:
        for ev in batch:
            try:
                value = evaluate(ev.candidate, ev.instance)
            except Exception as exc:
                if raise_errors:
                    raise
                race.tell(ev, error=exc)
                continue
            race.tell(ev, value)
        return
    futures = {executor.submit(evaluate, ev.candidate, ev.instance): ev for ev in batch}
    if all(isinstance(fut, cf.Future) for fut in futures):
        arrivals = cf.as_completed(futures)
    else:
        # Future-like objects of other frameworks: wait in submission order (decisions do not
        # depend on the order results are told).
        arrivals = iter(futures)
    try:
        for fut in arrivals:
            ev = futures[fut]
            try:
                value = fut.result()
            except BrokenProcessPool:
                raise
            except Exception as exc:
                if raise_errors:
                    raise
                race.tell(ev, error=exc)
                continue
            race.tell(ev, value)
    except BaseException:
        for fut in futures:
            fut.cancel()
        raise
