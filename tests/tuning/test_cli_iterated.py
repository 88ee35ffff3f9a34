"""irace's iterated racing on racer's engine, with an in-process stand-in for the target-runner
(the tuner only calls ``run``/``kill_all`` and reads ``exec_dir``), so the budget arithmetic,
elite reuse, elitist protection and resume are tested without processes."""

import numpy as np
import pytest

from racer.racing.frace import FRaceTest
from racer.tuning.dispatch import quiet_tests
from racer.tuning.tuner import BudgetError, ProtectElites, Settings, Tuner
from racer.tuning.lookahead import UNUSED
from racer.tuning.parameters import Parameter, ParameterSpace
from racer.tuning.instances import Instance
from racer.tuning.runner import RunResult
from racer.racing.base import Elimination, RaceView, RacingTest

from _helpers.tuner import SPACE, TRAIN, FakeRunner


def tuner(tmp_path, runner, prior_times=None, on_run=None, **settings):
    s = Settings(**{"max_experiments": 200, "seed": 5, "parallel": 2, **settings})
    return Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(tmp_path / "j"),
                 prior_times=prior_times, on_run=on_run)


@pytest.mark.slow
def test_budget_elites_and_reuse(tmp_path):
    runner = FakeRunner()
    t = tuner(tmp_path, runner)
    result = t.run()
    assert len(runner.calls) == result.experiments <= 200
    assert result.iterations >= 2
    # No (configuration, instance pair) is ever run twice: elites reuse their results.
    assert len(set(runner.calls)) == len(runner.calls)
    # Elites carried into a later race kept their IDs and were not run again on old pairs.
    first, later = result.races[0], result.races[1]
    carried = [c for c in later[2] if c.id <= len(first[2])]
    assert carried, "the second race raced no elite of the first"
    best = result.elites[0].values
    assert best["mode"] == "a" and abs(best["x"] - 1.0) < 1.0


@pytest.mark.slow
def test_resume_after_interruption_ends_with_the_same_elites(tmp_path):
    ref = tuner(tmp_path / "ref", FakeRunner()).run()
    broken = tuner(tmp_path / "run", FakeRunner(interrupt_after=70))
    with pytest.raises(KeyboardInterrupt):
        broken.run()
    runner = FakeRunner()
    again = tuner(tmp_path / "run", runner).run()
    assert [e.id for e in again.elites] == [e.id for e in ref.elites]
    assert [e.values for e in again.elites] == [e.values for e in ref.elites]
    assert again.experiments == ref.experiments
    # Only what was not journaled is run again: at most the 2 runs in flight are repeated.
    assert ref.experiments - 70 <= len(runner.calls) <= ref.experiments - 70 + 2


def test_too_small_budget_is_refused(tmp_path):
    with pytest.raises(BudgetError, match="too small"):
        tuner(tmp_path, FakeRunner(), max_experiments=30).run()


@pytest.mark.slow
def test_fixed_list(tmp_path):
    runner = FakeRunner()
    initial = [{"mode": "a", "x": float(x)} for x in (-3, -1, 0.9, 2, 3.5)]
    s = Settings(max_experiments=40, seed=1, fixed_list=True)
    t = Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), initial=initial,
              journal_dir=str(tmp_path / "j"))
    result = t.run()
    assert {c for c, _, _ in runner.calls} <= set(range(1, 6)) and len(runner.calls) <= 40
    assert result.elites[0].values["x"] == 0.9


class DropAllButFirst(RacingTest):
    def decide(self, view, rng):
        return [Elimination(j, "dominated", 0, 0.0) for j in range(1, len(view.ids))]

    def get_params(self):
        return {}


def test_protect_elites_only_while_on_their_instances():
    test = ProtectElites(DropAllButFirst(), n_elites=2, until=6)
    ids = np.array([3, 1, 4, 0, 2])
    early = RaceView.from_scores(np.zeros((5, 5)), ids)
    dropped = {int(ids[d.index]) for d in test.decide(early, np.random.default_rng(0))}
    assert dropped == {4, 2}  # ids 0 and 1 are the elites
    late = RaceView.from_scores(np.zeros((6, 5)), ids)
    assert {int(ids[d.index]) for d in test.decide(late, np.random.default_rng(0))} == {1, 4, 0, 2}
    assert test.get_params()["until"] == 6


def test_quiet_tests_counts_back_to_the_last_elimination():
    class R:
        def __init__(self, at):
            self.history = [type("Rec", (), {"n_instances": n})() for n in at]

    assert quiet_tests(R([6]), 9, 5, 1) == 3  # tests at 7, 8, 9 eliminated nobody
    assert quiet_tests(R([9]), 9, 5, 1) == 0
    assert quiet_tests(R([]), 5, 5, 1) == 0  # the first test does not count
    assert quiet_tests(R([]), 12, 4, 2) == 4  # tests at 6, 8, 10, 12


