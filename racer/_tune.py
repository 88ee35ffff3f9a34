"""``racer.tune``: irace's iterated racing of a Python function, by the command line's tuner.

:func:`tune` runs the tuning ``racer --scenario`` runs (:func:`racer.tuning.run.run_tuning`:
the same :class:`racer.tuning.tuner.Tuner`, sampler, elitist races, soft restarts,
journals, resume, capping and output files) with one difference: a run calls ``evaluate``
instead of starting a target-runner. Both are implementations of one protocol,
:class:`racer.tuning.runner.Runner`; :class:`racer.tuning.runner.CallableRunner` is this one.
:func:`tune` checks its arguments, makes the tuning's :class:`racer.tuning.settings.Settings`
(whose refusals name tune's keywords) and reads the result from what ``run_tuning`` returns.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import numbers
import os
import warnings
import weakref
from typing import Any, Callable

__all__ = ["tune", "TuneResult"]

#: irace's options that :func:`tune` takes as keywords of their own (``**options``), by their
#: :class:`racer.tuning.settings.Settings` field (irace's name in
#: :data:`racer.tuning.settings.IRACE_OPTIONS`).
OPTION_NAMES = (
    "first_test", "each_test", "mu", "min_survivors", "n_iterations", "n_configurations",
    "experiments_per_iteration", "elitist", "elitist_new_instances", "elitist_limit",
    "deterministic", "sample_instances", "soft_restart", "soft_restart_threshold",
    "test_n_elites", "test_type", "confidence", "min_measurable_time", "capping_type",
    "capping_after_first_test", "bound_type", "bound_digits", "bound_par", "bound_as_timeout",
    "outlier_factor", "min_experiments", "block_size", "postselection",
)

# The settings whose keyword is not the field's name; the others are named as the field.
_NAMES = {"seed": "`random_state`", "objectives": "`direction`"}
_ADVICE = {"objectives": "`direction` one direction per objective, e.g. "
                         "direction=[\"minimize\", \"minimize\"] (evaluate then returns one "
                         "number per objective)"}

# The command line's names (irace's options, racer's flags) of tune's keywords, for a caller
# who writes one of them: refused, naming the keyword to use.
_COMMAND_NAMES = {
    "maxExperiments": "budget", "max_experiments": "budget", "maxTime": "max_time",
    "parallel": "n_jobs", "seed": "random_state", "objectives": "direction",
    "execDir": "storage", "exec_dir": "storage", "targetRunner": "evaluate",
    "targetRunnerRetries": "retries", "targetRunnerTimeout": "timeout",
    "parameterFile": "space", "forbiddenFile": "forbidden", "configurationsFile": "initial",
    "trainInstancesFile": "instances", "trainInstancesDir": "instances",
    "testInstancesFile": "test_instances", "testInstancesDir": "test_instances",
    "quiet": "progress", "no_lookahead": "lookahead",
}


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
    (unused look-ahead runs are paid from a reserve of the budget, racer.tuning.lookahead;
    with ``pipelined=True``, every run started, used or not);
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

    ``prob_not_best``: how sure the answer is, on one objective -- the posterior
    probability that some other final elite has a lower expected cost than ``best`` over
    the distribution the instances come from (the Bayesian bootstrap over the training
    instances every final elite ran, :func:`racer.stats.prob_not_best`, with the tuning's
    seed: the same seed gives the same number). 0.0 with one elite; None with fewer than
    two such instances and on several objectives. It speaks of the final elites only, not
    of configurations eliminated earlier or never sampled, and it is computed on the
    instances the elites were chosen on; on the ground-truth benchmark the rate at which
    another final elite was truly better stayed at or below it (benchmarks/RESULTS.md).
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
    prob_not_best: float | None = None
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
    number's text (``str``: a NumPy scalar reads ``0.379``, not ``np.float64(0.379)``), else
    its position (``train-3``, ``test-1``); positions for all when two different instances
    would share a name.

    >>> import numpy as np
    >>> _instance_names([0.5, np.float64(0.379), np.int64(3), "a.cnf", [1]], 5)
    ['0.5', '0.379', '3', 'a.cnf', 'train-5']
    """
    names = []
    for obj in objects:
        if isinstance(obj, (str, os.PathLike)):
            names.append(os.fspath(obj))
        elif isinstance(obj, numbers.Real) and not isinstance(obj, bool):
            names.append(str(obj))
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



