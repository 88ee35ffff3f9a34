"""RaceSearchCV against GridSearchCV and HalvingGridSearchCV on scikit-learn's data sets.

For every problem (data set x model x grid of 30-60 candidates) and seed:

* the data are split 75/25 (stratified for classification) into a search part and a held-out
  test part;
* RaceSearchCV runs on ``cv=5`` folds repeated ``n_repeats=3`` times (15 splits), once per
  racing test (``bayes`` = the default Bayesian test, ``frace``, ``correlated-t``);
* the **reference** is GridSearchCV on exactly the race's 15 splits (``cv=search.splits_``):
  every candidate on every split, whose ranking (``rank_test_score``) is the truth the races
  are scored against;
* GridSearchCV 5-fold and HalvingGridSearchCV (factor 3, same 5 folds) are the usual
  practice.

Reported per method: CV fits (final refit excluded; for Halving also the full-data-equivalent
count ``sum(n_resources) * 5 / n_train``), wall time, held-out score of the refitted pick, the
pick's rank in the reference ranking, and how often the reference best was eliminated.

``--tests`` takes racing tests by name plus ``subsample`` (``resource="n_samples"``); with
``--cache DIR`` the reference grids are stored and reused by ``--ablation`` and later runs on
the same problem-seeds, and ``--table-from`` also prints the per-problem target table
and the wall-time comparison with Halving, paired seed by seed.

``--reference grid`` compares ``RaceSearchCV`` with the search its users run:
``GridSearchCV`` on the same user ``cv`` (``--folds 5``: ``StratifiedKFold(5, shuffle=True,
random_state=seed)``, ``KFold`` for regression; several with ``--folds 3,10``), the race with
its defaults (or ``--race-kwargs`` JSON), both in the same process, seed by seed. CPU is the
process CPU time of each ``fit`` (fits and the final refit included). **Regret** (the one
definition of this mode) is the held-out truth of the best candidate minus that of the pick,
where a candidate's truth is its score on the 25% held-out part after a refit on the whole
search part (every candidate, untimed). ``--pilot-grid`` replays race designs on the cached
fold scores of ``GridSearchCV(cv=k)`` (no refits) to choose a default on pilot seeds.

Run ``python benchmarks/sklearn_search.py --quick`` (2 problems, 2 seeds, ~3 min on 2 shared
cores) or without ``--quick`` for every problem with 5 seeds. Set ``OPENBLAS_NUM_THREADS=1
OMP_NUM_THREADS=1``: every method then runs with ``n_jobs=1`` on one thread, so wall times
compare like with like.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
    make_regression,
)
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    KFold,
    ParameterGrid,
    StratifiedKFold,
    train_test_split,
)
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeClassifier

from racer.adapters.sklearn import RaceSearchCV
from racer.progress import track

N_FOLDS, N_REPEATS = 5, 3


def _svc_grid():
    return {
        "svc__C": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0],
        "svc__gamma": [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0],
    }


def _knn_grid(prefix):
    return {
        f"{prefix}__n_neighbors": [1, 3, 5, 7, 9, 11, 15, 21, 31, 41],
        f"{prefix}__weights": ["uniform", "distance"],
        f"{prefix}__p": [1, 2],
    }


def problem(name, seed):
    """(X, y, estimator, grid, is_classifier) for a problem; synthetic data depend on seed."""
    if name == "breast_cancer-svc":
        X, y = load_breast_cancer(return_X_y=True)
        return X, y, make_pipeline(StandardScaler(), SVC()), _svc_grid(), True
    if name == "digits-svc":
        X, y = load_digits(return_X_y=True)
        return X, y, make_pipeline(StandardScaler(), SVC()), _svc_grid(), True
    if name == "wine-knn":
        X, y = load_wine(return_X_y=True)
        est = make_pipeline(StandardScaler(), KNeighborsClassifier())
        return X, y, est, _knn_grid("kneighborsclassifier"), True
    if name == "iris-logreg":
        X, y = load_iris(return_X_y=True)
        est = make_pipeline(StandardScaler(), LogisticRegression(solver="saga", max_iter=500))
        grid = {
            "logisticregression__C": list(np.logspace(-3, 3, 10)),
            "logisticregression__l1_ratio": [0.0, 0.25, 0.5, 0.75, 1.0],
        }
        return X, y, est, grid, True
    if name == "synth-hgb":
        X, y = make_classification(
            n_samples=400, n_features=20, n_informative=8, flip_y=0.05, random_state=seed
        )
        est = HistGradientBoostingClassifier(max_iter=30, early_stopping=False, random_state=0)
        grid = {
            "learning_rate": [0.03, 0.1, 0.3, 1.0],
            "max_leaf_nodes": [4, 15, 31, 63],
            "l2_regularization": [0.0, 1.0, 10.0],
        }
        return X, y, est, grid, True
    if name == "synth-regression-knn":
        X, y = make_regression(
            n_samples=400, n_features=10, n_informative=6, noise=30.0, random_state=seed
        )
        est = make_pipeline(StandardScaler(), KNeighborsRegressor())
        return X, y, est, _knn_grid("kneighborsregressor"), False
    # Added in the second round of defaults and kept out of every tuning run (held out).
    if name == "iris-knn":
        X, y = load_iris(return_X_y=True)
        est = make_pipeline(StandardScaler(), KNeighborsClassifier())
        return X, y, est, _knn_grid("kneighborsclassifier"), True
    if name == "wine-tree":
        X, y = load_wine(return_X_y=True)
        est = DecisionTreeClassifier(random_state=0)
        grid = {
            "max_depth": [1, 2, 3, 5, None],
            "min_samples_leaf": [1, 3, 5, 10],
            "criterion": ["gini", "entropy"],
        }
        return X, y, est, grid, True
    if name == "breast_cancer-logreg":
        X, y = load_breast_cancer(return_X_y=True)
        est = make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))
        grid = {
            "logisticregression__C": list(np.logspace(-3, 2, 10)),
            "logisticregression__penalty": ["l1", "l2"],
            "logisticregression__class_weight": [None, "balanced"],
        }
        return X, y, est, grid, True
    if name == "synth-regression-svr":
        X, y = make_regression(
            n_samples=300, n_features=8, n_informative=5, noise=20.0, random_state=seed
        )
        est = make_pipeline(StandardScaler(), SVR())
        grid = {"svr__C": [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0],
                "svr__gamma": [1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0]}
        return X, y, est, grid, False
    # Added later, kept out of every choice: families the benchmark did not have (a
    # real regression data set with linear models; a larger synthetic classification).
    if name == "diabetes-elasticnet":
        from sklearn.datasets import load_diabetes
        from sklearn.linear_model import ElasticNet

        X, y = load_diabetes(return_X_y=True)
        est = make_pipeline(StandardScaler(), ElasticNet(max_iter=5000))
        grid = {"elasticnet__alpha": list(np.logspace(-3, 1, 9)),
                "elasticnet__l1_ratio": [0.05, 0.25, 0.5, 0.75, 1.0]}
        return X, y, est, grid, False
    if name == "moons-svc":
        from sklearn.datasets import make_moons

        X, y = make_moons(n_samples=1200, noise=0.3, random_state=seed)
        return X, y, make_pipeline(StandardScaler(), SVC()), _svc_grid(), True
    raise ValueError(f"unknown problem {name!r}")


PROBLEMS = [
    "wine-knn",
    "iris-logreg",
    "breast_cancer-svc",
    "synth-regression-knn",
    "iris-knn",
    "wine-tree",
    "breast_cancer-logreg",
    "synth-regression-svr",
    "synth-hgb",
    "digits-svc",
]


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _index_of(params, candidates):
    for i, cand in enumerate(candidates):
        if cand == params:
            return i
    raise KeyError(params)


def run_one(name, seed, tests, rope, grid5fold=True, cache=None):
    X, y, est, grid, classifier = problem(name, seed)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=y if classifier else None
    )
    candidates = list(ParameterGrid(grid))
    base_cv = (
        StratifiedKFold(N_FOLDS) if classifier else KFold(N_FOLDS)
    )
    rows = []
    races = {}
    for test in tests:
        if test.startswith("subsample"):
            # "subsample" or "subsample-f<factor>" (pilot comparisons of the growth factor)
            kwargs = {"resource": "n_samples"}
            if "-f" in test:
                kwargs["factor"] = float(test.split("-f")[1])
            import racer.adapters.sklearn._search as adapter

            # "subsample-nocut": the pilot comparison without the level-end quota cut.
            adapter._SUBSAMPLE_CUT = not test.endswith("nocut")
        else:
            kwargs = {"test": test}
        search = RaceSearchCV(
            est, grid, cv=base_cv, n_repeats=N_REPEATS, rope=rope, random_state=seed, **kwargs
        )
        _, wall = _timed(lambda: search.fit(X_tr, y_tr))
        races[test] = search
        res = search.cv_results_
        # A candidate evaluated on n splits saw the first n of the visit order.
        n_res = search.n_resources_[search.split_order_]
        full_equiv = sum(n_res[:n].sum() / n_res.max() for n in res["n_splits_evaluated"])
        rows.append(
            {
                "method": f"race-{test}",
                "fits": int(search.n_fits_),
                "full_equiv_fits": float(full_equiv),
                "wall": wall,
                "test_score": float(search.score(X_te, y_te)),
                "pick": int(search.best_index_),
                "eliminated": [str(r) for r in res["elimination_reason"]],
                "survivors": int(search.n_remaining_candidates_),
            }
        )
    splits = races[tests[0]].splits_
    for other in races.values():
        assert all(
            np.array_equal(a[1], b[1]) for a, b in zip(splits, other.splits_)
        ), "races with the same seed must share their splits"
    import os

    path = None if cache is None else os.path.join(cache, f"{name}-{seed}.npz")
    if path is not None and os.path.exists(path):
        # The reference of an earlier run on the very same splits (the same seed lists the
        # same splits in every mode): its ranking, not its wall time, is what is reused.
        z = np.load(path)
        ref_rank_all, ref_mean_all = z["rank"], z["mean"]
        rows.append({"method": "grid-same-splits", "fits": len(candidates) * len(splits),
                     "wall": float("nan"), "test_score": float("nan"),
                     "pick": int(np.argmin(ref_rank_all))})
    else:
        ref = GridSearchCV(est, grid, cv=splits)
        _, wall = _timed(lambda: ref.fit(X_tr, y_tr))
        rows.append(
            {
                "method": "grid-same-splits",
                "fits": len(candidates) * len(splits),
                "wall": wall,
                "test_score": float(ref.score(X_te, y_te)),
                "pick": int(ref.best_index_),
            }
        )
        ref_rank_all = np.asarray(ref.cv_results_["rank_test_score"])
        ref_mean_all = np.asarray(ref.cv_results_["mean_test_score"])
        if path is not None:
            os.makedirs(cache, exist_ok=True)
            scores = np.column_stack(
                [ref.cv_results_[f"split{k}_test_score"] for k in range(len(splits))]
            ).T
            np.savez(path, scores=scores, order=races[tests[0]].split_order_,
                     rank=ref_rank_all, mean=ref_mean_all)
    five = StratifiedKFold(N_FOLDS, shuffle=True, random_state=seed) if classifier else KFold(
        N_FOLDS, shuffle=True, random_state=seed
    )
    if grid5fold:
        grid5 = GridSearchCV(est, grid, cv=five)
        _, wall = _timed(lambda: grid5.fit(X_tr, y_tr))
        rows.append(
            {
                "method": "grid-5fold",
                "fits": len(candidates) * N_FOLDS,
                "wall": wall,
                "test_score": float(grid5.score(X_te, y_te)),
                "pick": int(grid5.best_index_),
            }
        )
    halving = HalvingGridSearchCV(est, grid, cv=five, factor=3, random_state=seed)
    _, wall = _timed(lambda: halving.fit(X_tr, y_tr))
    n_res = np.asarray(halving.cv_results_["n_resources"], dtype=float)
    rows.append(
        {
            "method": "halving-5fold",
            "fits": int(len(n_res) * N_FOLDS),
            "full_equiv_fits": float(n_res.sum() * N_FOLDS / len(y_tr)),
            "wall": wall,
            "test_score": float(halving.score(X_te, y_te)),
            "pick": _index_of(halving.best_params_, candidates),
        }
    )
    ref_rank, ref_mean = ref_rank_all, ref_mean_all
    ref_best = int(np.argmin(ref_rank))
    for row in rows:
        row.update(problem=name, seed=seed, n_candidates=len(candidates))
        row["ref_rank"] = int(ref_rank[row["pick"]])
        row["ref_regret"] = float(ref_mean[ref_best] - ref_mean[row["pick"]])
        row["ref_fits"] = len(candidates) * len(splits)
        if "eliminated" in row:
            row["ref_best_eliminated"] = row["eliminated"][ref_best] != ""
            del row["eliminated"]
    return rows


def _ablation_tests(rho):
    """Racing-test variants replayed on full-grid score matrices (``--ablation``).

    The second round of defaults: the default (IDP dominance at 0.975, IDP lower equivalence band
    at 0.975 with eps 0.05) against looser equivalence credibilities and wider bands, each
    wrapped in the default score resolution (rope 0.005) exactly as ``RaceSearchCV`` builds it.
    """
    from racer.racing.cv import ImpreciseEquivalence, ScoreResolution
    from racer.racing.bayesian import BayesianTest

    def idp(dominance=0.975, equivalence=0.975, eps=0.05):
        bayes = BayesianTest(small_n="reject", prior="idp", credibility=dominance, eps=eps)
        return ScoreResolution(ImpreciseEquivalence(bayes, equivalence, eps), 0.005)

    variants = {"default (idp 0.975, band 0.975, eps 0.05)": (idp(), 5)}
    for dom, eq, eps in [
        (0.975, 0.9, 0.05), (0.975, 0.8, 0.05), (0.975, 0.6, 0.05),
        (0.975, 0.975, 0.1), (0.975, 0.9, 0.1), (0.975, 0.8, 0.1),
        (0.95, 0.975, 0.05), (0.95, 0.9, 0.1), (0.95, 0.8, 0.1),
        (0.9, 0.9, 0.1), (0.9, 0.8, 0.1),
        (0.9, 0.7, 0.1), (0.9, 0.8, 0.15), (0.85, 0.8, 0.1), (0.85, 0.7, 0.15),
        (0.8, 0.8, 0.1), (0.8, 0.7, 0.15),
    ]:
        variants[f"idp {dom}, band {eq}, eps {eps}"] = (idp(dom, eq, eps), 5)
    for dom, eq, eps, first in [(0.85, 0.8, 0.1, 4), (0.85, 0.8, 0.1, 3), (0.9, 0.8, 0.1, 4)]:
        variants[f"idp {dom}, band {eq}, eps {eps}, first_test={first}"] = (
            idp(dom, eq, eps), first)
    return variants


def _replay(scores, order, test, first_test):
    """Race on a precomputed (split x candidate) matrix: the fits RaceSearchCV would run."""
    from racer.engine import Race

    race = Race(
        list(range(scores.shape[1])), test=test, first_test=first_test,
        instances=order.tolist(), random_state=0, direction="maximize", winner="mean",
        on_error="worst",
    )
    while not race.finished:
        for ev in race.ask():
            value = scores[ev.instance, ev.candidate_index]
            if np.isnan(value):
                race.tell(ev, error="failed fit")
            else:
                race.tell(ev, value)
    result = race.result()
    return result.best_index, result.n_evaluations


def _grid_matrix(name, seed, cache):
    """(split x candidate) reference scores, visit order, ranks and means of one problem-seed,
    cached in ``cache`` (a directory) so that variants can be replayed without refitting."""
    import os

    path = None if cache is None else os.path.join(cache, f"{name}-{seed}.npz")
    if path is not None and os.path.exists(path):
        z = np.load(path)
        return z["scores"], z["order"], z["rank"], z["mean"]
    X, y, est, grid, classifier = problem(name, seed)
    X_tr, _, y_tr, _ = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=y if classifier else None
    )
    base_cv = StratifiedKFold(N_FOLDS) if classifier else KFold(N_FOLDS)
    # A race with a budget of one block only lists the splits and its visit order.
    n_cand = len(ParameterGrid(grid))
    probe = RaceSearchCV(
        est, grid, cv=base_cv, n_repeats=N_REPEATS, random_state=seed,
        budget=n_cand * 5, refit=False,
    ).fit(X_tr, y_tr)
    ref = GridSearchCV(est, grid, cv=probe.splits_).fit(X_tr, y_tr)
    scores = np.column_stack(
        [ref.cv_results_[f"split{k}_test_score"] for k in range(probe.n_splits_)]
    ).T
    rank = np.asarray(ref.cv_results_["rank_test_score"])
    mean = np.asarray(ref.cv_results_["mean_test_score"])
    if path is not None:
        os.makedirs(cache, exist_ok=True)
        np.savez(path, scores=scores, order=probe.split_order_, rank=rank, mean=mean)
    return scores, probe.split_order_, rank, mean


def ablation(problems, seeds, cache=None):
    """Replay test variants on the full grid of each (problem, seed): same splits, no refits."""
    per_variant: dict[str, list] = {}
    for name in problems:
        for seed in track(seeds, label=f"ablation {name} seeds"):
            scores, order, rank, mean = _grid_matrix(name, seed, cache)
            for variant, (test, first_test) in _ablation_tests(0.2).items():
                best, n_fits = _replay(scores, order, test, first_test)
                per_variant.setdefault(variant, []).append(
                    (int(rank[best]), n_fits / scores.size, float(mean.max() - mean[best]), name)
                )
            print(f"# ablation {name} seed {seed} done", flush=True)
    lines = [
        "| test variant | reference rank (median / mean / max) | regret (mean / max) "
        "| fits % of reference (median / max) | fits % per problem (median) |",
        "|---|---|---|---|---|",
    ]
    for variant, rows in per_variant.items():
        ranks = np.array([r[0] for r in rows])
        fits = 100 * np.array([r[1] for r in rows])
        regret = np.array([r[2] for r in rows])
        per_problem = ", ".join(
            f"{np.median([100 * r[1] for r in rows if r[3] == p]):.0f}" for p in problems
        )
        lines.append(
            f"| {variant} | {np.median(ranks):g} / {ranks.mean():.2f} / {ranks.max()} | "
            f"{regret.mean():.4f} / {regret.max():.4f} | "
            f"{np.median(fits):.0f} / {fits.max():.0f} | {per_problem} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- --reference grid

def _user_cv(classifier, seed, n_folds):
    """The folds a user passes: shuffled k-fold (stratified for classifiers), seeded."""
    splitter = StratifiedKFold if classifier else KFold
    return splitter(n_folds, shuffle=True, random_state=seed)


def _held_out_truth(est, candidates, X_tr, y_tr, X_te, y_te):
    """Held-out score of every candidate refitted on the whole search part: the "truth" that
    regret is measured on (a failed fit scores -inf). Not timed: no search pays for it."""
    from sklearn.base import clone
    from sklearn.metrics import check_scoring

    scorer = check_scoring(est)
    truth = np.full(len(candidates), -np.inf)
    for i, params in enumerate(candidates):
        try:
            fitted = clone(est).set_params(**params).fit(X_tr, y_tr)
            truth[i] = scorer(fitted, X_te, y_te)
        except Exception:  # noqa: BLE001 - a failing candidate is the worst, not a crash
            pass
    return truth


def _search_part(name, seed):
    X, y, est, grid, classifier = problem(name, seed)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.25, random_state=seed, stratify=y if classifier else None
    )
    return X_tr, X_te, y_tr, y_te, est, grid, classifier


def _cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def grid_matrix(name, seed, n_folds=5, cache=None):
    """``GridSearchCV(cv=k shuffled folds)`` of one problem-seed: its (fold x candidate) test
    scores, its pick, its CPU seconds, and the held-out truth of every candidate; cached in
    ``cache`` so that race variants can be replayed on it without refitting."""
    import os

    path = None if cache is None else os.path.join(cache, f"grid{n_folds}-{name}-{seed}.npz")
    if path is not None and os.path.exists(path):
        z = np.load(path)
        return z["scores"], int(z["pick"]), float(z["cpu"]), z["truth"]
    X_tr, X_te, y_tr, y_te, est, grid, classifier = _search_part(name, seed)
    ref = GridSearchCV(est, grid, cv=_user_cv(classifier, seed, n_folds))
    cpu = _cpu(lambda: ref.fit(X_tr, y_tr))
    scores = np.column_stack(
        [ref.cv_results_[f"split{k}_test_score"] for k in range(n_folds)]
    ).T
    truth = _held_out_truth(est, list(ParameterGrid(grid)), X_tr, y_tr, X_te, y_te)
    if path is not None:
        os.makedirs(cache, exist_ok=True)
        np.savez(path, scores=scores, pick=ref.best_index_, cpu=cpu, truth=truth)
    return scores, int(ref.best_index_), cpu, truth


def _grid_variants():
    """Racing designs replayed on the user's k folds (``--pilot-grid``): name -> (test,
    first_test). Each wrapped in the default score resolution (rope 0.005)."""
    from racer.racing import registry
    from racer.racing.cv import ScoreResolution

    def res(test):
        return ScoreResolution(test, 0.005)

    variants = {
        "t-test alpha=0.05, first_test=2, no rope": (registry.lookup("t-test").build(), 2),
        "t-test-holm alpha=0.05, first_test=2": (
            res(registry.lookup("t-test-holm").build()), 2),
        "correlated-t cred=0.8, first_test=2": (
            registry.lookup("correlated-t").build(rho=0.2, rope=0.005, credibility=0.8), 2),
    }
    for first in (2, 3):
        for alpha in (0.05, 0.2):
            variants[f"t-test alpha={alpha}, first_test={first}"] = (
                res(registry.lookup("t-test").build(alpha=alpha)), first)
        variants[f"posterior-best, first_test={first}"] = (
            res(registry.lookup("posterior-best").build()), first)
        variants[f"frace, first_test={first}"] = (res(registry.lookup("frace").build()), first)
        for cred in (0.9, 0.95):
            variants[f"correlated-t cred={cred}, first_test={first}"] = (
                registry.lookup("correlated-t").build(rho=0.2, rope=0.005, credibility=cred),
                first)
    return variants


def fold2_margin_test(rope=0.005):
    """The fold-2 rule chosen on the pilot: the t-test race where, at fold 2, the
    leader must be ahead by more than ``rope`` on both folds (``EarlyMargin``), on scores
    rounded to ``rope``; ``--race-kwargs '{"fold2_margin": true}'`` races with it."""
    from racer.racing.cv import EarlyMargin, ScoreResolution
    from racer.racing.trace import TRaceTest

    return ScoreResolution(EarlyMargin(TRaceTest(), rope), rope)


class _Fold2Rule:
    """A fold-2 rule tried against the chosen one (``--pilot-grid --fold2-rules``): keeps the
    inner test's eliminations on fewer than 3 splits only where ``mode`` allows, on the
    scores the wrapper sees (snapped to the rope). ``"mean"``: mean deficit >= ``k``;
    ``"mean-steps"``: mean deficit >= ``k`` resolution steps (a split's step: the smallest
    gap between distinct scores on it); ``"ahead-steps"``: ahead by more than ``k`` steps
    on every split; ``"ahead-or-mean"``: ahead on every split, or mean deficit >= ``k``;
    ``"tested"``: only t-test p-values, not the no-test rule (p = 0); ``"none"``: nothing."""

    def __init__(self, inner, mode, k=0.0):
        self.inner, self.mode, self.k = inner, mode, k

    def decide(self, view, rng):
        out = self.inner.decide(view, rng)
        x = view.scores
        if x.shape[0] >= 3 or not out:
            return out
        gaps = [np.diff(np.unique(row)) for row in x]
        steps = np.array([g.min() if g.size else np.inf for g in gaps])
        keep = []
        for e in out:
            d = x[:, e.by] - x[:, e.index]
            ok = {
                "mean": lambda: d.mean() >= self.k - 1e-12,
                "mean-steps": lambda: np.mean(d / steps) >= self.k - 1e-9,
                "ahead-steps": lambda: np.all(d > self.k * steps - 1e-12),
                "ahead-or-mean": lambda: np.all(d > 1e-12) or d.mean() >= self.k - 1e-12,
                "tested": lambda: e.probability > 0,
                "none": lambda: False,
            }[self.mode]()
            if ok:
                keep.append(e)
        return keep

    def get_params(self):
        return {"mode": self.mode, "k": self.k}


def _fold2_variants(rope=0.005):
    """Fold-2 rules of the default t-test race (after iris-knn): the default
    (``cv_racing_test``), the rule chosen on the pilot (:func:`fold2_margin_test`) and the
    alternatives tried."""
    from racer.adapters.sklearn._search import cv_racing_test
    from racer.racing import registry
    from racer.racing.cv import EarlyMargin, ScoreResolution

    def t():
        return registry.lookup("t-test").build()

    variants = {
        "default: t-test from fold 2, no margin": (cv_racing_test("t-test", rope, 0.2, None), 2),
        "t-test from fold 3": (ScoreResolution(t(), rope), 3),
        "fold 2: no elimination": (ScoreResolution(_Fold2Rule(t(), "none"), rope), 2),
        "fold 2: t-test p-values only (no no-test rule)": (
            ScoreResolution(_Fold2Rule(t(), "tested"), rope), 2),
        "fold 2: ahead on both folds (ties never eliminate)": (
            ScoreResolution(EarlyMargin(t(), 0.0), rope), 2),
        "CHOSEN fold 2: ahead by > 1 rope on both folds (EarlyMargin)": (
            fold2_margin_test(rope), 2),
    }
    for k in (2, 4, 10):
        variants[f"fold 2: ahead by > {k} rope on both folds"] = (
            ScoreResolution(EarlyMargin(t(), k * rope), rope), 2)
    for k in (2, 4, 10):
        variants[f"fold 2: mean deficit >= {k} rope"] = (
            ScoreResolution(_Fold2Rule(t(), "mean", k * rope), rope), 2)
    for k in (1, 2):
        variants[f"fold 2: ahead by > {k} resolution steps on both folds"] = (
            ScoreResolution(_Fold2Rule(t(), "ahead-steps", k), rope), 2)
    for k in (1.5, 2, 3):
        variants[f"fold 2: mean deficit >= {k} resolution steps"] = (
            ScoreResolution(_Fold2Rule(t(), "mean-steps", k), rope), 2)
    for k in (4, 10):
        variants[f"fold 2: ahead on both folds, or mean deficit >= {k} rope"] = (
            ScoreResolution(_Fold2Rule(t(), "ahead-or-mean", k * rope), rope), 2)
    return variants


def pilot_grid(problems, seeds, n_folds=5, cache=None, variants=None):
    """Replay race designs on the folds of ``GridSearchCV(cv=k)`` of each problem-seed: fits
    as a share of the grid's, and regret (held-out truth) paired with the grid's own pick."""
    per_variant: dict[str, list] = {}
    for name in problems:
        for seed in seeds:
            scores, grid_pick, _, truth = grid_matrix(name, seed, n_folds, cache)
            order = np.random.default_rng(seed).permutation(n_folds)
            grid_regret = truth.max() - truth[grid_pick]
            for variant, (test, first_test) in (variants or _grid_variants()).items():
                best, n_fits = _replay(scores, order, test, first_test)
                diff = truth.max() - truth[best] - grid_regret
                per_variant.setdefault(variant, []).append(
                    (name, n_fits / scores.size, diff, best == grid_pick))
            print(f"# pilot {name} seed {seed} done", flush=True)
    lines = [
        "| design on the user's folds | fits % of the grid (median / max) | regret minus the "
        "grid's (mean +- SE) | same pick as the grid | race worse / better | fits % per "
        "problem (median) |",
        "|---|---|---|---|---|---|",
    ]
    for variant, rows in per_variant.items():
        fits = 100 * np.array([r[1] for r in rows])
        diff = np.array([r[2] for r in rows])
        per_problem = ", ".join(
            f"{np.median([100 * r[1] for r in rows if r[0] == p]):.0f}" for p in problems)
        lines.append(
            f"| {variant} | {np.median(fits):.0f} / {fits.max():.0f} | "
            f"{diff.mean():+.4f} +- {diff.std(ddof=1) / np.sqrt(len(diff)):.4f} | "
            f"{sum(r[3] for r in rows)}/{len(rows)} | {int((diff > 1e-12).sum())} / "
            f"{int((diff < -1e-12).sum())} | {per_problem} |"
        )
    return "\n".join(lines)


def run_against_grid(name, seed, n_folds=5, race_kwargs=None):
    """``RaceSearchCV`` (defaults, or ``race_kwargs``) against ``GridSearchCV`` on the same
    user ``cv`` (k shuffled folds), in the same process: CPU seconds of each search (fits and
    the final refit included), and regret on the held-out truth of every candidate."""
    X_tr, X_te, y_tr, y_te, est, grid, classifier = _search_part(name, seed)
    cv = _user_cv(classifier, seed, n_folds)
    candidates = list(ParameterGrid(grid))
    ref = GridSearchCV(est, grid, cv=cv)
    cpu_grid = _cpu(lambda: ref.fit(X_tr, y_tr))
    options = dict(race_kwargs or {})
    if options.pop("fold2_margin", False):
        options.update(test=fold2_margin_test(options.pop("rope", 0.005)), first_test=2)
    race = RaceSearchCV(est, grid, cv=cv, random_state=seed, **options)
    cpu_race = _cpu(lambda: race.fit(X_tr, y_tr))
    truth = _held_out_truth(est, candidates, X_tr, y_tr, X_te, y_te)
    regret_grid = float(truth.max() - truth[ref.best_index_])
    regret_race = float(truth.max() - truth[race.best_index_])
    return {
        "problem": name, "seed": seed, "n_folds": n_folds, "n_candidates": len(candidates),
        "race_kwargs": race_kwargs or {}, "cpu_grid": cpu_grid, "cpu_race": cpu_race,
        "fits_grid": len(candidates) * n_folds, "fits_race": int(race.n_fits_),
        "splits_race": int(race.n_splits_),
        "regret_grid": regret_grid, "regret_race": regret_race,
        "same_pick": bool(race.best_index_ == ref.best_index_),
    }


def against_grid_table(rows):
    """Per problem (and user ``cv``): CPU ratio race / grid, regret difference with its SE,
    and whether the target holds (ratio <= 0.60 and regret difference <= 2 SE)."""
    lines = [
        "| problem | cv | seeds | CPU ratio race / grid (median; geometric mean) | fits % of "
        "the grid (median) | regret race (mean) | regret grid (mean) | regret race - grid "
        "(mean +- SE) | same pick | target met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((r["problem"], r["n_folds"]) for r in rows))
    met = 0
    for name, k in keys:
        mine = [r for r in rows if r["problem"] == name and r["n_folds"] == k]
        ratio = np.array([r["cpu_race"] / r["cpu_grid"] for r in mine])
        fits = np.array([100 * r["fits_race"] / r["fits_grid"] for r in mine])
        diff = np.array([r["regret_race"] - r["regret_grid"] for r in mine])
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        ok = np.median(ratio) <= 0.60 and diff.mean() <= 2 * se
        met += bool(ok)
        lines.append(
            f"| {name} | {k} | {len(mine)} | {np.median(ratio):.2f}; "
            f"{np.exp(np.log(ratio).mean()):.2f} | {np.median(fits):.0f} | "
            f"{np.mean([r['regret_race'] for r in mine]):.4f} | "
            f"{np.mean([r['regret_grid'] for r in mine]):.4f} | {diff.mean():+.4f} +- {se:.4f} | "
            f"{sum(r['same_pick'] for r in mine)}/{len(mine)} | {'yes' if ok else 'no'} |"
        )
    for k in dict.fromkeys(r["n_folds"] for r in rows):
        # Every problem-seed of this cv together (not counted in the rows meeting the target).
        mine = [r for r in rows if r["n_folds"] == k]
        ratio = np.array([r["cpu_race"] / r["cpu_grid"] for r in mine])
        diff = np.array([r["regret_race"] - r["regret_grid"] for r in mine])
        lines.append(
            f"| ALL | {k} | {len(mine)} | {np.median(ratio):.2f}; "
            f"{np.exp(np.log(ratio).mean()):.2f} | "
            f"{np.median([100 * r['fits_race'] / r['fits_grid'] for r in mine]):.0f} | "
            f"{np.mean([r['regret_race'] for r in mine]):.4f} | "
            f"{np.mean([r['regret_grid'] for r in mine]):.4f} | {diff.mean():+.4f} +- "
            f"{diff.std(ddof=1) / np.sqrt(len(diff)):.4f} | "
            f"{sum(r['same_pick'] for r in mine)}/{len(mine)} (race better in "
            f"{int((diff < 0).sum())}, worse in {int((diff > 0).sum())}) | - |"
        )
    lines.append(f"\nrows meeting the target (median CPU ratio <= 0.60, regret difference "
                 f"<= 2 SE): {met} of {len(keys)}")
    return "\n".join(lines)


def _median(values):
    return float(np.median(values)) if len(values) else float("nan")


def table(rows, methods):
    lines = [
        "| problem (candidates) | method | CV fits (median, % of reference) | wall s (median) "
        "| held-out score (mean) | reference rank of pick (median; per seed) "
        "| reference regret (mean) | ref. best eliminated |",
        "|---|---|---|---|---|---|---|---|",
    ]
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    for name in problems + ["ALL"]:
        sub = [r for r in rows if name in ("ALL", r["problem"])]
        n_cand = sub[0]["n_candidates"] if name != "ALL" else "-"
        for method in methods:
            mine = [r for r in sub if r["method"] == method]
            if not mine:
                continue
            fits = _median([r["fits"] for r in mine])
            pct = _median([100.0 * r["fits"] / r["ref_fits"] for r in mine])
            extra = ""
            if "full_equiv_fits" in mine[0]:
                extra = f" ({_median([r['full_equiv_fits'] for r in mine]):.0f} full-data eq.)"
            ranks = [r["ref_rank"] for r in mine]
            per_seed = "" if name == "ALL" else "; " + ", ".join(map(str, ranks))
            elim = "-"
            if "ref_best_eliminated" in mine[0]:
                elim = f"{sum(r['ref_best_eliminated'] for r in mine)}/{len(mine)}"
            label = f"{name} ({n_cand})" if method == methods[0] else ""
            lines.append(
                f"| {label} | {method} | {fits:.0f} ({pct:.0f}%){extra} | "
                f"{_median([r['wall'] for r in mine]):.2f} | "
                f"{np.mean([r['test_score'] for r in mine]):.4f} | "
                f"{_median(ranks):g}{per_seed} | "
                f"{np.mean([r['ref_regret'] for r in mine]):.4f} | {elim} |"
            )
    return "\n".join(lines)


def target_table(rows, methods, held_out=()):
    """The target per problem: median reference rank <= 2 with a median of at
    most 50% of the reference grid's fits, for each race method."""
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    head = " | ".join(f"{m}: median rank, median fits % (max), met" for m in methods)
    lines = [f"| problem | seeds | {head} |", "|---|---|" + "---|" * len(methods)]
    met = dict.fromkeys(methods, 0)
    for name in problems:
        cells = []
        n = 0
        for m in methods:
            mine = [r for r in rows if r["problem"] == name and r["method"] == m]
            n = len(mine)
            rank = _median([r["ref_rank"] for r in mine])
            fits = [100 * r["fits"] / r["ref_fits"] for r in mine]
            ok = rank <= 2 and _median(fits) <= 50
            met[m] += ok
            cells.append(f"{rank:g}, {_median(fits):.0f}% ({max(fits):.0f}%), "
                         f"{'**yes**' if ok else 'no'}")
        label = f"{name} (held out)" if name in held_out else name
        lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("problems meeting it: " + ", ".join(f"{m} {met[m]} of {len(problems)}"
                                                     for m in methods))
    return "\n".join(lines)


