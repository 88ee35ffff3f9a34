"""irace's t-test races (``testType = "t-test"``, ``"t-test-bonferroni"``, ``"t-test-holm"``).

Birattari (2009, *Tuning Metaheuristics*, §4.4) calls them tNo-, tBo- and tHo-race: after
each block, every survivor is compared with the one of smallest mean cost by a two-sided
paired t-test, with no multiplicity correction, Bonferroni's or Holm's. The rule is irace 3.5's
``aux.ttest`` (``Rscript -e 'print(irace:::aux.ttest)'``), step for step:

1. ``best`` = the survivor of smallest mean cost (the first one on ties, as ``which.min``);
2. ``p = 1`` for every survivor whose mean equals the best's (R's ``all.equal``: relative
   difference at most ``sqrt(eps)``), ``p = 0`` for the others;
3. a survivor with ``p = 0`` keeps it (is eliminated whatever the level) if the best's or its
   own costs have a variance below ``10 eps``, or if the best costs no more on every
   instance; otherwise ``p`` is the paired t-test's two-sided p-value (``t.test`` refusing
   "essentially constant" differences leaves it at 0 too);
4. ``p.adjust(p, method)`` (:func:`racer.stats.p_adjust`) over all survivors (the best and
   its equals included, with p = 1); survivors with an adjusted ``p < alpha``
   (``1 - confidence``) go.

irace uses the same rule with two survivors (no Wilcoxon special case, unlike its F-race), and
orders its survivors and elites by mean cost (``overall.ranks``: ``rank(colMeans(y))``), hence
``winner = "mean"``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from racer._validation import check_option, check_probability
from racer.racing.base import Elimination, RacingTest, check_view

__all__ = ["TRaceTest"]

_EPS = np.finfo(np.float64).eps


def _all_equal(target, current):
    """R's ``isTRUE(all.equal.numeric(target, current))`` for scalars, vectorised on current."""
    tolerance = np.sqrt(_EPS)
    diff = np.abs(target - current)
    scale = abs(target)
    if scale > tolerance:
        diff = diff / scale
    return diff <= tolerance


@dataclasses.dataclass(eq=False)
class TRaceTest(RacingTest):
    """irace's t-test race (tNo-, tBo-, tHo-race of Birattari 2009; irace 3.5 ``aux.ttest``).

    Parameters
    ----------
    alpha : float, default 0.05
        Level of the tests (irace's ``1 - confidence``), applied to the adjusted p-values.
    adjust : {"none", "bonferroni", "holm"}, default "none"
        Multiplicity correction over the survivors (R's ``p.adjust``): irace's ``testType``
        ``"t-test"``, ``"t-test-bonferroni"`` or ``"t-test-holm"``.

    Notes
    -----
    See the module docstring for the rule. ``Elimination.probability`` is the adjusted
    p-value (0 for a survivor eliminated without a t-test: a constant column, or the best
    costing no more on any instance) and ``by`` the survivor of smallest mean cost. With one
    instance (no variance yet) nothing is eliminated; irace never tests that early.

    References
    ----------
    .. [1] Birattari, M. (2009). Tuning Metaheuristics: A Machine Learning Perspective. Studies
       in Computational Intelligence 197, Springer.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.racing.trace import TRaceTest
    >>> from racer.racing.base import RaceView
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal([0.0, 0.0, 2.0], 1.0, size=(15, 3))  # larger is better
    >>> out = TRaceTest(adjust="holm").decide(RaceView.from_scores(scores), rng)
    >>> [(e.index, e.by) for e in out]
    [(0, 2), (1, 2)]
    """

    #: irace orders a t-test race's survivors, and its elites, by mean cost.
    winner = "mean"
    elimination_statistic = "p-value"  # the adjusted p of the paired t-test

    alpha: float = 0.05
    adjust: str = "none"

    def __post_init__(self):
        self.alpha = check_probability(self.alpha, "alpha")
        self.adjust = check_option(self.adjust, "adjust", ("none", "bonferroni", "holm"))

    def decide(self, view, rng) -> list[Elimination]:
        """Eliminations warranted by ``view.scores`` (n_instances, n_survivors), larger better."""
        check_view(view)
        n, m = view.scores.shape
        if m < 2 or n < 2:
            return []
        p, best = _pvalues(-view.scores, self.adjust)
        worse = np.flatnonzero(p < self.alpha)
        return [Elimination(int(j), "dominated", best, float(p[j])) for j in worse]

    def pvalues(self, costs):
        """Adjusted p-values of the columns of ``costs`` (n_instances >= 2, n_survivors; a
        cost, smaller is better) against the column of smallest mean: ``aux.ttest``'s before
        its comparison with ``alpha``. The best column and its equals get 1.

        >>> costs = [[1.0, 2.0, 0.5], [2.0, 3.5, 2.5], [1.5, 2.5, 2.5], [1.0, 2.0, 1.5]]
        >>> TRaceTest(adjust="holm").pvalues(costs).round(4).tolist()  # column 1: never better
        [1.0, 0.0, 0.6379]
        """
        costs = np.asarray(costs, dtype=np.float64)
        if costs.ndim != 2 or costs.shape[0] < 2 or not np.all(np.isfinite(costs)):
            raise ValueError(
                f"`costs` must be a finite (n_instances >= 2, n_survivors) matrix; got shape "
                f"{costs.shape}"
            )
        return _pvalues(costs, self.adjust)[0]


def _pvalues(costs, adjust):
    """``(adjusted p-values, best column)`` of a valid cost matrix (see the module docstring)."""
    means = costs.mean(axis=0)
    best = int(np.argmin(means))
    p = np.where(_all_equal(means[best], means), 1.0, 0.0)
    var = costs.var(axis=0, ddof=1)
    x = costs[:, [best]]
    d = x - costs
    # p stays 0 (eliminated) without a test: a (near-)constant column, or a best that
    # costs no more anywhere; R's t.test also refuses differences that are "essentially
    # constant" (stderr < 10 eps |mean difference|), which irace's try() turns into p = 0.
    d_mean = d.mean(axis=0)
    stderr = np.sqrt(d.var(axis=0, ddof=1) / costs.shape[0])
    test = ((p < 1) & (np.minimum(var[best], var) >= 10 * _EPS)
            & ~np.all(x <= costs, axis=0) & (stderr >= 10 * _EPS * np.abs(d_mean)))
    if test.any():
        # Imported here: a scenario mistake or a too small budget answers without SciPy.
        from scipy import stats

        cols = np.flatnonzero(test)
        p[cols] = stats.ttest_rel(np.broadcast_to(x, (costs.shape[0], cols.size)),
                                  costs[:, cols], axis=0).pvalue
    if adjust != "none":
        from racer.stats import p_adjust

        p = p_adjust(p, adjust)
    return p, best
