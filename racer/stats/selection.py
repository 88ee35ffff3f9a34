"""How sure a selection is: the posterior probability that the chosen candidate is not the best.

A tuner or a race ends by naming one candidate, the one with the best mean over the
instances it saw. Whether another candidate has the better *expected* score -- the mean
over the distribution the instances were drawn from, not over the ones seen -- is a question
about that distribution, and the Bayesian bootstrap (Rubin 1981) answers it without a
parametric model: the posterior of the instance distribution is the Dirichlet(1, ..., 1)
weights on the n instances seen, each candidate's expected score in a posterior draw is its
weighted mean, and the probability that the chosen one is not the best is the share of draws
in which some other candidate's weighted mean is strictly better. It is the
``s -> 0`` limit of the Dirichlet-process posterior that racer's other Bayesian statements use
(:func:`racer.stats.pareto_dominance` with one objective and ``rope = 0`` gives the same
probability as ``1 - prob_nondominated[best]``: the all-tied prior point moves every mean
alike); the tests check the two against each other.

Why not :func:`racer.stats.rank_posterior`'s ``prob_best``: that posterior is about mean
*ranks* (with a normal approximation), while a tuner's winner rule is the mean; the bootstrap
of means is what matches the rule. Why not call :func:`racer.stats.pareto_dominance` itself:
it counts every ordered pair in a Numba kernel, and loading that kernel costs more than half
a second at the end of a tuning whose own overhead is a few seconds; the question here needs
one comparison per candidate, a matrix product and a comparison in NumPy.
"""

from __future__ import annotations

import numbers

import numpy as np

from racer._validation import (
    as_score_matrix,
    check_bool,
    check_int,
    check_random_state,
    describe,
)

__all__ = ["prob_not_best"]

# Weights per chunk of posterior draws (float64, 8 MB): memory stays flat whatever the
# number of instances; the loop is over chunks, not draws.
_CHUNK_ELEMENTS = 1 << 20


def prob_not_best(scores, best=0, *, maximize=True, n_samples=4000, random_state=None):
    """Posterior probability that candidate ``best`` does not have the best expected score.

    ``scores`` holds every candidate's score on the same n instances (one row per instance).
    Under the Bayesian bootstrap over the instances (Rubin 1981) the instance distribution is
    ``sum_l w_l delta_{x_l}`` with ``w ~ Dirichlet(1, ..., 1)``, and candidate j's expected
    score is its weighted mean ``sum_l w_l x_lj``. The result is the share of ``n_samples``
    posterior draws in which some other candidate's weighted mean is strictly better than
    ``best``'s (a tie counts for ``best``). Candidates with the same score as ``best`` on
    every instance never beat it.

    The statement is about the distribution of instances, even when every instance of a
    finite set has been seen (a deterministic tuning that saw all its instances): the
    instances stand for the ones a user will meet, and the probability says how much the
    choice rests on the particular ones seen. Selection is not accounted for: when ``best``
    was picked *because* its mean on these instances is the best, the same instances judge
    the pick and the doubt about it, which can make the probability optimistic (the winner's
    curse).

    Parameters
    ----------
    scores : array_like (n_instances, n_candidates)
        One row per instance, one column per candidate, finite; a pandas DataFrame is
        accepted.
    best : int
        The column of the chosen candidate.
    maximize : bool, default True
        Larger scores are better (the convention of :mod:`racer.stats`); ``False`` for costs.
    n_samples : int >= 1
        Posterior draws; the Monte Carlo standard error is at most ``0.5 / sqrt(n_samples)``
        (0.008 at the default 4,000).
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        The same seed gives the same probability.

    Returns
    -------
    float or None
        The probability, in [0, 1]; 0.0 with one candidate (nobody can beat it). None with
        fewer than two instances: the bootstrap of one instance puts all its weight on it,
        so it would state certainty (0 or 1) from a single observation -- no statement is
        made rather than a false one.

    References
    ----------
    .. [1] Rubin, D. B. (1981). The Bayesian bootstrap. The Annals of Statistics 9(1), 130–134.

    Examples
    --------
    Two configurations' costs on 30 instances: the first is better by 0.3 on average, with
    noise of 1 per instance, so the data leave some doubt; a third, worse everywhere by 5,
    adds none.

    >>> rng = np.random.default_rng(3)
    >>> costs = rng.normal([0.0, 0.3], 1.0, size=(30, 2))
    >>> p = prob_not_best(costs, best=0, maximize=False, random_state=1)
    >>> round(p, 2)
    0.19
    >>> worse = costs[:, :1] + 5.0
    >>> prob_not_best(np.hstack([costs, worse]), maximize=False, random_state=1) == p
    True
    >>> prob_not_best(costs[:1], maximize=False) is None   # one instance: no statement
    True
    """
    arr, _ = as_score_matrix(scores, "scores", min_blocks=0, min_candidates=1)
    n, m = arr.shape
    if isinstance(best, (bool, np.bool_)) or not isinstance(best, numbers.Integral):
        raise TypeError(f"`best` must be a column index (int); got {describe(best)}")
    if not 0 <= best < m:
        raise ValueError(f"`best` must be a column of `scores`, in [0, {m - 1}]; got {best}")
    maximize = check_bool(maximize, "maximize")
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = check_random_state(random_state)
    if m == 1:
        return 0.0
    if n < 2:
        return None
    return _prob_not_best(arr if maximize else -arr, int(best), n_samples, rng)


def _prob_not_best(oriented, best, n_samples, rng):
    """:func:`prob_not_best` on checked input: ``oriented`` (n >= 2, m >= 2) finite,
    larger-is-better, ``rng`` a Generator.

    Draw stream (what the tests reproduce): rows of ``rng.standard_exponential((chunk, n))``,
    one row per posterior draw, filled in order (so the draws do not depend on the chunk
    size). Unnormalised Exp(1) weights are Dirichlet(1, ..., 1) weights times a positive
    factor, which no strict comparison sees. The differences to ``best`` are taken before
    weighting, so that a column equal to ``best``'s weighs to exactly 0, never to a rounding
    error of either sign.
    """
    n = oriented.shape[0]
    gaps = np.delete(oriented, best, axis=1) - oriented[:, best:best + 1]  # (n, m - 1)
    chunk = max(1, min(n_samples, _CHUNK_ELEMENTS // n))
    beaten = 0
    for start in range(0, n_samples, chunk):
        size = min(chunk, n_samples - start)
        weights = rng.standard_exponential((size, n))
        beaten += int(np.count_nonzero((weights @ gaps > 0.0).any(axis=1)))
    return beaten / n_samples
