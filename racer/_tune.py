"""``racer.tune``: irace's iterated racing of a Python function, by the command line's tuner.

:func:`tune` runs the tuning ``racer --scenario`` runs (:func:`racer.cli._main.run_tuning`:
the same :class:`racer.tuning.tuner.Tuner`, sampler, elitist races, soft restarts,
journals, resume, capping and output files) with one difference: a run calls ``evaluate``
instead of starting a target-runner. Both are implementations of one protocol,
:class:`racer.tuning.runner.Runner`; :class:`_CallableRunner` is this one. Where the
target-runner gets irace's switches, ``evaluate`` gets the configuration itself, a dict of
its active parameters (:meth:`_CallableRunner.arguments`).

Where runs go: ``n_jobs=1`` without ``timeout``, in this process; ``n_jobs > 1`` or a
``timeout``, on racer's :class:`~racer.execution.WorkerPool` (fresh interpreters that get
``evaluate`` by value, so a function of a script without a main guard, of a notebook or a
lambda works; a run past ``timeout`` has its worker killed and is an error; a worker that
dies is charged to its run), one single-worker pool per slot of the tuner's ``n_jobs``
threads; ``executor``, on any ``concurrent.futures.Executor`` (Dask's
``client.get_executor()``, :class:`racer.ray_executor.RayExecutor`), in the executor's
worker, as the command line ships its runner there.
"""

from __future__ import annotations

import csv
import dataclasses
import inspect
import math
import numbers
import os
import queue
import signal
import threading
import time
import traceback
import types
import weakref
from typing import Any, Callable

__all__ = ["tune", "TuneResult"]

# racer.tune's keyword -> irace's scenario option, for the options passed through as they are
# (tune's own arguments are mapped in its docstring's table). The journal records them in
# irace's names, as the command line does.
OPTION_NAMES = {
    "first_test": "firstTest",
    "each_test": "eachTest",
    "mu": "mu",
    "min_survivors": "minNbSurvival",
    "n_iterations": "nbIterations",
    "n_configurations": "nbConfigurations",
    "experiments_per_iteration": "nbExperimentsPerIteration",
    "elitist": "elitist",
    "elitist_new_instances": "elitistNewInstances",
    "elitist_limit": "elitistLimit",
    "deterministic": "deterministic",
    "sample_instances": "sampleInstances",
    "soft_restart": "softRestart",
    "soft_restart_threshold": "softRestartThreshold",
    "test_n_elites": "testNbElites",
    "test_type": "testType",
    "confidence": "confidence",
    "min_measurable_time": "minMeasurableTime",
    "capping_type": "cappingType",
    "capping_after_first_test": "cappingAfterFirstTest",
    "bound_type": "boundType",
    "bound_digits": "boundDigits",
    "bound_par": "boundPar",
    "bound_as_timeout": "boundAsTimeout",
}
# tune's own arguments with an irace option behind them (for error messages).
_ARGUMENT_NAMES = {
    "budget": "maxExperiments", "max_time": "maxTime", "n_jobs": "parallel",
    "random_state": "seed", "digits": "digits", "capping": "capping", "bound_max": "boundMax",
    "retries": "targetRunnerRetries", "timeout": "targetRunnerTimeout",
    "direction": "objectives",
}

# The message of a run stopped by kill_run (a look-ahead run no longer needed), as the
# target-runner's.
_STOPPED = "stopped: the run was no longer needed (look-ahead)"


