"""The race engine: an ask/tell state machine that races candidates block by block.

A race evaluates every survivor on the same instances, in the same order, a block at a time;
after a block it hands the survivors' score matrix to a :class:`~racer.racing.base.RacingTest`
and removes whoever the test eliminates. The engine owns the loop, the budget, the schedule of
tests, failures, persistence and execution; the test owns the statistics. That split is what
lets the Bayesian test and the F-race baseline run on exactly the same loop.

Two ways to drive it:

* ``Race.run(evaluate, instances)`` (or :func:`race`) runs the loop of :mod:`racer.race_loop`
  (the one driver of every race), serially, on a process pool (``n_jobs``) or on any
  ``concurrent.futures.Executor``;
* ``ask()``/``tell()`` lets an outside loop (the scikit-learn and Optuna adapters, a cluster
  scheduler) run the evaluations itself.
"""

from __future__ import annotations

import collections
import logging
import math
import numbers
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Callable, NamedTuple

import numpy as np

from racer._race_stats import RaceStats
from racer._scores import ScoreTable
from racer._text import describe_value
from racer._validation import (
    as_race_items,
    check_bool,
    check_directions,
    check_int,
    check_option,
    seed_from_random_state,
)
from racer.race_loop import item_text
from racer.racing.base import Elimination, KeepAll, RaceView, RacingTest
from racer.result import EliminationRecord, RaceResult
from racer.storage import NullJournal, RaceJournal

__all__ = ["Evaluation", "EvaluationError", "Race", "RaceFailedError", "race"]

logger = logging.getLogger("racer")

_ON_ERROR = ("worst", "eliminate", "raise")
# The racing test of a race given none (racer.race, racer.Race), a name of
# racer.racing.registry; the tunings have their own (docs/conventions.md). Chosen on the
# accuracy-cost frontier (benchmarks/frontier.py, 200 paired repetitions per cell): at equal
# evaluations PosteriorBestTest beats the F-races where the budget binds, which BayesianTest
# (Benavoli et al. 2015 to the letter) never does.
DEFAULT_RACE_TEST = "posterior-best"
_WINNER = ("mean", "mean_rank", "rank_sum")
_TEST_REASONS = ("dominated", "indistinguishable")
# Salt for the instance-shuffling streams, so they never coincide with a test step's stream
# default_rng([seed, step]) (steps are small positive integers).
_SHUFFLE_SALT = 0x5EED5EED




class Evaluation(NamedTuple):
    """One evaluation the race wants: ``candidate`` on ``instance``.

    ``candidate_index`` is the candidate's position in the list given to :class:`Race`;
    ``instance_index`` is the instance's position in race order (0 = first instance raced),
    which is also its row in :attr:`RaceResult.scores`.
    """

    candidate_index: int
    candidate: Any
    instance_index: int
    instance: Any


class EvaluationError(RuntimeError):
    """Raised under ``on_error="raise"`` when an evaluation fails or returns a non-finite value."""


class RaceFailedError(EvaluationError, ValueError):
    """The race cannot have a winner: no candidate has a usable score.

    A :class:`ValueError` as well as an :class:`EvaluationError` (a ``RuntimeError``), so that
    code catching either still catches it: scikit-learn raises ``ValueError`` when every fit
    of a search fails, and ``RaceSearchCV`` raises this error then.

    Raised (whatever ``on_error`` is) as soon as the first evaluations of a race all failed
    (see "Failures: `on_error`" in docs/racing.md), and under ``on_error="eliminate"`` when every survivor
    failed in one block. The message quotes the first failure: candidate, instance, and what
    ``evaluate`` returned (type and value) or raised. ``failures`` holds every failure as
    ``(candidate_index, instance_index, message)`` in the order they were told, and
    ``n_evaluations`` the evaluations spent.

    >>> import racer
    >>> try:
    ...     racer.race(lambda c, i: None, [1, 2], range(5), progress=False)
    ... except racer.RaceFailedError as exc:
    ...     print(str(exc).split(". ")[0])
    every evaluation failed: no candidate has a usable score after 10 evaluations
    """

    def __init__(self, message: str, failures: tuple = (), n_evaluations: int = 0) -> None:
        super().__init__(message)
        self.failures = tuple(failures)
        self.n_evaluations = n_evaluations


_MISSING = object()


def _evaluation_key(evaluation: Any) -> tuple[int, int]:
    """``(candidate_index, instance_index)`` of what tell() was given (checked)."""
    if isinstance(evaluation, Evaluation):
        return evaluation.candidate_index, evaluation.instance_index
    ci = getattr(evaluation, "candidate_index", None)
    ii = getattr(evaluation, "instance_index", None)
    if ci is None or ii is None:
        try:
            ci, ii = evaluation
        except (TypeError, ValueError):
            raise TypeError(
                "`evaluation` must be an Evaluation from ask() or a (candidate_index, "
                f"instance_index) pair; got {evaluation!r}"
            ) from None
    if not isinstance(ci, numbers.Integral) or not isinstance(ii, numbers.Integral):
        raise TypeError(
            f"`evaluation` indices must be integers; got ({ci!r}, {ii!r})"
        )
    return int(ci), int(ii)


def _checked_decisions(test: RacingTest, decisions: Any, m: int) -> list[tuple[int, str, int, float]]:
    """What ``test.decide()`` returned for ``m`` survivors, as ``(column, reason, by column,
    probability)`` once per column; a broken test is refused with what it returned."""
    name = type(test).__name__
    out = []
    seen: set[int] = set()
    for dec in decisions or ():
        if not isinstance(dec, Elimination):
            raise TypeError(f"{name}.decide() must return Elimination objects; got {dec!r}")
        col, by_col = int(dec.index), int(dec.by)
        if not (0 <= col < m and 0 <= by_col < m) or col == by_col:
            raise ValueError(
                f"{name}.decide() returned {dec!r}: index and by must be distinct columns "
                f"of the {m} survivors"
            )
        if dec.reason not in _TEST_REASONS:
            raise ValueError(
                f"{name}.decide() returned reason {dec.reason!r}; expected one of "
                f"{_TEST_REASONS}"
            )
        if col in seen:
            continue  # a candidate leaves once; the first reason given is kept
        seen.add(col)
        out.append((col, dec.reason, by_col, float(dec.probability)))
    if len(seen) >= m:
        raise RuntimeError(f"{name}.decide() eliminated every survivor, which is a bug in the test")
    return out


