"""Bayesian Wilcoxon signed-rank test under the Dirichlet process (Benavoli et al. 2014).

For paired scores let ``Z = x - y`` (positive when x scores higher). The quantity tested is

    theta = P(Z + Z' > 0) + 1/2 P(Z + Z' = 0),        Z, Z' independent draws of Z,

the population version of the Wilcoxon statistic R+ (section 3; ties through the Heaviside
step, section 3.2), and the hypothesis "x beats y" is ``theta > 1/2``. The posterior of the
distribution F of Z is a Dirichlet process; by Theorem 4 a posterior draw of F puts weights
``(w_0, w_1, ..., w_n) ~ Dir(s, 1, ..., 1)`` on a pseudo-observation z_0 and on the data, so

    theta = sum_{i,j >= 0} w_i w_j H(z_i + z_j).

* ``prior="dp"``: the noninformative limit s -> 0 (Rubin's Bayesian bootstrap, Theorem 2):
  no pseudo-observation; one posterior probability (``lower == upper``).
* ``prior="idp"``: the prior near-ignorance DP, s fixed (default (sqrt(17) - 3)/2, section
  3.1) and the base measure free. The lower and upper posterior probabilities come from the
  pseudo-observation at -infinity and +infinity (Theorem 3-4):
  ``theta_lower = sum_{i,j >= 1} w_i w_j H(z_i + z_j)``, ``theta_upper = theta_lower +
  w_0 (2 - w_0)``. Both use the same Monte Carlo weights, so ``lower <= upper`` always.

Decision (section 3, equation (9)): with ``loss=(l0, l1)`` (l1 the cost of declaring x better
when it is not, l0 the cost of missing it) choose x when ``P[theta > 1/2] > l1/(l0 + l1)``;
under the IDP, ``"x"`` when the lower probability exceeds the threshold, ``"y"`` when the
upper one does not, and ``"indeterminate"`` when they straddle it (the decision depends on the
prior). ``"y"`` means "choosing y has the smaller expected loss", not "y is better".

Region of practical equivalence (not in Benavoli et al. 2014; baycomp's convention): with
``rope = r > 0`` the Walsh averages (z_i + z_j)/2 are compared with r, giving three posterior masses
``theta_x = sum w_i w_j H(z_i + z_j - 2r)`` (x better by more than r), ``theta_y = sum w_i w_j
H(-2r - z_i - z_j)`` (y better by more than r) and ``theta_rope = 1 - theta_x - theta_y``; the
reported probabilities are how often each is the largest of the three (ties go to the rope).
Under the IDP the bounds are taken over every placement of the pseudo-observation's pair mass
``m = w_0 (2 - w_0)``: a region is surely the largest when it wins even with all of m given to
a rival, and possibly the largest when it wins with all of m for itself. These are valid
bounds for every base measure (the upper bound of x and of y is attained at z_0 = +-inf; the
others may be loose), unlike the argmax frequencies at z_0 = +-inf, which need not bound them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from racer._validation import (
    as_1d,
    as_paired,
    check_int,
    check_nonnegative,
    check_option,
    check_positive,
    check_random_state,
)
from racer.stats import _kernels
from racer.stats._result import StatsResult

__all__ = [
    "IDP_PRIOR_STRENGTH",
    "BayesianSignedRankResult",
    "bayesian_signed_rank",
    "signed_rank_prob",
    "signed_rank_posterior_mean",
]

#: s = (sqrt(17) - 3)/2: after one observation the IDP's imprecision is half its prior value
#: (Benavoli et al. 2014, section 3.1).
IDP_PRIOR_STRENGTH = (math.sqrt(17.0) - 3.0) / 2.0

_PRIORS = ("idp", "dp")


@dataclasses.dataclass(frozen=True, repr=False)
class BayesianSignedRankResult(StatsResult):
    """Result of :func:`bayesian_signed_rank`; every probability is about *x beating y*.

    Attributes
    ----------
    lower, upper : float
        Lower and upper posterior probability of ``theta > 1/2``, i.e. that x beats y in the
        signed-rank sense (equal under ``prior="dp"``).
    decision : {"x", "y", "indeterminate"}
        Expected-loss decision: ``"x"`` when ``lower > threshold``, ``"y"`` when
        ``upper <= threshold``, otherwise ``"indeterminate"``.
    threshold : float
        ``l1 / (l0 + l1)`` from ``loss=(l0, l1)``.
    posterior_mean_lower, posterior_mean_upper : float
        Exact posterior mean of theta under the two extreme priors (Theorem 3, eqs. (6)-(7);
        Theorem 2, eq. (4) for the DP), no Monte Carlo.
    prob_x_better, prob_equivalent, prob_y_better : (float, float) or None
        With ``rope > 0``: (lower, upper) posterior probability that x is better by more than
        the rope, that the two are practically equivalent, that y is better by more than the
        rope. ``None`` when ``rope == 0``.
    prior, prior_strength, rope, loss, n_samples :
        The settings used (``prior_strength`` is 0.0 for the DP).
    """

    lower: float
    upper: float
    decision: str
    threshold: float
    posterior_mean_lower: float
    posterior_mean_upper: float
    prob_x_better: tuple[float, float] | None
    prob_equivalent: tuple[float, float] | None
    prob_y_better: tuple[float, float] | None
    prior: str
    prior_strength: float
    rope: float
    loss: tuple[float, float]
    n_samples: int


def _decide(lower: float, upper: float, threshold: float) -> str:
    # Equation (9) prefers "not x" at equality (P <= threshold), hence strict > for "x".
    if lower > threshold:
        return "x"
    if upper <= threshold:
        return "y"
    return "indeterminate"


def _run_kernel(z_sorted, n_samples, rng, s, rope):
    """Draw the key and the Gamma(s) pseudo-weights from ``rng``, run the fused kernel."""
    key = rng.integers(0, 2**64, dtype=np.uint64)
    padded = -(-n_samples // _kernels._SR_LANES) * _kernels._SR_LANES
    prior_gamma = np.zeros(padded)
    if s > 0.0:
        prior_gamma[:n_samples] = rng.standard_gamma(s, size=n_samples)
    gt0, ge0 = _kernels.walsh_cut_indices(z_sorted, 0.0)
    if rope > 0.0:
        gt_x, ge_x = _kernels.walsh_cut_indices(z_sorted, 2.0 * rope)
        gt_y, ge_y = _kernels.walsh_cut_indices(z_sorted, -2.0 * rope)
    else:
        gt_x, ge_x, gt_y, ge_y = gt0, ge0, gt0, ge0
    # No BLAS runs here, so no threadpoolctl guard: entering one costs ~2.4 ms (it scans the
    # loaded libraries), 20x the whole test at n = 20, S = 1000.
    return _kernels.signed_rank_mc(
        gt0, ge0, gt_x, ge_x, gt_y, ge_y, prior_gamma, key, n_samples, rope > 0.0
    )


def signed_rank_prob(z, n_samples, rng, *, prior="idp", s=None):
    """Lower and upper posterior probability that ``theta > 1/2`` for differences ``z``.

    ``z`` is a 1-D array of paired differences (positive favours the first candidate), ``rng``
    a ``numpy.random.Generator`` (advanced by one integer draw and, for the IDP, ``n_samples``
    Gamma draws; None or an int seeds a new one), ``prior`` "idp" or "dp", ``s`` the IDP
    strength (None for the default; None or 0 for the DP).
    Returns ``(lower, upper)``; equal for the DP. Cost O(n log n + n_samples * n).

    >>> import numpy as np
    >>> lo, hi = signed_rank_prob(np.array([0.3, 0.5, -0.1, 0.8]), 10_000,
    ...                           np.random.default_rng(0), prior="idp")
    >>> 0.0 <= lo <= hi <= 1.0
    True
    """
    z_sorted = np.sort(as_1d(z, "z"))
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = check_random_state(rng, "rng")
    strength = _check_strength(check_option(prior, "prior", _PRIORS), s, "s")
    if not np.any(z_sorted):
        # theta is exactly 1/2 for every weight vector under the DP; the pseudo-observation
        # at +inf pushes it above 1/2 whenever w_0 > 0.
        return 0.0, (1.0 if strength > 0.0 else 0.0)
    stats = _run_kernel(z_sorted, n_samples, rng, strength, 0.0)
    return float(stats[0] / n_samples), float(stats[1] / n_samples)


def signed_rank_posterior_mean(z, s=0.0):
    """Exact posterior mean of theta at the lower and upper extreme priors (no Monte Carlo).

    With A = n + s and E[w_i w_j] = (1 + [i = j]) / (A (A + 1)) for data weights:
    ``E[theta_lower] = (sum_{i,j} H(z_i + z_j) + sum_i H(2 z_i)) / (A (A + 1))`` and
    ``E[theta_upper] = E[theta_lower] + (s^2 + 2 n s + s) / (A (A + 1))`` (Benavoli et al. 2014,
    Theorem 3, eqs. (6)-(7) with H for the indicator, section 3.2; s = 0 gives Theorem 2, eq. (4)).

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
       Wilcoxon signed-rank test based on the Dirichlet process. Proceedings of the 31st
       International Conference on Machine Learning (ICML 2014), PMLR 32, 1026–1034.

    >>> signed_rank_posterior_mean(np.array([1.0, 2.0]))
    (1.0, 1.0)
    """
    return _posterior_mean(np.sort(as_1d(z, "z")), check_nonnegative(s, "s"))


def _posterior_mean(z_sorted, s):
    """:func:`signed_rank_posterior_mean` on sorted, checked differences."""
    n = z_sorted.shape[0]
    gt, ge = _kernels.walsh_cut_indices(z_sorted, 0.0)
    pair_sum = 0.5 * float(np.sum((n - gt) + (n - ge)))
    diagonal = float(np.sum(z_sorted > 0.0) + 0.5 * np.sum(z_sorted == 0.0))
    a = n + s
    denom = a * (a + 1.0)
    lower = (pair_sum + diagonal) / denom
    return lower, lower + (s * s + 2.0 * n * s + s) / denom


def _check_strength(prior, prior_strength, name):
    """The prior strength s for ``prior``: 0 for the DP (s -> 0), > 0 for the IDP."""
    if prior == "dp":
        if prior_strength is not None:
            strength = check_nonnegative(prior_strength, name)
            if strength != 0.0:
                raise ValueError(
                    f"`{name}` must be None or 0 with prior='dp' (the s -> 0 limit); "
                    f"got {prior_strength!r}; use prior='idp' for s > 0"
                )
        return 0.0
    return IDP_PRIOR_STRENGTH if prior_strength is None else check_positive(prior_strength, name)


def _check_loss(loss):
    if isinstance(loss, (str, bytes)) or not hasattr(loss, "__len__") or len(loss) != 2:
        raise TypeError(f"`loss` must be a pair (l0, l1) of positive numbers; got {loss!r}")
    l0 = check_positive(loss[0], "loss[0]")
    l1 = check_positive(loss[1], "loss[1]")
    return l0, l1


def bayesian_signed_rank(
    x,
    y,
    *,
    prior="idp",
    prior_strength=None,
    rope=0.0,
    loss=(1, 1),
    n_samples=50_000,
    random_state=None,
):
    """Bayesian Wilcoxon signed-rank test: posterior probability that x beats y.

    Computes ``P[theta > 1/2 | data]`` with ``theta = P(Z + Z' > 0) + 1/2 P(Z + Z' = 0)`` and
    ``Z = x - y`` under a Dirichlet-process posterior (Benavoli et al. 2014, Theorems 2-4), by Monte
    Carlo over ``Dir(s, 1, ..., 1)`` weights in O(n) per sample after one sort, and takes the
    expected-loss decision of equation (9). See the module docstring for the model, the rope
    and the decision rule.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired scores (larger is better), e.g. two algorithms on the same n data sets.
    prior : {"idp", "dp"}
        ``"idp"``: prior near-ignorance DP, gives lower and upper probabilities.
        ``"dp"``: the s -> 0 limit (Bayesian bootstrap), one probability.
    prior_strength : float, optional
        s for the IDP (default (sqrt(17) - 3)/2 ~ 0.5616). Must be None or 0 for ``"dp"``.
    rope : float
        Half-width of the region of practical equivalence on the Walsh averages; 0 disables.
    loss : (l0, l1)
        l1: cost of deciding "x" when x does not beat y; l0: cost of the opposite error.
        The threshold is ``l1 / (l0 + l1)`` ((1, 19) gives 0.95).
    n_samples : int
        Monte Carlo samples; the standard error of a probability p is sqrt(p (1 - p) / n).
    random_state : None, int, numpy Generator, RandomState or SeedSequence

    Returns
    -------
    BayesianSignedRankResult

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
       Wilcoxon signed-rank test based on the Dirichlet process. Proceedings of the 31st
       International Conference on Machine Learning (ICML 2014), PMLR 32, 1026–1034.
    .. [2] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    Demšar's (2006) C4.5+m (x) against C4.5 (y) on 14 data sets:

    >>> c45 = [.763, .599, .954, .628, .882, .936, .661, .583, .775, 1., .940, .619, .972, .957]
    >>> c45m = [.768, .591, .971, .661, .888, .931, .668, .583, .838, 1., .962, .666, .981, .978]
    >>> res = bayesian_signed_rank(c45m, c45, random_state=0)
    >>> res.decision, round(res.lower, 2), res.upper > 0.999
    ('x', 0.99, True)
    """
    xa, ya = as_paired(x, y)
    prior = check_option(prior, "prior", _PRIORS)
    strength = _check_strength(prior, prior_strength, "prior_strength")
    rope = check_nonnegative(rope, "rope")
    l0, l1 = _check_loss(loss)
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = check_random_state(random_state)

    z_sorted = np.sort(xa - ya)
    threshold = l1 / (l0 + l1)
    mean_lower, mean_upper = _posterior_mean(z_sorted, strength)
    rope_probs = None
    if rope > 0.0 or np.any(z_sorted):
        stats = _run_kernel(z_sorted, n_samples, rng, strength, rope)
        lower, upper = stats[0] / n_samples, stats[1] / n_samples
        if rope > 0.0:
            frac = stats[4:10] / n_samples
            rope_probs = (
                (float(frac[0]), float(frac[1])),
                (float(frac[2]), float(frac[3])),
                (float(frac[4]), float(frac[5])),
            )
    if not np.any(z_sorted):
        # Every difference is zero, so theta == 1/2 exactly for any data weights: the strict
        # event never holds, except through the pseudo-observation at +inf when w_0 > 0.
        # (Decided here, not by the kernel, whose two summation orders could split the tie.)
        lower, upper = 0.0, (1.0 if strength > 0.0 else 0.0)
    return BayesianSignedRankResult(
        lower=float(lower),
        upper=float(upper),
        decision=_decide(lower, upper, threshold),
        threshold=threshold,
        posterior_mean_lower=mean_lower,
        posterior_mean_upper=mean_upper,
        prob_x_better=None if rope_probs is None else rope_probs[0],
        prob_equivalent=None if rope_probs is None else rope_probs[1],
        prob_y_better=None if rope_probs is None else rope_probs[2],
        prior=prior,
        prior_strength=strength,
        rope=rope,
        loss=(l0, l1),
        n_samples=n_samples,
    )


# --------------------------------------------------------------------------------------------
# Batched over several pairs with missing entries, the prior pseudo-observation on the tie
# (racer.adapters.optuna's RacingPruner pairs a trial with each of its references at once)
# --------------------------------------------------------------------------------------------


def dp_weights_on_tie(z, present, prior_strength, n_samples, rng):
    """Dirichlet-process posterior weights on ``Z_0 = 0, Z_1, ..., Z_n``, one set per pair.

    ``(w_0, ..., w_n) ~ Dir(s, 1, ..., 1)``: the prior pseudo-observation of weight ``s`` sits
    on the tie ``Z_0 = 0`` (Benavoli et al.'s (2015) placement, and baycomp's), not at the IDP
    extremes of
    :func:`signed_rank_prob`; an entry with ``present`` False gets weight exactly zero (a
    Gamma(0) variate), so pairs with different missing entries are drawn in one batch.
    ``z`` and ``present`` have shape (k, n); ``s = 0`` is the Bayesian bootstrap (the DP
    limit). Returns ``z`` with the column ``Z_0 = 0`` prepended, (k, n+1), and the weights,
    (k, n_samples, n+1). No input checks: the callers' inputs are built, not given.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """
    n_pairs, n = z.shape
    z = np.concatenate([np.zeros((n_pairs, 1)), z], axis=1)  # (k, n+1), z_0 = 0
    shapes = np.concatenate(
        [np.full((n_pairs, 1), float(prior_strength)), present.astype(np.float64)], axis=1
    )
    gammas = rng.standard_gamma(np.broadcast_to(shapes[:, None, :], (n_pairs, n_samples, n + 1)))
    return z, gammas / gammas.sum(axis=2, keepdims=True)


