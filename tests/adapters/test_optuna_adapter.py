"""Tests of racer.adapters.optuna: RacingPruner, instance_objective and IteratedRace."""

from __future__ import annotations

import numpy as np

from racer.racing.base import RaceView
import pytest

optuna = pytest.importorskip("optuna")
baycomp = pytest.importorskip("baycomp")

from optuna.distributions import FloatDistribution  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

from racer.adapters.optuna import RacingPruner, instance_objective  # noqa: E402
from racer.adapters.optuna._common import SCORES_ATTR  # noqa: E402
from racer.adapters.optuna.pruner import _sign_posteriors  # noqa: E402
from racer.stats.bayesian_sign import prob_greater_from_counts  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

DIST = {"x": FloatDistribution(-1.0, 1.0)}


def _add_complete(study, values, x=0.0, user_attrs=None):
    values = np.asarray(values, dtype=float)
    study.add_trial(
        create_trial(
            params={"x": x},
            distributions=DIST,
            value=float(values.mean()),
            intermediate_values={i: float(v) for i, v in enumerate(values)},
            user_attrs=user_attrs or {},
        )
    )


def _running(study, values, steps=None):
    """A RUNNING trial that reported ``values`` at ``steps``; returns its FrozenTrial."""
    trial = study.ask()
    steps = range(len(values)) if steps is None else steps
    for s, v in zip(steps, values):
        trial.report(float(v), int(s))
    return study._storage.get_trial(trial._trial_id)


# ------------------------------------------------------------------ posterior probabilities


@pytest.mark.parametrize(
    "diff_counts", [(12, 3, 5), (4, 9, 0), (7, 7, 10), (0, 5, 2), (20, 18, 1)]
)
def test_sign_posteriors_match_baycomp_sign_test(diff_counts):
    # baycomp's SignTest samples Dir(n_left, n_rope + prior, n_right): the same posterior as
    # ours, which is exact (closed form and quadrature). With 50,000 baycomp draws the
    # standard error of a probability is at most 0.0023, so 0.01 is more than 4 of them.
    n_better, n_worse, n_tied = diff_counts
    y = np.r_[np.ones(n_better), -np.ones(n_worse), np.zeros(n_tied)]  # trial - ref
    x = np.zeros_like(y)
    samples = baycomp.SignTest.sample(x, y, rope=0.5, prior=1.0, nsamples=50000, random_state=1)
    left, right = samples[:, 0], samples[:, 2]
    ref_worse = np.mean(left > right)
    ref_equiv = np.mean(np.abs(right - left) < 2 * 0.05)
    worse, equiv = _sign_posteriors(
        np.array([n_better]), np.array([n_worse]), np.array([n_tied]), 1.0, 0.05
    )
    assert worse[0] == pytest.approx(ref_worse, abs=0.01)
    assert equiv[0] == pytest.approx(ref_equiv, abs=0.01)


@pytest.mark.parametrize("diff_counts", [(0, 3, 2), (2, 9, 0), (5, 5, 4)])
def test_idp_dominance_matches_baycomp_with_the_prior_on_the_trial_side(diff_counts):
    # prior="idp" counts the pseudo-observation as a win of the trial: baycomp's SignTest with
    # prior=(1, RIGHT) samples that posterior (y = trial, RIGHT = trial better). Same
    # tolerance argument as above (exact vs 50,000 draws).
    n_better, n_worse, n_tied = diff_counts
    y = np.r_[np.ones(n_better), -np.ones(n_worse), np.zeros(n_tied)]
    samples = baycomp.SignTest.sample(np.zeros_like(y), y, rope=0.5, prior=(1.0, 2),
                                      nsamples=50000, random_state=3)
    ref = np.mean(samples[:, 0] > samples[:, 2])
    # What the pruner computes: P(trial worse) with the pseudo-observation against it.
    got = prob_greater_from_counts(n_worse, n_better, pseudo_against=1.0)
    assert got == pytest.approx(ref, abs=0.01)


def test_idp_prior_needs_a_longer_losing_streak():
    study = optuna.create_study()
    _add_complete(study, np.zeros(10))
    three = _running(study, [1.0, 1.0, 1.0])
    assert RacingPruner(random_state=0).prune(study, three)
    assert not RacingPruner(prior="idp", random_state=0).prune(study, three)
    five = _running(study, [1.0] * 5)
    assert RacingPruner(prior="idp", random_state=0).prune(study, five)


def test_mean_test_weighs_sizes_where_the_sign_test_counts_wins():
    # The trial loses 9 of 12 instances by 0.1 and wins 3 by 1.0: worse on most instances,
    # better on the mean (+0.175). The sign test finds it probably worse; the mean test not.
    study = optuna.create_study(direction="minimize")
    base = np.linspace(1.0, 2.0, 20)
    _add_complete(study, base)
    trial_values = base[:12] + np.r_[np.full(9, 0.1), np.full(3, -1.0)]
    frozen = _running(study, trial_values)
    sign = RacingPruner(test="sign", random_state=0).decide(study, frozen)
    mean = RacingPruner(test="mean", random_state=0).decide(study, frozen)
    assert sign["prob_worse"][0] > 0.9
    assert mean["prob_worse"][0] < 0.5
    assert not mean["prune"]


