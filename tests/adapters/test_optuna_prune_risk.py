"""RacingPruner's stated risk: the ``risk`` its ``decide`` returns (no test writes it as the
``racer_prune_risk`` attribute any more: measured against ground truth it did not hold)."""

from __future__ import annotations

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")
scipy_stats = pytest.importorskip("scipy.stats")

from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from racer.adapters.optuna import (
    RacingPruner,
    instance_objective,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)

DIST = {"x": FloatDistribution(-1.0, 1.0)}


def _study_with_reference(values, direction="minimize"):
    study = optuna.create_study(direction=direction)
    values = np.asarray(values, dtype=float)
    study.add_trial(create_trial(
        params={"x": 0.0}, distributions=DIST, value=float(values.mean()),
        intermediate_values={i: float(v) for i, v in enumerate(values)}))
    return study


def _running(study, values):
    trial = study.ask()
    for step, value in enumerate(values):
        trial.report(float(value), step)
    return study._storage.get_trial(trial._trial_id)


def _record(n_better, n_worse, n_tied):
    """Trial values against a zero reference (minimised): wins -1, losses +1, ties 0."""
    return np.array([-1.0] * n_better + [1.0] * n_worse + [0.0] * n_tied)


def _eb_risk_by_enumeration(records, n_full, reason, eps, pseudo=1.0, iterations=100,
                            own_weight=0.3):
    """The empirical-Bayes risk written out with scipy's multivariate hypergeometric pmf.

    ``records``: (wins, ties, losses) per trial, the pruned trial first. Prior: weights on
    every integer composition of ``n_full``, fitted to the records by plain-Python EM (the
    pruned trial's own record at ``own_weight``) with ``pseudo`` trials spread evenly; the risk is the pruned trial's posterior mass where the claim is
    false (``theta = (W + T/2) / n_full``).
    """
    comps = [(w, t, n_full - w - t) for w in range(n_full + 1) for t in range(n_full + 1 - w)]
    like = [[scipy_stats.multivariate_hypergeom.pmf(list(rec), list(comp), sum(rec))
             for comp in comps] for rec in records]
    weights = [1.0 / len(comps)] * len(comps)
    for _ in range(iterations):
        totals = [0.0] * len(comps)
        for k, row in enumerate(like):
            norm = sum(lk * wt for lk, wt in zip(row, weights))
            for g, (lk, wt) in enumerate(zip(row, weights)):
                totals[g] += (own_weight if k == 0 else 1.0) * lk * wt / norm
        weights = [(tot + pseudo / len(comps)) / (len(records) - 1 + own_weight + pseudo)
                   for tot in totals]
    post = [lk * wt for lk, wt in zip(like[0], weights)]
    theta = [(w + t / 2) / n_full for w, t, _ in comps]
    wrong = [(th >= 0.5) if reason == "dominated" else (abs(th - 0.5) >= eps) for th in theta]
    return sum(p for p, bad in zip(post, wrong) if bad) / sum(post)


@pytest.mark.parametrize("n_better, n_worse, n_tied", [(3, 9, 0), (1, 9, 2), (0, 6, 4),
                                                       (0, 3, 0)])
def test_dominated_sign_risk_is_the_empirical_bayes_posterior_and_is_not_written(
        n_better, n_worse, n_tied):
    # The reference (trial 0) and two finished trials: one that loses 10 of 12 instances,
    # one that wins 5, loses 5, ties 2. The stated risk is the pruned trial's posterior
    # probability of theta >= 1/2 on the 12 instances under the prior fitted to all three
    # records, computed here by enumeration with scipy.
    n_full = 12
    study = _study_with_reference(np.zeros(n_full))
    for record in (_record(1, 10, 1), _record(5, 5, 2)):
        study.add_trial(create_trial(
            params={"x": 0.5}, distributions=DIST, value=float(record.mean()),
            intermediate_values={i: float(v) for i, v in enumerate(record)}))
    values = _record(n_better, n_worse, n_tied)
    frozen = _running(study, values)
    pruner = RacingPruner(random_state=0)
    decision = pruner.decide(study, frozen)
    assert decision["prune"] and decision["reason"] == "dominated"
    expected = _eb_risk_by_enumeration(
        [(n_better, n_tied, n_worse), (1, 1, 10), (5, 2, 5)], n_full, "dominated", 0.05)
    # Log-gamma sums against scipy's pmf, 100 EM steps each: rounding only.
    assert decision["risk"] == pytest.approx(expected, rel=1e-7, abs=1e-12)
    # The DP posterior's complement stays in the decision, for comparison: for the sign test
    # P(theta >= 1/2) = P(Binomial(n - 1, 1/2) <= n_better - 1), n = n_better + n_worse
    # (Benavoli et al. 2015, Theorem 2), exactly 0 with no win at all; the fitted prior does
    # not state 0 for a short losing streak.
    dp = (scipy_stats.binom.cdf(n_better - 1, n_better + n_worse - 1, 0.5) if n_better else 0.0)
    assert decision["risk_dp"] == pytest.approx(dp, rel=1e-9, abs=1e-15)
    assert decision["risk_dp"] == 1.0 - decision["prob_worse"][0]
    if n_better == 0 and n_worse + n_tied <= 3:
        assert decision["risk"] > 1e-3 > decision["risk_dp"]
    assert pruner.prune(study, frozen)
    attrs = study.trials[frozen.number].user_attrs
    # Reason and reference are written; the risk is not (it did not hold on ground truth)
    assert "racer_prune_risk" not in attrs
    assert attrs["racer_prune_reason"] == "dominated"
    assert attrs["racer_prune_reference"] == 0


