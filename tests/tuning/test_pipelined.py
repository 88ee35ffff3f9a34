"""Pipelined blocks (racer.tuning.lookahead, "Pipelined blocks"): each race starts its next
blocks with the current one by rule, on any pool or executor, and charges every run started to
the budget. So the same seed gives the same elites and the same runs on 1, 16 or 256 workers,
whatever order the runs finish in and after an interruption; and no more runs start than the
budget says."""

import importlib
import os
import sys

import numpy as np
import pytest

import racer
from racer.racing.frace import FRaceTest
from racer.tuning.lookahead import UNUSED
from racer.tuning.tuner import Settings, Tuner

from _helpers import ROOT
from _helpers.tuner import SPACE, TRAIN, CountingRunner, JitteryRunner

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
simclock = importlib.import_module("_simclock")

TUNE_SPACE = 'x "" r (0, 1)\nk "" i (1, 10)\n'
INSTANCES = [round(v, 3) for v in np.linspace(0.0, 1.0, 30)]


def _evaluate(config, instance, seed):
    noise = np.random.default_rng(seed).standard_normal()
    return (config["x"] - 0.3) ** 2 + 0.02 * abs(config["k"] - 4) + instance + 0.05 * noise


def _on_simulated(workers, order_seed, pipelined=True, budget=300, seed=3, **options):
    """The tuning on ``workers`` virtual workers whose run durations (lognormal, drawn in
    submission order from ``order_seed``) set the order runs finish in."""
    ex = simclock.SimulatedExecutor(workers, simclock.lognormal(0.5, 0.8), random_state=order_seed)
    res = racer.tune(_evaluate, TUNE_SPACE, INSTANCES, budget=budget, executor=ex,
                     random_state=seed, progress=False, pipelined=pipelined, **options)
    return res, ex


def _used(res):
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    return sorted((r["iteration"], r["configuration"], r["instance_id"], r["seed"])
                  for r in rows if r["status"] != UNUSED)


@pytest.mark.parametrize("options", [{}, {"pipelined_iterations": True}],
                         ids=["blocks", "iterations"])
def test_same_elites_and_runs_on_1_16_and_256_workers_in_any_finishing_order(options):
    ref, ex1 = _on_simulated(1, 0, **options)
    assert len(ref.elite_ids) >= 1 and ref.experiments <= 300
    runs = set()
    for workers, order in [(16, 1), (16, 2), (256, 3), (256, 4)]:
        res, ex = _on_simulated(workers, order, **options)
        assert list(res.elite_ids) == list(ref.elite_ids), (workers, order)
        assert res.experiments == ref.experiments
        assert _used(res) == _used(ref)
        # Every run started is charged; on 256 workers nothing waits in a queue, so every
        # run charged was made (on one worker, runs dropped before they started were not).
        assert len(ex.trace) <= res.experiments <= 300
        if workers == 256:
            assert len(ex.trace) == res.experiments
        # A dropped run on an executor cannot be killed: it is logged with its own result
        # once it ends, unless it still runs when its race ends.
        rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
        for r in rows:
            if r["status"] == UNUSED:
                assert (r["cost"] is not None and r["cost"] == r["cost"]) or \
                    "still running when its race ended" in r["message"], r
        runs.add(tuple(r.worker for r in ex.trace[:40]))
    assert len(runs) > 1  # the orders really differed
    # racer's own thread pool, one worker: the same answer again.
    own = racer.tune(_evaluate, TUNE_SPACE, INSTANCES, budget=300, random_state=3,
                     progress=False, pipelined=True, **options)
    assert list(own.elite_ids) == list(ref.elite_ids) and own.experiments == ref.experiments


def test_pipelining_fills_the_barriers_of_a_synchronous_tuning():
    # Same seed and budget on 64 virtual workers: the pipelined tuning ends sooner; the runs
    # it did not use, if any, are charged.
    sync, ex_sync = _on_simulated(64, 0, pipelined=False, budget=600)
    pipe, ex_pipe = _on_simulated(64, 0, pipelined=True, budget=600)
    assert ex_pipe.makespan < 0.8 * ex_sync.makespan
    assert ex_pipe.utilisation() > ex_sync.utilisation()
    assert len(_used(pipe)) <= pipe.experiments <= 600
    assert len(_used(sync)) == sync.experiments


