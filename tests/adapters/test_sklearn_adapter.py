"""Tests for racer.adapters.sklearn.RaceSearchCV and its CV racing test.

Data sets and grids are tiny on purpose (the suite runs on 2 shared cores); the reference
implementations are scikit-learn's own GridSearchCV and baycomp's correlated t-test.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from racer.racing.base import RaceView
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_iris, make_classification
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    LeaveOneGroupOut,
    StratifiedKFold,
)
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from racer.racing import CorrelatedTTestRacing
from racer.adapters.sklearn import RaceSearchCV
from racer.adapters.sklearn._results import stage_rank
from racer.adapters.sklearn._splits import materialise_splits


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def easy_problem():
    # Well separated classes: k-NN with a tiny k is good, with k close to n is hopeless, so a
    # race has clear losers to drop.
    return make_classification(
        n_samples=120, n_features=6, n_informative=4, class_sep=2.0, random_state=0
    )


KNN_GRID = {"n_neighbors": [1, 3, 5, 60, 90]}


# --------------------------------------------------------------------------- drop-in behaviour


def test_too_few_splits_is_exactly_grid_search(iris):
    """With fewer splits than first_test no test runs: same splits, scores and pick as GridSearchCV."""
    X, y = iris
    grid = {"n_neighbors": [1, 5, 15, 40], "weights": ["uniform", "distance"]}
    cv = StratifiedKFold(4, shuffle=True, random_state=3)
    race = RaceSearchCV(KNeighborsClassifier(), grid, cv=cv, first_test=5, random_state=0)
    race.fit(X, y)
    ref = GridSearchCV(KNeighborsClassifier(), grid, cv=cv).fit(X, y)
    assert race.n_splits_ == ref.n_splits_ == 4
    assert race.n_fits_ == 8 * 4
    for key in ["mean_test_score", "std_test_score", "rank_test_score"] + [
        f"split{k}_test_score" for k in range(4)
    ]:
        np.testing.assert_allclose(race.cv_results_[key], ref.cv_results_[key], err_msg=key)
    assert race.best_params_ == ref.best_params_
    assert race.best_score_ == pytest.approx(ref.best_score_)
    assert race.best_index_ == ref.best_index_
    assert race.predict(X[:5]).tolist() == ref.predict(X[:5]).tolist()
    assert race.score(X, y) == pytest.approx(ref.score(X, y))
    assert set(ref.cv_results_) <= set(race.cv_results_)
    assert (race.cv_results_["eliminated_at"] == -1).all()


@pytest.mark.slow
def test_race_saves_fits_and_keeps_the_reference_best(easy_problem):
    X, y = easy_problem
    race = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3, first_test=4,
                        random_state=0)
    race.fit(X, y)
    # The reference: every candidate on the very same 15 splits.
    n_splits = race.n_splits_
    assert n_splits == 15
    assert race.n_fits_ < 5 * n_splits
    res = race.cv_results_
    # The hopeless large-k candidates leave the race early.
    for k in (60, 90):
        i = KNN_GRID["n_neighbors"].index(k)
        assert res["elimination_reason"][i] in ("dominated", "indistinguishable")
        assert race.first_test <= res["eliminated_at"][i] < n_splits
    assert race.best_params_["n_neighbors"] in (1, 3, 5)


def test_cv_results_bookkeeping(easy_problem):
    X, y = easy_problem
    race = RaceSearchCV(
        KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=2, return_train_score=True,
        random_state=1,
    ).fit(X, y)
    res = race.cv_results_
    n_cand, n_splits = 5, race.n_splits_
    split_scores = np.column_stack([res[f"split{k}_test_score"] for k in range(n_splits)])
    evaluated = ~np.isnan(split_scores)
    np.testing.assert_array_equal(evaluated.sum(axis=1), res["n_splits_evaluated"])
    assert evaluated.sum() == race.n_fits_ == race.race_.n_evaluations
    # Means and stds are over the evaluated splits only.
    np.testing.assert_allclose(res["mean_test_score"], np.nanmean(split_scores, axis=1))
    np.testing.assert_allclose(res["std_test_score"], np.nanstd(split_scores, axis=1))
    train = np.column_stack([res[f"split{k}_train_score"] for k in range(n_splits)])
    np.testing.assert_array_equal(~np.isnan(train), evaluated)
    # The race visited splits in split_order_: evaluated splits are a prefix of it.
    for i in range(n_cand):
        visited = race.split_order_[: res["n_splits_evaluated"][i]]
        assert set(np.flatnonzero(evaluated[i])) == set(visited.tolist())
    # Race bookkeeping agrees with the engine's history.
    for record in race.race_.history:
        i = record.candidate_index
        assert res["eliminated_at"][i] == record.n_instances == res["n_splits_evaluated"][i]
        assert res["elimination_reason"][i] == record.reason
        assert res["elimination_probability"][i] == record.probability
    survivors = set(race.race_.survivor_indices.tolist())
    for i in range(n_cand):
        assert (res["eliminated_at"][i] == -1) == (i in survivors)
    # Ranks: further in the race is always better, whatever the means.
    ranks, n_eval = res["rank_test_score"], res["n_splits_evaluated"]
    for a in range(n_cand):
        for b in range(n_cand):
            if n_eval[a] > n_eval[b]:
                assert ranks[a] < ranks[b]
    assert race.best_index_ == race.race_.best_index
    assert res["params"][race.best_index_] == race.best_params_
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(res)
    assert len(frame) == n_cand


def test_stage_rank_orders_by_progress_then_mean():
    n_eval = np.array([5, 10, 10, 5, 10])
    mean = np.array([0.99, 0.5, 0.7, 0.6, np.nan])
    # Candidate 0 has the best mean but was eliminated at 5 splits: it ranks below all at 10.
    np.testing.assert_array_equal(stage_rank(n_eval, mean), [4, 2, 1, 5, 3])
    np.testing.assert_array_equal(stage_rank(np.array([3, 3]), np.array([0.5, 0.5])), [1, 1])


def test_same_seed_same_race_and_different_seed_different_splits(easy_problem):
    X, y = easy_problem
    kw = dict(cv=5, n_repeats=2)
    a = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, random_state=7, **kw).fit(X, y)
    b = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, random_state=7, **kw).fit(X, y)
    c = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, random_state=8, **kw).fit(X, y)
    for key in ("mean_test_score", "n_splits_evaluated", "eliminated_at"):
        np.testing.assert_array_equal(a.cv_results_[key], b.cv_results_[key])
    np.testing.assert_array_equal(a.split_order_, b.split_order_)
    assert not np.array_equal(a.cv_results_["split0_test_score"], c.cv_results_["split0_test_score"])


# ------------------------------------------------------------------------------------ splits


def test_repeats_keep_stratification_and_differ(iris):
    X, y = iris
    rng = np.random.default_rng(0)
    splits, repeat, n_rep = materialise_splits(StratifiedKFold(5), X, y, None, 3, rng)
    assert n_rep == 3 and len(splits) == 15
    np.testing.assert_array_equal(repeat, np.repeat([0, 1, 2], 5))
    for train, test in splits:
        # iris has 50 per class: a stratified fold of 30 holds 10 of each.
        np.testing.assert_array_equal(np.bincount(y[test]), [10, 10, 10])
        assert len(np.intersect1d(train, test)) == 0
    # Each repeat is a partition of the data, and repeats differ.
    for r in range(3):
        tests = np.concatenate([splits[k][1] for k in range(5 * r, 5 * r + 5)])
        np.testing.assert_array_equal(np.sort(tests), np.arange(150))
    assert not np.array_equal(np.sort(splits[0][1]), np.sort(splits[5][1]))


def test_repeats_keep_groups():
    X = np.arange(60, dtype=float).reshape(30, 2)
    y = np.arange(30) % 2
    groups = np.arange(30) // 3
    splits, _, n_rep = materialise_splits(
        GroupKFold(5), X, y, groups, 2, np.random.default_rng(0)
    )
    assert n_rep == 2 and len(splits) == 10
    for train, test in splits:
        assert not set(groups[train]) & set(groups[test])


def test_deterministic_splitter_is_not_repeated():
    X = np.zeros((12, 1))
    groups = np.arange(12) // 4
    with pytest.warns(UserWarning, match="n_repeats=3 is ignored"):
        splits, _, n_rep = materialise_splits(
            LeaveOneGroupOut(), X, None, groups, 3, np.random.default_rng(0)
        )
    assert n_rep == 1 and len(splits) == 3


def test_groups_and_fit_params_reach_splitter_and_estimator():
    X, y = make_classification(n_samples=60, n_features=4, random_state=1)
    groups = np.arange(60) // 6
    seen = {}

    class RecordingTree(DecisionTreeClassifier):
        def fit(self, X, y, sample_weight=None):
            n_weights = None if sample_weight is None else len(sample_weight)
            seen.setdefault("weights", []).append((n_weights, len(X)))
            return super().fit(X, y, sample_weight=sample_weight)

    search = RaceSearchCV(
        RecordingTree(random_state=0), {"max_depth": [1, 3]}, cv=GroupKFold(3), n_repeats=2,
        random_state=0,
    )
    search.fit(X, y, groups=groups, sample_weight=np.ones(60))
    # Every CV fit received the training part of sample_weight, the refit all 60 rows.
    assert seen["weights"][-1] == (60, 60)
    assert all(n_w == n_x < 60 for n_w, n_x in seen["weights"][:-1])
    assert search.n_splits_ == 6


# ------------------------------------------------------------------------------- input kinds


def test_pipeline_sparse_and_pandas_inputs(easy_problem):
    X, y = easy_problem
    pipe = make_pipeline(StandardScaler(with_mean=False), LogisticRegression())
    grid = {"logisticregression__C": [0.01, 1.0]}
    dense = RaceSearchCV(pipe, grid, cv=3, n_repeats=2, random_state=0).fit(X, y)
    sparse = RaceSearchCV(pipe, grid, cv=3, n_repeats=2, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(
        dense.cv_results_["mean_test_score"], sparse.cv_results_["mean_test_score"]
    )
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    pandas = RaceSearchCV(pipe, grid, cv=3, n_repeats=2, random_state=0).fit(frame, pd.Series(y))
    np.testing.assert_allclose(
        dense.cv_results_["mean_test_score"], pandas.cv_results_["mean_test_score"]
    )
    assert list(pandas.feature_names_in_) == list(frame.columns)


def test_multimetric_refit_metric_drives_the_race(easy_problem):
    X, y = easy_problem
    search = RaceSearchCV(
        KNeighborsClassifier(), KNN_GRID, scoring=["accuracy", "neg_log_loss"],
        refit="neg_log_loss", cv=5, n_repeats=2, random_state=0,
    ).fit(X, y)
    assert search.multimetric_
    res = search.cv_results_
    # The race's score matrix is the refit metric's split scores, row k = k-th split visited.
    raced = search.race_.scores
    for row, split in enumerate(search.race_.instances):
        col = res[f"split{split}_test_neg_log_loss"]
        ok = ~np.isnan(raced[row])
        np.testing.assert_allclose(raced[row][ok], col[ok])
    # The other metric is recorded on exactly the same units.
    for k in range(search.n_splits_):
        np.testing.assert_array_equal(
            np.isnan(res[f"split{k}_test_accuracy"]), np.isnan(res[f"split{k}_test_neg_log_loss"])
        )
    assert "rank_test_accuracy" in res
    assert search.best_index_ == int(np.argmin(res["rank_test_neg_log_loss"]))
    assert search.score(X, y) <= 0  # neg_log_loss of the refitted winner
    with pytest.raises(ValueError, match="refit"):
        RaceSearchCV(
            KNeighborsClassifier(), KNN_GRID, scoring=["accuracy", "f1"], refit="roc_auc", cv=2
        ).fit(X, y)


def test_randomized_candidates(easy_problem):
    X, y = easy_problem
    from scipy.stats import randint

    search = RaceSearchCV(
        KNeighborsClassifier(), param_distributions={"n_neighbors": randint(1, 80)},
        n_iter=6, cv=3, n_repeats=2, random_state=0,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 6
    again = RaceSearchCV(
        KNeighborsClassifier(), param_distributions={"n_neighbors": randint(1, 80)},
        n_iter=6, cv=3, n_repeats=2, random_state=0,
    ).fit(X, y)
    assert search.cv_results_["params"] == again.cv_results_["params"]


# -------------------------------------------------------------------------- failures, jobs


class FailsWhenDeep(ClassifierMixin, BaseEstimator):
    """Fails to fit for depth >= 5, otherwise a plain tree."""

    def __init__(self, depth=1):
        self.depth = depth

    def fit(self, X, y):
        if self.depth >= 5:
            raise ValueError("depth too large for this toy")
        self.tree_ = DecisionTreeClassifier(max_depth=self.depth, random_state=0).fit(X, y)
        self.classes_ = self.tree_.classes_
        return self

    def predict(self, X):
        return self.tree_.predict(X)


def test_failed_fits_follow_error_score_and_are_recorded(easy_problem):
    X, y = easy_problem
    grid = {"depth": [1, 3, 5]}
    with pytest.warns(FitFailedWarning, match="fits failed"):
        search = RaceSearchCV(FailsWhenDeep(), grid, cv=3, n_repeats=2, random_state=0).fit(X, y)
    res = search.cv_results_
    assert res["n_fits_failed"][2] == res["n_splits_evaluated"][2] > 0
    assert np.isnan(res["mean_test_score"][2])
    assert res["rank_test_score"][2] == res["rank_test_score"].max()
    failed = {(c, i) for c, i, _ in search.race_.failures}
    assert failed and all(c == 2 for c, _ in failed)
    assert search.best_params_["depth"] in (1, 3)
    with pytest.warns(FitFailedWarning):
        zero = RaceSearchCV(
            FailsWhenDeep(), grid, cv=3, n_repeats=1, error_score=0.0, random_state=0
        ).fit(X, y)
    assert zero.cv_results_["mean_test_score"][2] == 0.0
    with pytest.raises(ValueError, match="depth too large"):
        RaceSearchCV(FailsWhenDeep(), grid, cv=3, error_score="raise", random_state=0).fit(X, y)


@pytest.mark.slow
def test_parallel_and_executor_give_the_same_race(easy_problem):
    X, y = easy_problem
    kw = dict(cv=5, n_repeats=2, random_state=3)
    serial = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, **kw).fit(X, y)
    # The threading backend exercises the same Parallel path without paying for starting
    # loky worker processes on a loaded machine (the benchmark runs loky).
    from joblib import parallel_config

    with parallel_config(backend="threading"):
        threads = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, n_jobs=2, **kw).fit(X, y)
    with ThreadPoolExecutor(2) as pool:
        executor = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, executor=pool, **kw).fit(X, y)
    for other in (threads, executor):
        for key in ("mean_test_score", "n_splits_evaluated", "eliminated_at"):
            np.testing.assert_array_equal(serial.cv_results_[key], other.cv_results_[key])


def test_budget_is_a_hard_limit_on_fits(easy_problem):
    X, y = easy_problem
    search = RaceSearchCV(
        KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3, budget=30, random_state=0
    ).fit(X, y)
    assert search.n_evaluations_ == search.n_fits_ == search.race_.n_evaluations <= 30
    with pytest.raises(ValueError, match="`budget`=9 cannot pay for the first block"):
        # 5 candidates x the default first_test of 2 splits = 10 fits before the first test
        RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=5, budget=9).fit(X, y)


def test_max_fits_is_the_former_name_of_budget(easy_problem):
    # racer's one name for the evaluations a run may start is `budget` (docs/conventions.md);
    # the former name still works in the scikit-learn way: a FutureWarning at fit.
    X, y = easy_problem
    new = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3, budget=30,
                       random_state=0).fit(X, y)
    old = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3, max_fits=30,
                       random_state=0)
    assert old.get_params()["max_fits"] == 30 and old.get_params()["budget"] is None
    with pytest.warns(FutureWarning, match="`max_fits` is renamed `budget`.*budget=30"):
        old.fit(X, y)
    assert old.n_evaluations_ == new.n_evaluations_ and old.best_params_ == new.best_params_
    np.testing.assert_array_equal(old.cv_results_["n_splits_evaluated"],
                                  new.cv_results_["n_splits_evaluated"])
    with pytest.raises(TypeError, match="give `budget` only"):
        RaceSearchCV(KNeighborsClassifier(), KNN_GRID, budget=30, max_fits=30).fit(X, y)


def test_frace_runs_the_same_search(easy_problem):
    pytest.importorskip("racer.racing.frace")
    X, y = easy_problem
    search = RaceSearchCV(
        KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3, test="frace", random_state=0
    ).fit(X, y)
    assert type(search.race_).__name__ == "RaceResult"
    assert search.best_params_["n_neighbors"] in (1, 3, 5)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(param_grid=None), ValueError, "exactly one of `param_grid`"),
        (dict(param_distributions={"n_neighbors": [1, 2]}), ValueError, "exactly one"),
        (dict(n_iter=3), ValueError, "`n_iter` only applies"),
        (dict(n_repeats=0), ValueError, "'n_repeats' parameter of RaceSearchCV.*Got 0"),
        (dict(first_test=0), ValueError, "'first_test' parameter of RaceSearchCV.*Got 0"),
        (dict(test="wilcoxon"), ValueError, "'test' parameter of RaceSearchCV.*Got 'wilcoxon'"),
        (dict(test=3), TypeError, "'test' parameter of RaceSearchCV.*Got 3"),
        (dict(rope=-0.1), ValueError, r"'rope' parameter of RaceSearchCV.*Got -0\.1"),
        (dict(rope=float("inf")), ValueError, "'rope' parameter of RaceSearchCV.*Got inf"),
        (dict(error_score="nan"), ValueError, "'error_score' parameter of RaceSearchCV"),
        (dict(executor="pool"), TypeError, "'executor' parameter of RaceSearchCV"),
        (dict(resource="rows"), ValueError, "'resource' parameter of RaceSearchCV.*Got 'rows'"),
        (dict(resource="n_samples", factor=1), ValueError,
         "'factor' parameter of RaceSearchCV.*Got 1"),
        (dict(resource="n_samples", min_resources=0), ValueError,
         "'min_resources' parameter of RaceSearchCV.*Got 0"),
        (dict(resource="n_samples", min_resources="smallest"), ValueError,
         "'min_resources' parameter of RaceSearchCV.*Got 'smallest'"),
        (dict(resource="n_samples", min_resources=10_000), ValueError,
         "`min_resources`=10000 exceeds the smallest training part"),
    ],
)
def test_bad_arguments_name_the_argument(easy_problem, kwargs, exc, match):
    X, y = easy_problem
    params = dict(param_grid=KNN_GRID)
    params.update(kwargs)
    grid = params.pop("param_grid")
    with pytest.raises(exc, match=match):
        RaceSearchCV(KNeighborsClassifier(), grid, cv=2, **params).fit(X, y)


# ----------------------------------------------------------------- the correlated t-test


def test_correlated_ttest_matches_baycomp():
    baycomp = pytest.importorskip("baycomp")
    rng = np.random.default_rng(4)
    n_folds, runs = 5, 3
    base = rng.normal(0.8, 0.03, size=n_folds * runs)
    # Column 2 gets its own noise: a constant difference is a point mass, which the test caps
    # by the IDP sign test on purpose and baycomp does not.
    scores = np.column_stack([base + 0.02, base + rng.normal(0, 0.01, base.size),
                              base + 0.005 + rng.normal(0, 0.002, base.size)])
    rope = 0.01
    test = CorrelatedTTestRacing(rho=1 / n_folds, rope=rope, credibility=0.5000001)
    decisions = {e.index: e for e in test.decide(RaceView.from_scores(scores, np.arange(3)), None)}
    # baycomp: probs(x, y) = (P(y - x < -rope), P(|.| < rope), P(y - x > rope)), rho = 1/folds.
    for j in (1, 2):
        left, within, right = baycomp.CorrelatedTTest.probs(
            scores[:, j], scores[:, 0], rope=rope, runs=runs
        )
        if j in decisions:
            expected = right if decisions[j].reason == "dominated" else within
            assert decisions[j].probability == pytest.approx(expected, rel=1e-9)
        else:
            assert max(right, within) <= 0.5000001


def test_correlated_ttest_leader_is_never_eliminated_and_zero_variance():
    scores = np.tile([0.9, 0.9, 0.5], (6, 1))
    test = CorrelatedTTestRacing(rho=0.2, rope=0.01)
    out = {e.index: e.reason for e in test.decide(RaceView.from_scores(scores, np.arange(3)), None)}
    # Six splits tied with the leader are not evidence of equivalence (the IDP cap);
    # forty are.
    assert out == {2: "dominated"}
    many = np.tile([0.9, 0.9, 0.5], (40, 1))
    out = {e.index: e.reason for e in test.decide(RaceView.from_scores(many, np.arange(3)), None)}
    assert out == {1: "indistinguishable", 2: "dominated"}
    assert CorrelatedTTestRacing(rho=0.2, rope=0.0).decide(RaceView.from_scores(scores[:, :2], np.arange(2)), None) == []
    with pytest.raises(ValueError, match="rho"):
        CorrelatedTTestRacing(rho=1.0)


def test_correlated_t_search(easy_problem):
    X, y = easy_problem
    search = RaceSearchCV(
        KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3, test="correlated-t", rope=0.01,
        random_state=0,
    ).fit(X, y)
    assert search.n_fits_ < 5 * search.n_splits_
    assert search.best_params_["n_neighbors"] in (1, 3, 5)


# ------------------------------------------------------------ scikit-learn estimator checks

# The same instances scikit-learn checks its own searches with (cv=2, error_score="raise");
# n_repeats=2 and first_test=2 make the checks go through the racing path (4 splits, tests at
# 2, 3 and 4), not only the grid-search fallback.
_CHECKED = [
    RaceSearchCV(
        LogisticRegression(), {"C": [0.1, 1.0]}, cv=2, n_repeats=2, first_test=2,
        error_score="raise",
    ),
    RaceSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=2, n_repeats=1, error_score="raise"),
]
# For regressors GridSearchCV has the same expected failure (scikit-learn's own instance generator lists it):
# a search does not convert a column-vector y itself, so the DataConversionWarning the check
# expects is raised inside cross_validate's fits, where it is not seen.
_EXPECTED_FAILED = {"check_supervised_y_2d": "same as GridSearchCV: y is passed on unchanged"}


@parametrize_with_checks(
    _CHECKED,
    expected_failed_checks=lambda est: _EXPECTED_FAILED if isinstance(est.estimator, Ridge) else {},
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        check(estimator)


def test_default_bayesian_test_can_decide_with_fewer_splits_than_candidates():
    """BayesianTest's default holds while n <= m - 1; the adapter opens it (docs/sklearn.md)."""
    from racer.racing.bayesian import BayesianTest

    search = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, test="bayes", rope=0.0)
    test = search._racing_test(rho=0.2)
    assert isinstance(test.inner, BayesianTest) and test.inner.small_n == "reject"
    # 6 splits, 10 candidates: one clearly worse candidate is dropped.
    rng = np.random.default_rng(0)
    scores = rng.normal(0.9, 0.01, size=(6, 10))
    scores[:, 3] -= 0.3
    out = test.decide(RaceView.from_scores(scores, np.arange(10)), np.random.default_rng(1))
    assert 3 in {e.index for e in out}
    held = BayesianTest().decide(RaceView.from_scores(scores, np.arange(10)), np.random.default_rng(1))
    assert held == []