def _check_candidates(candidates: Any) -> list:
    """``candidates`` as a non-empty list; a DataFrame is one candidate per row (a dict), a
    dict is refused (its keys or its values?)."""
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
        raise TypeError(f"`candidates` must be an iterable of candidates; got {candidates!r}")
    out = list(as_race_items(candidates, "candidates"))
    if not out:
        raise ValueError("`candidates` is empty: a race needs at least one candidate")
    return out


def _block_evaluations(journal: Any, candidates: list, survivors: list, instances: list,
                       start: int, stop: int) -> tuple[list, list]:
    """The evaluations of the block of rows ``start..stop-1``, in ask order: those to ask,
    and those the journal already holds (a resume), as ``(candidate, row, score, message,
    charge)``."""
    to_ask, replayed = [], []
    for row in range(start, stop):
        for ci in survivors:
            hit = journal.take((ci, row))
            if hit is not None:
                replayed.append((ci, row, *hit))
            else:
                to_ask.append(Evaluation(ci, candidates[ci], row, instances[row]))
    return to_ask, replayed


def _failure_message(value: Any, error: Any, charge: Any, n_objectives: int = 1) -> str | None:
    """What :meth:`Race.tell` records as the failure of an evaluation (None: ``value`` is a
    usable score), after checking that its ``value``/``error``/``charge`` go together."""
    if error is not None and not isinstance(error, (BaseException, str)):
        raise TypeError(
            f"`error` must be an exception or a message (str); got {describe_value(error)}"
        )
    if not charge and error is None:
        raise ValueError("`charge=False` is only for a failure: give `error=`")
    if value is _MISSING and error is None:
        raise TypeError(
            "tell() needs the score as `value`, or `error=` for a failed evaluation; got neither"
        )
    if error is not None:
        return error if isinstance(error, str) else f"raised {type(error).__name__}: {error}"
    return _check_value(value) if n_objectives == 1 else _check_vector(value, n_objectives)


class _Survivors:
    """Who is still racing, who left (the history of eliminations), and the incremental
    statistics of the survivors' scores lent to the test at each step (``view.greater``,
    ``view.ranks``...; :mod:`racer._race_stats`)."""

    def __init__(self, candidates: list) -> None:
        n = len(candidates)
        self.candidates = candidates
        self.alive = np.ones(n, dtype=bool)
        self.indices = np.arange(n, dtype=np.int64)
        self.stats = RaceStats(n)
        self.history: list[EliminationRecord] = []

    def eliminate(self, ci: int, reason: str, by: int | None, prob: float, n: int,
                  step: int) -> None:
        """Candidate ``ci`` leaves after ``n`` instances at test ``step`` (0: for failing)."""
        self.alive[ci] = False
        self.indices = np.flatnonzero(self.alive)
        self.stats.survivors_changed()
        self.history.append(EliminationRecord(
            candidate=self.candidates[ci], candidate_index=ci, n_instances=n, reason=reason,
            by=None if by is None else self.candidates[by], by_index=by, probability=prob,
            step=step,
        ))
        if logger.isEnabledFor(logging.INFO):
            by_text = "" if by is None else f" by #{by} {item_text(self.candidates[by])}"
            logger.info(
                "eliminated #%d %s after %d instances: %s%s (probability %.4g); %d survivors",
                ci, item_text(self.candidates[ci]), n, reason, by_text, prob, len(self.indices),
            )


class _Failures:
    """A race's failed evaluations, and the rule that ends a race whose ``evaluate`` is broken
    (docs/racing.md, "Failures": every one of the first ``fail_fast_after`` evaluations
    failed, about two instances' worth, set when the first block opens)."""

    def __init__(self) -> None:
        self.all: list[tuple[int, int, str]] = []  # (candidate, instance row, message)
        self.in_block: set[int] = set()  # candidates with a failure in the open block
        self.fail_fast_after: int | None = None
        self.n_made_failed = 0  # failures of evaluations made (told with charge=True)
        self.fatal: RaceFailedError | None = None  # set once: the race is dead

    def add(self, ci: int, row: int, message: str, n_made: int, made: bool) -> bool:
        """Record a failure; True when it makes every evaluation made so far (``n_made``:
        not those told with ``charge=False``, which were never made and say nothing about
        ``evaluate``) a failure, past the fail-fast count."""
        self.all.append((ci, row, message))
        self.in_block.add(ci)
        self.n_made_failed += made
        return (self.fail_fast_after is not None and n_made >= self.fail_fast_after
                and self.n_made_failed == n_made)

    def raise_if_fatal(self) -> None:
        """A dead race raises the error that killed it on every call."""
        if self.fatal is not None:
            raise RaceFailedError(
                str(self.fatal), self.fatal.failures, self.fatal.n_evaluations
            ) from self.fatal