# ------------------------------------------------------------------------------ the pruner


@pytest.mark.parametrize("test", ["sign", "signed-rank", "mean"])
def test_clearly_worse_trial_is_pruned_as_dominated(test):
    rng = np.random.default_rng(0)
    hardness = rng.gamma(2.0, 2.0, size=20)
    study = optuna.create_study(direction="minimize")
    _add_complete(study, hardness)
    frozen = _running(study, hardness[:12] + 0.5 + 0.05 * rng.normal(size=12))
    decision = RacingPruner(test=test, random_state=0).decide(study, frozen)
    assert decision["prune"] and decision["reason"] == "dominated"
    assert decision["prob_worse"][0] > 0.9
    # The same numbers under maximisation mean the trial is better: never pruned.
    study_max = optuna.create_study(direction="maximize")
    _add_complete(study_max, hardness)
    frozen = _running(study_max, hardness[:12] + 0.5 + 0.05 * rng.normal(size=12))
    assert not RacingPruner(test=test, random_state=0).prune(study_max, frozen)


def test_too_few_steps_never_prune():
    study = optuna.create_study()
    _add_complete(study, np.zeros(10))
    frozen = _running(study, [5.0, 5.0])
    assert not RacingPruner(n_startup_steps=3, random_state=0).prune(study, frozen)
    frozen = _running(study, [5.0, 5.0, 5.0, 5.0, 5.0])
    assert RacingPruner(n_startup_steps=3, random_state=0).prune(study, frozen)


def test_by_default_two_straight_losses_prune_and_one_does_not():
    # The default start (2 common steps; 3 before the ground-truth pilot chose 2)
    study = optuna.create_study()
    _add_complete(study, np.zeros(10))
    assert not RacingPruner(random_state=0).prune(study, _running(study, [5.0]))
    assert RacingPruner(random_state=0).prune(study, _running(study, [5.0, 5.0]))
    # one win in two: not dominated, and nowhere near the equivalence band
    assert not RacingPruner(random_state=0).prune(study, _running(study, [5.0, -5.0]))


def test_identical_trial_is_pruned_only_through_the_equivalence_band():
    # A trial that ties the best on every instance is never *worse* (no losses), but it is
    # practically equivalent to it, with P(|theta - 1/2| < eps) growing with the ties.
    values = np.linspace(1.0, 3.0, 30)
    study = optuna.create_study()
    _add_complete(study, values)
    frozen = _running(study, values)
    with_band = RacingPruner(eps=0.05, random_state=0).decide(study, frozen)
    assert with_band["prune"] and with_band["reason"] == "indistinguishable"
    assert with_band["prob_worse"][0] == 0.0
    assert not RacingPruner(eps=0.0, random_state=0).prune(study, frozen)


def test_rope_turns_small_differences_into_ties():
    rng = np.random.default_rng(1)
    base = rng.normal(size=25)
    study = optuna.create_study()
    _add_complete(study, base)
    # Slightly worse on every instance, by less than 0.01: dominated without a rope,
    # practically equivalent with rope=0.01.
    frozen = _running(study, base + rng.uniform(0.001, 0.009, size=25))
    assert RacingPruner(rope=0.0, random_state=0).decide(study, frozen)["reason"] == "dominated"
    assert (RacingPruner(rope=0.01, random_state=0).decide(study, frozen)["reason"]
            == "indistinguishable")


def test_mean_guard_keeps_a_trial_that_loses_often_but_wins_big():
    # The trial loses 12 of 15 instances by 0.1 and wins 3 by 2.0: the sign test is sure it
    # is worse more often than not, but its mean is better, and the study optimises the mean.
    ref = np.zeros(15)
    trial = np.r_[np.full(12, 0.1), np.full(3, -2.0)]
    study = optuna.create_study()
    _add_complete(study, ref)
    frozen = _running(study, trial)
    decision = RacingPruner(random_state=0).decide(study, frozen)
    assert decision["prob_worse"][0] > 0.95
    assert not decision["prune"]


def test_an_unmarked_partial_trial_with_the_best_value_is_never_a_reference():
    # An objective that returns the mean of the instances seen when pruned (Optuna's
    # advice for WilcoxonPruner) makes a trial pruned on 3 easy instances the study's best.
    # It carries no mark; the pruner must still pair against the best *full* trial.
    study = optuna.create_study()
    study.add_trial(create_trial(params={"x": 0.0}, distributions=DIST, value=-10.0,
                                 intermediate_values={3: -10.0, 7: -10.0, 11: -10.0}))
    _add_complete(study, np.zeros(20))
    _add_complete(study, np.full(20, 0.5))
    assert study.best_trial.number == 0  # Optuna's best is the partial mean
    frozen = _running(study, np.ones(10))
    decision = RacingPruner(top_k=1, random_state=0).decide(study, frozen)
    assert decision["references"] == [1]
    assert decision["prune"] and decision["reference"] == 1


