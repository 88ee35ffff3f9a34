"""The interface between the race engine and the statistical test that eliminates candidates.

The engine (:mod:`racer.race`) owns the loop, the budget and the bookkeeping; a racing test
only reads the survivors' score matrix and says who goes. Keeping that boundary narrow is what
lets the Bayesian test (:mod:`racer.bayesian_test`) and the F-race baseline
(:mod:`racer.adapters.frace`) run on the very same loop.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import numpy as np

__all__ = ["Elimination", "RacingTest"]


@dataclasses.dataclass(frozen=True)
class Elimination:
    """One decision of a racing test.

    Attributes
    ----------
    index : int
        Column, in the score matrix passed to :meth:`RacingTest.decide`, of the candidate to
        eliminate.
    reason : str
        ``"dominated"`` (worse than ``by``) or ``"indistinguishable"`` (practically
        equivalent to ``by``, which is better or kept).
    by : int
        Column of the candidate that beat or matched it.
    probability : float
        The number behind the decision: a posterior probability for Bayesian tests, a
        p-value for frequentist ones.
    """

    index: int
    reason: str
    by: int
    probability: float


class RacingTest(abc.ABC):
    """Decides, after a block, which survivors leave the race.

    Subclasses implement :meth:`decide`. They may keep caches between calls to avoid
    recounting blocks already seen (``ids`` identifies candidates across calls), but their
    decisions must depend only on the arguments: that is what makes a resumed race end exactly
    like an uninterrupted one.
    """

    @abc.abstractmethod
    def decide(
        self, scores: np.ndarray, ids: np.ndarray, rng: np.random.Generator
    ) -> list[Elimination]:
        """Return the eliminations warranted by ``scores``.

        Parameters
        ----------
        scores : ndarray of shape (n_instances, n_survivors), float64
            Every instance seen so far (rows, in race order) for every survivor (columns).
            Finite, and oriented so that larger is better: the engine negates minimised
            scores before calling.
        ids : ndarray of shape (n_survivors,), int64
            Stable identifiers of the survivors (their index in the race's candidate list).
        rng : numpy.random.Generator
            Random stream for this test step, derived by the engine from the race seed and
            the step number, never shared with other steps.
        """

    def get_params(self) -> dict[str, Any]:
        """Options that change decisions, stored in a journal to refuse a mismatched resume.

        Dataclass subclasses get this for free (fields declared with ``compare=False``, such
        as caches, are left out); others must override it.
        """
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare}
        raise NotImplementedError(f"{type(self).__name__} must implement get_params()")
