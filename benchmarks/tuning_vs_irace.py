"""The tuning suite (``benchmarks/tuning/``): the ``racer`` command against irace 3.5 on real
solvers, paired seeds, every final best evaluated on held-out test instances.

Each scenario is an irace scenario folder that runs unchanged under both tools (see
``benchmarks/tuning/README.md``: solver, parameters, instances, cost, run time). For each
scenario and seed ``S`` both tools run ``--seed S --parallel P`` through the launcher of
``cli_vs_irace.py`` (the venv's interpreter; irace's runners in their own session, as
racer's are), one after the other under the same load; irace gets the scenario's budget
(``maxExperiments``, or the quick budget with ``--quick``) and racer ``--racer-budget-factor``
times it. Each tool's final best is then run on the scenario's test instances with the same
fixed seeds (``cli_vs_irace.held_out``; ``test_seeds`` per instance), so the comparison does
not depend on the tools' own test phases.

Reported per scenario: mean and median held-out cost per tool, the paired difference
racer - irace (mean +/- SE over seeds, and as % of irace's mean), seeds where racer is at
least as good, the worst seed of each tool (a user runs a tuner once), and the runs each tool
used. A tool that fails or refuses the budget (racer below irace's minimum, exit 2) is
recorded as such and left out of the paired statistics.

``SUITE`` marks the scenarios used to choose racer's defaults (``pilot``) and those kept for
reporting them (``report``); ``--role pilot`` runs only the former:

=========================================  ========
sat-cadical, mip-mkp, bbob-cma             pilot
mip-gap, sat-capped, pbo-deap, ml-sklearn  report
=========================================  ========

``nice -n 19 python benchmarks/tuning_vs_irace.py [--seeds 20] [--scenarios a,b] [--role pilot]
[--racer-budget-factor 0.5] [--racer-args '--racing-test bayesian'] [--quick]``
(``--quick``: 2 seeds and each scenario's smallest budget irace accepts); writes ``--out``
(default ``benchmarks/results/tuning_vs_irace.md``) and, next to it, one JSON line per run.
``--reuse FILE.jsonl`` takes the runs already recorded there (same scenario, tool, seed and
budget) instead of running them again, e.g. irace's full-budget rows when only racer's
budget changes; the rows taken are copied to the new JSON lines.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_vs_irace import (ROOT, Scenario, budget_of, fresh_copy, held_out, load,  # noqa: E402
                          run_irace, run_racer)

TUNING = ROOT / "benchmarks" / "tuning"


@dataclasses.dataclass(frozen=True)
class Entry:
    scenario: Scenario
    role: str  # "pilot": may be used to choose defaults; "report": held out for reporting
    test_seeds: int  # fixed seeds per test instance in the held-out evaluation
    quick_budget: int  # just above irace's minimum for the parameter count (--quick)


def _entry(name: str, role: str, test_seeds: int, quick_budget: int, files: bool = True) -> Entry:
    return Entry(Scenario(TUNING / name, test_dir="instances" if files else None), role,
                 test_seeds, quick_budget)


# --quick gives irace 3.5 its smallest budget (irace's computeMinimumBudget, elitist):
# (minSurvival + 1) x nbIterations x (mu + eachTest + (nbIterations - 1) x elitistNewInstances),
# with minSurvival = nbIterations = floor(2 + log2(parameters)): 300 for 8-15 parameters,
# 180 for 4-7.
SUITE = {
    "sat-cadical": _entry("sat-cadical", "pilot", 3, 300),
    "mip-mkp": _entry("mip-mkp", "pilot", 3, 300),
    "bbob-cma": _entry("bbob-cma", "pilot", 3, 300, files=False),
    "mip-gap": _entry("mip-gap", "report", 3, 300),
    "sat-capped": _entry("sat-capped", "report", 3, 180),
    "pbo-deap": _entry("pbo-deap", "report", 5, 300, files=False),
    "ml-sklearn": _entry("ml-sklearn", "report", 2, 180, files=False),
}
ROLE = {name: e.role for name, e in SUITE.items()}


def paired_summary(rows: list[dict]) -> dict:
    """Per-tool and paired statistics of one scenario's rows (``seed``, ``tool``, ``test``:
    held-out cost or None when the tool failed, ``runs``: runs the tool used).

    >>> rows = [{"seed": s, "tool": t, "test": c, "runs": 100} for s, t, c in
    ...         [(1, "irace", 2.0), (1, "racer", 1.0), (2, "irace", 4.0), (2, "racer", 5.0)]]
    >>> got = paired_summary(rows)
    >>> got["racer"]["worst"], got["diff_mean"], got["diff_se"], got["wins"], got["pairs"]
    ((5.0, 2), 0.0, 1.0, 1, 2)
    """
    out = {}
    for tool in ("irace", "racer"):
        mine = [r for r in rows if r["tool"] == tool and r["test"] is not None]
        costs = [r["test"] for r in mine]
        worst = max(mine, key=lambda r: r["test"]) if mine else None
        out[tool] = {"n": len(mine), "failed": sum(r["tool"] == tool and r["test"] is None for r in rows),
                     "mean": statistics.fmean(costs) if costs else math.nan,
                     "median": statistics.median(costs) if costs else math.nan,
                     "worst": (worst["test"], worst["seed"]) if worst else (math.nan, None),
                     "runs": statistics.fmean(r["runs"] for r in mine) if mine else math.nan}
    held = {(r["seed"], r["tool"]): r["test"] for r in rows if r["test"] is not None}
    seeds = sorted({s for s, _ in held if (s, "irace") in held and (s, "racer") in held})
    diffs = [held[s, "racer"] - held[s, "irace"] for s in seeds]
    out["pairs"] = len(diffs)
    out["wins"] = sum(d <= 0 for d in diffs)
    out["diff_mean"] = statistics.fmean(diffs) if diffs else math.nan
    out["diff_se"] = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan
    base = statistics.fmean(held[s, "irace"] for s in seeds) if seeds else math.nan
    out["diff_pct"] = 100 * out["diff_mean"] / abs(base) if base else math.nan
    out["diff_pct_se"] = 100 * out["diff_se"] / abs(base) if base else math.nan
    return out


def default_switches(entry: Entry) -> list:
    """The command-line switches of the scenario's first configuration (``default.txt``)."""
    from racer.tuning.parameters import format_value, read_configurations, read_parameters
    from racer.cli.scenario import read_scenario

    sc = read_scenario(str(entry.scenario.path / "scenario.txt"))
    space = read_parameters(sc.path("parameterFile"))
    first = read_configurations(sc.path("configurationsFile"), space)[0]
    return [w for p in space.declared if first.get(p.name) is not None
            for w in (p.switch.strip(), format_value(first[p.name]))]


