"""The score table of a race: every evaluation told, as an instances x candidates matrix.

:class:`racer.Race` fills it a block at a time: :meth:`ScoreTable.open_rows` names the rows of
the block and the candidates that fill them, :meth:`ScoreTable.record` writes one evaluation,
and when the last cell of a row arrives the row is *finalized*: its larger-is-better copy
(``oriented``, what racing tests see) is written, a failed evaluation replaced by a score worse
than every success on that instance (``on_error="worst"``; see :class:`racer.Race`). The table
knows nothing of tests, budgets or journals; it is tested on its own (tests/engine/test_scores.py).

>>> import math
>>> table = ScoreTable(3, maximize=False)
>>> table.open_rows(0, 1, [0, 1, 2])
>>> table.record(0, 0, 2.0)
>>> table.record(1, 0, 5.0)
>>> table.record(2, 0, math.nan, failed=True)  # the row's last cell: it is finalized
>>> table.oriented[0].tolist()  # minimised, so negated; the failure ranks last: -5 - (5 - 2)
[-2.0, -5.0, -8.0]
>>> table.close_rows(); table.complete_rows, table.n_seen.tolist(), table.n_failed.tolist()
(1, [1, 1, 1], [0, 0, 1])
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ScoreTable"]


class ScoreTable:
    """Scores of ``n_candidates`` candidates on a growing number of instances (rows).

    Attributes (arrays of ``capacity`` rows; rows at and after :attr:`n_rows` are unused):

    * ``raw`` -- scores as told, NaN where not evaluated or failed;
    * ``failed`` -- True where the evaluation failed;
    * ``oriented`` -- larger-is-better scores of the finalized rows, failures imputed
      (:meth:`worst_imputed`), NaN elsewhere;
    * ``n_seen``, ``n_failed`` -- evaluations (failures included) and failures per candidate.
    """

    def __init__(self, n_candidates: int, *, maximize: bool, capacity: int = 64) -> None:
        self.n_candidates = n_candidates
        self.maximize = maximize
        # Rows grow by doubling, so appending a row is amortised O(candidates).
        self.raw = np.full((capacity, n_candidates), np.nan)
        self.oriented = np.full((capacity, n_candidates), np.nan)
        self.failed = np.zeros((capacity, n_candidates), dtype=bool)
        self.n_seen = np.zeros(n_candidates, dtype=np.int64)
        self.n_failed = np.zeros(n_candidates, dtype=np.int64)
        self.n_rows = 0  # rows opened so far
        self._open_start: int | None = None  # first row of the open rows, None when closed
        self._cols = np.arange(0, dtype=np.int64)  # the candidates filling the open rows
        self._remaining: dict[int, int] = {}  # open row -> cells not yet recorded

    # -------------------------------------------------------------- rows

    def open_rows(self, start: int, stop: int, cols) -> None:
        """Rows ``start`` to ``stop - 1`` are to be filled by the candidates ``cols``."""
        self._grow(stop)
        self.n_rows = stop
        self._open_start = start
        self._cols = np.asarray(cols, dtype=np.int64)
        for row in range(start, stop):
            self._remaining[row] = len(self._cols)

    def close_rows(self) -> None:
        """The open rows are done with (complete, or abandoned by a race that failed)."""
        self._open_start = None

    @property
    def rows_open(self) -> tuple[int, int] | None:
        """``(start, stop)`` of the open rows, or None."""
        return None if self._open_start is None else (self._open_start, self.n_rows)

    @property
    def cols(self) -> np.ndarray:
        """The candidates filling the open rows (those of the last rows opened)."""
        return self._cols

    @property
    def complete_rows(self) -> int:
        """Rows every candidate filling them has been recorded on: all rows before the open
        ones (the open rows count only once closed, even those already full)."""
        return self.n_rows if self._open_start is None else self._open_start

    def _grow(self, rows: int) -> None:
        cap = self.raw.shape[0]
        if rows <= cap:
            return
        new_cap = max(rows, 2 * cap)
        for name, fill in (("raw", np.nan), ("oriented", np.nan), ("failed", False)):
            old = getattr(self, name)
            grown = np.full((new_cap, self.n_candidates), fill, dtype=old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)

    # -------------------------------------------------------------- cells

    def told(self, ci: int, row: int) -> bool:
        """Whether candidate ``ci`` was recorded on ``row`` (successfully or not)."""
        return bool(not math.isnan(self.raw[row, ci]) or self.failed[row, ci])

    def record(self, ci: int, row: int, score: float, *, failed: bool = False) -> None:
        """Record candidate ``ci`` on an open ``row``: ``score`` (raw, as told) or a failure;
        the row's last cell finalizes it."""
        self.n_seen[ci] += 1
        if failed:
            self.failed[row, ci] = True
            self.n_failed[ci] += 1
        else:
            self.raw[row, ci] = score
        left = self._remaining[row] - 1
        if left:
            self._remaining[row] = left
        else:
            del self._remaining[row]
            self.oriented[row, self._cols] = self.worst_imputed(
                self.raw[row, self._cols], self.failed[row, self._cols])

    def worst_imputed(self, values: np.ndarray, failed: np.ndarray) -> np.ndarray:
        """One instance's scores of several candidates, larger-is-better, with each failure
        replaced by ``lowest - spread`` of the successes: worse than all of them (see
        ``on_error="worst"`` in :class:`racer.Race`; all failed: every one gets 0).

        >>> ScoreTable(1, maximize=True).worst_imputed(np.array([3.0, 1.0, np.nan]),
        ...                                            np.array([False, False, True])).tolist()
        [3.0, 1.0, -1.0]
        """
        oriented = values if self.maximize else -values
        if failed.any():
            oriented = oriented.copy()
            ok = oriented[~failed]
            if ok.size:
                lowest, highest = ok.min(), ok.max()
                spread = highest - lowest
                if spread <= 0:
                    spread = abs(lowest) if lowest != 0 else 1.0
                oriented[failed] = lowest - spread
            else:
                oriented[failed] = 0.0
        return oriented

    @property
    def usable(self) -> np.ndarray:
        """Per candidate: whether at least one of its evaluations succeeded."""
        return self.n_seen > self.n_failed