def test_a_reference_must_cover_every_step_of_the_trial():
    # Two "full" trials (20 values each); the better one lacks step 25, which the running
    # trial reported, so the other one is the reference.
    study = optuna.create_study()
    study.add_trial(create_trial(
        params={"x": 0.0}, distributions=DIST, value=-1.0,
        intermediate_values={i: -1.0 for i in range(20)}))
    study.add_trial(create_trial(
        params={"x": 0.0}, distributions=DIST, value=0.0,
        intermediate_values={i: 0.0 for i in list(range(19)) + [25]}))
    frozen = _running(study, np.ones(6), steps=[0, 1, 2, 3, 4, 25])
    decision = RacingPruner(random_state=0).decide(study, frozen)
    assert decision["references"] == [1]


def test_unpaired_guard_keeps_a_trial_whose_running_mean_beats_the_reference():
    # The reference is 0 on easy instances 0-9 and 10 on hard ones 10-19 (mean 5). A trial
    # that lost each of the 8 easy instances it saw by 1 is paired-worse (8 losses), but
    # its running mean (1) beats the reference's mean (5): WilcoxonPruner's guard keeps it.
    study = optuna.create_study()
    _add_complete(study, np.r_[np.zeros(10), np.full(10, 10.0)])
    frozen = _running(study, np.ones(8))
    decision = RacingPruner(random_state=0).decide(study, frozen)
    assert decision["prob_worse"][0] > 0.95
    assert not decision["prune"]
    # The same losses on the hard instances: running mean 11 > 5, pruned.
    frozen = _running(study, np.full(8, 11.0), steps=range(10, 18))
    assert RacingPruner(random_state=0).decide(study, frozen)["reason"] == "dominated"


def test_partial_means_marked_by_the_helper_are_not_references():
    study = optuna.create_study()
    _add_complete(study, np.full(4, -5.0), user_attrs={"racer_pruned": True})
    frozen = _running(study, np.ones(10))
    assert RacingPruner(random_state=0).decide(study, frozen)["references"] == []


def test_non_finite_values_never_prune():
    study = optuna.create_study()
    _add_complete(study, np.zeros(10))
    frozen = _running(study, [1.0, 1.0, 1.0, float("nan"), 1.0])
    assert not RacingPruner(random_state=0).prune(study, frozen)