def test_score_resolution_turns_small_differences_into_ties():
    from racer.racing.cv import ScoreResolution

    seen = {}

    class Spy(CorrelatedTTestRacing):
        def decide(self, view, rng):
            scores, ids = view.scores, view.ids
            seen["scores"] = scores
            return []

    wrapped = ScoreResolution(Spy(), 0.01)
    wrapped.decide(RaceView.from_scores(np.array([[0.901, 0.899, 0.93], [0.8, 0.8021, 0.7]]), np.arange(3)), None)
    np.testing.assert_allclose(seen["scores"], [[0.90, 0.90, 0.93], [0.80, 0.80, 0.70]])
    assert wrapped.get_params()["rope"] == 0.01


# ---------------------------------------------------------- scikit-learn conventions


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(verbose="loud"), "verbose"),
        (dict(return_train_score="yes"), "return_train_score"),
        (dict(refit=3.5), "refit"),
        (dict(n_jobs="two"), "n_jobs"),
        (dict(n_repeats=1.5), "n_repeats"),
        (dict(first_test=-1), "first_test"),
        (dict(budget=0), "budget"),
        (dict(max_fits=0), "max_fits"),
        (dict(rope="wide"), "rope"),
        (dict(test="wilcoxon"), "test"),
        (dict(timeout="1"), "timeout"),
        (dict(executor=3), "executor"),
        (dict(random_state="seed"), "random_state"),
        (dict(param_grid="abc"), "param_grid"),
    ],
)
def test_invalid_parameters_raise_sklearns_invalid_parameter_error(easy_problem, kwargs, name):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = easy_problem
    params = dict(param_grid=KNN_GRID, cv=2)
    params.update(kwargs)
    grid = params.pop("param_grid")
    bad = next(iter(kwargs.values()))
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter of RaceSearchCV.*Got {bad!r}"):
        RaceSearchCV(KNeighborsClassifier(), grid, **params).fit(X, y)