@dataclasses.dataclass(frozen=True)
class TuneResult:
    """What :func:`tune` found.

    ``best``: the best configuration, a dict of its active parameters; ``elites``: the final
    elites, best first, as such dicts, and ``elite_ids`` their configuration IDs;
    ``configurations``: every configuration raced, by ID (inactive parameters absent);
    ``runs``: every run of the tuning (earlier sessions of a resumed one included), as
    ``runs.csv`` of the command line holds them (iteration 0: the test phase; status "ok",
    "inf", "error" or "speculative-unused" for a look-ahead run the race did not use) --
    a pandas DataFrame when pandas is installed, else a list of dicts; ``test``: with
    ``test_instances``, the tested elites' costs on them, ``{configuration ID: [cost or
    None, ...]}`` in ``test_instances`` order, else None; ``experiments``: runs the races used
    (unused look-ahead runs are paid from a reserve of the budget, racer.tuning.lookahead);
    ``iterations``, ``stop_reason``, ``seed``; ``storage``: the execution
    directory (a temporary one, removed with this object, when ``storage`` was None).
    :meth:`report` writes the HTML report ``racer report`` writes for it.

    A tuning on several objectives (``direction`` a list): ``elites`` is the final Pareto
    set of elites (non-dominated on the mean objectives, ranked by crowding distance, the
    front's ends first: docs/cli.md), ``best`` its first; ``pareto_front`` the same
    configurations and ``pareto_objectives`` their mean objective vectors (one list of k
    means each, in ``direction``'s order, on the training instances of the last race);
    ``test`` holds a list of k values per test instance; ``runs`` has a column
    ``cost.objective<j>`` per objective (``cost`` is the first). With one objective,
    ``pareto_front`` is ``[best]`` and ``pareto_objectives`` None.
    """

    best: dict
    elites: list
    elite_ids: list
    configurations: dict
    runs: Any
    test: dict | None
    experiments: int
    iterations: int
    stop_reason: str
    seed: int
    storage: str
    pareto_front: list = dataclasses.field(default_factory=list)
    pareto_objectives: list | None = None
    _cleanup: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def n_evaluations(self) -> int:
        """Runs charged to the budget: racer's name for the evaluations used, as in
        :class:`racer.RaceResult` (docs/conventions.md); ``experiments`` is irace's."""
        return self.experiments

    @property
    def n_iterations(self) -> int:
        """Iterations run, under racer's name (docs/conventions.md); also ``iterations``."""
        return self.iterations

    def report(self, path: Any = None) -> str | None:
        """Write the HTML report of the tuning (``racer report`` on :attr:`storage`) to
        ``path`` (default: ``report.html`` in :attr:`storage`); returns its path. Needs
        matplotlib (the ``plot`` extra)."""
        from racer.report import write_report

        out = os.path.join(self.storage, "report.html") if path is None else path
        return write_report(self.storage, out)


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


class _CallableRunner:
    """The tuner's runner of a Python ``evaluate`` (:class:`racer.tuning.runner.Runner`).

    ``instances`` maps each training and test :class:`~racer.tuning.instances.Instance` to its
    position in ``objects`` (the user's instances). With ``n_workers`` > 0 runs go to that
    many single-worker :class:`~racer.execution.WorkerPool`, one per thread of the tuner's
    pool (a worker runs one task at a time, so a run can be stopped by killing its worker;
    the pool charges the death to that run and starts a replacement); else ``evaluate``
    runs in the calling thread. Errors are retried ``retries`` times, as a target-runner's.
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

    def __getstate__(self) -> dict:
        # Shipped to a Dask or Ray worker: evaluate runs there, in that worker's process.
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

    def close(self) -> None:
        for pool in self._pools:
            pool.close()
        self._pools = []

    def arguments(self, space: Any, values: dict) -> Any:
        """What ``run`` gets for a configuration: the configuration as the user's space
        writes one (``space.native``): its active parameters, typed (inactive ones, None in
        the tuner, are left out, as ConfigSpace leaves them out); for a space translated
        from ConfigSpace, a ``ConfigSpace.Configuration``, which SMAC's target functions take."""
        return space.native(values)

    def run(self, config_id: int, instance_id: int, seed: int, instance: Any, arguments: dict,
            tag: object = None, bound: float | None = None) -> Any:
        from racer.tuning.runner import RunResult

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
        if self._free is None:
            try:
                value = self.call(config, index, seed, bound)
            except Exception as exc:  # noqa: BLE001 - a failing run, reported as the CLI's
                return ("error", None, None, f"raised {type(exc).__name__}: {exc}",
                        traceback.format_exc())
            return (*_read_value(value, self.need_time, self.directions), "")
        pool = self._free.get()
        try:
            with self._lock:
                if tag is not None and tag in self._stopped:
                    return "error", None, None, _STOPPED, ""
                self._busy[pool] = tag
            args = (config, index, seed) if bound is None else (config, index, seed, bound)
            got = list(pool.imap_unordered([(0, args)], timeout=self.timeout))
        finally:
            with self._lock:
                self._busy.pop(pool, None)
                killed = self._killed.pop(pool, ())
            if killed:
                # Killed maybe after its run ended: a new worker before the next run, which
                # would otherwise be charged with this death.
                pool.replace_killed(killed)
            self._free.put(pool)
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


