"""irace's iterated racing on racer's engine, and the race of a fixed list of configurations.

Each iteration is one :class:`racer.Race` of the elites and new configurations sampled around
them (:mod:`racer.tuning.sampler`), journaled to ``<execDir>/racer-journal/iteration-<k>.sqlite``;
the budget is spread over iterations as irace 3.5 does (``computeComputationalBudget``,
``computeNbConfigurations``; see docs/cli.md). Elites keep their results: a later race meets
an instance an elite has already run on and the elite's cost is taken from the earlier race
instead of running it again, elites cannot be eliminated before they have covered the
instances they have results for, and with ``elitistLimit`` the race ends after that many
consecutive tests without elimination (irace's elitist races). Soft restarts as irace
(:mod:`racer.tuning.sampler`). A tuning continued with a larger budget
(``Settings.earlier_budgets``, :mod:`racer.tuning.resume`) replays each earlier session under its
own budget, then goes on where that budget's schedule stopped.

Each race is driven by the one race loop (:func:`racer.race_loop.drive`) with the command
line's back end, :mod:`racer.tuning.dispatch`: runs go to a thread pool of ``parallel`` threads,
each running one target-runner process; results are told to the race as they arrive (no
polling). A race is
block-synchronous (every survivor on the same instances, then a test); so that workers do not
idle at the end of every block, runs of the next block are started ahead
(:mod:`racer.tuning.lookahead`) and cancelled or killed when the test eliminates their
configuration.

What the tuner decides -- each iteration's configurations, race and elites, the schedule, the
test phase -- it records as it decides it in a :class:`racer.tuning.record.RunRecord`
(:attr:`Tuner.record`), written to ``<execDir>/racer-journal/run.json``; the report and the
other readers read that record, not the Tuner's rules again. A resumed tuning replays its
journals, and each replayed iteration must decide what the record says.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import math
import os
from typing import Any, Callable

import numpy as np

from racer.tuning.schedule import IraceSchedule
from racer.racing.base import KeepAll, ProtectElites, RacingTest
from racer.engine import Race
from racer.tuning.parameters import ParameterSpace, format_value
from racer.tuning.dispatch import RacePlan, drive_race, real_cells, rows_run, speculates, told
from racer.racing.capped import CappedTest
from racer.racing.outliers import OutlierGuard
from racer.tuning.slow_runs import SlowRunStop
from racer.tuning.capping import capped_time, score
from racer.tuning.lookahead import Lookahead, reserve, reserve_workers
from racer.tuning.next_race import NextRace, NextRacePlanner
from racer.tuning.objectives import elite_cap, pareto_elites
from racer.tuning.sampler import Sampler
from racer.tuning.instances import Instance
from racer.tuning.runner import Runner, TargetRunnerError
from racer.tuning.record import (JOURNAL_DIR, RUN_FILE, SCHEMA, CandidateRecord,
                                 IterationRecord, ParameterInfo, PostSelectionRecord,
                                 RecordError, RunRecord, prob_not_best_of, rank_final,
                                 RunRecorder, ScheduleRecord, TestRecord, read_record)

__all__ = ["Configuration", "Task", "Settings", "Tuner", "TuningResult", "BudgetError",
           "KeepAll", "ProtectElites", "JOURNAL_DIR"]


class BudgetError(ValueError):
    """The budget cannot pay for a single race (irace's "Insufficient budget")."""


@dataclasses.dataclass(eq=False)
class Configuration:
    """A configuration: its irace ID (from 1), values (None = NA) and parent ID."""

    id: int
    values: dict
    parent: int | None = None

    def __repr__(self) -> str:
        # Stable across runs: the journal recognises candidates by this text.
        inner = ", ".join(f"{k}={format_value(v)}" for k, v in self.values.items())
        return f"Configuration({self.id}: {inner})"


@dataclasses.dataclass(frozen=True)
class Task:
    """One (instance, seed) pair; ``index`` is irace's instance ID (from 1)."""

    index: int
    instance: Instance
    seed: int

    def __repr__(self) -> str:
        return f"Task({self.index}, {self.instance.name!r}, {' '.join(self.instance.extra)!r}, {self.seed})"




@dataclasses.dataclass
class Settings:
    """The scenario options the tuner uses (irace names in comments)."""

    max_experiments: int = 0  # maxExperiments
    max_time: float = 0.0  # maxTime (seconds of reported run time)
    min_measurable_time: float = 0.01  # minMeasurableTime
    first_test: int = 5  # firstTest
    each_test: int = 1  # eachTest
    mu: int = 5  # mu
    min_survival: int = 0  # minNbSurvival (0: irace's formula)
    n_iterations: int = 0  # nbIterations (0: irace's formula, then while budget remains)
    n_configurations: int = 0  # nbConfigurations
    experiments_per_iteration: int = 0  # nbExperimentsPerIteration
    elitist: bool = True  # elitist
    elitist_new_instances: int = 1  # elitistNewInstances
    elitist_limit: int = 2  # elitistLimit (0: no limit)
    deterministic: bool = False  # deterministic
    sample_instances: bool = True  # sampleInstances
    seed: int = 0  # seed
    parallel: int = 1  # parallel
    test_n_elites: int = 1  # testNbElites
    error_policy: str = "stop"  # racer: stop | reject | worst
    fixed_list: bool = False  # racer: race the configurations file only
    soft_restart: bool = True  # softRestart
    soft_restart_threshold: float | None = None  # softRestartThreshold (None: 10^-digits)
    # racer: start runs of the next block while workers would idle (racer.tuning.lookahead). On
    # by default: shorter wall time; the runs the races do not use (killed, logged as unused)
    # come from a fixed reserve of maxExperiments (lookahead.reserve), so the races get that
    # much less, whatever the timing. Off (--no-lookahead): the races get all of it. Only with
    # racer's own thread pool (racer.tuning.dispatch.speculates).
    lookahead: bool = True
    # racer: start each race's next blocks of its survivors together with the current
    # block, on any number of workers and on Dask or Ray, and charge every run started to
    # maxExperiments (racer.tuning.lookahead, "Pipelined blocks"): the same seed gives the
    # same elites whatever the workers, the executor or the order runs finish in.
    pipelined: bool = False
    # racer.tuning.next_race (pipelined iterations; with ``pipelined``)
    pipelined_iterations: bool = False
    # racer: when the sampler finds too few configurations never raced before (a small space
    # used up), race the elites, with any new configurations found and the survivors of
    # earlier races that were not kept as elites (alive, never eliminated: dropped only by
    # the count of elites; best first, latest race first), on the instances they have not
    # seen, down to one survivor, instead of stopping with elites compared on a few
    # instances. Decision (IteratedRace on 60-72 configurations stalled at 30
    # evaluations per instance). Off for the command line (irace's output unchanged); on for
    # Optuna's IteratedRace (racer.adapters.optuna).
    race_used_up: bool = False
    # racer: the budgets (maxExperiments, or maxTime with max_time) of the earlier sessions
    # of a tuning continued with a larger budget, oldest first (racer.tuning.resume). The tuner
    # replays each session under its own budget, then goes on with this one's.
    earlier_budgets: tuple = ()
    # racer: what a maxExperiments below irace's minimum (IraceSchedule.minimum_budget) does.
    # "irace": refused, as irace refuses it (the racer command when the scenario asks for
    # irace's procedure: a testType, or --racing-test naming one of irace's tests). "racer":
    # raced with fewer iterations and elites (IraceSchedule.small_budget_plan; refused only
    # below its floor). irace's default here, so that Python users keep irace's rule.
    budget_rule: str = "irace"
    # capping, cappingType, boundType, boundMax, boundDigits, boundPar, boundAsTimeout
    # (racer.tuning.capping.Capping; None: no capping and no boundMax).
    capping: Any = None
    # racer: the objectives (racer.tuning.objectives) of a tuning on k >= 2 of them: one
    # direction and one name each; None for one objective (irace's tuning, unchanged). The
    # runner then answers k numbers, every race is a race on k objectives, and the elites
    # are a Pareto set (racer.tuning.objectives.pareto_elites).
    directions: tuple | None = None
    objective_names: tuple = ()
    # racer: drop at once a configuration with a run at least this many times the median
    # survivor's cost on that instance (racer.racing.OutlierGuard; one objective, positive
    # costs); None: only the racing test eliminates. racer.tune and the command set 1000.
    outlier_factor: float | None = None


@dataclasses.dataclass
class TuningResult:
    elites: list  # Configuration, best first
    iterations: int
    experiments: int
    stop_reason: str
    races: list  # (iteration, Race result, candidates)
    test: dict | None = None  # {"instances": [...], "costs": {id: [..]}}
    time_used: float = 0.0
    soft_restarts: list = dataclasses.field(default_factory=list)  # iterations with one
    # The iterations announced at the start (Tuner.n_iterations); ``iterations`` may exceed
    # it when budget is left (nbIterations = 0, as irace), or fall short when budget is not.
    planned_iterations: int = 0
    # The post-selection race, when one ran: {"iteration", "result" (its Race result),
    # "candidates"}; ``elites`` are then its answer (Tuner._postselection).
    postselection: dict | None = None
    # P(elites[0] is not the best of the final elites) and the instances it rests on
    # (racer.tuning.record.prob_not_best_of); None on several objectives.
    prob_not_best: float | None = None
    prob_not_best_instances: int = 0


def _derived_seed(*key: int) -> int:
    return int(np.random.SeedSequence(list(key)).generate_state(1, dtype=np.uint64)[0] >> 1)


class Tuner:
    """Runs the whole tuning: iterated races (or one race of a fixed list), then the test.

    Parameters
    ----------
    space : ParameterSpace
    runner : Runner
        :class:`~racer.cli.target_runner.TargetRunner` or racer.tune's callable runner.
    train : list of Instance
    settings : Settings
    test : RacingTest
        The racing test of every race (irace's default: ``FRaceTest("conover")``).
    initial : list of dict, optional
        Configurations from ``configurationsFile``.
    test_instances : list of Instance, optional
    journal_dir : str or None
        Where each race's SQLite journal goes; the same command resumes from it. None: no
        journal (the caller keeps its own record: Optuna's IteratedRace, in the study), and
        no look-ahead, whose runs are kept beside the journal.
    on_run : callable, optional
        Called with ``(iteration, configuration, task, RunResult)`` for every target-runner
        call (the CSV log), before the result is told to the race; a look-ahead run
        (``settings.lookahead``) when the race uses it, or, if it never does, with the status
        ``"speculative-unused"`` (:data:`racer.tuning.lookahead.UNUSED`) when it is dropped.
    progress : callable, optional
        Called with a dict of the state after every result.
    executor : concurrent.futures.Executor, optional
        Where runs go (a Dask ``client.get_executor()``, a
        :class:`~racer.ray_executor.RayExecutor`...); default: a thread pool of
        ``settings.parallel`` threads, each running one target-runner process.
    sampler : Sampler, optional
        irace's model (default) or an :class:`~racer.tuning.sampler.OptunaSampler`.
    winner : str or None
        ``Race(winner=...)``: "rank_sum" (irace's order, for the F-test), "mean", or None
        (the rule the test states).
    min_experiments : int or None
        irace 4's ``minExperiments``: the budget is then the larger of it and irace's minimum
        for this space and ``minNbSurvival`` (:meth:`IraceSchedule.minimum_budget`), and
        ``settings.max_experiments`` is ignored. None: ``settings.max_experiments``.
    block_size : int, default 1
        irace 4's ``blockSize``: the training instances come in blocks of this many (one
        instance of each class), sampled as blocks; ``first_test``, ``each_test`` and
        ``elitist_new_instances`` count blocks, so a race eliminates only after complete
        blocks. The number of training instances must be a multiple of it.
    postselection : bool, default False
        irace 4's ``postselection``: after the last iteration, race the final elites on the
        instances they have seen and new ones, spending the runs the iterations left
        (:meth:`_postselection`). Only in an elitist tuning on one objective under
        ``max_experiments``, as irace (otherwise recorded as skipped, with why).
    """

    def __init__(self, space: ParameterSpace, runner: Runner, train: list,
                 settings: Settings, test: RacingTest, *, initial: list | None = None,
                 test_instances: list | None = None, journal_dir: str | None,
                 on_run: Callable | None = None, progress: Callable | None = None,
                 winner: str | None = "rank_sum", metadata: dict | None = None,
                 prior_times: dict | None = None, sampler: Sampler | None = None,
                 executor: cf.Executor | None = None, prior_capped: dict | None = None,
                 min_experiments: int | None = None, block_size: int = 1,
                 postselection: bool = False) -> None:
        _check_irace4(settings, train, min_experiments, block_size, postselection)
        self.space = space
        self.runner = runner
        self.train = list(train)
        self.settings = settings
        self.test = test
        self.initial = list(initial or [])
        self.test_instances = list(test_instances or [])
        self.journal_dir = journal_dir
        self.on_run = on_run
        self.progress = progress
        self.winner = winner
        self.metadata = dict(metadata or {})
        self.sampler = sampler if sampler is not None else Sampler(space)
        self.executor = executor
        # racer: a run far slower than the runs finished on its row is stopped and its
        # configuration rejected (racer.tuning.slow_runs).
        self.slow_runs = SlowRunStop.of(settings)
        # blockSize: the races, the schedule and the elites' new instances count instances,
        # blockSize of them per block (irace 4 multiplies firstTest, eachTest and
        # elitistNewInstances by it).
        self.block_size = int(block_size)
        self.first_test = settings.first_test * self.block_size
        self.each_test = settings.each_test * self.block_size
        self.new_instances = settings.elitist_new_instances * self.block_size
        self.postselection = bool(postselection)
        # irace's schedule (racer/tuning/schedule.py, shared with Optuna's IteratedRace).
        self.schedule = IraceSchedule.from_scenario(settings, space.n_variable, self.block_size)
        # minExperiments (irace 4): the budget is at least irace's minimum for the schedule.
        self.min_experiments = min_experiments
        self.max_experiments = settings.max_experiments
        if min_experiments is not None:
            self.max_experiments = max(int(min_experiments), 0 if settings.fixed_list else
                                       self.schedule.minimum_budget(settings.elitist))
        if settings.budget_rule not in ("irace", "racer"):
            raise ValueError(f"`settings.budget_rule` must be 'irace' or 'racer'; got "
                             f"{settings.budget_rule!r}")
        # A budget below irace's minimum under racer's rule: fewer iterations and elites. The
        # plan is made from the first session's budget, so that a tuning continued with a
        # larger one replays its first session as it ran (then goes on as irace does past
        # its planned iterations).
        # The parallel look-ahead's reserve is sized for: the first session's (tuner.raced).
        # From the settings alone, not the executor: on Dask or Ray nothing runs ahead, but
        # the races get what they get on threads, so the executor never changes the result.
        ahead = journal_dir is not None and speculates(settings, None)
        # Pipelined blocks charge their unused runs to the budget as they go: no reserve.
        self.reserve_workers = max(1, settings.parallel) if ahead and not settings.pipelined else 1
        if journal_dir is not None:
            self.reserve_workers = reserve_workers(journal_dir, self.reserve_workers)
        self.budget_plan = None
        if settings.budget_rule == "racer" and self.max_experiments > 0 and not settings.fixed_list:
            first_budget = self.raced(int((settings.earlier_budgets or (self.max_experiments,))[0]))
            self.budget_plan = self.schedule.small_budget_plan(first_budget, settings.elitist)
            if self.budget_plan is not None:
                self.schedule = dataclasses.replace(
                    self.schedule, n_iterations=self.budget_plan.n_iterations,
                    min_survival=self.budget_plan.survivors)
        self.n_iterations = self.schedule.planned_iterations
        self.min_survival = self.schedule.survivors
        # (configuration id, Task) -> (cost, failure message): results elites carry forward.
        self.cache: dict[tuple[int, Task], tuple[float, str | None]] = {}
        self.experiments = 0
        # Reported time of every training run, by (iteration, configuration id, instance id):
        # live ones, and those of an interrupted session read back from runs.csv, so that a
        # resumed maxTime tuning plans the same budgets.
        self.run_times: dict[tuple[int, int, int], float] = dict(prior_times or {})
        self.time_used = 0.0
        # Capping: the time of every training run, cut at its bound, by (configuration id,
        # instance id): what the bounds of later runs are computed from (racer.tuning.capping).
        # An interrupted session's come back from runs.csv, so a resume computes the same bounds.
        self.capped_times: dict[tuple[int, int], float] = dict(prior_capped or {})
        # maxTime in force: an earlier session's while its iterations are replayed.
        self._time_limit = settings.max_time
        self._timed: set = set()
        self._tasks: list[Task] = []
        self.recorder: RunRecorder | None = None  # set by run()
        self.state: dict = {"iteration": 0, "experiments": 0, "budget": self.max_experiments}

    def run_arguments(self, values: dict) -> Any:
        """What ``runner.run`` gets for a configuration of ``values``: the runner's own
        ``arguments(space, values)`` when it has one (:class:`racer.tune`'s runner takes the
        values themselves), else irace's switches (``space.command_line``), which the
        target-runner protocol passes."""
        arguments = getattr(self.runner, "arguments", None)
        return self.space.command_line(values) if arguments is None else arguments(self.space, values)

    # ------------------------------------------------------------------ instances

    def task(self, k: int) -> Task:
        """Task ``k`` (0-based) of the training stream: the instance list repeated (shuffled
        per repetition with ``sampleInstances``), each pair with its own seed."""
        n = len(self.train)
        while len(self._tasks) <= k:
            rep = len(self._tasks) // n
            rng = np.random.default_rng([self.settings.seed, 1, rep])
            order = rng.permutation(n) if self.settings.sample_instances else np.arange(n)
            if self.block_size > 1 and self.settings.sample_instances:
                order = _block_order(rng, n, self.block_size)
            seeds = rng.integers(1, 2**31 - 1, size=n)
            for pos in range(n):
                self._tasks.append(Task(len(self._tasks) + 1, self.train[int(order[pos])], int(seeds[pos])))
        return self._tasks[k]

    def tasks(self, start: int, stop: int) -> list[Task]:
        return [self.task(k) for k in range(start, stop)]

    def n_tasks_available(self, remaining: int) -> int:
        if self.settings.deterministic:
            return len(self.train)
        # irace makes ceiling(remaining / minSurvival) pairs available; whole blocks of them.
        n = max(len(self.train), int(math.ceil(remaining / max(self.min_survival, 1))))
        return n if self.block_size == 1 else -(-n // self.block_size) * self.block_size

    # ------------------------------------------------------------------ one race

    def _journal(self, name: str) -> str | None:
        # No journal_dir: races are not journaled (Optuna's IteratedRace keeps its record in
        # the user's study, and resumes from it).
        if self.journal_dir is None:
            return None
        os.makedirs(self.journal_dir, exist_ok=True)
        return os.path.join(self.journal_dir, name)

    def run_race(self, iteration: int, candidates: list, tasks: list, *, budget: int | None,
                 min_survivors: int, test: RacingTest, first_test: int, journal: str,
                 pool: cf.Executor, max_total: int | None, elitist_limit: int = 0,
                 protect_rows: int = 0, preset: dict | None = None, n_elites: int = 0,
                 reserve: int = 0, next_race: Any = None, ahead: Lookahead | None = None) -> Any:
        """One race. ``elitist_limit`` > 0 ends it (irace's elitist races) once that many
        consecutive tests after instance ``first_test`` eliminated nobody, but not before
        ``protect_rows`` instances (those the elites have results for) are done. ``reserve``:
        look-ahead's share of maxExperiments = ``max_total + reserve`` (:meth:`raced`).
        ``next_race``: pipelined iterations' planner of the next race
        (:class:`racer.tuning.next_race.NextRacePlanner`); ``ahead``: this race's look-ahead
        journal when its previous race opened it to start its first block."""
        settings = self.settings
        multi = settings.directions is not None
        race = Race(
            candidates, test=test, direction=list(settings.directions) if multi else "minimize",
            budget=budget, first_test=first_test,
            each_test=self.each_test, min_survivors=min_survivors, instances=tasks,
            on_error="worst" if settings.error_policy == "worst" else "eliminate",
            winner=self.winner, random_state=_derived_seed(settings.seed, 4, iteration),
            storage=self._journal(journal), metadata={
                **self.metadata, "iteration": iteration,
                **({"objective_names": list(settings.objective_names)} if multi else {})},
        )
        cached_before = dict(self.cache)
        used_before = self.experiments
        plan = RacePlan(iteration, candidates, tasks, first_test, self.each_test,
                        min_survivors, max_total, cached_before, preset or {}, used_before,
                        elitist_limit, protect_rows, n_elites, reserve, settings.pipelined,
                        next_race)
        if ahead is None and self.journal_dir is not None and speculates(settings, self.executor):
            ahead = self.open_lookahead(iteration, candidates, tasks, journal)
        try:
            carried = drive_race(self, race, plan, pool, ahead)  # sets self.experiments
            result = race.result()
            if ahead is not None:
                ahead.close(told(result))
                ahead = None
        finally:
            if ahead is not None:  # interrupted: keep the look-ahead journal for the resume
                ahead.close()
            race.close()
        self._keep_results(iteration, result, candidates, cached_before, carried)
        return result

    def open_lookahead(self, iteration: int, candidates: list, tasks: list,
                       journal: str | None = None) -> Lookahead:
        """The look-ahead runs and journal of race ``iteration`` (an interrupted session's
        read back)."""
        capping = self.settings.capping
        journal = journal or f"iteration-{iteration}.sqlite"
        return Lookahead(self._journal(journal) + ".lookahead.jsonl", candidates, tasks,
                         self.runner, self.on_run, iteration,
                         bound=capping.bound if capping is not None else None,
                         killable=self.executor is None)

    def _keep_results(self, iteration: int, result, candidates: list, cached_before: dict,
                      carried: dict) -> None:
        """After a race: every result it holds into the cache (an elite's next race is told
        them), and the time of its runs into ``time_used``. ``carried``: a survivor's runs
        that pipelined blocks started beyond the race's end (logged with it and charged),
        which serve its next race; a failed one is not kept, so that the next race makes it
        and meets the failure as it would have (error_policy included)."""
        multi = self.settings.directions is not None
        for ci, cand in enumerate(candidates):
            for row, task in enumerate(result.instances):
                value = result.scores[row, ci]
                if not np.isnan(value):
                    # Several objectives: an elite carries every one of them forward.
                    self.cache[(cand.id, task)] = (
                        float(value) if not multi
                        else tuple(float(x) for x in result.objective_scores[row, ci]), None)
        for ci, row, message in result.failures:
            self.cache[(candidates[ci].id, result.instances[row])] = (math.nan, message)
        for (cid, task), res_run in carried.items():
            if res_run.status == "ok":
                self.cache[(cid, task)] = (
                    float(res_run.cost) if not multi else tuple(map(float, res_run.objectives)),
                    None)
        if iteration <= 0:
            return
        times = [((iteration, cand.id, task.index), self.run_times.get(
            (iteration, cand.id, task.index), 0.0)) for cand, task in real_cells(result, cached_before)]
        times += [((iteration, cid, task.index), res_run.time)
                  for (cid, task), res_run in carried.items() if res_run.time is not None]
        for key, seconds in times:
            if key not in self._timed:
                self._timed.add(key)
                self.time_used += seconds

    # ------------------------------------------------------------------ the tuning

    def _past_order(self, iteration: int, n_seen: int) -> list[int]:
        """The order in which an elitist race meets the ``n_seen`` tasks seen before: shuffled
        anew for every race with ``sampleInstances`` (irace 3.5's ``elitrace.init.instances``:
        ``sample.int(next.instance - 1)``), so that the first test of each iteration, which
        judges the new configurations, does not always fall on the same few old instances."""
        if not self.settings.sample_instances:
            return list(range(n_seen))
        rng = np.random.default_rng([self.settings.seed, 6, iteration])
        if self.block_size > 1:
            # Whole blocks, so that every test falls after complete blocks (irace 4 shuffles
            # the instances one by one here, which its own comment calls a shortcoming).
            return _block_order(rng, n_seen, self.block_size)
        return [int(k) for k in rng.permutation(n_seen)]

    def _new_configurations(self, values_list: list, parents: list, next_id: int) -> list:
        return [Configuration(next_id + i, dict(v), p) for i, (v, p) in enumerate(zip(values_list, parents))]

    @property
    def record(self) -> RunRecord:
        """What this tuning decided so far (:mod:`racer.tuning.record`); also written to
        ``<journal_dir>/run.json`` as it grows."""
        if self.recorder is None:
            raise RuntimeError("the tuning has not started: call run() first")
        return self.recorder.record

    def _new_recorder(self) -> RunRecorder:
        """The record of this tuning, checked against the one an earlier session left (a
        resume replays the journaled iterations, which must decide what it recorded)."""
        import racer

        s = self.settings
        path = None if self.journal_dir is None else os.path.join(self.journal_dir, RUN_FILE)
        previous = None
        if path is not None and os.path.exists(path):
            try:
                previous = read_record(path)
            except RecordError as exc:
                raise RecordError(f"{exc}. Delete it and run the same command again to rebuild "
                                  "it from the race journals, or start the tuning afresh") from None
        header = RunRecord(
            schema=SCHEMA, racer_version=racer.__version__,
            mode="fixed-list" if s.fixed_list else "iterated", seed=int(s.seed),
            parameters=tuple(_parameter_info(p) for p in self.space.declared),
            directions=None if s.directions is None else tuple(s.directions),
            objective_names=tuple(s.objective_names),
            schedule=ScheduleRecord(
                max_experiments=int(self.max_experiments), max_time=float(s.max_time),
                iterations_planned=1 if s.fixed_list else int(self.n_iterations),
                min_survival=int(self.min_survival),
                elites_kept=int(elite_cap(self.min_survival, s.directions)),
                earlier_budgets=tuple(s.earlier_budgets)))
        return RunRecorder(path, header, previous)

    def run(self) -> TuningResult:
        s = self.settings
        workers = max(1, s.parallel)
        own = self.executor is None
        self.recorder = self._new_recorder()
        if self.journal_dir is not None:
            reserve_workers(self.journal_dir, self.reserve_workers, keep=True)
        pool = (cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="racer-run")
                if own else self.executor)
        try:
            try:
                if s.fixed_list:
                    result = self._fixed(pool)
                else:
                    result = self._iterated(pool)
                    if self.postselection:
                        self._postselection(pool, result)
                if s.directions is None:
                    if self.winner == "mean":
                        # irace's F-test keeps irace's rank order (winner "rank_sum")
                        result.elites = rank_final(result.elites, self.cache)
                        self.recorder.reorder_final([e.id for e in result.elites])
                    result.prob_not_best, result.prob_not_best_instances = prob_not_best_of(
                        result.elites, self.cache, s.seed)
                    self.recorder.state_prob_not_best(result.prob_not_best,
                                                      result.prob_not_best_instances)
                if self.test_instances and result.elites:
                    # Several objectives: the whole final front is tested (a Pareto set has
                    # no "best testNbElites").
                    tested = (result.elites if s.directions is not None
                              else result.elites[: max(1, s.test_n_elites)])
                    result.test = self._test_phase(pool, tested)
                self.recorder.complete(self.time_used)
            except BaseException:
                self.runner.kill_all()
                raise
        finally:
            if own:
                pool.shutdown(wait=True, cancel_futures=True)
        result.time_used = self.time_used
        return result

    def raced(self, budget: int) -> int:
        """What the races of a maxExperiments ``budget`` may use: ``budget`` less look-ahead's
        reserve, sized for the first session's workers (racer.tuning.lookahead, "Budget")."""
        return budget - reserve(budget, self.reserve_workers)

    def _budget(self) -> int:
        if self.max_experiments > 0:
            return self.raced(self.max_experiments)
        if self.settings.max_time > 0 and not self.settings.fixed_list:
            return 0
        raise BudgetError("set maxExperiments (or maxTime, not with a fixed list) to a positive budget")

    def _runs_left(self) -> int:
        """maxTime: the remaining time in runs of the mean reported time so far (irace's
        ``round((maxTime - timeUsed) / boundEstimate)``)."""
        mean = max(self.time_used / max(self.experiments, 1), self.settings.min_measurable_time)
        return max(0, int(round((self._time_limit - self.time_used) / mean)))

    def _probe(self, values: dict) -> dict:
        """maxTime: run configuration 1 on the first training instance to estimate the time of a
        run before the first race (irace estimates it too); the race then takes this result
        instead of running it again. Returns the preset for the first race."""
        task = self.task(0)
        key = (1, 1, task.index)
        config = Configuration(1, dict(values))
        if key in self.run_times:  # resumed: the probe ran in an earlier session
            cost = None
        else:
            capping = self.settings.capping
            args = (1, task.index, task.seed, task.instance, self.run_arguments(values))
            res = (self.runner.run(*args) if capping is None or capping.bound is None
                   else self.runner.run(*args, bound=capping.bound))
            if self.on_run is not None:
                self.on_run(1, config, task, res)
            if res.status == "error" and self.settings.error_policy == "stop":
                raise TargetRunnerError(res, self.runner.exec_dir)
            if res.time is not None:
                self.run_times[key] = res.time
            value = res.cost if res.objectives is None else tuple(res.objectives)
            cost = (value, None) if res.status == "ok" else (math.nan, res.message)
            if res.status == "ok" and capping is not None and capping.enabled:
                # Capped as a race's run would be: its score, and its time for later bounds.
                self.capped_times[(1, task.index)] = capped_time(res.time, res.bound, capping)
                cost = (float(score(res.cost, capping.bound_max, capping)), None)
        self._probe_time = self.run_times.get(key, 0.0)
        return {(1, task): cost} if cost is not None else {}

    def _fixed(self, pool) -> TuningResult:
        s = self.settings
        if not self.initial:
            raise BudgetError("a fixed list needs configurationsFile with at least one configuration")
        cands = self._new_configurations(self.initial, [None] * len(self.initial), 1)
        budget = self._budget()
        first = min(max(self.first_test, 1), self.n_tasks_available(budget))
        if budget < len(cands) * first:
            raise BudgetError(
                f"maxExperiments = {budget} cannot pay for the first test: {len(cands)} "
                f"configurations x firstTest = {first} instances = {len(cands) * first} runs")
        tasks = self.tasks(0, self.n_tasks_available(budget))
        self.state.update(iteration=1, planned=1, budget=budget)
        self.recorder.start_iteration(IterationRecord(
            1, _journal_name(self.journal_dir, "fixed-list.sqlite"), int(budget),
            tuple(CandidateRecord.of(c) for c in cands), tuple(c.id for c in cands)))
        result = self.run_race(1, cands, tasks, budget=budget, min_survivors=s.min_survival or 1,
                               test=self.test, first_test=first, journal="fixed-list.sqlite",
                               pool=pool, max_total=budget,
                               reserve=s.max_experiments - budget)
        elites = elites_of(result, len(result.survivors), s.directions)
        self._record_race(result, cands, elites, self.experiments)
        self.recorder.stop(result.stop_reason, [e.id for e in elites], self.experiments,
                           self.time_used)
        return TuningResult(elites, 1, self.experiments, result.stop_reason,
                            [(1, result, cands)], planned_iterations=1)

    def _iterated(self, pool) -> TuningResult:
        """irace's iterated racing: races of the elites and new configurations, each sized by
        :class:`~racer.tuning.schedule.IraceSchedule`, while the budget lasts."""
        s = self.settings
        money = _Budget(self)
        run = _Iterations(n_iterations=self.n_iterations,
                          first_rng=np.random.default_rng([s.seed, 3, 1]))
        first_values, preset = None, {}
        if money.timed:
            first_values = (dict(self.initial[0]) if self.initial
                            else self.sampler.sample_uniform(1, run.first_rng)[0])
            preset = self._probe(first_values)
            mean = max(self._probe_time, s.min_measurable_time)
            money.remaining = max(0, int(round((self._time_limit - self._probe_time) / mean)))
        else:
            money.remaining = money.budget
            self._check_minimum(money.budget)
        while True:
            run.iteration += 1
            planned, run.next_race = run.next_race, None
            if planned is not None and not self._can_pay_planned(run, money, planned):
                planned = None  # sized anew from what is left, as without pipelining
            if planned is not None:  # pipelined iterations: sampled in the last race
                run.n_iterations = max(run.n_iterations, planned.n_iterations)
                # Its configurations were sized for the budget the last race was allotted;
                # its budget is what the last race left, as irace's is (racer.tuning.next_race).
                left = self.schedule.iteration_budget(money.remaining, run.iteration,
                                                      run.n_iterations)
                sized = (min(max(planned.current, left), money.remaining), planned.n_conf)
            else:
                sized = money.exhausted(run.iteration == 1)
            if sized is None:
                sized = self._size_iteration(run, money)
            if sized is _RETRY:
                run.iteration -= 1  # the same iteration, with the next session's larger budget
                continue
            if sized is _SKIP:
                continue
            if isinstance(sized, str):
                run.stop_reason = sized
                break
            exhausted = self._run_iteration(pool, run, money, *sized, first_values,
                                            preset if run.iteration == 1 else None, planned)
            if exhausted is not None:
                run.stop_reason = exhausted
                break
            if (run.next_race is None and self.experiments - run.used_before == 0
                    and not money.more()):
                run.stop_reason = "no runs possible within the remaining budget"
                break
        self.recorder.stop(run.stop_reason, [e.id for e in run.elites], self.experiments,
                           self.time_used)
        self._ended = (run, money)  # where the post-selection race starts from
        return TuningResult(run.elites, len(run.races), self.experiments, run.stop_reason,
                            run.races, soft_restarts=run.soft_restarts,
                            planned_iterations=self.n_iterations)

    def _check_minimum(self, budget: int) -> None:
        """Refuse a maxExperiments below irace's minimum (irace's rule) or below the floor of
        racer's small-budget plan (racer's rule): a BudgetError saying why."""
        s, schedule = self.settings, self.schedule
        if self.budget_plan is not None:
            return
        minimum = schedule.minimum_budget(s.elitist)
        if budget >= minimum:
            return
        if s.budget_rule == "irace":
            raise BudgetError(
                f"maxExperiments = {budget} is too small: irace would need at least {minimum} "
                f"runs ((minNbSurvival + 1) x nbIterations x instances per configuration = "
                f"({schedule.survivors} + 1) x {schedule.planned_iterations} x "
                f"{minimum // ((schedule.survivors + 1) * schedule.planned_iterations)}, irace's "
                "computeMinimumBudget) and refuses it too; leave testType empty (and "
                "--racing-test unset or not one of irace's tests) for racer's small-budget plan")
        floor = schedule.minimum_budget(s.elitist, 1, 1)
        raise BudgetError(
            f"maxExperiments = {budget} is too small: racer races at least 2 configurations "
            f"over max(mu, firstTest) + eachTest = {floor // 2} instances, {floor} runs "
            f"(irace would need at least {minimum})")

    def plan_note(self) -> str | None:
        """One line saying what racer's small-budget plan did and why (None without a plan)."""
        plan = self.budget_plan
        if plan is None:
            return None
        return (f"maxExperiments = {plan.budget} is below irace's minimum for "
                f"{self.space.n_variable} parameters ({plan.irace_minimum} runs for "
                f"{plan.irace_iterations} iterations keeping {plan.irace_survivors} elites, "
                f"which irace refuses); racing {plan.n_iterations} "
                f"iteration{'s' if plan.n_iterations != 1 else ''} keeping "
                f"{plan.survivors} elite{'s' if plan.survivors != 1 else ''} instead, the first "
                f"race of {plan.first_configurations} configurations, firstTest = "
                f"{self.first_test} (the most iterations whose minimum fits; set "
                "testType for irace's rule)")

    def budgeted_instances(self) -> tuple[int | None, int]:
        """``(n_available, mu)``: the instances a configuration can be budgeted for (a
        deterministic scenario's training instances; None for a stochastic one, which makes
        instance-seed pairs as the budget needs them), and the instances each new
        configuration is budgeted for up to its first test (irace's ``mu``, at most
        ``n_available``). A configuration is never budgeted for more instances than there are."""
        n_available = len(self.train) if self.settings.deterministic else None
        mu = self.schedule.instances_per_configuration
        return n_available, mu if n_available is None else min(mu, n_available)

    def _size_iteration(self, run: _Iterations, money: _Budget):
        """``(budget, configurations)`` of iteration ``run.iteration``; or :data:`_RETRY`
        (with a later session's larger budget), :data:`_SKIP` (nbConfigurations cannot be
        paid yet: irace goes on to the next iteration), or the reason the tuning stops. A
        first iteration that cannot be paid is a BudgetError."""
        s = self.settings
        schedule = self.schedule
        iteration = run.iteration
        first_race = iteration == 1
        if iteration > run.n_iterations:
            if s.n_iterations != 0:
                return "limit of iterations reached"
            run.n_iterations = iteration  # irace goes on while budget remains
        current = (s.experiments_per_iteration or
                   schedule.iteration_budget(money.remaining, iteration, run.n_iterations))
        n_elites = len(run.elites)
        elitist = s.elitist and not first_race
        n_available, mu = self.budgeted_instances()
        n_conf = schedule.n_configurations(current, iteration, n_elites,
                                           run.n_seen if elitist else None, n_available)
        if s.n_configurations > 0:
            if s.n_configurations <= n_conf:
                n_conf = s.n_configurations
            elif current < money.remaining:
                return _SKIP
            else:
                return money.retry_or("not enough budget to enforce nbConfigurations")
        if n_conf <= self.min_survival:
            if first_race:
                raise BudgetError(
                    f"maxExperiments = {money.budget} is too small: the first iteration could "
                    f"race only {n_conf} configurations, not more than minNbSurvival = "
                    f"{self.min_survival}; irace would need about "
                    f"{(self.min_survival + 1) * run.n_iterations * (schedule.instances_per_configuration + 5 * self.each_test)} runs")
            return money.retry_or("not enough budget to race more than the minimum configurations")
        if not first_race and n_conf <= n_elites:
            return money.retry_or("not enough budget left to race newly sampled configurations")
        if elitist:
            # the elites run only instances they have not seen, and a deterministic
            # scenario may have none left
            new_for_elites = min(self.new_instances, mu)
            if n_available is not None:
                new_for_elites = min(new_for_elites, max(0, n_available - run.n_seen))
            need = (n_conf - n_elites) * mu + n_elites * new_for_elites
        else:
            need = n_conf * mu
        if need > current:
            if first_race:
                raise BudgetError(f"maxExperiments = {money.budget} cannot pay for the first race "
                                  f"({n_conf} configurations x {mu} instances)")
            return money.retry_or(
                "not enough budget to race all configurations up to the first test")
        return current, n_conf

    def _new_values(self, run: _Iterations, n_conf: int, first_values: dict | None,
                    keep_others: bool = False) -> tuple:
        """Values and parents of the configurations iteration ``run.iteration`` adds: the
        initial ones then uniform samples in the first, else samples of the model around the
        elites (sampled again after a soft restart). ``keep_others``: pipelined iterations
        (:mod:`racer.tuning.next_race`), whose elites are provisional: the model keeps the
        other configurations' entries."""
        s = self.settings
        iteration = run.iteration
        if iteration == 1:
            rng = run.first_rng  # under maxTime the probe drew the first sample from it
            new_values = [dict(v) for v in self.initial[:n_conf]]
            if first_values is not None and not new_values:
                new_values = [first_values]  # the probe's configuration is configuration 1
            for v in new_values:
                run.seen_keys.add(self.sampler.key(v))
            new_values += self.sampler.sample_uniform(n_conf - len(new_values), rng, run.seen_keys)
            return new_values, [None] * len(new_values)
        rng = np.random.default_rng([s.seed, 3, iteration])
        elites = run.elites
        n_new = n_conf - len(elites)
        if keep_others and not self.sampler.model:
            self.sampler.init_model(elites)  # sampled before the first race ended
        self.sampler.update_model(elites, iteration, run.n_iterations, n_new, elitist=s.elitist,
                                  **({"keep_others": True} if keep_others else {}))
        seen_before = set(run.seen_keys)
        got = self.sampler.sample_model(elites, n_new, rng, run.seen_keys)
        if s.soft_restart:
            # irace's soft restart: near-copies in the race mean the model has collapsed;
            # widen it and sample this iteration's configurations again (the first sample is
            # discarded, as irace does).
            threshold = (10.0 ** -self.space.digits if s.soft_restart_threshold is None
                         else s.soft_restart_threshold)
            race_confs = elites + self._new_configurations(
                [v for v, _ in got], [p for _, p in got], run.next_id)
            similar = self.sampler.similar(race_confs, threshold)
            if similar:
                self.sampler.soft_restart(race_confs, similar, n_new)
                run.soft_restarts.append(iteration)
                run.seen_keys = seen_before
                got = self.sampler.sample_model(elites, n_new, rng, run.seen_keys)
        if len(got) < n_new:
            # The model around the elites has no configuration left that was never raced (a
            # collapsed model over categorical and ordinal grids, where soft restarts need
            # near-copies of numbers): the rest are drawn uniformly, as in the first
            # iteration, rather than ending the tuning with budget left.
            got = got + [(v, None) for v in
                         self.sampler.sample_uniform(n_new - len(got), rng, run.seen_keys)]
        return [v for v, _ in got], [p for _, p in got]

    def _task_order(self, run: _Iterations, remaining: int) -> list[int]:
        """Positions in the training stream of the tasks of iteration ``run.iteration``'s
        race: new ones (an elitist race: ``elitistNewInstances`` new ones, then those seen
        before in a new order, then new ones)."""
        s = self.settings
        n_seen = run.n_seen
        available = self.n_tasks_available(remaining)
        if run.iteration == 1 or not s.elitist:
            if s.deterministic:
                return list(range(0, len(self.train)))
            start = n_seen if not s.elitist else 0
            return list(range(start, max(available + start, start)))
        stop_new = min(n_seen + self.new_instances, max(available, n_seen))
        return (list(range(n_seen, stop_new)) + self._past_order(run.iteration, n_seen)
                + list(range(stop_new, max(available, stop_new))))

    def _run_iteration(self, pool, run: _Iterations, money: _Budget, current: int, n_conf: int,
                       first_values: dict | None, preset: dict | None,
                       planned: NextRace | None = None) -> str | None:
        """Sample iteration ``run.iteration``'s configurations, race them with the elites,
        and keep the survivors as the next elites. Returns why the tuning stops when no race
        can be run: the sampler found too few configurations never sampled before (a small
        parameter space used up; racer never races a configuration twice, irace would).
        ``planned``: the race as pipelined iterations planned it during the last one (its
        new configurations and tasks; the elites are the last race's final ones)."""
        if planned is not None:
            candidates, new = run.elites + planned.new, planned.new
            # Sized for the provisional elites: the final ones may be fewer (failures).
            min_survivors = max(1, min(self.min_survival, len(candidates) - 1))
            order, tasks = planned.order, planned.tasks
        else:
            chosen = self._candidates(run, n_conf, first_values)
            if isinstance(chosen, str):
                return chosen
            candidates, new, min_survivors = chosen
            order = self._task_order(run, money.remaining)
            tasks = [self.task(i) for i in order]
        if len(tasks) < self.first_test:
            raise BudgetError(f"only {len(tasks)} training instances for firstTest = "
                              f"{self.settings.first_test}"
                              + (f" x blockSize = {self.block_size}" if self.block_size > 1 else ""))
        # (a planned race's first block was counted by _can_pay_planned already)
        if (planned is None and not money.timed
                and self._first_block_runs(candidates, tasks, preset) > money.remaining):
            # _size_iteration's estimate counts each elite's new instances alike; an elite
            # kept from a shorter race may lack more, and a race that cannot pay its first
            # block would end with no winner. The exact count decides.
            if not money.more():
                return "not enough budget to race all configurations up to the first test"
        self.recorder.start_iteration(IterationRecord(
            run.iteration, _journal_name(self.journal_dir, f"iteration-{run.iteration}.sqlite"),
            int(current), tuple(CandidateRecord.of(c) for c in candidates),
            tuple(c.id for c in new), run.iteration in run.soft_restarts))
        planner = self._next_race_planner(run, money, current, candidates)
        try:
            result = self._race_iteration(pool, run, money, current, candidates, tasks,
                                          min_survivors, preset, planner,
                                          planned.ahead if planned is not None else None)
        except BaseException:
            if planner is not None:
                planner.close()
            raise
        run.next_race = planner.planned if planner is not None else None
        self._keep_elites(run, money, candidates, order, result)
        return None

    def _can_pay_planned(self, run: _Iterations, money: _Budget, planned: NextRace) -> bool:
        """Whether the budget left pays for the first block of the race pipelined iterations
        planned during the last one (sized for the budget the last race was allotted; it may
        have spent more, and its final elites may lack some of the block's instances). If
        not, its runs started ahead are stopped and logged unused (their journal charges them
        to the race sized in its place) and False is returned."""
        first_block = self._first_block_runs(run.elites + planned.new, planned.tasks, None)
        if money.timed or first_block <= money.remaining:
            return True
        if planned.ahead is not None:
            planned.ahead.close(lambda cid, task: False)
        return False

    def _next_race_planner(self, run: _Iterations, money: _Budget, current: int,
                           candidates: list) -> NextRacePlanner | None:
        """Pipelined iterations' planner of the race after this one (racer.tuning.next_race),
        or None where its size would depend on what this race spends or on time, with
        several objectives, without elitist races, or with a sampler told whole races."""
        s = self.settings
        if not (s.pipelined and s.pipelined_iterations and s.elitist
                and self.journal_dir is not None
                and not money.timed and s.directions is None and s.experiments_per_iteration == 0
                and getattr(self.sampler, "observe", None) is None):
            return None
        return NextRacePlanner(self, run, money, current, candidates,
                               len(run.elites) if run.iteration > 1 else 0)

    def _first_block_runs(self, candidates: list, tasks: list, preset: dict | None) -> int:
        """Runs the race's first block (``first_test`` tasks for every candidate) starts:
        those neither cached from earlier races nor preset."""
        known = preset or {}
        return sum(1 for c in candidates for t in tasks[:self.first_test]
                   if (c.id, t) not in self.cache and (c.id, t) not in known)

    def _candidates(self, run: _Iterations, n_conf: int, first_values: dict | None):
        """The configurations of iteration ``run.iteration``'s race: the elites, the new ones
        and (``race_used_up``) survivors of earlier races revived; returns ``(candidates, new,
        min_survivors)``, or why the tuning stops when too few are left to race."""
        s = self.settings
        first_race = run.iteration == 1
        elites = run.elites
        new_values, parents = self._new_values(run, n_conf, first_values)
        min_survivors = self.min_survival
        revived: list = []
        if len(elites) + len(new_values) <= self.min_survival:
            if s.race_used_up and not first_race:
                revived = [c for c in run.dropped if c not in elites][
                    :max(0, n_conf - len(elites) - len(new_values))]
            all_seen = s.deterministic and run.n_seen >= len(self.train) and not revived
            if (not s.race_used_up or first_race or all_seen
                    or len(elites) + len(new_values) + len(revived) < 2):
                return (f"the parameter space is used up: {len(new_values)} configuration(s) "
                        f"not sampled before were found, too few to race")
            # race_used_up (see Settings): the elites, new and revived ones, down to one.
            run.dropped = [c for c in run.dropped if c not in revived]
            min_survivors = 1
        new = self._new_configurations(new_values, parents, run.next_id)
        run.next_id += len(new)
        return elites + new + revived, new, min_survivors

    def _iteration_test(self, n_elites: int, protect_rows: int) -> RacingTest:
        """The racing test of an iteration's race: a configuration orders of magnitude costlier
        than the median survivor on some instance dropped at once (``outlier_factor``); with
        capping, irace's dominance elimination
        at each test step (within a block: dispatch); in an elitist race, the elites kept
        until they have covered the instances they have results for."""
        s = self.settings
        test = self.test
        if s.outlier_factor is not None and s.directions is None:
            # Innermost, so that the protected elites stay protected (ProtectElites outside).
            test = OutlierGuard(test, factor=s.outlier_factor)
        capping = s.capping if s.capping is not None and s.capping.enabled else None
        if capping is not None:
            test = CappedTest(test, capping_type=capping.type, min_survivors=self.min_survival,
                              n_elites=n_elites, until=protect_rows)
        if n_elites:
            test = ProtectElites(test, n_elites, protect_rows)
        return test

    def _race_iteration(self, pool, run: _Iterations, money: _Budget, current: int,
                        candidates: list, tasks: list, min_survivors: int, preset: dict | None,
                        planner: NextRacePlanner | None = None, ahead: Lookahead | None = None):
        """Race iteration ``run.iteration``'s candidates (the elites first) on ``tasks``."""
        s = self.settings
        iteration = run.iteration
        elitist = s.elitist and iteration != 1
        n_elites = len(run.elites) if elitist else 0
        # The progress line counts against what the header announced (self.n_iterations),
        # not against run.n_iterations, which irace moves along when it runs past the plan.
        self.state.update(iteration=iteration, planned=self.n_iterations, budget=money.budget)
        run.used_before = self.experiments
        protect_rows = min(run.n_seen + self.new_instances, len(tasks)) if n_elites else 0
        return self.run_race(
            iteration, candidates, tasks,
            budget=self.schedule.race_budget(current, len(candidates), n_elites, run.n_seen),
            min_survivors=min_survivors, test=self._iteration_test(n_elites, protect_rows),
            first_test=self.first_test, journal=f"iteration-{iteration}.sqlite", pool=pool,
            max_total=None if money.timed else money.budget, reserve=money.reserve,
            elitist_limit=s.elitist_limit if s.elitist else 0, protect_rows=protect_rows,
            preset=preset, n_elites=n_elites, next_race=planner, ahead=ahead)

    def _keep_elites(self, run: _Iterations, money: _Budget, candidates: list, order: list,
                     result) -> None:
        """After iteration ``run.iteration``'s race: the budget spent, the training tasks
        seen, the elites kept (recorded), and the sampler told."""
        s = self.settings
        run.races.append((run.iteration, result, candidates))
        observe = getattr(self.sampler, "observe", None)
        if observe is not None:
            observe(candidates, result)
        if not money.timed:
            money.remaining -= self.experiments - run.used_before
        run.n_seen = max(run.n_seen,
                         max((order[r] + 1 for r in range(rows_run(result))), default=0))
        for ci, _row, _ in result.failures:
            run.seen_keys.add(self.sampler.key(candidates[ci].values))
        run.elites = elites_of(result, elite_cap(self.min_survival, s.directions),
                               s.directions)
        self._record_race(result, candidates, run.elites, self.experiments - run.used_before)
        if s.race_used_up:
            alive = [c for c in result.survivors if all(c is not e for e in run.elites)]
            run.dropped = _not_kept(alive, run.dropped, run.elites)
        if run.iteration == 1 and run.next_race is not None:
            # the second race was sampled around the first's provisional elites, whose
            # entries stay; the final elites get theirs
            self.sampler.init_model(run.elites, keep=True)
        elif run.iteration == 1:
            self.sampler.init_model(run.elites)

    def _record_race(self, result, candidates: list, elites: list, n_runs: int) -> None:
        """Record the end of the current iteration's race: the elites kept, best first, with
        their means on its instances."""
        column = {c.id: i for i, c in enumerate(candidates)}
        cols = [column[e.id] for e in elites]
        if self.settings.directions is None:
            means = [(float(result.mean_scores[i]),) for i in cols]
        else:
            means = [tuple(float(x) for x in result.mean_objective_scores[i]) for i in cols]
        self.recorder.end_iteration(
            self.experiments, self.time_used, elites=tuple(e.id for e in elites),
            elite_means=tuple(means), elite_instances=tuple(int(result.n_evaluated[i]) for i in cols),
            n_instances=int(result.n_instances), n_runs=int(n_runs), stop_reason=result.stop_reason)

    # ------------------------------------------------------------------ post-selection

    def _postselection(self, pool, result: TuningResult) -> None:
        """irace 4's post-selection race, after the last iteration: the final elites (best
        first) raced on the training instances they have results for, which are not run
        again, then on new ones from the training stream (the instances after those seen,
        with fresh seeds; the list again, reshuffled, once it is used up, as the iterations
        draw them), down to one survivor or until the runs the iterations left are spent.

        Decisions (irace's ``psRace`` differs where said): the candidates are the final
        elites only -- irace also takes elites of earlier iterations and any configuration
        the budget can complete; an earlier elite was beaten in a later race, and the final
        elites are the answer being checked. The first test comes after one block of new
        instances (``eachTest x blockSize``), not on the instances seen (irace's
        ``firstTest = nrow(elite_data)``, which its own comment says should be one more):
        the iterations' races already judged the elites on those, and the point is to see
        them on instances they were not chosen on. No elitistLimit (irace sets it to 0), the
        tuning's racing test, at least one survivor. The elites raced are the best ones whose
        missing runs on the instances seen and one new block each, plus one more block for
        two survivors, the budget pays; with fewer than two, or with no new instance
        (``deterministic`` and every instance seen), it is skipped and the record says why.
        The new elites are the race's survivors in its order, then the eliminated elites in
        their former order: the tuning's best can change. Updates ``result`` (elites,
        experiments, ``postselection``) and the record (:class:`PostSelectionRecord`)."""
        run, money = self._ended
        # The races' share of the budget (the look-ahead's unused runs come out of its
        # reserve, so that what is left, and the answer, never depend on timing).
        remaining = 0 if money.timed else max(0, money.budget - self.experiments)
        elites = list(result.elites)
        n_seen = run.n_seen
        seen = [self.task(k) for k in range(n_seen)]
        chosen = self._postselection_elites(elites, seen, remaining)
        n_new = self._new_postselection_tasks(n_seen, remaining, len(chosen))
        why = self._postselection_skipped(money.timed, remaining, len(chosen), n_new)
        journal = "postselection.sqlite"
        record = PostSelectionRecord(None if why else _journal_name(self.journal_dir, journal),
                                     int(remaining), tuple(e.id for e in chosen or elites),
                                     int(n_seen), skipped=why)
        self.recorder.start_postselection(record)
        if why is not None:
            return
        iteration = (run.races[-1][0] if run.races else 0) + 1
        tasks = seen + [self.task(k) for k in range(n_seen, n_seen + n_new)]
        cached = sum((e.id, t) in self.cache for e in chosen for t in seen)
        self.state.update(iteration=iteration, planned=self.n_iterations, budget=money.budget)
        used_before = self.experiments
        race = self.run_race(
            iteration, chosen, tasks, budget=remaining + cached, min_survivors=1,
            test=self._iteration_test(len(chosen), n_seen), first_test=n_seen + self.each_test,
            journal=journal, pool=pool, max_total=money.budget, protect_rows=n_seen,
            n_elites=len(chosen))
        survivors = list(race.survivors)
        best = survivors + [e for e in elites if all(e is not c for c in survivors)]
        result.elites = best[:len(elites)]
        result.experiments = self.experiments
        result.postselection = {"iteration": iteration, "result": race, "candidates": chosen}
        self.recorder.end_postselection(
            self.experiments, self.time_used, elites=tuple(e.id for e in result.elites),
            n_instances=int(race.n_instances), n_runs=int(self.experiments - used_before),
            stop_reason=race.stop_reason)

    def _postselection_elites(self, elites: list, seen: list, remaining: int) -> list:
        """The best elites whose runs the budget pays: each one's missing cells on the tasks
        ``seen``, then one new block; a race is one that can test after its first block, so
        two survivors must be able to pay one more block of new instances (irace asks for
        two blocks left, too)."""
        chosen, paid, spare = [], 0, 2 * self.each_test
        for elite in elites:
            need = sum((elite.id, t) not in self.cache for t in seen) + self.each_test
            if paid + need + spare <= remaining:
                chosen.append(elite)
                paid += need
        return chosen

    def _postselection_skipped(self, timed: bool, remaining: int, n_chosen: int,
                               n_new: int) -> str | None:
        """Why the post-selection race cannot run, or None when it can."""
        s = self.settings
        if timed:
            return "maxTime budget (irace runs post-selection only under maxExperiments)"
        if not s.elitist:
            return "elitist = 0 (post-selection needs an elitist tuning, as in irace)"
        if s.directions is not None:
            return "several objectives (the final elites are a Pareto set, not a ranking)"
        if n_chosen < 2:
            return (f"{remaining} runs left do not pay two elites on the instances they have "
                    f"seen and two blocks of {self.each_test} new instances each")
        if n_new == 0:
            return "no new training instance (deterministic, every instance seen)"
        return None

    def _new_postselection_tasks(self, n_seen: int, remaining: int, n_elites: int) -> int:
        """New training tasks the post-selection race may need: what ``remaining`` runs
        pay for two survivors, in whole blocks; under ``deterministic``, only instances not
        seen yet."""
        if n_elites < 2:
            return 0
        n = remaining // 2 // self.each_test * self.each_test
        if self.settings.deterministic:
            n = min(n, max(0, len(self.train) - n_seen))
        return n

    def _test_phase(self, pool, elites: list) -> dict:
        rng = np.random.default_rng([self.settings.seed, 5])
        seeds = rng.integers(1, 2**31 - 1, size=len(self.test_instances))
        tasks = [Task(i + 1, inst, int(seeds[i])) for i, inst in enumerate(self.test_instances)]
        self.state.update(iteration="test")
        preset = self._earlier_tests(TestRecord(
            _journal_name(self.journal_dir, "test.sqlite"), tuple(e.id for e in elites),
            tuple(" ".join([t.instance.name, *t.instance.extra]) for t in tasks),
            tuple(t.seed for t in tasks)), tasks)
        result = self.run_race(0, list(elites), tasks, budget=None, min_survivors=1,
                               test=KeepAll(), first_test=len(tasks), journal="test.sqlite",
                               pool=pool, max_total=None, preset=preset)
        if self.settings.directions is None:
            costs = {c.id: [None if np.isnan(v) else float(v) for v in result.scores[:, i]]
                     for i, c in enumerate(result.candidates)}
        else:  # a list of the k objectives per test instance
            costs = {c.id: [None if np.isnan(v).any() else [float(x) for x in v]
                            for v in result.objective_scores[:, i]]
                     for i, c in enumerate(result.candidates)}
        self.recorder.end_test([costs[e.id] for e in elites])
        return {"tasks": tasks, "costs": costs, "result": result}

    def _earlier_tests(self, test: TestRecord, tasks: list) -> dict:
        """Record the test phase about to run, and return the test runs of earlier sessions
        of a continued tuning for the elites tested again.

        A continued tuning (a larger budget) may end with other elites than the session whose
        test phase already ran. The run record says whose that test journal is: when it is
        not this test phase's elites, the journal is kept as ``test-earlier-<k>.sqlite`` (and
        recorded so among the earlier test phases) and the test phase runs on the new elites,
        taking the runs already made (an elite still among them, the same test instance and
        seed) from the earlier journals instead of running them again. A test journal the
        record does not name (an execDir of a racer older than the record) is set aside too,
        and its runs made again. Returns ``{(configuration id, Task): (cost, failure)}``."""
        if self.journal_dir is None:
            self.recorder.start_test(test, ())
            return {}
        current = os.path.join(self.journal_dir, "test.sqlite")
        carried = self.recorder.record.earlier_tests
        earlier = [t for t in carried if t.journal != "test.sqlite"
                   and os.path.exists(os.path.join(self.journal_dir, t.journal))]
        if os.path.exists(current):
            journaled = next((t for t in carried if t.journal == "test.sqlite"), None)
            if journaled is None or journaled.elites != test.elites:
                kept = _set_aside(self.journal_dir)
                if journaled is not None:
                    earlier.append(dataclasses.replace(journaled, journal=kept))
        self.recorder.start_test(test, tuple(earlier))
        return _earlier_runs(self.journal_dir, earlier, test, tasks)


def _block_order(rng: np.random.Generator, n: int, block_size: int) -> list:
    """A random order of positions ``0 .. n-1`` that keeps blocks of ``block_size``
    consecutive positions together, in their order (a last, partial block as well)."""
    n_blocks = -(-n // block_size)
    return [k for b in rng.permutation(n_blocks)
            for k in range(int(b) * block_size, min(n, (int(b) + 1) * block_size))]


def _check_irace4(settings: Settings, train: list, min_experiments: Any, block_size: Any,
                  postselection: Any) -> None:
    """The Tuner's irace 4 arguments, checked (ValueError/TypeError naming the option)."""
    for name, value in (("min_experiments", min_experiments), ("block_size", block_size)):
        if value is None and name == "min_experiments":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"`{name}` must be an int; got {value!r}")
        if value < 1:
            raise ValueError(f"`{name}` must be >= 1; got {value}")
    if not isinstance(postselection, (bool, np.bool_)):
        raise TypeError(f"`postselection` must be a bool; got {postselection!r}")
    if min_experiments is not None and settings.max_time > 0:
        raise ValueError(f"`min_experiments` = {min_experiments} is a budget of runs; it "
                         f"cannot be combined with max_time = {settings.max_time:g} (irace "
                         "refuses two budgets too)")
    if len(train) % block_size:
        raise ValueError(f"blockSize = {block_size}: the {len(train)} training instances are "
                         f"not a whole number of blocks (irace requires a multiple too)")
    mu = settings.mu
    if block_size > 1 and mu >= settings.first_test * block_size and mu % block_size:
        raise ValueError(f"mu = {mu} must be a multiple of blockSize = {block_size} (as in "
                         "irace)")
    capping = settings.capping
    if block_size > 1 and capping is not None and capping.enabled:
        raise ValueError(f"capping with blockSize = {block_size} is not implemented: racer's "
                         "capping eliminates dominated configurations after every instance, "
                         "irace only after complete blocks; set blockSize = 1 or capping = 0")


def _set_aside(journal_dir: str) -> str:
    """Rename ``test.sqlite`` (and its look-ahead runs) to the next free
    ``test-earlier-<k>.sqlite``; returns that name."""
    from racer.storage import Journal

    current = os.path.join(journal_dir, "test.sqlite")
    Journal(current, arg="test journal").close()  # one file: its WAL checkpointed
    k = 1
    while os.path.exists(os.path.join(journal_dir, f"test-earlier-{k}.sqlite")):
        k += 1
    name = f"test-earlier-{k}.sqlite"
    kept = os.path.join(journal_dir, name)
    if os.path.exists(current + ".lookahead.jsonl"):
        os.replace(current + ".lookahead.jsonl", kept + ".lookahead.jsonl")
    os.replace(current, kept)
    return name


def _earlier_runs(journal_dir: str, earlier: list, test: TestRecord, tasks: list) -> dict:
    """The runs of the earlier test phases ``earlier`` (their records; each journal's columns
    are its record's elites, its rows its record's instances) that this test phase, of
    ``test``'s elites on ``tasks``, would make again: ``{(id, Task): (cost, failure)}``."""
    from racer.storage import read_journal

    wanted = set(test.elites)
    preset: dict = {}
    for record in earlier:
        data = read_journal(os.path.join(journal_dir, record.journal))
        vectors: dict = {}  # several objectives: every one of them, by cell
        for ci, row, objective, value in data.get("objective_values") or ():
            vectors.setdefault((ci, row), {})[objective] = value
        for ci, row, value, error in data["evaluations"]:
            cid = record.elites[ci]
            if (cid not in wanted or row >= len(tasks) or row >= len(record.instances)
                    or (record.instances[row], record.seeds[row])
                    != (test.instances[row], test.seeds[row])):
                continue
            if (ci, row) in vectors and error is None:
                cell = vectors[(ci, row)]
                value = tuple(float(cell[o]) for o in sorted(cell))
            preset[(cid, tasks[row])] = (
                math.nan if value is None else value if isinstance(value, tuple)
                else float(value), error)
    return preset


def _journal_name(journal_dir: str | None, name: str) -> str | None:
    """A race's journal as the record names it (None: the races are not journaled)."""
    return None if journal_dir is None else name


_KINDS = {"c": "categorical", "o": "ordinal", "i": "integer", "r": "real"}


def _parameter_info(p) -> ParameterInfo:
    """A declared parameter as the record describes it."""
    return ParameterInfo(p.name, _KINDS[p.type], tuple(p.domain), bool(p.log))


def elites_of(result, cap: int, directions: tuple | None) -> list:
    """The elites a race leaves, best first: irace's, the ``cap`` best survivors in the
    race's order; on several objectives (``directions``), the Pareto set of
    :func:`racer.tuning.objectives.pareto_elites` (non-dominated survivors, at most ``cap``,
    thinned and ranked by crowding distance); ``cap`` is :func:`racer.tuning.objectives.elite_cap`."""
    if directions is None:
        return list(result.survivors[:min(len(result.survivors), cap)])
    front = np.asarray(result.pareto_front_indices, dtype=np.int64)
    if front.size == 0:  # no survivor with a success: irace's rule, as for one objective
        return list(result.survivors[:min(len(result.survivors), cap)])
    signs = np.array([1.0 if d == "maximize" else -1.0 for d in directions])
    chosen = pareto_elites(front, result.mean_objective_scores[front] * signs, max(cap, 1))
    return [result.candidates[int(i)] for i in chosen]


def _not_kept(alive: list, dropped: list, elites: list) -> list:
    """Survivors not kept as elites (``race_used_up``): the latest race's, best first, then
    the earlier ones neither among them nor among the elites (configurations by identity)."""
    return alive + [c for c in dropped if all(c is not x for x in alive + elites)]


# What Tuner._size_iteration answers besides (budget, configurations) or a stop reason.
_RETRY = object()  # the same iteration again, with the next session's larger budget
_SKIP = object()  # nbConfigurations cannot be paid yet: on to the next iteration (irace)


class _Budget:
    """The budget of an iterated tuning: maxExperiments, or maxTime (``timed``), and, for a
    tuning continued with a larger budget (``Settings.earlier_budgets``), each earlier
    session's budget in turn, then this one's. Where the schedule of one would stop the
    tuning for lack of budget, the next one's extra budget lets it go on (:meth:`more`), so
    the journaled iterations replay exactly as they ran and the new ones follow."""

    def __init__(self, tuner: Tuner) -> None:
        s = tuner.settings
        budget = tuner._budget()
        self.tuner = tuner
        # In runs: maxExperiments, or irace 4's minExperiments where it stands for it
        # (tuner.max_experiments); a budget in runs less the reserve may be 0, so not `budget`.
        self.timed = tuner.max_experiments <= 0
        self.limits = [*s.earlier_budgets, s.max_time if self.timed else tuner.max_experiments]
        self.at = 0
        self.budget = budget
        self.reserve = 0  # look-ahead's share of the session's maxExperiments (tuner.raced)
        if self.timed:
            tuner._time_limit = self.limits[0]
        else:
            self.budget = tuner.raced(int(self.limits[0]))
            self.reserve = int(self.limits[0]) - self.budget
        self.remaining = 0  # runs left: set once the tuning starts

    def more(self) -> bool:
        """Switch to the next session's larger budget, if there is one."""
        if self.at + 1 >= len(self.limits):
            return False
        self.at += 1
        if self.timed:
            self.tuner._time_limit = self.limits[self.at]
        else:
            raced = self.tuner.raced(int(self.limits[self.at]))
            self.remaining += raced - self.budget
            self.budget, self.reserve = raced, int(self.limits[self.at]) - raced
        return True

    def retry_or(self, reason: str):
        """:data:`_RETRY` if a larger budget follows, else ``reason`` (the tuning stops)."""
        return _RETRY if self.more() else reason

    def exhausted(self, first_race: bool):
        """None while budget remains (under maxTime, the runs left are estimated anew);
        else :data:`_RETRY` or the reason the tuning stops."""
        tuner = self.tuner
        if self.timed and not first_race:
            if tuner.time_used >= tuner._time_limit:
                return self.retry_or("time budget exhausted")
            self.remaining = tuner._runs_left()
        if self.remaining <= 0:
            return self.retry_or("budget exhausted")
        return None


@dataclasses.dataclass
class _Iterations:
    """Where an iterated tuning is: the iteration, its elites, the training tasks seen."""

    n_iterations: int  # irace moves it along when budget remains past the plan
    first_rng: Any = None  # the first iteration's sampling stream (the maxTime probe's too)
    iteration: int = 0
    elites: list = dataclasses.field(default_factory=list)
    next_id: int = 1
    n_seen: int = 0  # training tasks seen so far (always a prefix of the stream)
    seen_keys: set = dataclasses.field(default_factory=set)
    soft_restarts: list = dataclasses.field(default_factory=list)
    races: list = dataclasses.field(default_factory=list)
    stop_reason: str = "budget exhausted"
    used_before: int = 0  # experiments before the current race
    next_race: Any = None  # pipelined iterations: the next race, planned during this one
    # race_used_up: survivors not kept as elites, best first, latest race first
    dropped: list = dataclasses.field(default_factory=list)
