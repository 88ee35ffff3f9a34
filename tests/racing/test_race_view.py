"""The RaceView a racing test receives: what the race can still pay, and the statistics."""

import numpy as np
import pytest
from scipy.stats import rankdata

from racer import Race, RaceView, RacingTest


class Spy(RacingTest):
    def __init__(self):
        self.views = []

    def decide(self, view, rng):
        self.views.append((view.n_instances, view.n_survivors, view.budget_left,
                           view.instances_left, view.blocks_affordable(), view.step))
        return []

    def get_params(self):
        return {}


def _run(**options):
    spy = Spy()
    r = Race([0, 1, 2], test=spy, first_test=2, each_test=2, random_state=0, **options)
    while not r.finished:
        for ev in r.ask():
            r.tell(ev, float(ev.candidate))
    return spy.views, r


def test_view_reports_budget_and_instances_left():
    views, r = _run(budget=30, instances=range(20))
    # 3 survivors, blocks of 2 instances = 6 evaluations; the budget pays for 5 blocks.
    assert views[0] == (2, 3, 24, 18, 4, 1)
    assert views[-1][2] == 30 - r.n_evaluations
    assert [v[5] for v in views] == list(range(1, len(views) + 1))


def test_view_instances_left_follows_max_instances_and_endless_sources():
    views, _ = _run(max_instances=6, instances=range(100))
    assert [v[3] for v in views] == [4, 2, 0]
    views, _ = _run(max_instances=8, instances=iter(range(100)))
    assert [v[3] for v in views] == [6, 4, 2, 0]  # the cap is known even for an iterator
    views, _ = _run(instances=iter(range(6)))
    assert views[0][3] is None and views[0][4] is None  # nothing bounds an iterator


def test_from_scores_statistics_match_independent_computations():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, size=(9, 4)).astype(float)  # many ties
    view = RaceView.from_scores(scores)
    expected = (scores[:, :, None] > scores[:, None, :]).sum(axis=0)
    np.testing.assert_array_equal(view.greater, expected)
    np.testing.assert_allclose(view.ranks, rankdata(-scores, axis=1))
    with pytest.raises(ValueError, match="ids"):
        RaceView.from_scores(scores, ids=[0, 1])
    with pytest.raises(ValueError, match="budget_left"):
        RaceView.from_scores(scores, budget_left=-1)
    with pytest.raises(ValueError, match="shape"):
        view.with_scores(scores[:, :2])


def test_rank_sums_and_moments_match_scipy_ranks_and_the_tie_identity():
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 3, size=(9, 5)).astype(float)  # many ties
    view = RaceView.from_scores(scores)
    r = rankdata(-scores, axis=1)
    np.testing.assert_array_equal(view.rank_sums, r.sum(axis=0))
    np.testing.assert_array_equal(view.rank_sq_sums, (r**2).sum(axis=0))
    np.testing.assert_array_equal(view.rank_outer, r.T @ r)
    # FRaceTest derives Friedman's tie term from the squared ranks: check the identity.
    from racer.stats._ranks import tie_group_sizes_term

    n, m = scores.shape
    ties = 12.0 * (n * m * (m + 1) * (2 * m + 1) / 6.0 - view.rank_sq_sums.sum())
    assert ties == tie_group_sizes_term(scores) > 0


def test_protect_elites_rejects_bad_arguments_naming_them():
    from racer.racing.base import KeepAll, ProtectElites

    with pytest.raises(TypeError, match="`inner`.*'not a test'"):
        ProtectElites("not a test", 1, 3)
    with pytest.raises(ValueError, match="`n_elites` must be >= 0; got -1"):
        ProtectElites(KeepAll(), -1, 3)
    with pytest.raises(TypeError, match="`until`"):
        ProtectElites(KeepAll(), 1, 2.5)