def test_multi_objective_study_is_refused_clearly():
    study = optuna.create_study(directions=["minimize", "minimize"])
    trial = study.ask()
    with pytest.raises(ValueError, match="single-objective"):
        RacingPruner(random_state=0).prune(study, study._storage.get_trial(trial._trial_id))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"test": "wilcoxon"}, "`test` must be one of"),
        ({"credibility": 1.5}, "`credibility`"),
        ({"rope": -0.1}, "`rope` must be >= 0"),
        ({"eps": 0.5}, "`eps`"),
        ({"top_k": 0}, "`top_k` must be >= 1"),
        ({"n_startup_steps": 1}, "`n_startup_steps` must be >= 2"),
        ({"prior_strength": 0.0}, "`prior_strength`"),
        ({"n_samples": 10}, "`n_samples`"),
        ({"random_state": -1}, "`random_state`"),
        ({"prior": "flat"}, "`prior` must be one of"),
        ({"prior": "idp", "test": "signed-rank"}, "test='sign' only"),
    ],
)
def test_pruner_arguments_are_checked(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        RacingPruner(**kwargs)


# -------------------------------------------------------------- helper and whole studies


def _toy(n_instances=20, seed=0):
    rng = np.random.default_rng(seed)
    hardness = rng.gamma(2.0, 2.0, size=n_instances)
    shift = rng.normal(0.0, 0.3, size=n_instances)

    def evaluate(trial, i):
        x = trial.suggest_float("x", -2.0, 2.0)
        return hardness[i] + (x - shift[i]) ** 2

    return evaluate, list(range(n_instances))


def _run_study(pruner, on_prune, n_trials=25, storage=None, n_jobs=1, seed=0, n_instances=20):
    evaluate, instances = _toy(n_instances)
    study = optuna.create_study(
        storage=storage, pruner=pruner, sampler=optuna.samplers.TPESampler(seed=seed)
    )
    objective = instance_objective(evaluate, instances, on_prune=on_prune, random_state=seed)
    study.optimize(objective, n_trials=n_trials, n_jobs=n_jobs)
    return study


@pytest.mark.parametrize("on_prune, state", [("prune", TrialState.PRUNED),
                                             ("return", TrialState.COMPLETE),
                                             ("estimate", TrialState.COMPLETE),
                                             ("raise", TrialState.PRUNED)])
def test_helper_reports_every_instance_and_marks_pruned_trials(on_prune, state):
    study = _run_study(RacingPruner(random_state=0), on_prune)
    pruned = [t for t in study.trials if t.user_attrs.get("racer_pruned")]
    full = [t for t in study.trials if not t.user_attrs.get("racer_pruned")]
    assert pruned and full
    assert all(t.state == state for t in pruned)
    assert all(t.state == TrialState.COMPLETE for t in full)
    for t in full:
        assert sorted(t.intermediate_values) == list(range(20))
        assert t.value == pytest.approx(np.mean(list(t.intermediate_values.values())))
    for t in pruned:
        instance_steps = {s: v for s, v in t.intermediate_values.items() if s < 20}
        assert len(instance_steps) == t.user_attrs["racer_n_instances"] < 20
        if on_prune == "prune":
            # The estimate sits at the extra step 20 and Optuna made it the trial's value.
            assert max(t.intermediate_values) == 20
            # Bit-equal on purpose: Optuna stores the reported float itself as the value.
            assert t.value == t.intermediate_values[20]
        else:
            assert max(t.intermediate_values) < 20
        if on_prune == "return":
            assert t.value == pytest.approx(np.mean(list(t.intermediate_values.values())))
        if on_prune in ("estimate", "prune"):
            assert np.isfinite(t.value)


def _best_then_shifted_study(**objective_options):
    """Two trials over 12 instances of very different hardness: "best", then "worse" = best
    shifted by +1 on every instance (pruned by RacingPruner). Returns (hardness, study)."""
    hardness = np.linspace(0.0, 50.0, 12)
    shift = {"best": 0.0, "worse": 1.0}

    def evaluate(trial, i):
        kind = trial.suggest_categorical("kind", ["best", "worse"])
        return hardness[i] + shift[kind]

    study = optuna.create_study(pruner=RacingPruner(random_state=0))
    study.enqueue_trial({"kind": "best"})
    study.enqueue_trial({"kind": "worse"})
    study.optimize(instance_objective(evaluate, list(range(12)), random_state=0,
                                      **objective_options), n_trials=2)
    return hardness, study


def test_default_mode_returns_the_paired_estimate_of_the_full_mean():
    # Instance hardness differs wildly; the pruned trial is the best one shifted by +1 on the
    # instances it saw. Its partial mean depends on which instances came first, the paired
    # estimate is exactly mean(best) + 1. The default is on_prune="estimate".
    hardness, study = _best_then_shifted_study()
    pruned = study.trials[1]
    assert pruned.user_attrs["racer_pruned"]
    assert pruned.state == TrialState.COMPLETE
    # Sums of different instances in a different order: a few ulps apart at most.
    assert pruned.value == pytest.approx(hardness.mean() + 1.0)


def test_an_estimate_is_never_better_than_the_trial_it_was_pruned_against():
    # With top_k=1 the pruner's reference and the estimate's R are the best fully evaluated
    # trial, and a prune needs R's mean on the common instances to be at least as good: so
    # the estimate's bound (never better than mean(R)) does not bind, each value is the
    # plain paired estimate, and an estimated trial cannot become study.best_trial.
    study = _run_study(RacingPruner(random_state=0), "estimate", n_trials=40)
    pruned = [t for t in study.trials if t.user_attrs.get("racer_pruned")]
    assert len(pruned) >= 10
    for t in pruned:
        reference = study.trials[t.user_attrs["racer_prune_reference"]]
        ref = reference.intermediate_values
        gaps = [v - ref[i] for i, v in t.intermediate_values.items()]
        plain = np.mean(list(ref.values())) + np.mean(gaps)
        assert t.value == pytest.approx(plain, rel=1e-12)  # summation order only
        assert t.value >= reference.value - 1e-12 * abs(reference.value)
    assert not study.best_trial.user_attrs.get("racer_pruned", False)


class _PruneAtSecondInstance(optuna.pruners.BasePruner):
    """Prunes every trial but the first at its second instance, whatever it shows."""

    def prune(self, study, trial):
        return trial.number > 0 and len(trial.intermediate_values) == 2


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_an_estimate_better_than_the_best_is_bounded_by_the_best(direction):
    # A pruner with another reference (here: none) can prune a trial that beats the best on
    # the instances it saw. Its paired estimate would then beat mean(R) and, COMPLETE, become
    # study.best_trial after two of six instances: the value told is bounded by mean(R).
    better = -1.0 if direction == "minimize" else 1.0

    def evaluate(trial, i):
        kind = trial.suggest_categorical("kind", ["first", "better"])
        return float(i) + (better if kind == "better" else 0.0)

    study = optuna.create_study(direction=direction, pruner=_PruneAtSecondInstance())
    study.enqueue_trial({"kind": "first"})
    study.enqueue_trial({"kind": "better"})
    study.optimize(instance_objective(evaluate, list(range(6)), random_state=0), n_trials=2)
    first, pruned = study.trials
    assert pruned.user_attrs["racer_pruned"] and pruned.state == TrialState.COMPLETE
    assert first.value == pytest.approx(2.5)
    assert pruned.value == first.value  # the bound: mean(R) itself, not 2.5 + better
    assert study.best_trial.number == 0


def test_prune_mode_is_pruned_for_optuna_with_the_paired_estimate_as_its_value():
    # Same set-up, on_prune="prune": the dashboard's state is PRUNED, the value (Optuna's
    # copy of the last-step intermediate value) is the paired estimate, not the partial mean,
    # and study.best_trial is the complete trial.
    hardness, study = _best_then_shifted_study(on_prune="prune")
    pruned = study.trials[1]
    assert pruned.state == TrialState.PRUNED
    assert pruned.value == pytest.approx(hardness.mean() + 1.0)
    partial = [v for s, v in pruned.intermediate_values.items() if s < 12]
    assert len(partial) < 12 and pruned.value != pytest.approx(np.mean(partial))
    assert study.best_trial.number == 0


def test_same_seeds_give_the_same_study():
    a = _run_study(RacingPruner(test="signed-rank", random_state=3), "raise", n_trials=15)
    b = _run_study(RacingPruner(test="signed-rank", random_state=3), "raise", n_trials=15)
    assert [t.intermediate_values for t in a.trials] == [t.intermediate_values for t in b.trials]


def test_visiting_order_is_shuffled_per_trial_and_reproducible():
    seen = []
    objective = instance_objective(lambda t, i: seen.append(i) or 0.0, list(range(8)),
                                   random_state=1)
    study = optuna.create_study()
    study.optimize(objective, n_trials=2)
    assert sorted(seen[:8]) == list(range(8)) and seen[:8] != seen[8:]
    seen_again = []
    objective = instance_objective(lambda t, i: seen_again.append(i) or 0.0, list(range(8)),
                                   random_state=1)
    optuna.create_study().optimize(objective, n_trials=2)
    assert seen_again == seen


def test_helper_arguments_are_checked():
    with pytest.raises(ValueError, match="`on_prune`"):
        instance_objective(lambda t, i: 0.0, [1, 2], on_prune="stop")
    with pytest.raises(TypeError, match="`evaluate`"):
        instance_objective(None, [1, 2])
    with pytest.raises(ValueError, match="`instances`"):
        instance_objective(lambda t, i: 0.0, [])


def test_sqlite_storage_with_two_workers(tmp_path):
    # Everything the pruner reads comes from storage: two threads sharing a SQLite study must
    # run without errors, prune, and leave complete trials covering every instance.
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = _run_study(RacingPruner(random_state=0), "raise", n_trials=8, storage=storage,
                       n_jobs=2, n_instances=12)
    states = [t.state for t in study.trials]
    assert len(states) == 8 and TrialState.FAIL not in states
    assert TrialState.PRUNED in states
    reloaded = optuna.load_study(study_name=study.study_name, storage=storage)
    assert len(reloaded.trials) == 8


# ---------------------------------------------------------------------------- IteratedRace

from racer.adapters.optuna import IteratedRace  # noqa: E402
from racer.racing.base import Elimination, RacingTest  # noqa: E402


def _race_problem(n_instances=20, seed=0):
    rng = np.random.default_rng(seed)
    hardness = rng.gamma(2.0, 2.0, size=n_instances)
    shift = rng.normal(0.3, 0.2, size=n_instances)
    calls = []

    def evaluate(params, instance):
        calls.append((tuple(sorted(params.items())), instance))
        return hardness[instance] + (params["x"] - shift[instance]) ** 2

    return evaluate, list(range(n_instances)), calls


@pytest.mark.slow
def test_iterated_race_respects_budget_and_never_repeats_an_evaluation():
    evaluate, instances, calls = _race_problem()
    res = IteratedRace(evaluate, {"x": FloatDistribution(-1, 1)}, instances, budget=400,
                       random_state=0).run()
    assert res.n_evaluations == len(calls) <= 400
    # Elites keep their results: no (configuration, instance) pair is evaluated twice.
    assert len(set(calls)) == len(calls)
    assert res.n_iterations >= 2
    assert abs(res.best_params["x"] - 0.3) < 0.25
    # The answer is the winner of the last race, which saw at least as many instances as
    # anybody.
    last = res.races[-1]
    assert res.best_trial_number == last.best
    assert res.best_n_instances == np.max([len(t.user_attrs.get("racer_scores", {}))
                                           for t in res.study.trials]) or res.n_iterations > 1


@pytest.mark.slow
def test_iterated_race_tells_every_candidate_once_in_race_order():
    evaluate, instances, _ = _race_problem()
    res = IteratedRace(evaluate, {"x": FloatDistribution(-1, 1)}, instances, budget=400,
                       random_state=1).run()
    trials = res.study.trials
    # Every raced trial is PRUNED; the one COMPLETE trial is the answer, added at the end.
    assert all(t.state == TrialState.PRUNED for t in trials[:-1])
    assert trials[-1].state == TrialState.COMPLETE
    assert len(trials) == res.n_candidates + 1
    first = res.races[0]
    depth = {}
    for rec in first.history:
        depth[rec.candidate] = rec.n_instances
    for number, n_inst in depth.items():
        t = trials[number]
        # Eliminated after k instances: PRUNED with its running mean at step k, so TPE ranks
        # it by how long it survived.
        assert t.state == TrialState.PRUNED
        assert t.last_step == n_inst
        seen = first.scores[:n_inst, first.candidates.index(number)]
        assert t.intermediate_values[n_inst] == pytest.approx(np.mean(seen))
    for number in first.survivors:  # the instances it was raced on, with the race mean
        ci = first.candidates.index(number)
        # (The shared Tuner may register a row it then does not run: an elitist race that
        # ends on elitistLimit. A survivor's step counts the instances it saw.)
        assert trials[number].last_step == first.n_evaluated[ci] >= first.n_instances - 1
        assert trials[number].value == pytest.approx(first.mean_scores[ci])


@pytest.mark.slow
def test_iterated_race_study_best_trial_is_the_race_answer():
    evaluate, instances, _ = _race_problem()
    for seed in (0, 1, 2):
        res = IteratedRace(evaluate, {"x": FloatDistribution(-1, 1)}, instances, budget=400,
                           random_state=seed).run()
        best = res.study.best_trial
        assert best.params == res.best_params
        assert best.user_attrs["racer_answer_of"] == res.best_trial_number
        assert best.value == pytest.approx(res.best_mean)
        assert len(best.intermediate_values) == res.best_n_instances
        assert sum(t.state == TrialState.COMPLETE for t in res.study.trials) == 1


@pytest.mark.slow
def test_iterated_race_is_reproducible():
    a_eval, instances, _ = _race_problem()
    b_eval, _, _ = _race_problem()
    a = IteratedRace(a_eval, {"x": FloatDistribution(-1, 1)}, instances, budget=300,
                     random_state=5).run()
    b = IteratedRace(b_eval, {"x": FloatDistribution(-1, 1)}, instances, budget=300,
                     random_state=5).run()
    assert a.best_params == b.best_params and a.n_evaluations == b.n_evaluations


@pytest.mark.slow
def test_iterated_race_with_a_conditional_define_by_run_space():
    rng = np.random.default_rng(2)
    offset = rng.normal(size=15)

    def space(trial):
        kind = trial.suggest_categorical("kind", ["flat", "quad"])
        if kind == "quad":
            trial.suggest_float("x", -1, 1)

    def evaluate(params, instance):
        base = offset[instance]
        if params["kind"] == "flat":
            return base + 0.5
        return base + (params["x"] - 0.2) ** 2

    res = IteratedRace(evaluate, space, list(range(15)), budget=300, direction="minimize",
                       random_state=0).run()
    assert res.best_params["kind"] == "quad"
    assert {"kind"} <= set(res.study.trials[0].params)


def test_elites_are_protected_on_old_instances():
    class AlwaysDropFirst(RacingTest):
        def decide(self, view, rng):
            scores, ids = view.scores, view.ids
            return [Elimination(0, "dominated", 1, 1.0)]

        def get_params(self):
            return {}

    from racer.racing.base import ProtectElites

    wrapped = ProtectElites(AlwaysDropFirst(), n_elites=1, until=6)
    ids = np.array([0, 1, 2])
    assert wrapped.decide(RaceView.from_scores(np.zeros((5, 3)), ids), None) == []
    assert len(wrapped.decide(RaceView.from_scores(np.zeros((6, 3)), ids), None)) == 1
    # Column 0 here is not an elite (id 3): no protection.
    assert len(wrapped.decide(RaceView.from_scores(np.zeros((5, 3)), np.array([3, 1, 2])), None)) == 1


@pytest.mark.slow
def test_iterated_race_resumes_after_a_crash(tmp_path):
    # A journal file (append-only) keeps this fast; SQLite goes through the same storage API.
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(tmp_path / "race.log")))
    evaluate, instances, calls = _race_problem()

    class Crash(BaseException):
        pass

    def crashing(params, instance):
        if len(calls) == 60:
            raise Crash
        return evaluate(params, instance)

    space = {"x": FloatDistribution(-1, 1)}
    with pytest.raises(Crash):
        IteratedRace(crashing, space, instances, budget=150, storage=storage,
                     study_name="s", random_state=0).run()
    assert len(calls) == 60
    res = IteratedRace(evaluate, space, instances, budget=150, storage=storage,
                       study_name="s", random_state=0).run()
    # Nothing recorded before the crash is evaluated again, and the budget covers both runs.
    assert len(set(calls)) == len(calls)
    assert res.n_evaluations == len(calls) <= 150
    assert all(t.state != TrialState.RUNNING for t in res.study.trials)
    complete = [t for t in res.study.trials if t.state == TrialState.COMPLETE]
    assert len(complete) == 1 and complete[0].params == res.best_params
    # Running the finished driver again evaluates nothing and adds no second answer.
    n_trials = len(res.study.trials)
    again = IteratedRace(evaluate, space, instances, budget=150, storage=storage,
                         study_name="s", random_state=0).run()
    assert len(calls) == res.n_evaluations
    assert len(again.study.trials) == n_trials
    assert again.study.best_trial.params == res.best_params


