"""The single within-block ranker shared by the rank tests and the race."""

import numpy as np
import pytest
from scipy.stats import rankdata

from racer.stats._ranks import block_ranks, tie_group_sizes_term


@pytest.mark.parametrize("maximize", [True, False])
def test_block_ranks_equal_scipy_rankdata_with_heavy_ties(maximize):
    rng = np.random.default_rng(0)
    for _ in range(200):
        shape = (int(rng.integers(1, 9)), int(rng.integers(1, 8)))
        # Few distinct values, so most rows hold tie groups of every size.
        block = rng.integers(0, 3, size=shape).astype(float)
        expected = rankdata(-block if maximize else block, axis=1)
        np.testing.assert_array_equal(block_ranks(block, maximize=maximize), expected)


def test_block_ranks_rank_one_is_best():
    scores = np.array([[0.9, 0.1, 0.5], [3.0, 3.0, 1.0]])
    np.testing.assert_array_equal(block_ranks(scores), [[1, 3, 2], [1.5, 1.5, 3]])
    np.testing.assert_array_equal(block_ranks(scores, maximize=False), [[3, 1, 2], [2.5, 2.5, 1]])


def test_tie_term_counts_t_cubed_minus_t_per_group():
    scores = np.array([[1.0, 1.0, 1.0, 2.0], [5.0, 5.0, 6.0, 6.0], [1.0, 2.0, 3.0, 4.0]])
    # Row 0: one group of 3 (24); row 1: two groups of 2 (6 + 6); row 2: none.
    assert tie_group_sizes_term(scores) == 36.0