class _Options(NamedTuple):
    """A race's options, checked (see :class:`Race`)."""

    test: RacingTest
    direction: str | tuple  # a tuple of two or more: one per objective
    budget: int | None
    max_instances: int | None
    first_test: int
    each_test: int
    min_survivors: int
    shuffle: bool
    on_error: str
    winner: str

    @property
    def directions(self) -> tuple | None:
        """One direction per objective in a race on several objectives, else None."""
        return self.direction if isinstance(self.direction, tuple) else None

    @property
    def n_objectives(self) -> int:
        return 1 if self.directions is None else len(self.directions)

    @property
    def maximize(self) -> bool:
        """Larger is better on the (first) objective: what ``ScoreTable.oriented`` holds."""
        return (self.directions or (self.direction,))[0] == "maximize"

    def journaled(self) -> dict:
        """The options in a journal's fingerprint: all but the test (fingerprinted by its
        parameters) and ``winner`` (free to change on resume)."""
        return {k: v for k, v in self._asdict().items() if k not in ("test", "winner")}

    def next_block(self, n_raced: int, n_survivors: int, n_charged: int,
                   more_instances: bool) -> tuple[int, str | None]:
        """``(instances in the next block, None)``, or ``(its size, the stop reason)`` when
        the race stops before it: ``min_survivors``, ``max_instances``,
        ``instances_exhausted`` or ``budget`` (a block starts only when the budget pays for
        all of it, as in irace).

        Stop rules are checked between blocks only, as in irace: the first block always runs,
        so every candidate sees ``first_test`` instances.
        """
        planned = self.first_test if n_raced == 0 else self.each_test
        if n_raced > 0 and n_survivors <= self.min_survivors:
            return planned, "min_survivors"
        if self.max_instances is not None:
            if n_raced >= self.max_instances:
                return planned, "max_instances"
            planned = min(planned, self.max_instances - n_raced)
        if not more_instances:
            return planned, "instances_exhausted"
        if self.budget is not None and n_charged + n_survivors * planned > self.budget:
            return planned, "budget"
        return planned, None

    def no_racing_reason(self, n_candidates: int, instances_left: int | None) -> str | None:
        """Why no test of this race can save an evaluation, or None.

        After the first block, an elimination only pays off if the race can still afford a
        block (``each_test`` instances for at least two survivors). When the budget or the
        instances known at construction (``instances_left``; None: unknown or none given yet)
        rule that out, the race is uniform allocation with a winner picked on the first block:
        said at the start, not discovered afterwards.
        """
        if n_candidates < 2 or isinstance(self.test, KeepAll):
            return None  # the adapters' documented plain grid search is no racing on purpose
        first = self.first_test
        if self.budget is not None and self.budget - n_candidates * first < 2 * self.each_test:
            return (f"`budget`={self.budget} pays for the first block ({n_candidates} "
                    f"candidates x {first} instances) and not for one more")
        if instances_left is not None and instances_left <= first:
            return f"only {instances_left} instance(s) are available, all in the first block"
        return None


def _check_options(n_candidates: int, *, test: Any, direction: Any, budget: Any,
                   max_instances: Any, first_test: Any, each_test: Any, min_survivors: Any,
                   shuffle: Any, on_error: Any, winner: Any) -> _Options:
    """:class:`Race`'s options checked (a ValueError or TypeError naming the argument) and
    their defaults filled in, for a race of ``n_candidates``."""
    direction = check_directions(direction)
    if isinstance(direction, tuple):
        test = _check_multi_objective(test, direction)
    elif test is not None and getattr(test, "objectives", "single") == "multi":
        raise ValueError(
            f"`test`={type(test).__name__} races on several objectives: pass `direction` as a "
            "list with one entry per objective (e.g. direction=['minimize', 'minimize'])"
        )
    if test is None:
        from racer.racing.registry import lookup

        test = lookup(DEFAULT_RACE_TEST).build()
    if not isinstance(test, RacingTest):
        raise TypeError(f"`test` must be a racer.racing.base.RacingTest; got {test!r}")
    budget = check_int(budget, "budget", minimum=1, allow_none=True)
    max_instances = check_int(max_instances, "max_instances", minimum=1, allow_none=True)
    first_test = check_int(first_test, "first_test", minimum=1)
    each_test = check_int(each_test, "each_test", minimum=1)
    min_survivors = check_int(min_survivors, "min_survivors", minimum=1)
    if min_survivors > n_candidates:
        raise ValueError(
            f"`min_survivors`={min_survivors} exceeds the number of candidates "
            f"({n_candidates}): the race could never reach it"
        )
    if max_instances is not None and first_test > max_instances:
        raise ValueError(
            f"`first_test`={first_test} exceeds `max_instances`={max_instances}: "
            "the race would stop before its first test"
        )
    shuffle = check_bool(shuffle, "shuffle")
    on_error = check_option(on_error, "on_error", _ON_ERROR)
    if winner is None:
        stated = getattr(test, "winner", None)
        if stated is not None and stated not in _WINNER:
            raise ValueError(
                f"{type(test).__name__}.winner must be one of {_WINNER} or None; got "
                f"{stated!r}"
            )
        winner = "mean" if stated is None else stated
    winner = check_option(winner, "winner", _WINNER)
    if budget is not None and budget < n_candidates * first_test:
        raise ValueError(
            f"`budget`={budget} cannot pay for the first block: {n_candidates} candidates x "
            f"{first_test} instances = {n_candidates * first_test} evaluations"
        )
    return _Options(test, direction, budget, max_instances, first_test, each_test,
                    min_survivors, shuffle, on_error, winner)


def _check_multi_objective(test: Any, directions: tuple) -> RacingTest:
    """The test of a race on ``len(directions)`` objectives: ``ParetoTest()`` by default; a
    test that reads one score per cell is refused (it would race on the first objective
    alone, silently). ``storage`` journals every objective (:mod:`racer.storage`)."""
    if test is None:
        from racer.racing.pareto import ParetoTest

        return ParetoTest()
    if getattr(test, "objectives", "single") == "single":
        raise ValueError(
            f"`test`={type(test).__name__} compares one score per evaluation, but `direction` "
            f"names {len(directions)} objectives; use racer.ParetoTest() (the default for "
            "several objectives) or KeepAll()"
        )
    return test


def _as_score(value: Any, message: str | None, n_objectives: int) -> Any:
    """What a told ``value`` is recorded as: a float, a (k,) float64 array with several
    objectives, NaN for a failure (``message``)."""
    if message is not None:
        return math.nan
    return float(value) if n_objectives == 1 else np.array(value, dtype=np.float64)


def _check_vector(value: Any, k: int) -> str | None:
    """Why ``value`` is not a usable score vector of a race on ``k`` objectives (a failure:
    a non-finite entry, a non-number), or None. A wrong number of values is a broken
    ``evaluate``, not a noisy run: a ValueError naming it, whatever ``on_error`` says."""
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(
            f"`evaluate` must return {k} numbers, one per objective of `direction`; it "
            f"returned an array of shape {value.shape}"
        )
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
        n = "a scalar" if isinstance(value, numbers.Real) else describe_value(value)
        raise ValueError(
            f"`evaluate` must return {k} numbers, one per objective of `direction` (a race on "
            f"{k} objectives); it returned {n}"
        )
    if len(value) != k:
        raise ValueError(
            f"`evaluate` must return {k} numbers, one per objective of `direction`; it "
            f"returned {len(value)}: {describe_value(value)}"
        )
    for o, item in enumerate(value):
        why = _check_value(item)
        if why is not None:
            return f"{why} for objective {o}"
    return None