def _study_contents(study):
    """What a user finds in a study: every trial's number, state, parameters, values,
    intermediate values and attributes, and the study's user and system attributes."""
    trials = [(t.number, t.state, t.params, t.values, t.intermediate_values, t.user_attrs,
               t.system_attrs) for t in study.get_trials(deepcopy=False)]
    system = study._storage.get_study_system_attrs(study._study_id)
    return trials, study.user_attrs, system


@pytest.mark.parametrize("make_sampler", [
    lambda: optuna.samplers.TPESampler(seed=3),
    # QMC keeps its position in the study's system attributes: they must reach the file too.
    lambda: optuna.samplers.QMCSampler(seed=3, warn_independent_sampling=False),
], ids=["tpe", "qmc"])
@pytest.mark.slow
def test_iterated_race_on_sqlite_stores_what_the_in_memory_study_holds(tmp_path, make_sampler):
    # With an RDB storage, Optuna works on an in-memory copy and the storage gets
    # the same content in fewer calls. The study must end up the same, trial for trial.
    import sqlite3

    evaluate, instances, _ = _race_problem()
    space = {"x": FloatDistribution(-1, 1),
             "kind": optuna.distributions.CategoricalDistribution(["a", "b"])}

    def scored(params, instance):
        return evaluate({"x": params["x"]}, instance) + (0.1 if params["kind"] == "b" else 0.0)

    memory = IteratedRace(scored, space, instances, budget=300, sampler=make_sampler(),
                          random_state=3, progress=False).run()
    path = tmp_path / "race.db"
    stored = IteratedRace(scored, space, instances, budget=300, storage=f"sqlite:///{path}",
                          sampler=make_sampler(), study_name="s", random_state=3,
                          progress=False).run()
    assert stored.best_params == memory.best_params
    assert stored.n_evaluations == memory.n_evaluations and stored.n_iterations >= 2
    # Read back from the file by a fresh storage, not from the study object's cache.
    reloaded = optuna.load_study(study_name="s", storage=f"sqlite:///{path}")
    assert _study_contents(reloaded) == _study_contents(memory.study)
    # The file is left in SQLite's default journal mode (WAL only while racing).
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.slow
def test_iterated_race_on_an_in_memory_sqlite_database():
    # "sqlite://" is a database in memory: no WAL switch (closing its connection would drop it).
    evaluate, instances, _ = _race_problem()
    res = IteratedRace(evaluate, {"x": FloatDistribution(-1, 1)}, instances, budget=120,
                       storage="sqlite://", random_state=0, progress=False).run()
    assert res.study.best_trial.params == res.best_params


