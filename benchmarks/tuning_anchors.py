"""Anchors on the tuning suite (``benchmarks/tuning/``): ``racer.tune`` against the tuners a
Python user would pick instead -- SMAC3's algorithm-configuration facade, Optuna TPE without
and with ``WilcoxonPruner`` -- and irace 3.5, at equal numbers of runs, every final best scored
on the scenario's held-out test instances by one function, paired by the tuner's seed.

One run is one configuration on one instance-seed pair, the unit of irace's ``maxExperiments``.
Every Python tool calls the scenario's runner code in this process through
``benchmarks/tuning/targets.py`` (the runner's ``main``, so its costs are the runner's), one
worker each:

``racer``
    ``racer.tune(target, parameters.txt, train, budget=B, random_state=S,
    initial=[default.txt's configuration])`` (and the scenario's forbidden file and digits),
    every other option at its default.
``smac``
    ``AlgorithmConfigurationFacade(Scenario(cs, instances=train, n_trials=B,
    deterministic=False, seed=S), target)`` with the facade's defaults; ``cs`` is the
    parameters file as a ConfigSpace space whose default is ``default.txt``'s configuration
    (the facade's initial design is that default). Its final incumbent is scored.
``tpe``
    Optuna's ``TPESampler(seed=S)``, one trial = the configuration on every training instance
    (each instance with one seed drawn once per study from ``S``): ``B // n_train`` trials; the
    first trial is ``default.txt``'s configuration (``enqueue_trial``). Best: the lowest mean.
``tpe-wilcoxon``
    The same with ``optuna.pruners.WilcoxonPruner()``: each trial visits the instances in its
    own shuffled order and reports each cost (``trial.report(cost, step=instance index)``);
    when pruned it returns the mean so far, as Optuna's documentation does. Trials go on
    until the ``B`` runs are used; the best is the lowest mean among the trials that ran on
    every instance.
``irace``
    irace 3.5's rows of ``benchmarks/results/tuning_vs_irace*.jsonl`` (same scenario, seed and
    budget), their final best re-scored here; with ``--run-irace`` the missing ones are run
    through ``tuning_vs_irace.one_run`` (needs R's irace: ``apt-get install r-cran-irace``).

Scoring: the mean cost of the final best on test instance ``k`` with seeds ``1000 + 17 k + s``
(``s`` < the scenario's ``test_seeds`` of ``tuning_vs_irace.SUITE``), the held-out function of
the suite's harness. Reported per scenario and method: mean, median, worst seed and spread
(standard deviation and range over seeds) of the held-out cost; runs used (calls of the
target, counted by the wrapper every tool calls) and configurations tried; each tool's own
overhead, CPU and wall time of the tuning minus the time inside the target's runs; and the
paired difference racer - each anchor (mean +/- SE over the common seeds, % of the anchor's
mean, seeds where racer is at least as good).

``nice -n 15 python benchmarks/tuning_anchors.py --scenarios sat-capped,sat-cadical --seeds 5
--methods racer,smac,tpe`` writes one JSON line per tuning to ``--out`` (default
``benchmarks/results/tuning_anchors.jsonl``); ``--table FILE.jsonl [FILE.jsonl ...]`` prints the
Markdown tables of recorded rows. ``--quick``: 2 seeds at each scenario's smallest budget
irace accepts; ``--budget-scale F`` multiplies the budget (e.g. 0.2 for a smoke test).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tuning"))
from targets import ScenarioTarget, configspace, scenario_target  # noqa: E402
from tuning_vs_irace import SUITE  # noqa: E402

RESULTS = HERE / "results"
#: racer.tune's variants: options beside the defaults, and the share of the budget they get
#: (``racer-half``: half the runs, recorded under the full budget so that it pairs with the
#: anchors that had all of them).
RACER_VARIANTS = {"racer": ({}, 1.0), "racer-ft3": ({"first_test": 3}, 1.0),
                  "racer-half": ({}, 0.5), "racer-pipelined": ({"pipelined": True}, 1.0),
                  "racer-pipelined-iterations": ({"pipelined_iterations": True}, 1.0)}
METHODS = ("racer", "smac", "tpe", "tpe-wilcoxon", "irace", "racer-ft3", "racer-half",
           "racer-pipelined", "racer-pipelined-iterations")
ANCHORS = ("smac", "tpe", "tpe-wilcoxon", "irace")


class BudgetExceeded(RuntimeError):
    """A tool asked for more runs than its budget."""


class CountedTarget:
    """The scenario's target as every tool calls it: counts the runs, the distinct
    configurations, and the CPU and wall time spent inside them; refuses a run beyond
    ``budget`` (a tool that overspends fails loudly, not silently)."""

    def __init__(self, target: ScenarioTarget, budget: int):
        self.target, self.budget = target, budget
        self.runs, self.asked, self.cpu, self.wall = 0, 0, 0.0, 0.0
        self.configs: set = set()

    def __call__(self, config, instance, seed, **_ignored) -> float:
        self.asked += 1  # beyond the budget too: a tool may swallow the refusal as a failed run
        if self.runs >= self.budget:
            raise BudgetExceeded(f"run {self.runs + 1} asked for, budget {self.budget}")
        self.runs += 1
        switches = tuple(self.target.switches(config))
        self.configs.add(switches)
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return self.target.cost(config, str(instance), int(seed))
        finally:
            self.cpu += time.process_time() - c0
            self.wall += time.perf_counter() - w0


def run_racer(t: ScenarioTarget, f: CountedTarget, budget: int, seed: int,
              options: dict | None = None) -> dict:
    import racer

    res = racer.tune(f, str(t.parameters_file), list(t.train), budget=budget, random_state=seed,
                     initial=[dict(t.default)], digits=t.digits,
                     forbidden=str(t.forbidden_file) if t.forbidden_file else None, progress=False,
                     **(options or {}))
    return {"best": dict(res.best), "charged": int(res.experiments)}


def run_smac(t: ScenarioTarget, f: CountedTarget, budget: int, seed: int) -> dict:
    from smac import AlgorithmConfigurationFacade, Scenario
    from smac.main.exceptions import ConfigurationSpaceExhaustedException

    cs = configspace(t, seed=seed)

    def train(config, instance: str, seed: int = 0) -> float:
        return f(dict(config), instance, seed)

    with tempfile.TemporaryDirectory(prefix="anchors-smac-") as tmp:
        scenario = Scenario(cs, instances=list(t.train), n_trials=budget, deterministic=False,
                            seed=seed, output_directory=Path(tmp) / "smac")
        smac = AlgorithmConfigurationFacade(scenario, train, overwrite=True, logging_level=40)
        try:
            best, exhausted = smac.optimize(), False
        except ConfigurationSpaceExhaustedException:
            # a small discrete space: SMAC stops when its selector finds no new configuration
            best, exhausted = smac.intensifier.get_incumbent(), True
    return {"best": dict(best), "exhausted": exhausted}


def _sample(trial, t: ScenarioTarget) -> dict:
    """A configuration of the scenario's space, define-by-run in racer's sampling order (a
    conditional parameter is asked only when its condition holds)."""
    values: dict = {p.name: None for p in t.space.params}
    for p in t.space.params:
        if not t.space.is_active(p, values):
            continue
        if p.type in ("c", "o"):
            values[p.name] = trial.suggest_categorical(p.name, [str(v) for v in p.domain])
        elif p.type == "i":
            values[p.name] = trial.suggest_int(p.name, int(p.domain[0]), int(p.domain[1]), log=p.log)
        else:
            values[p.name] = trial.suggest_float(p.name, float(p.domain[0]), float(p.domain[1]), log=p.log)
    return values


def run_tpe(t: ScenarioTarget, f: CountedTarget, budget: int, seed: int, wilcoxon: bool) -> dict:
    import numpy as np
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    n = len(t.train)
    if budget < n:
        raise ValueError(f"budget {budget} is below one trial ({n} training instances)")
    inst_seeds = [int(s) for s in np.random.default_rng(seed).integers(1, 2**31 - 1, n)]
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed),
                                pruner=optuna.pruners.WilcoxonPruner() if wilcoxon else optuna.pruners.NopPruner())
    study.enqueue_trial({k: (str(v) if isinstance(v, str) else v) for k, v in t.default.items() if v is not None})

    def objective(trial):
        config = _sample(trial, t)
        if t.space.is_forbidden(config):
            raise optuna.TrialPruned("forbidden")  # no run: a user's loop skips it
        order = (np.random.default_rng([seed, trial.number]).permutation(n) if wilcoxon else range(n))
        costs = []
        for i in order:
            if f.runs >= budget:  # the budget ends inside this trial: not a full evaluation
                trial.set_user_attr("full", False)
                return statistics.fmean(costs) if costs else math.inf
            costs.append(f(config, t.train[i], inst_seeds[i]))
            trial.report(costs[-1], step=int(i))
            if wilcoxon and trial.should_prune():
                trial.set_user_attr("full", False)
                return statistics.fmean(costs)  # Optuna's documented workaround: TPE sees it
        trial.set_user_attr("full", True)
        return statistics.fmean(costs)

    def stop(study, _trial):
        if f.runs >= budget or (not wilcoxon and f.runs + n > budget):
            study.stop()

    # The cap on trials only guards against a space that is all forbidden.
    study.optimize(objective, n_trials=budget // n if not wilcoxon else 100 * budget, callbacks=[stop])
    full = [tr for tr in study.trials if tr.user_attrs.get("full") and tr.value is not None]
    if not full:
        raise RuntimeError("no trial ran on every training instance")
    best = min(full, key=lambda tr: tr.value)
    return {"best": dict(best.params), "trials": len(study.trials), "full_trials": len(full)}


def irace_rows(results: Path = RESULTS) -> dict:
    """irace's recorded rows of the suite's harness by (scenario, seed, budget): the files'
    last row of a key wins."""
    rows = {}
    for path in sorted(results.glob("tuning_vs_irace*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("tool") == "irace" and row.get("best"):
                    rows[row["scenario"], row["seed"], row["budget"]] = dict(row, file=path.name)
    return rows


def config_of_switches(t: ScenarioTarget, words: list) -> dict:
    """The configuration (parameter name -> value text) of a command line's switches."""
    names = {p.switch.strip(): p.name for p in t.space.declared}
    return {names[k]: v for k, v in zip(words[::2], words[1::2])}


