"""The runner protocol: what the tuner asks of whatever makes its runs.

:class:`Runner` is the protocol, :class:`RunResult` one run's outcome and
:class:`TargetRunnerError` a run that failed under the policy that stops the tuning. Two
runners implement it: the command line's :class:`racer.cli.target_runner.TargetRunner` (a
process per run) and :class:`CallableRunner` (a Python function: the runner of
:func:`racer.tune` and of Optuna's ``IteratedRace``).

:class:`CallableRunner` calls ``evaluate(config, instance, seed)`` where the target-runner
gets irace's switches: the configuration itself, a dict of its active parameters
(:meth:`CallableRunner.arguments`). Where its runs go: in the calling thread, or with
``n_workers`` on racer's :class:`~racer.execution.WorkerPool` (fresh interpreters that get
``evaluate`` by value, so a function of a script without a main guard, of a notebook or a
lambda works; a run past ``timeout`` has its worker killed and is an error; a worker that dies
is charged to its run), one single-worker pool per thread of the tuner; or, shipped by value,
in the worker of any ``concurrent.futures.Executor`` the tuner hands runs to (Dask, Ray). There,
with a ``timeout``, each run is made in a killable process of that worker's own
(:class:`_ShippedPools`), so a run that hangs on a cluster is stopped and counted as failed as
it is on racer's pool, instead of holding the tuning forever.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import queue
import shlex
import signal
import threading
import time
import traceback
import uuid
from typing import Any, Callable, Protocol, runtime_checkable

from racer.tuning.instances import Instance

__all__ = ["RunResult", "Runner", "TargetRunnerError", "CallableRunner", "death_cause"]

# How many lines of a failed run's stdout and stderr its description shows.
_TAIL_LINES = 10

# The message of a run stopped by kill_run (a look-ahead run no longer needed), as the
# target-runner's.
_STOPPED = "stopped: the run was no longer needed (look-ahead)"


def death_cause(returncode: int) -> str:
    from racer.execution import death_cause as cause  # stdlib-only module; lazily, as it is rare

    return cause(returncode)


@dataclasses.dataclass
class RunResult:
    status: str  # "ok", "inf" or "error"
    cost: float | None
    time: float | None
    message: str
    command: list
    returncode: int | None
    stdout: str
    stderr: str
    wall: float
    attempts: int = 1
    bound: float | None = None  # the execution bound passed to the runner (boundMax, capping)
    # A tuning on several objectives (racer.tuning.objectives): every objective the runner
    # printed, in order (``cost`` is then the first); None for one objective.
    objectives: tuple | None = None

    def describe(self, exec_dir: str) -> str:
        """The failure as a user needs it: what, the exact command, exit status, output tails."""
        if self.returncode is None:
            status = "none (not started or killed)"
        elif self.returncode < 0:
            status = f"{self.returncode} ({death_cause(self.returncode)})"
        else:
            status = str(self.returncode)
        lines = [self.message,
                 f"  command (run in {exec_dir}): {shlex.join(self.command)}",
                 f"  exit status: {status}" + (f"; attempts: {self.attempts}" if self.attempts > 1 else "")]
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            tail = [ln for ln in text.splitlines()][-_TAIL_LINES:]
            if tail:
                lines.append(f"  {name} (last {len(tail)} lines):")
                lines.extend("    | " + ln for ln in tail)
            else:
                lines.append(f"  {name}: (empty)")
        return "\n".join(lines)


@runtime_checkable
class Runner(Protocol):
    """What the tuner (:class:`racer.tuning.tuner.Tuner`, its dispatcher and look-ahead)
    asks of whatever makes its runs. Two implementations: :class:`TargetRunner` (the
    command line: a process per run) and :class:`CallableRunner` (a Python callable).

    ``run`` makes one run and never raises for a failing one: it returns a
    :class:`RunResult` whose status is "ok", "inf" (the configuration is rejected) or
    "error" (after the runner's retries; the tuner's error policy decides what follows).
    ``arguments`` is what ``run`` gets for a configuration: the runner's own
    ``arguments(space, values)`` when it has that method, else irace's switches
    (``space.command_line(values)``; :meth:`racer.tuning.tuner.Tuner.run_arguments`).
    ``tag`` marks a look-ahead run that ``kill_run(tag)`` may stop (a runner without
    ``kill_run`` gets no tag); ``bound`` is irace's execution bound (capping, boundMax).
    ``kill_all`` stops every run in flight (an interruption); ``exec_dir`` names where runs
    happen, for error messages.
    """

    exec_dir: str

    def run(self, config_id: int, instance_id: int, seed: int, instance: Instance,
            arguments: Any, tag: object = None, bound: float | None = None) -> RunResult: ...

    def kill_all(self) -> None: ...


class TargetRunnerError(RuntimeError):
    """A run failed under the policy "stop"; ``result`` holds the command and output."""

    def __init__(self, result: RunResult, exec_dir: str) -> None:
        super().__init__(result.describe(exec_dir))
        self.result = result


class _Evaluate:
    """``evaluate`` with the instances: what a worker process gets, once, by value. A run
    then sends only the configuration, the instance's position and the seed."""

    def __init__(self, evaluate: Callable, objects: list) -> None:
        self.evaluate = evaluate
        self.objects = objects

    def __call__(self, config: dict, index: int, seed: int, bound: float | None = None) -> Any:
        # A copy of a dict: the tuner hands the same one to every run of a configuration.
        config = dict(config) if isinstance(config, dict) else config
        if bound is None:
            return self.evaluate(config, self.objects[index], seed)
        return self.evaluate(config, self.objects[index], seed, bound=bound)