@pytest.mark.slow
def test_iterated_race_on_sqlite_resumes_after_a_crash(tmp_path):
    evaluate, instances, calls = _race_problem()

    class Crash(BaseException):
        pass

    def crashing(params, instance):
        if len(calls) == 110:
            raise Crash
        return evaluate(params, instance)

    space = {"x": FloatDistribution(-1, 1)}
    url = f"sqlite:///{tmp_path / 'race.db'}"
    with pytest.raises(Crash):
        IteratedRace(crashing, space, instances, budget=200, storage=url, study_name="s",
                     random_state=0, progress=False).run()
    assert len(calls) == 110
    # The trials of the interrupted iteration are in the file, RUNNING, and every evaluation
    # made before the crash is in it (the write-behind is flushed on the way out).
    crashed = optuna.load_study(study_name="s", storage=url)
    assert any(t.state == TrialState.RUNNING for t in crashed.trials)
    params = {t.number: tuple(sorted(t.params.items())) for t in crashed.trials}
    stored = {(params[t.number], int(k)) for t in crashed.trials
              for k in t.user_attrs.get(SCORES_ATTR, {})}
    stored |= {(params[int(key.rsplit("_", 1)[1])], int(k))
               for key, record in crashed.user_attrs.items()
               if key.startswith(SCORES_ATTR + "_") for k in record}
    # Each evaluation is recorded as it arrives (racer's race loop tells results one by one),
    # so every one made before the crash is stored, those of the interrupted block too.
    assert stored == set(calls)
    res = IteratedRace(evaluate, space, instances, budget=200, storage=url, study_name="s",
                       random_state=0, progress=False).run()
    assert not stored & set(calls[110:])  # nothing stored is evaluated again
    assert len(set(calls[110:])) == len(calls) - 110
    assert res.n_evaluations == len(calls) - (len(calls[:110]) - len(stored)) <= 200
    assert all(t.state != TrialState.RUNNING for t in res.study.trials)