def test_distribution_parameters_are_validated_too(easy_problem):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = easy_problem
    for kwargs in (dict(n_iter=0), dict(n_iter="ten")):
        with pytest.raises(InvalidParameterError):
            RaceSearchCV(KNeighborsClassifier(), param_distributions={"n_neighbors": [1, 3]},
                         cv=2, **kwargs).fit(X, y)


def test_parameter_constraints_cover_every_init_parameter():
    import inspect

    names = set(inspect.signature(RaceSearchCV.__init__).parameters) - {"self"}
    assert names == set(RaceSearchCV._parameter_constraints)


def test_n_iter_draws_that_many(easy_problem):
    X, y = easy_problem
    from scipy.stats import randint

    dists = {"n_neighbors": randint(1, 80)}
    common = dict(param_distributions=dists, cv=3, n_repeats=2, random_state=0)
    search = RaceSearchCV(KNeighborsClassifier(), n_iter=4, **common).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    default = RaceSearchCV(KNeighborsClassifier(), **common).fit(X, y)
    assert len(default.cv_results_["params"]) == 10  # RandomizedSearchCV's default n_iter


def test_verbose_levels_print_more_at_each_level(easy_problem, capsys):
    X, y = easy_problem
    common = dict(cv=3, n_repeats=4, first_test=3, random_state=0)
    lines = {}
    for level in (0, 1, 2, 3):
        RaceSearchCV(KNeighborsClassifier(), KNN_GRID, verbose=level, **common).fit(X, y)
        lines[level] = capsys.readouterr().out.splitlines()
    search = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, **common).fit(X, y)
    assert lines[0] == []
    # 1: the opening summary and one line per race step (a step per split here).
    assert lines[1][0].startswith(
        f"Racing {len(KNN_GRID['n_neighbors'])} candidates over 12 splits")
    steps = [line for line in lines[1] if line.startswith("[RaceSearchCV]")]
    assert len(steps) == len(lines[1]) - 1 == search.race_.n_instances - 3 + 1
    assert steps[0].startswith("[RaceSearchCV] 3/12 splits, 15 fits")
    assert steps[-1].startswith(f"[RaceSearchCV] {search.race_.n_instances}/12 splits, "
                                f"{search.n_fits_} fits")
    # 2: plus one [CV] END line per fit (as GridSearchCV at 2) and one per elimination.
    fits2 = [line for line in lines[2] if line.startswith("[CV] END")]
    assert len(fits2) == search.n_fits_
    assert all("n_neighbors=" in line and "total time=" in line for line in fits2)
    eliminated = [line for line in lines[2] if "eliminated #" in line]
    assert len(eliminated) == len(search.race_.history) > 0
    assert len(lines[2]) == len(lines[1]) + len(fits2) + len(eliminated)
    # 3: the same fit lines with the split (k/N) and its test score.
    fits3 = [line for line in lines[3] if line.startswith("[CV ")]
    assert len(fits3) == search.n_fits_
    assert all("score=" in line and "/12]" in line for line in fits3)
    assert not any("score=" in line for line in fits2)


