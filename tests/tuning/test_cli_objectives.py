"""The ``racer`` command on several objectives: the ``objectives`` option,
a target-runner printing one number per objective, the racing test, the Pareto set of elites,
the outputs, the bundled two-objective example, and resume after ``kill -9``."""

import json
import os
import shutil
import signal
import subprocess
import sys
import types

import numpy as np
import pytest

import racer
from racer.cli import EXIT_OK, EXIT_SCENARIO, main
from racer.cli._main import UsageError, racing_test
from racer.tuning.tuner import elites_of
from racer.tuning.objectives import crowding_distance, parse_objectives, pareto_elites
from racer.cli.scenario import Instance, ScenarioError, defaults, read_scenario
from racer.cli.target_runner import TargetRunner
from racer.stats.pareto import nondominated_mask

from _helpers import ROOT
from _helpers.cli import ENV, PARAMS_1, make_scenario, racer_command, read_csv, read_runs, wait_for_runs

# Two objectives in conflict: quality is best at x = 1.5, time at x = -1; every x in
# [-1, 1.5] is Pareto-optimal. Each instance shifts quality. With RUNNER_TIME set, the run
# time follows as a third number (maxTime).
RUNNER_2 = """
import os, random, sys
cid, iid, seed, inst = sys.argv[1:5]
opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
with open(os.path.join("pids", str(os.getpid())), "w"):
    pass
rng = random.Random(int(seed) * 1000 + int(cid))
x = float(opts["--x"])
quality = (x - 1.5) ** 2 + float(inst.rsplit("-", 1)[1]) + rng.gauss(0, 0.05)
time = (x + 1) ** 2 + rng.gauss(0, 0.05)
words = [quality, time] + ([os.environ["RUNNER_TIME"]] if os.environ.get("RUNNER_TIME") else [])
if os.environ.get("RUNNER_WORDS"):
    words = words[:int(os.environ["RUNNER_WORDS"])]
print(*words)
"""
OBJECTIVES = 'objectives = c("quality", "time")\n'


# ---------------------------------------------------------------- the option


@pytest.mark.parametrize("text, names, directions", [
    ('objectives = "quality,time"', ("quality", "time"), ("minimize", "minimize")),
    ('objectives = c("quality", "time:max")', ("quality", "time"), ("minimize", "maximize")),
    ('objectives = "a:MAX, b , c:min"', ("a", "b", "c"), ("maximize", "minimize", "minimize")),
])
def test_objectives_are_read_from_the_scenario_in_r_syntax(tmp_path, text, names, directions):
    (tmp_path / "scenario.txt").write_text(text + "\n")
    sc = read_scenario(str(tmp_path / "scenario.txt"))
    got = parse_objectives(sc.values["objectives"])
    assert (got.names, got.directions) == (names, directions)


def test_no_objectives_or_one_minimised_is_the_single_objective_tuning():
    assert parse_objectives(defaults().values["objectives"]) is None
    assert parse_objectives("cost:min") is None


@pytest.mark.parametrize("value, words", [
    ("quality,quality", "named twice"),
    ("quality:best,time", ":min or :max"),
    ("quality,,time", "is not an objective"),
    ("cost:max", "single objective is minimised"),
])
def test_a_bad_objectives_value_is_a_scenario_error_naming_the_option(tmp_path, capsys, value, words):
    scen = make_scenario(tmp_path, extra=f'objectives = "{value}"\n', runner=RUNNER_2, params=PARAMS_1)
    assert main(["--scenario", scen, "--check"]) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert "option objectives" in err and words in err and "scenario.txt:" in err


def test_capping_on_several_objectives_is_refused(tmp_path, capsys):
    scen = make_scenario(tmp_path, extra=OBJECTIVES + "capping = 1\nboundMax = 10\n",
                         runner=RUNNER_2, params=PARAMS_1)
    assert main(["--scenario", scen, "--check"]) == EXIT_SCENARIO
    assert "capping races on the run time alone" in capsys.readouterr().err


def _scenario(objectives="", test_type=""):
    sc = defaults()
    sc.set("objectives", objectives)
    sc.set("testType", test_type)
    return sc


def _args(racing_test=None, sampler="irace"):
    return types.SimpleNamespace(racing_test=racing_test, sampler=sampler)


