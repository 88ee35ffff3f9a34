"""RacingPruner's stated risk (issue 22): the ``racer_prune_risk`` attribute and pruning_risks."""

from __future__ import annotations

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")
scipy_stats = pytest.importorskip("scipy.stats")

from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from racer.adapters.optuna import (
    PruneRisk,
    RacingPruner,
    instance_objective,
    pruning_risks,
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


@pytest.mark.parametrize("n_better, n_worse, n_tied", [(3, 12, 0), (1, 9, 2), (0, 6, 4),
                                                       (5, 20, 5)])
def test_dominated_sign_risk_is_the_binomial_tail_and_is_written_on_the_trial(
        n_better, n_worse, n_tied):
    # Computed without racer.stats: for the DP sign test the risk P(theta >= 1/2) is
    # P(Beta(n_better, n_worse) >= 1/2) = P(Binomial(n - 1, 1/2) <= n_better - 1),
    # n = n_better + n_worse (ties and the prior on the tie drop out; Benavoli et al. 2015,
    # Theorem 2). No wins at all: the trial is certainly worse, risk 0.
    values = _record(n_better, n_worse, n_tied)
    study = _study_with_reference(np.zeros(values.size + 5))
    frozen = _running(study, values)
    pruner = RacingPruner(random_state=0)
    decision = pruner.decide(study, frozen)
    expected = (scipy_stats.binom.cdf(n_better - 1, n_better + n_worse - 1, 0.5)
                if n_better else 0.0)
    assert decision["prune"] and decision["reason"] == "dominated"
    # Incomplete beta vs a binomial sum: equal up to rounding of either.
    assert decision["risk"] == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert pruner.prune(study, frozen)
    attrs = study.trials[frozen.number].user_attrs
    # The attribute is the decision's number itself, not a recomputation.
    assert attrs["racer_prune_risk"] == decision["risk"] == 1.0 - decision["prob_worse"][0]
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
    assert abs(decision["risk"] - simulated) < tol
    assert decision["risk"] == 1.0 - decision["prob_equiv"][0]
    assert pruner.prune(study, frozen)
    attrs = study.trials[frozen.number].user_attrs
    assert attrs["racer_prune_risk"] == decision["risk"]
    assert attrs["racer_prune_reason"] == "indistinguishable"


@pytest.mark.parametrize("test", ["signed-rank", "mean"])
def test_monte_carlo_tests_write_the_risk_of_their_own_draws(test):
    rng = np.random.default_rng(0)
    hardness = rng.gamma(2.0, 2.0, size=20)
    study = _study_with_reference(hardness)
    frozen = _running(study, hardness[:12] + 0.5 + 0.05 * rng.normal(size=12))
    pruner = RacingPruner(test=test, random_state=4)
    decision = pruner.decide(study, frozen)
    assert pruner.prune(study, frozen)
    # Same seed, same trial, same step: the same draws, so the same number exactly.
    assert study.trials[frozen.number].user_attrs["racer_prune_risk"] == decision["risk"]
    assert decision["risk"] == 1.0 - decision["prob_worse"][0] < 0.05


def test_a_kept_trial_gets_no_risk():
    study = _study_with_reference(np.zeros(20))
    frozen = _running(study, _record(6, 4, 2))
    assert not RacingPruner(random_state=0).prune(study, frozen)
    assert "racer_prune_risk" not in study.trials[frozen.number].user_attrs
    assert pruning_risks(study) == []


def _toy_study(pruner, on_prune, seed=0):
    instances = np.random.default_rng(5).gamma(2.0, 2.0, 20)

    def evaluate(trial, inst):
        return (trial.suggest_float("x", -1, 1) - 0.3) ** 2 + inst

    study = optuna.create_study(pruner=pruner, sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(instance_objective(evaluate, instances, on_prune=on_prune,
                                      random_state=seed), n_trials=30)
    return study


class _SilentPruner(RacingPruner):
    """The pruner before issue 22: the same decision, nothing written."""

    def prune(self, study, trial):
        return bool(self.decide(study, trial)["prune"])


@pytest.mark.parametrize("on_prune", ["prune", "return", "raise"])
def test_pruning_risks_lists_every_prune_and_writing_it_changes_no_decision(on_prune):
    study = _toy_study(RacingPruner(random_state=1), on_prune)
    before = _toy_study(_SilentPruner(random_state=1), on_prune)
    # Same seeds: the same trials, states, values and instances as without the attributes.
    assert ([(t.state, t.value, t.params, t.intermediate_values) for t in study.trials]
            == [(t.state, t.value, t.params, t.intermediate_values) for t in before.trials])
    risks = pruning_risks(study)
    pruned = [t.number for t in study.trials if t.user_attrs.get("racer_pruned")]
    assert pruned and [r.number for r in risks] == pruned
    assert pruning_risks(before) == []
    for r in risks:
        assert isinstance(r, PruneRisk)
        assert 0.0 <= r.risk < 1 - 0.95
        assert r.reason in ("dominated", "indistinguishable")
        assert study.trials[r.reference].user_attrs.get("racer_pruned") is None


def test_pruning_risks_refuses_what_is_not_a_study():
    with pytest.raises(TypeError, match="study"):
        pruning_risks([])
