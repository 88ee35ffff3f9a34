"""irace's iteration schedule is written once (racer/tuning/schedule.py), used by the one
Tuner behind the ``racer`` command, racer.tune and Optuna's IteratedRace."""

import math

import pytest

from racer.tuning.schedule import IraceSchedule, default_n_iterations
from racer.tuning.tuner import Settings, Tuner
from racer.racing.frace import FRaceTest

from _helpers.tuner import SPACE, TRAIN, FakeRunner


def test_default_iterations_follow_irace():
    # irace: nbIterations = floor(2 + log2(nbParameters)), minNbSurvival the same.
    for n in range(1, 40):
        assert default_n_iterations(n) == int(math.floor(2 + math.log2(n)))
    assert IraceSchedule(n_params=8).planned_iterations == 5
    assert IraceSchedule(n_params=8, n_iterations=2, min_survival=7).survivors == 7


def test_irace_numbers_of_computeNbConfigurations():
    # irace 3.5 computeNbConfigurations(currentBudget = 250, indexIteration = 2, mu = 5,
    # eachTest = 2, nElites = 4, nOldInstances = 9, newInstances = 1): max(5 + 2 * 2,
    # round_to_next_multiple(9 + 1, 2) = 10) = 10 instances, (250 + 4 * 9) %/% 10 = 28.
    s = IraceSchedule(n_params=4, first_test=5, each_test=2, mu=5)
    assert s.configuration_cost(2, n_seen=9) == 10
    assert s.n_configurations(250, 2, n_elites=4, n_seen=9) == 28
    assert s.n_configurations(10**7, 1) == 1024  # irace's cap


@pytest.mark.slow
def test_each_front_end_races_what_its_schedule_says(tmp_path):
    pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace

    budget, first_test = 200, 5
    settings = Settings(max_experiments=budget, seed=5, parallel=1, first_test=first_test,
                        mu=first_test)
    tuner = Tuner(SPACE, FakeRunner(), TRAIN, settings, FRaceTest(alpha=0.05),
                  journal_dir=str(tmp_path / "j"))
    assert tuner.schedule == IraceSchedule.from_scenario(settings, SPACE.n_variable)
    cli_first = tuner.run().races[0][2]

    space = {"x": FloatDistribution(-1, 1), "y": FloatDistribution(-1, 1)}
    assert len(space) == SPACE.n_variable
    iterated = IteratedRace(lambda p, i: (p["x"] - 0.3) ** 2 + p["y"] ** 2 + 0.01 * i, space,
                            list(range(10)), budget=budget, first_test=first_test,
                            random_state=0, progress=False).run()

    # IteratedRace is the same Tuner (its settings: irace's defaults, this firstTest).
    schedule = IraceSchedule.from_scenario(Settings(first_test=first_test), 2)
    expected = schedule.n_configurations(
        schedule.iteration_budget(budget, 1, schedule.planned_iterations), 1)
    assert expected > schedule.survivors  # a real race, not a degenerate one
    assert len(cli_first) == len(iterated.races[0].candidates) == expected
