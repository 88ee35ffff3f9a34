"""benchmarks/slow_runs.py: the table's summaries on records made by hand (the tunings
themselves are tests/tuning/test_slow_runs.py's)."""

import pytest

from _helpers.benchmarks import benchmark_module


def _row(seed, factor, wall, hang_runs):
    return {"seed": seed, "factor": factor, "wall": wall, "stopped": hang_runs if factor else 0,
            "hang_runs": hang_runs, "best_true_cost": 4.5}


def test_the_ratio_is_summarised_on_the_seeds_where_a_run_hung():
    rows = [_row(1, 1000.0, 8.0, 2), _row(1, None, 32.0, 2),
            _row(2, 1000.0, 6.0, 1), _row(2, None, 40.0, 1),
            _row(3, 1000.0, 3.0, 0), _row(3, None, 1.0, 0)]  # no hang: noise only
    with benchmark_module("slow_runs") as bench:
        text = bench.table(rows)
    assert "total wall time on / off over 3 seeds: 0.23" in text  # 17 / 73
    # (0.25 + 0.15) / 2 = 0.2, SE = stdev(0.25, 0.15) / sqrt(2) = 0.05
    assert "on the 2 seeds where a configuration hung: 0.20 +/- 0.05" in text
    assert "| 3 | 3.0 | 1.0 | 3.00 | 0 | 0 / 0 |" in text


def test_true_cost_is_the_mean_over_the_training_instances():
    with benchmark_module("slow_runs") as bench:
        assert bench.true_cost(0.3) == pytest.approx(4.5 * 1.0)  # mean of 1..8, x at 0.3
