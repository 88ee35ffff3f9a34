"""Within-block ranks, shared by the frequentist and Bayesian rank tests."""

from __future__ import annotations

import numbers

import numpy as np

from racer._validation import as_1d, check_int, describe

__all__ = ["block_ranks", "check_rank_sums", "tie_group_sizes_term"]


def block_ranks(scores: np.ndarray, maximize: bool = True) -> np.ndarray:
    """Rank candidates within each block: 1 = best, ties get the average rank.

    ``scores`` has shape (n_blocks, n_candidates). With ``maximize`` the largest score gets
    rank 1 (Demšar's convention); otherwise the smallest does. Equal to
    ``scipy.stats.rankdata(-scores, axis=1)`` (tested), written in NumPy because the race calls
    it on a handful of new rows per step, where ``rankdata``'s per-call overhead dominates, and
    so that the race engine does not pay for importing ``scipy.stats``.
    """
    oriented = -scores if maximize else scores
    n, m = oriented.shape
    order = np.argsort(oriented, axis=1, kind="stable")
    ordered = np.take_along_axis(oriented, order, axis=1)
    ranked = np.broadcast_to(np.arange(1.0, m + 1.0), (n, m)).copy()
    starts = np.ones((n, m), dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    if not starts.all():
        # Tie groups numbered across the whole matrix (each row opens a new group); every
        # member of a group gets the group's mean position.
        group = np.cumsum(starts.ravel()) - 1
        mean_rank = np.bincount(group, weights=ranked.ravel()) / np.bincount(group)
        ranked = mean_rank[group].reshape(n, m)
    out = np.empty((n, m))
    np.put_along_axis(out, order, ranked, axis=1)
    return out


def tie_group_sizes_term(scores: np.ndarray) -> float:
    """Return sum over blocks and tie groups of (t^3 - t), the Friedman tie correction term."""
    s = np.sort(scores, axis=1)
    total = 0.0
    # Runs of equal values per row: a vectorised run-length count over the sorted rows.
    n_blocks, k = s.shape
    if k < 2:
        return 0.0
    new_run = np.ones_like(s, dtype=bool)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    run_id = np.cumsum(new_run, axis=1) + (np.arange(n_blocks) * (k + 1))[:, None]
    _, counts = np.unique(run_id, return_counts=True)
    counts = counts.astype(np.float64)
    total = float(np.sum(counts**3 - counts))
    return total


def check_rank_sums(rank_sums, rank_sq_sum, n_blocks, min_blocks: int = 1):
    """``(rank_sums, rank_sq_sum, n, k)`` checked against what ``n`` blocks of ranks can give.

    The argument checks of the ``*_from_sums`` tests (``rank_sq_sum=None``: not needed).
    """
    n = check_int(n_blocks, "n_blocks", minimum=min_blocks)
    sums = as_1d(rank_sums, "rank_sums", min_length=2)
    k = sums.shape[0]
    # Every block's ranks are a permutation of 1..k (ties averaged): they sum to k (k + 1)/2,
    # and their squares to between k (k + 1)^2 / 4 (all tied) and k (k + 1)(2k + 1)/6.
    expected = n * k * (k + 1) / 2.0
    if abs(float(sums.sum()) - expected) > 1e-9 * expected:
        raise ValueError(
            f"`rank_sums` must be the sums of {n} blocks of ranks 1..{k} (total {expected:g}); "
            f"got total {float(sums.sum()):g}"
        )
    if rank_sq_sum is None:
        return sums, None, n, k
    if isinstance(rank_sq_sum, bool) or not isinstance(rank_sq_sum, (numbers.Real, np.floating)):
        raise TypeError(f"`rank_sq_sum` must be a real number; got {describe(rank_sq_sum)}")
    sum_sq = float(rank_sq_sum)
    low, high = n * k * (k + 1) ** 2 / 4.0, n * k * (k + 1) * (2 * k + 1) / 6.0
    if not low - 1e-9 * high <= sum_sq <= high * (1 + 1e-9):
        raise ValueError(
            f"`rank_sq_sum` must lie in [{low:g}, {high:g}] for {n} blocks of ranks 1..{k}; "
            f"got {sum_sq!r}"
        )
    return sums, sum_sq, n, k