def test_indistinguishable_risk_matches_a_dirichlet_simulation():
    # 1 win, 1 loss, 38 ties: never dominated (P(worse) = 1/2) but inside the band. Its risk
    # is P(|theta - 1/2| >= eps) with theta - 1/2 = (W_b - W_w) / 2 and
    # (W_b, W_w, W_t) ~ Dir(1, 1, 38 + s): checked against direct Dirichlet draws.
    values = np.zeros(40)
    values[0], values[1] = -0.1, 0.2       # the loss is larger: the reference's mean is better
    study = _study_with_reference(np.zeros(40))
    frozen = _running(study, values)
    pruner = RacingPruner(eps=0.05, random_state=0)
    decision = pruner.decide(study, frozen)
    assert decision["prune"] and decision["reason"] == "indistinguishable"
    n_draws = 400_000
    w = np.random.default_rng(12).dirichlet([1.0, 1.0, 38.0 + 1.0], size=n_draws)
    simulated = float(np.mean(np.abs(w[:, 0] - w[:, 1]) / 2 >= 0.05))
    # 5 Monte Carlo SE, plus the quadrature's documented 2e-5 error.
    tol = 5 * np.sqrt(simulated * (1 - simulated) / n_draws) + 2e-5
    assert abs(decision["risk_dp"] - simulated) < tol
    assert decision["risk_dp"] == 1.0 - decision["prob_equiv"][0]
    assert pruner.prune(study, frozen)
    attrs = study.trials[frozen.number].user_attrs
    assert "racer_prune_risk" not in attrs
    assert attrs["racer_prune_reason"] == "indistinguishable"


@pytest.mark.parametrize("test", ["signed-rank", "mean"])
def test_monte_carlo_tests_return_the_risk_of_their_own_draws_and_write_none(test):
    rng = np.random.default_rng(0)
    hardness = rng.gamma(2.0, 2.0, size=20)
    study = _study_with_reference(hardness)
    frozen = _running(study, hardness[:12] + 0.5 + 0.05 * rng.normal(size=12))
    pruner = RacingPruner(test=test, random_state=4)
    decision = pruner.decide(study, frozen)
    # Same seed, same trial, same step: the same draws, so the same decision and number.
    assert decision == pruner.decide(study, frozen)
    assert pruner.prune(study, frozen)
    assert "racer_prune_risk" not in study.trials[frozen.number].user_attrs
    # No fitted prior for these tests: the risk is the DP posterior's complement.
    assert decision["risk"] == decision["risk_dp"] == 1.0 - decision["prob_worse"][0] < 0.05


def test_a_kept_trial_gets_no_risk():
    study = _study_with_reference(np.zeros(20))
    frozen = _running(study, _record(6, 4, 2))
    assert not RacingPruner(random_state=0).prune(study, frozen)
    assert "racer_prune_risk" not in study.trials[frozen.number].user_attrs


