"""Joint Bayesian multiple comparisons (Benavoli et al. 2015, §5.3 and Table 1).

For every pair of candidates the Bayesian sign test (Theorem 2) is run in the direction of
larger posterior probability; the statements "winner beats loser" are sorted by decreasing
marginal probability, and the longest prefix whose *joint* posterior probability exceeds the
credibility is accepted (Gelman & Tuerlinckx's (2000) procedure as the paper uses it).

The joint probabilities come from Monte Carlo over Dirichlet weights shared by every
statement. Two exact simplifications make it cheap:

* the sign trick: ``theta - 1/2 = 1/2 sum_l w_l sgn(x_winner,l - x_loser,l)`` (the prior
  pseudo-observation sits on the tie, so ``w0`` drops out), and the sign of that sum does not
  change when the weights are rescaled, so the Dirichlet(s, 1, ..., 1) draw can be replaced
  by i.i.d. Exp(1) weights without ``w0``; the prior strength ``s`` never enters;
* one pass: each sample records the index of its first failing statement; prefix ``l`` holds
  exactly in the samples whose first failure is after ``l``, so a reverse cumulative sum of
  the histogram gives every prefix probability at once.

Near-sure statements are not simulated: a statement whose loser never beats its winner holds
in every sample (exact), and the statements with the smallest closed-form failure
probabilities (Theorem 2) are skipped as long as their failure probabilities sum to at most
``1e-6``. By the union bound this overestimates any prefix probability by at most 1e-6,
a thousand times below the Monte Carlo standard error at 50 000 samples.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from racer._validation import (
    as_score_matrix,
    check_bool,
    check_int,
    check_positive,
    check_probability,
    check_random_state,
    orient,
)
from racer.stats import _kernels
from racer.stats._result import StatsResult
from racer.stats.bayesian_sign import prob_greater_from_counts

__all__ = ["JointComparisonsResult", "joint_comparisons", "joint_prefix_probabilities"]

# Union-bound budget: the least likely to fail statements are not simulated while their
# closed-form failure probabilities sum to at most this (module docstring).
_SKIP_BUDGET = 1e-6
# Exp(1) draws generated per chunk (float32): bounds memory at 4 bytes each.
_CHUNK_ELEMENTS = 1 << 20
_MAX_CHUNK_SAMPLES = 4096
# Back-end switch (see _first_fail_histogram): BLAS from this many blocks and statements.
_GEMM_MIN_BLOCKS = 32
_GEMM_MIN_STATEMENTS = 16
_GEMM_STATEMENT_BLOCK = 128
# With an early stop: statements per pass over all samples. The pass usually stops within a
# few hundred statements, and a doubling schedule would overshoot the stopping point by 2x.
_STOP_BLOCK = 64
# With an early stop, weights are kept between passes up to this many (float32, 32 MB).
_KEEP_WEIGHTS_ELEMENTS = 1 << 23
# Up to this many simulated statements, blocks are grouped by sign pattern (one Gamma
# weight per group), when that at least halves the number of weights.
_PATTERN_MAX_STATEMENTS = 12


def _as_signs(signs):
    """Validate a statement-by-block sign matrix; return float32 C-contiguous."""
    try:
        arr = np.asarray(signs)
    except (TypeError, ValueError) as exc:  # pragma: no cover - numpy accepts nearly anything
        raise TypeError(f"`signs` must be a 2-D array of -1/0/1; got {signs!r}") from exc
    if arr.ndim != 2:
        raise ValueError(
            f"`signs` must be 2-D with shape (n_statements, n_blocks); got shape {arr.shape}"
        )
    if arr.shape[1] < 1:
        raise ValueError("`signs` needs at least one block (column); got 0")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"`signs` must be numeric (-1/0/1); got dtype {arr.dtype}")
    out = np.ascontiguousarray(arr, dtype=np.float32)
    bad = (out != 0) & (out != 1) & (out != -1)
    if bad.any():
        k, l = np.argwhere(bad)[0]
        raise ValueError(
            f"`signs` must hold only -1, 0 and 1; found {arr[k, l]!r} at statement {k}, block {l}"
        )
    return out




def _chunk_samples(n_blocks):
    """Samples per chunk: a multiple of the kernel tile, about _CHUNK_ELEMENTS weights."""
    tile = _kernels.JOINT_TILE
    return max(tile, min(_MAX_CHUNK_SAMPLES, _CHUNK_ELEMENTS // n_blocks) // tile * tile)


def _choose_backend(n_statements, n_blocks):
    if n_blocks >= _GEMM_MIN_BLOCKS and n_statements >= _GEMM_MIN_STATEMENTS:
        return "gemm"
    return "kernel"


def _kernel_chunk(weights, signs, hist):
    """Numba back-end: re-tile the (size, n) chunk as (tiles, n, TILE) and run the kernel."""
    size, n_blocks = weights.shape
    tile = _kernels.JOINT_TILE
    n_tiles = -(-size // tile)
    padded = np.empty((n_tiles * tile, n_blocks), dtype=np.float32)
    padded[:size] = weights
    padded[size:] = 1.0  # lanes past ``size`` are computed but never counted
    tiles = np.ascontiguousarray(padded.reshape(n_tiles, tile, n_blocks).transpose(0, 2, 1))
    _kernels.joint_first_fail_histogram(tiles, signs, size, hist)


def _gemm_block(weights, signs, hist, offset, ids, against=None):
    """BLAS back-end on the samples ``ids`` of a chunk: statement sums for a block of
    statements by one SGEMM, then a scan; adds first failures to ``hist[offset + k]`` and
    returns the ids of the samples in which every statement of ``signs`` holds.

    Statement k holds in a sample when its sum exceeds ``against`` (the IDP pseudo-weight;
    0 without it). Samples that have failed are dropped from the weight matrix (a row
    gather) once they are a fifth of it, so the GEMMs shrink as the prefix probability falls.
    """
    n_statements = signs.shape[0]
    active = weights if ids.shape[0] == weights.shape[0] else weights[ids]
    threshold = None if against is None else against[ids]
    alive = np.ones(ids.shape[0], dtype=bool)
    scan = np.empty(ids.shape[0], dtype=np.int64)
    for k0 in range(0, n_statements, _GEMM_STATEMENT_BLOCK):
        values = active @ signs[k0 : k0 + _GEMM_STATEMENT_BLOCK].T
        if threshold is not None:
            # a - b <= 0 exactly when a <= b in IEEE arithmetic (gradual underflow).
            values -= threshold[:, None]
        out = scan[: values.shape[0]]
        _kernels.joint_first_nonpositive(values, out)
        newly = alive & (out >= 0)
        if newly.any():
            hist += np.bincount(offset + k0 + out[newly], minlength=hist.shape[0])
            alive &= ~newly
            n_alive = int(np.count_nonzero(alive))
            if n_alive == 0:
                return ids[:0]
            if n_alive < 0.8 * active.shape[0]:
                ids = ids[alive]
                active = weights[ids]
                threshold = None if against is None else against[ids]
                alive = np.ones(n_alive, dtype=bool)
    return ids[alive]


def _gemm_chunk(weights, signs, hist):
    """BLAS back-end on a whole chunk: first failures (L for none) added to ``hist``."""
    ids = np.arange(weights.shape[0])
    survivors = _gemm_block(weights, signs, hist, 0, ids)
    hist[signs.shape[0]] += survivors.shape[0]


def _draw_chunk(gen, weights, shapes, pseudo_weight):
    """Fill ``weights`` (size, n) with one chunk's weights from ``gen``; return the IDP
    pseudo-weights (size,) or None. Exp(1) per block, or Gamma(k) for a group of k blocks
    with the same sign pattern (a sum of k i.i.d. Exp(1))."""
    if shapes is None:
        gen.standard_exponential(out=weights, dtype=np.float32)
    else:
        gen.standard_gamma(shapes, out=weights, dtype=np.float32)
    if pseudo_weight is None:
        return None
    return gen.standard_gamma(pseudo_weight, size=weights.shape[0], dtype=np.float32)


def _first_fail_histogram(signs, n_samples, rng, backend="auto", *, stop_below=None,
                          pseudo_weight=None, shapes=None):
    """Histogram (L + 1,) of each sample's first failing statement (trusted float32 signs).

    Returns ``hist`` when ``stop_below`` is None, else ``(hist, n_processed)``: statements
    are then processed in blocks of ``_STOP_BLOCK`` across all samples and the pass stops
    after the block in which the share of samples holding every statement so far falls to
    ``stop_below`` or below (longer prefixes are not needed); ``hist[L]`` then counts the
    samples that hold the ``n_processed`` statements processed.

    The weights are drawn as float32 Exp(1) (Gamma(``shapes``) for grouped blocks) in
    chunks of shape ``(chunk, n)``, where ``chunk`` depends only on ``n``, each chunk
    followed by its ``pseudo_weight`` draws (IDP, Gamma(s) against every statement), so the
    same generator state gives the same weights whichever back-end and whatever
    ``stop_below``. Back-ends (same sums, different rounding order): ``"gemm"``, one BLAS
    SGEMM per block of 128 statements plus a Numba scan, used when ``n >= 32`` and
    ``L >= 16``, and always with ``stop_below`` or ``pseudo_weight``; ``"kernel"``, the
    Numba kernel with per-tile early exit, for small problems where BLAS is inefficient.
    BLAS is pinned to one thread around the loop: it runs back to back with Numba, and
    OpenBLAS workers spinning on 2 cores cost more than they gain.
    """
    n_statements, n_blocks = signs.shape
    if n_statements == 0:
        hist = np.zeros(1, dtype=np.int64)
        hist[0] = n_samples
        return hist if stop_below is None else (hist, 0)
    if stop_below is not None or pseudo_weight is not None:
        backend = "gemm"
    elif backend == "auto":
        backend = _choose_backend(n_statements, n_blocks)
    chunk = _chunk_samples(n_blocks)
    sizes = [min(chunk, n_samples - start) for start in range(0, n_samples, chunk)]
    if stop_below is None:
        return _sample_major_histogram(signs, sizes, rng, backend, shapes, pseudo_weight)
    chunks = _ChunkWeights(rng, n_samples, n_blocks, sizes, shapes, pseudo_weight)
    return _statement_major_histogram(signs, chunks, stop_below * n_samples)


def _sample_major_histogram(signs, sizes, rng, backend, shapes, pseudo_weight):
    """:func:`_first_fail_histogram` without an early stop: every statement on each chunk of
    samples in turn."""
    n_statements, n_blocks = signs.shape
    hist = np.zeros(n_statements + 1, dtype=np.int64)
    run_chunk = _gemm_chunk if backend == "gemm" else _kernel_chunk
    # One buffer refilled in place: fresh multi-megabyte arrays would page-fault on
    # every chunk, which costs about as much as drawing the numbers.
    buffer = np.empty((sizes[0], n_blocks), dtype=np.float32)
    with _kernels.blas_single_thread() if backend == "gemm" else contextlib.nullcontext():
        for size in sizes:
            weights = buffer[:size]
            against = _draw_chunk(rng, weights, shapes, pseudo_weight)
            if against is None:
                run_chunk(weights, signs, hist)
            else:
                ids = _gemm_block(weights, signs, hist, 0, np.arange(size), against)
                hist[n_statements] += ids.shape[0]
    return hist


class _ChunkWeights:
    """The weights of each chunk of samples for a statement-major pass: drawn from ``rng``
    in order for the first block of statements (:meth:`first`); for the later blocks
    (:meth:`again`) kept from then when they fit in memory, otherwise drawn again from the
    generator state saved before the first draw."""

    def __init__(self, rng, n_samples, n_blocks, sizes, shapes, pseudo_weight):
        self.rng, self.n_blocks, self.sizes = rng, n_blocks, sizes
        self.shapes, self.pseudo_weight = shapes, pseudo_weight
        self.keep = n_samples * n_blocks <= _KEEP_WEIGHTS_ELEMENTS
        self.kept, self.states = [], []
        self.buffer = None if self.keep else np.empty((sizes[0], n_blocks), dtype=np.float32)

    def first(self, size):
        """Draw the next chunk's ``(weights, against)`` from the race's generator."""
        if self.keep:
            weights = np.empty((size, self.n_blocks), dtype=np.float32)
        else:
            weights = self.buffer[:size]
            self.states.append(self.rng.bit_generator.state)
        against = _draw_chunk(self.rng, weights, self.shapes, self.pseudo_weight)
        if self.keep:
            self.kept.append((weights, against))
        return weights, against

    def again(self, c, size):
        """Chunk ``c``'s ``(weights, against)`` as :meth:`first` drew them."""
        if self.keep:
            return self.kept[c]
        gen = np.random.Generator(type(self.rng.bit_generator)())
        gen.bit_generator.state = self.states[c]
        weights = self.buffer[:size]
        return weights, _draw_chunk(gen, weights, self.shapes, self.pseudo_weight)


