"""Per-race incremental statistics, owned by the race engine and lent to each test step.

The engine (:mod:`racer.engine`) knows when rows arrive (a test step sees more rows than the
previous one) and when the survivors change (it eliminates them), so it keeps one
:class:`RaceStats` per race and tells it :meth:`RaceStats.survivors_changed`. Racing tests
read the statistics through :class:`racer.racing.base.RaceView` (``view.greater``,
``view.ranks``, ``view.rank_sums``, ...) and keep nothing themselves, so one test object can
serve many races and decisions depend only on the view.

Everything is computed lazily, when a test first asks at a step, and only from what is new:

* pairwise win counts: :class:`racer.stats.bayesian_sign.SignCounts` over the whole candidate
  index space, adding only the rows not counted yet, among the current survivors (pairs of
  survivors shared every row, so their counts never need the eliminated columns);
* within-instance ranks among the survivors (1 = best, ties averaged) and their per-column
  sums, sums of squares and the sum of outer products ``sum_l r_l r_l'``: new rows are ranked
  and added while the survivors stay the same; when they change every row is re-ranked
  (a rank is relative to the survivors), at most once per elimination step.

Every quantity is a sum of integers or of multiples of 1/4 (ranks are multiples of 1/2), so
it is exact in float64 and a resumed race, which rebuilds these sums from its journal in
other chunks, sees bit-identical numbers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RaceStats"]


class RaceStats:
    """Incremental statistics of one race (engine-internal; see the module docstring).

    The engine passes, at every test step, the survivors' whole score matrix so far
    (``scores``, rows in race order, rows already seen unchanged) and their candidate
    indices (``ids``, ascending, a subset of the previous step's); it calls
    :meth:`survivors_changed` whenever a candidate leaves. Nothing is validated: the engine
    is the only caller.
    """

    def __init__(self, n_candidates: int):
        self._n_candidates = int(n_candidates)
        self._counts = None  # SignCounts, created on first use (it brings Numba)
        self._n_counted = 0
        self._rank_ids = None  # survivors the rank buffer refers to; None: re-rank
        self._ranks = np.empty((0, 0))
        self._n_ranked = 0
        self._rank_sums = np.empty(0)
        self._rank_sq_sums = np.empty(0)
        self._rank_outer = None  # (m, m), built on first request after a re-rank
        self._n_outer = 0

    # ------------------------------------------------------------------ engine hooks

    def survivors_changed(self) -> None:
        """A candidate left the race: the next rank request re-ranks every row."""
        self._rank_ids = None

    # ------------------------------------------------------------------ pairwise counts

    def greater(self, scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``G[i, j]`` = rows where survivor i scores strictly more than survivor j (int64)."""
        if self._counts is None:
            from racer.stats.bayesian_sign import SignCounts

            self._counts = SignCounts(self._n_candidates)
        n = scores.shape[0]
        if n > self._n_counted:
            idx = np.ascontiguousarray(ids, dtype=np.int64)
            self._counts._add_trusted(
                np.ascontiguousarray(scores[self._n_counted :], dtype=np.float64), idx
            )
            self._n_counted = n
        return self._counts._wins[np.ix_(ids, ids)]

    # ------------------------------------------------------------------ ranks

    def _update_ranks(self, scores: np.ndarray, ids: np.ndarray) -> None:
        from racer.stats._ranks import block_ranks

        n, m = scores.shape
        if self._rank_ids is None:
            self._ranks = np.empty((max(n, 16), m))
            self._n_ranked = 0
            self._rank_sums = np.zeros(m)
            self._rank_sq_sums = np.zeros(m)
            self._rank_outer = None
            self._n_outer = 0
            self._rank_ids = ids.copy()
        start = self._n_ranked
        if n <= start:
            return
        if n > self._ranks.shape[0]:
            grown = np.empty((max(n, 2 * self._ranks.shape[0]), m))
            grown[:start] = self._ranks[:start]
            self._ranks = grown
        new = block_ranks(scores[start:])
        self._ranks[start:n] = new
        self._rank_sums += new.sum(axis=0)
        self._rank_sq_sums += np.einsum("ij,ij->j", new, new)
        self._n_ranked = n

    def ranks(self, scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Within-instance ranks among the survivors (n, m), 1 = best; read-only."""
        self._update_ranks(scores, ids)
        out = self._ranks[: self._n_ranked].view()
        out.flags.writeable = False
        return out

    def rank_sums(self, scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Per-survivor sums of those ranks over the rows (m,)."""
        self._update_ranks(scores, ids)
        return self._rank_sums.copy()

    def rank_sq_sums(self, scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Per-survivor sums of squared ranks (m,)."""
        self._update_ranks(scores, ids)
        return self._rank_sq_sums.copy()

    def rank_outer(self, scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """``sum_l r_l r_l'`` over the rows (m, m), the Bayesian Friedman second moment."""
        self._update_ranks(scores, ids)
        ranks = self._ranks[: self._n_ranked]
        if self._rank_outer is None:
            self._rank_outer = ranks.T @ ranks
        elif self._n_outer < self._n_ranked:
            new = ranks[self._n_outer :]
            self._rank_outer += new.T @ new
        self._n_outer = self._n_ranked
        return self._rank_outer.copy()
