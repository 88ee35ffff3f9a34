"""Bayesian sign test under the Dirichlet process (Benavoli et al. 2015, Theorem 2 and section 6).

The prior puts a pseudo-observation of weight ``s`` at the tie (the all-equal point), so
``theta = P(X > Y) + 1/2 P(X = Y)`` and ``theta - 1/2`` is half the weighted sum of the signs
of the differences. Neither ``s`` nor the number of ties moves the sign of that sum, which
gives the closed form used below.

Three layers live here:

* :func:`bayesian_sign_test` -- one pair of paired samples, every posterior summary a user
  asks of a sign test (Theorem 2, the indistinguishability band of section 7.1, and the
  three-region rope probabilities of Benavoli et al. 2017);
* :class:`SignCounts`, :func:`prob_greater_matrix`, :func:`prob_indistinguishable` -- the
  all-pairs primitives the race calls after every block: incremental win/tie counts and
  closed forms gathered from tables, with no Monte Carlo and no loop over pairs in Python;
* :func:`prob_greater_from_counts` -- the scalar/vectorised closed form others import.

See ``docs/stats-bayesian-sign.md`` for the definitions and the decisions taken where the
papers leave a choice.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
from scipy import integrate
from scipy.special import betainc, betaincinv, gammainc, gammaincinv

from racer._validation import (
    as_paired,
    as_score_matrix,
    check_bool,
    check_eps,
    check_int,
    check_nonnegative,
    check_positive,
    check_random_state,
    describe,
    orient,
)
from racer.stats import _kernels
from racer.stats._result import StatsResult

__all__ = [
    "prob_greater_from_counts",
    "bayesian_sign_test",
    "BayesianSignResult",
    "SignCounts",
    "prob_greater_matrix",
    "prob_indistinguishable",
]

# Gauss-Legendre order for the band integral: a study of the kernels
# measured the error against adaptive quadrature at 4e-6 for Q = 48 (9e-6 for Q = 32); on
# our test grid the worst case is 1.2e-5 (few blocks, many ties), the bound we document.
_BAND_NODES = 48
_GL_X, _GL_W = np.polynomial.legendre.leggauss(_BAND_NODES)
# Mapped once to the unit interval: u = (x + 1) / 2, weights halved.
_GL_U = (_GL_X + 1.0) / 2.0
_GL_WU = _GL_W / 2.0

# From this many new blocks in one call, the candidate-major kernel (vectorised over
# blocks) beats the row-by-row one (crossover measured at 3-6 rows for 20-200 candidates);
# both give identical integer counts.
_COLUMN_KERNEL_MIN_ROWS = 4


# ---------------------------------------------------------------------------------------------
# Closed forms on counts
# ---------------------------------------------------------------------------------------------


def prob_greater_from_counts(n_greater, n_less, pseudo_against=0.0):
    """Posterior probability that ``theta > 1/2`` given win/loss counts (ties drop out).

    ``Pr[theta > 1/2] = I_{1/2}(n_less, n_greater)``, the regularised incomplete beta
    function, which equals ``P(Binomial(n_greater + n_less - 1, 1/2) <= n_greater - 1)``.
    Edge cases: no wins gives 0; wins and no losses give 1; no wins and no losses (theta is
    exactly 1/2) gives 0, because the statement is strict.

    ``pseudo_against = s > 0`` gives the lower probability of the imprecise DP (Benavoli et al. 2015
    §7; Benavoli et al. 2014): the prior pseudo-observation of weight ``s`` is put against the
    statement, ``P(Beta(n_greater, n_less + s) > 1/2) = I_{1/2}(n_less + s, n_greater)``,
    so that a record without losses is no longer certain (5-0 gives ``1 - 2^-5`` at s = 1).

    Vectorised over array inputs of counts >= 0 (Beta parameters: a non-integer count is
    allowed).

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [2] Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
       Wilcoxon signed-rank test based on the Dirichlet process. Proceedings of the 31st
       International Conference on Machine Learning (ICML 2014), PMLR 32, 1026–1034.

    >>> prob_greater_from_counts(5, 0), prob_greater_from_counts(5, 0, pseudo_against=1.0)
    (1.0, 0.96875)
    """
    n_greater = _as_nonnegative_numbers(n_greater, "n_greater")
    n_less = _as_nonnegative_numbers(n_less, "n_less")
    pseudo_against = check_nonnegative(pseudo_against, "pseudo_against")
    if pseudo_against:
        n_less = n_less + pseudo_against
    with np.errstate(invalid="ignore"):
        out = betainc(n_less, n_greater, 0.5)
    out = np.where(n_greater == 0, 0.0, np.where(n_less == 0, 1.0, out))
    return out if out.ndim else float(out)


def _as_nonnegative_numbers(value, name):
    # O(size) checks: cheap next to the incomplete beta evaluated on every entry.
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"`{name}` must hold counts (numbers >= 0); got {describe(value)}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"`{name}` must hold finite counts >= 0; got {describe(value)}")
    return arr


def _band_distinct(a, b, n_ties, s, eps):
    """Pr[|theta - 1/2| < eps] for int64 arrays of counts (a wins, b losses, ties), no checks.

    ``(W_g, W_l, rest) ~ Dir(a, b, c)`` with ``c = s + n_ties``, and
    ``theta - 1/2 = (W_g - W_l) / 2``. With ``T = W_g + W_l ~ Beta(a + b, c)`` independent
    of ``R = W_g / T ~ Beta(a, b)`` and ``delta = 2 eps``, the event is
    ``T |2R - 1| < delta``: certain when ``T <= delta``, otherwise
    ``R in ((1 - delta/T)/2, (1 + delta/T)/2)``. Integrating over T in its quantile
    variable u (Gauss-Legendre, which follows T's peak wherever it is):

        u0 + int_{u0}^1 [I_{(1+h)/2}(a, b) - I_{(1-h)/2}(a, b)] du,
        u0 = I_delta(a + b, c),  h = delta / F_T^{-1}(u).

    When a or b is 0, R is 0 or 1, so only ``T < delta`` counts; when both are 0, theta is
    exactly 1/2 and the probability is 1. The quantiles of T depend on (a + b, ties) only,
    and in a race most pairs share few of those, so the costly inverse incomplete beta is
    evaluated once per distinct (a + b, ties) and only the cheap forward one per triple.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    n_ties = np.asarray(n_ties, dtype=np.int64)
    if eps <= 0:
        # An empty band: no theta, not even an exact 1/2 from ties alone, lies strictly inside.
        return np.zeros(a.shape, dtype=np.float64)
    delta = 2.0 * eps
    out = np.ones(a.shape, dtype=np.float64)
    total = a + b
    has_mass = total > 0
    if delta >= 1.0 or not has_mass.any():
        return out
    base = int(n_ties.max()) + 1
    group_key, group_of = np.unique(total * base + n_ties, return_inverse=True)
    g_total = (group_key // base).astype(np.float64)
    g_c = (group_key % base) + s
    with np.errstate(invalid="ignore"):
        g_u0 = np.where(g_total > 0, betainc(g_total, g_c, delta), 1.0)
    # Quantile nodes of T for each group: u = u0 + (1 - u0) * node.
    g_u = g_u0[:, None] + (1.0 - g_u0[:, None]) * _GL_U
    g_t = betaincinv(g_total[:, None], g_c[:, None], g_u)
    u0 = g_u0[group_of]
    out[has_mass] = u0[has_mass]
    split = (a > 0) & (b > 0) & (u0 < 1.0)
    if split.any():
        aa = a[split, None].astype(np.float64)
        bb = b[split, None].astype(np.float64)
        t = g_t[group_of[split]]
        # t > delta for u > u0 in exact arithmetic; the clip guards the last ulp.
        h = np.minimum(delta / np.maximum(t, delta), 1.0)
        inside = betainc(aa, bb, 0.5 * (1.0 + h)) - betainc(aa, bb, 0.5 * (1.0 - h))
        out[split] = u0[split] + (1.0 - u0[split]) * (inside @ _GL_WU)
    return np.minimum(out, 1.0)


def _as_count_array(value, name):
    arr = np.asarray(value)
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"`{name}` must hold non-negative integer counts; got {describe(value)}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"`{name}` must hold whole numbers; got {describe(value)}")
    if np.any(arr < 0):
        raise ValueError(f"`{name}` must be >= 0; got {describe(value)}")
    return arr.astype(np.int64)


def prob_indistinguishable(n_greater, n_less, n_blocks, prior_strength=1.0, eps=0.05):
    """Posterior probability that ``|theta - 1/2| < eps``: the pair is indistinguishable.

    ``theta = P(X > Y) + 1/2 P(X = Y)`` under the DP posterior of Benavoli et al. (2015) (prior strength
    ``s`` at the tie); section 7.1 calls two candidates indistinguishable when
    ``1/2 - eps < theta < 1/2 + eps`` with high posterior probability. Unlike
    :func:`prob_greater_from_counts`, here ``s`` and the ties *do* matter: they are the
    third Dirichlet cell ``c = s + n_ties`` that pulls theta towards 1/2. Computed by the
    quantile Gauss-Legendre formula (docs/stats-bayesian-sign.md) with 48
    nodes (absolute error below 2e-5, typically a few 1e-6), once per distinct ``(min(n_g, n_l), max(n_g, n_l),
    n_ties)`` present -- the band is symmetric in wins and losses.

    Parameters
    ----------
    n_greater, n_less : array_like of int
        Blocks where X > Y and where X < Y; broadcast together with ``n_blocks``.
    n_blocks : array_like of int
        Blocks seen by the pair (ties are ``n_blocks - n_greater - n_less``).
    prior_strength : float > 0
        ``s``, the weight of the pseudo-observation at the tie.
    eps : float in [0, 0.5)
        Half-width of the band around 1/2.

    Returns
    -------
    float or ndarray
        Same shape as the broadcast inputs.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> round(prob_indistinguishable(48, 52, 100, eps=0.1), 3)
    0.941
    >>> prob_indistinguishable(0, 0, 5)   # only ties: theta is exactly 1/2
    1.0
    """
    n_greater = _as_count_array(n_greater, "n_greater")
    n_less = _as_count_array(n_less, "n_less")
    n_blocks = _as_count_array(n_blocks, "n_blocks")
    s = check_positive(prior_strength, "prior_strength")
    eps = check_eps(eps)
    try:
        g, l, n = np.broadcast_arrays(n_greater, n_less, n_blocks)
    except ValueError as exc:
        raise ValueError(
            "`n_greater`, `n_less` and `n_blocks` must broadcast together; got shapes "
            f"{n_greater.shape}, {n_less.shape}, {n_blocks.shape}"
        ) from exc
    if np.any(g + l > n):
        raise ValueError("`n_greater + n_less` must not exceed `n_blocks`")
    out = _band_from_counts(g.ravel(), l.ravel(), (n - g - l).ravel(), s, eps)
    out = out.reshape(g.shape)
    return out if out.ndim else float(out)


def _band_from_counts(n_greater, n_less, n_ties, s, eps):
    """Band probability for flat int64 arrays, evaluated once per distinct triple."""
    if n_greater.size == 0:
        return np.empty(0, dtype=np.float64)
    lo = np.minimum(n_greater, n_less)
    hi = np.maximum(n_greater, n_less)
    base = int(max(hi.max(), n_ties.max())) + 1
    if base < 2**20:
        # One int64 key per triple (< 2^60) makes the uniqueness pass a plain 1-D sort.
        key = (lo * base + hi) * base + n_ties
        uniq, inverse = np.unique(key, return_inverse=True)
        u_lo, u_hi, u_ties = uniq // (base * base), (uniq // base) % base, uniq % base
    else:
        uniq, inverse = np.unique(np.stack([lo, hi, n_ties], axis=1), axis=0, return_inverse=True)
        u_lo, u_hi, u_ties = uniq.T
    values = _band_distinct(u_lo, u_hi, u_ties, s, eps)
    return values[inverse.ravel()]


# ---------------------------------------------------------------------------------------------
# Table of the closed form, shared by every SignCounts
# ---------------------------------------------------------------------------------------------

_table_lock = threading.Lock()
# Built on first use (importing racer.stats must not compile or load kernels).
# (size, packed table) replaced as one object, so readers never see a mismatched pair.
_table_state = (0, np.zeros(0, dtype=np.float64))
# The packed table for totals below 2048 blocks takes 16.8 MB and 1-2 ms to build; past
# that, pairs are served by the incomplete beta directly (a few ms per call at m = 200).
_TABLE_MAX_SIZE = 2048


def _prob_table(min_size):
    """Packed table of Pr[theta > 1/2] covering ``g + l < min_size`` (grown by doubling),
    or None when that exceeds ``_TABLE_MAX_SIZE``."""
    global _table_state
    if min_size > _TABLE_MAX_SIZE:
        return None
    size, table = _table_state
    if size >= min_size:
        return table
    with _table_lock:
        size, table = _table_state
        if size < min_size:
            size = min(max(min_size, 2 * size, 256), _TABLE_MAX_SIZE)
            table = _kernels.sign_prob_greater_table(np.int64(size))
            _table_state = (size, table)
        return table


def _gather_prob_greater(wins, idx, max_total):
    """(m, m) Pr[theta > 1/2] for candidates ``idx`` from a (k, k) int64 win matrix."""
    table = _prob_table(max_total + 1)
    if table is None:
        sub = wins[np.ix_(idx, idx)]
        return np.asarray(prob_greater_from_counts(sub, sub.T), dtype=np.float64)
    out = np.empty((idx.size, idx.size), dtype=np.float64)
    _kernels.sign_prob_greater_gather(wins, table, idx, out)
    return out


def _as_index_array(active, n_candidates, name="active"):
    arr = np.asarray(active)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(
            f"`{name}` must be a 1-D array of integer column indices; got {describe(active)}"
        )
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_candidates):
        bad = arr[(arr < 0) | (arr >= n_candidates)][0]
        raise ValueError(f"`{name}` indices must lie in [0, {n_candidates}); got {bad}")
    # O(k) rather than a sort: this runs on every block of a race.
    if arr.size and np.bincount(arr, minlength=n_candidates).max() > 1:
        raise ValueError(f"`{name}` must not repeat a candidate; got {describe(active)}")
    return arr


def prob_greater_matrix(wins, n_blocks=None):
    """All-pairs posterior probabilities ``P[i, j] = Pr[theta_ij > 1/2]`` that i beats j.

    ``theta_ij = P(X_i > X_j) + 1/2 P(X_i = X_j)``; by Benavoli et al. (2015) Theorem 2 the
    probability is ``I_{1/2}(wins[j, i], wins[i, j])``, whatever the prior strength and the ties,
    so the win counts alone decide it. Served from a cached table built by an exact recurrence
    (no incomplete-beta call per pair); the diagonal is 0.

    Parameters
    ----------
    wins : array_like of int, shape (k, k)
        ``wins[i, j]`` = number of blocks where candidate i scored strictly more than j,
        e.g. :attr:`SignCounts.wins`.
    n_blocks : int or array_like of int, optional
        Blocks per pair (scalar or (k, k)). Not needed by the formula -- ties drop out --
        and only used, when given, to check that ``wins[i, j] + wins[j, i] <= n_blocks``.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> P = prob_greater_matrix([[0, 20], [10, 0]])
    >>> round(float(1 - P[0, 1]), 4)    # Benavoli et al. (2015) Table 1: 20 wins of 30
    0.0307
    """
    wins_arr = _as_count_array(wins, "wins")
    if wins_arr.ndim != 2 or wins_arr.shape[0] != wins_arr.shape[1]:
        raise ValueError(f"`wins` must be a square (k, k) matrix; got shape {wins_arr.shape}")
    wins_arr = np.ascontiguousarray(wins_arr)
    k = wins_arr.shape[0]
    if np.any(np.diagonal(wins_arr)):
        # No candidate beats itself; a non-zero diagonal means the matrix is not a win matrix
        # (a tie matrix, or a pair-block matrix, passed by mistake).
        raise ValueError(
            f"`wins` must have a zero diagonal (no candidate beats itself); got diagonal "
            f"{describe(np.diagonal(wins_arr).tolist())}"
        )
    decided = wins_arr + wins_arr.T
    if n_blocks is not None:
        blocks = _as_count_array(n_blocks, "n_blocks")
        if blocks.ndim not in (0, 2) or (blocks.ndim == 2 and blocks.shape != (k, k)):
            raise ValueError(
                f"`n_blocks` must be a scalar or a ({k}, {k}) matrix; got shape {blocks.shape}"
            )
        if np.any(decided > blocks):
            raise ValueError("`wins[i, j] + wins[j, i]` must not exceed `n_blocks`")
    max_total = int(decided.max(initial=0))
    return _gather_prob_greater(wins_arr, np.arange(k, dtype=np.int64), max_total)


# ---------------------------------------------------------------------------------------------
# Incremental all-pairs counts
# ---------------------------------------------------------------------------------------------


class SignCounts:
    """Incremental all-pairs sign counts for a race over ``n_candidates`` candidates.

    Holds ``wins[i, j]`` = #{blocks with ``x_i > x_j``} and ``ties[i, j]`` = #{blocks with
    ``x_i == x_j``}, counted only over blocks in which both i and j were active;
    ``ties[i, i]`` is the number of blocks candidate i took part in, and
    ``wins + wins.T + ties`` is the number of blocks each pair shares. New blocks cost
    O(m^2) for m active candidates, in a Numba kernel; old blocks are never recounted.
    Scores are "larger is better" (negate minimised scores before adding them).

    Parameters
    ----------
    n_candidates : int >= 1
        Size of the candidate index space; candidates are columns 0 .. n_candidates - 1.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> import numpy as np
    >>> counts = SignCounts(3)
    >>> counts.add_blocks(np.array([[1.0, 2.0, 2.0], [3.0, 1.0, 0.0]]))
    >>> counts.wins.tolist()
    [[0, 1, 1], [1, 0, 1], [1, 0, 0]]
    >>> counts.add_blocks(np.array([[5.0, 4.0]]), active=[0, 2])  # candidate 1 is out
    >>> counts.pair_blocks().tolist()
    [[3, 2, 3], [2, 2, 2], [3, 2, 3]]
    >>> counts.prob_greater(active=[0, 2]).round(3).tolist()
    [[0.0, 0.75], [0.25, 0.0]]
    """

    def __init__(self, n_candidates):
        self._n_candidates = check_int(n_candidates, "n_candidates", minimum=1)
        self._wins = np.zeros((self._n_candidates,) * 2, dtype=np.int64)
        self._ties = np.zeros((self._n_candidates,) * 2, dtype=np.int64)
        self._n_blocks = 0
        self._all = np.arange(self._n_candidates, dtype=np.int64)
        self._last_active = None

    @classmethod
    def from_scores(cls, scores, *, maximize=True):
        """Counts of a whole score matrix (n_blocks, n_candidates), all columns active."""
        arr, _ = as_score_matrix(scores, "scores", min_blocks=0, min_candidates=1)
        counts = cls(arr.shape[1])
        counts.add_blocks(orient(arr, check_bool(maximize, "maximize")))
        return counts

    @property
    def n_candidates(self):
        return self._n_candidates

    @property
    def n_blocks(self):
        """Number of blocks (rows) added so far, whatever columns were active."""
        return self._n_blocks

    @property
    def wins(self):
        """Read-only (k, k) int64 view: ``wins[i, j]`` = blocks where i scored more than j."""
        view = self._wins.view()
        view.flags.writeable = False
        return view

    @property
    def ties(self):
        """Read-only (k, k) int64 view: tied blocks per pair; the diagonal counts blocks."""
        view = self._ties.view()
        view.flags.writeable = False
        return view

    def pair_blocks(self, active=None):
        """Blocks shared by each pair, ``wins + wins.T + ties``, for the ``active`` subset."""
        idx = self._index(active)
        sub = np.ix_(idx, idx)
        return self._wins[sub] + self._wins.T[sub] + self._ties[sub]

    def _index(self, active):
        if active is None:
            return self._all
        # A race passes the same survivors block after block (to add_blocks, then to
        # prob_greater): reuse the last validated copy when the indices are unchanged.
        last = self._last_active
        if last is not None and np.shape(active) == last.shape and np.array_equal(active, last):
            return last
        idx = _as_index_array(active, self._n_candidates)
        self._last_active = idx.copy()
        return self._last_active

    def add_blocks(self, rows, active=None):
        """Count new blocks (rows of scores, larger is better) into the running totals.

        Parameters
        ----------
        rows : array_like, shape (b, n_candidates) or (b, len(active))
            One row per new block. With ``len(active)`` columns, column c holds candidate
            ``active[c]``; with ``n_candidates`` columns (and fewer active), column j holds
            candidate j and inactive columns are ignored (they may be NaN). When every
            candidate is active the two readings coincide only for ``active`` in order, so
            the first reading wins: columns follow ``active``.
        active : array_like of int, optional
            Distinct candidate indices taking part in these blocks; default all. Counts of
            pairs involving an inactive candidate are left alone.
        """
        idx = self._index(active)
        try:
            arr = np.asarray(rows, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"`rows` must be a 2-D array of scores; got {describe(rows)}") from exc
        if arr.ndim != 2:
            raise ValueError(f"`rows` must be 2-D (blocks, candidates); got shape {arr.shape}")
        if arr.shape[1] == idx.size:
            block = arr
        elif arr.shape[1] == self._n_candidates:
            block = arr[:, idx]
        else:
            raise ValueError(
                f"`rows` must have {self._n_candidates} columns (all candidates) or "
                f"{idx.size} (one per active candidate); got shape {arr.shape}"
            )
        if not np.isfinite(block).all():
            r, c = np.argwhere(~np.isfinite(block))[0]
            raise ValueError(
                f"`rows` must be finite at active candidates; found {block[r, c]} at row {r}, "
                f"candidate {idx[c]}"
            )
        self._add_trusted(block, idx)

    def _add_trusted(self, block, idx):
        """Internal fast path: block (b, m) float64 finite, idx (m,) int64 distinct."""
        if block.shape[0] == 0:
            return
        if block.shape[0] >= _COLUMN_KERNEL_MIN_ROWS:
            _kernels.sign_counts_add_columns(
                np.ascontiguousarray(block.T), idx, self._wins, self._ties
            )
        else:
            _kernels.sign_counts_add_rows(np.ascontiguousarray(block), idx, self._wins, self._ties)
        self._n_blocks += block.shape[0]

    def prob_greater(self, active=None):
        """(m, m) matrix ``Pr[theta_ij > 1/2]`` that ``active[a]`` beats ``active[c]``.

        The closed form of Benavoli et al. (2015) Theorem 2 (see :func:`prob_greater_matrix`), gathered
        from the shared table; O(m^2) per call, with no special function evaluated.
        """
        return _gather_prob_greater(self._wins, self._index(active), self._n_blocks)

    def prob_indistinguishable(self, eps=0.05, prior_strength=1.0, active=None):
        """(m, m) symmetric matrix ``Pr[|theta_ij - 1/2| < eps]``; the diagonal is 1.

        See :func:`prob_indistinguishable`; each distinct (wins, losses, ties) triple among
        the active pairs is integrated once.
        """
        idx = self._index(active)
        s = check_positive(prior_strength, "prior_strength")
        eps = check_eps(eps)
        m = idx.size
        out = np.ones((m, m), dtype=np.float64)
        if m < 2:
            return out
        upper_a, upper_c = np.triu_indices(m, 1)
        i, j = idx[upper_a], idx[upper_c]
        values = _band_from_counts(self._wins[i, j], self._wins[j, i], self._ties[i, j], s, eps)
        out[upper_a, upper_c] = values
        out[upper_c, upper_a] = values
        return out


# ---------------------------------------------------------------------------------------------
# One pair: the user-facing test
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False)
class BayesianSignResult(StatsResult):
    """Result of :func:`bayesian_sign_test`; ``theta = P(x > y) + 1/2 P(x = y)``.

    Attributes
    ----------
    prob_greater : float
        ``Pr[theta > 1/2]``: x beats y (Benavoli et al. 2015 Theorem 2; exact, no sampling).
    prob_less : float
        ``Pr[theta < 1/2]``: y beats x. ``1 - prob_greater - prob_less`` is
        ``Pr[theta = 1/2]``, non-zero only when every block is a tie.
    prob_indistinguishable : float
        ``Pr[|theta - 1/2| < eps]`` (Benavoli et al. 2015 section 7.1).
    prob_y_better, prob_equivalent, prob_x_better : float
        Posterior probabilities that the y-better / rope / x-better cell of
        ``Dir(n_y_better, n_rope + s, n_x_better)`` is the largest of the three (Benavoli
        et al. 2017; baycomp's ``p_right, p_rope, p_left``). They sum to 1.
    n_greater, n_ties, n_less : int
        Blocks with x > y, x == y, x < y (exact comparison, after orientation).
    n_x_better, n_rope, n_y_better : int
        Blocks with x - y > rope, |x - y| <= rope, x - y < -rope.
    prior_strength, rope, eps : float
        The settings used.
    posterior_samples : ndarray (n_samples, 3) or None
        Draws of (theta_y_better, theta_rope, theta_x_better) for plots or other
        functionals; not shown in the repr.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [2] Benavoli, A., Corani, G., Demšar, J. & Zaffalon, M. (2017). Time for a change: a
       tutorial for comparing multiple classifiers through Bayesian analysis. Journal of
       Machine Learning Research 18, 2653–2688.
    """

    prob_greater: float
    prob_less: float
    prob_indistinguishable: float
    prob_y_better: float
    prob_equivalent: float
    prob_x_better: float
    n_greater: int
    n_ties: int
    n_less: int
    n_x_better: int
    n_rope: int
    n_y_better: int
    prior_strength: float
    rope: float
    eps: float
    # Left out of == (an array has no single truth value) and of the repr.
    posterior_samples: np.ndarray | None = dataclasses.field(
        default=None, repr=False, compare=False
    )


