"""The ``racer`` command end to end: scenarios, exit codes, iterated racing, a fixed list,
the test phase, outputs, interruption and resume after ``kill -9``."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from racer.cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNNER, EXIT_SCENARIO, main
from racer.tuning.parameters import read_configurations, read_parameters

from _helpers import ROOT
from _helpers.cli import (ENV, PARAMS_1, make_scenario, racer_command, read_csv, read_runs,
                          wait_for_runs)
from _helpers.processes import pids_alive

pytestmark = pytest.mark.slow  # subprocesses, worker processes: `pytest -m "not slow"` skips them


def test_iterated_run_outputs_and_budget(tmp_path, capsys):
    scen = make_scenario(tmp_path)
    assert main(["--scenario", scen, "--parallel", "2"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "# Best configurations as commandlines" in out
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    runs = read_runs(tmp_path)
    # Look-ahead runs the races did not use are marked and are not experiments.
    tuning = [r for r in runs if r["iteration"] != "0" and r["status"] != "speculative-unused"]
    assert len(tuning) == results["experiments"] <= 90
    assert {r["iteration"] for r in tuning} >= {"1", "2"}  # more than one iteration ran
    # The elites file is an irace configurations file of valid configurations, best first.
    space = read_parameters(str(tmp_path / "parameters.txt"))
    elites = read_configurations(str(tmp_path / "arena" / "elites.txt"), space)
    assert [e["mode"] for e in elites][:1] == [results["elites"][0]["values"]["mode"]]
    best = results["elites"][0]["values"]
    # The winner is better than what uniform sampling gives on average: x within 1.5 of 1.5
    # (uniform on [-5, 5] gets there 30% of the time) and mode a.
    assert best["mode"] == "a" and abs(best["x"] - 1.5) < 1.5
    # Test phase: the best elite on each of the 4 test instances, logged as iteration 0.
    test_runs = [r for r in runs if r["iteration"] == "0"]
    assert len(test_runs) == 4 and {r["instance"] for r in test_runs} == {f"test-{i}" for i in range(1, 5)}
    assert str(results["elites"][0]["id"]) in results["test"]
    # Every new configuration after the first iteration names its parent (an earlier elite).
    assert all(e["parent"] is None or e["parent"] < e["id"] for e in results["elites"])


def test_fixed_list_races_exactly_the_given_configurations(tmp_path, capsys):
    scen = make_scenario(tmp_path, extra='configurationsFile = "configs.txt"\n', budget=60)
    (tmp_path / "configs.txt").write_text(
        "mode x pen\n" + "".join(f"a {x} NA\n" for x in (-4, -2, 0, 1.4, 3, 5)) + "b 1.5 4\n")
    assert main(["--scenario", scen, "--fixed-list"]) == EXIT_OK
    runs = read_runs(tmp_path)
    tuning = [r for r in runs if r["iteration"] == "1"]
    assert {r["configuration"] for r in tuning} == {str(i) for i in range(1, 8)}
    assert len(tuning) <= 60
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    assert results["elites"][0]["values"] == {"mode": "a", "x": 1.4, "pen": None}
    # Everything far from the optimum was eliminated before the end.
    eliminated = {row["configuration"] for row in read_csv(tmp_path / "arena" / "eliminations.csv")}
    assert {"1", "6"} <= eliminated


def test_bad_scenarios_exit_2_naming_file_line_and_option(tmp_path, capsys):
    scen = make_scenario(tmp_path, extra="firstTest = 'five'\n")
    assert main(["--scenario", scen]) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert f"{scen}:11: option firstTest: expected a number" in err
    with open(scen) as f:
        text = f.read().replace("firstTest = 'five'", "")
    with open(scen, "w") as f:
        f.write(text)
    assert main(["--scenario", scen, "--first-test", "4", "--each-test", "3"]) == EXIT_SCENARIO
    assert "firstTest = 4 must be a multiple of eachTest = 3" in capsys.readouterr().err
    (tmp_path / "parameters.txt").write_text('x "--x " r (1, 0)\n')
    assert main(["--scenario", scen, "--first-test", "5"]) == EXIT_SCENARIO
    assert f"{tmp_path / 'parameters.txt'}:1: x: lower bound 1 > upper bound 0" in capsys.readouterr().err
    assert main(["--scenario", str(tmp_path / "nope.txt")]) == EXIT_SCENARIO
    assert "scenario file not found" in capsys.readouterr().err


def test_too_small_budget_is_a_scenario_error(tmp_path, capsys):
    # Below the floor of racer's small-budget plan (2 configurations x 6 instances) ...
    scen = make_scenario(tmp_path, budget=11)
    assert main(["--scenario", scen]) == EXIT_SCENARIO
    assert "maxExperiments = 11 is too small: racer races at least 2" in capsys.readouterr().err
    # ... and below irace's minimum when the scenario asks for irace's procedure.
    scen = make_scenario(tmp_path / "irace", budget=20, extra='testType = "F-test"\n')
    assert main(["--scenario", scen]) == EXIT_SCENARIO
    assert "maxExperiments = 20 is too small: irace would need at least 96" in capsys.readouterr().err


def test_unimplemented_options_are_named_in_a_warning(tmp_path, capsys):
    scen = make_scenario(tmp_path, extra="aclib = 1\nsoftRestart = 0\ntargetEvaluator = \"./ev\"\n")
    assert main(["--scenario", scen, "--check"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "not implemented by racer, ignored: aclib = True" in err
    assert "not implemented by racer, ignored: targetEvaluator = " in err
    assert "softRestart" not in err  # implemented: turning it off is honoured, not warned


def test_check_shows_the_exact_command(tmp_path, capsys):
    scen = make_scenario(tmp_path)
    assert main(["--scenario", scen, "--check"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"{tmp_path / 'target-runner'} 1 1 " in out and "inst-1 --mode " in out and "OK: cost" in out


def test_failing_runner_exits_3_with_command_and_output(tmp_path, capsys, monkeypatch):
    scen = make_scenario(tmp_path)
    monkeypatch.setenv("RUNNER_FAIL", "2")
    assert main(["--scenario", scen]) == EXIT_RUNNER
    err = capsys.readouterr().err
    assert "exited with status 3" in err and "solver crashed" in err
    assert f"{tmp_path / 'target-runner'} 2 " in err
    # Under --on-error reject, configuration 2 is rejected and the tuning goes on (a fresh
    # journal: the failing runs of the first attempt are not in it).
    assert main(["--scenario", scen, "--on-error", "reject", "--fresh"]) == EXIT_OK
    elim = read_csv(tmp_path / "arena" / "eliminations.csv")
    assert any(r["configuration"] == "2" and r["reason"] == "failed" for r in elim)


def test_init_writes_a_working_scenario(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--init"]) == EXIT_OK
    assert main(["--init"]) == EXIT_SCENARIO  # never overwrites
    runner = tmp_path / "target-runner"
    assert runner.read_text().startswith(f"#!{sys.executable}")
    assert main(["--check"]) == EXIT_OK  # ./scenario.txt is the default


def test_kill_9_then_the_same_command_resumes_with_the_same_elites(tmp_path):
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    ref_dir.mkdir()
    run_dir.mkdir()
    ref = make_scenario(ref_dir, budget=60, params=PARAMS_1)
    scen = make_scenario(run_dir, budget=60, params=PARAMS_1)
    assert main(racer_command(ref)[3:]) == EXIT_OK
    proc = subprocess.Popen(racer_command(scen), env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_for_runs(run_dir, 25, proc), "racer ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # racer and its runners, at once
    finally:
        proc.wait(timeout=30)
    # No runner outlives racer, although runners live in sessions of their own.
    deadline = time.monotonic() + 5
    while pids_alive(run_dir / "arena" / "pids") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_alive(run_dir / "arena" / "pids") == []
    before = len(read_runs(run_dir))
    again = subprocess.run(racer_command(scen), env=ENV, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert (run_dir / "arena" / "elites.txt").read_text() == (ref_dir / "arena" / "elites.txt").read_text()
    ref_runs, runs = read_runs(ref_dir), read_runs(run_dir)
    # Unused look-ahead runs depend on timing; the runs the races used do not.
    ref_runs = [r for r in ref_runs if r["status"] != "speculative-unused"]
    runs = [r for r in runs if r["status"] != "speculative-unused"]
    # At most the in-flight runs (2 workers) are repeated after the kill.
    assert len(ref_runs) <= len(runs) <= len(ref_runs) + 2
    assert 25 <= before < len(runs)
    assert {r["iteration"] for r in ref_runs} >= {"1", "2"}


def test_interrupt_exits_130_and_leaves_no_runner_behind(tmp_path):
    scen = make_scenario(tmp_path)
    env = {**ENV, "RUNNER_DELAY": "0.3"}
    proc = subprocess.Popen(racer_command(scen), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for_runs(tmp_path, 3, proc)
        time.sleep(0.1)  # runners in flight now
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert "interrupted; run the same command again to resume" in err
    deadline = time.monotonic() + 5
    while pids_alive(tmp_path / "arena" / "pids") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_alive(tmp_path / "arena" / "pids") == []


def test_an_interrupt_lost_in_a_finaliser_still_stops_the_run(tmp_path, monkeypatch, capsys):
    # CPython prints and drops a KeyboardInterrupt raised while a finaliser runs, so the
    # signal handlers also set racer.tuning.dispatch.INTERRUPTED, which the dispatcher polls.
    # Here the flag is set with no exception at all (the worst case): the run must still end
    # as interrupted (130), not finish its budget and exit 0.
    import threading

    from racer.tuning import dispatch

    scen = make_scenario(tmp_path)
    monkeypatch.setenv("RUNNER_DELAY", "0.2")

    def set_flag_after_three_runs():
        deadline = time.monotonic() + 30
        path = tmp_path / "arena" / "runs.csv"
        while time.monotonic() < deadline:
            if path.exists() and len(path.read_text().splitlines()) > 3:
                break
            time.sleep(0.02)
        dispatch.INTERRUPTED.set()

    t = threading.Thread(target=set_flag_after_three_runs)
    t.start()
    try:
        code = main(["--scenario", scen, "--parallel", "2", "--quiet", "1", "--no-report"])
    finally:
        t.join()
        dispatch.INTERRUPTED.clear()
    assert code == EXIT_INTERRUPTED
    assert "interrupted; run the same command again to resume" in capsys.readouterr().err
    assert len(read_runs(tmp_path)) < 90  # it stopped early, not at the end of its budget


HOT_JOURNAL = """
import os, signal, sqlite3
from racer import KeepAll, Race
race = Race([1, 2, 3], test=KeepAll(), instances=range(50), storage="j.sqlite", random_state=0)
for ev in race.ask():
    race.tell(ev, float(ev.candidate))