@pytest.mark.slow
def test_elitist_limit_shortens_races(tmp_path):
    # Without soft restarts, whose resampling would make this a test of another trajectory.
    limited = tuner(tmp_path / "a", FakeRunner(), elitist_limit=2, soft_restart=False).run()
    unlimited = tuner(tmp_path / "b", FakeRunner(), elitist_limit=0, soft_restart=False).run()
    # A race the limit ended says so (Race.stop, journaled): some in `limited`, none otherwise.
    assert any(res.stop_reason == "elitist_limit" for _, res, _ in limited.races)
    assert not any(res.stop_reason == "elitist_limit" for _, res, _ in unlimited.races)
    assert limited.iterations > unlimited.iterations  # shorter races leave budget for more


@pytest.mark.slow
def test_max_time_spreads_the_reported_time(tmp_path):
    runner = FakeRunner(timed=True)
    result = tuner(tmp_path, runner, max_experiments=0, max_time=120.0).run()
    # The budget is planned in runs of the mean time so far: spent nearly, overrun little.
    assert 0.8 * 120 <= result.time_used <= 1.1 * 120
    assert result.iterations >= 2 and result.experiments == len(runner.calls)
    assert result.stop_reason in ("time budget exhausted", "budget exhausted",
                                  "not enough budget to race more than the minimum configurations")


@pytest.mark.slow
def test_max_time_resume_reads_the_times_back(tmp_path):
    ref = tuner(tmp_path / "ref", FakeRunner(timed=True), max_experiments=0, max_time=120.0).run()
    logged = {}

    def log(iteration, config, task, res):  # what runs.csv keeps
        logged[(iteration, config.id, task.index)] = res.time

    broken = tuner(tmp_path / "run", FakeRunner(timed=True, interrupt_after=90), on_run=log,
                   max_experiments=0, max_time=120.0)
    with pytest.raises(KeyboardInterrupt):
        broken.run()
    again = tuner(tmp_path / "run", FakeRunner(timed=True), prior_times=logged,
                  max_experiments=0, max_time=120.0).run()
    assert [e.values for e in again.elites] == [e.values for e in ref.elites]
    assert again.time_used == pytest.approx(ref.time_used, rel=1e-12)


@pytest.mark.slow
def test_optuna_sampler_tunes_and_resumes(tmp_path):
    pytest.importorskip("optuna")
    from racer.tuning.sampler import OptunaSampler

    def make(folder, runner):
        s = Settings(max_experiments=200, seed=5, parallel=2)
        return Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(folder / "j"),
                     sampler=OptunaSampler(SPACE, seed=5))

    runner = FakeRunner()
    ref = make(tmp_path / "ref", runner).run()
    assert len(runner.calls) == ref.experiments <= 200 and ref.iterations >= 2
    assert all(SPACE.check(e.values) is None for e in ref.elites)
    assert all(e.parent is None for e in ref.elites)  # proposals come from the study, no parent
    assert ref.elites[0].values["mode"] == "a" and abs(ref.elites[0].values["x"] - 1.0) < 1.5
    with pytest.raises(KeyboardInterrupt):
        make(tmp_path / "run", FakeRunner(interrupt_after=80)).run()
    again = make(tmp_path / "run", FakeRunner()).run()
    assert [e.values for e in again.elites] == [e.values for e in ref.elites]


def _past_segments(result):
    """For every elitist race after the first: (n_seen, the instance IDs it met right after its
    new instance, in order)."""
    out = []
    for _, race, _ in result.races[1:]:
        ids = [t.index for t in race.instances]
        n_seen = ids[0] - 1  # the race opens with the first new task (elitistNewInstances = 1)
        out.append((n_seen, ids[1:1 + n_seen]))
    return out


@pytest.mark.slow
def test_elitist_races_meet_the_old_instances_in_a_new_random_order(tmp_path):
    # irace 3.5 (elitrace.init.instances) shuffles the instances seen before anew for every
    # race; always taking them in stream order put the first test of every iteration, which
    # judges the new configurations, on the same few old instances (racer's worse
    # choices on optim-mixed / optim-faults).
    # Look-ahead off: the races get all 400 runs (no reserve); _past_segments reads the
    # old instances after a new one, which the last race of a tuning of 396 does not have.
    result = tuner(tmp_path / "a", FakeRunner(), max_experiments=400, lookahead=False).run()
    segments = _past_segments(result)
    assert len(segments) >= 2
    for n_seen, past in segments:  # each old instance at most once (a race may stop early)
        assert len(set(past)) == len(past) and set(past) <= set(range(1, n_seen + 1))
    assert any(len(past) == n_seen >= 5 for n_seen, past in segments)
    assert any(past != sorted(past) for _, past in segments)
    orders = [tuple(past) for _, past in segments]
    firsts = {o[:3] for o in orders}
    assert len(firsts) > 1, "every race starts on the same old instances"
    # sampleInstances = 0: the stream order, as irace's 1:(next.instance - 1).
    plain = tuner(tmp_path / "b", FakeRunner(), max_experiments=400, sample_instances=False,
                  lookahead=False).run()
    for _, past in _past_segments(plain):
        assert past == list(range(1, len(past) + 1))


