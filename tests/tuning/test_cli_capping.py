"""irace 3.5's adaptive capping in the ``racer`` command (racer.tuning.capping): the bound of a
run, PARk scores and dominance elimination against hand-worked cases and against irace's own
R functions; the bound on the runner's command line; a small runtime scenario end to end,
and its resume after ``kill -9``."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from racer.cli import EXIT_OK, EXIT_SCENARIO, main
from racer.racing.capped import CappedTest
from racer.tuning.capping import (Capping, capped_time, ceiling_digits, dominated, execution_bounds,
                                  score)
from racer.tuning.instances import Instance
from racer.cli.target_runner import TargetRunner
from racer.racing.base import KeepAll, RaceView

from _helpers.cli import ENV, read_csv, wait_for_runs

NA = np.nan


# ---------------------------------------------------------------------------- the bound


def test_candidate_bound_hand_worked():
    # Two elites (columns 0, 1) on three instances; configuration 2 ran on the first two.
    times = np.array([[2.0, 3.0, 1.0],
                      [4.0, 1.0, 6.0],
                      [3.0, 5.0, NA]])
    # Elites' mean times 3 and 3: b = 3 (median, mean, worst and best alike); the time left
    # to configuration 2 is 3 x 3 + 0.01 - (1 + 6) = 2.01, rounded up to 3.
    for kind in ("median", "mean", "worst", "best"):
        assert execution_bounds(times, [0, 1], [2], Capping(type=kind, bound_max=10)) == ([3.0], 3.0)
    # boundDigits = 1: 2.01 -> 2.1 (irace's ceiling.digits).
    assert execution_bounds(times, [0, 1], [2], Capping(bound_max=10, digits=1))[0] == pytest.approx([2.1])
    # Elite means 3 and 5 (elite 1 slower on the last instance).
    slow = times.copy()
    slow[2, 1] = 11.0
    got = {kind: execution_bounds(slow, [0, 1], [2], Capping(type=kind, bound_max=10))
           for kind in ("median", "mean", "worst", "best")}
    # median = mean = 4: 3 x 4 + 0.01 - 7 = 5.01 -> 6; worst 5: 8.01 -> 9; best 3: 2.01 -> 3.
    assert got == {"median": ([6.0], 4.0), "mean": ([6.0], 4.0), "worst": ([9.0], 5.0),
                   "best": ([3.0], 3.0)}
    # boundMax caps the elites' bound and the bound of a run.
    assert execution_bounds(slow, [0, 1], [2], Capping(type="worst", bound_max=4)) == ([4.0], 4.0)


def test_candidate_bound_when_no_time_is_left_is_the_elites_bound():
    times = np.array([[1.0, 1.0, 9.0], [1.0, 1.0, NA]])
    # 2 x 1 + 0.01 - 9 < 0: the run gets the elites' bound itself (not rounded).
    assert execution_bounds(times, [0, 1], [2], Capping(bound_max=10)) == ([1.0], 1.0)


def test_instance_bound_and_no_elites():
    times = np.array([[9.0, 9.0, 9.0, 5.0], [1.0, 2.5, 4.0, NA]])
    # boundType instance: the elites' times on the current instance only, + minMeasurableTime.
    assert execution_bounds(times, [0, 1, 2], [3], Capping(bound_type="instance", bound_max=10)) == ([3.0], 2.5)
    assert execution_bounds(times, [0, 1, 2], [3], Capping(bound_type="instance", type="worst",
                                                           bound_max=10, digits=2))[0] == pytest.approx([4.01])
    # No elites (the first race, or past the elites' instances): boundMax for everyone.
    assert execution_bounds(times, [], [3], Capping(bound_max=10)) == ([10.0], 10.0)
    # An elite without a time on the current instance does not count.
    assert execution_bounds(np.array([[1.0, 1.0], [NA, NA]]), [0], [1], Capping(bound_max=7)) == ([7.0], 7.0)


def test_ceiling_digits_and_capped_time():
    assert ceiling_digits(np.array([0.0, 1.0, 1.000001, 2.5]), 0).tolist() == [0.0, 1.0, 2.0, 3.0]
    c = Capping(bound_max=10, min_measurable_time=0.05)
    assert capped_time(0.0, 4.0, c) == 0.05 and capped_time(6.0, 4.0, c) == 4.0
    assert capped_time(6.0, None, c) == 6.0


def test_options_are_checked():
    with pytest.raises(ValueError, match="bound_max"):
        Capping(enabled=True, bound_max=0)
    with pytest.raises(ValueError, match="cappingType"):
        Capping(type="average", bound_max=10)
    with pytest.raises(ValueError, match="boundType"):
        Capping(bound_type="run", bound_max=10)
    with pytest.raises(ValueError, match="boundPar"):
        Capping(bound_max=10, par=0)
    assert Capping(enabled=False).bound is None and Capping(enabled=False, bound_max=5).bound == 5


# ---------------------------------------------------------------------------- scores


def test_park_scores_timeouts_and_bounded_runs():
    c = Capping(bound_max=10, par=10)
    # A run that reached boundMax is a timeout: PAR10. One cut at its own smaller bound is a
    # bounded run: boundMax, not penalised. Inf (rejected) stays.
    got = score([3.0, 10.0, 4.0, 12.0, np.inf], [10.0, 10.0, 4.0, 10.0, 4.0], c)
    assert got.tolist() == [3.0, 100.0, 10.0, 100.0, np.inf]
    # boundAsTimeout off: a bounded run keeps its cost.
    assert score([4.0], [4.0], Capping(bound_max=10, par=10, as_timeout=False)).tolist() == [4.0]
    # boundPar 1 (irace's default): a timeout costs boundMax.
    assert score([10.0], [10.0], Capping(bound_max=10)).tolist() == [10.0]


# ---------------------------------------------------------------------------- dominance


def test_dominance_hand_worked():
    costs = np.array([[1.0, 2.0, 3.0, 8.0, 4.0],
                      [1.0, 4.0, 3.0, 9.0, 2.0]])  # means 1, 3, 3, 8.5, 3
    # No protected elites: the best 3 by mean (1, 3, 3: columns 0, 1, 2, stable order) stand
    # in; their median mean is 3, so 8.5 goes and the three at 3 stay (within 1e-5).
    assert dominated(costs, [], "median", 3).tolist() == [False, False, False, True, False]
    # best: bound 1, every other configuration goes (stand-ins are not protected).
    assert dominated(costs, [], "best", 3).tolist() == [False, True, True, True, True]
    # A protected elite (column 3) makes the bound 8.5: nobody goes, and never the elite.
    assert not dominated(costs, [3], "median", 3).any()
    assert dominated(costs, [0], "median", 3).tolist() == [False, True, True, True, True]
    # At most min_survivors alive: nothing goes.
    assert not dominated(costs[:, :3], [], "best", 3).any()
    # Two alive: the better one alone is the stand-in.
    assert dominated(costs[:, [0, 3]], [], "median", 1).tolist() == [False, True]


def test_capped_test_joins_the_inner_test():
    class DropFirst(KeepAll):  # an inner test that always eliminates column 0 (by column 1)
        def decide(self, view, rng):
            from racer.racing.base import Elimination
            return [Elimination(0, "dominated", 1, 0.01)]

    costs = np.array([[1.0, 2.0, 9.0], [1.0, 2.0, 9.0]])
    view = RaceView.from_scores(-costs, np.arange(3))
    got = CappedTest(DropFirst(), min_survivors=1).decide(view, None)
    # Dominance drops 1 and 2 (bound 1); with the test's elimination of 0 nobody would be
    # left, so only the dominance eliminations stand (irace: alive <- cap.alive).
    assert sorted(e.index for e in got) == [1, 2] and all(e.by == 0 for e in got)
    two = RaceView.from_scores(-costs[:, :2], np.arange(2))
    got = CappedTest(DropFirst(), min_survivors=2).decide(two, None)
    assert [e.index for e in got] == [0]  # no more alive than min_survivors: the test alone
    got = CappedTest(DropFirst(), min_survivors=1).decide(two, None)
    assert [e.index for e in got] == [1]  # the better of two is the bound: the other goes
    # Protected elites (ids below n_elites, on the first `until` rows) set the bound.
    protected = CappedTest(KeepAll(), min_survivors=1, n_elites=3, until=5)
    assert protected.decide(view, None) == []


# ---------------------------------------------------------------------------- irace itself

_R = r"""
suppressPackageStartupMessages(library(irace))
con <- file("stdin"); lines <- readLines(con); close(con)
for (ln in lines) {
  w <- strsplit(ln, " ")[[1]]
  num <- function(a, b) suppressWarnings(as.numeric(w[a:b]))
  if (w[1] == "bound") {
    nr <- as.integer(w[2]); nc <- as.integer(w[3]); ne <- as.integer(w[4]); nx <- as.integer(w[5])
    sc <- list(cappingType = w[6], boundType = w[7], boundMax = as.numeric(w[8]),
               boundDigits = as.integer(w[9]), minMeasurableTime = as.numeric(w[10]))
    k <- 11
    el <- if (ne > 0) as.integer(w[k:(k + ne - 1)]) else integer(0); k <- k + ne
    ex <- as.integer(w[k:(k + nx - 1)]); k <- k + nx
    m <- matrix(num(k, k + nr * nc - 1), nrow = nr, ncol = nc)
    r <- irace:::final.execution.bound(m, el, nc, nr, ex, sc)
    cat(sprintf("%.17g", c(r$final.bounds[ex], r$elite.bound)), "\n")
  } else {
    nr <- as.integer(w[2]); nc <- as.integer(w[3]); ne <- as.integer(w[4])
    k <- 7
    el <- if (ne > 0) as.integer(w[k:(k + ne - 1)]) else integer(0); k <- k + ne
    m <- matrix(num(k, k + nr * nc - 1), nrow = nr, ncol = nc)
    alive <- irace:::dom.elim(m, el, rep(TRUE, nc), list(cappingType = w[5]), as.integer(w[6]))
    alive[el] <- TRUE
    cat(as.integer(alive), "\n")
  }
}
"""


def _irace_available() -> bool:
    if shutil.which("Rscript") is None:
        return False
    got = subprocess.run(["Rscript", "-e", 'cat(requireNamespace("irace", quietly=TRUE))'],
                         capture_output=True, text=True)
    return got.stdout.strip() == "TRUE"


@pytest.mark.slow
@pytest.mark.skipif(not _irace_available(), reason="needs R with irace (Debian r-cran-irace)")
def test_bounds_and_dominance_agree_with_irace_3_5():
    rng = np.random.default_rng(20)
    cases, lines = [], []
    for k in range(300):
        rows, n_el, n_ex = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        times = rng.uniform(0.01, 6.0, size=(rows, n_el + n_ex)).round(3)
        times[-1, n_el:] = NA  # the configurations to bound have not run on this instance
        times[rng.random((rows, n_el + n_ex)) < 0.1] = NA if k % 3 == 0 else 0.5
        times[:, :n_el] = np.where(np.isnan(times[:, :n_el]), 1.0, times[:, :n_el])
        c = Capping(type=str(rng.choice(["median", "mean", "worst", "best"])),
                    bound_type=str(rng.choice(["candidate", "instance"])),
                    bound_max=float(rng.choice([3, 5, 10])), digits=int(rng.integers(0, 3)))
        elites, exe = list(range(n_el)), list(range(n_el, n_el + n_ex))
        cases.append(("bound", execution_bounds(times, elites, exe, c)))
        values = " ".join("NA" if np.isnan(v) else repr(float(v)) for v in times.ravel(order="F"))
        lines.append(f"bound {rows} {n_el + n_ex} {n_el} {n_ex} {c.type} {c.bound_type} "
                     f"{c.bound_max:g} {c.digits} {c.min_measurable_time!r} "
                     + " ".join(str(e + 1) for e in elites) + " "
                     + " ".join(str(e + 1) for e in exe) + f" {values}")
        cols = int(rng.integers(2, 8))
        costs = rng.choice([1.0, 2.0, 3.0, 10.0, 100.0], size=(rows, cols))
        prot = [] if k % 2 else sorted(rng.choice(cols, size=int(rng.integers(1, cols)), replace=False).tolist())
        ms = int(rng.integers(1, 4))
        kind = str(rng.choice(["median", "mean", "worst", "best"]))
        if cols > ms:  # irace asserts sum(alive) >= minSurvival; it runs only above it
            cases.append(("dom", dominated(costs, prot, kind, ms)))
            lines.append(f"dom {rows} {cols} {len(prot)} {kind} {ms} "
                         + " ".join(str(e + 1) for e in prot) + (" " if prot else "")
                         + " ".join(repr(float(v)) for v in costs.ravel(order="F")))
    got = subprocess.run(["Rscript", "-e", _R], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True, timeout=300)
    answers = got.stdout.splitlines()
    assert len(answers) == len(cases)
    for (kind, mine), line, answer in zip(cases, lines, answers):
        if kind == "bound":
            bounds, b = mine
            theirs = [float(x) for x in answer.split()]
            # The same float operations in the same order; the median of an even count is
            # a mean of two, which R and numpy sum alike: compare to 1e-12 relative.
            assert theirs == pytest.approx(bounds + [b], rel=1e-12), line
        else:
            assert [not bool(int(x)) for x in answer.split()] == mine.tolist(), line


# ---------------------------------------------------------------------------- the runner


@pytest.mark.slow
def test_the_bound_comes_between_the_instance_and_the_switches(tmp_path):
    # The runner prints the word after the instance as its cost: the bound.
    runner = TargetRunner([sys.executable, "-c", "import sys; print(sys.argv[5])"], str(tmp_path))
    argv = runner.argv(3, 7, 11, Instance("i.cnf", ("--opt", "5")), ["--x", "1"], bound=2.5)
    assert argv[3:] == ["3", "7", "11", "i.cnf", "--opt", "5", "2.5", "--x", "1"]
    assert runner.argv(3, 7, 11, Instance("i.cnf"), ["--x", "1"])[3:] == ["3", "7", "11", "i.cnf", "--x", "1"]
    res = runner.run(3, 7, 11, Instance("i.cnf"), ["--x", "1"], bound=12.5)
    assert (res.status, res.cost, res.bound) == ("ok", 12.5, 12.5)
    timed = TargetRunner([sys.executable, "-c", "print(3)"], str(tmp_path), need_time="capping")
    res = timed.run(1, 1, 1, Instance("i"), [], bound=4.0)
    assert res.status == "error" and res.message.startswith("capping needs the time of each run")


# ---------------------------------------------------------------------------- end to end

# What every capped runner here starts with: irace's arguments, the bound when one comes
# (between the instance and the switches), then the switches.
RUNNER_ARGUMENTS = """
import sys
cid, iid, seed, inst = sys.argv[1:5]
words = sys.argv[5:]
bound = None
if words and not words[0].startswith("-"):
    bound = float(words[0])
    words = words[1:]
