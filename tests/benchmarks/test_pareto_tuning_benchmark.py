"""Smoke test of benchmarks/pareto_tuning.py: its hypervolume is the 2-D hypervolume
computed by hand, its fronts are non-dominated, the two-objective runner prints the same numbers
in this process, as a script and through its server, and a tiny run of the harness measures
what it reports."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from _helpers import ROOT
from _helpers.benchmarks import benchmark_module

_SCENARIO = ROOT / "benchmarks" / "tuning" / "pbo-deap-mo"


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("pareto_tuning") as mod:
        yield mod


def _hv_2d(points, ref):
    """2-D hypervolume of a non-dominated set (minimised), by hand: sorted by the first
    objective, each point adds the slab from its first coordinate to the next point's, of height
    ``ref[1] - its second``."""
    pts = sorted(tuple(p) for p in points if p[0] < ref[0] and p[1] < ref[1])
    xs = [p[0] for p in pts[1:]] + [ref[0]]
    return sum((x_next - x) * (ref[1] - y) for (x, y), x_next in zip(pts, xs))


def test_hypervolume_of_a_three_point_front_is_the_hand_computed_one(bench):
    pytest.importorskip("moocore")
    pts = [[0.1, 0.9], [0.4, 0.35], [0.7, 0.2]]
    ref = (1.1, 1.04)
    # by hand: (0.4-0.1)(1.04-0.9) + (0.7-0.4)(1.04-0.35) + (1.1-0.7)(1.04-0.2) = 0.042 + 0.207 + 0.336
    assert _hv_2d(pts, ref) == pytest.approx(0.585, abs=1e-12)
    # moocore sums the same rectangles in another order: equal up to rounding
    assert bench.hypervolume(pts, reference=ref) == pytest.approx(0.585, abs=1e-12)
    # a dominated point and one beyond the reference point add nothing; no points give 0
    assert bench.hypervolume(pts + [[0.5, 0.5], [1.2, 0.0]], reference=ref) == pytest.approx(0.585, abs=1e-12)
    assert bench.hypervolume([], reference=ref) == 0.0


def test_front_keeps_exactly_the_non_dominated_points(bench):
    rng = np.random.default_rng(3)
    pts = rng.uniform(size=(40, 2))
    got = bench.front(pts)
    for p in pts:
        dominated = np.any(np.all(pts <= p, axis=1) & np.any(pts < p, axis=1))
        assert dominated != any(np.array_equal(p, q) for q in got)


def test_runner_prints_the_same_numbers_in_process_as_a_script_and_through_its_server(bench, tmp_path):
    pytest.importorskip("deap")
    pytest.importorskip("ioh")
    words = ["--evals-per-bit", "3", "--mu", "10", "--mut-rate", "2"]
    argv = ["1", "1", "7", "f8-d49", *words]
    script = [sys.executable, str(_SCENARIO / "target-runner"), *argv]
    plain = subprocess.run(script, capture_output=True, text=True, check=True).stdout.split()
    quality, work = map(float, plain)
    assert 0 <= quality <= 1 and 0 < work <= 3  # stops at its budget (or at the optimum)
    assert bench.run_point(words, "f8-d49", 7) == pytest.approx(bench.WEIGHTED.normalise(quality, work), abs=0)
    with bench.runner_server(tmp_path) as sock:
        env = {**os.environ, "PBO_MO_SERVER": sock}
        served = subprocess.run(script, capture_output=True, text=True, check=True, env=env).stdout.split()
        bad = subprocess.run(script + ["--no-such-switch", "1"], capture_output=True, text=True, env=env)
    assert served == plain
    assert bad.returncode == 1 and "unknown switch" in bad.stderr


def test_weighted_runner_prints_the_weighted_sum_of_the_normalised_objectives(bench, tmp_path):
    pytest.importorskip("deap")
    pytest.importorskip("ioh")
    import shutil

    folder = tmp_path / "sc"
    shutil.copytree(_SCENARIO, folder)
    (folder / "weight.txt").write_text("0.25\n")
    argv = ["1", "1", "7", "f8-d49", "--evals-per-bit", "3", "--mu", "10"]
    q, w = map(float, subprocess.run([sys.executable, str(folder / "target-runner"), *argv],
                                     capture_output=True, text=True, check=True).stdout.split())
    got = float(subprocess.run([sys.executable, str(folder / "target-runner-weighted"), *argv],
                               capture_output=True, text=True, check=True).stdout)
    nq, nw = bench.WEIGHTED.normalise(q, w)
    assert got == pytest.approx(0.25 * nq + 0.75 * nw, rel=1e-12)


def test_irace_first_iteration_is_irace_budget_arithmetic(bench):
    # 3 parameters: 3 iterations; the first gets floor(B / 3) runs, over 5 + 1 instances each
    assert bench.irace_first_iteration(300, 3) == 100 // 6
    assert bench.irace_first_iteration(150, 3) == 50 // 6


def test_a_tiny_run_of_racer_measures_its_front_on_the_test_runs(bench, tmp_path):
    pytest.importorskip("deap")
    pytest.importorskip("ioh")
    pytest.importorskip("moocore")
    out = tmp_path / "r.md"
    bench.main(["--methods", "racer-race", "--budgets", "60", "--seeds", "1", "--test-seeds", "1",
                "--test-instances", "2", "--out", str(out)])
    (row,) = [json.loads(ln) for ln in out.with_suffix(".jsonl").read_text().splitlines()]
    assert row["method"] == "racer-race" and 0 < row["runs"] <= 60
    assert row["raced"] == bench.irace_first_iteration(60, 3) and 1 <= len(row["returned"]) <= row["raced"]
    # every returned configuration's point is its mean over the 2 test instances x 1 seed
    first = row["returned"][0]
    runs = [bench.run_point(first, inst, 1000 + 17 * k) for k, inst in enumerate(bench.held_out_instances()[:2])]
    assert row["points"][0] == pytest.approx(np.mean(runs, axis=0).tolist(), abs=1e-12)
    assert row["hv"] == pytest.approx(_hv_2d(bench.front(row["points"]), bench.REFERENCE), abs=1e-12)
    assert "| racer-race | 1 |" in out.read_text()
