"""racer.stats.pareto_dominance: the Dirichlet-process posterior of Pareto dominance.

Cross-checked three ways: (a) with one objective against the closed forms of the Bayesian sign
test (Benavoli et al. 2015), (b) frequentist calibration on simulated data sets whose truth is
known, (c) a plain loop over draws, pairs and objectives on the same random stream.
"""

import numpy as np
import pytest

from racer.stats import pareto_dominance
from racer.stats.bayesian_sign import prob_greater_from_counts, prob_indistinguishable
from racer.stats.pareto import nondominated_mask


def _mc_tolerance(p, n_samples):
    # 4.5 standard errors of a binomial proportion: with the handful of comparisons below a
    # false alarm has probability ~1e-5 each; the 1e-4 floor covers p at 0 or 1 (where the
    # estimate is exact) and the band quadrature error of prob_indistinguishable (1.2e-5).
    return 4.5 * np.sqrt(p * (1 - p) / n_samples) + 1e-4


@pytest.mark.parametrize("counts", [(12, 5, 3), (7, 7, 6), (3, 0, 1), (20, 14, 0)])
@pytest.mark.parametrize("prior_strength", [1.0, 0.5])
def test_one_objective_on_signs_is_the_bayesian_sign_test(counts, prior_strength):
    # Scores of 1/0/-1 against a constant 0: the mean difference under the DP posterior is
    # W_greater - W_less = 2 theta - 1 with theta = P(X > Y) + P(X = Y)/2, so
    # P(mean > 0) = P(theta > 1/2) (Theorem 2, closed form) and
    # P(|mean| <= rope) = P(|theta - 1/2| < rope / 2) (the indistinguishability band).
    n_greater, n_less, n_ties = counts
    signs = np.r_[np.ones(n_greater), -np.ones(n_less), np.zeros(n_ties)]
    scores = np.stack([signs, np.zeros_like(signs)], axis=1)[:, :, None]
    n_samples = 40_000
    rope = 0.3
    res = pareto_dominance(scores, rope=0.0, prior_strength=prior_strength,
                           n_samples=n_samples, random_state=1)
    expected = prob_greater_from_counts(n_greater, n_less)
    assert abs(res.prob_dominates[0, 1] - expected) <= _mc_tolerance(expected, n_samples)
    expected_less = prob_greater_from_counts(n_less, n_greater)
    assert abs(res.prob_dominates[1, 0] - expected_less) <= _mc_tolerance(expected_less, n_samples)

    res = pareto_dominance(scores, rope=rope, prior_strength=prior_strength,
                           n_samples=n_samples, random_state=2)
    band = prob_indistinguishable(n_greater, n_less, signs.size,
                                  prior_strength=prior_strength, eps=rope / 2)
    assert abs(res.prob_equivalent[0, 1] - band) <= _mc_tolerance(band, n_samples)
    # With one objective nothing is left for a trade-off: the three events partition.
    total = res.prob_dominates[0, 1] + res.prob_dominates[1, 0] + res.prob_equivalent[0, 1]
    assert total == pytest.approx(1.0, abs=1e-12)


def _brute_force(scores, direction, rope, prior_strength, n_samples, seed):
    # The definitions, one draw, one pair and one objective at a time, on the documented
    # stream: rows of standard_gamma([s, 1, ..., 1]) drawn in order.
    n, m, k = scores.shape
    sign = [1.0 if d == "maximize" else -1.0 for d in direction]
    alpha = np.r_[prior_strength, np.ones(n)]
    gammas = np.random.default_rng(seed).standard_gamma(alpha, size=(n_samples, n + 1))
    dom = np.zeros((m, m))
    equiv = np.zeros((m, m))
    nondom = np.zeros(m)
    for t in range(n_samples):
        total = gammas[t].sum()
        means = np.zeros((m, k))
        for j in range(m):
            for o in range(k):
                for l in range(n):
                    means[j, o] += gammas[t, l + 1] / total * sign[o] * scores[l, j, o]
        dominated = np.zeros(m, dtype=bool)
        for i in range(m):
            for j in range(m):
                d = [means[i, o] - means[j, o] for o in range(k)]
                better = any(d[o] > rope[o] for o in range(k))
                not_worse = all(d[o] >= -rope[o] for o in range(k))
                if better and not_worse:
                    dom[i, j] += 1
                    dominated[j] = True
                if all(abs(d[o]) <= rope[o] for o in range(k)):
                    equiv[i, j] += 1
        nondom += ~dominated
    return dom / n_samples, equiv / n_samples, nondom / n_samples


