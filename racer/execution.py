"""Where evaluations run: in this process, on racer's worker pool, or on any Executor.

The race loop (:mod:`racer.race_loop`) hands each block to a back end:

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

How workers start, and why ``evaluate`` travels by value
-------------------------------------------------------
A Python user passes what they wrote: a function of the script they run (often without an
``if __name__ == "__main__":`` guard), of a notebook, of ``python -c`` or standard input, a
lambda, a closure. None of these can be imported by name in another process, so they are
sent *by value* with cloudpickle, as joblib (loky), Dask and Ray do: cloudpickle serialises
functions and classes of ``__main__``, lambdas and closures with their code and the globals
they use, and functions of importable modules by reference (the worker imports the module).
The same goes for each task's candidate and instance and for the results and exceptions
coming back, so a candidate that is an instance of a class defined in the user's script
arrives too (and comes back as that same class: cloudpickle tracks classes it sent).

Workers are fresh interpreters that never run the user's main module. multiprocessing's
``spawn`` re-imports the parent's main script in every child (as ``__mp_main__``), which
runs an unguarded script's race again in each worker; loky starts its executor's workers with
``init_main_module=False`` for this reason. racer starts ``python -c <bootstrap>``
(``subprocess.Popen``, as loky's POSIX launcher does with ``python -m ...`` and fork+exec),
handing the worker only the two pipes it needs (``pass_fds``; everything else closed), with
the parent's interpreter flags and its ``multiprocessing`` executable. The bootstrap receives
the parent's ``sys.path`` (``""`` made absolute) and ``sys.argv`` over the pipe *before*
importing racer, so whatever the parent could import the worker can too, then receives the
pickled ``evaluate``. Its standard input is ``/dev/null`` (a script read from standard input
is not re-read). The parent sees a worker die through a pidfd (Linux >= 5.3; it fires even if
a process ``evaluate`` started still holds the worker's pipe) or else EOF on that pipe. On Windows, where ``pass_fds`` does not exist, workers are started with
multiprocessing's ``spawn`` instead (``evaluate`` still by value; the main module is then
re-imported, so a script there still needs the guard).

Not ``fork``: the race process runs Numba ``prange`` kernels between blocks, and a process
forked after GNU OpenMP has started its threads cannot use OpenMP again (checked here, where
Numba's threading layer is ``omp``: after one ``bayesian_signed_rank`` call, a forked child
calling it again is killed with "Terminating: fork() called from a process already using GNU
OpenMP, this is unsafe."); replacement workers would be forked mid-race, exactly then, and
forking any threaded process (BLAS pools, a user's threads) risks deadlocks. Not
``forkserver`` either: its workers are children of the fork server, which only exits once all
its children have, so the kernel cannot tie a worker's life to the race process (checked: a
SIGKILLed race left both the server and its workers behind). The price of a fresh interpreter
is its imports, paid at pool start and when a worker is replaced, never charged to an
evaluation's time limit (see ``benchmarks/speed_pool.py``).

Workers never outlive the race: the pool is closed in ``Race.run``'s ``finally`` (normal end,
exception, KeyboardInterrupt) and by a finalizer; if the race process is killed outright,
(a) on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes the kernel kill each worker when its
parent, the race process, dies, even while ``evaluate`` holds the GIL in C code; (b) on every
platform, a watchdog thread in each worker blocks on a pipe whose only writer is the race
process and exits the worker at EOF (it needs the GIL, so it acts between bytecodes). Each was
checked alone against ``tests/engine/test_execution.py::test_sigkilled_race_leaves_no_worker_behind``.
PR_SET_PDEATHSIG fires when the *thread* that started the worker ends; pools are created and
used inside one ``Race.run`` call, so that thread outlives them.
"""

from __future__ import annotations

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

from racer._text import short_repr

# racer._validation (and NumPy behind it) is imported where a check needs it, not here: a
# worker process imports this module first, and NumPy's import is most of a fresh worker's
# start-up when ``evaluate`` needs no NumPy (racer.tune's runs).

