"""Pipelined iterations: the next race's first block started while the current race ends.

With pipelined blocks (:mod:`racer.tuning.lookahead`, "Pipelined blocks") a race keeps its own
blocks going without a barrier, but an iterated tuning still waits between races: irace
samples race ``j + 1`` from race ``j``'s elites, so nothing of race ``j + 1`` can start before
race ``j`` ends, and race ``j``'s later blocks, run by a handful of survivors, leave most
workers idle (64 simulated workers, 1,000 runs: a race's first block keeps all 64 busy, its
later blocks 1 to 27). With ``pipelined_iterations=True`` (``--pipelined-iterations``; it
implies pipelined blocks) the tuner therefore samples race ``j + 1``
at a fixed point of race ``j``'s own data and starts the first block of its new
configurations there, while race ``j`` goes on:

* **The fixed point** is race ``j``'s first test. The provisional elites are the
  configurations that test kept: race ``j``'s own elites (kept from earlier races) first, then
  the others best first by their mean on the first ``firstTest`` rows, at most as many as a
  race keeps (:func:`provisional_elites`). They are read from the race's results whenever the
  tuner looks (at the first block after that test; at the race's end if it had none; when a
  resumed race replays it): a function of results only, never of timing or of the workers,
  so the same seed samples the same configurations on 1 or 256 workers and after ``kill -9``.
* **How many new configurations** race ``j + 1`` gets is irace's count
  (:meth:`racer.tuning.tuner.Tuner._size_iteration`) for the budget left once race ``j`` has
  spent its whole allocation, the provisional elites and the instances seen at the fixed
  point. **Its budget** is set when it begins, from what race ``j`` really left (irace's
  share of it, never less than it was sized for), so what race ``j`` leaves unspent goes on.
  If what is left cannot pay its first block (race ``j`` spent beyond its share, or its
  final elites lack some of the block's instances), the planned race is dropped (its runs
  started ahead logged unused) and the next race is sized anew, as without pipelining.
* **Its new configurations** are sampled from irace's model around the provisional elites
  (their entries updated for race ``j + 1``; the others' kept, since race ``j``'s final
  elites may differ and race ``j + 2`` is sampled around some of them).
* **Its instances** are in irace's order for the instances seen at the fixed point
  (:meth:`racer.tuning.tuner.Tuner._task_order`): ``elitistNewInstances`` new ones first (the
  next ones of the training stream then), then those seen in race ``j + 1``'s new order, then
  the rest. Race ``j`` may run those "new" instances itself before it ends, so they are new
  to the new configurations but not always to the final elites. Decision, chosen on the
  pilot tables over the first block on seen instances only (benchmarks/RESULTS.md,
  "Pipelined iterations", where its cost is measured with the rest).
* **Started**: the new configurations' first ``firstTest`` runs, all at once (as pipelined
  blocks start a new configuration's runs: provisional, told in row order, SKIPPED after a
  failure), after race ``j``'s own runs of that block. They are runs of race ``j + 1``:
  journaled in its look-ahead journal (the plan first, so that a resumed tuning charges them
  once), charged to ``maxExperiments`` when they start (race ``j``'s budget checks count them
  from then on; if they cannot be paid then, they wait for race ``j + 1``), and taken over by
  race ``j + 1``'s first block.
* **Race ``j + 1``** is race ``j``'s final elites and these new configurations; it begins when
  race ``j`` ends, with its first block mostly done.

No next race is planned under ``maxTime`` (its size depends on time), with several
objectives, without elitist races, with ``experimentsPerIteration``, with a sampler that
learns from whole races (``sampler="optuna"``), or where irace's schedule has no race
``j + 1`` for that budget: those tunings race on as with pipelined blocks alone.

Why it is not part of ``pipelined=True``: at equal runs its tunings are behind the default's
on the suite (``pbo-deap`` +10.0 % ± 3.4 %, the other two scenarios leaning the same way;
benchmarks/RESULTS.md, "Pipelined iterations"), since each race is sampled from what the last
one knew at its first test; it
buys wall time at 1,000 runs and more (a third of the default's at 64 simulated workers and
1,000 runs, against 0.45 with pipelined blocks alone), which a tuning short of time, not of
runs, may prefer.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from racer.tuning.capping import open_block
from racer.tuning.objectives import elite_cap

__all__ = ["NextRace", "NextRacePlanner", "provisional_elites"]



def provisional_elites(result, rows: int, cap: int, n_elites: int = 0) -> list:
    """Candidate indices of the elites a race would keep at its fixed point, ``rows`` rows in
    (after a test): of the candidates that test (or a failure) did not eliminate, the race's
    own elites (its first ``n_elites`` candidates, kept from earlier races) first, then the
    others best first by their mean over the first ``rows`` rows (ties: the earlier
    candidate); at most ``cap``. Depends on the race's results up to that point only, so it
    is the same whenever it is read.

    Why the elites first: on the pilot tables, ranking everyone by the mean of the first
    few instances put configurations that looked good on five instances ahead of elites that
    had survived whole races, and the next race, sampled around them, was worse
    (benchmarks/RESULTS.md, "Pipelined iterations").

    >>> import numpy as np
    >>> from types import SimpleNamespace as NS
    >>> scores = np.array([[3., 1., 2., 0.], [3., 1., 2., 0.], [9., 9., 9., 9.]])
    >>> gone = NS(candidate_index=3, n_instances=2)  # eliminated by the test at 2 rows
    >>> res = NS(scores=scores, history=(gone,))
    >>> provisional_elites(res, 2, 2), provisional_elites(res, 2, 2, n_elites=1)
    ([1, 2], [0, 1])
    """
    eliminated = {rec.candidate_index for rec in result.history if rec.n_instances <= rows}
    head = np.asarray(result.scores[:rows], dtype=float)
    alive = [ci for ci in range(head.shape[1])
             if ci not in eliminated and not np.isnan(head[:, ci]).any()]
    means = head[:, alive].mean(axis=0) if alive else np.empty(0)
    ranked = [alive[k] for k in np.argsort(means, kind="stable")]
    return ([ci for ci in ranked if ci < n_elites] + [ci for ci in ranked if ci >= n_elites])[:cap]


@dataclasses.dataclass
class NextRace:
    """Race ``iteration``, planned at its previous race's first test: its budget (irace's
    ``current``), configurations (``n_conf``, the final elites included), the iterations
    planned when it was sized, its new configurations, the positions of its tasks in the
    training stream, the tasks, and its look-ahead journal once its first runs started."""

    iteration: int
    current: int
    n_conf: int
    n_iterations: int
    new: list
    order: list
    tasks: list
    cells: list  # (configuration, task) of the first block, started ahead
    ahead: Any = None


class NextRacePlanner:
    """One race's view of its next one (module docstring): :meth:`plan` sizes and samples it
    (once); :meth:`start` starts its first block on the pool. ``charge`` is the number of
    runs started for it, which the current race's budget checks count."""

    def __init__(self, tuner, run, money, current: int, candidates: list,
                 n_elites: int) -> None:
        self.tuner = tuner
        self.run = run
        self.money = money
        self.current = current
        self.candidates = candidates
        self.n_elites = n_elites  # the race's first n_elites candidates are its elites
        self.planned: NextRace | None = None
        self._done = False
        self._declined = False
        self.charge = 0
        # The fixed point: the race's first test (module docstring).
        self.rows = tuner.first_test

    def plan(self, result) -> NextRace | None:
        """The next race, planned from ``result`` (the current race's, at or after its first
        test); None when there is none to plan (module docstring). Computed once."""
        if self._done:
            return self.planned
        self._done = True
        tuner, run = self.tuner, self.run
        rows = self.rows
        if result.scores.shape[0] < rows:
            return None
        cap = elite_cap(tuner.min_survival, None)
        elites = [self.candidates[ci]
                  for ci in provisional_elites(result, rows, cap, self.n_elites)]
        if not elites:
            return None
        # Task.index is the task's position in the training stream plus one.
        n_seen = max(run.n_seen, max(t.index for t in result.instances[:rows]))
        ahead_run = dataclasses.replace(run, iteration=run.iteration + 1, elites=elites,
                                        n_seen=n_seen, races=[], dropped=[])
        money = copy.copy(self.money)
        money.remaining = self.money.remaining - self.current
        if money.remaining <= 0:
            return None
        sized = tuner._size_iteration(ahead_run, money)
        if not isinstance(sized, tuple):
            return None
        current, n_conf = sized
        values, parents = tuner._new_values(ahead_run, n_conf, None, keep_others=True)
        if len(elites) + len(values) <= tuner.min_survival or not values:
            return None
        new = tuner._new_configurations(values, parents, run.next_id)
        run.next_id += len(new)
        run.seen_keys = ahead_run.seen_keys  # a soft restart may have replaced the set
        run.soft_restarts = ahead_run.soft_restarts
        # irace's order for a race whose elites have seen n_seen instances:
        # elitistNewInstances new ones first, then the seen ones anew, then the rest.
        positions = tuner._task_order(ahead_run, money.remaining)
        tasks = [tuner.task(i) for i in positions]
        cells = [(c, t) for t in tasks[:tuner.first_test] for c in new]
        self.planned = NextRace(ahead_run.iteration, current, n_conf, ahead_run.n_iterations,
                                new, positions, tasks, cells)
        return self.planned

    def due(self, race) -> bool:
        """Whether the current race has passed its first test (its open block starts after
        it): the point at which its next race is planned."""
        start, _ = open_block(race.n_instances, self.tuner.first_test, self.tuner.each_test)
        return start >= self.rows

    def plan_at_end(self, result, rows_run: int) -> None:
        """At the race's end: plan the next race, if not planned yet and the race passed its
        first test (a race that ended there, or a resumed one whose blocks were replayed from
        its journal, never reached :meth:`plan` during a block), so that the tuning goes on
        alike."""
        if rows_run > self.rows or (rows_run == self.rows
                                    and result.stop_reason == "min_survivors"):
            self.plan(result)

    def charge_if(self, affordable) -> bool:
        """Decide (once) whether the next race's first block starts now: if
        ``affordable(n_runs)``, its runs are charged from now on (:attr:`charge`) and True is
        returned; :meth:`start` then starts them. If maxExperiments cannot pay them now (the
        current race spent beyond its share), this is not tried again: the next race stays
        planned and makes these runs itself when it begins. The runs charged only grow
        during a race, so a race resumed later in its course decides alike."""
        nxt = self.planned
        if nxt is None or self.charge or self._declined:
            return False
        if not affordable(len(nxt.cells)):
            self._declined = True
            return False
        self.charge = len(nxt.cells)
        return True

    def start(self, pool, command) -> None:
        """Start the runs :meth:`charge_if` charged: the next race's look-ahead journal is
        opened (a resumed one read back: its finished runs are not made again) and its plan
        journaled before they start."""
        nxt = self.planned
        if nxt is None or not self.charge or nxt.ahead is not None:
            return
        nxt.ahead = self.tuner.open_lookahead(nxt.iteration, nxt.new, nxt.tasks)
        nxt.ahead.start_planned(pool, nxt.cells, command)

    def close(self) -> None:
        """An interrupted tuning: cancel the next race's runs not started, keep its journal."""
        if self.planned is not None and self.planned.ahead is not None:
            self.planned.ahead.close()
