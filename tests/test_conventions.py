"""racer's conventions across its APIs (README, "Conventions"): one ``direction`` keyword with
one default, one seed normaliser behind every ``random_state``, one name and one range per
quantity."""

from __future__ import annotations

import numpy as np
import pytest

from racer import BayesianTest, Race, race
from racer._validation import check_random_state, seed_from_random_state
from racer.racing.base import Elimination, RaceView, RacingTest
from racer.stats import SignCounts, bayesian_sign_test, prob_indistinguishable
from racer.storage import read_journal, result_from_journal


class DropWorstMean(RacingTest):
    """Eliminates the survivor with the worst mean (the view is larger-is-better)."""

    def decide(self, view, rng):
        means = view.scores.mean(axis=0)
        worst, best = int(np.argmin(means)), int(np.argmax(means))
        return [] if worst == best else [Elimination(worst, "dominated", best, 1.0)]

    def get_params(self):
        return {}


class RandomDrop(RacingTest):
    """Eliminates one survivor drawn from the step's generator: the history is the seed's."""

    def decide(self, view, rng):
        m = view.scores.shape[1]
        loser = int(rng.integers(m))
        return [Elimination(loser, "dominated", (loser + 1) % m, 1.0)]

    def get_params(self):
        return {}


def loss(c, i):
    return (c - 2.0) ** 2 + 0.01 * np.sin(3.0 * i + c)


CANDIDATES = [0.0, 1.0, 2.0, 3.0, 5.0]


def _run(evaluate=loss, **options):
    return race(evaluate, CANDIDATES, range(20), test=DropWorstMean(), first_test=2,
                progress=False, random_state=0, **options)


def _decisions(res):
    return [(h.candidate_index, h.by_index, h.n_instances, h.reason) for h in res.history]


# ------------------------------------------------------------------------------ direction


def test_the_default_direction_is_minimize():
    res = _run()
    assert res.best == 2.0 and res.direction == "minimize" and res.maximize is False
    # The first elimination is the largest loss: 5.0, (5 - 2)^2 = 9.
    assert res.history[0].candidate == 5.0
    up = _run(direction="maximize")
    assert up.best == 5.0 and up.direction == "maximize" and up.history[0].candidate == 2.0


def test_maximizing_a_score_is_minimizing_its_negation():
    up = _run(lambda c, i: -loss(c, i), direction="maximize")
    down = _run()
    assert _decisions(up) == _decisions(down) and up.best_index == down.best_index
    # Negation is exact in floating point, so the recorded numbers are too.
    np.testing.assert_array_equal(up.scores, -down.scores)
    np.testing.assert_array_equal(up.mean_scores, -down.mean_scores)


def test_maximize_is_not_a_keyword_of_race():
    # racer 0.1 was never released: its `maximize=` went without a deprecation period.
    with pytest.raises(TypeError, match="maximize"):
        Race(CANDIDATES, test=DropWorstMean(), maximize=True)
    with pytest.raises(TypeError, match="maximize"):
        _run(maximize=True)


def test_a_direction_mismatch_on_resume_says_what_to_pass(tmp_path):
    path = str(tmp_path / "up.sqlite")
    options = dict(test=DropWorstMean(), first_test=2, random_state=0, storage=path)
    with Race(CANDIDATES, direction="maximize", **options) as r:
        first = r.run(loss, range(8), progress=False)
    # Under the default direction the journal is another race, and the message names the fix.
    with pytest.raises(ValueError, match=r"direction: journal 'maximize', now 'minimize' "
                                         r"\(pass direction='maximize' to continue it\)"):
        Race(CANDIDATES, **options)
    calls = []

    def counting(c, i):
        calls.append((c, i))
        return loss(c, i)

    with Race(CANDIDATES, direction="maximize", **options) as r:
        again = r.run(counting, range(8), progress=False)
    assert calls == []  # every evaluation was replayed from the journal
    assert _decisions(again) == _decisions(first) and again.best == first.best == 5.0
    assert read_journal(path)["fingerprint"]["direction"] == "maximize"
    assert result_from_journal(path).direction == "maximize"


# ---------------------------------------------------------------------------------- seeds


SEEDS = {
    "int": lambda: 7,
    "Generator": lambda: np.random.default_rng(7),
    "RandomState": lambda: np.random.RandomState(7),
    "SeedSequence": lambda: np.random.SeedSequence(7),
}


def _random_race(random_state):
    return Race(list(range(6)), test=RandomDrop(), first_test=2, shuffle=True,
                random_state=random_state).run(loss, list(range(30)), progress=False)


@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_every_seed_type_gives_a_reproducible_race(kind):
    a, b = _random_race(SEEDS[kind]()), _random_race(SEEDS[kind]())
    assert a.seed == b.seed and _decisions(a) == _decisions(b) and a.instances == b.instances
    # ... and the seed matters: another one orders the instances differently.
    assert _random_race(8).instances != a.instances


@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_a_generator_or_random_state_is_advanced_as_in_scikit_learn(kind):
    source = SEEDS[kind]()
    assert seed_from_random_state(source) != seed_from_random_state(source)


def test_the_normaliser_itself():
    assert seed_from_random_state(12) == 12
    assert isinstance(check_random_state(np.random.RandomState(0)), np.random.Generator)
    gen = np.random.default_rng(0)
    assert check_random_state(gen) is gen
    draws = [check_random_state(np.random.SeedSequence(4)).integers(10**9) for _ in range(2)]
    assert draws[0] == draws[1]
    with pytest.raises(TypeError, match=r"`seed` must be None, .*; got True"):
        seed_from_random_state(True, "seed")
    with pytest.raises(ValueError, match=r"`random_state` must be a non-negative integer; got -1"):
        check_random_state(-1)