def one_tuning(name: str, method: str, seed: int, budget: int, recorded: dict, run_irace: bool) -> dict:
    t = scenario_target(name)
    test_seeds = SUITE[name].test_seeds
    row = {"scenario": name, "method": method, "seed": seed, "budget": budget}
    if method == "irace":
        got = recorded.get((name, seed, budget))
        if got is None and run_irace:
            from tuning_vs_irace import one_run
            with tempfile.TemporaryDirectory(prefix="anchors-irace-") as tmp:
                got = one_run(name, SUITE[name], "irace", seed, budget, 1, Path(tmp),
                              ("--max-experiments", str(budget)))
            got["file"] = "run here (tuning_vs_irace.one_run, parallel 1)"
        if got is None or got.get("best") is None:
            return dict(row, outcome="missing: no irace row recorded for this scenario, seed and budget"
                        + ("" if got is None else f" ({got.get('outcome')})"), test=None, runs=None)
        best = config_of_switches(t, got["best"])
        test = t.held_out(best, test_seeds)
        return dict(row, outcome="ok", test=test, test_recorded=got.get("test"), runs=got.get("runs"),
                    configs=None, best=got["best"], source=got["file"], wall=got.get("wall"),
                    tool_cpu=None, tool_wall=None)
    share = RACER_VARIANTS[method][1] if method in RACER_VARIANTS else 1.0
    f = CountedTarget(t, int(budget * share))
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        if method in RACER_VARIANTS:
            info = run_racer(t, f, int(budget * share), seed, RACER_VARIANTS[method][0])
        elif method == "smac":
            info = run_smac(t, f, budget, seed)
        elif method in ("tpe", "tpe-wilcoxon"):
            info = run_tpe(t, f, budget, seed, wilcoxon=method == "tpe-wilcoxon")
        else:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    except Exception as exc:  # recorded in the row, the other tunings go on
        return dict(row, outcome=f"failed: {type(exc).__name__}: {str(exc)[:300]}", test=None, runs=f.runs,
                    asked=f.asked)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    best = info.pop("best")
    test = t.held_out(best, test_seeds)
    return dict(row, outcome="ok", test=test if math.isfinite(test) else None, runs=f.runs, asked=f.asked,
                configs=len(f.configs), best=t.switches(best), wall=wall, cpu=cpu,
                tool_cpu=cpu - f.cpu, tool_wall=wall - f.wall, target_cpu=f.cpu, target_wall=f.wall, **info)


