"""racer.ParetoTest: the racing test of races on several objectives."""

import numpy as np
import pytest

from racer import ParetoTest
from racer.racing.base import RaceView
from racer.racing.pareto import _eliminations
from racer.racing.registry import make_test


def _view(means, n=20, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    scores = np.asarray(means, dtype=float)[None] + rng.normal(0, noise, (n, len(means), 2))
    return RaceView.from_scores(scores)


def test_a_clearly_dominated_candidate_goes_and_a_trade_off_pair_stays():
    view = _view([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])  # larger is better
    out = ParetoTest().decide(view, np.random.default_rng(0))
    assert [(e.index, e.reason) for e in out] == [(2, "dominated")]
    assert out[0].by in (0, 1) and out[0].probability > 0.99


def test_practically_equivalent_candidates_keep_the_better_one():
    # Candidates 0 and 1 differ by 0.01 on each objective; a rope of 0.2 makes them
    # equivalent, and 0 (better on both) stays.
    view = _view([[0.51, 0.51], [0.50, 0.50], [2.0, -2.0]], n=60, noise=0.05)
    out = ParetoTest(rope=0.2).decide(view, np.random.default_rng(0))
    assert [(e.index, e.reason, e.by) for e in out] == [(1, "indistinguishable", 0)]
    # Without a rope nothing is ever equivalent.
    no_rope = ParetoTest(rope=0.0).decide(view, np.random.default_rng(0))
    assert all(e.reason == "dominated" for e in no_rope)


def test_same_rng_same_decisions():
    view = _view([[0.1, 0.0], [0.0, 0.1], [0.0, 0.0]], n=8, noise=0.2, seed=4)
    a = ParetoTest(n_samples=500).decide(view, np.random.default_rng(9))
    b = ParetoTest(n_samples=500).decide(view, np.random.default_rng(9))
    assert a == b


def test_a_cycle_of_certain_statements_keeps_one_candidate():
    dominates = np.array([[0, 0.999, 0], [0, 0, 0.998], [0.997, 0, 0]])
    out = _eliminations(dominates, np.eye(3), 0.99)
    # dominates[i, j]: i dominates j. Candidate 0 loses with 0.997, the least certain: it stays.
    assert sorted(e.index for e in out) == [1, 2]


def test_bad_options_and_views_are_refused():
    with pytest.raises(ValueError, match="credibility"):
        ParetoTest(credibility=0.4)
    with pytest.raises(ValueError, match="rope"):
        ParetoTest(rope=-1)
    with pytest.raises(ValueError, match="n_samples"):
        ParetoTest(n_samples=10)
    with pytest.raises(ValueError, match="several objectives"):
        ParetoTest().decide(RaceView.from_scores(np.zeros((3, 2))), np.random.default_rng(0))
    with pytest.raises(ValueError, match="`rope` has 3 values but the race has 2"):
        ParetoTest(rope=[0.1, 0.1, 0.1]).decide(_view([[0, 0], [1, 1]]), np.random.default_rng(0))


def test_the_registry_name():
    test, winner = make_test("pareto", confidence=0.97)
    assert isinstance(test, ParetoTest) and test.credibility == 0.97 and winner == "mean"
    assert test.get_params()["credibility"] == 0.97