def _as_table(rows: list, objective_names: tuple = ()) -> Any:
    try:
        import pandas as pd
    except ImportError:
        return rows
    from racer.tuning.output import RUN_FIELDS, objective_columns

    return pd.DataFrame(rows, columns=RUN_FIELDS + objective_columns(objective_names))




def tune(evaluate: Callable, space: Any, instances: Any, *, budget: int | None = None,
         max_time: float | None = None, test_instances: Any = None, n_jobs: int | None = 1,
         executor: Any = None, timeout: float | None = None, storage: Any = None,
         random_state: Any = None, test: str | None = None, sampler: str = "irace",
         initial: list | None = None, forbidden: Any = None, digits: int | None = None,
         capping: bool = False, bound_max: int | None = None, retries: int = 0,
         on_error: str = "raise", lookahead: bool = True, pipelined: bool = False,
         pipelined_iterations: bool = False,
         progress: bool = True, direction: Any = "minimize", **options: Any) -> TuneResult:
    """Tune the parameters of ``evaluate`` over ``instances`` with irace's iterated racing,
    exactly as ``racer --scenario`` does it (docs/tune.md).

    ``evaluate(config, instance, seed)`` returns the cost of configuration ``config`` (a
    dict of its active parameters) on ``instance`` (one of ``instances``, as given) with
    ``seed`` (an int; use it for the run's randomness), smaller is better; or ``(cost,
    time)`` when the budget is ``max_time`` or with capping. ``inf`` rejects the
    configuration as irace rejects it; an exception, ``nan`` or anything but a number is a
    failed run: retried ``retries`` times, then ``on_error`` decides: "raise" (default, as
    irace stops) raises :class:`racer.EvaluationError` naming the configuration, instance
    and seed with ``evaluate``'s traceback; "eliminate" eliminates the configuration (irace's
    rejection); "worst" ranks it worst on that instance, as ``racer.race`` does. Every
    failure is in ``runs``. (The former "stop" and "reject" still work, with a
    FutureWarning.)

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
    ``test`` (name)                   --racing-test
    ``sampler`` ("irace", "optuna")   --sampler
    ``on_error``                      --on-error ("raise", "eliminate" and
                                      "worst" for its stop, reject, worst)
    ``lookahead=False``               --no-lookahead
    ``pipelined=True``                --pipelined
    ``pipelined_iterations=True``     --pipelined-iterations
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
    ``bound_as_timeout``; and racer's ``outlier_factor`` (--outlier-factor; default 1000,
    None for none): a configuration with a run at least that many times the median
    configuration's cost on the same instance leaves the race at once, whatever the racing
    test (:class:`racer.racing.OutlierGuard`), and a run that has taken that many times the
    median wall time of the runs finished on its instance is stopped, its configuration
    rejected (:mod:`racer.tuning.slow_runs`; only on worker processes, ``n_jobs > 1`` or a
    ``timeout``). Not here: the command line's ways of naming files and folders
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
        ``evaluate`` and the instances travel with each run. Not with ``n_jobs`` other
        than 1 (runs go where the executor sends them).
    timeout : float, optional
        Seconds before a run is stopped (its worker killed) and counted as failed. With an
        ``executor``, each of its workers makes its runs in killable processes of its own
        (one per run in flight, started at its first run and kept for the next), so a run
        that hangs on a cluster is stopped as it is on racer's pool.
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
    test : str, optional
        A racing test by name, as ``--racing-test`` (default racer's t-test; "F-test" for
        irace's; :mod:`racer.racing.registry`). Formerly ``racing_test``, still accepted
        with a FutureWarning.
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

    # First the keywords themselves: a caller who wrote the command line's name of the
    # budget (maxExperiments=) is told which keyword it is here, not that it is missing.
    options, test = _check_options(options, test)
    _check_budget(evaluate, budget, max_time, options.get("min_experiments"))
    train = _check_sequence(instances, "instances")
    test_objects = _check_sequence(test_instances, "test_instances", allow_none=True) or []
    workers, timeout = _check_where(executor, n_jobs, timeout)
    retries = check_int(retries, "retries", minimum=0)
    capping = check_bool(capping, "capping")
    if (capping or bound_max) and not _accepts_bound(evaluate):
        raise TypeError("`evaluate` must accept a `bound` keyword argument with "
                        + ("`capping`" if capping else "`bound_max`"))
    settings = _settings(
        options, budget=budget or 0, max_time=max_time or 0.0, n_jobs=workers,
        seed=_seed(random_state), digits=4 if digits is None else digits, capping=capping,
        bound_max=0 if bound_max is None else bound_max,
        objectives=_objectives_spec(direction) or "", test=test,
        on_error=_check_on_error(on_error), sampler=sampler,
        lookahead=check_bool(lookahead, "lookahead"), pipelined=pipelined,
        pipelined_iterations=pipelined_iterations,
        progress=check_bool(progress, "progress"))
    pspace, start = _space(space, forbidden, digits, initial)
    exec_dir, cleanup = _storage(storage)
    need_time = "max_time" if max_time else "capping" if capping else False
    return _run(evaluate, pspace, train, test_objects, start, settings, exec_dir, cleanup,
                executor, {"n_workers": (workers if executor is None
                                         and (workers > 1 or timeout is not None) else 0),
                           "timeout": timeout, "retries": retries, "need_time": need_time})


def _check_budget(evaluate: Any, budget: Any, max_time: Any, min_experiments: Any = None) -> None:
    """``evaluate`` is callable and exactly one budget is given, positive (irace 4's
    ``min_experiments`` alone stands for ``budget``, which it then replaces)."""
    from racer._validation import check_int

    if not callable(evaluate):
        raise TypeError(f"`evaluate` must be callable (config, instance, seed); got {evaluate!r}")
    if min_experiments is not None and budget is None and max_time is None:
        return
    if (budget is None) == (max_time is None):
        raise ValueError("give one of `budget` (a number of runs) and `max_time` (seconds); got "
                         + ("neither" if budget is None else "both"))
    if budget is not None:
        check_int(budget, "budget", minimum=1)
    if max_time is not None:
        if isinstance(max_time, bool) or not isinstance(max_time, numbers.Real) or not max_time > 0:
            raise ValueError(f"`max_time` must be a positive number of seconds; got {max_time!r}")


def _check_where(executor: Any, n_jobs: Any, timeout: Any) -> tuple[int, float | None]:
    """``(workers, timeout)`` checked: where runs go (``executor`` or ``n_jobs``, not both,
    as ``racer.race`` has it) and how long one may take."""
    from racer.execution import check_timeout, effective_n_jobs

    if executor is not None and n_jobs not in (None, 1):
        raise ValueError(f"give either `executor` or `n_jobs`, not both; got n_jobs={n_jobs!r} "
                         "with an executor (runs then go where the executor sends them)")
    workers = effective_n_jobs(n_jobs)
    timeout = check_timeout(timeout)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"`executor` must be a concurrent.futures.Executor; got {executor!r}")
    return workers, timeout


def _seed(random_state: Any) -> Any:
    """The tuning's seed: an int as given (checked by Settings), a Generator's one draw."""
    if random_state is not None and not isinstance(random_state, numbers.Integral):
        from racer._validation import seed_from_random_state

        return seed_from_random_state(random_state)
    return random_state


def _settings(options: dict, **fields: Any):
    """The tuning's :class:`racer.tuning.settings.Settings`: ``fields`` and irace's options
    (``options``), checked there; a refusal names tune's keyword."""
    from racer.tuning.settings import Settings

    if fields["test"] is not None and not isinstance(fields["test"], str):
        raise TypeError(f"`test` must be a racing test's name (str), as --racing-test; got "
                        f"{fields['test']!r}")
    return Settings(**fields, **options, names=_NAMES, advice=_ADVICE)


