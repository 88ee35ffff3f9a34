"""BayesianTest: the gate, decisions, statelessness (formulas: tests of racer.stats)."""

from __future__ import annotations


import numpy as np

from racer.racing.base import RaceView
import pytest

from racer.racing.bayesian import BayesianTest
from racer.racing.base import Elimination
from racer.stats import bayesian_friedman
from racer.stats.bayesian_sign import prob_greater_from_counts

from _helpers import ROOT
from _helpers.races import assert_same_decisions


def _decide(test, scores, seed=0):
    scores = np.asarray(scores, dtype=np.float64)
    return test.decide(RaceView.from_scores(scores), np.random.default_rng(seed))


# --------------------------------------------------------------------- gate


def test_gate_statistic_matches_bayesian_friedman_ellipsoid():
    rng = np.random.default_rng(2)
    scores = rng.normal([0.0, 0.1, 0.3, 0.35, 0.6], 1.0, size=(40, 5))
    stat, rho = BayesianTest().gate_statistic(scores)
    ref = bayesian_friedman(scores, method="ellipsoid", credibility=0.95)
    # Rank direction differs (eq. 14 vs rank 1 = best); the quadratic form is invariant.
    assert stat == pytest.approx(ref.statistic, rel=1e-9)
    assert rho == pytest.approx(ref.threshold, rel=1e-9)


def test_small_n_hold_makes_no_decision_while_friedman_is_undefined():
    rng = np.random.default_rng(0)
    scores = rng.normal(np.arange(6) * 3.0, 0.1, size=(5, 6))  # n = 5 <= m - 1 = 5
    assert _decide(BayesianTest(), scores) == []
    out = _decide(BayesianTest(small_n="reject"), scores)
    assert {e.index for e in out} == {0, 1, 2, 3, 4}
    assert all(e.by == 5 and e.reason == "dominated" for e in out)
    assert {e.index for e in _decide(BayesianTest(small_n="chi2"), scores)} == {0, 1, 2, 3, 4}


# --------------------------------------------------------------------- decisions


def test_clear_winner_dominates_with_joint_probability():
    rng = np.random.default_rng(0)
    scores = rng.normal([0.0, 0.0, 1.0], 0.5, size=(20, 3))
    out = _decide(BayesianTest(), scores)
    assert sorted((e.index, e.reason, e.by) for e in out) == [
        (0, "dominated", 2),
        (1, "dominated", 2),
    ]
    assert all(isinstance(e, Elimination) and 0.975 < e.probability <= 1.0 for e in out)


def test_joint_is_stricter_than_marginals():
    # Two statements at marginal ~0.98 each: each passes 0.975 alone, the pair jointly may
    # not; the accepted prefix must have joint > credibility.
    n = 60
    scores = np.zeros((n, 3))
    scores[:, 2] = 1.0
    scores[:, 0] = np.where(np.arange(n) < 20, 2.0, 0.5)  # 2 beats 0 on 40 of 60
    scores[:, 1] = np.where(np.arange(n) < 20, 2.0, 0.5)
    p_single = prob_greater_from_counts(40, 20)
    assert p_single > 0.975
    test = BayesianTest(n_samples=20_000)
    out = _decide(test, scores)
    # The two statements fail on the same instances, so the joint equals the marginal and
    # both are accepted (the joint procedure "automatically" accepts correlated ones).
    assert {e.index for e in out if e.reason == "dominated"} == {0, 1}
    assert all(e.probability > 0.975 for e in out)


def test_indistinguishable_pair_keeps_the_better_mean():
    rng = np.random.default_rng(4)
    n = 1500
    base = rng.normal(size=(n, 1))
    scores = base + rng.normal(0.0, 1.0, size=(n, 2)) * 0.05
    scores[:, 1] += 0.001  # same distribution up to a negligible shift
    out = _decide(BayesianTest(), scores)
    assert len(out) == 1
    e = out[0]
    assert e.reason == "indistinguishable"
    assert e.probability > 0.975
    better = int(np.argmax(scores.mean(axis=0)))
    assert e.by == better and e.index == 1 - better


