"""irace's iterated racing on racer's engine, and the race of a fixed list of configurations.

Each iteration is one :class:`racer.Race` of the elites and new configurations sampled around
them (:mod:`racer.cli.sampler`), journaled to ``<execDir>/racer-journal/iteration-<k>.sqlite``;
the budget is spread over iterations as irace 3.5 does (``computeComputationalBudget``,
``computeNbConfigurations``; see docs/cli.md). Elites keep their results: a later race meets
an instance an elite has already run on and the elite's cost is taken from the earlier race
instead of running it again, elites cannot be eliminated before they have covered the
instances they have results for, and with ``elitistLimit`` the race ends after that many
consecutive tests without elimination (irace's elitist races). Soft restarts as irace
(:mod:`racer.cli.sampler`). A tuning continued with a larger budget
(``Settings.earlier_budgets``, :mod:`racer.cli.resume`) replays each earlier session under its
own budget, then goes on where that budget's schedule stopped.

Each race is driven by the one race loop (:func:`racer.race_loop.drive`) with the command
line's back end, :mod:`racer.cli.dispatch`: runs go to a thread pool of ``parallel`` threads,
each running one target-runner process; results are told to the race as they arrive (no
polling). A race is
block-synchronous (every survivor on the same instances, then a test); so that workers do not
idle at the end of every block, runs of the next block are started ahead
(:mod:`racer.cli.lookahead`) and cancelled or killed when the test eliminates their
configuration.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import math
import os
from typing import Any, Callable

import numpy as np

from racer._irace_schedule import IraceSchedule
from racer.racing.base import KeepAll, ProtectElites, RacingTest
from racer.race import Race
from racer.cli.parameters import ParameterSpace, format_value
from racer.cli.dispatch import RacePlan, drive_race, real_cells, real_runs, speculates, told
from racer.cli.lookahead import Lookahead
from racer.cli.sampler import Sampler
from racer.cli.scenario import Instance
from racer.cli.target_runner import TargetRunner, TargetRunnerError

__all__ = ["Configuration", "Task", "Settings", "Tuner", "TuningResult", "BudgetError",
           "KeepAll", "ProtectElites"]

JOURNAL_DIR = "racer-journal"


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
    # racer: start runs of the next block while workers would idle (racer.cli.lookahead). On
    # by default: same elites, same runs used, shorter wall time; the price is runs of
    # configurations the test then eliminates (killed, logged as unused, not counted in the
    # budget). Off (--no-lookahead) for runners whose every run costs money. Only with
    # racer's own thread pool (racer.cli.dispatch.speculates).
    lookahead: bool = True
    # racer: the budgets (maxExperiments, or maxTime with max_time) of the earlier sessions
    # of a tuning continued with a larger budget, oldest first (racer.cli.resume). The tuner
    # replays each session under its own budget, then goes on with this one's.
    earlier_budgets: tuple = ()


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


def _derived_seed(*key: int) -> int:
    return int(np.random.SeedSequence(list(key)).generate_state(1, dtype=np.uint64)[0] >> 1)


class Tuner:
    """Runs the whole tuning: iterated races (or one race of a fixed list), then the test.

    Parameters
    ----------
    space : ParameterSpace
    runner : TargetRunner
    train : list of Instance
    settings : Settings
    test : RacingTest
        The racing test of every race (irace's default: ``FRaceTest("conover")``).
    initial : list of dict, optional
        Configurations from ``configurationsFile``.
    test_instances : list of Instance, optional
    journal_dir : str
        Where each race's SQLite journal goes; the same command resumes from it.
    on_run : callable, optional
        Called with ``(iteration, configuration, task, RunResult)`` for every target-runner
        call (the CSV log), before the result is told to the race; a look-ahead run
        (``settings.lookahead``) when the race uses it, or, if it never does, with the status
        ``"speculative-unused"`` (:data:`racer.cli.lookahead.UNUSED`) when it is dropped.
    progress : callable, optional
        Called with a dict of the state after every result.
    executor : concurrent.futures.Executor, optional
        Where runs go (a Dask ``client.get_executor()``, a
        :class:`~racer.cli.ray_executor.RayExecutor`...); default: a thread pool of
        ``settings.parallel`` threads, each running one target-runner process.
    sampler : Sampler, optional
        irace's model (default) or an :class:`~racer.cli.sampler.OptunaSampler`.
    winner : str or None
        ``Race(winner=...)``: "rank_sum" (irace's order, for the F-test), "mean", or None
        (the rule the test states).
    """

    def __init__(self, space: ParameterSpace, runner: TargetRunner, train: list,
                 settings: Settings, test: RacingTest, *, initial: list | None = None,
                 test_instances: list | None = None, journal_dir: str,
                 on_run: Callable | None = None, progress: Callable | None = None,
                 winner: str | None = "rank_sum", metadata: dict | None = None,
                 prior_times: dict | None = None, sampler: Sampler | None = None,
                 executor: cf.Executor | None = None) -> None:
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
        # irace's schedule (racer/_irace_schedule.py, shared with Optuna's IteratedRace).
        self.schedule = IraceSchedule.from_scenario(settings, space.n_variable)
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
        # maxTime in force: an earlier session's while its iterations are replayed.
        self._time_limit = settings.max_time
        self._timed: set = set()
        self._tasks: list[Task] = []
        self.state: dict = {"iteration": 0, "experiments": 0, "budget": settings.max_experiments}

    # ------------------------------------------------------------------ instances

    def task(self, k: int) -> Task:
        """Task ``k`` (0-based) of the training stream: the instance list repeated (shuffled
        per repetition with ``sampleInstances``), each pair with its own seed."""
        n = len(self.train)
        while len(self._tasks) <= k:
            rep = len(self._tasks) // n
            rng = np.random.default_rng([self.settings.seed, 1, rep])
            order = rng.permutation(n) if self.settings.sample_instances else np.arange(n)
            seeds = rng.integers(1, 2**31 - 1, size=n)
            for pos in range(n):
                self._tasks.append(Task(len(self._tasks) + 1, self.train[int(order[pos])], int(seeds[pos])))
        return self._tasks[k]

    def tasks(self, start: int, stop: int) -> list[Task]:
        return [self.task(k) for k in range(start, stop)]

    def n_tasks_available(self, remaining: int) -> int:
        if self.settings.deterministic:
            return len(self.train)
        # irace makes ceiling(remaining / minSurvival) pairs available.
        return max(len(self.train), int(math.ceil(remaining / max(self.min_survival, 1))))

    # ------------------------------------------------------------------ one race

    def _journal(self, name: str) -> str:
        os.makedirs(self.journal_dir, exist_ok=True)
        return os.path.join(self.journal_dir, name)

    def run_race(self, iteration: int, candidates: list, tasks: list, *, budget: int | None,
                 min_survivors: int, test: RacingTest, first_test: int, journal: str,
                 pool: cf.Executor, max_total: int | None, elitist_limit: int = 0,
                 protect_rows: int = 0, preset: dict | None = None) -> Any:
        """One race. ``elitist_limit`` > 0 ends it (irace's elitist races) once that many
        consecutive tests after instance ``first_test`` eliminated nobody, but not before
        ``protect_rows`` instances (those the elites have results for) are done."""
        settings = self.settings
        race = Race(
            candidates, test=test, direction="minimize", budget=budget, first_test=first_test,
            each_test=settings.each_test, min_survivors=min_survivors, instances=tasks,
            on_error="worst" if settings.error_policy == "worst" else "eliminate",
            winner=self.winner, random_state=_derived_seed(settings.seed, 4, iteration),
            storage=self._journal(journal), metadata={**self.metadata, "iteration": iteration},
        )
        cached_before = dict(self.cache)
        used_before = self.experiments
        plan = RacePlan(iteration, candidates, tasks, first_test, settings.each_test,
                        min_survivors, max_total, cached_before, preset or {}, used_before,
                        elitist_limit, protect_rows)
        ahead = None
        if speculates(settings, self.executor):
            ahead = Lookahead(self._journal(journal) + ".lookahead.jsonl", candidates, tasks,
                              self.runner, self.on_run, iteration)
        try:
            drive_race(self, race, plan, pool, ahead)
            self.experiments = used_before + real_runs(race, cached_before)
            result = race.result()
            if ahead is not None:
                ahead.close(told(result))
                ahead = None
        finally:
            if ahead is not None:  # interrupted: keep the look-ahead journal for the resume
                ahead.close()
            race.close()
        for ci, cand in enumerate(candidates):
            for row, task in enumerate(result.instances):
                value = result.scores[row, ci]
                if not np.isnan(value):
                    self.cache[(cand.id, task)] = (float(value), None)
        for ci, row, message in result.failures:
            self.cache[(candidates[ci].id, result.instances[row])] = (math.nan, message)
        if iteration > 0:
            for cand, task in real_cells(result, cached_before):
                key = (iteration, cand.id, task.index)
                if key not in self._timed:
                    self._timed.add(key)
                    self.time_used += self.run_times.get(key, 0.0)
        return result

    # ------------------------------------------------------------------ the tuning

    def _past_order(self, iteration: int, n_seen: int) -> list[int]:
        """The order in which an elitist race meets the ``n_seen`` tasks seen before: shuffled
        anew for every race with ``sampleInstances`` (irace 3.5's ``elitrace.init.instances``:
        ``sample.int(next.instance - 1)``), so that the first test of each iteration, which
        judges the new configurations, does not always fall on the same few old instances."""
        if not self.settings.sample_instances:
            return list(range(n_seen))
        rng = np.random.default_rng([self.settings.seed, 6, iteration])
        return [int(k) for k in rng.permutation(n_seen)]

    def _new_configurations(self, values_list: list, parents: list, next_id: int) -> list:
        return [Configuration(next_id + i, dict(v), p) for i, (v, p) in enumerate(zip(values_list, parents))]

    def run(self) -> TuningResult:
        s = self.settings
        workers = max(1, s.parallel)
        own = self.executor is None
        pool = (cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="racer-run")
                if own else self.executor)
        try:
            try:
                if s.fixed_list:
                    result = self._fixed(pool)
                else:
                    result = self._iterated(pool)
                if self.test_instances and result.elites:
                    result.test = self._test_phase(pool, result.elites[: max(1, s.test_n_elites)])
            except BaseException:
                self.runner.kill_all()
                raise
        finally:
            if own:
                pool.shutdown(wait=True, cancel_futures=True)
        result.time_used = self.time_used
        return result

    def _budget(self) -> int:
        if self.settings.max_experiments > 0:
            return self.settings.max_experiments
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
            res = self.runner.run(1, task.index, task.seed, task.instance,
                                  self.space.command_line(values))
            if self.on_run is not None:
                self.on_run(1, config, task, res)
            if res.status == "error" and self.settings.error_policy == "stop":
                raise TargetRunnerError(res, self.runner.exec_dir)
            if res.time is not None:
                self.run_times[key] = res.time
            cost = (res.cost, None) if res.status == "ok" else (math.nan, res.message)
        self._probe_time = self.run_times.get(key, 0.0)
        return {(1, task): cost} if cost is not None else {}

    def _fixed(self, pool) -> TuningResult:
        s = self.settings
        if not self.initial:
            raise BudgetError("a fixed list needs configurationsFile with at least one configuration")
        cands = self._new_configurations(self.initial, [None] * len(self.initial), 1)
        budget = self._budget()
        first = min(max(s.first_test, 1), self.n_tasks_available(budget))
        if budget < len(cands) * first:
            raise BudgetError(
                f"maxExperiments = {budget} cannot pay for the first test: {len(cands)} "
                f"configurations x firstTest = {first} instances = {len(cands) * first} runs")
        tasks = self.tasks(0, self.n_tasks_available(budget))
        self.state.update(iteration=1, planned=1, budget=budget)
        result = self.run_race(1, cands, tasks, budget=budget, min_survivors=s.min_survival or 1,
                               test=self.test, first_test=first, journal="fixed-list.sqlite",
                               pool=pool, max_total=budget)
        return TuningResult(list(result.survivors), 1, self.experiments, result.stop_reason,
                            [(1, result, cands)], planned_iterations=1)

    def _iterated(self, pool) -> TuningResult:
        s = self.settings
        budget = self._budget()
        timed = budget == 0
        # A tuning continued with a larger budget (Settings.earlier_budgets): each earlier
        # session's budget in turn, then this one's. Where the schedule of one would stop the
        # tuning for lack of budget, the next one's extra budget lets it go on, so the
        # journaled iterations replay exactly as they ran and the new ones follow.
        limits = [*s.earlier_budgets, s.max_time if timed else budget]
        limit_at = 0
        if timed:
            self._time_limit = limits[0]
        else:
            budget = int(limits[0])
        preset: dict = {}
        first_rng = np.random.default_rng([s.seed, 3, 1])
        first_values = None
        if timed:
            first_values = dict(self.initial[0]) if self.initial else self.sampler.sample_uniform(1, first_rng)[0]
            preset = self._probe(first_values)
            mean = max(self._probe_time, s.min_measurable_time)
            remaining = max(0, int(round((self._time_limit - self._probe_time) / mean)))
        else:
            remaining = budget

        def more_budget() -> bool:
            """Switch to the next session's larger budget, if there is one."""
            nonlocal limit_at, budget, remaining
            if limit_at + 1 >= len(limits):
                return False
            limit_at += 1
            if timed:
                self._time_limit = limits[limit_at]
            else:
                remaining += int(limits[limit_at]) - budget
                budget = int(limits[limit_at])
            return True
        schedule = self.schedule
        mu = schedule.instances_per_configuration
        n_iterations = self.n_iterations
        elites: list[Configuration] = []
        next_id = 1
        n_seen = 0  # training tasks seen so far (always a prefix of the stream)
        seen_keys: set = set()
        soft_restarts: list = []
        races = []
        stop_reason = "budget exhausted"
        iteration = 0
        while True:
            iteration += 1
            first_race = iteration == 1
            if timed and not first_race:
                if self.time_used >= self._time_limit:
                    if more_budget():
                        iteration -= 1  # the same iteration, with the larger budget
                        continue
                    stop_reason = "time budget exhausted"
                    break
                remaining = self._runs_left()
            if remaining <= 0:
                if more_budget():
                    iteration -= 1
                    continue
                stop_reason = "budget exhausted"
                break
            if iteration > n_iterations:
                if s.n_iterations == 0:
                    n_iterations = iteration
                else:
                    stop_reason = "limit of iterations reached"
                    break
            current = (s.experiments_per_iteration or
                       schedule.iteration_budget(remaining, iteration, n_iterations))
            n_elites = len(elites)
            elitist = s.elitist and not first_race
            n_conf = schedule.n_configurations(current, iteration, n_elites,
                                               n_seen if elitist else None)
            if s.n_configurations > 0:
                if s.n_configurations <= n_conf:
                    n_conf = s.n_configurations
                elif current < remaining:
                    continue
                elif more_budget():
                    iteration -= 1
                    continue
                else:
                    stop_reason = "not enough budget to enforce nbConfigurations"
                    break
            if n_conf <= self.min_survival:
                if first_race:
                    raise BudgetError(
                        f"maxExperiments = {budget} is too small: the first iteration could race "
                        f"only {n_conf} configurations, not more than minNbSurvival = "
                        f"{self.min_survival}; irace would need about "
                        f"{(self.min_survival + 1) * n_iterations * (mu + 5 * s.each_test)} runs")
                if more_budget():
                    iteration -= 1
                    continue
                stop_reason = "not enough budget to race more than the minimum configurations"
                break
            if first_race:
                initial = self.initial[:n_conf]
            elif n_conf <= n_elites:
                if more_budget():
                    iteration -= 1
                    continue
                stop_reason = "not enough budget left to race newly sampled configurations"
                break
            if s.elitist and not first_race:
                need = (n_conf - n_elites) * mu + n_elites * min(s.elitist_new_instances, mu)
            else:
                need = n_conf * mu
            if need > current:
                if first_race:
                    raise BudgetError(f"maxExperiments = {budget} cannot pay for the first race "
                                      f"({n_conf} configurations x {mu} instances)")
                if more_budget():
                    iteration -= 1
                    continue
                stop_reason = "not enough budget to race all configurations up to the first test"
                break
            rng = first_rng if first_race else np.random.default_rng([s.seed, 3, iteration])
            if first_race:
                new_values = [dict(v) for v in initial]
                if first_values is not None and not initial:
                    new_values = [first_values]  # the probe's configuration is configuration 1
                for v in new_values:
                    seen_keys.add(self.sampler.key(v))
                new_values += self.sampler.sample_uniform(n_conf - len(new_values), rng, seen_keys)
                parents = [None] * len(new_values)
            else:
                n_new = n_conf - n_elites
                self.sampler.update_model(elites, iteration, n_iterations, n_new, elitist=s.elitist)
                seen_before = set(seen_keys)
                got = self.sampler.sample_model(elites, n_new, rng, seen_keys)
                if s.soft_restart:
                    # irace's soft restart: near-copies in the race mean the model has
                    # collapsed; widen it and sample this iteration's configurations again
                    # (the first sample is discarded, as irace does).
                    threshold = (10.0 ** -self.space.digits if s.soft_restart_threshold is None
                                 else s.soft_restart_threshold)
                    race_confs = elites + self._new_configurations(
                        [v for v, _ in got], [p for _, p in got], next_id)
                    similar = self.sampler.similar(race_confs, threshold)
                    if similar:
                        self.sampler.soft_restart(race_confs, similar, n_new)
                        soft_restarts.append(iteration)
                        seen_keys = seen_before
                        got = self.sampler.sample_model(elites, n_new, rng, seen_keys)
                new_values = [v for v, _ in got]
                parents = [p for _, p in got]
            new = self._new_configurations(new_values, parents, next_id)
            next_id += len(new)
            candidates = elites + new
            available = self.n_tasks_available(remaining)
            if first_race or not s.elitist:
                start = n_seen if not s.elitist else 0
                order = list(range(start, max(available + start, start)))
                if s.deterministic:
                    order = list(range(0, len(self.train)))
            else:
                k = s.elitist_new_instances
                stop_new = min(n_seen + k, max(available, n_seen))
                order = (list(range(n_seen, stop_new)) + self._past_order(iteration, n_seen)
                         + list(range(stop_new, max(available, stop_new))))
            tasks = [self.task(i) for i in order]
            if len(tasks) < s.first_test:
                raise BudgetError(f"only {len(tasks)} training instances for firstTest = {s.first_test}")
            # The progress line counts against what the header announced (self.n_iterations),
            # not against n_iterations, which irace moves along when it runs past the plan.
            self.state.update(iteration=iteration, planned=self.n_iterations, budget=budget)
            used_before = self.experiments
            protect_rows = 0
            test = self.test
            if s.elitist and not first_race and n_elites:
                protect_rows = min(n_seen + s.elitist_new_instances, len(tasks))
                test = ProtectElites(self.test, n_elites, protect_rows)
            result = self.run_race(
                iteration, candidates, tasks,
                budget=schedule.race_budget(current, len(candidates), n_elites if elitist else 0,
                                            n_seen),
                min_survivors=self.min_survival, test=test, first_test=s.first_test,
                journal=f"iteration-{iteration}.sqlite", pool=pool, max_total=None if timed else budget,
                elitist_limit=s.elitist_limit if s.elitist else 0, protect_rows=protect_rows,
                preset=preset if first_race else None)
            races.append((iteration, result, candidates))
            observe = getattr(self.sampler, "observe", None)
            if observe is not None:
                observe(candidates, result)
            if not timed:
                remaining -= self.experiments - used_before
            n_seen = max(n_seen, max((order[r] + 1 for r in range(_rows_run(result))), default=0))
            for ci, row, _ in result.failures:
                seen_keys.add(self.sampler.key(candidates[ci].values))
            n_keep = min(len(result.survivors), self.min_survival)
            elites = list(result.survivors[:n_keep])
            if first_race:
                self.sampler.init_model(elites)
            if self.experiments - used_before == 0 and not more_budget():
                stop_reason = "no runs possible within the remaining budget"
                break
        return TuningResult(elites, len(races), self.experiments, stop_reason, races,
                            soft_restarts=soft_restarts, planned_iterations=self.n_iterations)

    def _test_phase(self, pool, elites: list) -> dict:
        rng = np.random.default_rng([self.settings.seed, 5])
        seeds = rng.integers(1, 2**31 - 1, size=len(self.test_instances))
        tasks = [Task(i + 1, inst, int(seeds[i])) for i, inst in enumerate(self.test_instances)]
        self.state.update(iteration="test")
        result = self.run_race(0, list(elites), tasks, budget=None, min_survivors=1,
                               test=KeepAll(), first_test=len(tasks), journal="test.sqlite",
                               pool=pool, max_total=None,
                               preset=self._earlier_tests(elites, tasks))
        costs = {c.id: [None if np.isnan(v) else float(v) for v in result.scores[:, i]]
                 for i, c in enumerate(result.candidates)}
        return {"tasks": tasks, "costs": costs, "result": result}


    def _earlier_tests(self, elites: list, tasks: list) -> dict:
        """The test runs of earlier sessions of a continued tuning, for elites tested again.

        A continued tuning (a larger budget) may end with other elites than the session whose
        test phase already ran: that test journal is then kept as ``test-earlier-<k>.sqlite``
        and the test phase runs on the new elites, taking the runs already made (an elite
        still among them, the same test instance and seed) from the earlier journals instead
        of running them again. Returns ``{(configuration id, Task): (cost, failure)}``."""
        from racer.storage import Journal, read_journal

        current = os.path.join(self.journal_dir, "test.sqlite")
        reprs = [repr(e) for e in elites]
        if os.path.exists(current):
            fingerprint = read_journal(current)["fingerprint"]
            if fingerprint is not None and fingerprint["candidates"] != reprs:
                Journal(current, arg="test journal").close()  # one file: its WAL checkpointed
                k = 1
                while os.path.exists(os.path.join(self.journal_dir, f"test-earlier-{k}.sqlite")):
                    k += 1
                kept = os.path.join(self.journal_dir, f"test-earlier-{k}.sqlite")
                if os.path.exists(current + ".lookahead.jsonl"):  # its look-ahead runs too
                    os.replace(current + ".lookahead.jsonl", kept + ".lookahead.jsonl")
                os.replace(current, kept)
        by_repr = dict(zip(reprs, elites))
        task_reprs = [repr(t) for t in tasks]
        preset: dict = {}
        for name in sorted(os.listdir(self.journal_dir)):
            if not (name.startswith("test-earlier-") and name.endswith(".sqlite")):
                continue
            data = read_journal(os.path.join(self.journal_dir, name))
            if data["fingerprint"] is None:
                continue
            cands = data["fingerprint"]["candidates"]
            for ci, row, value, error in data["evaluations"]:
                elite = by_repr.get(cands[ci])
                if (elite is None or row >= len(tasks) or row >= len(data["instances"])
                        or data["instances"][row] != task_reprs[row]):
                    continue
                preset[(elite.id, tasks[row])] = (
                    math.nan if value is None else float(value), error)
        return preset


def _rows_run(result) -> int:
    """Rows of ``result`` with at least one evaluation (a race stopped before a block it
    could not pay has that block's rows registered but not run)."""
    done = ~np.isnan(result.scores)
    for ci, row, _ in result.failures:
        done[row, ci] = True
    rows = np.flatnonzero(done.any(axis=1))
    return int(rows[-1]) + 1 if rows.size else 0


