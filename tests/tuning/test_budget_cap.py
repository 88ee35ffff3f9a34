"""The budget is a hard limit on the runs started, and timing never decides the result:
look-ahead's runs that no race used are paid from a fixed reserve R of the budget B
(racer.tuning.lookahead, "Budget"), the races see B - R and count only the runs used. So a
counting runner or ``evaluate`` is never called more than B times, the same seed gives the same
elites and the same runs used whatever the run times, and a tuning with look-ahead is the
tuning of B - R without it."""

import os
import random
import time

import pytest

import racer
from racer.racing.frace import FRaceTest
from racer.tuning import lookahead
from racer.tuning.instances import Instance
from racer.tuning.lookahead import UNUSED, Lookahead
from racer.tuning.runner import RunResult
from racer.tuning.tuner import Configuration, Settings, Task, Tuner

from _helpers.tuner import SPACE, TRAIN, CountingRunner, JitteryRunner


def tune_with(tmp_path, runner, **settings):
    s = Settings(**{"max_experiments": 150, "seed": 1, "parallel": 1, **settings})
    log = []
    tuner = Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(tmp_path),
                  on_run=lambda it, cand, task, res: log.append((it, cand.id, task.index,
                                                                 task.seed, res.status)))
    return tuner.run(), log


def used(log):
    return sorted(row for row in log if row[4] != UNUSED)


def test_reserve_is_decided_from_the_settings_and_checked():
    assert [lookahead.reserve(b, p) for b, p in [(150, 1), (150, 2), (150, 4), (60, 4), (1, 3)]] \
        == [0, 4, 8, 3, 1]
    with pytest.raises(ValueError, match="`parallel` must be an int >= 1; got 0"):
        lookahead.reserve(150, 0)
    with pytest.raises(ValueError, match="`budget` must be an int >= 0; got 1.5"):
        lookahead.reserve(1.5, 2)
    # The tuner's races see B - R when look-ahead can run, B when it cannot.
    make = lambda **kw: Tuner(SPACE, CountingRunner(), TRAIN, Settings(max_experiments=150, **kw),
                              FRaceTest(), journal_dir="unused-dir")
    assert make(parallel=4).raced(150) == 142
    # A Dask or Ray executor runs nothing ahead but keeps the reserve: same races as threads.
    on_dask = Tuner(SPACE, CountingRunner(), TRAIN, Settings(max_experiments=150, parallel=4),
                    FRaceTest(), journal_dir="unused-dir", executor=object())
    assert on_dask.raced(150) == 142
    assert make(parallel=4, lookahead=False).raced(150) == 150
    assert make(parallel=1).raced(150) == 150


def _check_counts(runner, result, log, budget, parallel):
    """Every call logged once, used (an experiment) or unused; unused within the reserve,
    used within the rest; all within the budget."""
    unused = [row for row in log if row[4] == UNUSED]
    assert len(runner.calls) == len(log) == result.experiments + len(unused) <= budget
    assert len(unused) <= lookahead.reserve(budget, parallel)
    assert result.experiments <= budget - lookahead.reserve(budget, parallel)


@pytest.mark.parametrize("parallel", [2, 4])
def test_runs_started_never_exceed_max_experiments_fast(tmp_path, parallel):
    runner = JitteryRunner()
    result, log = tune_with(tmp_path, runner, parallel=parallel, seed=2)
    _check_counts(runner, result, log, 150, parallel)


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [2, 3, 4])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_runs_started_never_exceed_max_experiments(tmp_path, parallel, seed):
    runner = CountingRunner(delay=0.002)
    result, log = tune_with(tmp_path, runner, parallel=parallel, seed=seed)
    _check_counts(runner, result, log, 150, parallel)


def _outcome(result, log):
    return ([(e.id, e.values) for e in result.elites], used(log), result.experiments)


@pytest.mark.parametrize("parallel, seed", [(3, 1), (3, 3)])
def test_same_seed_same_elites_and_runs_whatever_the_timing(tmp_path, parallel, seed):
    # The budget binds (the tuning ends for lack of it: checked below) and runs take random
    # times, so look-ahead leaves other runs unused in each tuning; none of that may reach
    # the elites or the runs used. (Before the reserve, the unused runs were paid from the
    # budget the tuning's decisions saw: with these seeds, whether the last iteration was
    # raced then depended on timing, 120 or 137 runs used.)
    outcomes, unused = [], set()
    for k in range(4):
        runner = JitteryRunner()
        result, log = tune_with(tmp_path / str(k), runner, parallel=parallel, seed=seed)
        _check_counts(runner, result, log, 150, parallel)
        outcomes.append(_outcome(result, log))
        unused.add(sum(row[4] == UNUSED for row in log))
        assert "budget" in result.stop_reason  # the tuning ends for lack of budget
    assert [o[2] for o in outcomes] == [outcomes[0][2]] * 4  # runs used
    assert outcomes[1:] == [outcomes[0]] * 3
    assert max(unused) > 0  # look-ahead did run ahead and waste runs


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [2, 3, 4])
@pytest.mark.parametrize("seed", [1, 3])
def test_lookahead_is_the_tuning_of_the_budget_less_the_reserve(tmp_path, parallel, seed):
    budget = 150
    rest = budget - lookahead.reserve(budget, parallel)
    ref, ref_log = tune_with(tmp_path / "off", CountingRunner(), lookahead=False, seed=seed,
                             max_experiments=rest)
    runner = JitteryRunner()
    on, log = tune_with(tmp_path / "on", runner, parallel=parallel, seed=seed)
    _check_counts(runner, on, log, budget, parallel)
    assert _outcome(on, log) == _outcome(ref, ref_log)
    assert "budget" in on.stop_reason  # the budget binds: the tuning ends for lack of it


