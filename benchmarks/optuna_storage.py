"""What does an Optuna RDB storage (``sqlite:///``) cost ``IteratedRace``, against in memory?

``docs/optuna.md``'s ``IteratedRace`` example with ``storage="sqlite:///race.db"``
took 55.9 s at budget 500 against 1.3 s in memory (43x). This script runs the same iterated
race (the page's search space, ``x`` in [0, 1] and ``kind`` in {a, b}, a cheap ``evaluate``
on 50 instances, budget 500, TPE seeded) in memory and on a fresh SQLite file, alternately in
one process after a warm-up run (so Numba's cache and the imports are paid before timing),
and reports medians of ``--repeats`` runs and their ratio.

It also times the **floor**: adding the finished study's trials (the same content, already
computed) to a fresh SQLite study with Optuna's own ``study.add_trials`` in WAL mode, i.e.
what Optuna's RDB storage costs merely to hold the result. With an ``evaluate`` this cheap
the race itself costs less than that floor, so the ratio to the in-memory run cannot reach 1;
the ratio to in memory + floor says how much IteratedRace adds beyond storing its result.

    OPENBLAS_NUM_THREADS=1 python benchmarks/optuna_storage.py [--quick] [--repeats 5]

``--quick``: 3 repeats; ``--evaluate-ms 10`` makes each evaluation sleep 10 ms, a stand-in
for an ``evaluate`` that does some work. On a shared machine the wall times are upper bounds; the ratios are
measured within one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution

from racer.adapters.optuna import IteratedRace
from racer.adapters.optuna.iterated import _SqliteWal

SPACE = {"x": FloatDistribution(0, 1), "kind": CategoricalDistribution(["a", "b"])}
INSTANCES = list(range(50))


EVALUATE_SECONDS = 0.0  # --evaluate-ms: a sleep standing for a real evaluation's cost


def evaluate(params, instance):
    # Cheap by default: what is measured is the driver and its storage.
    if EVALUATE_SECONDS:
        time.sleep(EVALUATE_SECONDS)
    noise = 0.01 * ((instance * 7919) % 13)
    return (params["x"] - 0.3) ** 2 + (0.05 if params["kind"] == "b" else 0.0) + noise


def run_race(storage, budget):
    start = time.perf_counter()
    result = IteratedRace(evaluate, SPACE, INSTANCES, budget=budget, storage=storage,
                          study_name="bench", random_state=0, progress=False).run()
    return time.perf_counter() - start, result


def floor(trials, path):
    storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
    study = optuna.create_study(storage=storage)
    with _SqliteWal(storage):
        start = time.perf_counter()
        study.add_trials(trials)
        return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--evaluate-ms", type=float, default=0.0,
                        help="milliseconds each evaluation sleeps (default 0: cheap)")
    args = parser.parse_args(argv)
    global EVALUATE_SECONDS
    EVALUATE_SECONDS = args.evaluate_ms / 1000.0
    repeats = 3 if args.quick else args.repeats
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    memory, sqlite, floors = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        run_race(None, args.budget)  # warm-up: Numba's cache, imports
        run_race(f"sqlite:///{os.path.join(folder, 'warm.db')}", args.budget)
        for k in range(repeats):
            t_mem, res_mem = run_race(None, args.budget)
            t_sql, res_sql = run_race(f"sqlite:///{os.path.join(folder, f'race{k}.db')}",
                                      args.budget)
            assert res_sql.best_params == res_mem.best_params  # the same race
            memory.append(t_mem)
            sqlite.append(t_sql)
            floors.append(floor(res_mem.study.get_trials(),
                                os.path.join(folder, f"floor{k}.db")))
    n_trials = len(res_mem.study.trials)
    mem, sql, low = (statistics.median(v) for v in (memory, sqlite, floors))
    print(f"IteratedRace, budget {args.budget}, evaluate {args.evaluate_ms:g} ms: "
          f"{res_mem.n_evaluations} evaluations, "
          f"{res_mem.n_iterations} iterations, {n_trials} trials; median of {repeats} runs")
    print(f"{'':<44}{'seconds':>9}")
    print(f"{'in memory':<44}{mem:>9.3f}")
    print(f"{'sqlite:/// (fresh file)':<44}{sql:>9.3f}")
    print(f"{'floor: add_trials of the final trials':<44}{low:>9.3f}")
    print(f"ratio sqlite / in memory:            {sql / mem:6.2f}")
    print(f"ratio sqlite / (in memory + floor):  {sql / (mem + low):6.2f}")


if __name__ == "__main__":
    main()