def test_race_speaks_of_parameters_not_indices(easy_problem):
    X, y = easy_problem
    search = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=3, n_repeats=2, first_test=3,
                          random_state=0).fit(X, y)
    race = search.race_
    assert race.best == search.best_params_
    assert race.candidates == search.cv_results_["params"]
    for record in race.history:
        assert record.candidate == search.cv_results_["params"][record.candidate_index]
        assert record.by == search.cv_results_["params"][record.by_index]
    text = race.summary()
    assert f"'n_neighbors': {search.best_params_['n_neighbors']}" in text.splitlines()[3]


# --------------------------------------------------------------------- tied coarse scores


def test_tied_coarse_scores_give_no_near_certain_elimination_before_ten_splits(iris):
    # Accuracy on 30-sample folds moves in steps of 1/30: most of this grid ties split by split.
    # The DP sign test used to drop 20-22 of the 24 at the first test "with p=1".
    X, y = iris
    grid = {"C": np.logspace(-2, 3, 12).tolist(), "fit_intercept": [True, False]}
    search = RaceSearchCV(LogisticRegression(max_iter=500), grid, cv=5, n_repeats=3,
                          random_state=0).fit(X, y)
    history = search.race_.history
    assert len(history) > 0  # the race still races
    for record in history:
        if record.n_instances < 10:
            assert record.probability < 0.999, record


