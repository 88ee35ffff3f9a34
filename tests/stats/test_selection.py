"""racer.stats.prob_not_best against independent computations: an explicit loop over the
posterior draws, the normal limit for two candidates, and pareto_dominance's one-objective
case; its edge cases and refusals."""

import math

import numpy as np
import pytest
from scipy import stats

from racer.stats import pareto_dominance, prob_not_best


def _loop(costs, best, n_samples, seed):
    """The Bayesian bootstrap written out draw by draw: normalised Dirichlet(1, ..., 1)
    weights (the same Exp(1) stream, one row per draw), each candidate's weighted mean cost,
    and whether another one's is strictly below best's."""
    rng = np.random.default_rng(seed)
    n, m = costs.shape
    beaten = 0
    for _ in range(n_samples):
        e = rng.standard_exponential(n)
        w = e / e.sum()
        means = [float(np.dot(w, costs[:, j])) for j in range(m)]
        beaten += any(means[j] < means[best] for j in range(m) if j != best)
    return beaten / n_samples


@pytest.mark.parametrize("best", [0, 2])
def test_matches_an_explicit_loop_over_the_draws(best):
    rng = np.random.default_rng(5)
    costs = rng.normal([0.0, 0.1, 0.15, 0.6], 1.0, size=(12, 4))
    got = prob_not_best(costs, best, maximize=False, n_samples=3000, random_state=9)
    # The same draws; a comparison could only flip where two weighted means agree to the
    # last bits (normalised here, unnormalised there), which a few draws at most would show.
    assert abs(got - _loop(costs, best, 3000, 9)) <= 2 / 3000
    assert 0.05 < got < 0.95  # a case with doubt, so that the comparison means something


def test_two_candidates_match_the_normal_limit():
    # Many instances: the weighted mean difference is close to normal with mean dbar and
    # variance s^2 / n (s^2 the differences' variance, ddof 0), so P(other below best) is
    # Phi(-dbar / (s / sqrt n)) with dbar = mean(other - best).
    rng = np.random.default_rng(2)
    n = 400
    base = rng.normal(0.0, 3.0, n)  # instance difficulty, shared by both
    costs = np.column_stack([base + rng.normal(0.0, 1.0, n), base + 0.06 + rng.normal(0.0, 1.0, n)])
    d = costs[:, 1] - costs[:, 0]
    expected = stats.norm.cdf(-d.mean() / (d.std() / math.sqrt(n)))
    got = prob_not_best(costs, 0, maximize=False, n_samples=20000, random_state=0)
    assert 0.1 < expected < 0.9
    assert abs(got - expected) < 0.02  # MC sd ~0.0035, normal-approximation error smaller


def test_agrees_with_pareto_dominance_on_one_objective():
    # pareto_dominance's prior point on the all-tied vector moves every mean alike, so with
    # rope 0 "best is non-dominated" is "no other mean strictly below best's" (other draws).
    rng = np.random.default_rng(11)
    costs = rng.normal([0.0, 0.05, 0.2], 1.0, size=(20, 3))
    par = pareto_dominance(costs, direction="minimize", n_samples=40000, random_state=1)
    got = prob_not_best(costs, 0, maximize=False, n_samples=40000, random_state=2)
    assert abs(got - (1.0 - par.prob_nondominated[0])) < 0.015  # 4 MC sds of the difference


def test_maximize_is_the_mirror_of_minimize():
    rng = np.random.default_rng(4)
    costs = rng.normal([0.0, 0.2], 1.0, size=(15, 2))
    as_costs = prob_not_best(costs, 0, maximize=False, random_state=3)
    as_scores = prob_not_best(-costs, 0, maximize=True, random_state=3)
    assert as_costs == as_scores
    # and the other candidate's statement is the complement (no ties in continuous data)
    other = prob_not_best(costs, 1, maximize=False, random_state=3)
    assert abs(as_costs + other - 1.0) < 1e-12


def test_same_seed_same_value_other_seed_other_value():
    rng = np.random.default_rng(8)
    costs = rng.normal([0.0, 0.1, 0.1], 1.0, size=(10, 3))
    a = prob_not_best(costs, 0, maximize=False, random_state=123)
    b = prob_not_best(costs, 0, maximize=False, random_state=np.random.default_rng(123))
    c = prob_not_best(costs, 0, maximize=False, random_state=124)
    assert a == b
    assert a != c