def _read_value(value: Any, need_time: Any, directions: tuple | None = None) -> tuple:
    """``(status, cost, time, message)`` of what ``evaluate`` returned: a number (the cost)
    or a pair ``(cost, time)``; statuses and messages as the target-runner's. With
    ``directions`` (k >= 2 objectives): k numbers, then optionally the time; ``cost`` is
    then the tuple of the k."""
    from racer._text import short_repr

    if directions is not None:
        return _read_objectives(value, need_time, directions)
    pair = isinstance(value, (tuple, list)) and len(value) == 2
    cost, run_time = (value if pair else (value, None))
    for x in (cost, run_time):
        # (The cost may not be None: an evaluate that returns nothing has failed.)
        if (x is not None or x is cost) and (isinstance(x, bool)
                                             or not isinstance(x, numbers.Real)):
            return ("error", None, None, f"evaluate returned {short_repr(value)}; expected a "
                    "number (the cost) or a pair (cost, time) of numbers")
    cost = float(cost)
    run_time = None if run_time is None else float(run_time)
    if math.isnan(cost) or cost == -math.inf:
        return "error", None, run_time, f"evaluate returned the cost {cost!r}"
    if need_time and (run_time is None or not math.isfinite(run_time) or run_time < 0):
        return ("error", None, None, f"{need_time} needs the time of each run: evaluate must "
                "return (cost, time)")
    if cost == math.inf:
        return "inf", cost, run_time, "cost Inf: configuration rejected"
    return "ok", cost, run_time, ""


def _read_objectives(value: Any, need_time: Any, directions: tuple) -> tuple:
    """:func:`_read_value` on k >= 2 objectives (see there)."""
    from racer._text import short_repr
    from racer.tuning.objectives import infinite_objectives

    k = len(directions)
    expected = (f"{k} numbers, one per objective of `direction`"
                + (", then the time" if need_time else " (then, optionally, the time)"))
    if (isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__")
            or len(value) not in (k, k + 1)
            or any(isinstance(x, bool) or not isinstance(x, numbers.Real) for x in value)):
        return "error", None, None, f"evaluate returned {short_repr(value)}; expected {expected}"
    values = tuple(float(x) for x in value[:k])
    run_time = float(value[k]) if len(value) > k else None
    if any(math.isnan(x) for x in values):
        return "error", None, run_time, f"evaluate returned {short_repr(value)}: NaN"
    if need_time and (run_time is None or not math.isfinite(run_time) or run_time < 0):
        return "error", None, None, f"{need_time} needs the time of each run: {expected}"
    rejecting, impossible = infinite_objectives(values, directions)
    if impossible is not None:
        return "error", None, run_time, f"evaluate returned {short_repr(value)}: an infinite best value"
    if rejecting is not None:
        return ("inf", values, run_time,
                f"objective {rejecting + 1} is {values[rejecting]!r}: configuration rejected")
    return "ok", values, run_time, ""


