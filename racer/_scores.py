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

from racer._validation import direction_signs

__all__ = ["ScoreTable"]


class ScoreTable:
    """Scores of ``n_candidates`` candidates on a growing number of instances (rows).

    Attributes (arrays of ``capacity`` rows; rows at and after :attr:`n_rows` are unused):

    * ``raw`` -- scores as told, NaN where not evaluated or failed;
    * ``failed`` -- True where the evaluation failed;
    * ``oriented`` -- larger-is-better scores of the finalized rows, failures imputed
      (:meth:`worst_imputed`), NaN elsewhere;
    * ``n_seen``, ``n_failed`` -- evaluations (failures included) and failures per candidate.

    With ``directions`` naming k >= 2 objectives (a race on several objectives), each cell
    holds k scores: ``raw_objectives`` and ``oriented_objectives`` (capacity, n_candidates, k)
    are kept beside the matrices above, which then hold the first objective, so everything
    that reads one score per cell (the winner, the ranking, the progress line) works
    unchanged; a failure is imputed on each objective separately. A single-objective table
    has ``objectives_of`` None and pays nothing for the option.
    """

    def __init__(self, n_candidates: int, *, maximize: bool, capacity: int = 64,
                 directions: tuple | None = None) -> None:
        self.n_candidates = n_candidates
        self.maximize = maximize
        self.directions = directions if directions is not None and len(directions) > 1 else None
        self.raw_objectives = self.oriented_objectives = None
        if self.directions is not None:
            k = len(self.directions)
            self.maximize = self.directions[0] == "maximize"
            self._signs = direction_signs(self.directions)
            self.raw_objectives = np.full((capacity, n_candidates, k), np.nan)
            self.oriented_objectives = np.full((capacity, n_candidates, k), np.nan)
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
        names = [("raw", np.nan), ("oriented", np.nan), ("failed", False)]
        if self.directions is not None:
            names += [("raw_objectives", np.nan), ("oriented_objectives", np.nan)]
        for name, fill in names:
            old = getattr(self, name)
            grown = np.full((new_cap, *old.shape[1:]), fill, dtype=old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)

    # -------------------------------------------------------------- cells

    def told(self, ci: int, row: int) -> bool:
        """Whether candidate ``ci`` was recorded on ``row`` (successfully or not)."""
        return bool(not math.isnan(self.raw[row, ci]) or self.failed[row, ci])

    def record(self, ci: int, row: int, score, *, failed: bool = False) -> None:
        """Record candidate ``ci`` on an open ``row``: ``score`` (raw, as told: a float, or a
        (k,) array with several objectives) or a failure; the row's last cell finalizes it."""
        self.n_seen[ci] += 1
        if failed:
            self.failed[row, ci] = True
            self.n_failed[ci] += 1
        elif self.directions is None:
            self.raw[row, ci] = score
        else:
            self.raw_objectives[row, ci] = score
            self.raw[row, ci] = score[0]
        left = self._remaining[row] - 1
        if left:
            self._remaining[row] = left
        else:
            del self._remaining[row]
            failed_row = self.failed[row, self._cols]
            self.oriented[row, self._cols] = self.worst_imputed(self.raw[row, self._cols],
                                                                failed_row)
            if self.directions is not None:
                oriented = self.raw_objectives[row, self._cols] * self._signs
                self.oriented_objectives[row, self._cols] = _impute_worst(oriented, failed_row)

    def objectives_of(self, n_rows: int, cols) -> np.ndarray | None:
        """Larger-is-better scores (n_rows, len(cols), k) of a table with several
        objectives; None for one objective."""
        if self.directions is None:
            return None
        return self.oriented_objectives[:n_rows, cols]

    def worst_imputed(self, values: np.ndarray, failed: np.ndarray) -> np.ndarray:
        """One instance's scores of several candidates, larger-is-better, with each failure
        replaced by ``lowest - spread`` of the successes: worse than all of them (see
        ``on_error="worst"`` in :class:`racer.Race`; all failed: every one gets 0).

        >>> ScoreTable(1, maximize=True).worst_imputed(np.array([3.0, 1.0, np.nan]),
        ...                                            np.array([False, False, True])).tolist()
        [3.0, 1.0, -1.0]
        """
        return _impute_worst(values if self.maximize else -values, failed)

    @property
    def usable(self) -> np.ndarray:
        """Per candidate: whether at least one of its evaluations succeeded."""
        return self.n_seen > self.n_failed


def _impute_worst(oriented: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """Larger-is-better scores of one instance (m,) or (m, k) with the ``failed`` rows (m,)
    replaced, column by column, by ``lowest - spread`` of the successes (all failed: 0)."""
    if not failed.any():
        return oriented
    oriented = oriented.copy()
    ok = oriented[~failed]
    if not ok.size:
        oriented[failed] = 0.0
        return oriented
    lowest, highest = ok.min(axis=0), ok.max(axis=0)
    spread = highest - lowest
    fallback = np.where(lowest != 0, np.abs(lowest), 1.0)
    spread = np.where(spread <= 0, fallback, spread)
    oriented[failed] = lowest - spread
    return oriented
