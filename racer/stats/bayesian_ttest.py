"""Bayesian correlated t-test for cross-validation differences (Nadeau-Bengio correction).

The Bayesian counterpart (Benavoli et al. 2017; Corani & Benavoli 2015) of the frequentist
correlated t-test of Nadeau & Bengio (2003); baycomp's ``CorrelatedTTest`` implements the same
posterior. The n differences come from resampling the same data (k-fold CV, possibly repeated), so
they are correlated with correlation ``rho = n_test / (n_train + n_test)``. With a matching
(improper) prior the posterior of the mean difference ``mu`` is a Student t:

    mu | d ~ t_{n-1}(location = mean(d), scale^2 = (1/n + rho/(1 - rho)) * var(d, ddof=1))

For k-fold CV ``rho = 1/k`` and ``rho/(1 - rho) = 1/(k - 1)``, baycomp's correction with
``k = n / runs``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from racer._validation import (
    as_1d,
    check_int,
    check_nonnegative,
    check_probability,
    describe,
    numeric_array,
)
from racer.stats._result import StatsResult

__all__ = [
    "BayesianCorrelatedTTestResult",
    "bayesian_correlated_ttest",
    "bayesian_correlated_ttest_from_moments",
]


@dataclasses.dataclass(frozen=True, repr=False)
class BayesianCorrelatedTTestResult(StatsResult):
    """Result of :func:`bayesian_correlated_ttest`.

    With ``diffs = score_a - score_b`` (``a`` the first model), a positive mean favours ``a``.

    Attributes
    ----------
    prob_positive : float
        Posterior probability that ``mu > rope`` (the first model is better by more than rope).
    prob_equivalent : float
        Posterior probability that ``-rope <= mu <= rope`` (0 when ``rope == 0``).
    prob_negative : float
        Posterior probability that ``mu < -rope`` (the second model is better).
    mean, scale, df : float
        The Student t posterior of ``mu``: location, scale, degrees of freedom ``n - 1``.
        (:func:`bayesian_correlated_ttest_from_moments` with arrays: arrays of the
        probabilities, ``mean`` and ``scale``, one entry per comparison.)
    test_fraction, rope : float
        The settings used.
    """

    prob_positive: float
    prob_equivalent: float
    prob_negative: float
    mean: float
    scale: float
    df: float
    test_fraction: float
    rope: float


def bayesian_correlated_ttest(diffs, test_fraction, *, rope=0.0):
    """Posterior probabilities that the mean CV difference is positive, in the rope, negative.

    ``mu`` has the Student t posterior ``t_{n-1}(mean(d), sqrt((1/n + rho/(1-rho)) var(d)))``
    with ``rho = test_fraction`` (closed form, no Monte Carlo). When every difference is the
    same the posterior is a point mass at that value: its side of the rope gets probability 1,
    and with ``rope == 0`` a zero mean splits 1/2 - 1/2 (ties count one half), as in baycomp.

    Parameters
    ----------
    diffs : array_like, shape (n,), n >= 2
        Per-fold score differences, first model minus second (larger scores are better).
    test_fraction : float in (0, 1)
        ``n_test / (n_train + n_test)`` of one split: ``1/k`` for k-fold CV (repeated or not).
    rope : float >= 0
        Half-width of the region of practical equivalence on ``mu``.

    Returns
    -------
    BayesianCorrelatedTTestResult

    Examples
    --------
    10-fold CV repeated 3 times (30 differences):

    >>> rng = np.random.default_rng(0)
    >>> res = bayesian_correlated_ttest(rng.normal(0.01, 0.02, 30), 1 / 10, rope=0.005)
    >>> round(res.prob_positive + res.prob_equivalent + res.prob_negative, 12)
    1.0
    """
    d = as_1d(diffs, "diffs", min_length=2)
    rho = check_probability(test_fraction, "test_fraction")
    rope = check_nonnegative(rope, "rope")
    n = d.shape[0]
    return _posterior(float(np.mean(d)), float(np.var(d, ddof=1)), n, rho, rope)


def bayesian_correlated_ttest_from_moments(mean, variance, n, test_fraction, *, rope=0.0):
    """:func:`bayesian_correlated_ttest` from the mean and variance of the differences,
    vectorised: many comparisons over the same ``n`` folds at once.

    A racing test compares every survivor with the leader after each split
    (:class:`racer.racing.cv.CorrelatedTTestRacing`); this is that posterior for all of them
    in one call. ``test_fraction = 0`` (independent differences) is accepted here.

    Parameters
    ----------
    mean, variance : array_like, broadcastable
        ``mean(d)`` and ``var(d, ddof=1)`` of each comparison's ``n`` differences.
    n : int >= 2
        Number of differences (folds) behind every comparison.
    test_fraction : float in [0, 1)
        As in :func:`bayesian_correlated_ttest`.
    rope : float >= 0

    Returns
    -------
    BayesianCorrelatedTTestResult
        With arrays (one entry per comparison) when ``mean`` or ``variance`` is an array.

    Examples
    --------
    >>> d = np.array([[0.02, 0.0], [0.01, 0.0], [0.03, 0.0]])  # two comparisons, 3 folds
    >>> res = bayesian_correlated_ttest_from_moments(d.mean(axis=0), d.var(axis=0, ddof=1), 3,
    ...                                              0.2, rope=0.005)
    >>> res.prob_positive.round(4), res.prob_equivalent.round(4)
    (array([0.9058, 0.    ]), array([0.0532, 1.    ]))
    >>> one = bayesian_correlated_ttest(d[:, 0], 0.2, rope=0.005)
    >>> bool(one.prob_positive == res.prob_positive[0])
    True
    """
    n = check_int(n, "n", minimum=2)
    rho = check_probability(test_fraction, "test_fraction", open_left=False)
    rope = check_nonnegative(rope, "rope")
    mean = numeric_array(mean, "mean", "an array of numbers").astype(np.float64)
    variance = numeric_array(variance, "variance", "an array of numbers").astype(np.float64)
    if not np.all(np.isfinite(mean)):
        raise ValueError(f"`mean` must be finite; got {describe(mean)}")
    if not np.all(np.isfinite(variance) & (variance >= 0)):
        raise ValueError(f"`variance` must be finite and >= 0; got {describe(variance)}")
    try:
        mean, variance = np.broadcast_arrays(mean, variance)
    except ValueError:
        raise ValueError(
            f"`mean` and `variance` must have broadcastable shapes; got {mean.shape} and "
            f"{variance.shape}"
        ) from None
    if mean.ndim == 0:
        return _posterior(float(mean), float(variance), n, rho, rope)
    return _posterior(mean, variance, n, rho, rope)


def _posterior(mean, variance, n, rho, rope) -> BayesianCorrelatedTTestResult:
    """The Student t posterior and its three probabilities; scalars or arrays, checked input."""
    scale = np.sqrt(variance * (1.0 / n + rho / (1.0 - rho)))
    df = float(n - 1)
    point = scale == 0.0
    # sf for the right tail keeps precision when the probability is close to 1 or 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        positive = stats.t.sf((rope - mean) / scale, df)
        negative = stats.t.cdf((-rope - mean) / scale, df)
    if np.any(point):
        # Every difference the same: a point mass at the mean. Its side of the rope gets
        # probability 1; with rope == 0 a zero mean splits 1/2 - 1/2 (ties count one half).
        if rope == 0.0:
            at_point = np.where(mean > 0, 1.0, np.where(mean == 0, 0.5, 0.0))
            positive = np.where(point, at_point, positive)
            negative = np.where(point, 1.0 - at_point, negative)
        else:
            positive = np.where(point, np.greater(mean, rope).astype(float), positive)
            negative = np.where(point, np.less(mean, -rope).astype(float), negative)
    if rope == 0.0:
        equivalent = np.zeros_like(positive)
    else:
        equivalent = np.maximum(0.0, 1.0 - positive - negative)
    if np.ndim(mean) == 0:
        positive, equivalent, negative = float(positive), float(equivalent), float(negative)
        mean, scale = float(mean), float(scale)
    return BayesianCorrelatedTTestResult(
        prob_positive=positive,
        prob_equivalent=equivalent,
        prob_negative=negative,
        mean=mean,
        scale=scale,
        df=df,
        test_fraction=rho,
        rope=rope,
    )