def _prob_each_largest(alpha):
    """Pr[cell k is the largest] for a Dirichlet with parameters ``alpha`` (3 cells, >= 0).

    With independent ``G_j ~ Gamma(alpha_j)``, cell k is largest iff ``G_k`` exceeds the
    others, so ``Pr = E[prod_{j != k} F_j(G_k)] = int_0^1 prod_j P(alpha_j, Q_k(u)) du``
    (Q_k the Gamma quantile, P the regularised lower incomplete gamma): a 1-D integral of a
    smooth increasing function, done by adaptive quadrature. A zero parameter is a cell
    that is identically 0 (never the largest while another cell has mass).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    out = np.zeros(3)
    positive = np.flatnonzero(alpha > 0)
    if positive.size == 1:
        out[positive[0]] = 1.0
        return out
    for k in positive:
        others = alpha[[j for j in positive if j != k]]

        def integrand(u, shape=alpha[k], others=others):
            g = gammaincinv(shape, u)
            return float(np.prod(gammainc(others, g)))

        out[k] = integrate.quad(integrand, 0.0, 1.0, epsabs=1e-11, epsrel=1e-10, limit=200)[0]
    return out


def bayesian_sign_test(
    x,
    y,
    *,
    prior_strength=1.0,
    rope=0.0,
    eps=0.05,
    n_samples=50_000,
    random_state=None,
    maximize=True,
):
    """Bayesian sign test of paired samples under the Dirichlet process (Benavoli et al. 2015).

    With the DP prior of strength ``s`` centred on the tie (``alpha* = delta_{X = Y}``),
    the posterior of ``theta = P(x > y) + 1/2 P(x = y)`` is that of
    ``W_g + W_t / 2`` with ``(W_0, W_g, W_t, W_l) ~ Dir(s, n_g, n_t, n_l)``, where n_g,
    n_t, n_l count the blocks with x > y, x = y, x < y (ties count one half, section 6).
    It reports:

    * ``prob_greater = Pr[theta > 1/2] = I_{1/2}(n_l, n_g)`` (Theorem 2: s and the ties
      drop out), and ``prob_less`` the same with x and y swapped;
    * ``prob_indistinguishable = Pr[|theta - 1/2| < eps]`` (section 7.1), where s and the
      ties do matter (:func:`prob_indistinguishable`);
    * the rope probabilities of Benavoli et al. (2017, "Time for a change", section 5):
      blocks fall in three cells, x better (``x - y > rope``), equivalent
      (``|x - y| <= rope``) and y better; the cell probabilities are
      ``Dir(n_y_better, n_rope + s, n_x_better)`` (the prior weight on the rope cell), and
      ``prob_x_better`` etc. are the posterior probabilities that each cell is the largest
      -- the published definition, also baycomp's. They are computed by an exact 1-D
      integral, not sampled. With ``rope = 0`` the middle cell holds the ties and the prior.

    Nothing above is Monte Carlo; ``n_samples`` posterior draws of the three cells are
    returned in ``posterior_samples`` (``n_samples=0`` skips them).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired scores (one pair per block). Larger is better unless ``maximize=False``.
    prior_strength : float > 0
        ``s``, the DP prior strength (Benavoli et al. 2015 default 1).
    rope : float >= 0
        Half-width of the region of practical equivalence on ``x - y``.
    eps : float in [0, 0.5)
        Half-width of the indistinguishability band around ``theta = 1/2`` (default 0.05,
        Benavoli et al. 2015 section 7.1).
    n_samples : int >= 0
        Posterior draws kept in ``posterior_samples``.
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Seed of those draws.
    maximize : bool
        If False, smaller scores are better.

    Returns
    -------
    BayesianSignResult

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [2] Benavoli, A., Corani, G., Demšar, J. & Zaffalon, M. (2017). Time for a change: a
       tutorial for comparing multiple classifiers through Bayesian analysis. Journal of
       Machine Learning Research 18, 2653–2688.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.r_[np.ones(20), np.zeros(10)]      # x wins 20 of 30 blocks
    >>> res = bayesian_sign_test(x, 1 - x, n_samples=0)
    >>> round(res.prob_greater, 4), round(1 - res.prob_greater, 4)   # Benavoli et al. (2015) Table 1
    (0.9693, 0.0307)
    """
    xa, ya = as_paired(x, y)
    s = check_positive(prior_strength, "prior_strength")
    rope = check_nonnegative(rope, "rope")
    eps = check_eps(eps)
    n_samples = check_int(n_samples, "n_samples", minimum=0)
    rng = check_random_state(random_state)
    if not check_bool(maximize, "maximize"):
        xa, ya = -xa, -ya

    diff = xa - ya
    n_greater = int(np.count_nonzero(xa > ya))
    n_less = int(np.count_nonzero(xa < ya))
    n_ties = xa.size - n_greater - n_less
    n_x_better = int(np.count_nonzero(diff > rope))
    n_y_better = int(np.count_nonzero(diff < -rope))
    n_rope = xa.size - n_x_better - n_y_better

    band = _band_distinct(np.array([n_greater]), np.array([n_less]), np.array([n_ties]), s, eps)[0]
    alpha = np.array([n_y_better, n_rope + s, n_x_better], dtype=np.float64)
    p_y, p_rope, p_x = _prob_each_largest(alpha)
    samples = None
    if n_samples:
        gammas = rng.standard_gamma(alpha, size=(n_samples, 3))
        samples = gammas / gammas.sum(axis=1, keepdims=True)
    return BayesianSignResult(
        prob_greater=prob_greater_from_counts(n_greater, n_less),
        prob_less=prob_greater_from_counts(n_less, n_greater),
        prob_indistinguishable=float(band),
        prob_y_better=float(p_y),
        prob_equivalent=float(p_rope),
        prob_x_better=float(p_x),
        n_greater=n_greater,
        n_ties=n_ties,
        n_less=n_less,
        n_x_better=n_x_better,
        n_rope=n_rope,
        n_y_better=n_y_better,
        prior_strength=s,
        rope=rope,
        eps=eps,
        posterior_samples=samples,
    )