opts = dict(zip(words[::2], words[1::2]))
"""

# A runtime scenario whose runtimes are known: t = (x - 1.5)^2 + |y| + 0.3 x instance + 0.05.
# Cut at its bound (or at 20), a run prints `bound bound`; every call is logged with its bound.
RUNTIME_RUNNER = RUNNER_ARGUMENTS + """
t = (float(opts["--x"]) - 1.5) ** 2 + abs(float(opts["--y"])) + 0.3 * int(inst.rsplit("-", 1)[1]) + 0.05
with open("bounds.log", "a") as f:
    f.write(f"{cid} {iid} {bound}\\n")
cut = min(bound if bound is not None else 20.0, 20.0)
print(f"{cut} {cut}" if t > cut else f"{t:.6f} {t:.6f}")
"""


def runtime_t(x: float, y: float, inst: str) -> float:
    return (x - 1.5) ** 2 + abs(y) + 0.3 * int(inst.rsplit("-", 1)[1]) + 0.05


def make_runtime_scenario(folder, budget=120, extra=""):
    (folder / "arena").mkdir(parents=True)
    runner = folder / "target-runner"
    runner.write_text(f"#!{sys.executable}\n" + textwrap.dedent(RUNTIME_RUNNER))
    runner.chmod(0o755)
    (folder / "parameters.txt").write_text('x "--x " r (-5, 5)\ny "--y " r (-3, 3)\n')
    (folder / "train.txt").write_text("".join(f"inst-{i}\n" for i in range(1, 11)))
    (folder / "scenario.txt").write_text(textwrap.dedent(f"""
        parameterFile = "parameters.txt"
        targetRunner = "target-runner"
        execDir = "arena"
        trainInstancesDir = ""
        trainInstancesFile = "train.txt"
        maxExperiments = {budget}
        seed = 5
        capping = 1
        boundMax = 20
        boundPar = 10
        """) + textwrap.dedent(extra))
    return str(folder / "scenario.txt")


@pytest.mark.slow
def test_a_runtime_scenario_runs_with_capping(tmp_path, capsys):
    scen = make_runtime_scenario(tmp_path)
    assert main(["--scenario", scen, "--no-report", "-q", "1"]) == EXIT_OK
    assert "capping" not in capsys.readouterr().err  # no "not implemented" warning any more
    runs = [r for r in read_csv(tmp_path / "arena" / "runs.csv")]
    logged = [ln.split() for ln in (tmp_path / "arena" / "bounds.log").read_text().splitlines()]
    # Every run got a bound, the same the runner saw and runs.csv records, never above boundMax.
    assert len(logged) == len(runs)
    assert sorted((r["configuration"], r["instance_id"], float(r["bound"])) for r in runs) == \
        sorted((c, i, float(b)) for c, i, b in logged)
    assert all(0 < float(r["bound"]) <= 20 for r in runs)
    # Elitist races bound the new configurations below boundMax.
    assert any(float(r["bound"]) < 20 for r in runs if r["iteration"] != "1")
    # In the first race (no elites) every run gets boundMax, and the dominance rule stops
    # the dominated configurations before the first test: fewer runs than 5 per configuration.
    first = [r for r in runs if r["iteration"] == "1"]
    assert all(float(r["bound"]) == 20 for r in first)
    n_conf = len({r["configuration"] for r in first})
    assert len(first) < 5 * n_conf
    # Each bound is irace's, recomputed from the runs.csv times of the elites and of the
    # configuration itself (racer.tuning.capping.execution_bounds): checked on every run of the
    # second race.
    _check_second_race_bounds(tmp_path, runs)


def _check_second_race_bounds(tmp_path, runs):
    second = [r for r in runs if r["iteration"] == "2"]
    firsts = [r for r in runs if r["iteration"] == "1"]
    # The second race's elites: configurations of the first race that run in the second one
    # and have results on the first race's instances.
    seen = {r["instance_id"] for r in firsts}
    ids2 = {r["configuration"] for r in second}
    elites = sorted({r["configuration"] for r in firsts} & ids2, key=int)
    assert elites
    c = Capping(bound_max=20, par=10)
    times = {(r["configuration"], r["instance_id"]): capped_time(float(r["time"]), float(r["bound"]), c)
             for r in runs if r["iteration"] in ("1", "2") and r["status"] == "ok"}
    # Instance order of the second race: the order the runs of a new configuration were made.
    new = [cid for cid in sorted(ids2, key=int) if cid not in elites]
    checked = 0
    for cid in new:
        mine = [r for r in second if r["configuration"] == cid]
        order = [r["instance_id"] for r in mine]
        # The elites' protected instances: the one new instance, then those seen before.
        protect = len(seen) + 1
        for k, r in enumerate(mine[:protect]):
            rows = order[:k + 1]
            t = np.array([[times.get((e, i), NA) for e in elites] + [times.get((cid, i), NA) if i != r["instance_id"] else NA]
                          for i in rows])
            bounds, _ = execution_bounds(t, list(range(len(elites))), [len(elites)], c)
            assert float(r["bound"]) == pytest.approx(bounds[0], abs=1e-9), (cid, k)
            checked += 1
    assert checked > 0


@pytest.mark.slow
def test_bound_max_without_capping_is_passed_to_every_run(tmp_path):
    # irace passes boundMax to every run whenever it is set; costs are then the runner's own
    # (no PARk without capping). Two workers: look-ahead runs get it too.
    scen = make_runtime_scenario(tmp_path, budget=120, extra="capping = 0\n")
    assert main(["--scenario", scen, "--no-report", "-q", "1", "--parallel", "2"]) == EXIT_OK
    runs = read_csv(tmp_path / "arena" / "runs.csv")
    logged = (tmp_path / "arena" / "bounds.log").read_text().split()
    # (a look-ahead run killed before it wrote its line is in runs.csv only)
    assert sum(r["status"] == "ok" for r in runs) <= len(logged) // 3 <= len(runs)
    assert set(logged[2::3]) == {"20.0"}
    assert {r["bound"] for r in runs} == {"20.0"}
    assert max(float(r["cost"]) for r in runs if r["cost"]) <= 20


@pytest.mark.slow
def test_capping_needs_elitist_and_bound_max(tmp_path, capsys):
    scen = make_runtime_scenario(tmp_path, extra="elitist = 0\n")
    assert main(["--scenario", scen, "--check"]) == EXIT_SCENARIO
    assert "capping needs elitist = 1" in capsys.readouterr().err
    scen = make_runtime_scenario(tmp_path / "b", extra="boundMax = 0\n")
    assert main(["--scenario", scen, "--check"]) == EXIT_SCENARIO
    assert "capping needs boundMax > 0" in capsys.readouterr().err


def twin_runtime_scenarios(tmp_path):
    """Two copies of the runtime scenario: ``(folder, scenario path)`` for a reference run
    and for the run that is interrupted or handed another's files."""
    out = []
    for name in ("ref", "run"):
        (tmp_path / name).mkdir()
        out.append((tmp_path / name, make_runtime_scenario(tmp_path / name)))
    return out