def test_a_plain_loop_on_the_same_stream_gives_the_same_numbers():
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(7, 4, 3)) + rng.normal(0, 0.5, size=(1, 4, 3))
    direction = ["maximize", "minimize", "maximize"]
    rope = [0.1, 0.0, 0.3]
    n_samples = 600
    res = pareto_dominance(scores, direction=direction, rope=rope, prior_strength=0.7,
                           n_samples=n_samples, random_state=11)
    dom, equiv, nondom = _brute_force(scores, direction, rope, 0.7, n_samples, 11)
    # Same draws, sums in another order: a draw can only flip where a difference lies within
    # rounding (~1e-16) of a rope edge, which 600 continuous draws essentially never do.
    np.testing.assert_array_equal(res.prob_dominates, dom)
    np.testing.assert_array_equal(res.prob_equivalent, equiv)
    np.testing.assert_array_equal(res.prob_nondominated, nondom)
    assert res.direction == tuple(direction)
    np.testing.assert_allclose(res.mean_scores, scores.mean(axis=0))


def test_the_draws_do_not_depend_on_the_chunking(monkeypatch):
    import racer.stats.pareto as pareto

    rng = np.random.default_rng(3)
    scores = rng.normal(size=(9, 3, 2))
    whole = pareto_dominance(scores, rope=0.2, n_samples=500, random_state=4)
    monkeypatch.setattr(pareto, "_CHUNK_ELEMENTS", 64)  # many small chunks
    chunked = pareto_dominance(scores, rope=0.2, n_samples=500, random_state=4)
    np.testing.assert_array_equal(whole.prob_dominates, chunked.prob_dominates)
    np.testing.assert_array_equal(whole.prob_nondominated, chunked.prob_nondominated)


def test_the_posterior_is_calibrated_on_data_sets_with_a_known_truth():
    # Frequentist calibration: true mean differences mu (2 objectives) drawn flat over
    # [-0.5, 0.5]^2, then 40 instances of N(mu, Sigma) differences with correlation +-0.6.
    # Under a flat prior the posterior of the mean is ~N(xbar, Sigma/n) (the Bayesian
    # bootstrap's is that up to O(1/n)), so among the data sets given P(dominates) in a bin,
    # the share where the truth dominates (both mu > 0) must fall in the bin, give or take
    # 2 standard errors of that share (bins with fewer than 40 data sets are not judged).
    rng = np.random.default_rng(2023)
    n_datasets, n, n_samples = 1500, 40, 2000
    probs = np.empty(n_datasets)
    truth = np.empty(n_datasets, dtype=bool)
    for t in range(n_datasets):
        mu = rng.uniform(-0.5, 0.5, size=2)
        rho = 0.6 if t % 2 else -0.6
        cov = np.array([[1.0, rho], [rho, 1.0]])
        diffs = rng.multivariate_normal(mu, cov, size=n)
        scores = np.stack([diffs, np.zeros_like(diffs)], axis=1)  # (n, 2 candidates, 2)
        probs[t] = pareto_dominance(scores, n_samples=n_samples,
                                    random_state=t).prob_dominates[0, 1]
        truth[t] = mu.min() > 0
    edges = np.linspace(0, 1, 11)
    judged = 0
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (probs >= lo) & (probs < hi) if hi < 1 else (probs >= lo)
        count = int(inside.sum())
        if count < 40:
            continue
        judged += 1
        share = truth[inside].mean()
        se = np.sqrt(max(share * (1 - share), 0.05 * 0.95) / count)
        assert lo - 2 * se <= share <= hi + 2 * se, (lo, hi, count, share)
    assert judged >= 6  # the check saw most of the range, not only the two ends
    # Overall: the mean posterior probability is the share of true dominance.
    assert abs(probs.mean() - truth.mean()) <= 3 * np.sqrt(truth.mean() * (1 - truth.mean()) / n_datasets)


