"""Where evaluations run: in this process, on racer's worker pool, or on any Executor.

:meth:`racer.Race.run` hands each block to :func:`run_block`:

* in process (``n_jobs=1``, no ``timeout``): evaluations run one after the other, no overhead;
* on a :class:`WorkerPool` (``n_jobs > 1``, or any ``timeout``): racer's own worker processes;
* on a user ``concurrent.futures.Executor`` (a thread pool, Dask's ``client.get_executor()``,
  Ray's...): every evaluation of the block is submitted at once.

Results are told to the race as they complete; the race's decisions depend only on which
values arrived, never on the order they arrived in.

Why racer has its own pool instead of ``ProcessPoolExecutor``
-----------------------------------------------------------
A time limit must stop one evaluation, and a worker that dies must be charged to the
evaluation it was running. ``ProcessPoolExecutor`` can do neither: it cannot cancel a running
call, and when a worker dies it marks the whole pool broken (``BrokenProcessPool``) without
saying which task was on it. loky has the same limitation (``TerminatedWorkerError`` for the
whole executor, no per-task timeout). pebble's ``ProcessPool`` does both, but it is LGPL-3.0,
maintained by one person, and the part racer needs is ~200 lines. :class:`WorkerPool` gives
each worker one task at a time over its own pipe, so the parent always knows which evaluation
a worker runs: on a deadline it kills that worker, on a death it reads the exit code, and in
both cases it starts a replacement and goes on.

Start method: ``spawn``, everywhere. Not ``fork``: the race process runs Numba ``prange``
kernels between blocks, and a process forked after GNU OpenMP has started its threads cannot
use OpenMP again (checked here, where Numba's threading layer is ``omp``: after one
``bayesian_signed_rank`` call, a forked child calling it again is killed with "Terminating:
fork() called from a process already using GNU OpenMP, this is unsafe."); replacement workers
would be forked mid-race, exactly then, and forking any threaded process (BLAS pools, a
user's threads) risks deadlocks. Not ``forkserver`` either: its
workers are children of the fork server, which only exits once all its children have, so the
kernel cannot tie a worker's life to the race process (checked: a SIGKILLed race left both
the server and its workers behind). The price of ``spawn`` is a fresh interpreter per worker
(imports included, paid at pool start and when a worker is replaced, never charged to an
evaluation's time limit; see ``benchmarks/speed_pool.py``), and ``evaluate`` is pickled by
reference: it must be importable in a worker (a function of a module, or of a script under
``if __name__ == "__main__":``); a function typed into a notebook is reported as such.

Workers never outlive the race: the pool is closed in ``Race.run``'s ``finally`` (normal end,
exception, KeyboardInterrupt) and by a finalizer; if the race process is killed outright,
(a) on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes the kernel kill each worker when its
parent, the race process, dies, even while ``evaluate`` holds the GIL in C code; (b) on every
platform, a watchdog thread in each worker blocks on a pipe whose only writer is the race
process and exits the worker at EOF (it needs the GIL, so it acts between bytecodes). Each was
checked alone against ``tests/test_execution.py::test_sigkilled_race_leaves_no_worker_behind``.
PR_SET_PDEATHSIG fires when the *thread* that started the worker ends; pools are created and
used inside one ``Race.run`` call, so that thread outlives them.
"""

from __future__ import annotations

import concurrent.futures as cf
from concurrent.futures.process import BrokenProcessPool
import math
import multiprocessing as mp
import numbers
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import weakref
from collections import deque
from multiprocessing.connection import wait as _wait
from typing import Any, Callable, Iterable, Iterator

from ._validation import check_int

__all__ = [
    "WorkerPool",
    "check_timeout",
    "effective_n_jobs",
    "resolve_executor",
    "run_block",
]

_START_METHOD = "spawn"


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


