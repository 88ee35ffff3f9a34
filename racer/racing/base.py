"""The interface between the race engine and the statistical test that eliminates candidates.

The engine (:mod:`racer.engine`) owns the loop, the budget, the bookkeeping and the per-race
incremental statistics (it alone knows when rows arrive and survivors change); a racing test
is a configuration plus a decision rule: it reads a :class:`RaceView` of the survivors and says
who goes. Keeping that boundary narrow is what lets the Bayesian test
(:mod:`racer.racing.bayesian`) and the F-race baseline (:mod:`racer.racing.frace`) run on the
very same loop, and what lets one test object serve many races.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import numpy as np

__all__ = ["Elimination", "KeepAll", "ProtectElites", "RaceView", "RacingTest", "check_view"]


@dataclasses.dataclass(frozen=True)
class Elimination:
    """One decision of a racing test.

    Attributes
    ----------
    index : int
        Column, in the score matrix passed to :meth:`RacingTest.decide`, of the candidate to
        eliminate.
    reason : str
        ``"dominated"`` (worse than ``by``) or ``"indistinguishable"`` (practically
        equivalent to ``by``, which is better or kept).
    by : int
        Column of the candidate that beat or matched it.
    probability : float
        The number behind the decision: a posterior probability for Bayesian tests, a
        p-value for frequentist ones.
    """

    index: int
    reason: str
    by: int
    probability: float


class RaceView:
    """What a racing test sees at one step: the survivors' scores and what the race can still pay.

    The engine builds one per test step; tests never keep it. Statistics that the engine
    maintains incrementally (``greater``, ``ranks``, ``rank_sums``, ``rank_sq_sums``,
    ``rank_outer``; :mod:`racer._race_stats`) are taken from ``stats`` when the engine provides
    it and computed afresh otherwise, so a view built with :meth:`from_scores` (tests,
    benchmarks, direct use) gives the same numbers as one built by a race (bit for bit: they
    are sums of integers and of multiples of 1/4).

    Attributes
    ----------
    scores : ndarray of shape (n_instances, n_survivors), float64
        Every instance seen so far (rows, in race order) for every survivor (columns), finite
        and oriented so that larger is better (the engine negates minimised scores).
    ids : ndarray of shape (n_survivors,), int64
        Stable identifiers of the survivors (their index in the race's candidate list).
    budget_left : int or None
        Evaluations the race may still spend after this step (None: no budget).
    instances_left : int or None
        Instances still available after the ones in ``scores`` (None: unknown or endless).
    each_test : int
        Instances per block after this step.
    n_candidates : int
        Candidates the race started with.
    step : int
        Test step number, from 1.
    instances : sequence or None
        The instances of the rows of ``scores``, in the same order (the race's own instance
        objects), or None when unknown (a view built from scores alone). Tests that need the
        structure of the instances -- e.g. :class:`racer.HierarchicalRacingTest`, for which
        an instance is a (data set, fold) pair -- read it here; most tests ignore it.
    objectives : ndarray of shape (n_instances, n_survivors, k), float64, or None
        In a race on k >= 2 objectives (``direction`` a list), every objective's scores,
        larger is better on each (``scores`` is then the first objective); None otherwise.
        :class:`racer.ParetoTest` reads it.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """

    __slots__ = ("scores", "ids", "budget_left", "instances_left", "each_test", "n_candidates",
                 "step", "instances", "objectives", "_stats", "_greater", "_ranks", "_rank_sums", "_rank_sq_sums",
                 "_rank_outer")

    def __init__(self, scores, ids, *, budget_left=None, instances_left=None, each_test=1,
                 n_candidates=None, step=1, stats=None, instances=None, objectives=None):
        self.scores = scores
        self.objectives = objectives
        self.instances = instances
        self.ids = ids
        self.budget_left = budget_left
        self.instances_left = instances_left
        self.each_test = each_test
        self.n_candidates = scores.shape[1] if n_candidates is None else n_candidates
        self.step = step
        self._stats = stats
        self._greater = None
        self._ranks = None
        self._rank_sums = None
        self._rank_sq_sums = None
        self._rank_outer = None

    @classmethod
    def from_scores(cls, scores, ids=None, *, budget_left=None, instances_left=None,
                    each_test=1, n_candidates=None, step=1, instances=None):
        """A view of a plain score matrix (larger is better), outside any race.

        ``instances``, when given, names the instance of each row (one per row). A 3-D
        ``scores`` (n_instances, n_survivors, k >= 2) is a race on k objectives, larger is
        better on each: it becomes :attr:`objectives`, and its first objective ``scores``.

        >>> import numpy as np
        >>> view = RaceView.from_scores([[1.0, 2.0, 2.0], [3.0, 1.0, 2.0]])
        >>> view.greater.tolist()
        [[0, 1, 1], [1, 0, 0], [1, 1, 0]]
        >>> view.ranks.tolist()
        [[3.0, 1.5, 1.5], [1.0, 3.0, 2.0]]
        """
        from racer._validation import as_score_matrix, check_int

        objectives = None
        if np.ndim(scores) == 3 and np.shape(scores)[2] >= 2:
            from racer.stats.pareto import as_objective_scores

            objectives = as_objective_scores(scores, "scores", min_candidates=1)
            scores = objectives[:, :, 0]
        scores, _ = as_score_matrix(scores, "scores", min_blocks=1, min_candidates=1)
        m = scores.shape[1]
        if ids is None:
            ids = np.arange(m, dtype=np.int64)
        else:
            ids = np.asarray(ids)
            if ids.shape != (m,) or not np.issubdtype(ids.dtype, np.integer):
                raise ValueError(
                    f"`ids` must hold one integer per column of `scores` ({m}); got {ids!r}"
                )
            ids = ids.astype(np.int64)
            if np.unique(ids).size != m:
                # Tests cache counts by id: a repeated id would merge two candidates.
                raise ValueError(f"`ids` must not repeat a candidate; got {ids.tolist()}")
        for name, value in (("budget_left", budget_left), ("instances_left", instances_left)):
            check_int(value, name, minimum=0, allow_none=True)
        check_int(each_test, "each_test", minimum=1)
        check_int(step, "step", minimum=1)
        check_int(n_candidates, "n_candidates", minimum=m, allow_none=True)
        if instances is not None:
            if isinstance(instances, (str, bytes)):
                raise TypeError(f"`instances` must be a sequence of instances; got {instances!r}")
            try:
                instances = list(instances)
            except TypeError as exc:
                raise TypeError(
                    f"`instances` must be a sequence of instances; got {instances!r}"
                ) from exc
            if len(instances) != scores.shape[0]:
                raise ValueError(
                    f"`instances` must name one instance per row of `scores` "
                    f"({scores.shape[0]}); got {len(instances)}"
                )
        return cls(scores, ids, budget_left=budget_left, instances_left=instances_left,
                   each_test=each_test, n_candidates=n_candidates, step=step,
                   instances=instances, objectives=objectives)

    def with_scores(self, scores) -> "RaceView":
        """The same step with other scores of the same shape (e.g. rounded to a resolution);
        statistics are then recomputed from them, not taken from the engine."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != self.scores.shape:
            raise ValueError(
                f"`scores` must keep the shape {self.scores.shape}; got {scores.shape}"
            )
        return RaceView(scores, self.ids, budget_left=self.budget_left,
                        instances_left=self.instances_left, each_test=self.each_test,
                        n_candidates=self.n_candidates, step=self.step,
                        instances=self.instances, objectives=self.objectives)

    @property
    def n_instances(self) -> int:
        return self.scores.shape[0]

    @property
    def n_survivors(self) -> int:
        return self.scores.shape[1]

    @property
    def greater(self) -> np.ndarray:
        """``greater[i, j]``: instances on which survivor i scores strictly more than j (int64)."""
        if self._greater is None:
            if self._stats is not None:
                self._greater = self._stats.greater(self.scores, self.ids)
            else:
                from racer.stats.bayesian_sign import SignCounts

                self._greater = np.array(SignCounts.from_scores(self.scores).wins)
        return self._greater

    @property
    def ranks(self) -> np.ndarray:
        """Within-instance ranks among the survivors, 1 = best, ties averaged (n, m) (Demšar's
        convention, as :func:`racer.stats.friedman`)."""
        if self._ranks is None:
            if self._stats is not None:
                self._ranks = self._stats.ranks(self.scores, self.ids)
            else:
                from racer.stats._ranks import block_ranks

                self._ranks = block_ranks(self.scores)
        return self._ranks

    @property
    def rank_sums(self) -> np.ndarray:
        """Per-survivor sums of :attr:`ranks` over the instances (m,), float64 (Friedman's
        ``R_j``; the smallest is the best)."""
        if self._rank_sums is None:
            if self._stats is not None:
                self._rank_sums = self._stats.rank_sums(self.scores, self.ids)
            else:
                self._rank_sums = self.ranks.sum(axis=0)
        return self._rank_sums

    @property
    def rank_sq_sums(self) -> np.ndarray:
        """Per-survivor sums of squared :attr:`ranks` (m,): Conover's ``A`` is their total,
        and ``12 (n m (m+1)(2m+1)/6 - A)`` is Friedman's tie term ``sum (t^3 - t)``."""
        if self._rank_sq_sums is None:
            if self._stats is not None:
                self._rank_sq_sums = self._stats.rank_sq_sums(self.scores, self.ids)
            else:
                ranks = self.ranks
                self._rank_sq_sums = np.einsum("ij,ij->j", ranks, ranks)
        return self._rank_sq_sums

    @property
    def rank_outer(self) -> np.ndarray:
        """``sum_l r_l r_l'`` over the instances (m, m): with :attr:`rank_sums`, the
        sufficient statistics of the Bayesian Friedman posterior (Benavoli et al. 2015, eq. 16-17)."""
        if self._rank_outer is None:
            if self._stats is not None:
                self._rank_outer = self._stats.rank_outer(self.scores, self.ids)
            else:
                ranks = self.ranks
                self._rank_outer = ranks.T @ ranks
        return self._rank_outer

    def blocks_affordable(self) -> int | None:
        """Further blocks of ``each_test`` instances the race can pay for with the current
        survivors (None when neither a budget nor the instances bound it)."""
        bounds = []
        if self.budget_left is not None:
            bounds.append(self.budget_left // (self.n_survivors * self.each_test))
        if self.instances_left is not None:
            bounds.append(self.instances_left // self.each_test)
        return min(bounds) if bounds else None

    def __repr__(self) -> str:
        return (
            f"RaceView({self.n_instances} instances x {self.n_survivors} survivors, step "
            f"{self.step}, budget_left={self.budget_left}, instances_left={self.instances_left})"
        )


class RacingTest(abc.ABC):
    """Decides, after a block, which survivors leave the race.

    Subclasses implement :meth:`decide`. A test is a configuration plus a decision rule: it
    keeps no state between calls (incremental statistics belong to the engine and reach the
    test through the :class:`RaceView`), so one test object can serve many races, and its
    decisions depend only on the arguments -- which is what makes a resumed race end exactly
    like an uninterrupted one.

    A test may also set the class attribute ``winner`` (``"mean"``, ``"mean_rank"`` or
    ``"rank_sum"``) to say how the winner is picked among several survivors when the race's
    own ``winner`` option is left unset.
    """

    #: How this test prefers the winner to be picked (None: the engine's default, "mean").
    winner = None
    #: What it reads: ``"single"`` one score per cell (``view.scores``), ``"multi"`` a race
    #: on several objectives (``view.objectives``), ``"any"`` either. A race refuses a test
    #: that cannot read its scores.
    objectives = "single"
    #: What the ``probability`` of its :class:`Elimination` records is, for a reader of its
    #: races (:mod:`racer.report` labels the numbers by it): ``"posterior probability"`` or
    #: ``"p-value"``. A wrapper that passes on the decisions of the test it holds as
    #: ``inner`` (and journals it as ``get_params()["inner"]``) says None: the inner test's.
    elimination_statistic = "posterior probability"

    @abc.abstractmethod
    def decide(self, view: RaceView, rng: np.random.Generator) -> list[Elimination]:
        """Return the eliminations warranted at this step.

        Parameters
        ----------
        view : RaceView
            The survivors' scores so far (``view.scores``, shape (n_instances, n_survivors),
            finite, larger is better), their ids, what the race can still spend
            (``budget_left``, ``instances_left``, ``blocks_affordable()``) and the statistics
            the engine keeps incrementally (``greater``, ``ranks``, ``rank_sums``, ...).
        rng : numpy.random.Generator
            Random stream for this test step, derived by the engine from the race seed and
            the step number, never shared with other steps.

        Returns
        -------
        list of Elimination
            Columns of ``view.scores`` to eliminate, each with its reason, the column that
            beat or matched it and the probability behind the decision.
        """

    def get_params(self) -> dict[str, Any]:
        """Options that change decisions, stored in a journal to refuse a mismatched resume.

        Dataclass subclasses get this for free (fields declared with ``compare=False``, such
        as caches, are left out); others must override it.
        """
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare}
        raise NotImplementedError(f"{type(self).__name__} must implement get_params()")


class ProtectElites(RacingTest):
    """irace's elitist protection (``elitist = 1``) around any racing test.

    The first ``n_elites`` candidates by id (the previous iteration's elites) cannot be
    eliminated while the race is on its first ``until`` instances: up to there the new
    candidates are catching up on instances the elites already won their place on. The inner
    test still sees every survivor, so the others are judged against the elites exactly as
    irace does; only the elites' own eliminations are held back. The one implementation
    shared by the irace-style CLI (:mod:`racer.tuning.tuner`) and the Optuna adapter's
    :class:`~racer.adapters.optuna.IteratedRace`.

    Parameters
    ----------
    inner : RacingTest
        The test that decides; its ``winner`` rule is kept.
    n_elites : int >= 0
        Candidates with ids ``0 .. n_elites - 1`` are the elites (``0``: nothing protected).
    until : int >= 0
        Number of instances (rows of the race) before which the elites are protected.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.racing.base import Elimination, ProtectElites, RaceView, RacingTest
    >>> class DropAllButFirst(RacingTest):
    ...     def decide(self, view, rng):
    ...         return [Elimination(j, "dominated", 0, 1.0) for j in range(1, len(view.ids))]
    ...     def get_params(self):
    ...         return {}
    >>> test = ProtectElites(DropAllButFirst(), n_elites=2, until=4)
    >>> ids = np.array([2, 1, 0, 3])
    >>> early = RaceView.from_scores(np.zeros((3, 4)), ids)
    >>> sorted(int(ids[e.index]) for e in test.decide(early, np.random.default_rng(0)))
    [3]
    >>> late = RaceView.from_scores(np.zeros((4, 4)), ids)
    >>> sorted(int(ids[e.index]) for e in test.decide(late, np.random.default_rng(0)))
    [0, 1, 3]
    """

    elimination_statistic = None  # the wrapped test's

    def __init__(self, inner: RacingTest, n_elites: int, until: int) -> None:
        from racer._validation import check_int

        if not isinstance(inner, RacingTest):
            raise TypeError(f"`inner` must be a racer.racing.base.RacingTest; got {inner!r}")
        self.inner = inner
        self.n_elites = check_int(n_elites, "n_elites", minimum=0)
        self.until = check_int(until, "until", minimum=0)
        self.winner = getattr(inner, "winner", None)
        self.objectives = getattr(inner, "objectives", "single")

    def decide(self, view: RaceView, rng: np.random.Generator) -> list[Elimination]:
        decisions = self.inner.decide(view, rng)
        if view.scores.shape[0] >= self.until or self.n_elites == 0:
            return decisions
        return [d for d in decisions if int(view.ids[d.index]) >= self.n_elites]

    def get_params(self) -> dict[str, Any]:
        try:
            inner = self.inner.get_params()
        except NotImplementedError:
            inner = {"repr": repr(self.inner)}
        return {"inner": f"{type(self.inner).__qualname__}{sorted(inner.items())}",
                "n_elites": self.n_elites, "until": self.until}

def check_view(view: Any, name: str = "view") -> None:
    """Check the first argument of ``RacingTest.decide``: a :class:`racer.racing.base.RaceView`.

    A bare score matrix (the pre-RaceView calling convention) would otherwise fail deep inside
    with "'numpy.ndarray' object has no attribute 'scores'".
    """
    if not isinstance(view, RaceView):
        raise TypeError(
            f"`{name}` must be a racer.racing.base.RaceView (build one from a score matrix "
            f"with RaceView.from_scores(scores, ids)); got {type(view).__name__}"
        )


class KeepAll(RacingTest):
    """A racing test that eliminates nothing: every candidate runs on every instance.

    The command line's test phase runs its elites with it, and the adapters race with it when
    they have fewer instances than ``first_test`` (a plain grid search), since
    :class:`racer.engine.Race` refuses a first block shorter than ``first_test``.

    >>> import numpy as np
    >>> KeepAll().decide(RaceView.from_scores(np.eye(3), np.arange(3)), None)
    []
    """

    objectives = "any"

    def decide(self, view: Any, rng: np.random.Generator) -> list:
        return []

    def get_params(self) -> dict:
        return {}