class CallableRunner:
    """The tuner's runner of a Python ``evaluate`` (:class:`racer.tuning.runner.Runner`).

    ``instances`` maps each training and test :class:`~racer.tuning.instances.Instance` to its
    position in ``objects`` (the user's instances). With ``n_workers`` > 0 runs go to that
    many single-worker :class:`~racer.execution.WorkerPool`, one per thread of the tuner's
    pool (a worker runs one task at a time, so a run can be stopped by killing its worker;
    the pool charges the death to that run and starts a replacement); else ``evaluate``
    runs in the calling thread. Errors are retried ``retries`` times, as a target-runner's.
    ``need_time`` (the name of what needs it, e.g. "max_time", or False): ``evaluate`` must
    return ``(cost, time)``; ``directions`` (k >= 2 objectives): it returns k numbers.
    ``name`` is what the journal records as the target-runner.

    >>> inst = Instance("a")
    >>> runner = CallableRunner(lambda config, instance, seed: config["x"] + instance, [0.5],
    ...                         {inst: 0}, n_workers=0, timeout=None, retries=0,
    ...                         need_time=False, exec_dir=".", name="python:f")
    >>> res = runner.run(1, 1, 7, inst, {"x": 2.0})
    >>> res.status, res.cost
    ('ok', 2.5)
    >>> runner.run(1, 1, 7, inst, {"y": 2.0}).message
    "evaluate({'y': 2.0}, <instance a>, 7): raised KeyError: 'x'"
    """

    def __init__(self, evaluate: Callable, objects: list, instances: dict, *, n_workers: int,
                 timeout: float | None, retries: int, need_time: Any, exec_dir: str,
                 name: str, directions: tuple | None = None) -> None:
        self.command = [name]  # what the journal and settings.json record as targetRunner
        self.exec_dir = exec_dir
        self.call = _Evaluate(evaluate, objects)
        self.instances = instances
        self.timeout = timeout
        self.retries = retries
        self.need_time = need_time
        self.directions = directions  # several objectives: evaluate returns k numbers
        self.n_workers = n_workers
        self._free: queue.SimpleQueue | None = None
        self._pools: list = []
        self._busy: dict = {}  # pool -> tag of the run it runs (None: untagged)
        self._killed: dict = {}  # pool -> pids kill_run killed while it ran a run
        self._stopped: set = set()
        self._lock = threading.Lock()
        self._closing = False
        # Names this runner's killable processes on an executor's workers (_ShippedPools).
        self._token = uuid.uuid4().hex

    def __getstate__(self) -> dict:
        # Shipped to a Dask or Ray worker: evaluate runs there, in that worker's process, or
        # with a timeout in a killable process of that worker's (_SHIPPED_POOLS).
        state = dict(self.__dict__)
        state.update(_free=None, _pools=[], _busy={}, _killed={}, _stopped=set(), _lock=None,
                     _closing=False, n_workers=0)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the worker pools (all at once: their interpreters start in parallel)."""
        if self.n_workers <= 0:
            return
        from racer.execution import WorkerPool

        self._free = queue.SimpleQueue()
        for _ in range(self.n_workers):
            pool = WorkerPool(self.call, 1, name="evaluate")
            self._pools.append(pool)
            self._free.put(pool)

    @property
    def can_stop_runs(self) -> bool:
        """Whether :meth:`kill_run` can stop a run that has started: only on worker
        processes (``n_workers`` > 0); a run in this process ends on its own."""
        return self.n_workers > 0

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
        self._pools = []
        # An executor whose workers are threads of this process (a ThreadPoolExecutor) ran
        # the runs of a timeout here: their processes end with the tuning.
        _SHIPPED_POOLS.close(self._token)

    def arguments(self, space: Any, values: dict) -> Any:
        """What ``run`` gets for a configuration: the configuration as the user's space
        writes one (``space.native``): its active parameters, typed (inactive ones, None in
        the tuner, are left out, as ConfigSpace leaves them out); for a space translated
        from ConfigSpace, a ``ConfigSpace.Configuration``, which SMAC's target functions take."""
        return space.native(values)

    def run(self, config_id: int, instance_id: int, seed: int, instance: Any, arguments: dict,
            tag: object = None, bound: float | None = None) -> Any:
        index = self.instances[instance]
        start = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            status, cost, run_time, message, detail = self._once(arguments, index, seed, bound, tag)
            if (status != "error" or attempts > self.retries or self._closing
                    or message == _STOPPED):
                break
        if status == "error" and message != _STOPPED:
            message = (f"evaluate({arguments!r}, <instance {instance.name}>, {seed}"
                       + ("" if bound is None else f", bound={bound!r}") + f"): {message}")
        with self._lock:
            self._stopped.discard(tag)
        objectives = cost if isinstance(cost, tuple) else None
        return RunResult(status, cost[0] if objectives else cost, run_time, message,
                         list(self.command), None, "", detail, time.perf_counter() - start,
                         attempts, bound, objectives)

    def _once(self, config: dict, index: int, seed: int, bound: Any, tag: object) -> tuple:
        """One call: ``(status, cost, time, message, traceback text)``."""
        if self._free is None and self.timeout is None:
            try:
                value = self.call(config, index, seed, bound)
            except Exception as exc:  # noqa: BLE001 - a failing run, reported as the CLI's
                return ("error", None, None, f"raised {type(exc).__name__}: {exc}",
                        traceback.format_exc())
            return (*_read_value(value, self.need_time, self.directions), "")
        pool = self._borrow()
        try:
            with self._lock:
                if tag is not None and tag in self._stopped:
                    return "error", None, None, _STOPPED, ""
                self._busy[pool] = tag
            args = (config, index, seed) if bound is None else (config, index, seed, bound)
            try:
                got = list(pool.imap_unordered([(0, args)], timeout=self.timeout))
            except RuntimeError:
                # A worker killed by kill_run while still starting (the run waited for it:
                # the first run of a pool, or the one after a kill) dies "before it could
                # load evaluate", which the pool reports as a broken environment. Here it
                # is the stop that was asked for; the pool's worker is replaced below.
                with self._lock:
                    if pool not in self._killed:
                        raise
                return "error", None, None, _STOPPED, ""
        finally:
            with self._lock:
                self._busy.pop(pool, None)
                killed = self._killed.pop(pool, ())
            if killed:
                # Killed maybe after its run ended: a new worker before the next run, which
                # would otherwise be charged with this death.
                pool.replace_killed(killed)
            self._give_back(pool)
        _key, ok, value = got[0]
        if tag is not None and tag in self._stopped:
            return "error", None, None, _STOPPED, ""
        if ok:
            return (*_read_value(value, self.need_time, self.directions), "")
        if isinstance(value, BaseException):
            cause = value.__cause__
            return ("error", None, None, f"raised {type(value).__name__}: {value}",
                    str(cause) if cause is not None else "")
        return "error", None, None, str(value), ""  # timed out, or its worker died

    def _borrow(self) -> Any:
        """A free single-worker pool: one of this runner's (``n_workers`` > 0), or, shipped to
        an executor's worker with a timeout, one of that process's (:class:`_ShippedPools`)."""
        if self._free is not None:
            return self._free.get()
        return _SHIPPED_POOLS.borrow(self._token, self.call)

    def _give_back(self, pool: Any) -> None:
        if self._free is not None:
            self._free.put(pool)
        else:
            _SHIPPED_POOLS.give_back(self._token, pool)

    def _kill(self, pool: Any) -> None:
        for pid in pool.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def kill_run(self, tag: object) -> None:
        """Stop the look-ahead run ``tag``: kill its worker if it runs, or make it return at
        once if it has not started (look-ahead runs only on racer's own pools)."""
        with self._lock:
            self._stopped.add(tag)
            # Under the lock: a pool still busy with this run cannot be handed another run
            # before the kill, which would then stop that one instead.
            for pool, running in self._busy.items():
                if running == tag:
                    self._killed[pool] = set(pool.pids())
                    self._kill(pool)

    def kill_all(self) -> None:
        """Stop every run in flight (an interruption): their workers are killed. A run in
        this process (``n_jobs=1``, no timeout) cannot be stopped: it ends on its own."""
        self._closing = True
        with self._lock:
            pools = list(self._busy)
        for pool in pools:
            self._kill(pool)


