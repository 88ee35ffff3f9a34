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
(``racer.race_loop.drive`` on the pool); medians of ``--repeats`` runs. Also the
CPU time (``getrusage``): start-up CPU is that of this process and its reaped workers for a
pool started and shut down with one evaluation per worker; race-process CPU per evaluation
is this process's CPU during the race on the warm pool (sending tasks, reading results,
the race's bookkeeping: the serial part every evaluation goes through), divided by the
evaluations. On a loaded machine wall times mostly measure the other jobs; CPU times much
less so.

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_pool.py [--quick] [--workers 2]

On a shared machine the wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import statistics
import time

from racer import KeepAll, Race
from racer.execution import WorkerPool
from racer.race_loop import InProcess, OnWorkerPool, drive


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


def cpu_seconds() -> float:
    """CPU of this process (and of its children that have been waited for)."""
    t = os.times()  # clock ticks (10 ms) for children: fine for a start-up of ~0.5 s
    own = time.process_time()  # this process, to the µs
    return own + t.children_user + t.children_system


def race_time(n_cand: int, n_inst: int, pool=None, timeout=None) -> tuple[float, float]:
    """Wall time and this process's CPU time of the race, evaluated in process (pool None)
    or on a warm pool, with the loop of ``Race.run`` (``racer.race_loop.drive``)."""
    r = Race(list(range(n_cand)), test=KeepAll(), first_test=1, instances=range(n_inst),
             random_state=0)
    start, cpu = time.perf_counter(), time.process_time()
    drive(r, InProcess(trivial) if pool is None else OnWorkerPool(pool, timeout=timeout))
    assert r.n_evaluations == n_cand * n_inst and not r.result().failures
    return time.perf_counter() - start, time.process_time() - cpu


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
    runs = [race_time(n_cand, n_inst) for _ in range(repeats)]
    nan = float("nan")
    rows.append(("in process", nan, nan, statistics.median(t for t, _ in runs),
                 statistics.median(c for _, c in runs)))
    for kind in ("ProcessPoolExecutor", "WorkerPool", "WorkerPool + timeout"):
        starts, start_cpus, runs = [], [], []
        for _ in range(repeats):
            pool, startup = warm(w, kind)
            starts.append(startup)
            try:
                timeout = 60.0 if kind.endswith("timeout") else None
                runs.append(race_time(n_cand, n_inst, pool, timeout))
            finally:
                pool.shutdown()
            c1 = cpu_seconds()
            pool, _ = warm(w, kind)  # start-up CPU alone: a pool started and shut down
            pool.shutdown()
            start_cpus.append(cpu_seconds() - c1)
        rows.append((kind, statistics.median(starts), statistics.median(start_cpus),
                     statistics.median(t for t, _ in runs), statistics.median(c for _, c in runs)))

    print("| how | pool start-up (s) | start-up CPU (s) | per evaluation (µs) | race-process CPU per evaluation (µs) |")
    print("| --- | --- | --- | --- | --- |")
    for kind, startup, start_cpu, total, cpu in rows:
        start_text = "— | —" if startup != startup else f"{startup:.3f} | {start_cpu:.3f}"
        print(f"| {kind} | {start_text} | {1e6 * total / n_eval:.0f} | {1e6 * cpu / n_eval:.0f} |")


if __name__ == "__main__":
    main()
