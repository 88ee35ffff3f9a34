"""FRaceTest: irace's Conover F-race and Benavoli et al.'s (2015) F-Race_S / F-Race_MR."""

from __future__ import annotations

import numpy as np

from racer.racing.base import RaceView
import pytest
from scipy import stats

from racer.racing.frace import FRaceTest, _hodges_lehmann
from racer.stats import conover, friedman, mean_ranks_test, sign_test_from_counts

from _helpers.races import assert_same_decisions

# The formulas are racer.stats' (friedman_from_sums, conover_from_sums, wilcoxon(method="R"),
# ...), cross-checked against SciPy and R in test_frequentist.py; here, the decisions.


def _decide(test, scores):
    scores = np.asarray(scores, dtype=np.float64)
    return test.decide(RaceView.from_scores(scores), np.random.default_rng(0))


def _matrix(seed, n, shifts, ties=False):
    rng = np.random.default_rng(seed)
    x = rng.normal(shifts, 1.0, size=(n, len(shifts)))
    return np.round(x, 0) if ties else x


# --------------------------------------------------------------------- Friedman and Conover


@pytest.mark.parametrize("ties", [False, True])
def test_conover_eliminations_match_pairwise_conover_pvalues(ties):
    x = _matrix(2, 30, [0.0, 0.1, 0.4, 0.5, 0.9], ties=ties)
    out = _decide(FRaceTest(post_hoc="conover", gate=False), x)
    res = conover(x)
    best = int(np.argmin(res.rank_sums))
    t_star = res.critical_difference(0.05)
    # irace: eliminated iff R_j - R_best > t*, i.e. two-sided Conover p < alpha vs the best.
    expected = {j for j in range(5) if res.rank_sums[j] - res.rank_sums[best] > t_star}
    assert expected == {j for j in range(5) if j != best and res.pvalue[best, j] < 0.05}
    assert {e.index for e in out} == expected and expected
    assert all(e.by == best for e in out)
    gated = _decide(FRaceTest(post_hoc="conover"), x)
    assert gated == (out if friedman(x).pvalue < 0.05 else [])


def test_gate_blocks_conover():
    x = _matrix(3, 8, [0.0, 0.0, 0.0, 0.0])  # no difference: Friedman does not reject
    assert friedman(x).pvalue > 0.05
    assert _decide(FRaceTest(), x) == []


def test_all_tied_eliminates_nothing():
    x = np.ones((10, 4))
    for post_hoc in ("conover", "sign", "mean_ranks"):
        assert _decide(FRaceTest(post_hoc=post_hoc), x) == []
    assert _decide(FRaceTest(), np.ones((10, 2))) == [
        # irace: equal everywhere -> "the first is <= the second everywhere": second dropped
        _decide(FRaceTest(), np.ones((10, 2)))[0]
    ]
    assert _decide(FRaceTest(), np.ones((10, 2)))[0].index == 1


# --------------------------------------------------------------------- two survivors (irace)


def test_two_survivors_dominated_everywhere_goes_without_a_test():
    x = np.column_stack([np.arange(5.0), np.arange(5.0) - 0.1])
    out = _decide(FRaceTest(), x)
    assert [(e.index, e.by) for e in out] == [(1, 0)]


def test_two_survivors_wilcoxon_and_hodges_lehmann():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 2))
    x[:, 0] += 0.8
    p = stats.wilcoxon(x[:, 0], x[:, 1], method="exact").pvalue  # R's switch: exact here
    out = _decide(FRaceTest(), x)
    assert [(e.index, e.by) for e in out] == [(1, 0)]
    assert out[0].probability == pytest.approx(p)
    # HL = median of Walsh averages; by hand for d = (1, 2, 10): averages 1, 1.5, 2, 5.5, 6, 10.
    assert _hodges_lehmann(np.array([1.0, 2.0, 10.0])) == pytest.approx(3.75)


def test_two_survivors_with_ties_use_r_s_normal_approximation():
    # 30 coarse pairs: ties among |d| and zeros, so R's wilcox.test (and irace) switch to the
    # normal approximation with the continuity correction.
    rng = np.random.default_rng(6)
    x = np.round(rng.normal(size=30), 0)
    y = np.round(rng.normal(-1.0, 1, size=30), 0)
    p = stats.wilcoxon(x, y, zero_method="wilcox", correction=True, method="asymptotic").pvalue
    assert p < 0.05
    out = _decide(FRaceTest(), np.column_stack([x, y]))
    assert [(e.index, e.by) for e in out] == [(1, 0)]
    assert out[0].probability == pytest.approx(p, rel=1e-9)


