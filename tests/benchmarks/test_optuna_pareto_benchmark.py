"""Smoke test of benchmarks/optuna_pareto_pruning.py: its known front and its budget cuts."""

import numpy as np
import pytest

from _helpers.benchmarks import benchmark_module

moocore = pytest.importorskip("moocore")
pytest.importorskip("optuna")


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("optuna_pareto_pruning") as mod:
        yield mod


def test_the_synthetic_front_is_the_best_any_configuration_reaches(bench):
    problem = bench.SyntheticFront()
    random_keys = np.random.default_rng(0).random((400, problem.dim))
    means = np.array([problem.scores(k, problem.test).mean(axis=0) for k in random_keys])
    assert moocore.hypervolume(means, ref=problem.ref) < problem.true_hv
    # The claimed optimum: x_{1:} at the test instances' mean centre, any x0.
    centre = problem.c[problem.test].mean(axis=0)
    front_keys = np.column_stack([np.linspace(0, 1, 400), np.tile(centre, (400, 1))])
    front = np.array([problem.scores(k, problem.test).mean(axis=0) for k in front_keys])
    # 400 points against the 20001 of true_hv: within 0.1% of it, never above.
    hv = moocore.hypervolume(front, ref=problem.ref)
    assert problem.true_hv * 0.999 < hv <= problem.true_hv + 1e-12


def test_budgets_cut_a_study_at_equal_trials_and_at_equal_evaluations(bench):
    problem = bench.SyntheticFront()
    n = len(problem.train)
    good, bad = [0.5] + [0.5] * 3, [0.5] + [0.9] * 3
    trials = [{"key": good, "complete": True, "pruned": False, "evals": n,
               "values": [1.0, 1.0],
               "reason": "", "risk": None}]
    trials += [{"key": bad, "complete": False, "pruned": True, "evals": 5,
                "values": None,
                "reason": "dominated", "risk": 0.01}] * 4
    rows = bench.prefix_rows(problem, {"trials": trials}, [1, 2], n)
    by = {(r["budget"], r["view"]): r for r in rows}
    assert by[(1, "trials")]["trials"] == 1 and by[(2, "trials")]["trials"] == 2
    # Within 2 x n evaluations the whole study fits (n + 4 x 5); within n, only the first.
    assert by[(2, "evals")]["trials"] == 5 and by[(2, "evals")]["pruned"] == 4
    assert by[(1, "evals")]["evals"] == n
    # Pruned trials are never on the front: every cut returns the same single point.
    assert len({r["hv"] for r in rows}) == 1 and rows[0]["hv"] > 0
