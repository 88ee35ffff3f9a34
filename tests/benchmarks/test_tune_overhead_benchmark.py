"""Smoke test of benchmarks/tune_overhead.py: both sides tune alike, and the table reads."""

import importlib.util
import os

import pytest

from _helpers import ROOT


@pytest.fixture(scope="module")
def bench():
    path = os.path.join(ROOT, "benchmarks", "tune_overhead.py")
    spec = importlib.util.spec_from_file_location("tune_overhead", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_the_command_line_and_racer_tune_make_the_same_runs(bench, tmp_path):
    # The benchmark compares times only if both make the same tuning: same elites, same runs.
    _, _, cli_elites, cli_runs = bench.run_cli(str(tmp_path / "cli"), 60, 1)
    _, _, tune_elites, tune_runs = bench.run_tune(str(tmp_path / "tune"), 60, 1)
    assert cli_elites == tune_elites and cli_runs == tune_runs > 0


@pytest.mark.slow
def test_quick_mode_prints_one_row_per_n_jobs_with_the_same_tunings(bench, capsys):
    bench.main_(["--quick"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [r.split("|")[1].strip() for r in rows] == ["n_jobs", "1", "2"]
    assert [r.split("|")[3].strip() for r in rows[1:]] == ["yes", "yes"]
