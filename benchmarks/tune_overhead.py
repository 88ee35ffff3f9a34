"""Per-evaluation overhead of ``racer.tune`` against the command line, on the same tuning.

One tiny scenario (one real parameter, 10 instances, ``maxExperiments`` = ``--budget``,
seed 1), tuned twice per setting, in this process, by the same tuner:

* ``racer --scenario`` (:func:`racer.cli.main`) with a target-runner doing nothing but print
  its ``--x`` value (a ``/bin/sh`` script: the cheapest runner a process can be);
* ``racer.tune`` with an ``evaluate`` returning ``config["x"]``: the same costs, so the same
  races, elites and runs (checked).

Both at ``n_jobs``/``--parallel`` 1 and 2. With evaluations that cost nothing, the wall time
of a whole tuning divided by its runs is what racer adds per evaluation: the tuner's own
bookkeeping (races, tests, journals, runs.csv), plus, for the command line, a process per
run, and, for ``racer.tune`` with ``n_jobs=2``, the worker processes' start and a round trip
per run. Reported: medians over ``--repeats`` of the wall time and of the CPU time (this
process and its waited-for children, ``os.times``) per run, and the ratio tune / command
line measured in the same invocation; for ``n_jobs=2``, the start-up of racer.tune's two
workers measured apart (:func:`worker_startup`, a fixed cost paid once per tuning) and the
wall time per run without it.

    OPENBLAS_NUM_THREADS=1 nice -n 15 python benchmarks/tune_overhead.py [--quick]
        [--budget 300] [--repeats 3]

On a shared machine the wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import racer
from racer.cli import EXIT_OK, main

PARAMETERS = 'x "--x " r (0, 1)\n'
INSTANCES = [f"inst-{k}" for k in range(1, 11)]
RUNNER = '#!/bin/sh\n# <id> <instance id> <seed> <instance> --x <value>: the cost is x\necho "$6"\n'


def evaluate(config, instance, seed):
    return config["x"]


def clock() -> tuple[float, float]:
    t = os.times()
    return time.perf_counter(), t.user + t.system + t.children_user + t.children_system


def run_cli(folder: str, budget: int, n_jobs: int) -> tuple[float, float, list, int]:
    os.makedirs(os.path.join(folder, "arena"))
    with open(os.path.join(folder, "parameters.txt"), "w") as f:
        f.write(PARAMETERS)
    with open(os.path.join(folder, "train.txt"), "w") as f:
        f.write("\n".join(INSTANCES) + "\n")
    runner = os.path.join(folder, "target-runner")
    with open(runner, "w") as f:
        f.write(RUNNER)
    os.chmod(runner, 0o755)
    with open(os.path.join(folder, "scenario.txt"), "w") as f:
        f.write(f'parameterFile = "parameters.txt"\ntargetRunner = "target-runner"\n'
                f'execDir = "arena"\ntrainInstancesDir = ""\ntrainInstancesFile = "train.txt"\n'
                f"maxExperiments = {budget}\nseed = 1\nparallel = {n_jobs}\n")
    wall, cpu = clock()
    code = main(["--scenario", os.path.join(folder, "scenario.txt"), "--quiet", "1",
                 "--no-report"])
    wall2, cpu2 = clock()
    if code != EXIT_OK:
        raise SystemExit(f"racer --scenario exited with {code}")
    with open(os.path.join(folder, "arena", "results.json")) as f:
        res = json.load(f)
    return wall2 - wall, cpu2 - cpu, [e["id"] for e in res["elites"]], res["experiments"]


def run_tune(folder: str, budget: int, n_jobs: int) -> tuple[float, float, list, int]:
    wall, cpu = clock()
    res = racer.tune(evaluate, PARAMETERS, INSTANCES, budget=budget, random_state=1,
                     n_jobs=n_jobs, storage=folder, progress=False)
    wall2, cpu2 = clock()
    return wall2 - wall, cpu2 - cpu, res.elite_ids, res.experiments


def worker_startup(n_jobs: int) -> float:
    """Seconds to start ``n_jobs`` workers as racer.tune does (one single-worker pool each,
    all started before the first is used) and run one task on each: the fixed cost a
    tuning with ``n_jobs > 1`` pays once."""
    from racer.execution import WorkerPool
    from racer.tuning.runner import _Evaluate

    start = time.perf_counter()
    pools = [WorkerPool(_Evaluate(evaluate, INSTANCES), 1) for _ in range(n_jobs)]
    for pool in pools:
        list(pool.imap_unordered([(0, ({"x": 0.5}, 0, 1))]))
    took = time.perf_counter() - start
    for pool in pools:
        pool.close()
    return took


def main_(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="budget 120, 1 repeat")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    budget, repeats = (120, 1) if args.quick else (args.budget, args.repeats)
    root = tempfile.mkdtemp(prefix="tune-overhead-")
    # Warm-up: imports (SciPy, Numba's cached kernels) paid before any timing.
    run_tune(os.path.join(root, "warm"), 120, 1)
    rows = []
    try:
        for n_jobs in (1, 2):
            got: dict = {"cli": [], "tune": []}
            outcomes = set()
            startup = []
            for r in range(repeats):
                if n_jobs > 1:
                    startup.append(worker_startup(n_jobs))
                # Alternate the order, so that neither always runs on a warmer machine.
                order = ("cli", "tune") if r % 2 == 0 else ("tune", "cli")
                for kind in order:
                    folder = os.path.join(root, f"{kind}-{n_jobs}-{r}")
                    run = run_cli if kind == "cli" else run_tune
                    wall, cpu, elites, runs = run(folder, budget, n_jobs)
                    got[kind].append((wall / runs, cpu / runs))
                    outcomes.add((kind, tuple(elites), runs))
            same = len({(e, n) for _, e, n in outcomes}) == 1
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for k, v in got.items()}
            rows.append((n_jobs, med, same, next(iter(outcomes))[2],
                         statistics.median(startup) if startup else 0.0))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"# racer.tune vs racer --scenario: budget {budget}, {repeats} repeat(s), "
          f"medians per run (ms); python {sys.version.split()[0]}")
    print("| n_jobs | runs | same elites and runs | CLI wall | tune wall | wall ratio tune/CLI "
          "| worker start-up (s) | tune wall without it | its ratio | CLI CPU | tune CPU "
          "| CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n_jobs, med, same, runs, startup in rows:
        (cw, cc), (tw, tc) = med["cli"], med["tune"]
        steady = tw - startup / runs
        print(f"| {n_jobs} | {runs} | {'yes' if same else 'NO'} | {1e3 * cw:.2f} | {1e3 * tw:.2f} "
              f"| {tw / cw:.2f} | {startup:.2f} | {1e3 * steady:.2f} | {steady / cw:.2f} "
              f"| {1e3 * cc:.2f} | {1e3 * tc:.2f} | {tc / cc:.2f} |")


if __name__ == "__main__":
    main_()
