"""What does racer's worker pool cost per evaluation, against ``ProcessPoolExecutor``?

A race whose test never eliminates, with a trivial ``evaluate`` (one multiplication), so what
is measured is the round trip of an evaluation through worker processes and the race's own
bookkeeping. Four ways to run the same race:

* ``in process``: ``n_jobs=1``, no timeout (the default; no pool at all);
* ``ProcessPoolExecutor``: ``executor=ProcessPoolExecutor(n)``, the pool racer used before
  (default start method of the platform: fork on Linux with Python < 3.14);
* ``WorkerPool``: ``n_jobs=n`` (racer's pool, spawn start method);
* ``WorkerPool + timeout``: ``n_jobs=n, timeout=60``.

Reported: pool start-up (creating the pool and a first evaluation on every worker), and the
wall time per evaluation of the race on the warm pool, driven by ``Race.run``'s own loop
(``ask`` a block, ``racer.execution.run_block`` it); medians of ``--repeats`` runs.

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_pool.py [--quick] [--workers 2]

On a shared machine the wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import statistics
import time

from racer import Race, RacingTest
from racer.execution import WorkerPool, run_block


class NeverEliminates(RacingTest):
    def decide(self, view, rng):
        return []

    def get_params(self):
        return {}


def trivial(candidate, instance):
    return candidate * 1.0001 + instance


def warm(n_workers: int, kind: str) -> tuple[object, float]:
    """Start a pool and run one evaluation per worker; return (pool, seconds)."""
    start = time.perf_counter()
    if kind == "ProcessPoolExecutor":
        pool = cf.ProcessPoolExecutor(n_workers)
        list(pool.map(trivial, range(n_workers), range(n_workers)))
    else:
        pool = WorkerPool(trivial, n_workers)
        list(pool.imap_unordered([(i, (i, i)) for i in range(n_workers)]))
    return pool, time.perf_counter() - start


def race_time(n_cand: int, n_inst: int, pool=None, timeout=None) -> float:
    """Wall time of the race, evaluated in process (pool None) or on a warm pool, with the
    loop of ``Race.run`` (ask a block, ``run_block`` it)."""
    r = Race(list(range(n_cand)), test=NeverEliminates(), first_test=1, instances=range(n_inst),
             random_state=0)
    start = time.perf_counter()
    while True:
        batch = r.ask()
        if not batch:
            break
        run_block(r, trivial, batch, pool, raise_errors=False, timeout=timeout)
    assert r.n_evaluations == n_cand * n_inst and not r.result().failures
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer evaluations and repeats")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    n_cand, n_inst = (20, 50) if args.quick else (20, 250)
    repeats = args.repeats or (3 if args.quick else 5)
    n_eval = n_cand * n_inst
    w = args.workers
    print(f"race: {n_cand} candidates x {n_inst} instances = {n_eval} evaluations, "
          f"{w} workers, blocks of {n_cand}; median of {repeats} runs\n")

    rows = []
    t_in = statistics.median(race_time(n_cand, n_inst) for _ in range(repeats))
    rows.append(("in process", float("nan"), t_in))
    for kind in ("ProcessPoolExecutor", "WorkerPool", "WorkerPool + timeout"):
        starts, runs = [], []
        for _ in range(repeats):
            pool, startup = warm(w, kind)
            starts.append(startup)
            try:
                timeout = 60.0 if kind.endswith("timeout") else None
                runs.append(race_time(n_cand, n_inst, pool, timeout))
            finally:
                pool.shutdown()
        rows.append((kind, statistics.median(starts), statistics.median(runs)))

    print(f"| how | pool start-up (s) | per evaluation (µs) |")
    print("| --- | --- | --- |")
    for kind, startup, total in rows:
        start_text = "—" if startup != startup else f"{startup:.3f}"
        print(f"| {kind} | {start_text} | {1e6 * total / n_eval:.0f} |")


if __name__ == "__main__":
    main()