# ---------------------------------------------------------------------------------------
# Tables


def _stats(values: list) -> dict:
    if not values:
        return {"n": 0, "mean": math.nan, "median": math.nan, "sd": math.nan, "lo": math.nan, "hi": math.nan}
    return {"n": len(values), "mean": statistics.fmean(values), "median": statistics.median(values),
            "sd": statistics.stdev(values) if len(values) > 1 else math.nan,
            "lo": min(values), "hi": max(values)}


def paired(rows: list[dict], anchor: str, base: str = "racer") -> dict:
    """Paired ``base - anchor`` over the seeds both scored: mean, SE, % of the anchor's mean
    on those seeds, seeds where ``base`` is at least as good.

    >>> rows = [{"seed": s, "method": m, "test": c} for s, m, c in
    ...         [(1, "smac", 2.0), (1, "racer", 1.0), (2, "smac", 4.0), (2, "racer", 5.0)]]
    >>> p = paired(rows, "smac")
    >>> p["mean"], p["se"], p["wins"], p["pairs"], p["pct"]
    (0.0, 1.0, 1, 2, 0.0)
    """
    held = {(r["seed"], r["method"]): r["test"] for r in rows if r.get("test") is not None}
    seeds = sorted(s for s, m in held if m == base and (s, anchor) in held)
    d = [held[s, base] - held[s, anchor] for s in seeds]
    ref = statistics.fmean(held[s, anchor] for s in seeds) if seeds else math.nan
    mean = statistics.fmean(d) if d else math.nan
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan
    return {"pairs": len(d), "mean": mean, "se": se, "wins": sum(x <= 0 for x in d),
            "pct": 100 * mean / abs(ref) if ref else math.nan,
            "pct_se": 100 * se / abs(ref) if ref else math.nan}


