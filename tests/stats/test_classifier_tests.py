"""Tests of racer.stats.classifier_tests against baycomp, statsmodels, SciPy and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from baycomp.single import CorrelatedTTest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportions_ztest

from racer.stats import bootstrap_test, correlated_ttest, mcnemar, proportion_test

RTOL = 1e-10


def _predictions(n, acc_a, acc_b, seed, n_classes=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    a = np.where(rng.random(n) < acc_a, y, (y + rng.integers(1, n_classes, n)) % n_classes)
    b = np.where(rng.random(n) < acc_b, y, (y + rng.integers(1, n_classes, n)) % n_classes)
    return y, a, b


# ------------------------------------------------------------------------------------------
# Corrected resampled t-test
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("runs, folds", [(1, 10), (3, 10), (5, 2)])
def test_correlated_ttest_variance_matches_baycomp(runs, folds):
    rng = np.random.default_rng(runs * 100 + folds)
    x = rng.normal(0.80, 0.03, runs * folds)
    y = x + rng.normal(0.01, 0.02, runs * folds)
    mean, var, df = CorrelatedTTest.compute_statistics(x, y, runs)
    # k-fold cross-validation: n_test / (n_train + n_test) = 1 / k.
    res = correlated_ttest(y - x, 1.0 / folds)
    assert res.mean == pytest.approx(mean, rel=RTOL)
    assert res.standard_error**2 == pytest.approx(var, rel=RTOL)
    assert res.df == df
    # baycomp's posterior P(mean < 0) is the one-sided p-value of "y - x greater than 0".
    p_left = stats.t.cdf(0.0, df, mean, np.sqrt(var))
    assert correlated_ttest(y - x, 1 / folds, alternative="greater").pvalue == pytest.approx(
        p_left, rel=1e-9
    )


def test_correlated_ttest_without_correction_is_one_sample_t():
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 1.0, 15)
    for alt in ("two-sided", "greater", "less"):
        ours = correlated_ttest(d, 0.0, alternative=alt)
        ref = stats.ttest_1samp(d, 0.0, alternative=alt)
        assert ours.statistic == pytest.approx(ref.statistic, rel=RTOL)
        assert ours.pvalue == pytest.approx(ref.pvalue, rel=RTOL)


def test_correlated_ttest_zero_variance():
    assert correlated_ttest([0.0, 0.0, 0.0], 0.1).pvalue == 1.0
    res = correlated_ttest([0.01, 0.01, 0.01], 0.1, alternative="greater")
    assert (res.statistic, res.pvalue) == (np.inf, 0.0)


@pytest.mark.parametrize("bad, match", [(1.0, "test_fraction"), (-0.1, "test_fraction")])
def test_correlated_ttest_bad_fraction(bad, match):
    with pytest.raises(ValueError, match=match):
        correlated_ttest([0.1, 0.2], bad)


def test_correlated_ttest_bad_diffs():
    with pytest.raises(ValueError, match="`diffs` needs at least 2"):
        correlated_ttest([0.1], 0.1)
    with pytest.raises(ValueError, match="`diffs` must be finite"):
        correlated_ttest([0.1, np.nan], 0.1)


# ------------------------------------------------------------------------------------------
# McNemar and proportion tests
# ------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 300),
    st.floats(0.3, 1.0),
    st.floats(0.3, 1.0),
    st.integers(0, 10**6),
    st.sampled_from([None, True, False]),
    st.booleans(),
)
def test_mcnemar_matches_statsmodels(n, acc_a, acc_b, seed, exact, correction):
    y, a, b = _predictions(n, acc_a, acc_b, seed)
    res = mcnemar(y, a, b, exact=exact, correction=correction)
    a_ok, b_ok = a == y, b == y
    table = [[np.sum(a_ok & b_ok), np.sum(a_ok & ~b_ok)], [np.sum(~a_ok & b_ok), np.sum(~a_ok & ~b_ok)]]
    assert (res.n01, res.n10) == (table[1][0], table[0][1])
    use_exact = (res.n01 + res.n10 < 25) if exact is None else exact
    assert res.exact == use_exact
    if res.n01 + res.n10 == 0:
        assert res.pvalue == 1.0
        return
    ref = sm_mcnemar(np.array(table), exact=use_exact, correction=correction)
    assert res.statistic == pytest.approx(ref.statistic, rel=RTOL)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def test_mcnemar_seed_formula():
    y = np.zeros(100, dtype=int)
    a = np.r_[np.ones(10), np.zeros(90)].astype(int)  # 10 errors
    b = np.r_[np.zeros(10), np.ones(30), np.zeros(60)].astype(int)  # 30 other errors
    res = mcnemar(y, a, b)
    assert (res.n01, res.n10) == (10, 30)
    assert res.statistic == pytest.approx((abs(10 - 30) - 1) ** 2 / 40)  # Keller et al. (2005), eq. (4)
    assert res.pvalue == pytest.approx(stats.chi2.sf(361 / 40, 1), rel=RTOL)


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 500), st.floats(0.3, 1.0), st.floats(0.3, 1.0), st.integers(0, 10**6),
       st.sampled_from(["two-sided", "greater", "less"]))
def test_proportion_test_matches_statsmodels(n, acc_a, acc_b, seed, alternative):
    y, a, b = _predictions(n, acc_a, acc_b, seed)
    res = proportion_test(y, a, b, alternative=alternative)
    errs = np.array([np.sum(b != y), np.sum(a != y)])
    if errs.sum() in (0, 2 * n):
        assert (res.statistic, res.pvalue) == (0.0, 1.0)
        return
    # statsmodels orders the alternative as first - second: errors of b minus errors of a,
    # i.e. "greater" = a makes fewer errors.
    z, p = proportions_ztest(errs, np.array([n, n]), alternative={"two-sided": "two-sided",
                             "greater": "larger", "less": "smaller"}[alternative])
    assert res.statistic == pytest.approx(z, rel=1e-9)
    assert res.pvalue == pytest.approx(p, rel=1e-9)
    # Keller et al. (2005), eq. (3): sigma_D = sqrt(2 C (1 - C) / N).
    c = errs.sum() / (2 * n)
    assert res.statistic == pytest.approx((errs[0] - errs[1]) / n / np.sqrt(2 * c * (1 - c) / n))


def test_label_validation():
    with pytest.raises(ValueError, match="`y_true` and `pred_b` must have the same length"):
        mcnemar([0, 1, 1], [0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="`pred_a` must be a 1-D"):
        proportion_test([0, 1], [[0, 1]], [0, 1])
    with pytest.raises(ValueError, match="`y_true` must not contain NaN"):
        mcnemar([0.0, np.nan], [0, 1], [0, 1])
    with pytest.raises(TypeError, match="`exact`"):
        mcnemar([0, 1], [0, 1], [0, 1], exact="yes")
    with pytest.raises(ValueError, match="`alternative`"):
        proportion_test([0, 1], [0, 1], [0, 1], alternative="bigger")
    # String labels work.
    res = mcnemar(["x", "y", "x"], ["x", "x", "x"], ["y", "y", "x"])
    assert (res.n01, res.n10) == (1, 1)


# ------------------------------------------------------------------------------------------
# Bootstrap percentile test
# ------------------------------------------------------------------------------------------


def _f1_binary(y, p):
    # A NumPy F1 (sklearn's f1_score costs ~10 ms a call, too slow to call 4000 times here);
    # checked against sklearn below.
    tp = np.count_nonzero((y == 1) & (p == 1))
    wrong = np.count_nonzero((y == 1) != (p == 1))
    return 2.0 * tp / (2.0 * tp + wrong) if tp + wrong else 0.0


def _accuracy(y, p):
    return float(np.mean(y == p))


def test_bootstrap_observed_statistic_matches_sklearn():
    y, a, b = _predictions(300, 0.85, 0.8, 1, n_classes=3)
    for name, fn in (
        ("accuracy", accuracy_score),
        ("f1_macro", lambda t, p: f1_score(t, p, average="macro", zero_division=0)),
        ("f1", lambda t, p: f1_score(t, p, labels=[1], average=None, zero_division=0)[0]),
    ):
        res = bootstrap_test(y, a, b, name, n_samples=10, random_state=0)
        assert res.statistic == pytest.approx(fn(y, a) - fn(y, b), rel=1e-12, abs=1e-15)
    err = bootstrap_test(y, a, b, "error_rate", n_samples=10, random_state=0)
    assert err.statistic == pytest.approx(-(accuracy_score(y, a) - accuracy_score(y, b)))


def test_bootstrap_vectorised_path_has_the_distribution_of_resampling():
    # The multinomial path and the callable path (index resampling) draw from the same
    # bootstrap distribution with different streams. With B = 4000 the mean of the replicates
    # has standard error sd / sqrt(B) ~ 0.016 sd: we allow 0.08 sd (5 SE). The standard
    # deviations agree to ~ 1 / sqrt(2 B) ~ 1.1% relative each: we allow 6%.
    y, a, b = _predictions(400, 0.8, 0.72, 3)
    assert _f1_binary(y, a) == pytest.approx(f1_score(y, a), rel=1e-12)
    fast = bootstrap_test(y, a, b, "f1", n_samples=4000, random_state=1)
    slow = bootstrap_test(y, a, b, _f1_binary, n_samples=4000, random_state=2)
    assert fast.statistic == pytest.approx(slow.statistic, rel=1e-12)
    sd = slow.bootstrap_distribution.std()
    assert abs(fast.bootstrap_distribution.mean() - slow.bootstrap_distribution.mean()) < 0.08 * sd
    assert fast.bootstrap_distribution.std() == pytest.approx(sd, rel=0.06)


def test_bootstrap_interval_matches_scipy_percentile_bootstrap():
    # scipy.stats.bootstrap(paired=True, method="percentile") on per-example correctness
    # differences gives the percentile interval of the accuracy difference. The 2.5% quantile
    # of B = 5000 replicates has Monte Carlo SE ~ sqrt(.025 .975 / B) / phi(1.96) sd ~ 0.04 sd,
    # for each of the two estimates: we allow 0.25 sd (about 4.4 combined SE).
    y, a, b = _predictions(500, 0.82, 0.78, 4)
    res = bootstrap_test(y, a, b, "accuracy", n_samples=5000, random_state=5)
    diff = (a == y).astype(float) - (b == y).astype(float)
    ref = stats.bootstrap((diff,), np.mean, n_resamples=5000, method="percentile",
                          rng=np.random.default_rng(6)).confidence_interval
    sd = res.bootstrap_distribution.std()
    assert res.confidence_interval[0] == pytest.approx(ref.low, abs=0.25 * sd)
    assert res.confidence_interval[1] == pytest.approx(ref.high, abs=0.25 * sd)


def test_bootstrap_pvalue_is_dual_to_the_percentile_interval():
    y, a, b = _predictions(300, 0.9, 0.7, 8)
    res = bootstrap_test(y, a, b, "accuracy", n_samples=2000, random_state=0)
    d = res.bootstrap_distribution
    assert res.pvalue == min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0)))
    assert res.pvalue < 0.05 and res.confidence_interval[0] > 0
    greater = bootstrap_test(y, a, b, "accuracy", n_samples=2000, random_state=0,
                             alternative="greater")
    less = bootstrap_test(y, a, b, "accuracy", n_samples=2000, random_state=0, alternative="less")
    # Proportions of 2,000 draws: a real disagreement is at least 1/2000, rounding a few ulp.
    assert greater.pvalue == pytest.approx(np.mean(d <= 0), abs=1e-12)
    assert less.pvalue == pytest.approx(np.mean(d >= 0), abs=1e-12)
    # Same models: no difference to find.
    same = bootstrap_test(y, a, a, "f1", n_samples=200, random_state=0)
    assert (same.statistic, same.pvalue) == (0.0, 1.0)


def test_bootstrap_is_reproducible():
    y, a, b = _predictions(200, 0.8, 0.75, 9)
    for metric in ("f1", _accuracy):
        r1 = bootstrap_test(y, a, b, metric, n_samples=300, random_state=42)
        r2 = bootstrap_test(y, a, b, metric, n_samples=300, random_state=42)
        np.testing.assert_array_equal(r1.bootstrap_distribution, r2.bootstrap_distribution)
        assert r1.pvalue == r2.pvalue
    gen = np.random.default_rng(3)
    r3 = bootstrap_test(y, a, b, "f1", n_samples=300, random_state=gen)
    r4 = bootstrap_test(y, a, b, "f1", n_samples=300, random_state=gen)
    assert not np.array_equal(r3.bootstrap_distribution, r4.bootstrap_distribution)


def test_bootstrap_validation():
    y, a, b = _predictions(20, 0.8, 0.7, 0)
    with pytest.raises(ValueError, match="`metric`"):
        bootstrap_test(y, a, b, "auc")
    with pytest.raises(TypeError, match="`metric`"):
        bootstrap_test(y, a, b, 3)
    with pytest.raises(ValueError, match="`n_samples`"):
        bootstrap_test(y, a, b, "f1", n_samples=0)
    with pytest.raises(ValueError, match="`pos_label`"):
        bootstrap_test(y, a, b, "f1", pos_label=7)
    with pytest.raises(ValueError, match="`confidence_level`"):
        bootstrap_test(y, a, b, "f1", confidence_level=1.0)
    with pytest.raises(TypeError, match="`random_state`"):
        bootstrap_test(y, a, b, "f1", random_state="seed")
    with pytest.raises(ValueError, match="non-finite"):
        bootstrap_test(y, a, b, lambda t, p: np.nan, n_samples=3)
