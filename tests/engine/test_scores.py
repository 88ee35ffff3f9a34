"""The score table on its own (racer/_scores.py): rows, finalization, imputation, growth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from racer import KeepAll, Race
from racer._scores import ScoreTable


def fill(table, row, values):
    """Record ``values`` (None = failed) of candidates 0.. on ``row``."""
    for ci, value in enumerate(values):
        table.record(ci, row, math.nan if value is None else value, failed=value is None)


def test_a_row_is_oriented_only_once_its_last_cell_arrives():
    table = ScoreTable(3, maximize=False)
    table.open_rows(0, 2, [0, 1, 2])
    table.record(0, 0, 1.0)
    table.record(1, 0, 2.0)
    assert np.isnan(table.oriented[0]).all()
    table.record(2, 0, 4.0)
    assert table.oriented[0].tolist() == [-1.0, -2.0, -4.0]  # minimised: negated
    assert np.isnan(table.oriented[1]).all()  # the block's second row is not complete
    assert table.raw[0].tolist() == [1.0, 2.0, 4.0]  # raw stays as told


@pytest.mark.parametrize("maximize", [True, False])
def test_a_failure_ranks_last_and_lies_one_spread_below_the_worst_success(maximize):
    table = ScoreTable(4, maximize=maximize)
    table.open_rows(0, 1, [0, 1, 2, 3])
    fill(table, 0, [3.0, None, 7.0, 5.0])
    oriented = table.oriented[0]
    successes = oriented[[0, 2, 3]]
    spread = successes.max() - successes.min()
    assert oriented[1] == successes.min() - spread == successes.min() - 4.0
    assert oriented[1] < successes.min()
    assert table.raw[0, 1] != table.raw[0, 1]  # NaN in the raw scores
    assert table.failed[0].tolist() == [False, True, False, False]


@pytest.mark.parametrize("successes, expected", [
    ([2.0, 2.0], 2.0 - 2.0),      # equal successes: the spread is |lowest|
    ([-3.0, -3.0], -3.0 - 3.0),
    ([0.0, 0.0], 0.0 - 1.0),      # ... or 1 when that is 0
])
def test_equal_successes_use_the_size_of_the_lowest_as_spread(successes, expected):
    table = ScoreTable(3, maximize=True)
    table.open_rows(0, 1, [0, 1, 2])
    fill(table, 0, [*successes, None])
    assert table.oriented[0, 2] == expected


def test_an_instance_on_which_every_candidate_failed_is_a_tie_at_zero():
    table = ScoreTable(2, maximize=False)
    table.open_rows(0, 1, [0, 1])
    fill(table, 0, [None, None])
    assert table.oriented[0].tolist() == [0.0, 0.0]
    assert table.n_failed.tolist() == [1, 1] and not table.usable.any()


def test_only_the_candidates_filling_the_rows_are_finalized():
    # An eliminated candidate (column 1) keeps NaN on later rows; the imputation is over the
    # block's candidates only.
    table = ScoreTable(3, maximize=True)
    table.open_rows(0, 1, [0, 1, 2])
    fill(table, 0, [1.0, 0.0, 2.0])
    table.close_rows()
    table.open_rows(1, 2, [0, 2])
    table.record(0, 1, 10.0)
    table.record(2, 1, math.nan, failed=True)
    assert np.isnan(table.oriented[1, 1])
    assert table.oriented[1, 2] == 10.0 - 10.0  # one success: spread |10|
    assert table.n_seen.tolist() == [2, 1, 2]


def test_complete_rows_exclude_the_open_block_even_once_full():
    table = ScoreTable(2, maximize=True)
    assert table.complete_rows == 0 and table.rows_open is None
    table.open_rows(0, 3, [0, 1])
    for row in range(3):
        fill(table, row, [1.0, 2.0])
    assert table.rows_open == (0, 3) and table.complete_rows == 0
    table.close_rows()
    assert table.complete_rows == 3
    table.open_rows(3, 4, [1])
    assert table.complete_rows == 3 and table.cols.tolist() == [1]


def test_the_table_grows_past_its_capacity_and_keeps_every_row():
    table = ScoreTable(2, maximize=True, capacity=4)
    rng = np.random.default_rng(0)
    values = rng.normal(size=(11, 2))
    for row in range(11):
        table.open_rows(row, row + 1, [0, 1])
        fill(table, row, values[row].tolist())
        table.close_rows()
    assert table.raw.shape[0] >= 11
    np.testing.assert_array_equal(table.raw[:11], values)
    np.testing.assert_array_equal(table.oriented[:11], values)
    assert np.isnan(table.raw[11:]).all() and not table.failed[11:].any()


def test_told_tells_a_failure_from_a_cell_not_recorded():
    table = ScoreTable(2, maximize=True)
    table.open_rows(0, 1, [0, 1])
    assert not table.told(0, 0) and not table.told(1, 0)
    table.record(1, 0, math.nan, failed=True)
    assert table.told(1, 0) and not table.told(0, 0)


def test_a_race_reports_the_table_s_imputed_means_under_worst():
    # The race's mean_scores under on_error="worst" are the table's oriented means, turned
    # back to the race's direction: a failure weighs as the imputed score.
    def evaluate(c, i):
        if c == 0 and i == 1:
            return float("nan")
        return float(c * 10 + i)

    race = Race([0, 1, 2], test=KeepAll(), first_test=3, max_instances=3, instances=range(3),
                random_state=0)
    while not race.finished:
        for ev in race.ask():
            race.tell(ev, evaluate(ev.candidate, ev.instance))
    res = race.result()
    table = ScoreTable(3, maximize=False)
    table.open_rows(0, 3, [0, 1, 2])
    for row in range(3):
        for ci in range(3):
            value = evaluate(ci, row)
            table.record(ci, row, value, failed=value != value)
    np.testing.assert_allclose(res.mean_scores, -table.oriented[:3].mean(axis=0))
    assert res.mean_scores[0] > np.nanmean(res.scores[:, 0])  # the failure costs more
    assert res.mean_scores[0] == pytest.approx((0 + 31 + 2) / 3)  # 21 + (21 - 11) on row 1
