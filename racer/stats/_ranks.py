"""Within-block ranks, shared by the frequentist and Bayesian rank tests."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

__all__ = ["block_ranks", "tie_group_sizes_term"]


def block_ranks(scores: np.ndarray, maximize: bool = True) -> np.ndarray:
    """Rank candidates within each block: 1 = best, ties get the average rank.

    ``scores`` has shape (n_blocks, n_candidates). With ``maximize`` the largest score gets
    rank 1 (Demšar's convention); otherwise the smallest does.
    """
    oriented = -scores if maximize else scores
    return rankdata(oriented, axis=1)


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
