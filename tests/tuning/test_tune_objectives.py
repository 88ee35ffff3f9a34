"""``racer.tune`` on several objectives: ``direction=[...]``, an
``evaluate`` returning one number per objective, the Pareto front of the result."""

import numpy as np
import pytest

import racer
from racer.stats.pareto import nondominated_mask

SPACE = 'x "" r (0, 1)'
TRAIN = [0.01 * k for k in range(10)]


def trade_off(config, instance, seed):
    """Error best at x = 0, size best at x = 1 (maximised as 1 - size): every x is
    Pareto-optimal."""
    x = config["x"]
    noise = np.random.default_rng(seed).normal(0, 0.02, 2)
    return (x ** 2 + instance + noise[0], 1 - (1 - x) ** 2 + noise[1])


def tune(**kwargs):
    options = dict(budget=200, random_state=1, progress=False,
                   direction=["minimize", "minimize"])
    options.update(kwargs)
    return racer.tune(trade_off, SPACE, TRAIN, **options)


@pytest.mark.slow
def test_the_result_holds_the_pareto_front_and_its_objective_vectors():
    res = tune(direction=["minimize", "maximize"], test_instances=[0.5, 0.6])
    # The same dicts of the same result (no arithmetic between them): equality is exact.
    assert res.pareto_front == res.elites and res.best == res.elites[0]
    means = np.array(res.pareto_objectives)
    assert means.shape == (len(res.elites), 2)
    # Non-dominated on the means (error minimised, the second objective maximised).
    assert nondominated_mask(means * [-1, 1]).all()
    # The means are those of the runs: the first elite's error mean over its runs in the
    # last iteration matches the formula up to the noise.
    xs = np.array([c["x"] for c in res.pareto_front])
    assert np.allclose(means[:, 1], 1 - (1 - xs) ** 2, atol=0.05)
    # The front spans the trade-off (the ends are kept first).
    assert xs.max() - xs.min() > 0.3
    # Test phase: every elite of the front, k values per test instance.
    assert set(res.test) == set(res.elite_ids)
    assert all(len(v) == 2 for costs in res.test.values() for v in costs)
    # runs: the first objective is `cost`, each objective has its column.
    ok = res.runs[res.runs.status == "ok"]
    assert (ok["cost"] == ok["cost.objective1"]).all() and ok["cost.objective2"].notna().all()


@pytest.mark.slow
def test_the_same_seed_gives_the_same_front():
    a, b = tune(), tune()
    # Same computation, same seed, same machine: bit-identical by racer's contract.
    assert a.pareto_front == b.pareto_front and a.pareto_objectives == b.pareto_objectives


@pytest.mark.slow
def test_one_objective_is_unchanged():
    one = racer.tune(lambda c, i, s: (c["x"] - 0.3) ** 2 + i, SPACE, TRAIN, budget=200,
                     random_state=1, progress=False)
    assert one.pareto_front == [one.best] and one.pareto_objectives is None
    assert "cost.objective1" not in one.runs.columns


def test_an_evaluate_returning_the_wrong_count_stops_naming_it():
    with pytest.raises(racer.EvaluationError, match=r"evaluate returned 0\.5; expected 2 numbers"):
        racer.tune(lambda c, i, s: 0.5, SPACE, TRAIN, budget=200, random_state=1,
                   progress=False, direction=["minimize", "minimize"])


@pytest.mark.slow
def test_max_time_reads_the_time_after_the_objectives():
    res = racer.tune(lambda c, i, s: (*trade_off(c, i, s), 0.5), SPACE, TRAIN, max_time=60,
                     random_state=1, progress=False, direction=["minimize", "minimize"])
    tuning = res.runs[res.runs.iteration > 0]
    assert (tuning["time"] == 0.5).all() and len(tuning) <= 60 / 0.5


@pytest.mark.parametrize("direction, error, words", [
    ("maximize", ValueError, "one objective is minimised"),
    (["minimize", "best"], ValueError, "direction[1]"),
    ([], ValueError, "at least one objective"),
])
def test_bad_directions_are_refused_naming_the_argument(direction, error, words):
    with pytest.raises(error) as info:
        tune(direction=direction)
    assert words in str(info.value)


def test_a_single_objective_racing_test_is_refused():
    with pytest.raises(ValueError, match="compares one cost per run"):
        tune(test="F-test")


@pytest.mark.slow
def test_the_front_keeps_up_to_twice_irace_elites():
    # Noise-free and every x Pareto-optimal: every survivor is on the front, so the elites
    # are exactly the cap. One parameter: minNbSurvival = 2 + log2(1) = 2 (irace), so the
    # Tuner keeps 2 x 2 = 4 on two objectives (elites_of's decision) where one objective
    # would keep 2.
    def exact(config, instance, seed):
        x = config["x"]
        return (x ** 2 + instance, (1 - x) ** 2)

    res = racer.tune(exact, SPACE, TRAIN, budget=200, random_state=1, progress=False,
                     direction=["minimize", "minimize"])
    assert len(res.pareto_front) == 4
    one = racer.tune(lambda c, i, s: exact(c, i, s)[0], SPACE, TRAIN, budget=200,
                     random_state=1, progress=False)
    assert len(one.elites) == 2


@pytest.mark.parametrize("value, status", [
    ((1.0, float("inf")), "inf"),   # the worst value there is: the configuration is rejected
    ((1.0, -float("inf")), "error"),  # better than any value: no measurement
    ((float("-inf"), 1.0), "inf"),  # the first objective is maximised below
    ((1.0, 2.0), "ok"),
])
def test_an_infinite_objective_rejects_or_fails_as_the_target_runner_does(value, status):
    from racer.tuning.runner import _read_value

    got = _read_value(value, False, ("maximize", "minimize") if value[0] == float("-inf")
                      else ("minimize", "minimize"))
    assert got[0] == status
