"""One table of racing-test names, for the command line, the demo and ``RaceSearchCV``.

``racer --racing-test NAME`` (and the scenario's ``testType``), the demo's ``--test NAME``
and ``RaceSearchCV(test=NAME)`` all look their names up here, so a name means the same test
everywhere. Each entry says what it builds and which winner rule goes with it:

=====================  ===============================  ==================================  ========
name                   aliases                          builds                              winner
=====================  ===============================  ==================================  ========
``F-test``             ``friedman`` (irace), ``frace``  ``FRaceTest(post_hoc="conover")``   rank_sum
``t-test``             ``t.none`` (irace)               ``TRaceTest(adjust="none")``        mean
``t-test-bonferroni``  ``t.bonferroni`` (irace)         ``TRaceTest(adjust="bonferroni")``  mean
``t-test-holm``        ``t.holm`` (irace)               ``TRaceTest(adjust="holm")``        mean
``bayesian``           ``bayes``, ``seed002``           ``BayesianTest()``                  mean
``posterior-best``                                      ``PosteriorBestTest()``             mean
``correlated-t``                                        ``CorrelatedTTestRacing()``         mean
``hierarchical``                                        ``HierarchicalRacingTest(...)``     mean
``pareto``                                              ``ParetoTest()``                    mean
=====================  ===============================  ==================================  ========

Names are case-insensitive (irace lower-cases its ``testType``). The winner rule is the test
class's own ``winner`` attribute (``"mean"`` when it states none), so the table cannot disagree
with what :class:`racer.engine.Race` does with the test. irace's four names take ``alpha = 1 -
confidence`` from a scenario (:func:`make_test`'s ``alpha``).

A scenario's ``confidence`` (:func:`make_test`'s ``confidence``) reaches every test of the
table, each through the option that states the same level (``confidence_options``):

=====================  =========================================================================
name                   options set by ``confidence = c``
=====================  =========================================================================
irace's four           ``alpha = 1 - c`` (the level of every test of the race, as in irace)
``bayesian``           ``credibility = c``, ``gate_credibility = c`` (irace's one level covers
                       its Friedman gate and its post-hoc tests; here the gate and the sign tests)
``posterior-best``     ``error_rate = 1 - c`` (the bound on losing the best over the whole race)
``correlated-t``       ``credibility = c`` (must exceed 0.5)
``hierarchical``       ``credibility = c``, ``base = PosteriorBestTest(error_rate = 1 - c)``
``pareto``             ``credibility = c`` (must exceed 0.5)
=====================  =========================================================================

A name may carry constructor options after a colon, ``name:key=value,key=value``; values are
Python literals (``0.01``, ``None``, ``True``) or else plain words (``adjust=holm``), and they
override the entry's fixed options and ``alpha``. ``package.module:Class`` (optionally
``package.module:Class:key=value,...``) builds any :class:`racer.racing.base.RacingTest`.

>>> test, winner = make_test("posterior-best:error_rate=0.01")
>>> type(test).__name__, test.error_rate, winner
('PosteriorBestTest', 0.01, 'mean')
>>> test, winner = make_test("T.HOLM", alpha=0.1)
>>> type(test).__name__, test.adjust, test.alpha, winner
('TRaceTest', 'holm', 0.1, 'mean')
>>> lookup("frace").name
'F-test'
>>> test, _ = make_test("bayesian", confidence=0.99)
>>> test.credibility, test.gate_credibility
(0.99, 0.99)
>>> make_test("posterior-best:error_rate=0.2", confidence=0.99)[0].error_rate  # options win
0.2
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib
import inspect
import re
from typing import Any, Callable, Mapping

__all__ = ["RacingTestEntry", "RACING_TESTS", "DEFAULT_TUNING_TEST", "DEFAULT_PARETO_TEST",
           "lookup", "make_test", "names", "parse_options"]

#: The racing test of a tuning (``racer --scenario``, :func:`racer.tune`, Optuna's
#: ``IteratedRace``) that names none. irace's default is its F-test; racer's is irace's t-test
#: (Birattari's tNo-race), chosen on the tuning suite's pilot scenario (benchmarks/RESULTS.md):
#: the F-test keeps and finally picks the configuration of best rank sum, and on heavy-tailed
#: costs (a SAT solver's effort) that is at times one that wins most instances by a little and
#: loses a few by a lot. On sat-cadical's seeds 1-10, racer's F-test ended seed 2 at 733 (3.6x
#: the untuned default, 4.5x the median), the t-test, which eliminates and picks by mean cost
#: (what the scenario asks to minimise), no seed above 174 (irace's worst: 204). A scenario
#: that names ``testType`` gets that test, irace's F-test included.
DEFAULT_TUNING_TEST = "t-test"

#: The racing test of a tuning on several objectives that names none.
DEFAULT_PARETO_TEST = "pareto"


@dataclasses.dataclass(frozen=True)
class RacingTestEntry:
    """One row of the table: a racing test by name.

    Parameters
    ----------
    name : str
        The canonical name (as the command line and the docs spell it).
    target : str
        ``"module:Class"`` of the test, imported only when needed (``racer --help`` and a
        scenario check do not import SciPy).
    options : mapping
        Constructor arguments this name fixes (``{"adjust": "holm"}``).
    aliases : tuple of str
        Other accepted spellings, from racer's other front ends.
    irace_aliases : tuple of str
        irace's own other spellings of ``testType`` (``irace`` entries only).
    irace : bool
        A ``testType`` irace knows: valid in a scenario file, and its ``alpha`` is the
        scenario's ``1 - confidence``.
    summary : str
        One line for help texts and error messages.
    confidence_options : callable or None
        ``confidence -> {option: value}``: the constructor options that state the test's
        level, from a scenario's ``confidence`` (see the module docstring); None: the test
        has no level.
    """

    name: str
    target: str
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    irace_aliases: tuple[str, ...] = ()
    irace: bool = False
    summary: str = ""
    confidence_options: Callable[[float], dict] | None = None

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every name this entry answers to, the canonical one first."""
        return (self.name, *self.irace_aliases, *self.aliases)

    @property
    def test_class(self) -> type:
        """The racing-test class (imported on first use)."""
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)

    @property
    def winner(self) -> str:
        """The race's winner rule that goes with this test: its class's ``winner``, else
        ``"mean"`` (what :class:`racer.engine.Race` does with ``winner=None``)."""
        return getattr(self.test_class, "winner", None) or "mean"

    def build(self, **options):
        """The test, with this entry's fixed options updated by ``options``."""
        return self.test_class(**{**self.options, **options})


