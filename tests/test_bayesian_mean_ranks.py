"""racer.stats.bayesian_mean_ranks: the pooled mean-rank posterior and P(candidate is best)."""

import math

import numpy as np
import pytest
from scipy import stats

from racer.stats import conover, prob_smallest, rank_posterior, rank_posterior_from_sums


def _monte_carlo(loc, scale, df, n_samples, seed):
    """Brute force: draw the shared-scale Student vector and count each argmin."""
    rng = np.random.default_rng(seed)
    loc = np.asarray(loc, float)
    z = rng.standard_normal((n_samples, loc.size))
    if np.isfinite(df):
        z *= np.sqrt(df / rng.chisquare(df, n_samples))[:, None]
    hits = np.bincount(np.argmin(loc + scale * z, axis=1), minlength=loc.size)
    return hits / n_samples


@pytest.mark.parametrize(
    "loc, scale, df",
    [
        ([0.0, 0.3, 1.0, 2.0, 0.1], 0.5, math.inf),
        ([0.0, 0.3, 1.0, 2.0, 0.1], 0.5, 4.0),  # heavy shared tails: the scale mixture matters
        ([0.0, 0.5, 0.5], 1.0, 2.5),
        ([2.0, 0.0, 0.0, 0.0, 9.0, 0.2], 1.5, 60.0),
    ],
)
def test_prob_smallest_matches_monte_carlo(loc, scale, df):
    p = prob_smallest(loc, scale, df)
    mc = _monte_carlo(loc, scale, df, 400_000, seed=3)
    se = np.sqrt(np.maximum(mc * (1 - mc), 1e-12) / 400_000)
    # 5 SE of the Monte Carlo plus 1e-4 for the quadrature (it agrees with 200 nodes to 1e-5)
    assert np.all(np.abs(p - mc) <= 5 * se + 1e-4), (p, mc)
    assert abs(p.sum() - 1.0) < 1e-9


def test_prob_smallest_two_components_closed_form():
    # X1 - X0 ~ N(d, 2 s^2): P(X0 smallest) = Phi(d / (s sqrt 2)); with a shared t scale the
    # difference is Student with the same df.
    for d, s in [(0.0, 1.0), (1.0, 1.0), (3.0, 0.7), (-0.4, 0.2)]:
        p = prob_smallest([0.0, d], s)
        assert abs(p[0] - stats.norm.cdf(d / (s * math.sqrt(2)))) < 1e-9
        p = prob_smallest([0.0, d], s, df=5.0)
        assert abs(p[0] - stats.t.cdf(d / (s * math.sqrt(2)), 5)) < 2e-5


def test_prob_smallest_shift_invariance_and_point_mass():
    loc = np.array([0.3, 1.0, 0.3, 2.0])
    assert np.allclose(prob_smallest(loc, 0.4), prob_smallest(loc + 17.0, 0.4), atol=1e-12)
    assert prob_smallest(loc, 0.0).tolist() == [0.5, 0.0, 0.5, 0.0]
    # far behind the leader: exactly 0, not a denormal from the quadrature
    assert prob_smallest([0.0, 100.0], 1.0)[1] == 0.0


def test_prob_smallest_validates():
    with pytest.raises(ValueError, match="loc"):
        prob_smallest([], 1.0)
    with pytest.raises(ValueError, match="loc"):
        prob_smallest([0.0, np.nan], 1.0)
    with pytest.raises(ValueError, match="scale"):
        prob_smallest([0.0, 1.0], -1.0)
    with pytest.raises(TypeError, match="scale"):
        prob_smallest([0.0, 1.0], "1")
    with pytest.raises(ValueError, match="df"):
        prob_smallest([0.0, 1.0], 1.0, df=0.0)


def test_rank_posterior_is_the_two_way_anova_on_ranks():
    rng = np.random.default_rng(5)
    x = np.round(rng.normal([0.0, 0.2, 0.4, 0.1], 1.0, size=(12, 4)), 1)  # ties included
    res = rank_posterior(x)
    n, m = x.shape
    ranks = stats.rankdata(-x, axis=1)
    assert np.allclose(res.mean_ranks, ranks.mean(axis=0))
    # residual variance of the additive model by least squares on dummies
    design = np.zeros((n * m, n + m - 1))
    for i in range(n):
        for j in range(m):
            design[i * m + j, i] = 1.0
            if j:
                design[i * m + j, n + j - 1] = 1.0
    y = ranks.ravel()
    resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    s2 = resid @ resid / ((n - 1) * (m - 1))
    assert res.df == (n - 1) * (m - 1)
    assert abs(res.scale - math.sqrt(s2 / n)) < 1e-12


