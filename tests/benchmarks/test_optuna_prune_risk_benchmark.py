"""benchmarks/optuna_pruning.py's stated-risk bookkeeping: outcomes per study and the
pairing with a baseline run, which must refuse rows whose decisions differ."""

import copy

import pytest

from _helpers.benchmarks import benchmark_module

pytest.importorskip("optuna")


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("optuna_pruning") as mod:
        yield mod


@pytest.fixture(scope="module")
def rows(bench):
    problem = bench.Synthetic(n_instances=20)
    out = []
    for seed in (0, 1):
        r = bench.run_study(problem, "racing", "raise", seed, max_evals=6 * problem.n_instances)
        r.update(problem="synthetic", condition="racing", on_prune="raise", seed=seed, view="B")
        out.append(r)
    return out


def test_each_prune_is_counted_with_its_stated_risk(rows):
    for r in rows:
        assert r["risk_prunes"] == r["pruned"] > 0     # on_prune="raise": every prune is listed
        assert 0 <= r["risk_nowin_prunes"] <= r["risk_prunes"]
        assert 0.0 <= r["risk_nowin_sum"] <= r["risk_sum"] <= r["risk_prunes"]
        assert r["risk_wrong_test"] <= r["risk_prunes"]


def test_the_comparison_pairs_same_decisions_and_refuses_others(bench, rows):
    baseline = copy.deepcopy(rows)
    for b in baseline:
        b["risk_sum"] = 0.0                            # a DP run stating 0 everywhere
    table = bench.risk_comparison(rows, baseline)
    line = [ln for ln in table.splitlines() if ln.startswith("| synthetic")]
    assert len(line) == 1 and f"| 2 | {sum(r['risk_prunes'] for r in rows)} |" in line[0]
    assert "| 0.0000 |" in line[0]                   # the baseline's stated mean
    baseline[1]["trials"] += 1
    with pytest.raises(ValueError, match="trials differs"):
        bench.risk_comparison(rows, baseline)


def test_pooling_draws_relabels_them_and_refuses_a_shared_seed(bench, rows):
    # Two draws of one kind pool into one problem; a seed met twice would be two records of
    # one study in the paired tables, so it is refused.
    other = [dict(r, problem="other", seed=r["seed"] + 100) for r in rows]
    pooled = bench.pool_problems(rows + other, "kind")
    assert {r["problem"] for r in pooled} == {"kind"} and len(pooled) == 4
    assert rows[0]["problem"] == "synthetic"                 # the input is left as it was
    with pytest.raises(ValueError, match="share a seed"):
        bench.pool_problems(rows + [dict(r, problem="other") for r in rows], "kind")
    # New draws of the held-out kind: the same law, other instances, each under its name.
    draws = [bench.ShiftScaleDraw(name, seed, n_instances=5)
             for name, seed in bench.DRAWS.items()]
    assert [d.name for d in draws] == list(bench.DRAWS) and len(draws) >= 3
    assert len({tuple(d.h) for d in draws}) == len(draws)
    assert all(d.h.shape == (5,) for d in draws)
    assert bench.PROBLEMS["shiftscale-d"]().name == "shiftscale-d"
