"""``racer.stats.hierarchical_test``: Corani et al.'s (2017) hierarchical model.

Checked three ways: against NumPyro's and PyMC's NUTS on stored cases (``tests/data/
hierarchical_reference.json``, made by ``benchmarks/hierarchical_reference.py``), by
simulation-based calibration of the Gibbs kernel, and against the paper's Table 2 direction.
The diagnostics are checked against ArviZ's numbers stored in the same file.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

import racer.stats as rs
from racer.stats import _diagnostics
from racer.stats._kernels import hier_chain

from _helpers import ROOT

REFERENCE = json.loads((ROOT / "tests" / "data" / "hierarchical_reference.json").read_text())


def _cv(q, n, rho, seed, shift=0.01):
    rng = np.random.default_rng(seed)
    delta = rng.normal(shift, 0.01, q)
    noise = 0.05 * (np.sqrt(rho) * rng.standard_normal((q, 1))
                    + np.sqrt(1 - rho) * rng.standard_normal((q, n)))
    return delta[:, None] + noise, delta


# --- diagnostics -------------------------------------------------------------------------------


def _diag_array(seed, shape):
    # Must match benchmarks/hierarchical_reference.py::diag_array.
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).cumsum(axis=1) * 0.1 + rng.standard_normal(shape)
    x[1] += 0.3
    return x


@pytest.mark.parametrize("case", REFERENCE["diagnostics"], ids=lambda c: str(c["shape"]))
def test_diagnostics_match_stored_arviz(case):
    x = _diag_array(case["seed"], tuple(case["shape"]))
    # Same formulas as ArviZ, summed in a different order (FFT length, batching): agreement
    # to rounding, far below any difference that would change a convergence decision.
    assert _diagnostics.split_rhat(x) == pytest.approx(case["rhat_rank"], rel=1e-10)
    assert _diagnostics.ess_bulk(x) == pytest.approx(case["ess_bulk"], rel=1e-8)


def test_diagnostics_match_live_arviz():
    az = pytest.importorskip("arviz")
    x = np.random.default_rng(7).standard_normal((4, 333)).cumsum(axis=1)
    assert _diagnostics.split_rhat(x) == pytest.approx(float(az.rhat(x, method="rank")), rel=1e-10)
    assert _diagnostics.ess_bulk(x) == pytest.approx(float(az.ess(x, method="bulk")), rel=1e-8)


def test_diagnostics_batched_equal_one_at_a_time_and_detect_stuck_chain():
    rng = np.random.default_rng(1)
    batch = rng.standard_normal((3, 4, 200))
    batch[2, 0] += 3.0  # one chain elsewhere: R-hat must flag it
    rhat, ess = _diagnostics.rhat_and_ess(batch)
    for k in range(3):
        assert rhat[k] == _diagnostics.split_rhat(batch[k])
        assert ess[k] == _diagnostics.ess_bulk(batch[k])
    # 8 split chains of 100 independent draws: R-hat - 1 is of order 1/100 by chance alone.
    assert rhat[0] < 1.05 and rhat[2] > 1.3
    # Independent draws: bulk ESS near the number of draws (800); a random walk: far below.
    assert 600 < ess[0] < 1000
    assert _diagnostics.ess_bulk(batch[0].cumsum(axis=1)) < 100
    # Ties are ranked by averaging (as scipy's rankdata): integer draws give finite numbers.
    assert np.isfinite(_diagnostics.ess_bulk(rng.integers(0, 3, (4, 100)).astype(float)))
    assert math.isnan(_diagnostics.split_rhat(np.ones((4, 50))))


# --- against NumPyro ---------------------------------------------------------------------------


def _assert_within_mc_error(res, ref):
    # Tolerance: 4 combined Monte Carlo standard errors. The reference's (NumPyro's, PyMC's)
    # come from the bulk ESS of each quantity; ours are bounded with res.ess_bulk, the
    # smallest ESS over the monitored quantities (a [0, 1] quantity with mean p has variance <= p (1 - p)). Four standard
    # errors: a false alarm has probability ~6e-5 per comparison, and the seed is fixed.
    for name in ("left", "rope", "right"):
        for kind in ("prob", "predictive"):
            key = f"{kind}_{name}"
            mine = getattr(res, key)
            p = ref[key]
            se_mine = math.sqrt(max(p * (1 - p), 1e-4) / res.ess_bulk)
            tol = 4 * math.hypot(ref[f"{key}_se"], se_mine)
            assert abs(mine - p) <= tol, (key, mine, p, tol)
    sd = np.array(ref["shrinkage_sd"])
    tol = 4 * np.hypot(np.array(ref["shrinkage_se"]), sd / np.sqrt(res.ess_bulk))
    assert np.all(np.abs(res.shrinkage - np.array(ref["shrinkage"])) <= tol)


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda c: c["name"])
def test_matches_numpyro_reference(case):
    d = np.array(case["diffs"])
    res = rs.hierarchical_test(d, case["rho"], rope=case["rope"], random_state=0)
    _assert_within_mc_error(res, case["numpyro"])
    assert res.rhat < 1.01 and res.ess_bulk >= 400


# --- against PyMC ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda c: c["name"])
def test_matches_stored_pymc_reference(case):
    # PyMC's NUTS on the same stored cases (benchmarks/hierarchical_reference.py --pymc), a
    # second backend with its own sampler and its own Student t implementation.
    d = np.array(case["diffs"])
    res = rs.hierarchical_test(d, case["rho"], rope=case["rope"], random_state=0)
    _assert_within_mc_error(res, case["pymc"])


@pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS:UserWarning")
def test_matches_live_pymc():
    """A live PyMC fit (hier-test extra only; not installed in CI) of the smallest stored case."""
    pytest.importorskip("pymc")
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from hierarchical_reference import pymc_fit, summarise

    case = next(c for c in REFERENCE["cases"] if c["name"] == "q10_n30")
    d = np.array(case["diffs"])
    ref = summarise(*pymc_fit(d, case["rho"], 3, 500, 1000, 4)[:4], case["rope"])
    res = rs.hierarchical_test(d, case["rho"], rope=case["rope"], random_state=1)
    _assert_within_mc_error(res, ref)


# --- simulation-based calibration --------------------------------------------------------------


def _sbc_ranks(n_sims, fit_rho, data_rho=0.3, q=4, n=8, thin=40, n_keep=19, seed=11):
    """Ranks of the true (delta0, sigma0, delta_1, nu) among thinned posterior draws.

    Parameters come from the model's prior with fixed bounds (sigma_i < 0.2, sigma0 < 0.1;
    alpha in (4, 5) keeps nu away from the tiny values whose Student t draws overflow), data
    from the model, the posterior from the kernel. Calibrated => each rank ~ U{0..n_keep}.
    """
    rng = np.random.default_rng(seed)
    bounds = dict(sigma_upper=0.2, sigma0_upper=0.1, alpha=(4.0, 5.0), beta=(0.05, 0.15))
    ranks = np.empty((n_sims, 4), dtype=int)
    draws = thin * n_keep
    out = [np.empty(draws), np.empty(draws), np.empty(draws), np.empty((draws, q))]
    for s in range(n_sims):
        alpha = rng.uniform(*bounds["alpha"])
        beta = rng.uniform(*bounds["beta"])
        nu = rng.gamma(alpha, 1 / beta)
        delta0 = rng.uniform(-1.0, 1.0)
        sigma0 = rng.uniform(0, bounds["sigma0_upper"])
        delta = delta0 + sigma0 * rng.standard_t(nu, q)
        sigma = rng.uniform(0, bounds["sigma_upper"], q)
        x = delta[:, None] + sigma[:, None] * (
            np.sqrt(data_rho) * rng.standard_normal((q, 1))
            + np.sqrt(1 - data_rho) * rng.standard_normal((q, n)))
        xbar = x.mean(axis=1)
        ss = ((x - xbar[:, None]) ** 2).sum(axis=1)
        hier_chain(xbar, ss, np.full(q, float(n)), fit_rho, bounds["sigma_upper"],
                   bounds["sigma0_upper"], *bounds["alpha"], *bounds["beta"], 200, draws,
                   np.random.default_rng(rng.integers(2**63)), *out)
        d0, s0, nus, dd = (o[thin - 1::thin] for o in out)
        truth = (delta0, sigma0, delta[0], nu)
        post = (d0, s0, dd[:, 0], nus)
        ranks[s] = [int(np.sum(p < t)) for p, t in zip(post, truth)]
    return ranks


def test_simulation_based_calibration():
    ranks = _sbc_ranks(300, fit_rho=0.3)
    # 20 bins, 300 simulations: chi-square test of uniformity per parameter. Under
    # calibration each p-value is uniform; 1e-3 keeps the false-alarm rate at 0.4 % for the
    # four parameters (the seed is fixed, so the outcome is deterministic).
    for k, name in enumerate(("delta0", "sigma0", "delta_1", "nu")):
        counts = np.bincount(ranks[:, k], minlength=20)
        p = stats.chisquare(counts).pvalue
        assert p > 1e-3, (name, counts, p)


def test_simulation_based_calibration_detects_a_wrong_model():
    # Power check of the test above: fitting with rho = 0 when the data have rho = 0.8 makes
    # the posterior of delta overconfident, so the ranks pile up at the ends.
    ranks = _sbc_ranks(150, fit_rho=0.0, data_rho=0.8)
    counts = np.bincount(ranks[:, 2], minlength=20)
    assert stats.chisquare(counts).pvalue < 1e-3


# --- behaviour ---------------------------------------------------------------------------------


def test_same_seed_bit_identical_other_seed_differs():
    d, _ = _cv(6, 20, 0.1, 3)
    a = rs.hierarchical_test(d, 0.1, random_state=5)
    b = rs.hierarchical_test(d, 0.1, random_state=5)
    c = rs.hierarchical_test(d, 0.1, random_state=6)
    assert np.array_equal(a.shrinkage, b.shrinkage)
    assert (a.prob_left, a.prob_rope, a.predictive_rope, a.rhat, a.ess_bulk) == (
        b.prob_left, b.prob_rope, b.predictive_rope, b.rhat, b.ess_bulk)
    assert not np.array_equal(a.shrinkage, c.shrinkage)


def test_two_score_arrays_equal_their_difference():
    d, _ = _cv(5, 20, 0.1, 4)
    x = np.full_like(d, 0.8) + np.random.default_rng(0).normal(0, 0.01, d.shape)
    y = x + d
    a = rs.hierarchical_test(y - x, 0.1, random_state=1)
    b = rs.hierarchical_test(x, 0.1, y=y, random_state=1)
    # The same model reached through another input path (differences taken or reshaped by
    # the function): equal up to rounding of the reordered arithmetic.
    np.testing.assert_allclose(a.shrinkage, b.shrinkage, rtol=1e-12, atol=1e-15)
    assert a.prob_right == pytest.approx(b.prob_right, rel=1e-12, abs=1e-15)


def test_probabilities_direction_and_sums():
    d, _ = _cv(10, 30, 0.1, 8, shift=0.05)
    res = rs.hierarchical_test(d, 0.1, random_state=0)
    assert res.prob_left + res.prob_rope + res.prob_right == pytest.approx(1.0, abs=1e-12)
    assert (res.predictive_left + res.predictive_rope + res.predictive_right
            == pytest.approx(1.0, abs=1e-12))
    assert res.prob_right > 0.9 and res.predictive_right > res.predictive_left
    flipped = rs.hierarchical_test(-d, 0.1, random_state=0)
    assert flipped.prob_left > 0.9
    # Shrinkage: the estimates are pulled toward each other, so their spread is smaller.
    assert np.std(res.shrinkage) < np.std(res.mle)
    assert np.array_equal(res.mle, d.mean(axis=1))
    favoured, other, odds, grade = res.odds[0]
    assert (favoured, other) == ("right", "left") and grade == rs.odds_grade(odds)


def test_shrinkage_beats_the_mle_on_average():
    # Corani et al. (2017) Table 2's direction on a few replicates (the benchmark runs 200 per q).
    gains = []
    for r in range(6):
        rng = np.random.default_rng([99, r])
        delta = np.where(rng.random(20) < 0.5, rng.normal(0.005, 0.001, 20),
                         rng.normal(0.02, 0.001, 20))
        noise = 0.0575 * (np.sqrt(0.1) * rng.standard_normal((20, 1))
                          + np.sqrt(0.9) * rng.standard_normal((20, 100)))
        res = rs.hierarchical_test(delta[:, None] + noise, 0.1, random_state=r)
        gains.append(np.mean((res.mle - delta) ** 2) - np.mean((res.shrinkage - delta) ** 2))
    assert np.mean(gains) > 0 and np.mean(np.array(gains) > 0) >= 5 / 6


def test_refuses_to_answer_without_convergence_and_retries_double_the_draws():
    d, _ = _cv(5, 20, 0.1, 2)
    with pytest.raises(rs.ConvergenceError, match=r"bulk ESS \d+ \(needs >= 400\); no answer"):
        rs.hierarchical_test(d, 0.1, n_warmup=20, n_draws=10, max_retries=0, random_state=0)
    res = rs.hierarchical_test(d, 0.1, n_warmup=100, n_draws=60, max_retries=4, random_state=0)
    assert res.n_retries >= 1 and res.n_draws == 60 * 2**res.n_retries
    assert res.rhat < 1.01 and res.ess_bulk >= 400


def test_odds_grades_follow_table_3():
    assert [rs.odds_grade(v) for v in (1.0, 3.0, 3.01, 20.0, 20.5, math.inf)] == [
        "weak", "weak", "positive", "positive", "strong", "strong"]
    assert rs.odds_grade(float("nan")) == "none"
    with pytest.raises(ValueError, match="`odds`"):
        rs.odds_grade(0.5)


def test_result_is_frozen_and_readable():
    d, _ = _cv(4, 10, 0.1, 1)
    res = rs.hierarchical_test(d, 0.1, random_state=0)
    with pytest.raises(AttributeError):
        res.prob_left = 0.5
    assert "prob_rope=" in repr(res) and "shrinkage=" in repr(res)


# --- long format (groups) ----------------------------------------------------------------------


def test_long_format_equals_the_matrix_and_allows_ragged_data_sets():
    d, _ = _cv(5, 12, 0.1, 21)
    # Fold-major order (as a race over (data set, fold) instances would deliver them).
    q, n = d.shape
    long = d.T.ravel()
    labels = [f"ds{i}" for _ in range(n) for i in range(q)]
    a = rs.hierarchical_test(d, 0.1, random_state=3)
    b = rs.hierarchical_test(long, 0.1, groups=labels, random_state=3)
    assert b.groups == tuple(f"ds{i}" for i in range(q)) and a.groups is None
    # The same model reached through another input path (differences taken or reshaped by
    # the function): equal up to rounding of the reordered arithmetic.
    np.testing.assert_allclose(a.shrinkage, b.shrinkage, rtol=1e-12, atol=1e-15)
    assert a.prob_rope == pytest.approx(b.prob_rope, rel=1e-12, abs=1e-15)
    # Ragged: drop some folds of some data sets; each data set keeps its own mean.
    keep = np.ones(long.shape[0], bool)
    keep[[0, 5, 7, 13, 30]] = False
    labels_kept = [lab for lab, k in zip(labels, keep) if k]
    c = rs.hierarchical_test(long[keep], 0.1, groups=labels_kept, random_state=3)
    for i, lab in enumerate(c.groups):
        assert c.mle[i] == pytest.approx(long[keep][np.array(labels_kept) == lab].mean(),
                                         rel=1e-12)
    assert c.rhat < 1.01