class _InstanceStream:
    """The instances of a race: those raced so far (:attr:`raced`, the rows of the score
    table), then its sources in the order they were added, drawn lazily a block at a time.

    ``seed`` orders shuffled sources (``shuffle=True``); ``max_instances`` caps :meth:`left`.
    """

    def __init__(self, seed: int, shuffle: bool, max_instances: int | None) -> None:
        self._seed = seed
        self._shuffle = shuffle
        self._max_instances = max_instances
        self.raced: list[Any] = []
        self._sources: collections.deque = collections.deque()  # [iterator, size or None]
        self._lookahead: collections.deque = collections.deque()  # drawn, put back
        self.n_sources = 0
        # Instances the race could race, for the cost report: None once a source has no length.
        self._n_available: int | None = 0

    def add(self, instances: Iterable) -> None:
        """Append a source (already checked to be an iterable of instances)."""
        if self._n_available is not None:
            try:
                self._n_available += len(instances)  # type: ignore[arg-type]
            except TypeError:
                self._n_available = None  # an iterator: endless or of unknown length
        if self._shuffle:
            if not isinstance(instances, Sequence) and not hasattr(instances, "__len__"):
                raise TypeError(
                    "`shuffle=True` needs a sequence of instances (list, tuple, range, array); "
                    f"got an iterator {type(instances).__name__!r}"
                )
            items = list(instances)
            rng = np.random.default_rng([self._seed, _SHUFFLE_SALT, self.n_sources])
            order = rng.permutation(len(items))
            source = iter([items[i] for i in order])
        else:
            items = instances
            source = iter(instances)
        # How many instances this source still holds, when it says (for RaceView.instances_left).
        size = len(items) if hasattr(items, "__len__") else None
        self.n_sources += 1
        self._sources.append([source, size])

    def draw(self, k: int) -> list:
        """Up to ``k`` next instances (fewer when the sources run out); not yet raced."""
        drawn = []
        while len(drawn) < k:
            if self._lookahead:
                drawn.append(self._lookahead.popleft())
                continue
            if not self._sources:
                break
            head = self._sources[0]
            try:
                drawn.append(next(head[0]))
            except StopIteration:
                self._sources.popleft()
                continue
            if head[1] is not None:
                head[1] -= 1
        return drawn

    def put_back(self, drawn: list) -> None:
        """Undo :meth:`draw`: ``drawn`` comes first again."""
        self._lookahead.extendleft(reversed(drawn))

    def has_more(self) -> bool:
        got = self.draw(1)
        self.put_back(got)
        return bool(got)

    def left(self) -> int | None:
        """Instances the race can still draw (None: unknown, e.g. an endless generator)."""
        left = None
        if all(size is not None for _, size in self._sources):
            left = len(self._lookahead) + sum(max(size, 0) for _, size in self._sources)
        if self._max_instances is not None:
            cap = max(self._max_instances - len(self.raced), 0)
            left = cap if left is None else min(left, cap)
        return left

    def available(self) -> int | None:
        """Instances the race could race: all given, capped at ``max_instances``."""
        if self._n_available is None:
            # An endless or unsized source: only max_instances bounds what could be raced.
            return self._max_instances
        total = max(self._n_available, len(self.raced))
        return total if self._max_instances is None else min(total, self._max_instances)


def _check_value(value: Any) -> str | None:
    """Return why ``value`` is not a usable score, or None if it is one.

    A score is a finite real number: a Python or NumPy float or integer (or any
    ``numbers.Real``). Refused, each with a message naming what came back: NaN and +-inf;
    ``True``/``False`` (a bool is not a score here, though Python counts it as an int);
    complex numbers; strings and None; arrays of any size, one-element ones included (return
    ``x.item()`` if that is what is meant: racer will not guess which element is the score);
    ``scipy.optimize.OptimizeResult`` and other result objects (return their ``.fun``).
    """
    if isinstance(value, float):  # the common case (numpy float64 too), without the ABC checks
        return None if value - value == 0.0 else f"returned {value}"
    if isinstance(value, (bool, np.bool_)):
        return f"returned a bool, not a score: {describe_value(value)}; return a float"
    if isinstance(value, numbers.Real):
        try:
            if math.isfinite(value):
                return None
        except OverflowError:
            return f"returned a number too large for a float: {describe_value(value)}"
        return f"returned {float(value)}"
    if isinstance(value, numbers.Complex):
        return f"returned a complex number, not a real score: {describe_value(value)}"
    if isinstance(value, np.ndarray):
        hint = "; return a scalar, e.g. x.item()" if value.size == 1 else ""
        return f"returned an array, not a number: {describe_value(value)}{hint}"
    if isinstance(value, dict) and "fun" in value and "x" in value:
        # scipy.optimize.OptimizeResult is a dict subclass with .fun (the objective value).
        return (
            f"returned a non-number: a {type(value).__name__} (an optimizer's result); "
            "return its `.fun`, the objective value"
        )
    return f"returned a non-number: {describe_value(value)}"


