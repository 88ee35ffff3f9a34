"""Bayesian Friedman test under the Dirichlet process (Benavoli et al. 2015, Theorem 1, eq. (19), §7).

The data are the within-block rank vectors ``r_1..r_n`` (rank 1 = best, ties averaged). The
prior is a Dirichlet process of strength ``s`` whose base measure sits on the all-tied point,
whose rank vector is ``R0 = ((m+1)/2, ..., (m+1)/2)``. The posterior of the expected rank
vector is then ``mu = w0 R0 + sum_l w_l r_l`` with ``(w0, w_1..w_n) ~ Dir(s, 1, ..., 1)``
(Theorem 1), with closed-form moments, ``a0 = s + n``:

    mean = (s R0 + sum_l r_l) / a0
    cov  = [(s R0 R0^T + sum_l r_l r_l^T) / a0 - mean mean^T] / (a0 + 1)

The test asks whether ``R0`` lies in the ``credibility`` credible region of ``mu``:

* ``"ellipsoid"`` -- eq. (19): ``d^T cov^{-1} d`` on ``m - 1`` coordinates (``d = mean - R0``;
  the ranks sum to ``m(m+1)/2`` so one coordinate is redundant, and the form does not depend
  on which one is dropped) against the Hotelling threshold
  ``F^{-1}(credibility; m-1, n-m+1) (n-1)(m-1)/(n-m+1)``. Defined only for ``n > m - 1``.
  *Decision*: Hotelling's F rather than chi-square, because it is the paper's threshold and it
  is the finite-n one: chi-square is its ``n -> infinity`` limit and rejects too often at
  moderate ``n`` (see the calibration table in docs/stats-bayesian-friedman-joint.md).
* ``"montecarlo"`` -- for small ``n``, where the paper leaves the region open. *Definition*:
  draw ``mu^(t)`` from the exact Dirichlet posterior above, measure every draw's squared
  Euclidean distance to the posterior mean, and take as credible region the ball centred at
  the posterior mean holding a ``credibility`` share of the draws. Reject when ``R0`` lies
  outside that ball. Why Euclidean: under the null (exchangeable candidates) the rank vectors'
  covariance is isotropic on the sum-zero subspace, so this ball is exactly the Mahalanobis
  ellipsoid under the null, the geometry of the classical Friedman statistic
  ``12 n / (m (m+1)) * sum_j (Rbar_j - R0_j)^2``; it needs no matrix inverse, so it is defined
  for every ``n >= 1`` (the posterior covariance has rank ``<= n``).
* ``"auto"`` -- the ellipsoid when ``n >= m + max(4, m // 2)``, Monte Carlo otherwise.
  Where the switch sits is a measured decision (calibration table in
  docs/stats-bayesian-friedman-joint.md): with few denominator degrees of freedom
  ``n - m + 1`` the Hotelling threshold is huge and the ellipsoid almost never rejects
  (0 of 600 null data sets at ``n = m + 2`` for m = 5, 10, 20; 0.7% at ``n = m + 4``, m = 10),
  while past the switch its null rejection rate is 0.04-0.07. The Monte Carlo ball is the
  only region defined below ``n = m``. Its calibration is honest but not uniform: liberal
  with few candidates (``m <= 5``: 0.10-0.15 for ``n <= 11``), conservative with many
  candidates and few blocks (``m >= 20``, ``n <= m``: 0.01-0.03), close to nominal in between
  (``m = 10``, ``n = 10-20``: 0.04-0.07). A
  posterior supported on ``n + 1`` points cannot know the shape of an ``(m-1)``-dimensional
  spread when ``n < m - 1``; no region built from it alone is calibrated there.

:class:`FriedmanAccumulator` keeps the rank sums of a race up to date block by block.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import fdtr, fdtri

from racer._validation import (
    as_score_matrix,
    check_bool,
    check_int,
    check_option,
    check_positive,
    check_probability,
    check_random_state,
)
from racer.stats._ranks import block_ranks
from racer.stats._result import StatsResult

__all__ = [
    "BayesianFriedmanResult",
    "FriedmanAccumulator",
    "auto_min_blocks",
    "bayesian_friedman",
    "bayesian_friedman_from_sums",
]

_METHODS = ("auto", "ellipsoid", "montecarlo")

# Draws per Monte Carlo chunk: bounds memory at chunk * (n + 1) doubles for the weights.
_MC_CHUNK = 4096


@dataclasses.dataclass(frozen=True, repr=False)
class BayesianFriedmanResult(StatsResult):
    """Result of :func:`bayesian_friedman`.

    Attributes
    ----------
    mean_ranks : ndarray (m,)
        Posterior mean of the expected rank vector (rank 1 = best).
    covariance : ndarray (m, m)
        Its posterior covariance (singular: the ranks sum to a constant).
    statistic : float
        ``"ellipsoid"``: the quadratic form ``d^T cov^{-1} d`` of eq. (19). ``"montecarlo"``:
        the squared Euclidean distance from the all-tied point to the posterior mean.
    threshold : float
        The region's boundary on the same scale (Hotelling threshold, or the
        ``credibility`` quantile of the draws' squared distances).
    reject : bool
        True when the all-tied point lies outside the credible region, i.e. the candidates
        differ with posterior probability ``credibility``.
    tied_point_level : float
        How deep inside the posterior the all-tied point sits: ``reject`` is (up to Monte
        Carlo ties) ``tied_point_level > credibility``. Ellipsoid: the F CDF of the scaled
        statistic; Monte Carlo: the share of posterior draws closer to the posterior mean
        than the all-tied point.
    method : str
        ``"ellipsoid"`` or ``"montecarlo"`` (what ``"auto"`` resolved to).
    credibility, prior_strength : float
    n_blocks, n_samples : int
        ``n_samples`` is 0 for the ellipsoid.
    names : list or None
        Candidate names (DataFrame columns), in column order.
    """

    mean_ranks: np.ndarray
    covariance: np.ndarray
    statistic: float
    threshold: float
    reject: bool
    tied_point_level: float
    method: str
    credibility: float
    prior_strength: float
    n_blocks: int
    n_samples: int
    names: list | None = None


def _posterior_moments(rank_sum, rank_outer, n_blocks, prior_strength):
    """Closed-form posterior mean and covariance of ``w0 R0 + R w`` (Theorem 1, eq. 16-17)."""
    m = rank_sum.shape[0]
    tied = (m + 1) / 2.0
    a0 = prior_strength + n_blocks
    mean = (prior_strength * tied + rank_sum) / a0
    second = (rank_outer + prior_strength * tied * tied) / a0
    cov = (second - np.outer(mean, mean)) / (a0 + 1.0)
    return mean, cov


def _quadratic_form_psd(matrix, vector):
    """``v^T M^{-1} v`` for a symmetric positive semi-definite ``M``.

    Cholesky when ``M`` is safely positive definite (the usual case: s > 0 regularises it,
    Benavoli et al. 2015 §7). Otherwise -- e.g. every block ranks the candidates the same way, so the
    posterior lies on a segment -- the pseudo-inverse on the eigen-directions with positive
    spread; a component of ``v`` outside them means the all-tied point is off the posterior's
    support, and the form is infinite.
    """
    try:
        chol = np.linalg.cholesky(matrix)
        if np.min(np.diag(chol)) > 1e-7 * np.sqrt(np.max(np.diag(matrix))):
            y = solve_triangular(chol, vector, lower=True)
            return float(y @ y)
    except np.linalg.LinAlgError:
        pass
    eigval, eigvec = np.linalg.eigh(matrix)
    scale = max(float(np.max(np.abs(eigval))), 1e-300)
    positive = eigval > 1e-10 * scale
    coords = eigvec.T @ vector
    outside = np.abs(coords[~positive])
    if outside.size and np.max(outside) > 1e-8 * max(1.0, float(np.max(np.abs(vector)))):
        return np.inf
    return float(np.sum(coords[positive] ** 2 / eigval[positive]))


def _ellipsoid(mean, cov, n_blocks, credibility):
    """Eq. (19): statistic, Hotelling threshold and the F-CDF level of the all-tied point."""
    m = mean.shape[0]
    tied = (m + 1) / 2.0
    d = mean[:-1] - tied
    statistic = _quadratic_form_psd(cov[:-1, :-1], d)
    dfn, dfd = m - 1, n_blocks - m + 1
    if dfd <= 0:
        # Eq. 19's threshold is undefined; the statistic still is (pseudo-inverse on the
        # posterior's support), e.g. for a chi-square comparison (racer.BayesianTest's
        # small_n="chi2").
        return statistic, float("nan"), float("nan")
    scale = (n_blocks - 1) * (m - 1) / dfd
    # scipy.special rather than scipy.stats: same functions, without the 0.3-2 s import.
    threshold = float(fdtri(dfn, dfd, credibility) * scale)
    level = float(fdtr(dfn, dfd, statistic / scale)) if np.isfinite(statistic) else 1.0
    return statistic, threshold, level


def _montecarlo(ranks, mean, prior_strength, credibility, n_samples, rng):
    """Monte Carlo credible ball around the posterior mean (module docstring)."""
    n_blocks, m = ranks.shape
    tied = (m + 1) / 2.0
    centred = ranks - mean  # rows r_l - mean
    tied_offset = tied - mean  # R0 - mean
    distances = np.empty(n_samples)
    start = 0
    while start < n_samples:
        size = min(_MC_CHUNK, n_samples - start)
        w0 = rng.standard_gamma(prior_strength, size=size)
        w = rng.standard_exponential((size, n_blocks))
        total = w0 + w.sum(axis=1)
        # mu - mean = (w0 (R0 - mean) + sum_l w_l (r_l - mean)) / total
        draws = (np.outer(w0, tied_offset) + w @ centred) / total[:, None]
        distances[start : start + size] = np.einsum("ij,ij->i", draws, draws)
        start += size
    statistic = float(tied_offset @ tied_offset)
    threshold = float(np.quantile(distances, credibility))
    level = float(np.mean(distances < statistic))
    return statistic, threshold, level


def auto_min_blocks(n_candidates):
    """Fewest blocks at which ``method="auto"`` uses the ellipsoid: ``m + max(4, m // 2)``.

    Measured switch (module docstring): below it the Hotelling threshold of eq. (19) has too
    few denominator degrees of freedom and the ellipsoid almost never rejects.

    >>> auto_min_blocks(10), auto_min_blocks(200)
    (15, 300)
    """
    return _min_blocks(check_int(n_candidates, "n_candidates", minimum=2))


def _min_blocks(n_candidates):
    return n_candidates + max(4, n_candidates // 2)


def _auto_method(n_blocks, n_candidates):
    return "ellipsoid" if n_blocks >= _min_blocks(n_candidates) else "montecarlo"


def _decide(ranks, rank_sum, rank_outer, n_blocks, prior_strength, credibility, method,
            n_samples, rng, names):
    mean, cov = _posterior_moments(rank_sum, rank_outer, n_blocks, prior_strength)
    m = mean.shape[0]
    if method == "auto":
        method = _auto_method(n_blocks, m)
    if method == "ellipsoid":
        statistic, threshold, level = _ellipsoid(mean, cov, n_blocks, credibility)
        reject = statistic > threshold
        used_samples = 0
    else:
        statistic, threshold, level = _montecarlo(
            ranks, mean, prior_strength, credibility, n_samples, rng
        )
        reject = statistic > threshold
        used_samples = n_samples
    return BayesianFriedmanResult(
        mean_ranks=mean,
        covariance=cov,
        statistic=statistic,
        threshold=threshold,
        reject=bool(reject),
        tied_point_level=level,
        method=method,
        credibility=credibility,
        prior_strength=prior_strength,
        n_blocks=n_blocks,
        n_samples=used_samples,
        names=names,
    )


def _check_common(prior_strength, credibility, method, n_samples):
    prior_strength = check_positive(prior_strength, "prior_strength")
    credibility = check_probability(credibility, "credibility")
    method = check_option(method, "method", _METHODS)
    n_samples = check_int(n_samples, "n_samples", minimum=100)
    return prior_strength, credibility, method, n_samples


def bayesian_friedman(
    scores,
    *,
    maximize=True,
    prior_strength=1.0,
    credibility=0.95,
    method="auto",
    n_samples=20_000,
    random_state=None,
):
    """Bayesian Friedman test: is the all-tied rank vector credible? (Benavoli et al. 2015, §5.2).

    Posterior of the expected within-block rank vector under a Dirichlet process prior of
    strength ``prior_strength`` centred on the all-tied point (Theorem 1):
    ``mean = (s R0 + sum_l r_l)/(s+n)``,
    ``cov = [(s R0 R0^T + sum_l r_l r_l^T)/(s+n) - mean mean^T]/(s+n+1)``.
    The all-tied point ``R0 = (m+1)/2`` is tested for inclusion in the ``credibility``
    credible region: by the ellipsoid of eq. (19) with the Hotelling threshold
    ``F^{-1}(credibility; m-1, n-m+1)(n-1)(m-1)/(n-m+1)`` (needs ``n > m - 1``), or by a
    Monte Carlo ball around the posterior mean holding ``credibility`` of the posterior
    draws (any ``n``). ``method="auto"`` uses the ellipsoid when
    ``n >= m + max(4, m // 2)``. See the module
    docstring and docs/stats-bayesian-friedman-joint.md for why.

    Parameters
    ----------
    scores : array_like or DataFrame, shape (n_blocks, n_candidates)
    maximize : bool
        Larger scores are better (rank 1 goes to the largest).
    prior_strength : float > 0
        ``s``, the weight of the all-tied pseudo-observation.
    credibility : float in (0, 1)
        ``1 - gamma``.
    method : {"auto", "ellipsoid", "montecarlo"}
    n_samples : int >= 100
        Posterior draws for the Monte Carlo region.
    random_state : None, int, numpy Generator, RandomState or SeedSequence

    Returns
    -------
    BayesianFriedmanResult

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal(size=(40, 4)) + [0.0, 0.0, 0.5, 1.0]
    >>> res = bayesian_friedman(scores, random_state=0)
    >>> res.method, bool(res.reject)
    ('ellipsoid', True)
    >>> bayesian_friedman(scores[:7], random_state=0).method   # n < m + 4
    'montecarlo'
    """
    arr, names = as_score_matrix(scores, "scores", min_blocks=1)
    maximize = check_bool(maximize, "maximize")
    prior_strength, credibility, method, n_samples = _check_common(
        prior_strength, credibility, method, n_samples
    )
    n_blocks, m = arr.shape
    if method == "ellipsoid" and n_blocks <= m - 1:
        raise ValueError(
            f"`method`='ellipsoid' needs more blocks than candidates minus one (eq. 19: the "
            f"Hotelling threshold has n - m + 1 degrees of freedom); got n_blocks={n_blocks}, "
            f"n_candidates={m}. Use method='montecarlo' or 'auto'."
        )
    rng = check_random_state(random_state)
    ranks = block_ranks(arr, maximize=maximize)
    return _decide(
        ranks, ranks.sum(axis=0), ranks.T @ ranks, n_blocks, prior_strength, credibility,
        method, n_samples, rng, names,
    )


def bayesian_friedman_from_sums(
    rank_sums,
    rank_outer,
    n_blocks,
    *,
    ranks=None,
    prior_strength=1.0,
    credibility=0.95,
    method="ellipsoid",
    n_samples=20_000,
    random_state=None,
):
    """:func:`bayesian_friedman` from the sufficient statistics of the ranks.

    For callers that keep the sums themselves (a race keeps them incrementally:
    :attr:`racer.racing.base.RaceView.rank_sums` and ``rank_outer``). ``rank_sums`` (m,)
    and ``rank_outer`` (m, m) are ``sum_l r_l`` and ``sum_l r_l r_l'`` over ``n_blocks``
    within-block rank vectors (1 = best); the Monte Carlo region also needs the rank rows
    themselves (``ranks``, (n_blocks, m)). Unlike :func:`bayesian_friedman`,
    ``method="ellipsoid"`` is accepted for ``n_blocks <= m - 1``: the statistic is then the
    quadratic form on the posterior's support (pseudo-inverse) and ``threshold`` is NaN, so
    ``reject`` is False.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats._ranks import block_ranks
    >>> scores = np.random.default_rng(0).normal(size=(40, 4)) + [0.0, 0.0, 0.5, 1.0]
    >>> r = block_ranks(scores)
    >>> res = bayesian_friedman_from_sums(r.sum(axis=0), r.T @ r, 40)
    >>> bool(res.reject), bool(res.reject == bayesian_friedman(scores, method="ellipsoid").reject)
    (True, True)
    """
    prior_strength, credibility, method, n_samples = _check_common(
        prior_strength, credibility, method, n_samples
    )
    n_blocks = check_int(n_blocks, "n_blocks", minimum=1)
    sums = np.asarray(rank_sums, dtype=np.float64)
    outer = np.asarray(rank_outer, dtype=np.float64)
    if sums.ndim != 1 or sums.shape[0] < 2:
        raise ValueError(f"`rank_sums` must be 1-D with at least 2 entries; got shape {sums.shape}")
    m = sums.shape[0]
    if outer.shape != (m, m):
        raise ValueError(f"`rank_outer` must have shape ({m}, {m}); got {outer.shape}")
    if method == "auto":
        method = _auto_method(n_blocks, m)
    if method == "montecarlo":
        if ranks is None:
            raise ValueError("`ranks` (n_blocks, m) are needed for method='montecarlo'")
        ranks = np.asarray(ranks, dtype=np.float64)
        if ranks.shape != (n_blocks, m):
            raise ValueError(
                f"`ranks` must have shape ({n_blocks}, {m}) (n_blocks, len(rank_sums)); "
                f"got {ranks.shape}"
            )
    rng = check_random_state(random_state)
    return _decide(ranks, sums, outer, n_blocks, prior_strength, credibility, method,
                   n_samples, rng, None)


class FriedmanAccumulator:
    """Bayesian Friedman posterior kept up to date as a race adds blocks and drops candidates.

    What is incremental: while the set of candidates is unchanged, each new block costs one
    ranking of its row (O(m log m)) and a rank-one update of ``sum r`` and ``sum r r^T``
    (O(m^2)). What is recomputed: when the candidate set changes, every within-block rank
    changes (ranks are among the survivors), so all rows are re-ranked and the sums rebuilt
    (O(n m log m) + one GEMM, O(n m^2)); a race does this at most once per elimination step.
    The rank rows are kept, because the Monte Carlo region needs them.

    Use :meth:`update` with the survivors' whole score matrix and their stable ids (the
    interface of :class:`racer.racing.base.RacingTest`); it works out itself whether it can
    extend its sums or must rebuild them. Rows already seen must not change.

    >>> import numpy as np
    >>> acc = FriedmanAccumulator()
    >>> scores = np.random.default_rng(1).normal(size=(30, 5)) + np.arange(5)
    >>> res = acc.update(scores[:20], ids=np.arange(5)).result(random_state=0)
    >>> res = acc.update(scores, ids=np.arange(5)).result(random_state=0)   # adds 10 rows
    >>> res = acc.update(scores[:, 1:], ids=np.arange(1, 5)).result()       # re-ranks
    >>> bool(res.reject)
    True
    """

    def __init__(self, *, maximize=True, prior_strength=1.0):
        self.maximize = check_bool(maximize, "maximize")
        self.prior_strength = check_positive(prior_strength, "prior_strength")
        self._ids = None
        self._ranks = np.empty((0, 0))
        self._n_blocks = 0
        self._rank_sum = np.empty(0)
        self._rank_outer = np.empty((0, 0))
        self.n_rebuilds = 0

    @property
    def n_blocks(self) -> int:
        return self._n_blocks

    def _append_ranks(self, new_ranks):
        needed = self._n_blocks + new_ranks.shape[0]
        if needed > self._ranks.shape[0]:
            grown = np.empty((max(needed, 2 * self._ranks.shape[0], 16), new_ranks.shape[1]))
            grown[: self._n_blocks] = self._ranks[: self._n_blocks]
            self._ranks = grown
        self._ranks[self._n_blocks : needed] = new_ranks
        self._n_blocks = needed

    def update(self, scores, ids=None):
        """Bring the posterior up to ``scores`` (all rows so far, survivors' columns).

        ``ids`` are stable identifiers of the columns (defaults to ``0..m-1``). If they equal
        the previous call's ids and ``scores`` has at least as many rows, only the new rows
        are ranked and added; otherwise everything is rebuilt. Returns ``self``.
        """
        arr, _ = as_score_matrix(scores, "scores", min_blocks=1)
        m = arr.shape[1]
        ids = np.arange(m) if ids is None else np.asarray(ids)
        if ids.shape != (m,):
            raise ValueError(f"`ids` must have one entry per column ({m}); got shape {ids.shape}")
        if len(set(ids.tolist())) != m:
            # Two columns under one id would be ranked apart but cached as one candidate.
            raise ValueError(f"`ids` must not repeat a candidate; got {ids.tolist()}")
        same = (
            self._ids is not None
            and self._ids.shape == ids.shape
            and np.array_equal(self._ids, ids)
            and arr.shape[0] >= self._n_blocks
        )
        if same:
            new = arr[self._n_blocks :]
            if new.shape[0]:
                new_ranks = block_ranks(new, maximize=self.maximize)
                self._append_ranks(new_ranks)
                self._rank_sum += new_ranks.sum(axis=0)
                self._rank_outer += new_ranks.T @ new_ranks
        else:
            ranks = block_ranks(arr, maximize=self.maximize)
            self._ranks = np.empty((0, m))
            self._n_blocks = 0
            self._append_ranks(ranks)
            self._rank_sum = ranks.sum(axis=0)
            self._rank_outer = ranks.T @ ranks
            self._ids = ids.copy()
            self.n_rebuilds += 1
        return self

    def result(self, *, credibility=0.95, method="auto", n_samples=20_000, random_state=None):
        """The :func:`bayesian_friedman` result for the current blocks and candidates."""
        if self._ids is None:
            raise ValueError("FriedmanAccumulator has no data yet; call update() first")
        _, credibility, method, n_samples = _check_common(
            self.prior_strength, credibility, method, n_samples
        )
        m = self._ids.shape[0]
        if method == "ellipsoid" and self._n_blocks <= m - 1:
            raise ValueError(
                f"`method`='ellipsoid' needs n_blocks > n_candidates - 1; got "
                f"n_blocks={self._n_blocks}, n_candidates={m}"
            )
        rng = check_random_state(random_state)
        ranks = self._ranks[: self._n_blocks]
        return _decide(
            ranks, self._rank_sum.copy(), self._rank_outer.copy(), self._n_blocks,
            self.prior_strength, credibility, method, n_samples, rng, None,
        )
