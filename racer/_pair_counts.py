"""Pairwise win counts carried from one racing-test step to the next.

Shared by the Bayesian test (:mod:`racer.bayesian_test`) and the F-race baseline
(:mod:`racer.adapters.frace`): both read ``G[i, j]``, the instances where survivor i beats
survivor j, and both should count only the rows added since their previous step.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PairCountCache"]


class PairCountCache:
    """Pairwise win counts of the survivors, carried from one test step to the next.

    The counting itself is :class:`racer.stats.bayesian_sign.SignCounts` (Numba kernel, new
    rows only); this class adds what a :class:`~racer.elimination.RacingTest` needs on top: the cache is keyed by
    candidate ids, and checked against the passed matrix (first and last counted rows), so a
    call with unrelated data -- or with an id that was dropped earlier -- starts a fresh
    count, and decisions depend only on the arguments.
    """

    def __init__(self):
        self.ids = None

    def _matches(self, scores, ids):
        if self.ids is None or scores.shape[0] < self.n_rows:
            return None
        pos = np.clip(np.searchsorted(self.ids, ids), 0, len(self.ids) - 1)
        if not np.array_equal(self.ids[pos], ids):
            return None
        slot = self.slots[pos]
        if not (
            np.array_equal(scores[0], self.first_row[slot])
            and np.array_equal(scores[self.n_rows - 1], self.last_row[slot])
        ):
            return None
        return slot

    def greater(self, scores, ids):
        """``G[i, j]`` = rows of ``scores`` where column i scores strictly more than column j."""
        # Lazy: SignCounts brings Numba, which ``import racer`` should not pay for.
        from racer.stats.bayesian_sign import SignCounts

        slot = self._matches(scores, ids)
        if slot is None:
            # Fresh count; candidate ``ids[c]`` lives in slot c of the SignCounts.
            self.counts = SignCounts(len(ids))
            slot = np.arange(len(ids), dtype=np.int64)
            self.first_row = scores[0].copy()
            self.last_row = np.empty(len(ids))
            new_rows = scores
        else:
            new_rows = scores[self.n_rows :]
        if new_rows.shape[0]:
            self.counts.add_blocks(new_rows, active=slot)
            self.last_row[slot] = scores[-1]
        # Only the current survivors stay valid (sorted, for the next step's binary search).
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.slots = slot[order]
        self.n_rows = scores.shape[0]
        return self.counts.wins[np.ix_(slot, slot)]
