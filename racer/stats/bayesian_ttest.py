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
import math

import numpy as np
from scipy import stats

from racer._validation import as_1d, check_nonnegative, check_probability
from racer.stats._result import StatsResult

__all__ = ["BayesianCorrelatedTTestResult", "bayesian_correlated_ttest"]


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
    mean = float(np.mean(d))
    variance = float(np.var(d, ddof=1)) * (1.0 / n + rho / (1.0 - rho))
    scale = math.sqrt(variance)
    df = float(n - 1)
    if scale == 0.0:
        if rope == 0.0:
            positive = 1.0 if mean > 0 else (0.5 if mean == 0 else 0.0)
            negative = 1.0 - positive
        else:
            positive = float(mean > rope)
            negative = float(mean < -rope)
    else:
        # sf for the right tail keeps precision when the probability is close to 1 or 0.
        positive = float(stats.t.sf(rope, df, loc=mean, scale=scale))
        negative = float(stats.t.cdf(-rope, df, loc=mean, scale=scale))
    equivalent = 0.0 if rope == 0.0 else max(0.0, 1.0 - positive - negative)
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
