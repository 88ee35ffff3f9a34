"""Tests of racer.stats.frequentist against SciPy, scikit-posthocs, statsmodels and Demšar.

Frequentist results are deterministic, so library cross-checks use tight tolerances
(rtol 1e-10); published numbers are checked to the digits the source prints.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from racer.stats import (
    conover,
    conover_from_sums,
    control_test,
    friedman,
    friedman_from_sums,
    mean_ranks_test,
    mean_ranks_test_from_sums,
    nemenyi,
    p_adjust,
    sign_test,
    sign_test_from_counts,
    wilcoxon,
)

# Demšar (2006), Table 6: 14 data sets x (C4.5, C4.5+m, C4.5+cf, C4.5+m+cf).
DEMSAR = np.array(
    [
        [0.763, 0.768, 0.771, 0.798],
        [0.599, 0.591, 0.590, 0.569],
        [0.954, 0.971, 0.968, 0.967],
        [0.628, 0.661, 0.654, 0.657],
        [0.882, 0.888, 0.886, 0.898],
        [0.936, 0.931, 0.916, 0.931],
        [0.661, 0.668, 0.609, 0.685],
        [0.583, 0.583, 0.563, 0.625],
        [0.775, 0.838, 0.866, 0.875],
        [1.000, 1.000, 1.000, 1.000],
        [0.940, 0.962, 0.965, 0.962],
        [0.619, 0.666, 0.614, 0.669],
        [0.972, 0.981, 0.975, 0.975],
        [0.957, 0.978, 0.946, 0.970],
    ]
)

RTOL = 1e-10

# Small integer scores make ties (within blocks) and zero differences common.
score_matrices = st.integers(2, 12).flatmap(
    lambda n: st.integers(2, 6).flatmap(
        lambda k: st.lists(
            st.lists(st.integers(0, 4), min_size=k, max_size=k), min_size=n, max_size=n
        )
    )
).map(lambda rows: np.array(rows, dtype=float))


# ------------------------------------------------------------------------------------------
# Demšar's (2006) worked examples
# ------------------------------------------------------------------------------------------


def test_demsar_mean_ranks_are_recomputed_from_the_printed_table():
    # Demšar prints 3.143, 2.000, 2.893, 1.964; ranking his own 3-decimal table gives
    # 2.929 and 1.929 for the last two (the "voting" row ties .975/.975), as autorank also
    # finds. We test the recomputed values, exactly as rank sums over 14 blocks.
    res = friedman(DEMSAR)
    np.testing.assert_allclose(res.mean_ranks, np.array([44, 28, 41, 27]) / 14, rtol=RTOL)
    np.testing.assert_allclose(res.mean_ranks, [3.143, 2.000, 2.929, 1.929], atol=5e-4)
    assert not np.allclose(res.mean_ranks[2:], [2.893, 1.964], atol=5e-3)


def test_demsar_friedman_and_iman_davenport():
    res = friedman(DEMSAR)
    ref = stats.friedmanchisquare(*DEMSAR.T)
    assert res.statistic == pytest.approx(ref.statistic, rel=RTOL)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=RTOL)
    assert res.statistic == pytest.approx(10.952, abs=5e-4)
    assert res.pvalue == pytest.approx(0.0120, abs=5e-5)
    # Demšar's hand formula has no tie correction: chi2_F = 9.857, F_F = 3.987, p = 0.0144.
    raw = friedman(DEMSAR, tie_correction=False)
    assert raw.statistic == pytest.approx(9.857, abs=5e-4)
    assert raw.pvalue == pytest.approx(0.0198, abs=5e-5)
    assert raw.iman_davenport == pytest.approx(3.987, abs=5e-4)
    assert raw.iman_davenport_pvalue == pytest.approx(0.0144, abs=5e-5)
    # Demšar's own (rounded-rank) numbers 9.28 / 3.69 are not reproducible from the table.
    assert raw.statistic != pytest.approx(9.28, abs=0.05)
    stat, p = res
    assert (stat, p) == (res.statistic, res.pvalue)


def test_demsar_nemenyi_and_critical_difference():
    res = nemenyi(DEMSAR)
    ref = sp.posthoc_nemenyi_friedman(DEMSAR).to_numpy()
    np.testing.assert_allclose(res.pvalue, ref, rtol=1e-9)
    # C4.5 vs C4.5+m+cf: significant only at 0.10.
    assert res.pvalue[0, 3] == pytest.approx(0.0617, abs=5e-5)
    assert res.statistic[3, 0] > 0  # C4.5+m+cf (rank 1.93) better than C4.5 (rank 3.14)
    assert res.critical_difference(0.05) == pytest.approx(1.2536, abs=5e-5)
    assert res.critical_difference(0.10) == pytest.approx(1.118, abs=5e-4)
    # Same decision through the CD: mean-rank gap 1.214 < CD_0.05 = 1.254.
    gap = res.mean_ranks[0] - res.mean_ranks[3]
    assert res.critical_difference(0.10) < gap < res.critical_difference(0.05)


def test_demsar_control_test_holm_matches_posthoc_demsar():
    res = control_test(DEMSAR, 0, p_adjust="holm")
    ref = sp.posthoc_demsar(pd.DataFrame(DEMSAR), control=0, p_adjust="holm")
    np.testing.assert_allclose(res.pvalue[1:], ref.to_numpy()[0, 1:], rtol=1e-9)
    raw = control_test(DEMSAR, 0, p_adjust=None)
    # Unadjusted p: C4.5+m 0.019, C4.5+cf 0.66, C4.5+m+cf 0.013 (notes); Holm keeps 1 and 3.
    np.testing.assert_allclose(raw.pvalue[1:], [0.0192, 0.6605, 0.0128], atol=5e-4)
    assert np.isnan(res.pvalue[0]) and np.isnan(res.statistic[0])
    assert list(res.pvalue[1:] < 0.05) == [True, False, True]


def test_demsar_conover():
    res = conover(DEMSAR)
    ref = sp.posthoc_conover_friedman(DEMSAR).to_numpy()
    np.testing.assert_allclose(res.pvalue, ref, rtol=1e-9)
    # An older scikit-posthocs gave 0.0187 here on Demšar's (2006) data; 0.17.1 gives 0.0086.
    assert res.pvalue[0, 1] == pytest.approx(0.0086, abs=5e-5)
    np.testing.assert_array_equal(res.rank_sums, [44, 28, 41, 27])
    assert res.df == 39


def test_demsar_wilcoxon_two_classifiers():
    a, b = DEMSAR[:, 0], DEMSAR[:, 1]
    res = wilcoxon(a, b)  # zsplit, as Demšar
    assert res.statistic == 12.0
    assert (res.r_plus, res.r_minus) == (12.0, 93.0)  # x = C4.5 wins the small side
    assert res.pvalue == pytest.approx(0.01097, abs=5e-6)
    assert res.method == "asymptotic"
    ref = stats.wilcoxon(a, b, zero_method="zsplit")
    assert res.pvalue == pytest.approx(ref.pvalue, rel=RTOL)
    assert wilcoxon(b, a).r_plus == 93.0
    assert wilcoxon(a - b).pvalue == res.pvalue  # one sample of differences
    assert wilcoxon(a, b, zero_method="wilcox").statistic == 6.5
    assert wilcoxon(a, b, zero_method="pratt").statistic == 10.5


def test_demsar_sign_test_ties_split_and_dropped():
    a, b = DEMSAR[:, 0], DEMSAR[:, 1]
    split = sign_test(b, a)
    assert (split.n_wins, split.n_losses, split.n_ties) == (10, 2, 2)
    assert (split.statistic, split.n) == (11.0, 14)
    assert split.pvalue == pytest.approx(stats.binomtest(11, 14).pvalue, rel=RTOL)
    assert split.pvalue == pytest.approx(0.0574, abs=5e-5)
    dropped = sign_test(b, a, ties="drop")
    assert dropped.pvalue == pytest.approx(0.0386, abs=5e-5)
    assert dropped.pvalue == pytest.approx(stats.binomtest(10, 12).pvalue, rel=RTOL)


# ------------------------------------------------------------------------------------------
# Cross-checks on generated inputs with ties and zeros
# ------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(score_matrices)
def test_friedman_matches_scipy(scores):
    res = friedman(scores)
    if np.all(scores == scores[:, :1]):
        # Decision: no ordering information -> chi2 = 0, p = 1 (SciPy returns NaN).
        assert (res.statistic, res.pvalue, res.iman_davenport_pvalue) == (0.0, 1.0, 1.0)
        return
    if scores.shape[1] >= 3 and scores.shape[0] >= 2:
        ref = stats.friedmanchisquare(*scores.T)
        assert res.statistic == pytest.approx(ref.statistic, rel=RTOL, abs=1e-12)
        assert res.pvalue == pytest.approx(ref.pvalue, rel=RTOL, abs=1e-14)
    # Iman-Davenport equals the repeated-measures ANOVA F on the ranks (Conover's T2).
    n, k = scores.shape
    ranks = stats.rankdata(-scores, axis=1)
    grand = ranks.mean()
    ss_treat = n * np.sum((ranks.mean(axis=0) - grand) ** 2)
    ss_block = k * np.sum((ranks.mean(axis=1) - grand) ** 2)
    ss_error = np.sum((ranks - grand) ** 2) - ss_treat - ss_block
    if ss_error > 1e-9:
        f_anova = (ss_treat / (k - 1)) / (ss_error / ((k - 1) * (n - 1)))
        assert res.iman_davenport == pytest.approx(f_anova, rel=1e-9)


def _rank_sums(scores):
    """(rank sums, sum of squared ranks, n) of a score matrix: what a race keeps."""
    r = stats.rankdata(-np.asarray(scores, dtype=float), axis=1)
    return r.sum(axis=0), float(np.sum(r**2)), r.shape[0]


def test_friedman_from_sums_by_hand():
    # Ranks (1 = best) per row: [1,2,3], [1,3,2], [1,2,3] -> R = [3, 7, 8];
    # T = 12 * ((3-6)^2 + (7-6)^2 + (8-6)^2) / (3*3*4) = 168 / 36.
    res = friedman_from_sums(*_rank_sums([[3.0, 2.0, 1.0], [3.0, 1.0, 2.0], [3.0, 2.0, 1.0]]))
    assert res.statistic == pytest.approx(168 / 36)
    assert res.pvalue == pytest.approx(np.exp(-res.statistic / 2))  # chi-square(2) survival
    assert (res.mean_ranks * 3).tolist() == [3.0, 7.0, 8.0]


@settings(max_examples=40, deadline=None)
@given(score_matrices, st.booleans())
def test_the_from_sums_tests_are_the_tests_on_the_matrix(scores, tie_correction):
    # The F-race's entries: the same results from a race's rank sums (the tie term from the
    # squared ranks equals the one from the tie groups, exactly).
    sums, sum_sq, n = _rank_sums(scores)
    got = friedman_from_sums(sums, sum_sq, n, tie_correction=tie_correction)
    ref = friedman(scores, tie_correction=tie_correction)
    for field in ("statistic", "pvalue", "iman_davenport", "iman_davenport_pvalue"):
        assert getattr(got, field) == getattr(ref, field), field
    np.testing.assert_array_equal(got.mean_ranks, ref.mean_ranks)
    for alternative in ("two-sided", "greater"):
        got = mean_ranks_test_from_sums(sums, n, alternative=alternative, p_adjust="holm")
        ref = mean_ranks_test(scores, alternative=alternative, p_adjust="holm")
        np.testing.assert_array_equal(got.pvalue, ref.pvalue)
        np.testing.assert_array_equal(got.statistic, ref.statistic)
    if n >= 2:
        got, ref = conover_from_sums(sums, sum_sq, n), conover(scores)
        np.testing.assert_array_equal(got.pvalue, ref.pvalue)
        assert got.critical_difference(0.05) == ref.critical_difference(0.05)


@pytest.mark.parametrize("ties", [False, True])
def test_friedman_from_sums_matches_scipy(ties):
    rng = np.random.default_rng(1)
    x = rng.normal([0.0, 0.2, 0.5, 0.6], 1.0, size=(25, 4))
    x = np.round(x, 0) if ties else x
    res = friedman_from_sums(*_rank_sums(x))
    ref = stats.friedmanchisquare(*x.T)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("call, error, match", [
    (lambda: friedman_from_sums([1.0, 2.0], 5.0, 0), ValueError, r"`n_blocks` must be >= 1"),
    (lambda: friedman_from_sums([3.0], 9.0, 3), ValueError, r"`rank_sums` needs at least 2"),
    (lambda: friedman_from_sums([3.0, 4.0], 15.0, 3), ValueError,
     r"`rank_sums` must be the sums of 3 blocks of ranks 1..2 \(total 9\); got total 7"),
    (lambda: friedman_from_sums([4.0, 5.0], 100.0, 3), ValueError,
     r"`rank_sq_sum` must lie in \[13.5, 15\]"),
    (lambda: friedman_from_sums([4.0, 5.0], "15", 3), TypeError, r"`rank_sq_sum` must be a real"),
    (lambda: friedman_from_sums([4.0, np.nan], 15.0, 3), ValueError, r"`rank_sums` must be finite"),
    (lambda: conover_from_sums([1.0, 2.0], 5.0, 1), ValueError, r"`n_blocks` must be >= 2"),
    (lambda: conover_from_sums([4.0, 5.0], 15.0, 3, p_adjust="bonf"), ValueError, r"`p_adjust`"),
    (lambda: mean_ranks_test_from_sums([4.0, 5.0], 3.5), TypeError, r"`n_blocks`"),
    (lambda: mean_ranks_test_from_sums([4.0, 5.0], 3, alternative="up"), ValueError,
     r"`alternative`"),
])
def test_from_sums_validation_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


@settings(max_examples=25, deadline=None)
@given(score_matrices, st.sampled_from([None, "holm", "bonferroni", "fdr_bh"]))
def test_conover_matches_scikit_posthocs(scores, adjust):
    res = conover(scores, p_adjust=adjust)
    ref = sp.posthoc_conover_friedman(scores, p_adjust=adjust).to_numpy()
    finite = np.isfinite(ref)
    np.testing.assert_allclose(res.pvalue[finite], ref[finite], rtol=1e-9, atol=1e-14)
    # Antisymmetric statistic, positive when the row candidate has the smaller rank sum.
    np.testing.assert_array_equal(res.statistic, -res.statistic.T)
    i, j = np.triu_indices(scores.shape[1], 1)
    better = res.rank_sums[i] < res.rank_sums[j]
    assert np.all(res.statistic[i, j][better] > 0)


def test_conover_critical_difference_is_irace_t_star():
    rng = np.random.default_rng(3)
    costs = rng.normal(size=(12, 6)) + np.linspace(0, 1.5, 6)
    res = conover(costs, maximize=False)
    n, k = costs.shape
    r = stats.rankdata(costs, axis=1)
    big_r = r.sum(axis=0)
    t_star = stats.t.ppf(0.975, (n - 1) * (k - 1)) * np.sqrt(
        2 * (n * np.sum(r**2) - np.sum(big_r**2)) / ((n - 1) * (k - 1))
    )
    assert res.critical_difference(0.05) == pytest.approx(t_star, rel=RTOL)
    best = int(np.argmin(res.rank_sums))
    eliminated = res.rank_sums - res.rank_sums[best] > t_star
    np.testing.assert_array_equal(eliminated, res.pvalue[best] < 0.05)


@settings(max_examples=30, deadline=None)
@given(score_matrices)
def test_nemenyi_matches_scikit_posthocs(scores):
    res = nemenyi(scores)
    ref = sp.posthoc_nemenyi_friedman(scores).to_numpy()
    np.testing.assert_allclose(res.pvalue, ref, rtol=1e-8, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    score_matrices,
    st.sampled_from(["two-sided", "greater", "less"]),
    st.sampled_from([None, "holm", "hochberg"]),
    st.data(),
)
def test_control_test_matches_posthoc_demsar(scores, alternative, adjust, data):
    k = scores.shape[1]
    control = data.draw(st.integers(0, k - 1))
    res = control_test(scores, control, p_adjust=adjust, alternative=alternative)
    sm_name = {"hochberg": "simes-hochberg"}.get(adjust, adjust)
    ref = sp.posthoc_demsar(
        pd.DataFrame(scores), control=control, p_adjust=sm_name, alternative=alternative,
        to_matrix=False,
    )
    others = [c for c in range(k) if c != control]
    np.testing.assert_allclose(res.pvalue[others], ref.to_numpy(), rtol=1e-9, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(score_matrices, st.sampled_from(["two-sided", "greater", "less"]))
def test_mean_ranks_test_formula_and_one_sided_meaning(scores, alternative):
    n, k = scores.shape
    res = mean_ranks_test(scores, alternative=alternative)
    mean_ranks = stats.rankdata(-scores, axis=1).mean(axis=0)
    z = (mean_ranks[None, :] - mean_ranks[:, None]) / np.sqrt(k * (k + 1) / (6 * n))
    np.testing.assert_allclose(res.statistic, z, rtol=RTOL, atol=1e-14)
    off = ~np.eye(k, dtype=bool)
    expected = {
        "two-sided": 2 * stats.norm.sf(np.abs(z)),
        "greater": stats.norm.sf(z),  # (i, j): "i better than j"
        "less": stats.norm.cdf(z),
    }[alternative]
    np.testing.assert_allclose(res.pvalue[off], expected[off], rtol=RTOL)
    assert np.all(np.diag(res.pvalue) == 1.0)


def test_mean_ranks_test_one_sided_direction_and_adjustment_family():
    rng = np.random.default_rng(7)
    scores = rng.normal(size=(25, 4)) + [0.0, 0.0, 0.0, 2.0]
    greater = mean_ranks_test(scores, alternative="greater")
    less = mean_ranks_test(scores, alternative="less")
    assert np.all(greater.pvalue[3, :3] < 0.01)  # candidate 3 better than every other
    assert np.all(greater.pvalue[:3, 3] > 0.99)
    np.testing.assert_allclose(greater.pvalue, less.pvalue.T, rtol=RTOL)
    # One-sided adjustment counts the k (k - 1) ordered pairs; two-sided the k (k - 1) / 2.
    adj = mean_ranks_test(scores, alternative="greater", p_adjust="bonferroni")
    np.testing.assert_allclose(adj.pvalue[3, 0], min(1.0, 12 * greater.pvalue[3, 0]), rtol=RTOL)
    two = mean_ranks_test(scores)
    two_adj = mean_ranks_test(scores, p_adjust="bonferroni")
    np.testing.assert_allclose(two_adj.pvalue[3, 0], min(1.0, 6 * two.pvalue[3, 0]), rtol=RTOL)
    np.testing.assert_array_equal(two_adj.pvalue, two_adj.pvalue.T)


@settings(max_examples=25, deadline=None)
@given(score_matrices)
def test_maximize_false_mirrors_ranks(scores):
    k = scores.shape[1]
    up = friedman(scores)
    down = friedman(scores, maximize=False)
    np.testing.assert_allclose(down.mean_ranks, k + 1 - up.mean_ranks, rtol=RTOL)
    assert down.statistic == pytest.approx(up.statistic, rel=RTOL, abs=1e-12)
    assert friedman(-scores).statistic == pytest.approx(down.statistic, rel=RTOL, abs=1e-12)
    for fn in (conover, mean_ranks_test, nemenyi):
        a, b = fn(scores), fn(scores, maximize=False)
        np.testing.assert_allclose(a.statistic, -b.statistic, rtol=RTOL, atol=1e-14)
        np.testing.assert_allclose(a.pvalue, b.pvalue, rtol=RTOL, atol=1e-14)
        np.testing.assert_allclose(fn(-scores).statistic, b.statistic, rtol=RTOL, atol=1e-14)


def test_degenerate_matrices():
    tied = np.ones((5, 3))
    res = friedman(tied)
    assert (res.statistic, res.pvalue, res.iman_davenport) == (0.0, 1.0, 0.0)
    assert np.all(conover(tied).pvalue == 1.0)
    # Every block ranks the candidates alike: chi2 reaches n (k - 1), F and Conover's t are
    # infinite, p-values 0 for every differing pair.
    same_order = np.tile([3.0, 2.0, 1.0], (6, 1)) + np.arange(6)[:, None]
    res = friedman(same_order)
    assert res.statistic == pytest.approx(12.0)
    assert (res.iman_davenport, res.iman_davenport_pvalue) == (np.inf, 0.0)
    c = conover(same_order)
    assert c.statistic[0, 2] == np.inf and c.pvalue[0, 2] == 0.0


def test_dataframe_names_and_control_by_label():
    df = pd.DataFrame(DEMSAR, columns=["c45", "c45m", "c45cf", "c45mcf"])
    res = control_test(df, "c45", p_adjust="holm")
    assert res.control == 0 and res.names == ("c45", "c45m", "c45cf", "c45mcf")
    np.testing.assert_allclose(res.pvalue, control_test(DEMSAR, 0).pvalue, rtol=RTOL)
    assert friedman(df).names == ("c45", "c45m", "c45cf", "c45mcf")
    frame = conover(df).to_frame()
    assert list(frame.columns) == list(df.columns) and list(frame.index) == list(df.columns)
    pd.testing.assert_frame_equal(
        frame, sp.posthoc_conover_friedman(df), check_exact=False, rtol=1e-9
    )
    assert list(nemenyi(DEMSAR).to_frame("statistic").columns) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="control"):
        control_test(df, "nope")


def test_control_test_conover_and_sign_methods():
    rng = np.random.default_rng(11)
    scores = rng.normal(size=(20, 4)) + [0.0, 0.3, 1.0, -0.5]
    res = control_test(scores, 0, method="conover", p_adjust=None)
    np.testing.assert_allclose(res.pvalue[1:], conover(scores).pvalue[0, 1:], rtol=RTOL)
    np.testing.assert_allclose(res.statistic[1:], conover(scores).statistic[1:, 0], rtol=RTOL)
    res = control_test(scores, 0, method="sign", p_adjust=None)
    for j in range(1, 4):
        assert res.pvalue[j] == pytest.approx(sign_test(scores[:, j], scores[:, 0]).pvalue)


# ------------------------------------------------------------------------------------------
# Sign and Wilcoxon tests
# ------------------------------------------------------------------------------------------


# n <= 10 keeps SciPy's sign-flip enumeration (its `auto` for ties with n <= 13) cheap; the
# asymptotic branch (n >= 14) is checked separately below.
paired = st.integers(1, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),
    )
)


@settings(max_examples=60, deadline=None)
@given(paired, st.sampled_from(["two-sided", "greater", "less"]))
def test_sign_test_matches_binomtest(xy, alternative):
    x, y = (np.array(v, dtype=float) for v in xy)
    wins, losses = int(np.sum(x > y)), int(np.sum(x < y))
    ties = len(x) - wins - losses
    dropped = sign_test(x, y, alternative=alternative, ties="drop")
    ref = stats.binomtest(wins, wins + losses, alternative=alternative).pvalue if wins + losses else 1.0
    assert dropped.pvalue == pytest.approx(ref, rel=1e-9)
    split = sign_test(x, y, alternative=alternative)
    k, n = wins + ties // 2, wins + losses + 2 * (ties // 2)
    ref = stats.binomtest(k, n, alternative=alternative).pvalue if n else 1.0
    assert split.pvalue == pytest.approx(ref, rel=1e-9)
    _, p_vec, _ = sign_test_from_counts([wins], [losses], [ties], alternative=alternative)
    assert p_vec[0] == split.pvalue


@settings(max_examples=15, deadline=None)
@given(
    paired,
    st.sampled_from(["zsplit", "wilcox", "pratt"]),
    st.sampled_from(["two-sided", "greater", "less"]),
)
def test_wilcoxon_auto_matches_scipy_with_ties_and_zeros(xy, zero_method, alternative):
    x, y = (np.array(v, dtype=float) for v in xy)
    d = x - y
    if zero_method == "wilcox" and not np.any(d != 0) or not np.any(d != 0):
        res = wilcoxon(x, y, zero_method=zero_method, alternative=alternative)
        assert res.pvalue == 1.0  # decision: no non-zero difference, no evidence
        return
    res = wilcoxon(x, y, zero_method=zero_method, alternative=alternative)
    # SciPy's auto uses exact tables without ties/zeros, a full sign-flip enumeration for
    # n <= 13 otherwise (our exact conditional distribution), asymptotic beyond.
    ref = stats.wilcoxon(x, y, zero_method=zero_method, alternative=alternative)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    if alternative == "two-sided":
        assert res.statistic == pytest.approx(ref.statistic)


def test_wilcoxon_exact_handles_ties_where_scipy_exact_cannot():
    a, b = DEMSAR[:, 0], DEMSAR[:, 1]
    exact = wilcoxon(a, b, method="exact")
    assert exact.method == "exact"
    # Exact conditional p by brute force over the 2^12 sign patterns of the non-zero diffs.
    d = a - b
    ranks = stats.rankdata(np.abs(d))
    nz = d != 0
    r = ranks[nz]
    signs = ((np.arange(2 ** r.size)[:, None] >> np.arange(r.size)) & 1).astype(float)
    r_plus = signs @ r + ranks[~nz].sum() / 2
    obs = np.sum(ranks[d > 0]) + ranks[~nz].sum() / 2
    brute = min(1.0, 2 * min(np.mean(r_plus <= obs + 1e-9), np.mean(r_plus >= obs - 1e-9)))
    assert exact.pvalue == pytest.approx(brute, rel=1e-12)
    # Without ties or zeros the conditional distribution is SciPy's exact table.
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=30), rng.normal(size=30) + 0.4
    for alt in ("two-sided", "greater", "less"):
        ours = wilcoxon(x, y, method="exact", alternative=alt).pvalue
        assert ours == pytest.approx(stats.wilcoxon(x, y, method="exact", alternative=alt).pvalue, rel=1e-10)


_STEPS = np.resize([1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0], 50)


# p-values of R 4's wilcox.test(d, rep(0, length(d)), paired = TRUE) (default exact = NULL,
# correct = TRUE), printed with sprintf("%.17g").
@pytest.mark.parametrize("d, r_pvalue, method", [
    ([1.5, -0.3, 2.2, 0.8, -1.1, 3.4, 0.25, 1.9, -0.6, 2.7], 0.083984375, "exact"),
    ([1, 2, 2, -1, 3, 3, 3, -2, 4, 1], 0.039911663879527694, "asymptotic"),  # ties
    (np.arange(1, 51) * _STEPS, 0.005597185053779691, "asymptotic"),  # 50 pairs
    (np.arange(1, 50) * _STEPS[:49], 0.0083211925581423447, "exact"),  # 49 pairs
    ([0, 1.5, -0.3, 2.2, 0.8, -1.1, 3.4, 0.25], 0.20489389381637854, "asymptotic"),  # a zero
])
def test_wilcoxon_method_r_is_r_s_wilcox_test(d, r_pvalue, method):
    d = np.asarray(d, dtype=float)
    res = wilcoxon(d, np.zeros_like(d), zero_method="wilcox", correction=True, method="R")
    assert res.method == method
    assert res.pvalue == pytest.approx(r_pvalue, rel=1e-12)


def test_wilcoxon_method_r_matches_scipy_on_both_sides_of_the_switch():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=40), rng.normal(size=40) + 0.8  # < 50 pairs, no ties: exact
    res = wilcoxon(x, y, zero_method="wilcox", correction=True, method="R")
    assert res.method == "exact"
    assert res.pvalue == pytest.approx(stats.wilcoxon(x, y, method="exact").pvalue, rel=1e-12)
    rng = np.random.default_rng(6)
    for size, digits in ((120, 1), (30, 0)):  # 120 pairs; 30 pairs with ties and zeros
        x, y = np.round(rng.normal(size=size), digits), np.round(rng.normal(0.2, 1, size), digits)
        res = wilcoxon(x, y, zero_method="wilcox", correction=True, method="R")
        ref = stats.wilcoxon(x, y, zero_method="wilcox", correction=True, method="asymptotic")
        assert res.method == "asymptotic"
        assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("zero_method", ["zsplit", "wilcox", "pratt"])
@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_asymptotic_matches_scipy(zero_method, correction):
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=40), 1)
    y = np.round(rng.normal(size=40) + 0.3, 1)
    res = wilcoxon(x, y, zero_method=zero_method, method="asymptotic", correction=correction)
    ref = stats.wilcoxon(x, y, zero_method=zero_method, method="asymptotic", correction=correction)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=RTOL)
    assert res.statistic == pytest.approx(ref.statistic, rel=RTOL)


# ------------------------------------------------------------------------------------------
# p-value adjustment
# ------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.02, 0.04, 0.05, 0.3, 0.8, 1.0]) | st.floats(0, 1),
             min_size=1, max_size=25),
    st.sampled_from(["bonferroni", "holm", "hochberg", "hommel", "bh", "by"]),
)
def test_p_adjust_matches_statsmodels(pvals, method):
    sm_name = {"hochberg": "simes-hochberg", "bh": "fdr_bh", "by": "fdr_by"}.get(method, method)
    ref = multipletests(np.array(pvals), method=sm_name)[1]
    np.testing.assert_allclose(p_adjust(pvals, method), ref, rtol=1e-12, atol=1e-15)


def test_p_adjust_keeps_shape_and_accepts_aliases():
    rng = np.random.default_rng(0)
    p = rng.random((3, 4)) ** 3
    out = p_adjust(p, "simes-hochberg")
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out.ravel(), multipletests(p.ravel(), method="simes-hochberg")[1])
    assert p_adjust(0.01, "bonferroni") == pytest.approx(0.01)


@pytest.mark.parametrize(
    "bad, match",
    [([0.1, np.nan], "NaN"), ([0.1, 1.5], r"\[0, 1\]"), ([], "at least one"), ("abc", "pvalues")],
)
def test_p_adjust_bad_input(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        p_adjust(bad)


def test_p_adjust_unknown_method():
    with pytest.raises(ValueError, match="`method`.*'sidak'"):
        p_adjust([0.1], "sidak")


# ------------------------------------------------------------------------------------------
# Input validation
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [friedman, nemenyi, conover, mean_ranks_test])
@pytest.mark.parametrize(
    "scores, match",
    [
        (np.ones(5), "2-D"),
        (np.ones((5, 1)), "at least 2 candidates"),
        (np.ones((1, 3)), "at least 2 blocks"),
        (np.array([[1.0, np.nan], [1.0, 2.0]]), "finite"),
        (np.array([[1.0, np.inf], [1.0, 2.0]]), "finite"),
        ([["a", "b"], ["c", "d"]], "scores"),
    ],
)
def test_score_matrix_validation(fn, scores, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fn(scores)


def test_option_validation_names_the_argument():
    s = np.arange(12.0).reshape(4, 3)
    with pytest.raises(ValueError, match="`alternative`.*'bigger'"):
        mean_ranks_test(s, alternative="bigger")
    with pytest.raises(ValueError, match="`p_adjust`.*'nope'"):
        conover(s, p_adjust="nope")
    with pytest.raises(TypeError, match="`maximize`"):
        friedman(s, maximize="yes")
    with pytest.raises(ValueError, match="`control`.*\\[0, 2\\]"):
        control_test(s, 3)
    with pytest.raises(TypeError, match="`control`"):
        control_test(s, 1.5)
    with pytest.raises(ValueError, match="`method`"):
        control_test(s, 0, method="wilcoxon")
    with pytest.raises(ValueError, match="same length"):
        sign_test([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="same length"):
        wilcoxon([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="`ties`"):
        sign_test([1, 2], [2, 1], ties="half")
    with pytest.raises(ValueError, match="`zero_method`"):
        wilcoxon([1, 2], [2, 1], zero_method="drop")
    with pytest.raises(ValueError, match="`x` must be finite"):
        wilcoxon([1, np.nan], [2, 1])
    with pytest.raises(ValueError, match="`n_wins`"):
        sign_test_from_counts([-1], [2])


def test_results_are_frozen_and_readable():
    res = conover(DEMSAR)
    with pytest.raises(AttributeError):
        res.pvalue = None
    with pytest.raises(ValueError):
        res.pvalue[0, 1] = 0.0
    text = repr(res)
    assert text.startswith("ConoverResult(") and "rank_sums" in text
