"""Corani et al.'s (2017) hierarchical model in races over several data sets.

``RaceView.instances``, :class:`racer.HierarchicalRacingTest`, :func:`racer.instance_groups`,
:meth:`racer.RaceResult.hierarchical_comparison`, and ``RaceSearchCV(test="hierarchical")``
with :class:`racer.adapters.sklearn.WithinGroupKFold`.
"""

from __future__ import annotations

import numpy as np
import pytest

import racer
import racer.stats as rs
from racer import Elimination, HierarchicalRacingTest, Race, RacingTest, RaceView, race
from racer.stats import ConvergenceError

ROPE = 0.01


def _problem(shifts, q=8, spread=0.004, seed=0):
    """(evaluate, instances): 10-fold CV on q data sets; candidate c scores shifts[c] above a
    data set's level, plus its own per-data-set deviation (sd ``spread``), a fold effect
    shared by every candidate (folds share their test set) and noise."""
    rng = np.random.default_rng(seed)
    level = rng.uniform(0.7, 0.9, q)
    own = rng.normal(0.0, spread, (q, len(shifts)))

    def evaluate(c, inst):
        d, f = inst
        fold = np.random.default_rng([seed, d, f]).normal(0.0, 0.02)
        noise = np.random.default_rng([seed, d, f, c]).normal(0.0, 0.01)
        return level[d] + shifts[c] + own[d, c] + fold + noise

    instances = [(d, f) for f in range(10) for d in range(q)]
    return evaluate, instances


def _view(shifts, n_folds=10, q=8, seed=0):
    evaluate, instances = _problem(shifts, q=q, seed=seed)
    instances = [inst for inst in instances if inst[1] < n_folds]
    scores = np.array([[evaluate(c, inst) for c in range(len(shifts))] for inst in instances])
    return RaceView.from_scores(scores, instances=instances)


# --- RaceView.instances ------------------------------------------------------------------------


class _Recorder(RacingTest):
    def __init__(self):
        self.seen = []

    def decide(self, view, rng):
        self.seen.append(list(view.instances))
        return []

    def get_params(self):
        return {}


def test_the_engine_shows_the_rows_instances_in_race_order():
    rec = _Recorder()
    items = [("a", k) for k in range(7)]
    res = Race([0, 1], test=rec, first_test=3, instances=items, shuffle=True,
               random_state=3).run(lambda c, i: c + i[1], progress=False)
    assert [len(s) for s in rec.seen] == [3, 4, 5, 6, 7]
    assert rec.seen[-1] == res.instances  # shuffled order, the rows' order
    assert res.instances != items  # the shuffle did move them: the check above has teeth


def test_from_scores_checks_instances():
    view = RaceView.from_scores([[1.0, 2.0], [2.0, 1.0]], instances=[("a", 0), ("a", 1)])
    assert view.instances == [("a", 0), ("a", 1)]
    assert view.with_scores([[0.0, 1.0], [1.0, 0.0]]).instances == view.instances
    assert RaceView.from_scores([[1.0, 2.0]]).instances is None
    with pytest.raises(ValueError, match="one instance per row"):
        RaceView.from_scores([[1.0, 2.0], [2.0, 1.0]], instances=[("a", 0)])
    with pytest.raises(TypeError, match="sequence of instances"):
        RaceView.from_scores([[1.0, 2.0]], instances=5)


# --- instance_groups ---------------------------------------------------------------------------


def test_instance_groups_reads_every_form():
    inst = [("x", 0, "s"), ("y", 0, "t"), ("x", 1, "s")]
    assert racer.instance_groups(inst) == ["x", "y", "x"]
    assert racer.instance_groups(inst, 2) == ["s", "t", "s"]
    assert racer.instance_groups([0, 2], ["a", "b", "c"]) == ["a", "c"]
    assert racer.instance_groups(["p", "q"], {"p": 1, "q": 2}) == [1, 2]
    assert racer.instance_groups([3, 4], lambda i: i % 2) == [1, 0]
    with pytest.raises(ValueError, match="has no item 0"):
        racer.instance_groups([5])
    with pytest.raises(ValueError, match="no data set for instance 7"):
        racer.instance_groups([7], ["a"])
    with pytest.raises(TypeError, match="`group` must be"):
        racer.instance_groups([("a", 0)], 1.5)
    with pytest.raises(TypeError, match="hashable"):
        racer.instance_groups([(["a"], 0)])


