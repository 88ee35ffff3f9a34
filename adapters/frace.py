"""The F-race baseline as a racing test: Friedman gate, then post-hoc eliminations.

Three post-hoc procedures, chosen with ``post_hoc``:

* ``"conover"`` -- irace's F-race (irace 3.5, ``aux2.friedman`` / ``aux_friedman``, read in
  ``notes/irace-frace.md``): Friedman chi-square with the tie correction at level ``alpha``; if
  it rejects, every candidate whose rank sum exceeds the best one's by more than Conover's
  ``t* = t_{1-alpha/2, (n-1)(k-1)} sqrt(2 (n A - sum_j R_j^2) / ((n-1)(k-1)))`` goes
  (``A`` = sum of squared ranks). With two survivors irace drops a candidate that is no better
  on any instance, else runs a paired Wilcoxon signed-rank test and drops the one with the
  worse Hodges-Lehmann pseudo-median when ``p < alpha``.
* ``"sign"`` -- F-Race_S of seed 002 §7.1: for every pair the one-sided sign test in the
  direction of more wins (directional, seed 002 §3) at level ``alpha``, no family-wise
  correction; the loser of every significant pair goes.
* ``"mean_ranks"`` -- F-Race_MR of seed 002 §7.1: the mean-ranks z-test
  ``z = (R_i - R_j)/sqrt(m(m+1)/(6n))``, one-sided at ``alpha``, uncorrected. Because ``z`` is
  monotone in the mean rank, "every pair" and "each against the best" eliminate the same set.

``gate=True`` applies the Friedman test first at every step, as the seed's text says (for
"sign" and "mean_ranks" also with two survivors, where Friedman reduces to a two-sided sign
test); ``gate=False`` runs the post-hoc alone. ``notes/racing-experiment.md`` measures both.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import special, stats

from racer._validation import check_bool, check_option, check_probability
from racer.elimination import Elimination, RacingTest

__all__ = ["FRaceTest", "friedman_chi2", "conover_threshold"]


def _ranks_best_first(scores):
    """Within-row ranks, 1 = largest score, ties averaged (irace ranks costs, 1 = lowest)."""
    return stats.rankdata(-scores, axis=1)


def _tie_term(scores):
    """Sum over rows and tie groups of ``u^3 - u`` (the Friedman tie correction)."""
    srt = np.sort(scores, axis=1)
    n, k = srt.shape
    starts = np.ones((n, k), dtype=bool)
    starts[:, 1:] = srt[:, 1:] != srt[:, :-1]
    if starts.all():
        return 0.0
    flat = starts.ravel()
    # Run lengths of the flattened rows; a new row always starts a new run.
    flat[::k] = True
    edges = np.flatnonzero(np.append(flat, True))
    runs = np.diff(edges).astype(np.float64)
    return float(np.sum(runs**3 - runs))


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
    scores = np.asarray(scores, dtype=np.float64)
    n, k = scores.shape
    ranks = _ranks_best_first(scores)
    rank_sums = ranks.sum(axis=0)
    denom = n * k * (k + 1) - _tie_term(scores) / (k - 1)
    if denom <= 0:
        return float("nan"), float("nan"), rank_sums
    stat = 12.0 * float(np.sum((rank_sums - n * (k + 1) / 2.0) ** 2)) / denom
    return stat, float(stats.chi2.sf(stat, k - 1)), rank_sums


def conover_threshold(ranks, alpha):
    """Conover's critical rank-sum difference ``t*`` for the Friedman test (irace's form).

    ``t* = qt(1 - alpha/2, (n-1)(k-1)) sqrt(2 (n A - sum_j R_j^2) / ((n-1)(k-1)))`` with
    ``A = sum_ij r_ij^2`` and ``R_j`` the rank sums of ``ranks`` (n, k).
    """
    n, k = ranks.shape
    dof = (n - 1) * (k - 1)
    sum_sq = float(np.sum(ranks**2))
    rank_sums = ranks.sum(axis=0)
    spread = 2.0 * (n * sum_sq - float(np.sum(rank_sums**2))) / dof
    return float(stats.t.ppf(1.0 - alpha / 2.0, dof) * np.sqrt(max(spread, 0.0)))


def _hodges_lehmann(d):
    """Median of the Walsh averages ``(d_i + d_j)/2, i <= j``."""
    i, j = np.triu_indices(len(d))
    return float(np.median((d[i] + d[j]) / 2.0))


def _wilcoxon_r(x, y):
    """Paired Wilcoxon p-value as R's ``wilcox.test(x, y, paired=TRUE)`` computes it.

    Exact when n < 50 and there are no ties among ``|d|`` and no zeros; otherwise the normal
    approximation with tie and continuity corrections (zeros dropped).
    """
    d = x - y
    nonzero = d[d != 0]
    if len(nonzero) == 0:
        return 1.0
    has_ties = len(np.unique(np.abs(nonzero))) < len(nonzero)
    exact = len(d) < 50 and not has_ties and len(nonzero) == len(d)
    if exact:
        return float(stats.wilcoxon(x, y, method="exact").pvalue)
    return float(
        stats.wilcoxon(x, y, zero_method="wilcox", correction=True, method="asymptotic").pvalue
    )


@dataclasses.dataclass(eq=False)
class FRaceTest(RacingTest):
    """F-race: Friedman test at ``alpha``, then post-hoc eliminations (irace / seed 002 §7.1).

    Parameters
    ----------
    alpha : float, default 0.05
        Level of the Friedman test and of every post-hoc comparison (no multiplicity
        correction, as in irace and in seed 002 §7.1).
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

    Examples
    --------
    >>> import numpy as np
    >>> from racer.adapters.frace import FRaceTest
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal([0.0, 0.0, 2.0], 1.0, size=(15, 3))
    >>> out = FRaceTest().decide(scores, np.arange(3), rng)
    >>> sorted(e.index for e in out)
    [0, 1]
    """

    alpha: float = 0.05
    post_hoc: str = "conover"
    gate: bool = True

    def __post_init__(self):
        self.alpha = check_probability(self.alpha, "alpha")
        self.post_hoc = check_option(self.post_hoc, "post_hoc", ("conover", "sign", "mean_ranks"))
        self.gate = check_bool(self.gate, "gate")

    def decide(self, scores, ids, rng) -> list[Elimination]:
        """Eliminations warranted by ``scores`` (n_instances, n_survivors), larger better."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 2:
            raise ValueError(f"`scores` must be 2-D; got shape {scores.shape}")
        n, m = scores.shape
        if m < 2 or n < 2:
            return []
        if self.post_hoc == "conover":
            if m == 2:
                return self._irace_two(scores)
            return self._conover(scores)
        gate_p = None
        if self.gate:
            _, gate_p, _ = friedman_chi2(scores)
            if not gate_p < self.alpha:
                return []
        if self.post_hoc == "sign":
            return self._sign(scores)
        return self._mean_ranks(scores)

    def _conover(self, scores):
        stat, pvalue, rank_sums = friedman_chi2(scores)
        if self.gate and not pvalue < self.alpha:
            return []
        ranks = _ranks_best_first(scores)
        threshold = conover_threshold(ranks, self.alpha)
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

    def _sign(self, scores):
        m = scores.shape[1]
        i, j = np.triu_indices(m, k=1)
        diff = scores[:, i] - scores[:, j]
        wins_i = (diff > 0).sum(axis=0)
        wins_j = (diff < 0).sum(axis=0)
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

    def _mean_ranks(self, scores):
        n, m = scores.shape
        mean_ranks = _ranks_best_first(scores).mean(axis=0)
        best = int(np.argmin(mean_ranks))
        z = (mean_ranks - mean_ranks[best]) / np.sqrt(m * (m + 1) / (6.0 * n))
        p = stats.norm.sf(z)
        worse = np.flatnonzero(p < self.alpha)
        return [Elimination(int(i), "dominated", best, float(p[i])) for i in worse if i != best]
