"""The race engine: an ask/tell state machine that races candidates block by block.

A race evaluates every survivor on the same instances, in the same order, a block at a time;
after a block it hands the survivors' score matrix to a :class:`~racer.racing.base.RacingTest`
and removes whoever the test eliminates. The engine owns the loop, the budget, the schedule of
tests, failures, persistence and execution; the test owns the statistics. That split is what
lets the Bayesian test and the F-race baseline run on exactly the same loop.

Two ways to drive it:

* ``Race.run(evaluate, instances)`` (or :func:`race`) runs the loop itself, serially, on a
  process pool (``n_jobs``) or on any ``concurrent.futures.Executor``;
* ``ask()``/``tell()`` lets an outside loop (the scikit-learn and Optuna adapters, a cluster
  scheduler) run the evaluations itself.
"""

from __future__ import annotations

import ast
import collections
import concurrent.futures as cf
import inspect
import logging
import math
import numbers
import pickle
import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Callable, NamedTuple

import numpy as np

from racer._race_stats import RaceStats
from racer._validation import (
    as_race_items,
    check_bool,
    check_direction,
    check_int,
    check_option,
    seed_from_random_state,
)
from racer.racing.base import Elimination, KeepAll, RaceView, RacingTest
from racer.result import EliminationRecord, RaceResult
from racer.stats._ranks import block_ranks

__all__ = ["Evaluation", "EvaluationError", "Race", "RaceFailedError", "race"]

logger = logging.getLogger("racer")

_ON_ERROR = ("worst", "eliminate", "raise")
_WINNER = ("mean", "mean_rank", "rank_sum")
_TEST_REASONS = ("dominated", "indistinguishable")
# Options that only stop a race: a resume may raise them (continue a finished race).
_LIMITS = ("budget", "max_instances")
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