def _configuration(space: Any, values: Any, k: int) -> dict:
    """An ``initial`` configuration as the tuner's values: every parameter (None where
    absent), typed as the parameters file would type it; ValueError if it is not valid."""
    if not isinstance(values, dict):
        raise TypeError(f"`initial[{k}]` must be a dict of parameter values; got {values!r}")
    unknown = sorted(set(values) - set(space.names))
    if unknown:
        raise ValueError(f"`initial[{k}]` names {unknown[0]!r}, which is not a parameter "
                         f"(parameters: {', '.join(space.names)})")
    out = {}
    for p in space.declared:
        v = values.get(p.name)
        if v is not None and p.type in ("c", "o") and v not in p.domain and str(v) in p.domain:
            v = str(v)  # 1 for the category "1"
        elif v is not None and p.type in ("r", "i") and isinstance(v, numbers.Real):
            v = int(v) if p.type == "i" and float(v).is_integer() else float(v)
        out[p.name] = v
    why = space.check(out)
    if why is not None:
        raise ValueError(f"`initial[{k}]` is not a valid configuration: {why}")
    return out


def _instance_names(objects: list, n_train: int) -> list:
    """The name each instance has in the journals and runs.csv: a str (or path) itself, a
    number's text, else its position (``train-3``, ``test-1``); positions for all when two
    different instances would share a name."""
    names = []
    for obj in objects:
        if isinstance(obj, (str, os.PathLike)):
            names.append(os.fspath(obj))
        elif isinstance(obj, numbers.Real) and not isinstance(obj, bool):
            names.append(repr(obj))
        else:
            names.append(None)
    by_name: dict = {}
    clash = False
    for name, obj in zip(names, objects):
        if name is None:
            continue
        other = by_name.setdefault(name, obj)
        if other is not obj and not _same(other, obj):
            clash = True
    return [(f"train-{k + 1}" if k < n_train else f"test-{k - n_train + 1}")
            if clash or name is None else name for k, name in enumerate(names)]


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - an == that does not answer a bool (arrays)
        return False