__all__ = [
    "WorkerPool",
    "check_timeout",
    "effective_n_jobs",
    "evaluation_name",
    "pickle_for_workers",
]

def effective_n_jobs(n_jobs: int | None) -> int:
    """Number of workers for ``n_jobs`` (None -> 1, -1 -> every CPU, -2 -> all but one...)."""
    if n_jobs is None:
        return 1
    from racer._validation import check_int

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


def _describe_failure(exc: BaseException) -> str:
    return f"raised {type(exc).__name__}: {exc}"


def evaluation_name(ev: Any) -> str:
    """How an error message names an Evaluation: its candidate and instance, clipped."""
    return (
        f"candidate #{ev.candidate_index} {short_repr(ev.candidate, 40, stable=True)} on "
        f"instance #{ev.instance_index} {short_repr(ev.instance, 40, stable=True)}"
    )


def pickle_for_workers(fn: Any, name: str, *, dumps: Callable[[Any], bytes] | None = None,
                       purpose: str = "to send it to worker processes (n_jobs > 1 or timeout "
                                      "need that)",
                       advice: str = "Create such objects (open files, locks, connections, "
                                     "generators) inside the function instead of capturing "
                                     "them, or run with n_jobs=1 and no timeout") -> bytes:
    """``fn`` pickled (by value where needed: :func:`_dumps`, or ``dumps``), or a TypeError
    that says which part of it cannot be pickled (a captured variable, a global, a bound
    object, a partial's argument) and what to do. The one pickling check of racer: its own
    :class:`WorkerPool` and :func:`racer.race_loop.check_evaluate` (a user's
    ProcessPoolExecutor, plain pickle) both call it.

    >>> import threading
    >>> lock = threading.Lock()
    >>> pickle_for_workers(lambda c, i: lock, "evaluate")
    Traceback (most recent call last):
    ...
    TypeError: `evaluate` (<lambda>) cannot be pickled to send it to worker processes (n_jobs > 1 or timeout need that): the global `lock` it uses (_thread.lock: TypeError: cannot pickle '_thread.lock' object). Create such objects (open files, locks, connections, generators) inside the function instead of capturing them, or run with n_jobs=1 and no timeout
    """
    try:
        return (dumps or _dumps)(fn)
    except Exception as exc:  # noqa: BLE001 - PicklingError, AttributeError, TypeError...
        culprits = _unpicklable_parts(fn)
        what = "; ".join(culprits) if culprits else f"{type(exc).__name__}: {exc}"
        label = getattr(fn, "__qualname__", None) or short_repr(fn, 80, stable=True)
        raise TypeError(f"`{name}` ({label}) cannot be pickled {purpose}: {what}. {advice}") from None


# ---------------------------------------------------------------------------- the worker pool


class _RemoteTraceback(Exception):
    def __str__(self) -> str:
        return "traceback in the worker process:\n" + str(self.args[0])


