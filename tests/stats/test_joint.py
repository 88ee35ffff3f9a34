"""Joint multiple comparisons (Benavoli et al. 2015 §5.3) and the one-pass prefix Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from racer.stats import _kernels
from racer.stats.bayesian_sign import prob_greater_from_counts
from racer.stats import joint as joint_module
from racer.stats.joint import (
    _statements_to_simulate,
    _first_fail_histogram,
    _gemm_chunk,
    _kernel_chunk,
    _first_fail_histogram_numpy,
    _prefix_from_histogram,
    joint_comparisons,
    joint_prefix_probabilities,
)


def literal_prefix_probabilities(scores_winner, scores_loser, n_samples, s, rng):
    """Benavoli et al. (2015) §5.3 taken literally: normalised Dir(s, 1..1) weights, the prior point w0 at
    the tie (H(0) = 1/2), theta_k = 1/2 w0 + sum_l w_l H(x_wl - x_ll), statement holds iff
    theta_k > 1/2. Independent of the sign trick and of the kernel."""
    diffs = scores_winner - scores_loser  # (L, n)
    heaviside = np.where(diffs > 0, 1.0, np.where(diffs < 0, 0.0, 0.5))
    w0 = rng.standard_gamma(s, size=n_samples)
    w = rng.standard_exponential((n_samples, diffs.shape[1]))
    total = w0 + w.sum(axis=1)
    theta = (0.5 * w0[:, None] + w @ heaviside.T) / total[:, None]
    holds = theta > 0.5
    return np.cumprod(holds, axis=1).mean(axis=0)


def random_signs(rng, n_statements, n_blocks, p_win):
    u = rng.random((n_statements, n_blocks))
    p = np.broadcast_to(np.asarray(p_win, dtype=float)[:, None], u.shape)
    return np.where(u < p, 1, np.where(u < p + 0.1, 0, -1)).astype(np.int8)


def test_prefixes_match_literal_dirichlet_monte_carlo():
    rng = np.random.default_rng(11)
    n_blocks, n_statements = 25, 6
    # Scores for 4 candidates, statements over overlapping pairs: dependent statements.
    x = rng.normal(size=(n_blocks, 4)) + np.array([0.0, 0.4, 0.8, 1.2])
    x = np.round(x, 1)  # creates some ties
    pairs = [(3, 0), (2, 0), (3, 1), (1, 0), (2, 1), (3, 2)][:n_statements]
    xw = np.array([x[:, a] for a, _ in pairs])
    xl = np.array([x[:, b] for _, b in pairs])
    signs = np.sign(xw - xl).astype(np.int8)
    s_fast, s_lit = 60_000, 60_000
    fast = joint_prefix_probabilities(signs, s_fast, np.random.default_rng(1))
    for prior_strength in (1.0, 5.0):  # the sign trick says s does not matter
        lit = literal_prefix_probabilities(xw, xl, s_lit, prior_strength, np.random.default_rng(2))
        # Two independent estimates of the same p: SE of the difference is
        # sqrt(p(1-p)(1/S1 + 1/S2)); 4 SE makes a false alarm over 12 checks ~1e-3.
        se = np.sqrt(lit * (1 - lit) * (1 / s_fast + 1 / s_lit)) + 1e-12
        assert np.all(np.abs(fast - lit) <= 4 * se + 1e-9), (fast, lit)
    assert np.all(np.diff(fast) <= 0)


def test_single_statement_equals_closed_form_marginal():
    signs = np.array([[1] * 12 + [-1] * 6 + [0] * 3], dtype=np.int8)
    n = 100_000
    p = joint_prefix_probabilities(signs, n, np.random.default_rng(3))[0]
    exact = prob_greater_from_counts(12, 6)
    # Binomial SE of a proportion; 4 SE.
    assert abs(p - exact) <= 4 * np.sqrt(exact * (1 - exact) / n)


def test_single_statement_matches_baycomp_dirichlet_sampler():
    # baycomp's sign test samples (left, rope, right) ~ Dir(n_left, n_ties + s, n_right) (its
    # prior on the rope, i.e. on the tie, plus a 1e-4 stabiliser); P(right > left) is the
    # same posterior probability as our statement "y beats x". Two MC estimates: 4 SE.
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(12)
    x = np.round(rng.normal(size=40), 1)
    y = np.round(x + rng.normal(0.3, 1.0, size=40), 1)
    n = 100_000
    draws = baycomp.SignTest.sample(x, y, rope=0, prior=1.0, nsamples=n, random_state=3)
    p_baycomp = np.mean(draws[:, 2] > draws[:, 0])
    signs = np.sign(y - x)[None, :].astype(np.int8)
    p_racer = joint_prefix_probabilities(signs, n, np.random.default_rng(4))[0]
    se = np.sqrt(2 * p_racer * (1 - p_racer) / n)
    assert abs(p_racer - p_baycomp) <= 4 * se


def test_independent_statements_multiply():
    # Statements on disjoint blocks share no weights, hence are independent: the joint
    # prefix probability is the product of the closed-form marginals.
    counts = [(8, 2), (7, 3), (9, 4), (6, 2)]
    n_blocks = sum(g + l for g, l in counts)
    signs = np.zeros((len(counts), n_blocks), dtype=np.int8)
    start = 0
    for k, (g, l) in enumerate(counts):
        signs[k, start : start + g] = 1
        signs[k, start + g : start + g + l] = -1
        start += g + l
    n = 100_000
    p = joint_prefix_probabilities(signs, n, np.random.default_rng(4))
    exact = np.cumprod([prob_greater_from_counts(g, l) for g, l in counts])
    se = np.sqrt(exact * (1 - exact) / n)
    assert np.all(np.abs(p - exact) <= 4 * se)


@pytest.mark.parametrize("n_samples", [1, 200, _kernels.JOINT_TILE * 3 + 5])
def test_kernel_matches_numpy_reference_bit_for_bit(n_samples):
    rng = np.random.default_rng(5)
    n_blocks = 17
    # 11 statements: not a multiple of the kernel's statement group, so the tail is covered.
    signs = random_signs(rng, 11, n_blocks, np.linspace(0.9, 0.5, 11)).astype(np.float32)
    tile = _kernels.JOINT_TILE
    n_tiles = -(-n_samples // tile)
    weights = rng.standard_exponential((n_tiles, n_blocks, tile), dtype=np.float32)
    hist = np.zeros(signs.shape[0] + 1, dtype=np.int64)
    _kernels.joint_first_fail_histogram(weights, signs, n_samples, hist)
    flat = weights.transpose(0, 2, 1).reshape(-1, n_blocks)[:n_samples]
    reference = _first_fail_histogram_numpy(flat, signs)
    np.testing.assert_array_equal(hist, reference)
    assert hist.sum() == n_samples


@pytest.mark.parametrize("backend_chunk", [_kernel_chunk, _gemm_chunk])
def test_backends_match_reference_on_exact_integer_weights(backend_chunk):
    # Integer-valued float32 weights make every sum exact whatever the summation order, so
    # both back-ends (ordered Numba sums; BLAS GEMM + scan with row compaction) must give
    # the reference histogram exactly. 300 statements: three GEMM blocks, and failures
    # spread over them so the compaction path runs.
    rng = np.random.default_rng(6)
    n_blocks, n_statements, n = 40, 300, 777
    signs = random_signs(rng, n_statements, n_blocks, np.linspace(0.78, 0.55, n_statements))
    signs = signs.astype(np.float32)
    weights = rng.integers(1, 50, size=(n, n_blocks)).astype(np.float32)
    hist = np.zeros(n_statements + 1, dtype=np.int64)
    backend_chunk(weights, signs, hist)
    np.testing.assert_array_equal(hist, _first_fail_histogram_numpy(weights, signs))
    assert hist[:128].sum() > 0 and hist[128:256].sum() > 0 and hist[256:].sum() > 0


def test_backends_agree_on_exponential_weights():
    # Real Exp(1) weights: the back-ends round differently, so they may disagree only on a
    # sum within float32 rounding of zero (probability ~1e-6 per evaluated statement here).
    rng = np.random.default_rng(7)
    signs = random_signs(rng, 60, 50, np.linspace(0.9, 0.6, 60)).astype(np.float32)
    a = _first_fail_histogram(signs, 3000, np.random.default_rng(8), backend="kernel")
    b = _first_fail_histogram(signs, 3000, np.random.default_rng(8), backend="gemm")
    assert np.abs(a - b).sum() <= 2
    assert a.sum() == b.sum() == 3000


def test_driver_uses_weights_in_draw_order():
    # The driver's chunking reproduces the reference on the same stream.
    signs = random_signs(np.random.default_rng(9), 9, 30, np.full(9, 0.75)).astype(np.float32)
    n = 1000
    hist = _first_fail_histogram(signs, n, np.random.default_rng(7), backend="kernel")
    weights = np.random.default_rng(7).standard_exponential((n, 30), dtype=np.float32)
    np.testing.assert_array_equal(hist, _first_fail_histogram_numpy(weights, signs))
    np.testing.assert_allclose(
        _prefix_from_histogram(hist),
        [np.mean(np.all((weights @ signs[: k + 1].T) > 0, axis=1)) for k in range(9)],
        atol=2 / n,  # float32 GEMM vs ordered sums may differ on a near-zero sum
    )


def test_sure_statements_are_skipped_exactly():
    rng = np.random.default_rng(8)
    # 13 statements, 12 simulated: the most for which blocks are grouped by sign pattern
    # (they are not here: too many distinct patterns), so both paths draw the same Exp(1).
    signs = random_signs(rng, 13, 20, np.full(13, 0.7))
    signs[2] = np.abs(signs[2])  # no losses: holds in every draw
    signs[2, 0] = 1
    a = joint_prefix_probabilities(signs, 3000, np.random.default_rng(9))
    # Same stream through the kernel on all statements, skipping nothing.
    hist = _first_fail_histogram(signs.astype(np.float32), 3000, np.random.default_rng(9))
    np.testing.assert_array_equal(a, _prefix_from_histogram(hist))
    assert a[2] == a[1]


def test_union_bound_skip_stays_within_budget():
    # Failure probabilities 0 (no losses), ~1e-18, ~1e-8, 5e-7, 6e-7, 0.03: the skip takes
    # the smallest while their sum stays <= 1e-6, so 0, 1e-18, 1e-8 and 5e-7 go, 6e-7 stays.
    failure = np.array([0.03, 6e-7, 0.0, 1e-8, 5e-7, 1e-18])
    kept = _statements_to_simulate(failure)
    np.testing.assert_array_equal(kept, [0, 1])
    assert failure[np.setdiff1d(np.arange(6), kept)].sum() <= joint_module._SKIP_BUDGET


def test_never_holding_statement_zeroes_the_rest():
    signs = np.array([[1, 1, -1, 1], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=np.int8)
    p = joint_prefix_probabilities(signs, 500, np.random.default_rng(0))
    assert p[0] > 0 and p[1] == 0 and p[2] == 0


def test_same_seed_same_result():
    signs = random_signs(np.random.default_rng(10), 7, 40, np.full(7, 0.7))
    a = joint_prefix_probabilities(signs, 5000, np.random.default_rng(123))
    b = joint_prefix_probabilities(signs, 5000, np.random.default_rng(123))
    c = joint_prefix_probabilities(signs, 5000, np.random.default_rng(124))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    x = np.random.default_rng(0).normal(size=(20, 5)) + np.arange(5) * 0.3
    r1 = joint_comparisons(x, random_state=5, n_samples=2000)
    r2 = joint_comparisons(x, random_state=5, n_samples=2000)
    np.testing.assert_array_equal(r1.joint, r2.joint)


def table1_scores():
    """30 blocks, 4 candidates, with Benavoli et al. (2015) Table 1's pairwise records: X1 loses every
    block to X2, X3, X4; X3 and X4 each beat X2 in 20 of 30; X4 beats X3 in 15 of 30."""
    x = np.zeros((30, 4))
    x[:, 0] = -10.0
    # Per block, the order of (X2, X3, X4); counts chosen to give the records above.
    # Counts of the six orders solve: X3>X2 in A+B+D = 20, X4>X2 in A+B+C = 20,
    # X4>X3 in A+C+E = 15, total 30.
    patterns = (
        [(0, 1, 2)] * 8    # A: X2 < X3 < X4
        + [(0, 2, 1)] * 7  # B: X2 < X4 < X3
        + [(1, 0, 2)] * 5  # C: X3 < X2 < X4
        + [(2, 0, 1)] * 5  # D: X4 < X2 < X3
        + [(1, 2, 0)] * 2  # E: X3 < X4 < X2
        + [(2, 1, 0)] * 3  # F: X4 < X3 < X2
    )
    for b, (low, mid, high) in enumerate(patterns):
        x[b, 1 + low], x[b, 1 + mid], x[b, 1 + high] = 1.0, 2.0, 3.0
    return x


def test_table1_columns():
    x = table1_scores()
    wins = lambda i, j: int(np.sum(x[:, i] > x[:, j]))  # noqa: E731
    assert (wins(2, 1), wins(3, 1), wins(3, 2)) == (20, 20, 15)
    n = 200_000
    res = joint_comparisons(x, random_state=0, n_samples=n)
    statements = list(zip(res.winner.tolist(), res.loser.tolist()))
    assert set(statements[:3]) == {(1, 0), (2, 0), (3, 0)}
    assert set(statements[3:5]) == {(2, 1), (3, 1)}
    # Table 1, column "1 - P(H_i)": 0, 0, 0, 0.0307, 0.0307, 0.5000 (4 decimals).
    np.testing.assert_allclose(1 - res.marginal, [0, 0, 0, 0.0307, 0.0307, 0.5], atol=5e-5)
    # Column "1 - P(H_1..H_i)": the first four rows equal the marginals (sure statements
    # first), within 4 binomial SE (SE = sqrt(.0307 * .9693 / 2e5) = 3.9e-4).
    np.testing.assert_allclose(1 - res.joint[:4], [0, 0, 0, 0.0307], atol=4 * 3.9e-4)
    # Row 5 lies between the Frechet bounds of two 0.0307 failures and, as in the paper
    # (0.0595), above gamma = 0.05, so four statements are accepted.
    assert 0.0307 - 0.002 <= 1 - res.joint[4] <= 2 * 0.0307 + 0.002
    assert 1 - res.joint[4] > 0.05
    assert res.n_accepted == 4
    assert 1 - res.joint[5] > 0.5
    assert "X3 > X1" in res.table() or "X2 > X1" in res.table()


def test_direction_tie_break_and_maximize():
    x = np.array([[1.0, 2.0], [2.0, 1.0], [3.0, 3.0]])
    res = joint_comparisons(x, random_state=0, n_samples=500)
    assert (res.winner[0], res.loser[0]) == (0, 1)  # 1 win each: lower index is the winner
    assert res.marginal[0] == pytest.approx(0.5)
    y = np.random.default_rng(1).normal(size=(25, 3)) + [0.0, 1.0, 2.0]
    up = joint_comparisons(y, random_state=0, n_samples=500)
    down = joint_comparisons(-y, maximize=False, random_state=0, n_samples=500)
    np.testing.assert_array_equal(up.winner, down.winner)
    np.testing.assert_array_equal(up.joint, down.joint)
    assert up.winner[0] == 2


def test_dataframe_names_table_and_frame():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(20, 3)) + [0, 1, 2], columns=["a", "b", "c"])
    res = joint_comparisons(df, random_state=0, n_samples=1000)
    frame = res.to_frame()
    assert list(frame.columns) == ["winner", "loser", "marginal", "joint", "accepted"]
    assert frame.loc[0, "winner"] == "c"
    assert "c > a" in repr(res)
    assert frame["accepted"].sum() == res.n_accepted


@pytest.mark.parametrize(
    "signs, match",
    [
        (np.array([1, -1, 0]), "2-D"),
        (np.array([[1, 2, 0]]), "only -1, 0 and 1"),
        (np.array([["a", "b"]]), "numeric"),
    ],
)
def test_signs_validation(signs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        joint_prefix_probabilities(signs, 10, np.random.default_rng(0))


def test_argument_validation():
    x = np.random.default_rng(0).normal(size=(5, 3))
    with pytest.raises(ValueError, match="n_samples"):
        joint_prefix_probabilities(np.ones((1, 3)), 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="credibility"):
        joint_comparisons(x, credibility=1.5)
    with pytest.raises(ValueError, match="prior_strength"):
        joint_comparisons(x, prior_strength=0)
    with pytest.raises(ValueError, match="scores"):
        joint_comparisons(np.ones((5, 1)))
    with pytest.raises(TypeError, match="random_state"):
        joint_comparisons(x, random_state="seed")


# --------------------------------------------------------------------- options a race uses


def literal_idp_prefix(signs, n_samples, s, rng):
    """IDP lower probability taken literally: normalised Dir(s, 1..1) weights with the prior
    point against every statement (H = 0 for it), statement holds iff theta_k > 1/2."""
    heaviside = (signs > 0) + 0.5 * (signs == 0)
    w = rng.dirichlet(np.r_[s, np.ones(signs.shape[1])], size=n_samples)
    theta = w[:, 1:] @ heaviside.T
    return np.logical_and.accumulate(theta > 0.5, axis=1).mean(axis=0)


def test_early_stop_returns_the_prefixes_of_the_full_pass():
    rng = np.random.default_rng(0)
    signs = np.sign(rng.normal(0.5, 1.0, size=(300, 40))).astype(np.int8)
    a = joint_prefix_probabilities(signs, 2000, np.random.default_rng(9), stop_below=0.5)
    b = joint_prefix_probabilities(signs, 2000, np.random.default_rng(9), stop_below=0.5)
    np.testing.assert_array_equal(a, b)
    assert len(a) < 300 and a[-1] <= 0.5 and np.all(np.diff(a) <= 0)
    # stop_below=0 stops only once every sample has failed (later prefixes are all 0): the
    # same statement-major pass over the same weights.
    full = joint_prefix_probabilities(signs, 2000, np.random.default_rng(9), stop_below=0.0)
    assert len(a) < len(full) and full[-1] == 0.0
    np.testing.assert_array_equal(a, full[: len(a)])
    # ... and the chunk-major pass estimates the same prefixes (float32 rounding of the sums
    # in another order may flip a sum within an ulp of zero: at most a few samples of 2000).
    plain = joint_prefix_probabilities(signs, 2000, np.random.default_rng(9))
    np.testing.assert_allclose(full, plain[: len(full)], atol=3 / 2000)
    assert np.all(plain[len(full):] <= 3 / 2000)


def test_early_stop_redraws_weights_that_are_not_kept(monkeypatch):
    # Past the memory bound the weights are drawn again from the saved generator states:
    # the result must not depend on which.
    rng = np.random.default_rng(1)
    signs = np.sign(rng.normal(1.0, 1.0, size=(200, 50))).astype(np.int8)
    kept = joint_prefix_probabilities(signs, 5000, np.random.default_rng(2), stop_below=0.1)
    monkeypatch.setattr(joint_module, "_KEEP_WEIGHTS_ELEMENTS", 0)
    redrawn = joint_prefix_probabilities(signs, 5000, np.random.default_rng(2), stop_below=0.1)
    np.testing.assert_array_equal(kept, redrawn)
    assert len(kept) > joint_module._STOP_BLOCK  # more than one pass


def test_prefixes_match_the_literal_posterior_with_ties_and_grouped_patterns():
    # Few statements over many blocks: blocks sharing a sign pattern get one Gamma(k) weight.
    # Literal Dirichlet posterior as above; SE of the difference <= sqrt(2 * 0.25 / 4e4) =
    # 0.0035 at 40k samples each; tolerance 0.015 is > 4 SE.
    rng = np.random.default_rng(12)
    n, S = 400, 40_000
    signs = np.sign(rng.normal([[0.05], [0.08], [0.1]], 1.0, size=(3, n)))
    signs[1, :30] = 0.0
    assert joint_module._group_patterns(signs.astype(np.float32))[1] is not None
    p = joint_prefix_probabilities(signs, S, np.random.default_rng(1), stop_below=0.0)
    w = rng.dirichlet(np.r_[1.0, np.ones(n)], size=S)
    heaviside = (signs > 0) + 0.5 * (signs == 0)
    theta = w[:, 1:] @ heaviside.T + w[:, :1] / 2
    literal = np.logical_and.accumulate(theta > 0.5, axis=1).mean(axis=0)
    np.testing.assert_allclose(p, literal, atol=0.015)


@pytest.mark.parametrize("n_blocks", [8, 60])  # grouped patterns and plain Exp(1) weights
def test_idp_pseudo_weight_matches_the_literal_lower_probability(n_blocks):
    rng = np.random.default_rng(13)
    S = 40_000
    signs = random_signs(rng, 4, n_blocks, [0.8, 0.75, 0.7, 0.7])
    signs[0] = np.abs(signs[0])  # no losses: certain under the DP, not under the IDP
    signs[0, 0] = 1
    p = joint_prefix_probabilities(signs, S, np.random.default_rng(2), pseudo_weight=1.0)
    literal = literal_idp_prefix(signs, S, 1.0, rng)
    np.testing.assert_allclose(p, literal, atol=0.015)  # as above: > 4 SE
    n_pos = int((signs[0] > 0).sum())
    closed = prob_greater_from_counts(n_pos, 0, pseudo_against=1.0)  # 1 - 2^-n_pos
    assert p[0] == pytest.approx(closed, abs=0.01)
    dp = joint_prefix_probabilities(signs, S, np.random.default_rng(2))
    assert dp[0] == 1.0 and np.all(p <= dp + 0.01)
    if n_blocks == 8:
        assert p[0] < 0.997  # at most 8 wins: 1 - 2^-8 = 0.9961


def test_option_validation():
    signs = np.ones((2, 3))
    with pytest.raises(ValueError, match="stop_below"):
        joint_prefix_probabilities(signs, 10, 0, stop_below=1.5)
    with pytest.raises(ValueError, match="pseudo_weight"):
        joint_prefix_probabilities(signs, 10, 0, pseudo_weight=0.0)
    with pytest.raises(TypeError, match="random_state"):
        joint_prefix_probabilities(signs, 10, "seed")
