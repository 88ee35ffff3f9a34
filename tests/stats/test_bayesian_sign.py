"""Bayesian sign test and the all-pairs racing primitives (racer.stats.bayesian_sign).

Closed forms are checked against the literal Dirichlet-process definition by Monte Carlo
(w ~ Dir(s, 1, ..., 1), normalised, the prior point at the tie scoring 1/2), against
adaptive quadrature, against baycomp where its definitions coincide with the papers', and
against Benavoli et al.'s (2015) Table 1. Monte Carlo tolerances are 4.5 standard errors of a binomial
proportion, sqrt(p (1 - p) / S) <= 0.5 / sqrt(S), unless stated otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betainc

from racer.stats import (
    SignCounts,
    bayesian_sign_test,
    prob_greater_from_counts,
    prob_greater_matrix,
    prob_indistinguishable,
)
from racer.stats import _kernels
from racer.stats.bayesian_sign import _prob_each_largest

baycomp = pytest.importorskip("baycomp")


def paired_from_counts(n_greater, n_ties, n_less):
    """x, y with exactly these counts of x > y, x == y, x < y (in a shuffled order)."""
    x = np.r_[np.ones(n_greater), np.zeros(n_ties), np.zeros(n_less)]
    y = np.r_[np.zeros(n_greater), np.zeros(n_ties), np.ones(n_less)]
    order = np.random.default_rng(n_greater * 1000 + n_less).permutation(x.size)
    return x[order], y[order]


def literal_theta_samples(x, y, s, n_samples, seed):
    """theta = w_0 * 1/2 + sum_i w_i H(x_i - y_i), w ~ Dir(s, 1, ..., 1): the seed's eq. (13)."""
    rng = np.random.default_rng(seed)
    heaviside = np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0))
    gammas = rng.standard_gamma(np.r_[s, np.ones(x.size)], size=(n_samples, x.size + 1))
    w = gammas / gammas.sum(axis=1, keepdims=True)
    return w[:, 0] * 0.5 + w[:, 1:] @ heaviside


def mc_tolerance(n_samples):
    return 4.5 * 0.5 / np.sqrt(n_samples)


# ---------------------------------------------------------------------------------------------
# Published numbers
# ---------------------------------------------------------------------------------------------


def test_seed002_table1_marginal_column():
    # Table 1: "X2 < X3" style statements with 20 of 30 wins -> 1 - P(H) = 0.0307,
    # and X3 < X4 with 15 of 30 -> 0.5000; the sign-test p-values of the same counts
    # (0.0494, 0.5722) pin the reading of the counts (no ties, n = 30).
    for wins, posterior_error, pvalue in [(20, 0.0307, 0.0494), (15, 0.5000, 0.5722)]:
        x, y = paired_from_counts(wins, 0, 30 - wins)
        res = bayesian_sign_test(x, y, n_samples=0)
        assert round(1 - res.prob_greater, 4) == posterior_error
        assert round(stats.binomtest(wins, 30, 0.5, alternative="greater").pvalue, 4) == pvalue
    # The same from the all-pairs primitive.
    P = prob_greater_matrix(np.array([[0, 20], [10, 0]]))
    assert round(1 - P[0, 1], 4) == 0.0307


def test_closed_form_is_binomial_cdf():
    # I_{1/2}(n_l, n_g) = P(Bin(n_g + n_l - 1, 1/2) <= n_g - 1): an independent formula.
    g, l = np.meshgrid(np.arange(1, 60), np.arange(1, 60), indexing="ij")
    expected = stats.binom.cdf(g - 1, g + l - 1, 0.5)
    np.testing.assert_allclose(prob_greater_from_counts(g, l), expected, rtol=1e-11)