def _statement_major_histogram(signs, chunks, limit):
    """:func:`_first_fail_histogram` with an early stop: each chunk's surviving samples are
    carried from one block of statements to the next, and the pass stops after the block
    where at most ``limit`` samples hold every statement so far. Returns ``(hist,
    n_processed)``."""
    n_statements = signs.shape[0]
    hist = np.zeros(n_statements + 1, dtype=np.int64)
    alive = [np.arange(size) for size in chunks.sizes]
    with _kernels.blas_single_thread():
        for k0 in range(0, n_statements, _STOP_BLOCK):
            block = signs[k0 : k0 + _STOP_BLOCK]
            n_alive = 0
            for c, size in enumerate(chunks.sizes):
                if k0 == 0:
                    weights, against = chunks.first(size)
                elif alive[c].shape[0] == 0:
                    continue
                else:
                    weights, against = chunks.again(c, size)
                if alive[c].shape[0]:
                    alive[c] = _gemm_block(weights, block, hist, k0, alive[c], against)
                n_alive += alive[c].shape[0]
            n_processed = k0 + block.shape[0]
            if n_alive <= limit:
                break
    hist[n_statements] = n_alive
    return hist, n_processed


def _first_fail_histogram_numpy(weights, signs):
    """Plain-NumPy reference of the kernel on given weights (S, n): same sums, same order.

    Test-only: a Python loop over blocks and statements.
    """
    n_samples = weights.shape[0]
    n_statements, n_blocks = signs.shape
    first = np.full(n_samples, n_statements, dtype=np.int64)
    for k in range(n_statements):
        acc = np.zeros(n_samples, dtype=np.float32)
        for l in range(n_blocks):
            acc += signs[k, l] * weights[:, l]
        newly = (first == n_statements) & (acc <= 0)
        first[newly] = k
    return np.bincount(first, minlength=n_statements + 1)


