"""The run of a tuning: typed settings in, the Tuner's result and runs out.

:func:`run_tuning` is the one entry to the tuner of ``racer --scenario`` and
:func:`racer.tune`: the seed (drawn and kept in the journal when none is given), the racing
test, the resume check, the :class:`~racer.tuning.tuner.Tuner`, its run and the output files
in the execution directory. Each caller brings what is its own -- the runner (a process per
run, or a Python function), the executor, the words of its refusals (:class:`Settings`'s
``names``), what to print at the start -- and reads what comes back (:class:`TuningRun`).
Nothing here prints but the progress line, and nothing imports the command line.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import threading
from typing import Any, Callable, Mapping

from racer.racing.registry import DEFAULT_PARETO_TEST, DEFAULT_TUNING_TEST, lookup
from racer.tuning.settings import IRACE_OPTIONS, Settings, SettingsError, on_error_policy

__all__ = ["run_tuning", "TuningRun", "racing_test", "make_test", "irace_procedure_requested",
           "objectives_of", "read_prior_times", "read_prior_capped_times"]


@dataclasses.dataclass(frozen=True)
class TuningRun:
    """What :func:`run_tuning` returns: the ``tuner`` that ran (its space and settings),
    its ``result`` (:class:`racer.tuning.tuner.TuningResult`), the racing ``test`` and its
    ``winner`` rule, the ``seed`` used, and ``runs``: every run of the tuning as a dict of
    runs.csv's columns, typed (the earlier sessions' of a resumed tuning first, then this
    session's as they answered)."""

    tuner: Any
    result: Any
    test: Any
    winner: str | None
    seed: int
    runs: list