def test_the_racing_test_of_several_objectives_is_pareto_and_single_ones_are_refused():
    test, _ = racing_test(_args(), _scenario("quality,time"))
    assert type(test).__name__ == "ParetoTest"
    test, _ = racing_test(_args("pareto:credibility=0.95"), _scenario("quality,time"))
    assert test.credibility == 0.95
    with pytest.raises(UsageError, match="compares one cost per run.*--racing-test pareto"):
        racing_test(_args("t-test"), _scenario("quality,time"))
    with pytest.raises(ScenarioError, match="testType = 'F-test' is one of irace's tests"):
        racing_test(_args(), _scenario("quality,time", "F-test"))
    with pytest.raises(UsageError, match="races on several objectives.*--objectives"):
        racing_test(_args("pareto"), _scenario())
    with pytest.raises(UsageError, match="--sampler optuna"):
        racing_test(_args(sampler="optuna"), _scenario("quality,time"))
    # One objective: as before (racer's default t-test).
    assert type(racing_test(_args(), _scenario())[0]).__name__ == "TRaceTest"


# ---------------------------------------------------------------- the target-runner


def _runner(tmp_path, line, need_time=False, objectives="quality,time:max"):
    return TargetRunner([sys.executable, "-c", f"print({line!r})"], str(tmp_path),
                        need_time=need_time, objectives=parse_objectives(objectives))


@pytest.mark.slow
def test_the_runner_answers_one_number_per_objective_then_the_time(tmp_path):
    res = _runner(tmp_path, "3.5 12").run(4, 2, 7, Instance("inst-2"), [])
    assert (res.status, res.objectives, res.cost, res.time) == ("ok", (3.5, 12.0), 3.5, None)
    res = _runner(tmp_path, "3.5 12 0.25", need_time=True).run(4, 2, 7, Instance("inst-2"), [])
    assert (res.status, res.objectives, res.time) == ("ok", (3.5, 12.0), 0.25)


@pytest.mark.parametrize("line, need_time, words", [
    ("3.5", False, "'3.5' (1 word); expected 2 numbers (quality time), optionally then the run time"),
    ("3.5 1 2 4", False, "(4 words); expected 2 numbers"),
    ("3.5 abc", False, "expected 2 numbers"),
    ("3.5 12", True, "maxTime needs the time of each run"),
    ("nan 12", False, "returned 'nan' for the objective quality"),
    ("3.5 inf", False, "better than any value"),  # time is maximised: inf is no measurement
])
@pytest.mark.slow
def test_a_wrong_answer_names_the_output_the_configuration_and_the_instance(tmp_path, line, need_time, words):
    res = _runner(tmp_path, line, need_time).run(4, 2, 7, Instance("inst-2"), [])
    assert res.status == "error" and res.objectives is None
    assert "configuration 4 on instance inst-2" in res.message and words in res.message
    if "word" in words:
        assert repr(line) in res.message  # the runner's own output


@pytest.mark.slow
def test_the_worst_value_of_an_objective_rejects_the_configuration(tmp_path):
    for line in ("inf 3", "1 -inf"):  # quality minimised, time maximised
        res = _runner(tmp_path, line).run(1, 1, 1, Instance("i"), [])
        assert res.status == "inf" and "configuration rejected" in res.message


# ---------------------------------------------------------------- the Pareto set of elites


def test_crowding_thins_a_front_keeping_its_ends_and_spread():
    # Nine points on the front y = 1 - x, six of them bunched near x = 0.5 (larger is better).
    x = np.array([0.0, 0.45, 0.47, 0.5, 0.52, 0.55, 0.57, 0.75, 1.0])
    points = np.column_stack([x, 1 - x])
    chosen = pareto_elites(np.arange(9) + 10, points, cap=4)
    assert sorted(chosen.tolist())[0] == 10 and sorted(chosen.tolist())[-1] == 18  # both ends
    assert len(chosen) == 4 and 17 in chosen  # the lone point at 0.75 stays
    # Ranked by crowding among the kept: the two ends (infinite distance) first.
    assert set(chosen[:2].tolist()) == {10, 18}
    kept = points[chosen - 10]
    distance = crowding_distance(kept).tolist()
    assert distance == sorted(distance, reverse=True)
    # One point of the bunch stays, not two.
    assert sum(0.4 < v < 0.6 for v in kept[:, 0]) == 1
    # A front no larger than the cap is kept whole.
    assert sorted(pareto_elites(np.array([3, 5]), points[:2], cap=4).tolist()) == [3, 5]