def test_all_tied_splits_are_not_evidence_of_equivalence():
    # Six candidates tied on every split, one clearly worse. The tie is the DP prior's own
    # point, so the DP band is exactly 1 after any number of splits; the IDP lower band is
    # Pr[Beta(1, n) < 2 eps] = 1 - (1 - 2 eps)^n, which must pass the equivalence credibility
    # (0.8 with eps 0.1: 8 tied splits, p = 0.83, far from the 0.999 of the old DP).
    search = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, test="bayes", rope=0.0)
    test = search._racing_test(rho=0.2)
    eps, credibility = test.inner.eps, test.credibility
    n_min = next(n for n in range(1, 200) if 1 - (1 - 2 * eps) ** n > credibility)
    assert 1 - (1 - 2 * eps) ** n_min < 0.999
    # (Before 9 splits the Bayesian Friedman gate of this 6-candidate matrix stays shut.)
    for n, expect_equivalence in ((n_min - 1, False), (max(n_min, 10), True), (60, True)):
        scores = np.full((n, 6), 0.9)
        scores[:, 5] = 0.5
        out = test.decide(RaceView.from_scores(scores, np.arange(6)), np.random.default_rng(0))
        equivalent = [e for e in out if e.reason == "indistinguishable"]
        assert bool(equivalent) == expect_equivalence
        for e in equivalent:
            # the quadrature of prob_indistinguishable is accurate to ~2e-5
            assert e.probability == pytest.approx(1 - (1 - 2 * eps) ** n, abs=1e-4)
        dominated = [e for e in out if e.reason == "dominated"]
        if not expect_equivalence and not dominated:
            continue
        assert [e.index for e in dominated] == [5]
        # n wins and no loss: the IDP lower probability is at most 1 - 2^-n
        assert dominated[0].probability <= 1 - 2.0**-n + 1e-12