def run_tuning(settings: Settings, space, runner, train: list, test: list = (), *,
               exec_dir: str, initial: list = (), executor=None,
               on_announce: Callable | None = None, on_interrupt: Callable | None = None,
               fresh: bool = False, start_over: str | None = None,
               sources: Mapping | None = None) -> TuningRun:
    """Tune: the run of ``racer --scenario`` and of :func:`racer.tune`.

    Parameters
    ----------
    settings : Settings
        The tuner's options, checked; its ``names`` are the words of the refusals below.
    space : racer.tuning.parameters.ParameterSpace
    runner : racer.tuning.runner.Runner
        Makes the runs (started and closed by the caller); its ``command`` (a list) is what
        the journal records as the target-runner.
    train, test : list of racer.tuning.instances.Instance
        The training instances, and the test instances the elites run on at the end.
    exec_dir : str
        An existing folder: the journals (``racer-journal/``), ``runs.csv`` and the outputs.
    initial : list of dict
        Configurations raced first (irace's configurationsFile).
    executor : concurrent.futures.Executor, optional
        Where runs go instead of the tuner's own threads (closed by the caller).
    on_announce : callable, optional
        ``on_announce(tuner, resuming, earlier_budgets)`` once the Tuner is made, before any
        run (the command prints its first lines there).
    on_interrupt : callable, optional
        Called on Ctrl-C during the tuning, after the progress line ends, before the
        interrupt goes on (the command writes the report of the run so far).
    fresh : bool
        Forget the journal and runs.csv of an earlier run first.
    start_over : str, optional
        What a refusal to resume tells the user to do to start over.
    sources : mapping, optional
        Where the inputs came from, as the journal's settings.json records them:
        ``parameterFile``, ``forbiddenFile``, ``configurationsFile``, ``trainInstances``,
        ``testInstances`` (a file's path, or a label).

    Raises
    ------
    SettingsError
        A racing test that does not fit (named in ``settings.names``' words).
    racer.tuning.tuner.BudgetError
        A budget too small to race, in the same words.
    racer.tuning.resume.ResumeError
        ``exec_dir`` holds a tuning of other settings.

    Examples
    --------
    >>> import tempfile
    >>> from racer.tuning.instances import Instance
    >>> from racer.tuning.parameters import read_parameters
    >>> from racer.tuning.runner import CallableRunner
    >>> space = read_parameters("", text='x "" r (0, 1)')
    >>> train = [Instance(f"i{k}") for k in range(6)]
    >>> runner = CallableRunner(lambda config, instance, seed: (config["x"] - 0.3) ** 2 + instance,
    ...                         [0.1 * k for k in range(6)], {t: k for k, t in enumerate(train)},
    ...                         n_workers=0, timeout=None, retries=0, need_time=False,
    ...                         exec_dir=".", name="python:f")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     run = run_tuning(Settings(budget=60, seed=1, progress=False), space, runner, train,
    ...                      exec_dir=folder)
    >>> run.result.experiments <= 60, len(run.runs) >= run.result.experiments, run.seed
    (True, True, 1)
    >>> abs(run.result.elites[0].values["x"] - 0.3) < 0.2
    True
    """
    from racer.tuning.tuner import JOURNAL_DIR

    journal_dir = os.path.join(exec_dir, JOURNAL_DIR)
    if fresh:
        _start_afresh(exec_dir, journal_dir)
    resuming = os.path.isdir(journal_dir) and any(f.endswith(".sqlite") for f in os.listdir(journal_dir))
    seed = _seed(settings.seed, journal_dir)
    objectives = objectives_of(settings)
    racing, winner = racing_test(settings.test, settings.test_type, settings.confidence,
                                 objectives=objectives, sampler=settings.sampler,
                                 names=settings.names, advice=settings.advice)
    if settings.fixed_list and not initial:
        raise SettingsError(f"{settings.name('fixed_list')} needs {settings.how('initial')}",
                            "fixed_list")
    irace_procedure = irace_procedure_requested(settings.test, settings.test_type)
    tuner_settings = _tuner_settings(settings, seed, _first_test(settings, train, irace_procedure))
    tuner_settings.budget_rule = "irace" if irace_procedure else "racer"
    recorded = _recorded_settings(settings, space, initial, train, test, sources or {},
                                  runner.command, seed)
    tuner, closing, earlier = _make_tuner(settings, tuner_settings, space, runner, train, test,
                                          initial, racing, winner, seed, resuming, exec_dir,
                                          recorded, executor, start_over)
    if on_announce is not None:
        on_announce(tuner, resuming, earlier)
    result = _tune(tuner, closing, on_interrupt, settings)
    header = {"seed": seed, "budget": settings.budget, "max_time": settings.max_time,
              "soft_restarts": result.soft_restarts}
    if tuner_settings.directions is not None:
        header["objectives"] = {"names": list(tuner_settings.objective_names),
                                "directions": list(tuner_settings.directions)}
    _write_outputs(exec_dir, space, result, header)
    return TuningRun(tuner, result, racing, winner, seed, closing["rows"].rows)


def irace_procedure_requested(racing_test: str | None, test_type: str) -> bool:
    """Whether a run asks for irace's procedure: ``racing_test`` (``--racing-test``,
    racer.tune's ``test``) names one of irace's tests (a registry entry with ``irace=True``,
    options allowed), or, without it, ``test_type`` (irace's testType) is set. Then racer
    keeps irace's rules where irace and racer differ (a budget below irace's minimum is
    refused, as irace refuses it). Otherwise the run is racer's own: racer's default test
    when both are empty (:func:`make_test`), and
    :meth:`racer.tuning.schedule.IraceSchedule.small_budget_plan` for a small budget.
    ``racing_test`` wins over ``test_type``, as it does for the test itself.

    >>> irace_procedure_requested(None, "F-test"), irace_procedure_requested("t.holm:alpha=0.1", "")
    (True, True)
    >>> irace_procedure_requested(None, ""), irace_procedure_requested("bayesian", "F-test")
    (False, False)
    """
    if racing_test:
        try:
            return lookup(racing_test.partition(":")[0].strip()).irace
        except ValueError:  # package.module:Class is racer's own
            return False
    return bool(test_type)