def test_runs_started_never_exceed_the_budget_and_the_answer_ignores_timing(tmp_path):
    def tune(folder, runner, parallel):
        s = Settings(max_experiments=150, seed=2, parallel=parallel, pipelined=True)
        log = []
        res = Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(folder),
                    on_run=lambda it, c, t, r: log.append((it, c.id, t.index, t.seed,
                                                           r.status))).run()
        return res, log

    one, log_one = tune(tmp_path / "one", CountingRunner(), 1)
    for k, parallel in enumerate([2, 4]):
        runner = JitteryRunner()  # runs of random length: another finishing order each time
        res, log = tune(tmp_path / f"p{k}", runner, parallel)
        assert [e.id for e in res.elites] == [e.id for e in one.elites]
        assert res.experiments == one.experiments <= 150
        assert len(runner.calls) <= 150  # a run cancelled before it started is not made
        assert (sorted(r for r in log if r[4] != UNUSED)
                == sorted(r for r in log_one if r[4] != UNUSED))
        # Made and logged once: used, or unused (charged all the same).
        assert len(set(runner.calls)) == len(runner.calls) == len(log)


@pytest.mark.parametrize("resumed_parallel", [4, 1])
def test_an_interrupted_pipelined_tuning_resumes_to_the_same_answer(tmp_path, resumed_parallel):
    def settings(parallel):
        return Settings(max_experiments=150, seed=1, parallel=parallel, pipelined=True)

    ref_log, log = [], []

    def logger(into):
        return lambda it, c, t, r: into.append((it, c.id, t.index, t.seed, r.status))

    ref = Tuner(SPACE, CountingRunner(), TRAIN, settings(4), FRaceTest(alpha=0.05),
                journal_dir=str(tmp_path / "ref"), on_run=logger(ref_log)).run()
    first = JitteryRunner(interrupt_at=90)
    with pytest.raises(KeyboardInterrupt):
        Tuner(SPACE, first, TRAIN, settings(4), FRaceTest(alpha=0.05),
              journal_dir=str(tmp_path / "run"), on_run=logger(log)).run()
    second = CountingRunner()
    again = Tuner(SPACE, second, TRAIN, settings(resumed_parallel), FRaceTest(alpha=0.05),
                  journal_dir=str(tmp_path / "run"), on_run=logger(log)).run()
    # Every run the uninterrupted tuning used is logged as used once over both sessions
    # (a run in flight at the interruption may be logged twice).
    used = [row for row in log if row[4] != UNUSED]
    ref_used = sorted(row for row in ref_log if row[4] != UNUSED)
    assert sorted(set(used)) == ref_used and len(used) <= len(ref_used) + 4
    assert [(e.id, e.values) for e in again.elites] == [(e.id, e.values) for e in ref.elites]
    assert again.experiments == ref.experiments
    # Both sessions together: the budget, plus at most the runs in flight at the interruption.
    assert len(first.calls) + len(second.calls) <= 150 + 4


def test_pipelined_is_checked():
    with pytest.raises(TypeError, match="`pipelined` must be True or False; got 2"):
        racer.tune(_evaluate, TUNE_SPACE, INSTANCES, budget=100, pipelined=2, progress=False)
    with pytest.raises(TypeError, match="`pipelined_iterations` must be True or False; got 'y'"):
        racer.tune(_evaluate, TUNE_SPACE, INSTANCES, budget=100, pipelined_iterations="y",
                   progress=False)
    with pytest.raises(ValueError, match="`pipelined_iterations` cannot be combined with `capping`"):
        racer.tune(lambda c, i, s, bound=None: (_evaluate(c, i, s), 1.0), TUNE_SPACE, INSTANCES,
                   budget=100, capping=True, bound_max=10, pipelined_iterations=True,
                   progress=False)
    # Capping needs the elites' runs of an instance before the others': nothing can run ahead.
    with pytest.raises(ValueError, match="`pipelined` cannot be combined with `capping`"):
        racer.tune(lambda c, i, s, bound=None: (_evaluate(c, i, s), 1.0), TUNE_SPACE, INSTANCES,
                   budget=100, capping=True, bound_max=10, pipelined=True, progress=False)


# ---------------------------------------------------------------- pipelined iterations


def _iterations_of_runs(res, calls, trace):
    """The iteration of each run of the simulated ``trace`` (``calls``: the evaluations in
    submission order, which the simulated executor makes when a run is submitted; a run
    cancelled before it started is in neither the trace nor the runs table)."""
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    of = {(tuple(sorted(res.configurations[r["configuration"]].items())), r["instance"],
           int(r["seed"])): r["iteration"] for r in rows}
    keys = [(values, str(instance), int(seed)) for values, instance, seed in calls]
    return [of[keys[run.index]] for run in trace]