def one_run(name: str, entry: Entry, tool: str, seed: int, budget: int, parallel: int,
            base: Path, extra: tuple) -> dict:
    folder = fresh_copy(entry.scenario, base, f"{name}-{tool}-{seed}")
    t0 = time.perf_counter()
    try:
        got = (run_irace(entry.scenario, folder, seed, parallel, extra=extra) if tool == "irace"
               else run_racer(entry.scenario, folder, seed, parallel, extra=extra, time_report=False))
    except RuntimeError as exc:  # a refused budget (exit 2) or a failed run: recorded, not fatal
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        # the last error line names the cause (a refused budget, a runner's exception)
        reason = next((ln for ln in reversed(lines) if "too small" in ln or "Error" in ln or "rror:" in ln),
                      lines[-1] if lines else "")
        return {"scenario": name, "tool": tool, "seed": seed, "budget": budget, "runs": None,
                "test": None, "wall": time.perf_counter() - t0, "best": None,
                "outcome": f"failed: {reason.strip()[:300]}"}
    test = held_out(entry.scenario, got["best"], seeds_per_instance=entry.test_seeds)
    return {"scenario": name, "tool": tool, "seed": seed, "budget": budget, "runs": got["runs"],
            "test": test if math.isfinite(test) else None, "wall": got["wall"],
            "best": got["best"], "outcome": "ok", "tuning_time": tuning_time(folder, tool)}


def tuning_time(folder: Path, tool: str, min_time: float = 0.01) -> float | None:
    """The tuning's runtime: the sum of its training runs' reported times (each at least
    ``minMeasurableTime``, as irace records them), machine-independent when the runner reports
    an effort count; None when the runner reports no time. irace: its log's
    ``experimentLog[, "time"]``; racer: ``runs.csv`` (iterations > 0, runs the races used)."""
    if tool == "irace":
        got = subprocess.run(["Rscript", "-e", 'load("irace.Rdata"); t <- iraceResults$experimentLog[, "time"]; '
                              'cat(if (all(is.na(t))) "NA" else sum(t, na.rm = TRUE))'],
                             cwd=folder / "arena", capture_output=True, text=True)
        return float(got.stdout) if got.returncode == 0 and got.stdout.strip() not in ("", "NA") else None
    with open(folder / "arena" / "runs.csv", newline="") as f:
        times = [float(r["time"]) for r in csv.DictReader(f)
                 if r["iteration"] != "0" and r["status"] != "speculative-unused" and r["time"]]
    return sum(max(t, min_time) for t in times) if times else None