def _irace_level(confidence: float) -> dict:
    return {"alpha": 1.0 - confidence}


def _bayesian_level(confidence: float) -> dict:
    return {"credibility": confidence, "gate_credibility": confidence}


def _posterior_best_level(confidence: float) -> dict:
    return {"error_rate": 1.0 - confidence}


def _credibility_level(confidence: float) -> dict:
    return {"credibility": confidence}


def _hierarchical_level(confidence: float) -> dict:
    # Its base test eliminates the survivors outside the top: the same level reaches it.
    from racer.racing.posterior_best import PosteriorBestTest

    return {"credibility": confidence, "base": PosteriorBestTest(error_rate=1.0 - confidence)}


RACING_TESTS: tuple[RacingTestEntry, ...] = (
    RacingTestEntry("F-test", "racer.racing.frace:FRaceTest", {"post_hoc": "conover"},
                    aliases=("frace",), irace_aliases=("friedman",), irace=True,
                    summary="irace's F-race: Friedman test, then Conover's post-hoc (default)",
                    confidence_options=_irace_level),
    RacingTestEntry("t-test", "racer.racing.trace:TRaceTest", {"adjust": "none"},
                    irace_aliases=("t.none",), irace=True,
                    summary="irace's paired t-tests against the best mean, no correction",
                    confidence_options=_irace_level),
    RacingTestEntry("t-test-bonferroni", "racer.racing.trace:TRaceTest", {"adjust": "bonferroni"},
                    irace_aliases=("t.bonferroni",), irace=True,
                    summary="irace's paired t-tests, Bonferroni-corrected",
                    confidence_options=_irace_level),
    RacingTestEntry("t-test-holm", "racer.racing.trace:TRaceTest", {"adjust": "holm"},
                    irace_aliases=("t.holm",), irace=True,
                    summary="irace's paired t-tests, Holm-corrected",
                    confidence_options=_irace_level),
    RacingTestEntry("bayesian", "racer.racing.bayesian:BayesianTest", aliases=("bayes", "seed002"),
                    summary="Bayesian Friedman gate, then joint Bayesian sign tests",
                    confidence_options=_bayesian_level),
    RacingTestEntry("posterior-best", "racer.racing.posterior_best:PosteriorBestTest",
                    summary="drop candidates unlikely to be best (racer's default)",
                    confidence_options=_posterior_best_level),
    RacingTestEntry("correlated-t", "racer.racing.cv:CorrelatedTTestRacing",
                    summary="Bayesian correlated t-test against the leader (cross-validation)",
                    confidence_options=_credibility_level),
    RacingTestEntry("hierarchical", "racer.racing.hierarchical:HierarchicalRacingTest",
                    summary="hierarchical model over groups of instances (needs test_fraction)",
                    confidence_options=_hierarchical_level),
    RacingTestEntry("pareto", "racer.racing.pareto:ParetoTest",
                    summary="several objectives: drop candidates another one Pareto-dominates",
                    confidence_options=_credibility_level),
)

