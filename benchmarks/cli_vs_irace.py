"""The ``racer`` command against irace 3.5 on the same scenarios, budgets, seeds and parallelism.

Scenarios (each runs unchanged under both tools):

* ``tsp-sa`` (``examples/tsp-sa``): simulated annealing on 25-35-city TSP instances, a real
  algorithm; a categorical, a log-scale real, a real, an ordinal, a conditional parameter and
  a forbidden rule; 400 runs.
* ``optim-mixed`` (``benchmarks/scenarios/optim-mixed``): differential evolution, Nelder-Mead
  and pattern search (pure Python) on shifted test functions; 10 parameters, 8 of them
  conditional, 2 ordinal, an integer, 2 log-scale, and 3 forbidden rules; 500 runs.
* ``optim-faults`` (``benchmarks/scenarios/optim-faults``): the same optimisers, where some
  configurations crash (exit 1) and some hang; the configurations file lists a crashing and a
  hanging one after the default. racer runs it with ``--target-runner-timeout 1 --on-error
  eliminate``. irace 3.5 has no per-run timeout and stops at a failing run, so it runs the
  scenario with ``--target-runner target-runner-guarded`` (a 1 s ``timeout`` around the runner
  and ``Inf`` on a crash or timeout, what an irace user writes), and once, on the first seed,
  unchanged (it hangs or fails: the outcome is recorded; the run is killed after 30 s).

For each scenario and seed both tools run with ``--seed S --parallel 2``, alternately, under
the same load. Every target-runner call goes through the same tiny launcher
(``/bin/sh`` that appends the call to a log, then ``exec``-s the interpreter: the venv's own
Python, never a pyenv shim), so both tools pay the same per-run cost. Every runner starts in
a session of its own: racer does that for its runners (to kill a run's whole process group),
and on Linux with ``sched_autogroup_enabled = 1`` (this machine) each session is a separate
scheduling group, which on a loaded machine gives a runner in its own session a larger CPU
share than one in its parent's session. So that this does not favour racer, irace's runners
go through ``setsid`` in the launcher (except in the unchanged faults run, whose hanging
runner must die with irace), and the floor replay starts each call in a new session too. Each tool's final best
configuration is re-evaluated on the scenario's held-out test instances with 5 fixed seeds
each (the same runs for both tools), so the quality comparison does not depend on the tools'
own test phases.

**The floor**, measured in the same benchmark run, right after each racer run: every call
racer made (from the launcher's log, test phase included), replayed in the same order through
a bare ``ThreadPoolExecutor`` of ``--parallel`` threads running ``subprocess.run`` (with the
same per-run timeout). ``racer / floor`` is racer's wall time (process start to exit) over
the floor's; ``(racer - start-up) / floor`` removes the interpreter and import start-up,
measured separately. racer runs with ``--no-report``: irace writes no HTML report and the
floor has none, and the report (3-5 s with matplotlib) was most of racer's gap to the floor
before 2026-11-25; ``racer report EXECDIR`` is timed after each racer run and reported apart.
The floor replays racer's unused look-ahead runs too (they are calls racer made); the "floor
of used runs" leaves them out, which is the stricter comparison. Also reported: racer against
a bare pool on a 20 ms ``sleep`` runner, and racer's own cost per run without processes
(``inprocess_overhead``).

Needs irace (Debian: ``apt-get install r-cran-irace``); the irace executable is found with
``Rscript -e 'cat(system.file(package="irace"))'``.

``nice python benchmarks/cli_vs_irace.py --seeds 5 [--scenarios tsp-sa,optim-mixed,optim-faults]``
(``--quick``: 1 seed; ``--extra-args '--test-type t-test'``: irace options for both tools); writes ``--out`` (default ``benchmarks/results/cli_vs_irace_tables.md``).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import csv
import dataclasses
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable  # the venv interpreter itself (its realpath would leave the venv)
RACER = [PYTHON, "-c", "import sys; from racer.cli import main; sys.exit(main())"]
LAUNCHER = """#!/bin/sh
IFS='	'
printf '%s\n' "$*" >> "$RACER_BENCH_LOG"
[ -n "$RACER_BENCH_SETSID" ] && exec setsid "$RACER_BENCH_INTERP" "$@"
exec "$RACER_BENCH_INTERP" "$@"
"""


@dataclasses.dataclass
class Scenario:
    path: Path
    test_dir: str | None = None  # prefix of test instance names for the held-out runs
    racer_args: tuple = ()
    irace_runner: str | None = None  # irace's targetRunner when it must differ (a wrapper)
    run_timeout: float | None = None  # per-run limit (racer's, the floor's, the held-out's)
    irace_unchanged_once: bool = False


SCENARIOS = {
    "tsp-sa": Scenario(ROOT / "examples" / "tsp-sa", test_dir="instances"),
    "optim-mixed": Scenario(ROOT / "benchmarks" / "scenarios" / "optim-mixed"),
    "optim-faults": Scenario(ROOT / "benchmarks" / "scenarios" / "optim-faults",
                             racer_args=("--target-runner-timeout", "1", "--on-error", "eliminate"),
                             irace_runner="target-runner-guarded", run_timeout=1.0,
                             irace_unchanged_once=True),
}


def irace_executable() -> str:
    out = subprocess.run(["Rscript", "-e", 'cat(system.file(package="irace"))'],
                         capture_output=True, text=True, check=True).stdout.strip()
    if not out:
        raise SystemExit("irace is not installed (apt-get install r-cran-irace)")
    return os.path.join(out, "bin", "irace")


def budget_of(sc: Scenario) -> int:
    return int(re.search(r"^maxExperiments\s*=\s*(\d+)", (sc.path / "scenario.txt").read_text(), re.M).group(1))


def fresh_copy(sc: Scenario, base: Path, name: str) -> Path:
    dest = base / name
    shutil.copytree(sc.path, dest, ignore=shutil.ignore_patterns("arena"))
    (dest / "arena").mkdir()
    if sc.path.name == "optim-faults":  # its runner loads ../optim-mixed/target-runner
        mixed = base / "optim-mixed"
        if not mixed.exists():
            shutil.copytree(SCENARIOS["optim-mixed"].path, mixed, ignore=shutil.ignore_patterns("arena"))
    return dest


def launcher(base: Path) -> str:
    path = base / "bench-launcher"
    if not path.exists():
        path.write_text(LAUNCHER)
        path.chmod(0o755)
    return str(path)


def tool_env(folder: Path, interp: str, setsid: bool = False) -> dict:
    return {**os.environ, "RACER_BENCH_LOG": str(folder / "launches.log"),
            "RACER_BENCH_INTERP": interp, "RUNNER_PYTHON": PYTHON, "OPENBLAS_NUM_THREADS": "1",
            "RACER_BENCH_SETSID": "1" if setsid else ""}


def run_irace(sc: Scenario, folder: Path, seed: int, parallel: int, unchanged: bool = False,
              limit: float | None = None, extra: tuple = ()) -> dict:
    runner = None if unchanged else sc.irace_runner
    interp = "/bin/sh" if runner and not runner.endswith("target-runner") else PYTHON
    cmd = [irace_executable(), "--scenario", "scenario.txt", "--seed", str(seed),
           "--parallel", str(parallel), "--target-runner-launcher", launcher(folder.parent)]
    if runner:
        cmd += ["--target-runner", runner]
    cmd += list(extra)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=tool_env(folder, interp, setsid=not unchanged),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return {"wall": time.perf_counter() - t0, "runs": _count(folder), "best": None,
                "outcome": f"killed after {limit:g} s (no answer)"}
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        if unchanged:
            tail = " / ".join(ln.strip() for ln in (out + err).splitlines()[-4:] if ln.strip())
            return {"wall": wall, "runs": _count(folder), "best": None,
                    "outcome": f"exit {proc.returncode}: {tail[:200]}"}
        raise RuntimeError(f"irace failed:\n{out[-3000:]}\n{err[-3000:]}")
    used = [int(x) for x in re.findall(r"experimentsUsedSoFar: (\d+)", out)]
    lines = out.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("# Best configurations as commandlines"))
    best = lines[k + 1].split()[1:]
    return {"wall": wall, "runs": max(used) if used else None, "best": best, "outcome": "ok"}


def _count(folder: Path) -> int:
    log = folder / "launches.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def run_racer(sc: Scenario, folder: Path, seed: int, parallel: int, extra: tuple = (),
              time_report: bool = True) -> dict:
    # --no-report: irace writes no HTML report, and the floor has none; racer's report (3-5 s
    # with matplotlib, more than the whole gap to the floor) is timed apart, below.
    cmd = RACER + ["--scenario", "scenario.txt", "--seed", str(seed), "--parallel", str(parallel),
                   "--target-runner-launcher", launcher(folder.parent), "--quiet", "1",
                   "--no-report", *sc.racer_args, *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env=tool_env(folder, PYTHON))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"racer failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    res = json.loads((folder / "arena" / "results.json").read_text())
    with open(folder / "arena" / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    unused = [r for r in rows if r["status"] == "speculative-unused"]
    report = math.nan
    if time_report:  # quality-only callers (tuning_vs_irace.py) skip the 3-5 s report
        t0 = time.perf_counter()
        subprocess.run(RACER + ["report", str(folder / "arena")], cwd=folder, capture_output=True,
                       env=tool_env(folder, PYTHON))
        report = time.perf_counter() - t0
    failed = sum(r["status"] != "ok" for r in rows) - len(unused)
    return {"wall": wall, "runs": res["experiments"], "best": res["elites"][0]["command_line"],
            "outcome": "ok", "failed": failed, "report": report,
            "unused": [(r["configuration"], r["instance_id"], r["seed"]) for r in unused]}


def floor(folder: Path, parallel: int, timeout: float | None, skip: list = ()) -> dict:
    """The calls in ``folder/launches.log``, in order, through a bare pool of ``parallel``
    threads (the launcher again, logging to /dev/null). ``skip``: (configuration, instance
    ID, seed) of calls to leave out, each once, first occurrence first (racer's unused
    look-ahead runs, to time the runs the races used only)."""
    calls = [ln.split("\t") for ln in (folder / "launches.log").read_text().splitlines()]
    left = {}
    for key in skip:
        left[key] = left.get(key, 0) + 1
    kept = []
    for args in calls:
        key = tuple(args[1:4])
        if left.get(key):
            left[key] -= 1
            continue
        kept.append(args)
    calls = kept
    env = {**tool_env(folder, PYTHON), "RACER_BENCH_LOG": os.devnull}
    argv0 = launcher(folder.parent)

    def one(args):
        try:
            subprocess.run([argv0, *args], cwd=folder / "arena", capture_output=True, env=env,
                           timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            pass

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(parallel) as pool:
        list(pool.map(one, calls))
    return {"calls": len(calls), "wall": time.perf_counter() - t0}


def held_out(sc: Scenario, best: list | None, seeds_per_instance: int = 5) -> float:
    if best is None:
        return float("nan")
    names = (sc.path / "test.txt").read_text().split()
    runner = sc.path / "target-runner"
    costs = []
    for k, name in enumerate(names):
        inst = str(sc.path / sc.test_dir / name) if sc.test_dir else name
        for s in range(seeds_per_instance):
            try:
                proc = subprocess.run([PYTHON, str(runner), "0", str(k + 1), str(1000 + 17 * k + s), inst, *best],
                                      capture_output=True, text=True, timeout=sc.run_timeout)
                # The cost is the first number of the last line (a runner may print `cost time`).
                costs.append(float(proc.stdout.strip().splitlines()[-1].split()[0])
                             if proc.returncode == 0 else float("inf"))
            except subprocess.TimeoutExpired:
                costs.append(float("inf"))
    return statistics.fmean(costs)


def startup_time() -> float:
    t0 = time.perf_counter()
    subprocess.run([PYTHON, "-c", "import racer.cli, racer.racing.frace, racer.tuning.tuner"], check=True)
    return time.perf_counter() - t0


OVERHEAD_RUNNER = """import sys, time
time.sleep(0.02)
opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
print((float(opts["--x"]) - 1.0) ** 2 + int(sys.argv[2]) % 7)
"""


def overhead(base: Path, parallel: int, budget: int = 400) -> dict:
    """Dispatch overhead: racer on a runner that sleeps 20 ms, against the floor (the same
    number of the same runner calls through a bare thread pool of the same size)."""
    folder = base / "overhead"
    (folder / "arena").mkdir(parents=True)
    runner = folder / "target-runner"
    runner.write_text(f"#!{PYTHON}\n" + OVERHEAD_RUNNER)
    runner.chmod(0o755)
    (folder / "parameters.txt").write_text('x "--x " r (-5, 5)\ny "--y " r (-5, 5)\n')
    (folder / "train.txt").write_text("".join(f"i{k}\n" for k in range(50)))
    (folder / "scenario.txt").write_text(
        f'targetRunner = "target-runner"\nexecDir = "arena"\ntrainInstancesDir = ""\n'
        f'trainInstancesFile = "train.txt"\nmaxExperiments = {budget}\nseed = 1\n')
    t0 = time.perf_counter()
    subprocess.run([PYTHON, "-c", "import sys; from racer.cli import main; sys.exit(main())",
                    "--scenario", str(folder / "scenario.txt"), "--parallel", str(parallel),
                    "--quiet", "1"], check=True, capture_output=True)
    racer_wall = time.perf_counter() - t0
    res = json.loads((folder / "arena" / "results.json").read_text())
    runs = res["experiments"]
    argv = [str(runner), "1", "1", "1", "i1", "--x", "0.5", "--y", "0"]
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(parallel) as pool:
        list(pool.map(lambda _: subprocess.run(argv, capture_output=True, cwd=folder,
                                               start_new_session=True), range(runs)))
    floor = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([PYTHON, "-c", "import racer.cli, racer.racing.frace, racer.tuning.tuner"],
                   check=True)
    startup = time.perf_counter() - t0
    return {"runs": runs, "racer": racer_wall, "floor": floor, "startup": startup}


def inprocess_overhead(budget: int = 2000) -> dict:
    """racer's own cost per run (thread-pool dispatch, race, F-test, SQLite journal, sampler),
    with a target-runner stand-in that returns at once: no process start-up to hide it."""
    import random

    from racer.racing.frace import FRaceTest
    from racer.tuning.tuner import Settings, Tuner
    from racer.tuning.parameters import Parameter, ParameterSpace
    from racer.tuning.instances import Instance
    from racer.tuning.runner import RunResult

    class Instant:
        exec_dir = "."

        def run(self, config_id, instance_id, seed, instance, switches):
            x = float(switches[1])
            cost = (x - 1.0) ** 2 + random.Random(seed * 31 + config_id).gauss(0, 0.1)
            return RunResult("ok", cost, None, "", [], 0, "", "", 0.0)

        def kill_all(self):
            pass

    space = ParameterSpace([Parameter("x", "--x ", "r", (-4.0, 4.0)),
                            Parameter("y", "--y ", "r", (-4.0, 4.0))])
    with tempfile.TemporaryDirectory() as tmp:
        tuner = Tuner(space, Instant(), [Instance(str(i)) for i in range(20)],
                      Settings(max_experiments=budget, seed=1, parallel=2), FRaceTest(),
                      journal_dir=tmp)
        t0 = time.perf_counter()
        res = tuner.run()
        wall = time.perf_counter() - t0
    return {"runs": res.experiments, "wall": wall}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def bench_scenario(name: str, sc: Scenario, seeds: list, parallel: int, base: Path, startup: float,
                   with_floor: bool = True, extra_args: tuple = ()) -> list:
    lines = [f"## {name}", "", f"`{sc.path.relative_to(ROOT)}`, budget {budget_of(sc)} runs, "
             f"`--parallel {parallel}`" + (f", racer also `{' '.join(sc.racer_args)}`" if sc.racer_args else "")
             + (f", irace `--target-runner {sc.irace_runner}`" if sc.irace_runner else "")
             + f". Load average (1/5/15 min) at start: {load()}.", "",
             "| seed | tool | held-out | runs | wall (s) | floor (s) | racer / floor | (racer - start-up) / floor "
             "| unused look-ahead runs | floor of used runs (s) | racer / floor of used runs |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows = []
    for seed in seeds:
        if sc.irace_unchanged_once and seed == seeds[0]:
            folder = fresh_copy(sc, base, f"{name}-irace-unchanged-{seed}")
            got = run_irace(sc, folder, seed, parallel, unchanged=True, limit=30)
            print(f"{name} seed {seed} irace unchanged: {got['outcome']} after {got['wall']:.1f}s, "
                  f"{got['runs']} runner calls", flush=True)
            lines.insert(-2, f"irace 3.5 on the scenario unchanged (seed {seed}): {got['outcome']}; "
                         f"{got['wall']:.1f} s, {got['runs']} runner calls started.\n")
        for tool in ("irace", "racer"):
            folder = fresh_copy(sc, base, f"{name}-{tool}-{seed}")
            got = (run_irace(sc, folder, seed, parallel, extra=extra_args) if tool == "irace"
                   else run_racer(sc, folder, seed, parallel, extra=extra_args))
            if tool == "racer" and not with_floor:
                got.update(floor=math.nan, ratio=math.nan, ratio_net=math.nan, floor_used=math.nan)
            elif tool == "racer":
                fl = floor(folder, parallel, sc.run_timeout)
                got["floor"] = fl["wall"]
                got["floor_used"] = (floor(folder, parallel, sc.run_timeout, got["unused"])["wall"]
                                     if got["unused"] else fl["wall"])
                got["ratio"] = got["wall"] / fl["wall"]
                got["ratio_net"] = (got["wall"] - startup) / fl["wall"]
            got["test"] = held_out(sc, got["best"])
            got.update(tool=tool, seed=seed)
            rows.append(got)
            extra = (f", floor {got['floor']:.1f}s, ratio {got['ratio']:.3f} ({got['ratio_net']:.3f} net), "
                     f"{got['failed']} failed runs, {len(got['unused'])} unused look-ahead runs, "
                     f"floor of used runs {got['floor_used']:.1f}s, `racer report` {got['report']:.1f}s"
                     if tool == "racer" else "")
            print(f"{name} seed {seed} {tool}: held-out {got['test']:.4g}, runs {got['runs']}, "
                  f"wall {got['wall']:.1f}s{extra}, best {' '.join(got['best'])}", flush=True)
    for r in rows:
        fl = (f"{r['floor']:.1f} | {r['ratio']:.3f} | {r['ratio_net']:.3f} | {len(r['unused'])} | "
              f"{r['floor_used']:.1f} | {r['wall'] / r['floor_used']:.3f}" if r["tool"] == "racer"
              else " | | | | | ")
        lines.append(f"| {r['seed']} | {r['tool']} | {r['test']:.4f} | {r['runs']} | {r['wall']:.1f} | {fl} |")
    lines += ["", "| tool | median held-out | median runs | median wall (s) | median racer / floor | median (racer - start-up) / floor |",
              "| --- | --- | --- | --- | --- | --- |"]
    for tool in ("irace", "racer"):
        mine = [r for r in rows if r["tool"] == tool]
        ratio = (f"{statistics.median(r['ratio'] for r in mine):.3f} | "
                 f"{statistics.median(r['ratio_net'] for r in mine):.3f}" if tool == "racer" else " | ")
        lines.append(f"| {tool} | {statistics.median(r['test'] for r in mine):.4f} | "
                     f"{statistics.median(r['runs'] for r in mine):g} | "
                     f"{statistics.median(r['wall'] for r in mine):.1f} | {ratio} |")
    held = {(r["seed"], r["tool"]): r["test"] for r in rows}
    wins = sum(held[s, "racer"] <= held[s, "irace"] for s in seeds)
    diffs = [held[s, "racer"] - held[s, "irace"] for s in seeds]
    finite = [d for d in diffs if math.isfinite(d)]
    se = statistics.stdev(finite) / math.sqrt(len(finite)) if len(finite) > 1 else math.nan
    first = {tool: collections.Counter(r["best"][1] if r["best"] and len(r["best"]) > 1 else "?"
                                       for r in rows if r["tool"] == tool) for tool in ("irace", "racer")}
    reports = [r["report"] for r in rows if r["tool"] == "racer"]
    lines += ["", f"racer ran with `--no-report` (irace writes no report); `racer report EXECDIR` "
              f"afterwards took {statistics.median(reports):.1f} s (median).",
              f"racer's held-out cost <= irace's on {wins} of {len(seeds)} seeds; paired "
              f"difference racer - irace: mean {statistics.fmean(finite):+.4g} +/- {se:.2g} (SE, "
              f"{len(finite)} seeds). Value of the final best's first switch: "
              + "; ".join(f"{tool} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
                          for tool, c in first.items())
              + f". Load average at end: {load()}.", ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 seed")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--no-overhead", action="store_true", help="skip the synthetic overhead measurements")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the floor replay after each racer run (quality-only runs)")
    ap.add_argument("--extra-args", default="", metavar="ARGS",
                    help="irace options given to both tools, e.g. '--test-type t-test' (shell words)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cli_vs_irace_tables.md"))
    args = ap.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + (1 if args.quick else args.seeds)))
    names = args.scenarios.split(",")
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; choose from {list(SCENARIOS)}")
    startup = statistics.median(startup_time() for _ in range(3))
    lines = [f"# `racer` vs irace 3.5 ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Command: `{' '.join(['python', 'benchmarks/cli_vs_irace.py', *sys.argv[1:]])}`; seeds {seeds}. "
             f"held-out = mean cost of the final best configuration on the test instances x 5 fixed "
             f"seeds (lower is better). racer's interpreter and import start-up: {startup:.2f} s "
             "(median of 3).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            lines += bench_scenario(name, SCENARIOS[name], seeds, args.parallel, Path(tmp), startup,
                                    with_floor=not args.no_floor, extra_args=tuple(shlex.split(args.extra_args)))
            Path(args.out).write_text("\n".join(lines) + "\n")
    if not args.no_overhead:
        with tempfile.TemporaryDirectory() as tmp:
            oh = overhead(Path(tmp), args.parallel)
        per_run = (oh["racer"] - oh["startup"] - oh["floor"]) / oh["runs"] * 1000
        lines += ["## Dispatch overhead", "",
                  f"{oh['runs']} runs of a 20 ms runner, `--parallel {args.parallel}` (load {load()}): "
                  f"racer {oh['racer']:.2f} s, of which {oh['startup']:.2f} s interpreter and import start-up; "
                  f"the same runs through a bare thread pool {oh['floor']:.2f} s; "
                  f"racer / floor = {oh['racer'] / oh['floor']:.3f}, excluding start-up "
                  f"{(oh['racer'] - oh['startup']) / oh['floor']:.3f}; overhead {per_run:.2f} ms per run."]
        ip = inprocess_overhead()
        lines += ["", f"racer's own cost per run (no process start-up, {ip['runs']} runs, "
                  f"journal on, load {load()}): {ip['wall'] / ip['runs'] * 1000:.2f} ms."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
