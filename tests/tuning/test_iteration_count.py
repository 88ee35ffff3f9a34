"""The number of iterations, said once and the same everywhere.

irace's ``nbIterations`` is an estimate; with ``nbIterations = 0`` an iterated race goes on
past it while budget is left. The header announces the plan, the progress line counts against
it and says when a run goes beyond it, and the end of the run names both numbers.
"""

import csv
import json
import re

import pytest

from racer.progress import iteration_text, iterations_done_text

from _helpers.cli import make_scenario
from _helpers.terminal import Stream



@pytest.mark.slow
def test_a_cli_run_beyond_the_plan_says_so_everywhere(tmp_path, capsys):
    from racer.cli import EXIT_OK, main

    # 3 parameters: irace's estimate is floor(2 + log2(3)) = 3 iterations; budget 100 (at
    # least irace's minimum, 96: irace's schedule) pays for a fourth one on this scenario.
    scen = make_scenario(tmp_path, budget=100)
    assert main(["--scenario", scen]) == EXIT_OK
    captured = capsys.readouterr()
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    planned, done = results["iterations_planned"], results["iterations"]
    assert planned == 3 and done > planned  # the case of the issue
    with open(tmp_path / "arena" / "runs.csv") as f:
        raced = {r["iteration"] for r in csv.DictReader(f)} - {"0"}  # 0: the test phase
    assert len(raced) == done  # one definition: the races that ran
    assert f"iterated racing, {planned} iterations planned" in captured.out
    said = f"{done} iterations ({planned} planned, {done - planned} more: budget left)"
    assert f"; {said}" in captured.out.splitlines()[
        [k for k, line in enumerate(captured.out.splitlines()) if line.startswith("# Stopped")][0]]
    assert said in captured.err  # the progress bar's final line
    # The report says it in the same words.
    assert f"<td>Iterations</td><td>{said}</td>" in (tmp_path / "arena" / "report.html").read_text()
    # The progress lines count against the plan, never "4/4" or "4/3".
    counts = re.findall(r"iteration (\d+)/(\d+)", captured.err)
    assert counts and all(int(n) == planned and int(k) <= planned for k, n in counts)


def test_the_cli_progress_line_beyond_the_plan():
    from racer import Race
    from racer.tuning.tuner import Configuration
    from racer.racing import KeepAll
    from racer.tuning.output import Progress

    race = Race([Configuration(i + 1, {"x": i}) for i in range(3)], test=KeepAll(),
                first_test=2, instances=range(10), random_state=0)
    for ev in race.ask():
        race.tell(ev, float(ev.candidate.values["x"]))
    stream = Stream(tty=True)
    Progress(stream=stream)({"iteration": 5, "planned": 4, "budget": 40, "experiments": 6}, race)
    assert "iteration 5 (beyond the 4 planned: budget left) | race 1" in stream.getvalue()
    stream = Stream(tty=True)
    Progress(stream=stream)({"iteration": 2, "planned": 4, "budget": 40, "experiments": 6}, race)
    assert "iteration 2/4 | race 1" in stream.getvalue()


@pytest.mark.parametrize("done, planned, text", [
    (4, 4, "4 iterations (as planned)"),
    (5, 4, "5 iterations (4 planned, 1 more: budget left)"),
    (2, 4, "2 iterations (4 planned)"),
])
def test_iterations_done_text(done, planned, text):
    assert iterations_done_text(done, planned) == text


def test_iteration_text_never_exceeds_its_plan():
    assert iteration_text(4, 4) == "iteration 4/4"
    assert iteration_text(6, 4) == "iteration 6 (beyond the 4 planned: budget left)"


@pytest.mark.slow
def test_iterated_race_names_the_same_count_as_its_result(capsys):
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    res = IteratedRace(lambda p, i: (p["x"] - 0.3) ** 2 + 0.01 * i,
                       {"x": FloatDistribution(0, 1)}, list(range(20)), budget=300,
                       n_iterations=2, random_state=0).run()
    final = capsys.readouterr().err.strip().splitlines()[-1]
    # One parameter, n_iterations=2 planned; the count is the result's. An explicit
    # n_iterations is irace's nbIterations, a limit (the shared Tuner stops there, as irace).
    assert f"done: {iterations_done_text(res.n_iterations, 2)} |" in final
    assert res.n_iterations == 2 and res.n_evaluations < 300