def _space(space: Any, forbidden: Any, digits: Any, initial: Any) -> tuple:
    """``(parameter space, initial configurations as the tuner's values)``. No ``initial``
    but a space that declares a default (ConfigSpace's): the default is raced first, as irace
    races a configurationsFile's."""
    from racer.tuning.spaces import parameter_space

    pspace = parameter_space(space, forbidden=forbidden, digits=digits)
    if initial is None and pspace.default is not None:
        initial = [pspace.default]
    return pspace, [_configuration(pspace, c, k) for k, c in enumerate(initial or [])]


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




def _command_names() -> dict:
    """irace's option names (and a few of the command's flags) -> tune's keyword."""
    from racer.tuning.settings import IRACE_OPTIONS

    names = {irace: field for field, irace in IRACE_OPTIONS.items() if irace != field}
    return {**names, **_COMMAND_NAMES}


def _check_options(options: dict, test: Any) -> tuple[dict, Any]:
    """tune's ``**options``: irace's options by their keywords, and ``racing_test`` (the
    former name of ``test``; a FutureWarning). Returns ``(options, test)``; an unknown
    keyword is a TypeError naming the keyword to use."""
    options = dict(options)
    if "test_type" in options:
        # irace's testType, kept as it was (it names one of irace's tests, as `test` can).
        warnings.warn("tune(test_type=...) is irace's testType; racer names the racing test "
                      "tune(test=...), which takes irace's tests too; `test_type` will be "
                      "removed", FutureWarning, stacklevel=3)
    racing_test = options.pop("racing_test", None)
    if racing_test is not None:
        warnings.warn("tune(racing_test=...) is now tune(test=...); `racing_test` will be "
                      "removed", FutureWarning, stacklevel=3)
        if test is not None:
            raise TypeError("give `test` only (`racing_test` is its former name)")
        test = racing_test
    for key in sorted(set(options) - set(OPTION_NAMES)):
        keyword = _command_names().get(key)
        if keyword is not None and keyword != key:
            raise TypeError(f"tune() got an unexpected keyword argument {key!r}: the command "
                            f"line's {key} is `{keyword}` here")
        known = [*inspect.signature(tune).parameters, *OPTION_NAMES]
        close = difflib.get_close_matches(key, known, n=1)
        hint = (f"; did you mean `{close[0]}`?" if close
                else f" (irace's options here: {', '.join(OPTION_NAMES)})")
        raise TypeError(f"tune() got an unexpected keyword argument {key!r}{hint}")
    return options, test