def test_the_next_race_starts_before_the_last_one_ends():
    # racer.tuning.next_race: race j + 1's first block starts at race j's first test (the
    # tuning of benchmarks/cluster_utilisation.py, whose races go on after their first test).
    calls = []

    def evaluate(config, instance, seed):
        calls.append((tuple(sorted(config.items())), instance, seed))
        noise = np.random.default_rng(seed).standard_normal()
        return float((config["x"] - 0.3) ** 2 + 0.5 * (config["y"] - instance) ** 2
                     + 0.01 * abs(config["k"] - 4) + 0.05 * noise)

    ex = simclock.SimulatedExecutor(64, simclock.lognormal(0.5, 0.5), random_state=0)
    res = racer.tune(evaluate, 'x "" r (0, 1)\ny "" r (0, 1)\nk "" i (1, 10)\n',
                     [round(float(v), 4) for v in np.linspace(0.0, 1.0, 60)], budget=1000,
                     executor=ex, random_state=1, progress=False, pipelined_iterations=True)
    trace = sorted(ex.trace, key=lambda r: r.index)
    iteration = np.array(_iterations_of_runs(res, calls, trace))
    start = np.array([r.start for r in trace])
    end = np.array([r.end for r in trace])
    overlaps = [k for k in range(2, int(iteration.max()) + 1)
                if start[iteration == k].min() < end[iteration == k - 1].max()]
    assert len(overlaps) >= 2, overlaps
    # ... and still within the budget, every run charged.
    assert len(ex.trace) <= res.experiments <= 1000


def test_an_interruption_while_the_next_race_runs_ahead_resumes_to_the_same_answer(tmp_path):
    def settings():
        return Settings(max_experiments=500, seed=2, parallel=4, pipelined=True,
                        pipelined_iterations=True)

    # 30 instances (the 10 of TRAIN three times): races long enough to go on after their
    # first test, so that the next race starts during them.
    train = TRAIN * 3

    ref_log = []
    ref = Tuner(SPACE, CountingRunner(), train, settings(), FRaceTest(alpha=0.05),
                journal_dir=str(tmp_path / "ref"),
                on_run=lambda it, c, t, r: ref_log.append((it, c.id, t.index, t.seed, r.status))
                ).run()
    born = {}  # configuration id -> the race that sampled it
    for row in ref_log:
        born.setdefault(row[1], row[0])
    runner, log = CountingRunner(delay=0.002), []

    def interrupt_once_the_next_race_runs(it, c, t, r):
        log.append((it, c.id, t.index, t.seed, r.status))
        if any(born.get(cid) == it + 1 for cid, _, _ in runner.calls):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Tuner(SPACE, runner, train, settings(), FRaceTest(alpha=0.05),
              journal_dir=str(tmp_path / "run"), on_run=interrupt_once_the_next_race_runs).run()
    # Interrupted in race j with runs of race j + 1 started, none of them logged yet.
    j = log[-1][0]
    assert max(row[0] for row in log) == j
    assert any(born.get(cid) == j + 1 for cid, _, _ in runner.calls)
    again = Tuner(SPACE, CountingRunner(), train, settings(), FRaceTest(alpha=0.05),
                  journal_dir=str(tmp_path / "run"),
                  on_run=lambda it, c, t, r: log.append((it, c.id, t.index, t.seed, r.status))
                  ).run()
    assert [(e.id, e.values) for e in again.elites] == [(e.id, e.values) for e in ref.elites]
    assert again.experiments == ref.experiments
    used = sorted(set(row for row in log if row[4] != UNUSED))
    assert used == sorted(row for row in ref_log if row[4] != UNUSED)


def test_the_next_races_first_block_is_ordered_as_irace_orders_it_at_the_fixed_point(monkeypatch):
    # racer.tuning.next_race: the planned race's first block starts during the last race, so
    # its instances must be known then: irace's order for the instances seen by the last
    # race's first test (Task.index is a stream position plus one): elitistNewInstances (1)
    # new one first, the next of the stream, then seen ones.
    from racer.tuning import next_race
    seen = []
    plan = next_race.NextRacePlanner.plan

    def recording(self, result):
        before = self.run.n_seen
        planned = plan(self, result)
        if planned is not None and (not seen or planned is not seen[-1][0]):
            rows = result.instances[:self.rows]
            seen.append((planned, max([before] + [t.index for t in rows])))
        return planned

    monkeypatch.setattr(next_race.NextRacePlanner, "plan", recording)
    ex = simclock.SimulatedExecutor(64, simclock.lognormal(0.5, 0.5), random_state=0)
    racer.tune(_evaluate, TUNE_SPACE, INSTANCES, budget=600, executor=ex, random_state=1,
               progress=False, pipelined_iterations=True)
    assert seen
    for planned, n_seen in seen:
        first_block = planned.order[:5]  # firstTest 5: racer.tune's default
        assert first_block[0] == n_seen and max(first_block[1:]) < n_seen
        assert len(set(first_block)) == 5
