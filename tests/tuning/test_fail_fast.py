"""A race's fail-fast rule (every one of the first evaluations failed: ``evaluate`` is broken)
counts the evaluations made, not those skipped: under ``on_error="reject"`` a rejected
configuration's later runs in the block are told as not run (``charge=False``), and they
once made a race whose other configurations succeed die with RaceFailedError."""

import threading
import time

import pytest

import racer
from racer.engine import Race, RaceFailedError
from racer.racing import KeepAll
from racer.racing.frace import FRaceTest
from racer.tuning.dispatch import SKIPPED
from racer.tuning.runner import RunResult
from racer.tuning.tuner import Settings, Tuner

from _helpers.tuner import SPACE, TRAIN


def test_skipped_evaluations_do_not_count_for_fail_fast():
    # Five candidates, five instances in the first block: four fail on the first instance and
    # their four later cells are told skipped (not made) before the fifth candidate answers.
    # Twenty failures are told, but only four evaluations were made and failed.
    race = Race(list(range(5)), test=KeepAll(), first_test=5, instances=range(8),
                on_error="eliminate", random_state=0)
    block = race.ask()
    for ev in block:
        if ev.candidate_index < 4 and ev.instance_index == 0:
            race.tell(ev, error="crashed")
    for ev in block:
        if ev.candidate_index < 4 and ev.instance_index > 0:
            race.tell(ev, error=SKIPPED, charge=False)
    assert race.n_evaluations == 20 and race.n_charged == 4
    for ev in block:
        if ev.candidate_index == 4:
            race.tell(ev, float(ev.instance_index))
    assert race.n_charged == 9
    assert race.survivor_indices.tolist() == [4]


def test_evaluations_made_that_all_fail_still_stop_the_race():
    # The rule itself is kept: ten evaluations made, ten failures.
    race = Race(list(range(5)), test=KeepAll(), first_test=5, instances=range(8),
                on_error="worst", random_state=0)
    with pytest.raises(RaceFailedError, match="after 10 evaluations"):
        for ev in race.ask():
            race.tell(ev, error="crashed")


class MostlyFailingRunner:
    """Configurations with x > -3.5 fail at once; the others succeed, their first run only
    some time after four failures have answered, so that the rejected configurations' skipped runs are
    told before any success (what a slow good configuration does on two workers)."""

    exec_dir = "."

    def __init__(self):
        self.failures = 0
        self.four_failed = threading.Event()
        self.lock = threading.Lock()

    def run(self, config_id, instance_id, seed, instance, switches):
        opts = dict(zip(switches[::2], switches[1::2]))
        x = float(opts["--x"])
        if x > -3.5:
            with self.lock:
                self.failures += 1
                if self.failures >= 4:
                    self.four_failed.set()
            return RunResult("error", None, None, "the target-runner exited with status 1",
                             [], 1, "", "", 0.0)
        if not self.four_failed.is_set():
            self.four_failed.wait(timeout=10)
            time.sleep(0.3)  # while the failures, then their skipped runs, are told
        return RunResult("ok", x * x + float(instance.name), None, "", [], 0, "", "", 0.0)

    def kill_all(self):
        pass


@pytest.mark.slow
def test_reject_on_two_workers_goes_on_when_one_configuration_succeeds(tmp_path):
    initial = [{"mode": "a", "x": x} for x in (-3.9, 0.0, 1.0, 2.0, 3.0)]
    runner = MostlyFailingRunner()
    settings = Settings(max_experiments=60, seed=1, parallel=2, error_policy="reject",
                        fixed_list=True, lookahead=False, first_test=5)
    tuner = Tuner(SPACE, runner, TRAIN, settings, FRaceTest(alpha=0.05), initial=initial,
                  journal_dir=str(tmp_path))
    result = tuner.run()
    assert runner.four_failed.is_set()
    assert [e.values["x"] for e in result.elites] == [-3.9]
    # One run of each rejected configuration, then the first block of the good one, which
    # is then the only one left.
    assert result.experiments == 4 + 5 and result.stop_reason == "min_survivors"


@pytest.mark.slow
def test_tune_reject_with_two_jobs_goes_on_when_one_configuration_succeeds():
    # The call that died with "every evaluation failed ... after 10 evaluations": the good
    # configuration answers last (it sleeps), the four others fail at once.
    def evaluate(config, instance, seed):
        if config["x"] > 0.25:
            raise RuntimeError("boom")
        time.sleep(0.3 if instance == 0.0 else 0.0)
        return config["x"] + instance

    initial = [{"x": 0.1}, {"x": 0.5}, {"x": 0.6}, {"x": 0.7}, {"x": 0.8}]
    res = racer.tune(evaluate, 'x "" r (0, 1)', [0.1 * i for i in range(10)], budget=60,
                     on_error="reject", n_jobs=2, initial=initial, random_state=1,
                     progress=False, sample_instances=False)
    assert res.best["x"] <= 0.25
    assert res.experiments <= 60
