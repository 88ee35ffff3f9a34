"""Iterated racing driven by an Optuna sampler against plain Optuna, at equal evaluation budgets.

On the three problems of ``optuna_pruning.py`` (a smooth synthetic loss with heterogeneous
instances; scikit-learn classifiers with a *conditional* space - model type, then its own
hyperparameters - and CV folds as instances; simulated annealing on TSP instances with a
categorical move type), each seed runs, with the same budget of instance evaluations
(``--eval-factor x n_instances``):

* ``tpe``: TPE, no pruning;
* ``tpe+wilcoxon``: TPE + WilcoxonPruner(p=0.1), returning the partial mean (Optuna's advice);
* ``tpe+wilcoxon-estimate``: the same, returning the paired estimate (``on_prune="estimate"``);
* ``tpe+racing``: TPE + RacingPruner (defaults), raising TrialPruned;
* ``tpe+racing-estimate``: TPE + RacingPruner with ``on_prune="estimate"`` (the helper's
  default);
* ``random+racing``: RandomSampler + RacingPruner, to separate pruning from TPE's feedback;
* ``iterated-race``: :class:`racer.adapters.optuna.IteratedRace` with TPE (defaults).

Reported: true regret of the returned configuration (re-evaluated on every instance against
the oracle), evaluations spent, distinct configurations tried, wall time.

``python benchmarks/optuna_iterated.py --quick`` (3 seeds) or without ``--quick`` (10 seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import optuna  # noqa: E402
from optuna_pruning import PROBLEMS, _fmt, _patch_wilcoxon_pruner, run_study  # noqa: E402

from racer.adapters.optuna import IteratedRace  # noqa: E402
from racer.progress import track  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)


def run_iterated(problem, seed, budget, **options):
    def space(trial):
        problem.suggest(trial)

    def evaluate(params, i):
        return problem.score(problem.params_to_key(params), i)

    t0 = time.time()
    res = IteratedRace(evaluate, space, list(range(problem.n_instances)), budget=budget,
                       direction=problem.direction, random_state=seed, **options).run()
    wall = time.time() - t0
    key = problem.params_to_key(res.best_params)
    distinct = {json.dumps(problem.params_to_key(t.params), default=float)
                for t in res.study.trials}
    return {"regret": problem.regret(key), "evals": res.n_evaluations,
            "trials": len(res.study.trials), "configs": len(distinct),
            "iterations": res.n_iterations, "wall": wall}


CONDITIONS = ["tpe", "tpe+wilcoxon", "tpe+wilcoxon-estimate", "tpe+racing",
              "tpe+racing-estimate", "random+racing", "iterated-race"]


def run_condition(problem, cond, seed, budget):
    if cond == "iterated-race":
        return run_iterated(problem, seed, budget)
    if cond == "tpe":
        return run_study(problem, "none", "return", seed, max_evals=budget)
    if cond == "tpe+wilcoxon":
        return run_study(problem, "wilcoxon-0.1", "return", seed, max_evals=budget)
    if cond == "tpe+racing":
        return run_study(problem, "racing", "raise", seed, max_evals=budget)
    if cond == "tpe+racing-estimate":
        return run_study(problem, "racing", "estimate", seed, max_evals=budget)
    if cond == "tpe+wilcoxon-estimate":
        return run_study(problem, "wilcoxon-0.1", "estimate", seed, max_evals=budget)
    if cond == "random+racing":
        return run_study(problem, "racing", "raise", seed, max_evals=budget, sampler="random")
    raise ValueError(cond)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--problems", default="synthetic,cv,tsp")
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--eval-factor", type=int, default=None)
    parser.add_argument("--jsonl", default=None)
    parser.add_argument("--from-jsonl", nargs="+", default=None,
                        help="only print the table of rows saved by earlier --jsonl runs")
    args = parser.parse_args(argv)
    if args.from_jsonl:
        rows = [json.loads(line) for f in args.from_jsonl for line in open(f)]
        for r in rows:
            r["regret"] = 0.0 if abs(r["regret"]) < 1e-12 else r["regret"]
        print_table(rows, "from " + ", ".join(args.from_jsonl))
        return
    _patch_wilcoxon_pruner()
    n_seeds = args.seeds or (3 if args.quick else 10)
    eval_factor = args.eval_factor or (10 if args.quick else 20)
    sink = open(args.jsonl, "a") if args.jsonl else None
    rows = []
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        budget = eval_factor * problem.n_instances
        for cond in args.conditions.split(","):
            for s in track(range(args.seed_offset, args.seed_offset + n_seeds),
                           label=f"{pname} {cond} seeds"):
                r = run_condition(problem, cond, s, budget)
                r.update(problem=pname, condition=cond, seed=s, budget=budget)
                rows.append(r)
                if sink:
                    sink.write(json.dumps(r) + "\n")
                    sink.flush()
            print(f"done {pname} {cond}", file=sys.stderr, flush=True)
    print_table(rows, f"{n_seeds} seeds from {args.seed_offset}; budget {eval_factor} x "
                      "n_instances")


def print_table(rows, title):
    print(f"# Iterated race vs Optuna at equal evaluation budgets ({title})\n")
    print("| problem | method | median true regret [IQR] | mean regret | evals (median) | "
          "distinct configs | trials | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    groups = {}
    for r in rows:
        groups.setdefault((r["problem"], r["condition"]), []).append(r)
    for (prob, cond), rs in groups.items():
        reg = [r["regret"] for r in rs]
        print(f"| {prob} | {cond} | {_fmt(reg)} | {np.mean(reg):.4g} | "
              f"{np.median([r['evals'] for r in rs]):.0f} | "
              f"{np.median([r['configs'] for r in rs]):.0f} | "
              f"{np.median([r['trials'] for r in rs]):.0f} | "
              f"{np.median([r['wall'] for r in rs]):.1f} |")


if __name__ == "__main__":
    main()