def _prefix_from_histogram(hist):
    """P(prefix 0..k holds) = share of samples whose first failure is after k."""
    n_samples = hist.sum()
    survivors = n_samples - np.cumsum(hist[:-1])
    return survivors / n_samples


def _failure_prob(signs, pseudo_weight=None):
    n_pos = np.count_nonzero(signs > 0, axis=1)
    n_neg = np.count_nonzero(signs < 0, axis=1)
    return 1.0 - np.asarray(
        prob_greater_from_counts(n_pos, n_neg, pseudo_against=pseudo_weight or 0.0),
        dtype=np.float64,
    )


def _statements_to_simulate(failure_prob):
    """Indices (ascending) of the statements left after the union-bound skip."""
    order = np.argsort(failure_prob, kind="stable")
    n_skip = int(np.searchsorted(np.cumsum(failure_prob[order]), _SKIP_BUDGET, side="right"))
    keep = np.ones(failure_prob.shape[0], dtype=bool)
    keep[order[:n_skip]] = False
    # A statement that fails in every draw (no wins) ends every prefix: later statements
    # need neither signs nor sums.
    certain_failure = np.flatnonzero(failure_prob >= 1.0)
    if certain_failure.size:
        keep[certain_failure[0] + 1 :] = False
    return np.flatnonzero(keep)


