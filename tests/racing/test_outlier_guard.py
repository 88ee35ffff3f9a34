"""OutlierGuard: a configuration with a run orders of magnitude worse than the others' on the
same instance leaves at once, whatever the wrapped test says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from racer.engine import Race
from racer.racing import OutlierGuard
from racer.racing.base import Elimination, KeepAll, ProtectElites, RaceView, RacingTest
from racer.racing.trace import TRaceTest

N, M, VICTIM, ROW = 20, 6, 0, 2


def _costs(seed=0, n=N, m=M, sigma=0.5):
    """Positive costs: instances 27-fold apart, configurations close, lognormal noise."""
    rng = np.random.default_rng(seed)
    instance = rng.uniform(0.0, np.log(27.0), size=(n, 1))
    config = rng.normal(0.0, 0.3, size=(1, m))
    return 1e4 * np.exp(instance + config + rng.normal(0.0, sigma, size=(n, m)))


def _spoiled(seed=0):
    costs = _costs(seed)
    costs[ROW, VICTIM] *= 1e4  # one run 10^4 times its own cost
    return costs


def _run(test, costs, *, direction="minimize", storage=None, stop_after=None, **options):
    n, m = costs.shape
    race = Race(list(range(m)), test=test, first_test=5, instances=range(n),
                direction=direction, random_state=3, storage=storage, **options)
    told = 0
    while not race.finished:
        for ev in race.ask():
            if stop_after is not None and told == stop_after:
                race.close()
                return None
            race.tell(ev, float(costs[ev.instance, ev.candidate]))
            told += 1
    result = race.result()
    race.close()
    return result


# --- the case it is for -------------------------------------------------------------------------


def test_the_t_test_alone_keeps_one_huge_run_and_the_guard_drops_it_at_the_first_test():
    costs = _spoiled()
    alone = _run(TRaceTest(), costs)
    assert VICTIM in alone.survivor_indices.tolist()  # raced to the end: the t stat stays small
    assert alone.n_evaluated[VICTIM] == N
    # without its outlier, the t-test drops it after 9 instances
    clean = _run(TRaceTest(), _costs())
    assert [h.n_instances for h in clean.history if h.candidate_index == VICTIM] == [9]

    guarded = _run(OutlierGuard(TRaceTest(), factor=100.0), costs)
    (record,) = [h for h in guarded.history if h.candidate_index == VICTIM]
    assert (record.step, record.n_instances, record.reason) == (1, 5, "dominated")
    # The reference: the median of the six costs on that instance; the eliminator is the
    # configuration just better than the median there.
    row = costs[ROW]
    order = np.argsort(row)
    median = (row[order[2]] + row[order[3]]) / 2
    assert record.by_index == int(order[2])
    assert record.probability == pytest.approx(row[VICTIM] / median, rel=1e-12)
    assert record.probability > 100
    assert guarded.n_evaluated[VICTIM] == 5
    # Only the outlier went at that step through the guard: every other elimination is the
    # t-test's (a p-value, at most 1).
    assert [h.candidate_index for h in guarded.history if h.probability > 1] == [VICTIM]


def test_the_decision_alone_keeps_the_outlier_under_the_t_test():
    costs = _spoiled()[:5]
    view = RaceView.from_scores(-costs)
    assert VICTIM not in [e.index for e in TRaceTest().decide(view, None)]
    out = OutlierGuard(TRaceTest()).decide(view, None)
    assert out[0].index == VICTIM and out[0].probability > 100


def test_without_outliers_the_wrapped_test_sees_the_same_view_and_decides_alike():
    seen = []

    class Record(RacingTest):
        def decide(self, view, rng):
            seen.append(view)
            return TRaceTest().decide(view, rng)

        def get_params(self):
            return {}

    view = RaceView.from_scores(-_costs())
    out = OutlierGuard(Record()).decide(view, None)
    assert seen == [view]
    assert out == TRaceTest().decide(view, None)
    # and a whole race ends the same with or without the guard
    plain, guarded = _run(TRaceTest(), _costs()), _run(OutlierGuard(TRaceTest()), _costs())
    assert guarded.history == plain.history
    assert guarded.n_evaluations == plain.n_evaluations


def test_the_wrapped_test_decides_without_the_outliers_columns_and_its_columns_map_back():
    seen = []

    class DropLastBySecond(RacingTest):
        def decide(self, view, rng):
            seen.append(view.ids.tolist())
            last = view.scores.shape[1] - 1
            return [Elimination(last, "dominated", 1, 0.01)]

        def get_params(self):
            return {}

    costs = _spoiled()[:5]
    out = OutlierGuard(DropLastBySecond()).decide(RaceView.from_scores(-costs), None)
    assert seen == [[1, 2, 3, 4, 5]]  # the outlier's column is not shown to the wrapped test
    assert [(e.index, e.by, e.probability) for e in out[1:]] == [(5, 2, 0.01)]
    assert out[0].index == VICTIM


def test_the_leader_stays_when_every_survivor_has_an_outlier_somewhere():
    costs = np.ones((4, 3))
    costs[0, 0], costs[1, 1], costs[2, 2] = 1e4, 1e4, 500.0  # column 2: the best mean
    view = RaceView.from_scores(-costs)
    guard = OutlierGuard(KeepAll(), factor=100.0)
    assert guard.worst_ratios(view)[0].tolist() == [1e4, 1e4, 500.0]
    assert sorted(e.index for e in guard.decide(view, None)) == [0, 1]


# --- ordinary noise: nothing goes ---------------------------------------------------------------


def test_ordinary_lognormal_noise_drops_nothing_while_a_best_mean_reference_would():
    # 300 matrices of lognormal costs of sigma 1 (runs spread over a factor of 7 either way),
    # 3 to 12 configurations, 20 instances: the default guard (median, factor 1000) never
    # drops anything, and at factor 100 the median rarely does; the best-mean reference,
    # biased low by its selection, drops many (why the median is the default).
    drops = {("median", 1000.0): 0, ("median", 100.0): 0, ("best", 100.0): 0}
    for seed in range(300):
        view = RaceView.from_scores(-_costs(seed, n=20, m=3 + seed % 10, sigma=1.0))
        for reference, factor in drops:
            guard = OutlierGuard(KeepAll(), factor, reference=reference)
            drops[reference, factor] += len(guard.decide(view, None))
    assert OutlierGuard(KeepAll()).factor == 1000.0 and OutlierGuard(KeepAll()).reference \
        == "median"
    assert drops["median", 1000.0] == 0
    assert drops["median", 100.0] <= 3
    assert drops["best", 100.0] >= 10 * max(1, drops["median", 100.0])


def test_a_race_on_ordinary_noise_drops_nothing_through_the_guard():
    for seed in range(10):
        result = _run(OutlierGuard(TRaceTest()), _costs(seed, n=30, m=10, sigma=1.0))
        assert all(h.probability <= 1 for h in result.history)


# --- where there is no ratio --------------------------------------------------------------------


def test_the_guard_abstains_where_the_reference_is_not_positive():
    base = np.full((4, 4), 10.0)
    for row in ([0.0, 0.0, 0.0, 7.0], [-5.0, -4.0, -3.0, 1e6], [0.0, -1.0, 0.0, 1e9]):
        costs = base.copy()
        costs[1] = row
        view = RaceView.from_scores(-costs)
        guard = OutlierGuard(KeepAll())
        assert guard.decide(view, None) == []
        ratio, _ = guard.worst_ratios(view)
        assert ratio.tolist() == [1.0, 1.0, 1.0, 1.0]  # the other rows only
    # the same outlier against a positive reference goes
    costs = base.copy()
    costs[1] = [1.0, 1.0, 1.0, 1e6]
    assert [e.index for e in OutlierGuard(KeepAll()).decide(RaceView.from_scores(-costs), None)] \
        == [3]


def test_a_non_positive_score_to_maximise_has_no_ratio():
    scores = np.full((3, 4), 0.8)
    scores[0, 2] = -5.0  # no ratio to 0.8: left to the wrapped test
    scores[1, 3] = 0.0
    guard = OutlierGuard(KeepAll(), direction="maximize")
    assert guard.decide(RaceView.from_scores(scores), None) == []
    scores[2, 1] = 1e-4
    assert [(e.index, e.by) for e in guard.decide(RaceView.from_scores(scores), None)] == [(1, 2)]


# --- direction ----------------------------------------------------------------------------------


def test_maximize_drops_a_score_factor_times_below_the_reference_and_not_one_above():
    scores = 1.0 / _costs()  # positive scores, larger is better
    low, high = scores.copy(), scores.copy()
    low[ROW, VICTIM] /= 1e4
    high[ROW, VICTIM] *= 1e4
    guard = OutlierGuard(TRaceTest(), direction="maximize")
    result = _run(guard, low, direction="maximize")
    (record,) = [h for h in result.history if h.candidate_index == VICTIM]
    assert record.n_instances == 5 and record.probability > 100
    row = low[ROW]
    assert record.probability == pytest.approx(np.median(row) / row[VICTIM], rel=1e-12)
    assert all(h.probability <= 1 for h in _run(guard, high, direction="maximize").history)
    # read as costs, those scores would be misjudged: the direction must be the race's
    assert [e.index for e in OutlierGuard(KeepAll()).decide(RaceView.from_scores(high[:5]), None)] \
        == []
    assert [e.index for e in OutlierGuard(KeepAll()).decide(RaceView.from_scores(-high[:5]), None)] \
        == [VICTIM]


# --- composition --------------------------------------------------------------------------------


def test_protected_elites_stay_protected_inside_protect_elites():
    costs = _costs()[:8]
    costs[1, 1] *= 1e4  # elite 1's outlier
    costs[1, 4] *= 1e4  # a new configuration's outlier
    test = ProtectElites(OutlierGuard(KeepAll()), n_elites=2, until=6)
    early = RaceView.from_scores(-costs[:5])
    assert [e.index for e in test.decide(early, None)] == [4]
    late = RaceView.from_scores(-costs[:6])
    assert sorted(e.index for e in test.decide(late, None)) == [1, 4]
    # the ids, not the columns, say who the elites are: elite 1 in the last column
    ids = np.array([2, 3, 4, 5, 1])
    view = RaceView.from_scores(-costs[:5][:, ids], ids)
    assert [int(ids[e.index]) for e in test.decide(view, None)] == [4]
    view = RaceView.from_scores(-costs[:6][:, ids], ids)
    assert sorted(int(ids[e.index]) for e in test.decide(view, None)) == [1, 4]


def test_protect_elites_in_a_race_keeps_the_elite_until_its_protection_ends(tmp_path):
    from racer.report import elimination_statistic

    costs = _costs()
    costs[1, 0] *= 1e4  # the elite (id 0)
    path = str(tmp_path / "race.sqlite")
    result = _run(ProtectElites(OutlierGuard(TRaceTest()), n_elites=1, until=8), costs,
                  storage=path)
    record = next(h for h in result.history if h.candidate_index == 0)
    assert record.n_instances == 8 and record.probability > 1000
    # the report reads the numbers of the test inside both wrappers
    assert elimination_statistic(path) == "p-value"


def test_a_journaled_race_resumes_to_the_same_decisions(tmp_path):
    from racer.report import elimination_statistic
    from racer.storage import read_journal

    costs = _spoiled()
    test = OutlierGuard(TRaceTest(), factor=100.0)
    ref = _run(test, costs)
    assert any(h.probability > 1 for h in ref.history) and len(ref.history) > 1
    path = tmp_path / "race.sqlite"
    # interrupted after the first test (5 instances x 6), inside a later block
    assert _run(test, costs, storage=path, stop_after=5 * M + 8) is None
    journaled = read_journal(str(path))["decisions"]
    assert [d[2] for d in journaled if d[5] > 1] == [VICTIM]  # the guard's, before the stop
    resumed = _run(OutlierGuard(TRaceTest(), factor=100.0), costs, storage=path)
    assert resumed.history == ref.history
    assert resumed.n_evaluations == ref.n_evaluations
    params = read_journal(str(path))["fingerprint"]["test_params"]
    assert "TRaceTest" in params["inner"] and params["factor"] == "100.0"
    assert elimination_statistic(str(path)) == "p-value"  # the wrapped test's numbers
    with pytest.raises(ValueError, match="factor"):
        _run(OutlierGuard(TRaceTest(), factor=1000.0), costs, storage=path)


def test_the_wrapped_tests_winner_rule_and_params_are_kept():
    from racer.racing.frace import FRaceTest

    guard = OutlierGuard(FRaceTest(), factor=50, direction="maximize", reference="best")
    assert guard.winner == FRaceTest.winner
    params = guard.get_params()
    assert params["factor"] == 50.0 and params["direction"] == "maximize"
    assert params["reference"] == "best" and params["inner"].startswith("FRaceTest[")


# --- input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("factor, error", [
    (1, ValueError), (1.0, ValueError), (0.5, ValueError), (-100.0, ValueError),
    (math.nan, ValueError), (math.inf, ValueError), ("100", TypeError), (None, TypeError),
    (True, TypeError), ([100.0], TypeError),
])
def test_a_bad_factor_is_refused_naming_it(factor, error):
    with pytest.raises(error, match="`factor`"):
        OutlierGuard(TRaceTest(), factor=factor)


def test_bad_options_are_refused_naming_them():
    with pytest.raises(ValueError, match="`direction`"):
        OutlierGuard(TRaceTest(), direction="min")
    with pytest.raises(ValueError, match="`reference`"):
        OutlierGuard(TRaceTest(), reference="mean")
    with pytest.raises(TypeError, match="`inner`"):
        OutlierGuard(lambda view, rng: [])
    from racer.racing.pareto import ParetoTest

    with pytest.raises(ValueError, match="`inner`"):
        OutlierGuard(ParetoTest())
    with pytest.raises(TypeError, match="`view`"):
        OutlierGuard(KeepAll()).decide(np.ones((3, 3)), None)