def test_elites_of_a_race_on_two_objectives_are_its_non_dominated_survivors():
    # Candidates on a trade-off, plus dominated ones; KeepAll: every one survives the race.
    means = {0: (0.0, 4.0), 1: (1.0, 2.0), 2: (2.0, 1.0), 3: (4.0, 0.0), 4: (3.0, 3.0),
             5: (2.5, 2.5), 6: (1.2, 2.1)}

    def evaluate(c, i):
        noise = np.random.default_rng([c, i]).normal(0, 0.01, 2)
        return tuple(np.add(means[c], noise))

    res = racer.race(evaluate, list(means), range(8), direction=["minimize", "minimize"],
                     test=racer.KeepAll(), random_state=0, progress=False)
    elites = elites_of(res, 3, ("minimize", "minimize"))
    assert len(elites) == 3 and {0, 3} <= set(elites)  # the ends of the front
    assert set(elites) <= {0, 1, 2, 3}  # no dominated candidate is an elite
    # Every elite is non-dominated among all candidates' mean vectors.
    mask = nondominated_mask(-res.mean_objective_scores)
    assert all(mask[c] for c in elites)
    # With one objective, irace's rule: the best survivors, in the race's order.
    assert elites_of(res, 2, None) == res.survivors[:2]


# ---------------------------------------------------------------- end to end

slow = pytest.mark.slow  # target-runner subprocesses