def make_test(name: str | None, confidence: float, *, confidence_given: bool = False):
    """``(racing test, Race winner rule)`` for a test's name (``--racing-test``, racer.tune's
    ``test``, or irace's ``testType``; empty: racer's
    :data:`racer.racing.registry.DEFAULT_TUNING_TEST`), looked up in
    :mod:`racer.racing.registry`: the F-race orders survivors by rank sum, the t-test races
    by mean cost (irace's ``overall.ranks``); irace's tests take ``alpha = 1 - confidence``.

    ``confidence_given`` (the caller set it): the other tests take it too, each through its
    own level (the registry's ``confidence_options``: BayesianTest's credibilities,
    PosteriorBestTest's ``error_rate = 1 - confidence``, ...); an option in
    ``name:key=value`` wins. Left at irace's default 0.95, those tests keep their own
    defaults: 0.95 is the F-test's level, chosen for irace, while theirs were chosen on
    racer's pilot seeds, and a caller that says nothing about confidence asks for no change.
    A bad name or option is a ValueError or TypeError saying what is wrong (the caller names
    its option).

    >>> test, winner = make_test("", 0.95)
    >>> type(test).__name__, test.adjust, round(test.alpha, 2), winner
    ('TRaceTest', 'none', 0.05, 'mean')
    >>> type(make_test("F-test", 0.9)[0]).__name__
    'FRaceTest'
    >>> make_test("bayesian", 0.95)[0].credibility  # irace's default: the test's own 0.975
    0.975
    >>> make_test("bayesian", 0.9, confidence_given=True)[0].credibility
    0.9
    """
    from racer.racing.registry import make_test as build

    return build(name or DEFAULT_TUNING_TEST, alpha=1.0 - confidence,
                 confidence=confidence if confidence_given else None)


def racing_test(name: str | None, test_type: str = "", confidence: float | None = None, *,
                objectives=None, sampler: str = "irace", names: Mapping | None = None,
                advice: Mapping | None = None):
    """``(racing test, winner rule)`` of a tuning: ``name`` (``--racing-test``, racer.tune's
    ``test``), else irace's ``test_type`` (:func:`make_test`). A tuning on several
    ``objectives`` (:class:`racer.tuning.objectives.Objectives`) gets
    :data:`racer.racing.registry.DEFAULT_PARETO_TEST` unless ``name`` names another test on
    several objectives; irace's ``test_type`` (one cost) is refused there, and a test on
    several objectives without ``objectives`` too. Refusals are :class:`SettingsError`\\ s
    naming the setting as ``names`` does (a :class:`Settings` field -> the caller's name)
    and saying how to set it as ``advice`` does.

    >>> type(racing_test(None)[0]).__name__
    'TRaceTest'
    >>> racing_test("pareto")
    Traceback (most recent call last):
    ...
    racer.tuning.settings.SettingsError: `test` 'pareto' races on several objectives: give `objectives`
    """
    names, advice = dict(names or {}), dict(advice or {})

    def n(field: str) -> str:
        return names.get(field, f"`{field}`")

    def how(field: str) -> str:
        return advice.get(field, n(field))

    spec = name if name is not None else test_type
    field = "test" if name is not None else "test_type"
    if objectives is not None and name is None:
        if test_type:
            raise SettingsError(
                f"{n('test_type')} = {test_type!r} is one of irace's tests, which compare one "
                f"cost, but {n('objectives')} names {objectives.k} "
                f"({', '.join(objectives.names)}); leave {n('test_type')} unset (racer's test "
                f"for several objectives is {DEFAULT_PARETO_TEST!r}) or give {n('test')}",
                "test_type")
        spec, field = DEFAULT_PARETO_TEST, "test"
    given = confidence is not None
    level = confidence if given else 0.95
    try:
        test, winner = make_test(spec, level, confidence_given=given)
    except (ValueError, TypeError) as exc:
        source = f" (with {n('confidence')} = {level:g})" if given else ""
        raise SettingsError(f"{n(field)} {spec!r}{source}: {exc}", field) from None
    kind = getattr(test, "objectives", "single")
    if objectives is not None and kind == "single":
        raise SettingsError(f"{n('test')} {spec!r} compares one cost per run, but "
                            f"{n('objectives')} names {objectives.k} "
                            f"({', '.join(objectives.names)}); use {n('test')} "
                            f"{DEFAULT_PARETO_TEST} (the default for several objectives)", "test")
    if objectives is None and kind == "multi":
        raise SettingsError(f"{n(field)} {spec!r} races on several objectives: give "
                            f"{how('objectives')}", field)
    if objectives is not None and sampler == "optuna":
        raise SettingsError(f"{n('sampler')} optuna proposes configurations for one cost; a "
                            f"tuning on several objectives uses irace's sampler (leave "
                            f"{n('sampler')} unset)", "sampler")
    return test, winner