def _group_patterns(signs):
    """Blocks with the same sign pattern across all statements, as (patterns (L, g), sizes),
    or (signs, None) when grouping would not at least halve the weights. A group of k
    blocks shares one Gamma(k) weight, the law of a sum of k i.i.d. Exp(1); blocks where
    every statement ties carry no information and are dropped."""
    n_statements, n_blocks = signs.shape
    if n_statements > _PATTERN_MAX_STATEMENTS:
        return signs, None
    patterns, counts = np.unique(signs.T, axis=0, return_counts=True)
    informative = np.any(patterns != 0, axis=1)
    patterns, counts = patterns[informative], counts[informative]
    if len(counts) == 0 or 2 * len(counts) > n_blocks:
        return signs, None
    return np.ascontiguousarray(patterns.T), counts.astype(np.float64)


def _prefix_from_simulated(signs_simulated, simulated, n_statements, n_samples, rng,
                           stop_below=None, pseudo_weight=None):
    """Prefix probabilities from a Monte Carlo over the simulated statements only.

    ``simulated``: ascending indices of the rows of ``signs_simulated`` in the full list;
    the other statements hold in every draw (up to the union-bound budget), so a draw's
    first failure among the simulated statements is its first failure overall. With
    ``stop_below`` the result ends where the Monte Carlo stopped (see
    :func:`joint_prefix_probabilities`).
    """
    limit = n_statements
    if simulated.size:
        signs_mc, shapes = _group_patterns(signs_simulated)
        out = _first_fail_histogram(
            signs_mc, n_samples, rng, stop_below=stop_below, pseudo_weight=pseudo_weight,
            shapes=shapes,
        )
        if stop_below is None:
            hist_sim = out
        else:
            hist_sim, n_processed = out
            if n_processed < simulated.size:
                # Statements up to the first unprocessed simulated one are known.
                limit = int(simulated[n_processed])
                hist_sim = np.concatenate([hist_sim[:n_processed], hist_sim[-1:]])
                simulated = simulated[:n_processed]
    else:
        hist_sim = np.array([n_samples], dtype=np.int64)
    hist = np.zeros(n_statements + 1, dtype=np.int64)
    np.add.at(hist, np.append(simulated, n_statements), hist_sim)
    return _prefix_from_histogram(hist)[:limit]


