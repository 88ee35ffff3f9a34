"""irace 3.5's adaptive capping for runtime tuning (scenario option ``capping``).

Every rule here is irace 3.5's (its R functions named in each docstring; read with
``Rscript -e 'library(irace); print(irace:::final.execution.bound)'``), after Pérez Cáceres
et al. (2017). In a race with capping:

* **the bound of a run** (passed to the target-runner between the instance and the switches)
  is ``boundMax`` for the elites' own runs and, for every other configuration, computed from
  the elites' times on the race's instances so far (:func:`execution_bounds`). Elites count
  only while they are protected (the instances they already have results for, plus
  ``elitistNewInstances``): after that, and in the first race (no elites), every run gets
  ``boundMax``. Times are the reported ones raised to ``minMeasurableTime`` and cut at the
  run's bound (:func:`capped_time`);
* **the cost of a run** (:func:`score`): a cost ``>= boundMax`` becomes ``boundPar x
  boundMax`` (PARk), and with ``boundAsTimeout`` a cost that reached its own bound below
  ``boundMax`` (a *bounded* run, not a timed-out one) becomes ``boundMax``;
* **dominance elimination** (:func:`dominated`) after every instance: a configuration whose
  mean cost exceeds the elites' bound (by more than 1e-5) is out; without protected elites the
  best ``minNbSurvival`` by mean cost stand in for them. It runs only while more than
  ``minNbSurvival`` configurations are alive, never removes a protected elite, and is applied
  together with the racing test (a configuration either eliminates is out; if together they
  would leave nobody, the dominance rule alone decides): at the test, by the racing test
  :class:`racer.racing.capped.CappedTest`; within a block, after each instance, by the
  command line's dispatch (:func:`open_block`, :func:`dominated_among`, :func:`group_bounds`).

References
----------
.. [1] Pérez Cáceres, L., López-Ibáñez, M., Hoos, H. H. & Stützle, T. (2017). An
   experimental study of adaptive capping in irace. Learning and Intelligent Optimization
   (LION 11), LNCS 10556, 235–250.

>>> c = Capping(bound_max=10, par=10)
>>> score(np.array([3.0, 10.0, 4.0]), np.array([10.0, 10.0, 4.0]), c).tolist()
[3.0, 100.0, 10.0]
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["CAPPING_TYPES", "BOUND_TYPES", "DOMINATED", "Capping", "capped_time",
           "ceiling_digits", "dominated", "elite_bound", "execution_bounds", "format_bound",
           "score"]

CAPPING_TYPES = ("median", "mean", "worst", "best")
BOUND_TYPES = ("candidate", "instance")
# irace's dom.elim tolerance: a mean cost within it of the bound is not dominated.
_EPS = 1e-5
# The failure message of a run not made because its configuration was dominated earlier in
# the same block (irace would have eliminated it after that instance).
DOMINATED = "not run: dominated under capping (mean cost above the elites' bound)"


@dataclasses.dataclass(frozen=True)
class Capping:
    """The capping options (irace names in comments). ``enabled`` False with ``bound_max``
    > 0 still passes ``boundMax`` to every run, as irace does."""

    enabled: bool = True  # capping
    type: str = "median"  # cappingType
    bound_type: str = "candidate"  # boundType
    bound_max: float = 0.0  # boundMax (0: no bound is passed)
    digits: int = 0  # boundDigits
    par: int = 1  # boundPar
    as_timeout: bool = True  # boundAsTimeout
    min_measurable_time: float = 0.01  # minMeasurableTime
    # irace 4's cappingAfterFirstTest: dominance elimination only once firstTest instances
    # are done (irace 4: `!cappingAfterFirstTest || current_task >= firstTest`).
    after_first_test: bool = False

    def __post_init__(self) -> None:
        if self.type not in CAPPING_TYPES:
            raise ValueError(f"`type` (cappingType) must be one of {CAPPING_TYPES}; got {self.type!r}")
        if self.bound_type not in BOUND_TYPES:
            raise ValueError(f"`bound_type` (boundType) must be one of {BOUND_TYPES}; got {self.bound_type!r}")
        if not (self.bound_max >= 0 and math.isfinite(self.bound_max)):
            raise ValueError(f"`bound_max` (boundMax) must be >= 0; got {self.bound_max!r}")
        if self.enabled and self.bound_max <= 0:
            raise ValueError(f"capping needs `bound_max` (boundMax) > 0; got {self.bound_max!r}")
        if self.par < 1:
            raise ValueError(f"`par` (boundPar) must be >= 1; got {self.par!r}")

    @property
    def bound(self) -> float | None:
        """The bound of a run that is not capped: ``boundMax``, or None (no bound argument)."""
        return self.bound_max if self.bound_max > 0 else None


def ceiling_digits(x, digits: int):
    """``x`` rounded up to ``digits`` decimals (irace's ``ceiling.digits``, the same float
    operations, so the same numbers).

    >>> ceiling_digits(np.array([3.2, 3.0, 0.0123]), 0).tolist(), float(ceiling_digits(0.0123, 2))
    ([4.0, 3.0, 1.0], 0.02)
    """
    multiple = 10.0 ** -digits
    div = np.asarray(x, dtype=float) / multiple
    whole = np.trunc(div)
    return whole * multiple + np.ceil(div - whole) * multiple


def _summary(values: np.ndarray, type_: str) -> float:
    if type_ == "median":
        return float(np.median(values))
    if type_ == "mean":
        return float(np.mean(values))
    if type_ == "worst":
        return float(np.max(values))
    return float(np.min(values))


def elite_bound(data: np.ndarray, type_: str = "median") -> float:
    """irace's ``executionBound``: ``type_`` (median, mean, worst, best) of the elites' mean
    columns of ``data`` (rows instances, columns elites); one elite: its mean (NaN ignored).

    >>> elite_bound(np.array([[1.0, 4.0, 9.0], [3.0, 4.0, 1.0]]), "median")
    4.0
    """
    if data.shape[1] == 1:
        return float(np.nanmean(data[:, 0]))
    return _summary(np.nanmean(data, axis=0), type_)


def execution_bounds(times: np.ndarray, elites: list, exe: list, capping: Capping) -> tuple:
    """``(bounds of the configurations in exe, the elites' bound)`` on the last row of
    ``times`` (irace's ``final.execution.bound``).

    ``times``: rows the race's instances up to the current one (in race order), columns the
    configurations, NaN where there is no time; ``elites``: columns of the protected elites
    (their time on the current row already known); ``exe``: columns to bound. Without elites
    (or none with a time on the current row) every bound is ``boundMax``. boundType
    ``"candidate"``: the elites' bound ``b`` is :func:`elite_bound` of their times on every
    row so far (at most boundMax), and a configuration gets the time left to it, ``rows x b +
    minMeasurableTime`` minus its own times so far, at most ``boundMax``, rounded up to
    ``boundDigits`` decimals, and ``b`` itself when nothing is left. ``"instance"``: the
    summary of the elites' times on the current row plus ``minMeasurableTime``.

    >>> t = np.array([[2.0, 3.0, 1.5], [4.0, 1.0, np.nan]])   # elites 0, 1; configuration 2
    >>> execution_bounds(t, [0, 1], [2], Capping(bound_max=10))   # ceil(2 x 2.5 + 0.01 - 1.5)
    ([4.0], 2.5)
    """
    current = times.shape[0] - 1
    bound_max = float(capping.bound_max)
    elites = [e for e in elites if not np.isnan(times[current, e])]
    if not elites or not exe:
        return [bound_max] * len(exe), bound_max
    if capping.bound_type == "instance":
        b = _summary(times[current, elites], capping.type)
        out = ceiling_digits(np.full(len(exe), min(b + capping.min_measurable_time, bound_max)),
                             capping.digits)
        return [float(x) for x in out], b
    b = min(elite_bound(times[:, elites], capping.type), bound_max)
    total = (current + 1) * b + capping.min_measurable_time
    left = total - np.nansum(times[:, exe], axis=0)
    out = ceiling_digits(np.minimum(left, bound_max), capping.digits)
    out = np.where(out <= 0, b, out)
    return [float(x) for x in out], b


def capped_time(time: float, bound: float | None, capping: Capping) -> float:
    """The time a run counts in later bounds: the reported time raised to
    ``minMeasurableTime`` (irace's ``check.output.target.runner``) and cut at the run's bound.

    >>> capped_time(0.0, 5.0, Capping(bound_max=10)), capped_time(7.5, 5.0, Capping(bound_max=10))
    (0.01, 5.0)
    """
    t = max(float(time), capping.min_measurable_time)
    return t if bound is None else min(t, float(bound))


def score(cost, bound, capping: Capping):
    """The cost a race sees of runs that printed ``cost`` under ``bound`` (irace's
    ``applyPAR`` then ``boundAsTimeout``); finite costs only change.

    >>> score(np.array([2.0, 5.0, 12.0]), np.array([5.0, 5.0, 10.0]), Capping(bound_max=10, par=3)).tolist()
    [2.0, 10.0, 30.0]
    """
    cost = np.array(cost, dtype=float)
    bound = np.broadcast_to(np.asarray(bound, dtype=float), cost.shape)
    finite = np.isfinite(cost)
    out = cost.copy()
    if capping.par != 1:
        out[finite & (cost >= capping.bound_max)] = capping.bound_max * capping.par
    if capping.as_timeout:
        out[(out >= bound) & (out < capping.bound_max)] = capping.bound_max
    return out


def dominated(costs: np.ndarray, elites: list, capping_type: str, min_survivors: int) -> np.ndarray:
    """Which columns of ``costs`` (rows instances so far, columns the configurations alive,
    no NaN) irace's ``dom.elim`` eliminates: mean cost above the elites' bound (:func:`elite_bound`
    of the ``elites`` columns) + 1e-5. Without ``elites`` the best ``min_survivors`` by mean
    stand in (the single best when at most two are alive), unprotected: with the median of
    two, the worse of them goes too. Nothing goes while at most ``min_survivors`` are alive;
    a column in ``elites`` never goes.

    >>> costs = np.array([[1.0, 2.0, 3.0, 9.0], [1.0, 2.0, 5.0, 9.0]])
    >>> dominated(costs, [], "median", 2).tolist()     # bound 1.5: the median of 1 and 2
    [False, True, True, True]
    >>> dominated(costs, [3], "median", 2).tolist()    # an elite at 9: nobody is worse
    [False, False, False, False]
    """
    n = costs.shape[1]
    if n <= min_survivors:
        return np.zeros(n, dtype=bool)
    means = costs.mean(axis=0)
    protected = list(elites)
    if not elites:
        order = np.argsort(means, kind="stable")
        elites = [int(order[0])] if n <= 2 else [int(j) for j in order[:min_survivors]]
    bound = elite_bound(costs[:, elites], capping_type)
    out = (bound + _EPS) < means
    out[protected] = False  # irace: alive | is.elite; the stand-ins are not protected
    return out


def format_bound(bound: float) -> str:
    """The bound as irace writes it on the command line (R's ``as.character``: up to 15
    significant digits).

    >>> format_bound(10.0), format_bound(2.5), format_bound(1 / 3)
    ('10', '2.5', '0.333333333333333')
    """
    return f"{bound:.15g}"


# ---------------------------------------------------------------------------- within a block
# irace applies dominance elimination after every instance, and bounds each run by the elites'
# times so far: the command line's dispatch (racer.tuning.dispatch) runs a capped block one
# instance at a time with these.


def open_block(n_instances: int, first_test: int, each_test: int) -> tuple[int, int]:
    """``(first row, stop)`` of the block a race is in once it has registered ``n_instances``
    rows: the first ``first_test``, then ``each_test`` at a time (the last block shorter when
    the instances run out).

    >>> open_block(5, 5, 2), open_block(7, 5, 2), open_block(8, 5, 2)
    ((0, 5), (5, 7), (7, 8))
    """
    if n_instances <= first_test:
        return 0, n_instances
    return first_test + (n_instances - first_test - 1) // each_test * each_test, n_instances


def dominated_among(costs: np.ndarray, alive: list, out: set, n_protected: int,
                    capping_type: str, min_survivors: int) -> set:
    """The configurations (candidate indices) irace's ``dom.elim`` eliminates after the rows
    of ``costs`` (rows the instances so far, columns the survivors ``alive``; NaN: no cost):
    among those neither in ``out`` nor missing a cost, by :func:`dominated`, the candidates
    with an index below ``n_protected`` being the protected elites.

    >>> costs = np.array([[1.0, 2.0, 5.0, np.nan], [1.0, 2.0, 5.0, 1.0]])
    >>> sorted(dominated_among(costs, [0, 1, 2, 3], set(), 0, "median", 1))
    [1, 2]
    """
    keep = [j for j, ci in enumerate(alive) if ci not in out and not np.isnan(costs[:, j]).any()]
    if not keep:
        return set()
    cols = [alive[j] for j in keep]
    elites = [k for k, ci in enumerate(cols) if ci < n_protected]
    gone = dominated(costs[:, keep], elites, capping_type, min_survivors)
    return {cols[k] for k in np.flatnonzero(gone)}


def group_bounds(times: np.ndarray, n_elites: int, alive_elites: list, capping: Capping) -> list:
    """The bounds of the runs on the last row of ``times`` of its columns after the first
    ``n_elites`` (columns: the elites, then the configurations to bound; rows: the race's
    instances so far; NaN: no time), from the elites ``alive_elites`` (columns) by
    :func:`execution_bounds`. The runs being bounded have no time on that row yet; one read
    back after a kill (logged in ``runs.csv``, not yet told) is ignored, so that the run made
    again gets the bound it got the first time.

    >>> t = np.array([[2.0, 3.0, 1.5], [4.0, 1.0, 9.0]])
    >>> group_bounds(t, 2, [0, 1], Capping(bound_max=10))   # 9.0, a time read back: ignored
    [4.0]
    """
    times = np.array(times, dtype=float)
    exe = list(range(n_elites, times.shape[1]))
    times[-1, exe] = np.nan
    bounds, _ = execution_bounds(times, alive_elites, exe, capping)
    return bounds