# ---------------------------------------------------------------------------------------------
# Closed forms against the literal Dirichlet-process definition
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("s", [1.0, 6.0])
@pytest.mark.parametrize("counts", [(9, 4, 5), (3, 10, 6), (2, 0, 0), (12, 1, 7)])
def test_prob_greater_and_band_match_literal_monte_carlo(counts, s):
    n_samples = 100_000
    x, y = paired_from_counts(*counts)
    theta = literal_theta_samples(x, y, s, n_samples, seed=sum(counts))
    eps = 0.1
    res = bayesian_sign_test(x, y, prior_strength=s, eps=eps, n_samples=0)
    tol = mc_tolerance(n_samples)
    assert abs(res.prob_greater - np.mean(theta > 0.5)) < tol
    assert abs(res.prob_less - np.mean(theta < 0.5)) < tol
    assert abs(res.prob_indistinguishable - np.mean(np.abs(theta - 0.5) < eps)) < tol


def test_prob_greater_does_not_depend_on_prior_or_ties_but_band_does():
    base = bayesian_sign_test(*paired_from_counts(8, 0, 4), n_samples=0)
    with_ties = bayesian_sign_test(*paired_from_counts(8, 7, 4), n_samples=0)
    strong = bayesian_sign_test(*paired_from_counts(8, 0, 4), prior_strength=9.0, n_samples=0)
    # The same closed form I_{1/2}(4, 8) on the same counts, reached through different ties
    # and priors: equal to a few ulp of a probability (<= 1), not necessarily bit for bit.
    assert with_ties.prob_greater == pytest.approx(base.prob_greater, rel=0, abs=1e-15)
    assert strong.prob_greater == pytest.approx(base.prob_greater, rel=0, abs=1e-15)
    # Ties and prior mass sit at theta = 1/2 and pull the posterior into the band.
    assert with_ties.prob_indistinguishable > base.prob_indistinguishable
    assert strong.prob_indistinguishable > base.prob_indistinguishable


def band_by_adaptive_quadrature(a, b, c, eps):
    """Same integral over T itself (not its quantile), by scipy's adaptive quad."""
    delta = 2 * eps

    def integrand(t):
        inside = betainc(a, b, 0.5 * (1 + delta / t)) - betainc(a, b, 0.5 * (1 - delta / t))
        return stats.beta.pdf(t, a + b, c) * inside

    mode = (a + b - 1) / (a + b + c - 2)
    tail = integrate.quad(integrand, delta, 1, points=[mode] if delta < mode < 1 else None,
                          epsabs=1e-13, epsrel=1e-12, limit=500)[0]
    return betainc(a + b, c, delta) + tail


def test_band_gauss_legendre_error_against_adaptive_quadrature():
    # Notes section 1(c) quote about 4e-6 for Q = 48; the worst case over this grid is
    # about 1.2e-5 (few blocks, many ties), so 2e-5 is the documented bound.
    worst = 0.0
    for a, b, ties, s, eps in [
        (3, 10, 6, 1.0, 0.05), (48, 52, 0, 1.0, 0.1), (20, 10, 0, 1.0, 0.05),
        (5, 5, 40, 1.0, 0.05), (100, 120, 30, 2.5, 0.05), (400, 420, 100, 1.0, 0.02),
        (1, 1, 0, 1.0, 0.05), (1, 30, 2, 0.5, 0.2), (7, 8, 0, 1.0, 0.45),
    ]:
        ours = prob_indistinguishable(a, b, a + b + ties, s, eps)
        worst = max(worst, abs(ours - band_by_adaptive_quadrature(a, b, ties + s, eps)))
    assert worst < 2e-5


def test_band_edge_cases():
    # Only ties: theta is exactly 1/2.
    assert prob_indistinguishable(0, 0, 7) == 1.0
    # One-sided counts: theta - 1/2 = -W_l / 2, so the band is P(W_l < 2 eps), a Beta CDF.
    expected = stats.beta.cdf(0.4, 7, 3 + 1.0)
    assert prob_indistinguishable(0, 7, 10, 1.0, 0.2) == pytest.approx(expected, rel=1e-12)
    assert prob_indistinguishable(7, 0, 10, 1.0, 0.2) == pytest.approx(expected, rel=1e-12)
    # eps=0 is an empty band: nothing lies strictly inside, not even theta = 1/2 from ties.
    assert prob_indistinguishable(30, 2, 40, 1.0, 0.0) == 0.0
    assert prob_indistinguishable(0, 0, 7, eps=0.0) == 0.0
    counts = SignCounts.from_scores(np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 3.0]]))
    band = counts.prob_indistinguishable(eps=0.0)
    assert band[0, 1] == band[0, 2] == 0.0
    # Symmetric in wins and losses, and vectorised with broadcasting.
    out = prob_indistinguishable([3, 10], [10, 3], 20)
    # Swapping wins and losses evaluates I_x(b, a) instead of I_x(a, b): equal in exact
    # arithmetic, a few ulp apart in float64 (differences of incomplete betas near 1).
    assert out.shape == (2,) and out[0] == pytest.approx(out[1], rel=0, abs=1e-12)
    assert prob_indistinguishable(np.array([[3, 4]]), 5, np.array([[12], [20]])).shape == (2, 2)


