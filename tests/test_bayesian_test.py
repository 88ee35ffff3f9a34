"""BayesianTest: closed forms, the joint Monte Carlo, the gate, decisions and the cache."""

from __future__ import annotations

import os

import numpy as np

from racer.elimination import RaceView
import pytest
from scipy import stats

from racer.bayesian_test import (
    BayesianTest,
    _band_probability,
    _joint_prefix_counts,
    _prob_greater,
)
from racer.elimination import Elimination
from racer.stats import bayesian_friedman
from racer.stats.bayesian_sign import prob_greater_from_counts, prob_indistinguishable


def _decide(test, scores, seed=0):
    scores = np.asarray(scores, dtype=np.float64)
    return test.decide(RaceView.from_scores(scores), np.random.default_rng(seed))


def _assert_same_decisions(got, expected):
    """Same eliminations; the probability behind each to 1e-12 relative.

    A cached test reaches its counts and rank sums incrementally and a fresh one in one batch;
    the decisions must agree exactly, but the probabilities are floats from batches of another
    shape (BLAS may sum in another order), so a few ulp of difference is not a disagreement.
    """
    assert [(e.index, e.reason, e.by) for e in got] == [(e.index, e.reason, e.by) for e in expected]
    np.testing.assert_allclose(
        [e.probability for e in got], [e.probability for e in expected], rtol=1e-12, atol=0
    )


# --------------------------------------------------------------------- closed forms


def test_prob_greater_matches_shared_closed_form_and_table_1():
    g = np.array([0, 3, 20, 15, 7, 0])
    l_ = np.array([4, 0, 10, 15, 9, 0])
    np.testing.assert_allclose(_prob_greater(g, l_), prob_greater_from_counts(g, l_))
    # Seed 002 Table 1 (n = 30, no ties): 20-10 gives 1 - P = 0.0307, 15-15 gives 0.5000.
    assert 1 - _prob_greater(20, 10) == pytest.approx(0.0307, abs=5e-5)
    assert 1 - _prob_greater(15, 15) == pytest.approx(0.5, abs=1e-12)


def test_idp_lower_probability_puts_the_pseudo_observation_against():
    # P(Beta(n_g, n_l + s) > 1/2) = P(Bin(n_g + n_l + s - 1, 1/2) <= n_g - 1) for integer s.
    assert _prob_greater(5, 0, 1.0) == pytest.approx(stats.binom.cdf(4, 5, 0.5))
    assert _prob_greater(5, 0, 0.0) == 1.0
    assert _prob_greater(12, 3, 1.0) < _prob_greater(12, 3)


def test_band_probability_matches_the_shared_implementation():
    g = np.array([190, 200, 10, 0, 400, 0])
    l_ = np.array([200, 180, 12, 7, 420, 0])
    t = np.array([10, 0, 3, 3, 0, 5])
    for s, eps in [(1.0, 0.05), (3.0, 0.1)]:
        ours = _band_probability(g, l_, t, s, eps)
        theirs = prob_indistinguishable(g, l_, g + l_ + t, prior_strength=s, eps=eps)
        np.testing.assert_allclose(ours, theirs, atol=2e-5)


def test_band_probability_matches_dirichlet_monte_carlo():
    # Literal posterior: theta = W_g + (W_t + W_0)/2 with (W_0, W_g, W_t, W_l) ~ Dir(s, g, t, l).
    # 400k draws: SE <= 0.5/sqrt(4e5) = 8e-4; tolerance 4e-3 is five SE.
    rng = np.random.default_rng(11)
    for g, l_, t in [(200, 190, 10), (60, 50, 0)]:
        w = rng.dirichlet([1.0, g, t, l_], size=400_000)
        theta = w[:, 1] + (w[:, 2] + w[:, 0]) / 2
        mc = np.mean(np.abs(theta - 0.5) < 0.05)
        assert _band_probability([g], [l_], [t], 1.0, 0.05)[0] == pytest.approx(mc, abs=4e-3)


# --------------------------------------------------------------------- joint Monte Carlo