def test_quiet_tests_count_only_once_the_elites_are_unprotected():
    class R:
        def __init__(self, at):
            self.history = [type("Rec", (), {"n_instances": n})() for n in at]

    # irace counts a test towards elitistLimit only once no elite is protected any more
    # (race(): `!any(is.elite > 0)`, i.e. from instance elite.safe = protect_rows on).
    assert quiet_tests(R([]), 11, 5, 1, since=11) == 1
    assert quiet_tests(R([]), 12, 5, 1, since=11) == 2
    assert quiet_tests(R([]), 9, 5, 1, since=0) == 4  # the first race: nothing protected


@pytest.mark.slow
def test_elitist_races_run_past_the_elites_instances_before_the_limit(tmp_path):
    # irace 3.5: an elitist race with elitistLimit = L, after its elites' old instances are
    # covered (protect_rows = n_seen + 1), runs at least L - 1 more instances before the limit
    # can end it; quiet tests while the elites were protected do not count.
    limit = 2
    result = tuner(tmp_path, FakeRunner(), max_experiments=400, elitist_limit=limit,
                   soft_restart=False).run()
    stopped = 0
    for _, race, _ in result.races[1:]:
        if race.stop_reason != "elitist_limit":
            continue
        stopped += 1
        n_seen = race.instances[0].index - 1
        rows = int((~np.isnan(race.scores)).any(axis=1).sum())
        assert rows >= n_seen + 1 + limit - 1, (rows, n_seen)
    assert stopped


class CrashingRunner(FakeRunner):
    """FakeRunner where every configuration with x > 2 crashes (exit 1), as optim-faults'
    Nelder-Mead with a large simplex does."""

    def run(self, config_id, instance_id, seed, instance, switches):
        opts = dict(zip(switches[::2], switches[1::2]))
        if float(opts["--x"]) > 2:
            self.calls.append((config_id, instance_id, seed))
            return RunResult("error", None, None, "the target-runner exited with status 1", [], 1,
                             "", "", 0.0)
        return super().run(config_id, instance_id, seed, instance, switches)


def _used_runs():
    """``(runs, on_run)``: the target-runner calls the races used, as ``(configuration,
    instance, seed)``. A look-ahead run that no race used (status speculative-unused: how
    many there are depends on thread timing) is no experiment, so it is left out."""
    runs = []

    def on_run(iteration, config, task, res):
        if res.status != UNUSED:
            runs.append((config.id, task.index, task.seed))

    return runs, on_run


def _crashed(runs, result):
    return [c for c, _, _ in runs if any(
        cand.id == c and cand.values["x"] > 2 for _, _, cands in result.races for cand in cands)]


@pytest.mark.slow
def test_a_failed_configuration_is_rejected_after_one_run(tmp_path):
    # irace runs one instance at a time and rejects an Inf at once: a failing configuration
    # costs it one run. racer used to run it on its whole first block.
    runs, on_run = _used_runs()
    result = tuner(tmp_path / "a", CrashingRunner(), on_run=on_run, error_policy="reject").run()
    crashed = _crashed(runs, result)
    assert crashed, "no configuration crashed: the test checks nothing"
    assert len(crashed) == len(set(crashed))  # each failing configuration ran once
    # Runs not made are not experiments, and every elite is a configuration that never failed.
    assert result.experiments == len(runs) <= 200
    assert all(e.values["x"] <= 2 for e in result.elites)
    # The runs skipped do not depend on timing: the same seed skips the same, run after run
    # (where the budget does not bind: look-ahead's unused runs, paid from it, do).
    settings = dict(error_policy="reject", max_experiments=1000, n_iterations=2,
                    experiments_per_iteration=80)
    runs, on_run = _used_runs()
    first = tuner(tmp_path / "b", CrashingRunner(), on_run=on_run, **settings).run()
    again, on_run = _used_runs()
    second = tuner(tmp_path / "c", CrashingRunner(), on_run=on_run, **settings).run()
    assert sorted(again) == sorted(runs) and _crashed(runs, first)
    assert [e.id for e in second.elites] == [e.id for e in first.elites]


@pytest.mark.slow
def test_under_worst_a_failed_configuration_runs_on(tmp_path):
    runs, on_run = _used_runs()
    result = tuner(tmp_path, CrashingRunner(), on_run=on_run, error_policy="worst").run()
    crashed = _crashed(runs, result)
    assert len(crashed) > len(set(crashed))  # ranked worst, not rejected: it keeps running
    assert result.experiments == len(runs)