def paired_table(rows, method, against="halving-5fold"):
    """Per problem: ``method`` against ``against`` in the same run, seed by seed."""
    lines = [
        f"| problem | seeds | wall ratio {method} / {against} (median) | wall <= in | "
        f"ref. rank of pick <= in | both (wall <= and rank <=) in | median rank ({method} / "
        f"{against}) | fits % of grid ({method} / {against}, median) | "
        f"full-data eq. fits (median) | regret diff (mean +- SE) | target met |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = 0
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    for name in problems:
        a = {r["seed"]: r for r in rows if r["problem"] == name and r["method"] == method}
        b = {r["seed"]: r for r in rows if r["problem"] == name and r["method"] == against}
        seeds = sorted(set(a) & set(b))
        if not seeds:
            continue
        ratio = [a[k]["wall"] / b[k]["wall"] for k in seeds]
        faster = sum(a[k]["wall"] <= b[k]["wall"] for k in seeds)
        better = sum(a[k]["ref_rank"] <= b[k]["ref_rank"] for k in seeds)
        both = sum(a[k]["wall"] <= b[k]["wall"] and a[k]["ref_rank"] <= b[k]["ref_rank"]
                   for k in seeds)
        diff = np.array([a[k]["ref_regret"] - b[k]["ref_regret"] for k in seeds])
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        ok = np.median(ratio) <= 1 and np.median([a[k]["ref_rank"] for k in seeds]) <= np.median(
            [b[k]["ref_rank"] for k in seeds])
        met += bool(ok)
        lines.append(
            f"| {name} | {len(seeds)} | {np.median(ratio):.2f} | {faster}/{len(seeds)} | "
            f"{better}/{len(seeds)} | {both}/{len(seeds)} | "
            f"{_median([a[k]['ref_rank'] for k in seeds]):g} / "
            f"{_median([b[k]['ref_rank'] for k in seeds]):g} | "
            f"{_median([100 * a[k]['fits'] / a[k]['ref_fits'] for k in seeds]):.0f} / "
            f"{_median([100 * b[k]['fits'] / b[k]['ref_fits'] for k in seeds]):.0f} | "
            f"{_median([a[k]['full_equiv_fits'] for k in seeds]):.0f} / "
            f"{_median([b[k]['full_equiv_fits'] for k in seeds]):.0f} | "
            f"{diff.mean():+.4f} +- {se:.4f} | "
            f"{'yes' if ok else 'no'} |"
        )
    lines.append(f"\nproblems where the median wall ratio <= 1 and the median reference rank "
                 f"is <= {against}'s: {met} of {len(problems)}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 problems, 2 seeds")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seed0", type=int, default=0, help="first seed")
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--tests", default="bayes,frace,correlated-t")
    parser.add_argument("--rope", type=float, default=0.005)
    parser.add_argument("--out", default=None, help="append one JSON line per run here")
    parser.add_argument("--table-from", default=None, help="only print the table of a --out file")
    parser.add_argument(
        "--ablation", action="store_true",
        help="replay racing-test variants on full grids (pilot seeds: use --seed0 100)",
    )
    parser.add_argument(
        "--reference", choices=["same-splits", "grid"], default="same-splits",
        help="grid: the comparison of RaceSearchCV against GridSearchCV on the user's own "
             "cv (--folds), CPU ratio and held-out regret paired seed by seed",
    )
    parser.add_argument("--folds", default="5", help="--reference grid: the user's cv=k, "
                                                      "comma-separated for several")
    parser.add_argument("--race-kwargs", default="{}", help="--reference grid: RaceSearchCV "
                                                            "options as JSON (default: none)")
    parser.add_argument("--pilot-grid", action="store_true",
                        help="replay race designs on the folds of GridSearchCV(cv=--folds)")
    parser.add_argument("--fold2-rules", action="store_true",
                        help="--pilot-grid: replay the fold-2 rules of the t-test race instead")
    parser.add_argument("--held-out", default="", help="problems to mark as held out")
    parser.add_argument("--no-grid5", action="store_true", help="skip GridSearchCV 5-fold")
    parser.add_argument("--cache", default=None,
                        help="directory caching the reference grids' score matrices (reused by "
                             "--ablation and by later runs on the same problem-seeds)")
    args = parser.parse_args(argv)
    tests = args.tests.split(",")
    methods = [f"race-{t}" for t in tests] + ["grid-same-splits", "grid-5fold", "halving-5fold"]
    if args.table_from:
        with open(args.table_from) as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        if args.reference == "grid":
            print(against_grid_table(rows))
            return
        print(table(rows, methods))
        print()
        print(target_table(rows, [m for m in methods if m.startswith("race-")],
                           held_out=args.held_out.split(",")))
        for m in methods:
            if m.startswith("race-"):
                print()
                print(paired_table(rows, m))
        return
    problems = args.problems.split(",")
    seeds = range(args.seed0, args.seed0 + args.seeds)
    if args.quick:
        problems = ["wine-knn", "breast_cancer-svc"]
        seeds = range(args.seed0, args.seed0 + 2)
    if args.pilot_grid or args.reference == "grid":
        warnings.filterwarnings("ignore")
    if args.pilot_grid:
        print(pilot_grid(problems, seeds, int(args.folds), args.cache,
                         _fold2_variants(args.rope) if args.fold2_rules else None))
        return
    if args.reference == "grid":
        rows = []
        for name in problems:
            for k in map(int, args.folds.split(",")):
                for seed in seeds:
                    row = run_against_grid(name, seed, k, json.loads(args.race_kwargs))
                    rows.append(row)
                    print(f"# {name} cv={k} seed {seed}: CPU race {row['cpu_race']:.2f} s, "
                          f"grid {row['cpu_grid']:.2f} s, regret race "
                          f"{row['regret_race']:.4f} grid {row['regret_grid']:.4f}", flush=True)
                    if args.out:
                        with open(args.out, "a") as fh:
                            fh.write(json.dumps(row) + "\n")
        print()
        print(against_grid_table(rows))
        return
    if args.ablation:
        warnings.filterwarnings("ignore")
        names = args.problems.split(",") if not args.quick else ["wine-knn"]
        seeds = range(args.seed0, args.seed0 + (1 if args.quick else args.seeds))
        print(ablation(names, seeds, args.cache))
        return
    # Halving's small first rungs make large-k k-NN fail (n_neighbors > n_samples), and saga
    # does not always converge at large C: both are part of what is measured, not news.
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FitFailedWarning)
    rows = []
    for name in problems:
        for seed in seeds:
            start = time.perf_counter()
            new = run_one(name, seed, tests, args.rope, not args.no_grid5, args.cache)
            rows.extend(new)
            summary = ", ".join(f"{r['method']}: {r['fits']} fits rank {r['ref_rank']}" for r in new)
            print(f"# {name} seed {seed} ({time.perf_counter() - start:.0f} s): {summary}", flush=True)
            if args.out:
                with open(args.out, "a") as fh:
                    for r in new:
                        fh.write(json.dumps(r) + "\n")
    print()
    print(table(rows, methods))


if __name__ == "__main__":
    main()
