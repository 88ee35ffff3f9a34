"""The budget is a hard limit on the runs started: look-ahead's runs that no race used are paid
from it (racer.tuning.lookahead, "Budget"), so a counting runner or ``evaluate`` is never called
more than ``maxExperiments``/``budget`` times; when the budget does not bind, look-ahead still
changes neither the elites nor the runs used."""

import os
import random
import threading
import time

import pytest

import racer
from racer.racing.frace import FRaceTest
from racer.tuning.instances import Instance
from racer.tuning.lookahead import UNUSED, Lookahead
from racer.tuning.runner import RunResult
from racer.tuning.tuner import Configuration, Settings, Task, Tuner

from _helpers.tuner import SPACE, TRAIN


class CountingRunner:
    """cost = (x - 1)^2 + (mode b: 0.5) + instance offset + noise from (seed, config), after
    ``delay`` seconds; counts every call (a look-ahead run included)."""

    exec_dir = "."

    def __init__(self, delay=0.0):
        self.delay = delay
        self.calls = []
        self._lock = threading.Lock()

    def run(self, config_id, instance_id, seed, instance, switches):
        with self._lock:
            self.calls.append((config_id, instance_id, seed))
        if self.delay:
            time.sleep(self.delay)
        opts = dict(zip(switches[::2], switches[1::2]))
        rng = random.Random(seed * 7919 + config_id)
        cost = (float(opts["--x"]) - 1.0) ** 2 + (0.5 if opts["--mode"] == "b" else 0.0)
        cost += float(instance.name) + rng.gauss(0, 0.1)
        return RunResult("ok", cost, None, "", [], 0, "", "", 0.0)

    def kill_all(self):
        pass


def tune_with(tmp_path, runner, **settings):
    s = Settings(**{"max_experiments": 150, "seed": 1, "parallel": 1, **settings})
    log = []
    tuner = Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(tmp_path),
                  on_run=lambda it, cand, task, res: log.append((it, cand.id, task.index,
                                                                 task.seed, res.status)))
    return tuner.run(), log


def used(log):
    return sorted(row for row in log if row[4] != UNUSED)


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [2, 3, 4])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_runs_started_never_exceed_max_experiments(tmp_path, parallel, seed):
    runner = CountingRunner(delay=0.002)
    result, log = tune_with(tmp_path, runner, parallel=parallel, seed=seed)
    assert len(runner.calls) <= 150
    # Every call is logged once: used by a race (an experiment) or unused.
    unused = [row for row in log if row[4] == UNUSED]
    assert len(runner.calls) == len(log) == result.experiments + len(unused)


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [2, 4])
def test_when_the_budget_does_not_bind_lookahead_changes_nothing(tmp_path, parallel):
    # Two iterations of 60 runs each out of 1000: however many runs look-ahead wastes, the
    # budget is far away, so the races are those of one run at a time.
    settings = dict(max_experiments=1000, n_iterations=2, experiments_per_iteration=60)
    ref, ref_log = tune_with(tmp_path / "off", CountingRunner(), lookahead=False, **settings)
    runner = CountingRunner(delay=0.002)
    on, log = tune_with(tmp_path / "on", runner, parallel=parallel, **settings)
    assert [(e.id, e.values) for e in on.elites] == [(e.id, e.values) for e in ref.elites]
    assert used(log) == used(ref_log)
    assert on.experiments == ref.experiments <= len(runner.calls) <= 1000


def _counting_evaluate(path):
    def evaluate(config, instance, seed):
        # One line per call, from whichever worker process makes it (O_APPEND: whole lines).
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{seed}\n")
        return ((config["x"] - 0.3) ** 2 + (0.1 if config["k"] == "b" else 0.0) + instance
                + (seed % 97) * 1e-3)
    return evaluate


def _calls(path):
    with open(path, encoding="utf-8") as f:
        return len(f.read().split())


def _statuses(runs):
    rows = runs.to_dict("records") if hasattr(runs, "to_dict") else runs  # pandas or not
    return [row["status"] for row in rows]


_SPACE = 'x "" r (0, 1)\nk "" c (a, b, c)'
_INSTANCES = [0.1 * i for i in range(20)]


@pytest.mark.slow
@pytest.mark.parametrize("n_jobs", [2, 3, 4])
@pytest.mark.parametrize("seed", [3, 4])
def test_tune_calls_evaluate_at_most_budget_times(tmp_path, n_jobs, seed):
    path = str(tmp_path / "calls.txt")
    res = racer.tune(_counting_evaluate(path), _SPACE, _INSTANCES, budget=300, n_jobs=n_jobs,
                     random_state=seed, progress=False)
    calls = _calls(path)
    assert res.experiments <= calls <= 300
    # What the budget counts: the runs used and those logged unused (a run stopped before
    # evaluate was called among them), at most the budget.
    assert calls <= res.experiments + _statuses(res.runs).count(UNUSED) <= 300


@pytest.mark.slow
def test_tune_same_elites_with_and_without_lookahead_when_the_budget_does_not_bind(tmp_path):
    kwargs = dict(budget=1000, n_iterations=2, experiments_per_iteration=80, random_state=5,
                  progress=False)
    off = racer.tune(_counting_evaluate(str(tmp_path / "off.txt")), _SPACE, _INSTANCES,
                     lookahead=False, **kwargs)
    on = racer.tune(_counting_evaluate(str(tmp_path / "on.txt")), _SPACE, _INSTANCES, n_jobs=3,
                    **kwargs)
    assert on.best == off.best
    assert on.elites == off.elites
    assert on.experiments == off.experiments == _calls(str(tmp_path / "off.txt"))
    assert _calls(str(tmp_path / "on.txt")) <= 1000


def test_unused_runs_are_counted_again_after_a_resume(tmp_path):
    # A resumed race's look-ahead journal says which runs an earlier session made and did
    # not use: they were paid, so the count starts from them.
    cands = [Configuration(1, {"x": 0.0}), Configuration(2, {"x": 1.0})]
    tasks = [Task(k + 1, Instance(str(k)), 100 + k) for k in range(3)]
    path = str(tmp_path / "race.sqlite.lookahead.jsonl")
    logged = []
    ahead = Lookahead(path, cands, tasks, CountingRunner(), lambda *a: logged.append(a), 1)
    assert ahead.unused == 0
    done = RunResult("ok", 1.5, None, "", [], 0, "", "", 0.0)
    ahead.log_unused(cands[0], tasks[1], done, "provisional run not used")
    ahead.log_unused(cands[1], tasks[2], done, "look-ahead run not used by the race")
    ahead.close(lambda cid, task: False)
    ahead.close(lambda cid, task: False)  # a second close does nothing
    assert ahead.unused == 2 and [a[3].status for a in logged] == [UNUSED, UNUSED]
    again = Lookahead(path, cands, tasks, CountingRunner(), None, 1)
    assert again.unused == 2 and again.outstanding() == 0
    again.close()
    assert os.path.getsize(path) > 0
