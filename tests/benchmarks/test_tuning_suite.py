"""The tuning suite of benchmarks/tuning/: every scenario is a valid irace scenario
for racer's reader, its instances are the generator's and its training and test sets are
disjoint, the harness's paired statistics are right, and (where the solver packages of the
``bench`` extra are installed) each target-runner prints one number that its seed fixes."""

import filecmp
import importlib.util
import math
import os
import subprocess
import sys

import pytest

from racer.tuning.parameters import read_configurations, read_parameters
from racer.cli.scenario import read_instances, read_scenario

from _helpers import ROOT

_BENCH = str(ROOT / "benchmarks")
_TUNING = os.path.join(_BENCH, "tuning")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # its dataclasses look their module up while being defined
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, _BENCH)
    try:
        yield _load("tuning_vs_irace", os.path.join(_BENCH, "tuning_vs_irace.py"))
    finally:
        sys.path.remove(_BENCH)


ALL_SCENARIOS = sorted(d for d in os.listdir(_TUNING) if os.path.isfile(os.path.join(_TUNING, d, "scenario.txt")))
# Two objectives: compared by benchmarks/pareto_tuning.py, not by tuning_vs_irace.py,
# and its runner prints `quality work` (tests/benchmarks/test_pareto_tuning_benchmark.py).
MULTI_OBJECTIVE = ["pbo-deap-mo"]
SCENARIOS = [d for d in ALL_SCENARIOS if d not in MULTI_OBJECTIVE]


def test_suite_lists_every_scenario_folder_with_both_roles(harness):
    assert sorted(harness.SUITE) == SCENARIOS and len(SCENARIOS) >= 6
    assert {e.role for e in harness.SUITE.values()} == {"pilot", "report"}


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_scenario_reads_and_its_test_instances_are_held_out(name):
    sc = read_scenario(os.path.join(_TUNING, name, "scenario.txt"))
    space = read_parameters(sc.path("parameterFile"), sc.values["digits"])
    default = read_configurations(sc.path("configurationsFile"), space)
    assert len(default) == 1
    train, test = read_instances(sc, "train"), read_instances(sc, "test")
    assert train and test and not {i.name for i in train} & {i.name for i in test}
    if sc.values["trainInstancesDir"]:  # instance files, not names
        assert all(os.path.isfile(i.name) for i in train + test)
    # irace 3.5 refuses a budget below its minimum for the number of parameters
    n_iter = math.floor(2 + math.log2(len(space.params)))
    assert sc.values["maxExperiments"] >= (n_iter + 1) * n_iter * (5 + 1 + (n_iter - 1))


def test_generator_reproduces_the_committed_instances(tmp_path):
    generate = _load("generate_tuning", os.path.join(_TUNING, "generate.py"))
    generate.main(tmp_path)
    for name in os.listdir(tmp_path):
        mine, theirs = tmp_path / name, os.path.join(_TUNING, name)
        for listing in ("train.txt", "test.txt"):
            assert filecmp.cmp(mine / listing, os.path.join(theirs, listing), shallow=False)
        if (mine / "instances").is_dir():
            files = sorted(os.listdir(mine / "instances"))
            assert files == sorted(os.listdir(os.path.join(theirs, "instances")))
            _, mismatch, errors = filecmp.cmpfiles(mine / "instances", os.path.join(theirs, "instances"),
                                                   files, shallow=False)
            assert not mismatch and not errors


def test_paired_summary_pairs_only_seeds_both_tools_finished(harness):
    rows = [{"seed": s, "tool": t, "test": c, "runs": 100}
            for s, t, c in [(1, "irace", 2.0), (1, "racer", 1.0), (2, "irace", 4.0),
                            (2, "racer", 7.0), (3, "irace", 3.0), (3, "racer", None)]]
    got = harness.paired_summary(rows)
    assert got["pairs"] == 2 and got["wins"] == 1
    assert got["diff_mean"] == pytest.approx(1.0)  # (-1 + 3) / 2
    assert got["diff_se"] == pytest.approx(2.0)  # stdev(-1, 3) / sqrt(2)
    assert got["diff_pct"] == pytest.approx(100 * 1.0 / 3.0)
    assert got["racer"]["failed"] == 1 and got["racer"]["worst"] == (7.0, 2)
    assert got["irace"]["mean"] == pytest.approx(3.0) and got["irace"]["worst"] == (4.0, 2)


def test_reuse_reads_rows_by_scenario_tool_seed_and_budget(harness, tmp_path):
    import json

    rows = [{"scenario": "sat-capped", "tool": "irace", "seed": 1, "budget": 300, "test": 2.0},
            {"scenario": "sat-capped", "tool": "racer", "seed": 1, "budget": 300, "test": 3.0},
            {"scenario": "sat-capped", "tool": "irace", "seed": 1, "budget": 300, "test": 5.0}]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    got = harness.read_reused(str(path))
    assert set(got) == {("sat-capped", "irace", 1, 300), ("sat-capped", "racer", 1, 300)}
    assert got["sat-capped", "irace", 1, 300]["test"] == 5.0  # the last row of a key wins
    assert ("sat-capped", "racer", 1, 150) not in got  # another budget is run, not reused
    assert harness.read_reused(None) == {}


_NEEDS = {"sat-cadical": "pysat", "sat-capped": "pysat", "mip-mkp": "highspy", "mip-gap": "highspy",
          "bbob-cma": "cma", "pbo-deap": "deap", "ml-sklearn": "sklearn"}


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
def test_target_runner_prints_one_number_its_seed_fixes(harness, name):
    pytest.importorskip(_NEEDS[name])
    if name in ("bbob-cma", "pbo-deap"):
        pytest.importorskip("ioh")
    folder = os.path.join(_TUNING, name)
    sc = read_scenario(os.path.join(folder, "scenario.txt"))
    switches = harness.default_switches(harness.SUITE[name])
    instance = read_instances(sc, "test")[0].name
    runner = [sys.executable, os.path.join(folder, "target-runner"), "1", "1"]

    def cost(seed, extra=()):
        out = subprocess.run(runner + [str(seed), instance, *extra, *switches],
                             capture_output=True, text=True, check=True, cwd=folder).stdout.split()
        # sat-capped prints `cost time` (capping needs the time): the time, at most the
        # cut-off of 10, is the cost unless the run was cut off (cost PAR10 = 100).
        assert len(out) == (2 if name == "sat-capped" else 1)
        if name == "sat-capped":
            assert float(out[1]) <= 10 and float(out[0]) in (float(out[1]), 100.0)
        return float(out[0])

    first = cost(7)
    assert math.isfinite(first) and cost(7) == first
    assert cost(7, ["1000"]) == first or name == "sat-capped"  # an irace bound before the switches
    bad = subprocess.run(runner + ["7", instance, "--no-such-switch", "1"], capture_output=True, text=True)
    assert bad.returncode == 1 and "target-runner:" in bad.stderr