def check_timeout(timeout: Any) -> float | None:
    """Return ``timeout`` as float seconds (or None), refusing anything but a positive finite number."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"`timeout` must be a number of seconds or None; got {timeout!r}")
    value = float(timeout)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"`timeout` must be a positive, finite number of seconds (None = no limit); got {timeout!r}"
        )
    return value


def resolve_executor(
    executor: Any, n_jobs: int | None, evaluate: Callable | None = None, timeout: float | None = None
) -> tuple[Any, bool]:
    """Return ``(executor, owned)``: None means run in this process; ``owned`` ones are closed
    by the caller. With ``timeout`` (or ``n_jobs > 1``) and no ``executor``, a
    :class:`WorkerPool` running ``evaluate``."""
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
        return executor, False
    workers = effective_n_jobs(n_jobs)
    if workers == 1 and timeout is None:
        return None, False
    return WorkerPool(evaluate, workers), True


def _describe_failure(exc: BaseException) -> str:
    return f"raised {type(exc).__name__}: {exc}"


def run_block(
    race,
    evaluate: Callable,
    batch: list,
    executor: Any,
    *,
    raise_errors: bool,
    timeout: float | None = None,
) -> None:
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
    if isinstance(executor, WorkerPool):
        tasks = ((ev, (ev.candidate, ev.instance)) for ev in batch)
        results = executor.imap_unordered(tasks, timeout=timeout, describe=_evaluation_name)
        try:
            for ev, ok, value in results:
                if ok:
                    race.tell(ev, value)
                elif raise_errors and isinstance(value, BaseException):
                    raise value
                else:
                    race.tell(ev, error=value)
        finally:
            results.close()  # on an error here: stop the block's other evaluations now
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


def _evaluation_name(ev: Any) -> str:
    from .race import _clip

    return (
        f"candidate #{ev.candidate_index} {_clip(ev.candidate, 40)} on instance "
        f"#{ev.instance_index} {_clip(ev.instance, 40)}"
    )


# ---------------------------------------------------------------------------- the worker pool


class _RemoteTraceback(Exception):
    def __str__(self) -> str:
        return "traceback in the worker process:\n" + str(self.args[0])


def _death_cause(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped without an exit code"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"exited with code {exitcode}"


def _arm_parent_death(alive, parent_pid: int) -> None:
    """Make this worker die with the race process (see the module docstring)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the watchdog remains
            pass
    if os.getppid() != parent_pid:  # the race died before prctl took effect
        os._exit(70)

    def watchdog() -> None:
        try:
            alive.recv_bytes()
        except (EOFError, OSError):
            pass
        os._exit(70)

    threading.Thread(target=watchdog, name="racer-watchdog", daemon=True).start()


def _worker_main(conn, alive, payload: bytes, parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group; the race process handles it and closes the pool,
    # so workers should not print tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _arm_parent_death(alive, parent_pid)
    try:
        fn = pickle.loads(payload)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("load", None, f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None, None))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        task_id, args = msg
        try:
            out = ("ok", task_id, fn(*args))
        except Exception as exc:  # noqa: BLE001 - the race decides what a failure does
            out = ("exc", task_id, (exc, traceback.format_exc()))
        try:
            conn.send(out)
        except Exception as exc:  # noqa: BLE001 - an unpicklable value or exception
            why = f"{type(exc).__name__}: {exc}"
            if out[0] == "ok":
                text = f"returned an unpicklable value ({why})"
            else:
                text = f"{_describe_failure(out[2][0])} (an exception that cannot be pickled: {why})"
            conn.send(("err", task_id, text))


class _Worker:
    __slots__ = ("process", "conn", "alive", "ready", "task", "started")

    def __init__(self, ctx, payload: bytes) -> None:
        self.conn, child_conn = ctx.Pipe(duplex=True)
        alive_child, self.alive = ctx.Pipe(duplex=False)
        # Not daemonic: an evaluate may start processes of its own (a daemon may not); the
        # pool's close(), its finalizer and the parent-death guards end the workers instead.
        self.process = ctx.Process(
            target=_worker_main, args=(child_conn, alive_child, payload, os.getpid()),
            name="racer-worker",
        )
        self.process.start()
        child_conn.close()
        alive_child.close()
        self.ready = False
        self.task = None  # (task_id, key) while busy
        self.started = 0.0

    def stop(self, graceful: bool) -> None:
        if graceful and self.ready and self.task is None:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()
        self.alive.close()


def _kill_all(workers: list) -> None:
    for w in workers:
        if w is None:
            continue
        try:
            if w.process.is_alive():
                w.process.kill()
        except (ValueError, OSError):  # already closed
            pass


