"""Benavoli et al. (2015) Tables 2-3: the Bayesian race against three F-races on identical data.

q candidates with true means mu_i ~ U(0, 1) (drawn per repetition), scores N(mu_i, rho^2),
larger better; an iteration gives every survivor 5 new instances and is followed by a test;
at most 300 iterations; with several survivors at the end the best mean wins. Every race runs
through the real engine (``racer.Race``, ask/tell, first_test = each_test = 5) reading a
pre-generated matrix. All methods of a repetition share that matrix and the race seed, so
their differences are paired. Repetitions run in a process pool (2 workers by default).

Reported per setting and method: ITER (iterations / 300), evaluations, MAE (true rank of the
winner - 1), the rate at which the true best is eliminated, and the number of candidates
removed as indistinguishable (with how many of those were truly within the band), each as
mean +- SE; then paired differences Bayesian - F-race.

Usage::

    python benchmarks/paper_racing.py --quick                     # 10 reps, ~1 min
    python benchmarks/paper_racing.py --reps 200 --rep0 10000 --csv benchmarks/results/paper_racing_runs.csv
    python benchmarks/paper_racing.py --summarize benchmarks/results/paper_racing_runs.csv

Seeds: the data of repetition r of setting (q, rho) are drawn from
``default_rng([2015, q, 1000 rho, r])``; the race seed from ``SeedSequence([7, q, 1000 rho,
r])``. Defaults of BayesianTest were chosen on repetitions 1000-1399 (pilot); the reported
table uses a fresh block (10000+). Both are recorded per row in the CSV.
"""

from __future__ import annotations

import os

# BLAS threads fight the worker processes on 2 cores; set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import csv
import math
import multiprocessing as mp
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _racing_sim import PAPER, PAPER_INDIST, SETTINGS, one_repetition  # noqa: E402

from racer.progress import track  # noqa: E402

FIELDS = [
    "q", "rho", "rep", "method", "driver", "data_seed", "race_seed", "iterations", "iter", "evaluations",
    "winner", "mae", "best_eliminated", "n_indist", "n_indist_true", "n_survivors", "seconds",
    "ms_per_test",
]
FRACES = ["frace_s", "frace_mr", "frace_conover"]


def _mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    if len(x) < 2:
        return float(x.mean()) if len(x) else math.nan, math.nan
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))


def _fmt(m, se, digits=2):
    return f"{m:.{digits}f}±{se:.{digits}f}"