def _accepts_bound(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # a builtin or C callable: let the call say
    return any(p.name == "bound" or p.kind == p.VAR_KEYWORD for p in params)


def _callable_name(fn: Callable) -> str:
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"python:{module}.{name}"


def _check_sequence(value: Any, name: str, *, allow_none: bool = False) -> list | None:
    if value is None and allow_none:
        return None
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise TypeError(f"`{name}` must be a list of instances; got {value!r}")
    out = list(value)
    if not out and not allow_none:
        raise ValueError(f"`{name}` is empty: give at least one instance")
    return out


def _read_runs(path: str) -> list:
    """runs.csv as dicts, numbers typed (a torn last line of a killed session skipped)."""
    ints = ("iteration", "configuration", "instance_id", "seed", "attempts")
    floats = ["cost", "time", "wall", "bound"]
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        floats += [c for c in reader.fieldnames or () if c.startswith("cost.")]
        for row in reader:
            try:
                for k in ints:
                    row[k] = int(row[k])
                for k in floats:
                    row[k] = float(row[k]) if row[k] not in ("", None) else None
            except (TypeError, ValueError, KeyError):
                continue
            rows.append(row)
    return rows


def _as_table(rows: list, objective_names: tuple = ()) -> Any:
    try:
        import pandas as pd
    except ImportError:
        return rows
    from racer.tuning.output import RUN_FIELDS, objective_columns

    return pd.DataFrame(rows, columns=RUN_FIELDS + objective_columns(objective_names))


def _settable(sc: Any, name: str, value: Any, python_name: str) -> None:
    """Set irace option ``name`` of ``sc``; a bad value is a ValueError naming the argument."""
    from racer.cli.scenario import ScenarioError

    try:
        sc.set(name, value, origin=(None, None))
    except ScenarioError as exc:
        raise ValueError(f"`{python_name}` (irace's {name}): "
                         f"{str(exc).partition(': ')[2] or exc}") from None


def tune(evaluate: Callable, space: Any, instances: Any, *, budget: int | None = None,
         max_time: float | None = None, test_instances: Any = None, n_jobs: int | None = 1,
         executor: Any = None, timeout: float | None = None, storage: Any = None,
         random_state: Any = None, racing_test: str | None = None, sampler: str = "irace",
         initial: list | None = None, forbidden: Any = None, digits: int | None = None,
         capping: bool = False, bound_max: int | None = None, retries: int = 0,
         on_error: str = "stop", lookahead: bool = True, progress: bool = True,
         direction: Any = "minimize", **options: Any) -> TuneResult:
    """Tune the parameters of ``evaluate`` over ``instances`` with irace's iterated racing,
    exactly as ``racer --scenario`` does it (docs/tune.md).

    ``evaluate(config, instance, seed)`` returns the cost of configuration ``config`` (a
    dict of its active parameters) on ``instance`` (one of ``instances``, as given) with
    ``seed`` (an int; use it for the run's randomness), smaller is better; or ``(cost,
    time)`` when the budget is ``max_time`` or with capping. ``inf`` rejects the
    configuration as irace rejects it; an exception, ``nan`` or anything but a number is a
    failed run: retried ``retries`` times, then ``on_error`` decides: "stop" (default, as
    irace) raises :class:`racer.EvaluationError` naming the configuration, instance and
    seed with ``evaluate``'s traceback; "reject" rejects the configuration; "worst" ranks
    it worst on that instance. Every failure is in ``runs``.

    The command line's options and their names here:

    ================================  ==========================================
    racer.tune                        irace scenario / racer command line
    ================================  ==========================================
    ``evaluate``                      targetRunner
    ``space``, ``digits``             parameterFile, digits
    ``forbidden``                     forbiddenFile (text or a path)
    ``initial`` (list of dicts)       configurationsFile
    ``instances``, ``test_instances`` trainInstancesFile, testInstancesFile
    ``budget`` / ``max_time``         maxExperiments / maxTime (seconds of the
                                      times ``evaluate`` reports)
    ``n_jobs``                        parallel
    ``executor`` (an Executor)        --executor
    ``timeout``, ``retries``          targetRunnerTimeout, targetRunnerRetries
    ``storage`` (a folder)            execDir
    ``random_state`` (int)            seed
    ``racing_test`` (name)            --racing-test
    ``sampler`` ("irace", "optuna")   --sampler
    ``on_error``                      --on-error
    ``lookahead=False``               --no-lookahead
    ``progress=False``                quiet
    ``direction`` (a list)            objectives (racer's; see below)
    ``capping``, ``bound_max``        capping, boundMax (``evaluate`` then takes
                                      ``bound=``; see below)
    ================================  ==========================================

    irace's other options are keywords of their own (``**options``, :data:`OPTION_NAMES`):
    ``first_test`` (firstTest), ``each_test``, ``mu``, ``min_survivors`` (minNbSurvival),
    ``n_iterations`` (nbIterations), ``n_configurations`` (nbConfigurations),
    ``experiments_per_iteration`` (nbExperimentsPerIteration), ``elitist``,
    ``elitist_new_instances``, ``elitist_limit``, ``deterministic``, ``sample_instances``,
    ``soft_restart``, ``soft_restart_threshold``, ``test_n_elites`` (testNbElites),
    ``test_type``, ``confidence``, ``min_measurable_time``, ``capping_type``,
    ``capping_after_first_test``, ``bound_type``, ``bound_digits``, ``bound_par``,
    ``bound_as_timeout``. Not here: the command line's ways of naming files and folders
    (instances dirs, launchers), ``--fixed-list``, and irace's options racer does not
    implement.

    Parameters
    ----------
    evaluate : callable
        Any Python callable: a function of a script without a main guard, of a notebook or
        of ``python -c``, a lambda, a closure. With ``n_jobs > 1`` or a ``timeout`` it runs
        in racer's worker processes (:class:`racer.execution.WorkerPool`), sent by value.
    space : ParameterSpace, str, path, dict of Optuna distributions or ConfigurationSpace
        Translated once by :func:`racer.parameter_space` (docs/spaces.md): irace parameters
        (text or a parameters file's path), Optuna distributions by name, a
        ``ConfigSpace.ConfigurationSpace`` with its conditions and forbidden clauses, or a
        :class:`racer.tuning.parameters.ParameterSpace`.
    instances : list
        The training instances, any objects (a file's path, a data set, a number); each
        reaches ``evaluate`` as given. In the journals and ``runs`` a str or path is named
        by itself, a number by its text, anything else by its position (``train-3``).
    budget : int
        maxExperiments: the number of runs (calls of ``evaluate``) the tuning may make.
        Give ``budget`` or ``max_time``, not both.
    max_time : float
        maxTime: the total of the times ``evaluate`` reports (it then returns ``(cost,
        time)``), as irace's maxTime.
    test_instances : list, optional
        After the tuning, the best ``test_n_elites`` elites (default 1) run on each.
    n_jobs : int
        Runs at once (irace's parallel): 1 in this process, k > 1 on k worker processes,
        -1 one per CPU.
    executor : concurrent.futures.Executor, optional
        Where runs go instead (Dask's ``client.get_executor()``, racer's ``RayExecutor``);
        ``evaluate`` and the instances travel with each run. Not with ``timeout``.
    timeout : float, optional
        Seconds before a run is stopped (its worker killed) and counted as failed.
    storage : str or path, optional
        The execution directory: the journals (``racer-journal/``), ``runs.csv`` and the
        output files, as ``racer --scenario`` writes them in execDir. The same call on the
        same ``storage`` resumes an interrupted tuning (even after ``kill -9``) and ends
        as an uninterrupted one; with a larger ``budget`` it continues a finished one.
        Default: a temporary folder, removed with the result.
    evaluate's ``config``
        The configuration as the user's space writes one (``space.native``): a dict of the
        active parameters, typed; for a ConfigSpace space a ``ConfigSpace.Configuration``,
        so a SMAC3 target function ``train(config, instance, seed)`` runs unchanged.
    initial : list of dict, optional
        Configurations raced in the first iteration, as irace's configurationsFile. None
        and a space that declares a default (ConfigSpace's default configuration): the
        default is raced first; ``initial=[]`` races none.
    random_state : int, optional
        The seed (irace's seed); None draws one (kept in ``storage`` for a resume).
    racing_test : str, optional
        A racing test by name, as ``--racing-test`` (default racer's t-test; "F-test" for
        irace's).
    capping, bound_max : bool, int
        irace's adaptive capping for running-time tuning: ``evaluate(config, instance, seed,
        bound=...)`` gets each run's time bound and returns ``(cost, time)``. ``bound_max``
        alone passes ``bound=bound_max`` to every run, as irace's boundMax.
    progress : bool
        The progress bar (stderr, or a notebook's output).
    direction : "minimize" or list of str
        One objective, minimised, as irace (default); or a list of k >= 2 directions
        ("minimize" or "maximize"), one per objective: ``evaluate`` then returns k numbers
        (then the time, under ``max_time``), each race is a Pareto race
        (:class:`racer.ParetoTest`), the elites are a Pareto set and
        :attr:`TuneResult.pareto_front` holds it (docs/tune.md). The objectives are named
        ``objective1`` .. ``objectivek`` in the journals and ``runs``.

    Returns
    -------
    TuneResult

    Examples
    --------
    >>> import racer
    >>> res = racer.tune(lambda c, i, s: (c["x"] - 0.3) ** 2 + i, 'x "" r (0, 1)',
    ...                  [0.1 * k for k in range(10)], budget=200, random_state=1, progress=False)
    >>> abs(res.best["x"] - 0.3) < 0.1, res.experiments <= 200
    (True, True)
    """
    from racer._validation import check_bool, check_int
    from racer.execution import check_timeout, effective_n_jobs

    if not callable(evaluate):
        raise TypeError(f"`evaluate` must be callable (config, instance, seed); got {evaluate!r}")
    if (budget is None) == (max_time is None):
        raise ValueError("give one of `budget` (a number of runs) and `max_time` (seconds); got "
                         + ("neither" if budget is None else "both"))
    if budget is not None:
        check_int(budget, "budget", minimum=1)
    if max_time is not None:
        if isinstance(max_time, bool) or not isinstance(max_time, numbers.Real) or not max_time > 0:
            raise ValueError(f"`max_time` must be a positive number of seconds; got {max_time!r}")
    train = _check_sequence(instances, "instances")
    test = _check_sequence(test_instances, "test_instances", allow_none=True) or []
    workers = effective_n_jobs(n_jobs)
    timeout = check_timeout(timeout)
    if executor is not None and timeout is not None:
        raise ValueError("`timeout` cannot be combined with `executor`: racer cannot stop a run "
                         "it handed to another executor")
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"`executor` must be a concurrent.futures.Executor; got {executor!r}")
    retries = check_int(retries, "retries", minimum=0)
    capping = check_bool(capping, "capping")
    if on_error not in ("stop", "reject", "worst"):
        raise ValueError(f"`on_error` must be 'stop', 'reject' or 'worst'; got {on_error!r}")
    if sampler not in ("irace", "optuna"):
        raise ValueError(f"`sampler` must be 'irace' or 'optuna'; got {sampler!r}")
    if racing_test is not None and not isinstance(racing_test, str):
        raise TypeError(f"`racing_test` must be a test's name (str), as --racing-test; got "
                        f"{racing_test!r}")
    objectives = _objectives_spec(direction)
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise TypeError(f"tune() got an unexpected keyword argument {unknown[0]!r} (irace's "
                        f"options here: {', '.join(OPTION_NAMES)})")
    if (capping or bound_max) and not _accepts_bound(evaluate):
        raise TypeError("`evaluate` must accept a `bound` keyword argument with "
                        + ("`capping`" if capping else "`bound_max`"))
    from racer.tuning.spaces import parameter_space

    pspace = parameter_space(space, forbidden=forbidden, digits=digits)
    # No initial configurations but a space that declares a default (ConfigSpace's): the
    # default is raced first, as irace races a configurationsFile's.
    if initial is None and pspace.default is not None:
        initial = [pspace.default]
    start = [_configuration(pspace, c, k) for k, c in enumerate(initial or [])]
    seed = random_state
    if random_state is not None and not isinstance(random_state, numbers.Integral):
        from racer._validation import seed_from_random_state

        seed = seed_from_random_state(random_state)  # a Generator: one draw
    return _run(evaluate, pspace, train, test, start, storage, executor, seed, {
        "budget": budget, "max_time": max_time, "n_jobs": workers, "random_state": seed,
        "digits": digits, "capping": capping, "bound_max": bound_max, "retries": retries,
        "timeout": timeout, "direction": objectives, **options},
        dict(racing_test=racing_test, on_error=on_error, sampler=sampler,
             lookahead=check_bool(lookahead, "lookahead"), progress=check_bool(progress, "progress")))


