"""The report of a ``racer --scenario`` run: reading an execDir, the iterated-race figures, the
``racer report`` subcommand, the report the CLI writes, and progress of the long front ends."""

import csv
import io
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from racer import plot  # noqa: E402
from racer.cli import EXIT_INTERRUPTED, EXIT_OK, main  # noqa: E402
from racer.tuning.record import (  # noqa: E402
    ParameterInfo, from_iterated_race, normalized, read_exec_dir, read_record,
)
from racer.progress import ProgressBar, redraws_in_place, track  # noqa: E402

from _helpers.chromium import chromium, render_in_chromium  # noqa: E402
from _helpers.cli import ENV, make_scenario, racer_command, wait_for_runs  # noqa: E402
from _helpers.terminal import Stream  # noqa: E402

pytestmark = pytest.mark.slow  # subprocesses, worker processes: `pytest -m "not slow"` skips them


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished CLI run (90 runs, several iterations, a test phase) and its report."""
    tmp = tmp_path_factory.mktemp("cli")
    scen = make_scenario(tmp)
    assert main(["--scenario", scen, "--parallel", "2", "--quiet", "1"]) == EXIT_OK
    return tmp / "arena"


def _runs(arena):
    with open(arena / "runs.csv") as fh:
        # Look-ahead runs the race did not use are no experiments (racer.tuning.lookahead).
        return [r for r in csv.DictReader(fh)
                if r["iteration"] != "0" and r["status"] != "speculative-unused"]


# --------------------------------------------------------------------------- reading an execDir


def test_exec_dir_is_read_from_its_run_record(run_dir):
    run = read_exec_dir(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    runs = _runs(run_dir)
    # Every configuration that ran, sampled in the iteration of its first run.
    first_iteration = {}
    for r in runs:
        first_iteration.setdefault(int(r["configuration"]), int(r["iteration"]))
    assert {c: run.iteration_of[c] for c in first_iteration} == first_iteration
    assert set(first_iteration) <= set(run.configurations)
    assert [p.name for p in run.parameters] == ["mode", "x", "pen"]
    assert run.parameters[2].kind == "ordinal" and run.parameters[1].domain == (-5.0, 5.0)
    # Values as results.json has them (pen is inactive, None, when mode is "a").
    for e in results["elites"]:
        got = run.configurations[e["id"]]
        assert got["mode"] == e["values"]["mode"] and got["pen"] == e["values"]["pen"]
        assert got["x"] == pytest.approx(e["values"]["x"], rel=1e-12)
    assert run.final_elites == [e["id"] for e in results["elites"]]
    # Each iteration's elites as the Tuner recorded them; the last race's are the answer.
    record = read_record(run_dir)
    assert run.elites == {it.iteration: list(it.elites) for it in record.iterations}
    assert run.elites[max(run.elites)] == run.final_elites
    assert run.info["experiments"] == results["experiments"] == len(runs)
    assert set(run.test["costs"]) == {int(k) for k in results["test"]}
    best = str(results["elites"][0]["id"])
    assert run.test["costs"][int(best)] == pytest.approx(results["test"][best]["costs"], rel=1e-12)
    # Races stopped by the CLI's own rules say why (journaled by Race.stop).
    assert all(res.stop_reason not in ("unfinished", "interrupted") for _, _, res in run.races)


def test_read_exec_dir_refuses_what_is_not_one(tmp_path):
    with pytest.raises(NotADirectoryError):
        read_exec_dir(tmp_path / "missing")
    with pytest.raises(ValueError, match="not a racer execDir"):
        read_exec_dir(tmp_path)
    with pytest.raises(TypeError, match="folder path"):
        read_exec_dir(3)


# --------------------------------------------------------------------------- figures


def test_parameter_frequencies_on_a_real_run(run_dir):
    run = read_exec_dir(run_dir)
    fig = plot.plot_parameter_frequencies(run)
    by_title = {ax.get_title().split("\n")[0]: ax for ax in fig.axes if ax.get_title()}
    assert set(by_title) == {"mode", "x", "pen"}
    for it in sorted(set(run.iteration_of.values())):
        new = [c for c, i in run.iteration_of.items() if i == it]
        modes = [run.configurations[c]["mode"] for c in new]
        bars = [p for p in by_title["mode"].patches if p.get_gid() == f"freq-mode-{it}"]
        # One bar per level, at the share of the iteration's configurations with that level.
        assert [b.get_height() for b in bars] == pytest.approx(
            [modes.count("a") / len(modes), modes.count("b") / len(modes)], abs=1e-12)
        (stairs,) = [s for s in by_title["x"].patches if s.get_gid() == f"freq-x-{it}"]
        values, edges = stairs.get_data().values, stairs.get_data().edges
        assert values.sum() == pytest.approx(1.0, abs=1e-12) and edges[0] == -5 and edges[-1] == 5
    # pen is inactive wherever mode is "a": said in its title.
    inactive = sum(v["pen"] is None for v in run.configurations.values())
    assert f"({inactive} of {len(run.configurations)} inactive)" in by_title["pen"].get_title()
    with pytest.raises(ValueError, match="parameters"):
        plot.plot_parameter_frequencies(run, parameters=["nope"])
    with pytest.raises(TypeError, match="parameters"):
        plot.plot_parameter_frequencies(run, parameters="mode")


def test_elite_parallel_coordinates_on_a_real_run(run_dir):
    run = read_exec_dir(run_dir)
    fig = plot.plot_elite_parallel_coordinates(str(run_dir))  # a path works too
    ax = fig.axes[0]
    elite_lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("elite-")]
    assert len(elite_lines) == sum(len(v) for v in run.elites.values())
    (best,) = [ln for ln in ax.lines if ln.get_gid() == f"final-{run.final_elites[0]}"]
    values = run.configurations[run.final_elites[0]]
    y = best.get_ydata()
    assert y[1] == pytest.approx((values["x"] + 5) / 10, abs=1e-12)  # x on [-5, 5]
    assert y[0] == (0.0 if values["mode"] == "a" else 1.0)
    if values["pen"] is None:
        assert y[2] < 0  # drawn on the NA row, below the axis


def _costs_by_configuration(arena, test_phase):
    """runs.csv's costs per configuration: training runs, or (``test_phase``) the test runs in
    instance order."""
    with open(arena / "runs.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if (r["iteration"] == "0") == test_phase
                and r["status"] != "speculative-unused"]
    out = {}
    for r in sorted(rows, key=lambda r: int(r["instance_id"])):
        out.setdefault(int(r["configuration"]), []).append(float(r["cost"]))
    return out


def _points(ax, gid):
    (points,) = [c for c in ax.collections if c.get_gid() == gid]
    return np.asarray(points.get_offsets())[:, 1]


def test_elite_costs_boxes_hold_the_runs_of_a_real_run(run_dir):
    run = read_exec_dir(run_dir)
    train = _costs_by_configuration(run_dir, test_phase=False)
    test = _costs_by_configuration(run_dir, test_phase=True)
    assert len(run.final_elites) >= 2 and test  # the fixture has elites and a test phase
    fig = plot.plot_elite_costs(run)
    left, right = fig.axes
    assert left.get_shared_y_axes().joined(left, right)  # one y axis for both panels
    labels = [t.get_text() for t in left.get_xticklabels()]
    for pos, cid in enumerate(run.final_elites):  # best first, one box each
        ys = _points(left, f"costs-train-{cid}")
        # Every training run of the elite, once each (its later races re-tell cached results).
        assert sorted(ys) == pytest.approx(sorted(train[cid]), rel=1e-12)
        assert labels[pos] == f"#{cid}\n{len(train[cid])} inst."
        (median,) = [ln for ln in left.lines if ln.get_gid() == f"median-train-{cid}"]
        assert median.get_ydata()[0] == pytest.approx(np.median(train[cid]), rel=1e-12)
        assert np.mean(median.get_xdata()) == pytest.approx(pos, abs=1e-12)
    tested = [cid for cid in run.final_elites if cid in test]
    assert [t.get_text().split("\n")[0] for t in right.get_xticklabels()] == [f"#{c}" for c in tested]
    for cid in tested:
        # Test costs in instance order, as runs.csv (iteration 0) and the test journal hold them.
        assert _points(right, f"costs-test-{cid}") == pytest.approx(test[cid], rel=1e-12)
        assert run.test["costs"][cid] == pytest.approx(test[cid], rel=1e-12)
    untested = [f"#{c}" for c in run.final_elites if c not in test]
    assert right.get_title().startswith(f"test instances ({len(run.test['instances'])})")
    title = right.get_title().replace("\n", " ")  # ids wrap three to a line
    assert ("not tested: " + ", ".join(untested) in title) == bool(untested)


def test_elite_costs_of_chosen_configurations_and_without_a_test_phase(run_dir):
    import dataclasses

    run = read_exec_dir(run_dir)
    train = _costs_by_configuration(run_dir, test_phase=False)
    # A configuration eliminated early: only the instances it ran on before its elimination.
    loser = next(c for c in train if c not in run.final_elites)
    fig = plot.plot_elite_costs(dataclasses.replace(run, test=None),
                                elites=[loser, run.final_elites[0]])
    (ax,) = fig.axes
    assert ax.get_title() == "training instances" and ax.get_ylabel() == "cost (lower is better)"
    assert sorted(_points(ax, f"costs-train-{loser}")) == pytest.approx(sorted(train[loser]), rel=1e-12)
    assert len(run.training_costs(loser)) == len(train[loser])
    with pytest.raises(ValueError, match="elites"):
        plot.plot_elite_costs(run, elites=[10_000])
    with pytest.raises(ValueError, match="elites"):
        plot.plot_elite_costs(run, elites=[loser, loser])
    with pytest.raises(TypeError, match="elites"):
        plot.plot_elite_costs(run, elites=str(loser))
    with pytest.raises(TypeError, match="elites"):
        plot.plot_elite_costs(run, elites=[True])
    with pytest.raises(ValueError, match="config_id"):
        run.training_costs(10_000)


def test_elite_costs_leave_failures_out_of_the_box_and_say_so():
    from racer import race
    from racer.tuning.record import IteratedRun

    def evaluate(c, i):
        if c == 2.0 and i == 1:
            raise RuntimeError("solver crashed")
        return c + i % 3

    res = race(evaluate, [1.0, 2.0], range(6), on_error="worst", direction="maximize",
               progress=False, random_state=0)
    assert res.failures  # the failure is journaled in the result
    run = IteratedRun(parameters=[], configurations={5: {}, 6: {}}, iteration_of={5: 1, 6: 1},
                      elites={1: [5, 6]}, races=[(1, "race 1", res)], candidate_ids=[[5, 6]],
                      final_elites=[5, 6], maximize=True)
    costs = run.training_costs(6)
    assert costs["1"] is None and sum(v is None for v in costs.values()) == 1
    fig = plot.plot_elite_costs(run)
    (ax,) = fig.axes
    n_ok = sum(v is not None for v in costs.values())
    assert ax.get_xticklabels()[1].get_text() == f"#6\n{n_ok} inst.\n1 failed"
    assert sorted(_points(ax, "costs-train-6")) == sorted(v for v in costs.values() if v is not None)
    assert ax.get_ylabel() == "score (higher is better)"


def test_normalized_positions():
    real = ParameterInfo("t", "real", (0.01, 100.0), log=True)
    assert normalized(real, 1.0) == pytest.approx(0.5, abs=1e-12)  # log scale: 1 is the middle
    levels = ParameterInfo("e", "ordinal", ("low", "mid", "high"))
    assert normalized(levels, "high") == 1.0 and np.isnan(normalized(levels, None))


def test_iterated_figures_of_an_optuna_iterated_race():
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def evaluate(params, instance):
        return (params["x"] - 0.3) ** 2 + (params["k"] == "b") * 0.2 + 0.01 * instance

    res = IteratedRace(evaluate, {"x": FloatDistribution(0, 1),
                                  "k": CategoricalDistribution(["a", "b"])},
                       list(range(20)), budget=300, random_state=0, progress=False).run()
    run = from_iterated_race(res)
    assert len(run.configurations) == res.n_candidates
    assert set(run.iteration_of.values()) == set(range(1, res.n_iterations + 1))
    assert run.elites[res.n_iterations] == res.elite_trial_numbers
    fig = plot.plot_parameter_frequencies(res)
    assert {ax.get_title() for ax in fig.axes} >= {"x", "k"}
    fig = plot.plot_elite_parallel_coordinates(res)
    (best,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == f"final-{res.best_trial_number}"]
    names = [p.name for p in run.parameters]
    assert best.get_ydata()[names.index("x")] == pytest.approx(res.best_params["x"], abs=1e-12)
    with pytest.raises(TypeError, match="IteratedRun"):
        plot.plot_parameter_frequencies(42)


# --------------------------------------------------------------------------- the report


def test_the_cli_writes_the_report_of_its_run(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    run = read_exec_dir(run_dir)
    assert "Tuning report" in page and "Parameter sampling frequencies" in page
    assert "Elites by iteration" in page and "Test phase (4 instances)" in page
    # The elites' box plots sit right after the test-phase table, before the other figures.
    boxes = page.index("Elites&#x27; costs on the training and test instances")
    assert page.index("Test phase (4 instances)") < boxes < page.index("Figures of the iterated race")
    assert "<svg" in page[boxes:page.index("Figures of the iterated race")]
    # One folded section per race, with its own journaled stop reason and winner rule.
    assert page.count("<details") >= len(run.races)
    for iteration, label, res in run.races:
        assert f"Iteration {iteration}: {label}" in page
    assert page.count("(as journaled)") == len(run.races) and "(inferred" not in page
    # racer's default test when the scenario names no testType (the t-test) ranks by mean.
    assert page.count("<code>mean</code>") == len(run.races) and "<code>rank_sum</code>" not in page
    # Self-contained: no external scripts, styles or images.
    assert "<script" not in page and "href=\"http" not in page and "src=\"http" not in page
    assert page.count("<svg") >= 2 + len(run.races)


def test_report_subcommand(run_dir, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    assert "racer report: wrote" in capsys.readouterr().out
    assert "Tuning report" in out.read_text(encoding="utf-8")
    journal = run_dir / "racer-journal" / "iteration-1.sqlite"
    assert main(["report", str(journal), "-o", str(tmp_path / "one.html"), "--json",
                 str(tmp_path / "one.json")]) == 0
    assert json.loads((tmp_path / "one.json").read_text())["status"] in (
        "min_survivors", "budget", "elitist_limit", "max_instances", "instances_exhausted")
    assert main(["report", str(run_dir), "--csv", str(tmp_path / "x.csv")]) == 2
    assert "execDir" in capsys.readouterr().err
    # The same subcommand from the installed script and from `python -m racer`.
    exe = os.path.join(os.path.dirname(sys.executable), "racer")
    commands = {"python-m": [sys.executable, "-m", "racer", "report"]}
    if os.path.exists(exe):
        commands["script"] = [exe, "report"]
    for name, command in commands.items():
        target = tmp_path / f"{name}.html"
        done = subprocess.run([*command, str(run_dir), "-o", str(target)],
                              capture_output=True, text=True, timeout=120, env=ENV)
        assert done.returncode == 0, done.stderr
        assert "racer report: wrote" in done.stdout and target.exists()


def test_no_report_flag_and_missing_matplotlib(tmp_path, capsys, monkeypatch):
    scen = make_scenario(tmp_path / "a")
    assert main(["--scenario", scen, "--quiet", "1", "--no-report"]) == EXIT_OK
    assert not (tmp_path / "a" / "arena" / "report.html").exists()
    scen = make_scenario(tmp_path / "b")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # the core install: no matplotlib
    assert main(["--scenario", scen, "--quiet", "1"]) == EXIT_OK
    captured = capsys.readouterr()
    assert "pip install 'bayes-racer[plot]'" in captured.err and "racer report" in captured.err
    assert not (tmp_path / "b" / "arena" / "report.html").exists()
    assert (tmp_path / "b" / "arena" / "elites.txt").exists()


def test_an_interrupted_run_gets_its_report(tmp_path):
    scen = make_scenario(tmp_path)
    env = {**ENV, "RUNNER_DELAY": "0.2"}
    proc = subprocess.Popen(racer_command(scen), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for_runs(tmp_path, 12, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert "writing the report of the run so far" in err
    page = (tmp_path / "arena" / "report.html").read_text(encoding="utf-8")
    assert "not finished: no results.json" in page


@pytest.mark.skipif(chromium() is None, reason="headless Chromium is not installed")
def test_exec_dir_report_renders_in_headless_chromium(run_dir, tmp_path):
    data = render_in_chromium(run_dir / "report.html", tmp_path / "shot.png", 1200, 2400)
    assert len(data) > 50_000  # tables and figures, not a blank page


# --------------------------------------------------------------------------- progress




def test_cli_progress_line_is_the_shared_bar():
    from racer import Race
    from racer.tuning.tuner import Configuration
    from racer.racing import KeepAll
    from racer.tuning.output import Progress

    configs = [Configuration(i + 1, {"x": i}) for i in range(3)]
    race = Race(configs, test=KeepAll(), first_test=2, instances=range(30), random_state=0)
    stream = Stream(tty=False)
    progress = Progress(stream=stream)
    state = {"iteration": 2, "planned": 4, "budget": 40, "experiments": 0}
    while state["experiments"] < 39:
        for ev in race.ask():
            race.tell(ev, float(ev.candidate.values["x"]))
            state["experiments"] += 1
            progress(state, race)
    progress.end("done: budget")
    lines = stream.getvalue().splitlines()
    # Quarter lines of the 40-run budget, then the final one; each names the iteration, the
    # race, the runs used of the budget and the best so far.
    assert len(lines) == 4 and lines[-1].startswith("[racer] |") and "done: budget" in lines[-1]
    assert "iteration 2/4 | race 1: instance" in lines[0] and "/40 runs | best #" in lines[0]
    assert int(lines[0].split("| race")[0].split("|")[1].count("#")) == 6  # 25% of 24 cells
    quiet = Stream(tty=False)
    Progress(stream=quiet, quiet=True)(state, race)
    assert quiet.getvalue() == ""


def test_track_is_silent_in_logs_and_a_bar_on_a_terminal():
    log = Stream(tty=False)
    assert list(track(range(5), stream=log)) == list(range(5))
    assert log.getvalue() == ""
    tty = Stream(tty=True)
    assert list(track(range(5), label="bench", stream=tty)) == list(range(5))
    text = tty.getvalue()
    assert text.startswith("\r[bench] |") and text.endswith("\n") and "5/5" in text


def test_a_notebook_stream_is_redrawn_in_place():
    # ipykernel's OutStream is not a tty, but Jupyter front ends honour "\r": the bar redraws.
    Kernel = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})
    stream = Kernel()
    assert redraws_in_place(stream) and not redraws_in_place(Stream(tty=False))
    bar = ProgressBar(stream=stream)
    bar.update(0.5, "half")
    bar.close("all")
    assert stream.getvalue().startswith("\r[racer] |############") and stream.getvalue().count("\n") == 1


def test_iterated_race_and_search_cv_progress(capsys):
    optuna = pytest.importorskip("optuna")
    pytest.importorskip("sklearn")
    from optuna.distributions import FloatDistribution
    from sklearn.datasets import load_iris
    from sklearn.neighbors import KNeighborsClassifier

    from racer.adapters.optuna import IteratedRace
    from racer.adapters.sklearn import RaceSearchCV

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def evaluate(params, instance):
        return (params["x"] - 0.3) ** 2 + 0.01 * instance

    IteratedRace(evaluate, {"x": FloatDistribution(0, 1)}, list(range(10)), budget=120,
                 random_state=0).run()
    err = capsys.readouterr().err.splitlines()
    assert err and "done:" in err[-1] and "/120 evaluations" in err[-1]
    IteratedRace(evaluate, {"x": FloatDistribution(0, 1)}, list(range(10)), budget=120,
                 random_state=0, progress=False).run()
    assert capsys.readouterr().err == ""
    X, y = load_iris(return_X_y=True)
    grid = {"n_neighbors": [1, 5, 15, 40]}
    RaceSearchCV(KNeighborsClassifier(), grid, random_state=0).fit(X, y)
    assert capsys.readouterr().err == ""  # quiet by default, as scikit-learn's searches
    RaceSearchCV(KNeighborsClassifier(), grid, random_state=0, progress=True).fit(X, y)
    err = capsys.readouterr().err
    assert "[racer]" in err and "done:" in err
    with pytest.raises(ValueError, match="progress"):
        RaceSearchCV(KNeighborsClassifier(), grid, progress="yes").fit(X, y)