def signed_rank_prob_below_batched(z, present, prior_strength, eps, n_samples, rng):
    """``P(theta < 1/2)`` and ``P(|theta - 1/2| < eps)`` of the signed-rank ``theta``, per pair.

    Benavoli et al. (2014), Theorems 2 and 4, with the weights of :func:`dp_weights_on_tie`:
    ``theta = sum_ij w_i w_j H(Z_i + Z_j)``, ``H`` the Heaviside step with ``H(0) = 1/2``; with
    ``z = x - y``, ``theta < 1/2`` says x is the worse. Monte Carlo over ``n_samples`` weight
    vectors, all pairs in one batched contraction. ``eps <= 0`` gives a zero band. With
    ``prior_strength=0`` the first probability is :func:`signed_rank_prob`'s DP probability
    of ``-z`` (tested).

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
       Wilcoxon signed-rank test based on the Dirichlet process. Proceedings of the 31st
       International Conference on Machine Learning (ICML 2014), PMLR 32, 1026–1034.

    >>> import numpy as np
    >>> z = np.array([[-0.4, -0.9, 0.1, -0.3], [0.5, 0.2, 0.0, 0.0]])
    >>> present = np.array([[True, True, True, True], [True, True, False, False]])
    >>> below, band = signed_rank_prob_below_batched(z, present, 1.0, 0.05, 4000,
    ...                                              np.random.default_rng(0))
    >>> bool(below[0] > 0.8 and below[1] < 0.2), band.shape
    (True, (2,))
    """
    z, weights = dp_weights_on_tie(z, present, prior_strength, n_samples, rng)
    pair_sum = z[:, :, None] + z[:, None, :]
    heaviside = np.where(pair_sum > 0, 1.0, np.where(pair_sum == 0, 0.5, 0.0))
    # theta_s = w_s' H w_s, one batched matrix product per pair (BLAS, no Python loop).
    theta = np.einsum("ksi,ksi->sk", weights @ heaviside, weights)
    prob_below = np.mean(theta < 0.5, axis=0)
    if eps <= 0:
        return prob_below, np.zeros_like(prob_below)
    return prob_below, np.mean(np.abs(theta - 0.5) < eps, axis=0)