race.close()
# Die in the middle of a write in rollback mode (as a kill during close() can): a hot journal.
conn = sqlite3.connect("j.sqlite", isolation_level=None)
conn.execute("PRAGMA cache_size = 1")
conn.execute("BEGIN")
for i in range(5000):
    conn.execute("INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?, ?)", (i, i, 1.0, None))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_journal_killed_mid_write_still_resumes(tmp_path):
    # Found by the kill -9 test above: the read-only inspection of a journal with a hot
    # rollback journal failed ("attempt to write a readonly database") and racer refused to
    # resume. The writer rolls the hot journal back and gets the 15 committed evaluations.
    from racer.storage import Journal

    proc = subprocess.run([sys.executable, "-c", HOT_JOURNAL], cwd=tmp_path, env=ENV, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "j.sqlite-journal").exists()
    journal = Journal(str(tmp_path / "j.sqlite"))
    try:
        assert len(journal.load_evaluations()) == 15
    finally:
        journal.close()


def test_bundled_example_scenario_checks(tmp_path, capsys):
    import shutil

    example = os.path.join(ROOT, "examples", "tsp-sa")
    dest = tmp_path / "tsp-sa"
    shutil.copytree(example, dest)
    code = main(["--scenario", str(dest / "scenario.txt"), "--check",
                 "--target-runner-launcher", sys.executable])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "parameters: 6 (6 variable), 1 forbidden rules" in out
    assert "training instances: 16; test instances: 8; initial configurations: 1" in out
    assert "--move 2opt --t0 1 --cooling 0.995 --effort medium --restarts 0" in out