_BY_NAME = {spelling.lower(): entry for entry in RACING_TESTS for spelling in entry.spellings}
if len(_BY_NAME) != sum(len(entry.spellings) for entry in RACING_TESTS):
    raise AssertionError("a racing-test name is listed twice")  # a table typo, at import


def names(*, irace: bool | None = None) -> tuple[str, ...]:
    """Every accepted spelling (``irace=True``: irace's ``testType`` spellings only).

    >>> names(irace=True)  # doctest: +NORMALIZE_WHITESPACE
    ('F-test', 'friedman', 't-test', 't.none', 't-test-bonferroni', 't.bonferroni',
     't-test-holm', 't.holm')
    """
    if irace:
        return tuple(s for e in RACING_TESTS if e.irace for s in (e.name, *e.irace_aliases))
    return tuple(s for e in RACING_TESTS for s in e.spellings)


def _valid_names() -> str:
    return ", ".join(repr(s) for s in names()) + " or 'package.module:Class'"


def lookup(name: str) -> RacingTestEntry:
    """The entry of ``name`` (any spelling, any letter case).

    >>> lookup("Bayes").target
    'racer.racing.bayesian:BayesianTest'
    >>> lookup("anova")
    Traceback (most recent call last):
    ...
    ValueError: unknown racing test: the names are 'F-test', ...; got 'anova'
    """
    if not isinstance(name, str):
        raise TypeError(f"a racing-test name must be a str; got {name!r}")
    entry = _BY_NAME.get(name.lower())
    if entry is None:
        raise ValueError(f"unknown racing test: the names are {_valid_names()}; got {name!r}")
    return entry


def parse_options(text: str) -> dict[str, Any]:
    """``"key=value,key=value"`` -> keyword arguments; a value is a Python literal (a list or
    tuple too) or else a word.

    >>> parse_options("error_rate=0.01, tie_guard=False, adjust=holm")
    {'error_rate': 0.01, 'tie_guard': False, 'adjust': 'holm'}
    """
    options: dict[str, Any] = {}
    # A comma starts a new option only before "key=", so that a value may be a list or tuple.
    for item in re.split(r",(?=\s*[A-Za-z_]\w*\s*=)", text):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key.isidentifier():
            raise ValueError(f"racing-test options must read key=value,key=value; got {text!r}")
        if key in options:
            raise ValueError(f"racing-test option {key!r} given twice in {text!r}")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    return options