@pytest.mark.parametrize("alpha", [(3, 11, 6), (10, 1, 20), (5, 2.5, 5), (0, 4, 9), (1, 30, 2)])
def test_rope_cell_probabilities_match_dirichlet_argmax(alpha):
    n_samples = 200_000
    rng = np.random.default_rng(7)
    gammas = rng.standard_gamma(np.asarray(alpha, dtype=float), size=(n_samples, 3))
    freq = np.bincount(np.argmax(gammas, axis=1), minlength=3) / n_samples
    ours = _prob_each_largest(alpha)
    assert ours.sum() == pytest.approx(1.0, abs=1e-8)
    np.testing.assert_allclose(ours, freq, atol=mc_tolerance(n_samples))


def test_rope_counts_and_prior_on_rope_cell():
    x = np.array([0.30, 0.10, 0.52, 0.50, 0.9, 0.2, 0.45])
    y = np.array([0.10, 0.30, 0.50, 0.50, 0.1, 0.2, 0.50])
    res = bayesian_sign_test(x, y, rope=0.05, prior_strength=2.0, n_samples=0)
    # d = x - y = [.2, -.2, .02, 0, .8, 0, -.05]; |d| <= rope (the boundary included) is rope.
    assert (res.n_x_better, res.n_rope, res.n_y_better) == (2, 4, 1)
    assert (res.n_greater, res.n_ties, res.n_less) == (3, 2, 2)
    expected = _prob_each_largest([1, 4 + 2.0, 2])
    # The same quadrature on the same Dirichlet parameters; a tolerance all the same, since
    # this checks the counts and the prior placement, not the integration order.
    np.testing.assert_allclose(
        (res.prob_y_better, res.prob_equivalent, res.prob_x_better), expected, rtol=1e-12
    )


# ---------------------------------------------------------------------------------------------
# baycomp
# ---------------------------------------------------------------------------------------------


def test_agrees_with_baycomp_rope_probabilities():
    # Same definition (argmax of Dir(left, rope + s, right)); baycomp adds 1e-4 to every
    # cell, negligible with non-zero counts. baycomp is Monte Carlo with 50,000 draws.
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, 40)
    y = x + rng.normal(0.15, 0.5, 40)
    for rope in (0.1, 0.3):
        p_left, p_rope, p_right = baycomp.SignTest.probs(x, y, rope=rope, random_state=5)
        res = bayesian_sign_test(x, y, rope=rope, n_samples=0)
        tol = mc_tolerance(50_000)
        assert abs(res.prob_x_better - p_left) < tol  # baycomp's "left" is x better
        assert abs(res.prob_equivalent - p_rope) < tol
        assert abs(res.prob_y_better - p_right) < tol


def test_agrees_with_baycomp_samples_on_the_papers_statistic():
    # With rope = 0 baycomp's draws are (theta_x_better, theta_ties + prior, theta_y_better);
    # the papers' Pr[y beats x] = Pr[theta_y_better > theta_x_better] read off those draws
    # must match the closed form.
    x, y = paired_from_counts(6, 5, 11)
    draws = baycomp.SignTest(x, y, rope=0, random_state=11).sample
    res = bayesian_sign_test(x, y, n_samples=0)
    assert abs(np.mean(draws[:, 2] > draws[:, 0]) - res.prob_less) < mc_tolerance(len(draws))


