"""Bayesian sign test under the Dirichlet process (seed 002, Theorem 2 and section 6).

The prior puts a pseudo-observation of weight ``s`` at the tie (the all-equal point), so
``theta = P(X > Y) + 1/2 P(X = Y)`` and ``theta - 1/2`` is half the weighted sum of the signs
of the differences. Neither ``s`` nor the number of ties moves the sign of that sum, which
gives the closed form used below.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betainc

__all__ = ["prob_greater_from_counts"]


def prob_greater_from_counts(n_greater, n_less):
    """Posterior probability that ``theta > 1/2`` given win/loss counts (ties drop out).

    ``Pr[theta > 1/2] = I_{1/2}(n_less, n_greater)``, the regularised incomplete beta
    function, which equals ``P(Binomial(n_greater + n_less - 1, 1/2) <= n_greater - 1)``.
    Edge cases: no wins gives 0; wins and no losses give 1; no wins and no losses (theta is
    exactly 1/2) gives 0, because the statement is strict.

    Vectorised over array inputs of counts (integers >= 0); internal, no validation.
    """
    n_greater = np.asarray(n_greater, dtype=np.float64)
    n_less = np.asarray(n_less, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = betainc(n_less, n_greater, 0.5)
    out = np.where(n_greater == 0, 0.0, np.where(n_less == 0, 1.0, out))
    return out if out.ndim else float(out)
