"""racer alone on the optim scenarios of ``cli_vs_irace.py``: final best's held-out and training
cost per seed, for racer-side experiments that do not need irace run again.

Runs racer exactly as ``cli_vs_irace.py`` does (its ``run_racer``: same flags, launcher, seeds,
``--parallel``) and scores the final best with the same functions: ``held_out`` (test
instances x 5 fixed seeds) and ``cli_vs_irace_train_check.train_mean`` (training instances x 3
fixed seeds). irace's numbers for comparison are the recorded ones in
``results/cli_vs_irace_tables.md`` (same seeds, budget and held-out runs).

``nice python benchmarks/cli_racer_quality.py [--seeds 5] [--scenarios optim-mixed,optim-faults,tsp-sa]``
(training cost only for the optim scenarios).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_vs_irace import SCENARIOS, fresh_copy, held_out, run_racer  # noqa: E402
from cli_vs_irace_train_check import train_mean  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--scenarios", default="optim-mixed,optim-faults")
    args = ap.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    with tempfile.TemporaryDirectory(prefix="racer-quality-") as tmp:
        for name in args.scenarios.split(","):
            sc = SCENARIOS[name]
            rows = []
            for seed in seeds:
                folder = fresh_copy(sc, Path(tmp), f"{name}-{seed}")
                got = run_racer(sc, folder, seed, args.parallel)
                # train_mean runs optim-mixed's runner: training cost for the optim scenarios only.
                train = train_mean(got["best"]) if name.startswith("optim") else float("nan")
                rows.append((seed, train, held_out(sc, got["best"]), got["runs"]))
                print(f"{name} seed {seed}: held-out {rows[-1][2]:.4f} training {rows[-1][1]:.4f} "
                      f"runs {got['runs']} best {' '.join(got['best'])}", flush=True)
            print(f"{name} median over seeds {seeds}: held-out "
                  f"{statistics.median(r[2] for r in rows):.4f}, training "
                  f"{statistics.median(r[1] for r in rows):.4f}", flush=True)


if __name__ == "__main__":
    main()