def test_gate_indistinguishable_option():
    # Three exchangeable candidates, n = 1500: the Friedman gate stays closed, so with the
    # default nothing happens, and without gating indistinguishability two go.
    rng = np.random.default_rng(8)
    scores = rng.normal(size=(1500, 3))
    assert _decide(BayesianTest(), scores) == []
    out = _decide(BayesianTest(gate_indistinguishable=False), scores)
    assert len(out) == 2 and all(e.reason == "indistinguishable" for e in out)
    best = int(np.argmax(scores.mean(axis=0)))
    assert all(e.index != best for e in out)


def test_two_survivors_gate_and_idp():
    scores = np.array([[1.0, 0.0]] * 5)  # a 5-0 record
    # DP prior at the tie: P(theta > 1/2) = 1 exactly, so the loser goes at once.
    out = _decide(BayesianTest(), scores)
    assert [(e.index, e.by, e.probability) for e in out] == [(1, 0, 1.0)]
    # The IDP lower probability is P(Beta(5, 2) > 1/2) = 0.89: no decision.
    assert _decide(BayesianTest(prior="idp"), scores) == []
    # gate_two=True: the Bayesian Friedman with m = 2 needs n > 1 and rejects here too.
    assert [e.index for e in _decide(BayesianTest(gate_two=True), scores)] == [1]


def test_same_seed_same_decisions_and_one_object_equals_fresh():
    rng = np.random.default_rng(6)
    q, rows = 12, 400
    scores = rng.normal(np.linspace(0, 0.6, q), 1.0, size=(rows, q))
    reused = BayesianTest(credibility=0.95)
    alive = np.arange(q)
    for n in range(20, rows + 1, 20):
        step_rng = np.random.default_rng([1, n])
        got = reused.decide(RaceView.from_scores(scores[:n, alive], alive), step_rng)
        fresh = BayesianTest(credibility=0.95).decide(
            RaceView.from_scores(scores[:n, alive], alive), np.random.default_rng([1, n])
        )
        assert got == fresh  # the same computation on the same stream: bit for bit
        if got:
            keep = np.ones(len(alive), dtype=bool)
            keep[[e.index for e in got]] = False
            alive = alive[keep]
    other = rng.normal(size=(rows, len(alive)))
    a = reused.decide(RaceView.from_scores(other, alive), np.random.default_rng(0))
    b = BayesianTest(credibility=0.95).decide(
        RaceView.from_scores(other, alive), np.random.default_rng(0)
    )
    assert a == b