def mean_prob_below_batched(z, present, prior_strength, rope, n_samples, rng):
    """``P(mean < 0)`` and ``P(|mean| <= rope)`` of the mean difference, per pair.

    The DP posterior of the mean of ``Z`` with the weights of :func:`dp_weights_on_tie`
    (Rubin's Bayesian bootstrap with the pseudo-observation ``Z_0 = 0`` of weight ``s``):
    ``theta = sum_i w_i Z_i``. Missing entries must hold 0 in ``z`` (their weight is 0
    anyway). Monte Carlo over ``n_samples`` weight vectors; ``rope <= 0`` gives a zero band.

    >>> import numpy as np
    >>> below, band = mean_prob_below_batched(np.array([[-0.2, -0.3, 0.1, -0.4]]),
    ...                                       np.ones((1, 4), dtype=bool), 1.0, 0.01, 4000,
    ...                                       np.random.default_rng(0))
    >>> bool(below[0] > 0.8 and band[0] < 0.1)
    True
    """
    z, weights = dp_weights_on_tie(z, present, prior_strength, n_samples, rng)
    theta = np.einsum("ksi,ki->sk", weights, z)
    prob_below = np.mean(theta < 0, axis=0)
    if rope <= 0:
        return prob_below, np.zeros_like(prob_below)
    return prob_below, np.mean(np.abs(theta) <= rope, axis=0)
