"""benchmarks/tuning_anchors.py: racer.tune, SMAC3's AC facade and Optuna TPE (with and
without WilcoxonPruner) on a scenario of the tuning suite, at equal runs, scored on the
held-out instances by the scenario's runner code run in process."""

import json
import math
import os
import sys

import pytest

from _helpers import ROOT

pytest.importorskip("pysat", reason="the sat-capped runner needs python-sat (the bench extra)")

_BENCH = str(ROOT / "benchmarks")
_TUNING = os.path.join(_BENCH, "tuning")


@pytest.fixture(scope="module")
def anchors():
    sys.path[:0] = [_BENCH, _TUNING]
    try:
        import tuning_anchors
        yield tuning_anchors
    finally:
        sys.path.remove(_BENCH)
        sys.path.remove(_TUNING)


@pytest.mark.slow
def test_every_method_stays_within_the_budget(anchors, tmp_path):
    """The cheapest scenario (sat-capped: one run is a few milliseconds of minisat), one
    seed, a fifth of the quick budget: every tool tunes, its final best is scored, and no
    tool asked for more runs than its budget. Slow although it starts no process: importing
    SMAC3, scikit-learn, Optuna and racer and SMAC3's model fits take 17 s of CPU (20-35 s of
    wall on the shared machine)."""
    pytest.importorskip("smac")
    pytest.importorskip("optuna")
    out = tmp_path / "rows.jsonl"
    assert anchors.main(["--quick", "--scenarios", "sat-capped", "--seeds", "1", "--budget-scale", "0.2",
                         "--methods", "racer,smac,tpe,tpe-wilcoxon", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["method"] for r in rows] == ["racer", "smac", "tpe", "tpe-wilcoxon"]
    budget = round(0.2 * 180)
    for r in rows:
        assert r["outcome"] == "ok", r
        assert r["budget"] == budget
        assert 0 < r["runs"] <= r["asked"] <= budget, r
        assert math.isfinite(r["test"]) and r["test"] > 0
        assert r["tool_cpu"] >= 0 and r["target_cpu"] > 0
    # Plain TPE evaluates whole trials: 36 runs on 16 instances are 2 trials, 32 runs.
    assert next(r for r in rows if r["method"] == "tpe")["runs"] == 32
    assert "racer - smac" in "\n".join(anchors.table(rows))


def test_counted_target_refuses_runs_beyond_its_budget(anchors):
    t = anchors.scenario_target("sat-capped")
    f = anchors.CountedTarget(t, budget=1)
    assert f(t.default, t.train[0], 3) == t.cost(t.default, t.train[0], 3)
    with pytest.raises(anchors.BudgetExceeded):
        f(t.default, t.train[1], 3)
    assert (f.runs, f.asked, len(f.configs)) == (1, 2, 1)


def test_configspace_matches_the_parameters_file(anchors):
    pytest.importorskip("ConfigSpace")
    for name in ("sat-capped", "ml-sklearn", "bbob-cma"):
        t = anchors.scenario_target(name)
        cs = anchors.configspace(t, seed=1)
        assert sorted(cs.keys()) == sorted(t.space.names)
        # the default is default.txt's configuration, the one every tool races first
        d = dict(cs.get_default_configuration())
        assert t.switches(d) == t.switches(t.default)
        # every sampled configuration is one racer's space accepts (conditions agree)
        for config in cs.sample_configuration(20):
            values = {p.name: config.get(p.name) for p in t.space.params}
            assert all(t.space.is_active(p, values) == (values[p.name] is not None) for p in t.space.params)


@pytest.mark.slow
def test_scoring_gives_the_runner_s_cost(anchors):
    """The held-out score of one configuration, run in process, is the suite harness's
    (the target-runner as a process on every test instance with the same seeds)."""
    sys.path.insert(0, _BENCH)
    try:
        from cli_vs_irace import held_out
        from tuning_vs_irace import SUITE
    finally:
        sys.path.remove(_BENCH)
    t = anchors.scenario_target("sat-capped")
    config = {"solver": "cadical195", "polarity": "negative", "cd_stabilize": "1", "cd_rephase": "0",
              "cd_target": "2"}
    by_process = held_out(SUITE["sat-capped"].scenario, t.switches(config), seeds_per_instance=1)
    assert t.held_out(config, seeds_per_instance=1) == pytest.approx(by_process, rel=1e-12)
    # and the recorded irace rows' best are re-scored to their recorded cost
    rows = anchors.irace_rows()
    key = next(k for k in rows if k[0] == "sat-capped")
    row = rows[key]
    got = t.held_out(anchors.config_of_switches(t, row["best"]), SUITE["sat-capped"].test_seeds)
    assert got == pytest.approx(row["test"], rel=1e-9)
