"""A racing test states its winner rule; the race's ``winner`` option overrides it."""

from __future__ import annotations

import numpy as np
import pytest

from racer.racing.frace import FRaceTest
from racer.racing.base import KeepAll
from racer.engine import Race

# Candidate 0 has the best mean (one big win), candidate 1 the best rank sum (it beats 0 and
# 2 on four instances of five). Rank sums: 13, 6, 11; means: 2.0, 1.0, 0.5.
SCORES = np.array([[10.0, 1.0, 0.5]] + [[0.0, 1.0, 0.5]] * 4)


class KeepAllByRankSum(KeepAll):
    winner = "rank_sum"


def _best(test, scores=SCORES, **options):
    n, q = scores.shape
    options.setdefault("direction", "maximize")  # SCORES are larger-is-better
    race = Race(range(q), test=test, first_test=n, max_instances=n, instances=range(n),
                random_state=0, **options)
    while not race.finished:
        for ev in race.ask():
            race.tell(ev, float(scores[ev.instance, ev.candidate]))
    return race.result()


def test_mean_and_rank_sum_disagree_on_this_matrix():
    assert _best(KeepAll()).best_index == 0  # default: best mean
    assert _best(KeepAllByRankSum()).best_index == 1  # the test's rule
    assert _best(KeepAll(), winner="rank_sum").best_index == 1
    assert _best(KeepAllByRankSum(), winner="mean").best_index == 0  # the race's option wins
    assert _best(KeepAll(), winner="mean_rank").best_index == 1
    assert _best(KeepAllByRankSum()).survivor_indices.tolist() == [1, 2, 0]


def test_frace_states_irace_rank_sum_order():
    # Friedman T = 5.2, p = 0.074 >= 0.05: nobody leaves, and irace returns the best rank sum.
    res = _best(FRaceTest())
    assert res.history == () and res.best_index == 1
    assert _best(FRaceTest(), winner="mean").best_index == 0
    # Minimised costs: ranks are taken on the oriented scores, so the order flips with them.
    assert _best(FRaceTest(), scores=-SCORES, direction="minimize").best_index == 1


def test_equal_rank_sums_go_to_the_earlier_candidate():
    scores = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 2.0, 1.0], [2.0, 0.0, 1.0]])
    # Rank sums 7, 7, 10: R's order() is stable, so the earlier of 0 and 1 is irace's elite.
    assert _best(KeepAllByRankSum(), scores=scores).survivor_indices.tolist() == [0, 1, 2]
    assert _best(KeepAllByRankSum(), scores=scores[:, [1, 0, 2]]).best_index == 0


def test_invalid_winner_rules_are_refused():
    class Odd(KeepAll):
        winner = "median"

    with pytest.raises(ValueError, match="Odd.winner"):
        Race(range(3), test=Odd())
    with pytest.raises(ValueError, match="winner"):
        Race(range(3), test=KeepAll(), winner="best")
