"""ParetoPruner: instance-wise pruning for Optuna studies with several objectives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from racer.adapters.optuna import (
    ParetoPruner,
    pareto_instance_objective,
    report_objectives,
    should_prune_objectives,
)
from racer.stats import pareto_dominance

optuna.logging.set_verbosity(optuna.logging.WARNING)

DIST = {"x": FloatDistribution(0.0, 1.0)}
N = 20
NOISE = np.random.default_rng(5).normal(0.0, [0.02, 0.1], size=(N, 2))
HARDNESS = np.random.default_rng(6).gamma(2.0, 0.5, N)[:, None]  # shared by all trials


def _scores(mean):
    """(N, 2) per-instance scores around ``mean``: shared hardness, small paired noise."""
    return np.asarray(mean, dtype=float) + HARDNESS + NOISE


def _add_complete(study, scores, x=0.0):
    record = {str(i): [float(v) for v in row] for i, row in enumerate(scores)}
    study.add_trial(create_trial(params={"x": x}, distributions=DIST,
                                 values=scores.mean(axis=0).tolist(),
                                 user_attrs={"racer_objectives": record}))


def _running(study, scores, steps=None):
    trial = study.ask()
    for i in (range(len(scores)) if steps is None else steps):
        report_objectives(trial, scores[i], step=i)
    return trial, study._storage.get_trial(trial._trial_id)


def _study(directions=("minimize", "minimize"), pruner=None):
    return optuna.create_study(directions=list(directions),
                               pruner=pruner or ParetoPruner(random_state=0))


# ---------------------------------------------------------------------- decisions


def test_a_clearly_dominated_trial_is_pruned_and_a_pareto_optimal_one_is_not():
    study = _study()
    _add_complete(study, _scores([0.20, 1.0]))       # trial 0: the reference
    _add_complete(study, _scores([0.30, 2.0]))       # trial 1: dominated, not a reference
    pruner = ParetoPruner(random_state=0)
    _, dominated = _running(study, _scores([0.30, 1.5]), steps=range(8))
    decision = pruner.decide(study, dominated)
    assert decision["prune"] and decision["reason"] == "dominated"
    assert decision["reference"] == 0 and decision["references"] == [0]
    assert decision["risk"] == pytest.approx(1 - decision["prob_dominated"])
    assert decision["risk"] < 0.05

    _, tradeoff = _running(study, _scores([0.10, 2.0]), steps=range(8))   # better error
    _, better = _running(study, _scores([0.15, 0.8]), steps=range(8))     # better on both
    for frozen in (tradeoff, better):
        decision = pruner.decide(study, frozen)
        assert not decision["prune"] and decision["prob_dominated"] < 0.05


def test_no_prune_before_min_instances_nor_without_a_complete_reference():
    study = _study()
    _, early = _running(study, _scores([0.5, 5.0]), steps=range(8))
    assert not ParetoPruner().decide(study, early)["prune"]          # no reference yet
    _add_complete(study, _scores([0.20, 1.0]))
    _, few = _running(study, _scores([0.5, 5.0]), steps=range(4))
    assert not ParetoPruner(min_instances=5).decide(study, few)["prune"]
    assert ParetoPruner(min_instances=4).decide(study, few)["prune"]


def test_the_default_screens_the_first_instance_against_the_references_front():
    # min_instances=1: on one instance the posterior is certain of what it shows, so the
    # first check prunes exactly the trials a reference dominates (or equals) there.
    study = _study()
    _add_complete(study, _scores([0.20, 1.0])[:5])  # 5 instances: the reference
    checks = {"dominated on both": ([0.5, 5.0], True, "dominated"),
              "equal on one, worse on the other": ([0.20, 5.0], True, "dominated"),
              "a repeat": ([0.20, 1.0], True, "indistinguishable"),
              "better on one": ([0.10, 5.0], False, "")}
    for name, (mean, pruned, reason) in checks.items():
        _, first = _running(study, _scores(mean), steps=range(1))
        decision = ParetoPruner(random_state=0).decide(study, first)
        assert (decision["prune"], decision["reason"]) == (pruned, reason), name
        assert decision["n_instances"] == 1
        # min_instances=2, round 2's default, waits for a second instance
        assert not ParetoPruner(min_instances=2, random_state=0).decide(study, first)["prune"]


def test_a_prune_writes_its_reason_and_reference_but_no_risk_which_decide_still_returns():
    study = _study()
    _add_complete(study, _scores([0.20, 1.0]))
    _, frozen = _running(study, _scores([0.5, 5.0]), steps=range(6))
    pruner = ParetoPruner(random_state=0)
    decision = pruner.decide(study, frozen)
    assert pruner.prune(study, frozen)
    attrs = study._storage.get_trial(frozen._trial_id).user_attrs
    assert attrs["racer_prune_reason"] == decision["reason"] == "dominated"
    assert attrs["racer_prune_reference"] == decision["reference"] == 0
    assert "racer_prune_risk" not in attrs
    assert 0.0 <= decision["risk"] < 0.05


@pytest.mark.parametrize("directions", [("minimize", "minimize"), ("maximize", "minimize")])
def test_the_decision_is_pareto_dominance_on_the_same_data_and_seed(directions):
    study = _study(directions)
    # b trades the first objective for the second against a: both are references.
    a = _scores([0.20, 1.0])
    b = _scores([0.10 if directions[0] == "minimize" else 0.30, 2.0])
    _add_complete(study, a, x=0.1)
    _add_complete(study, b, x=0.2)
    trial_scores = _scores([0.18, 1.6])
    steps = [3, 0, 7, 11, 5, 2]                              # visited out of order
    _, frozen = _running(study, trial_scores, steps=steps)
    pruner = ParetoPruner(random_state=11, n_samples=500)
    decision = pruner.decide(study, frozen)

    rows = sorted(steps)
    scores = np.stack([trial_scores[rows], a[rows], b[rows]], axis=1)
    res = pareto_dominance(scores, direction=list(directions), n_samples=500,
                           random_state=np.random.default_rng([11, frozen.number, len(rows)]))
    assert decision["references"] == [0, 1]
    assert decision["prob_dominated"] == 1.0 - res.prob_nondominated[0]
    assert decision["prob_dominates"] == res.prob_dominates[1:, 0].tolist()
    assert decision["prob_equivalent"] == res.prob_equivalent[1:, 0].tolist()
    assert decision["prune"] == (decision["prob_dominated"] > 0.95)


def test_some_reference_dominates_is_the_joint_probability_not_the_best_pair():
    # a is better on error by 0.3 and differs from the trial on cost by d (mean 0); b is
    # better on cost by 0.3 and differs on error by -d. In every posterior draw the weighted
    # mean of d is <= 0 (a dominates) or >= 0 (b dominates): each pair is a coin flip,
    # jointly one of them dominates for sure. The level is on "some reference".
    study = _study()
    rng = np.random.default_rng(1)
    trial_scores = rng.normal(1.0, 0.05, (N, 2))
    d = rng.normal(0.0, 0.1, N)
    d -= d.mean()
    _add_complete(study, trial_scores + np.stack([np.full(N, -0.3), d], axis=1))
    _add_complete(study, trial_scores + np.stack([-d, np.full(N, -0.3)], axis=1))
    _, frozen = _running(study, trial_scores)
    decision = ParetoPruner(random_state=0).decide(study, frozen)
    assert decision["references"] == [0, 1]
    assert max(decision["prob_dominates"]) < 0.8
    assert decision["prob_dominated"] == 1.0 and decision["prune"]


def test_a_repeat_of_a_completed_trial_is_equivalent_even_with_rope_zero():
    study = _study()
    ref = _scores([0.20, 1.0])
    _add_complete(study, ref)
    _, repeat = _running(study, ref, steps=range(6))
    decision = ParetoPruner(random_state=0).decide(study, repeat)
    assert decision["prune"] and decision["reason"] == "indistinguishable"
    assert decision["prob_equivalent"] == [1.0] and decision["risk"] == 0.0


def test_rope_per_objective_makes_a_close_trial_equivalent():
    study = _study()
    ref = _scores([0.20, 1.0])
    _add_complete(study, ref)
    close = ref + np.random.default_rng(2).normal(0, [0.002, 0.01], size=ref.shape)
    _, frozen = _running(study, close)
    assert not ParetoPruner(random_state=0).decide(study, frozen)["prune"]
    decision = ParetoPruner(rope=[0.02, 0.1], random_state=0).decide(study, frozen)
    assert decision["prune"] and decision["reason"] == "indistinguishable"


def test_a_partial_complete_trial_is_not_a_reference():
    study = _study()
    _add_complete(study, _scores([0.20, 1.0]))                # full: 20 instances
    _add_complete(study, _scores([0.0, 0.0])[:10])            # 10 instances only, "best"
    _, frozen = _running(study, _scores([0.5, 5.0]), steps=range(6))
    assert ParetoPruner(random_state=0).decide(study, frozen)["references"] == [0]


# ---------------------------------------------------------------------- in a study


def _evaluate(trial, instance):
    x = trial.suggest_float("x", 0.0, 1.0)
    y = trial.suggest_float("y", 0.0, 1.0)
    wobble = 0.05 * np.sin(7 * instance + 3 * x)
    return x + y + 0.2 * instance + wobble, 1 - x + y + 0.2 * instance - wobble


INSTANCES = np.linspace(0, 1, 12).tolist()


def test_a_study_prunes_dominated_trials_and_records_why():
    study = optuna.create_study(directions=["minimize", "minimize"],
                                pruner=ParetoPruner(random_state=0),
                                sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(pareto_instance_objective(_evaluate, INSTANCES, random_state=0), n_trials=15)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert pruned
    for t in pruned:
        assert t.values is None and t.user_attrs["racer_pruned"] is True
        assert t.user_attrs["racer_n_instances"] == len(t.user_attrs["racer_objectives"]) < 12
        # A pruned trial's y is larger than its reference's: it adds to both objectives.
        ref = study.trials[t.user_attrs["racer_prune_reference"]]
        assert t.params["y"] > ref.params["y"]
    # Reason and reference are written; no attribute claims a probability.
    assert all(t.user_attrs["racer_prune_reason"] in ("dominated", "indistinguishable")
               and "racer_prune_risk" not in t.user_attrs for t in pruned)
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert all(len(t.values) == 2 and len(t.user_attrs["racer_objectives"]) == 12
               for t in complete)


def test_nop_pruner_records_but_never_prunes():
    study = optuna.create_study(directions=["minimize", "minimize"],
                                pruner=optuna.pruners.NopPruner(),
                                sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(pareto_instance_objective(_evaluate, INSTANCES, random_state=0), n_trials=8)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)


def _enqueued_run(storage, n_trials, resume_after=None):
    """24 enqueued configurations (the sampler plays no part), optionally in two sessions."""
    points = np.random.default_rng(3).random((24, 2))
    study = optuna.create_study(directions=["minimize", "minimize"], storage=storage,
                                study_name="pareto", pruner=ParetoPruner(random_state=4))
    for x, y in points:
        study.enqueue_trial({"x": float(x), "y": float(y)})
    objective = pareto_instance_objective(_evaluate, INSTANCES, random_state=4)
    if resume_after is None:
        study.optimize(objective, n_trials=n_trials)
    else:
        study.optimize(objective, n_trials=resume_after)
        study = optuna.load_study(study_name="pareto", storage=storage,
                                  pruner=ParetoPruner(random_state=4))
        study.optimize(objective, n_trials=n_trials - resume_after)
    return [(t.state, t.user_attrs.get("racer_prune_reason"),
             t.user_attrs.get("racer_prune_reference"), t.user_attrs["racer_objectives"])
            for t in study.trials]


def test_a_resumed_study_in_storage_takes_the_same_decisions(tmp_path):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    baseline = _enqueued_run(None, 24)
    assert any(state == TrialState.PRUNED for state, *_ in baseline)
    rdb = _enqueued_run(f"sqlite:///{tmp_path / 'study.db'}", 24, resume_after=10)
    journal = _enqueued_run(JournalStorage(JournalFileBackend(str(tmp_path / "journal.log"))),
                            24, resume_after=10)
    assert rdb == baseline
    assert journal == baseline


# ---------------------------------------------------------------------- errors


def test_a_single_objective_study_is_pointed_to_racing_pruner():
    study = optuna.create_study(pruner=ParetoPruner())
    trial = study.ask()
    with pytest.raises(ValueError, match="RacingPruner"):
        ParetoPruner().decide(study, study._storage.get_trial(trial._trial_id))
    with pytest.raises(ValueError, match="RacingPruner"):
        study.optimize(pareto_instance_objective(lambda t, i: (1.0, 2.0), [0, 1]), n_trials=1)


def test_a_vector_of_the_wrong_length_is_refused():
    study = _study()
    trial = study.ask()
    with pytest.raises(ValueError, match="`values` must hold one number per objective"):
        report_objectives(trial, (1.0, 2.0, 3.0), step=0)
    with pytest.raises(TypeError, match="`values`"):
        report_objectives(trial, 1.0, step=0)
    report_objectives(trial, (1.0, 2.0), step=0)
    with pytest.raises(ValueError, match="`step` 0 is already recorded"):
        report_objectives(trial, (1.0, 2.0), step=0)
    # A record written by hand with the wrong length is caught where the pruner reads it.
    trial.set_user_attr("racer_objectives", {"0": [1.0, 2.0], "1": [1.0]})
    with pytest.raises(ValueError, match="one number per objective"):
        ParetoPruner().decide(study, study._storage.get_trial(trial._trial_id))


def test_options_are_checked_by_name():
    with pytest.raises(ValueError, match="`credibility`"):
        ParetoPruner(credibility=0.5)
    with pytest.raises(ValueError, match="`rope`"):
        ParetoPruner(rope=-1.0)
    with pytest.raises(ValueError, match="`min_instances`"):
        ParetoPruner(min_instances=0)
    with pytest.raises(ValueError, match="`n_samples`"):
        ParetoPruner(n_samples=10)
    study = _study()
    _add_complete(study, _scores([0.2, 1.0]))
    _, frozen = _running(study, _scores([0.3, 2.0]), steps=range(6))
    with pytest.raises(ValueError, match="`rope` has 3 values but the study has 2"):
        ParetoPruner(rope=[0.1, 0.1, 0.1]).decide(study, frozen)


def test_another_pruner_on_the_study_is_an_error_not_silence():
    study = optuna.create_study(directions=["minimize", "minimize"])   # MedianPruner
    trial = study.ask()
    report_objectives(trial, (1.0, 2.0), step=0)
    with pytest.raises(TypeError, match="pruner=ParetoPruner"):
        should_prune_objectives(trial)
    with pytest.raises(TypeError, match="`trial`"):
        should_prune_objectives(study._storage.get_trial(trial._trial_id))


def test_on_prune_estimate_completes_with_the_paired_estimate():
    study = optuna.create_study(directions=["minimize", "minimize"],
                                pruner=ParetoPruner(random_state=0),
                                sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(pareto_instance_objective(_evaluate, INSTANCES, on_prune="estimate",
                                             random_state=0), n_trials=15)
    pruned = [t for t in study.trials if t.user_attrs.get("racer_pruned")]
    assert pruned and all(t.state == TrialState.COMPLETE for t in pruned)
    for t in pruned:
        ref = study.trials[t.user_attrs["racer_prune_reference"]]
        record, ref_record = t.user_attrs["racer_objectives"], ref.user_attrs["racer_objectives"]
        gap = np.mean([np.subtract(record[s], ref_record[s]) for s in record], axis=0)
        # ref.values sums its 12 values in its visiting order, the estimate in step order:
        # the two differ by rounding only (values of order 1).
        np.testing.assert_allclose(t.values, np.add(ref.values, gap), rtol=0, atol=1e-12)
        # A pruned trial is never a reference: its record is partial.
        assert len(record) < len(INSTANCES)
    with pytest.raises(ValueError, match="`on_prune`"):
        pareto_instance_objective(_evaluate, INSTANCES, on_prune="return")


def _pruned_study(sampler, on_prune, n_trials=15):
    study = optuna.create_study(directions=["minimize", "minimize"],
                                pruner=ParetoPruner(random_state=0), sampler=sampler)
    study.optimize(pareto_instance_objective(_evaluate, INSTANCES, on_prune=on_prune,
                                             random_state=0), n_trials=n_trials)
    return study


def test_a_gp_sampler_with_pruned_trials_warns_once_and_points_to_estimate():
    # GPSampler's first n_startup_trials are random and need no PyTorch.
    def gp():
        return optuna.samplers.GPSampler(seed=0, n_startup_trials=100)

    with pytest.warns(UserWarning, match="on_prune='estimate'") as caught:
        study = _pruned_study(gp(), "prune")
    assert sum(t.state == TrialState.PRUNED for t in study.trials) >= 2
    assert len([w for w in caught if "GPSampler" in str(w.message)]) == 1
    with warnings.catch_warnings():
        # No such warning with "estimate", nor under a sampler that reads PRUNED trials.
        warnings.filterwarnings("error", message=".*GPSampler")
        _pruned_study(gp(), "estimate")
        _pruned_study(optuna.samplers.TPESampler(seed=0), "prune")


def test_a_non_finite_score_is_never_a_reason_to_prune():
    study = _study()
    _add_complete(study, _scores([0.2, 1.0]))
    bad = _scores([0.5, 5.0])
    bad[2, 1] = np.nan                   # a failed run: no decision is drawn from it
    _, frozen = _running(study, bad, steps=range(8))
    decision = ParetoPruner(random_state=0).decide(study, frozen)
    assert not decision["prune"] and decision["prob_dominated"] is None