def _check_on_error(on_error: Any) -> str:
    from racer.tuning.settings import FORMER_ON_ERROR, ON_ERROR

    if isinstance(on_error, str) and on_error in FORMER_ON_ERROR:
        new = FORMER_ON_ERROR[on_error]
        warnings.warn(f"tune(on_error={on_error!r}) is now tune(on_error={new!r}); "
                      f"{on_error!r} will be removed", FutureWarning, stacklevel=3)
        return new
    if on_error not in ON_ERROR:
        raise ValueError(f"`on_error` must be one of {', '.join(map(repr, ON_ERROR))}; got "
                         f"{on_error!r}")
    return on_error


def _storage(storage: Any) -> tuple[str, str | None]:
    """``(execution directory, folder to remove with the result or None)``: ``storage``
    made if need be, or a new temporary folder."""
    import tempfile

    if storage is None:
        folder = tempfile.mkdtemp(prefix="racer-tune-")
        return folder, folder
    try:
        folder = os.path.abspath(os.fspath(storage))
    except TypeError:
        raise TypeError(f"`storage` must be a folder path (str or os.PathLike); got "
                        f"{storage!r}") from None
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"`storage` must be a folder (the tuning's journals and files go "
                         f"there); {folder} is a file")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"`storage`: cannot make the folder {folder} ({exc.strerror or exc})") from None
    return folder, None