def test_documents_where_baycomp_differs_from_the_papers():
    # Counts (x better, ties, y better) = (3, 10, 6). The papers (Theorem 2, ties count one
    # half): Pr[y beats x] = I_{1/2}(3, 6) = 0.855. baycomp's rope = 0 output renormalises
    # the argmax frequencies of the three cells, p_right / (p_left + p_right) = 0.928,
    # which is a different statistic; our exact argmax probabilities reproduce it.
    x, y = paired_from_counts(3, 10, 6)
    res = bayesian_sign_test(x, y, n_samples=0)
    assert round(res.prob_less, 3) == 0.855
    renormalised = res.prob_y_better / (res.prob_x_better + res.prob_y_better)
    assert round(renormalised, 3) == 0.928
    _, p_right = baycomp.SignTest.probs(x, y, rope=0, random_state=0)
    # Only about 11% of baycomp's draws enter its ratio: SE ~ sqrt(.93 * .07 / 5,500) = 0.0034.
    assert abs(p_right - renormalised) < 4.5 * 0.0034
    assert p_right - res.prob_less > 0.05


# ---------------------------------------------------------------------------------------------
# Incremental counts
# ---------------------------------------------------------------------------------------------


def brute_counts(history, k):
    wins = np.zeros((k, k), dtype=np.int64)
    ties = np.zeros((k, k), dtype=np.int64)
    for block, idx in history:
        for row in block:
            x = np.full(k, np.nan)
            x[idx] = row
            on = np.zeros(k, dtype=bool)
            on[idx] = True
            both = on[:, None] & on[None, :]
            wins += both & (x[:, None] > x[None, :])
            ties += both & (x[:, None] == x[None, :])
    return wins, ties


@pytest.mark.parametrize("seed", range(6))
def test_incremental_counts_equal_recount(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 12))
    counts = SignCounts(k)
    history = []
    for _ in range(8):
        m = int(rng.integers(1, k + 1))
        idx = rng.permutation(k)[:m]
        b = int(rng.choice([0, 1, 3, 20]))  # 20 rows take the candidate-major kernel
        block = rng.integers(0, 4, size=(b, m)).astype(float)  # small integers: many ties
        history.append((block, idx))
        if m < k and rng.random() < 0.5:
            full = np.full((b, k), np.nan)  # full width, NaN in the inactive columns
            full[:, idx] = block
            counts.add_blocks(full, active=idx)
        else:
            counts.add_blocks(block, active=idx)
    wins, ties = brute_counts(history, k)
    np.testing.assert_array_equal(counts.wins, wins)
    np.testing.assert_array_equal(counts.ties, ties)
    assert counts.n_blocks == sum(len(block) for block, _ in history)
    np.testing.assert_array_equal(counts.pair_blocks(), wins + wins.T + ties)


def test_row_and_column_kernels_agree():
    rng = np.random.default_rng(4)
    block = rng.integers(0, 3, size=(30, 9)).astype(float)
    idx = np.arange(9, dtype=np.int64)
    by_rows = [np.zeros((9, 9), dtype=np.int64) for _ in range(2)]
    by_columns = [np.zeros((9, 9), dtype=np.int64) for _ in range(2)]
    _kernels.sign_counts_add_rows(block, idx, *by_rows)
    _kernels.sign_counts_add_columns(np.ascontiguousarray(block.T), idx, *by_columns)
    np.testing.assert_array_equal(by_rows[0], by_columns[0])
    np.testing.assert_array_equal(by_rows[1], by_columns[1])