def scenario_lines(name: str, rows: list[dict], budgets: dict, default: float) -> list[str]:
    s = paired_summary(rows)
    lines = [f"## {name} ({ROLE[name]})", "",
             f"Budget: irace {budgets['irace']} runs, racer {budgets['racer']} runs. The first "
             f"configuration (`default.txt`) untuned: held-out {default:.5g}.", "",
             "| seed | irace held-out | racer held-out | racer - irace | irace runs | racer runs "
             "| irace wall (s) | racer wall (s) | irace tuning time | racer tuning time |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    by = {(r["seed"], r["tool"]): r for r in rows}
    for seed in sorted({r["seed"] for r in rows}):
        i, r = by[seed, "irace"], by[seed, "racer"]

        def cost(x):
            return f"{x['test']:.5g}" if x["test"] is not None else x["outcome"]
        diff = (f"{r['test'] - i['test']:+.4g}" if r["test"] is not None and i["test"] is not None else "")
        def spent(x):
            return f"{x['tuning_time']:.5g}" if x.get("tuning_time") is not None else ""
        lines.append(f"| {seed} | {cost(i)} | {cost(r)} | {diff} | {i['runs']} | {r['runs']} | "
                     f"{i['wall']:.1f} | {r['wall']:.1f} | {spent(i)} | {spent(r)} |")
    lines += ["", "| tool | seeds | failed | mean held-out | median held-out | worst (seed) | mean runs |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for tool in ("irace", "racer"):
        t = s[tool]
        lines.append(f"| {tool} | {t['n']} | {t['failed']} | {t['mean']:.5g} | {t['median']:.5g} | "
                     f"{t['worst'][0]:.5g} ({t['worst'][1]}) | {t['runs']:.0f} |")
    lines += ["", f"Paired racer - irace over {s['pairs']} seeds: {s['diff_mean']:+.4g} +/- "
              f"{s['diff_se']:.2g} (SE), {s['diff_pct']:+.1f}% +/- {s['diff_pct_se']:.1f}% of irace's "
              f"mean; racer at least as good on {s['wins']} of {s['pairs']}.", ""]
    spent = {(x["seed"], x["tool"]): x["tuning_time"] for x in rows if x.get("tuning_time") is not None}
    pairs = sorted({sd for sd, _ in spent if (sd, "irace") in spent and (sd, "racer") in spent})
    if pairs:  # runtime scenarios: the tuning's own runtime (the runs' reported times)
        ratios = [spent[sd, "racer"] / spent[sd, "irace"] for sd in pairs]
        se = statistics.stdev(ratios) / math.sqrt(len(ratios)) if len(ratios) > 1 else math.nan
        lines += [f"Tuning time (sum of the training runs' reported times): irace mean "
                  f"{statistics.fmean(spent[sd, 'irace'] for sd in pairs):.5g}, racer mean "
                  f"{statistics.fmean(spent[sd, 'racer'] for sd in pairs):.5g}; racer / irace per "
                  f"seed: mean {statistics.fmean(ratios):.3f} +/- {se:.2g} (SE), median "
                  f"{statistics.median(ratios):.3f}, over {len(pairs)} seeds.", ""]
    return lines


def summary_table(all_rows: dict, defaults: dict) -> list[str]:
    lines = ["## Summary", "", "| scenario | role | untuned default | irace mean | racer mean | racer - irace "
             "(% of irace, SE) | irace worst | racer worst | irace runs | racer runs | racer <= irace |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, rows in all_rows.items():
        s = paired_summary(rows)
        lines.append(f"| {name} | {ROLE[name]} | {defaults[name]:.5g} | {s['irace']['mean']:.5g} | "
                     f"{s['racer']['mean']:.5g} | "
                     f"{s['diff_pct']:+.1f}% +/- {s['diff_pct_se']:.1f}% | {s['irace']['worst'][0]:.5g} | "
                     f"{s['racer']['worst'][0]:.5g} | {s['irace']['runs']:.0f} | {s['racer']['runs']:.0f} | "
                     f"{s['wins']}/{s['pairs']} |")
    return lines + [""]


def read_reused(path: str | None) -> dict:
    """Rows of an earlier JSON-lines output by ``(scenario, tool, seed, budget)``; the last
    row of a key wins (a run recorded twice)."""
    if not path:
        return {}
    rows = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["scenario"], row["tool"], row["seed"], row["budget"]] = row
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 seeds, each scenario's quick budget")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--scenarios", default="", help=f"comma-separated, from {list(SUITE)} (default: all of --role)")
    ap.add_argument("--role", choices=("all", "pilot", "report"), default="all")
    ap.add_argument("--racer-budget-factor", type=float, default=1.0,
                    help="racer's budget as a fraction of irace's (e.g. 0.5)")
    ap.add_argument("--racer-args", default="", metavar="ARGS", help="racer-only options (shell words)")
    ap.add_argument("--extra-args", default="", metavar="ARGS", help="options given to both tools (shell words)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tuning_vs_irace.md"))
    ap.add_argument("--reuse", default=None, metavar="FILE.jsonl",
                    help="take runs (scenario, tool, seed, budget) already recorded in this "
                         "JSON-lines output instead of running them again")
    args = ap.parse_args()
    if args.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {args.seeds}")
    if not 0 < args.racer_budget_factor <= 10:
        ap.error(f"--racer-budget-factor must be in (0, 10], got {args.racer_budget_factor}")
    names = ([n for n in args.scenarios.split(",") if n] or
             [n for n, e in SUITE.items() if args.role in ("all", e.role)])
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        ap.error(f"unknown scenarios {unknown}; choose from {list(SUITE)}")
    seeds = list(range(args.first_seed, args.first_seed + (2 if args.quick else args.seeds)))
    both, racer_only = tuple(shlex.split(args.extra_args)), tuple(shlex.split(args.racer_args))
    out, jsonl = Path(args.out), Path(args.out).with_suffix(".jsonl")
    if args.reuse and not Path(args.reuse).is_file():
        ap.error(f"--reuse {args.reuse}: no such file")
    reused = read_reused(args.reuse)  # before --out's JSON lines are emptied: it may be that file
    head = [f"# racer vs irace 3.5 on the tuning suite ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
            f"Command: `{' '.join(['python', 'benchmarks/tuning_vs_irace.py', *sys.argv[1:]])}`; seeds {seeds}; "
            + (f"runs taken from {args.reuse} where recorded (scenario, tool, seed, budget); " if args.reuse else "") +
            f"load average at start {load()}. held-out = mean cost of the final best on the test "
            "instances x fixed seeds (lower is better).", ""]
    all_rows, defaults, body = {}, {}, []
    out.parent.mkdir(parents=True, exist_ok=True)  # an --out in a folder not made yet
    jsonl.write_text("")
    with tempfile.TemporaryDirectory(prefix="tuning-vs-irace-") as tmp:
        for name in names:
            entry = SUITE[name]
            irace_budget = entry.quick_budget if args.quick else budget_of(entry.scenario)
            budgets = {"irace": irace_budget, "racer": max(1, round(args.racer_budget_factor * irace_budget))}
            defaults[name] = held_out(entry.scenario, default_switches(entry), seeds_per_instance=entry.test_seeds)
            rows = []
            for seed in seeds:
                for tool in ("irace", "racer"):
                    extra = both + ("--max-experiments", str(budgets[tool])) + (racer_only if tool == "racer" else ())
                    row = reused.get((name, tool, seed, budgets[tool]))
                    if row is None:
                        row = one_run(name, entry, tool, seed, budgets[tool], args.parallel, Path(tmp), extra)
                    rows.append(row)
                    with jsonl.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"{name} seed {seed} {tool}: held-out {row['test']}, runs {row['runs']}, "
                          f"wall {row['wall']:.1f}s, {row['outcome']}, best {row['best']}", flush=True)
            all_rows[name] = rows
            body += scenario_lines(name, rows, budgets, defaults[name])
            out.write_text("\n".join(head + summary_table(all_rows, defaults) + body) + "\n")
    out.write_text("\n".join(head + summary_table(all_rows, defaults) + body
                              + [f"Load average at end: {load()}."]) + "\n")
    print("\n".join(summary_table(all_rows, defaults)))


if __name__ == "__main__":
    main()
