"""irace's adaptive capping as a racing test: dominance elimination at each test step.

Capping itself -- the bound of a run, the cost of a run that reached it, and the dominance
rule :func:`racer.tuning.capping.dominated` -- lives in :mod:`racer.tuning.capping` with the
tuner that uses it; this module is the rule's place in a race: a wrapper around any racing
test that adds irace's ``dom.elim`` to its eliminations.
"""

from __future__ import annotations

import math

import numpy as np

from racer.racing.base import Elimination, RaceView, RacingTest
from racer.tuning.capping import CAPPING_TYPES, dominated

__all__ = ["CappedTest"]


class CappedTest(RacingTest):
    """A racing test with irace's dominance elimination (:func:`dominated`) at each test step.

    The inner test decides on every survivor; dominance eliminates the survivors whose mean
    cost exceeds the elites' bound. The elites are the candidates with ids below
    ``n_elites`` while the race is on its first ``until`` instances (irace's protected
    elites), else the best ``min_survivors`` by mean. If the two together would eliminate
    every survivor, only the dominance eliminations stand (irace: ``alive <- cap.alive``).
    Within a block, the command line applies the same rule after each instance
    (:mod:`racer.tuning.dispatch`); this is the rule at the block's last instance.

    >>> from racer.racing.base import KeepAll
    >>> view = RaceView.from_scores(-np.array([[1.0, 2.0, 9.0], [1.0, 3.0, 9.0]]), np.arange(3))
    >>> [(e.index, e.by) for e in CappedTest(KeepAll(), min_survivors=1).decide(view, None)]
    [(1, 0), (2, 0)]
    """

    # The inner test's numbers; the dominance eliminations record NaN (no statistic).
    elimination_statistic = None

    def __init__(self, inner: RacingTest, *, capping_type: str = "median", min_survivors: int = 1,
                 n_elites: int = 0, until: int = 0) -> None:
        if not isinstance(inner, RacingTest):
            raise TypeError(f"`inner` must be a racer.racing.base.RacingTest; got {inner!r}")
        if capping_type not in CAPPING_TYPES:
            raise ValueError(f"`capping_type` must be one of {CAPPING_TYPES}; got {capping_type!r}")
        self.inner = inner
        self.capping_type = capping_type
        self.min_survivors = int(min_survivors)
        self.n_elites = int(n_elites)
        self.until = int(until)
        self.winner = getattr(inner, "winner", None)

    def decide(self, view: RaceView, rng: np.random.Generator) -> list[Elimination]:
        decisions = self.inner.decide(view, rng)
        costs = -np.asarray(view.scores, dtype=float)
        protected = view.scores.shape[0] < self.until
        elites = [j for j, i in enumerate(view.ids) if protected and int(i) < self.n_elites]
        out = dominated(costs, elites, self.capping_type, self.min_survivors)
        if not out.any():
            return decisions
        means = costs.mean(axis=0)
        keep = np.flatnonzero(~out)
        by = int(keep[np.argmin(means[keep])])
        capped = [Elimination(int(j), "dominated", by, math.nan) for j in np.flatnonzero(out)]
        gone = {d.index for d in decisions} | {e.index for e in capped}
        if len(gone) >= len(view.ids):
            return capped
        return capped + [d for d in decisions if not out[d.index]]

    def get_params(self) -> dict:
        try:
            inner = self.inner.get_params()
        except NotImplementedError:
            inner = {"repr": repr(self.inner)}
        return {"inner": f"{type(self.inner).__qualname__}{sorted(inner.items())}",
                "capping_type": self.capping_type, "min_survivors": self.min_survivors,
                "n_elites": self.n_elites, "until": self.until}
