"""What stopping slow runs saves: a tuning where a few configurations hang on one instance.

``racer.tuning.slow_runs`` stops a run that has taken ``outlier_factor`` (default 1000) times
the median wall time of the runs finished on its instance. This benchmark measures what that
saves a user whose scenario has no ``targetRunnerTimeout``, against the same tuning with the
stop off (``outlier_factor=None``: every run is waited for; the hanging configurations' costs
are ordinary, so the cost rule has nothing to drop either), paired by seed, in the same run:

* the target sleeps its cost in milliseconds (cost = ``instance x (1 + (x - 0.3)^2)``,
  3-16 ms), except that configurations with ``x > 0.97`` (3 % of the space) take ``--hang``
  seconds (default 30 s: 10^4 times an ordinary run, the ratio of the minisat run of 1.47
  billion propagations among runs of 10^4-10^6) on instance 5 of 8;
* ``racer.tune(..., budget=300, n_jobs=2)``; reported per seed: wall time, runs stopped,
  the best's x and its true cost, and the ratio of wall times (stop on / off) with its mean
  and SE over seeds.

``python benchmarks/slow_runs.py --seeds 4`` (up to 2 minutes per seed, mostly the hangs of
the runs with the stop off; ``--quick``: one seed, 10 s hangs) prints a Markdown table and
appends one JSON line per tuning to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import racer

SPACE = 'x "" r (0, 1)\n'
TRAIN = [float(k) for k in range(1, 9)]
HANG_INSTANCE = 5.0
HANG_REGION = 0.97
OUT = Path(__file__).parent / "results" / "slow_runs.jsonl"


def true_cost(x: float) -> float:
    """Mean cost over the training instances, hangs excluded (they are not a cost)."""
    return statistics.fmean(i * (1.0 + (x - 0.3) ** 2) for i in TRAIN)


def make_target(hang: float):
    def target(config, instance, seed):
        cost = instance * (1.0 + (config["x"] - 0.3) ** 2)
        if config["x"] > HANG_REGION and instance == HANG_INSTANCE:
            time.sleep(hang)
        else:
            time.sleep(cost / 1000)
        return cost
    return target


def one(seed: int, hang: float, factor: float | None) -> dict:
    start = time.perf_counter()
    res = racer.tune(make_target(hang), SPACE, TRAIN, budget=300, n_jobs=2, random_state=seed,
                     progress=False, outlier_factor=factor)
    wall = time.perf_counter() - start
    runs = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    stopped = sum(str(r["message"]).startswith("stopped after") for r in runs)
    hangs = sum(1 for r in runs if r["iteration"] > 0
                and res.configurations[r["configuration"]]["x"] > HANG_REGION
                and r["instance"] == str(HANG_INSTANCE) and r["status"] != "speculative-unused")
    return {"seed": seed, "factor": factor, "hang": hang, "wall": wall, "stopped": stopped,
            "hang_runs": hangs, "experiments": res.experiments, "best_x": res.best["x"],
            "best_true_cost": true_cost(res.best["x"]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--hang", type=float, default=30.0, help="seconds a hanging run takes")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--quick", action="store_true",
                    help="seed 1 only, hangs of 10 s (stopped after about 7 s)")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.first_seed, args.hang = 1, 1, 10.0
    if args.seeds < 1 or not args.hang > 0:
        ap.error("--seeds must be >= 1 and --hang > 0")
    rows = []
    with open(args.out, "a", encoding="utf-8") as f:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for factor in (1000.0, None):
                row = one(seed, args.hang, factor)
                row["command"] = "python " + " ".join(sys.argv)
                f.write(json.dumps(row) + "\n")
                f.flush()
                rows.append(row)
                print(f"seed {seed} factor {factor}: wall {row['wall']:.1f} s, stopped "
                      f"{row['stopped']}, hang runs {row['hang_runs']}, best x "
                      f"{row['best_x']:.3f}", file=sys.stderr)
    print(table(rows))
    return 0


def table(rows: list) -> str:
    by = {(r["seed"], r["factor"]): r for r in rows}
    seeds = sorted({s for s, _ in by if (s, None) in by and (s, 1000.0) in by})
    out = ["| seed | wall, stop on (s) | wall, stop off (s) | on / off | runs stopped | "
           "hanging runs (on / off) | best's true cost (on / off) |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    ratios = []
    for s in seeds:
        on, off = by[s, 1000.0], by[s, None]
        ratios.append(on["wall"] / off["wall"])
        out.append(f"| {s} | {on['wall']:.1f} | {off['wall']:.1f} | {ratios[-1]:.2f} | "
                   f"{on['stopped']} | {on['hang_runs']} / {off['hang_runs']} | "
                   f"{on['best_true_cost']:.4f} / {off['best_true_cost']:.4f} |")
    # Seeds on which no configuration hung differ only by noise (the first tuning of a
    # process also pays its imports): the ratio is summarised where a run hung.
    hung = [r for s, r in zip(seeds, ratios) if by[s, None]["hang_runs"]]
    total = (sum(by[s, 1000.0]["wall"] for s in seeds) / sum(by[s, None]["wall"] for s in seeds)
             if seeds else math.nan)
    out.append(f"\ntotal wall time on / off over {len(seeds)} seeds: {total:.2f}")
    if len(hung) > 1:
        se = statistics.stdev(hung) / math.sqrt(len(hung))
        out.append(f"on / off on the {len(hung)} seeds where a configuration hung: "
                   f"{statistics.fmean(hung):.2f} +/- {se:.2f} (mean +/- SE)")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