def death_cause(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped without an exit code"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"exited with code {exitcode}"


def _dumps(obj: Any) -> bytes:
    """``obj`` pickled by value where needed (see the module docstring).

    The plain pickle first (~5x faster than cloudpickle for a task's small tuple), kept only
    when it names nothing of ``__main__`` (which another process cannot import by name) and
    no module is registered with ``cloudpickle.register_pickle_by_value``; it raises on
    lambdas, closures and local classes. Otherwise cloudpickle, which sends those by value.

    >>> import pickle
    >>> pickle.loads(_dumps(lambda x: 2 * x))(21)
    42
    """
    import cloudpickle

    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - PicklingError, AttributeError, TypeError...
        data = None
    if data is None or b"__main__" in data or cloudpickle.list_registry_pickle_by_value():
        data = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return data


def _unpicklable_parts(fn: Any) -> list[str]:
    """What in ``fn`` cloudpickle cannot pickle: its captured variables, globals, bound
    object, partial arguments or attributes, each named; empty if none alone fails."""
    import functools
    import inspect

    parts: list[tuple[str, Any]] = []
    if isinstance(fn, functools.partial):
        parts += [(f"its argument #{k}", a) for k, a in enumerate(fn.args)]
        parts += [(f"its argument {k}=", a) for k, a in fn.keywords.items()]
        parts.append(("its function", fn.func))
    elif inspect.ismethod(fn):
        parts.append(("the object it is a method of", fn.__self__))
    elif inspect.isfunction(fn):
        try:
            captured = inspect.getclosurevars(fn)
        except (TypeError, ValueError):  # pragma: no cover - unusual code objects
            captured = None
        if captured is not None:
            parts += [(f"the variable `{k}` it captures", v) for k, v in captured.nonlocals.items()]
            parts += [(f"the global `{k}` it uses", v) for k, v in captured.globals.items()]
    else:
        parts += [(f"its attribute `{k}`", v) for k, v in getattr(fn, "__dict__", {}).items()]
    found = []
    for label, value in parts:
        try:
            _dumps(value)
        except Exception as exc:  # noqa: BLE001 - any pickling failure
            found.append(f"{label} ({type(value).__module__}.{type(value).__qualname__}: "
                         f"{type(exc).__name__}: {exc})")
    return found


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


# What a worker process runs (``python -c``): it takes the parent's import path and argv from
# the pipe before importing anything of racer's, so that racer and the modules ``evaluate``
# refers to import as they do in the parent. Ctrl-C reaches the whole process group; the race
# process handles it and closes the pool, so workers ignore it (no tracebacks of their own).
_BOOTSTRAP = """# racer worker process (racer.execution.WorkerPool)
import signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
from multiprocessing.connection import Connection
conn, alive, parent = Connection(int(sys.argv[1])), Connection(int(sys.argv[2])), int(sys.argv[3])
sys.path[:], sys.argv[:] = conn.recv()
from racer.execution import _worker_main
_worker_main(conn, alive, parent)
"""


def _worker_main(conn, alive, parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _arm_parent_death(alive, parent_pid)
    for end in (conn, alive):
        # Inherited through pass_fds; processes that evaluate starts must not hold them.
        if hasattr(os, "set_inheritable"):
            try:
                os.set_inheritable(end.fileno(), False)
            except OSError:  # pragma: no cover - a Windows handle
                pass
    try:
        payload = conn.recv_bytes()
    except (EOFError, OSError):
        return
    try:
        fn = pickle.loads(payload)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
        conn.send_bytes(_dumps(("load", None, f"{type(exc).__name__}: {exc}")))
        return
    conn.send_bytes(_dumps(("ready", None, None)))
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            task = pickle.loads(message)
        except Exception as exc:  # noqa: BLE001 - e.g. a candidate's class cannot be rebuilt
            out = ("exc", None, (exc, traceback.format_exc()))
        else:
            if task is None:
                return
            task_id, args = task
            try:
                out = ("ok", task_id, fn(*args))
            except Exception as exc:  # noqa: BLE001 - the race decides what a failure does
                out = ("exc", task_id, (exc, traceback.format_exc()))
        try:
            # An instance of a class that came by value from the user's __main__ goes back
            # by value too (the plain pickle refuses it here), and cloudpickle gives the
            # parent its own class again.
            data = _dumps(out)
        except Exception as exc:  # noqa: BLE001 - an unpicklable value or exception
            why = f"{type(exc).__name__}: {exc}"
            if out[0] == "ok":
                text = f"returned an unpicklable value ({why})"
            else:
                text = f"{_describe_failure(out[2][0])} (an exception that cannot be pickled: {why})"
            data = _dumps(("err", out[1], text))
        conn.send_bytes(data)


def _child_import_path() -> list:
    # "" is the working directory at start-up; the worker starts in today's working directory.
    return [os.path.abspath(p) if p == "" else p for p in sys.path]


class _SpawnedProcess:
    """A multiprocessing ``spawn`` process behind the few ``subprocess.Popen`` methods the
    pool uses (Windows only: no ``pass_fds`` there)."""

    def __init__(self, conn, alive, parent_pid: int) -> None:
        self._process = mp.get_context("spawn").Process(
            target=_spawned_worker_main, args=(conn, alive, parent_pid), name="racer-worker"
        )
        self._process.start()
        self.pid = self._process.pid
        self.sentinel = self._process.sentinel

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode

    def kill(self) -> None:
        self._process.kill()


def _spawned_worker_main(conn, alive, parent_pid: int) -> None:  # pragma: no cover - Windows
    sys.path[:], _ = conn.recv()
    _worker_main(conn, alive, parent_pid)


class _Worker:
    __slots__ = ("process", "conn", "alive", "sentinel", "ready", "task", "started")

    def __init__(self) -> None:
        import multiprocessing.connection as mpc
        import subprocess

        self.conn, child_conn = mpc.Pipe(duplex=True)
        alive_child, self.alive = mpc.Pipe(duplex=False)
        try:
            if os.name == "posix":
                from multiprocessing import spawn

                fds = (child_conn.fileno(), alive_child.fileno())
                flags = getattr(subprocess, "_args_from_interpreter_flags", list)()
                # Not start_new_session: Ctrl-C in a terminal should reach the workers' group
                # as before (they ignore it), and PR_SET_PDEATHSIG ties them to this process.
                self.process = subprocess.Popen(
                    [os.fsdecode(spawn.get_executable()), *flags, "-c", _BOOTSTRAP,
                     str(fds[0]), str(fds[1]), str(os.getpid())],
                    stdin=subprocess.DEVNULL, pass_fds=fds, close_fds=True,
                )
                # A pidfd is readable once the worker has exited, even if a process evaluate
                # started still holds the worker's pipe open (then no EOF would come).
                try:
                    self.sentinel = os.pidfd_open(self.process.pid)
                except (AttributeError, OSError):  # not Linux >= 5.3: EOF on the pipe tells
                    self.sentinel = None
            else:  # pragma: no cover - Windows
                self.process = _SpawnedProcess(child_conn, alive_child, os.getpid())
                self.sentinel = self.process.sentinel
        finally:
            child_conn.close()
            alive_child.close()
        self.ready = False
        self.task = None  # (task_id, key) while busy
        self.started = 0.0

    def send_start(self, payload: bytes) -> None:
        """Send the import path and ``evaluate``; a worker already dead is noticed later."""
        try:
            self.conn.send((_child_import_path(), sys.argv))
            self.conn.send_bytes(payload)
        except OSError:  # it died while starting: its sentinel or EOF reports it
            pass

    def handles(self) -> list:
        return [self.conn] if self.sentinel is None else [self.conn, self.sentinel]

    def exit_code(self) -> int | None:
        """Wait for the worker to end (it has, or is about to) and return its exit status."""
        try:
            return self.process.wait(5.0)
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: still running, kill it
            self.process.kill()
            return self.process.wait()

    def kill(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.kill()
            except OSError:  # already gone
                pass

    def stop(self, graceful: bool) -> None:
        if graceful and self.ready and self.task is None:
            try:
                self.conn.send_bytes(pickle.dumps(None))
            except OSError:
                pass
            try:
                self.process.wait(1.0)
            except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
                pass
        self.kill()
        self.process.wait()
        self.conn.close()
        self.alive.close()
        if isinstance(self.sentinel, int) and not isinstance(self.process, _SpawnedProcess):
            os.close(self.sentinel)
            self.sentinel = None


def _start_workers(n: int, payload: bytes) -> list[_Worker]:
    """Start ``n`` workers, then send each its start message: a large ``evaluate`` (a closure
    over a data set) blocks the send until that worker reads it, by which time the others
    are already importing."""
    workers = [_Worker() for _ in range(n)]
    for w in workers:
        w.send_start(payload)
    return workers


def _kill_all(workers: list) -> None:
    for w in workers:
        if w is not None:
            w.kill()


def _read_message(w: _Worker, handle: Any) -> tuple | None:
    """The message worker ``w`` sent, if ``handle`` (its pipe or its exit) says one is
    there: ``(kind, task_id, value)``; a value that cannot be unpickled here is an ``"err"``
    message saying so. None when the worker is gone without a word."""
    if not (handle is w.conn or w.conn.poll()):
        return None
    try:
        data = w.conn.recv_bytes()
    except (EOFError, OSError):
        return None
    try:
        return pickle.loads(data)
    except Exception as exc:  # noqa: BLE001 - e.g. a class unknown here
        return ("err", None, f"returned a value that cannot be unpickled here "
                f"({type(exc).__name__}: {exc})")


class WorkerPool:
    """``n_workers`` worker processes, each running ``fn(*args)`` for one task at a time.

    Unlike ``ProcessPoolExecutor``, a task can be stopped (``timeout``: its worker is killed and
    replaced) and a worker that dies is charged to the task it was running, after which a
    replacement starts and the other tasks go on. ``fn`` is pickled once here, by value with
    cloudpickle (a lambda, a closure, a function of ``__main__`` or a notebook all work; a
    TypeError naming what cannot be pickled otherwise), and sent to every worker at its
    start; tasks send only their arguments. Workers never run the caller's main module (see
    the module docstring). Use as a context manager, or call :meth:`close`.

    >>> import operator
    >>> with WorkerPool(operator.truediv, 2) as pool:
    ...     out = sorted(pool.imap_unordered([("a", (1, 2)), ("b", (1, 0))]), key=str)
    >>> out[0][:2], out[0][2], type(out[1][2]).__name__
    (('a', True), 0.5, 'ZeroDivisionError')
    >>> offset = 10
    >>> with WorkerPool(lambda x: x + offset, 1) as pool:  # a lambda and its global, by value
    ...     list(pool.imap_unordered([("k", (1,))]))
    [('k', True, 11)]
    """

    def __init__(self, fn: Callable, n_workers: int, *, name: str = "evaluate") -> None:
        if not callable(fn):
            raise TypeError(f"`{name}` must be callable; got {fn!r}")
        from racer._validation import check_int

        n_workers = check_int(n_workers, "n_workers", minimum=1)
        self._payload = pickle_for_workers(fn, name)
        self._name = name
        self._n = n_workers
        self._workers: list[_Worker | None] = []
        self._closed = False
        self._next_id = 0
        self._workers = _start_workers(n_workers, self._payload)
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

    def replace_killed(self, pids: Iterable[int]) -> None:
        """Replace the workers among ``pids`` that were killed from outside while idle.

        A caller that stops a run by killing its worker (racer.tune's look-ahead) may kill
        it just after the run ended: the worker is then dead between tasks, and the next
        task sent to it would be charged with its death. Each such worker is waited for and
        replaced here; a worker already replaced (it died during its task) is no longer
        among the pool's, and a busy one is left to :meth:`imap_unordered`.
        """
        pids = set(pids)
        for i, w in enumerate(self._workers):
            if w is not None and w.task is None and w.process.pid in pids:
                w.process.wait()
                self._replace(i)

    def _replace(self, i: int) -> None:
        self._workers[i].stop(graceful=False)
        (self._workers[i],) = _start_workers(1, self._payload)

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
        missing = [i for i, w in enumerate(self._workers) if w is None]
        for i, w in zip(missing, _start_workers(len(missing), self._payload)):
            self._workers[i] = w
        queue = deque(tasks)
        running = 0
        try:
            while queue or running:
                running += self._hand_out(queue, describe)
                wait_for = self._time_to_deadline(timeout, running)
                handles = {handle: i for i, w in enumerate(self._workers) for handle in w.handles()}
                ready = _wait(list(handles), wait_for)
                done: set[int] = set()
                # Each outcome is yielded as soon as it is known: the caller may act on the
                # pool between two (replace_killed), and the next worker is read after that.
                for handle in ready:
                    i = handles[handle]
                    if i in done:
                        continue
                    outcome = self._receive(i, handle, done, describe)
                    if outcome is not None:
                        running -= 1
                        yield outcome
                if timeout is not None:
                    for outcome in self._time_out(timeout):
                        running -= 1
                        yield outcome
        except BaseException:
            # An exception in the caller (or KeyboardInterrupt, or the caller dropping this
            # generator): no task may keep running behind its back. Busy workers are killed
            # now and replaced when the pool is next used.
            for i, w in enumerate(self._workers):
                if w is not None and w.task is not None:
                    w.stop(graceful=False)
                    self._workers[i] = None
            raise

    def _hand_out(self, queue: deque, describe: Callable[[Any], str]) -> int:
        """Hand tasks from ``queue`` to idle, ready workers; return how many were started.
        The clock of a task starts here, so a replacement worker's start-up is never charged
        to an evaluation."""
        started = 0
        for w in self._workers:
            if not queue:
                break
            if w.ready and w.task is None:
                key, args = queue.popleft()
                task_id = self._next_id
                try:
                    # By value: a candidate may be an instance of a class of the user's
                    # __main__, which the worker cannot import by name.
                    message = _dumps((task_id, args))
                except Exception as exc:  # noqa: BLE001 - nothing was sent
                    raise TypeError(
                        f"the arguments of {describe(key)} cannot be pickled to send "
                        f"them to a worker process: {type(exc).__name__}: {exc}"
                    ) from None
                self._next_id += 1
                w.task = (task_id, key)
                try:
                    w.conn.send_bytes(message)
                except OSError:
                    pass  # the worker died: its sentinel or EOF charges this task
                w.started = time.monotonic()
                started += 1
        return started

    def _time_to_deadline(self, timeout: float | None, running: int) -> float | None:
        """Seconds until the first running task times out (None: no limit to wait for)."""
        if timeout is None or not running:
            return None
        now = time.monotonic()
        return max(0.0, min(w.started + timeout - now for w in self._workers if w.task is not None))

    def _receive(self, i: int, handle: Any, done: set, describe: Callable[[Any], str]):
        """Read what worker ``i`` sent on ``handle`` (its pipe or its exit): the outcome
        ``(key, ok, value)`` of a finished task, or None (it became ready, or died idle). A
        dead worker is added to ``done`` (its other handle has nothing more to say) and
        replaced."""
        w = self._workers[i]
        message = _read_message(w, handle)
        if message is None:
            # The worker is gone (a sentinel or EOF without a message).
            done.add(i)
            return self._on_death(i, describe)
        kind, task_id, value = message
        if kind == "ready":
            w.ready = True
            return None
        if kind == "load":
            raise TypeError(
                f"`{self._name}` could not be loaded in a worker process ({value}). "
                "Functions of __main__, lambdas and closures are sent by value, but "
                "those of an importable module by reference: the worker imports "
                "that module, with this process's sys.path and working directory. "
                "Make it importable there, or send it by value with "
                "cloudpickle.register_pickle_by_value(module)"
            )
        key = w.task[1]
        w.task = None
        if kind == "exc":
            # As concurrent.futures does: the worker's traceback as the cause.
            value, text = value
            value.__cause__ = _RemoteTraceback(text)
        return key, kind == "ok", value

    def _on_death(self, i: int, describe: Callable[[Any], str]):
        """Replace dead worker ``i``; its task, if it had one, fails with the cause of death.
        A worker that died before it was ready is a RuntimeError: no task can run."""
        w = self._workers[i]
        cause = death_cause(w.exit_code())
        if not w.ready:
            raise RuntimeError(
                f"a worker process died while starting, before it could load "
                f"`{self._name}` ({cause}); its error output, if any, is above. "
                f"Check that {sys.executable} can import racer and the modules "
                f"`{self._name}` uses"
            )
        task = w.task
        self._replace(i)
        if task is None:
            return None
        return task[1], False, f"worker process died while evaluating {describe(task[1])}: {cause}"

    def _time_out(self, timeout: float) -> Iterator[tuple[Any, bool, str]]:
        """Kill and replace the workers whose task has run ``timeout`` seconds; yield each
        such task's failure (one at a time, each worker replaced just before)."""
        now = time.monotonic()
        for i, w in enumerate(self._workers):
            if w.task is not None and now - w.started >= timeout:
                key = w.task[1]
                self._replace(i)
                yield key, False, f"timed out after {timeout!r} s"