# --- HierarchicalRacingTest --------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"test_fraction": 0.0}, ValueError, "test_fraction"),
    ({"test_fraction": 0.1, "rope": -0.1}, ValueError, "rope"),
    ({"test_fraction": 0.1, "credibility": 1.0}, ValueError, "credibility"),
    ({"test_fraction": 0.1, "top": 1}, ValueError, "top"),
    ({"test_fraction": 0.1, "base": "bayes"}, TypeError, "base"),
    ({"test_fraction": 0.1, "group": 2.5}, TypeError, "group"),
    ({"test_fraction": 0.1, "n_draws": 5}, ValueError, "n_draws"),
])
def test_bad_arguments_name_the_argument(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        HierarchicalRacingTest(**kwargs)


def test_needs_the_instances():
    view = RaceView.from_scores(np.random.default_rng(0).random((6, 3)))
    with pytest.raises(ValueError, match="needs the instances"):
        HierarchicalRacingTest(0.1).decide(view, np.random.default_rng(0))


def test_race_over_data_sets_drops_the_worse_and_keeps_the_equivalent():
    # Candidates 0-2 are within 0.003 of each other (inside the rope of 0.01); 3 and 4 are
    # worse by 0.05 and 0.08 on every data set. Every decision is the hierarchical model's
    # (no base test, every survivor compared with the leader).
    shifts = [0.0, 0.003, -0.002, -0.05, -0.08]
    evaluate, instances = _problem(shifts)
    test = HierarchicalRacingTest(test_fraction=0.1, rope=ROPE, top=None, base=None)
    res = race(evaluate, list(range(5)), instances, test=test, first_test=16, each_test=8,
               direction="maximize", random_state=0, progress=False)
    reasons = {rec.candidate_index: rec.reason for rec in res.history}
    assert reasons.get(3) == "dominated" and reasons.get(4) == "dominated"
    assert all(reasons.get(c) != "dominated" for c in (0, 1, 2))
    assert res.best_index in (0, 1, 2)
    # The worse ones left long before the instances ran out: racing saved evaluations.
    assert max(rec.n_instances for rec in res.history if rec.candidate_index in (3, 4)) <= 40
    assert res.n_evaluations < 5 * len(instances)


def test_identical_candidates_are_found_equivalent_not_refused():
    # Two candidates with the very same scores tie on every fold of every data set: the model
    # alone would refuse (all differences equal); the test spreads them below the rope.
    view = _view([0.0, 0.0, -0.1], n_folds=4)
    scores = view.scores.copy()
    scores[:, 1] = scores[:, 0]  # equal means: the stable order makes 0 the leader
    view = RaceView.from_scores(scores, instances=view.instances)
    with pytest.raises(ValueError, match="every difference"):
        rs.hierarchical_test(scores[:, 0], 0.25, y=scores[:, 1],
                             groups=racer.instance_groups(view.instances))
    out = HierarchicalRacingTest(0.25, top=None, base=None).decide(
        view, np.random.default_rng(1))
    decided = {e.index: (e.reason, e.by) for e in out}
    assert decided == {1: ("indistinguishable", 0), 2: ("dominated", 0)}
    assert all(e.probability >= 0.95 for e in out)


def test_same_step_same_decisions_and_data_sets_need_two_folds():
    view = _view([0.0, -0.06, 0.002], n_folds=3)
    test = HierarchicalRacingTest(0.1, top=None, base=None)
    a = test.decide(view, np.random.default_rng([5, 2]))
    b = test.decide(view, np.random.default_rng([5, 2]))
    assert a == b and a  # bit-identical probabilities, and something was decided
    # One fold per data set so far: no data set has a spread, the model is not consulted.
    one_fold = RaceView.from_scores(view.scores[:8], instances=view.instances[:8])
    assert test.decide(one_fold, np.random.default_rng(0)) == []


class _DropAllButFirst(RacingTest):
    def decide(self, view, rng):
        return [Elimination(j, "dominated", 0, 0.5) for j in range(1, view.n_survivors)]

    def get_params(self):
        return {}


def test_only_the_top_pairs_are_fitted_and_base_decides_the_rest(monkeypatch):
    calls = []
    real = rs.hierarchical_test

    def counting(*args, **kwargs):
        calls.append(kwargs["groups"])
        return real(*args, **kwargs)

    monkeypatch.setattr(rs, "hierarchical_test", counting)
    # Means order the columns 3 > 1 > 0 > 4 > 2 (by the shifts); top=3 keeps 3, 1, 0.
    view = _view([0.0, 0.01, -0.1, 0.02, -0.05], n_folds=4)
    out = HierarchicalRacingTest(0.1, top=3, base=_DropAllButFirst()).decide(
        view, np.random.default_rng(0))
    assert len(calls) == 2  # leader vs the next two, nothing else
    from_base = sorted(e.index for e in out if e.probability == 0.5)
    assert from_base == [2, 4]  # base's eliminations of 1 and 3 (in the top) are ignored
    assert all(e.index in (0, 1, 3) for e in out if e.probability != 0.5)


def test_a_comparison_that_does_not_converge_decides_nothing(monkeypatch):
    def refuse(*args, **kwargs):
        raise ConvergenceError("no")

    monkeypatch.setattr(rs, "hierarchical_test", refuse)
    view = _view([0.0, -0.2], n_folds=4)
    assert HierarchicalRacingTest(0.1, base=None).decide(view, np.random.default_rng(0)) == []


def test_a_resumed_race_decides_like_an_uninterrupted_one(tmp_path):
    # The view's instances come back from the caller on resume, the step's stream from the
    # seed: the decisions, probabilities included, must be the same bit for bit.
    shifts = [0.0, 0.003, -0.04, -0.06]
    evaluate, instances = _problem(shifts, q=6)
    options = dict(test=HierarchicalRacingTest(0.1, n_warmup=200, n_draws=500),
                   first_test=12, each_test=6, max_instances=36, direction="maximize",
                   random_state=2)
    ref = Race(list(range(4)), **options).run(evaluate, instances, progress=False)
    assert ref.history  # something to compare
    path = tmp_path / "race.sqlite"
    r = Race(list(range(4)), storage=path, **options)
    r.add_instances(instances)
    told = 0
    while told < 40 and not r.finished:  # inside the first block: the resumed race tests
        for ev in r.ask():
            if told == 40:
                break
            r.tell(ev, evaluate(ev.candidate, ev.instance))
            told += 1
    assert r.history == []  # abandoned before its first test
    r.close()
    resumed = Race(list(range(4)), storage=path, **options).run(evaluate, instances,
                                                                  progress=False)
    assert resumed.history == ref.history
    assert resumed.n_evaluations == ref.n_evaluations


# --- RaceResult.hierarchical_comparison --------------------------------------------------------


def _finished(shifts, direction="maximize"):
    evaluate, instances = _problem(shifts)
    sign = 1.0 if direction == "maximize" else -1.0
    keep_all = HierarchicalRacingTest(0.1, credibility=0.999999, base=None)
    return race(lambda c, i: sign * evaluate(c, i), list(range(len(shifts))), instances,
                test=keep_all, first_test=40, each_test=40, direction=direction,
                random_state=0, progress=False)


def test_hierarchical_comparison_is_the_model_on_the_shared_instances():
    res = _finished([0.0, 0.03])
    h = res.hierarchical_comparison(0, 1, 0.1, random_state=4)
    groups = racer.instance_groups(res.instances)
    direct = rs.hierarchical_test(res.scores[:, 0], 0.1, y=res.scores[:, 1], groups=groups,
                                  random_state=4)
    # Exact: the method is this very call (same differences, same seed), a promised bit-identity.
    assert h.prob_right == direct.prob_right and np.array_equal(h.shrinkage, direct.shrinkage)
    assert h.prob_right > 0.95  # b (candidate 1) is the better one
    # A minimised race of the negated scores gives the same answer: larger-is-better inside.
    low = _finished([0.0, 0.03], direction="minimize")
    h_low = low.hierarchical_comparison(0, 1, 0.1, random_state=4)
    # Exact: negating twice returns the same floats, so the model sees identical input.
    assert h_low.prob_right == h.prob_right and np.array_equal(h_low.mle, h.mle)


def test_hierarchical_comparison_checks_its_arguments():
    res = _finished([0.0, 0.03])
    with pytest.raises(ValueError, match="`b` must be the position"):
        res.hierarchical_comparison(0, 2, 0.1)
    with pytest.raises(ValueError, match="two different candidates"):
        res.hierarchical_comparison(1, 1, 0.1)
    with pytest.raises(ValueError, match="has no item"):
        res.hierarchical_comparison(0, 1, 0.1, group=5)


# --- scikit-learn --------------------------------------------------------------------------------


def test_within_group_kfold_splits_inside_each_data_set():
    pytest.importorskip("sklearn")
    from racer.adapters.sklearn import WithinGroupKFold
    from racer.adapters.sklearn.datasets import split_datasets

    groups = np.repeat(["a", "b", "c"], [10, 12, 9])
    X = np.zeros((groups.size, 2))
    y = np.tile([0, 1], 16)[: groups.size]
    cv = WithinGroupKFold(3, shuffle=True, random_state=0, stratified=True)
    splits = list(cv.split(X, y, groups))
    assert len(splits) == cv.get_n_splits(X, y, groups) == 9
    assert split_datasets(splits, groups) == ("a", "b", "c") * 3
    for label in "abc":
        tests = [te for (tr, te), g in zip(splits, split_datasets(splits, groups)) if g == label]
        together = np.sort(np.concatenate(tests))
        assert np.array_equal(together, np.flatnonzero(groups == label))  # a partition
    with pytest.raises(ValueError, match="needs `groups`"):
        list(cv.split(X, y))
    with pytest.raises(ValueError, match="fewer than n_splits"):
        list(WithinGroupKFold(10).split(X, y, groups))
    with pytest.raises(ValueError, match="mixes samples of 2 data sets"):
        split_datasets([(np.array([0]), np.array([15]))], groups)


def test_race_search_over_data_sets():
    pytest.importorskip("sklearn")
    from sklearn.datasets import make_classification
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from racer.adapters.sklearn import RaceSearchCV, WithinGroupKFold

    parts = [make_classification(n_samples=60, n_features=4, n_informative=3,
                                 n_redundant=0, random_state=d) for d in range(6)]
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    groups = np.repeat([f"site{d}" for d in range(6)], 60)
    grid = {"clf": [DummyClassifier(strategy="most_frequent"), LogisticRegression(C=1.0),
                    LogisticRegression(C=10.0)]}
    search = RaceSearchCV(Pipeline([("clf", LogisticRegression())]), grid,
                          test="hierarchical", cv=WithinGroupKFold(5), n_repeats=1,
                          first_test=12, rope=0.01, random_state=0)
    with pytest.raises(ValueError, match="needs `groups`"):
        search.fit(X, y)
    search.fit(X, y, groups=groups)
    assert len(search.split_datasets_) == search.n_splits_ == 30
    reasons = dict(enumerate(search.cv_results_["elimination_reason"]))
    assert reasons[0] == "dominated"  # the majority-class baseline (accuracy ~0.5)
    assert search.best_index_ in (1, 2)
    assert search.n_fits_ < 3 * 30
    # After the search: the two logistic regressions over the six sites, by split index.
    h = search.race_.hierarchical_comparison(1, 2, 0.2, group=search.split_datasets_,
                                             random_state=0)
    assert sorted(h.groups) == [f"site{d}" for d in range(6)]
    assert h.prob_left + h.prob_rope + h.prob_right == pytest.approx(1.0, abs=1e-12)