@pytest.mark.slow
def test_iterated_race_refuses_a_study_another_process_adds_trials_to(tmp_path):
    url = f"sqlite:///{tmp_path / 'race.db'}"
    evaluate, instances, _ = _race_problem()
    intruder = optuna.load_study  # another process, here the same one through its own storage

    def meddling(params, instance):
        if instance == instances[-1]:
            intruder(study_name="s", storage=url).add_trial(
                create_trial(params={"x": 0.0}, distributions={"x": FloatDistribution(-1, 1)},
                             value=0.0))
        return evaluate(params, instance)

    with pytest.raises(RuntimeError, match="another process added trials"):
        IteratedRace(meddling, {"x": FloatDistribution(-1, 1)}, instances, budget=300,
                     storage=url, study_name="s", random_state=0, progress=False).run()


def test_iterated_race_arguments_are_checked():
    space = {"x": FloatDistribution(-1, 1)}
    with pytest.raises(TypeError, match="`evaluate`"):
        IteratedRace(None, space, [1, 2], budget=10)
    with pytest.raises(TypeError, match="`search_space"):
        IteratedRace(lambda p, i: 0.0, {"x": (0, 1)}, [1, 2], budget=10)
    with pytest.raises(ValueError, match="`budget`"):
        IteratedRace(lambda p, i: 0.0, space, [1, 2], budget=0)
    with pytest.raises(ValueError, match="`direction`"):
        IteratedRace(lambda p, i: 0.0, space, [1, 2], budget=10, direction="up")
    with pytest.raises(ValueError, match="either `study`"):
        IteratedRace(lambda p, i: 0.0, space, [1, 2], budget=10,
                     study=optuna.create_study(), storage="sqlite://")
    with pytest.raises(ValueError, match="study is set to"):
        IteratedRace(lambda p, i: 0.0, space, [1, 2], budget=10, direction="maximize",
                     study=optuna.create_study())
    with pytest.raises(ValueError, match="single-objective"):
        IteratedRace(lambda p, i: 0.0, space, [1, 2], budget=10,
                     study=optuna.create_study(directions=["minimize", "minimize"]))