def test_statistics_accept_a_random_state_too():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=20), rng.normal(size=20) + 0.3
    a = bayesian_sign_test(x, y, n_samples=50, random_state=np.random.RandomState(1))
    b = bayesian_sign_test(x, y, n_samples=50, random_state=np.random.RandomState(1))
    np.testing.assert_array_equal(a.posterior_samples, b.posterior_samples)


# --------------------------------------------------------------------------- eps and names


@pytest.mark.parametrize(
    "make",
    [
        lambda eps: prob_indistinguishable(3, 2, 10, eps=eps),
        lambda eps: SignCounts.from_scores(np.eye(3)).prob_indistinguishable(eps=eps),
        lambda eps: bayesian_sign_test(np.arange(5.0), np.arange(5.0)[::-1], eps=eps),
        lambda eps: BayesianTest(eps=eps),
    ],
    ids=["prob_indistinguishable", "SignCounts", "bayesian_sign_test", "BayesianTest"],
)
def test_eps_has_one_range_everywhere(make):
    make(0.0)
    make(0.4999)
    for bad in (0.5, -0.01):
        with pytest.raises(ValueError, match=rf"`eps` .* must lie in \[0, 0.5\).*; got {bad}"):
            make(bad)


def test_eps_zero_turns_indistinguishability_off():
    tied = np.ones((30, 3))  # every block a three-way tie: theta is exactly 1/2 for every pair
    view = RaceView.from_scores(tied)
    rng = np.random.default_rng(0)
    # No difference, so the Friedman gate stays closed; let it not block equivalence.
    open_gate = dict(gate_indistinguishable=False)
    assert {e.reason for e in BayesianTest(**open_gate).decide(view, rng)} == {"indistinguishable"}
    assert BayesianTest(eps=0.0, **open_gate).decide(view, rng) == []


# ------------------------------------------------------------------------------ adapters


def _iterated(random_state):
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    shift = np.linspace(-0.2, 0.6, 12)
    res = IteratedRace(lambda p, i: (p["x"] - shift[i]) ** 2, {"x": FloatDistribution(-1, 1)},
                       list(range(12)), budget=150, random_state=random_state).run()
    return res.best_params, res.n_evaluations, [t.params for t in res.study.trials]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["RandomState", "SeedSequence"])
def test_iterated_race_takes_every_seed_type(kind):
    a = _iterated(SEEDS[kind]())
    assert a == _iterated(SEEDS[kind]())
    assert a[2] != _iterated(8)[2]  # the sampler's proposals follow the seed


def test_instance_objective_orders_follow_a_random_state():
    optuna = pytest.importorskip("optuna")
    from racer.adapters.optuna import instance_objective

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def orders(random_state):
        seen = []
        objective = instance_objective(lambda trial, inst: seen.append(inst) or float(inst),
                                       list(range(10)), random_state=random_state)
        optuna.create_study().optimize(objective, n_trials=3)
        return seen

    a = orders(np.random.RandomState(5))
    assert a == orders(np.random.RandomState(5)) and a != orders(np.random.RandomState(6))


def test_racing_pruner_credibility_is_the_level_it_decides_at():
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution
    from optuna.trial import create_trial

    from racer.adapters.optuna import RacingPruner

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    dist = {"x": FloatDistribution(-1.0, 1.0)}
    ref = np.linspace(0.0, 1.0, 12)
    study.add_trial(create_trial(params={"x": 0.0}, distributions=dist, value=float(ref.mean()),
                                 intermediate_values=dict(enumerate(ref.tolist()))))
    trial = study.ask()
    # Worse on 7 of the first 8 instances and on average: evidence, not certainty.
    for step, value in enumerate(ref[:8] + np.r_[-0.1, np.ones(7)]):
        trial.report(float(value), step)
    frozen = study._storage.get_trial(trial._trial_id)
    assert RacingPruner(credibility=0.9, random_state=0).decide(study, frozen)["prune"]
    # A stricter credibility than the evidence reaches keeps the trial: the value is used.
    assert not RacingPruner(credibility=0.999999, random_state=0).decide(study, frozen)["prune"]


def _search(random_state):
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_iris
    from sklearn.neighbors import KNeighborsClassifier

    from racer.adapters.sklearn import RaceSearchCV

    X, y = load_iris(return_X_y=True)
    return RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 5, 15, 40]}, cv=3,
                        n_repeats=2, random_state=random_state).fit(X, y)


def test_race_search_cv_takes_the_seeds_racer_takes():
    # scikit-learn's own constraint stops at 2**32 - 1; racer takes any non-negative int.
    assert _search(2**40).n_fits_ > 0
    with pytest.raises(ValueError, match=r"'random_state' parameter of RaceSearchCV.*Got -1"):
        _search(-1)


@pytest.mark.parametrize("kind", ["RandomState", "SeedSequence", "Generator"])
def test_race_search_cv_takes_every_seed_type(kind):
    a, b = _search(SEEDS[kind]()), _search(SEEDS[kind]())
    np.testing.assert_array_equal(a.split_order_, b.split_order_)
    assert a.best_params_ == b.best_params_ and a.n_fits_ == b.n_fits_
    assert not np.array_equal(a.split_order_, _search(8).split_order_)
