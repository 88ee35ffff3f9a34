"""The F-race baseline as a racing test: Friedman gate, then post-hoc eliminations.

Three post-hoc procedures, chosen with ``post_hoc``:

* ``"conover"`` -- irace's F-race (irace 3.5, ``aux2.friedman`` / ``aux_friedman``, read in
  irace's R sources): Friedman chi-square with the tie correction at level ``alpha``; if
  it rejects, every candidate whose rank sum exceeds the best one's by more than Conover's
  ``t* = t_{1-alpha/2, (n-1)(k-1)} sqrt(2 (n A - sum_j R_j^2) / ((n-1)(k-1)))`` goes
  (``A`` = sum of squared ranks). With two survivors irace drops a candidate that is no better
  on any instance, else runs a paired Wilcoxon signed-rank test and drops the one with the
  worse Hodges-Lehmann pseudo-median when ``p < alpha``.
* ``"sign"`` -- F-Race_S of Benavoli et al. (2015) §7.1: for every pair the one-sided sign test in the
  direction of more wins (directional, Benavoli et al. 2015 §3) at level ``alpha``, no family-wise
  correction; the loser of every significant pair goes.
* ``"mean_ranks"`` -- F-Race_MR of Benavoli et al. (2015) §7.1: the mean-ranks z-test
  ``z = (R_i - R_j)/sqrt(m(m+1)/(6n))``, one-sided at ``alpha``, uncorrected. Because ``z`` is
  monotone in the mean rank, "every pair" and "each against the best" eliminate the same set.

``gate=True`` applies the Friedman test first at every step, as the seed's text says (for
"sign" and "mean_ranks" also with two survivors, where Friedman reduces to a two-sided sign
test); ``gate=False`` runs the post-hoc alone. ``benchmarks/results/paper_racing.md`` measures both.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# The formulas are racer.stats' (which imports SciPy), imported when the test first decides:
# `racer --help`, a scenario mistake or a budget too small to race, which construct this test
# but never decide, answer without SciPy.

from racer._validation import check_bool, check_option, check_probability
from racer.racing.base import Elimination, RacingTest, check_view

__all__ = ["FRaceTest"]


def _hodges_lehmann(d):
    """Median of the Walsh averages ``(d_i + d_j)/2, i <= j``."""
    i, j = np.triu_indices(len(d))
    return float(np.median((d[i] + d[j]) / 2.0))


@dataclasses.dataclass(eq=False)
class FRaceTest(RacingTest):
    """F-race: Friedman test at ``alpha``, then post-hoc eliminations (irace / Benavoli et al. 2015 §7.1).

    Parameters
    ----------
    alpha : float, default 0.05
        Level of the Friedman test and of every post-hoc comparison (no multiplicity
        correction, as in irace and in Benavoli et al. 2015 §7.1).
    post_hoc : {"conover", "sign", "mean_ranks"}, default "conover"
        irace's F-race, F-Race_S or F-Race_MR (see the module docstring).
    gate : bool, default True
        Apply the Friedman test before the post-hoc at every step. irace always gates with
        three or more survivors and uses its own two-survivor rule.

    Notes
    -----
    ``Elimination.probability`` holds the post-hoc p-value (the one-sided p for "sign" and
    "mean_ranks", the Wilcoxon p with two survivors, 0 for the "no better anywhere" rule) and,
    for "conover" with three or more survivors, the Friedman p-value that opened the gate.
    The sign test drops tied instances and uses the exact binomial tail.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.racing.frace import FRaceTest
    >>> from racer.racing.base import RaceView
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal([0.0, 0.0, 2.0], 1.0, size=(15, 3))
    >>> out = FRaceTest().decide(RaceView.from_scores(scores, np.arange(3)), rng)
    >>> sorted(e.index for e in out)
    [0, 1]
    """

    #: irace orders its survivors by rank sum (``overall.ranks()``), so the race's winner is
    #: irace's elite unless the race's own ``winner`` option says otherwise.
    winner = "rank_sum"
    elimination_statistic = "p-value"  # the post-hoc p (or the Friedman gate's)

    alpha: float = 0.05
    post_hoc: str = "conover"
    gate: bool = True

    def __post_init__(self):
        self.alpha = check_probability(self.alpha, "alpha")
        self.post_hoc = check_option(self.post_hoc, "post_hoc", ("conover", "sign", "mean_ranks"))
        self.gate = check_bool(self.gate, "gate")

    def decide(self, view, rng) -> list[Elimination]:
        """Eliminations warranted by ``view.scores`` (n_instances, n_survivors), larger better."""
        check_view(view)
        n, m = view.scores.shape
        if m < 2 or n < 2:
            return []
        if self.post_hoc == "conover" and m == 2:
            return self._irace_two(view.scores)
        from racer.stats import friedman_from_sums

        rank_sums = view.rank_sums
        sum_sq = float(view.rank_sq_sums.sum())
        # irace's tie-corrected Friedman chi-square, from the race's rank sums.
        pvalue = friedman_from_sums(rank_sums, sum_sq, n).pvalue
        if self.gate and not pvalue < self.alpha:
            return []
        if self.post_hoc == "conover":
            return self._rank_sum_post_hoc(rank_sums, sum_sq, n, pvalue)
        if self.post_hoc == "sign":
            return self._sign(view.greater)
        return self._mean_ranks(rank_sums, n)

    def _rank_sum_post_hoc(self, rank_sums, sum_sq, n, pvalue):
        from racer.stats import conover_from_sums

        # irace: every candidate whose rank sum exceeds the best one's by more than t*.
        threshold = conover_from_sums(rank_sums, sum_sq, n).critical_difference(self.alpha)
        best = int(np.argmin(rank_sums))  # first of equal rank sums, as R's order()
        worse = np.flatnonzero(rank_sums - rank_sums[best] > threshold)
        return [Elimination(int(i), "dominated", best, float(pvalue)) for i in worse]

    def _irace_two(self, scores):
        x, y = scores[:, 0], scores[:, 1]
        if np.all(x >= y):
            return [Elimination(1, "dominated", 0, 0.0)]
        if np.all(y >= x):
            return [Elimination(0, "dominated", 1, 0.0)]
        from racer.stats import wilcoxon

        # R's wilcox.test(x, y, paired = TRUE), as irace calls it.
        p = wilcoxon(x, y, zero_method="wilcox", correction=True, method="R").pvalue
        if not p < self.alpha:
            return []
        location = _hodges_lehmann(x - y)
        if location > 0:
            return [Elimination(1, "dominated", 0, p)]
        if location < 0:
            return [Elimination(0, "dominated", 1, p)]
        return []

    def _sign(self, greater):
        from racer.stats import sign_test_from_counts

        m = greater.shape[0]
        i, j = np.triu_indices(m, k=1)
        wins_i, wins_j = greater[i, j], greater[j, i]
        big = np.maximum(wins_i, wins_j)
        # Directional one-sided p-value: P(Bin(N, 1/2) >= max wins), ties dropped.
        _, p, _ = sign_test_from_counts(big, wins_i + wins_j - big, 0, alternative="greater",
                                        ties="drop")
        hit = (p < self.alpha) & (wins_i != wins_j)
        loser = np.where(wins_i > wins_j, j, i)[hit]
        winner = np.where(wins_i > wins_j, i, j)[hit]
        p = p[hit]
        # One elimination per loser, recorded against its most significant winner.
        order = np.lexsort((p, loser))
        first = np.ones(len(order), dtype=bool)
        first[1:] = loser[order][1:] != loser[order][:-1]
        pick = order[first]
        return [
            Elimination(int(loser[k]), "dominated", int(winner[k]), float(p[k])) for k in pick
        ]

    def _mean_ranks(self, rank_sums, n):
        from racer.stats import mean_ranks_test_from_sums

        res = mean_ranks_test_from_sums(rank_sums, n, alternative="greater")
        best = int(np.argmin(res.mean_ranks))
        # One-sided p of "the best is better than j" (the diagonal's p = 1 keeps the best).
        p = res.pvalue[best]
        worse = np.flatnonzero(p < self.alpha)
        return [Elimination(int(i), "dominated", best, float(p[i])) for i in worse]
