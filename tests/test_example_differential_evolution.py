"""examples/differential-evolution/race_de.py, the README's race from Python, on a tiny
configuration: imported by path here, run as a script where it matters (workers, --help)."""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

from racer.storage import read_journal

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "differential-evolution" / "race_de.py"


def _load():
    spec = importlib.util.spec_from_file_location("race_de", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    # No worker can import `race_de` by name; send its objective by value, as for __main__.
    cloudpickle.register_pickle_by_value(module)
    return module


demo = _load()

TINY = ["--candidates", "4", "--seeds", "1", "--budget", "40", "--maxiter", "3", "--n-jobs", "1",
        "--first-test", "3", "--quiet"]


def test_test_functions_have_their_minimum_zero_at_the_known_point():
    for name, (func, _half) in demo.FUNCTIONS.items():
        x_star = np.ones(4) if name == "rosenbrock" else np.zeros(4)
        assert func(x_star) == pytest.approx(0.0, abs=1e-12), name
        # vectorized: columns are points
        pop = np.column_stack([x_star, x_star + 0.5])
        values = func(pop)
        assert values.shape == (2,) and values[1] > 0, name
    assert demo.rastrigin(np.array([1.0, 0.0])) == pytest.approx(1.0)
    assert demo.ackley(np.array([1.0, 1.0])) == pytest.approx(3.6253849384403627)


def test_evaluate_is_log10_gap_and_deterministic():
    cand = demo.make_candidates()[0]
    a = demo.evaluate_de(cand, ("sphere", 2, 0), maxiter=3)
    assert a == demo.evaluate_de(cand, ("sphere", 2, 0), maxiter=3)
    assert -12.0 <= a < 3.0 and math.isfinite(a)
    assert len(demo.make_candidates()) == 24 and len(demo.make_instances(2)) == 20


@pytest.mark.parametrize("test_name", ["posterior-best", "frace"])
def test_tiny_demo_runs_journals_and_resumes(tmp_path, capsys, test_name):
    storage = str(tmp_path / "demo.sqlite")
    args = TINY + ["--storage", storage, "--test", test_name]
    first = demo.main(args)
    out = capsys.readouterr().out
    assert "Winner: strategy=" in out and "Race over 4 candidates" in out
    # Cost against all 10 instances (1 seed x 5 functions x 2 dimensions), not only those raced.
    share = round(100 * first.n_evaluations / (4 * 10))
    assert f"{first.n_evaluations} evaluations: {share}% of running all 4 candidates on all 10 instances" in out
    assert first.n_instances_available == 10
    assert first.n_evaluations <= 40 and first.best in demo.make_candidates()[:4]
    assert len(read_journal(storage)["evaluations"]) == first.n_evaluations
    again = demo.main(args)  # resumes: same result without evaluating anything
    assert again.history == first.history
    np.testing.assert_array_equal(again.scores, first.scores)
    with pytest.raises(SystemExit, match=r"holds a race with other settings\. To start over: add "
                                          r"--fresh .*\n  --maxiter: journal 3, now 4$"):
        demo.main(args + ["--maxiter", "4"])  # other settings: refused, --fresh first


@pytest.mark.slow
def test_help_documents_the_options():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("usage: race_de.py")
    for option in ("--storage", "--fresh", "--budget", "--n-jobs", "--test", "--seed"):
        assert option in out


@pytest.mark.slow
def test_runs_as_a_script_with_worker_processes(tmp_path):
    # Run as a script, the objective is __main__._Evaluate: it reaches the workers by value.
    storage = tmp_path / "demo.sqlite"
    args = TINY + ["--n-jobs", "2"]  # the last --n-jobs counts
    done = subprocess.run([sys.executable, str(SCRIPT), *args, "--storage", str(storage)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Winner: strategy=" in done.stdout
    assert len(read_journal(str(storage))["evaluations"]) > 0


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--first-test", "11", "--budget", "100"], r"`first_test`=11 but the race has only 10 instances"),
        (["--seeds", "0"], r"--seeds must be >= 1; got 0"),
        (["--candidates", "0"], r"--candidates must be between 1 and 24; got 0"),
        (["--candidates", "25"], r"--candidates must be between 1 and 24; got 25"),
        (["--maxiter", "0"], r"--maxiter must be >= 1"),
        (["--budget", "10"], r"`budget`=10 cannot pay for the first block"),
        (["--n-jobs", "0"], r"`n_jobs` must be a positive number"),
    ],
)
def test_bad_options_are_refused_not_clamped(capsys, extra, match):
    with pytest.raises(SystemExit) as info:
        demo.main(TINY + ["--storage", "none"] + extra)
    message = str(info.value.code) if info.value.code not in (0, 2) else capsys.readouterr().err
    assert info.value.code != 0
    assert re.search(match, message), message


def test_fresh_never_deletes_a_foreign_file_or_a_live_journal(tmp_path):
    import sqlite3

    from racer import Race

    foreign = tmp_path / "app.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(SystemExit, match="will not delete"):
        demo.main(TINY + ["--storage", str(foreign), "--fresh"])
    assert foreign.exists()  # another application's data is left alone

    live = tmp_path / "live.sqlite"
    holder = Race([1, 2], storage=str(live), random_state=0)  # holds the journal's lock
    with pytest.raises(SystemExit, match="will not delete"):
        demo.main(TINY + ["--storage", str(live), "--fresh"])
    assert live.exists()
    holder.close()
    demo.main(TINY + ["--storage", str(live), "--fresh"])  # released: starts afresh
