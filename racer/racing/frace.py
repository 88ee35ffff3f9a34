"""The F-race baseline as a racing test: Friedman gate, then post-hoc eliminations.

Three post-hoc procedures, chosen with ``post_hoc``:

* ``"conover"`` -- irace's F-race (irace 3.5, ``aux2.friedman`` / ``aux_friedman``, read in
  ``notes/irace-frace.md``): Friedman chi-square with the tie correction at level ``alpha``; if
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
test); ``gate=False`` runs the post-hoc alone. ``notes/racing-experiment.md`` measures both.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# SciPy is imported by the functions that compute p-values: `racer --help`, a scenario mistake
# or a budget too small to race, which construct this test but never decide, answer without it.

from racer._validation import (
    as_score_matrix,
    check_bool,
    check_option,
    check_probability,
)
from racer.racing.base import Elimination, RacingTest, check_view
from racer.stats._ranks import block_ranks, tie_group_sizes_term

__all__ = ["FRaceTest", "friedman_chi2", "conover_threshold"]


def _ranks_best_first(scores):
    """Within-row ranks, 1 = largest score, ties averaged (irace ranks costs, 1 = lowest)."""
    return block_ranks(scores)


def friedman_chi2(scores):
    """Friedman chi-square with the tie correction, as irace computes it.

    ``T = 12 sum_j (R_j - n(k+1)/2)^2 / (n k (k+1) - sum_i sum_g (u_ig^3 - u_ig)/(k-1))``,
    ``p = P(chi2_{k-1} > T)``. Returns ``(T, p, rank_sums)`` with rank 1 = best (largest);
    ``T`` and ``p`` are NaN when every row is fully tied.

    >>> import numpy as np
    >>> t, p, r = friedman_chi2(np.array([[3., 2., 1.], [3., 1., 2.], [3., 2., 1.]]))
    >>> round(t, 4), r.tolist()
    (4.6667, [3.0, 7.0, 8.0])
    """
    scores, _ = as_score_matrix(scores, "scores", min_blocks=1)
    n, k = scores.shape
    ranks = _ranks_best_first(scores)
    rank_sums = ranks.sum(axis=0)
    stat, pvalue = _friedman_from_sums(rank_sums, tie_group_sizes_term(scores), n, k)
    return stat, pvalue, rank_sums


def conover_threshold(ranks, alpha):
    """Conover's critical rank-sum difference ``t*`` for the Friedman test (irace's form).

    ``t* = qt(1 - alpha/2, (n-1)(k-1)) sqrt(2 (n A - sum_j R_j^2) / ((n-1)(k-1)))`` with
    ``A = sum_ij r_ij^2`` and ``R_j`` the rank sums of ``ranks`` (n, k), n >= 2.

    >>> round(conover_threshold([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0]], 0.05), 4)
    6.0849
    """
    from scipy import stats

    ranks, _ = as_score_matrix(ranks, "ranks")
    alpha = check_probability(alpha, "alpha")
    n, k = ranks.shape
    dof = (n - 1) * (k - 1)
    sum_sq = float(np.sum(ranks**2))
    rank_sums = ranks.sum(axis=0)
    spread = 2.0 * (n * sum_sq - float(np.sum(rank_sums**2))) / dof
    return float(stats.t.ppf(1.0 - alpha / 2.0, dof) * np.sqrt(max(spread, 0.0)))


def _friedman_from_sums(rank_sums, ties, n, k):
    from scipy import special

    denom = n * k * (k + 1) - ties / (k - 1)
    if denom <= 1e-9 * n * k * (k + 1):
        return float("nan"), float("nan")
    stat = 12.0 * float(np.sum((rank_sums - n * (k + 1) / 2.0) ** 2)) / denom
    return stat, float(special.chdtrc(k - 1, stat))


def _hodges_lehmann(d):
    """Median of the Walsh averages ``(d_i + d_j)/2, i <= j``."""
    i, j = np.triu_indices(len(d))
    return float(np.median((d[i] + d[j]) / 2.0))


_SIGNRANK_CDF = {}


def _signrank_cdf(n):
    """Exact null CDF of the Wilcoxon signed-rank statistic W+ for n untied nonzero pairs."""
    if n not in _SIGNRANK_CDF:
        counts = np.zeros(n * (n + 1) // 2 + 1)
        counts[0] = 1.0
        for k in range(1, n + 1):  # generating function prod_k (1 + x^k), O(n^3) once per n
            counts[k:] = counts[k:] + counts[:-k].copy()
        _SIGNRANK_CDF[n] = np.cumsum(counts) / 2.0**n
    return _SIGNRANK_CDF[n]


def _wilcoxon_r(x, y):
    """Two-sided paired Wilcoxon p-value as R's ``wilcox.test(x, y, paired=TRUE)``.

    Zeros are dropped. Exact (``psignrank``) when fewer than 50 pairs remain and there are no
    ties among ``|d|`` and no zeros; otherwise the normal approximation with the tie
    correction of the variance and R's continuity correction.
    """
    d = x - y
    zeros = d == 0
    d = d[~zeros]
    n = len(d)
    if n == 0:
        return 1.0
    magnitude = np.abs(d)
    ranks = block_ranks(magnitude[None, :], maximize=False)[0]  # 1 = smallest |d|, ties averaged
    w_plus = float(ranks[d > 0].sum())
    srt = np.sort(magnitude)
    tied = bool(np.any(srt[1:] == srt[:-1]))
    if n < 50 and not tied and not zeros.any():
        cdf = _signrank_cdf(n)
        w = int(round(w_plus))
        if w > n * (n + 1) / 4:
            p = 1.0 - cdf[w - 1]
        else:
            p = cdf[w]
        return float(min(2.0 * p, 1.0))
    _, counts = np.unique(srt, return_counts=True)
    from scipy import special

    sigma = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0 - np.sum(counts**3 - counts) / 48.0)
    z = w_plus - n * (n + 1) / 4.0
    z = (z - 0.5 * np.sign(z)) / sigma
    return float(2.0 * min(special.ndtr(z), special.ndtr(-z)))


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
        rank_sums = view.rank_sums
        sum_sq = float(view.rank_sq_sums.sum())
        # Per instance, sum_j r_j^2 = m(m+1)(2m+1)/6 - sum_g (t_g^3 - t_g)/12 (averaged ranks
        # of a tie group of size t lose (t^3 - t)/12 of squared rank): the tie term follows
        # from the squared ranks, exactly (both sides are multiples of 1/4).
        ties = 12.0 * (n * m * (m + 1) * (2 * m + 1) / 6.0 - sum_sq)
        _, pvalue = _friedman_from_sums(rank_sums, ties, n, m)
        if self.gate and not pvalue < self.alpha:
            return []
        if self.post_hoc == "conover":
            return self._conover(rank_sums, sum_sq, n, m, pvalue)
        if self.post_hoc == "sign":
            return self._sign(view.greater)
        return self._mean_ranks(rank_sums / n, n, m)

    def _conover(self, rank_sums, sum_sq, n, m, pvalue):
        from scipy import special

        dof = (n - 1) * (m - 1)
        spread = 2.0 * (n * sum_sq - float(np.sum(rank_sums**2))) / dof
        threshold = float(special.stdtrit(dof, 1.0 - self.alpha / 2.0) * np.sqrt(max(spread, 0.0)))
        best = int(np.argmin(rank_sums))  # first of equal rank sums, as R's order()
        worse = np.flatnonzero(rank_sums - rank_sums[best] > threshold)
        p = float(pvalue) if np.isfinite(pvalue) else float("nan")
        return [Elimination(int(i), "dominated", best, p) for i in worse]

    def _irace_two(self, scores):
        x, y = scores[:, 0], scores[:, 1]
        if np.all(x >= y):
            return [Elimination(1, "dominated", 0, 0.0)]
        if np.all(y >= x):
            return [Elimination(0, "dominated", 1, 0.0)]
        p = _wilcoxon_r(x, y)
        if not p < self.alpha:
            return []
        location = _hodges_lehmann(x - y)
        if location > 0:
            return [Elimination(1, "dominated", 0, p)]
        if location < 0:
            return [Elimination(0, "dominated", 1, p)]
        return []

    def _sign(self, greater):
        from scipy import special

        m = greater.shape[0]
        i, j = np.triu_indices(m, k=1)
        wins_i, wins_j = greater[i, j], greater[j, i]
        big = np.maximum(wins_i, wins_j)
        total = wins_i + wins_j
        # Directional one-sided p-value: P(Bin(N, 1/2) >= max wins) = I_{1/2}(k, N - k + 1).
        with np.errstate(invalid="ignore"):
            p = np.where(total > 0, special.betainc(big, total - big + 1, 0.5), 1.0)
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

    def _mean_ranks(self, mean_ranks, n, m):
        from scipy import special

        best = int(np.argmin(mean_ranks))
        z = (mean_ranks - mean_ranks[best]) / np.sqrt(m * (m + 1) / (6.0 * n))
        p = special.ndtr(-z)
        worse = np.flatnonzero(p < self.alpha)
        return [Elimination(int(i), "dominated", best, float(p[i])) for i in worse if i != best]
