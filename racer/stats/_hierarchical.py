"""Bayesian hierarchical comparison of two classifiers over many data sets (Corani et al. 2017).

Corani, Benavoli, Demšar, Mangili and Zaffalon (2017), "Statistical comparison of classifiers
through Bayesian hierarchical modelling", Machine Learning 106, section 3. For data set i with
n cross-validation differences x_i:

    x_i ~ MVN(1 delta_i, sigma_i^2 R),  R = (1 - rho) I + rho 11',  rho = test_fraction
    delta_i ~ t(nu, delta0, sigma0),    sigma_i ~ U(0, 1000 * mean_i sd(x_i))
    delta0 ~ U(-1, 1),  sigma0 ~ U(0, 1000 * sd(xbar)),  nu ~ Gamma(alpha, rate=beta)
    alpha ~ U(0.5, 5),  beta ~ U(0.05, 0.15)

These are the paper's priors, not baycomp 1.0.3's (``alpha ~ U(1, 2)``, ``beta ~ U(0.01,
0.1)``, ``nu = 1 + Gamma``, ``delta0`` bounded by the largest |difference| of rescaled data).
The sampler (``hier_chain`` in ``_kernels.py``) is a blocked Gibbs sampler with four 1-D slice
steps; ``docs/stats-hierarchical.md`` derives it and lists how it was checked.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from racer._validation import (
    check_int,
    check_nonnegative,
    check_probability,
    check_random_state,
    numeric_array,
)
from racer.stats import _diagnostics
from racer.stats._result import StatsResult

__all__ = ["HierarchicalResult", "ConvergenceError", "hierarchical_test", "odds_grade"]

# The paper's hyper-priors (section 3).
ALPHA_BOUNDS = (0.5, 5.0)
BETA_BOUNDS = (0.05, 0.15)
# Upper bounds of the uniform priors on sigma_i and sigma0, in units of the observed spread.
SIGMA_UPPER_FACTOR = 1000.0
# The convergence gate (Vehtari et al. 2021 recommend R-hat < 1.01 and bulk ESS > 400).
RHAT_MAX = 1.01
ESS_MIN = 400.0


class ConvergenceError(RuntimeError):
    """The sampler did not reach R-hat < 1.01 and bulk ESS >= 400, even after its retries."""


def odds_grade(odds: float) -> str:
    """Grade of evidence of posterior odds >= 1 (Corani et al. 2017, Table 3, after Raftery 1995).

    ``"weak"`` for 1-3, ``"positive"`` for 3-20, ``"strong"`` above 20, ``"none"`` for
    undefined odds (0/0). Odds below 1 favour the other outcome: grade ``1 / odds`` instead.

    References
    ----------
    .. [1] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.
    .. [2] Raftery, A. E. (1995). Bayesian model selection in social research. Sociological
       Methodology 25, 111–164.

    Examples
    --------
    >>> odds_grade(0.62 / 0.05), odds_grade(0.30 / 0.25)
    ('positive', 'weak')
    """
    if math.isnan(odds):
        return "none"
    if odds < 1.0:
        raise ValueError(f"`odds` must be >= 1 (grade 1/odds for the other side); got {odds}")
    if odds <= 3.0:
        return "weak"
    if odds <= 20.0:
        return "positive"
    return "strong"


def _odds(p: dict[str, float]) -> tuple[tuple[str, str, float, str], ...]:
    out = []
    for a, b in (("left", "right"), ("left", "rope"), ("rope", "right")):
        pa, pb = p[a], p[b]
        if pa < pb:
            a, b, pa, pb = b, a, pb, pa
        value = float("nan") if pa == 0.0 else (math.inf if pb == 0.0 else pa / pb)
        out.append((a, b, value, odds_grade(value)))
    return tuple(out)


@dataclasses.dataclass(frozen=True, repr=False)
class HierarchicalResult(StatsResult):
    """Result of :func:`hierarchical_test`.

    Differences are ``diffs`` (or ``y - x`` for two score arrays, as in baycomp): ``left``
    means ``delta < -rope`` (with scores: ``x`` better), ``right`` means ``delta > rope``.

    Attributes
    ----------
    prob_left, prob_rope, prob_right : float
        Corani et al. (2017) §3.2: the posterior probability that left / rope / right is the most
        probable outcome for the next data set (share of posterior draws of (delta0, sigma0, nu) whose
        Student t gives that region the largest mass). What baycomp's ``probs()`` returns.
    predictive_left, predictive_rope, predictive_right : float
        Posterior-predictive probabilities that ``delta_next`` falls in each region (the
        Student t masses averaged over the posterior).
    shrinkage : ndarray (q,)
        Posterior means of the per-data-set differences ``delta_i`` (shrunk toward each other).
    mle : ndarray (q,)
        The per-data-set means of the differences (the estimates without shrinkage).
    groups : tuple or None
        With ``groups=`` given: the data-set labels, in the order of ``shrinkage`` and ``mle``
        (order of first appearance); None for a 2-D input (rows in order).
    delta0, sigma0 : float
        Posterior means of the location and scale of the distribution of ``delta_i``.
    nu : float
        Posterior median of its degrees of freedom.
    odds : tuple of (favoured, other, odds, grade)
        Posterior odds of the §3.2 probabilities for each pair of outcomes, oriented so that
        ``odds >= 1`` (``inf`` when the other outcome never wins, NaN when neither does) and
        graded by Corani et al. (2017) Table 3 (:func:`odds_grade`).
    rhat, ess_bulk : float
        Worst rank-normalised split R-hat and smallest bulk ESS over the monitored quantities
        (delta0, sigma0, nu, every delta_i and the three predictive masses).
    n_chains, n_draws, n_retries : int
        Chains, kept draws per chain of the accepted run, and retries it took.
    rope, test_fraction : float
        The settings used.

    References
    ----------
    .. [1] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.
    """

    prob_left: float
    prob_rope: float
    prob_right: float
    predictive_left: float
    predictive_rope: float
    predictive_right: float
    shrinkage: np.ndarray
    mle: np.ndarray
    groups: tuple | None
    delta0: float
    sigma0: float
    nu: float
    odds: tuple
    rhat: float
    ess_bulk: float
    n_chains: int
    n_draws: int
    n_retries: int
    rope: float
    test_fraction: float


def _as_cv_matrix(value, name: str) -> np.ndarray:
    if hasattr(value, "columns") and hasattr(value, "to_numpy"):
        value = value.to_numpy()
    arr = numeric_array(value, name, "a 2-D array of numbers (data sets x folds)")
    if arr.ndim != 2:
        raise ValueError(
            f"`{name}` must be 2-D with shape (n_datasets, n_folds); got shape {arr.shape}"
        )
    if arr.shape[0] < 2:
        raise ValueError(f"`{name}` needs at least 2 data sets (rows); got {arr.shape[0]}")
    if arr.shape[1] < 2:
        raise ValueError(f"`{name}` needs at least 2 differences per data set; got {arr.shape[1]}")
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"`{name}` must be finite; found {arr[row, col]} at row {row}, column {col}"
        )
    return arr


def _group_rows(values: np.ndarray, groups, name: str):
    """Split 1-D ``values`` by ``groups`` labels: (rows, labels in order of first appearance)."""
    try:
        labels = list(groups)
    except TypeError as exc:
        raise TypeError(f"`groups` must be a sequence of data-set labels; got {groups!r}") from exc
    if len(labels) != values.shape[0]:
        raise ValueError(
            f"`groups` must have one label per difference in `{name}`: got {len(labels)} "
            f"labels for {values.shape[0]} values"
        )
    index: dict = {}
    members: list[list[int]] = []
    for k, label in enumerate(labels):
        try:
            slot = index.setdefault(label, len(index))
        except TypeError as exc:
            raise TypeError(
                f"`groups` labels must be hashable (a data-set name or number); got {label!r}"
            ) from exc
        if slot == len(members):
            members.append([])
        members[slot].append(k)
    rows = [values[np.asarray(m)] for m in members]
    if len(rows) < 2:
        raise ValueError(f"`groups` needs at least 2 data sets; got {len(rows)}")
    for label, row in zip(index, rows):
        if row.shape[0] < 2:
            raise ValueError(
                f"`groups`: data set {label!r} has {row.shape[0]} difference; each needs >= 2"
            )
    return rows, tuple(index)


def _as_long(value, name: str) -> np.ndarray:
    arr = numeric_array(value, name, "a 1-D array of numbers when `groups` is given")
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D when `groups` is given; got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"`{name}` must be finite; found {arr[bad[0]]} at index {bad[0]}")
    return arr


def _check_data(rows: list, labels, name: str) -> None:
    # A data set whose differences are all equal makes the posterior improper (the uniform
    # prior on sigma_i with a zero within-variance puts unbounded mass near sigma_i = 0).
    for label, row in zip(labels, rows):
        if np.ptp(row) == 0.0:
            raise ValueError(
                f"`{name}`: every difference of data set {label!r} equals {float(row[0])!r}; "
                "the model needs some variation within each data set (drop it, or add "
                "more folds/repetitions)"
            )
    means = np.array([row.mean() for row in rows])
    for label, mean in zip(labels, means):
        if abs(mean) >= 1.0:
            raise ValueError(
                f"`{name}`: the mean difference of data set {label!r} is {mean:.6g}; the "
                "paper's prior delta0 ~ U(-1, 1) assumes scores in [0, 1] (accuracy, AUC); "
                "rescale the scores"
            )
    if np.ptp(means) == 0.0:
        raise ValueError(
            f"`{name}`: every data set has the same mean difference {float(means[0])!r}; the "
            "prior bound of sigma0 (1000 times their standard deviation) would be 0"
        )


def _run(stats, rho, n_chains, n_warmup, n_draws, rng):
    from racer.stats._kernels import hier_chain

    xbar, ss, n_obs, sigma_upper, sigma0_upper = stats
    q = xbar.shape[0]
    delta0 = np.empty((n_chains, n_draws))
    sigma0 = np.empty((n_chains, n_draws))
    nu = np.empty((n_chains, n_draws))
    delta = np.empty((n_chains, n_draws, q))
    # One Generator per chain, seeded from the caller's stream: chains run one after the
    # other, so the same random_state gives the same draws bit for bit.
    seeds = rng.integers(0, 2**63, size=n_chains)
    for c in range(n_chains):
        hier_chain(xbar, ss, n_obs, rho, sigma_upper, sigma0_upper, *ALPHA_BOUNDS,
                   *BETA_BOUNDS, n_warmup, n_draws, np.random.default_rng(int(seeds[c])),
                   delta0[c], sigma0[c], nu[c], delta[c])
    return delta0, sigma0, nu, delta


def _region_masses(delta0, sigma0, nu, rope):
    """Student t masses of (-inf, -rope), [-rope, rope], (rope, inf) for each posterior draw."""
    left = special.stdtr(nu, (-rope - delta0) / sigma0)
    right = special.stdtr(nu, (delta0 - rope) / sigma0)
    middle = np.maximum(1.0 - left - right, 0.0)
    return left, middle, right


def hierarchical_test(
    diffs,
    test_fraction,
    rope=0.01,
    *,
    y=None,
    groups=None,
    n_chains=4,
    n_warmup=1000,
    n_draws=2000,
    max_retries=2,
    random_state=None,
):
    """Compare two classifiers over many data sets with Corani et al.'s (2017) hierarchical model.

    Fits the model by MCMC (a model-specific Gibbs sampler compiled with Numba), checks
    convergence, and summarises the posterior as in the paper. If the worst split R-hat is
    >= 1.01 or the smallest bulk ESS is < 400, the run is repeated with twice the warm-up and
    draws, up to ``max_retries`` times; then :class:`ConvergenceError` is raised rather than
    an answer returned.

    Parameters
    ----------
    diffs : array_like, shape (q, n)
        Cross-validation differences, one row per data set (q >= 2), one column per fold
        (n >= 2; e.g. 10 runs of 10-fold CV give n = 100). With ``y`` given, this is the
        score array ``x`` of the first classifier and the differences are ``y - x``, as in
        baycomp's ``HierarchicalTest(x, y, ...)``.
    test_fraction : float in (0, 1)
        ``n_test / (n_train + n_test)`` of one split, the correlation rho of the differences:
        ``1/k`` for (repeated) k-fold CV.
    rope : float >= 0
        Half-width of the region of practical equivalence (0.01 in the paper).
    y : array_like, shape (q, n), optional
        Scores of the second classifier (see ``diffs``).
    groups : sequence of hashable, optional
        Long format: ``diffs`` (and ``y``) are 1-D, one value per fold, and ``groups[k]``
        names the data set of value ``k``. Data sets may then have different numbers of
        folds (each >= 2); the correlation ``test_fraction`` is shared. This is how to compare
        two candidates of a race whose instances are (data set, fold) pairs.
    n_chains : int >= 2
        Independent chains (run one after the other).
    n_warmup, n_draws : int
        Warm-up iterations discarded and draws kept, per chain (doubled on each retry).
    max_retries : int >= 0
        Reruns allowed when the diagnostics fail.
    random_state : None, int, numpy Generator, RandomState or SeedSequence

    Returns
    -------
    HierarchicalResult

    Raises
    ------
    ConvergenceError
        When R-hat >= 1.01 or bulk ESS < 400 after the retries.

    References
    ----------
    .. [1] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.

    Examples
    --------
    Ten data sets, 10 runs of 10-fold CV each; the second classifier is better by ~0.02:

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(0.80, 0.03, (10, 100))
    >>> y = x + rng.normal(0.02, 0.01, (10, 1)) + rng.normal(0, 0.02, (10, 100))
    >>> res = hierarchical_test(x, 1 / 10, rope=0.01, y=y, random_state=0)
    >>> round(res.prob_left + res.prob_rope + res.prob_right, 12)
    1.0
    >>> res.prob_right > 0.5
    True
    """
    read = _as_cv_matrix if groups is None else _as_long
    if y is None:
        d = read(diffs, "diffs")
        name = "diffs"
    else:
        x = read(diffs, "diffs")
        yy = read(y, "y")
        if x.shape != yy.shape:
            raise ValueError(
                f"`diffs` (x) and `y` must have the same shape (paired scores); got {x.shape} "
                f"and {yy.shape}"
            )
        d = yy - x
        name = "y - x"
    if groups is None:
        rows, labels = list(d), tuple(range(d.shape[0]))
    else:
        rows, labels = _group_rows(d, groups, name)
    rho = check_probability(test_fraction, "test_fraction")
    rope = check_nonnegative(rope, "rope")
    n_chains = check_int(n_chains, "n_chains", minimum=2)
    n_warmup = check_int(n_warmup, "n_warmup", minimum=0)
    n_draws = check_int(n_draws, "n_draws", minimum=10)
    max_retries = check_int(max_retries, "max_retries", minimum=0)
    rng = check_random_state(random_state)
    _check_data(rows, labels, name)

    xbar = np.array([row.mean() for row in rows])
    ss = np.array([((row - row.mean()) ** 2).sum() for row in rows])
    n_obs = np.array([float(row.shape[0]) for row in rows])
    sigma_upper = SIGMA_UPPER_FACTOR * float(np.mean([row.std(ddof=1) for row in rows]))
    sigma0_upper = SIGMA_UPPER_FACTOR * float(xbar.std(ddof=1))
    stats = (xbar, ss, n_obs, sigma_upper, sigma0_upper)

    for attempt in range(max_retries + 1):
        scale = 2**attempt
        delta0, sigma0, nu, delta = _run(stats, rho, n_chains, n_warmup * scale,
                                         n_draws * scale, rng)
        masses = _region_masses(delta0, sigma0, nu, rope)
        monitored = [delta0[None], sigma0[None], nu[None], np.moveaxis(delta, 2, 0)]
        monitored += [m[None] for m in masses if np.ptp(m) > 0.0]
        stacked = np.concatenate(monitored, axis=0)
        rhat, ess = _diagnostics.rhat_and_ess(stacked)
        worst_rhat = float(np.nanmax(rhat))
        worst_ess = float(np.nanmin(ess))
        if worst_rhat < RHAT_MAX and worst_ess >= ESS_MIN:
            break
    else:
        raise ConvergenceError(
            f"hierarchical_test did not converge after {max_retries} retries "
            f"({n_chains} chains x {n_draws * scale} draws): worst split R-hat "
            f"{worst_rhat:.4f} (needs < {RHAT_MAX}), smallest bulk ESS {worst_ess:.0f} "
            f"(needs >= {ESS_MIN:.0f}); no answer is given. Increase n_draws/n_warmup or "
            "max_retries."
        )

    left, middle, right = (m.ravel() for m in masses)
    winner = np.argmax(np.stack((left, middle, right)), axis=0)
    counts = np.bincount(winner, minlength=3) / winner.size
    probs = {"left": float(counts[0]), "rope": float(counts[1]), "right": float(counts[2])}
    return HierarchicalResult(
        prob_left=probs["left"],
        prob_rope=probs["rope"],
        prob_right=probs["right"],
        predictive_left=float(left.mean()),
        predictive_rope=float(middle.mean()),
        predictive_right=float(right.mean()),
        shrinkage=delta.mean(axis=(0, 1)),
        mle=xbar,
        groups=None if groups is None else labels,
        delta0=float(delta0.mean()),
        sigma0=float(sigma0.mean()),
        nu=float(np.median(nu)),
        odds=_odds(probs),
        rhat=worst_rhat,
        ess_bulk=worst_ess,
        n_chains=n_chains,
        n_draws=n_draws * scale,
        n_retries=attempt,
        rope=rope,
        test_fraction=rho,
    )


# Data sets tied on every fold, before the model sees them: shared by the hierarchical racing
# test and RaceResult.hierarchical_comparison (internal, not exported by racer.stats).


def jitter_scale(rope: float) -> float:
    """Spread given to a data set tied on every fold: far below the rope, so no decision moves."""
    return rope / 100.0 if rope > 0 else 1e-8


def jitter_constant_groups(diffs: np.ndarray, labels: list, scale: float,
                           rng: np.random.Generator) -> np.ndarray:
    """Spread a data set whose differences are all equal by N(0, scale^2) noise.

    The model's posterior is improper for such a data set (``hierarchical_test`` refuses it),
    yet two candidates that tie on every fold of a data set are common (coarse accuracies,
    near-identical settings) and that is evidence of equivalence, not something to drop:
    dropping it would even push the remaining data sets toward a dominance call. A spread
    far below the rope keeps the data set's mean and says "very precisely c" to the model.
    """
    out = diffs.copy()
    by_label: dict = {}
    for k, label in enumerate(labels):
        by_label.setdefault(label, []).append(k)
    for rows in by_label.values():
        rows = np.asarray(rows)
        if rows.size >= 2 and np.ptp(out[rows]) == 0.0:
            # Only drawn when needed: without such a data set the stream is untouched.
            out[rows] += rng.normal(0.0, scale, rows.size)
    return out
