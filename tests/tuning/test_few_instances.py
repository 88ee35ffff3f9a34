"""Deterministic tunings on few instances (five CV folds, five seeds of a table).

irace's schedule budgets ``mu + 5 eachTest`` instances per configuration and tests after
``firstTest = 5`` of them, whatever the number of instances: on five deterministic instances
racer raced half the configurations it could afford, never tested anything, and left up to a
fifth of the budget unspent. These tests pin racer's departures (racer/tuning/schedule.py:
``IraceSchedule.configuration_cost``'s cap and ``default_first_test``; the model's top-up in
``Tuner._new_values``; ``racer.tuning.record.rank_final``); each fails on the code before
them. The race that cannot pay its first block is pinned on a ground-truth table
(tests/benchmarks/test_ground_truth_benchmark.py), where it was seen.
"""

import warnings

import pytest

import racer
from racer.tuning.run import _first_test
from racer.tuning.schedule import IRACE_FIRST_TEST, default_first_test
from racer.tuning.settings import Settings

SPACE = 'x "" r (0, 1)\ny "" r (0, 1)\nz "" i (1, 20)\n'
GRID = 'a "" o (1, 2, 3, 4, 5, 6)\nb "" c (p, q, r)\nc "" o (10, 20, 30)\n'


def smooth(config, instance, seed=None):
    """Deterministic: best near x = 0.3, y = 0.6 + 0.05 instance, small z; the instances
    differ in level and a little in where the best is."""
    return ((config["x"] - 0.3) ** 2 + (config["y"] - 0.6 - 0.05 * instance) ** 2
            + 0.01 * config["z"] + 0.1 * instance)


def on_grid(config, instance, seed=None):
    """A small grid (6 x 3 x 3 = 54 configurations) of deterministic costs (ordinal values
    come as the strings of the parameter file)."""
    return (abs(int(config["a"]) - 4) + {"p": 0.5, "q": 0.0, "r": 1.0}[config["b"]]
            + abs(int(config["c"]) - 20) / 10 + 0.01 * instance)


def tune(evaluate, space, n_instances, budget, **kw):
    with warnings.catch_warnings():
        # "only 5 instances ... uniform allocation" is true of every tuning here
        warnings.simplefilter("ignore", RuntimeWarning)
        return racer.tune(evaluate, space, list(range(n_instances)), budget=budget,
                          random_state=kw.pop("random_state", 0), deterministic=True,
                          progress=False, **kw)


def test_default_first_test_is_irace_s_unless_a_deterministic_scenario_has_few_instances():
    assert default_first_test(None) == IRACE_FIRST_TEST == 5
    assert [default_first_test(n) for n in (3, 5, 8, 9, 14, 15, 40)] == [2, 2, 2, 3, 4, 5, 5]
    assert default_first_test(8, each_test=4) == 4  # a multiple of eachTest
    few = list(range(5))
    assert _first_test(Settings(budget=100, deterministic=True), few, False) == 2
    # irace's procedure (one of irace's tests) keeps irace's firstTest; so does a stochastic
    # scenario, whose instances come back with new seeds; a given value is kept as given.
    assert _first_test(Settings(budget=100, deterministic=True), few, True) == 5
    assert _first_test(Settings(budget=100), few, False) == 5
    assert _first_test(Settings(budget=100, deterministic=True, first_test=4), few, False) == 4
    # blockSize: the instances count in blocks
    assert _first_test(Settings(budget=100, deterministic=True, block_size=2),
                       list(range(12)), False) == 2


def test_five_deterministic_instances_spend_the_budget_on_more_configurations():
    res = tune(smooth, SPACE, 5, 200)
    runs = res.runs
    rows = runs.to_dict("records") if hasattr(runs, "to_dict") else runs
    trained = [r for r in rows if r["iteration"] > 0 and r["status"] == "ok"]
    # irace's schedule used 175 of these 200 runs on 35 configurations (mu + 5 eachTest = 10
    # runs paid for a configuration that can run 5).
    assert 190 <= res.n_evaluations <= 200
    assert len({r["configuration"] for r in trained}) > 40


def test_the_first_race_tests_before_the_last_of_five_instances():
    res = tune(smooth, SPACE, 5, 200)
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    first = [r for r in rows if r["iteration"] == 1]
    per_configuration: dict = {}
    for r in first:
        per_configuration[r["configuration"]] = per_configuration.get(r["configuration"], 0) + 1
    # with firstTest = 5 every configuration of the first race ran all five instances
    assert min(per_configuration.values()) < 5