# --------------------------------------------------------------------- F-Race_S and F-Race_MR


def test_sign_post_hoc_matches_one_sided_sign_tests():
    x = _matrix(7, 20, [0.0, 0.3, 0.6, 1.2, 1.3], ties=True)
    out = _decide(FRaceTest(post_hoc="sign", gate=False), x)
    m = x.shape[1]
    expected = set()
    for i in range(m):
        for j in range(m):
            wins, losses = int((x[:, i] > x[:, j]).sum()), int((x[:, i] < x[:, j]).sum())
            if wins > losses:
                p = stats.binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue
                _, p_racer, _ = sign_test_from_counts(
                    wins, losses, 0, alternative="greater", ties="drop"
                )
                assert p == pytest.approx(float(p_racer))
                if p < 0.05:
                    expected.add(j)
    assert {e.index for e in out} == expected and expected
    for e in out:  # each recorded against a winner that beats it significantly
        assert (x[:, e.by] > x[:, e.index]).sum() > (x[:, e.by] < x[:, e.index]).sum()
        assert e.probability < 0.05


def test_mean_ranks_post_hoc_matches_racer_stats():
    x = _matrix(8, 15, [0.0, 0.2, 0.5, 1.0, 1.1, 1.5])
    out = _decide(FRaceTest(post_hoc="mean_ranks", gate=False), x)
    res = mean_ranks_test(x, alternative="greater")
    mean_ranks = stats.rankdata(-x, axis=1).mean(axis=0)
    best = int(np.argmin(mean_ranks))
    expected = {j for j in range(6) if j != best and res.pvalue[best, j] < 0.05}
    # "every pair" and "against the best" coincide: z is monotone in the mean rank.
    every_pair = {j for j in range(6) if np.any(np.delete(res.pvalue[:, j], j) < 0.05)}
    assert expected == every_pair and expected
    assert {e.index for e in out} == expected
    z = (mean_ranks - mean_ranks[best]) / np.sqrt(6 * 7 / (6 * 15))
    for e in out:
        assert e.probability == pytest.approx(stats.norm.sf(z[e.index]))


def test_gate_applies_to_sign_and_mean_ranks():
    x = _matrix(9, 6, [0.0, 0.0, 0.0, 0.0, 0.0, 3.0])
    x[:, :5] = _matrix(10, 6, [0.0] * 5)
    x[:, 5] = x[:, :5].max(axis=1) + 0.01  # wins everywhere, but n = 6
    gated = FRaceTest(post_hoc="sign")
    p_gate = friedman(x).pvalue
    ungated = _decide(FRaceTest(post_hoc="sign", gate=False), x)
    assert {e.index for e in ungated} == {0, 1, 2, 3, 4}  # 6-0 records, p = 1/64
    assert (_decide(gated, x) == []) == (p_gate >= 0.05)


def test_cache_gives_the_same_decisions_as_a_fresh_test():
    rng = np.random.default_rng(11)
    x = rng.normal(np.linspace(0, 0.5, 10), 1.0, size=(300, 10))
    for post_hoc in ("conover", "sign", "mean_ranks"):
        cached, alive = FRaceTest(post_hoc=post_hoc), np.arange(10)
        for n in range(10, 301, 10):
            got = cached.decide(RaceView.from_scores(x[:n, alive], alive), None)
            fresh = FRaceTest(post_hoc=post_hoc).decide(
                RaceView.from_scores(x[:n, alive], alive), None
            )
            assert_same_decisions(got, fresh)
            if got:
                keep = np.ones(len(alive), dtype=bool)
                keep[[e.index for e in got]] = False
                alive = alive[keep]


def test_options_are_validated():
    with pytest.raises(ValueError, match="post_hoc"):
        FRaceTest(post_hoc="tukey")
    with pytest.raises(ValueError, match="alpha"):
        FRaceTest(alpha=0.0)
    with pytest.raises(TypeError, match="gate"):
        FRaceTest(gate="yes")
    assert FRaceTest().get_params() == {"alpha": 0.05, "post_hoc": "conover", "gate": True}
