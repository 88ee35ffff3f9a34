"""Bayesian Friedman test (Benavoli et al. 2015, Theorem 1, eq. (19)) and its incremental accumulator."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import f as f_dist
from scipy.stats import rankdata

from racer.stats import (
    FriedmanAccumulator,
    auto_min_blocks,
    bayesian_friedman,
    bayesian_friedman_from_sums,
)


def ranks_best_first(x):
    return rankdata(-x, axis=1)


def test_moments_match_monte_carlo_over_dirichlet():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 5)) + np.array([0.0, 0.2, 0.4, 0.6, 0.8])
    x[3, 1] = x[3, 2]  # a tie: average ranks
    s = 2.0
    res = bayesian_friedman(x, prior_strength=s, method="montecarlo", random_state=0)
    ranks = ranks_best_first(x)
    m = x.shape[1]
    support = np.vstack([np.full(m, (m + 1) / 2), ranks])  # A = [R0, r_1..r_n]
    n_draws = 200_000
    weights = rng.dirichlet(np.r_[s, np.ones(len(ranks))], size=n_draws)
    draws = weights @ support  # Theorem 1, eq. (15)
    mc_mean = draws.mean(axis=0)
    mc_cov = np.cov(draws, rowvar=False)
    var = np.diag(res.covariance)
    # Mean: 5 standard errors sqrt(var / N).
    assert np.all(np.abs(mc_mean - res.mean_ranks) <= 5 * np.sqrt(var / n_draws))
    # Covariance: SE of a sample covariance ~ sqrt((var_i var_j + cov_ij^2) / N); 5 SE.
    se_cov = np.sqrt((np.outer(var, var) + res.covariance**2) / n_draws)
    assert np.all(np.abs(mc_cov - res.covariance) <= 5 * se_cov)


def test_moments_match_literal_eq_17():
    # Eq. (17) term by term with the Dirichlet moments E[w0^2], E[w w^T], E[w0 w].
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 4))
    s = 0.7
    res = bayesian_friedman(x, prior_strength=s, method="montecarlo", random_state=0)
    R = ranks_best_first(x).T  # (m, n) as in the paper
    m, n = R.shape
    R0 = np.full(m, (m + 1) / 2)
    alpha = np.r_[s, np.ones(n)]
    a0 = alpha.sum()
    second = (np.diag(alpha) + np.outer(alpha, alpha)) / (a0 * (a0 + 1))  # E[w_i w_j]
    mean = s * R0 / a0 + R.sum(axis=1) / a0  # eq. (16)
    cov = (
        second[0, 0] * np.outer(R0, R0)
        + R @ second[1:, 1:] @ R.T
        + np.outer(R0, second[0, 1:] @ R.T)
        + np.outer(R @ second[1:, 0], R0)
        - np.outer(mean, mean)
    )
    np.testing.assert_allclose(res.mean_ranks, mean, rtol=1e-12)
    np.testing.assert_allclose(res.covariance, cov, atol=1e-12)


def test_ellipsoid_statistic_and_threshold_direct():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 5)) + np.array([0.0, 0.1, 0.2, 0.5, 0.6])
    res = bayesian_friedman(x, method="ellipsoid")
    m, n = 5, 40
    d = res.mean_ranks - (m + 1) / 2
    # Any m-1 coordinates give the same form (the ranks sum to a constant): drop the first.
    direct = d[1:] @ np.linalg.inv(res.covariance[1:, 1:]) @ d[1:]
    assert res.statistic == pytest.approx(direct, rel=1e-9)
    # ... and it equals the pseudo-inverse form on all m coordinates.
    assert res.statistic == pytest.approx(d @ np.linalg.pinv(res.covariance) @ d, rel=1e-7)
    rho = f_dist.ppf(0.95, m - 1, n - m + 1) * (n - 1) * (m - 1) / (n - m + 1)
    assert res.threshold == pytest.approx(rho, rel=1e-12)
    # The decision is compared only away from the boundary: `direct` and `rho` come from other
    # computations (inverse vs Cholesky, scipy.stats vs scipy.special), so right at it they
    # could fall on either side by rounding.
    assert abs(direct - rho) > 1e-6 * rho
    assert res.reject == (direct > rho)
    assert res.method == "ellipsoid" and res.n_samples == 0


def test_degenerate_rankings():
    # Every block ranks the candidates the same way: the posterior lies on the segment from
    # R0 to r, and d^T cov^+ d = n (a0 + 1) / s in closed form (two-point Dirichlet).
    n, s = 20, 1.0
    x = np.tile([4.0, 3.0, 2.0, 1.0], (n, 1))
    res = bayesian_friedman(x, prior_strength=s, method="ellipsoid")
    assert res.statistic == pytest.approx(n * (s + n + 1) / s, rel=1e-6)
    assert res.reject
    # All candidates identical in every block: the posterior is the all-tied point itself.
    same = bayesian_friedman(np.ones((n, 4)), method="ellipsoid")
    assert same.statistic == 0.0 and not same.reject
    mc = bayesian_friedman(np.ones((3, 4)), method="montecarlo", random_state=0)
    assert not mc.reject


def test_bayesian_bootstrap_limit_gives_friedman_mean_ranks():
    # Eq. (21): s -> 0 gives the classical mean ranks.
    x = np.random.default_rng(3).normal(size=(9, 4))
    res = bayesian_friedman(x, prior_strength=1e-10, method="montecarlo", random_state=0)
    np.testing.assert_allclose(res.mean_ranks, ranks_best_first(x).mean(axis=0), atol=1e-8)


def test_montecarlo_statistic_is_scaled_friedman_chi_square_in_the_limit():
    # With s -> 0 the posterior mean is the mean-rank vector, so the all-tied point's squared
    # distance is SciPy's Friedman statistic times m(m+1)/(12n) (no ties in the data).
    from scipy.stats import friedmanchisquare

    x = np.random.default_rng(21).normal(size=(11, 5))
    res = bayesian_friedman(x, prior_strength=1e-12, method="montecarlo", random_state=0)
    chi2 = friedmanchisquare(*x.T).statistic
    n, m = x.shape
    assert res.statistic == pytest.approx(chi2 * m * (m + 1) / (12 * n), rel=1e-9)


def test_rank_orientation_and_maximize():
    x = np.tile([1.0, 2.0, 3.0], (6, 1))
    up = bayesian_friedman(x, random_state=0)
    down = bayesian_friedman(-x, maximize=False, random_state=0)
    np.testing.assert_allclose(up.mean_ranks, down.mean_ranks)
    assert up.mean_ranks[2] < up.mean_ranks[0]  # rank 1 = best = largest score


def null_rejection_rate(m, n, n_datasets, method, seed):
    rng = np.random.default_rng(seed)
    rejections = 0
    for r in range(n_datasets):
        x = rng.normal(size=(n, m))
        res = bayesian_friedman(x, method=method, n_samples=1000, random_state=r)
        rejections += res.reject
    return rejections / n_datasets


def test_montecarlo_region_calibrated_under_null():
    # Identical candidates (i.i.d. normal scores): the all-tied point should fall outside the
    # 95% region in about 5% of data sets. 400 data sets: binomial SE = sqrt(.05*.95/400)
    # = 0.011; 3 SE band. (m, n) = (10, 10) is in the regime the docs call calibrated.
    rate = null_rejection_rate(10, 10, 400, "montecarlo", seed=10)
    assert abs(rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / 400), rate


def test_ellipsoid_calibrated_under_null_where_auto_uses_it():
    # Past the auto switch the Hotelling ellipsoid is close to nominal but slightly liberal
    # (0.057-0.066 over 2000 data sets at m = 3..20, see the docs: a normal approximation of
    # discrete rank vectors). 1000 data sets: SE = 0.0069; allow that 0.015 bias + 3 SE.
    # m = 10, n = 20 (the switch is at 15); at m = 5, n = 15 this seed gives 0.079, also
    # inside the band, which is why the band allows for the bias.
    m = 10
    n = auto_min_blocks(m) + 5
    rate = null_rejection_rate(m, n, 1000, "ellipsoid", seed=11)
    assert abs(rate - 0.05) <= 0.015 + 3 * np.sqrt(0.05 * 0.95 / 1000), rate


def test_montecarlo_region_conservative_with_many_candidates_few_blocks():
    # Documented limitation: m >> n leaves the posterior on n+1 points; the region then
    # rejects less than 5% under the null. 300 data sets; 0.05 - 2 SE = 0.025.
    rate = null_rejection_rate(30, 8, 300, "montecarlo", seed=12)
    assert rate < 0.05 - 2 * np.sqrt(0.05 * 0.95 / 300), rate


def test_montecarlo_region_has_power():
    # One candidate clearly better: rejection in nearly every data set (n < m - 1 too).
    rng = np.random.default_rng(13)
    hits = 0
    for r in range(60):
        x = rng.normal(size=(6, 8))
        x[:, 0] += 3.0
        hits += bayesian_friedman(x, method="montecarlo", n_samples=1000, random_state=r).reject
    assert hits >= 54  # >= 90%


def test_tied_point_level_consistent_with_reject():
    rng = np.random.default_rng(14)
    for r in range(20):
        x = rng.normal(size=(8, 4)) + rng.normal(size=4) * 0.5
        res = bayesian_friedman(x, method="montecarlo", n_samples=2000, random_state=r)
        assert res.reject == (res.statistic > res.threshold)
        if res.reject:
            assert res.tied_point_level >= 0.95 - 1e-3
        else:
            assert res.tied_point_level <= 0.95 + 1e-3
    x = rng.normal(size=(60, 4)) + [0, 0, 0, 0.4]
    e = bayesian_friedman(x, method="ellipsoid")
    assert e.reject == (e.tied_point_level > 0.95)


def test_auto_switch():
    x = np.random.default_rng(15).normal(size=(30, 6))
    assert auto_min_blocks(6) == 10 and auto_min_blocks(40) == 60
    assert bayesian_friedman(x[:10], random_state=0).method == "ellipsoid"
    assert bayesian_friedman(x[:9], random_state=0).method == "montecarlo"


def test_same_seed_same_result():
    x = np.random.default_rng(16).normal(size=(6, 5))
    a = bayesian_friedman(x, random_state=3)
    b = bayesian_friedman(x, random_state=3)
    assert a.threshold == b.threshold and a.tied_point_level == b.tied_point_level
    c = bayesian_friedman(x, random_state=4)
    assert c.threshold != a.threshold


def test_accumulator_matches_batch_incrementally_and_after_elimination():
    rng = np.random.default_rng(17)
    x = rng.normal(size=(40, 6)) + np.linspace(0, 1, 6)
    ids = np.arange(6)
    acc = FriedmanAccumulator(prior_strength=1.5)
    for n in (8, 9, 20, 40):
        acc.update(x[:n], ids)
        inc = acc.result(method="montecarlo", random_state=1)
        batch = bayesian_friedman(x[:n], prior_strength=1.5, method="montecarlo", random_state=1)
        np.testing.assert_allclose(inc.mean_ranks, batch.mean_ranks, rtol=1e-12)
        np.testing.assert_allclose(inc.covariance, batch.covariance, atol=1e-12)
        assert inc.threshold == pytest.approx(batch.threshold, rel=1e-12)
    assert acc.n_rebuilds == 1
    keep = np.array([0, 2, 3, 5])
    acc.update(x[:, keep], ids[keep])  # candidates 1 and 4 left: ranks among survivors
    assert acc.n_rebuilds == 2
    batch = bayesian_friedman(x[:, keep], prior_strength=1.5, method="ellipsoid")
    inc = acc.result(method="ellipsoid")
    np.testing.assert_allclose(inc.mean_ranks, batch.mean_ranks, rtol=1e-12)
    assert inc.statistic == pytest.approx(batch.statistic, rel=1e-9)


def test_accumulator_minimize():
    x = np.random.default_rng(18).normal(size=(15, 4))
    acc = FriedmanAccumulator(maximize=False).update(x)
    batch = bayesian_friedman(x, maximize=False, method="ellipsoid")
    np.testing.assert_allclose(acc.result(method="ellipsoid").mean_ranks, batch.mean_ranks)


def test_validation():
    x = np.random.default_rng(19).normal(size=(4, 6))
    with pytest.raises(ValueError, match="ellipsoid"):
        bayesian_friedman(x, method="ellipsoid")
    with pytest.raises(ValueError, match="method"):
        bayesian_friedman(x, method="exact")
    with pytest.raises(ValueError, match="credibility"):
        bayesian_friedman(x, credibility=1.0)
    with pytest.raises(ValueError, match="prior_strength"):
        bayesian_friedman(x, prior_strength=-1)
    with pytest.raises(ValueError, match="scores"):
        bayesian_friedman(np.ones((4, 1)))
    with pytest.raises(ValueError, match="finite"):
        bayesian_friedman(np.array([[1.0, np.nan], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="update"):
        FriedmanAccumulator().result()
    with pytest.raises(ValueError, match="ids"):
        FriedmanAccumulator().update(x, ids=np.arange(3))


def test_dataframe_names():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(np.random.default_rng(20).normal(size=(5, 3)), columns=["a", "b", "c"])
    assert bayesian_friedman(df, random_state=0).names == ["a", "b", "c"]


def test_accumulator_random_race_matches_batch():
    # A random race: blocks arrive in bursts, random survivors leave; after every update
    # the accumulator's moments equal a from-scratch computation on the survivors.
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=25, deadline=None)
    @hypothesis.given(
        seed=st.integers(0, 2**32 - 1),
        bursts=st.lists(st.integers(1, 4), min_size=1, max_size=6),
        drops=st.lists(st.booleans(), min_size=6, max_size=6),
    )
    def check(seed, bursts, drops):
        rng = np.random.default_rng(seed)
        m = 6
        x = np.round(rng.normal(size=(sum(bursts), m)), 1)  # ties happen
        ids = np.arange(m)
        acc = FriedmanAccumulator(prior_strength=0.5)
        seen = 0
        for burst, drop in zip(bursts, drops):
            seen += burst
            if drop and ids.size > 2:
                ids = np.delete(ids, rng.integers(ids.size))
            acc.update(x[:seen][:, ids], ids)
            batch = bayesian_friedman(x[:seen][:, ids], prior_strength=0.5, method="montecarlo",
                                      n_samples=100, random_state=0)
            got = acc.result(method="montecarlo", n_samples=100, random_state=0)
            np.testing.assert_allclose(got.mean_ranks, batch.mean_ranks, rtol=1e-12)
            np.testing.assert_allclose(got.covariance, batch.covariance, atol=1e-12)

    check()


@pytest.mark.parametrize("method", ["ellipsoid", "montecarlo"])
def test_from_sums_equals_the_batch_test(method):
    x = np.random.default_rng(21).normal(size=(30, 5)) + [0.0, 0.1, 0.2, 0.6, 0.9]
    r = ranks_best_first(x)
    got = bayesian_friedman_from_sums(r.sum(axis=0), r.T @ r, 30, ranks=r, method=method,
                                      credibility=0.9, random_state=3)
    ref = bayesian_friedman(x, method=method, credibility=0.9, random_state=3)
    # Same formulas on the same sums (rankdata vs block_ranks give identical ranks).
    assert got.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert got.threshold == pytest.approx(ref.threshold, rel=1e-12)
    assert got.reject == ref.reject


def test_from_sums_below_m_gives_the_support_form_and_no_threshold():
    # n = 3 <= m - 1 = 5: eq. 19's threshold is undefined. The statistic is the quadratic form
    # on the posterior's support, checked against the pseudo-inverse of the covariance
    # written out from eq. 16-17.
    x = np.random.default_rng(22).normal(size=(3, 6)) + np.arange(6)
    r = ranks_best_first(x)
    s, m, n = 1.0, 6, 3
    res = bayesian_friedman_from_sums(r.sum(axis=0), r.T @ r, n, prior_strength=s)
    r0 = np.full(m, (m + 1) / 2)
    mean = (s * r0 + r.sum(axis=0)) / (s + n)
    cov = ((s * np.outer(r0, r0) + r.T @ r) / (s + n) - np.outer(mean, mean)) / (s + n + 1)
    d = (mean - r0)[:-1]
    expected = d @ np.linalg.pinv(cov[:-1, :-1], hermitian=True) @ d
    assert res.statistic == pytest.approx(expected, rel=1e-8)
    assert np.isnan(res.threshold) and not res.reject


def test_from_sums_validation():
    r = ranks_best_first(np.random.default_rng(23).normal(size=(6, 3)))
    with pytest.raises(ValueError, match="rank_outer"):
        bayesian_friedman_from_sums(r.sum(axis=0), np.eye(2), 6)
    with pytest.raises(ValueError, match="rank_sums"):
        bayesian_friedman_from_sums([1.0], np.eye(1), 6)
    with pytest.raises(ValueError, match="ranks"):
        bayesian_friedman_from_sums(r.sum(axis=0), r.T @ r, 6, method="montecarlo")
    with pytest.raises(ValueError, match="n_blocks"):
        bayesian_friedman_from_sums(r.sum(axis=0), r.T @ r, 0)