def test_max_time_budget(tmp_path, capsys, monkeypatch):
    scen = make_scenario(tmp_path)
    args = ["--scenario", scen, "--max-experiments", "0", "--max-time", "45", "--parallel", "2"]
    assert main(args) == EXIT_RUNNER  # the runner reports no time
    assert "maxTime needs the time of each run" in capsys.readouterr().err
    assert main(["--scenario", scen, "--max-time", "45"]) == EXIT_SCENARIO
    assert "set only one of maxExperiments and maxTime" in capsys.readouterr().err
    monkeypatch.setenv("RUNNER_TIME", "0.5")
    assert main(args + ["--fresh"]) == EXIT_OK
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    assert 0.8 * 45 <= results["time_used"] <= 1.1 * 45
    assert results["time_used"] == pytest.approx(0.5 * results["experiments"])


def test_a_max_time_too_small_says_how_many_seconds_in_the_scenarios_words(tmp_path, capsys,
                                                                          monkeypatch):
    scen = make_scenario(tmp_path, budget=0, extra="maxTime = 2\n")
    monkeypatch.setenv("RUNNER_TIME", "0.05")
    assert main(["--scenario", scen]) == EXIT_SCENARIO
    err = capsys.readouterr().err
    # Named where it was set, in the scenario's words, in seconds: not "maxExperiments = 0".
    assert f"{scen}:11: maxTime = 2 s is too small: runs took 0.05 s each" in err
    assert "maxExperiments" not in err and "minNbSurvival" in err
    seconds = float(err.split("give maxTime = ")[1].split(" s or more")[0])
    assert main(["--scenario", scen, "--max-time", str(seconds), "--fresh"]) == EXIT_OK


