"""Posterior of the candidates' mean ranks and the probability that each one is the best.

Seed 002 (Benavoli, Mangili, Corani and Zaffalon, "A Bayesian nonparametric procedure for
comparing algorithms", ICML 2015, Theorem 1) puts a Dirichlet process on the instances: the
posterior of the vector of mean ranks is the Bayesian Friedman posterior, and its eq. 19 is
that posterior's normal approximation. Here the normal approximation is made with the
**pooled** residual variance of the two-way (instance x candidate) analysis of variance on
the within-instance ranks -- the variance behind Conover's (1999, *Practical Nonparametric
Statistics*, sec. 5.8) multiple comparisons for the Friedman test, which irace's F-race uses:

    r_ij = a_i + mu_j + e_ij,   e_ij ~ N(0, sigma^2),   flat prior on (a, mu), p(sigma^2) ~ 1/sigma^2

whose posterior is the standard one of the normal linear model: given sigma the contrasts of
``mu`` are those of independent ``N(rbar_j, sigma^2 / n)`` components, and
``sigma^2 = nu s^2 / chi^2_nu`` with ``nu = (n - 1)(m - 1)`` and
``s^2 = sum_ij (r_ij - rbar_j)^2 / nu`` (within-instance ranks have the same mean (m+1)/2 on
every instance, so the instance effects drop out of the residual). The joint posterior of
``mu`` is therefore a multivariate Student t with a shared scale, and Conover's critical
difference is its two-sided credible bound for a pair.

The probability that candidate j has the smallest mean rank (is the best) needs no Monte
Carlo: the argmin is invariant to a common shift of all components, so given the scale

    P(j best | sigma) = integral phi_j(x) prod_{k != j} P(X_k > x) dx,

one integral on a grid shared by all candidates (O(m x grid), no pairwise loop); the Student
tails are a Gauss-Legendre mixture over the quantiles of ``chi^2_nu``. Both are checked against a
brute-force Monte Carlo in ``tests/test_rank_posterior.py``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
from scipy import special

from racer._validation import as_score_matrix, check_bool, check_nonnegative
from racer.stats._ranks import block_ranks, check_rank_sums
from racer.stats._result import StatsResult

__all__ = ["RankPosteriorResult", "prob_smallest", "rank_posterior", "rank_posterior_from_sums"]

# Beyond this many residual degrees of freedom the Student mixture is replaced by the normal
# (the scale's posterior sd is ~ 1/sqrt(2 nu) of its value: < 1.6% here, and P(best) moves by
# far less than the Monte Carlo error of any check).
_NORMAL_DF = 2000.0
_N_SCALE_NODES = 32
# Grid half-width and step in units of the scale: the integrand is below phi(8.5) ~ 1e-16
# outside, and the trapezoid rule on a Gaussian-smooth integrand at h = sigma/8 is exact to
# far below that (its error decays like exp(-2 pi^2 sigma^2 / h^2)).
_HALF_WIDTH = 8.5
_STEP = 1.0 / 8.0


@dataclasses.dataclass(frozen=True, repr=False)
class RankPosteriorResult(StatsResult):
    """Result of :func:`rank_posterior`.

    Attributes
    ----------
    mean_ranks : ndarray (m,)
        Observed mean within-instance ranks, 1 = best: the posterior location.
    scale : float
        Posterior scale of each component, ``s / sqrt(n)`` (the pooled residual sd over sqrt n).
    df : float
        Degrees of freedom of the Student posterior, ``(n - 1)(m - 1)``.
    prob_best : ndarray (m,)
        Posterior probability that each candidate has the smallest mean rank (sums to 1).
    n_blocks, n_candidates : int
    """

    mean_ranks: np.ndarray
    scale: float
    df: float
    prob_best: np.ndarray
    n_blocks: int
    n_candidates: int

    def prob_better(self, i, j):
        """Posterior probability that candidate ``i`` has a smaller mean rank than ``j``.

        The difference of two components is Student with scale ``sqrt(2) * scale``, so this
        is ``P(t_df < (mean_ranks[j] - mean_ranks[i]) / (sqrt(2) scale))``: the one-sided
        p-value of Conover's t for "j is better than i" (Conover's critical difference is its
        two-sided credible bound). ``i`` and ``j`` are positions, or arrays of positions
        (broadcast). With ``scale == 0`` it is 1, 1/2 or 0.

        >>> res = rank_posterior(np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0]]))
        >>> p = res.prob_better([0, 1], 2)
        >>> bool(p[0] < p[1] < 0.5)  # candidate 2 (largest scores) is likely the best
        True
        """
        m = self.mean_ranks.shape[0]
        idx = []
        for name, value in (("i", i), ("j", j)):
            arr = np.asarray(value)
            if arr.dtype.kind not in "iu" or np.any((arr < 0) | (arr >= m)):
                raise ValueError(f"`{name}` must hold candidate positions in [0, {m - 1}]; "
                                 f"got {value!r}")
            idx.append(arr)
        gap = self.mean_ranks[idx[1]] - self.mean_ranks[idx[0]]
        if self.scale > 0:
            return special.stdtr(self.df, gap / (math.sqrt(2.0) * self.scale))
        return np.where(gap > 0, 1.0, np.where(gap < 0, 0.0, 0.5))


def _posterior_from_sums(rank_sums, sum_sq, n, m):
    """Location, scale and df of the mean-rank posterior from rank sums and sum of r^2."""
    df = float((n - 1) * (m - 1))
    loc = rank_sums / n
    resid = max(float(sum_sq) - float(np.dot(rank_sums, rank_sums)) / n, 0.0)
    scale = math.sqrt(resid / df / n) if df > 0 else math.inf
    return loc, scale, df


def _prob_smallest_normal(loc, scale):
    """P(component j is the smallest) for independent N(loc_j, scale^2); no validation."""
    m = loc.shape[0]
    lead = float(loc.min())
    out = np.zeros(m)
    if scale == 0.0:
        tied = loc == lead
        out[tied] = 1.0 / np.count_nonzero(tied)
        return out
    # Candidates more than 2 half-widths behind the leader cannot reach the grid: their
    # probability is below Phi(-17/sqrt 2) and is left at 0.
    near = np.flatnonzero(loc <= lead + 2.0 * _HALF_WIDTH * scale)
    mu = loc[near]
    x = lead + scale * np.arange(-_HALF_WIDTH, _HALF_WIDTH + _STEP / 2, _STEP)
    z = (mu[:, None] - x[None, :]) / scale  # (k, g): P(X_k > x) = Phi(z)
    log_surv = special.log_ndtr(z)
    total = log_surv.sum(axis=0)
    # density of X_j at x times the survival of every other component
    log_dens = -0.5 * z * z - 0.5 * math.log(2.0 * math.pi)
    p = np.exp(log_dens + total[None, :] - log_surv).sum(axis=1) * _STEP
    out[near] = p
    return out


def _scale_nodes():
    x, w = np.polynomial.legendre.leggauss(_N_SCALE_NODES)
    return 0.5 * (x + 1.0), 0.5 * w


def _prob_smallest(loc, scale, df):
    """P(component j is the smallest) under the shared-scale Student posterior; internal."""
    if scale == 0.0 or not np.isfinite(df) or df >= _NORMAL_DF:
        out = _prob_smallest_normal(loc, scale)
    else:
        # sigma = scale * sqrt(df / W), W ~ chi^2_df: Gauss-Legendre in the quantile of W
        # (the integrand is bounded in [0, 1], so the open ends cost nothing; generalised
        # Gauss-Laguerre weights overflow for large df).
        u, weights = _scale_nodes()
        w_nodes = special.chdtri(df, u)  # upper-tail quantiles of chi^2_df
        out = np.zeros(loc.shape[0])
        for w_k, weight in zip(w_nodes, weights):
            out += weight * _prob_smallest_normal(loc, scale * math.sqrt(df / w_k))
    total = out.sum()
    return out / total if total > 0 else out


def prob_smallest(loc, scale, df=math.inf):
    """Probability that each component is the smallest, for independent components with a
    common scale (normal, or Student with a shared chi-square scale).

    ``X_j = loc_j + scale * Z_j * sqrt(df / W)`` with i.i.d. standard normal ``Z_j`` and one
    ``W ~ chi^2_df`` shared by all components (``df = inf``: normal). This is the joint
    posterior of :func:`rank_posterior`, and it is exact for any posterior that is
    exchangeable up to a common shift (the argmin does not see the shift).

    Parameters
    ----------
    loc : array_like (m,), m >= 1
        Locations.
    scale : float >= 0
        Common scale (0: a point mass; ties at the minimum share the probability).
    df : float > 0 or inf
        Degrees of freedom of the shared scale.

    Returns
    -------
    ndarray (m,)
        Probabilities summing to 1.

    Examples
    --------
    >>> p = prob_smallest([1.0, 1.0, 3.0], 1.0)
    >>> bool(abs(p[0] - p[1]) < 1e-12 and p[2] < p[0])
    True
    >>> round(float(prob_smallest([0.0, 1.0], 1.0)[0]), 4)  # Phi(1 / sqrt 2)
    0.7602
    """
    loc = np.asarray(loc, dtype=np.float64)
    if loc.ndim != 1 or loc.shape[0] < 1 or not np.all(np.isfinite(loc)):
        raise ValueError(f"`loc` must be a non-empty 1-D array of finite numbers; got {loc!r}")
    scale = check_nonnegative(scale, "scale")
    if isinstance(df, bool) or not isinstance(df, numbers.Real):
        raise TypeError(f"`df` must be a real number or inf; got {df!r}")
    df = float(df)
    if not df > 0:
        raise ValueError(f"`df` must be > 0 (or inf); got {df}")
    return _prob_smallest(loc, scale, df)


def rank_posterior(scores, *, maximize=True):
    """Posterior of the mean within-instance ranks and the probability each candidate is best.

    The normal approximation of seed 002's Bayesian Friedman posterior (Benavoli et al. 2015,
    eq. 19) with Conover's pooled two-way ANOVA variance on the ranks and Student tails (see
    the module docstring): mean ranks ``mu | data ~ t_nu(rbar, s^2/n I)`` up to a common
    shift, ``nu = (n - 1)(m - 1)``. ``prob_best[j]`` is the posterior probability that ``mu_j``
    is the smallest (rank 1 = best), computed by one quadrature, no Monte Carlo.

    Parameters
    ----------
    scores : array_like (n_blocks, n_candidates), n_blocks >= 2, n_candidates >= 2
        One row per instance; a pandas DataFrame is accepted.
    maximize : bool, default True
        Larger scores are better (rank 1 goes to the largest score of a row).

    Returns
    -------
    RankPosteriorResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> res = rank_posterior(rng.normal([0.0, 0.5, 1.0], 1.0, size=(30, 3)))
    >>> int(np.argmax(res.prob_best)), round(float(res.prob_best.sum()), 12)
    (2, 1.0)
    """
    scores, _ = as_score_matrix(scores, "scores", min_blocks=2, min_candidates=2)
    maximize = check_bool(maximize, "maximize")
    ranks = block_ranks(scores, maximize=maximize)
    n, m = ranks.shape
    return _result(ranks.sum(axis=0), float(np.sum(ranks * ranks)), n, m)


def rank_posterior_from_sums(rank_sums, rank_sq_sum, n_blocks):
    """:func:`rank_posterior` from the rank sums and the sum of squared ranks, which is all it
    reads: :class:`racer.racing.posterior_best.PosteriorBestTest` takes them from the race.

    Parameters
    ----------
    rank_sums : array_like (m,)
        Per-candidate sums of within-block ranks (1 = best, ties averaged).
    rank_sq_sum : float
        Sum of every squared within-block rank.
    n_blocks : int >= 2

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal([0.0, 0.5, 1.0], 1.0, size=(30, 3))
    >>> r = block_ranks(scores)
    >>> res = rank_posterior_from_sums(r.sum(axis=0), float(np.sum(r * r)), 30)
    >>> bool(np.array_equal(res.prob_best, rank_posterior(scores).prob_best))
    True
    """
    sums, sum_sq, n, m = check_rank_sums(rank_sums, rank_sq_sum, n_blocks, min_blocks=2)
    return _result(sums, sum_sq, n, m)


def _result(rank_sums, sum_sq, n, m) -> RankPosteriorResult:
    loc, scale, df = _posterior_from_sums(rank_sums, sum_sq, n, m)
    return RankPosteriorResult(
        mean_ranks=loc, scale=scale, df=df, prob_best=_prob_smallest(loc, scale, df),
        n_blocks=n, n_candidates=m,
    )