def test_posterior_best_test_is_available_by_name(easy_problem):
    from racer.racing.posterior_best import PosteriorBestTest

    X, y = easy_problem
    search = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=3, n_repeats=4, first_test=3,
                          test="posterior-best", random_state=0)
    assert isinstance(search._racing_test(rho=0.2).inner, PosteriorBestTest)
    search.fit(X, y)
    # the mass rule's eliminations, and (no budget: a race over splits) the endgame's
    assert {r.reason for r in search.race_.history} <= {"dominated", "indistinguishable"}
    assert search.best_params_["n_neighbors"] in (1, 3, 5)
    assert search.n_fits_ < 5 * 12


def test_correlated_t_is_capped_on_tied_splits():
    # Differences that are all equal make the t posterior a point mass: p = 1 from 5 splits.
    # On tied splits the test's probabilities are capped by the IDP sign test.
    scores = np.array([[0.9, 0.9, 0.8], [0.9, 0.9, 0.8], [0.9, 0.9, 0.8], [0.9, 0.9, 0.8],
                       [0.9, 0.9, 0.8]])
    scores[:, 0] += 0.001  # the leader: no tie with candidate 2, tied-like with 1 within rope
    scores[:, 1] = scores[:, 0]  # candidate 1 ties the leader on every split
    test = CorrelatedTTestRacing(rho=0.2, rope=0.01, credibility=0.95)
    out = test.decide(RaceView.from_scores(scores), None)
    # 2 loses every split by the same margin: a point mass, capped by the IDP sign test at
    # 1 - 2^-5; 1 ties the leader on every split: equivalence capped at 1 - 0.9^5 = 0.41.
    assert [(e.index, e.reason) for e in out] == [(2, "dominated")]
    assert out[0].probability == pytest.approx(1 - 2.0**-5, rel=1e-12)
    many = np.tile(scores[:1], (40, 1))
    out = test.decide(RaceView.from_scores(many), None)
    reasons = {e.index: (e.reason, e.probability) for e in out}
    assert reasons[1][0] == "indistinguishable"
    assert reasons[1][1] == pytest.approx(1 - 0.9**40, abs=1e-4)


