"""Bayesian Pareto dominance between candidates scored on several objectives.

S-Race (Zhang, Georgiopoulos & Anagnostopoulos 2013) and SPRINT-Race (Zhang et al. 2015)
race candidates on several objectives and drop one once another *dominates* it in the Pareto
sense; they use frequentist sign tests. Here the same question gets a Bayesian answer in the
family racer already uses for one objective: the Dirichlet-process posterior of Benavoli et
al. (2014, 2015) with the prior pseudo-observation on the all-tied point, i.e. a Bayesian
bootstrap (Rubin 1981) over the instances.

The instance distribution is the unknown. Its posterior is
``P = w_0 delta_tie + sum_l w_l delta_{x_l}`` with ``(w_0, w_1, ..., w_n) ~ Dir(s, 1, ..., 1)``,
where ``x_l`` is the whole score *vector* of instance l (every candidate, every objective). One
weight vector per posterior draw is shared by all candidates and all objectives: that is what
keeps the pairing of the candidates on an instance and the correlation of the objectives. The
quantity compared is each candidate's mean score per objective under ``P``; the prior point
puts every candidate at the same value, so it drops out of every difference, and the
difference of means of candidates i and j on objective o is ``D_ijo = sum_l w_l (x_lio -
x_ljo)`` (the weights normalised with ``w_0`` included, which is where ``s`` enters).

Decisions (where the papers leave a gap; docs/stats-pareto.md):

* **dominates** -- i dominates j in a draw when ``D_ijo > rope_o`` on at least one objective
  and ``D_ijo >= -rope_o`` on every one: better by more than the rope somewhere, worse by more
  than the rope nowhere. With ``rope = 0`` this is the Pareto definition on the means (better
  or equal everywhere, strictly better somewhere).
* **equivalent** -- ``|D_ijo| <= rope_o`` on every objective.
* what is left is a trade-off (each is better by more than the rope somewhere):
  ``P(i dom j) + P(j dom i) + P(equivalent) + P(trade-off) = 1``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from racer._validation import (
    check_int,
    check_positive,
    check_random_state,
    describe,
    direction_signs,
    numeric_array,
)
from racer.stats import _kernels
from racer.stats._result import StatsResult

__all__ = ["ParetoDominanceResult", "pareto_dominance"]

# Elements of the (draws, n + 1) weights and (draws, m, k) means per chunk of posterior
# draws (float64, 16 MB): memory stays flat whatever n_samples is; the loop is over chunks,
# not draws; pairs and objectives are counted in a Numba kernel.
_CHUNK_ELEMENTS = 1 << 21
_DIRECTIONS = ("minimize", "maximize")


@dataclasses.dataclass(frozen=True, repr=False)
class ParetoDominanceResult(StatsResult):
    """Result of :func:`pareto_dominance`.

    Attributes
    ----------
    prob_dominates : ndarray (m, m)
        ``prob_dominates[i, j]``: posterior probability that candidate i dominates j (module
        docstring); 0 on the diagonal.
    prob_equivalent : ndarray (m, m)
        Posterior probability that i and j are within the rope on every objective;
        symmetric, 1 on the diagonal.
    prob_nondominated : ndarray (m,)
        Posterior probability that no other candidate dominates candidate j (jointly, on the
        same draws): the probability that j is in the Pareto set of the means.
    mean_scores : ndarray (m, k)
        Sample means per candidate and objective, in the scores' own orientation.
    direction : tuple of str
        ``"maximize"`` / ``"minimize"`` per objective.
    rope : ndarray (k,)
        Practical-equivalence half-width per objective, in score units.
    prior_strength : float
    n_samples : int

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """

    prob_dominates: np.ndarray
    prob_equivalent: np.ndarray
    prob_nondominated: np.ndarray
    mean_scores: np.ndarray
    direction: tuple
    rope: np.ndarray
    prior_strength: float
    n_samples: int

    @property
    def prob_tradeoff(self) -> np.ndarray:
        """``1 - P(i dom j) - P(j dom i) - P(equivalent)``: each better beyond the rope
        somewhere (0 on the diagonal)."""
        out = 1.0 - self.prob_dominates - self.prob_dominates.T - self.prob_equivalent
        return np.clip(out, 0.0, 1.0)


def _check_direction_list(direction, k):
    """``direction`` as a tuple of k "maximize"/"minimize" (None: all maximize, the
    convention of racer.stats; one string: the same for every objective)."""
    if direction is None:
        return ("maximize",) * k
    if isinstance(direction, str):
        items = (direction,) * k
    else:
        try:
            items = tuple(direction)
        except TypeError:
            raise TypeError(
                f"`direction` must be 'maximize', 'minimize' or a sequence of them (one per "
                f"objective); got {describe(direction)}"
            ) from None
        if len(items) != k:
            raise ValueError(
                f"`direction` must name one direction per objective ({k}); got {len(items)}: "
                f"{describe(direction)}"
            )
    for item in items:
        if item not in _DIRECTIONS:
            raise ValueError(
                f"`direction` entries must be 'maximize' or 'minimize'; got {describe(item)}"
            )
    return items


def check_rope(rope, k):
    """``rope`` as a (k,) float64 array of finite values >= 0 (a scalar is broadcast): the
    check of every ``rope`` of a comparison on ``k`` objectives.

    >>> check_rope(0.1, 2).tolist(), check_rope([0.0, 0.5], 2).tolist()
    ([0.1, 0.1], [0.0, 0.5])
    """
    if isinstance(rope, (bool, np.bool_)):
        raise TypeError(f"`rope` must be a number >= 0 or one per objective; got {rope!r}")
    arr = numeric_array(rope, "rope", "a number >= 0 or one per objective")
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    elif arr.shape != (k,):
        raise ValueError(
            f"`rope` must be a scalar or hold one value per objective ({k}); got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"`rope` must be finite and >= 0; got {describe(rope)}")
    return arr


def as_objective_scores(scores, name="scores", *, min_candidates=2):
    """``scores`` as a finite float64 array (n_instances, n_candidates, k), k >= 1, n >= 1,
    at least ``min_candidates``; a 2-D array is one objective."""
    arr = numeric_array(scores, name, "a 3-D array of numbers (instances, candidates, objectives)")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3:
        raise ValueError(
            f"`{name}` must be 3-D with shape (n_instances, n_candidates, n_objectives); got "
            f"shape {arr.shape}"
        )
    n, m, k = arr.shape
    if n < 1 or k < 1:
        raise ValueError(f"`{name}` needs at least one instance and one objective; got shape {arr.shape}")
    if m < min_candidates:
        raise ValueError(f"`{name}` needs at least {min_candidates} candidates (axis 1); got {m}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j, o = np.argwhere(bad)[0]
        raise ValueError(
            f"`{name}` must be finite; found {arr[i, j, o]} at instance {i}, candidate {j}, "
            f"objective {o}"
        )
    return arr


def _dominance_counts(oriented, rope, prior_strength, n_samples, rng):
    """Counts over ``n_samples`` posterior draws (trusted input: ``oriented`` (n, m, k)
    larger-is-better, ``rope`` (k,)): ``(dominates (m, m), equivalent (m, m), nondominated
    (m,))``, int64.

    Draw stream (what the brute-force test reproduces): chunks of rows of
    ``rng.standard_gamma([s, 1, ..., 1], size=(chunk, n + 1))``, one row per draw; numpy's
    generator fills them in order, so the draws do not depend on the chunk size.
    """
    n, m, k = oriented.shape
    flat = oriented.reshape(n, m * k)
    alpha = np.ones(n + 1)
    alpha[0] = prior_strength
    chunk = max(1, min(n_samples, _CHUNK_ELEMENTS // max(m * k, n + 1)))
    dominates = np.zeros((m, m), dtype=np.int64)
    equivalent = np.zeros((m, m), dtype=np.int64)
    nondominated = np.zeros(m, dtype=np.int64)
    for start in range(0, n_samples, chunk):
        size = min(chunk, n_samples - start)
        gammas = rng.standard_gamma(alpha, size=(size, n + 1))
        weights = gammas[:, 1:] / gammas.sum(axis=1, keepdims=True)
        means = np.ascontiguousarray((weights @ flat).reshape(size, m, k))
        _kernels.pareto_dominance_counts(means, rope, dominates, equivalent, nondominated)
    return dominates, equivalent, nondominated


def pareto_dominance(scores, *, direction=None, rope=0.0, prior_strength=1.0,
                     n_samples=20_000, random_state=None):
    """Posterior probabilities of Pareto dominance and practical equivalence between candidates.

    For every ordered pair (i, j) of candidates scored on the same instances on k objectives,
    the posterior probability that i dominates j, and that they are practically equivalent,
    under the Dirichlet-process posterior of the instance distribution (Benavoli et al. 2014,
    2015: prior strength ``s`` on the all-tied point, a Bayesian bootstrap (Rubin 1981) when
    ``s -> 0``). One Dirichlet weight vector per draw weighs the instances' whole score
    vectors, so the candidates stay paired and the objectives keep their correlation. The
    dominance of S-Race (Zhang, Georgiopoulos & Anagnostopoulos 2013) and SPRINT-Race (Zhang
    et al. 2015), here on the objectives' means with a rope (module docstring):

    * i **dominates** j: ``mean_i - mean_j > rope`` on at least one objective and
      ``>= -rope`` on all (better beyond the rope somewhere, worse beyond it nowhere);
    * i and j are **equivalent**: ``|mean_i - mean_j| <= rope`` on every objective.

    With one objective and ``rope = 0`` this is ``P(mean_i > mean_j)``; on scores that are
    signs (-1/0/1 differences) it is the Bayesian sign test's ``P(theta > 1/2)`` (Benavoli et
    al. 2015, Theorem 2), which the tests check.

    Parameters
    ----------
    scores : array_like, shape (n_instances, n_candidates, n_objectives)
        Paired scores: ``scores[l, j, o]`` is candidate j's score on objective o on instance
        l. A 2-D array is one objective.
    direction : None, str or sequence of str
        ``"maximize"`` or ``"minimize"`` per objective (one string: all objectives); None:
        larger is better on every objective (the convention of :mod:`racer.stats`).
    rope : float or array_like (n_objectives,), >= 0
        Half-width of the region of practical equivalence per objective, in score units.
    prior_strength : float > 0
        ``s``, the DP prior strength (default 1, Benavoli et al. 2015). With ``rope = 0`` it
        does not change the dominance probabilities (only signs of weighted sums matter).
    n_samples : int >= 1
        Posterior draws; a probability's Monte Carlo standard error is at most
        ``0.5 / sqrt(n_samples)``.
    random_state : None, int, numpy Generator, RandomState or SeedSequence

    Returns
    -------
    ParetoDominanceResult

    References
    ----------
    .. [1] Zhang, T., Georgiopoulos, M. & Anagnostopoulos, G. C. (2013). S-Race: a
       multi-objective racing algorithm. Proceedings of the Genetic and Evolutionary
       Computation Conference (GECCO 2013), 1565–1572.
    .. [2] Zhang, T., Georgiopoulos, M. & Anagnostopoulos, G. C. (2015). SPRINT multi-objective
       model racing. Proceedings of the Genetic and Evolutionary Computation Conference
       (GECCO 2015), 1383–1390.
    .. [3] Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
       Wilcoxon signed-rank test based on the Dirichlet process. Proceedings of the 31st
       International Conference on Machine Learning (ICML 2014), PMLR 32, 1026–1034.
    .. [4] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [5] Rubin, D. B. (1981). The Bayesian bootstrap. The Annals of Statistics 9(1), 130–134.

    Examples
    --------
    Three candidates, error and run time (both minimised) on 30 instances: A is fast and
    accurate, B more accurate but slower (a trade-off with A), C worse than A on both.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> true_means = np.array([[0.20, 1.0], [0.15, 2.0], [0.30, 1.5]])  # (error, seconds)
    >>> scores = true_means + rng.normal(0, [0.03, 0.2], size=(30, 3, 2))
    >>> res = pareto_dominance(scores, direction="minimize", random_state=0)
    >>> res.prob_dominates.round(2)
    array([[0., 0., 1.],
           [0., 0., 0.],
           [0., 0., 0.]])
    >>> res.prob_nondominated.round(2)   # A and B form the Pareto set, C is dominated
    array([1., 1., 0.])
    """
    arr = as_objective_scores(scores)
    k = arr.shape[2]
    directions = _check_direction_list(direction, k)
    rope_arr = check_rope(rope, k)
    s = check_positive(prior_strength, "prior_strength")
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = check_random_state(random_state)
    sign = direction_signs(directions)
    return oriented_pareto_dominance(arr * sign, rope_arr, s, n_samples, rng, sign, directions)


def oriented_pareto_dominance(oriented, rope, prior_strength, n_samples, rng, sign=None,
                              directions=None):
    """:func:`pareto_dominance` on checked input, what racing tests and pruners call:
    ``oriented`` (n_instances, n_candidates, k) finite and larger-is-better, ``rope`` a
    (k,) array from :func:`check_rope`, ``rng`` a Generator. ``sign`` (k,) and
    ``directions`` restore the user's directions in the result's ``mean_scores`` and
    ``direction`` (None: every objective maximised).

    >>> scores = np.array([[[1.0, 2.0], [0.0, 1.0]], [[2.0, 2.0], [1.0, 0.0]]])
    >>> res = oriented_pareto_dominance(scores, np.zeros(2), 1.0, 1000,
    ...                                 np.random.default_rng(0))
    >>> res.prob_dominates.tolist()
    [[0.0, 1.0], [0.0, 0.0]]
    """
    k = oriented.shape[2]
    if sign is None:
        sign = np.ones(k)
        directions = ("maximize",) * k
    rope = np.ascontiguousarray(rope, dtype=np.float64)
    dominates, equivalent, nondominated = _dominance_counts(
        oriented, rope, prior_strength, n_samples, rng)
    return ParetoDominanceResult(
        prob_dominates=dominates / n_samples,
        prob_equivalent=equivalent / n_samples,
        prob_nondominated=nondominated / n_samples,
        mean_scores=oriented.mean(axis=0) * sign,
        direction=tuple(directions),
        rope=rope,
        prior_strength=float(prior_strength),
        n_samples=int(n_samples),
    )


def nondominated_mask(means):
    """Rows of ``means`` (m, k), larger-is-better, that no other row dominates (better or
    equal everywhere, strictly better somewhere); identical rows all stay.

    >>> nondominated_mask(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])).tolist()
    [True, True, False]
    """
    ge = (means[:, None, :] >= means[None, :, :]).all(axis=2)
    gt = (means[:, None, :] > means[None, :, :]).any(axis=2)
    return ~(ge & gt).any(axis=0)