class Race:
    """A race of ``candidates`` over a stream of instances, driven by ask/tell or by :meth:`run`.

    The engine is documented in docs/racing.md: the loop and the test schedule, the stopping
    rules and the winner, instances, failures ("Failures: `on_error`", including what no
    policy rescues), parallel execution, persistence and resume ("Persistence and resume"),
    and the ask/tell protocol ("ask/tell: driving a race from outside").

    Parameters
    ----------
    candidates : iterable
        The configurations to race, any objects, reported back as passed. A DataFrame is one
        candidate per row (a dict); a dict is refused (its keys or its values?).
    test : RacingTest, optional
        Decides the eliminations after each block. Default: ``racer.PosteriorBestTest()``
        (:data:`DEFAULT_RACE_TEST`, chosen on the accuracy-cost frontier of
        ``benchmarks/frontier.py``; docs/conventions.md);
        ``racer.BayesianTest()`` is Benavoli et al.'s (2015) procedure.
    direction : {"minimize", "maximize"} or list of them, default "minimize"
        Whether smaller or larger scores are better; a list, one per objective, races on
        several (docs/racing.md, "Several objectives"). Tests see larger-is-better scores.
    budget : int, optional
        Maximum number of evaluations. A block starts only when the budget pays for all of
        it, as in irace; the first block must fit.
    max_instances : int, optional
        Maximum number of instances raced (at least ``first_test``).
    first_test : int, default 5
        Instances every candidate sees before the first test.
    each_test : int, default 1
        Instances per block after the first: a test runs at instance ``n`` when
        ``n >= first_test`` and ``(n - first_test) % each_test == 0``.
    min_survivors : int, default 1
        The race stops once no more than this many candidates are left.
    instances : iterable, optional
        Instances to race on, in order (a sequence or any iterator, even endless); more come
        from :meth:`add_instances` or :meth:`run`. A DataFrame is one instance per row.
    shuffle : bool, default False
        Race each added sequence of instances in an order drawn from the race seed.
    on_error : {"worst", "eliminate", "raise"}, default "worst"
        What a failed evaluation (an exception, NaN, inf or a non-number) does: rank last on
        its instance, eliminate its candidate at the end of the block, or propagate.
    winner : {"mean", "mean_rank", "rank_sum"} or None, default None
        How the winner is chosen among the survivors; None: the rule the test states (its
        class attribute ``winner``), else ``"mean"``. Ties go to the earlier candidate.
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Seeds the race; the test at step ``k`` receives ``numpy.random.default_rng([seed,
        k])``. With ``storage`` and None, a resumed race reuses the journal's seed.
    storage : str or path, optional
        SQLite journal (:mod:`racer.storage`; every objective): the same race on the same
        file resumes it, with a larger ``budget`` or ``max_instances`` it continues a finished
        race. The race holds the journal's writer lock until :meth:`close`.
    metadata : dict, optional
        Anything else that changes the scores (a version of ``evaluate``, a data set), in the
        journal's fingerprint, so a resume under other settings is refused.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    >>> import numpy as np
    >>> from racer.racing.base import Elimination, RacingTest
    >>> class DropWorstMean(RacingTest):
    ...     def decide(self, view, rng):
    ...         means = view.scores.mean(axis=0)
    ...         worst, best = int(np.argmin(means)), int(np.argmax(means))
    ...         return [Elimination(worst, "dominated", best, 1.0)] if worst != best else []
    ...     def get_params(self):
    ...         return {}
    >>> r = Race([0.1, 0.5, 0.9], test=DropWorstMean(), direction="maximize", first_test=2,
    ...          max_instances=10, instances=range(100), random_state=0)
    >>> while not r.finished:
    ...     for ev in r.ask():
    ...         r.tell(ev, ev.candidate + 0.01 * ev.instance)
    >>> r.result().best
    0.9
    """

    def __init__(
        self,
        candidates: Iterable,
        *,
        test: RacingTest | None = None,
        direction: str | None = None,
        budget: int | None = None,
        max_instances: int | None = None,
        first_test: int = 5,
        each_test: int = 1,
        min_survivors: int = 1,
        instances: Iterable | None = None,
        shuffle: bool = False,
        on_error: str = "worst",
        winner: str | None = None,
        random_state: Any = None,
        storage: Any = None,
        metadata: dict | None = None,
    ) -> None:
        self._candidates = _check_candidates(candidates)
        options = _check_options(
            len(self._candidates), test=test, direction=direction,
            budget=budget, max_instances=max_instances, first_test=first_test,
            each_test=each_test, min_survivors=min_survivors, shuffle=shuffle,
            on_error=on_error, winner=winner,
        )
        (self._test, self._direction, self._budget, self._max_instances, self._first_test,
         self._each_test, self._min_survivors, self._shuffle, self._on_error,
         self._winner) = self._options = options
        self._maximize = options.maximize
        n_cand = len(self._candidates)
        if metadata is not None and not isinstance(metadata, dict):
            raise TypeError(f"`metadata` must be a dict or None; got {metadata!r}")
        # The journal observes every event (NullJournal: no storage); a resume replays it.
        self._journal: NullJournal = NullJournal()
        if storage is not None:
            self._journal = RaceJournal(
                storage, random_state, candidates=self._candidates, test=self._test,
                options=options.journaled(),
                metadata=dict(metadata or {}), winner=self._winner,
            )
            self._seed = self._journal.seed
        else:
            self._seed = seed_from_random_state(random_state)

        self._scores = ScoreTable(n_cand, maximize=self._maximize, directions=options.directions)
        self._survivors = _Survivors(self._candidates)

        self._stream = _InstanceStream(self._seed, self._shuffle, self._max_instances)
        self._instances = self._stream.raced  # the rows of the score table, in order

        # The open block is the score table's open rows (ScoreTable.rows_open).
        self._pending: dict[tuple[int, int], Evaluation] = {}
        self._unasked: collections.deque = collections.deque()

        self._n_evaluations = 0
        self._n_uncharged = 0
        self._step = 0
        self._stop_reason: str | None = None
        self._failures = _Failures()
        self._listeners: list[Callable[[Race], None]] = []

        if instances is not None:
            self.add_instances(instances)
        self._warn_if_no_racing(options)

    def _warn_if_no_racing(self, options: _Options) -> None:
        """Say at the start when nothing a test decides can save an evaluation."""
        left = self._stream.left() if self._stream.n_sources else None  # instances given now
        why = options.no_racing_reason(len(self._candidates), left)
        if why is not None:
            warnings.warn(
                f"{why}: no test can save an evaluation, so this race is uniform allocation "
                "(every candidate on the same instances), not racing. Raise the budget, add "
                "instances or lower `first_test`.",
                RuntimeWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ public state

    @property
    def candidates(self) -> list:
        """The candidates, as passed."""
        return self._candidates

    @property
    def survivors(self) -> list:
        """The candidates still in the race."""
        return [self._candidates[i] for i in self._survivors.indices]

    @property
    def survivor_indices(self) -> np.ndarray:
        """Positions of the survivors in :attr:`candidates`."""
        return self._survivors.indices.copy()

    @property
    def finished(self) -> bool:
        """True once the race has stopped (see :attr:`stop_reason`)."""
        if self._stop_reason is None and self._scores.rows_open is None:
            self._advance()
        return self._stop_reason is not None

    @property
    def stop_reason(self) -> str | None:
        """Why the race stopped, or None while it runs."""
        return self._stop_reason

    @property
    def n_evaluations(self) -> int:
        """Evaluations recorded so far (failures included); the budget used is this minus
        those told with ``charge=False``."""
        return self._n_evaluations

    @property
    def n_charged(self) -> int:
        """Evaluations paid from the budget: :attr:`n_evaluations` minus the failures told
        with ``tell(..., charge=False)``."""
        return self._n_evaluations - self._n_uncharged

    @property
    def n_instances(self) -> int:
        """Instances started so far."""
        return len(self._instances)

    @property
    def budget(self) -> int | None:
        return self._budget

    @property
    def seed(self) -> int:
        """The race seed (tests get ``default_rng([seed, step])``)."""
        return self._seed

    @property
    def history(self) -> list[EliminationRecord]:
        """Eliminations so far, in order."""
        return list(self._survivors.history)

    # ------------------------------------------------------------------ instances

    def add_instances(self, instances: Iterable) -> None:
        """Append instances to race on, after those already given.

        A sequence is shuffled when the race has ``shuffle=True`` (its order drawn from the race
        seed and the number of earlier calls, so a re-run draws the same order); iterators are
        consumed lazily, one block at a time, so an endless generator is fine.
        """
        if isinstance(instances, (str, bytes)) or not isinstance(instances, Iterable):
            raise TypeError(f"`instances` must be an iterable of instances; got {instances!r}")
        # A DataFrame is one instance per row (a dict); a dict is refused (keys or values?).
        self._stream.add(as_race_items(instances, "instances"))
        if self._stop_reason == "instances_exhausted":
            self._stop_reason = None
            self._journal.on_restart()

    def _instances_left(self) -> int | None:
        # What the progress line (racer.progress) shows as the share of instances raced.
        return self._stream.left()

    # ------------------------------------------------------------------ ask / tell

    def ask(self, n: int | None = None) -> list[Evaluation]:
        """Return up to ``n`` (default: all) evaluations of the current block not yet asked.

        Returns ``[]`` when the race is finished, or when every evaluation of the block has
        been handed out but some are not yet told.
        """
        n = check_int(n, "n", minimum=1, allow_none=True)
        self._failures.raise_if_fatal()
        if self._scores.rows_open is None and self._stop_reason is None:
            self._advance()
        out = []
        pending = self._pending
        # Evaluations told before they were asked (allowed) are skipped here.
        while self._unasked and (n is None or len(out) < n):
            ev = self._unasked.popleft()
            if (ev.candidate_index, ev.instance_index) in pending:
                out.append(ev)
        return out

    def stop(self, reason: str) -> None:
        """End the race now, by a rule of the caller's that the race does not know (irace's
        ``elitistLimit``, a budget shared by several races, a deadline).

        ``reason`` (a short word such as ``"elitist_limit"``) becomes :attr:`stop_reason` and
        is written to the journal. Evaluations of the open block that were not told are
        dropped, so :meth:`ask` and :meth:`pending` return ``[]`` and :meth:`result` ranks the
        survivors on the completed instances only. A race that already stopped keeps its
        first reason.

        >>> from racer import Race
        >>> race = Race([1, 2, 3], first_test=2, instances=range(10), random_state=0)
        >>> for ev in race.ask():
        ...     race.tell(ev, ev.candidate * ev.instance)
        >>> race.stop("deadline")
        >>> race.finished, race.stop_reason, race.ask()
        (True, 'deadline', [])
        """
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"`reason` must be a non-empty str; got {reason!r}")
        self._failures.raise_if_fatal()
        if self._stop_reason is not None:
            return
        self._pending.clear()
        self._unasked.clear()
        self._stop(reason)

    def pending(self) -> list[Evaluation]:
        """Evaluations of the current block that are not yet told (asked or not)."""
        self._failures.raise_if_fatal()
        if self._scores.rows_open is None and self._stop_reason is None:
            self._advance()
        return list(self._pending.values())

    def tell(self, evaluation: Any, value: Any = _MISSING, *, error: Any = None,
             charge: bool = True) -> None:
        """Record the result of one evaluation.

        Parameters
        ----------
        evaluation : Evaluation or (candidate_index, instance_index)
            Which evaluation this is; it must belong to the current block and not be told yet.
        value : float
            The score. NaN, inf or a non-number (None included) counts as a failure (see
            ``on_error``). Required unless ``error`` is given.
        error : exception or str, optional
            Marks the evaluation as failed (``value`` is then ignored).
        charge : bool, default True
            With ``error``, ``False`` says the evaluation was not made (the caller skipped
            it, e.g. its candidate had already failed and is out under
            ``on_error="eliminate"``): it is recorded as a failure but not paid from the
            ``budget``.

        >>> r = Race([1, 2], first_test=1, budget=10, instances=range(5), random_state=0)
        >>> a, b = r.ask()
        >>> r.tell(a, 0.5); r.tell(b, error="not run", charge=False)
        >>> r.n_evaluations, r.n_charged
        (2, 1)
        """
        self._failures.raise_if_fatal()
        key = _evaluation_key(evaluation)
        message = _failure_message(value, error, charge, self._options.n_objectives)
        if self._journal.closed:
            raise RuntimeError("this race's storage journal was closed; construct the race again to resume")
        if self._scores.rows_open is None and self._stop_reason is None:
            self._advance()
        if key not in self._pending:
            ci, ii = key
            told = (0 <= ci < len(self._candidates) and 0 <= ii < len(self._instances)
                    and self._scores.told(ci, ii))
            raise ValueError(f"evaluation (candidate_index={ci}, instance_index={ii}) "
                             + ("was already told" if told else "is not part of the current "
                                "block: tell only what ask() returned"))
        if message is not None and self._on_error == "raise":
            ev = self._pending[key]
            exc = EvaluationError(
                f"evaluation of candidate #{key[0]} {item_text(ev.candidate)} on instance "
                f"#{key[1]} {item_text(ev.instance)} {message}"
            )
            if isinstance(error, BaseException):
                raise exc from error
            raise exc
        del self._pending[key]
        score = _as_score(value, message, self._options.n_objectives)
        self._journal.on_evaluation(key[0], key[1], score, message, charge)
        self._record(key[0], key[1], score, message, charge)
        if not self._pending:
            self._advance()

    # ------------------------------------------------------------------ the loop

    def _advance(self) -> None:
        """Finish completed blocks and open new ones until something needs evaluating."""
        while self._stop_reason is None:
            if self._scores.rows_open is not None:
                if self._pending:
                    return
                self._finish_block()
            self._start_block()

    def _start_block(self) -> None:
        n = len(self._instances)
        survivors = self._survivors.indices
        n_surv = len(survivors)
        planned, reason = self._options.next_block(n, n_surv, self.n_charged,
                                                   self._stream.has_more())
        if reason == "budget" and self._journal.replaying:
            # A resume with a smaller budget than the journaled race's: it cannot pay for a
            # block the journal already began, whose evaluations would be left unused.
            raise ValueError(
                f"To continue the race journaled in `storage`={self._journal.path!r}, pass "
                f"budget >= {self.n_charged + n_surv * planned} (or budget=None); to start "
                f"over, pass another `storage=` path. `budget`={self._budget} cannot pay for "
                f"the block of {n_surv} survivors x {planned} instance(s) that the journal "
                "already began."
            )
        if reason is not None:
            self._stop(reason)
            return
        new = self._stream.draw(planned)
        if n == 0 and len(new) < self._first_test:
            self._stream.put_back(new)  # nothing consumed: more may be added
            raise ValueError(
                f"`first_test`={self._first_test} but the race has only {len(new)} instances: "
                "it would end before its first test; give at least first_test instances "
                "(`instances`) or lower `first_test`"
            )
        self._register_instances(new)
        stop = len(self._instances)
        self._scores.open_rows(n, stop, survivors)
        self._failures.in_block.clear()
        cand_list = survivors.tolist()
        if n == 0:
            # Fail fast (see "Failures" in docs/racing.md): about two instances' worth.
            self._failures.fail_fast_after = min(n_surv * (stop - n), max(2 * n_surv, 10))
        to_ask, replayed = _block_evaluations(self._journal, self._candidates, cand_list,
                                              self._instances, n, stop)
        self._pending.update(((ev.candidate_index, ev.instance_index), ev) for ev in to_ask)
        self._unasked.extend(to_ask)
        for ci, row, score, message, charge in replayed:
            self._record(ci, row, score, message, charge)

    def _register_instances(self, new: list) -> None:
        start = len(self._instances)
        self._instances.extend(new)
        self._journal.on_instances(start, new)

    def _record(self, ci: int, row: int, score: float, message: str | None,
                charge: bool = True) -> None:
        self._n_evaluations += 1
        if not charge:
            self._n_uncharged += 1
        self._scores.record(ci, row, score, failed=message is not None)
        if message is not None:
            if self._failures.add(ci, row, message, self.n_charged, charge):
                self._fail("every evaluation failed: no candidate has a usable score after "
                           f"{self._n_evaluations} evaluations", self._failures.all[0])
        for listener in self._listeners:
            listener(self)

    def _fail(self, what: str, first: tuple[int, int, str]) -> None:
        ci, row, message = first
        fatal = self._failures.fatal = RaceFailedError(
            f"{what}. First failure: evaluation of candidate #{ci} {item_text(self._candidates[ci])} "
            f"on instance #{row} {item_text(self._instances[row])} {message}."
            f"{self._journal.failure_hint}",
            failures=self._failures.all,
            n_evaluations=self._n_evaluations,
        )
        self._stop_reason = "failed"
        self._journal.on_stop("failed")
        self._scores.close_rows()
        self._pending.clear()
        self._unasked.clear()
        # A dead race writes nothing more: release the journal now, so that it can be
        # inspected, or the race resumed, in this process without waiting for garbage collection.
        self.close()
        raise fatal

    def _finish_block(self) -> None:
        first_row, n = self._scores.rows_open
        self._scores.close_rows()
        if self._failures.in_block and self._on_error == "eliminate":
            failed = sorted(self._failures.in_block)
            if len(failed) >= len(self._survivors.indices):
                self._fail(
                    f"every surviving candidate failed in the block of instances "
                    f"{first_row}..{n - 1} under on_error='eliminate', so none is left to race",
                    next(f for f in self._failures.all if f[1] >= first_row),
                )
            for ci in failed:
                self._eliminate(ci, "failed", None, math.nan, n, step=0)
            self._journal.on_decisions(0, n, [(ci, "failed", None, math.nan) for ci in failed])
        if (
            n >= self._first_test
            and (n - self._first_test) % self._each_test == 0
            and len(self._survivors.indices) > 1
        ):
            self._run_test(n)

    def _run_test(self, n: int) -> None:
        self._step += 1
        step = self._step
        if step <= self._journal.tested_steps:
            # Decided before (a resume): the journaled eliminations stand, even when this
            # race's limits differ from the journaled one's (a larger budget), so a
            # continued race keeps every candidate it eliminated and every evaluation made.
            for ci, reason, by, prob in self._journal.decisions_of(step):
                if self._survivors.alive[ci]:
                    self._eliminate(ci, reason, by, prob, n, step)
            return
        survivors = self._survivors.indices
        scores = self._scores.oriented[:n, survivors]
        rng = np.random.default_rng([self._seed, step])
        view = RaceView(
            scores,
            survivors.copy(),
            budget_left=None if self._budget is None else self._budget - self.n_charged,
            instances_left=self._instances_left(),
            each_test=self._each_test,
            n_candidates=len(self._candidates),
            step=step,
            stats=self._survivors.stats,
            # The rows' instances, for tests that use their structure (data set, fold).
            instances=self._instances[:n],
            objectives=self._scores.objectives_of(n, survivors),
        )
        decisions = self._test.decide(view, rng)
        chosen = _checked_decisions(self._test, decisions, len(survivors))
        applied = []
        for col, reason, by_col, prob in chosen:
            ci = int(survivors[col])
            by = int(survivors[by_col])
            self._eliminate(ci, reason, by, prob, n, step)
            applied.append((ci, reason, by, prob))
        self._journal.on_decisions(step, n, applied, tested=True)

    def _eliminate(
        self, ci: int, reason: str, by: int | None, prob: float, n: int, step: int
    ) -> None:
        self._survivors.eliminate(ci, reason, by, prob, n, step)

    def _stop(self, reason: str) -> None:
        self._stop_reason = reason
        self._journal.on_stop(reason)
        logger.info(
            "race stopped (%s) after %d instances and %d evaluations; %d survivors",
            reason, len(self._instances), self._n_evaluations, len(self._survivors.indices),
        )

    # ------------------------------------------------------------------ storage

    def close(self) -> None:
        """Close the storage journal, if any, and release its writer lock (garbage collection
        and the end of the process also do it), so another race can resume the journal.

        A race with a closed journal refuses further tell(): its results could not be saved."""
        if isinstance(self._journal, RaceJournal):
            self._journal.close()
            self._journal = NullJournal(closed=True)

    def __enter__(self) -> Race:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ run

    def run(
        self,
        evaluate: Callable[[Any, Any], float],
        instances: Iterable | None = None,
        *,
        executor: Any = None,
        n_jobs: int | None = None,
        timeout: float | None = None,
        progress: bool = True,
    ) -> RaceResult:
        """Run the race to the end and return its :class:`RaceResult`.

        ``evaluate(candidate, instance) -> float`` and the other arguments are those of
        :func:`racer.race` (``instances`` appended as by :meth:`add_instances`, ``executor``,
        ``n_jobs``, ``timeout``, ``progress``), which documents them; the loop is
        :func:`racer.race_loop.run_race`'s.
        """
        # The loop itself is racer.race_loop's, shared with the adapters and the command line.
        from racer.execution import check_timeout
        from racer.race_loop import check_evaluate, run_race

        self._failures.raise_if_fatal()
        check_evaluate(evaluate, executor)
        check_bool(progress, "progress")
        timeout = check_timeout(timeout)
        if instances is not None:
            self.add_instances(instances)
        if not self._instances and not self._stream.has_more():
            raise ValueError(
                "`instances` is empty: the race has no instance to evaluate the candidates on "
                "(pass them to run(), race(), Race(instances=...) or add_instances())"
            )
        return run_race(self, evaluate, executor=executor, n_jobs=n_jobs, timeout=timeout,
                        progress=progress, raise_errors=self._on_error == "raise")

    # ------------------------------------------------------------------ result

    def result(self) -> RaceResult:
        """The race's outcome so far (final once :attr:`finished`).

        Raises :class:`RaceFailedError` if the race failed (no candidate has a usable score),
        and ValueError if it stopped before its first evaluation (no instances): there is no
        winner to report.
        """
        self._failures.raise_if_fatal()
        if self._n_evaluations == 0 and self._stop_reason is not None:
            raise ValueError(
                f"the race stopped ({self._stop_reason}) before any evaluation: `instances` "
                "gave none; there is no winner (add instances and continue the race)"
            )
        return RaceResult._from_race(
            self._scores,
            candidates=self._candidates,
            instances=self._instances,
            survivors=self._survivors.indices,
            winner=self._winner,
            on_error=self._on_error,
            history=self._survivors.history,
            failures=self._failures.all,
            n_evaluations=self._n_evaluations,
            n_instances_available=self._stream.available(),
            stop_reason=self._stop_reason or "running",
            budget=self._budget,
            seed=self._seed,
        )

    def __repr__(self) -> str:
        state = self._stop_reason or "running"
        return (
            f"Race({len(self._candidates)} candidates, {len(self._survivors.indices)} survivors, "
            f"{len(self._instances)} instances, {self._n_evaluations} evaluations, {state})"
        )