def joint_prefix_probabilities(signs, n_samples, random_state=None, *, stop_below=None,
                               pseudo_weight=None):
    """Joint posterior probability of every prefix of a list of statements (Benavoli et al. 2015 §5.3).

    Statement ``k`` is "``winner_k`` beats ``loser_k``", i.e. ``theta_k > 1/2`` with
    ``theta_k = P(X_w > X_l) + 1/2 P(X_w = X_l)`` under the Dirichlet-process posterior with
    the prior point on the tie. By the sign trick it holds in a posterior draw iff
    ``sum_l e_l signs[k, l] > 0`` with i.i.d. Exp(1) weights ``e`` shared by all statements,
    so ``out[k] = P(statements 0..k all hold)`` is estimated from ``n_samples`` draws in one
    pass (first failure per draw, then a reverse cumulative sum). The order of the statements
    is the caller's; the output is non-increasing. Near-sure statements are skipped within a
    union-bound budget of 1e-6 (module docstring); with at most 12 statements to simulate,
    blocks with the same sign pattern share one Gamma weight (exact: a sum of Exp(1)).

    This is the one implementation of the estimator; :class:`racer.BayesianTest` calls it
    at every test step with ``stop_below`` and, for ``prior="idp"``, ``pseudo_weight``.

    Parameters
    ----------
    signs : array_like, shape (L, n)
        ``sign(x_winner - x_loser)`` per statement (row) and block (column), values in
        {-1, 0, 1} (int8 or float32 avoid a copy-conversion cost; any numeric dtype works).
    n_samples : int >= 1
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Stream of the Dirichlet weights (a Generator is advanced, not copied).
    stop_below : float in [0, 1], optional
        Early stop: statements are simulated in blocks of 64 and the pass ends after the
        block in which the prefix probability falls to ``stop_below`` or below. The result
        then ends there (it is shorter than L; its last entry is ``<= stop_below``); later
        prefixes can only be smaller. Used by a race, which accepts the longest prefix
        above its credibility and need not know the rest.
    pseudo_weight : float > 0, optional
        The lower probability of the imprecise DP (Benavoli et al. 2015 §7; Benavoli et al. 2014):
        a prior pseudo-observation of weight ``s`` is put against every statement, which then holds
        when ``sum_l e_l signs[k, l] > e_0`` with ``e_0 ~ Gamma(s)`` shared by the
        statements. A single statement's probability is then
        ``prob_greater_from_counts(n_pos, n_neg, pseudo_against=s)``.

    Returns
    -------
    ndarray of float64, shape (L,) (shorter with ``stop_below``)

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [2] Benavoli, A., Mangili, F., Corani, G., Zaffalon, M. & Ruggeri, F. (2014). A Bayesian
       Wilcoxon signed-rank test based on the Dirichlet process. Proceedings of the 31st
       International Conference on Machine Learning (ICML 2014), PMLR 32, 1026–1034.

    Examples
    --------
    >>> import numpy as np
    >>> signs = np.array([[1, 1, 1, 1, 1], [1, 1, 1, -1, 1], [1, -1, 1, -1, 0]], dtype=np.int8)
    >>> p = joint_prefix_probabilities(signs, 20_000, np.random.default_rng(0))
    >>> float(p[0])              # no losses: holds in every draw
    1.0
    >>> bool(abs(p[1] - 0.9375) < 0.01)   # 4 wins, 1 loss: P(Bin(4, 1/2) <= 3)
    True
    >>> q = joint_prefix_probabilities(signs, 20_000, 0, pseudo_weight=1.0)
    >>> bool(abs(q[0] - 31 / 32) < 0.01)  # 5 wins against 1 pseudo-loss: P(Bin(5, 1/2) <= 4)
    True
    """
    arr = _as_signs(signs)
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = check_random_state(random_state, "random_state")
    if stop_below is not None:
        stop_below = check_probability(
            stop_below, "stop_below", open_left=False, open_right=False
        )
    if pseudo_weight is not None:
        pseudo_weight = check_positive(pseudo_weight, "pseudo_weight")
    simulated = _statements_to_simulate(_failure_prob(arr, pseudo_weight))
    return _prefix_from_simulated(
        np.ascontiguousarray(arr[simulated]), simulated, arr.shape[0], n_samples, rng,
        stop_below, pseudo_weight,
    )