def test_reused_test_does_not_decide_from_stale_counts():
    # A reported bug: a test object that cached counts keyed by ids, validated against the first and
    # last rows, decided "dominated, p=1.0" on a 6x3 matrix that shared those rows with an
    # earlier 6x3 matrix; a fresh test decided nothing. The test now keeps no counts.
    first = np.array([[0.5, 0.2, 0.1]] + [[1.0, 0.0, -1.0]] * 4 + [[0.3, 0.2, 0.1]])
    second = first.copy()
    second[1:5] = [[0.0, 1.0, 0.5], [1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [1.0, 0.5, 0.0]]
    test = BayesianTest(small_n="reject")
    ids = np.arange(3)
    assert _decide(test, first) != []  # column 0 wins 6-0: the earlier data decide
    fresh = BayesianTest(small_n="reject").decide(RaceView.from_scores(second, ids),
                                                   np.random.default_rng(0))
    again = test.decide(RaceView.from_scores(second, ids), np.random.default_rng(0))
    assert fresh == []
    assert again == fresh


@pytest.mark.parametrize("make_inner", [
    lambda: BayesianTest(credibility=0.9),
    lambda: __import__("racer.racing.frace", fromlist=["FRaceTest"]).FRaceTest(),
])
def test_engine_statistics_equal_fresh_ones_through_a_race(make_inner):
    # The race lends its incremental statistics to the view; a view computed afresh from the
    # same scores must give the same numbers, bit for bit (sums of multiples of 1/4).
    from racer.racing.base import RacingTest
    from racer.engine import Race

    seen = []

    class Probe(RacingTest):
        def decide(self, view, rng):
            fresh = RaceView.from_scores(view.scores, view.ids)
            for name in ("greater", "ranks", "rank_sums", "rank_sq_sums", "rank_outer"):
                np.testing.assert_array_equal(getattr(view, name), getattr(fresh, name))
            seen.append(view.n_survivors)
            out = make_inner().decide(view, rng)
            assert_same_decisions(
                out, make_inner().decide(fresh, np.random.default_rng([3, view.step]))
            )
            return out

        def get_params(self):
            return {}

    rng = np.random.default_rng(4)
    data = np.round(rng.normal(np.linspace(0, 1.0, 8), 1.0, size=(300, 8)), 1)  # with ties
    race = Race(range(8), test=Probe(), first_test=10, each_test=3, max_instances=300,
                instances=range(300), random_state=3)
    while not race.finished:
        for ev in race.ask():
            race.tell(ev, float(data[ev.instance, ev.candidate]))
    assert len(set(seen)) > 2, seen  # survivors changed several times during the race


def test_get_params_and_validation():
    params = BayesianTest().get_params()
    assert params == dict(
        credibility=0.975, eps=0.05, prior_strength=1.0, n_samples=10_000,
        gate_credibility=0.95, gate_indistinguishable=True, small_n="hold", gate_two=False,
        prior="dp", statements="per_loser",
    )
    with pytest.raises(ValueError, match="credibility"):
        BayesianTest(credibility=1.5)
    with pytest.raises(ValueError, match="small_n"):
        BayesianTest(small_n="maybe")
    with pytest.raises(TypeError, match="n_samples"):
        BayesianTest(n_samples=1e4)
    with pytest.raises(ValueError, match="eps"):
        BayesianTest(eps=0.7)
    with pytest.raises(ValueError, match="ids"):
        BayesianTest().decide(RaceView.from_scores(np.zeros((5, 3)), np.arange(2)), np.random.default_rng(0))
    with pytest.raises(TypeError, match="view"):
        BayesianTest().decide(np.zeros((5, 3)), np.random.default_rng(0))


def test_bare_benchmark_loop_races_like_the_engine(monkeypatch):
    # The repository's benchmarks/, found from this file (not the cwd), on sys.path for this
    # test only.
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    sim = pytest.importorskip("_racing_sim")
    mu, scores = sim.make_data(30, 1.0, 3)
    scores = scores[:200]
    for test in (BayesianTest(), BayesianTest(credibility=0.95)):
        a = sim.run_engine(test, scores, 5)
        b = sim.run_loop(type(test)(**test.get_params()), scores, 5)
        assert a.best_index == b.best_index
        assert (a.n_instances, a.n_evaluations) == (b.n_instances, b.n_evaluations)
        assert [(h.candidate_index, h.by_index, h.reason) for h in a.history] == [
            (h.candidate_index, h.by_index, h.reason) for h in b.history
        ]


def test_per_loser_statements_eliminate_at_least_as_many():
    rng = np.random.default_rng(13)
    scores = rng.normal(np.linspace(0.0, 1.0, 15), 1.0, size=(60, 15))
    every = _decide(BayesianTest(statements="all"), scores)
    per_loser = _decide(BayesianTest(statements="per_loser"), scores)
    assert {e.index for e in every} <= {e.index for e in per_loser}
    assert all(e.probability > 0.975 and e.reason == "dominated" for e in per_loser)


def test_small_n_montecarlo_uses_the_dp_credible_region():
    # n = 5 <= m - 1 = 5: eq. 19 is undefined; the Monte Carlo region of bayesian_friedman
    # rejects the all-tied point for a perfectly ordered field and keeps it for pure noise.
    rng = np.random.default_rng(0)
    ordered = rng.normal(np.arange(6) * 3.0, 0.1, size=(5, 6))
    out = _decide(BayesianTest(small_n="montecarlo"), ordered)
    assert {e.index for e in out} == {0, 1, 2, 3, 4}
    ref = bayesian_friedman(ordered, method="montecarlo", credibility=0.95, random_state=0)
    assert ref.reject
    noise = rng.normal(size=(5, 6))
    assert _decide(BayesianTest(small_n="montecarlo"), noise) == []