def test_one_weight_vector_is_shared_by_the_objectives():
    # Two identical objectives (correlation +1): "dominates" is then the one-objective event
    # on the same draws, so the probability is the one-objective one bit for bit. Weights
    # drawn per objective would instead give about its square (two independent events).
    base = np.random.default_rng(0).normal(0.15, 1.0, size=30)
    together = np.stack([np.stack([base, base], 1), np.zeros((30, 2))], axis=1)
    one = np.stack([base, np.zeros(30)], axis=1)
    p_together = pareto_dominance(together, random_state=0).prob_dominates[0, 1]
    p_one = pareto_dominance(one, random_state=0).prob_dominates[0, 1]
    assert p_together == p_one
    assert p_one > p_one**2 + 0.1  # the two readings are told apart at this sample


def test_probabilities_are_coherent_and_the_seed_fixes_them():
    rng = np.random.default_rng(8)
    scores = rng.normal(size=(15, 5, 2)) + rng.normal(0, 0.4, size=(1, 5, 2))
    res = pareto_dominance(scores, direction="minimize", rope=0.05, random_state=3,
                           n_samples=3000)
    again = pareto_dominance(scores, direction="minimize", rope=0.05, random_state=3,
                             n_samples=3000)
    np.testing.assert_array_equal(res.prob_dominates, again.prob_dominates)
    assert np.all(np.diag(res.prob_dominates) == 0) and np.all(np.diag(res.prob_equivalent) == 1)
    np.testing.assert_array_equal(res.prob_equivalent, res.prob_equivalent.T)
    assert np.all(res.prob_dominates + res.prob_dominates.T + res.prob_equivalent <= 1 + 1e-12)
    assert np.all(res.prob_tradeoff >= 0)
    # Not dominated by anyone is at most not dominated by each one.
    assert np.all(res.prob_nondominated <= 1 - res.prob_dominates.max(axis=0) + 1e-12)
    assert "prob_dominates" in repr(res)


def test_nondominated_mask_keeps_ties_and_drops_the_dominated():
    means = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.5, 0.5], [2.0, -1.0]])
    assert nondominated_mask(means).tolist() == [True, True, True, False, False]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(scores=np.zeros((5, 1, 2))), ValueError, "at least 2 candidates"),
        (dict(scores=np.zeros((5,))), ValueError, "3-D"),
        (dict(scores=np.full((5, 2, 2), np.nan)), ValueError, "finite.*instance 0, candidate 0"),
        (dict(direction=["maximize"]), ValueError, "one direction per objective \\(2\\)"),
        (dict(direction="biggest"), ValueError, "'maximize' or 'minimize'"),
        (dict(direction=3), TypeError, "direction"),
        (dict(rope=-0.1), ValueError, "rope"),
        (dict(rope=[0.1, 0.2, 0.3]), ValueError, "one value per objective \\(2\\)"),
        (dict(rope=True), TypeError, "rope"),
        (dict(prior_strength=0), ValueError, "prior_strength"),
        (dict(n_samples=0), ValueError, "n_samples"),
        (dict(random_state="x"), TypeError, "random_state"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    args = dict(scores=np.random.default_rng(0).normal(size=(5, 3, 2)))
    args.update(kwargs)
    scores = args.pop("scores")
    with pytest.raises(error, match=match):
        pareto_dominance(scores, **args)