def _pairwise_wins(scores):
    """wins[i, j] = #{blocks where candidate i scores strictly more than j}, chunked."""
    n_blocks, m = scores.shape
    wins = np.zeros((m, m), dtype=np.int64)
    rows = max(1, (1 << 22) // (m * m))
    for start in range(0, n_blocks, rows):
        block = scores[start : start + rows]
        wins += np.count_nonzero(block[:, :, None] > block[:, None, :], axis=0)
    return wins


@dataclasses.dataclass(frozen=True, repr=False)
class JointComparisonsResult(StatsResult):
    """Result of :func:`joint_comparisons`: the columns of Benavoli et al.'s (2015) Table 1.

    Statement ``k`` reads "candidate ``winner[k]`` beats candidate ``loser[k]``".

    Attributes
    ----------
    winner, loser : ndarray of int (K,)
        Column indices, statements sorted by decreasing ``marginal``.
    marginal : ndarray (K,)
        Posterior probability of each statement alone (Theorem 2, closed form);
        ``1 - marginal`` is Table 1's second column.
    joint : ndarray (K,)
        Monte Carlo posterior probability that statements ``0..k`` all hold;
        ``1 - joint`` is Table 1's third column. Non-increasing.
    n_accepted : int
        Length of the longest prefix with ``joint > credibility`` (0: no statement).
    credibility, prior_strength : float
    n_samples : int
    names : list or None
        Candidate names (DataFrame columns), used by :meth:`table`.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """

    winner: np.ndarray
    loser: np.ndarray
    marginal: np.ndarray
    joint: np.ndarray
    n_accepted: int
    credibility: float
    prior_strength: float
    n_samples: int
    names: list | None = None

    @property
    def accepted(self) -> np.ndarray:
        """Boolean mask of the accepted statements."""
        return np.arange(self.winner.shape[0]) < self.n_accepted

    def _label(self, index):
        return str(self.names[index]) if self.names is not None else f"X{index}"

    def table(self, max_rows=20):
        """Plain-text table, one statement per line, as Table 1 of Benavoli et al. (2015)."""
        head = f"{'statement':<24} {'1-P(H_i)':>10} {'1-P(H_1..H_i)':>14}  accepted"
        lines = [head, "-" * len(head)]
        k_total = self.winner.shape[0]
        shown = k_total if max_rows is None else min(k_total, max_rows)
        for k in range(shown):
            statement = f"{self._label(self.winner[k])} > {self._label(self.loser[k])}"
            lines.append(
                f"{statement:<24} {1 - self.marginal[k]:>10.4f} {1 - self.joint[k]:>14.4f}  "
                f"{'yes' if k < self.n_accepted else 'no'}"
            )
        if shown < k_total:
            lines.append(f"... {k_total - shown} more statements")
        return "\n".join(lines)

    def to_frame(self):
        """The statements as a pandas DataFrame (pandas imported on demand)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "winner": [self._label(i) for i in self.winner],
                "loser": [self._label(i) for i in self.loser],
                "marginal": self.marginal,
                "joint": self.joint,
                "accepted": self.accepted,
            }
        )

    def __repr__(self) -> str:
        return (
            f"JointComparisonsResult(n_statements={self.winner.shape[0]}, "
            f"n_accepted={self.n_accepted}, credibility={self.credibility:g}, "
            f"n_samples={self.n_samples})\n{self.table(max_rows=10)}"
        )


def joint_comparisons(
    scores,
    *,
    maximize=True,
    prior_strength=1.0,
    credibility=0.95,
    n_samples=50_000,
    random_state=None,
):
    """Bayesian joint multiple comparisons of all pairs (Benavoli et al. 2015, §5.3, Table 1).

    1. For each pair ``i < j`` the Bayesian sign test (Theorem 2):
       ``P(theta_ij > 1/2) = I_{1/2}(n_loss, n_win)``; the direction with the larger
       posterior probability becomes the statement "winner beats loser". *Decision*: when both
       directions are equally probable (as many wins as losses) the lower column index is
       the winner.
    2. Sort the statements by decreasing marginal probability (stable: equal marginals keep
       the pair order (0,1), (0,2), ..., (1,2), ...).
    3. ``joint[k] = P(H_1 and ... and H_k)`` by Monte Carlo over Dirichlet weights shared by all
       statements (sign trick, one pass; see :func:`joint_prefix_probabilities`).
    4. Accept the longest prefix with ``joint > credibility``.

    The prior strength does not change any of these probabilities (Theorem 2 and the sign
    trick: the prior point sits on the tie); it is accepted for a uniform interface.

    Parameters
    ----------
    scores : array_like or DataFrame, shape (n_blocks, n_candidates)
    maximize : bool
    prior_strength : float > 0
    credibility : float in (0, 1)
        ``1 - gamma`` of the paper.
    n_samples : int >= 100
    random_state : None, int, numpy Generator, RandomState or SeedSequence

    Returns
    -------
    JointComparisonsResult

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal(size=(30, 3)) + [0.0, 1.0, 2.0]
    >>> res = joint_comparisons(scores, random_state=0)
    >>> [(int(w), int(l)) for w, l in zip(res.winner, res.loser)], res.n_accepted
    ([(2, 0), (2, 1), (1, 0)], 3)
    """
    arr, names = as_score_matrix(scores, "scores", min_blocks=1)
    maximize = check_bool(maximize, "maximize")
    prior_strength = check_positive(prior_strength, "prior_strength")
    credibility = check_probability(credibility, "credibility")
    n_samples = check_int(n_samples, "n_samples", minimum=100)
    rng = check_random_state(random_state)
    x = orient(arr, maximize)
    m = x.shape[1]

    wins = _pairwise_wins(x)
    first, second = np.triu_indices(m, k=1)
    wins_first = wins[first, second]
    wins_second = wins[second, first]
    p_first = np.asarray(prob_greater_from_counts(wins_first, wins_second), dtype=np.float64)
    p_second = np.asarray(prob_greater_from_counts(wins_second, wins_first), dtype=np.float64)
    first_wins = p_first >= p_second
    winner = np.where(first_wins, first, second)
    loser = np.where(first_wins, second, first)
    marginal = np.where(first_wins, p_first, p_second)
    order = np.argsort(-marginal, kind="stable")
    winner, loser, marginal = winner[order], loser[order], marginal[order]

    # Only statements that can fail are simulated; their signs are built on demand so that
    # the (L, n) matrix of many-candidate races is never materialised for sure statements.
    # Only statements that can fail are simulated; their signs are built on demand so that
    # the (L, n) matrix of many-candidate races is never materialised for sure statements.
    simulated = _statements_to_simulate(1.0 - marginal)
    signs = np.sign(x[:, winner[simulated]] - x[:, loser[simulated]]).T
    joint = _prefix_from_simulated(
        np.ascontiguousarray(signs, dtype=np.float32), simulated, marginal.shape[0], n_samples, rng
    )
    n_accepted = int(np.count_nonzero(joint > credibility))
    return JointComparisonsResult(
        winner=winner.astype(np.int64),
        loser=loser.astype(np.int64),
        marginal=marginal,
        joint=joint,
        n_accepted=n_accepted,
        credibility=credibility,
        prior_strength=prior_strength,
        n_samples=n_samples,
        names=names,
    )