def test_draws_do_not_depend_on_the_chunk_size(monkeypatch):
    import racer.stats.selection as selection

    rng = np.random.default_rng(6)
    costs = rng.normal([0.0, 0.1], 1.0, size=(40, 2))
    whole = prob_not_best(costs, 0, maximize=False, n_samples=1000, random_state=5)
    monkeypatch.setattr(selection, "_CHUNK_ELEMENTS", 40 * 7)  # chunks of 7 draws
    assert prob_not_best(costs, 0, maximize=False, n_samples=1000, random_state=5) == whole


def test_nearly_equal_candidates_leave_it_large():
    rng = np.random.default_rng(1)
    base = rng.normal(0.0, 1.0, 20)
    costs = np.column_stack([base, base + rng.normal(0.0, 1e-3, 20), base + 2.0])
    p = prob_not_best(costs, 0, maximize=False, random_state=0)
    assert 0.25 < p < 0.75


def test_one_clearly_better_on_every_instance_makes_it_zero():
    rng = np.random.default_rng(1)
    base = rng.normal(0.0, 1.0, 8)
    costs = np.column_stack([base, base + 0.5, base + rng.uniform(0.01, 0.02, 8)])
    assert prob_not_best(costs, 0, maximize=False, random_state=0) == 0.0
    # the other way round it is certain that the chosen one is not the best
    assert prob_not_best(costs, 1, maximize=False, random_state=0) == 1.0


def test_ties_count_for_best():
    costs = np.array([[1.0, 1.0, 2.0], [0.3, 0.3, 0.1], [2.5, 2.5, 2.0]]) * 0.1
    # column 1 equals column 0 on every instance: it never beats it, whatever the rounding
    p = prob_not_best(costs[:, :2], 0, maximize=False, random_state=0)
    assert p == 0.0
    assert prob_not_best(costs[:, :2], 1, maximize=False, random_state=0) == 0.0


def test_edge_cases_one_candidate_and_too_few_instances():
    assert prob_not_best(np.ones((5, 1)), random_state=0) == 0.0
    assert prob_not_best(np.ones((1, 1))) == 0.0  # one candidate: nobody to lose against
    assert prob_not_best(np.array([[0.0, 1.0]])) is None
    assert prob_not_best(np.empty((0, 3))) is None


def test_a_dataframe_is_a_score_matrix():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    costs = rng.normal([0.0, 0.1], 1.0, size=(10, 2))
    frame = pd.DataFrame(costs, columns=["a", "b"])
    assert (prob_not_best(frame, 1, maximize=False, random_state=0)
            == prob_not_best(costs, 1, maximize=False, random_state=0))


@pytest.mark.parametrize("kwargs, error, words", [
    ({"scores": [1.0, 2.0]}, ValueError, "`scores` must be 2-D"),
    ({"scores": [[1.0, np.nan], [0.0, 1.0]]}, ValueError, "`scores` must be finite"),
    ({"scores": [["a", "b"]]}, TypeError, "`scores`"),
    ({"scores": np.ones((3, 0))}, ValueError, "`scores` needs at least 1 candidates"),
    ({"best": 2}, ValueError, "`best` must be a column of `scores`, in [0, 1]; got 2"),
    ({"best": -1}, ValueError, "`best`"),
    ({"best": 0.0}, TypeError, "`best` must be a column index"),
    ({"best": True}, TypeError, "`best`"),
    ({"maximize": "no"}, TypeError, "`maximize`"),
    ({"n_samples": 0}, ValueError, "`n_samples` must be >= 1"),
    ({"n_samples": 10.0}, TypeError, "`n_samples`"),
    ({"random_state": "seed"}, TypeError, "`random_state`"),
])
def test_refusals_name_the_argument(kwargs, error, words):
    args = {"scores": np.zeros((3, 2)), **kwargs}
    with pytest.raises(error, match=None) as info:
        prob_not_best(**args)
    assert words in str(info.value)