def test_rank_posterior_pairs_are_conovers_t():
    # The posterior of a pairwise difference is Student with Conover's statistic: the two-sided
    # credible tail equals Conover's two-sided p-value (racer.stats.conover, itself checked
    # against scikit-posthocs).
    rng = np.random.default_rng(8)
    x = rng.normal([0.0, 0.3, 0.5, 0.1, 0.2], 1.0, size=(15, 5))
    res = rank_posterior(x)
    ref = conover(x)
    for i in range(5):
        for j in range(i + 1, 5):
            t = (res.mean_ranks[j] - res.mean_ranks[i]) / (math.sqrt(2) * res.scale)
            tail = stats.t.sf(abs(t), res.df)
            assert abs(2 * tail - ref.pvalue[i, j]) < 1e-9
    # ... and prob_better(i, j) is Conover's one-sided p-value of "j better than i".
    one_sided = conover(x, alternative="greater")
    i, j = np.triu_indices(5, 1)
    np.testing.assert_allclose(res.prob_better(i, j), one_sided.pvalue[j, i], rtol=1e-9)
    np.testing.assert_allclose(res.prob_better(i, j) + res.prob_better(j, i), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match=r"`j` must hold candidate positions in \[0, 4\]"):
        res.prob_better(0, 5)
    with pytest.raises(ValueError, match="`i` must hold candidate positions"):
        res.prob_better(0.5, 1)
    point = rank_posterior(np.array([[3.0, 2.0, 1.0, 1.0]] * 4))  # every block alike
    assert point.scale == 0 and point.prob_better([0, 2, 3], [1, 3, 0]).tolist() == [1.0, 0.5, 0.0]


def test_rank_posterior_prob_best_matches_posterior_sampling():
    rng = np.random.default_rng(2)
    x = rng.normal([0.0, 0.4, 0.5, 0.45], 1.0, size=(6, 4))  # df = 15: Student tails
    res = rank_posterior(x)
    mc = _monte_carlo(res.mean_ranks, res.scale, res.df, 400_000, seed=9)
    assert np.all(np.abs(res.prob_best - mc) <= 5 * np.sqrt(mc * (1 - mc) / 4e5) + 1e-4)
    assert int(np.argmax(res.prob_best)) == int(np.argmin(res.mean_ranks))


def test_rank_posterior_minimise_and_validation():
    x = np.array([[1.0, 2.0, 3.0], [1.5, 2.5, 0.5], [1.0, 3.0, 2.0]])
    assert np.allclose(rank_posterior(x, maximize=False).mean_ranks,
                       rank_posterior(-x).mean_ranks)
    with pytest.raises(ValueError, match="scores"):
        rank_posterior([1.0, 2.0])
    with pytest.raises(TypeError, match="maximize"):
        rank_posterior(x, maximize=1)


def test_rank_posterior_from_sums_is_rank_posterior():
    # PosteriorBestTest's entry: the same posterior from a race's rank sums, bit for bit.
    x = np.round(np.random.default_rng(4).normal([0.0, 0.3, 0.6, 0.2], 1.0, size=(17, 4)), 0)
    r = stats.rankdata(-x, axis=1)
    got = rank_posterior_from_sums(r.sum(axis=0), float(np.sum(r * r)), 17)
    ref = rank_posterior(x)
    np.testing.assert_array_equal(got.prob_best, ref.prob_best)
    np.testing.assert_array_equal(got.mean_ranks, ref.mean_ranks)
    assert (got.scale, got.df, got.n_blocks, got.n_candidates) == (ref.scale, ref.df, 17, 4)
    with pytest.raises(ValueError, match="`n_blocks` must be >= 2"):
        rank_posterior_from_sums([1.0, 2.0], 5.0, 1)
    with pytest.raises(ValueError, match="`rank_sums` must be the sums of 17 blocks"):
        rank_posterior_from_sums(r.sum(axis=0) + 1, float(np.sum(r * r)), 17)
