"""Stopping a run that takes orders of magnitude longer than its instance's other runs.

:class:`~racer.racing.OutlierGuard` drops a configuration whose run *cost* is ``outlier_factor``
times the median survivor's on that instance -- but only once the run has ended. In the
minisat tuning where the guard was asked for, the outlier was one run of 1.47 billion unit
propagations that took 1,281 s of a 1,368 s tuning, while every other worker waited for it at
the end of its block: the guard dropped the configuration after the damage was done. A
scenario without ``targetRunnerTimeout`` had nothing else to stop it.

:class:`SlowRunStop` applies the same factor to *wall time while the run is in flight*: a run
that has been running for more than ``factor`` times the median wall time of the runs already
finished on its instance (the same (instance, seed) row of the races), and for at least
:data:`MIN_SECONDS`, is killed, and its configuration is rejected as if the runner had
answered ``Inf`` (logged in ``runs.csv`` with status ``inf`` and the reason).

Decisions, where the papers and irace say nothing:

* **The reference is the median over every finished successful run on the row** (a row is
  a training instance with its seed, ``(instance id, seed)`` as ``runs.csv`` has them), all
  configurations, races and sessions of the tuning, not the elites' alone: a row on which most
  configurations are slow gets a generous bound, and the median of many runs is not moved by
  one fast elite. At least :data:`MIN_FINISHED` runs must have finished on the row (the median
  of one run would let a single lucky run set everybody's bound).
* **Elites' runs are never stopped** (the first ``n_elites`` candidates of a race): they are
  the reference a bound is about, and irace's elitism protects them.
* **Wall times as the runner measures them**: the first run of a fresh worker process
  includes the worker's start, which makes the bound on the first rows of a tuning larger,
  never smaller -- the stop errs towards waiting there.
* **A floor of** :data:`MIN_SECONDS` **seconds** keeps a load spike on the machine from
  stopping a run whose instance's runs take milliseconds.
* **Only runs racer can stop**: racer's own thread pool with a runner that can kill its run
  (a target-runner's process group, or ``racer.tune``'s worker processes with
  ``n_jobs > 1`` or a ``timeout``). A run handed to Dask or Ray, or a Python function running
  in racer's own process (``n_jobs=1`` without ``timeout``), is waited for, as before.
* **Off with capping** (its bounds already stop runs) **and with** ``outlier_factor=None``.

This is the one decision of the tuner that depends on timing rather than on results alone:
a run is stopped when the clock says so. With the default factor of 1000 a run comes near its
bound only when its configuration is an outlier anyway, so the same seed gives the same
tuning unless a run's wall time lands within the machine's timing noise of 1000 times the
median; set ``outlier_factor=None`` for bit-for-bit reproducibility whatever the timing.

>>> stop = SlowRunStop(factor=100.0)
>>> stop.record("row 1", 0.01); stop.record("row 1", 0.03)
>>> stop.limit("row 1")  # max(MIN_SECONDS, 100 x median(0.01, 0.03))
2.0
>>> stop.limit("row 2") is None  # nothing finished there yet: no bound
True
"""

from __future__ import annotations

import statistics
from typing import Any, Hashable

__all__ = ["MIN_FINISHED", "MIN_SECONDS", "SlowRunStop", "can_stop"]

#: The least bound, in seconds: below it a stop could come from the machine's load alone.
MIN_SECONDS = 1.0
#: Finished runs on a row before any run on it is bounded.
MIN_FINISHED = 2


class SlowRunStop:
    """The wall times of the finished runs of a tuning, per race row, and the bound they set
    on a run still in flight (see the module docstring). ``factor``: ``outlier_factor``."""

    def __init__(self, factor: float) -> None:
        if not factor > 1:
            raise ValueError(f"`factor` must be > 1; got {factor!r}")
        self.factor = float(factor)
        self._walls: dict[Hashable, list] = {}

    @classmethod
    def of(cls, settings: Any) -> SlowRunStop | None:
        """The stop of a tuning's ``settings`` (the tuner's): None with ``outlier_factor``
        None, or under capping, whose bounds already stop runs."""
        capping = settings.capping
        if settings.outlier_factor is None or (capping is not None and capping.enabled):
            return None
        return cls(settings.outlier_factor)

    def record(self, row: Hashable, wall: float) -> None:
        """A successful run on ``row`` finished after ``wall`` seconds. A wall of 0 is no
        measurement: a result answered from a record (IteratedRace's study on resume) took
        no time, and would otherwise pull the median down to the 1 s floor."""
        if wall > 0:
            self._walls.setdefault(row, []).append(float(wall))

    def record_earlier(self, rows: list) -> None:
        """The successful training runs of earlier sessions, as ``runs.csv`` rows (typed
        dicts: ``iteration``, ``status``, ``instance_id``, ``seed``, ``wall``).

        >>> stop = SlowRunStop(10.0)
        >>> stop.record_earlier([{"iteration": 1, "status": "ok", "instance_id": 3, "seed": 7,
        ...                       "wall": w} for w in (0.5, 0.7)])
        >>> stop.limit((3, 7))  # 10 x median(0.5, 0.7)
        6.0
        """
        for row in rows:
            if ((row.get("iteration") or 0) > 0 and row.get("status") == "ok"
                    and row.get("wall") is not None):
                self.record((row["instance_id"], row["seed"]), row["wall"])

    def limit(self, row: Hashable) -> float | None:
        """Seconds after which a run on ``row`` is stopped; None while too few have finished."""
        walls = self._walls.get(row, ())
        if len(walls) < MIN_FINISHED:
            return None
        return max(MIN_SECONDS, self.factor * statistics.median(walls))

    def reason(self, row: Hashable, elapsed: float) -> str:
        walls = self._walls[row]
        return (f"stopped after {elapsed:.3g} s: more than {self.factor:g} x the median wall "
                f"time ({statistics.median(walls):.3g} s) of the {len(walls)} runs finished on "
                "this instance (outlier_factor); the configuration is rejected")


def can_stop(runner: Any, executor: Any) -> bool:
    """Whether runs of ``runner`` on ``executor`` (None: racer's own thread pool) can be
    stopped while they run: a runner with ``kill_run`` that does not run in racer's own
    thread (``can_stop_runs``, default True)."""
    return (executor is None and hasattr(runner, "kill_run")
            and bool(getattr(runner, "can_stop_runs", True)))