# ---------------------------------------------------------------- resource="n_samples"


class _CountsTrainingSamples(ClassifierMixin, BaseEstimator):
    """Scores the number of samples it was fitted on (over 1000), so that cv_results_ shows
    what each fit trained on; ``c`` only makes a grid."""

    def __init__(self, c=0):
        self.c = c

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.n_fit_ = len(X)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        return self.n_fit_ / 1000 + self.c * 1e-6


def test_subsample_mode_trains_on_growing_subsamples(iris):
    X, y = iris
    search = RaceSearchCV(_CountsTrainingSamples(), {"c": [0, 1, 2, 3]}, cv=5, n_repeats=3,
                          resource="n_samples", factor=2, random_state=0).fit(X, y)
    sizes = search.n_resources_
    assert sizes.shape == (search.n_splits_,)
    repeat = np.repeat(np.arange(3), 5)  # splits are listed repeat by repeat
    # factor**-2 of 120 = 30, the same as Halving's floor (2 per class and fold = 30).
    np.testing.assert_array_equal(sizes, np.minimum(120, 30 * 2 ** repeat))
    # Every fit trained on exactly the scheduled number of samples.
    res = search.cv_results_
    for k in range(search.n_splits_):
        column = res[f"split{k}_test_score"]
        done = ~np.isnan(column)
        np.testing.assert_allclose(np.floor(column[done] * 1000 + 1e-9), sizes[k])
    # The race visits the small splits first.
    assert (np.diff(sizes[search.split_order_]) >= 0).all()
    assert res["n_resources"].max() == 120


def test_subsample_mode_results_refit_and_reproducibility(easy_problem):
    X, y = easy_problem
    kwargs = dict(cv=5, n_repeats=3, resource="n_samples", random_state=3)
    a = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, **kwargs).fit(X, y)
    b = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, **kwargs).fit(X, y)
    res = a.cv_results_
    for key in ("params", "mean_test_score", "rank_test_score", "n_splits_evaluated",
                "n_resources", "eliminated_at"):
        assert len(res[key]) == len(KNN_GRID["n_neighbors"])
    # Same seed, same race: bit-identical scores (the same computation).
    for key in ["mean_test_score", "rank_test_score", "n_resources"] + [
        f"split{k}_test_score" for k in range(a.n_splits_)
    ]:
        np.testing.assert_array_equal(res[key], b.cv_results_[key], err_msg=key)
    assert a.best_params_ == b.best_params_ and a.n_fits_ == b.n_fits_
    # The winner went furthest and is refitted on all the data, as in GridSearchCV.
    best = a.best_index_
    assert res["n_splits_evaluated"][best] == res["n_splits_evaluated"].max()
    assert res["n_resources"][best] == a.n_resources_.max()
    assert a.best_estimator_.n_samples_fit_ == len(X)
    assert a.best_params_["n_neighbors"] in (1, 3, 5)
    # best_score_ is the winner's mean at the largest size, not a mix of sizes.
    top = a.n_resources_ == a.n_resources_.max()
    split_scores = np.array([res[f"split{k}_test_score"][best] for k in np.flatnonzero(top)])
    assert a.best_score_ == pytest.approx(np.nanmean(split_scores), rel=1e-12)
    # The same splits as resource="splits" (the subsample draws come from their own stream).
    full = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, cv=5, n_repeats=3,
                        random_state=3).fit(X, y)
    for (tr_a, te_a), (tr_b, te_b) in zip(a.splits_, full.splits_):
        np.testing.assert_array_equal(tr_a, tr_b)
        np.testing.assert_array_equal(te_a, te_b)