def test_prob_greater_matrix_matches_closed_form_and_grows_its_table():
    rng = np.random.default_rng(8)
    scores = rng.integers(0, 5, size=(700, 6)).astype(float)  # n beyond the first table
    counts = SignCounts.from_scores(scores)
    P = counts.prob_greater()
    W = counts.wins
    np.testing.assert_allclose(P, prob_greater_from_counts(W, W.T), rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(prob_greater_matrix(W), P)
    assert np.all(np.diag(P) == 0.0)
    sub = counts.prob_greater(active=[4, 1])
    np.testing.assert_array_equal(sub, P[np.ix_([4, 1], [4, 1])])
    # maximize=False is the mirror image.
    np.testing.assert_array_equal(
        SignCounts.from_scores(scores, maximize=False).wins, W.T
    )


def test_table_recurrence_matches_incomplete_beta():
    size = 400
    table = _kernels.sign_prob_greater_table(np.int64(size))
    total = np.repeat(np.arange(size), np.arange(1, size + 1))  # packed by g + l
    g = np.arange(table.size) - total * (total + 1) // 2
    reference = prob_greater_from_counts(g, total - g)
    # Away from float64 underflow the recurrence keeps (g + l) ulp of relative error.
    ok = reference > 1e-290
    np.testing.assert_allclose(table[ok], reference[ok], rtol=1e-12)
    assert np.all(np.abs(table[~ok]) < 1e-280)


def test_past_the_table_cap_the_incomplete_beta_takes_over(monkeypatch):
    from racer.stats import bayesian_sign

    rng = np.random.default_rng(12)
    counts = SignCounts.from_scores(rng.integers(0, 6, size=(300, 5)).astype(float))
    from_table = counts.prob_greater()
    monkeypatch.setattr(bayesian_sign, "_TABLE_MAX_SIZE", 100)
    direct = counts.prob_greater()
    np.testing.assert_allclose(direct, from_table, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(prob_greater_matrix(counts.wins), direct, rtol=0, atol=0)


def test_band_matrix_matches_vectorised_function():
    rng = np.random.default_rng(9)
    counts = SignCounts.from_scores(rng.integers(0, 4, size=(25, 7)).astype(float))
    band = counts.prob_indistinguishable(eps=0.08, prior_strength=1.5, active=[0, 3, 5, 6])
    idx = np.array([0, 3, 5, 6])
    W = counts.wins[np.ix_(idx, idx)]
    expected = prob_indistinguishable(W, W.T, counts.pair_blocks(idx), 1.5, 0.08)
    np.testing.assert_allclose(band, expected, rtol=1e-13)
    np.testing.assert_array_equal(band, band.T)
    assert np.all(np.diag(band) == 1.0)


# ---------------------------------------------------------------------------------------------
# API behaviour
# ---------------------------------------------------------------------------------------------


def test_same_seed_same_samples_and_closed_forms_are_seed_free():
    x, y = paired_from_counts(7, 3, 4)
    a = bayesian_sign_test(x, y, rope=0.0, n_samples=1000, random_state=42)
    b = bayesian_sign_test(x, y, rope=0.0, n_samples=1000, random_state=42)
    c = bayesian_sign_test(x, y, rope=0.0, n_samples=1000, random_state=43)
    np.testing.assert_array_equal(a.posterior_samples, b.posterior_samples)
    assert not np.array_equal(a.posterior_samples, c.posterior_samples)
    assert a.posterior_samples.shape == (1000, 3)
    assert (a.prob_greater, a.prob_x_better) == (c.prob_greater, c.prob_x_better)
    assert bayesian_sign_test(x, y, n_samples=0).posterior_samples is None


def test_direction_symmetry_and_maximize():
    x, y = paired_from_counts(9, 2, 5)
    forward = bayesian_sign_test(x, y, n_samples=0)
    backward = bayesian_sign_test(y, x, n_samples=0)
    minimised = bayesian_sign_test(x, y, n_samples=0, maximize=False)
    # prob_greater and prob_less are the same closed form on the same two counts (a few ulp);
    # the rope cells and the band integrate with the arguments swapped (I_x(b, a) for
    # I_x(a, b), the product of the other cells' CDFs in another order): equal in exact
    # arithmetic only, so compare to a few ulp of the values (which are <= 1).
    assert backward.prob_less == pytest.approx(forward.prob_greater, rel=0, abs=1e-15)
    assert minimised.prob_less == pytest.approx(forward.prob_greater, rel=0, abs=1e-15)
    assert forward.prob_x_better == pytest.approx(backward.prob_y_better, rel=0, abs=1e-12)
    assert forward.prob_indistinguishable == pytest.approx(
        backward.prob_indistinguishable, rel=0, abs=1e-12
    )
    assert minimised.prob_indistinguishable == pytest.approx(
        backward.prob_indistinguishable, rel=0, abs=1e-12
    )
    all_ties = bayesian_sign_test(np.ones(5), np.ones(5), n_samples=0)
    assert (all_ties.prob_greater, all_ties.prob_less) == (0.0, 0.0)
    assert all_ties.prob_indistinguishable == 1.0
    assert "prob_greater=" in repr(forward) and "posterior_samples" not in repr(forward)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(y=[1.0, 2.0]), ValueError, "same length"),
        (dict(x=[1.0, np.nan, 2.0]), ValueError, "`x` must be finite"),
        (dict(prior_strength=0.0), ValueError, "prior_strength"),
        (dict(rope=-0.1), ValueError, "rope"),
        (dict(eps=0.5), ValueError, "eps"),
        (dict(eps=0.7), ValueError, "eps"),
        (dict(n_samples=-1), ValueError, "n_samples"),
        (dict(n_samples=10.5), TypeError, "n_samples"),
        (dict(random_state="seed"), TypeError, "random_state"),
        (dict(maximize="yes"), TypeError, "maximize"),
    ],
)
def test_bad_input_to_the_test(kwargs, error, match):
    args = dict(x=[1.0, 2.0, 3.0], y=[0.0, 2.0, 4.0])
    args.update(kwargs)
    with pytest.raises(error, match=match):
        bayesian_sign_test(args.pop("x"), args.pop("y"), **args)


