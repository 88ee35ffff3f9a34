"""How the ``racer`` command runs a race: the race loop's back end of target-runner runs.

Every race of the tuner (:meth:`racer.tuning.tuner.Tuner.run_race`) is driven by the one race
loop, :func:`racer.race_loop.drive`. This module supplies what is the command line's own:

* **known cells** (:meth:`RacePlan.known`): an elite's result from an earlier race (or the
  maxTime probe's), told without running it again;
* **stop rules** before a block: irace's ``elitistLimit`` (:meth:`RacePlan.stop_if_quiet`)
  and ``maxExperiments`` less look-ahead's reserve, which a block is never started beyond;
* **the back end** (:class:`Dispatcher`): the block's runs on a thread pool of ``parallel``
  target-runner processes (or a Dask/Ray executor), each told as it answers, with

  - *gating*: unless failures rank worst, a configuration that failed is rejected, so its
    later runs in the block are not made (told as :data:`SKIPPED`, a
    :class:`~racer.race_loop.NotRun`: irace runs one instance at a time and rejects an
    ``Inf`` at once, so a rejected configuration costs it one run). For the same
    seed to skip the same runs whatever the timing, a run of a configuration with no
    success yet waits until its earlier runs in the block have answered;
  - *provisional runs* (``settings.lookahead``): workers that would idle start those gated
    runs anyway; their results are told only once the earlier rows have answered, and
    after a failure told as SKIPPED exactly as one-at-a-time would (the run is logged as
    unused, paid from look-ahead's reserve: :meth:`_Block.may_speculate`);
  - *look-ahead runs* (:mod:`racer.tuning.lookahead`): once every run of the block is
    submitted, idle workers start the runs of :func:`next_block` for configurations with a
    success and no failure; runs of the block already started ahead are taken over, the
    others (of configurations eliminated meanwhile) stopped;

* **slow runs** (:meth:`Dispatcher.stop_slow`, :mod:`racer.tuning.slow_runs`): a run far
  slower than the runs finished on its row is killed and told as rejected;
* **what a result means** (:meth:`Dispatcher.settle`): the ``runs.csv`` log, reported run
  times, and ``error_policy`` ("stop": a failing target runner ends the tuning).

Nothing here goes around the driver: the look-ahead's runs of the *next* block are started
from inside the back end (they need a free worker *during* this block), and reach the race
only when the driver asks that block and the back end takes them over.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import threading
import time
from typing import Any, Callable, Iterator

import numpy as np

from racer.tuning.capping import (DOMINATED, capped_time, dominated_among, group_bounds,
                                  open_block, score)
from racer.tuning.lookahead import _TAGS, Lookahead
from racer.tuning.runner import RunResult, TargetRunnerError
from racer.tuning.slow_runs import can_stop
from racer.race_loop import NotRun, drive

__all__ = ["INTERRUPTED", "SKIPPED", "Dispatcher", "RacePlan", "drive_race", "next_block",
           "quiet_tests", "real_cells", "real_runs", "rows_run", "speculates", "told"]

# Set by the command line's SIGINT/SIGTERM handlers, which also raise KeyboardInterrupt. The
# flag is the backstop: a KeyboardInterrupt raised while the interpreter runs a finaliser
# (``__del__``, a weakref callback) is printed and dropped by CPython, and the run would then
# finish as if nobody had pressed Ctrl-C. The dispatcher polls it between runs.
INTERRUPTED = threading.Event()

# How often (seconds) the dispatcher looks at INTERRUPTED while runs are in flight.
_INTERRUPT_POLL = 0.2

# The failure message of a run not made because its configuration had already failed in the
# race (see the module docstring); such cells are not counted as experiments.
SKIPPED = "not run: the configuration was rejected after a failed run"


def speculates(settings: Any, executor: Any) -> bool:
    """Whether idle workers get speculative runs (``settings.lookahead``): only on racer's
    own thread pool. A run shipped to a Dask or Ray worker can be neither killed from here
    nor, once its future is cancelled, told apart from one that never started, so unused
    runs there could be neither stopped nor accounted for."""
    capping = getattr(settings, "capping", None)
    if capping is not None and capping.enabled:
        return False  # a capped run's bound waits for the elites' runs: nothing runs ahead
    if getattr(settings, "pipelined", False):
        return True  # by rule, on every pool and executor (racer.tuning.lookahead)
    return settings.lookahead and executor is None and max(1, settings.parallel) > 1


def _wait_first(pool: Any, futures: Any) -> set:
    """The futures of ``futures`` done once one is, or after ``_INTERRUPT_POLL`` seconds
    (``cf.wait`` with FIRST_COMPLETED); through ``pool.wait_first(futures, timeout)`` when
    the executor has one. A simulated clock (benchmarks/_simclock.py) runs no threads, so
    nothing finishes its runs unless the tuner's waiting does: there waiting advances
    virtual time, and the same tuner code runs on 1,024 virtual workers without sleeping.
    Other executors wait as before."""
    wait = getattr(pool, "wait_first", None)
    if wait is not None:
        return set(wait(futures, _INTERRUPT_POLL))
    return cf.wait(futures, timeout=_INTERRUPT_POLL, return_when=cf.FIRST_COMPLETED)[0]


# ---------------------------------------------------------------------------- what was run


def _told_cells(result) -> np.ndarray:
    """Cells of ``result`` with a score or a failure."""
    done = ~np.isnan(result.scores)
    for ci, row, _ in result.failures:
        done[row, ci] = True
    return done


def real_cells(result, cached: dict) -> list:
    """``(configuration, task)`` of the target-runner calls recorded in ``result``: cells
    told, except those served from ``cached`` and the SKIPPED ones (never run)."""
    done = _told_cells(result)
    for ci, row, message in result.failures:
        if isinstance(message, str) and message.startswith((SKIPPED, DOMINATED)):
            done[row, ci] = False  # rejected before it ran: not a run
    cells = []
    for ci, cand in enumerate(result.candidates):
        for row in np.flatnonzero(done[:, ci]):
            if (cand.id, result.instances[row]) not in cached:
                cells.append((cand, result.instances[row]))
    return cells


def real_runs(race, cached: dict) -> int:
    """Target-runner calls recorded in ``race`` (evaluations not served from the cache)."""
    return len(real_cells(race.result(), cached))


def rows_run(result) -> int:
    """Rows of ``result`` with at least one evaluation (a race stopped before a block it
    could not pay has that block's rows registered but not run)."""
    done = ~np.isnan(result.scores)
    for ci, row, _ in result.failures:
        done[row, ci] = True
    rows = np.flatnonzero(done.any(axis=1))
    return int(rows[-1]) + 1 if rows.size else 0


def told(result) -> Callable:
    """``told(configuration id, task)``: whether ``result`` holds that cell (a score or a
    failure); the table is built on the first call."""
    cells: dict = {}

    def is_told(cid: int, task: Any) -> bool:
        if not cells:
            done = _told_cells(result)
            cells.update({(c.id, t): bool(done[row, ci]) for ci, c in enumerate(result.candidates)
                          for row, t in enumerate(result.instances)})
            cells[None] = False  # built, even for an empty race
        return cells.get((cid, task), False)

    return is_told


def quiet_tests(race, rows_done: int, first_test: int, each_test: int, since: int = 0) -> int:
    """Consecutive tests, counting back from instance ``rows_done`` and only after
    ``first_test`` and from instance ``since`` on, that eliminated nobody (irace's count for
    ``elitistLimit``: a test counts only once no elite is protected, ``!any(is.elite > 0)``,
    i.e. from instance ``elite.safe`` = ``since`` on)."""
    eliminated_at = {rec.n_instances for rec in race.history}
    count = 0
    n = rows_done
    while n > first_test and n >= since:
        if (n - first_test) % each_test == 0:
            if n in eliminated_at:
                break
            count += 1
        n -= 1
    return count


# ---------------------------------------------------------------------------- one race's plan


@dataclasses.dataclass
class RacePlan:
    """What one race of the tuner may run, and what it already knows.

    ``cached``: results before this race, ``{(configuration id, Task): (cost, failure)}``
    (elites carry theirs); ``preset``: results of this race made elsewhere (the maxTime
    probe, earlier test phases); ``used_before``: experiments before this race;
    ``max_total``: maxExperiments (None: no limit in runs); ``elitist_limit`` > 0 ends the
    race once that many consecutive tests after ``first_test`` eliminated nobody, but not
    before ``protect_rows`` instances (those the elites have results for) are done."""

    iteration: int
    candidates: list
    tasks: list
    first_test: int
    each_test: int
    min_survivors: int
    max_total: int | None
    cached: dict
    preset: dict
    used_before: int
    elitist_limit: int = 0
    protect_rows: int = 0
    n_elites: int = 0  # the first n_elites candidates are the elites (capping's bounds)
    # Look-ahead's reserve (racer.tuning.lookahead.reserve): maxExperiments = max_total +
    # reserve; the unused runs of the whole tuning stay below it. 0 without max_total.
    reserve: int = 0
    pipelined: bool = False  # racer.tuning.lookahead, "Pipelined blocks"
    # Pipelined iterations (racer.tuning.next_race): the planner of the next race, whose first
    # block this race may start; its runs are charged here from then on.
    next_race: Any = None

    def known(self, ev) -> tuple[bool, Any] | None:
        """The race loop's ``known``: ``(ok, value)`` of a cell served without running."""
        key = (ev.candidate.id, ev.instance)
        if key in self.cached:
            value, message = self.cached[key]
        elif key in self.preset:
            value, message = self.preset[key]
        else:
            return None
        return (True, value) if message is None else (False, message)

    def is_known(self, cid: int, task: Any) -> bool:
        key = (cid, task)
        return key in self.cached or key in self.preset

    def stop_if_quiet(self, race) -> None:
        """The race loop's ``before_block``: irace's elitistLimit. Recomputed from the race's
        history, not counted along the way, so a resumed race (whose journaled blocks are
        replayed unseen) stops alike."""
        if not self.elitist_limit:
            return
        pending = race.pending()
        rows_done = min(ev.instance_index for ev in pending) if pending else race.n_instances
        if self.ends_quietly(race, rows_done):
            race.stop("elitist_limit")  # journaled, so the report says why

    def ends_quietly(self, race, rows_done: int) -> bool:
        """Whether elitistLimit ends the race once ``rows_done`` instances are done, even if
        the test at that point eliminated nobody."""
        return bool(self.elitist_limit and rows_done >= self.protect_rows
                    and self._quiet_since_protected(race, rows_done))

    def _quiet_since_protected(self, race, rows_done: int) -> bool:
        return quiet_tests(race, rows_done, self.first_test, self.each_test,
                           since=self.protect_rows) >= self.elitist_limit

    def charged(self, race, ahead: Lookahead, extra: set = frozenset(),
                next_race: bool = True) -> int:
        """Pipelined blocks: the runs charged to maxExperiments once the cells ``extra``
        (``(configuration id, task)``) are started too: the experiments before this race,
        plus every cell this race made, started by rule or logged unused, each once
        (racer.tuning.lookahead, "Pipelined blocks"), plus (``next_race``) the next race's
        runs this race started (racer.tuning.next_race), which the next race counts as its
        own. A function of results alone."""
        keys = {(c.id, t) for c, t in real_cells(race.result(), self.cached)}
        ahead_of_next = self.next_race.charge if next_race and self.next_race is not None else 0
        return self.used_before + len(keys | ahead.charged_keys() | set(extra)) + ahead_of_next

    def over_budget(self, race, n_more: int) -> bool:
        """Whether ``n_more`` runs beyond those ``race`` made would exceed ``max_total``, the
        budget the races see (maxExperiments less look-ahead's reserve): the runs used only,
        never the unused ones, whose number depends on timing (racer.tuning.lookahead,
        "Budget")."""
        return (self.max_total is not None
                and self.used_before + real_runs(race, self.cached) + n_more > self.max_total)


def _unknown_runs(plan: RacePlan, rows: range, alive) -> list:
    """``(candidate index, row, key)`` of ``alive`` on ``rows``, row by row, less the cells
    already known (an elite's cached results)."""
    runs = [(int(ci), row, (plan.candidates[ci].id, plan.tasks[row]))
            for row in rows for ci in alive]
    return [run for run in runs if not plan.is_known(*run[2])]


def next_block(race, plan: RacePlan) -> list:
    """``(candidate index, row, key)`` of the runs of the block after the current one, as the
    race will ask them, for the configurations alive now; [] when that block may never come:
    the instances, min_survivors, the race's budget, ``max_total`` or elitistLimit would end
    the race after the current block even if the test eliminated nobody (conservative:
    look-ahead never spends runs on a block that only eliminations could open)."""
    n = race.n_instances
    rows = range(n, min(n + plan.each_test, len(plan.tasks)))
    alive = race.survivor_indices
    if n < plan.first_test or not rows or len(alive) <= plan.min_survivors:
        return []
    untold = len(race.pending())
    if race.budget is not None and race.n_charged + untold + len(alive) * len(rows) > race.budget:
        return []
    if plan.ends_quietly(race, n):
        return []
    runs = _unknown_runs(plan, rows, alive)
    if plan.over_budget(race, untold + len(runs)):
        return []
    return runs


# Pipelined blocks: how many blocks past the current one a race keeps started. Decision
# (benchmarks/RESULTS.md, "Pipelined blocks"): two halve the wall time on 64 to 256 simulated
# workers against one's 0.6-0.7, at the same quality on the pilot tables; three add little.
PIPELINE_BLOCKS = 2


def pipelined_block(race, plan: RacePlan, ahead: Lookahead) -> list:
    """Pipelined blocks: ``(candidate index, row, key)`` of the runs started with the current
    block: the next :data:`PIPELINE_BLOCKS` blocks of every configuration alive
    (racer.tuning.lookahead, "Pipelined blocks"), less those already started; none during a
    race's first block, whose test eliminates most (their runs ahead would be lost: that cost
    the tuning quality on the pilot tables), and none when the instances, min_survivors,
    elitistLimit, the race's budget or maxExperiments would end the race before them even if
    the test eliminated nobody. Computed from what the race held when the current block
    began, so that a race resumed in the middle of the block plans the same runs."""
    n = race.n_instances
    start, _ = open_block(n, plan.first_test, plan.each_test)
    rows = range(n, min(n + PIPELINE_BLOCKS * plan.each_test, len(plan.tasks)))
    alive = race.survivor_indices
    if start == 0 or not rows or len(alive) <= plan.min_survivors or plan.ends_quietly(race, n):
        return []
    runs = _unknown_runs(plan, rows, alive)
    return runs if _pipeline_affordable(race, plan, ahead, start, runs) else []


def _pipeline_affordable(race, plan: RacePlan, ahead: Lookahead, start: int, runs: list) -> bool:
    """Whether the race's budget and maxExperiments pay for ``runs`` started ahead, counted
    as at the start of the block that begins at row ``start``: a run of the block skipped
    since (:data:`SKIPPED`, not charged to the race) counts as the run it was then."""
    pending = race.pending()
    skipped = sum(1 for _, row, message in race.result().failures
                  if row >= start and isinstance(message, str) and message.startswith(SKIPPED))
    if race.budget is not None and race.n_charged + len(pending) + skipped + len(runs) > race.budget:
        return False
    if plan.max_total is None:
        return True
    started = {(ev.candidate.id, ev.instance) for ev in pending} | {key for _, _, key in runs}
    return plan.charged(race, ahead, started) <= plan.max_total


# ---------------------------------------------------------------------------- the back end


class Dispatcher:
    """The race loop's back end for one race of the tuner (see the module docstring):
    :meth:`results` runs a block's runs on ``pool`` and yields ``(evaluation, ok,
    RunResult)`` as they may be told (or a :class:`~racer.race_loop.NotRun` for a skipped
    one); :meth:`settle` tells one."""

    def __init__(self, tuner, race, plan: RacePlan, pool: cf.Executor,
                 ahead: Lookahead | None) -> None:
        self.tuner = tuner
        self.race = race
        self.plan = plan
        self.pool = pool
        self.ahead = ahead
        self.workers = max(1, tuner.settings.parallel)
        self.gate = tuner.settings.error_policy != "worst"
        # Pipelined blocks (racer.tuning.lookahead): runs start by rule, not when workers idle.
        self.pipelined = plan.pipelined and ahead is not None
        self._switches: dict = {}
        # Runs started ahead and not used by the tuning's earlier races (see unused_runs).
        self.unused_before = tuner.state.get("unused", 0)
        # Stopping runs far slower than their row's (racer.tuning.slow_runs): the tags that
        # reach a run, when each was first seen running, and the reasons of those stopped.
        self.slow = tuner.slow_runs if can_stop(tuner.runner, tuner.executor) else None
        self.tags: dict[cf.Future, object] = {}
        self.seen_running: dict[cf.Future, float] = {}
        self.stopped: dict[cf.Future, str] = {}

    def unused_runs(self) -> int:
        """Runs the tuning started speculatively and did not use, this race's included:
        paid from look-ahead's reserve (racer.tuning.lookahead, "Budget")."""
        return self.unused_before + (self.ahead.unused if self.ahead is not None else 0)

    def carry_survivors(self) -> dict:
        """Pipelined blocks, at the race's end: the runs started ahead for configurations that
        survived it, waited for (those a kill interrupted are made again), logged as runs of
        this race and returned as ``{(configuration id, task): RunResult}``, so that an
        elite's next race reuses them instead of paying for them twice. The set is the
        plan's, decided by rule, and every one is waited for: timing decides nothing."""
        race, ahead = self.race, self.ahead
        by_id = {race.candidates[ci].id: race.candidates[ci] for ci in race.survivor_indices}
        is_told = told(race.result())
        # In row order, not a set's (whose order follows string hashes, other in every
        # process): runs.csv and the cache get them in the same order every time.
        keys = sorted((key for key in ahead.planned - ahead.discarded
                       if key[0] in by_id and not is_told(*key)),
                      key=lambda key: (ahead.row_of[key[1]], key[0]))
        for cid, task in keys:
            if (cid, task) not in ahead.entries:  # planned, in flight at a kill: again
                ahead.start(self.pool, by_id[cid], task, self.command(by_id[cid]))
        while watch := [ahead.entries[key].future for key in keys
                        if ahead.entries[key].future is not None]:
            done = _wait_first(self.pool, watch)
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt
            ahead.collect(done)  # journaled as they finish, as every run ahead
        entries = [ahead.entries.pop(key) for key in keys]
        carried = {}
        for e in entries:
            key = (e.cand.id, e.task)
            if self.tuner.on_run is not None and key not in ahead.carried:  # once, resumes too
                self.tuner.on_run(self.plan.iteration, e.cand, e.task, e.result)
                ahead.mark_carried(e.cand, e.task)
            carried[key] = e.result
        return carried

    def charge_next_race(self) -> bool:
        """Pipelined iterations (racer.tuning.next_race): once this race has passed its first
        test, plan the next race and, if maxExperiments pays for its first block, charge it
        now (before this block's runs ahead are counted, as on a resume) and return True:
        the caller starts those runs after this race's own, which go first."""
        nxt, race, max_total = self.plan.next_race, self.race, self.plan.max_total
        if nxt is None or not nxt.due(race) or nxt.plan(race.result()) is None:
            return False
        paid = 0 if max_total is None else self.plan.charged(
            race, self.ahead, {(ev.candidate.id, ev.instance) for ev in race.pending()})
        return nxt.charge_if(lambda n: max_total is None or paid + n <= max_total)

    def command(self, cand) -> list:
        if cand.id not in self._switches:
            self._switches[cand.id] = self.tuner.run_arguments(cand.values)
        return self._switches[cand.id]

    def submit(self, ev, bound: float | None = None) -> cf.Future:
        """Start ``ev``'s run; its bound is ``bound``, else boundMax (or none)."""
        cand, task = ev.candidate, ev.instance
        capping = self.tuner.settings.capping
        if bound is None and capping is not None:
            bound = capping.bound
        args = (cand.id, task.index, task.seed, task.instance, self.command(cand))
        # A runner object without bounds or kill_run (tests' fakes) is called as before.
        options = {} if bound is None else {"bound": bound}
        tag = None
        if self.slow is not None:
            options["tag"] = tag = next(_TAGS)
        fut = self.pool.submit(self.tuner.runner.run, *args, **options)
        if tag is not None:
            self.tags[fut] = tag
        return fut

    def stop_slow(self, futures: dict) -> None:
        """Stop the runs among ``futures`` (future -> Evaluation) that have run longer than
        their row's bound (racer.tuning.slow_runs), elites' runs excepted; each is told as
        rejected when it comes back (:meth:`result_of`). The time a run started is when it
        was first seen running: the dispatcher looks every _INTERRUPT_POLL seconds while it
        waits, and not while it does other work (a race's test, the first of which may load
        compiled kernels), so a run is stopped later than its bound, never earlier."""
        if self.slow is None:
            return
        now = time.monotonic()
        for fut, ev in futures.items():
            if fut in self.stopped or fut not in self.tags or not fut.running():
                continue
            start = self.seen_running.setdefault(fut, now)
            if ev.candidate_index < self.plan.n_elites:
                continue
            row = (ev.instance.index, ev.instance.seed)
            limit = self.slow.limit(row)
            if limit is not None and now - start > limit:
                self.stopped[fut] = self.slow.reason(row, now - start)
                self.tuner.runner.kill_run(self.tags[fut])

    def result_of(self, fut: cf.Future) -> RunResult:
        """The run of ``fut`` as the race is told it: a run stopped as too slow is rejected
        (status "inf", as a runner answering Inf), whatever the killed runner returned."""
        res_run: RunResult = fut.result()
        self.tags.pop(fut, None)
        self.seen_running.pop(fut, None)
        reason = self.stopped.pop(fut, None)
        if reason is None:
            return res_run
        return dataclasses.replace(res_run, status="inf", cost=float("inf"), time=None,
                                   message=reason, objectives=None)

    def settle(self, race, ev, ok: bool, res_run: RunResult) -> None:
        """The race loop's ``settle``: log the run, keep its time, tell the race (a failing
        runner under error_policy "stop" ends the tuning). Under capping the race is told
        the run's cost after PARk and boundAsTimeout (racer.tuning.capping.score)."""
        tuner = self.tuner
        iteration = self.plan.iteration
        if tuner.on_run is not None:
            tuner.on_run(iteration, ev.candidate, ev.instance, res_run)
        if res_run.time is not None and iteration > 0:
            tuner.run_times[(iteration, ev.candidate.id, ev.instance.index)] = res_run.time
        capping = tuner.settings.capping
        if res_run.status == "ok" and capping is not None and capping.enabled:
            if iteration > 0 and res_run.time is not None:
                tuner.capped_times[(ev.candidate.id, ev.instance.index)] = capped_time(
                    res_run.time, res_run.bound, capping)
            bound = capping.bound_max if res_run.bound is None else res_run.bound
            race.tell(ev, float(score(res_run.cost, bound, capping)))
        elif res_run.status == "ok":
            if tuner.slow_runs is not None:
                tuner.slow_runs.record((ev.instance.index, ev.instance.seed), res_run.wall)
            # Several objectives (racer.tuning.objectives): the race is told every one.
            race.tell(ev, res_run.cost if res_run.objectives is None else res_run.objectives)
        elif res_run.status == "error" and tuner.settings.error_policy == "stop":
            raise TargetRunnerError(res_run, tuner.runner.exec_dir)
        else:
            race.tell(ev, error=res_run.message)
        tuner.state["experiments"] += 1
        if tuner.progress is not None:
            tuner.progress(tuner.state, race)

    def results(self, runs: list) -> Iterator[tuple]:
        """Run ``runs`` (one block, instance-major); yield each as it may be told."""
        capping = self.tuner.settings.capping
        if capping is not None and capping.enabled and self.plan.iteration > 0:
            yield from _capped_results(self, runs, capping)
            return
        block = _Block(self, runs)
        if not runs:
            return
        try:
            planned = False
            while block.waiting or block.futures or block.ready:
                for ev in block.submit_waiting():
                    yield ev, False, NotRun(block.skip_message(ev))
                if not self.pipelined:
                    block.start_provisional()
                    block.start_lookahead()
                elif not planned:  # after the block's own runs, so that those go first
                    start_next = self.charge_next_race()
                    block.start_pipelined()
                    if start_next:
                        self.plan.next_race.start(self.pool, self.command)
                    planned = True
                if block.futures or block.ready:
                    for ev, got in block.arrivals():
                        yield from block.hand_over(ev, got)
        except BaseException:
            block.cancel()
            raise


class _Block:
    """The state of one block's dispatch: runs waiting, in flight, done ahead, held."""

    def __init__(self, dispatcher: Dispatcher, runs: list) -> None:
        self.d = dispatcher
        race, ahead = dispatcher.race, dispatcher.ahead
        res = race.result()
        if ahead is not None:
            ahead.plan = None
            ahead.discard_except({(ev.candidate.id, ev.instance) for ev in runs},
                                 race.n_instances, told(res))
        self.failed: dict[int, int] = {}  # candidate index -> first failed row
        if dispatcher.gate:
            for ci, row, _ in res.failures:
                self.failed[ci] = min(row, self.failed.get(ci, row))
        self.proven = {int(ci) for ci in np.flatnonzero(np.any(~np.isnan(res.scores), axis=0))}
        # Candidates look-ahead may run: a success (this block's count too), no failure.
        self.sure = set(self.proven) - {ci for ci, _, _ in res.failures}
        self.waiting = list(runs)
        # Runs paid at the block's start: those of the earlier blocks and every one of this
        # block's (made, or skipped: conservatively), for may_speculate's bound on all runs.
        plan = dispatcher.plan
        self.paid = plan.used_before + len(real_cells(res, plan.cached)) + len(runs)
        self.futures: dict = {}
        self.ready: list = []  # (Evaluation, RunResult) of look-ahead runs already finished
        self.busy: dict[int, set] = {}  # gated candidate -> its rows in flight
        self.provisional: set = set()  # futures of gated runs started before earlier rows answered
        self.held: dict[int, list] = {}  # gated candidate -> finished provisional (Evaluation, RunResult)

    def in_flight(self) -> int:
        ahead = self.d.ahead
        return len(self.futures) + (ahead.n_running() if ahead is not None else 0)

    def rejected(self, ev) -> bool:
        """Whether ``ev``'s configuration failed on an earlier row (gating only)."""
        ci = ev.candidate_index
        return self.d.gate and ci in self.failed and self.failed[ci] < ev.instance_index

    def skip_message(self, ev) -> str:
        return f"{SKIPPED} (it failed on instance row {self.failed[ev.candidate_index]})"

    def submit_waiting(self) -> list:
        """Start every waiting run that may start; return those to skip (rejected)."""
        keep, skipped = [], []
        for ev in self.waiting:
            ci = ev.candidate_index
            if self.rejected(ev):
                skipped.append(ev)
                continue
            gated = self.d.gate and ci not in self.proven
            # A gated run waits for its configuration's earlier runs of the block; pipelined
            # blocks start it at once instead, provisionally (told in row order, SKIPPED and
            # logged unused after a failure): by rule, not when a worker idles.
            provisional = gated and bool(self.busy.get(ci))
            if provisional and not self.d.pipelined:
                keep.append(ev)
                continue
            ahead = self.d.ahead
            got = ahead.take(ev.candidate.id, ev.instance) if ahead is not None else None
            if got is not None and got.result is not None:
                self.ready.append((ev, got.result))
                continue
            if got is not None:
                fut = got.future
                if self.d.slow is not None:
                    self.d.tags[fut] = got.tag  # taken over: now bounded as the block's own
            else:
                fut = self.d.submit(ev)
            self.futures[fut] = ev
            if provisional:
                self.provisional.add(fut)
            if gated:
                self.busy.setdefault(ci, set()).add(ev.instance_index)
        self.waiting = keep
        return skipped

    def start_pipelined(self) -> None:
        """Pipelined blocks: start the next block's runs (:func:`pipelined_block`) now,
        whatever the workers; the race takes those it asks, the others are charged unused."""
        d = self.d
        runs = pipelined_block(d.race, d.plan, d.ahead)
        d.ahead.start_planned(d.pool, [(d.race.candidates[ci], key[1]) for ci, _, key in runs],
                              d.command)

    def start_provisional(self) -> None:
        """Workers would idle while gated runs wait for their configuration's earlier run:
        start them provisionally. Their results are told only once the earlier rows have
        answered, so the race sees what one-at-a-time would give (after a failure: SKIPPED,
        not an experiment, and the run made is logged unused and paid from look-ahead's
        reserve: :meth:`may_speculate`)."""
        if not (self.waiting and self.d.ahead is not None):
            return
        in_flight = self.in_flight()
        rest = []
        for ev in self.waiting:
            if in_flight < self.d.workers and self.may_speculate():
                fut = self.d.submit(ev)
                self.futures[fut] = ev
                self.provisional.add(fut)
                self.busy[ev.candidate_index].add(ev.instance_index)
                in_flight += 1
            else:
                rest.append(ev)
        self.waiting = rest

    def start_lookahead(self) -> None:
        """Every run of the block is submitted: give free workers runs of the next block, of
        configurations with a success and no failure."""
        ahead = self.d.ahead
        if ahead is None or self.waiting:
            return
        free = self.d.workers - self.in_flight()
        if free <= 0:
            return
        if ahead.plan is None:
            ahead.plan = next_block(self.d.race, self.d.plan)
        for ci, _row, key in ahead.plan:
            if free <= 0 or not self.may_speculate():
                break
            if ci in self.sure and ci not in self.failed and key not in ahead.entries:
                cand = self.d.race.candidates[ci]
                ahead.start(self.d.pool, cand, key[1], self.d.command(cand))
                free -= 1

    def may_speculate(self) -> bool:
        """Whether one more speculative run (look-ahead or provisional) may start: the runs
        unused so far and those that may still go unused (started ahead and not taken,
        provisional and not told) stay below look-ahead's reserve, and the runs started
        (this block's and the earlier ones', unused and ahead) below maxExperiments
        (racer.tuning.lookahead, "Budget"). Timing decides what runs here, never what
        the race is told."""
        plan = self.d.plan
        if plan.max_total is None:
            return True
        unsettled = (self.d.ahead.outstanding() + len(self.provisional)
                     + sum(map(len, self.held.values())))
        unused = self.d.unused_runs()
        return (unused + unsettled < plan.reserve
                and self.paid + unused + self.d.ahead.outstanding() < plan.max_total + plan.reserve)

    def arrivals(self) -> list:
        """Wait for runs to finish; return ``(Evaluation, RunResult or Future)`` of this
        block's that did, successes first in submission order, so that an exception (an
        interrupt) loses no result already in hand: the journal keeps them for resume."""
        ahead = self.d.ahead
        if self.ready:
            done: set = {f for f in ahead.running() if f.done()} if ahead is not None else set()
            done |= {f for f in self.futures if f.done()}
        else:
            watch = list(self.futures) + (ahead.running() if ahead is not None else [])
            done = _wait_first(self.d.pool, watch)
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        self.d.stop_slow(self.futures)
        if ahead is not None:
            ahead.collect(done)
        mine = [(self.futures[f], f) for f in done if f in self.futures]
        mine.sort(key=lambda p: (p[1].exception() is not None, p[0].instance_index,
                                 p[0].candidate_index))
        items = sorted(self.ready, key=lambda p: (p[0].instance_index, p[0].candidate_index))
        self.ready = []
        for ev, fut in mine:
            self.futures.pop(fut)
            items.append((ev, fut))
        return items

    def hand_over(self, ev, got) -> Iterator[tuple]:
        """Yield what finished run ``got`` lets the race be told: itself, unless it is
        provisional, then whatever of its configuration's held runs may now be told."""
        ci = ev.candidate_index
        res_run: RunResult = got if isinstance(got, RunResult) else self.d.result_of(got)
        rows = self.busy.get(ci)
        if rows is not None:
            rows.discard(ev.instance_index)
        if isinstance(got, cf.Future) and got in self.provisional:
            self.provisional.discard(got)
            self.held.setdefault(ci, []).append((ev, res_run))
        else:
            yield from self.deliver(ev, res_run)
        if self.held.get(ci):
            yield from self.resolve(ci)

    def deliver(self, ev, res_run: RunResult) -> Iterator[tuple]:
        """Yield ``ev``'s result to be told; once it is, note a success or a failure."""
        yield ev, res_run.status == "ok", res_run
        ci = ev.candidate_index
        if res_run.status == "ok":
            if ci not in self.failed:
                self.sure.add(ci)
        else:
            self.failed[ci] = min(ev.instance_index, self.failed.get(ci, ev.instance_index))
            self.sure.discard(ci)

    def resolve(self, ci: int) -> Iterator[tuple]:
        """Yield the provisional results of ``ci`` whose earlier rows have all answered, as
        if they had run one after the other: after a failure, SKIPPED (the run made is
        logged as unused)."""
        pending = sorted(self.held.get(ci, ()), key=lambda p: p[0].instance_index)
        while pending:
            ev, res_run = pending[0]
            if any(row < ev.instance_index for row in self.busy.get(ci, ())):
                break
            pending.pop(0)
            if ci in self.failed and self.failed[ci] < ev.instance_index:
                self._log_unused(ev, res_run, self.failed[ci])
                yield ev, False, NotRun(self.skip_message(ev))
            else:
                yield from self.deliver(ev, res_run)
        self.held[ci] = pending

    def _log_unused(self, ev, res_run: RunResult, failed_row: int) -> None:
        # Provisional runs start only with look-ahead on (self.d.ahead), which counts them.
        self.d.ahead.log_unused(ev.candidate, ev.instance, res_run,
                                f"provisional run not used: the configuration failed on "
                                f"instance row {failed_row}")

    def cancel(self) -> None:
        """Stop everything of the block: futures cancelled, running target runners killed."""
        for fut in self.futures:
            fut.cancel()
        if self.d.ahead is not None:
            for fut in self.d.ahead.running():
                fut.cancel()
        self.d.tuner.runner.kill_all()


# ---------------------------------------------------------------------------- capping


def _capped_results(d: Dispatcher, runs: list, capping) -> Iterator[tuple]:
    """A block of a race with capping, as irace 3.5 runs it: one instance (row) after the
    other; on each, the protected elites' runs first with bound boundMax, then the others
    with the bounds the elites' times give (:func:`racer.tuning.capping.group_bounds`);
    after each row but the block's last (where the race's test applies the same rule,
    :class:`racer.racing.capped.CappedTest`), the configurations dominated on the rows so far
    lose their later runs of the block (:data:`racer.tuning.capping.DOMINATED`, not run, not
    charged). A configuration that failed loses them too, unless failures rank worst
    (as in :class:`_Block`). Everything is recomputed from the race's results and the
    tuner's capped times, so a resumed block (only some of its runs pending) decides alike."""
    if not runs:
        return
    plan = d.plan
    block_start, block_stop = open_block(d.race.n_instances, plan.first_test, plan.each_test)
    by_row: dict = {}
    for ev in runs:
        by_row.setdefault(ev.instance_index, []).append(ev)
    failed_row: dict = {}  # candidate index -> the row it failed on in this block
    out: set = set()  # candidate indices dominated or failed earlier in this block
    for row in range(block_start, block_stop):
        # Rows of the block already told before an interruption still decide who is out.
        if row > block_start and (not capping.after_first_test or row >= plan.first_test):
            out |= _dominated_so_far(d, row, out, capping)
        batch = by_row.get(row, [])
        for ev in batch:
            ci = ev.candidate_index
            if ci in out:
                yield ev, False, NotRun(f"{SKIPPED} (it failed on instance row {failed_row[ci]})"
                                        if ci in failed_row else DOMINATED)
        batch = [ev for ev in batch if ev.candidate_index not in out]
        for ev, res_run in _capped_row(d, row, batch, capping):
            yield ev, res_run.status == "ok", res_run
            if res_run.status != "ok" and d.gate:
                out.add(ev.candidate_index)
                failed_row[ev.candidate_index] = row


def _capped_row(d: Dispatcher, row: int, batch: list, capping) -> Iterator[tuple]:
    """``(Evaluation, RunResult)`` of ``batch``'s runs on ``row``: the protected elites' first
    (bound boundMax), then the others' (bounds from the elites' times)."""
    protected = row < d.plan.protect_rows
    is_elite = [protected and ev.candidate_index < d.plan.n_elites for ev in batch]
    elites = [ev for ev, e in zip(batch, is_elite) if e]
    others = [ev for ev, e in zip(batch, is_elite) if not e]
    if elites:
        yield from _run_group(d, elites, [None] * len(elites))
    if others:
        yield from _run_group(d, others, _row_bounds(d, row, others, protected, capping))


def _run_group(d: Dispatcher, group: list, bounds: list) -> Iterator[tuple]:
    """Run ``group`` with ``bounds`` (None: boundMax); yield ``(Evaluation, RunResult)`` as
    they finish (those finishing together in candidate order). On an exception the runs
    left are cancelled and the running target runners killed."""
    futures = {d.submit(ev, bound): ev for ev, bound in zip(group, bounds)}
    try:
        pending = set(futures)
        while pending:
            done = _wait_first(d.pool, pending)
            pending -= done
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt
            for fut in sorted(done, key=lambda f: futures[f].candidate_index):
                yield futures[fut], fut.result()
    except BaseException:
        for fut in futures:
            fut.cancel()
        d.tuner.runner.kill_all()
        raise


def _dominated_so_far(d: Dispatcher, row: int, out: set, capping) -> set:
    """The configurations irace's ``dom.elim`` eliminates after row ``row - 1``: among the
    survivors with a cost on every row so far (:func:`racer.tuning.capping.dominated_among`)."""
    res = d.race.result()
    alive = [int(ci) for ci in d.race.survivor_indices]
    n_protected = d.plan.n_elites if row < d.plan.protect_rows else 0
    return dominated_among(res.scores[:row, alive], alive, out, n_protected, capping.type,
                           d.plan.min_survivors)


def _row_bounds(d: Dispatcher, row: int, group: list, protected: bool, capping) -> list:
    """The bounds of ``group``'s runs on ``row``: from the protected elites' capped times
    on rows ``0 .. row`` (none protected: boundMax)."""
    if not protected or d.plan.n_elites == 0:
        return [capping.bound_max] * len(group)
    n_elites = d.plan.n_elites
    cids = [c.id for c in d.plan.candidates[:n_elites]] + [ev.candidate.id for ev in group]
    alive = set(int(ci) for ci in d.race.survivor_indices)
    times = np.array([[d.tuner.capped_times.get((cid, t.index), np.nan) for cid in cids]
                      for t in d.plan.tasks[:row + 1]], dtype=float)
    return group_bounds(times, n_elites, [k for k in range(n_elites) if k in alive], capping)


# ---------------------------------------------------------------------------- one race


def drive_race(tuner, race, plan: RacePlan, pool: cf.Executor, ahead: Lookahead | None) -> dict:
    """Drive ``race`` to its end (or to maxExperiments) with the one race loop, on the
    tuner's pool, then stop its look-ahead runs left (``ahead.close``); ``tuner.experiments``
    counts the target-runner calls the races used, ``tuner.state["unused"]`` (with a
    maxExperiments budget) those started speculatively and not used. Returns the survivors'
    runs pipelined blocks started beyond the race's end, ``{(configuration id, task):
    RunResult}`` (:meth:`Dispatcher.carry_survivors`; empty otherwise)."""
    dispatcher = Dispatcher(tuner, race, plan, pool, ahead)
    pipelined = dispatcher.pipelined

    def can_pay(race, runs: list) -> bool:
        if pipelined and plan.max_total is not None:
            # Every run started is charged, used or not (racer.tuning.lookahead).
            over = plan.charged(race, ahead, {(ev.candidate.id, ev.instance)
                                              for ev in runs}) > plan.max_total
        else:
            over = plan.over_budget(race, len(runs))
        if over:
            # irace never exceeds maxExperiments: stop before a block it cannot pay (the
            # runs used only, so that timing never decides: racer.tuning.lookahead, "Budget").
            race.stop("budget")
            return False
        tuner.state["experiments"] = tuner.experiments
        return True

    def count(race, _batch: list) -> None:
        # The next race's runs this race started are the next race's (next_race=False).
        tuner.experiments = (plan.charged(race, ahead, next_race=False) if pipelined
                             else plan.used_before + real_runs(race, plan.cached))

    drive(race, dispatcher, settle=dispatcher.settle, known=plan.known,
          before_block=plan.stop_if_quiet, before_runs=can_pay, after_block=count)
    carried = dispatcher.carry_survivors() if pipelined else {}
    if plan.next_race is not None:
        res = race.result()
        plan.next_race.plan_at_end(res, rows_run(res))
    count(race, [])  # the race's runs, also when it had no block to run (resumed at its end)
    if ahead is not None:
        # Stop the runs left ahead now, so that the next race's reserve counts the unused
        # ones (the tuner's own close is then a no-op).
        ahead.close(told(race.result()) if race.n_evaluations else lambda cid, task: False)
    if plan.max_total is not None:
        # state["unused"]: runs started speculatively and not used, paid from look-ahead's
        # reserve; the next race's look-ahead starts from them.
        tuner.state["unused"] = dispatcher.unused_runs()
    return carried