def race(
    evaluate: Callable[[Any, Any], float],
    candidates: Iterable,
    instances: Iterable,
    *,
    executor: Any = None,
    n_jobs: int | None = None,
    timeout: float | None = None,
    progress: bool = True,
    **options: Any,
) -> RaceResult:
    """Race ``candidates`` over ``instances`` with ``evaluate(candidate, instance) -> float``.

    One call for scripts: ``Race(candidates, **options).run(evaluate, instances, executor=...,
    n_jobs=..., timeout=..., progress=...)``; docs/racing.md, "Parallel execution, time limits
    and dying workers", says what ``executor``, ``n_jobs`` and ``timeout`` do in full. See
    :class:`Race` for the options (``test``, ``direction``,
    ``budget``, ``max_instances``, ``first_test``, ``each_test``, ``min_survivors``,
    ``shuffle``, ``on_error``, ``winner``, ``random_state``, ``storage``). A DataFrame of
    ``candidates`` or ``instances`` is one item per row (a dict of its column values); a dict
    is refused with what to pass instead.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(candidate, instance) -> float``, accepting two positional arguments. In
        worker processes it travels by value (cloudpickle): a lambda, a closure, a function
        of a notebook or of a script without a main guard works; one capturing what cannot
        be pickled (an open file, a lock) is refused before any evaluation, naming it.
    candidates : iterable
        The configurations to race (see :class:`Race`).
    instances : iterable
        The instances to race on (a sequence, an iterator, a DataFrame: one per row); a
        race with none at all is refused (ValueError).
    executor : concurrent.futures.Executor, optional
        Where to run evaluations (a thread pool, Dask's ``client.get_executor()``, Ray's);
        results are told as they arrive, decisions never depend on their order. Not with
        ``timeout`` (ValueError: racer cannot stop work it handed to another executor).
    n_jobs : int, optional
        Without ``executor``: 1 or None in this process, ``k > 1`` racer's own worker
        processes (-1: every CPU). A worker that dies is recorded as a failed evaluation
        naming the candidate, the instance and the signal, and replaced. Workers never
        outlive the race.
    timeout : float, optional
        Seconds one evaluation may take (None: no limit); one over it is stopped, its
        worker replaced, and it is recorded as failed (``on_error`` decides), journaled
        like any other failure. With a timeout even ``n_jobs=1`` uses a worker process.
    progress : bool, default True
        Show a progress line on stderr.

    Examples
    --------
    >>> from racer import KeepAll
    >>> res = race(lambda c, i: abs(c - 3), [1, 2, 3, 4], range(6), test=KeepAll(),
    ...            progress=False, random_state=0)  # a loss: minimised by default
    >>> res.best, res.n_evaluations
    (3, 24)

    A finished race continues with a larger ``budget`` on its ``storage``: only the new
    evaluations are made.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "race.sqlite")
    >>> calls = []
    >>> def loss(c, i):
    ...     calls.append((c, i))
    ...     return abs(c - 3)
    >>> race(loss, [1, 2, 3, 4], range(50), test=KeepAll(), budget=24, storage=path,
    ...      progress=False, random_state=0).stop_reason
    'budget'
    >>> more = race(loss, [1, 2, 3, 4], range(50), test=KeepAll(), budget=40, storage=path,
    ...             progress=False, random_state=0)
    >>> more.n_evaluations, len(calls)
    (40, 40)
    """
    from racer.execution import check_timeout

    check_timeout(timeout)  # before Race() opens a journal
    runner = Race(candidates, **options)
    return runner.run(
        evaluate, instances, executor=executor, n_jobs=n_jobs, timeout=timeout, progress=progress
    )