def _objectives_spec(direction: Any) -> str | None:
    """The scenario's ``objectives`` for ``direction``: None for one minimised objective,
    else ``objective1:min,objective2:max,...``; a single "maximize" is refused (irace
    minimises the cost: return its negative)."""
    from racer._validation import check_directions

    directions = check_directions(direction)
    if isinstance(directions, str):
        if directions == "maximize":
            raise ValueError("`direction`: one objective is minimised, as irace minimises the "
                             "cost; return its negative, or give a list of two or more "
                             "directions for several objectives")
        return None
    return ",".join(f"objective{j + 1}:{d[:3]}" for j, d in enumerate(directions))


def _run(evaluate, space, train, test, start, storage, executor, seed, values: dict,
         flags: dict) -> TuneResult:
    """The tuning of :func:`tune`, its arguments checked: a scenario in irace's names, the
    command line's :func:`racer.cli._main.run_tuning` with a :class:`_CallableRunner`."""
    import shutil
    import tempfile
    import warnings

    from racer.cli import _main as cli
    from racer.tuning.checks import check_space
    from racer.tuning.tuner import BudgetError
    from racer.cli.scenario import Instance, ScenarioError, defaults
    from racer.tuning.runner import TargetRunnerError
    from racer.engine import EvaluationError

    cleanup = None
    if storage is None:
        exec_dir = tempfile.mkdtemp(prefix="racer-tune-")
        cleanup = exec_dir
    else:
        try:
            exec_dir = os.path.abspath(os.fspath(storage))
        except TypeError:
            raise TypeError(f"`storage` must be a folder path (str or os.PathLike); got "
                            f"{storage!r}") from None
        os.makedirs(exec_dir, exist_ok=True)
    objects = train + test
    names = _instance_names(objects, len(train))
    insts = [Instance(n) for n in names]
    name = _callable_name(evaluate)
    sc = defaults()
    irace = {**_ARGUMENT_NAMES, **OPTION_NAMES}
    for key, value in values.items():
        if value is None or (key == "capping" and not value):
            continue
        _settable(sc, irace[key], value, key)
    for option, text in (("execDir", exec_dir), ("targetRunner", name),
                         ("parameterFile", space.source),
                         ("trainInstancesFile", "(racer.tune instances)"),
                         ("testInstancesFile", "(racer.tune test_instances)" if test else "")):
        sc.set(option, text, origin=(None, None))
    sc.set("quiet", not flags["progress"], origin=(None, None))
    try:
        cli._check_values(sc)
    except ScenarioError as exc:
        python = {v: k for k, v in irace.items()}.get(exc.option, exc.option)
        raise ValueError(f"`{python}` (irace's {exc.option}): "
                         f"{str(exc).partition(': ')[2] or exc}") from None
    for message in check_space(space):
        warnings.warn(message, stacklevel=3)
    need_time = "max_time" if values["max_time"] else "capping" if values["capping"] else False
    objectives = cli.objectives_of(sc)
    runner = _CallableRunner(
        evaluate, objects, {inst: k for k, inst in enumerate(insts)},
        n_workers=(values["n_jobs"] if executor is None and (values["n_jobs"] > 1
                                                             or values["timeout"] is not None)
                   else 0),
        timeout=values["timeout"], retries=values["retries"], need_time=need_time,
        exec_dir=exec_dir, name=name,
        directions=None if objectives is None else objectives.directions)
    loaded = {"scenario": sc, "space": space, "initial": start, "train": insts[:len(train)],
              "test": insts[len(train):], "exec_dir": exec_dir, "runner_path": name,
              "warnings": []}
    args = types.SimpleNamespace(
        racing_test=flags["racing_test"], on_error=flags["on_error"], sampler=flags["sampler"],
        fixed_list=False, no_lookahead=not flags["lookahead"], fresh=False, no_report=True,
        executor="threads", opt_quiet=None, argv=[],
        start_over=f"racer.tune(..., storage=<a new folder>), or delete {exec_dir}")
    finished = False
    try:
        runner.start()
        tuner, result, _test, _winner = cli.run_tuning(loaded, args, runner=runner,
                                                       executor=executor, announce=False)
        finished = True
    except BudgetError as exc:
        raise BudgetError(f"`{'max_time' if values['max_time'] else 'budget'}`: {exc}") from None
    except TargetRunnerError as exc:
        res = exc.result
        raise EvaluationError(f"{res.message}" + (f"\n{res.stderr.rstrip()}" if res.stderr else "")
                              + "\n(on_error='reject' or 'worst', or retries=, to go on despite "
                              "failures; the same call on the same storage resumes)") from None
    finally:
        runner.close()
        if not finished and cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
    def as_dict(values: dict) -> dict:
        # What evaluate got, as a plain dict (a ConfigSpace Configuration is a Mapping).
        return dict(runner.arguments(space, values))

    configurations = {}
    for _it, _res, candidates in result.races:
        for c in candidates:
            configurations.setdefault(c.id, as_dict(c.values))
    elites = [as_dict(e.values) for e in result.elites]
    names = () if objectives is None else objectives.names
    front_objectives = None
    if objectives is not None and result.elites:
        from racer.tuning.output import front_means

        means = front_means(result, names)
        front_objectives = [means[e.id][1] for e in result.elites]
    out = TuneResult(
        best=dict(elites[0]) if elites else {}, elites=elites,
        elite_ids=[e.id for e in result.elites], configurations=configurations,
        runs=_as_table(_read_runs(os.path.join(exec_dir, "runs.csv")), names),
        test=None if result.test is None else dict(result.test["costs"]),
        experiments=result.experiments, iterations=result.iterations,
        stop_reason=result.stop_reason, seed=tuner.settings.seed, storage=exec_dir,
        pareto_front=[dict(e) for e in elites] if objectives is not None else elites[:1],
        pareto_objectives=front_objectives)
    if cleanup is not None:
        object.__setattr__(out, "_cleanup", weakref.finalize(out, shutil.rmtree, cleanup, True))
    return out
