"""The options of a tuning, typed and checked: what ``racer --scenario`` and :func:`racer.tune`
give :func:`racer.tuning.run.run_tuning`.

:class:`Settings` validates itself when it is made, from a table of constraints per field
(:data:`CONSTRAINTS`, in the manner of scikit-learn's ``_parameter_constraints``: a value is
accepted when one of its field's constraints holds), then checks the rules that join fields
(``first_test`` a multiple of ``each_test``, one budget, capping's needs). A refusal names
the field as the caller knows it: ``names`` maps a field to the name to show, so that
:func:`racer.tune` says ```budget``` and the command says ``maxExperiments``; ``advice``
maps a field to how that caller sets it, where a message says how.

>>> s = Settings(budget=200, first_test=6, each_test=2)
>>> s.budget, s.first_test, s.irace_values()["firstTest"]
(200, 6, 6)
>>> Settings(budget=200, first_test=5, each_test=2)
Traceback (most recent call last):
...
racer.tuning.settings.SettingsError: `first_test` = 5 must be a multiple of `each_test` = 2
>>> Settings(first_test=0, names=IRACE_OPTIONS)
Traceback (most recent call last):
...
racer.tuning.settings.SettingsError: firstTest must be None or an integer >= 1; got 0
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Mapping

__all__ = ["Settings", "SettingsError", "Interval", "Options", "CONSTRAINTS", "IRACE_OPTIONS",
           "ON_ERROR", "FORMER_ON_ERROR", "on_error_policy"]


class SettingsError(ValueError):
    """A setting refused; the message names it in the caller's words, ``field`` is the
    :class:`Settings` field (None for a rule on several)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclasses.dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``; never a bool) between
    ``low`` and ``high`` (None: unbounded), each end closed unless named in ``open``.

    >>> str(Interval(numbers.Integral, 1, None)), str(Interval(numbers.Real, 0, 1, open="both"))
    ('an integer >= 1', 'a number in (0, 1)')
    """

    kind: type
    low: float | None
    high: float | None
    open: str = "neither"  # "left", "right", "both" or "neither"

    def fits_type(self, value: Any) -> bool:
        return isinstance(value, self.kind) and not isinstance(value, bool)

    def holds(self, value: Any) -> bool:
        if not self.fits_type(value):
            return False
        if self.low is not None and (value <= self.low if self.open in ("left", "both")
                                     else value < self.low):
            return False
        return self.high is None or (value < self.high if self.open in ("right", "both")
                                     else value <= self.high)

    def __str__(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        if self.low is not None and self.high is not None:
            left = "(" if self.open in ("left", "both") else "["
            right = ")" if self.open in ("right", "both") else "]"
            return f"{what} in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{what} {'>' if self.open in ('left', 'both') else '>='} {self.low:g}"
        if self.high is not None:
            return f"{what} {'<' if self.open in ('right', 'both') else '<='} {self.high:g}"
        return what


@dataclasses.dataclass(frozen=True)
class Options:
    """One of a few strings; ``case=False`` compares them lower-cased (irace lower-cases its
    ``testType``)."""

    options: tuple
    case: bool = True

    def fits_type(self, value: Any) -> bool:
        return isinstance(value, str)

    def holds(self, value: Any) -> bool:
        if not isinstance(value, str):
            return False
        if self.case:
            return value in self.options
        return value.lower() in {o.lower() for o in self.options}

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)


@dataclasses.dataclass(frozen=True)
class _Type:
    """Any value of one Python type (``bool``, ``str``) or ``None``."""

    kind: type | None
    text: str

    def fits_type(self, value: Any) -> bool:
        return value is None if self.kind is None else isinstance(value, self.kind)

    holds = fits_type

    def __str__(self) -> str:
        return self.text


_INT = numbers.Integral
_REAL = numbers.Real
NONE = _Type(None, "None")
BOOL = _Type(bool, "True or False")
STR = _Type(str, "a str")


def _count(low: int = 0) -> Interval:
    return Interval(_INT, low, None)


#: The failure policies of a tuning (the one vocabulary of racer's Python API) and what the
#: tuner calls each: "raise" stops the tuning on a run that failed after its retries (irace's
#: behaviour), "eliminate" rejects its configuration, "worst" ranks it worst on that instance.
ON_ERROR = {"raise": "stop", "eliminate": "reject", "worst": "worst"}
#: The former words of two of them (the command line's), still accepted with a warning.
FORMER_ON_ERROR = {"stop": "raise", "reject": "eliminate"}


def on_error_policy(on_error: str) -> str:
    """The tuner's name (:attr:`racer.tuning.tuner.Settings.error_policy`) of a policy.

    >>> on_error_policy("eliminate")
    'reject'
    """
    return ON_ERROR[on_error]


def _test_types() -> tuple:
    from racer.racing.registry import names

    return ("", *names(irace=True))


def _capping_types() -> tuple:
    from racer.tuning.capping import CAPPING_TYPES

    return tuple(CAPPING_TYPES)


def _bound_types() -> tuple:
    from racer.tuning.capping import BOUND_TYPES

    return tuple(BOUND_TYPES)


#: What each field accepts: a value passes when one of its constraints holds. A callable
#: stands for constraints read from their module when first needed (the racing tests'
#: names, capping's types).
CONSTRAINTS: dict[str, list] = {
    "budget": [_count()],
    "max_time": [Interval(_REAL, 0, None)],
    "first_test": [NONE, _count(1)],
    "each_test": [_count(1)],
    "mu": [_count(1)],
    "min_survivors": [_count()],
    "n_iterations": [_count()],
    "n_configurations": [_count()],
    "experiments_per_iteration": [_count()],
    "elitist": [BOOL],
    "elitist_new_instances": [_count()],
    "elitist_limit": [_count()],
    "deterministic": [BOOL],
    "sample_instances": [BOOL],
    "soft_restart": [BOOL],
    "soft_restart_threshold": [NONE, Interval(_REAL, 0, None)],
    "test_n_elites": [_count()],
    "test": [NONE, STR],
    "test_type": [lambda: Options(_test_types(), case=False)],
    "confidence": [NONE, Interval(_REAL, 0, 1, open="both")],
    "min_measurable_time": [Interval(_REAL, 0, None)],
    "seed": [NONE, _count()],
    "n_jobs": [_count(1)],
    "digits": [_count()],
    "capping": [BOOL],
    "capping_type": [lambda: Options(_capping_types())],
    "capping_after_first_test": [BOOL],
    "bound_type": [lambda: Options(_bound_types())],
    "bound_max": [_count()],
    "bound_digits": [_count()],
    "bound_par": [_count(1)],
    "bound_as_timeout": [BOOL],
    "objectives": [STR],
    "on_error": [Options(tuple(ON_ERROR))],
    "sampler": [Options(("irace", "optuna"))],
    "fixed_list": [BOOL],
    "lookahead": [BOOL],
    "pipelined": [BOOL],
    "pipelined_iterations": [BOOL],
    "progress": [BOOL],
    "outlier_factor": [NONE, Interval(_REAL, 1, math.inf, open="both")],
    "min_experiments": [NONE, _count(1)],
    "block_size": [_count(1)],
    "postselection": [BOOL],
}

# Checked only with capping on, as irace checks them (checkScenario).
_CAPPING_ONLY = ("capping_type", "bound_type", "bound_digits", "bound_par")

#: Each field's irace scenario option (racer's own ``objectives`` included): the names the
#: command shows, and those the journal's settings.json records.
IRACE_OPTIONS = {
    "budget": "maxExperiments", "max_time": "maxTime", "first_test": "firstTest",
    "each_test": "eachTest", "mu": "mu", "min_survivors": "minNbSurvival",
    "n_iterations": "nbIterations", "n_configurations": "nbConfigurations",
    "experiments_per_iteration": "nbExperimentsPerIteration", "elitist": "elitist",
    "elitist_new_instances": "elitistNewInstances", "elitist_limit": "elitistLimit",
    "deterministic": "deterministic", "sample_instances": "sampleInstances",
    "soft_restart": "softRestart", "soft_restart_threshold": "softRestartThreshold",
    "test_n_elites": "testNbElites", "test_type": "testType", "confidence": "confidence",
    "min_measurable_time": "minMeasurableTime", "seed": "seed", "n_jobs": "parallel",
    "digits": "digits", "capping": "capping", "capping_type": "cappingType",
    "capping_after_first_test": "cappingAfterFirstTest", "bound_type": "boundType",
    "bound_max": "boundMax", "bound_digits": "boundDigits", "bound_par": "boundPar",
    "bound_as_timeout": "boundAsTimeout", "objectives": "objectives",
    "min_experiments": "minExperiments", "block_size": "blockSize",
    "postselection": "postselection",
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """The options of one tuning (see the module docstring); the defaults are irace's.

    The budget is ``budget`` runs or ``max_time`` seconds of the times the runs report (one,
    positive). ``test`` is a racing test by name (:mod:`racer.racing.registry`, options after
    a colon; None: racer's default for the purpose), ``test_type`` irace's ``testType``;
    ``confidence`` None leaves each test its own level. ``seed`` None: drawn once and kept
    in the journal. ``objectives``: racer's spec of several objectives
    (:func:`racer.tuning.objectives.parse_objectives`; "" for one). ``on_error`` is
    :data:`ON_ERROR`'s. ``names`` and ``advice`` are the caller's words (not compared).
    """

    budget: int = 0
    max_time: float = 0.0
    # None: racer.tuning.schedule.default_first_test (irace's 5, lowered for a deterministic
    # scenario with fewer than 15 training instances)
    first_test: int | None = None
    each_test: int = 1
    mu: int = 5
    min_survivors: int = 0
    n_iterations: int = 0
    n_configurations: int = 0
    experiments_per_iteration: int = 0
    elitist: bool = True
    elitist_new_instances: int = 1
    elitist_limit: int = 2
    deterministic: bool = False
    sample_instances: bool = True
    soft_restart: bool = True
    soft_restart_threshold: float | None = None
    test_n_elites: int = 1
    test: str | None = None
    test_type: str = ""
    confidence: float | None = None
    min_measurable_time: float = 0.01
    seed: int | None = None
    n_jobs: int = 1
    digits: int = 4
    capping: bool = False
    capping_type: str = "median"
    capping_after_first_test: bool = False
    bound_type: str = "candidate"
    bound_max: int = 0
    bound_digits: int = 0
    bound_par: int = 1
    bound_as_timeout: bool = True
    objectives: str = ""
    on_error: str = "raise"
    sampler: str = "irace"
    fixed_list: bool = False
    lookahead: bool = True
    # racer: start each race's next blocks of its survivors with the current one, by rule,
    # whatever the workers (racer.tuning.lookahead, "Pipelined blocks"). Replaces
    # ``lookahead``'s idle-worker runs.
    pipelined: bool = False
    # racer: also sample each race's next race at the race's first test and start its first
    # block there (racer.tuning.next_race); implies ``pipelined``.
    pipelined_iterations: bool = False
    progress: bool = True
    # racer: a configuration with a run at least this many times costlier than the median
    # survivor's on the same instance leaves the race at once, whatever the racing test
    # (racer.racing.OutlierGuard); None: never. One objective only.
    outlier_factor: float | None = 1000.0
    # irace 4: the least budget, which then replaces ``budget`` (racer.tuning.tuner.Tuner);
    # instances in blocks of ``block_size`` (one per class); a post-selection race of the
    # final elites on the budget left (off by default: no evidence yet that it pays).
    min_experiments: int | None = None
    block_size: int = 1
    postselection: bool = False
    names: Mapping = dataclasses.field(default_factory=dict, compare=False, repr=False)
    advice: Mapping = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for field in CONSTRAINTS:
            if field in _CAPPING_ONLY and not self.capping:
                continue
            self._check(field)
        self._check_together()

    def name(self, field: str) -> str:
        """``field`` as the caller names it (default: the field, in backquotes)."""
        return self.names.get(field, f"`{field}`")

    def how(self, field: str) -> str:
        """How the caller sets ``field``, for advice (default: its name)."""
        return self.advice.get(field, self.name(field))

    def _check(self, field: str) -> None:
        value = getattr(self, field)
        constraints = [c() if callable(c) else c for c in CONSTRAINTS[field]]
        if any(c.holds(value) for c in constraints):
            return
        wanted = " or ".join(map(str, constraints))
        message = f"{self.name(field)} must be {wanted}; got {value!r}"
        if any(c.fits_type(value) for c in constraints):
            raise SettingsError(message, field)
        raise TypeError(message)

    def _refuse(self, message: str, field: str | None = None):
        raise SettingsError(message, field)

    def _check_together(self) -> None:
        """irace's rules that join fields (its checkScenario), then racer's."""
        n = self.name
        if self.first_test is not None and self.first_test % self.each_test:
            self._refuse(f"{n('first_test')} = {self.first_test} must be a multiple of "
                         f"{n('each_test')} = {self.each_test}", "first_test")
        if self.budget <= 0 and self.max_time <= 0 and self.min_experiments is None:
            self._refuse(f"set {n('budget')} (runs) or {n('max_time')} (seconds) to a positive "
                         "budget", "budget")
        if self.budget > 0 and self.max_time > 0:
            self._refuse(f"set only one of {n('budget')} and {n('max_time')}", "max_time")
        if self.capping:
            if not self.elitist:
                self._refuse(f"{n('capping')} needs {n('elitist')} on (as in irace)", "capping")
            if self.bound_max <= 0:
                self._refuse(f"{n('capping')} needs {n('bound_max')} > 0 (the longest run, in "
                             f"the runner's time unit); got {self.bound_max}", "bound_max")
        objectives = self.parsed_objectives()
        if objectives is not None and self.capping:
            self._refuse(f"capping races on the run time alone; it cannot be combined with "
                         f"several objectives ({n('objectives')}; make the time one of the "
                         "objectives instead)", "capping")

    def parsed_objectives(self):
        """The objectives (:class:`racer.tuning.objectives.Objectives`), None for one."""
        from racer.tuning.objectives import parse_objectives

        try:
            return parse_objectives(self.objectives)
        except ValueError as exc:
            raise SettingsError(f"{self.name('objectives')}: {exc}", "objectives") from None

    def irace_values(self) -> dict:
        """The settings as irace's scenario options (:data:`IRACE_OPTIONS`), as the
        journal records them: ``confidence`` None is irace's 0.95."""
        values = {irace: getattr(self, field) for field, irace in IRACE_OPTIONS.items()}
        if self.confidence is None:
            values["confidence"] = 0.95
        return values