def test_bad_input_to_the_primitives():
    counts = SignCounts(4)
    with pytest.raises(ValueError, match="columns"):
        counts.add_blocks(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="repeat"):
        counts.add_blocks(np.zeros((1, 2)), active=[1, 1])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        counts.add_blocks(np.zeros((1, 2)), active=[0, 4])
    with pytest.raises(TypeError, match="active"):
        counts.add_blocks(np.zeros((1, 2)), active=[0.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        counts.add_blocks(np.array([[1.0, np.nan, 0.0, 0.0]]))
    counts.add_blocks(np.array([[1.0, np.nan, 0.0, 0.0]]), active=[0, 2, 3])  # NaN is inactive
    assert counts.n_blocks == 1 and counts.wins[0, 2] == 1
    with pytest.raises(ValueError, match="2-D"):
        counts.add_blocks(np.zeros(4))
    with pytest.raises(ValueError, match="read-only"):
        counts.wins[0, 1] = 5
    with pytest.raises(ValueError, match="n_candidates"):
        SignCounts(0)
    with pytest.raises(ValueError, match="exceed"):
        prob_indistinguishable(5, 6, 10)
    with pytest.raises(ValueError, match="n_less"):
        prob_indistinguishable(5, -1, 10)
    with pytest.raises(ValueError, match="whole numbers"):
        prob_indistinguishable(5.5, 1, 10)
    with pytest.raises(ValueError, match="square"):
        prob_greater_matrix(np.zeros((2, 3), dtype=int))
    with pytest.raises(ValueError, match="exceed"):
        prob_greater_matrix(np.array([[0, 4], [3, 0]]), n_blocks=6)
    # n_blocks is optional and does not change the answer (ties drop out).
    wins = np.array([[0, 4], [3, 0]])
    np.testing.assert_array_equal(prob_greater_matrix(wins, 9), prob_greater_matrix(wins))


def test_results_compare_by_their_numbers():
    x, y = paired_from_counts(5, 1, 2)
    first = bayesian_sign_test(x, y, n_samples=10, random_state=1)
    second = bayesian_sign_test(x, y, n_samples=10, random_state=2)
    assert first == second  # the draws differ; the posterior summaries do not


def test_idp_lower_probability_puts_the_pseudo_observation_against():
    # P(Beta(n_g, n_l + s) > 1/2) = P(Bin(n_g + n_l + s - 1, 1/2) <= n_g - 1) for integer s.
    assert prob_greater_from_counts(5, 0, pseudo_against=1.0) == pytest.approx(
        stats.binom.cdf(4, 5, 0.5), abs=1e-14
    )
    assert prob_greater_from_counts(5, 0, pseudo_against=0.0) == 1.0
    assert prob_greater_from_counts(12, 3, pseudo_against=2.0) == pytest.approx(
        stats.binom.cdf(11, 16, 0.5), abs=1e-14
    )
    assert prob_greater_from_counts(0, 3, pseudo_against=1.0) == 0.0