def run_key(r):
    """What must match between a resumed capped tuning's runs and the reference's."""
    return (r["iteration"], r["configuration"], r["instance_id"], r["bound"], r["cost"])


@pytest.mark.slow
def test_runs_logged_but_not_journaled_run_again_with_their_first_bounds(tmp_path):
    # What a kill between a run's runs.csv line and the journal leaves behind, for every run
    # at once: a complete runs.csv and no journal. The new session runs everything again and
    # must give each run the bound it had (a run's own logged time on its instance once
    # shortened its bound: 1 instead of 5 seconds, found by killing at every second run).
    (ref_dir, ref), (run_dir, scen) = twin_runtime_scenarios(tmp_path)
    assert main(["--scenario", ref, "--no-report", "-q", "1"]) == EXIT_OK
    shutil.copy(ref_dir / "arena" / "runs.csv", run_dir / "arena" / "runs.csv")
    assert main(["--scenario", scen, "--no-report", "-q", "1"]) == EXIT_OK
    ref_runs = read_csv(ref_dir / "arena" / "runs.csv")
    again = read_csv(run_dir / "arena" / "runs.csv")[len(ref_runs):]
    assert sorted(map(run_key, again)) == sorted(map(run_key, ref_runs))
    assert (run_dir / "arena" / "elites.txt").read_text() == (ref_dir / "arena" / "elites.txt").read_text()


