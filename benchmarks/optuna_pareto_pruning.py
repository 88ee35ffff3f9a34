"""ParetoPruner against no pruning in multi-objective Optuna studies.

Target: "a multi-objective Optuna study with the pruner reaches the hypervolume of the
unpruned study with fewer instance evaluations".

Problems (two objectives, both minimised; each splits its instances into a *train* set the
study sees and a *test* set it never sees):

* ``synthetic`` -- a ZDT1-like problem with a known front: ``x`` in [0, 1]^4,
  ``f1 = x0 + h_i / 2 + r1_i sin(5 x0 + p1_i)``,
  ``f2 = (1 + 3 |x_{1:} - c_i|^2) (1 - sqrt(x0)) + h_i / 2 + r2_i sin(4 x0 + p2_i)``, with
  instance hardness ``h_i ~ Gamma(2, 1)`` (shared by both objectives), centres ``c_i`` and
  ripples per instance. On any set of instances the mean front is ``x_{1:} = mean(c)``, so
  the front's hypervolume on the test instances is known (``true_hv``, from 20001 points).
  30 train, 30 test instances.
* ``tree`` -- scikit-learn decision trees on ``load_digits`` (real): classification error
  against the number of leaves (model size), per CV fold. 264 configurations (max_depth x
  min_samples_leaf x criterion x max_features), 10-fold x 4 repeated stratified CV: repeats
  0-1 (20 folds) are the train instances, repeats 2-3 the test ones. Every (configuration,
  fold) is computed once into a table (cached under ``$RACER_BENCH_CACHE``).

Conditions, per problem and seed, one TPE study each (``TPESampler(seed=seed)``, the
multi-objective TPE), run with :func:`racer.adapters.optuna.pareto_instance_objective`:

* ``none``: ``NopPruner``, ``--n-trials`` trials;
* ``pareto(c, m, on_prune)``: :class:`racer.adapters.optuna.ParetoPruner` with credibility
  ``c`` and ``min_instances`` ``m``, the objective's ``on_prune`` (``prune``: no values;
  ``estimate``: the paired estimate, COMPLETE), run until it has used the unpruned study's
  evaluations (``max(budgets) x n_train``).

TPE proposes trial t from trials 0..t-1 only, so the first N trials of a study are the study
of N trials: each budget is a prefix. Budgets: equal trials (the pruned study's first N
trials) and equal instance evaluations (its longest prefix within N x n_train evaluations),
at N = each of ``--budgets``. What a prefix returns is its Pareto front (COMPLETE trials,
non-dominated by their returned train means, as ``study.best_trials``); it is scored by the
hypervolume (``moocore.hypervolume``, fixed reference point per problem) of the front's
mean vectors on the TEST instances. Reported: HV and evaluations paired by seed against
``none`` at the same number of trials, mean +- SE.

``--pilot`` runs (credibility, min_instances) = (0.95, 5) and (0.99, 10), each with both
``on_prune``, on seeds 0-4; the reported run uses the chosen setting on seeds 100+.
``--quick`` is a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# Before NumPy loads OpenBLAS: its threads spinning beside the others' processes on a shared
# machine made each posterior (a small matrix product) ten times slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import optuna  # noqa: E402
import warnings  # noqa: E402

from racer.adapters.optuna import ParetoPruner, pareto_instance_objective  # noqa: E402
from racer.stats.pareto import nondominated_mask  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
CACHE = Path(os.environ.get("RACER_BENCH_CACHE", "/tmp/racer_bench_cache"))
RESULTS = Path(__file__).resolve().parent / "results"


# ------------------------------------------------------------------------------ problems


class SyntheticFront:
    """ZDT1-like, instance-wise (module docstring); ``key`` is the parameter vector."""

    name = "synthetic"
    dim = 4

    def __init__(self, n_train=30, n_test=30, seed=2323):
        rng = np.random.default_rng(seed)
        n = n_train + n_test
        self.h = rng.gamma(2.0, 1.0, n)
        self.c = np.clip(rng.normal(0.5, 0.15, (n, self.dim - 1)), 0, 1)
        self.r1, self.r2 = rng.uniform(0, 0.05, n), rng.uniform(0, 0.1, n)
        self.p1, self.p2 = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
        self.train, self.test = np.arange(n_train), np.arange(n_train, n)
        self.ref = np.array([1.1 + 0.5 * self.h[self.test].mean() + 0.1,
                             4.0 + 0.5 * self.h[self.test].mean()])
        self.true_hv = self._true_hv()

    def suggest(self, trial):
        return tuple(trial.suggest_float(f"x{j}", 0.0, 1.0) for j in range(self.dim))

    def scores(self, key, rows):
        """(len(rows), 2) objective vectors of ``key`` on instances ``rows``."""
        x = np.asarray(key, dtype=float)
        g = 1.0 + 3.0 * ((x[1:] - self.c[rows]) ** 2).sum(axis=1)
        f1 = x[0] + self.h[rows] / 2 + self.r1[rows] * np.sin(5 * x[0] + self.p1[rows])
        f2 = (g * (1 - np.sqrt(x[0])) + self.h[rows] / 2
              + self.r2[rows] * np.sin(4 * x[0] + self.p2[rows]))
        return np.stack([f1, f2], axis=1)

    def _true_hv(self):
        import moocore

        t = self.test
        x0 = np.linspace(0, 1, 20001)[:, None]
        g = 1.0 + 3.0 * self.c[t].var(axis=0).sum()  # at x_{1:} = mean(c) on the test set
        f1 = (x0 + self.h[t] / 2 + self.r1[t] * np.sin(5 * x0 + self.p1[t])).mean(axis=1)
        f2 = (g * (1 - np.sqrt(x0[:, 0])) + (self.h[t] / 2 + self.r2[t]
              * np.sin(4 * x0 + self.p2[t])).mean(axis=1))
        return float(moocore.hypervolume(np.stack([f1, f2], axis=1), ref=self.ref))


class TreeCV:
    """Decision trees on digits: (error, leaves) per CV fold, tabulated."""

    name = "tree"
    depths = [2, 3, 4, 5, 6, 7, 8, 10, 12, 15, None]
    leaves = [1, 2, 4, 8, 16, 32]
    criteria = ["gini", "entropy"]
    features = [None, "sqrt"]

    def __init__(self):
        self.table = self._load()  # (configs, folds, 2)
        folds = self.table.shape[1]
        self.train, self.test = np.arange(folds // 2), np.arange(folds // 2, folds)
        # A fixed reference point: a little worse than the worst configuration's test mean.
        worst = self.table[:, self.test].mean(axis=1).max(axis=0)
        self.ref = worst * 1.1
        # The best front any study could return: every configuration's test means.
        import moocore

        test_means = self.table[:, self.test].mean(axis=1)
        self.true_hv = float(moocore.hypervolume(test_means, ref=self.ref))

    def configs(self):
        return [(d, s, c, f) for d in range(len(self.depths)) for s in range(len(self.leaves))
                for c in range(2) for f in range(2)]

    def _load(self):
        CACHE.mkdir(parents=True, exist_ok=True)
        path = CACHE / "tree_digits_error_leaves.npy"
        if path.exists():
            return np.load(path)
        from sklearn.datasets import load_digits
        from sklearn.model_selection import RepeatedStratifiedKFold
        from sklearn.tree import DecisionTreeClassifier

        t0 = time.time()
        X, y = load_digits(return_X_y=True)
        splits = list(RepeatedStratifiedKFold(n_splits=10, n_repeats=4,
                                              random_state=0).split(X, y))
        table = np.empty((len(self.configs()), len(splits), 2))
        for k, (d, s, c, f) in enumerate(self.configs()):
            for j, (tr, te) in enumerate(splits):
                tree = DecisionTreeClassifier(
                    max_depth=self.depths[d], min_samples_leaf=self.leaves[s],
                    criterion=self.criteria[c], max_features=self.features[f],
                    random_state=j).fit(X[tr], y[tr])
                table[k, j] = (1.0 - tree.score(X[te], y[te]), tree.get_n_leaves())
        np.save(path, table)
        print(f"[tree] table {table.shape} built in {time.time() - t0:.0f}s -> {path}",
              file=sys.stderr)
        return table

    def suggest(self, trial):
        return (trial.suggest_int("depth", 0, len(self.depths) - 1),
                trial.suggest_int("min_leaf", 0, len(self.leaves) - 1),
                trial.suggest_int("criterion", 0, 1),
                trial.suggest_int("max_features", 0, 1))

    def scores(self, key, rows):
        return self.table[self.configs().index(tuple(key)), rows]


PROBLEMS = {"synthetic": SyntheticFront, "tree": TreeCV}


# ------------------------------------------------------------------------------ studies


def run_study(problem, seed, pruner, max_trials, max_evals, on_prune="prune"):
    """One TPE study; per trial: key, state, evaluations, returned values, prune reason."""
    n_train = len(problem.train)
    evals = [0]

    def evaluate(trial, i):
        evals[0] += 1
        return tuple(problem.scores(problem.suggest(trial), problem.train[[i]])[0])

    def stop(study, trial):
        if evals[0] >= max_evals or trial.number + 1 >= max_trials:
            study.stop()

    study = optuna.create_study(directions=["minimize", "minimize"], pruner=pruner,
                                sampler=optuna.samplers.TPESampler(seed=seed))
    t0 = time.time()
    study.optimize(pareto_instance_objective(evaluate, list(range(n_train)), on_prune=on_prune,
                                             random_state=seed), callbacks=[stop])
    wall = time.time() - t0
    trials = []
    for t in study.trials:
        trials.append({
            "key": list(problem.suggest(optuna.trial.FixedTrial(t.params))),
            "complete": t.state == optuna.trial.TrialState.COMPLETE,
            "evals": len(t.user_attrs.get("racer_objectives", {})),
            "values": list(t.values) if t.values is not None else None,
            "pruned": bool(t.user_attrs.get("racer_pruned", False)),
            "reason": t.user_attrs.get("racer_prune_reason", ""),
        })
    return {"trials": trials, "wall": wall}


def front_hv(problem, trials):
    """Held-out hypervolume of the front a prefix of a study returns."""
    import moocore

    done = [t for t in trials if t["complete"]]
    if not done:
        return 0.0
    values = np.array([t["values"] for t in done])
    front = [t for t, keep in zip(done, nondominated_mask(-values)) if keep]
    test = np.array([problem.scores(t["key"], problem.test).mean(axis=0) for t in front])
    inside = (test < problem.ref).all(axis=1)
    return float(moocore.hypervolume(test[inside], ref=problem.ref)) if inside.any() else 0.0


def prefix_rows(problem, run, budgets, n_train):
    """HV / evaluations / trials at equal trials and equal evaluations, per budget."""
    trials = run["trials"]
    cum = np.cumsum([t["evals"] for t in trials])
    out = []
    for n in budgets:
        by_trials = trials[:n]
        k = int(np.searchsorted(cum, n * n_train, side="right"))
        by_evals = trials[:k]
        for view, prefix in (("trials", by_trials), ("evals", by_evals)):
            out.append({"budget": n, "view": view, "hv": front_hv(problem, prefix),
                        "evals": int(sum(t["evals"] for t in prefix)),
                        "trials": len(prefix),
                        "pruned": sum(t["pruned"] for t in prefix),
                        "equivalent": sum(t["reason"] == "indistinguishable" for t in prefix)})
    return out


# ------------------------------------------------------------------------------ tables


def _mse(x):
    x = np.asarray(x, dtype=float)
    se = x.std(ddof=1) / np.sqrt(x.size) if x.size > 1 else float("nan")
    return f"{x.mean():.4g} ± {se:.2g}"


def table(rows, problems, budgets):
    lines = []
    for p in problems:
        base = {(r["seed"], r["budget"]): r for r in rows
                if r["problem"] == p and r["condition"] == "none" and r["view"] == "trials"}
        true_hv = next((r.get("true_hv") for r in rows if r["problem"] == p), None)
        head = f"### {p} (HV of the best front on the test instances: {true_hv:.4f})"
        lines += ["", head, "",
                  "| condition | budget (trials of none) | view | seeds | HV | gap to best "
                  "| ΔHV vs none (paired) | evaluations | evaluations / none | trials | pruned "
                  "| of which equivalent |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        conditions = sorted({r["condition"] for r in rows if r["problem"] == p},
                            key=lambda c: (c != "none", c))
        for cond in conditions:
            for n in budgets:
                for view in (("trials",) if cond == "none" else ("trials", "evals")):
                    sel = [r for r in rows if r["problem"] == p and r["condition"] == cond
                           and r["budget"] == n and r["view"] == view
                           and (r["seed"], n) in base]
                    if not sel:
                        continue
                    dhv = [r["hv"] - base[(r["seed"], n)]["hv"] for r in sel]
                    ratio = [r["evals"] / base[(r["seed"], n)]["evals"] for r in sel]
                    lines.append(
                        f"| {cond} | {n} | {view} | {len(sel)} | {_mse([r['hv'] for r in sel])} "
                        f"| {_mse([true_hv - r['hv'] for r in sel])} | {_mse(dhv)} "
                        f"| {_mse([r['evals'] for r in sel])} | {_mse(ratio)} "
                        f"| {_mse([r['trials'] for r in sel])} "
                        f"| {_mse([r['pruned'] for r in sel])} "
                        f"| {_mse([r.get('equivalent', 0) for r in sel])} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", default="synthetic,tree")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--seed-offset", type=int, default=100)
    parser.add_argument("--budgets", default="30,80", help="trials of the unpruned study")
    parser.add_argument("--settings", default="0.95:5:prune",
                        help="credibility:min_instances:on_prune, comma-separated")
    parser.add_argument("--pilot", action="store_true",
                        help="(0.95, 5) and (0.99, 10) x on_prune prune / estimate, seeds 0-4")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None, help="jsonl of rows (appended)")
    parser.add_argument("--table", default=None, help="print the tables of a jsonl of rows")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.table:
        rows = [json.loads(line) for line in open(args.table)]
        problems = list(dict.fromkeys(r["problem"] for r in rows))
        print(table(rows, problems, sorted({r["budget"] for r in rows})))
        return rows
    settings = [tuple(s.split(":")) for s in args.settings.split(",")]
    seeds = range(args.seed_offset, args.seed_offset + args.seeds)
    if args.pilot:
        settings = [(c, m, mode) for mode in ("prune", "estimate")
                    for c, m in (("0.95", "5"), ("0.99", "10"))]
        seeds = range(0, 5)
    if args.quick:
        budgets, seeds = [15, 30], range(args.seed_offset, args.seed_offset + 2)
    problems = args.problems.split(",")
    rows = []
    out = open(args.out, "a") if args.out else None
    for name in problems:
        problem = PROBLEMS[name]()
        n_train = len(problem.train)
        for seed in seeds:
            conds = [("none", optuna.pruners.NopPruner(), "prune")] + [
                (f"pareto({c},{m},{mode})",
                 ParetoPruner(credibility=float(c), min_instances=int(m), random_state=seed),
                 mode) for c, m, mode in settings]
            for cond, pruner, mode in conds:
                max_trials = max(budgets) if cond == "none" else 20 * max(budgets)
                run = run_study(problem, seed, pruner, max_trials, max(budgets) * n_train, mode)
                for r in prefix_rows(problem, run, budgets, n_train):
                    r.update(problem=name, seed=seed, condition=cond, wall=run["wall"],
                             true_hv=problem.true_hv)
                    rows.append(r)
                    if out:
                        out.write(json.dumps(r) + "\n")
                        out.flush()
                last = rows[-1]
                print(f"[{name} seed {seed} {cond}] hv {last['hv']:.4f} evals {last['evals']} "
                      f"trials {last['trials']} pruned {last['pruned']} wall {run['wall']:.0f}s",
                      file=sys.stderr)
    print(table(rows, problems, budgets))
    return rows


if __name__ == "__main__":
    main()
