"""Tuning on two objectives: racer's Pareto racing against irace 3.5 on a weighted sum,
at the same budget, measured by the hypervolume of each method's front on held-out instances.

The scenario is ``benchmarks/tuning/pbo-deap-mo``: DEAP's genetic algorithm on IOHexperimenter's
PBO problems, with ``quality = 1 - best / optimum`` and ``work = evaluations used / bits``
(both counted, not timed: the same on any machine), tuned over three parameters (the evaluation
budget per bit, ``mu`` and the mutation rate). Both objectives are minimised and read on the
normalised scale of ``target-runner-weighted`` (``quality / QUALITY_BOUND``, ``work /
WORK_BOUND``; fixed bounds chosen from the pilot).

Methods, for each seed ``S`` and budget ``B`` (runs of the target algorithm):

* ``irace-ws``: irace 3.5 with ``--seed S --max-experiments B`` on the weighted sum with equal
  weights (0.5, 0.5), as irace's guide has users do; its front is its final elites (the
  configurations it prints as "Best configurations", up to ``minNbSurvival`` of them).
* ``irace-ws3``: three irace runs at ``B/3`` each, weights 0.25, 0.5 and 0.75 on quality (seeds
  ``S``, ``S + 1``, ``S + 2``), the union of their elites; only where ``B/3`` is at least
  irace's minimum budget for three parameters (96).
* ``racer-race``: racer's engine-level Pareto race (``racer.race`` with
  ``direction=["minimize", "minimize"]``, ``ParetoTest`` at its defaults): the number of
  configurations irace races in its first iteration at budget ``B`` (the scenario's default
  first, the rest uniform from the space with seed ``S``, as irace's first iteration samples
  them), raced over irace's kind of instance stream (the training instances shuffled, each with
  a fresh seed, again and again) with ``budget=B``; its front is ``RaceResult.pareto_front``.
  One race, no iterations.
* ``racer-tune``: racer's iterated Pareto tuning, ``racer.tune(..., direction=["minimize",
  "minimize"], budget=B, random_state=S)`` from the same parameters file and default (what
  ``racer --scenario`` does with ``objectives``): irace's schedule and sampling, races with
  ``ParetoTest``, a Pareto set of elites (at most ``2 x minNbSurvival`` = 6 here, thinned by
  crowding distance); its front is ``TuneResult.pareto_front``. Evaluated in this process
  (no runner processes), like ``racer-race``: the runs are the same numbers either way.

Measure: every configuration a method returns runs on the 8 held-out test instances (81 bits)
with 3 fixed seeds each (the same runs for every method, cached); its point is its mean
normalised (quality, work). A method's front is the non-dominated set of its points; its
hypervolume (``moocore.hypervolume``) is taken against the fixed reference point
``REFERENCE`` (1.1 x the worst normalised value seen in the pilot). Reported: mean
hypervolume per method, the paired difference racer - irace (mean +/- SE over seeds, and how
many seeds racer is at least as good), returned configurations, front sizes and runs used.

Seeds 0-4 are the pilot (``--pilot``: the bounds and the reference point, from 21
configurations a seed -- the default and 20 uniform ones -- on the training instances); the
report uses seeds 100 and up. irace's runners go through ``target-runner --serve`` (one process
with DEAP imported, forking a child per run), so that irace's process per run costs a Python
start-up and not DEAP's imports: the numbers are the same as a plain run's.

Usage::

    nice -n 15 python benchmarks/pareto_tuning.py --pilot
    nice -n 15 python benchmarks/pareto_tuning.py --seeds 10 --budgets 300,150
    nice -n 15 python benchmarks/pareto_tuning.py --seeds 10 --budgets 300,150 --reuse OLD.jsonl  # runs only rows OLD lacks
    nice -n 15 python benchmarks/pareto_tuning.py --quick      # 1 seed, budget 300, a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import importlib.util
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "benchmarks" / "tuning" / "pbo-deap-mo"
TEST_SEEDS = 3
# The hypervolume's reference point on the normalised objectives: 1.1 x the worst normalised
# quality and work seen in the pilot (``--pilot``, seeds 0-4), rounded up.
REFERENCE = (1.1, 1.04)
WEIGHTS = (0.25, 0.5, 0.75)
METHODS = ("irace-ws", "irace-ws3", "racer-race", "racer-tune")


def _load(name: str, path: Path):
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


RUNNER = _load("pbo_mo_runner", SCENARIO / "target-runner")
WEIGHTED = _load("pbo_mo_weighted", SCENARIO / "target-runner-weighted")


def hypervolume(points, reference=REFERENCE) -> float:
    """Hypervolume (``moocore.hypervolume``) of ``points`` (rows, both objectives minimised)
    against ``reference``; points that do not dominate it add nothing, and no points give 0.

    >>> hypervolume([[0.2, 0.8], [0.5, 0.5], [0.8, 0.2]], reference=(1.0, 1.0))
    0.37
    """
    import moocore

    pts = np.asarray(points, dtype=float).reshape(-1, len(reference))
    pts = pts[np.all(pts < np.asarray(reference), axis=1)]
    return float(moocore.hypervolume(pts, ref=np.asarray(reference, float))) if len(pts) else 0.0


def front(points) -> np.ndarray:
    """The non-dominated rows of ``points`` (both objectives minimised), duplicates once
    (``racer.stats.pareto.nondominated_mask``, the engine's own dominance).

    >>> front([[1, 2], [2, 1], [2, 2], [1, 2]]).tolist()
    [[1.0, 2.0], [2.0, 1.0]]
    """
    from racer.stats.pareto import nondominated_mask

    pts = np.unique(np.asarray(points, dtype=float).reshape(-1, 2), axis=0)
    return pts[nondominated_mask(-pts)]  # the mask is for larger-is-better rows


def space():
    from racer.tuning.parameters import read_configurations, read_parameters

    sp = read_parameters(str(SCENARIO / "parameters.txt"), 4)
    return sp, read_configurations(str(SCENARIO / "default.txt"), sp)[0]


def switches(config: dict) -> list[str]:
    """A configuration (parameter name -> value) as the runner's switches."""
    sp, _ = space()
    return sp.command_line(config)


def train_instances() -> list[str]:
    return (SCENARIO / "train.txt").read_text().split()


def held_out_instances() -> list[str]:
    return (SCENARIO / "test.txt").read_text().split()


def run_point(words: list[str], instance: str, seed: int) -> tuple[float, float]:
    """Normalised (quality, work) of one run, in this process."""
    return WEIGHTED.normalise(*map(float, RUNNER.answer(["", "0", "0", str(seed), instance, *words]).split()))


class HeldOut:
    """Each returned configuration's mean normalised (quality, work) on the test instances x
    ``test_seeds`` fixed seeds, computed once per distinct configuration."""

    def __init__(self, test_seeds: int = TEST_SEEDS, instances: list[str] | None = None):
        self.runs = [(inst, 1000 + 17 * k + s) for k, inst in enumerate(instances or held_out_instances())
                     for s in range(test_seeds)]
        self.cache: dict = {}

    def point(self, words: list[str]) -> tuple[float, float]:
        key = tuple(words)
        if key not in self.cache:
            pts = np.array([run_point(words, inst, seed) for inst, seed in self.runs])
            self.cache[key] = tuple(pts.mean(axis=0))
        return self.cache[key]


def irace_first_iteration(budget: int, n_params: int) -> int:
    """How many configurations irace 3.5 races in its first iteration at ``budget``."""
    from racer.tuning.schedule import IraceSchedule, default_n_iterations

    s = IraceSchedule(n_params=n_params, first_test=5, each_test=1, mu=5)
    n_iter = default_n_iterations(n_params)
    return s.n_configurations(s.iteration_budget(budget, iteration=1, n_iterations=n_iter), iteration=1)


def instance_stream(seed: int, budget: int) -> list[tuple[str, int]]:
    """irace's stream of training instances (``generateInstances``): the instances shuffled,
    each with a fresh seed, repeated until the budget could not use more."""
    rng = np.random.default_rng([seed, 23])
    train = train_instances()
    blocks = math.ceil(budget / len(train))
    return [(train[i], int(rng.integers(2**31 - 1))) for _ in range(blocks) for i in rng.permutation(len(train))]


def racer_race(seed: int, budget: int) -> dict:
    import racer
    from racer import ParetoTest
    from racer.tuning.sampler import Sampler

    sp, default = space()
    n = irace_first_iteration(budget, len(sp.params))
    configs = [default] + Sampler(sp).sample_uniform(n - 1, np.random.default_rng(seed))
    words = [sp.command_line(c) for c in configs]
    res = racer.race(lambda w, pair: run_point(w, *pair), words, instance_stream(seed, budget),
                     direction=["minimize", "minimize"], test=ParetoTest(), budget=budget,
                     random_state=seed, progress=False)
    return {"returned": [list(w) for w in res.pareto_front], "runs": int(res.n_evaluations),
            "raced": len(words)}


def racer_tune(seed: int, budget: int) -> dict:
    """racer's iterated Pareto tuning (``racer.tune`` with ``direction=[...]``, the command
    line's ``objectives``): irace's schedule, Pareto elites; its front is
    ``TuneResult.pareto_front``."""
    import racer

    sp, default = space()
    res = racer.tune(lambda c, inst, s: run_point(sp.command_line(c), inst, s), str(SCENARIO / "parameters.txt"),
                     train_instances(), budget=budget, direction=["minimize", "minimize"], initial=[default],
                     digits=4, random_state=seed, progress=False)
    return {"returned": [sp.command_line(c) for c in res.pareto_front], "runs": int(res.experiments)}


@contextlib.contextmanager
def runner_server(base: Path):
    """``target-runner --serve`` on a socket under ``base``, for irace's runs."""
    sock = str(base / "runner.sock")
    proc = subprocess.Popen([sys.executable, str(SCENARIO / "target-runner"), "--serve", sock],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            if os.path.exists(sock) or proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            raise RuntimeError(f"the runner's server did not start: {proc.stderr.read().decode()[-2000:]}")
        yield sock
    finally:
        proc.terminate()
        proc.wait()


def irace_run(seed: int, budget: int, weight: float, base: Path, sock: str) -> dict:
    """One irace 3.5 run on the weighted sum; its final elites as switch lists."""
    import shutil

    from cli_vs_irace import irace_executable

    folder = base / f"irace-{seed}-{budget}-{weight}"
    shutil.copytree(SCENARIO, folder, ignore=shutil.ignore_patterns("arena"))
    (folder / "arena").mkdir()
    (folder / "weight.txt").write_text(f"{weight}\n")
    cmd = [irace_executable(), "--scenario", "scenario.txt", "--seed", str(seed), "--parallel", "1",
           "--max-experiments", str(budget), "--target-runner-launcher", sys.executable]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PBO_MO_SERVER": sock, "OPENBLAS_NUM_THREADS": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"irace failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return {"returned": elites(proc.stdout), "runs": max(int(x) for x in re.findall(r"experimentsUsedSoFar: (\d+)", proc.stdout))}


def elites(stdout: str) -> list[list[str]]:
    """irace's final elites from its output: the lines after "# Best configurations as
    commandlines", each ``ID --switch value ...``.

    >>> elites("# Best configurations as commandlines (first number is the configuration ID; ...)\\n"
    ...        "7   --mu 5 --mut-rate 1\\n12  --mu 9 --mut-rate 2\\n\\n# done")
    [['--mu', '5', '--mut-rate', '1'], ['--mu', '9', '--mut-rate', '2']]
    """
    lines = stdout.splitlines()
    k = max(i for i, ln in enumerate(lines) if ln.startswith("# Best configurations as commandlines"))
    out = []
    for ln in lines[k + 1:]:
        words = ln.split()
        if not words or not words[0].isdigit():
            break
        out.append(words[1:])
    return out


def method_run(method: str, seed: int, budget: int, base: Path, sock: str | None) -> dict | None:
    if method == "racer-race":
        return racer_race(seed, budget)
    if method == "racer-tune":
        return racer_tune(seed, budget)
    if method == "irace-ws":
        return irace_run(seed, budget, 0.5, base, sock)
    if budget // 3 < 96:  # irace 3.5's minimum for three parameters: it would refuse to start
        return None
    parts = [irace_run(seed + k, budget // 3, w, base, sock) for k, w in enumerate(WEIGHTS)]
    return {"returned": [w for p in parts for w in p["returned"]], "runs": sum(p["runs"] for p in parts)}


def measure(row: dict, bench: HeldOut) -> dict:
    pts = [bench.point(w) for w in row["returned"]]
    f = front(pts)
    return {**row, "points": [list(p) for p in pts], "front": f.tolist(), "hv": hypervolume(f)}


def coverage(a, b) -> float:
    """Zitzler & Thiele's (1999) set coverage C(a, b): the share of the points of front ``b``
    that some point of front ``a`` weakly dominates (minimised; 1: ``a`` dominates or equals
    all of ``b``).

    >>> coverage([[0, 1], [1, 0]], [[0, 1], [2, 2], [0.5, 0.5]])
    0.6666666666666666
    """
    pa, pb = np.asarray(a, float).reshape(-1, 2), np.asarray(b, float).reshape(-1, 2)
    if not len(pb):
        return 1.0
    return float(np.mean((pa[:, None, :] <= pb[None, :, :]).all(axis=2).any(axis=0)))


def paired(rows: list[dict], a: str, b: str, budget: int) -> dict | None:
    """Paired hypervolume difference ``a - b`` over the seeds both finished at ``budget``
    (mean, SE, seeds where ``a`` is at least as good) and the paired difference of runs used.

    >>> rows = [{"seed": s, "method": m, "budget": 9, "hv": h, "runs": r, "front": [[h, h]]} for s, m, h, r in
    ...         [(1, "a", 0.5, 9), (1, "b", 0.4, 8), (2, "a", 0.5, 9), (2, "b", 0.6, 9)]]
    >>> p = paired(rows, "a", "b", 9)
    >>> p["n"], round(p["mean"], 12), round(p["se"], 12), p["wins"], p["runs"]
    (2, 0.0, 0.1, 1, 0.5)
    """
    got = {(r["seed"], r["method"]): r for r in rows if r["budget"] == budget and r.get("hv") is not None}
    seeds = sorted(s for s, m in got if m == a and (s, b) in got)
    if not seeds:
        return None
    d = [got[s, a]["hv"] - got[s, b]["hv"] for s in seeds]
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan
    return {"n": len(d), "mean": statistics.fmean(d), "se": se, "wins": sum(x >= 0 for x in d),
            "runs": statistics.fmean(got[s, a]["runs"] - got[s, b]["runs"] for s in seeds),
            "covers": statistics.fmean(coverage(got[s, a]["front"], got[s, b]["front"]) for s in seeds),
            "covered": statistics.fmean(coverage(got[s, b]["front"], got[s, a]["front"]) for s in seeds)}


def report(rows: list[dict], budgets: list[int], head: list[str]) -> str:
    lines = list(head)
    for budget in budgets:
        mine = [r for r in rows if r["budget"] == budget]
        methods = [m for m in METHODS if any(r["method"] == m and r.get("hv") is not None for r in mine)]
        lines += [f"## Budget {budget} runs", "",
                  "| method | seeds | mean HV | SE | returned configs | front size | runs used |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for m in methods:
            got = [r for r in mine if r["method"] == m and r.get("hv") is not None]
            hv = [r["hv"] for r in got]
            se = statistics.stdev(hv) / math.sqrt(len(hv)) if len(hv) > 1 else math.nan
            lines.append(f"| {m} | {len(got)} | {statistics.fmean(hv):.4f} | {se:.4f} | "
                         f"{statistics.fmean(len(r['returned']) for r in got):.1f} | "
                         f"{statistics.fmean(len(r['front']) for r in got):.1f} | "
                         f"{statistics.fmean(r['runs'] for r in got):.0f} |")
        lines += ["", "| racer - irace | seeds | mean HV difference | SE | racer >= irace | runs used, racer - irace "
                  "| C(racer, irace) | C(irace, racer) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for racer_m in [m for m in methods if m.startswith("racer")]:
            for irace_m in [m for m in methods if m.startswith("irace")]:
                p = paired(rows, racer_m, irace_m, budget)
                if p:
                    lines.append(f"| {racer_m} - {irace_m} | {p['n']} | {p['mean']:+.4f} | {p['se']:.4f} | "
                                 f"{p['wins']}/{p['n']} | {p['runs']:+.1f} | {p['covers']:.2f} | {p['covered']:.2f} |")
        lines += ["", "| seed | " + " | ".join(f"{m} HV (runs)" for m in methods) + " |",
                  "| --- |" + " --- |" * len(methods)]
        by = {(r["seed"], r["method"]): r for r in mine}
        for seed in sorted({r["seed"] for r in mine}):
            cells = [f"{by[seed, m]['hv']:.4f} ({by[seed, m]['runs']})" if (seed, m) in by and by[seed, m].get("hv") is not None
                     else "-" for m in methods]
            lines.append(f"| {seed} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def pilot(seeds, n_random: int = 20) -> dict:
    """Raw (quality, work) of the default and ``n_random`` uniform configurations per seed on
    the training instances (one run each): the worst values fix the normalisation bounds and
    the reference point."""
    from racer.tuning.sampler import Sampler

    sp, default = space()
    worst = np.zeros(2)
    for seed in seeds:
        configs = [default] + Sampler(sp).sample_uniform(n_random, np.random.default_rng(seed))
        for c in configs:
            for k, inst in enumerate(train_instances()):
                raw = RUNNER.answer(["", "0", "0", str(seed * 100 + k), inst, *sp.command_line(c)]).split()
                worst = np.maximum(worst, np.array(raw, float))
    norm = np.array(WEIGHTED.normalise(*worst))
    return {"worst_quality": worst[0], "worst_work": worst[1], "worst_normalised": norm.tolist()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=100)
    ap.add_argument("--budgets", default="300,150")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--test-seeds", type=int, default=TEST_SEEDS)
    ap.add_argument("--test-instances", type=int, default=0, help="only the first k test instances (0: all)")
    ap.add_argument("--pilot", action="store_true", help="seeds 0-4: the bounds and reference point")
    ap.add_argument("--quick", action="store_true", help="1 seed, budget 300")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pareto_tuning.md"))
    ap.add_argument("--reuse", default=None, metavar="FILE.jsonl",
                    help="take the rows (method, seed, budget) recorded there instead of running them again")
    args = ap.parse_args(argv)
    if args.pilot:
        print(json.dumps(pilot(range(5))))
        return
    budgets = [300] if args.quick else [int(b) for b in args.budgets.split(",")]
    methods = args.methods.split(",")
    unknown = [m for m in methods if m not in METHODS]
    if unknown or args.seeds < 1 or any(b < 1 for b in budgets):
        ap.error(f"--methods from {METHODS} (unknown: {unknown}); --seeds and --budgets positive")
    seeds = list(range(args.first_seed, args.first_seed + (1 if args.quick else args.seeds)))
    names = held_out_instances()[:args.test_instances or None]
    bench = HeldOut(args.test_seeds, names)
    out, jsonl = Path(args.out), Path(args.out).with_suffix(".jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    reused = {}
    if args.reuse:  # read before --out's JSON lines are emptied: it may be that file
        for line in Path(args.reuse).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                reused[r["method"], r["seed"], r["budget"]] = r
    jsonl.write_text("")
    head = [f"# Two-objective tuning: racer's Pareto race vs irace 3.5 on a weighted sum "
            f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
            f"Command: `python benchmarks/pareto_tuning.py {' '.join(sys.argv[1:] if argv is None else argv)}`; "
            f"scenario `benchmarks/tuning/pbo-deap-mo`; seeds {seeds}; budgets {budgets}; held-out: "
            f"{len(names)} test instances x {args.test_seeds} seeds; objectives normalised by "
            f"quality / {WEIGHTED.QUALITY_BOUND} and work / {WEIGHTED.WORK_BOUND}; hypervolume reference "
            f"point {REFERENCE} (higher is better). Load average at start "
            f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}.", ""]
    rows, t0 = [], time.perf_counter()
    need_irace = any(m.startswith("irace") for m in methods)
    with tempfile.TemporaryDirectory(prefix="pareto-tuning-") as tmp:
        server = runner_server(Path(tmp)) if need_irace else contextlib.nullcontext(None)
        with server as sock:
            for budget in budgets:
                for seed in seeds:
                    for method in methods:
                        t1 = time.perf_counter()
                        row = reused.get((method, seed, budget))
                        if row is None:
                            got = method_run(method, seed, budget, Path(tmp), sock)
                            if got is None:
                                continue
                            row = measure({"method": method, "seed": seed, "budget": budget, **got}, bench)
                            row["wall"] = time.perf_counter() - t1
                        rows.append(row)
                        with jsonl.open("a") as f:
                            f.write(json.dumps(row) + "\n")
                        print(f"budget {budget} seed {seed} {method}: HV {row['hv']:.4f}, runs {row['runs']}, "
                              f"returned {len(row['returned'])}, front {len(row['front'])}, "
                              f"{row['wall']:.0f} s", flush=True)
                    out.write_text(report(rows, budgets, head))
    tail = f"Total wall {time.perf_counter() - t0:.0f} s; load average at end {'/'.join(f'{x:.1f}' for x in os.getloadavg())}."
    out.write_text(report(rows, budgets, head) + "\n" + tail + "\n")
    print(tail)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