def _run(evaluate, space, train, test, start, settings, exec_dir: str, cleanup: str | None,
         executor, runner_options: dict) -> TuneResult:
    """The tuning of :func:`tune`, its arguments checked: :func:`racer.tuning.run.run_tuning`
    with a :class:`racer.tuning.runner.CallableRunner`."""
    import shutil

    from racer.engine import EvaluationError
    from racer.tuning.checks import check_space
    from racer.tuning.instances import Instance
    from racer.tuning.run import run_tuning
    from racer.tuning.runner import CallableRunner, TargetRunnerError

    objects = train + test
    insts = [Instance(n) for n in _instance_names(objects, len(train))]
    for message in check_space(space):
        warnings.warn(message, stacklevel=3)
    objectives = settings.parsed_objectives()
    name = _callable_name(evaluate)
    runner = CallableRunner(evaluate, objects, {inst: k for k, inst in enumerate(insts)},
                            exec_dir=exec_dir, name=name,
                            directions=None if objectives is None else objectives.directions,
                            **runner_options)
    finished = False
    try:
        runner.start()
        run = run_tuning(
            settings, space, runner, insts[:len(train)], insts[len(train):], exec_dir=exec_dir,
            initial=start, executor=executor,
            start_over=f"racer.tune(..., storage=<a new folder>), or delete {exec_dir}",
            sources={"parameterFile": space.source, "trainInstances": "(racer.tune instances)",
                     "testInstances": "(racer.tune test_instances)" if test else ""})
        finished = True
    except TargetRunnerError as exc:
        res = exc.result
        raise EvaluationError(f"{res.message}" + (f"\n{res.stderr.rstrip()}" if res.stderr else "")
                              + "\n(on_error='eliminate' or 'worst', or retries=, to go on "
                              "despite failures; the same call on the same storage resumes)") from None
    finally:
        runner.close()
        if not finished and cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
    out = _result_from_run(run, runner, space, exec_dir)
    if cleanup is not None:
        object.__setattr__(out, "_cleanup", weakref.finalize(out, shutil.rmtree, cleanup, True))
    return out


def _result_from_run(run, runner, space, exec_dir: str) -> TuneResult:
    """The :class:`TuneResult` of a :class:`racer.tuning.run.TuningRun`: configurations as
    ``evaluate`` got them, the elites, the runs, the test phase, the Pareto front."""
    result = run.result

    def as_dict(values: dict) -> dict:
        # What evaluate got, as a plain dict (a ConfigSpace Configuration is a Mapping).
        return dict(runner.arguments(space, values))

    configurations = {}
    for _it, _res, candidates in result.races:
        for c in candidates:
            configurations.setdefault(c.id, as_dict(c.values))
    elites = [as_dict(e.values) for e in result.elites]
    names = run.tuner.settings.objective_names
    several = run.tuner.settings.directions is not None
    front_objectives = None
    if several and result.elites:
        from racer.tuning.output import front_means

        means = front_means(result, names)
        front_objectives = [means[e.id][1] for e in result.elites]
    return TuneResult(
        best=dict(elites[0]) if elites else {}, elites=elites,
        elite_ids=[e.id for e in result.elites], configurations=configurations,
        runs=_as_table(run.runs, names),
        test=None if result.test is None else dict(result.test["costs"]),
        experiments=result.experiments, iterations=result.iterations,
        stop_reason=result.stop_reason, seed=run.seed, storage=exec_dir,
        pareto_front=[dict(e) for e in elites] if several else elites[:1],
        pareto_objectives=front_objectives, prob_not_best=result.prob_not_best)