def test_a_hanging_configuration_is_killed_and_rejected(tmp_path, monkeypatch):
    scen = make_scenario(tmp_path, extra="targetRunnerTimeout = 0.5\n")
    monkeypatch.setenv("RUNNER_HANG", "2")
    code = main(["--scenario", scen, "--parallel", "2", "--first-test", "2", "--on-error", "reject",
                 "--quiet", "1"])
    assert code == EXIT_OK
    # A provisional run of its next instance (a worker was idle) is made but not used.
    hung = [r for r in read_runs(tmp_path)
            if r["configuration"] == "2" and r["status"] != "speculative-unused"]
    assert hung and all(r["status"] == "error" and "timed out after 0.5 s" in r["message"] for r in hung)
    assert len(hung) == 1  # rejected at its first failure, as irace rejects an Inf
    elim = read_csv(tmp_path / "arena" / "eliminations.csv")
    assert any(r["configuration"] == "2" and r["reason"] == "failed" for r in elim)


@pytest.mark.slow
def test_without_a_timeout_a_hanging_run_is_stopped_by_the_outlier_factor(tmp_path, monkeypatch):
    # No targetRunnerTimeout: the run is stopped once it has taken outlier_factor times the
    # median wall time of the runs finished on its instance (racer.tuning.slow_runs), and
    # its configuration is rejected as if the runner had answered Inf; irace's default
    # policy (stop on an error) is not triggered, since the runner did not fail.
    scen = make_scenario(tmp_path)
    monkeypatch.setenv("RUNNER_HANG", "2")
    code = main(["--scenario", scen, "--parallel", "2", "--first-test", "2",
                 "--outlier-factor", "10", "--quiet", "1"])
    assert code == EXIT_OK
    hung = [r for r in read_runs(tmp_path)
            if r["configuration"] == "2" and r["status"] != "speculative-unused"]
    assert len(hung) == 1 and hung[0]["status"] == "inf"
    assert hung[0]["message"].startswith("stopped after") and float(hung[0]["wall"]) < 30
    elim = read_csv(tmp_path / "arena" / "eliminations.csv")
    assert any(r["configuration"] == "2" and r["reason"] == "failed" for r in elim)


