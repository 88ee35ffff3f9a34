"""A corpus of malformed inputs to every public ``racer.stats`` function.

Each case is a mistake a user makes; each must end in a ValueError/TypeError whose message names
the argument (checked by regex), or in the documented behaviour. Cases marked ``# fixed`` were
accepted silently, or failed with a bare NumPy/SciPy error, before the corpus existed.
"""

from __future__ import annotations

import numpy as np
import pytest

import racer.stats as rs

pd = pytest.importorskip("pandas")

S = np.random.default_rng(0).normal(size=(8, 3))
X = [0.1, 0.5, 0.3, 0.9, 0.2]
Y = [0.2, 0.4, 0.1, 0.8, 0.3]
LABELS = ([0, 1, 1, 0, 1], [0, 1, 0, 0, 1], [1, 1, 1, 0, 0])
WINS = np.array([[0, 3], [1, 0]])


def _with_nan(a):
    a = np.array(a, dtype=float)
    a.flat[1] = np.nan
    return a


def _rng():
    return np.random.default_rng(0)


CASES = [
    # --- score matrices (friedman, nemenyi, conover, mean_ranks_test, control_test, ...) ---
    pytest.param(lambda: rs.friedman(_with_nan(S)), ValueError, r"`scores` must be finite",
                 id="friedman-nan"),
    pytest.param(lambda: rs.nemenyi(np.r_[S, [[np.inf, 0, 0]]]), ValueError,
                 r"`scores` must be finite; found inf", id="nemenyi-inf"),
    pytest.param(lambda: rs.conover([1.0, 2.0, 3.0]), ValueError, r"`scores` must be 2-D",
                 id="conover-1d"),
    pytest.param(lambda: rs.mean_ranks_test(np.zeros((2, 3, 4))), ValueError,
                 r"`scores` must be 2-D", id="mean-ranks-3d"),
    pytest.param(lambda: rs.friedman(np.zeros((5, 1))), ValueError,
                 r"`scores` needs at least 2 candidates", id="friedman-one-candidate"),
    pytest.param(lambda: rs.friedman(np.zeros((0, 3))), ValueError,
                 r"`scores` needs at least 2 blocks", id="friedman-zero-rows"),
    pytest.param(lambda: rs.nemenyi(S[:1]), ValueError, r"`scores` needs at least 2 blocks",
                 id="nemenyi-one-row"),
    pytest.param(lambda: rs.friedman([[1, 2, 3], [1, 2]]), TypeError,
                 r"`scores` must be a 2-D array of numbers", id="friedman-ragged"),
    pytest.param(lambda: rs.friedman([["a", "b"], ["c", "d"]]), TypeError, r"`scores`",
                 id="friedman-strings"),
    pytest.param(lambda: rs.friedman([["1", "2"], ["3", "0"], ["1", "5"]]), TypeError,  # fixed
                 r"`scores` must be a 2-D array of numbers", id="friedman-digit-strings"),
    pytest.param(lambda: rs.friedman(np.array([[True, False], [False, True]])), TypeError,
                 r"`scores` .*not booleans", id="friedman-bool-matrix"),  # fixed
    pytest.param(lambda: rs.friedman(np.array([[1 + 1j, 2], [3, 4], [1, 2]])), TypeError,
                 r"`scores` .*complex", id="friedman-complex"),  # fixed
    pytest.param(lambda: rs.friedman(np.array([[1.0, None], [2.0, 3.0]], dtype=object)),
                 ValueError, r"`scores` must be finite", id="friedman-object-none"),
    pytest.param(lambda: rs.friedman(np.array([[1.0, "2"], [2.0, 3.0]], dtype=object)),
                 TypeError, r"`scores` .*found '2' \(str\)", id="friedman-object-str"),  # fixed
    pytest.param(lambda: rs.friedman(pd.DataFrame({"a": ["x", "y", "z"], "b": [1.0, 2, 3]})),
                 TypeError, r"`scores`", id="friedman-dataframe-text-column"),
    pytest.param(lambda: rs.conover(pd.DataFrame({"a": ["1", "2", "3"], "b": [1.0, 2, 3]})),
                 TypeError, r"`scores`", id="conover-dataframe-digit-strings"),  # fixed
    pytest.param(lambda: rs.friedman(None), ValueError, r"`scores` must be 2-D",
                 id="friedman-none"),
    pytest.param(lambda: rs.friedman({"a": [1, 2], "b": [3, 4]}), TypeError, r"`scores`",
                 id="friedman-dict"),
    pytest.param(lambda: rs.friedman(S, maximize="no"), TypeError, r"`maximize`",
                 id="friedman-maximize-string"),
    pytest.param(lambda: rs.friedman(S, maximize=0), TypeError, r"`maximize`",
                 id="friedman-maximize-int"),
    pytest.param(lambda: rs.friedman(S, tie_correction="yes"), TypeError, r"`tie_correction`",
                 id="friedman-tie-correction-string"),
    pytest.param(lambda: rs.conover(S, p_adjust="bonf"), ValueError, r"`p_adjust` must be one of",
                 id="conover-unknown-adjustment"),
    pytest.param(lambda: rs.conover(S, alternative="bigger"), ValueError, r"`alternative`",
                 id="conover-unknown-alternative"),
    pytest.param(lambda: rs.mean_ranks_test(S, alternative=None), ValueError, r"`alternative`",
                 id="mean-ranks-alternative-none"),
    pytest.param(lambda: rs.control_test(S, 5), ValueError, r"`control` must be a column index",
                 id="control-out-of-range"),
    pytest.param(lambda: rs.control_test(S, -1), ValueError, r"`control`", id="control-negative"),
    pytest.param(lambda: rs.control_test(S, 1.0), TypeError, r"`control`", id="control-float"),
    pytest.param(lambda: rs.control_test(S, True), TypeError, r"`control`", id="control-bool"),
    pytest.param(lambda: rs.control_test(S, 0, method="tukey"), ValueError, r"`method`",
                 id="control-unknown-method"),
    # --- the same tests from rank sums (the F-race's entries) ---
    pytest.param(lambda: rs.friedman_from_sums([np.nan, 3.0], 9.0, 3), ValueError,
                 r"`rank_sums` must be finite; found nan at index 0", id="friedman-sums-nan"),
    pytest.param(lambda: rs.friedman_from_sums("abc", 9.0, 3), TypeError,
                 r"`rank_sums` must be a 1-D array of numbers", id="friedman-sums-string"),
    pytest.param(lambda: rs.conover_from_sums([4.0, 5.0], 15.0, 3).critical_difference(2.0),
                 ValueError, r"`alpha` must lie in \(0, 1\); got 2.0", id="conover-sums-alpha-two"),
    pytest.param(lambda: rs.conover_from_sums([1.0, 2.0], 5.0, 1), ValueError,
                 r"`n_blocks` must be >= 2; got 1", id="conover-sums-one-block"),
    # --- paired samples ---
    pytest.param(lambda: rs.sign_test(X, Y[:3]), ValueError, r"`x` and `y` must have the same",
                 id="sign-test-mismatched-lengths"),
    pytest.param(lambda: rs.sign_test([], []), ValueError, r"`x` needs at least 1",
                 id="sign-test-empty"),
    pytest.param(lambda: rs.sign_test(X, Y, ties="half"), ValueError, r"`ties`",
                 id="sign-test-unknown-ties"),
    pytest.param(lambda: rs.sign_test([True, False, True], [False, False, True]), TypeError,
                 r"`x` .*not booleans", id="sign-test-booleans"),  # fixed
    pytest.param(lambda: rs.sign_test_from_counts(np.inf, 2), ValueError, r"`n_wins`",
                 id="sign-counts-inf"),  # fixed
    pytest.param(lambda: rs.sign_test_from_counts(1e30, 2), ValueError, r"`n_wins`",
                 id="sign-counts-huge"),  # fixed
    pytest.param(lambda: rs.sign_test_from_counts([1, 2, 3], [1, 2]), ValueError,
                 r"`n_wins`, `n_losses` and `n_ties` must have broadcastable shapes",
                 id="sign-counts-shape-mismatch"),  # fixed
    pytest.param(lambda: rs.sign_test_from_counts(1.5, 2), ValueError, r"`n_wins`",
                 id="sign-counts-fraction"),
    pytest.param(lambda: rs.sign_test_from_counts(True, 2), TypeError, r"`n_wins`",
                 id="sign-counts-bool"),
    pytest.param(lambda: rs.wilcoxon(X, Y, zero_method="drop"), ValueError, r"`zero_method`",
                 id="wilcoxon-unknown-zero-method"),
    pytest.param(lambda: rs.wilcoxon([1.0, np.inf]), ValueError, r"`x` must be finite",
                 id="wilcoxon-inf"),
    pytest.param(lambda: rs.wilcoxon(X, Y, correction="yes"), TypeError, r"`correction`",
                 id="wilcoxon-correction-string"),
    pytest.param(lambda: rs.p_adjust([0.1, 0.2], "bonf"), ValueError, r"`method`",
                 id="p-adjust-unknown-method"),
    pytest.param(lambda: rs.p_adjust([-0.1, 0.2]), ValueError, r"`pvalues` must lie in \[0, 1\]",
                 id="p-adjust-negative"),
    pytest.param(lambda: rs.p_adjust(["0.1", "0.2"]), TypeError, r"`pvalues`",
                 id="p-adjust-strings"),  # fixed
    pytest.param(lambda: rs.p_adjust([True, False]), TypeError, r"`pvalues` .*not booleans",
                 id="p-adjust-booleans"),  # fixed
    # --- classifier comparisons ---
    pytest.param(lambda: rs.correlated_ttest(X, 1.0), ValueError, r"`test_fraction`",
                 id="correlated-t-fraction-one"),
    pytest.param(lambda: rs.correlated_ttest(X, True), TypeError, r"`test_fraction`",
                 id="correlated-t-fraction-bool"),
    pytest.param(lambda: rs.correlated_ttest([0.1], 0.1), ValueError, r"`diffs` needs at least 2",
                 id="correlated-t-one-difference"),
    pytest.param(lambda: rs.mcnemar([0, 1, 1], [0, 1], [1, 1, 1]), ValueError,
                 r"`y_true` and `pred_a` must have the same length", id="mcnemar-mismatch"),
    pytest.param(lambda: rs.mcnemar([0, 1, np.nan], [0, 1, 1], [1, 1, 1]), ValueError,
                 r"`y_true` must not contain NaN", id="mcnemar-nan-label"),
    pytest.param(lambda: rs.proportion_test(*LABELS, alternative="x"), ValueError,
                 r"`alternative`", id="proportion-unknown-alternative"),
    pytest.param(lambda: rs.bootstrap_test(*LABELS, n_samples=0), ValueError, r"`n_samples`",
                 id="bootstrap-zero-samples"),
    pytest.param(lambda: rs.bootstrap_test(*LABELS, metric="auc"), ValueError, r"`metric`",
                 id="bootstrap-unknown-metric"),
    pytest.param(lambda: rs.bootstrap_test(*LABELS, random_state=np.random.PCG64(0)),
                 TypeError, r"`random_state` must be .*; got <numpy\.random\._pcg64\.PCG64",
                 id="bootstrap-bit-generator"),
    pytest.param(lambda: rs.bootstrap_test(*LABELS, metric=lambda a, b: "x", n_samples=20),
                 TypeError, r"`metric` must return a real number",
                 id="bootstrap-metric-returns-string"),  # fixed
    pytest.param(lambda: rs.bootstrap_test(*LABELS, metric=lambda a, b: np.nan, n_samples=20),
                 ValueError, r"`metric` returned a non-finite", id="bootstrap-metric-nan"),
    # --- Bayesian sign test and its primitives ---
    pytest.param(lambda: rs.bayesian_sign_test(X, Y, eps=np.nan), ValueError, r"`eps`",
                 id="sign-eps-nan"),
    pytest.param(lambda: rs.bayesian_sign_test(X, Y, rope="0.1"), TypeError, r"`rope`",
                 id="sign-rope-string"),
    pytest.param(lambda: rs.bayesian_sign_test(X, Y, n_samples=-1), ValueError, r"`n_samples`",
                 id="sign-negative-samples"),
    pytest.param(lambda: rs.bayesian_sign_test(X, Y, random_state=True), TypeError,
                 r"`random_state`", id="sign-random-state-bool"),  # fixed
    pytest.param(lambda: rs.bayesian_sign_test(X, Y, random_state=-1), ValueError,
                 r"`random_state`", id="sign-random-state-negative"),
    pytest.param(lambda: rs.SignCounts(3.0), TypeError, r"`n_candidates`",
                 id="signcounts-float-size"),
    pytest.param(lambda: rs.SignCounts(2).add_blocks([["a", "b"]]), TypeError, r"`rows`",
                 id="signcounts-string-rows"),
    pytest.param(lambda: rs.SignCounts(3).add_blocks(np.zeros((1, 2)), active=[True, False]),
                 TypeError, r"`active`", id="signcounts-bool-active"),
    pytest.param(lambda: rs.prob_greater_matrix([[3, 1], [1, 0]]), ValueError,
                 r"`wins` must have a zero diagonal", id="prob-matrix-diagonal"),  # fixed
    pytest.param(lambda: rs.prob_greater_matrix([[0, 1.5], [1, 0]]), ValueError, r"`wins`",
                 id="prob-matrix-fraction"),
    pytest.param(lambda: rs.prob_greater_matrix(WINS, n_blocks=-1), ValueError, r"`n_blocks`",
                 id="prob-matrix-negative-blocks"),
    pytest.param(lambda: rs.prob_indistinguishable(3, 2, 10, eps=0.5), ValueError,
                 r"`eps` .* must lie in \[0, 0.5\).*; got 0.5", id="band-eps-half"),
    pytest.param(lambda: rs.prob_indistinguishable(3, 2, 10, eps=-0.1), ValueError,
                 r"`eps` .* must lie in \[0, 0.5\).*; got -0.1", id="band-eps-negative"),
    pytest.param(lambda: rs.prob_indistinguishable("3", 2, 10), TypeError, r"`n_greater`",
                 id="band-string-count"),
    pytest.param(lambda: rs.prob_greater_from_counts(-1, 3), ValueError, r"`n_greater`",
                 id="closed-form-negative-count"),  # fixed
    pytest.param(lambda: rs.prob_greater_from_counts(2, np.nan), ValueError, r"`n_less`",
                 id="closed-form-nan-count"),  # fixed
    pytest.param(lambda: rs.prob_greater_from_counts("a", 3), TypeError, r"`n_greater`",
                 id="closed-form-string-count"),  # fixed
    # --- Bayesian signed-rank test ---
    pytest.param(lambda: rs.bayesian_signed_rank(X, Y, prior="dp", prior_strength=1.0),
                 ValueError, r"`prior_strength` must be None or 0", id="signed-rank-dp-strength"),
    pytest.param(lambda: rs.bayesian_signed_rank(X, Y, loss=(1, 2, 3)), TypeError, r"`loss`",
                 id="signed-rank-loss-triple"),
    pytest.param(lambda: rs.bayesian_signed_rank(X, Y, loss=(np.nan, 1)), ValueError,
                 r"`loss\[0\]`", id="signed-rank-loss-nan"),
    pytest.param(lambda: rs.bayesian_signed_rank(X, Y, prior=None), ValueError, r"`prior`",
                 id="signed-rank-prior-none"),
    pytest.param(lambda: rs.signed_rank_prob(np.array(X), 100, 0.5), TypeError, r"`rng`",
                 id="signed-rank-prob-bad-rng"),  # fixed
    pytest.param(lambda: rs.signed_rank_prob(np.array(X), 0, _rng()), ValueError,
                 r"`n_samples`", id="signed-rank-prob-zero-samples"),  # fixed
    pytest.param(lambda: rs.signed_rank_prob([np.nan, 1.0], 100, _rng()), ValueError,
                 r"`z` must be finite", id="signed-rank-prob-nan"),  # fixed
    pytest.param(lambda: rs.signed_rank_prob(np.array(X), 100, _rng(), prior="x"), ValueError,
                 r"`prior`", id="signed-rank-prob-unknown-prior"),  # fixed
    pytest.param(lambda: rs.signed_rank_prob(np.array(X), 100, _rng(), s=-1.0), ValueError,
                 r"`s`", id="signed-rank-prob-negative-strength"),  # fixed
    pytest.param(lambda: rs.signed_rank_posterior_mean(np.array(X), -1.0), ValueError, r"`s`",
                 id="signed-rank-mean-negative-strength"),  # fixed
    pytest.param(lambda: rs.signed_rank_posterior_mean([], 0.5), ValueError, r"`z` needs",
                 id="signed-rank-mean-empty"),  # fixed
    pytest.param(lambda: rs.signed_rank_posterior_mean(np.array(X), "a"), TypeError, r"`s`",
                 id="signed-rank-mean-string-strength"),  # fixed
    # --- Bayesian correlated t-test ---
    pytest.param(lambda: rs.bayesian_correlated_ttest(X, 0.1, rope=np.nan), ValueError,
                 r"`rope`", id="bayes-t-rope-nan"),
    pytest.param(lambda: rs.bayesian_correlated_ttest(pd.Series(["a", "b"]), 0.1), TypeError,
                 r"`diffs`", id="bayes-t-text-series"),
    # --- Bayesian Friedman and its accumulator ---
    pytest.param(lambda: rs.bayesian_friedman(S, method="mc"), ValueError, r"`method`",
                 id="bayes-friedman-unknown-method"),
    pytest.param(lambda: rs.bayesian_friedman(S, credibility="0.9"), TypeError, r"`credibility`",
                 id="bayes-friedman-credibility-string"),
    pytest.param(lambda: rs.bayesian_friedman(S, method="montecarlo", n_samples=1), ValueError,
                 r"`n_samples`", id="bayes-friedman-one-sample"),
    pytest.param(lambda: rs.bayesian_friedman(S, prior_strength=np.inf), ValueError,
                 r"`prior_strength`", id="bayes-friedman-infinite-prior"),
    pytest.param(lambda: rs.bayesian_friedman(S, method="ellipsoid", random_state=[1]),
                 TypeError, r"`random_state`", id="bayes-friedman-random-state-list"),
    pytest.param(lambda: rs.FriedmanAccumulator(maximize="yes"), TypeError, r"`maximize`",
                 id="accumulator-maximize-string"),
    pytest.param(lambda: rs.FriedmanAccumulator().update(S, ids=[0, 0, 1]), ValueError,
                 r"`ids` must not repeat", id="accumulator-repeated-ids"),  # fixed
    pytest.param(lambda: rs.FriedmanAccumulator().update(S).result(credibility=2), ValueError,
                 r"`credibility`", id="accumulator-credibility-two"),
    pytest.param(lambda: rs.auto_min_blocks(0), ValueError, r"`n_candidates`",
                 id="auto-min-blocks-zero"),  # fixed
    pytest.param(lambda: rs.auto_min_blocks(3.0), TypeError, r"`n_candidates`",
                 id="auto-min-blocks-float"),  # fixed
    # --- joint comparisons ---
    pytest.param(lambda: rs.joint_comparisons(S, credibility=1.0), ValueError, r"`credibility`",
                 id="joint-credibility-one"),
    pytest.param(lambda: rs.joint_comparisons(S, n_samples=10.0), TypeError, r"`n_samples`",
                 id="joint-float-samples"),
    pytest.param(lambda: rs.joint_comparisons(S[:, :1]), ValueError, r"`scores` needs at least 2",
                 id="joint-one-candidate"),
    pytest.param(lambda: rs.joint_prefix_probabilities(np.array([[2, 1]]), 100, _rng()),
                 ValueError, r"`signs` must hold only -1, 0 and 1", id="prefix-bad-sign"),
    pytest.param(lambda: rs.joint_prefix_probabilities(np.array([1, -1]), 100, _rng()),
                 ValueError, r"`signs` must be 2-D", id="prefix-1d-signs"),
    pytest.param(lambda: rs.joint_prefix_probabilities(np.array([[1, -1]]), -5, _rng()),
                 ValueError, r"`n_samples`", id="prefix-negative-samples"),
    pytest.param(lambda: rs.joint_prefix_probabilities(np.array([[1, -1]]), 100, "x"),
                 TypeError, r"`random_state`", id="prefix-string-rng"),
]