class _ShippedPools:
    """The killable processes of runners shipped with a ``timeout`` to this process (a Dask
    or Ray worker): a free single-worker :class:`~racer.execution.WorkerPool` per runner
    token, borrowed for one run and given back, so that a worker running many runs of one
    tuning starts its interpreters once, not per run (one per run in flight at a time: a
    Dask worker with 4 threads keeps up to 4). A pool that timed out has had its worker
    killed and replaced by the pool itself. Pools of a token unused for :attr:`idle` seconds
    are closed when another token borrows: a cluster that outlives a tuning does not keep
    its processes, and a tuning still running keeps its own."""

    idle = 300.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[str, list] = {}
        self._used: dict[str, float] = {}

    def borrow(self, token: str, fn: Callable) -> Any:
        idle = []
        with self._lock:
            now = time.monotonic()
            for old in [t for t, used in self._used.items()
                        if t != token and now - used > self.idle]:
                idle.extend(self._free.pop(old, ()))
                del self._used[old]
            self._used[token] = now
            free = self._free.setdefault(token, [])
            pool = free.pop() if free else None
        for stale in idle:  # outside the lock: closing waits for the processes to end
            stale.close()
        if pool is None:
            from racer.execution import WorkerPool

            pool = WorkerPool(fn, 1, name="evaluate")
        return pool

    def give_back(self, token: str, pool: Any) -> None:
        with self._lock:
            self._free.setdefault(token, []).append(pool)
            self._used[token] = time.monotonic()

    def close(self, token: str) -> None:
        """Close the free pools of ``token`` (its tuning has ended)."""
        with self._lock:
            pools = self._free.pop(token, [])
            self._used.pop(token, None)
        for pool in pools:
            pool.close()


_SHIPPED_POOLS = _ShippedPools()