def test_a_given_first_test_is_kept_even_on_few_instances():
    res = tune(smooth, SPACE, 5, 200, first_test=5)
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    first = [r for r in rows if r["iteration"] == 1]
    counts: dict = {}
    for r in first:
        counts[r["configuration"]] = counts.get(r["configuration"], 0) + 1
    assert set(counts.values()) == {5}


@pytest.mark.parametrize("budget", [180, 320])
def test_a_collapsed_model_on_a_grid_goes_on_with_uniform_samples(budget):
    # On a 54-configuration grid irace's model collapses onto the elites within a few
    # iterations; racer then stopped with "the parameter space is used up" and budget left.
    res = tune(on_grid, GRID, 5, budget)
    assert "used up" not in res.stop_reason or len(res.configurations) == 54
    assert res.n_evaluations >= budget - 5 * 5 or len(res.configurations) == 54
    # the final answer has the lowest mean over the instances the final elites share
    # (rank_final), and is a good one
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    ran = {e: {r["instance_id"]: r["cost"] for r in rows
               if r["configuration"] == e and r["iteration"] > 0} for e in res.elite_ids}
    shared = set.intersection(*(set(v) for v in ran.values()))
    means = {e: sum(ran[e][i] for i in shared) / len(shared) for e in res.elite_ids}
    assert means[res.elite_ids[0]] == min(means.values())
    assert on_grid(res.best, 0) <= 1.0


def test_the_final_answer_uses_every_instance_the_elites_share():
    from racer.tuning.record import rank_final
    from racer.tuning.tuner import Configuration, Task
    from racer.tuning.instances import Instance

    tasks = [Task(k + 1, Instance(f"i{k}"), k) for k in range(5)]
    old, other, newcomer = Configuration(1, {}), Configuration(2, {}), Configuration(3, {})
    cache = {(1, t): (c, None) for t, c in zip(tasks, (1.0, 1.0, 1.0, 1.0, 1.0))}
    cache.update({(2, t): (c, None) for t, c in zip(tasks, (0.9, 0.9, 0.9, 2.0, 2.0))})
    cache.update({(3, t): (c, None) for t, c in zip(tasks[:3], (0.1, 0.1, 0.1))})
    # a last race that saw only the first two instances ranked old first; the elites share
    # three, on which the newcomer leads
    assert [e.id for e in rank_final([old, other, newcomer], cache)] == [3, 2, 1]
    # without the newcomer the two share all five: old leads on them
    assert [e.id for e in rank_final([other, old], cache)] == [1, 2]
    # a failed run is not a shared instance: with old's last two failed they share three
    cache[(1, tasks[3])] = (float("nan"), "crashed")
    cache[(1, tasks[4])] = (float("nan"), "crashed")
    assert [e.id for e in rank_final([other, old], cache)] == [2, 1]


def test_an_elite_drawn_uniformly_gets_the_wide_model_of_the_first_iteration():
    from types import SimpleNamespace as C

    from racer.tuning.sampler import Sampler
    from racer.tuning.spaces import parameter_space

    space = parameter_space(SPACE)
    s = Sampler(space)
    e1 = C(id=1, values={"x": 0.2, "y": 0.5, "z": 3}, parent=None)
    s.init_model([e1])
    s.update_model([e1], iteration=2, n_iterations=4, n_new=5)
    # configuration 9 was a uniform top-up (no parent, no model of its own) and is now an elite
    e9 = C(id=9, values={"x": 0.9, "y": 0.1, "z": 17}, parent=None)
    s.update_model([e1, e9], iteration=3, n_iterations=4, n_new=5)
    shrink = (1 / 5) ** (1 / 3)
    assert s.model[9]["x"] == pytest.approx([0.5 * shrink, 0.9])  # (1 - 0) / 2, around its value
    assert s.model[9]["z"] == pytest.approx([9.5 * shrink, 17])
    assert s.model[1]["x"][0] == pytest.approx(0.5 * shrink ** 2)


def test_optuna_s_sampler_on_a_used_up_grid_goes_on_instead_of_failing():
    pytest.importorskip("optuna")
    # TPE on a 54-configuration grid soon proposes only configurations already raced; that
    # was a SamplingError ("100 proposals in a row were forbidden or already raced")
    res = tune(on_grid, GRID, 5, 320, sampler="optuna")
    assert res.n_evaluations <= 320
    assert on_grid(res.best, 0) <= 1.0