@pytest.mark.slow
def test_iterated_race_on_an_executor_matches_the_serial_run():
    from concurrent.futures import ThreadPoolExecutor

    serial_eval, instances, _ = _race_problem()
    pooled_eval, _, _ = _race_problem()
    space = {"x": FloatDistribution(-1, 1)}
    serial = IteratedRace(serial_eval, space, instances, budget=200, random_state=4).run()
    with ThreadPoolExecutor(2) as pool:
        pooled = IteratedRace(pooled_eval, space, instances, budget=200, executor=pool,
                              random_state=4).run()
    assert pooled.best_params == serial.best_params
    assert pooled.n_evaluations == serial.n_evaluations


@pytest.mark.slow
def test_a_timeout_on_an_executor_stops_hung_evaluations_as_racers_pool_does():
    # With an executor, `timeout` makes each evaluation in a killable process of the
    # executor's worker: the hung ones (x > 0.9) are stopped and fail, and the run is the
    # one of racer's own worker under the same timeout.
    from concurrent.futures import ThreadPoolExecutor

    evaluate, instances, _ = _race_problem(n_instances=8)

    def hangs(params, instance):
        if params["x"] > 0.9:
            import time

            time.sleep(60)
        return evaluate(params, instance)

    space = {"x": FloatDistribution(-1, 1)}
    kw = dict(budget=60, random_state=4, timeout=0.5, on_error="eliminate")
    alone = IteratedRace(hangs, space, instances, **kw).run()
    with ThreadPoolExecutor(2) as pool:
        pooled = IteratedRace(hangs, space, instances, executor=pool, **kw).run()
    assert pooled.best_params == alone.best_params and pooled.best_params["x"] <= 0.9
    assert pooled.n_evaluations == alone.n_evaluations
    scores = [v for t in pooled.study.trials if t.params["x"] > 0.9
              for v in t.user_attrs.get("racer_scores", {}).values()]
    assert scores and all(np.isnan(v) for v in scores)  # hung, stopped, recorded as failed


@pytest.mark.slow
def test_failed_evaluations_are_raced_as_worst_and_recorded():
    evaluate, instances, _ = _race_problem()

    def flaky(params, instance):
        if params["x"] > 0.8:
            raise RuntimeError("diverged")
        return evaluate(params, instance)

    res = IteratedRace(flaky, {"x": FloatDistribution(-1, 1)}, instances, budget=300,
                       random_state=0).run()
    assert res.best_params["x"] <= 0.8
    assert all(t.state != TrialState.RUNNING for t in res.study.trials)
    recorded = [v for t in res.study.trials if "racer_answer_of" not in t.user_attrs
                for v in t.user_attrs["racer_scores"].values()]
    assert any(np.isnan(v) for v in recorded)  # the failures really happened and were kept


@pytest.mark.slow
def test_iterated_race_with_fewer_instances_than_first_test():
    evaluate, _, calls = _race_problem(n_instances=3)
    res = IteratedRace(evaluate, {"x": FloatDistribution(-1, 1)}, [0, 1, 2], budget=60,
                       random_state=0).run()
    assert res.n_evaluations == len(calls) <= 60
    assert len(set(calls)) == len(calls)


@pytest.mark.slow
def test_one_test_object_serves_several_races_like_fresh_ones():
    # A racing test keeps no state (the engine owns the incremental counts), so IteratedRace
    # passes the same object to every race; two runs sharing one object race exactly like
    # two runs with a fresh object each.
    from racer.racing.bayesian import BayesianTest

    def histories(res):
        return [[(h.candidate, h.n_instances, h.reason, h.by) for h in r.history]
                for r in res.races]

    shared = BayesianTest(small_n="reject", credibility=0.9)
    runs = {}
    for seed in (5, 6):
        for kind, test in (("shared", shared),
                           ("fresh", BayesianTest(small_n="reject", credibility=0.9))):
            evaluate, instances, _ = _race_problem(seed=seed)
            runs[kind, seed] = IteratedRace(evaluate, {"x": FloatDistribution(-1, 1)}, instances,
                                            budget=300, test=test, random_state=seed).run()
    for seed in (5, 6):
        a, b = runs["shared", seed], runs["fresh", seed]
        assert histories(a) == histories(b)
        assert a.best_params == b.best_params and a.n_evaluations == b.n_evaluations
    assert any(h for h in histories(runs["shared", 5]))  # the races did eliminate


def test_elite_protection_keeps_the_inner_tests_winner_rule():
    from racer.racing.frace import FRaceTest
    from racer.racing.base import KeepAll, ProtectElites

    assert ProtectElites(FRaceTest(), 2, 10).winner == "rank_sum"
    assert ProtectElites(KeepAll(), 2, 10).winner is None


@pytest.mark.slow
def test_iterated_race_whose_every_evaluation_fails_raises_and_leaves_no_trial_running():
    from racer import RaceFailedError

    def returns_none(params, instance):
        return None

    driver = IteratedRace(returns_none, {"x": FloatDistribution(-1, 1)}, list(range(20)),
                          budget=300, random_state=0)
    with pytest.raises(RaceFailedError, match="candidate #0"):
        driver.run()
    states = {t.state for t in driver.study.trials}
    assert states == {TrialState.FAIL}