def objectives_of(settings: Settings):
    """The objectives of ``settings`` (:class:`racer.tuning.objectives.Objectives`), or None
    for one objective (irace's tuning)."""
    return settings.parsed_objectives()


def _seed(seed: int | None, journal_dir: str) -> int:
    """``seed``, else the one an earlier session drew (kept in the journal), else a new one,
    kept there."""
    if seed is not None:
        return int(seed)
    path = os.path.join(journal_dir, "seed.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return int(f.read().strip())
    import numpy as np

    seed = int(np.random.SeedSequence().entropy % (2**31 - 1))
    os.makedirs(journal_dir, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{seed}\n")
    os.replace(path + ".tmp", path)
    return seed


def _start_afresh(exec_dir: str, journal_dir: str) -> None:
    """``--fresh``: forget the journal and the run log of an earlier run."""
    if os.path.isdir(journal_dir):
        shutil.rmtree(journal_dir)
        for name in ("runs.csv",):
            if os.path.exists(os.path.join(exec_dir, name)):
                os.remove(os.path.join(exec_dir, name))


def _first_test(settings: Settings, train: list, irace_procedure: bool) -> int:
    """``first_test``, or the default: irace's 5 when irace's procedure is asked for (one of
    irace's tests), else racer's for these training instances
    (:func:`racer.tuning.schedule.default_first_test`: a deterministic scenario's distinct
    instances, in blocks of ``block_size``; a stochastic one's are unbounded)."""
    from racer.tuning.schedule import IRACE_FIRST_TEST, default_first_test

    if settings.first_test is not None:
        return settings.first_test
    n = len(train) // max(1, settings.block_size) if settings.deterministic else None
    first = IRACE_FIRST_TEST if irace_procedure else default_first_test(n, settings.each_test)
    if first % settings.each_test:
        # irace refuses its own default firstTest with an eachTest that does not divide it
        raise SettingsError(
            f"{settings.name('first_test')} = {first} must be a multiple of "
            f"{settings.name('each_test')} = {settings.each_test} ({settings.name('first_test')} "
            f"left unset is {first}: set it)", "first_test")
    return first


def _tuner_settings(settings: Settings, seed: int, first_test: int):
    """The Tuner's own settings (:class:`racer.tuning.tuner.Settings`, irace's names in its
    comments) for ``settings``."""
    from racer.tuning.tuner import Settings as TunerSettings

    s = settings
    return TunerSettings(
        max_experiments=s.budget, max_time=s.max_time, min_measurable_time=s.min_measurable_time,
        first_test=first_test, each_test=s.each_test, mu=s.mu, min_survival=s.min_survivors,
        n_iterations=s.n_iterations, n_configurations=s.n_configurations,
        experiments_per_iteration=s.experiments_per_iteration, elitist=s.elitist,
        elitist_new_instances=s.elitist_new_instances, elitist_limit=s.elitist_limit,
        deterministic=s.deterministic, sample_instances=s.sample_instances, seed=seed,
        parallel=max(1, s.n_jobs), test_n_elites=max(1, s.test_n_elites),
        error_policy=on_error_policy(s.on_error), fixed_list=s.fixed_list,
        lookahead=s.lookahead, pipelined=s.pipelined or s.pipelined_iterations,
        pipelined_iterations=s.pipelined_iterations, soft_restart=s.soft_restart,
        soft_restart_threshold=s.soft_restart_threshold, capping=_capping(s),
        outlier_factor=s.outlier_factor, **_objective_settings(s))


def _objective_settings(settings: Settings) -> dict:
    """The Tuner's ``directions`` and ``objective_names`` (none for one objective)."""
    objectives = objectives_of(settings)
    if objectives is None:
        return {}
    return {"directions": objectives.directions, "objective_names": objectives.names}


def _capping(settings: Settings):
    """The capping options (:class:`racer.tuning.capping.Capping`), or None when neither
    capping nor a bound is set."""
    from racer.tuning.capping import Capping

    s = settings
    if s.capping and (s.pipelined or s.pipelined_iterations):
        # A capped run's bound comes from the elites' runs on its instance, made first: no
        # run of a later block can start before them.
        name = "pipelined" if s.pipelined else "pipelined_iterations"
        raise SettingsError(f"{s.name(name)} cannot be combined with {s.name('capping')} "
                            "(a capped run's bound waits for the elites' runs on its instance, "
                            "so nothing can start ahead); turn one of them off", name)
    if not s.capping and s.bound_max <= 0:
        return None
    return Capping(enabled=bool(s.capping), type=s.capping_type, bound_type=s.bound_type,
                   bound_max=float(s.bound_max), digits=s.bound_digits, par=s.bound_par,
                   as_timeout=bool(s.bound_as_timeout), min_measurable_time=s.min_measurable_time,
                   after_first_test=bool(s.capping_after_first_test))


class _Scenario:
    """A scenario's face (``values``) over typed settings, for
    :func:`racer.tuning.resume.settings_of`, which records a tuning's settings in irace's
    names from a loaded scenario."""

    def __init__(self, values: dict) -> None:
        self.values = values


def _recorded_settings(settings: Settings, space, initial, train, test, sources: Mapping,
                       command: list, seed: int) -> dict:
    """What the journal's settings.json records for this tuning (and a later one is compared
    with): :func:`racer.tuning.resume.settings_of` of the same settings in irace's names."""
    import types

    from racer.tuning.resume import settings_of

    values = {**settings.irace_values(),
              "parameterFile": sources.get("parameterFile", getattr(space, "source", "")),
              "forbiddenFile": sources.get("forbiddenFile", ""),
              "configurationsFile": sources.get("configurationsFile", ""),
              "trainInstancesFile": sources.get("trainInstances", ""), "trainInstancesDir": "",
              "testInstancesFile": sources.get("testInstances", ""), "testInstancesDir": ""}
    # settings.json keeps the command's words for racer's own options, whoever runs the
    # tuning, so that an execDir resumes under either.
    own = types.SimpleNamespace(racing_test=settings.test, on_error=on_error_policy(settings.on_error),
                                sampler=settings.sampler, fixed_list=settings.fixed_list,
                                outlier_factor=settings.outlier_factor,
                                pipelined=settings.pipelined,
                                pipelined_iterations=settings.pipelined_iterations)
    loaded = {"scenario": _Scenario(values), "space": space, "initial": list(initial),
              "train": list(train), "test": list(test)}
    return settings_of(loaded, own, seed, command)


def _make_tuner(settings: Settings, tuner_settings, space, runner, train, test, initial,
                racing, winner, seed: int, resuming: bool, exec_dir: str, recorded: dict,
                executor, start_over: str | None):
    """The Tuner of this run, after the resume check (:mod:`racer.tuning.resume`), with its
    run log and progress line. Returns ``(tuner, closing, earlier budgets)``: ``closing``
    holds what to close at the end (``log``), the ``progress`` line and the ``rows`` of the
    runs."""
    from racer.tuning.output import Progress, RunLog
    from racer.tuning.resume import check_resume
    from racer.tuning.tuner import JOURNAL_DIR, Tuner

    journal_dir = os.path.join(exec_dir, JOURNAL_DIR)
    runs_path = os.path.join(exec_dir, "runs.csv")
    prior_times = read_prior_times(runs_path) if settings.max_time > 0 else {}
    capping = tuner_settings.capping
    # Capping: the times (cut at their bounds) that earlier runs left for the bounds to come.
    prior_capped = (read_prior_capped_times(runs_path, capping)
                    if capping is not None and capping.enabled else {})
    rows = _Rows(_read_runs(runs_path), tuner_settings.objective_names)
    log = RunLog(runs_path, tuner_settings.objective_names)
    closing = {"log": log, "progress": Progress(quiet=not settings.progress), "rows": rows}
    metadata = {"targetRunner": " ".join(runner.command),
                "space": repr([(p.name, p.switch, p.type, p.domain, p.log, p.condition_text)
                               for p in space.declared]),
                "forbidden": repr([t for t, _ in space.forbidden])}
    try:
        # Before anything runs: the same settings resume, a larger budget continues, anything
        # else is refused in the caller's words (racer.tuning.resume).
        earlier = check_resume(journal_dir, recorded, resuming=resuming, exec_dir=exec_dir,
                               command=[], start_over=(start_over if start_over is not None
                                                       else f"delete {exec_dir}"))
        tuner_settings.earlier_budgets = tuple(earlier)
        sampler = _sampler(settings, space, seed, metadata)
        tuner = Tuner(space, runner, train, tuner_settings, racing, initial=list(initial),
                      sampler=sampler, executor=executor, test_instances=list(test),
                      journal_dir=journal_dir, on_run=rows.logging(log),
                      progress=closing["progress"], winner=winner, metadata=metadata,
                      prior_times=prior_times, prior_capped=prior_capped,
                      min_experiments=settings.min_experiments, block_size=settings.block_size,
                      postselection=settings.postselection)
        if tuner.slow_runs is not None:
            tuner.slow_runs.record_earlier(rows.rows)  # a resume bounds by earlier sessions' runs
    except BaseException:
        _close(closing)  # nothing ran yet, but the run log is open
        raise
    return tuner, closing, earlier


def _sampler(settings: Settings, space, seed: int, metadata: dict):
    """``sampler="optuna"``: Optuna's TPE instead of irace's model (None: irace's)."""
    if settings.sampler != "optuna":
        return None
    from racer.tuning.sampler import OptunaSampler

    try:
        sampler = OptunaSampler(space, seed=seed)
    except ImportError as exc:
        raise SettingsError(f"{settings.name('sampler')} optuna: {exc}", "sampler") from None
    metadata["sampler"] = "optuna-tpe"
    return sampler


def _close(closing: dict) -> None:
    closing["log"].close()


def _tune(tuner, closing: dict, on_interrupt: Callable | None, settings: Settings):
    """Run the tuning; on Ctrl-C end the progress line, call ``on_interrupt``, then let the
    interrupt through. A budget too small is said in the caller's words. Closes what
    ``closing`` holds."""
    from racer.progress import iterations_done_text
    from racer.tuning.tuner import BudgetError

    progress = closing["progress"]
    try:
        result = tuner.run()
    except KeyboardInterrupt:
        progress.end()
        if on_interrupt is not None:
            on_interrupt()
        raise
    except BudgetError as exc:
        progress.end()
        raise BudgetError(_budget_words(str(exc), tuner, settings)) from None
    except BaseException:
        progress.end()
        raise
    finally:
        _close(closing)
    done = iterations_done_text(result.iterations, result.planned_iterations)
    progress.end(f"done: {result.stop_reason}; {result.experiments} runs; {done}")
    return result


def _budget_words(message: str, tuner, settings: Settings) -> str:
    """The Tuner's refusal of a budget, in the caller's words: under maxTime, how many
    seconds are needed (the Tuner speaks of runs); irace's option names as the caller's."""
    if settings.max_time > 0:
        timed = _time_too_small(tuner, settings)
        if timed is not None:
            return timed
    names = {irace: settings.name(field) for field, irace in IRACE_OPTIONS.items()
             if settings.name(field) != irace}
    if settings.name("test") != "--racing-test":
        names["--racing-test"] = settings.name("test")
    if not names:
        return message
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                         + r")(?![\w-])")
    return pattern.sub(lambda m: names[m.group(1)], message)


def _first_iteration_runs(tuner) -> int | None:
    """The fewest runs the Tuner's first iteration needs to race more configurations than it
    keeps, each on its first instances (the rule of ``Tuner._size_iteration``); None if no
    number of runs would do (a fixed ``experiments_per_iteration`` or ``n_configurations``
    decides)."""
    s, schedule = tuner.settings, tuner.schedule
    n_available, mu = tuner.budgeted_instances()

    def fits(runs: int) -> bool:
        current = (s.experiments_per_iteration
                   or schedule.iteration_budget(runs, 1, tuner.n_iterations))
        n_conf = schedule.n_configurations(current, 1, n_available=n_available)
        if s.n_configurations > 0:
            if s.n_configurations > n_conf:
                return False
            n_conf = s.n_configurations
        return n_conf > tuner.min_survival and n_conf * mu <= current

    high = 1
    while not fits(high):
        high *= 2
        if high > 1 << 40:
            return None
    low = high // 2  # fits(low) is False (or low is 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high


def _time_too_small(tuner, settings: Settings) -> str | None:
    """Under maxTime, a first iteration too small to race, in seconds: the Tuner estimates
    the runs a time budget buys from the mean time runs reported (at least
    minMeasurableTime), so the seconds needed are the runs needed at that mean, after the
    time already spent."""
    needed = _first_iteration_runs(tuner)
    times = list(tuner.run_times.values())
    if needed is None or not times:
        return None
    spent = sum(times)
    mean = max(spent / len(times), settings.min_measurable_time)
    n = settings.name
    seconds = _round_up(spent + needed * mean)
    return (f"{n('max_time')} = {settings.max_time:g} s is too small: runs took {mean:.3g} s "
            f"each (the mean time reported, at least {n('min_measurable_time')} = "
            f"{settings.min_measurable_time:g} s), so it pays for about "
            f"{max(0, round((settings.max_time - spent) / mean))} runs, and the first iteration "
            f"needs {needed} runs to race more configurations than the {tuner.min_survival} it "
            f"keeps ({n('min_survivors')}); give {n('max_time')} = {seconds:g} s or more")


def _round_up(x: float, digits: int = 3) -> float:
    """``x`` rounded up to ``digits`` significant digits (a time that is enough, shown short).

    >>> _round_up(3.6549), _round_up(0.012301), _round_up(120.0)
    (3.66, 0.0124, 120.0)
    """
    if x <= 0:
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    return float(f"{math.ceil(round(x / step, 9)) * step:.{digits}g}")


def _write_outputs(exec_dir: str, space, result, header: dict) -> None:
    """elites.txt, eliminations.csv, test.csv (with test instances) and results.json."""
    from racer.tuning.output import write_eliminations, write_elites, write_results, write_test

    write_elites(os.path.join(exec_dir, "elites.txt"), space, result.elites)
    write_eliminations(os.path.join(exec_dir, "eliminations.csv"), result.races)
    if result.test is not None:
        names = (header.get("objectives") or {}).get("names") or ()
        write_test(os.path.join(exec_dir, "test.csv"), result.test, tuple(names))
    write_results(os.path.join(exec_dir, "results.json"), space, result, header)


# ----------------------------------------------------------------------------- the runs

def _prior_training_runs(path: str):
    """``(iteration, configuration, instance id, time, row)`` of each training run with a
    readable time in an existing runs.csv (an interrupted session), in file order; a torn
    or timeless line is skipped."""
    import csv

    if not os.path.exists(path):
        return
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            try:
                it, cid, iid = int(row["iteration"]), int(row["configuration"]), int(row["instance_id"])
                t = float(row["time"])
            except (TypeError, ValueError, KeyError):
                continue
            if it > 0:
                yield it, cid, iid, t, row


def read_prior_times(path: str) -> dict:
    """Reported times of the training runs in an existing runs.csv (an interrupted session),
    by (iteration, configuration, instance id); the last line of a key wins (a run repeated
    after a kill). A torn last line is skipped."""
    from racer.tuning.lookahead import UNUSED

    # an unused look-ahead run is no run
    return {(it, cid, iid): t for it, cid, iid, t, row in _prior_training_runs(path)
            if row.get("status") != UNUSED}


def read_prior_capped_times(path: str, capping) -> dict:
    """Capping: the time of each training run in an existing runs.csv (an interrupted
    session), cut at its bound (:func:`racer.tuning.capping.capped_time`), by (configuration,
    instance id); the last line of a key wins (a run repeated after a kill)."""
    from racer.tuning.capping import capped_time

    times: dict = {}
    for _it, cid, iid, t, row in _prior_training_runs(path):
        if row.get("status") != "ok":
            continue
        try:
            bound = float(row["bound"]) if row.get("bound") else None
        except ValueError:
            continue
        times[(cid, iid)] = capped_time(t, bound, capping)
    return times



_INT_COLUMNS = ("iteration", "configuration", "instance_id", "seed", "attempts")
_FLOAT_COLUMNS = ("cost", "time", "wall", "bound")


def _read_runs(path: str) -> list:
    """runs.csv of earlier sessions as dicts, numbers typed (a torn last line of a killed
    session skipped); [] without one."""
    import csv

    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        floats = [*_FLOAT_COLUMNS, *(c for c in reader.fieldnames or () if c.startswith("cost."))]
        for row in reader:
            try:
                for k in _INT_COLUMNS:
                    row[k] = int(row[k])
                for k in floats:
                    row[k] = float(row[k]) if row[k] not in ("", None) else None
            except (TypeError, ValueError, KeyError):
                continue
            rows.append(row)
    return rows


class _Rows:
    """The runs of a tuning as runs.csv has them, typed: the earlier sessions' (``prior``),
    then each run of this session as the run log writes it."""

    def __init__(self, prior: list, objective_names: tuple) -> None:
        from racer.tuning.output import objective_columns

        self.rows = list(prior)
        self.columns = objective_columns(objective_names)
        self._lock = threading.Lock()

    def logging(self, log) -> Callable:
        """The Tuner's ``on_run``: ``log`` writes the run, and it is kept here, in the same
        order."""
        def on_run(iteration, configuration, task, result) -> None:
            row = self.row(iteration, configuration, task, result)
            with self._lock:
                log(iteration, configuration, task, result)
                self.rows.append(row)
        return on_run

    def row(self, iteration, configuration, task, result) -> dict:
        """One run as :class:`racer.tuning.output.RunLog` writes it and :func:`_read_runs`
        reads it back (the wall time to the 4 decimals written)."""
        def number(x):
            return None if x is None else float(x)

        row = {"iteration": int(iteration), "configuration": configuration.id,
               "instance_id": task.index, "seed": int(task.seed),
               "instance": " ".join([task.instance.name, *task.instance.extra]),
               "cost": number(result.cost), "time": number(result.time),
               "status": result.status, "attempts": int(result.attempts),
               "wall": float(f"{result.wall:.4f}"),
               "message": "" if result.message is None else str(result.message),
               "bound": number(result.bound)}
        values = result.objectives or (None,) * len(self.columns)
        row.update(zip(self.columns, map(number, values)))
        return row