def _toy_study(pruner, on_prune, seed=0):
    instances = np.random.default_rng(5).gamma(2.0, 2.0, 20)

    def evaluate(trial, inst):
        return (trial.suggest_float("x", -1, 1) - 0.3) ** 2 + inst

    study = optuna.create_study(pruner=pruner, sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(instance_objective(evaluate, instances, on_prune=on_prune,
                                      random_state=seed), n_trials=30)
    return study


class _SilentPruner(RacingPruner):
    """The pruner before it stated risks: the same decision, nothing written."""

    def prune(self, study, trial):
        return bool(self.decide(study, trial)["prune"])


@pytest.mark.parametrize("test", ["sign", "signed-rank", "mean"])
@pytest.mark.parametrize("on_prune", ["prune", "return", "raise"])
def test_no_test_writes_a_risk_and_the_attributes_change_no_decision(test, on_prune):
    study = _toy_study(RacingPruner(test=test, random_state=1), on_prune)
    before = _toy_study(_SilentPruner(test=test, random_state=1), on_prune)
    # Same seeds: the same trials, states, values and instances as without the attributes.
    assert ([(t.state, t.value, t.params, t.intermediate_values) for t in study.trials]
            == [(t.state, t.value, t.params, t.intermediate_values) for t in before.trials])
    pruned = [t for t in study.trials if t.user_attrs.get("racer_pruned")]
    assert pruned
    for t in pruned:
        assert "racer_prune_risk" not in t.user_attrs
        assert t.user_attrs["racer_prune_reason"] in ("dominated", "indistinguishable")
        reference = study.trials[t.user_attrs["racer_prune_reference"]]
        assert reference.user_attrs.get("racer_pruned") is None


def test_empirical_bayes_risk_on_a_proportion_grid_matches_the_multinomial():
    # Above 40 instances the prior lives on a 1/40 grid of proportions and the likelihood is
    # the multinomial; checked against scipy's multinomial pmf, the EM written out as above.
    from racer.adapters.optuna.pruner import _empirical_bayes_sign_risk, _record_grid

    n_full = 80
    records = np.array([[0, 1, 4], [2, 0, 9], [30, 20, 30], [1, 0, 79], [40, 5, 35]], float)
    risk = _empirical_bayes_sign_risk(records, 0, n_full, "dominated", 0.05)
    grid = np.stack(_record_grid(n_full), axis=1) / n_full
    like = np.array([[scipy_stats.multinomial.pmf(rec, int(rec.sum()), p) for p in grid]
                     for rec in records])
    weights = np.full(len(grid), 1.0 / len(grid))
    record_weight = np.array([0.3] + [1.0] * (len(records) - 1))
    for _ in range(100):
        post = like * weights / (like * weights).sum(axis=1, keepdims=True)
        weights = ((record_weight[:, None] * post).sum(axis=0) + 1.0 / len(grid)) / (
            record_weight.sum() + 1.0)
    post = like[0] * weights
    theta = grid[:, 0] + grid[:, 1] / 2
    expected = post[theta >= 0.5 - 1e-9].sum() / post.sum()
    assert len(grid) == 41 * 42 // 2
    assert risk == pytest.approx(expected, rel=1e-7, abs=1e-12)


def test_empirical_bayes_risk_falls_as_the_study_shows_more_clearly_worse_trials():
    # The same 0-3 record is stated less risky when the study's other trials are
    # far worse than the reference than when they beat it narrowly: the prior is
    # the study's. With no other trial it is the pseudo-trial's near-uniform prior.
    from racer.adapters.optuna.pruner import _empirical_bayes_sign_risk

    target = np.array([[0.0, 0.0, 3.0]])
    alone = _empirical_bayes_sign_risk(target, 0, 30, "dominated", 0.05)
    bad = np.vstack([target, np.tile([3.0, 0.0, 27.0], (20, 1))])
    close = np.vstack([target, np.tile([16.0, 0.0, 14.0], (20, 1))])
    risk_bad = _empirical_bayes_sign_risk(bad, 0, 30, "dominated", 0.05)
    risk_close = _empirical_bayes_sign_risk(close, 0, 30, "dominated", 0.05)
    assert risk_bad < 0.01 < alone < risk_close
    # The value the class Notes quote, by the enumeration above.
    assert alone == pytest.approx(_eb_risk_by_enumeration([(0, 0, 3)], 30, "dominated", 0.05),
                                  rel=1e-7)
    assert round(alone, 3) == 0.018


def test_prune_never_computes_the_risk_and_decide_returns_it_after_the_decision():
    # prune() writes no risk, so it skips the EM fit: with the fitted prior replaced by a
    # function that fails, the study runs, trial for trial the same; decide() still computes
    # the risk, after the decision, which the number cannot change.
    from racer.adapters.optuna import pruner as pruner_module

    real = _toy_study(RacingPruner(random_state=3), "raise")
    original = pruner_module._empirical_bayes_sign_risk

    def fails(*args):
        raise AssertionError("prune() computed a risk")

    pruner_module._empirical_bayes_sign_risk = fails
    try:
        again = _toy_study(RacingPruner(random_state=3), "raise")
    finally:
        pruner_module._empirical_bayes_sign_risk = original
    assert ([(t.state, t.value, t.params, t.intermediate_values) for t in real.trials]
            == [(t.state, t.value, t.params, t.intermediate_values) for t in again.trials])
    # decide() on the study as it stood when a trial was pruned: its own record was the same
    # then, and the trials after it had not run; rebuild that study and ask.
    pruned = [t for t in real.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned
    t = pruned[-1]
    study = optuna.create_study()
    for earlier in real.trials[:t.number]:
        study.add_trial(earlier)
    ask = study.ask()
    for step, value in t.intermediate_values.items():  # the instances it saw, by id
        ask.report(value, step)
    running = study._storage.get_trial(ask._trial_id)
    pruner = RacingPruner(random_state=3)
    pruner_module._empirical_bayes_sign_risk = lambda *args: 0.75
    try:
        fake = pruner.decide(study, running)
    finally:
        pruner_module._empirical_bayes_sign_risk = original
    decision = pruner.decide(study, running)
    assert decision["prune"] and fake["risk"] == 0.75 and 0.0 <= decision["risk"] <= 1.0
    assert ({k: v for k, v in fake.items() if k != "risk"}
            == {k: v for k, v in decision.items() if k != "risk"})