def load(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                for k in ("q", "rep", "iterations", "evaluations", "winner", "mae",
                          "best_eliminated", "n_indist", "n_indist_true", "n_survivors"):
                    r[k] = int(r[k])
                for k in ("rho", "iter", "seconds", "ms_per_test"):
                    r[k] = float(r[k])
                rows.append(r)
    return rows


def summarize(rows, bayes="bayes"):
    """Markdown tables: per-method means, paired differences, the paper's target."""
    methods = sorted({r["method"] for r in rows}, key=lambda m: (m not in PAPER and m != bayes, m))
    by = {}
    for r in rows:
        by.setdefault((r["q"], r["rho"], r["method"]), {})[r["rep"]] = r
    settings = [s for s in SETTINGS if any((s[0], s[1], m) in by for m in methods)]
    head = "| method | " + " | ".join(f"{q},{rho:g}" for q, rho in settings) + " |"
    sep = "|---" * (len(settings) + 1) + "|"
    out = []
    reps_per = {s: len(by.get((s[0], s[1], methods[0]), {})) for s in settings}
    out.append(f"Repetitions per setting: {', '.join(f'{q},{rho:g}: {n}' for (q, rho), n in reps_per.items())}\n")

    def table(title, cell):
        out.append(f"### {title}\n")
        out.append(head)
        out.append(sep)
        for m in methods:
            cells = []
            for q, rho in settings:
                runs = list(by.get((q, rho, m), {}).values())
                cells.append(cell(runs) if runs else "")
            out.append(f"| {m} | " + " | ".join(cells) + " |")
        for m in ("bayes", "frace_s", "frace_mr"):
            if m in methods and title.startswith("ITER / MAE"):
                out.append(
                    f"| *paper {m}* | "
                    + " | ".join(
                        f"*{PAPER[m][SETTINGS.index(s)][0]:.2f} / {PAPER[m][SETTINGS.index(s)][1]:.2f}*"
                        for s in settings
                    )
                    + " |"
                )
        out.append("")

    table(
        "ITER / MAE (mean ± SE)",
        lambda runs: _fmt(*_mean_se([r["iter"] for r in runs]))
        + " / " + _fmt(*_mean_se([r["mae"] for r in runs])),
    )
    table("Evaluations (mean ± SE)", lambda runs: _fmt(*_mean_se([r["evaluations"] for r in runs]), 0))
    table(
        "True best eliminated (rate ± SE)",
        lambda runs: _fmt(*_mean_se([r["best_eliminated"] for r in runs]), 3),
    )
    table(
        "Removed as indistinguishable (mean ± SE; truly within the band)",
        lambda runs: _fmt(*_mean_se([r["n_indist"] for r in runs]))
        + f" ({np.mean([r['n_indist_true'] for r in runs]):.2f})",
    )
    out.append("*paper (Table 3, Bayesian)*: " + ", ".join(f"{v}" for v in PAPER_INDIST) + "\n")
    table("ms per test step (engine + test, mean)", lambda runs: f"{np.mean([r['ms_per_test'] for r in runs]):.2f}")

    bayes_methods = [m for m in methods if m.startswith("bayes")]
    frace_methods = [m for m in FRACES if m in methods]
    out.append("### Paired differences, Bayesian − F-race: MAE diff ± SE ; ITER diff ± SE\n")
    out.append("| variant | vs | " + " | ".join(f"{q},{rho:g}" for q, rho in settings) + " |")
    out.append("|---" * (len(settings) + 2) + "|")
    target = {}
    for bm in bayes_methods:
        for fm in frace_methods:
            cells = []
            for q, rho in settings:
                a, b = by.get((q, rho, bm), {}), by.get((q, rho, fm), {})
                common = sorted(set(a) & set(b))
                if not common:
                    cells.append("")
                    continue
                dm = _mean_se([a[k]["mae"] - b[k]["mae"] for k in common])
                di = _mean_se([a[k]["iter"] - b[k]["iter"] for k in common])
                target[(bm, fm, q, rho)] = (dm, di)
                cells.append(f"{dm[0]:+.2f}±{dm[1]:.2f} ; {di[0]:+.3f}±{di[1]:.3f}")
            out.append(f"| {bm} | {fm} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("### Targets: MAE < F-Race_S, < F-Race_MR, < Conover F-race; ITER ≤ F-Race_S; MAE ≤ paper's Bayesian\n")
    out.append("| variant | conditions met (point) | beyond 2 SE | weakest condition (margin ± SE) |")
    out.append("|---|---|---|---|")
    for bm in bayes_methods:
        conds = []
        for q, rho in settings:
            for fm in frace_methods:
                if (bm, fm, q, rho) in target:
                    dm, di = target[(bm, fm, q, rho)]
                    conds.append((f"MAE<{fm} at {q},{rho:g}", -dm[0], dm[1]))
                    if fm == "frace_s":
                        conds.append((f"ITER<=F-S at {q},{rho:g}", -di[0], di[1]))
            runs = list(by.get((q, rho, bm), {}).values())
            if runs:
                mae = _mean_se([r["mae"] for r in runs])
                paper = PAPER["bayes"][SETTINGS.index((q, rho))][1]
                conds.append((f"MAE<=paper at {q},{rho:g}", paper - mae[0], mae[1]))
        if not conds:
            continue
        met = sum(c[1] > 0 or (c[0].startswith("ITER") and c[1] >= 0) for c in conds)
        strong = sum(c[1] > 2 * c[2] for c in conds if c[2] == c[2])
        weakest = min(conds, key=lambda c: c[1] / c[2] if c[2] and c[2] == c[2] else c[1])
        out.append(
            f"| {bm} | {met}/{len(conds)} | {strong}/{len(conds)} | "
            f"{weakest[0]}: {weakest[1]:+.3f} ± {weakest[2]:.3f} |"
        )
    out.append("")
    return "\n".join(out)


def speed(configs, repeats=5):
    """Per-step cost of BayesianTest.decide, cold (first call) and warm (after n - 5 rows),
    with the warm step of irace's Conover F-race (FRaceTest) on the same matrix and the ratio
    of their CPU times (CPU rather than wall: on a loaded machine wall times of the longer
    step inflate with preemption).

    Data: the paper's generator, (q, rho) = (m, 0.1) -- many clearly ordered pairs, the
    expensive case for the joint Monte Carlo -- and (m, 1.0). A warm step is what a race
    pays: the engine's incremental statistics (racer._race_stats.RaceStats, lent through the
    view) have counted the first n - 5 rows, 5 new rows arrive.
    """
    from racer._race_stats import RaceStats
    from racer.racing.frace import FRaceTest
    from racer.racing.bayesian import BayesianTest
    from racer.racing.base import RaceView
    from racer.stats._kernels import blas_single_thread
    from _racing_sim import make_data

    with blas_single_thread():  # one-time library scan (~0.1 s), not a per-step cost
        pass

    def timed(test, data, rows, ids, r):
        stats = RaceStats(data.shape[1])
        t0 = time.perf_counter()
        test.decide(RaceView(data[: rows - 5], ids, stats=stats), np.random.default_rng([r, 0]))
        t1, c1 = time.perf_counter(), time.process_time()
        out = test.decide(RaceView(data[:rows], ids, stats=stats), np.random.default_rng([r, 1]))
        t2, c2 = time.perf_counter(), time.process_time()
        return t1 - t0, t2 - t1, c2 - c1, out

    lines = [
        "| statements | m | n | S | rho | gate open | eliminated | cold ms | warm ms (median of "
        f"{repeats}) | warm ms (max) | warm CPU ms (median) | Conover warm CPU ms (median) | "
        "CPU ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    # "all" simulates up to m(m-1)/2 statements: timed on the first configuration only.
    for statements, m, n, n_samples, rho in [
        (st, *c, rho)
        for st in ("per_loser", "all")
        for c in (configs if st == "per_loser" else configs[:1])
        for rho in (0.1, 1.0)
    ]:
        _, data = make_data(m, rho, 0)
        reps = int(np.ceil((n + 5 * repeats) / data.shape[0]))
        data = np.vstack([data] * reps)
        ids = np.arange(m)
        cold, warm, warm_cpu, conover, n_out, gate = [], [], [], [], 0, False
        for r in range(repeats):
            rows = n + 5 * r
            c, w, wc, out = timed(BayesianTest(n_samples=n_samples, statements=statements),
                                  data, rows, ids, r)
            cold.append(c)
            warm.append(w)
            warm_cpu.append(wc)
            conover.append(timed(FRaceTest(), data, rows, ids, r)[2])
            n_out = len(out)
            view = RaceView.from_scores(data[:rows], ids)
            gate = BayesianTest(n_samples=n_samples)._gate(view) if m >= 3 else True
        lines.append(
            f"| {statements} | {m} | {n} | {n_samples} | {rho:g} | {gate} | {n_out} | "
            f"{1e3 * np.median(cold):.1f} | {1e3 * np.median(warm):.1f} | {1e3 * max(warm):.1f} | "
            f"{1e3 * np.median(warm_cpu):.1f} | {1e3 * np.median(conover):.2f} | "
            f"{np.median(warm_cpu) / np.median(conover):.1f} |"
        )
        print(lines[-1], file=sys.stderr)
    return "\n".join(lines)


_IRACE_SCRIPT = r"""
suppressMessages(library(irace))
args <- commandArgs(trailingOnly = TRUE)
costs <- as.matrix(read.csv(args[1], header = FALSE))
n <- nrow(costs); q <- ncol(costs)
# irace 3.5 with one parameter trips on is.na() of a one-column data.frame: add a fixed pad.
parameters <- readParameters(text = sprintf('id "" i (1, %d)\npad "" c ("x")\n', q))
confs <- data.frame(id = 1:q, pad = "x", stringsAsFactors = FALSE)
runner <- function(experiment, scenario) {
  list(cost = costs[as.integer(experiment$instance),
                    as.integer(experiment$configuration[["id"]])], call = "")
}
scenario <- list(
  targetRunner = runner, instances = as.character(1:n), maxExperiments = q * n,
  nbIterations = 1, nbConfigurations = q, deterministic = 1, sampleInstances = 0,
  firstTest = 5, eachTest = 1, elitist = 0, minNbSurvival = 1, testType = "F-test",
  initConfigurations = confs, logFile = args[2], debugLevel = 0, seed = 1, quiet = TRUE
)
scenario <- checkScenario(defaultScenario(scenario))
elites <- irace(scenario = scenario, parameters = parameters)
load(args[2])
ex <- iraceResults$experiments
conf <- iraceResults$allConfigurations
ids <- conf$id[match(as.integer(colnames(ex)), conf$.ID.)]
cnt <- colSums(!is.na(ex))[order(ids)]
cat("COUNTS", cnt, "\n")
cat("ELITE", elites$id[1], "\n")
"""


def irace_crosscheck(n_rows=300, reps=2, ties=False):
    """Race the same cost matrices with irace 3.5 (R) and with racer + FRaceTest("conover").

    irace is run as a single non-elitist race of the given configurations (first test at 5,
    a test at every instance, down to one survivor), as irace's R sources do; the
    comparison is every candidate's number of instances raced, i.e. each elimination point.
    Needs ``Rscript`` with the irace package (Debian: r-cran-irace).
    """
    import subprocess
    import tempfile

    from _racing_sim import make_data
    from racer.racing.frace import FRaceTest
    from racer.engine import Race

    lines = ["| setting | rep | ties | candidates | instances raced by irace = racer | "
             "elite irace = racer (winner=\"mean\") | irace ms | racer ms |",
             "|---|---|---|---|---|---|---|---|"]
    tmp = tempfile.mkdtemp()
    script = os.path.join(tmp, "race.R")
    with open(script, "w") as fh:
        fh.write(_IRACE_SCRIPT)
    n_agree = n_total = n_elite = n_elite_mean = 0
    for q, rho in SETTINGS:
        for rep in range(reps):
            _, scores = make_data(q, rho, 20000 + rep)
            scores = scores[:n_rows]
            if ties:
                scores = np.round(scores, 1)
            path = os.path.join(tmp, f"costs_{q}_{rep}.csv")
            np.savetxt(path, -scores, delimiter=",", fmt="%.17g")  # irace minimises costs
            t0 = time.perf_counter()
            out = subprocess.run(
                ["Rscript", script, path, os.path.join(tmp, "log.Rdata")],
                capture_output=True, text=True, check=True,
            ).stdout
            t1 = time.perf_counter()
            irace_counts = [int(v) for v in out.split("COUNTS")[1].split("ELITE")[0].split()]
            irace_elite = int(out.split("ELITE")[1].split()[0]) - 1
            race = Race(range(q), test=FRaceTest(post_hoc="conover"), first_test=5, each_test=1,
                        max_instances=n_rows, instances=range(n_rows), random_state=0, direction="maximize")
            while not race.finished:
                for ev in race.ask():
                    race.tell(ev, float(scores[ev.instance, ev.candidate]))
            t2 = time.perf_counter()
            res = race.result()
            ours = [res.n_instances] * q
            for h in res.history:
                ours[h.candidate_index] = h.n_instances
            agree = ours == irace_counts
            n_agree += agree
            n_total += 1
            # The same race under the engine's mean rule, to show what FRaceTest's stated
            # winner rule (irace's rank sum) changes.
            by_mean = res.survivor_indices[
                np.lexsort((np.arange(len(res.survivor_indices)),
                            -scores[: res.n_instances, res.survivor_indices].mean(axis=0)))[0]
            ]
            elite_agree = res.best_index == irace_elite
            n_elite += elite_agree
            n_elite_mean += int(by_mean) == irace_elite
            lines.append(
                f"| {q},{rho:g} | {20000 + rep} | {ties} | {q} | {agree} "
                f"({sum(irace_counts)} evaluations) | {elite_agree} ({int(by_mean) == irace_elite}) "
                f"| {1e3 * (t1 - t0):.0f} | {1e3 * (t2 - t1):.0f} |"
            )
            print(lines[-1], file=sys.stderr)
            if not agree:
                print("irace:", irace_counts, "\nracer:", ours, file=sys.stderr)
    lines.append(f"\n{n_agree}/{n_total} races identical in every elimination point; elite "
                 f"identical in {n_elite}/{n_total} (FRaceTest's rank-sum rule), "
                 f"{n_elite_mean}/{n_total} under winner=\"mean\".")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 repetitions per setting")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rep0", type=int, default=10000, help="first repetition (seed block)")
    ap.add_argument("--methods", default="bayes,frace_s,frace_mr,frace_conover")
    ap.add_argument("--settings", default="0,1,2,3,4,5", help="indices into SETTINGS")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--driver", default="engine", choices=["engine", "loop"],
        help="racer.Race via ask/tell (default) or the equivalent bare loop (pilot sweeps)",
    )
    ap.add_argument("--csv", default=None, help="append one row per race here")
    ap.add_argument("--summarize", nargs="*", default=None, help="only summarize these CSVs")
    ap.add_argument("--md", default=None, help="write the markdown summary here")
    ap.add_argument("--speed", action="store_true", help="time BayesianTest (and FRaceTest) steps instead")
    ap.add_argument("--irace", action="store_true", help="cross-check FRaceTest against irace (R)")
    ap.add_argument("--ties", action="store_true", help="with --irace: round scores (ties)")
    args = ap.parse_args(argv)

    if args.irace:
        text = irace_crosscheck(n_rows=100 if args.quick else 300, reps=1 if args.quick else 2,
                                ties=args.ties)
        print(text)
        if args.md:
            with open(args.md, "w") as fh:
                fh.write(text)
        return

    if args.speed:
        configs = [(200, 200, 10_000), (200, 1000, 50_000), (30, 1500, 10_000), (2, 1500, 10_000)]
        if args.quick:
            configs = [(50, 100, 10_000), (200, 200, 10_000)]
        text = speed(configs, repeats=3 if args.quick else 5)
        print(text)
        if args.md:
            with open(args.md, "w") as fh:
                fh.write(text)
        return

    if args.summarize:
        text = summarize(load(args.summarize))
        print(text)
        if args.md:
            with open(args.md, "w") as fh:
                fh.write(text)
        return
    reps = 10 if args.quick else args.reps
    methods = args.methods.split(",")
    settings = [SETTINGS[int(i)] for i in args.settings.split(",")]
    # Interleave settings so a partial run covers every setting.
    tasks = [(q, rho, args.rep0 + r, methods, args.driver) for r in range(reps) for q, rho in settings]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    rows = []
    writer, fh = None, None
    if args.csv:
        new = not os.path.exists(args.csv)
        fh = open(args.csv, "a", newline="")
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            writer.writeheader()
    ctx = mp.get_context("fork")
    with ctx.Pool(args.jobs) as pool:
        # A bar on a terminal, nothing in a log (racer.progress.track, shared by the scripts).
        for result in track(pool.imap_unordered(one_repetition, tasks, chunksize=1),
                            total=len(tasks), label="paper_racing repetitions"):
            rows.extend(result)
            if writer:
                writer.writerows(result)
                fh.flush()
    if fh:
        fh.close()
    text = summarize(rows)
    print(text)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
