"""Races on several objectives: vector scores in the engine, the Pareto front."""

import math

import numpy as np
import pytest

import racer
from racer import KeepAll, ParetoTest, Race
from racer.racing.base import Elimination, RacingTest

MEANS = {"fast": (0.20, 1.0), "accurate": (0.15, 2.0), "worse": (0.30, 1.5),
         "far-worse": (0.40, 3.0)}


def _evaluate(c, i):
    # error and seconds, both minimised; noise seeded by (candidate, instance)
    noise = np.random.default_rng([len(c), i]).normal(0, [0.03, 0.2])
    return tuple(np.add(MEANS[c], noise))


def _race(**options):
    options.setdefault("direction", ["minimize", "minimize"])
    options.setdefault("random_state", 0)
    return racer.race(_evaluate, list(MEANS), range(40), progress=False, **options)


def test_dominated_candidates_leave_and_the_trade_off_stays():
    res = _race()
    assert sorted(res.pareto_front) == ["accurate", "fast"]
    gone = {h.candidate: h for h in res.history}
    assert set(gone) == {"worse", "far-worse"}
    for h in gone.values():
        assert h.reason == "dominated" and h.by in ("fast", "accurate")
        assert h.probability > ParetoTest().credibility
    # Racing saved evaluations: the dominated ones did not run on all 40 instances.
    assert res.n_evaluations < 4 * 40
    assert res.directions == ("minimize", "minimize")
    assert res.objective_scores.shape == (res.n_instances, 4, 2)
    # The first objective is what the one-score fields hold.
    np.testing.assert_array_equal(res.scores, res.objective_scores[:, :, 0])
    np.testing.assert_allclose(res.mean_scores, res.mean_objective_scores[:, 0])
    assert res.best == "accurate"  # best mean error among the survivors
    front = " ".join(f"#{i}" for i in res.pareto_front_indices)
    assert f"Objectives: minimize, minimize (best, mean and the ranking follow the first); " \
        f"Pareto front: {front}." in res.summary()


def test_same_seed_same_race():
    a, b = _race(random_state=3), _race(random_state=3)
    assert [(h.candidate, h.n_instances, h.probability) for h in a.history] == \
        [(h.candidate, h.n_instances, h.probability) for h in b.history]
    np.testing.assert_array_equal(a.objective_scores, b.objective_scores)


def test_a_maximised_objective_is_oriented():
    # Same race with accuracy = 1 - error, maximised: the same decisions.
    def evaluate(c, i):
        err, sec = _evaluate(c, i)
        return 1 - err, sec

    res = racer.race(evaluate, list(MEANS), range(40), progress=False, random_state=0,
                     direction=["maximize", "minimize"])
    ref = _race()
    assert [(h.candidate, h.n_instances) for h in res.history] == \
        [(h.candidate, h.n_instances) for h in ref.history]
    assert sorted(res.pareto_front) == sorted(ref.pareto_front)


def test_the_front_is_computed_among_survivors_on_their_means():
    # KeepAll races everyone: the front is the non-dominated survivors on the means.
    res = _race(test=KeepAll())
    assert sorted(res.pareto_front) == ["accurate", "fast"]
    assert res.n_evaluations == 4 * 40


def test_ask_tell_with_vectors_and_a_failure_imputed_per_objective():
    r = Race(["a", "b", "c"], direction=["minimize", "maximize"], test=KeepAll(),
             first_test=2, max_instances=2, instances=range(5), random_state=0)
    values = {("a", 0): (1.0, 5.0), ("b", 0): (2.0, 7.0), ("c", 0): (math.nan, 6.0),
              ("a", 1): (1.0, 5.0), ("b", 1): (3.0, 4.0), ("c", 1): (2.0, 6.0)}
    while not r.finished:
        for ev in r.ask():
            r.tell(ev, values[ev.candidate, ev.instance])
    res = r.result()
    assert res.failures and res.failures[0][:2] == (2, 0)
    assert "objective 0" in res.failures[0][2]
    table = r._scores
    # Candidate c failed on instance 0: worse than every success on each objective
    # (oriented: -1, -2 on the minimised one -> -2 - 1 = -3; 5, 7 maximised -> 5 - 2 = 3).
    np.testing.assert_allclose(table.oriented_objectives[0, 2], [-3.0, 3.0])
    assert np.isnan(res.objective_scores[0, 2]).all()


def test_wrong_number_of_values_is_refused_naming_evaluate():
    with pytest.raises(ValueError, match="`evaluate` must return 2 numbers.*returned 3"):
        racer.race(lambda c, i: (1.0, 2.0, 3.0), [0, 1], range(5), progress=False,
                   direction=["minimize", "minimize"])
    with pytest.raises(ValueError, match="`evaluate` must return 2 numbers.*shape \\(2, 1\\)"):
        racer.race(lambda c, i: np.zeros((2, 1)), [0, 1], range(5), progress=False,
                   direction=["minimize", "minimize"])
    with pytest.raises(ValueError, match="`evaluate` must return 2 numbers.*a scalar"):
        racer.race(lambda c, i: 1.0, [0, 1], range(5), progress=False,
                   direction=["minimize", "minimize"])


def test_an_array_of_k_values_is_accepted():
    res = racer.race(lambda c, i: np.array([c, 1.0 - c]), [0.0, 1.0], range(12),
                     direction=["minimize", "minimize"], progress=False, random_state=0)
    assert sorted(res.pareto_front) == [0.0, 1.0] and res.n_evaluations == 24


def test_options_that_cannot_go_together_are_refused():
    class SingleTest(RacingTest):
        def decide(self, view, rng):
            return []

        def get_params(self):
            return {}

    with pytest.raises(ValueError, match="`test`=SingleTest compares one score"):
        Race([0, 1], direction=["minimize", "minimize"], test=SingleTest())
    with pytest.raises(ValueError, match="`test`=ParetoTest races on several objectives"):
        Race([0, 1], direction="minimize", test=ParetoTest())
    with pytest.raises(ValueError, match=r"`direction\[1\]` must be one of"):
        Race([0, 1], direction=["minimize", "smallest"])
    with pytest.raises(ValueError, match="`direction` must be one of"):
        Race([0, 1], direction={"a": "minimize"})


def test_a_one_item_direction_list_is_a_single_objective_race():
    res = racer.race(lambda c, i: abs(c - 1), [0, 1, 2], range(8), direction=["minimize"],
                     test=KeepAll(), progress=False, random_state=0)
    assert res.directions is None and res.objective_scores is None
    assert res.best == 1 and res.pareto_front == [1]


def test_the_test_sees_larger_is_better_objectives():
    seen = {}

    class Spy(RacingTest):
        objectives = "multi"

        def decide(self, view, rng):
            seen["objectives"] = view.objectives.copy()
            seen["scores"] = view.scores.copy()
            return [Elimination(1, "dominated", 0, 1.0)]

        def get_params(self):
            return {}

    res = racer.race(lambda c, i: (c, 10 * c), [1, 2], range(3), first_test=2,
                     direction=["minimize", "maximize"], test=Spy(), progress=False,
                     random_state=0)
    np.testing.assert_array_equal(seen["objectives"][0], [[-1, 10], [-2, 20]])
    np.testing.assert_array_equal(seen["scores"], seen["objectives"][:, :, 0])
    assert res.history[0].candidate == 2
