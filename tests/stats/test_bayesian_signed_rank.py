"""Bayesian signed-rank test (Benavoli et al. 2014): kernel exactness, baycomp, exact values, decisions."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from scipy import integrate, stats

from racer.stats import _kernels
from racer.stats._bayesian_signed_rank import (
    mean_prob_below_batched,
    signed_rank_prob_below_batched,
)
from racer.stats import (
    IDP_PRIOR_STRENGTH,
    bayesian_signed_rank,
    signed_rank_posterior_mean,
    signed_rank_prob,
)

LANES = _kernels._SR_LANES

# Demšar (2006): C4.5 and C4.5+m on 14 data sets.
C45 = np.array([.763, .599, .954, .628, .882, .936, .661, .583, .775, 1.0, .940, .619, .972, .957])
C45M = np.array([.768, .591, .971, .661, .888, .931, .668, .583, .838, 1.0, .962, .666, .981, .978])


def _heaviside(a):
    return (a > 0).astype(float) + 0.5 * (a == 0)


def _brute_force_stats(z, e, prior_gamma, rope):
    """Literal O(n^2) version of every statistic the fused kernel returns, per sample."""
    sums = z[:, None] + z[None, :]
    h0 = _heaviside(sums)
    hx = _heaviside(sums - 2 * rope)
    hy = _heaviside(-2 * rope - sums)
    total = e.sum(1) + prior_gamma
    prior_mass = prior_gamma * (2 * total - prior_gamma)
    a = np.einsum("si,ij,sj->s", e, h0, e)
    b_x = np.einsum("si,ij,sj->s", e, hx, e)
    b_y = np.einsum("si,ij,sj->s", e, hy, e)
    b_r = e.sum(1) ** 2 - b_x - b_y
    rivals = {"x": np.maximum(b_r, b_y), "r": np.maximum(b_x, b_y), "y": np.maximum(b_x, b_r)}
    own = {"x": b_x, "r": b_r, "y": b_y}
    out = [
        np.sum(a > 0.5 * total**2),
        np.sum(a + prior_mass > 0.5 * total**2),
        np.sum(a / total**2),
        np.sum((a + prior_mass) / total**2),
    ]
    for k in ("x", "r", "y"):
        out.append(np.sum(own[k] > rivals[k] + prior_mass))
        out.append(np.sum(own[k] + prior_mass > rivals[k]))
    return np.array(out, dtype=float)


def _kernel_weights(key, n, n_samples):
    blocks = -(-n_samples // LANES)
    w = np.concatenate([_kernels.exponential_block(key, b, n).T for b in range(blocks)])
    return w[:n_samples]


@pytest.mark.parametrize("n_samples", [13, 800])
@pytest.mark.parametrize("strength", [0.0, IDP_PRIOR_STRENGTH, 3.0])
def test_fused_kernel_equals_brute_force_on_its_own_weights(n_samples, strength):
    # Differences on a coarse grid so that ties z_i = -z_j, zeros and Walsh sums landing
    # exactly on +-2 rope all occur (0.25 and 0.5 are exact in binary).
    rng = np.random.default_rng(5)
    z = np.sort(rng.integers(-4, 6, size=23) * 0.125)
    rope = 0.125
    key = np.uint64(987654321)
    prior_gamma = np.zeros(-(-n_samples // LANES) * LANES)
    if strength > 0:
        prior_gamma[:n_samples] = rng.standard_gamma(strength, n_samples)
    cuts = [_kernels.walsh_cut_indices(z, c) for c in (0.0, 2 * rope, -2 * rope)]
    got = _kernels.signed_rank_mc(*cuts[0], *cuts[1], *cuts[2], prior_gamma, key, n_samples, True)
    e = _kernel_weights(key, z.size, n_samples)
    want = _brute_force_stats(z, e, prior_gamma[:n_samples], rope)
    np.testing.assert_array_equal(got[[0, 1, 4, 5, 6, 7, 8, 9]], want[[0, 1, 4, 5, 6, 7, 8, 9]])
    np.testing.assert_allclose(got[2:4], want[2:4], rtol=1e-12)


def test_walsh_cut_indices_match_literal_comparisons():
    rng = np.random.default_rng(1)
    z = np.sort(np.round(rng.normal(0, 0.3, 200), 2))
    for c in (0.0, 0.02, -0.02, 0.1 + 0.2):
        gt, ge = _kernels.walsh_cut_indices(z, c)
        sums = z[:, None] + z[None, :]
        np.testing.assert_array_equal(gt, z.size - np.sum(sums > c, axis=1))
        np.testing.assert_array_equal(ge, z.size - np.sum(sums >= c, axis=1))


def test_exponential_generator_is_exp1():
    e = np.concatenate([_kernels.exponential_block(np.uint64(42), b, 1000).ravel()
                        for b in range(25)])
    # 200 000 draws: the mean has SE 1/sqrt(2e5) = 0.0022, the variance SE sqrt(8/2e5) = 0.0063.
    assert abs(e.mean() - 1.0) < 4 * 0.0022
    assert abs(e.var() - 1.0) < 4 * 0.0063
    assert stats.kstest(e, "expon").pvalue > 1e-3
    # Lanes and blocks must be independent streams, not shifted copies.
    block = _kernels.exponential_block(np.uint64(42), 0, 1000)
    assert abs(np.corrcoef(block.T)[np.triu_indices(LANES, 1)]).max() < 0.15


def test_theta_from_weights_matches_baycomp_samples_exactly():
    baycomp = pytest.importorskip("baycomp")
    n_samples, seed = 3000, 12345
    for rope in (0.0, 0.01):
        samples = baycomp.SignedRankTest.sample(C45, C45M, rope=rope, nsamples=n_samples,
                                                random_state=seed)
        # baycomp: d = y - x with a pseudo-observation at 0 of weight Dir(0.5, 1, ..., 1).
        z = np.hstack(([0.0], C45M - C45))
        weights = np.random.RandomState(seed).dirichlet([0.5] + [1.0] * C45.size, n_samples)
        order = np.argsort(z, kind="stable")
        z_sorted, w_sorted = z[order], weights[:, order]
        above = _kernels.walsh_mass_from_weights(
            w_sorted, *_kernels.walsh_cut_indices(z_sorted, 2 * rope))
        np.testing.assert_allclose(above, samples[:, 2], rtol=0, atol=1e-14)
        if rope > 0:
            not_below = _kernels.walsh_mass_from_weights(
                w_sorted, *_kernels.walsh_cut_indices(z_sorted, -2 * rope))
            np.testing.assert_allclose(1.0 - not_below, samples[:, 0], rtol=0, atol=1e-14)


def _dirichlet_mean_theta(z, prior_point, s):
    """E[sum w_i w_j H(z_i + z_j)] from E[w_i w_j] of Dir(s, 1, ..., 1), literally."""
    zz = np.concatenate(([prior_point], z)) if s > 0 else z
    a = np.concatenate(([s], np.ones(z.size))) if s > 0 else np.ones(z.size)
    total = a.sum()
    second = np.outer(a, a) + np.diag(a)
    return np.sum(_heaviside(zz[:, None] + zz[None, :]) * second) / (total * (total + 1))


@pytest.mark.parametrize("s", [0.0, IDP_PRIOR_STRENGTH, 2.0])
def test_posterior_mean_closed_form_matches_literal_expectation(s):
    z = np.array([-0.5, -0.25, 0.0, 0.25, 0.25, 0.5, 0.75, 1.0, -1.0, 0.0])
    lower, upper = signed_rank_posterior_mean(z, s)
    assert lower == pytest.approx(_dirichlet_mean_theta(z, -1e9, s), abs=1e-13)
    assert upper == pytest.approx(_dirichlet_mean_theta(z, 1e9, s), abs=1e-13)


def test_dp_posterior_mean_is_wilcoxon_r_plus():
    # Theorem 2: E[theta | Z] under s -> 0 equals R+ = 2 T+ / (n (n + 1)), zeros split.
    # Demšar: zsplit gives T = min(R+, R-) = 12 with R+ = 93 of n (n + 1)/2 = 105.
    t_min = stats.wilcoxon(C45M, C45, zero_method="zsplit").statistic
    res = bayesian_signed_rank(C45M, C45, prior="dp", n_samples=8, random_state=0)
    assert res.posterior_mean_lower == pytest.approx((105 - t_min) / 105, abs=1e-14)
    # Under the DP (no prior mass to move) the two bounds are one mean: equal to a few ulp.
    assert res.posterior_mean_upper == pytest.approx(res.posterior_mean_lower, rel=0, abs=1e-15)


def test_monte_carlo_mean_within_standard_error_of_exact_mean():
    rng = np.random.default_rng(3)
    z = rng.normal(0.05, 0.2, 40)
    n_samples = 40_000
    key = np.uint64(2024)
    prior_gamma = np.zeros(n_samples)
    prior_gamma[:] = np.random.default_rng(4).standard_gamma(IDP_PRIOR_STRENGTH, n_samples)
    zs = np.sort(z)
    cut = _kernels.walsh_cut_indices(zs, 0.0)
    got = _kernels.signed_rank_mc(*cut, *cut, *cut, prior_gamma, key, n_samples, False)
    exact_lower, exact_upper = signed_rank_posterior_mean(z, IDP_PRIOR_STRENGTH)
    # SE of the mean = sd(theta)/sqrt(S); sd(theta) estimated on the kernel's own first 4000
    # samples through the serial weights kernel. 5 SE: a false failure has probability < 1e-6.
    e = _kernel_weights(key, z.size, 4000)
    e0 = prior_gamma[:4000]
    total = e.sum(1) + e0
    theta_lower = _kernels.walsh_mass_from_weights(e, *cut) / total**2
    theta_upper = theta_lower + e0 * (2 * total - e0) / total**2
    assert abs(got[2] / n_samples - exact_lower) < 5 * theta_lower.std() / math.sqrt(n_samples)
    assert abs(got[3] / n_samples - exact_upper) < 5 * theta_upper.std() / math.sqrt(n_samples)


def _exact_two_point(s):
    """z = (-1, 2): theta_lower = w_2 (2 w_1 + w_2), theta_upper = 1 - w_1^2, DP: 1 - w_1^2."""
    if s == 0:
        return 1 / math.sqrt(2), 1 / math.sqrt(2)
    upper = 1.0 - (1.0 - 1.0 / math.sqrt(2)) ** (s + 1.0)  # w_1 ~ Beta(1, s + 1)

    def integrand(t):
        # w_2 = t ~ Beta(1, s + 1); given t, w_1/(1 - t) ~ Beta(1, s) with survival (1 - x)^s.
        c = (0.5 - t * t) / (2 * t) / (1 - t)
        survival = 1.0 if c <= 0 else (0.0 if c >= 1 else (1 - c) ** s)
        return (s + 1) * (1 - t) ** s * survival

    lower = integrate.quad(integrand, 0, 1, points=[0.5, 1 / math.sqrt(2)], limit=200)[0]
    return lower, upper


@pytest.mark.parametrize("prior, s", [("dp", 0.0), ("idp", IDP_PRIOR_STRENGTH), ("idp", 2.0)])
def test_probabilities_within_standard_error_of_exact_values(prior, s):
    n_samples = 100_000
    exact_lower, exact_upper = _exact_two_point(s)
    res = bayesian_signed_rank([-1.0, 2.0], [0.0, 0.0], prior=prior,
                               prior_strength=None if prior == "dp" else s,
                               n_samples=n_samples, random_state=11)
    for got, exact in ((res.lower, exact_lower), (res.upper, exact_upper)):
        se = math.sqrt(exact * (1 - exact) / n_samples)
        assert abs(got - exact) < 4.5 * se  # two-sided false-failure rate ~7e-6 per check


def test_demsar_published_numbers():
    # statistics-libraries.md: own DP s->0 / IDP lower / upper = 0.9992 / 0.989 / 0.9993 (from
    # a Monte Carlo of its own); 200 000 samples here give SE <= 2.3e-4 for these values.
    dp = bayesian_signed_rank(C45M, C45, prior="dp", n_samples=200_000, random_state=1)
    idp = bayesian_signed_rank(C45M, C45, n_samples=200_000, random_state=1)
    assert dp.lower == pytest.approx(0.9992, abs=4e-4)
    assert idp.lower == pytest.approx(0.989, abs=1.5e-3)
    assert idp.upper == pytest.approx(0.9993, abs=4e-4)
    assert dp.decision == idp.decision == "x"
    assert bayesian_signed_rank(C45, C45M, random_state=1).decision == "y"


def test_same_seed_same_result_any_thread_count():
    z = np.random.default_rng(0).normal(0.02, 0.1, 300)
    first = bayesian_signed_rank(z, np.zeros(300), rope=0.01, n_samples=5003, random_state=9)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        second = bayesian_signed_rank(z, np.zeros(300), rope=0.01, n_samples=5003,
                                      random_state=9)
    finally:
        numba.set_num_threads(old)
    assert first == second
    rng = np.random.default_rng(9)
    a = signed_rank_prob(z, 2000, rng)
    b = signed_rank_prob(z, 2000, rng)
    assert a != b  # the caller's Generator advances
    assert signed_rank_prob(z, 2000, np.random.default_rng(9)) == a


def test_bounds_order_and_rope_probabilities():
    rng = np.random.default_rng(2)
    x, y = rng.normal(0.03, 0.1, 25), rng.normal(0.0, 0.1, 25)
    idp = bayesian_signed_rank(x, y, rope=0.02, n_samples=20_000, random_state=0)
    dp = bayesian_signed_rank(x, y, prior="dp", rope=0.02, n_samples=20_000, random_state=0)
    assert idp.lower <= dp.lower <= idp.upper or abs(dp.lower - idp.lower) < 0.02
    for field in ("prob_x_better", "prob_equivalent", "prob_y_better"):
        lo, hi = getattr(idp, field)
        assert 0 <= lo <= hi <= 1
        d_lo, d_hi = getattr(dp, field)
        assert d_lo == d_hi
    total = dp.prob_x_better[0] + dp.prob_equivalent[0] + dp.prob_y_better[0]
    assert total == pytest.approx(1.0, abs=1e-12)
    # Swapping x and y swaps the roles; the weights land on other data (they follow the
    # sorted order), so the two estimates agree within MC error: SE of the difference
    # <= sqrt(2 * 0.25 / 20 000) = 0.005, tolerance 4 SE.
    swapped = bayesian_signed_rank(y, x, prior="dp", rope=0.02, n_samples=20_000, random_state=0)
    assert abs(swapped.prob_y_better[0] - dp.prob_x_better[0]) < 0.02
    assert abs(swapped.prob_x_better[0] - dp.prob_y_better[0]) < 0.02
    assert bayesian_signed_rank(x, y, n_samples=100, random_state=0).prob_x_better is None


def test_all_differences_zero():
    dp = bayesian_signed_rank([1, 2, 3], [1, 2, 3], prior="dp", n_samples=1000, random_state=0)
    idp = bayesian_signed_rank([1, 2, 3], [1, 2, 3], n_samples=1000, random_state=0)
    assert (dp.lower, dp.upper, dp.decision) == (0.0, 0.0, "y")
    assert (idp.lower, idp.upper, idp.decision) == (0.0, 1.0, "indeterminate")
    roped = bayesian_signed_rank([1, 2, 3], [1, 2, 3], prior="dp", rope=0.1, n_samples=1000)
    assert roped.prob_equivalent == (1.0, 1.0)


def test_decision_follows_expected_loss_threshold():
    res = bayesian_signed_rank(C45M, C45, n_samples=50_000, random_state=1)
    assert res.threshold == 0.5 and res.decision == "x"
    # lower ~0.989, upper ~0.9995: a threshold between them is indeterminate (eq. (9) rules).
    strict = bayesian_signed_rank(C45M, C45, loss=(1, 199), n_samples=50_000, random_state=1)
    assert strict.threshold == pytest.approx(0.995)
    assert strict.lower <= 0.995 < strict.upper and strict.decision == "indeterminate"
    dp = bayesian_signed_rank(C45M, C45, prior="dp", loss=(1, 199), random_state=1)
    assert dp.decision == "x"  # the DP never suspends judgement
    assert bayesian_signed_rank(C45M, C45, loss=(1, 1e6), random_state=1).decision == "y"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(prior="bootstrap"), ValueError, "prior"),
        (dict(prior="dp", prior_strength=0.5), ValueError, "prior_strength"),
        (dict(prior_strength=0.0), ValueError, "prior_strength"),
        (dict(prior_strength="big"), TypeError, "prior_strength"),
        (dict(rope=-0.1), ValueError, "rope"),
        (dict(loss=(1, 0)), ValueError, r"loss\[1\]"),
        (dict(loss=3), TypeError, "loss"),
        (dict(n_samples=0), ValueError, "n_samples"),
        (dict(n_samples=10.5), TypeError, "n_samples"),
        (dict(random_state="seed"), TypeError, "random_state"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        bayesian_signed_rank(C45M, C45, **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match="same length"):
        bayesian_signed_rank([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="`x` must be finite"):
        bayesian_signed_rank([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="`y`"):
        bayesian_signed_rank([1, 2], [[1, 2]])
    assert bayesian_signed_rank([0.2], [0.0], prior="dp", n_samples=10).lower == 1.0


def test_invariant_to_positive_rescaling_of_the_scores():
    # theta depends on z only through the signs of z_i + z_j (and of z_i + z_j -+ 2 rope), so
    # rescaling scores and rope by a power of two (exact in binary) changes nothing at all.
    rng = np.random.default_rng(8)
    x, y = rng.normal(0.02, 0.1, 60), rng.normal(0.0, 0.1, 60)
    base = bayesian_signed_rank(x, y, rope=0.01, n_samples=3000, random_state=4)
    scaled = bayesian_signed_rank(8 * x, 8 * y, rope=8 * 0.01, n_samples=3000, random_state=4)
    for field in ("lower", "upper", "prob_x_better", "prob_equivalent", "prob_y_better"):
        assert getattr(base, field) == getattr(scaled, field)


# ----------------------------- batched over pairs, missing entries, prior on the tie (pruner)


def test_batched_signed_rank_is_signed_rank_prob_in_the_dp_limit():
    # The one cross-check of the batched variant against the single-pair kernel: with no
    # prior mass (s = 0, the Bayesian bootstrap) both are the DP posterior of theta, and
    # P(theta(z) < 1/2) = P(theta(-z) > 1/2) since H(-x) = 1 - H(x). Both Monte Carlo over
    # 40,000 draws: the SE of the difference is under 0.0035, so 0.015 is more than 4 SE.
    z = np.r_[C45M - C45, 0.004, -0.03][None, :]  # a few ties and near-ties
    below, _ = signed_rank_prob_below_batched(z, np.ones_like(z, dtype=bool), 0.0, 0.0, 40_000,
                                              np.random.default_rng(11))
    lower, upper = signed_rank_prob(-z[0], 40_000, np.random.default_rng(12), prior="dp")
    assert lower == upper
    assert 0.01 < below[0] < 0.99  # informative, not saturated
    assert below[0] == pytest.approx(lower, abs=0.015)


def test_batched_signed_rank_on_the_tie_matches_baycomp():
    # baycomp's SignedRankTest without a rope samples theta = sum_ij w_i w_j H(z_i + z_j) with
    # the prior pseudo-observation at 0: our posterior. Same Monte Carlo tolerance argument as
    # above (SE of the difference < 0.004 with 20,000 draws each).
    rng = np.random.default_rng(3)
    ref = rng.normal(size=15)
    trial = ref - 0.3 + rng.normal(scale=0.5, size=15)
    baycomp = pytest.importorskip("baycomp")
    samples = baycomp.SignedRankTest.sample(ref, trial, rope=0, prior=1.0, nsamples=20000,
                                            random_state=2)
    theta = samples[:, 2]
    worse, equiv = signed_rank_prob_below_batched(
        (trial - ref)[None, :], np.ones((1, 15), dtype=bool), 1.0, 0.1, 20000,
        np.random.default_rng(0),
    )
    assert 0.5 < worse[0] < 0.999  # the case is informative, not saturated
    assert worse[0] == pytest.approx(np.mean(theta < 0.5), abs=0.02)
    assert equiv[0] == pytest.approx(np.mean(np.abs(theta - 0.5) < 0.1), abs=0.02)


def test_batched_signed_rank_ignores_missing_entries():
    # A step the reference lacks must weigh nothing: the batched computation with a mask
    # equals the computation on the common steps alone, draw for draw up to Monte Carlo.
    rng = np.random.default_rng(4)
    diffs = rng.normal(-0.2, 1.0, size=12)
    present = np.ones(12, dtype=bool)
    present[[2, 5, 9]] = False
    masked = np.where(present, diffs, 0.0)
    w_masked, _ = signed_rank_prob_below_batched(
        masked[None], present[None], 1.0, 0.0, 20000, np.random.default_rng(5))
    w_common, _ = signed_rank_prob_below_batched(
        diffs[present][None], np.ones((1, 9), dtype=bool), 1.0, 0.0, 20000,
        np.random.default_rng(6))
    assert w_masked[0] == pytest.approx(w_common[0], abs=0.02)


def test_batched_mean_is_the_bayesian_bootstrap_of_the_mean_difference():
    # theta = sum_i w_i Z_i with (w_0, ..., w_n) ~ Dir(s, 1, ..., 1) and Z_0 = 0, computed here
    # draw by draw with Generator.dirichlet (another path); both are Monte Carlo over 20,000
    # draws, so the two probabilities differ by at most ~4 SE of the difference (0.005 each).
    rng = np.random.default_rng(7)
    diffs = rng.normal(-0.15, 1.0, size=14)
    w = np.random.default_rng(8).dirichlet(np.r_[1.0, np.ones(14)], size=20000)
    theta = w @ np.r_[0.0, diffs]
    worse, equiv = mean_prob_below_batched(
        diffs[None], np.ones((1, 14), dtype=bool), 1.0, 0.1, 20000, np.random.default_rng(9))
    assert 0.5 < worse[0] < 0.99  # informative, not saturated
    assert worse[0] == pytest.approx(np.mean(theta < 0), abs=0.02)
    assert equiv[0] == pytest.approx(np.mean(np.abs(theta) <= 0.1), abs=0.02)