def test_subsample_levels_keep_at_least_what_halving_keeps():
    from racer.racing.cv import HalvingFloor

    class DropAllButLeader:
        def decide(self, view, rng):
            from racer.racing.base import Elimination

            leader = int(np.argmax(view.scores.mean(axis=0)))
            return [Elimination(j, "dominated", leader, 0.99)
                    for j in range(view.scores.shape[1]) if j != leader]

        def get_params(self):
            return {}

    floor = HalvingFloor(DropAllButLeader(), n_candidates=27, splits_per_level=5, n_levels=3,
                          factor=3)
    scores = np.tile(np.arange(27, dtype=float), (5, 1))
    # Level 0 (5 splits seen): 27 / 3 = 9 must stay, the 18 worst-scoring go.
    out = floor.decide(RaceView.from_scores(scores, np.arange(27)), None)
    assert sorted(e.index for e in out) == list(range(18))
    # Level 1 (10 splits): 27 / 9 = 3 stay.
    out = floor.decide(RaceView.from_scores(np.tile(scores, (2, 1)), np.arange(27)), None)
    assert sorted(e.index for e in out) == list(range(24))
    # Last level: the inner test alone decides.
    out = floor.decide(RaceView.from_scores(np.tile(scores, (3, 1)), np.arange(27)), None)
    assert len(out) == 26


def test_subsample_level_end_cuts_to_halvings_quota_by_the_level_mean():
    from racer.racing.cv import HalvingFloor

    class NoDecision:
        def decide(self, view, rng):
            return []

        def get_params(self):
            return {}

    cut = HalvingFloor(NoDecision(), n_candidates=9, splits_per_level=2, n_levels=3, factor=3,
                        cut=True)
    # Level 0's first split: no cut yet. Its last split: keep 9 / 3 = 3, by the level's mean
    # (column 8 is best on average though worst on the first split).
    first = np.arange(9, dtype=float)[None, :]
    first[0, 8] = -1.0
    assert cut.decide(RaceView.from_scores(first, np.arange(9)), None) == []
    second = np.vstack([first, np.arange(9, dtype=float) + np.r_[np.zeros(8), 20.0]])
    out = cut.decide(RaceView.from_scores(second, np.arange(9)), None)
    assert sorted(e.index for e in out) == list(range(6))
    assert all(e.by == 8 and np.isnan(e.probability) for e in out)
    # The last level is the inner test's alone.
    assert cut.decide(RaceView.from_scores(np.tile(second, (3, 1)), np.arange(9)), None) == []


def test_subsample_mode_labels_quota_cuts_in_cv_results(easy_problem):
    X, y = easy_problem
    grid = {"n_neighbors": list(range(1, 28))}
    search = RaceSearchCV(KNeighborsClassifier(), grid, cv=3, n_repeats=3, first_test=3,
                          resource="n_samples", random_state=0).fit(X, y)
    res = search.cv_results_
    reasons = set(res["elimination_reason"])
    assert reasons <= {"dominated", "indistinguishable", "halving", "failed", ""}
    # At most 27 / 3 = 9 candidates train on the second size, 27 / 9 = 3 on the third.
    sizes = np.unique(search.n_resources_)
    assert (res["n_resources"] >= sizes[1]).sum() <= 9
    assert (res["n_resources"] >= sizes[2]).sum() <= 3
    cut = res["elimination_reason"] == "halving"
    assert np.isnan(res["elimination_probability"][cut]).all()


@pytest.mark.parametrize("alias, name", [("bayesian", "bayes"), ("seed002", "bayes"),
                                         ("F-test", "frace"), ("friedman", "frace")])
def test_test_names_are_the_registry_s_spellings(alias, name):
    # One table of names (racer.racing.registry): the command line's spellings build the same
    # CV-configured test as RaceSearchCV's own.
    got = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, test=alias)._racing_test(rho=0.2)
    ref = RaceSearchCV(KNeighborsClassifier(), KNN_GRID, test=name)._racing_test(rho=0.2)
    assert type(got) is type(ref) and got.get_params() == ref.get_params()


def test_a_test_name_outside_the_cv_tests_is_refused_naming_the_valid_ones(easy_problem):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = easy_problem
    with pytest.raises(InvalidParameterError,
                       match=r"'test' parameter .*'correlated-t'.*Got 't-test-holm'"):
        RaceSearchCV(KNeighborsClassifier(), KNN_GRID, test="t-test-holm").fit(X, y)