class WorkerPool:
    """``n_workers`` worker processes, each running ``fn(*args)`` for one task at a time.

    Unlike ``ProcessPoolExecutor``, a task can be stopped (``timeout``: its worker is killed and
    replaced) and a worker that dies is charged to the task it was running, after which a
    replacement starts and the other tasks go on. ``fn`` is pickled once here (a clear
    TypeError if it cannot be) and sent to every worker at its start; tasks send only their
    arguments. Use as a context manager, or call :meth:`close`.

    >>> import operator
    >>> with WorkerPool(operator.truediv, 2) as pool:
    ...     out = sorted(pool.imap_unordered([("a", (1, 2)), ("b", (1, 0))]), key=str)
    >>> out[0][:2], out[0][2], type(out[1][2]).__name__
    (('a', True), 0.5, 'ZeroDivisionError')
    """

    def __init__(self, fn: Callable, n_workers: int, *, name: str = "evaluate") -> None:
        if not callable(fn):
            raise TypeError(f"`{name}` must be callable; got {fn!r}")
        n_workers = check_int(n_workers, "n_workers", minimum=1)
        try:
            self._payload = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - PicklingError, AttributeError, TypeError...
            raise TypeError(
                f"`{name}` cannot be pickled to run in worker processes (n_jobs > 1 or timeout "
                f"need that): {type(exc).__name__}: {exc}. Define it at module level (not a "
                "lambda or a nested function), or run with n_jobs=1 and no timeout"
            ) from None
        self._name = name
        self._ctx = mp.get_context(_START_METHOD)
        self._n = n_workers
        self._workers: list[_Worker | None] = []
        self._closed = False
        self._next_id = 0
        self._workers = [_Worker(self._ctx, self._payload) for _ in range(n_workers)]
        self._finalizer = weakref.finalize(self, _kill_all, self._workers)

    @property
    def n_workers(self) -> int:
        return self._n

    def pids(self) -> list[int]:
        """Process ids of the current workers."""
        return [w.process.pid for w in self._workers if w is not None]

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker (idle ones are asked to exit, busy ones are killed)."""
        if self._closed:
            return
        self._closed = True
        for w in self._workers:
            if w is not None:
                w.stop(graceful=True)
        self._finalizer.detach()

    # Kept compatible with Executor.shutdown for callers that hold either.
    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.close()

    def _replace(self, i: int) -> None:
        self._workers[i].stop(graceful=False)
        self._workers[i] = _Worker(self._ctx, self._payload)

    def imap_unordered(
        self,
        tasks: Iterable[tuple[Any, tuple]],
        *,
        timeout: float | None = None,
        describe: Callable[[Any], str] = repr,
    ) -> Iterator[tuple[Any, bool, Any]]:
        """Run ``(key, args)`` tasks; yield ``(key, ok, value)`` as each finishes.

        ``ok`` is False for a failure, ``value`` then being the exception ``fn`` raised, or a
        message: ``"timed out after 2.0 s"`` (the worker was killed and replaced), ``"worker
        process died while evaluating <describe(key)>: killed by SIGSEGV"`` (exit code or
        signal). A worker that cannot load ``fn`` raises TypeError here.
        """
        if self._closed:
            raise RuntimeError("this WorkerPool is closed")
        timeout = check_timeout(timeout)
        for i, w in enumerate(self._workers):
            if w is None:
                self._workers[i] = _Worker(self._ctx, self._payload)
        queue = deque(tasks)
        running = 0
        try:
            while queue or running:
                # Hand tasks to idle, ready workers; the clock of a task starts here, so a
                # replacement worker's start-up is never charged to an evaluation.
                for w in self._workers:
                    if not queue:
                        break
                    if w.ready and w.task is None:
                        key, args = queue.popleft()
                        task_id = self._next_id
                        self._next_id += 1
                        w.task = (task_id, key)
                        try:
                            w.conn.send((task_id, args))
                        except Exception as exc:  # noqa: BLE001 - nothing was written
                            w.task = None
                            raise TypeError(
                                f"the arguments of {describe(key)} cannot be pickled to send "
                                f"them to a worker process: {type(exc).__name__}: {exc}"
                            ) from None
                        w.started = time.monotonic()
                        running += 1
                wait_for = None
                if timeout is not None and running:
                    now = time.monotonic()
                    wait_for = max(
                        0.0,
                        min(w.started + timeout - now for w in self._workers if w.task is not None),
                    )
                handles = {}
                for i, w in enumerate(self._workers):
                    handles[w.conn] = i
                    handles[w.process.sentinel] = i
                ready = _wait(list(handles), wait_for)
                done: set[int] = set()
                for handle in ready:
                    i = handles[handle]
                    if i in done:
                        continue
                    w = self._workers[i]
                    message = None
                    if handle is w.conn or w.conn.poll():
                        try:
                            message = w.conn.recv()
                        except (EOFError, OSError):
                            message = None
                    if message is None:
                        # The worker is gone (a sentinel or EOF without a message).
                        done.add(i)
                        w.process.join()
                        cause = _death_cause(w.process.exitcode)
                        if not w.ready:
                            raise RuntimeError(
                                f"a worker process died while loading `{self._name}` ({cause}); "
                                "a script that runs a race with worker processes must start it "
                                "under `if __name__ == '__main__':`"
                            )
                        task = w.task
                        self._replace(i)
                        if task is not None:
                            running -= 1
                            yield task[1], False, (
                                f"worker process died while evaluating {describe(task[1])}: {cause}"
                            )
                        continue
                    kind, task_id, value = message
                    if kind == "ready":
                        w.ready = True
                    elif kind == "load":
                        raise TypeError(
                            f"`{self._name}` could not be loaded in a worker process ({value}); "
                            f"workers start with {_START_METHOD!r}, which imports functions by "
                            "name: define it in an importable module (or a script under "
                            "`if __name__ == '__main__':`), not in a notebook or interactively"
                        )
                    else:
                        key = w.task[1]
                        w.task = None
                        running -= 1
                        if kind == "exc":
                            # As concurrent.futures does: the worker's traceback as the cause.
                            value, text = value
                            value.__cause__ = _RemoteTraceback(text)
                        yield key, kind == "ok", value
                if timeout is not None:
                    now = time.monotonic()
                    for i, w in enumerate(self._workers):
                        if w.task is not None and now - w.started >= timeout:
                            key = w.task[1]
                            self._replace(i)
                            running -= 1
                            yield key, False, f"timed out after {timeout!r} s"
        except BaseException:
            # An exception in the caller (or KeyboardInterrupt, or the caller dropping this
            # generator): no task may keep running behind its back. Busy workers are killed
            # now and replaced when the pool is next used.
            for i, w in enumerate(self._workers):
                if w is not None and w.task is not None:
                    w.stop(graceful=False)
                    self._workers[i] = None
            raise
