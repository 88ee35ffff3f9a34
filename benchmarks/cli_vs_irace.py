"""The ``racer`` command against irace 3.5 on the same scenario, budget, seeds and parallelism.

Scenario: ``examples/tsp-sa`` (simulated annealing on 25-35-city TSP instances; a
categorical, a log-scale real, a real, an ordinal, a conditional parameter and a forbidden
rule; 400 runs). For each seed both tools run the scenario unchanged with ``--seed S
--parallel 2`` and the same interpreter as ``targetRunnerLauncher`` (no pyenv shim). Each
tool's final best configuration is then re-evaluated on the 8 held-out test instances with 5
fixed seeds each (the same 40 runs for both tools), so the quality comparison does not depend
on the tools' own test phases.

Reported per tool: median (over seeds) of the held-out mean tour length, runs used, wall time;
and racer's dispatch overhead against the floor (the same runs through a bare thread pool).
Needs irace (Debian: ``apt-get install r-cran-irace``); the irace executable is found with
``Rscript -e 'cat(system.file(package="irace"))'``.

``python benchmarks/cli_vs_irace.py --quick`` (2 seeds) or ``--seeds 5``; writes
``benchmarks/results/cli_vs_irace.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "tsp-sa"
PYTHON = sys.executable  # the venv interpreter itself (its realpath would leave the venv)


def irace_executable() -> str:
    out = subprocess.run(["Rscript", "-e", 'cat(system.file(package="irace"))'],
                         capture_output=True, text=True, check=True).stdout.strip()
    if not out:
        raise SystemExit("irace is not installed (apt-get install r-cran-irace)")
    return os.path.join(out, "bin", "irace")


def fresh_copy(base: Path, name: str) -> Path:
    dest = base / name
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("arena"))
    (dest / "arena").mkdir()
    return dest


def run_irace(folder: Path, seed: int, parallel: int) -> dict:
    cmd = [irace_executable(), "--scenario", "scenario.txt", "--seed", str(seed),
           "--parallel", str(parallel), "--target-runner-launcher", PYTHON]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"irace failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    used = [int(x) for x in re.findall(r"experimentsUsedSoFar: (\d+)", proc.stdout)]
    lines = proc.stdout.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("# Best configurations as commandlines"))
    best = lines[k + 1].split()[1:]
    return {"wall": wall, "runs": max(used) if used else None, "best": best}


def run_racer(folder: Path, seed: int, parallel: int) -> dict:
    cmd = [PYTHON, "-c", "import sys; from racer.cli import main; sys.exit(main())",
           "--scenario", "scenario.txt", "--seed", str(seed), "--parallel", str(parallel),
           "--target-runner-launcher", PYTHON, "--quiet", "1"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True,
                          env=os.environ.copy())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"racer failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    res = json.loads((folder / "arena" / "results.json").read_text())
    import csv
    with open(folder / "arena" / "runs.csv") as f:
        runs = [r for r in csv.DictReader(f) if r["iteration"] != "0"]
    run_wall = sum(float(r["wall"]) for r in runs)
    return {"wall": wall, "runs": res["experiments"], "best": res["elites"][0]["command_line"],
            "run_wall": run_wall}


def held_out(best: list, seeds_per_instance: int = 5) -> float:
    names = (EXAMPLE / "test.txt").read_text().split()
    costs = []
    for k, name in enumerate(names):
        for s in range(seeds_per_instance):
            out = subprocess.run([PYTHON, str(EXAMPLE / "target-runner"), "0", str(k + 1),
                                  str(1000 + 17 * k + s), str(EXAMPLE / "instances" / name), *best],
                                 capture_output=True, text=True, check=True).stdout
            costs.append(float(out.split()[-1]))
    return statistics.fmean(costs)


OVERHEAD_RUNNER = """import sys, time
time.sleep(0.02)
opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
print((float(opts["--x"]) - 1.0) ** 2 + int(sys.argv[2]) % 7)
"""


def overhead(base: Path, parallel: int, budget: int = 400) -> dict:
    """Dispatch overhead: racer on a runner that sleeps 20 ms, against the floor (the same
    number of the same runner calls through a bare thread pool of the same size)."""
    import concurrent.futures as cf

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
        list(pool.map(lambda _: subprocess.run(argv, capture_output=True, cwd=folder), range(runs)))
    floor = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([PYTHON, "-c", "import racer.cli, racer.adapters.frace, racer.cli.iterated"],
                   check=True)
    startup = time.perf_counter() - t0
    return {"runs": runs, "racer": racer_wall, "floor": floor, "startup": startup}


def inprocess_overhead(budget: int = 2000) -> dict:
    """racer's own cost per run (thread-pool dispatch, race, F-test, SQLite journal, sampler),
    with a target-runner stand-in that returns at once: no process start-up to hide it."""
    import random

    from racer.adapters.frace import FRaceTest
    from racer.cli.iterated import Settings, Tuner
    from racer.cli.parameters import Parameter, ParameterSpace
    from racer.cli.scenario import Instance
    from racer.cli.target_runner import RunResult

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cli_vs_irace.md"))
    args = ap.parse_args()
    seeds = list(range(1, (2 if args.quick else args.seeds) + 1))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for seed in seeds:
            for tool, runner in (("irace", run_irace), ("racer", run_racer)):
                folder = fresh_copy(base, f"{tool}-{seed}")
                got = runner(folder, seed, args.parallel)
                got["test"] = held_out(got["best"])
                got.update(tool=tool, seed=seed)
                rows.append(got)
                print(f"seed {seed} {tool}: held-out {got['test']:.2f}, runs {got['runs']}, "
                      f"wall {got['wall']:.1f}s, best {' '.join(got['best'])}", flush=True)
    lines = ["# `racer` vs irace 3.5 on examples/tsp-sa", "",
             f"Budget 400 runs, `--parallel {args.parallel}`, seeds {seeds}, same interpreter as "
             "targetRunnerLauncher for both; held-out = mean tour length of the final best "
             "configuration on 8 test instances x 5 fixed seeds (lower is better).", "",
             "| seed | tool | held-out | runs | wall (s) |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['tool']} | {r['test']:.2f} | {r['runs']} | {r['wall']:.1f} |")
    lines += ["", "| tool | median held-out | median wall (s) |", "| --- | --- | --- |"]
    for tool in ("irace", "racer"):
        mine = [r for r in rows if r["tool"] == tool]
        lines.append(f"| {tool} | {statistics.median(r['test'] for r in mine):.2f} | "
                     f"{statistics.median(r['wall'] for r in mine):.1f} |")
    racer_rows = [r for r in rows if r["tool"] == "racer"]
    if racer_rows:
        lines += ["", "racer's runs.csv: sum of run wall times / parallel vs racer's wall time "
                  "(includes start-up, the test phase and the journal): "
                  + ", ".join(f"seed {r['seed']}: {r['run_wall'] / args.parallel:.1f}s of {r['wall']:.1f}s"
                              for r in racer_rows)]
    with tempfile.TemporaryDirectory() as tmp:
        oh = overhead(Path(tmp), args.parallel)
    per_run = (oh["racer"] - oh["startup"] - oh["floor"]) / oh["runs"] * 1000
    lines += ["", f"Dispatch overhead ({oh['runs']} runs of a 20 ms runner, `--parallel {args.parallel}`): "
              f"racer {oh['racer']:.2f} s, of which {oh['startup']:.2f} s interpreter and import start-up; "
              f"the same runs through a bare thread pool {oh['floor']:.2f} s; "
              f"racer / floor excluding start-up = {(oh['racer'] - oh['startup']) / oh['floor']:.3f}; "
              f"overhead {per_run:.2f} ms per run."]
    ip = inprocess_overhead()
    lines += ["", f"racer's own cost per run (no process start-up, {ip['runs']} runs, "
              f"journal on): {ip['wall'] / ip['runs'] * 1000:.2f} ms."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