@pytest.mark.parametrize("call, error, match", CASES)
def test_malformed_input_is_refused_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


# Documented behaviour at the edges: an answer, not an error.
def test_ellipsoid_all_tied_matrix_is_statistic_zero():
    # Documented: the all-tied point is the posterior itself, so it is never rejected.
    res = rs.bayesian_friedman(np.ones((12, 3)), method="ellipsoid")
    assert res.statistic == 0.0 and not res.reject


def test_monte_carlo_friedman_accepts_a_single_block():
    # Documented: the Monte Carlo region is defined for every n >= 1.
    res = rs.bayesian_friedman(S[:1], method="montecarlo", random_state=0)
    assert res.method == "montecarlo" and res.n_samples == 20_000


def test_accumulator_rebuilds_when_rows_shrink():
    # Documented in FriedmanAccumulator.update: fewer rows than before means a rebuild.
    acc = rs.FriedmanAccumulator().update(S)
    acc.update(S[:3])
    assert acc.n_blocks == 3 and acc.n_rebuilds == 2


def test_prob_greater_from_counts_accepts_fractional_pseudo_counts():
    # Documented: counts are Beta parameters; an IDP pseudo-observation makes them fractional.
    assert 0.0 < rs.prob_greater_from_counts(5, 0.5) < 1.0
