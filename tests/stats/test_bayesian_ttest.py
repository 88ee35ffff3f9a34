"""Bayesian correlated t-test: agreement with baycomp and with the Student t formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from racer.stats.bayesian_ttest import (
    bayesian_correlated_ttest,
    bayesian_correlated_ttest_from_moments,
)


def _cv_scores(seed, n=30):
    rng = np.random.default_rng(seed)
    a = rng.normal(0.80, 0.02, n)
    return a, a - rng.normal(0.004, 0.01, n)


@pytest.mark.parametrize("runs, folds", [(1, 10), (3, 10), (2, 5)])
@pytest.mark.parametrize("rope", [0.0, 0.003])
def test_agrees_with_baycomp(runs, folds, rope):
    baycomp = pytest.importorskip("baycomp")
    a, b = _cv_scores(runs * folds, runs * folds)
    # baycomp works on y - x and calls P(y - x < -rope) "left": with x = a, left = P(a better).
    expected = baycomp.CorrelatedTTest(a, b, rope=rope, runs=runs).probs()
    res = bayesian_correlated_ttest(a - b, 1 / folds, rope=rope)
    if rope == 0:
        left, right = expected
        assert res.prob_equivalent == 0.0
    else:
        left, middle, right = expected
        assert res.prob_equivalent == pytest.approx(middle, abs=1e-12)
    assert res.prob_positive == pytest.approx(left, abs=1e-12)
    assert res.prob_negative == pytest.approx(right, abs=1e-12)
    mean, var, df = baycomp.CorrelatedTTest.compute_statistics(b, a, runs)
    assert res.mean == pytest.approx(mean, rel=1e-12)
    assert res.scale == pytest.approx(np.sqrt(var), rel=1e-12)
    assert res.df == df


def test_student_t_posterior_by_hand():
    d = np.array([0.02, -0.01, 0.03, 0.015, 0.0, 0.025, -0.005, 0.01, 0.02, 0.005])
    rho = 0.2  # 5-fold: correction rho / (1 - rho) = 1/4
    res = bayesian_correlated_ttest(d, rho, rope=0.01)
    scale = np.sqrt(np.var(d, ddof=1) * (1 / 10 + 1 / 4))
    assert res.scale == pytest.approx(scale, rel=1e-14)
    z_hi = (0.01 - d.mean()) / scale
    z_lo = (-0.01 - d.mean()) / scale
    assert res.prob_positive == pytest.approx(1 - stats.t.cdf(z_hi, 9), abs=1e-14)
    assert res.prob_negative == pytest.approx(stats.t.cdf(z_lo, 9), abs=1e-14)
    assert res.prob_positive + res.prob_equivalent + res.prob_negative == pytest.approx(1.0)
    # With rope 0, P(mu < 0) is the one-sided p-value of the Nadeau-Bengio corrected t-test.
    t_stat = d.mean() / scale
    assert bayesian_correlated_ttest(d, rho).prob_negative == pytest.approx(
        stats.t.sf(t_stat, 9), abs=1e-14)


def test_sign_symmetry_and_tail_precision():
    a, b = _cv_scores(7)
    res = bayesian_correlated_ttest(a - b, 0.1, rope=0.002)
    flipped = bayesian_correlated_ttest(b - a, 0.1, rope=0.002)
    assert flipped.prob_positive == pytest.approx(res.prob_negative, abs=1e-15)
    assert flipped.prob_negative == pytest.approx(res.prob_positive, abs=1e-15)
    far = bayesian_correlated_ttest(np.linspace(0.5, 0.6, 20), 0.1)
    assert 0 < far.prob_negative < 1e-12  # computed in the tail, not as 1 - (1 - tiny)


def test_constant_differences():
    assert bayesian_correlated_ttest([0.01] * 5, 0.2).prob_positive == 1.0
    tie = bayesian_correlated_ttest([0.0] * 5, 0.2)
    assert (tie.prob_positive, tie.prob_equivalent, tie.prob_negative) == (0.5, 0.0, 0.5)
    inside = bayesian_correlated_ttest([0.001] * 5, 0.2, rope=0.01)
    assert (inside.prob_positive, inside.prob_equivalent, inside.prob_negative) == (0, 1, 0)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        (([0.1], 0.1), {}, ValueError, "diffs"),
        (([0.1, np.inf], 0.1), {}, ValueError, "diffs"),
        (([[0.1, 0.2]], 0.1), {}, ValueError, "diffs"),
        (([0.1, 0.2], 1.0), {}, ValueError, "test_fraction"),
        (([0.1, 0.2], 0.0), {}, ValueError, "test_fraction"),
        (([0.1, 0.2], "0.1"), {}, TypeError, "test_fraction"),
        (([0.1, 0.2], 0.1), {"rope": -1}, ValueError, "rope"),
    ],
)
def test_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        bayesian_correlated_ttest(*args, **kwargs)


@pytest.mark.parametrize("rope", [0.0, 0.004])
def test_from_moments_is_the_test_column_by_column(rope):
    # CorrelatedTTestRacing's entry: every survivor against the leader in one call, the same
    # numbers as one bayesian_correlated_ttest per column (constant columns included).
    rng = np.random.default_rng(3)
    d = rng.normal([0.01, 0.0, -0.02, 0.003], 0.01, size=(12, 4))
    d[:, 1] = 0.0
    d[:, 3] = 0.003
    # Moments column by column, as the 1-D test takes them (a strided axis=0 sum may round
    # in another order).
    mean = np.array([np.mean(d[:, j]) for j in range(4)])
    var = np.array([np.var(d[:, j], ddof=1) for j in range(4)])
    res = bayesian_correlated_ttest_from_moments(mean, var, 12, 0.1, rope=rope)
    for j in range(4):
        one = bayesian_correlated_ttest(d[:, j], 0.1, rope=rope)
        got = [res.prob_positive[j], res.prob_equivalent[j], res.prob_negative[j],
               res.mean[j], res.scale[j]]
        assert got == [one.prob_positive, one.prob_equivalent, one.prob_negative, one.mean,
                       one.scale], j
    assert res.df == 11.0
    scalar = bayesian_correlated_ttest_from_moments(0.01, 1e-4, 12, 0.1)
    assert isinstance(scalar.prob_positive, float)
    # test_fraction = 0: the plain Bayesian t-test, P(mu < 0) = the one-sided t-test's p.
    x = d[:, 0]
    t_stat = x.mean() / np.sqrt(x.var(ddof=1) / 12)
    plain = bayesian_correlated_ttest_from_moments(x.mean(), x.var(ddof=1), 12, 0.0)
    assert plain.prob_negative == pytest.approx(stats.t.sf(t_stat, 11), rel=1e-12)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((0.1, 0.01, 1, 0.1), {}, ValueError, "`n` must be >= 2"),
        ((0.1, 0.01, 2.5, 0.1), {}, TypeError, "`n`"),
        ((0.1, 0.01, 5, 1.0), {}, ValueError, r"`test_fraction` must lie in \[0, 1\)"),
        ((0.1, -0.01, 5, 0.1), {}, ValueError, "`variance` must be finite and >= 0"),
        (([0.1, np.nan], 0.01, 5, 0.1), {}, ValueError, "`mean` must be finite"),
        (("a", 0.01, 5, 0.1), {}, TypeError, "`mean`"),
        (([0.1, 0.2], [0.01, 0.02, 0.03], 5, 0.1), {}, ValueError, "broadcastable"),
        ((0.1, 0.01, 5, 0.1), {"rope": -1}, ValueError, "rope"),
    ],
)
def test_from_moments_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        bayesian_correlated_ttest_from_moments(*args, **kwargs)