@pytest.mark.slow
def test_kill_9_then_resume_with_capping_gives_the_same_runs_and_bounds(tmp_path):
    (ref_dir, ref), (run_dir, scen) = twin_runtime_scenarios(tmp_path)
    cmd = [sys.executable, "-c", "import sys; from racer.cli import main; sys.exit(main())",
           "--scenario", "SCEN", "--parallel", "2", "-q", "1", "--no-report"]
    done = subprocess.run([w.replace("SCEN", ref) for w in cmd], env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ref_runs = read_csv(ref_dir / "arena" / "runs.csv")
    assert {r["iteration"] for r in ref_runs} >= {"1", "2", "3"}
    # Kill racer (and its runners) while the third race runs.
    n_before = sum(r["iteration"] in ("1", "2") for r in ref_runs) + 3
    proc = subprocess.Popen([w.replace("SCEN", scen) for w in cmd], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_for_runs(run_dir, n_before, proc, limit=120), "racer ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    again = subprocess.run([w.replace("SCEN", scen) for w in cmd], env=ENV, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (run_dir / "arena" / "elites.txt").read_text() == (ref_dir / "arena" / "elites.txt").read_text()
    runs = read_csv(run_dir / "arena" / "runs.csv")
    # The same runs with the same bounds and costs; at most the runs in flight at the kill
    # (2 workers) appear twice.
    assert set(map(run_key, runs)) == set(map(run_key, ref_runs))
    assert len(ref_runs) <= len(runs) <= len(ref_runs) + 2


# The same race under both tools: the configurations file only (one iteration of the given
# configurations), instances in file order, the t-test in both. Costs shift with the instance,
# so the dominance rule eliminates over several instances; each run logs its configuration.
CROSS_RUNNER = RUNNER_ARGUMENTS + """
x, y = float(opts["--x"]), float(opts["--y"])
k = int(inst.rsplit("-", 1)[1])
t = 1 + abs(x - (k * 7 % 5)) + 0.5 * abs(y - (k * 3 % 4)) + 0.05 * k
with open("bounds.log", "a") as f:
    f.write(f"{opts['--x']} {opts['--y']} {inst} {bound}\\n")
cut = min(bound if bound is not None else 10.0, 10.0)
print(f"{cut} {cut}" if t > cut else f"{t:.4f} {t:.4f}")
"""


def _cross_scenario(folder, picks, extra=""):
    (folder / "arena").mkdir(parents=True)
    runner = folder / "target-runner"
    runner.write_text(f"#!{sys.executable}\n" + textwrap.dedent(CROSS_RUNNER))
    runner.chmod(0o755)
    (folder / "parameters.txt").write_text('x "--x " r (0, 10)\ny "--y " r (0, 10)\n')
    (folder / "configs.txt").write_text("x y\n" + "".join(f"{a} {b}\n" for a, b in picks))
    (folder / "train.txt").write_text("".join(f"inst-{i}\n" for i in range(1, 11)))
    (folder / "scenario.txt").write_text(textwrap.dedent("""
        parameterFile = "parameters.txt"
        targetRunner = "target-runner"
        execDir = "arena"
        trainInstancesDir = ""
        trainInstancesFile = "train.txt"
        configurationsFile = "configs.txt"
        maxExperiments = 200
        nbIterations = 1
        nbConfigurations = 16
        deterministic = 1
        sampleInstances = 0
        testType = "t-test"
        seed = 1
        capping = 1
        boundMax = 10
        boundPar = 10
        """) + extra)


def _picks(design):
    rng = np.random.default_rng(design)
    grid = [(a, b) for a in range(7) for b in range(5)]
    return [grid[int(i)] for i in rng.choice(len(grid), size=16, replace=False)]


@pytest.mark.slow
def test_capping_after_first_test_keeps_everyone_for_the_first_block(tmp_path):
    _cross_scenario(tmp_path, _picks(4), extra="cappingAfterFirstTest = 1\n")
    assert main(["--scenario", str(tmp_path / "scenario.txt"), "--no-report", "-q", "1"]) == EXIT_OK
    runs = [ln.split() for ln in (tmp_path / "arena" / "bounds.log").read_text().splitlines()]
    first_block = {(x, y, inst) for x, y, inst, _ in runs if int(inst.split("-")[1]) <= 5}
    assert len(first_block) == 16 * 5  # irace 3.5 (the test below) ran 27 of them
    # The dominance rule still applies from the first test on: fewer than 16 went further.
    assert len({(x, y) for x, y, inst, _ in runs if inst == "inst-6"}) < 16


@pytest.mark.slow
@pytest.mark.skipif(not _irace_available(), reason="needs R with irace (Debian r-cran-irace)")
@pytest.mark.parametrize("design", [4, 9])
def test_a_capped_race_runs_what_irace_3_5_runs(tmp_path, design):
    picks = _picks(design)
    runs = {}
    for tool in ("irace", "racer"):
        folder = tmp_path / tool
        _cross_scenario(folder, picks)
        if tool == "irace":
            home = subprocess.run(["Rscript", "-e", 'cat(system.file(package="irace"))'],
                                  capture_output=True, text=True, check=True).stdout.strip()
            done = subprocess.run([os.path.join(home, "bin", "irace"), "--scenario", "scenario.txt"],
                                  cwd=folder, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        else:
            assert main(["--scenario", str(folder / "scenario.txt"), "--no-report", "-q", "1"]) == EXIT_OK
        runs[tool] = sorted((folder / "arena" / "bounds.log").read_text().splitlines())
    # The same runs (configuration, instance, bound): the dominance rule eliminated the same
    # configurations after the same instances.
    assert runs["racer"] == runs["irace"]
    assert len(runs["racer"]) < 16 * 5  # and it did eliminate before the first test