def test_joint_prefix_matches_literal_dirichlet_posterior():
    # Statement k holds when theta_k = sum_l w_l H(d_kl) + w_0/2 > 1/2 with normalised
    # Dir(s, 1, ..., 1) weights; the kernel uses unnormalised Exp(1) weights and drops w_0.
    rng = np.random.default_rng(3)
    n, L, S = 25, 6, 40_000
    signs = np.sign(rng.normal(0.6, 1.0, size=(L, n)))
    signs[2, :4] = 0.0  # some ties
    counts = _joint_prefix_counts(signs, S, np.random.default_rng(5), stop_at=-1.0)
    w = rng.dirichlet(np.r_[1.0, np.ones(n)], size=S)
    heaviside = (signs > 0) + 0.5 * (signs == 0)
    theta = w[:, 1:] @ heaviside.T + w[:, :1] / 2
    literal = np.logical_and.accumulate(theta > 0.5, axis=1).mean(axis=0)
    # Two independent estimates of probabilities near 0.3-0.99: SE of the difference
    # <= sqrt(2 * 0.25 / 4e4) = 0.0035; tolerance 0.015 is > 4 SE.
    np.testing.assert_allclose(counts / S, literal, atol=0.015)
    # The first statement alone is the closed-form marginal (Theorem 2).
    g, l_ = int((signs[0] > 0).sum()), int((signs[0] < 0).sum())
    assert counts[0] / S == pytest.approx(_prob_greater(g, l_), abs=0.01)


def test_joint_prefix_is_reproducible_and_stops_early():
    rng = np.random.default_rng(0)
    signs = np.sign(rng.normal(0.2, 1.0, size=(300, 40)))
    a = _joint_prefix_counts(signs, 2000, np.random.default_rng(9), stop_at=0.9 * 2000)
    b = _joint_prefix_counts(signs, 2000, np.random.default_rng(9), stop_at=0.9 * 2000)
    np.testing.assert_array_equal(a, b)
    assert len(a) < 300 and a[-1] <= 0.9 * 2000
    assert np.all(np.diff(a) <= 0)


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
    p_single = _prob_greater(40, 20)
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


def test_same_seed_same_decisions_and_cache_equals_fresh():
    rng = np.random.default_rng(6)
    q, rows = 12, 400
    scores = rng.normal(np.linspace(0, 0.6, q), 1.0, size=(rows, q))
    cached = BayesianTest(credibility=0.95)
    alive = np.arange(q)
    for n in range(20, rows + 1, 20):
        step_rng = np.random.default_rng([1, n])
        got = cached.decide(RaceView.from_scores(scores[:n, alive], alive), step_rng)
        fresh = BayesianTest(credibility=0.95).decide(
            RaceView.from_scores(scores[:n, alive], alive), np.random.default_rng([1, n])
        )
        _assert_same_decisions(got, fresh)
        if got:
            keep = np.ones(len(alive), dtype=bool)
            keep[[e.index for e in got]] = False
            alive = alive[keep]
    # Unrelated data under the same ids: the cache notices and recounts.
    other = rng.normal(size=(rows, len(alive)))
    a = cached.decide(RaceView.from_scores(other, alive), np.random.default_rng(0))
    b = BayesianTest(credibility=0.95).decide(
        RaceView.from_scores(other, alive), np.random.default_rng(0)
    )
    _assert_same_decisions(a, b)


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


def test_bare_benchmark_loop_races_like_the_engine(monkeypatch):
    # The repository's benchmarks/, found from this file (not the cwd), on sys.path for this
    # test only.
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
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


def test_sign_pattern_gamma_weights_match_the_literal_posterior():
    # Few statements over many instances: instances sharing a sign pattern get one Gamma(k)
    # weight. Compared with the literal Dirichlet posterior, as above (SE of the difference
    # <= 0.0035 at 40k samples each; tolerance 0.015).
    rng = np.random.default_rng(12)
    n, S = 400, 40_000
    signs = np.sign(rng.normal([[0.05], [0.08], [0.1]], 1.0, size=(3, n)))
    signs[1, :30] = 0.0
    counts = _joint_prefix_counts(signs, S, np.random.default_rng(1), stop_at=-1.0)
    w = rng.dirichlet(np.r_[1.0, np.ones(n)], size=S)
    heaviside = (signs > 0) + 0.5 * (signs == 0)
    theta = w[:, 1:] @ heaviside.T + w[:, :1] / 2
    literal = np.logical_and.accumulate(theta > 0.5, axis=1).mean(axis=0)
    np.testing.assert_allclose(counts / S, literal, atol=0.015)


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