IRACE_TRIVIAL = "/usr/lib/R/site-library/irace/examples/target-runner-python/trivial"


@pytest.mark.skipif(not os.path.isdir(IRACE_TRIVIAL), reason="Debian's r-cran-irace is not installed")
def test_irace_bundled_python_example_runs_unchanged(tmp_path, capsys):
    import shutil

    dest = tmp_path / "trivial"
    shutil.copytree(IRACE_TRIVIAL, dest)
    (dest / "target-runner.py").chmod(0o755)
    code = main(["--scenario", str(dest / "scenario.txt"), "--max-experiments", "80",
                 "--parallel", "2", "--quiet", "1"])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    space = read_parameters(str(dest / "parameters.txt"))
    elites = read_configurations(str(dest / "elites.txt"), space)
    assert elites and len(read_runs_at(dest)) <= 80
    # cost = param1 (ptype a) or param2 >= 200 (ptype b): racing finds ptype a.
    assert elites[0]["ptype"] == "a"


def read_runs_at(folder):
    return read_csv(folder / "runs.csv")


def test_optuna_sampler_option(tmp_path, capsys):
    pytest.importorskip("optuna")
    scen = make_scenario(tmp_path)
    assert main(["--scenario", scen, "--sampler", "optuna", "--parallel", "2", "--quiet", "1"]) == EXIT_OK
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    assert results["experiments"] <= 90 and results["iterations"] >= 2
    space = read_parameters(str(tmp_path / "parameters.txt"))
    assert read_configurations(str(tmp_path / "arena" / "elites.txt"), space)


def test_dask_executor_gives_the_same_elites_as_threads(tmp_path, capsys):
    pytest.importorskip("distributed")
    a, b = tmp_path / "threads", tmp_path / "dask"
    a.mkdir()
    b.mkdir()
    scen_a, scen_b = make_scenario(a, budget=60, params=PARAMS_1), make_scenario(b, budget=60, params=PARAMS_1)
    assert main(["--scenario", scen_a, "--parallel", "2", "--quiet", "1"]) == EXIT_OK
    # A real local Dask cluster (2 worker processes): runs are shipped to the workers, results
    # come back as they finish, and the race decides exactly as with threads.
    assert main(["--scenario", scen_b, "--parallel", "2", "--quiet", "1", "--executor", "dask"]) == EXIT_OK
    assert (b / "arena" / "elites.txt").read_text() == (a / "arena" / "elites.txt").read_text()
    used = lambda d: [r for r in read_runs(d) if r["status"] != "speculative-unused"]  # noqa: E731
    assert len(used(b)) == len(used(a))  # unused look-ahead runs depend on timing
    assert main(["--scenario", scen_b, "--executor", "spark"]) == EXIT_SCENARIO
    assert "--executor must be 'threads', 'dask', 'dask:ADDRESS', 'ray' or 'ray:ADDRESS'" in capsys.readouterr().err


def test_a_runner_failing_everywhere_exits_3_even_under_reject(tmp_path, capsys, monkeypatch):
    scen = make_scenario(tmp_path)
    monkeypatch.setenv("RUNNER_FAIL", "all")
    assert main(["--scenario", scen, "--on-error", "reject", "--quiet", "1"]) == EXIT_RUNNER
    err = capsys.readouterr().err
    assert "no configuration could be evaluated" in err and "exited with status 3" in err