@pytest.mark.parametrize("resumed_parallel", [4, 2, 1])
def test_an_interrupted_tuning_resumes_with_its_unused_runs_counted(tmp_path, resumed_parallel):
    # Interrupted in its second half, then resumed: the unused runs of the first session
    # (journaled as discarded) still count, so both sessions together stay within the
    # reserve; the result is that of a tuning never interrupted, also when the resume has
    # other workers (the reserve stays the first session's, kept in the journal folder).
    parallel, budget = 4, 150
    ref, ref_log = tune_with(tmp_path / "ref", JitteryRunner(), parallel=parallel)
    first = JitteryRunner(interrupt_at=100)
    log = []
    s = Settings(max_experiments=budget, seed=1, parallel=parallel)

    def on_run(it, cand, task, res):
        log.append((it, cand.id, task.index, task.seed, res.status))

    with pytest.raises(KeyboardInterrupt):
        Tuner(SPACE, first, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(tmp_path / "run"),
              on_run=on_run).run()
    before = sum(row[4] == UNUSED for row in log)
    second = JitteryRunner()
    s = Settings(max_experiments=budget, seed=1, parallel=resumed_parallel)
    tuner = Tuner(SPACE, second, TRAIN, s, FRaceTest(alpha=0.05),
                  journal_dir=str(tmp_path / "run"), on_run=on_run)
    again = tuner.run()
    assert tuner.raced(budget) == budget - lookahead.reserve(budget, parallel)
    n_unused = sum(row[4] == UNUSED for row in log)
    assert n_unused <= lookahead.reserve(budget, parallel)
    if resumed_parallel > 1:  # the resumed races' look-ahead read the earlier unused back
        assert tuner.state["unused"] == n_unused >= before
    else:  # nothing ran ahead, so nothing more went unused
        assert n_unused == before
    assert [(e.id, e.values) for e in again.elites] == [(e.id, e.values) for e in ref.elites]
    assert again.experiments == ref.experiments
    # Runs made over both sessions: at most the budget, plus the runs in flight at the
    # interruption, made again.
    assert len(first.calls) + len(second.calls) <= budget + parallel


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
    # evaluate was called among them), at most the budget; the unused within the reserve.
    n_unused = _statuses(res.runs).count(UNUSED)
    assert calls <= res.experiments + n_unused <= 300
    assert n_unused <= lookahead.reserve(300, n_jobs)
    assert res.experiments <= 300 - lookahead.reserve(300, n_jobs)


def _jittery_evaluate(config, instance, seed):
    time.sleep(random.uniform(0.0, 0.004))  # each worker process's own unseeded stream
    return ((config["x"] - 0.3) ** 2 + (0.1 if config["k"] == "b" else 0.0) + instance
            + (seed % 97) * 1e-3)


@pytest.mark.slow
def test_tune_same_seed_same_result_with_lookahead_and_that_of_the_budget_less_the_reserve():
    kwargs = dict(random_state=7, progress=False)
    runs = [racer.tune(_jittery_evaluate, _SPACE, _INSTANCES, budget=300, n_jobs=3, **kwargs)
            for _ in range(2)]
    off = racer.tune(_jittery_evaluate, _SPACE, _INSTANCES, lookahead=False,
                     budget=300 - lookahead.reserve(300, 3), **kwargs)
    for res in runs:
        assert res.best == off.best
        assert res.elites == off.elites
        assert res.experiments == off.experiments


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


def test_reserve_workers_is_kept_and_read_back(tmp_path):
    folder = str(tmp_path / "j")
    assert lookahead.reserve_workers(folder, 3, keep=True) == 3
    assert lookahead.reserve_workers(folder, 1) == 3  # a resume on another parallel
    (tmp_path / "j" / lookahead.RESERVE_FILE).write_text('{"parallel": "x"}')
    with pytest.raises(ValueError, match="lookahead-reserve.json holds .* the tuning afresh"):
        lookahead.reserve_workers(folder, 2)
    with pytest.raises(ValueError, match="`workers` must be an int >= 1; got 0"):
        lookahead.reserve_workers(folder, 0)
    # A journal folder with races and no file: started by a racer without the reserve.
    older = tmp_path / "older"
    older.mkdir()
    (older / "iteration-1.sqlite").write_text("")
    assert lookahead.reserve_workers(str(older), 4, keep=True) == 1
    assert not (older / lookahead.RESERVE_FILE).exists()