@slow
def test_a_tuning_on_two_objectives_keeps_and_tests_a_pareto_front(tmp_path, capsys):
    scen = make_scenario(tmp_path, extra=OBJECTIVES, runner=RUNNER_2, params=PARAMS_1, budget=90)
    assert main(["--scenario", scen, "--parallel", "2", "--no-report"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "test ParetoTest (racer's default for 2 objectives, pareto)" in out
    assert "# Pareto front:" in out and "quality (min)  time (min)" in out
    assert "# Testing of the Pareto front: mean on 4 test instances" in out
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    assert results["objectives"] == {"names": ["quality", "time"], "directions": ["minimize", "minimize"]}
    front = results["pareto_front"]
    assert [str(e["id"]) for e in results["elites"]] == list(front)
    xs = [e["values"]["x"] for e in results["elites"]]
    means = np.array([[front[k]["mean"]["quality"], front[k]["mean"]["time"]] for k in front])
    assert nondominated_mask(-means).all()  # no elite dominates another on its means
    # The objectives conflict between x = -1 and 1.5: the elites span part of that range,
    # and none lies outside it by much (there it would be dominated).
    assert max(xs) - min(xs) > 0.5 and all(-1.6 < x < 2.1 for x in xs)
    # The test phase ran every elite of the front on every test instance.
    test_rows = read_csv(tmp_path / "arena" / "test.csv")
    assert {r["configuration"] for r in test_rows} == set(front)
    assert len(test_rows) == 4 * len(front) and "cost.time" in test_rows[0]
    assert set(results["test"]) == set(front) and set(results["test"][next(iter(front))]["mean"]) == {"quality", "time"}
    # runs.csv: cost is the first objective, one column per objective follows.
    runs = [r for r in read_runs(tmp_path) if r["status"] == "ok"]
    assert runs and all(r["cost"] == r["cost.quality"] and r["cost.time"] for r in runs)
    # The journal knows its objectives: other ones are refused, naming the change.
    assert main(["--scenario", scen, "--objectives", "quality,time:max"]) == EXIT_SCENARIO
    assert "objectives: quality,time -> quality,time:max" in capsys.readouterr().err


@slow
def test_max_time_reads_the_time_after_the_objectives(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RUNNER_TIME", "0.5")
    scen = make_scenario(tmp_path, extra=OBJECTIVES + "maxTime = 40\n",
                         runner=RUNNER_2, params=PARAMS_1, budget=0)
    assert main(["--scenario", scen, "--no-report"]) == EXIT_OK
    runs = [r for r in read_runs(tmp_path) if r["iteration"] != "0"]
    assert runs and {r["time"] for r in runs} == {"0.5"}
    assert len(runs) <= 40 / 0.5


@slow
def test_a_runner_printing_one_number_stops_the_tuning_naming_its_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RUNNER_WORDS", "1")
    scen = make_scenario(tmp_path, extra=OBJECTIVES, runner=RUNNER_2, params=PARAMS_1)
    assert main(["--scenario", scen, "--no-report"]) == 3
    err = capsys.readouterr().err
    assert "configuration 1 on instance" in err and "expected 2 numbers (quality time)" in err


@slow
def test_the_bundled_two_objective_example_runs_end_to_end(tmp_path, capsys):
    dest = tmp_path / "examples"
    for name in ("tsp-sa", "tsp-sa-two-objectives"):
        shutil.copytree(ROOT / "examples" / name, dest / name, ignore=shutil.ignore_patterns("arena"))
        (dest / name / "arena").mkdir()
    scen = str(dest / "tsp-sa-two-objectives" / "scenario.txt")
    # A tiny budget (racer's small-budget plan) and a short run: steps at most 2000.
    params = dest / "tsp-sa-two-objectives" / "parameters.txt"
    params.write_text(params.read_text().replace("(100, 20000)", "(100, 2000)"))
    assert main(["--scenario", scen, "--max-experiments", "60", "--parallel", "2",
                 "--no-report"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "length (min)  steps (min)" in out and "Testing of the Pareto front" in out
    results = json.loads((dest / "tsp-sa-two-objectives" / "arena" / "results.json").read_text())
    assert results["experiments"] <= 60 and results["pareto_front"]
    for cid, entry in results["pareto_front"].items():
        elite = next(e for e in results["elites"] if str(e["id"]) == cid)
        assert entry["mean"]["steps"] == elite["values"]["steps"]  # the runner prints its steps


@slow
@pytest.mark.skipif(sys.platform != "linux", reason="kill -9 of a process group")
def test_kill_9_of_a_tuning_on_two_objectives_resumes_to_the_same_front(tmp_path):
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    ref_dir.mkdir()
    run_dir.mkdir()
    ref = make_scenario(ref_dir, extra=OBJECTIVES, runner=RUNNER_2, params=PARAMS_1, budget=60)
    scen = make_scenario(run_dir, extra=OBJECTIVES, runner=RUNNER_2, params=PARAMS_1, budget=60)
    assert main(racer_command(ref)[3:] + ["--no-report"]) == EXIT_OK
    proc = subprocess.Popen(racer_command(scen, "--no-report"), env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_for_runs(run_dir, 25, proc), "racer ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    killed = len(read_runs(run_dir))
    again = subprocess.run(racer_command(scen, "--no-report"), env=ENV, capture_output=True,
                           text=True, timeout=180)
    assert again.returncode == 0, again.stderr
    for name in ("elites.txt", "test.csv"):
        assert (run_dir / "arena" / name).read_text() == (ref_dir / "arena" / name).read_text()
    ref_res = json.loads((ref_dir / "arena" / "results.json").read_text())
    res = json.loads((run_dir / "arena" / "results.json").read_text())
    assert res["pareto_front"] == ref_res["pareto_front"]
    used = [r for r in read_runs(run_dir) if r["status"] != "speculative-unused"]
    ref_used = [r for r in read_runs(ref_dir) if r["status"] != "speculative-unused"]
    assert 25 <= killed and len(ref_used) <= len(used) <= len(ref_used) + 2


@slow
def test_a_tuning_on_two_objectives_continued_with_a_larger_budget_reuses_test_runs(tmp_path, capsys):
    scen = make_scenario(tmp_path, extra=OBJECTIVES, runner=RUNNER_2, params=PARAMS_1, budget=60)
    assert main(["--scenario", scen, "-q", "1", "--no-report"]) == EXIT_OK
    first = json.loads((tmp_path / "arena" / "results.json").read_text())
    first_tests = {cid: entry["costs"] for cid, entry in first["test"].items()}
    assert main(["--scenario", scen, "-q", "1", "--no-report", "--max-experiments", "120"]) == EXIT_OK
    second = json.loads((tmp_path / "arena" / "results.json").read_text())
    assert second["experiments"] > first["experiments"]
    # Every elite of the new front is tested; one tested before keeps its runs (every
    # objective), taken from the earlier test journal instead of run again.
    assert set(second["test"]) == set(second["pareto_front"])
    kept = set(first_tests) & set(second["test"])
    for cid in kept:
        assert second["test"][cid]["costs"] == first_tests[cid]
    test_runs = [r for r in read_runs(tmp_path) if r["iteration"] == "0"]
    assert len(test_runs) == 4 * len(set(first_tests) | set(second["test"]))
