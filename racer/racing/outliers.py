"""A guard that drops a configuration whose run is orders of magnitude worse than the others'.

A mean-based test cannot get rid of a configuration with one catastrophic run: one cost of
1.47 billion unit propagations among runs of 10^4 to 10^6 inflates that configuration's
variance as much as its mean, so its paired t statistic stays near 1 and it races on (in the
minisat tuning where this was seen, that configuration took 1,281 of the tuning's 1,368 s).
A rank-based test sees that run as one lost instance among many. :class:`OutlierGuard` wraps any racing test and, before the wrapped
test decides, eliminates every survivor whose cost on some instance is more than ``factor``
times the reference cost on that same instance -- whatever the wrapped test would say.

What the guard decides
----------------------
For minimised costs (``direction="minimize"``, the default) survivor ``j`` goes when, on some
instance ``i`` seen so far, ``cost[i, j] > factor * reference[i]``; for maximised scores
(``direction="maximize"``) when ``score[i, j] < reference[i] / factor``. "Worse by a factor"
is a ratio, which needs values of one sign: an instance whose reference is not positive, and
a cell whose own value is not positive, are left alone (the guard abstains there; the
wrapped test still sees them). ``direction`` must be the race's: the guard cannot tell a
cost from a score, since the race hands every test larger-is-better scores.

The reference of an instance is, by default, the **median** of the survivors' values on it
(``reference="median"``); ``reference="best"`` takes instead the survivor of best mean so far
(that survivor's value on the instance). The median is the default because it is the safer of
the two on heavy-tailed costs (the simulation below): the survivor of best mean is selected
for its low costs, so its cost on any one instance is biased low, and against it ordinary
noise looks like outliers -- on lognormal noise of sigma 1 with ``factor=100`` the best-mean
reference dropped something in 71% of the races and the true best in 3%, the median in 0.5%
and 0%. The median of two values is their mean, which neither exceeds ``factor >= 2`` times:
with two survivors the median guard acts only for ``factor < 2``. The race's scores are
finite (a failure scores as the worst value, or leaves), so the median is always defined. The
survivor of best mean is never dropped by the guard: when every survivor has an outlier run
somewhere (noise so heavy that the guard should not be used at that ``factor``) the race
keeps its leader.

Each of the guard's eliminations is recorded as an :class:`~racer.racing.base.Elimination`
with reason ``"dominated"`` (the engine's reasons are ``"dominated"`` and
``"indistinguishable"``, and an outlier is dominated), ``by`` the reference candidate (the
survivor at the median on the instance of the largest ratio, on the better side of the
median when it falls between two survivors; or the survivor of best mean), and as its
number (``probability``) the largest ratio over the instances, ``cost / reference`` or
``reference / score``, which exceeds ``factor`` -- so it is told apart from the wrapped
test's p-values and probabilities, which never exceed 1. The race records the number of
instances with every elimination. The wrapped test then decides on the remaining survivors
only (a view without the outliers' columns, its statistics computed afresh), so that an
outlier moves neither its means, nor its ranks, nor its multiplicity corrections; when the
guard drops nothing, the wrapped test sees the race's view unchanged and decides exactly as
it would alone. The guard keeps no state and draws no random numbers: a resumed race
decides as an uninterrupted one.

Protected elites
----------------
Wrap the guard *inside* :class:`~racer.racing.base.ProtectElites`
(``ProtectElites(OutlierGuard(test), n_elites, until)``): an elite the guard would drop while
protected is then kept by ``ProtectElites`` (the wrapped test decides that step without it),
and it goes at the first step after ``until`` if its outlier is still on record. The other
order (``OutlierGuard(ProtectElites(...))``) would drop elites whatever their protection.

What it costs: ``factor`` 100 or 1000 on lognormal costs (simulation)
---------------------------------------------------------------------
``OPENBLAS_NUM_THREADS=1 python benchmarks/outlier_guard.py`` (200 seeds; ``--quick``: 40):
20 configurations whose median costs differ by a lognormal factor of sigma 0.3, on 40
instances whose costs differ up to 27-fold, each run's cost multiplied by lognormal noise of
sigma 1, 2 or 3, raced by irace's t-test (``TRaceTest()``, first test after 5 instances, then
after each); the true best is the configuration of least expected cost. "best dropped" and
"any drop" are fractions of the races in which the guard eliminated the true best, or
anything; "evals saved" is the fraction of evaluations saved against the t-test alone. "outlier
kept" races a second matrix per seed in which one configuration other than the true best has
one run 10^4 times its own cost, and counts the races in which that configuration is still
racing at the end (1 - that is how often the guard caught it):

======  ============  ============  ========  =========  =======  ============
sigma   guard         best dropped  any drop  evals      regret   outlier kept
                                              saved
======  ============  ============  ========  =========  =======  ============
1       none          0             0         0          0.118    0.485
1       median x100   0             0.005     0.0 %      0.118    0.005
1       best x100     0.030         0.710     4.6 %      0.117    0
1       median x1000  0             0         0          0.118    0.015
1       best x1000    0             0         0          0.118    0
2       none          0             0         0          0.353    0.660
2       median x100   0.315         1         23.2 %     0.372    0.015
2       best x100     0.680         1         67.1 %     0.422    0.025
2       median x1000  0.020         0.300     1.2 %      0.353    0.060
2       best x1000    0.315         0.995     26.4 %     0.382    0.030
3       none          0             0         0          0.522    0.700
3       median x100   0.715         1         60.9 %     0.527    0.055
3       best x100     0.910         1         80.9 %     0.571    0.045
3       median x1000  0.335         1         23.7 %     0.515    0.095
3       best x1000    0.810         1         69.2 %     0.537    0.015
======  ============  ============  ========  =========  =======  ============

"regret" is the mean relative excess of the winner's expected cost over the true best's; the
t-test alone made 426, 554 and 610 evaluations per race at sigma 1, 2, 3.

Sigma 1 -- a configuration's runs on one instance spread over a factor of 7 either way (two
standard deviations) -- is ordinary noise, and there ``factor=1000`` never acted but on the
injected outlier, which it caught in 98.5% of the races. At sigma 2, ``factor=100`` drops the
true best in 31% of the races and raises the winner's regret: a run 100 times the median
is then the noise's own tail (the mean of a lognormal of sigma 2 is 7 times its median, of
sigma 3 90 times). Hence the default ``factor=1000``: three orders of magnitude, nothing lost
on sigma 1 costs and little on sigma 2 (the true best dropped in 2% of the races, the
winner's regret unchanged), and the minisat run of 1.47 billion propagations (runs of 10^4 to
10^6) is still far beyond it. At sigma 3 even ``factor=1000`` drops the true best in a third
of the races (the t-test picks no better a winner for keeping it: regret 0.52 either way).

Examples
--------
One configuration (column 2) has a single run 10^4 times the others' on the second
instance; the t-test keeps it (its p-value is 0.37), the guard drops it:

>>> import numpy as np
>>> from racer.racing.base import RaceView
>>> from racer.racing.trace import TRaceTest
>>> costs = np.array([[10.0, 12.0, 11.0, 9.0], [20.0, 19.0, 2e5, 22.0],
...                   [15.0, 14.0, 14.0, 17.0], [30.0, 28.0, 29.0, 31.0],
...                   [12.0, 13.0, 12.5, 12.0]])
>>> view = RaceView.from_scores(-costs)  # the race's view: larger is better
>>> TRaceTest().decide(view, None)
[]
>>> guarded = OutlierGuard(TRaceTest(), factor=100.0)
>>> [(e.index, e.reason, e.by, round(e.probability)) for e in guarded.decide(view, None)]
[(2, 'dominated', 0, 9524)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from racer._validation import _as_real, check_option
from racer.racing.base import Elimination, RaceView, RacingTest, check_view

__all__ = ["OutlierGuard"]

_REFERENCES = ("median", "best")


class OutlierGuard(RacingTest):
    """Eliminates, before ``inner`` decides, every survivor with a run more than ``factor``
    times worse than the reference on the same instance (see the module docstring).

    Parameters
    ----------
    inner : RacingTest
        The test that decides on the survivors the guard keeps; its ``winner`` rule is kept.
        A test on several objectives is refused: a ratio needs one score per run.
    factor : float > 1, default 1000.0
        How many times worse than the reference a run must be: ``cost > factor * reference``
        for minimised costs, ``score < reference / factor`` for maximised scores. 1000 leaves
        lognormal noise of sigma 1 and 2 alone (module docstring); 100 only sigma 1.
    direction : {"minimize", "maximize"}, default "minimize"
        The race's direction: whether the values are costs (positive, smaller is better) or
        scores (positive, larger is better).
    reference : {"median", "best"}, default "median"
        The reference on each instance: the median of the survivors' values, or the value of
        the survivor of best mean. The median drops the true best less often on heavy-tailed
        costs (module docstring).

    Examples
    --------
    Scores to maximise: column 1 scores 0.001 where the others score about 0.8; instance 2
    has a reference of 0 (no ratio there), so the run of -5 on it does not count:

    >>> import numpy as np
    >>> from racer.racing.base import KeepAll, RaceView
    >>> scores = np.array([[0.80, 0.001, 0.82], [0.0, 0.0, -5.0], [0.81, 0.79, 0.80]])
    >>> guard = OutlierGuard(KeepAll(), factor=100.0, direction="maximize")
    >>> [(e.index, e.by, round(e.probability)) for e in guard.decide(
    ...     RaceView.from_scores(scores), None)]
    [(1, 0, 800)]
    >>> guard.worst_ratios(RaceView.from_scores(scores))[0].tolist()
    [1.0, 800.0, 1.0]
    """

    elimination_statistic = None  # the wrapped test's; the guard's own numbers exceed factor

    def __init__(self, inner: RacingTest, factor: float = 1000.0, *,
                 direction: str = "minimize", reference: str = "median") -> None:
        if not isinstance(inner, RacingTest):
            raise TypeError(f"`inner` must be a racer.racing.base.RacingTest; got {inner!r}")
        if getattr(inner, "objectives", "single") == "multi":
            raise ValueError(
                f"`inner`={type(inner).__name__} races on several objectives; OutlierGuard "
                "compares one score per run"
            )
        factor = _as_real(factor, "factor")
        if not factor > 1:
            raise ValueError(f"`factor` must be > 1 (how many times worse); got {factor!r}")
        self.inner = inner
        self.factor = factor
        self.direction = check_option(direction, "direction", ("minimize", "maximize"))
        self.reference = check_option(reference, "reference", _REFERENCES)
        self.winner = getattr(inner, "winner", None)
        self.objectives = "single"

    def worst_ratios(self, view: RaceView) -> tuple[np.ndarray, np.ndarray]:
        """``(ratio, by)``: for each survivor (column of ``view.scores``), its largest ratio to
        the reference over the instances (how many times worse; 0 where it has no ratio on
        any instance) and the column of the reference candidate on the instance of that
        ratio."""
        check_view(view)
        oriented = view.scores
        n, m = oriented.shape
        minimize = self.direction == "minimize"
        values = -oriented if minimize else oriented  # costs or scores, positive when usable
        rows = np.arange(n)
        if self.reference == "median":
            lo, hi = (m - 1) // 2, m // 2
            order = np.argpartition(oriented, sorted({lo, hi}), axis=1)
            ref = (values[rows, order[:, lo]] + values[rows, order[:, hi]]) / 2
            # The survivor on the better side of the median stands for it: ``order`` sorts
            # larger-is-better scores, so position ``hi`` is the better of the middle two.
            ref_col = order[:, hi]
        else:
            best = int(np.argmax(oriented.mean(axis=0)))
            ref = values[:, best]
            ref_col = np.full(n, best)
        usable = (ref > 0)[:, None] & (values > 0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            ratio = values / ref[:, None] if minimize else ref[:, None] / values
        ratio = np.where(usable, ratio, 0.0)
        worst_row = np.argmax(ratio, axis=0)
        cols = np.arange(m)
        return ratio[worst_row, cols], ref_col[worst_row]

    def decide(self, view: RaceView, rng: np.random.Generator) -> list[Elimination]:
        check_view(view)
        if view.scores.shape[1] < 2:
            return self.inner.decide(view, rng)
        ratio, by = self.worst_ratios(view)
        drop = ratio > self.factor
        # The leader (best mean) stays: when every survivor has an outlier run somewhere
        # (very heavy noise), the guard must not empty the race, and a mean that is still
        # the best despite such a run is what the race is looking for.
        drop[int(np.argmax(view.scores.mean(axis=0)))] = False
        if not drop.any():
            return self.inner.decide(view, rng)
        out = [Elimination(int(j), "dominated", int(by[j]), float(ratio[j]))
               for j in np.flatnonzero(drop)]
        keep = np.flatnonzero(~drop)
        if keep.size < 2:
            return out
        # The engine's incremental statistics are for its survivors: the narrower view
        # recomputes its own (stats=None).
        sub = RaceView(view.scores[:, keep], view.ids[keep], budget_left=view.budget_left,
                       instances_left=view.instances_left, each_test=view.each_test,
                       n_candidates=view.n_candidates, step=view.step,
                       instances=view.instances,
                       objectives=None if view.objectives is None else view.objectives[:, keep])
        for e in self.inner.decide(sub, rng) or ():
            if not isinstance(e, Elimination):
                raise TypeError(
                    f"{type(self.inner).__name__}.decide() must return Elimination objects; "
                    f"got {e!r}"
                )
            out.append(Elimination(int(keep[e.index]), e.reason, int(keep[e.by]),
                                   e.probability))
        return out

    def get_params(self) -> dict[str, Any]:
        try:
            inner = self.inner.get_params()
        except NotImplementedError:
            inner = {"repr": repr(self.inner)}
        return {"inner": f"{type(self.inner).__qualname__}{sorted(inner.items())}",
                "factor": self.factor, "direction": self.direction,
                "reference": self.reference}

    def __repr__(self) -> str:
        return (f"OutlierGuard({self.inner!r}, factor={self.factor!r}, "
                f"direction={self.direction!r}, reference={self.reference!r})")