def _g(x, fmt=".5g") -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def table(rows: list[dict]) -> list[str]:
    """Markdown: per scenario, one line per method, then the paired differences."""
    out = []
    for name in dict.fromkeys(r["scenario"] for r in rows):
        mine = [r for r in rows if r["scenario"] == name]
        budgets = sorted({r["budget"] for r in mine})
        out += [f"### {name} (budget {', '.join(map(str, budgets))} runs)", "",
                "| method | seeds (failed) | mean held-out | median | worst (seed) | SD over seeds | range "
                "| runs used (max) | configs tried | tool CPU s | tool wall s |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for m in METHODS:
            ms = [r for r in mine if r["method"] == m]
            if not ms:
                continue
            ok = [r for r in ms if r.get("test") is not None]
            s = _stats([r["test"] for r in ok])
            worst = max(ok, key=lambda r: r["test"]) if ok else None
            runs = [r["runs"] for r in ms if r.get("runs") is not None]
            conf = [r["configs"] for r in ok if r.get("configs") is not None]
            tc = [r["tool_cpu"] for r in ok if r.get("tool_cpu") is not None]
            tw = [r["tool_wall"] for r in ok if r.get("tool_wall") is not None]
            out.append(f"| {m} | {s['n']} ({len(ms) - len(ok)}) | {_g(s['mean'])} | {_g(s['median'])} | "
                       f"{_g(worst['test']) if worst else ''} ({worst['seed'] if worst else ''}) | {_g(s['sd'], '.3g')} | "
                       f"{_g(s['lo'])} - {_g(s['hi'])} | "
                       f"{_g(statistics.fmean(runs), '.0f') if runs else ''} ({max(runs) if runs else ''}) | "
                       f"{_g(statistics.fmean(conf), '.1f') if conf else ''} | "
                       f"{_g(statistics.fmean(tc), '.1f') if tc else ''} | {_g(statistics.fmean(tw), '.1f') if tw else ''} |")
        out += ["", "| pair | paired seeds | mean diff +/- SE | % of the second's mean +/- SE | first <= second |",
                "| --- | --- | --- | --- | --- |"]
        # racer against each anchor; a variant against racer's default and against each
        # anchor (what a user of the variant would otherwise run)
        pairs = [("racer", a) for a in ANCHORS] + [
            (v, ref) for v in RACER_VARIANTS if v != "racer" for ref in ("racer",) + ANCHORS]
        for base, a in pairs:
            p = paired(mine, a, base)
            if p["pairs"]:
                out.append(f"| {base} - {a} | {p['pairs']} | {p['mean']:+.4g} +/- {_g(p['se'], '.2g')} | "
                           f"{p['pct']:+.1f}% +/- {_g(p['pct_se'], '.1f')}% | {p['wins']}/{p['pairs']} |")
        out.append("")
    return out


def read_rows(paths: list) -> list[dict]:
    """Rows of JSON-lines files; a later row of the same (scenario, method, seed, budget)
    replaces an earlier one."""
    rows = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[r["scenario"], r["method"], r["seed"], r["budget"]] = r
    return list(rows.values())


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="", help=f"comma-separated, from {list(SUITE)} (default: all)")
    ap.add_argument("--seeds", type=int, default=None, help="number of tuner seeds (default 20; 2 with --quick)")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 seeds, each scenario's quick budget")
    ap.add_argument("--budget-scale", type=float, default=1.0, help="multiplies each scenario's budget")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {list(METHODS)}")
    ap.add_argument("--run-irace", action="store_true", help="run irace where no row is recorded (needs R's irace)")
    ap.add_argument("--out", default=str(RESULTS / "tuning_anchors.jsonl"))
    ap.add_argument("--table", nargs="+", metavar="FILE.jsonl", help="print the tables of recorded rows and exit")
    args = ap.parse_args(argv)
    if args.table:
        missing = [p for p in args.table if not Path(p).is_file()]
        if missing:
            ap.error(f"--table: no such file {missing}")
        print("\n".join(table(read_rows(args.table))))
        return 0
    names = [n for n in args.scenarios.split(",") if n] or list(SUITE)
    methods = [m for m in args.methods.split(",") if m]
    if bad := [n for n in names if n not in SUITE]:
        ap.error(f"--scenarios: unknown {bad}; choose from {list(SUITE)}")
    if bad := [m for m in methods if m not in METHODS]:
        ap.error(f"--methods: unknown {bad}; choose from {list(METHODS)}")
    seeds_n = args.seeds if args.seeds is not None else (2 if args.quick else 20)
    if seeds_n < 1:
        ap.error(f"--seeds must be at least 1, got {seeds_n}")
    if not 0 < args.budget_scale <= 10:
        ap.error(f"--budget-scale must be in (0, 10], got {args.budget_scale}")
    seeds = range(args.first_seed, args.first_seed + seeds_n)
    command = shlex.join(["python", "benchmarks/tuning_anchors.py", *(sys.argv[1:] if argv is None else argv)])
    recorded = irace_rows() if "irace" in methods else {}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("")
    rows = []
    for name in names:
        base = SUITE[name].quick_budget if args.quick else scenario_target(name).budget
        budget = max(1, round(args.budget_scale * base))
        for seed in seeds:
            for m in methods:
                row = one_tuning(name, m, seed, budget, recorded, args.run_irace)
                row.update(command=command, load=os.getloadavg()[0],
                           date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
                rows.append(row)
                with out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(f"{name} seed {seed} {m}: held-out {_g(row.get('test'))}, runs {row.get('runs')}, "
                      f"configs {row.get('configs')}, tool cpu {_g(row.get('tool_cpu'), '.1f')} s, "
                      f"{row['outcome']}", flush=True)
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