class RaceFailedError(EvaluationError):
    """The race cannot have a winner: no candidate has a usable score.

    Raised (whatever ``on_error`` is) as soon as the first evaluations of a race all failed
    (see :class:`Race`, "Failures"), and under ``on_error="eliminate"`` when every survivor
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


def _stable_repr(obj: Any) -> str:
    # Default reprs embed memory addresses ("<function f at 0x7f...>") that change from run to
    # run; a resumed race must still recognise its own candidates and instances.
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(obj))


def _clip(obj: Any, width: int = 80) -> str:
    text = _stable_repr(obj)
    return text if len(text) <= width else text[: width - 3] + "..."


def _describe_value(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ must not hide the failure
        text = f"<unprintable: repr raised {type(exc).__name__}>"
    text = text if len(text) <= 60 else text[:57] + "..."
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(value, np.ndarray):
        name += f" of shape {value.shape}"
    return f"{text} ({name})"


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
        return f"returned a bool, not a score: {_describe_value(value)}; return a float"
    if isinstance(value, numbers.Real):
        try:
            if math.isfinite(value):
                return None
        except OverflowError:
            return f"returned a number too large for a float: {_describe_value(value)}"
        return f"returned {float(value)}"
    if isinstance(value, numbers.Complex):
        return f"returned a complex number, not a real score: {_describe_value(value)}"
    if isinstance(value, np.ndarray):
        hint = "; return a scalar, e.g. x.item()" if value.size == 1 else ""
        return f"returned an array, not a number: {_describe_value(value)}{hint}"
    if isinstance(value, dict) and "fun" in value and "x" in value:
        # scipy.optimize.OptimizeResult is a dict subclass with .fun (the objective value).
        return (
            f"returned a non-number: a {type(value).__name__} (an optimizer's result); "
            "return its `.fun`, the objective value"
        )
    return f"returned a non-number: {_describe_value(value)}"


def _check_evaluate(evaluate: Any, executor: Any) -> None:
    """Refuse an ``evaluate`` that cannot work, before any evaluation is spent on it."""
    if not callable(evaluate):
        raise TypeError(f"`evaluate` must be callable; got {_clip(evaluate)}")
    if inspect.iscoroutinefunction(evaluate):
        raise TypeError(
            f"`evaluate` must return a score, but {_clip(evaluate)} is a coroutine function "
            "(async def); run the coroutine inside a plain function"
        )
    try:
        signature = inspect.signature(evaluate)
    except (TypeError, ValueError):
        signature = None  # builtins and extension functions without one: cannot check
    if signature is not None:
        try:
            signature.bind(None, None)
        except TypeError as exc:
            raise TypeError(
                f"`evaluate` must accept two positional arguments, evaluate(candidate, "
                f"instance); {_clip(evaluate)} has signature {signature} ({exc})"
            ) from None
    # With n_jobs > 1 or a timeout, racer's own WorkerPool refuses an unpicklable evaluate
    # before evaluating (racer.execution); a user's ProcessPoolExecutor would instead fail
    # every evaluation in its workers, so check that case here.
    if isinstance(executor, cf.ProcessPoolExecutor):
        try:
            pickle.dumps(evaluate)
        except Exception as exc:  # noqa: BLE001 - PicklingError, AttributeError, TypeError...
            raise TypeError(
                f"`evaluate` cannot be pickled to run in worker processes (the executor is a "
                f"ProcessPoolExecutor): {type(exc).__name__}: {exc}. Pass n_jobs= instead of "
                "the executor (racer's own workers take lambdas, closures and functions of "
                "notebooks), define it at module level, or use a thread pool"
            ) from None


class Race:
    """A race of ``candidates`` over a stream of instances, driven by ask/tell or by :meth:`run`.

    Parameters
    ----------
    candidates : iterable
        The configurations to race (dicts, tuples, any objects; nothing needs to be hashable).
        They are reported back as these same objects. A pandas DataFrame is one candidate
        per row, a dict of its column values; a dict is refused (TypeError saying what to
        pass: its keys or its values?).
    test : RacingTest, optional
        Decides the eliminations after each block. Default: ``racer.PosteriorBestTest()``
        (chosen on the accuracy-cost frontier of ``benchmarks/frontier.py``);
        ``racer.BayesianTest()`` is Benavoli et al.'s (2015) procedure.
    direction : {"minimize", "maximize"}, default "minimize"
        Whether smaller or larger scores are better (Optuna's word; irace, Optuna and
        ``scipy.optimize`` all minimise by default).
        The test always sees larger-is-better scores (negated when minimising).
    budget : int, optional
        Maximum number of evaluations. A block is only started when the budget can pay for
        all of it (survivors x its planned number of instances), as in irace, so the race may
        end with part of the budget unspent. The first block must fit (checked here).
    max_instances : int, optional
        Maximum number of instances raced. It must be at least ``first_test``.
    first_test : int, default 5
        Instances every candidate sees before the first test. It may not exceed
        ``max_instances``; and if the instances run out before ``first_test`` of them were
        raced, the first block is refused (ValueError from ``ask()``/``run()``, before any of
        its evaluations): such a race could never test, only evaluate everything.
    each_test : int, default 1
        Instances per block after the first: a test runs at instance ``n`` when
        ``n >= first_test`` and ``(n - first_test) % each_test == 0``. This equals irace's rule
        (``n % eachTest == 0``) whenever ``first_test`` is a multiple of ``each_test``, which
        irace requires; racer does not require it.
    min_survivors : int, default 1
        The race stops once no more than this many candidates are left. A test may eliminate
        several at once and so leave fewer (as in irace); the engine never overrides it. It may
        not exceed the number of candidates.
    instances : iterable, optional
        Instances to race on, in order (a sequence, or any iterator, even an endless
        generator of seeds). A DataFrame is one instance per row (a dict of its column
        values); a dict is refused, as for ``candidates``. More can be appended with :meth:`add_instances` or passed to
        :meth:`run`. An empty ``instances`` is allowed here, but :meth:`run` refuses to start
        a race that has no instance at all, and :meth:`result` refuses to name a winner of a
        race that stopped before its first evaluation.
    shuffle : bool, default False
        Race each added sequence of instances in an order drawn from the race seed. Only
        sequences can be shuffled (an iterator raises TypeError).
    on_error : {"worst", "eliminate", "raise"}, default "worst"
        What a failed evaluation (an exception, NaN, inf or a non-number) does. ``"worst"``:
        it counts as worse than every successful evaluation on that instance, namely as
        ``lowest - spread`` in larger-is-better terms, where ``lowest`` and ``spread`` are the
        minimum and the range of that instance's successful scores among the candidates of
        the block (``spread`` is replaced by ``|lowest|``, or 1 when that is 0, if all
        successful scores are equal; when every evaluation of the instance failed, all get
        0): it ranks last, and it pulls the candidate's mean down by more than any success
        would. ``"eliminate"``: the candidate is eliminated (reason ``"failed"``) at the end of
        the block, before the test; it is an error for every survivor to fail in one block.
        ``"raise"``: the error propagates (an :class:`EvaluationError` for bad values) and
        nothing is recorded. In every case the block's other evaluations are kept. These
        policies are for *partial* failures; see "Failures" below for what no policy can
        rescue.
    winner : {"mean", "mean_rank", "rank_sum"} or None, default None
        How the winner is chosen among several survivors: best mean score (``"mean"``),
        best mean within-instance rank among the survivors (``"mean_rank"``), or best sum of
        those ranks over the instances raced (``"rank_sum"``, irace's order for its F-race:
        ``overall.ranks()``). Ties go to the earlier candidate. The two rank rules order
        alike here, because every survivor has seen the same instances. None uses the
        rule the test states (its class attribute ``winner``; ``FRaceTest`` states
        ``"rank_sum"`` so that the F-race baseline returns irace's elite), else ``"mean"``.
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Seeds the race (racer's one seed convention, see
        :func:`racer._validation.check_random_state`: a Generator or RandomState gives one
        draw and advances). The test at step ``k`` receives
        ``numpy.random.default_rng([seed, k])``,
        never a shared sequential generator, so a resumed race decides exactly as an
        uninterrupted one. With ``storage`` and ``random_state=None``, a resumed race reuses the
        seed in the journal.
    storage : str or path, optional
        SQLite journal (see :mod:`racer.storage`). Every evaluation and decision is written as
        it happens; constructing the same race on the same file resumes it: recorded
        evaluations are replayed instead of being evaluated again, and the test steps already
        taken keep their journaled eliminations. A larger ``budget`` or ``max_instances`` (or
        None) **continues a finished race**: nothing journaled is evaluated again, eliminated
        candidates stay out, and with a test whose decisions ignore the budget left
        (``FRaceTest``, ``TRaceTest``, ``BayesianTest``) the result is, bit for bit, that of one
        race with the larger limit; ``PosteriorBestTest`` reads the budget left, so its later
        steps are decided under the larger budget and its earlier ones stand (docs/racing.md,
        "Continue a finished race with a larger budget"). A race that ended with
        ``min_survivors`` has nothing to continue; one that ended with
        ``instances_exhausted`` continues when given more instances. A limit below what the
        journal already holds is refused, naming the smallest that continues it. A journal
        written by a different race (other candidates, options, test parameters, seed or
        ``metadata``) is refused: the message says first how to start over, then each
        difference as ``name: journal old, now new``. A resume cannot check ``evaluate``
        itself (it is given to ``run()``, and no fingerprint of a function is reliable):
        after changing it, or the data it reads, bump ``metadata={"evaluate_version": ...}``
        so the old journal is refused, or use a new file. A file that is not a racer journal
        (not SQLite, another application's database) is refused before anything is written;
        path problems raise ``FileNotFoundError``, ``IsADirectoryError`` or
        ``PermissionError`` naming the path. The race holds the
        journal's writer lock until :meth:`close` (or garbage collection, or the death of the
        process): a second race on the same file, in any process, raises
        :class:`racer.storage.JournalInUseError`; :func:`racer.storage.read_journal` can read
        it meanwhile.
    metadata : dict, optional
        Anything else that changes the scores (a version of ``evaluate``, a data set name,
        its settings), stored in the journal's fingerprint so a resume under different
        settings is refused. Values are compared by ``repr``.

    Failures
    --------
    A score is a finite real number (see ``on_error`` for what a failure is; ``True``/``False``,
    complex numbers, strings, None, arrays, even of one element, and
    ``scipy.optimize.OptimizeResult`` are failures, each recorded with what was returned). Two
    rules hold under every ``on_error``:

    * a candidate whose every evaluation failed is never the winner: :class:`RaceResult`
      ranks it after every candidate with at least one usable score (survivor or not); in
      the unlikely case that no survivor has a usable score, the best-ranked eliminated
      candidate that has one wins, with a ``RuntimeWarning``;
    * when no candidate has a usable score the race raises :class:`RaceFailedError`,
      quoting the first failure (candidate, instance, what was returned or raised). It is
      raised as soon as the first ``min(first block, max(2 x candidates, 10))`` evaluations
      told have all failed, so a broken ``evaluate`` costs about two instances' worth of
      evaluations, not a block or a budget. One instance on which every candidate fails is
      a legitimate outcome (a tie, see ``"worst"``); two in a row with not one success is a
      broken ``evaluate``. The race is then dead (``stop_reason == "failed"``, its journal
      closed): ``ask``, ``tell``, ``run`` and ``result`` raise the same error. With ``storage``, the journal keeps those failures and replays them on
      resume, so use a new journal once ``evaluate`` is fixed.

    :meth:`run` also checks ``evaluate`` before evaluating anything: it must be callable with
    two positional arguments (when ``inspect.signature`` can tell; builtins without one pass),
    and picklable when it runs in worker processes (``n_jobs > 1``, ``timeout``, or a
    ``ProcessPoolExecutor``).

    Ask/tell protocol
    -----------------
    ``ask(n=None)`` returns a list of :class:`Evaluation` ``(candidate_index, candidate,
    instance_index, instance)`` not yet handed out, all from the current block (at most
    ``n``). ``tell(evaluation, value)`` records one result (or ``tell(evaluation,
    error=exc)`` a failure); it accepts the :class:`Evaluation` or a ``(candidate_index,
    instance_index)`` pair, in any order within the block. The last result of a block runs the
    test and opens the next block. ``ask()`` returns ``[]`` when everything of the current
    block is out but not all told (tell the rest first) or when the race is over
    (``race.finished``). :meth:`pending` lists the block's evaluations not yet told, e.g. to
    hand them out again after a worker crash. ``tell()`` is not thread-safe: call it from one
    thread (the one collecting results). Instances come from ``instances=``,
    :meth:`add_instances` or :meth:`run`; when they run out the race stops with
    ``stop_reason == "instances_exhausted"``, and adding instances reopens it.

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
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
            raise TypeError(f"`candidates` must be an iterable of candidates; got {candidates!r}")
        # A DataFrame is one candidate per row (a dict); a dict is refused (keys or values?).
        self._candidates = list(as_race_items(candidates, "candidates"))
        if not self._candidates:
            raise ValueError("`candidates` is empty: a race needs at least one candidate")
        if test is None:
            # The default was chosen on the accuracy-cost frontier (benchmarks/frontier.py,
            # 200 paired repetitions per cell): at equal evaluations it beats the F-races where
            # the budget binds, which BayesianTest (Benavoli et al. 2015 to the letter) never does.
            from racer.racing.posterior_best import PosteriorBestTest

            test = PosteriorBestTest()
        if not isinstance(test, RacingTest):
            raise TypeError(f"`test` must be a racer.racing.base.RacingTest; got {test!r}")
        self._test = test
        self._direction = check_direction(direction)
        self._maximize = self._direction == "maximize"
        self._budget = check_int(budget, "budget", minimum=1, allow_none=True)
        self._max_instances = check_int(max_instances, "max_instances", minimum=1, allow_none=True)
        self._first_test = check_int(first_test, "first_test", minimum=1)
        self._each_test = check_int(each_test, "each_test", minimum=1)
        self._min_survivors = check_int(min_survivors, "min_survivors", minimum=1)
        if self._min_survivors > len(self._candidates):
            raise ValueError(
                f"`min_survivors`={self._min_survivors} exceeds the number of candidates "
                f"({len(self._candidates)}): the race could never reach it"
            )
        if self._max_instances is not None and self._first_test > self._max_instances:
            raise ValueError(
                f"`first_test`={self._first_test} exceeds `max_instances`={self._max_instances}: "
                "the race would stop before its first test"
            )
        self._shuffle = check_bool(shuffle, "shuffle")
        self._on_error = check_option(on_error, "on_error", _ON_ERROR)
        if winner is None:
            stated = getattr(test, "winner", None)
            if stated is not None and stated not in _WINNER:
                raise ValueError(
                    f"{type(test).__name__}.winner must be one of {_WINNER} or None; got "
                    f"{stated!r}"
                )
            winner = "mean" if stated is None else stated
        self._winner = check_option(winner, "winner", _WINNER)
        n_cand = len(self._candidates)
        first_len = self._first_test
        if self._budget is not None and self._budget < n_cand * first_len:
            raise ValueError(
                f"`budget`={self._budget} cannot pay for the first block: {n_cand} candidates x "
                f"{first_len} instances = {n_cand * first_len} evaluations"
            )
        if metadata is not None and not isinstance(metadata, dict):
            raise TypeError(f"`metadata` must be a dict or None; got {metadata!r}")
        self._metadata = dict(metadata or {})
        self._journal = None
        self._journal_closed = False
        self._replay: dict[tuple[int, int], tuple[float, str | None]] = {}
        # Failures told with charge=False (evaluations the caller did not make): recorded,
        # not paid from the budget; journaled under the meta key "uncharged" for a resume.
        self._uncharged: set[tuple[int, int]] = set()
        self._replay_uncharged: set[tuple[int, int]] = set()
        self._stored_instance_reprs: list[str] = []
        # Test steps the journal says were taken, and their eliminations (see _run_test).
        self._replay_tested = 0
        self._replay_decisions: dict[int, list] = {}
        if storage is not None:
            self._open_storage(storage, random_state)
        else:
            self._seed = seed_from_random_state(random_state)

        # Scores grow by doubling so appending a row is amortised O(survivors).
        capacity = 64
        self._raw = np.full((capacity, n_cand), np.nan)
        self._oriented = np.full((capacity, n_cand), np.nan)
        self._failed = np.zeros((capacity, n_cand), dtype=bool)
        self._n_seen = np.zeros(n_cand, dtype=np.int64)
        self._n_failed = np.zeros(n_cand, dtype=np.int64)
        self._alive = np.ones(n_cand, dtype=bool)
        self._survivor_idx = np.arange(n_cand, dtype=np.int64)
        # Incremental statistics lent to the test at each step (view.greater, view.ranks...).
        self._stats = RaceStats(n_cand)

        self._instances: list[Any] = []
        self._sources: collections.deque = collections.deque()
        self._lookahead: collections.deque = collections.deque()
        self._n_sources_added = 0

        self._block_active = False
        self._block_rows = (0, 0)
        self._block_cands = self._survivor_idx
        self._pending: dict[tuple[int, int], Evaluation] = {}
        self._unasked: collections.deque = collections.deque()
        self._row_remaining: dict[int, int] = {}
        self._block_failed: set[int] = set()

        self._n_evaluations = 0
        self._n_uncharged = 0
        self._step = 0
        self._history: list[EliminationRecord] = []
        self._failures: list[tuple[int, int, str]] = []
        self._stop_reason: str | None = None
        # See "Failures" in the class docstring: set when the first block opens.
        self._fail_fast_after: int | None = None
        self._fatal: RaceFailedError | None = None
        # Instances the race could race, for the cost report: None once a source has no length.
        self._n_available: int | None = 0
        self._listeners: list[Callable[[Race], None]] = []

        if instances is not None:
            self.add_instances(instances)
        self._warn_if_no_racing()

    def _warn_if_no_racing(self) -> None:
        """Say at the start when nothing a test decides can save an evaluation.

        After the first block, an elimination only pays off if the race can still afford a
        block (``each_test`` instances for at least two survivors). When the budget or the
        instances known at construction rule that out, the race is uniform allocation with a
        winner picked on the first block: said now, not discovered afterwards.
        """
        n_cand = len(self._candidates)
        if n_cand < 2 or isinstance(self._test, KeepAll):
            return  # the adapters' documented plain grid search is no racing on purpose
        first_len = self._first_test
        why = None
        if self._budget is not None and self._budget - n_cand * first_len < 2 * self._each_test:
            why = (f"`budget`={self._budget} pays for the first block ({n_cand} candidates x "
                   f"{first_len} instances) and not for one more")
        elif self._n_sources_added:  # instances given now; the ask/tell path may add later
            left = self._instances_left()
            if left is not None and left <= first_len:
                why = f"only {left} instance(s) are available, all in the first block"
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
        return [self._candidates[i] for i in self._survivor_idx]

    @property
    def survivor_indices(self) -> np.ndarray:
        """Positions of the survivors in :attr:`candidates`."""
        return self._survivor_idx.copy()

    @property
    def finished(self) -> bool:
        """True once the race has stopped (see :attr:`stop_reason`)."""
        if self._stop_reason is None and not self._block_active:
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
        return list(self._history)

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
        instances = as_race_items(instances, "instances")
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
            rng = np.random.default_rng([self._seed, _SHUFFLE_SALT, self._n_sources_added])
            order = rng.permutation(len(items))
            source = iter([items[i] for i in order])
        else:
            items = instances
            source = iter(instances)
        # How many instances this source still holds, when it says (for RaceView.instances_left).
        size = len(items) if hasattr(items, "__len__") else None
        self._n_sources_added += 1
        self._sources.append([source, size])
        if self._stop_reason == "instances_exhausted":
            self._stop_reason = None
            if self._journal is not None:
                self._journal.set_meta("stop_reason", None)

    def _draw_instances(self, k: int) -> list:
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

    def _instances_left(self) -> int | None:
        """Instances the race can still draw (None: unknown, e.g. an endless generator)."""
        left = None
        if all(size is not None for _, size in self._sources):
            left = len(self._lookahead) + sum(max(size, 0) for _, size in self._sources)
        if self._max_instances is not None:
            cap = max(self._max_instances - len(self._instances), 0)
            left = cap if left is None else min(left, cap)
        return left

    def _has_more_instances(self) -> bool:
        got = self._draw_instances(1)
        self._lookahead.extendleft(got)
        return bool(got)

    # ------------------------------------------------------------------ ask / tell

    def ask(self, n: int | None = None) -> list[Evaluation]:
        """Return up to ``n`` (default: all) evaluations of the current block not yet asked.

        Returns ``[]`` when the race is finished, or when every evaluation of the block has
        been handed out but some are not yet told.
        """
        n = check_int(n, "n", minimum=1, allow_none=True)
        self._raise_if_failed()
        if not self._block_active and self._stop_reason is None:
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
        self._raise_if_failed()
        if self._stop_reason is not None:
            return
        self._pending.clear()
        self._unasked.clear()
        self._stop(reason)

    def pending(self) -> list[Evaluation]:
        """Evaluations of the current block that are not yet told (asked or not)."""
        self._raise_if_failed()
        if not self._block_active and self._stop_reason is None:
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
        self._raise_if_failed()
        key = self._key_of(evaluation)
        if error is not None and not isinstance(error, (BaseException, str)):
            raise TypeError(
                f"`error` must be an exception or a message (str); got {_describe_value(error)}"
            )
        if not charge and error is None:
            raise ValueError("`charge=False` is only for a failure: give `error=`")
        if value is _MISSING and error is None:
            raise TypeError(
                "tell() needs the score as `value`, or `error=` for a failed evaluation; got "
                "neither"
            )
        if self._journal_closed:
            raise RuntimeError("this race's storage journal was closed; construct the race again to resume")
        if not self._block_active and self._stop_reason is None:
            self._advance()
        if key not in self._pending:
            ci, ii = key
            if 0 <= ci < len(self._candidates) and 0 <= ii < len(self._instances) and (
                not np.isnan(self._raw[ii, ci]) or self._failed[ii, ci]
            ):
                raise ValueError(
                    f"evaluation (candidate_index={ci}, instance_index={ii}) was already told"
                )
            raise ValueError(
                f"evaluation (candidate_index={ci}, instance_index={ii}) is not part of the "
                "current block: tell only what ask() returned"
            )
        if error is not None:
            message = error if isinstance(error, str) else f"raised {type(error).__name__}: {error}"
        else:
            message = _check_value(value)
        if message is not None and self._on_error == "raise":
            ev = self._pending[key]
            exc = EvaluationError(
                f"evaluation of candidate #{key[0]} {_clip(ev.candidate)} on instance "
                f"#{key[1]} {_clip(ev.instance)} {message}"
            )
            if isinstance(error, BaseException):
                raise exc from error
            raise exc
        del self._pending[key]
        score = math.nan if message is not None else float(value)
        if self._journal is not None:
            if not charge:
                self._uncharged.add(key)
                self._journal.set_meta("uncharged", repr(sorted(self._uncharged)))
            self._journal.record_evaluation(key[0], key[1], score, message)
        self._record(key[0], key[1], score, message, charge)
        if not self._pending:
            self._advance()

    def _key_of(self, evaluation: Any) -> tuple[int, int]:
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

    # ------------------------------------------------------------------ the loop

    def _advance(self) -> None:
        """Finish completed blocks and open new ones until something needs evaluating."""
        while self._stop_reason is None:
            if self._block_active:
                if self._pending:
                    return
                self._finish_block()
            self._start_block()

    def _start_block(self) -> None:
        n = len(self._instances)
        survivors = self._survivor_idx
        n_surv = len(survivors)
        if n == 0:
            planned = self._first_test
        else:
            # Stop rules are checked between blocks only, as in irace: the first block always
            # runs so every candidate sees first_test instances.
            planned = self._each_test
            if n_surv <= self._min_survivors:
                self._stop("min_survivors")
                return
        if self._max_instances is not None:
            if n >= self._max_instances:
                self._stop("max_instances")
                return
            planned = min(planned, self._max_instances - n)
        if not self._has_more_instances():
            self._stop("instances_exhausted")
            return
        if self._budget is not None and self.n_charged + n_surv * planned > self._budget:
            if self._replay:
                # A resume with a smaller budget than the journaled race's: it cannot pay for
                # a block the journal already began, whose evaluations would be left unused.
                need = self.n_charged + n_surv * planned
                raise ValueError(
                    f"To continue the race journaled in `storage`={self._journal.path!r}, pass "
                    f"budget >= {need} (or budget=None); to start over, pass another "
                    f"`storage=` path. `budget`={self._budget} cannot pay for the block of "
                    f"{n_surv} survivors x {planned} instance(s) that the journal already began."
                )
            self._stop("budget")
            return
        new = self._draw_instances(planned)
        if n == 0 and len(new) < self._first_test:
            self._lookahead.extendleft(reversed(new))  # nothing consumed: more may be added
            raise ValueError(
                f"`first_test`={self._first_test} but the race has only {len(new)} instances: "
                "it would end before its first test; give at least first_test instances "
                "(`instances`) or lower `first_test`"
            )
        self._register_instances(new)
        stop = len(self._instances)
        self._ensure_capacity(stop)
        self._block_active = True
        self._block_rows = (n, stop)
        self._block_cands = survivors
        self._block_failed = set()
        cand_list = survivors.tolist()
        for row in range(n, stop):
            self._row_remaining[row] = n_surv
        if n == 0:
            # Fail fast (see "Failures" in the class docstring): about two instances' worth.
            self._fail_fast_after = min(n_surv * (stop - n), max(2 * n_surv, 10))
        replayed = []
        for row in range(n, stop):
            inst = self._instances[row]
            for ci in cand_list:
                key = (ci, row)
                hit = self._replay.pop(key, None) if self._replay else None
                if hit is not None:
                    replayed.append((ci, row, hit[0], hit[1]))
                    continue
                ev = Evaluation(ci, self._candidates[ci], row, inst)
                self._pending[key] = ev
                self._unasked.append(ev)
        for ci, row, score, message in replayed:
            charge = (ci, row) not in self._replay_uncharged
            if not charge:
                self._uncharged.add((ci, row))
            self._record(ci, row, score, message, charge)

    def _register_instances(self, new: list) -> None:
        start = len(self._instances)
        self._instances.extend(new)
        if self._journal is None:
            return
        reprs = [_stable_repr(inst) for inst in new]
        known = self._stored_instance_reprs
        fresh = []
        for offset, text in enumerate(reprs):
            row = start + offset
            if row < len(known):
                if known[row] != text:
                    from racer.storage import _first_difference

                    was, now = _first_difference(known[row], text)
                    path = self._journal.path
                    raise ValueError(
                        f"`storage`={path!r} holds a race on other instances. To start over, "
                        f"pass another `storage=` path (or delete {path!r}); to continue the "
                        "journaled race, pass the instances it raced, in the same order:\n"
                        f"  instance #{row}: journal {was}, now {now}"
                    )
            else:
                fresh.append((row, text))
        if fresh:
            self._journal.record_instances(fresh)

    def _ensure_capacity(self, rows: int) -> None:
        cap = self._raw.shape[0]
        if rows <= cap:
            return
        new_cap = max(rows, 2 * cap)
        n_cand = len(self._candidates)
        for name, fill in (("_raw", np.nan), ("_oriented", np.nan), ("_failed", False)):
            old = getattr(self, name)
            grown = np.full((new_cap, n_cand), fill, dtype=old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)

    def _record(self, ci: int, row: int, score: float, message: str | None,
                charge: bool = True) -> None:
        self._n_evaluations += 1
        if not charge:
            self._n_uncharged += 1
        self._n_seen[ci] += 1
        if message is None:
            self._raw[row, ci] = score
        else:
            self._failed[row, ci] = True
            self._n_failed[ci] += 1
            self._failures.append((ci, row, message))
            self._block_failed.add(ci)
            if (
                self._fail_fast_after is not None
                and self._n_evaluations >= self._fail_fast_after
                and len(self._failures) == self._n_evaluations
            ):
                self._fail("every evaluation failed: no candidate has a usable score after "
                           f"{self._n_evaluations} evaluations", self._failures[0])
        left = self._row_remaining[row] - 1
        if left:
            self._row_remaining[row] = left
        else:
            del self._row_remaining[row]
            self._finalize_row(row)
        for listener in self._listeners:
            listener(self)

    def _fail(self, what: str, first: tuple[int, int, str]) -> None:
        ci, row, message = first
        hint = ""
        if self._journal is not None:
            hint = (" The `storage` journal keeps these failures and replays them on resume: "
                    "use a new journal once `evaluate` is fixed.")
        self._fatal = RaceFailedError(
            f"{what}. First failure: evaluation of candidate #{ci} {_clip(self._candidates[ci])} "
            f"on instance #{row} {_clip(self._instances[row])} {message}.{hint}",
            failures=self._failures,
            n_evaluations=self._n_evaluations,
        )
        self._stop_reason = "failed"
        if self._journal is not None:
            self._journal.set_meta("stop_reason", "failed")
        self._block_active = False
        self._pending.clear()
        self._unasked.clear()
        # A dead race writes nothing more: release the journal now, so that it can be
        # inspected, or the race resumed, in this process without waiting for garbage collection.
        self.close()
        raise self._fatal

    def _raise_if_failed(self) -> None:
        if self._fatal is not None:
            raise RaceFailedError(
                str(self._fatal), self._fatal.failures, self._fatal.n_evaluations
            ) from self._fatal

    def _finalize_row(self, row: int) -> None:
        cols = self._block_cands
        values = self._raw[row, cols]
        oriented = values if self._maximize else -values
        failed = self._failed[row, cols]
        if failed.any():
            oriented = oriented.copy()
            ok = oriented[~failed]
            if ok.size:
                lowest, highest = ok.min(), ok.max()
                spread = highest - lowest
                if spread <= 0:
                    spread = abs(lowest) if lowest != 0 else 1.0
                oriented[failed] = lowest - spread
            else:
                oriented[failed] = 0.0
        self._oriented[row, cols] = oriented

    def _finish_block(self) -> None:
        self._block_active = False
        n = self._block_rows[1]
        if self._block_failed and self._on_error == "eliminate":
            failed = sorted(self._block_failed)
            if len(failed) >= len(self._survivor_idx):
                first_row = self._block_rows[0]
                self._fail(
                    f"every surviving candidate failed in the block of instances "
                    f"{first_row}..{n - 1} under on_error='eliminate', so none is left to race",
                    next(f for f in self._failures if f[1] >= first_row),
                )
            for ci in failed:
                self._eliminate(ci, "failed", None, math.nan, n, step=0)
            self._journal_decisions(0, [(ci, "failed", None, math.nan) for ci in failed], n)
        if (
            n >= self._first_test
            and (n - self._first_test) % self._each_test == 0
            and len(self._survivor_idx) > 1
        ):
            self._run_test(n)

    def _run_test(self, n: int) -> None:
        self._step += 1
        step = self._step
        if step <= self._replay_tested:
            # Decided before (a resume): the journaled eliminations stand, even when this
            # race's limits differ from the journaled one's (a larger budget), so a
            # continued race keeps every candidate it eliminated and every evaluation made.
            for ci, reason, by, prob in self._replay_decisions.get(step, ()):
                if self._alive[ci]:
                    self._eliminate(ci, reason, by, prob, n, step)
            return
        survivors = self._survivor_idx
        scores = self._oriented[:n, survivors]
        rng = np.random.default_rng([self._seed, step])
        view = RaceView(
            scores,
            survivors.copy(),
            budget_left=None if self._budget is None else self._budget - self.n_charged,
            instances_left=self._instances_left(),
            each_test=self._each_test,
            n_candidates=len(self._candidates),
            step=step,
            stats=self._stats,
            # The rows' instances, for tests that use their structure (data set, fold).
            instances=self._instances[:n],
        )
        decisions = self._test.decide(view, rng)
        chosen = self._check_decisions(decisions, len(survivors))
        applied = []
        for col, reason, by_col, prob in chosen:
            ci = int(survivors[col])
            by = int(survivors[by_col])
            self._eliminate(ci, reason, by, prob, n, step)
            applied.append((ci, reason, by, prob))
        if self._journal is not None:
            self._journal.record_decisions(step, n, applied, tested=True)

    def _check_decisions(self, decisions: Any, m: int) -> list[tuple[int, str, int, float]]:
        name = type(self._test).__name__
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

    def _eliminate(
        self, ci: int, reason: str, by: int | None, prob: float, n: int, step: int
    ) -> None:
        self._alive[ci] = False
        self._survivor_idx = np.flatnonzero(self._alive)
        self._stats.survivors_changed()
        record = EliminationRecord(
            candidate=self._candidates[ci],
            candidate_index=ci,
            n_instances=n,
            reason=reason,
            by=None if by is None else self._candidates[by],
            by_index=by,
            probability=prob,
            step=step,
        )
        self._history.append(record)
        if logger.isEnabledFor(logging.INFO):
            by_text = "" if by is None else f" by #{by} {_clip(self._candidates[by])}"
            logger.info(
                "eliminated #%d %s after %d instances: %s%s (probability %.4g); %d survivors",
                ci, _clip(self._candidates[ci]), n, reason, by_text, prob,
                len(self._survivor_idx),
            )

    def _journal_decisions(self, step: int, applied: list, n: int) -> None:
        if self._journal is not None and applied:
            self._journal.record_decisions(step, n, applied)

    def _stop(self, reason: str) -> None:
        self._stop_reason = reason
        if self._journal is not None:
            self._journal.set_meta("stop_reason", reason)
        logger.info(
            "race stopped (%s) after %d instances and %d evaluations; %d survivors",
            reason, len(self._instances), self._n_evaluations, len(self._survivor_idx),
        )

    # ------------------------------------------------------------------ storage

    def _fingerprint(self, seed_spec: Any) -> dict:
        try:
            params = self._test.get_params()
        except NotImplementedError:
            params = {"repr": _stable_repr(self._test)}
        return {
            "candidates": [_stable_repr(c) for c in self._candidates],
            "test": f"{type(self._test).__module__}.{type(self._test).__qualname__}",
            "test_params": {k: _stable_repr(v) for k, v in sorted(params.items())},
            "direction": self._direction,
            "budget": self._budget,
            "max_instances": self._max_instances,
            "first_test": self._first_test,
            "each_test": self._each_test,
            "min_survivors": self._min_survivors,
            "shuffle": self._shuffle,
            "on_error": self._on_error,
            "random_state": seed_spec,
            "metadata": {str(k): _stable_repr(v) for k, v in sorted(self._metadata.items(), key=str)},
        }

    def _open_storage(self, storage: Any, random_state: Any) -> None:
        from racer.storage import Journal

        if random_state is None:
            seed_spec = None
        elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
            seed_spec = int(random_state)
        else:
            seed_spec = "generator"
        journal = Journal(storage)
        try:
            stored_seed = journal.load_seed()
            if random_state is None and stored_seed is not None:
                seed = stored_seed
            else:
                seed = seed_from_random_state(random_state)
            fingerprint = self._fingerprint(seed_spec)
            fingerprint["seed"] = str(seed)
            journaled = journal.claim(fingerprint, seed, limits=_LIMITS)
            self._replay = journal.load_evaluations()
            uncharged = journal.get_meta("uncharged")
            self._replay_uncharged = (
                {(int(c), int(r)) for c, r in ast.literal_eval(uncharged)} if uncharged else set())
            self._stored_instance_reprs = journal.load_instances()
            if journaled is not None:
                self._check_limits(journaled, journal.path)  # before anything is written
                if any(journaled.get(k) != fingerprint[k] for k in _LIMITS):
                    journal.update_fingerprint(fingerprint)
            self._replay_tested, self._replay_decisions = journal.load_decisions()
            # Not in the fingerprint (journals from before it was recorded resume unchanged):
            # the report reads the rule instead of guessing it. A race on this journal is
            # running again, so any earlier stop reason is stale until it stops anew.
            journal.set_meta("winner", self._winner)
            journal.set_meta("stop_reason", None)
        except BaseException:
            journal.close()
            raise
        self._seed = seed
        self._journal = journal

    def _check_limits(self, journaled: dict, path: str) -> None:
        """Refuse a resume whose ``budget`` or ``max_instances`` is below what the journal
        already holds; any limit at or above it continues the race (see ``storage``)."""
        spent = sum(1 for key in self._replay if key not in self._replay_uncharged)
        raced = len(self._stored_instance_reprs)
        start_over = f"to start over, pass another `storage=` path (or delete {path!r})"
        if self._budget is not None and spent > self._budget:
            raise ValueError(
                f"To continue the race journaled in `storage`={path!r}, pass budget >= {spent} "
                f"(or budget=None); {start_over}. It already spent {spent} evaluations "
                f"(its budget was {journaled.get('budget')}), more than `budget`={self._budget}."
            )
        if self._max_instances is not None and raced > self._max_instances:
            raise ValueError(
                f"To continue the race journaled in `storage`={path!r}, pass max_instances >= "
                f"{raced} (or max_instances=None); {start_over}. It already raced {raced} "
                f"instances (its max_instances was {journaled.get('max_instances')}), more than "
                f"`max_instances`={self._max_instances}."
            )

    def close(self) -> None:
        """Close the storage journal, if any, and release its writer lock (garbage collection
        and the end of the process also do it), so another race can resume the journal.

        A race with a closed journal refuses further tell(): its results could not be saved."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
            self._journal_closed = True

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

        Parameters
        ----------
        evaluate : callable
            ``evaluate(candidate, instance) -> float``. In worker processes (``n_jobs > 1``
            or ``timeout``) it is sent by value with cloudpickle, so a lambda, a closure or a
            function of a notebook or of a script without a main guard works; one that
            captures what cannot be pickled (an open file, a lock) is refused before
            anything is evaluated, with a TypeError naming it. It must also accept two
            positional arguments (checked when ``inspect.signature`` can tell).
        instances : iterable, optional
            Appended to the race's instances (see :meth:`add_instances`). A race without any
            instance at all is refused (ValueError).
        executor : concurrent.futures.Executor, optional
            Where to run evaluations (a Dask ``client.get_executor()``, Ray's, a thread pool...).
            Results are recorded as they arrive; decisions do not depend on arrival order.
            Cannot be combined with ``timeout`` (racer cannot stop work it handed to someone
            else's executor; a ValueError says so).
        n_jobs : int, optional
            Without ``executor``: 1 or None runs in this process; ``n_jobs > 1`` runs that
            many of racer's worker processes (:class:`racer.execution.WorkerPool`, one
            evaluation at a time each); -1 uses every CPU. A worker that dies (``os._exit``,
            a segfault) is recorded as a failed evaluation naming the candidate, the
            instance and the exit code or signal, and is replaced; the race goes on. Workers
            never outlive the race, even when its process is killed.
        timeout : float, optional
            Seconds one evaluation may take (None: no limit). An evaluation over its limit is
            stopped (its worker process is killed and replaced) and recorded as failed
            (``"timed out after 2.0 s"``), so ``on_error`` decides what it does. A Python
            call cannot be interrupted in this process, so with a timeout even ``n_jobs=1``
            runs in one worker process. Failures from timeouts and dead workers are
            journaled like any other (``storage``): a resumed race does not run them again.
        progress : bool, default True
            Show a progress line on stderr.
        """
        from racer.execution import check_timeout, resolve_executor, run_block
        from racer.progress import ProgressLine

        self._raise_if_failed()
        _check_evaluate(evaluate, executor)
        check_bool(progress, "progress")
        timeout = check_timeout(timeout)
        if instances is not None:
            self.add_instances(instances)
        if not self._instances and not self._has_more_instances():
            raise ValueError(
                "`instances` is empty: the race has no instance to evaluate the candidates on "
                "(pass them to run(), race(), Race(instances=...) or add_instances())"
            )
        pool, owned = resolve_executor(executor, n_jobs, evaluate, timeout)
        bar = ProgressLine(self) if progress else None
        if bar is not None:
            self._listeners.append(bar.update)
        try:
            while True:
                batch = self.ask()
                if not batch:
                    if self._stop_reason is not None:
                        break
                    # Handed out earlier but never told (an interrupted run(), a crashed
                    # ask/tell worker): evaluate them now.
                    batch = self.pending()
                run_block(
                    self, evaluate, batch, pool, raise_errors=self._on_error == "raise",
                    timeout=timeout,
                )
        finally:
            if bar is not None:
                self._listeners.remove(bar.update)
                bar.close()
            if owned:
                pool.shutdown(wait=True, cancel_futures=True)
        # The journal stays open: more instances may be added and the race continued; close()
        # (or garbage collection) releases it.
        return self.result()

    # ------------------------------------------------------------------ result

    def _complete_rows(self) -> int:
        if self._block_active:
            return self._block_rows[0]
        return len(self._instances)

    def result(self) -> RaceResult:
        """The race's outcome so far (final once :attr:`finished`).

        Raises :class:`RaceFailedError` if the race failed (no candidate has a usable score),
        and ValueError if it stopped before its first evaluation (no instances): there is no
        winner to report.
        """
        self._raise_if_failed()
        if self._n_evaluations == 0 and self._stop_reason is not None:
            raise ValueError(
                f"the race stopped ({self._stop_reason}) before any evaluation: `instances` "
                "gave none; there is no winner (add instances and continue the race)"
            )
        n_rows = len(self._instances)
        raw = self._raw[:n_rows].copy()
        oriented = self._oriented[:n_rows]
        with np.errstate(invalid="ignore"):
            counts = np.sum(~np.isnan(oriented), axis=0)
            oriented_mean = np.where(
                counts > 0, np.nansum(oriented, axis=0) / np.maximum(counts, 1), np.nan
            )
            if self._on_error == "worst":
                mean_scores = oriented_mean if self._maximize else -oriented_mean
            else:
                raw_counts = np.sum(~np.isnan(raw), axis=0)
                mean_scores = np.where(
                    raw_counts > 0, np.nansum(raw, axis=0) / np.maximum(raw_counts, 1), np.nan
                )
        survivors = self._survivor_idx
        order = self._order_survivors(survivors, oriented_mean)
        surv_sorted = survivors[order]
        eliminated = np.flatnonzero(~self._alive)
        key_mean = np.where(np.isnan(oriented_mean), -np.inf, oriented_mean)
        elim_sorted = eliminated[
            np.lexsort((eliminated, -key_mean[eliminated], -self._n_seen[eliminated]))
        ]
        # A candidate without a single usable score ranks after every one with some, and is
        # never the winner (see "Failures" in the class docstring). Stable, so the orders
        # above hold within each group; before any evaluation nothing moves.
        usable = self._n_seen > self._n_failed
        if usable.any():
            surv_sorted = np.concatenate([surv_sorted[usable[surv_sorted]],
                                          surv_sorted[~usable[surv_sorted]]])
            ranking_idx = np.concatenate([
                surv_sorted[usable[surv_sorted]], elim_sorted[usable[elim_sorted]],
                surv_sorted[~usable[surv_sorted]], elim_sorted[~usable[elim_sorted]],
            ]).astype(np.int64)
        else:
            ranking_idx = np.concatenate([surv_sorted, elim_sorted]).astype(np.int64)
        best = int(ranking_idx[0])
        if usable.any() and not usable[surv_sorted[0]]:
            warnings.warn(
                f"no survivor has a usable score (every evaluation of the {len(survivors)} "
                f"survivors failed); the winner is the best eliminated candidate with one, "
                f"#{best} {_clip(self._candidates[best])}",
                RuntimeWarning,
                stacklevel=2,
            )
        return RaceResult(
            best=self._candidates[best],
            best_index=best,
            survivors=[self._candidates[i] for i in surv_sorted],
            survivor_indices=surv_sorted.astype(np.int64),
            ranking=[self._candidates[i] for i in ranking_idx],
            ranking_indices=ranking_idx,
            candidates=list(self._candidates),
            instances=list(self._instances),
            scores=raw,
            mean_scores=np.asarray(mean_scores, dtype=np.float64),
            n_evaluated=self._n_seen.copy(),
            n_evaluations=self._n_evaluations,
            n_instances=n_rows,
            n_instances_available=self._instances_available(),
            history=tuple(self._history),
            # Sorted (instance, candidate) so the result does not depend on arrival order.
            failures=tuple(sorted(self._failures, key=lambda f: (f[1], f[0]))),
            stop_reason=self._stop_reason or "running",
            maximize=self._maximize,
            budget=self._budget,
            seed=self._seed,
        )

    def _instances_available(self) -> int | None:
        if self._n_available is None:
            # An endless or unsized source: only max_instances bounds what could be raced.
            return self._max_instances
        total = max(self._n_available, len(self._instances))
        return total if self._max_instances is None else min(total, self._max_instances)

    def _order_survivors(self, survivors: np.ndarray, oriented_mean: np.ndarray) -> np.ndarray:
        rows = self._complete_rows()
        if self._winner in ("mean_rank", "rank_sum") and rows > 0 and len(survivors) > 1:
            # Rank sums over the same rows for every survivor: the mean rank orders alike.
            key = block_ranks(self._oriented[:rows, survivors]).sum(axis=0)
            return np.lexsort((np.arange(len(survivors)), key))
        key = oriented_mean[survivors]
        key = np.where(np.isnan(key), -np.inf, key)
        return np.lexsort((np.arange(len(survivors)), -key))

    def __repr__(self) -> str:
        state = self._stop_reason or "running"
        return (
            f"Race({len(self._candidates)} candidates, {len(self._survivor_idx)} survivors, "
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
    n_jobs=..., timeout=..., progress=...)`` (see :meth:`Race.run` for ``timeout``). See :class:`Race` for the options (``test``, ``direction``,
    ``budget``, ``max_instances``, ``first_test``, ``each_test``, ``min_survivors``,
    ``shuffle``, ``on_error``, ``winner``, ``random_state``, ``storage``). A DataFrame of
    ``candidates`` or ``instances`` is one item per row (a dict of its column values); a dict
    is refused with what to pass instead.

    >>> from racer.racing.base import Elimination, RacingTest
    >>> class KeepAll(RacingTest):
    ...     def decide(self, view, rng):
    ...         return []
    ...     def get_params(self):
    ...         return {}
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