def make_test(spec: str, *, alpha: float | None = None, confidence: float | None = None):
    """``(racing test, winner rule)`` for a name of the table, with options, or
    ``package.module:Class[:options]``.

    Parameters
    ----------
    spec : str
        ``name``, ``name:key=value,...`` or ``package.module:Class[:key=value,...]``.
    alpha : float, optional
        The level of irace's tests (``1 - confidence`` of a scenario); ignored by the other
        tests. An ``alpha=`` option in ``spec`` wins.
    confidence : float in (0, 1), optional
        A scenario's ``confidence``, set on the entry's ``confidence_options`` (the module
        docstring's table); options in ``spec`` and ``alpha`` win over it. Ignored for
        ``package.module:Class`` (racer cannot know which option is its level).

    Returns
    -------
    (RacingTest, str or None)
        The test, and the winner rule of its entry (``None`` for ``module:Class``: the race
        then reads the class's own ``winner``).

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones), malformed options, or options the
        test refuses.

    >>> make_test("t-test:adjust=holm")[0].adjust
    'holm'
    >>> test, winner = make_test("racer.racing.base:KeepAll")
    >>> type(test).__name__, winner
    ('KeepAll', None)
    """
    from racer.racing.base import RacingTest

    if not isinstance(spec, str):
        raise TypeError(f"a racing-test name must be a str; got {spec!r}")
    _check_confidence(confidence)
    head, _, rest = spec.partition(":")
    entry = _BY_NAME.get(head.strip().lower())
    if entry is None and not rest:
        lookup(head.strip())  # raises the error that lists the names
    try:
        if entry is not None:
            return _build_entry(entry, rest, alpha, confidence), entry.winner
        test = _build_class(spec, head, rest)
    except TypeError as exc:  # an option of the right name the constructor still refuses
        raise ValueError(f"racing test {spec!r}: {exc}") from None
    if not isinstance(test, RacingTest):
        raise ValueError(f"racing test {spec!r} is not a racer RacingTest")
    return test, None


def _check_confidence(confidence: float | None) -> None:
    # Checked here, not with racer._validation: the command line builds its test before
    # anything imports NumPy.
    if confidence is None:
        return
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise TypeError(f"`confidence` must be a number in (0, 1); got {confidence!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must lie in (0, 1); got {confidence!r}")


def _build_entry(entry: RacingTestEntry, option_text: str, alpha: float | None,
                 confidence: float | None):
    """``entry``'s test with the options of ``option_text``, then ``alpha`` (irace's tests)
    and ``confidence`` where the text leaves them."""
    options = parse_options(option_text) if option_text else {}
    _check_option_names(entry.test_class, options, entry.name, entry)
    if entry.irace and alpha is not None:
        options.setdefault("alpha", alpha)
    if confidence is not None and entry.confidence_options is not None:
        for key, value in entry.confidence_options(confidence).items():
            options.setdefault(key, value)
    return entry.build(**options)


def _build_class(spec: str, module: str, rest: str):
    """The test of ``package.module:Class[:options]``."""
    cls_name, _, option_text = rest.partition(":")
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(
            f"racing test {spec!r}: {exc} (the names are {_valid_names()})") from None
    options = parse_options(option_text) if option_text else {}
    if isinstance(cls, type):
        _check_option_names(cls, options, f"{module}:{cls_name}")
    return cls(**options)


def _option_names(cls: type) -> list[str] | None:
    """The keyword options ``cls``'s constructor takes; None when it takes any (``**kw``)
    or its signature cannot be read."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _check_option_names(cls: type, options: dict, name: str,
                        entry: RacingTestEntry | None = None) -> None:
    """Refuse an option ``cls`` does not take, naming it, the test, a close match and the
    valid options (a scenario's ``confidence`` is not one: say which options it sets).

    >>> _check_option_names(lookup("posterior-best").test_class, {"error_rat": 0.01},
    ...                     "posterior-best")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: racing test 'posterior-best' has no option 'error_rat' (did you mean 'error_rate'?); its options are ...
    """
    valid = _option_names(cls)
    if valid is None:
        return
    for key in options:
        if key in valid:
            continue
        close = difflib.get_close_matches(key, valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        level = ""
        if key == "confidence" and entry is not None and entry.confidence_options is not None:
            level = ("; a scenario's confidence (--confidence, racer.tune's confidence=) "
                     "sets its level through "
                     f"{', '.join(repr(k) for k in entry.confidence_options(0.95))}")
        raise ValueError(f"racing test {name!r} has no option {key!r}{hint}; its options are "
                         f"{', '.join(valid) or 'none'}{level}")
