"""racer.tune with a ConfigSpace space against the ``racer`` command, on examples/tsp-sa.

The quality target of ``racer.tune``: ``racer.tune`` with a ``ConfigSpace.ConfigurationSpace``,
``n_jobs=2`` and an ``evaluate`` defined in the user's script (this one) runs within its
budget and is no worse than the command line beyond 2 SE over >= 10 seeds.

For each seed, the same tuning two ways, one after the other under the same load:

* **cli**: ``racer --scenario examples/tsp-sa/scenario.txt --seed S --parallel 2`` (its
  target-runner, irace's parameters file, forbidden file and configurations file);
* **tune**: ``racer.tune(evaluate, cs, train, budget=400, n_jobs=2, random_state=S)`` with the
  scenario's space written as ConfigSpace (conditions and the forbidden rule as clauses; the
  configurations file's configuration as ConfigSpace's default, raced first as irace races
  the file's).

The two spaces are not the same object, so the runs differ seed by seed (ConfigSpace has no
``digits``: the translation keeps more decimals where a log range needs them); what is
compared is quality. Each final best is scored on held-out runs by one function for both:
the mean tour length over the 8 test instances x ``--test-seeds`` fixed seeds of
``tsp_sa.evaluate`` (lower is better). Reported: held-out cost, runs used, wall, paired
differences with SE.

``python benchmarks/tune_vs_cli.py --seeds 10 --out benchmarks/results/tune_vs_cli.md``
(about 1 minute a seed on 2 quiet cores).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tsp-sa"
sys.path.insert(0, str(EXAMPLE))

import tsp_sa  # noqa: E402  (the solver the example's target-runner calls)

import racer  # noqa: E402


def evaluate(config, instance, seed):
    """The user's function, defined in this script (no main guard is needed by racer)."""
    return tsp_sa.evaluate(config, instance, seed)


def listed(name: str) -> list[str]:
    return [str(EXAMPLE / "instances" / line.strip())
            for line in (EXAMPLE / name).read_text().splitlines() if line.strip()]


def configspace():
    """examples/tsp-sa/parameters.txt, forbidden.txt and default.txt as a ConfigSpace space."""
    from ConfigSpace import (Categorical, ConfigurationSpace, EqualsCondition,
                             ForbiddenAndConjunction, ForbiddenEqualsClause,
                             ForbiddenGreaterThanClause, Float, OrdinalHyperparameter)

    cs = ConfigurationSpace(seed=0)
    move = Categorical("move", ["swap", "2opt", "mixed"], default="2opt")
    t0 = Float("t0", (0.01, 100.0), log=True, default=1.0)
    cooling = Float("cooling", (0.9, 0.9995), default=0.995)
    effort = OrdinalHyperparameter("effort", ["low", "medium", "high"], default_value="medium")
    restarts = Categorical("restarts", ["0", "1"], default="0")
    restart_at = Float("restart_at", (0.001, 0.5), default=0.1)
    cs.add([move, t0, cooling, effort, restarts, restart_at,
            EqualsCondition(restart_at, restarts, "1"),
            ForbiddenAndConjunction(ForbiddenEqualsClause(move, "swap"),
                                    ForbiddenGreaterThanClause(t0, 10.0))])
    return cs


def held_out(best: dict, seeds: int) -> float:
    test = listed("test.txt")
    return statistics.fmean(evaluate(best, inst, 1000 + s) for inst in test for s in range(seeds))


def run_cli(seed: int, tmp: Path) -> dict:
    folder = tmp / f"cli-{seed}"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("arena", "__pycache__"))
    (folder / "arena").mkdir()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "import sys; from racer.cli import main; sys.exit(main())",
                           "--scenario", "scenario.txt", "--seed", str(seed), "--parallel", "2",
                           "-q", "1", "--no-report"], cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"racer failed on seed {seed}:\n{proc.stderr[-2000:]}")
    results = json.loads((folder / "arena" / "results.json").read_text())
    best = {k: v for k, v in results["elites"][0]["values"].items() if v is not None}
    return {"best": best, "runs": results["experiments"], "wall": wall}


def run_tune(seed: int, budget: int) -> dict:
    t0 = time.perf_counter()
    res = racer.tune(evaluate, configspace(), listed("train.txt"), budget=budget, n_jobs=2,
                     test_instances=listed("test.txt"),  # the scenario's test phase, as the cli
                     random_state=seed, progress=False)
    return {"best": dict(res.best), "runs": res.experiments, "wall": time.perf_counter() - t0}


def paired(a: list, b: list) -> tuple[float, float]:
    d = [x - y for x, y in zip(a, b)]
    return statistics.fmean(d), (statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--test-seeds", type=int, default=3, help="fixed seeds per test instance")
    ap.add_argument("--out", default=None, help="a markdown file for the table")
    args = ap.parse_args()
    if args.seeds < 1 or args.test_seeds < 1:
        ap.error("--seeds and --test-seeds must be >= 1")
    budget = 400  # the scenario's maxExperiments
    rows = []
    with tempfile.TemporaryDirectory(prefix="tune-vs-cli-") as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            row = {"seed": seed}
            for tool, run in (("cli", lambda: run_cli(seed, Path(tmp))), ("tune", lambda: run_tune(seed, budget))):
                got = run()
                row[tool] = {**got, "test": held_out(got["best"], args.test_seeds)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    cost = {t: [r[t]["test"] for r in rows] for t in ("cli", "tune")}
    d, se = paired(cost["tune"], cost["cli"])
    w = [r["tune"]["wall"] / r["cli"]["wall"] for r in rows]
    lines = [
        f"# racer.tune (ConfigSpace, n_jobs=2) against `racer --scenario` on examples/tsp-sa "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
        f"Command: `python benchmarks/tune_vs_cli.py {' '.join(sys.argv[1:])}`; budget {budget} runs; "
        f"held-out = mean tour length over 8 test instances x {args.test_seeds} seeds (lower is better); "
        f"load average at start {os.getloadavg()[0]:.1f}.", "",
        "| seed | cli held-out | tune held-out | runs cli / tune | wall cli / tune (s) |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {r['seed']} | {r['cli']['test']:.3f} | {r['tune']['test']:.3f} | "
          f"{r['cli']['runs']} / {r['tune']['runs']} | {r['cli']['wall']:.1f} / {r['tune']['wall']:.1f} |"
          for r in rows], "",
        f"Mean held-out: cli {statistics.fmean(cost['cli']):.3f}, tune {statistics.fmean(cost['tune']):.3f}; "
        f"tune - cli = {d:+.3f} ± {se:.3f} (paired SE, {len(rows)} seeds; "
        f"{d / statistics.fmean(cost['cli']):+.2%} of cli's mean). "
        f"Worst seed: cli {max(cost['cli']):.3f}, tune {max(cost['tune']):.3f}. "
        f"Runs: every tuning within {budget}: "
        f"{all(r[t]['runs'] <= budget for r in rows for t in ('cli', 'tune'))}. "
        f"Wall ratio tune / cli: median {statistics.median(w):.2f}.",
    ]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
