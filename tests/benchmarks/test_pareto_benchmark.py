"""Smoke test of benchmarks/pareto_racing.py: the simulated Pareto set is what it says."""

import numpy as np
import pytest

from _helpers.benchmarks import benchmark_module


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("pareto_racing") as mod:
        yield mod


@pytest.mark.parametrize("family", ["correlated", "anti", "unequal", "heavy"])
def test_the_known_pareto_set_is_the_non_dominated_true_means(bench, family):
    from racer.stats.pareto import nondominated_mask

    means, optimal, scores = bench.make_problem(family, seed=7)
    assert optimal.sum() == bench.N_FRONT and scores.shape == (bench.N_INSTANCES, 10, 2)
    # Minimised objectives: negate for the larger-is-better mask.
    np.testing.assert_array_equal(nondominated_mask(-means), optimal)
    again = bench.make_problem(family, seed=7)[2]
    np.testing.assert_array_equal(scores, again)


def test_one_race_reports_its_measures(bench):
    row = bench.one_race("correlated", 3, {}, 5)
    assert 0 < row["cost"] <= 1 and 0 <= row["dominated_out"] <= 1
    assert len(row["stated"]) == len(row["wrong"])
    assert all(0 <= s < 1 - 0.5 for s in row["stated"])
