"""RacingPruner against WilcoxonPruner and no pruning, on three instance-wise problems.

Problems (each with a known oracle, so the *true* regret of what a study returns is exact):

* ``synthetic`` - a smooth 2-D loss with heterogeneous instance hardness (Gamma(2, 2)
  offsets, as in the adapters' first pilot) and a
  deterministic instance-dependent ripple; 50 instances, minimised. Oracle: a 401 x 401 grid
  refined by Nelder-Mead.
* ``cv`` - scikit-learn classifiers on breast_cancer with a conditional space (SVC: C x gamma;
  logistic regression: C; k-NN: k x weights; 60 configurations), 10-fold x 3 repeated
  stratified CV: 30 folds as instances, accuracy maximised. Every (configuration, fold) score is
  computed once into a table; the oracle is the best mean over the 30 folds.
* ``tsp`` - simulated annealing on 30 random 30-city TSP instances (Optuna's WilcoxonPruner
  tutorial, scaled down): initial temperature x cooling x move type (72 configurations), tour
  length minimised, also tabulated.

For each problem, seed and condition (pruner x ``on_prune`` in return / estimate / raise) the
script runs a TPE study (seeded) with :func:`racer.adapters.optuna.instance_objective` and
records, under two budget views,

* (A) equal trials: ``--n-trials`` trials;
* (B) equal evaluations: trials until ``--eval-factor x n_instances`` instance evaluations,

the true regret of the returned configuration (the best trial among those evaluated on every
instance, the rule a careful WilcoxonPruner user follows; ``study.best_trial`` if none), the
evaluations spent, the trials run, and the *wrong prunes*: pruned trials whose true mean over
all instances beats the returned configuration's.

The second round added instance-wise problems with other hardness structures (``multiplicative``,
``clusters``, ``conflicting``, ``heavytail``, ``fewhard``, ``noisyridge``; see each class) and
the ``user`` condition (the objective of Optuna's WilcoxonPruner documentation). Which of them
were pilot problems and which held out, with seeds, is in ``benchmarks/results/optuna.md``.

Later rounds added, for RacingPruner conditions, each prune's stated risk (the ``risk`` of
``RacingPruner.decide``, once written as ``racer_prune_risk``) against whether its claim was
false on the whole instance set (``stated_risk_outcomes``, printed by ``risk_table``; see
benchmarks/RESULTS.md, "RacingPruner's stated risk"), and ``shiftscale``, an 80-instance
problem held out from the ground-truth round of defaults (see its class).

Run ``python benchmarks/optuna_pruning.py --quick`` (3 seeds, fewer conditions) or without
``--quick`` for the full table (10 seeds). ``--seed-offset 100`` gives the tuning seeds used to
pick RacingPruner's defaults (kept apart from the reported seeds 0-9).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import optuna  # noqa: E402
import warnings  # noqa: E402

from racer.adapters.optuna import (  # noqa: E402
    RacingPruner,
    instance_objective,
)

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
CACHE = Path(os.environ.get("RACER_BENCH_CACHE", "/tmp/racer_bench_cache"))


# ------------------------------------------------------------------------------ problems


class Problem:
    """An instance-wise problem: ``suggest(trial) -> key``, ``score(key, i)``, ``true(key)``."""

    name: str
    direction: str
    n_instances: int
    oracle: float

    def regret(self, key) -> float:
        value = self.true(key)
        gap = value - self.oracle if self.direction == "minimize" else self.oracle - value
        return 0.0 if abs(gap) < 1e-12 else gap  # the oracle itself, up to rounding

    def _set_oracle(self):
        # Exact oracle of a 2-D mean surface on [-2, 2]^2: a 401 x 401 grid, refined by
        # Nelder-Mead (subclasses define _mean(x, y)).
        grid = np.linspace(-2, 2, 401)
        gx, gy = np.meshgrid(grid, grid)
        means = self._mean(gx.ravel(), gy.ravel())
        k = int(np.argmin(means))
        from scipy.optimize import minimize

        opt = minimize(lambda p: self._mean(np.array([p[0]]), np.array([p[1]]))[0],
                       [gx.ravel()[k], gy.ravel()[k]], method="Nelder-Mead",
                       options={"xatol": 1e-8, "fatol": 1e-12})
        self.oracle = float(min(opt.fun, means[k]))


class Synthetic(Problem):
    name, direction = "synthetic", "minimize"

    def __init__(self, n_instances=50, seed=12345):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        self.h = rng.gamma(2.0, 2.0, n_instances)
        self.a = rng.normal(0.0, 0.4, n_instances)
        self.b = rng.normal(0.0, 0.4, n_instances)
        self.amp = rng.uniform(0.0, 0.3, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()

    def _values(self, x, y):  # (len(x), n_instances)
        x = np.asarray(x, dtype=float)[:, None]
        y = np.asarray(y, dtype=float)[:, None]
        return (self.h + (x - self.a) ** 2 + (y - self.b) ** 2
                + self.amp * np.sin(4 * x + 3 * y + self.phase))

    def _mean(self, x, y):
        return self._values(x, y).mean(axis=1)

    def suggest(self, trial):
        return (trial.suggest_float("x", -2, 2), trial.suggest_float("y", -2, 2))

    def params_to_key(self, params):
        return (params["x"], params["y"])

    def score(self, key, i):
        return float(self._values([key[0]], [key[1]])[0, i])

    def true(self, key):
        return float(self._mean([key[0]], [key[1]])[0])


class Tabulated(Problem):
    """A finite space whose scores are computed once into ``table[config, instance]``."""

    def __init__(self):
        self.table = self._load()
        self.n_instances = self.table.shape[1]
        means = self.table.mean(axis=1)
        self.oracle = float(means.min() if self.direction == "minimize" else means.max())

    def _load(self):
        CACHE.mkdir(parents=True, exist_ok=True)
        path = CACHE / f"{self.name}_table.npy"
        if path.exists():
            return np.load(path)
        t0 = time.time()
        table = self._build()
        np.save(path, table)
        print(f"[{self.name}] table {table.shape} built in {time.time() - t0:.1f}s -> {path}",
              file=sys.stderr)
        return table

    def score(self, key, i):
        return float(self.table[key, i])

    def true(self, key):
        return float(self.table[key].mean())


class CV(Tabulated):
    name, direction = "cv", "maximize"
    svc_C = np.logspace(-2, 3, 6)
    svc_gamma = np.logspace(-4, 0, 6)
    lr_C = np.logspace(-3, 2, 8)
    knn_k = [1, 3, 5, 9, 15, 25, 41, 61]
    knn_w = ["uniform", "distance"]

    def configs(self):
        out = [("svc", i, j) for i in range(6) for j in range(6)]
        out += [("logreg", i, 0) for i in range(8)]
        out += [("knn", i, j) for i in range(8) for j in range(2)]
        return out

    def _build(self):
        from sklearn.datasets import load_breast_cancer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        X, y = load_breast_cancer(return_X_y=True)
        cv = list(RepeatedStratifiedKFold(n_splits=10, n_repeats=3, random_state=0).split(X, y))
        rows = []
        for model, i, j in self.configs():
            if model == "svc":
                est = SVC(C=self.svc_C[i], gamma=self.svc_gamma[j])
            elif model == "logreg":
                est = LogisticRegression(C=self.lr_C[i], max_iter=2000)
            else:
                est = KNeighborsClassifier(n_neighbors=self.knn_k[i], weights=self.knn_w[j])
            rows.append(cross_val_score(make_pipeline(StandardScaler(), est), X, y, cv=cv))
        return np.array(rows)

    def suggest(self, trial):
        model = trial.suggest_categorical("model", ["svc", "logreg", "knn"])
        if model == "svc":
            key = (model, trial.suggest_int("svc_C", 0, 5), trial.suggest_int("svc_gamma", 0, 5))
        elif model == "logreg":
            key = (model, trial.suggest_int("lr_C", 0, 7), 0)
        else:
            key = (model, trial.suggest_int("knn_k", 0, 7),
                   ["uniform", "distance"].index(
                       trial.suggest_categorical("knn_weights", ["uniform", "distance"])))
        return self.configs().index(key)

    def params_to_key(self, params):
        model = params["model"]
        if model == "svc":
            key = (model, params["svc_C"], params["svc_gamma"])
        elif model == "logreg":
            key = (model, params["lr_C"], 0)
        else:
            key = (model, params["knn_k"], self.knn_w.index(params["knn_weights"]))
        return self.configs().index(key)


def _sa_tsp_kernel():
    import numba

    @numba.njit(cache=True)
    def anneal(dist, t0, alpha, two_opt, n_iter, seed):
        np.random.seed(seed)
        n = dist.shape[0]
        tour = np.arange(n)
        length = 0.0
        for k in range(n):
            length += dist[tour[k], tour[(k + 1) % n]]
        t = t0
        for _ in range(n_iter):
            i = np.random.randint(1, n - 1)
            j = np.random.randint(i + 1, n)
            a, b = tour[i - 1], tour[i]
            c, d = tour[j], tour[(j + 1) % n]
            if two_opt:
                delta = dist[a, c] + dist[b, d] - dist[a, b] - dist[c, d]
            else:  # swap cities i and j (j > i)
                if j == i + 1:
                    delta = dist[a, c] + dist[b, d] - dist[a, b] - dist[c, d]
                else:
                    bn, cp = tour[i + 1], tour[j - 1]
                    delta = (dist[a, c] + dist[c, bn] + dist[cp, b] + dist[b, d]
                             - dist[a, b] - dist[b, bn] - dist[cp, c] - dist[c, d])
            if delta < 0 or np.random.random() < math.exp(-delta / max(t, 1e-12)):
                if two_opt or j == i + 1:
                    tour[i:j + 1] = tour[i:j + 1][::-1].copy()
                else:
                    tmp = tour[i]
                    tour[i] = tour[j]
                    tour[j] = tmp
                length += delta
            t *= alpha
        return length

    return anneal


class TSP(Tabulated):
    name, direction = "tsp", "minimize"
    t0s = np.logspace(-3, 0, 6)
    # Cooling per step, chosen so that the final temperature spans 1e-1..1e-6 of T0.
    alphas = 1.0 - np.logspace(-4, -2.3, 6)
    moves = ["2opt", "swap"]
    n_cities, n_inst, n_iter = 30, 30, 4000

    def configs(self):
        return [(i, j, m) for i in range(6) for j in range(6) for m in range(2)]

    def _build(self):
        anneal = _sa_tsp_kernel()
        rng = np.random.default_rng(2024)
        dists = []
        for _ in range(self.n_inst):
            pts = rng.random((self.n_cities, 2))
            dists.append(np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1)))
        table = np.empty((len(self.configs()), self.n_inst))
        for c, (i, j, m) in enumerate(self.configs()):
            for k, dist in enumerate(dists):
                table[c, k] = anneal(dist, self.t0s[i], self.alphas[j], m == 0, self.n_iter, k)
        return table

    def suggest(self, trial):
        key = (trial.suggest_int("t0", 0, 5), trial.suggest_int("alpha", 0, 5),
               self.moves.index(trial.suggest_categorical("move", self.moves)))
        return self.configs().index(key)

    def params_to_key(self, params):
        return self.configs().index((params["t0"], params["alpha"],
                                     self.moves.index(params["move"])))


class Multiplicative(Problem):
    """Held-out: instance hardness *multiplies* the loss, heavy-tailed.

    ``f(x, y, i) = h_i * (1 + (x - a_i)^2 + (y - b_i)^2 + 0.3 sin(3x + 2y + phi_i))`` with
    ``h_i`` log-normal (sigma 1): most instances are easy, a few are very hard, and
    differences between configurations scale with hardness. 40 instances, minimised. A trial
    that starts on easy instances has a partial mean far below any full mean. Not used to
    choose any default.
    """

    name, direction = "multiplicative", "minimize"

    def __init__(self, n_instances=40, seed=777):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        self.h = rng.lognormal(0.0, 1.0, n_instances)
        self.a = rng.normal(0.3, 0.5, n_instances)
        self.b = rng.normal(-0.2, 0.5, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()


    def _values(self, x, y):
        x = np.asarray(x, dtype=float)[:, None]
        y = np.asarray(y, dtype=float)[:, None]
        return self.h * (1 + (x - self.a) ** 2 + (y - self.b) ** 2
                         + 0.3 * np.sin(3 * x + 2 * y + self.phase))

    def _mean(self, x, y):
        return self._values(x, y).mean(axis=1)

    suggest = Synthetic.suggest
    params_to_key = Synthetic.params_to_key

    def score(self, key, i):
        return float(self._values([key[0]], [key[1]])[0, i])

    def true(self, key):
        return float(self._mean([key[0]], [key[1]])[0])


class Clusters(Multiplicative):
    """Held-out: two clusters of instances that disagree on the optimum.

    70% of the 40 instances are easy (hardness ~ U(0.5, 1.5)) with optimum near (-0.6, 0.5);
    30% are hard (hardness ~ U(4, 8)) with optimum near (0.8, -0.4). The best mean is a
    compromise pulled towards the hard cluster, so a trial that saw mostly easy instances
    looks both better and differently located than it is. Minimised. Not used to choose any
    default.
    """

    name = "clusters"

    def __init__(self, n_instances=40, seed=4242):
        rng = np.random.default_rng(seed)
        hard = np.arange(n_instances) < int(0.3 * n_instances)
        rng.shuffle(hard)
        self.h = np.where(hard, rng.uniform(4, 8, n_instances), rng.uniform(0.5, 1.5, n_instances))
        self.a = np.where(hard, 0.8, -0.6) + rng.normal(0, 0.15, n_instances)
        self.b = np.where(hard, -0.4, 0.5) + rng.normal(0, 0.15, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self.n_instances = n_instances
        self._set_oracle()


class Conflicting(Multiplicative):
    """Held-out: instances that disagree on everything, little hardness spread.

    Hardness ~ U(0.8, 1.2) (almost none), but each instance's own optimum ``(a_i, b_i)`` is
    drawn N(0, 1.2^2) per coordinate, so two configurations swap order from instance to
    instance (rank reversals): the sign of a paired difference says little, its size matters.
    40 instances, minimised. Not used to choose any default.
    """

    name = "conflicting"

    def __init__(self, n_instances=40, seed=9090):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        self.h = rng.uniform(0.8, 1.2, n_instances)
        self.a = rng.normal(0.0, 1.2, n_instances)
        self.b = rng.normal(0.0, 1.2, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()


class HeavyTail(Multiplicative):
    """Held out (second round): Pareto-tailed instance difficulty.

    ``f = h_i + sqrt(h_i) * ((x - a_i)^2 + (y - b_i)^2) + 0.2 sin(2x - 3y + phi_i)`` with
    ``h_i = 1 + Pareto(1.3)``: most instances are easy, one or two are tens of times harder,
    and the hard ones also weigh the configuration's gaps more (scale ``sqrt(h_i)``), so the
    mean is dominated by instances a trial may not have met when it is pruned. Optima
    ``(a_i, b_i) ~ N((0.4, -0.3), 0.5^2)``. 40 instances, minimised. Added with the
    pilot/held-out split of the second round: never run before the defaults were frozen.
    """

    name = "heavytail"

    def __init__(self, n_instances=40, seed=31337):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        self.h = 1.0 + rng.pareto(1.3, n_instances)
        self.a = rng.normal(0.4, 0.5, n_instances)
        self.b = rng.normal(-0.3, 0.5, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()

    def _values(self, x, y):
        x = np.asarray(x, dtype=float)[:, None]
        y = np.asarray(y, dtype=float)[:, None]
        return (self.h + np.sqrt(self.h) * ((x - self.a) ** 2 + (y - self.b) ** 2)
                + 0.2 * np.sin(2 * x - 3 * y + self.phase))


class FewHard(Multiplicative):
    """Held out (second round): three very hard instances decide where the optimum is.

    37 of 40 instances have scale 1 and optimum near (-0.7, -0.5); 3 have scale 15 and optimum
    near (0.9, 0.8). The best mean sits between, pulled towards the three hard instances, so
    the order of configurations on most instances (the easy ones) is the reverse of their
    order on the mean: a paired test that counts wins is misled by design. Minimised. Never
    run before the defaults were frozen.
    """

    name = "fewhard"

    def __init__(self, n_instances=40, seed=2718):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        hard = np.zeros(n_instances, dtype=bool)
        hard[rng.choice(n_instances, 3, replace=False)] = True
        self.h = np.where(hard, 15.0, 1.0) * rng.uniform(0.9, 1.1, n_instances)
        self.a = np.where(hard, 0.9, -0.7) + rng.normal(0, 0.1, n_instances)
        self.b = np.where(hard, 0.8, -0.5) + rng.normal(0, 0.1, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()


class NoisyRidge(Multiplicative):
    """Held out (second round): optimum moving with an instance feature, noisy scores.

    Instance ``i`` has a feature ``t_i ~ U(-1.2, 1.2)``; its optimum is ``(t_i, 0.6 t_i^2 -
    0.3)`` (structured rank reversals along a ridge, unlike ``conflicting``'s independent
    optima), its scale ``U(0.5, 2)``, and every evaluation adds Student-t(3) noise of scale
    0.15, a deterministic function of (configuration, instance) so that a configuration
    scores the same when met again. The true mean is the noiseless one (the expectation over
    the noise). 40 instances, minimised. Never run before the defaults were frozen.
    """

    name = "noisyridge"

    def __init__(self, n_instances=40, seed=16180):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        t = rng.uniform(-1.2, 1.2, n_instances)
        self.h = rng.uniform(0.5, 2.0, n_instances)
        self.a = t
        self.b = 0.6 * t ** 2 - 0.3
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()

    def score(self, key, i):
        noise_rng = np.random.default_rng(
            [16180, i] + np.array(key, dtype=np.float64).view(np.uint32).tolist())
        return float(self._values([key[0]], [key[1]])[0, i]
                     + 0.15 * noise_rng.standard_t(3))


class ShiftScale(Multiplicative):
    """Held out (third round): 80 instances, each with its own shift, scale and optimum.

    ``f = h_i + s_i * ((x - a_i)^2 + (y - b_i)^2 + 0.3 sin(3x - 2y + phi_i))`` with shifts
    ``h_i ~ Gamma(2, 2)`` (``synthetic``'s hardness), scales ``s_i`` log-normal (sigma 0.75)
    and optima ``(a_i, b_i) ~ N((0.2, -0.1), 0.5^2)``: the kind of objective on which
    RacingPruner's median regret had trailed WilcoxonPruner's (the instances' offsets make a
    partial mean say little; their scales make a win count differ from a mean). 80 instances,
    minimised. Never run before RacingPruner's defaults of that round were chosen on the
    ground-truth pilot (``pruning_ground_truth.py``).
    """

    name = "shiftscale"

    def __init__(self, n_instances=80, seed=8080):
        rng = np.random.default_rng(seed)
        self.n_instances = n_instances
        self.h = rng.gamma(2.0, 2.0, n_instances)
        self.scale = rng.lognormal(0.0, 0.75, n_instances)
        self.a = rng.normal(0.2, 0.5, n_instances)
        self.b = rng.normal(-0.1, 0.5, n_instances)
        self.phase = rng.uniform(0, 2 * np.pi, n_instances)
        self._set_oracle()

    def _values(self, x, y):
        x = np.asarray(x, dtype=float)[:, None]
        y = np.asarray(y, dtype=float)[:, None]
        return self.h + self.scale * ((x - self.a) ** 2 + (y - self.b) ** 2
                                      + 0.3 * np.sin(3 * x - 2 * y + self.phase))


class ShiftScaleDraw(ShiftScale):
    """Held out: another draw of ``shiftscale``'s kind, the same law with instances from
    ``seed``, each defined before any study ran on it (``DRAWS``): ``shiftscale-b`` to
    re-check on new instances what ``shiftscale`` showed once its seeds 1000-1099 had been a
    pilot; ``shiftscale-c`` and ``shiftscale-d`` to check, as planned, a lead seen after the
    fact on ``shiftscale-b`` (``instance_objective(on_prune="estimate")``); ``shiftscale-e``
    to measure once, after ``"estimate"`` became the default, the loop users now get.
    """

    def __init__(self, name, seed, n_instances=80):
        self.name = name
        super().__init__(n_instances, seed)


DRAWS = {"shiftscale-b": 9090, "shiftscale-c": 7070, "shiftscale-d": 6060,
         "shiftscale-e": 5050}


PROBLEMS = {"synthetic": Synthetic, "cv": CV, "tsp": TSP, "multiplicative": Multiplicative,
            "clusters": Clusters, "conflicting": Conflicting, "heavytail": HeavyTail,
            "fewhard": FewHard, "noisyridge": NoisyRidge, "shiftscale": ShiftScale,
            **{name: functools.partial(ShiftScaleDraw, name, seed)
               for name, seed in DRAWS.items()}}


# ---------------------------------------------------------------------------- conditions


class _FastExactWilcoxon:
    """Stand-in for ``scipy.stats`` inside WilcoxonPruner: same p-values, without the wait.

    With ties or zero differences and n <= 13, SciPy 1.17's ``wilcoxon`` runs an exact
    permutation test through ``permutation_test``, about 2 s per call on this machine; CV
    accuracies tie all the time, so one WilcoxonPruner study would take hours. The sign-flip
    distribution of the (zsplit, midrank) statistic is a subset-sum over doubled midranks,
    which a small dynamic programme enumerates exactly. Every other case goes to SciPy.
    ``check()`` compares both on random tied inputs at start-up.
    """

    class _Result:
        def __init__(self, pvalue):
            self.pvalue = pvalue

    def __getattr__(self, name):
        import scipy.stats

        return getattr(scipy.stats, name)

    @staticmethod
    def _exact(d, alternative):
        from scipy.stats import rankdata

        r2 = np.rint(2 * rankdata(np.abs(d))).astype(np.int64)
        t_obs = int(r2[d > 0].sum())  # zeros add the same constant to every sign flip
        vals = r2[d != 0]
        total = int(vals.sum())
        dist = np.zeros(total + 1)
        dist[0] = 1.0
        for v in vals.tolist():
            dist[v:] = dist[v:] + dist[: total + 1 - v].copy()
        dist /= dist.sum()
        return float(dist[t_obs:].sum() if alternative == "greater" else dist[: t_obs + 1].sum())

    def wilcoxon(self, d, alternative="two-sided", zero_method="zsplit", **kwargs):
        import scipy.stats

        d = np.asarray(d, dtype=float)
        ties = np.unique(np.abs(d)).size < d.size or np.any(d == 0)
        if (zero_method == "zsplit" and alternative in ("greater", "less") and ties
                and d.size <= 13 and not kwargs):
            return self._Result(self._exact(d, alternative))
        return scipy.stats.wilcoxon(d, alternative=alternative, zero_method=zero_method,
                                    **kwargs)

    def check(self, n_cases=60):
        import scipy.stats

        rng = np.random.default_rng(0)
        for case in range(n_cases):
            d = rng.choice([-2, -1, 0, 1, 2, 3], size=int(rng.integers(3, 14))) / 57
            alt = ("greater", "less")[case % 2]
            ref = scipy.stats.wilcoxon(d, alternative=alt, zero_method="zsplit").pvalue
            got = self.wilcoxon(d, alternative=alt, zero_method="zsplit").pvalue
            if not np.isclose(got, ref, rtol=1e-9, atol=1e-12):
                raise AssertionError(f"exact Wilcoxon stand-in disagrees with SciPy on {d}")


def _patch_wilcoxon_pruner():
    import optuna.pruners._wilcoxon as wilcoxon_module

    fast = _FastExactWilcoxon()
    fast.check()
    wilcoxon_module.ss = fast


def make_pruner(name, seed):
    if name == "none":
        return optuna.pruners.NopPruner()
    if name.startswith("wilcoxon"):
        return optuna.pruners.WilcoxonPruner(p_threshold=float(name.split("-")[1]))
    # racing[-signed-rank][-top3][-p0.95]...
    kwargs = {"random_state": seed}
    for part in name.split("-")[1:]:
        if part == "idp":
            kwargs["prior"] = "idp"
        elif part == "sr":
            kwargs["test"] = "signed-rank"
        elif part == "mean":
            kwargs["test"] = "mean"
        elif part.startswith("top"):
            kwargs["top_k"] = int(part[3:])
        elif part.startswith("p"):
            kwargs["credibility"] = float(part[1:])
        elif part.startswith("s"):
            kwargs["n_startup_steps"] = int(part[1:])
        elif part.startswith("eps"):
            kwargs["eps"] = float(part[3:])
        else:
            raise ValueError(f"pruner {name!r}: unknown RacingPruner option {part!r}")
    return RacingPruner(**kwargs)


def user_objective(evaluate, n_instances, seed):
    """The loop of Optuna's WilcoxonPruner documentation, as a user writes it.

    Random instance order per trial, ``trial.report(value, step=i)``, and on
    ``should_prune()`` *return* the mean of the values seen so far. No racer helper, no user
    attribute: the study holds unmarked partial means as COMPLETE trials.
    """
    def objective(trial):
        order = np.random.default_rng([seed, 0xB0B, trial.number]).permutation(n_instances)
        seen = []
        for i in order.tolist():
            value = evaluate(trial, i)
            seen.append(value)
            trial.report(value, i)
            if trial.should_prune():
                return sum(seen) / len(seen)
        return sum(seen) / len(seen)

    return objective


def run_study(problem, pruner_name, on_prune, seed, n_trials=None, max_evals=None,
              sampler="tpe"):
    """One study; returns its metrics."""
    counter = {"evals": 0}
    keys = {}

    def evaluate(trial, i):
        key = keys.get(trial.number)
        if key is None:
            key = keys[trial.number] = problem.suggest(trial)
            trial.set_user_attr("_key", key)
        counter["evals"] += 1
        return problem.score(key, i)

    if on_prune == "user":
        objective = user_objective(evaluate, problem.n_instances, seed)
    else:
        objective = instance_objective(evaluate, list(range(problem.n_instances)),
                                       on_prune=on_prune, random_state=seed)
    smp = (optuna.samplers.TPESampler(seed=seed) if sampler == "tpe"
           else optuna.samplers.RandomSampler(seed=seed))
    study = optuna.create_study(direction=problem.direction, sampler=smp,
                                pruner=make_pruner(pruner_name, seed))
    stated = None
    if isinstance(study.pruner, RacingPruner):
        # RacingPruner writes no racer_prune_risk: each prune's risk is read from its decide()
        from pruning_ground_truth import _record_prunes

        stated = _record_prunes(study.pruner)
    callbacks = []
    if max_evals is not None:
        def stop(study, trial):
            if counter["evals"] >= max_evals:
                study.stop()
        callbacks.append(stop)
        n_trials = 100000
    t0 = time.time()
    study.optimize(objective, n_trials=n_trials, callbacks=callbacks)
    wall = time.time() - t0
    return summarize_study(problem, study, counter["evals"], wall, stated)


def _key_of(trial):
    return trial.user_attrs.get("_key")


def summarize_study(problem, study, n_evals, wall, stated=None):
    n = problem.n_instances
    full = [t for t in study.trials
            if t.state == optuna.trial.TrialState.COMPLETE and len(t.intermediate_values) == n]
    sign = 1 if problem.direction == "minimize" else -1
    if full:
        returned = min(full, key=lambda t: sign * t.value)
    else:
        returned = study.best_trial
    key = _key_of(returned)
    key = tuple(key) if isinstance(key, list) else key
    regret = problem.regret(key)
    true_ret = problem.true(key)
    pruned = [t for t in study.trials
              if t.user_attrs.get("racer_pruned") or t.state == optuna.trial.TrialState.PRUNED
              or (t.state == optuna.trial.TrialState.COMPLETE and len(t.intermediate_values) < n)]
    best_key = _key_of(study.best_trial)
    best_key = tuple(best_key) if isinstance(best_key, list) else best_key
    best_is_partial = len(study.best_trial.intermediate_values) < n
    wrong = 0
    for t in pruned:
        k = _key_of(t)
        k = tuple(k) if isinstance(k, list) else k
        if sign * problem.true(k) < sign * true_ret - 1e-12:
            wrong += 1
    distinct = {json.dumps(_key_of(t)) for t in study.trials if _key_of(t) is not None}
    return {"regret": regret, "regret_best_trial": problem.regret(best_key),
            "best_trial_partial": best_is_partial,
            "evals": n_evals, "trials": len(study.trials),
            "configs": len(distinct),
            "pruned": len(pruned), "wrong_prunes": wrong, "wall": wall,
            **stated_risk_outcomes(problem, study, stated)}


# ------------------------------------------------------------------- stated risk vs the truth


def _true_theta(test, z):
    """The test's ``theta`` on the whole instance set (the tabulated instance distribution)."""
    if test == "sign":
        return float(np.mean(z > 0) + 0.5 * np.mean(z == 0))
    # signed-rank: Walsh averages over all pairs (i, j), i = j included, H(0) = 1/2
    pair_sum = z[:, None] + z[None, :]
    return float(np.mean(np.where(pair_sum > 0, 1.0, np.where(pair_sum == 0, 0.5, 0.0))))


def stated_risk_outcomes(problem, study, stated):
    """Each RacingPruner prune's stated risk next to whether its claim was false in truth.

    ``stated``: trial number -> (risk, reason, reference) of each prune, as
    ``pruning_ground_truth._record_prunes`` records them from ``RacingPruner.decide`` (the
    pruner writes no ``racer_prune_risk`` attribute any more). A prune's risk is, for a dominated prune, the
    posterior probability that the trial is *not worse* than its reference in the test's
    sense; for an indistinguishable one that the two differ by more than the band. The
    truth is the same statement on every instance (the tabulated problems' instance
    distribution): ``wrong_test`` is the claim false in the test's own sense (sign test:
    the trial wins at least half the instances against the reference, ties counting one
    half); ``wrong_mean`` is the user's question, the trial's true mean not worse than the
    reference's (for an indistinguishable prune: better by more than the rope, or than 0).
    Per study: counts and sums, so seeds are the clusters of the standard error. The
    ``risk_nowin_*`` entries repeat them for the prunes whose record had no win of the trial
    (three straight losses, or ties only): the class the DP posterior stated exactly 0 for
    before the fitted prior (RESULTS.md, "RacingPruner's stated risk").
    """
    pruner = study.pruner
    out = {"risk_prunes": 0, "risk_sum": 0.0, "risk_wrong_test": 0, "risk_wrong_mean": 0,
           "risk_equiv": 0, "risk_nowin_prunes": 0, "risk_nowin_sum": 0.0,
           "risk_nowin_wrong_test": 0}
    if not isinstance(pruner, RacingPruner):
        return out
    test, rope, eps = pruner._test, pruner._rope, pruner._eps
    sign = 1.0 if problem.direction == "maximize" else -1.0
    n = problem.n_instances

    def scores(trial):
        key = _key_of(trial)
        key = tuple(key) if isinstance(key, list) else key
        return np.array([problem.score(key, i) for i in range(n)])

    for number, (risk, reason, reference) in sorted(stated.items()):
        raw = sign * (scores(study.trials[number]) - scores(study.trials[reference]))
        z = np.where(np.abs(raw) <= rope, 0.0, raw)
        mean = float(raw.mean())
        if reason == "dominated":
            wrong_mean = mean >= -1e-12
            wrong_test = wrong_mean if test == "mean" else _true_theta(test, z) >= 0.5
        else:
            out["risk_equiv"] += 1
            wrong_mean = mean > rope + 1e-12
            wrong_test = (abs(mean) > rope + 1e-12 if test == "mean"
                          else abs(_true_theta(test, z) - 0.5) >= eps)
        out["risk_prunes"] += 1
        out["risk_sum"] += risk
        out["risk_wrong_test"] += int(wrong_test)
        out["risk_wrong_mean"] += int(wrong_mean)
        # The record at the prune: every value the trial reported (on_prune="raise" stops it).
        steps = list(study.trials[number].intermediate_values)
        seen = raw[[i for i in steps if i < n]]
        if not np.any(np.where(np.abs(seen) <= rope, 0.0, seen) > 0):
            out["risk_nowin_prunes"] += 1
            out["risk_nowin_sum"] += risk
            out["risk_nowin_wrong_test"] += int(wrong_test)
    return out


def _ratio_se(num, den):
    """Ratio sum(num) / sum(den) over seeds and its cluster (seed) standard error."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    total = den.sum()
    if total == 0:
        return math.nan, math.nan
    ratio = num.sum() / total
    k = len(num)
    resid = num - ratio * den
    se = math.sqrt(k / (k - 1) * float(np.sum(resid ** 2))) / total if k > 1 else math.nan
    return ratio, se


def risk_table(rows):
    """Stated risk of RacingPruner's prunes against the measured rate of false claims."""
    out = ["\n### Stated risk vs measured rate of RacingPruner's prunes\n",
           "Per prune: stated = the prune's `risk` from `RacingPruner.decide` (written as "
           "`racer_prune_risk` before the third round of defaults); measured = the prune's "
           "claim false on the "
           "whole instance set. SE clustered by seed; `diff` = measured - stated.\n",
           "| problem | view | condition | subset | seeds | prunes (equiv.) | mean stated risk | "
           "measured, test's sense +- SE | diff +- SE | measured, true mean not worse +- SE |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups = {}
    for r in rows:
        if r.get("risk_prunes", 0) or r["condition"].startswith("racing"):
            groups.setdefault((r["problem"], r["view"], r["condition"], r["on_prune"]),
                              []).append(r)
    for (prob, view, cond, onp), rs in sorted(groups.items()):
        for subset, pre in (("all", "risk_"), ("no win", "risk_nowin_")):
            n = [r.get(pre + "prunes", 0) for r in rs]
            stated, _ = _ratio_se([r.get(pre + "sum", 0.0) for r in rs], n)
            test, test_se = _ratio_se([r.get(pre + "wrong_test", 0) for r in rs], n)
            diff, diff_se = _ratio_se([r.get(pre + "wrong_test", 0) - r.get(pre + "sum", 0.0)
                                       for r in rs], n)
            equiv = sum(r.get("risk_equiv", 0) for r in rs) if subset == "all" else "-"
            mean = "-"
            if subset == "all":
                m, m_se = _ratio_se([r.get("risk_wrong_mean", 0) for r in rs], n)
                mean = f"{m:.4f} +- {m_se:.4f}"
            out.append(f"| {prob} | {view} | {cond}:{onp} | {subset} | {len(rs)} | {sum(n)} "
                       f"({equiv}) | {stated:.4f} | {test:.4f} +- {test_se:.4f} | "
                       f"{diff:+.4f} +- {diff_se:.4f} | {mean} |")
    return "\n".join(out)


def risk_comparison(rows, baseline):
    """The stated risk now against ``baseline`` rows (same problems, conditions and seeds).

    The baseline rows hold the DP posterior's stated risk; the decisions, hence the
    prunes and whether each was wrong, must be the same (checked here, row by row), so the
    two stated risks are paired on the same prunes. SE clustered by seed.
    """
    old = {(r["problem"], r["view"], r["condition"], r["on_prune"], r["seed"]): r
           for r in baseline}
    groups = {}
    for r in rows:
        key = (r["problem"], r["view"], r["condition"], r["on_prune"])
        o = old.get(key + (r["seed"],))
        if o is None:
            continue
        for k in ("regret", "evals", "trials", "pruned", "risk_prunes", "risk_wrong_test"):
            if r[k] != o[k]:
                raise ValueError(f"{key} seed {r['seed']}: {k} differs from the baseline "
                                 f"({r[k]} vs {o[k]}): not the same decisions")
        groups.setdefault(key, []).append((r, o))
    out = ["\n### Stated risk: fitted prior against the DP posterior, on the same prunes\n",
           "| problem | view | condition | seeds | prunes | measured +- SE | stated, DP | "
           "measured - DP +- SE | stated, fitted | measured - fitted +- SE (z) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (prob, view, cond, onp), pairs in sorted(groups.items()):
        n = [r["risk_prunes"] for r, _ in pairs]
        wrong = [r["risk_wrong_test"] for r, _ in pairs]
        meas, meas_se = _ratio_se(wrong, n)
        dp, _ = _ratio_se([o["risk_sum"] for _, o in pairs], n)
        fit, _ = _ratio_se([r["risk_sum"] for r, _ in pairs], n)
        d_dp, d_dp_se = _ratio_se([w - o["risk_sum"] for w, (_, o) in zip(wrong, pairs)], n)
        d_fit, d_fit_se = _ratio_se([w - r["risk_sum"] for w, (r, _) in zip(wrong, pairs)], n)
        out.append(f"| {prob} | {view} | {cond}:{onp} | {len(pairs)} | {sum(n)} | "
                   f"{meas:.4f} +- {meas_se:.4f} | {dp:.4f} | {d_dp:+.4f} +- {d_dp_se:.4f} | "
                   f"{fit:.4f} | {d_fit:+.4f} +- {d_fit_se:.4f} ({d_fit / d_fit_se:+.1f}) |")
    return "\n".join(out)


# ------------------------------------------------------------------------------ the table


def _fmt(values, digits=4):
    v = np.asarray(values, dtype=float)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return f"{med:.{digits}g} [{q1:.{digits}g}, {q3:.{digits}g}]"


def table(rows, view):
    out = [f"\n### View {view}\n",
           "| problem | condition | on_prune | median true regret [IQR] | mean regret | evals "
           "(median) | trials | pruned | wrong prunes (mean) | wall s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups = {}
    for r in rows:
        if r["view"] == view:
            groups.setdefault((r["problem"], r["condition"], r["on_prune"]), []).append(r)
    for (prob, cond, onp), rs in groups.items():
        reg = [r["regret"] for r in rs]
        out.append(
            f"| {prob} | {cond} | {onp} | {_fmt(reg)} | {np.mean(reg):.4g} | "
            f"{np.median([r['evals'] for r in rs]):.0f} | "
            f"{np.median([r['trials'] for r in rs]):.0f} | "
            f"{np.median([r['pruned'] for r in rs]):.0f} | "
            f"{np.mean([r['wrong_prunes'] for r in rs]):.1f} | "
            f"{np.median([r['wall'] for r in rs]):.1f} |"
        )
    return "\n".join(out)


def paired(rows):
    """Per-seed comparison of RacingPruner with WilcoxonPruner under each equal-evaluation view."""
    reg = {(r["problem"], r["view"], r["condition"], r["on_prune"], r["seed"]): r["regret"]
           for r in rows}
    out = ["\n### Paired per seed, equal evaluations: RacingPruner vs WilcoxonPruner\n",
           "| problem | view | racing | against | racing lower | racing higher | tied |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    keys = sorted({(k[0], k[1]) for k in reg if k[1] != "A"})
    for prob, view in keys:
        for mine in [("racing", "return"), ("racing", "raise"), ("racing", "estimate")]:
            for theirs in [("wilcoxon-0.1", "return"), ("wilcoxon-0.05", "return"),
                           ("wilcoxon-0.1", "raise"), ("wilcoxon-0.1", "estimate")]:
                lower = higher = tied = 0
                for (p_, v_, c_, o_, seed), value in reg.items():
                    if (p_, v_, c_, o_) != (prob, view) + mine:
                        continue
                    other = reg.get((prob, view) + theirs + (seed,))
                    if other is None:
                        continue
                    if abs(value - other) < 1e-12:
                        tied += 1
                    elif value < other:
                        lower += 1
                    else:
                        higher += 1
                if lower + higher + tied:
                    out.append(f"| {prob} | {view} | {mine[0]} ({mine[1]}) | {theirs[0]} "
                               f"({theirs[1]}) | {lower} | {higher} | {tied} |")
    return "\n".join(out)


def paired_differences(rows):
    """Every racing condition against every Wilcoxon one (any ``on_prune``), per problem and view.

    Reports both medians, their difference with a paired bootstrap SE over seeds
    (``pruning_ground_truth.median_diff_se``), the paired difference racing - wilcoxon (mean
    +- its standard error over seeds, and median), and per-seed wins; negative favours
    RacingPruner.
    """
    from pruning_ground_truth import median_diff_se

    reg = {(r["problem"], r["view"], r["condition"], r["on_prune"], r["seed"]): r["regret"]
           for r in rows}
    out = ["\n### Paired regret differences (racing - wilcoxon; negative favours racing)\n",
           "| problem | view | racing | wilcoxon | seeds | median racing | "
           "median wilcoxon | difference of medians +- bootstrap SE | mean diff +- SE | "
           "median diff | racing lower / higher / tied |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups = sorted({k[:4] for k in reg})
    for prob, view, cond, onp in groups:
        if not cond.startswith("racing"):
            continue
        for prob2, view2, cond2, onp2 in groups:
            if (prob2, view2) != (prob, view) or not cond2.startswith("wilcoxon"):
                continue
            seeds = sorted(s for (p_, v_, c_, o_, s) in reg if (p_, v_, c_, o_) == (
                prob, view, cond, onp) and (prob, view, cond2, onp2, s) in reg)
            if not seeds:
                continue
            a = np.array([reg[prob, view, cond, onp, s] for s in seeds])
            b = np.array([reg[prob, view, cond2, onp2, s] for s in seeds])
            d = a - b
            se = d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else math.nan
            out.append(
                f"| {prob} | {view} | {cond}:{onp} | {cond2}:{onp2} | {len(d)} | {np.median(a):.4g} | "
                f"{np.median(b):.4g} | {np.median(a) - np.median(b):+.4g} +- "
                f"{median_diff_se(a, b):.2g} | {d.mean():+.4g} +- {se:.2g} | {np.median(d):+.4g} | "
                f"{int((d < -1e-12).sum())} / {int((d > 1e-12).sum())} / "
                f"{int((np.abs(d) <= 1e-12).sum())} |")
    return "\n".join(out)


FULL_CONDITIONS = [
    ("none", "return"),
    ("wilcoxon-0.1", "return"),
    ("wilcoxon-0.05", "return"),
    ("wilcoxon-0.1", "raise"),
    ("wilcoxon-0.1", "estimate"),
    ("racing", "estimate"),
    ("racing", "return"),
    ("racing", "raise"),
    ("racing-top3", "raise"),
    ("racing-sr", "return"),
]
QUICK_CONDITIONS = [("none", "return"), ("wilcoxon-0.1", "return"), ("wilcoxon-0.1", "raise"),
                    ("racing", "estimate"), ("racing", "return"), ("racing", "raise")]


def overhead(n_complete=100, n_instances=50, n_steps=25, repeats=200):
    """Time one ``prune`` call against a study of ``n_complete`` full trials (in memory)."""
    rng = np.random.default_rng(0)
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    study = optuna.create_study()
    for _ in range(n_complete):
        vals = rng.gamma(2, 2, n_instances) + rng.random()
        study.add_trial(optuna.trial.create_trial(
            params={"x": 0.5}, distributions=dist, value=float(vals.mean()),
            intermediate_values={i: float(v) for i, v in enumerate(vals)}))
    trial = study.ask()
    for i in range(n_steps):
        trial.report(float(rng.gamma(2, 2) + 0.5), i)
    frozen = study._storage.get_trial(trial._trial_id)
    rows = ["| pruner | microseconds per prune() call |", "| --- | --- |"]
    for name, pruner in [
        ("WilcoxonPruner(p=0.1)", optuna.pruners.WilcoxonPruner(p_threshold=0.1)),
        ("RacingPruner(sign)", RacingPruner(random_state=0)),
        ("RacingPruner(sign, top_k=3)", RacingPruner(top_k=3, random_state=0)),
        ("RacingPruner(signed-rank)", RacingPruner(test="signed-rank", random_state=0)),
        ("RacingPruner(signed-rank, top_k=3)",
         RacingPruner(test="signed-rank", top_k=3, random_state=0)),
    ]:
        pruner.prune(study, frozen)
        t0 = time.perf_counter()
        for _ in range(repeats):
            pruner.prune(study, frozen)
        rows.append(f"| {name} | {1e6 * (time.perf_counter() - t0) / repeats:.0f} |")
    print(f"\n### prune() overhead ({n_complete} complete trials x {n_instances} instances, "
          f"trial at step {n_steps}, in-memory storage)\n")
    print("\n".join(rows))


def _open_text(path):
    # Recorded runs may be kept gzipped (gzip -9), as pruning_ground_truth.py's are
    if str(path).endswith(".gz"):
        import gzip

        return gzip.open(path, "rt")
    return open(path)


def pool_problems(rows, name):
    """``rows`` relabelled as problem ``name``, refusing two records of one study.

    >>> pool_problems([{"problem": "a", "view": "B", "condition": "racing", "on_prune": "user",
    ...                 "seed": 1}], "kind")[0]["problem"]
    'kind'
    """
    out, seen = [], set()
    for r in rows:
        key = (r["view"], r["condition"], r["on_prune"], r["seed"])
        if key in seen:
            raise ValueError(f"--pool {name}: two records of {key} (the draws share a seed)")
        seen.add(key)
        out.append(dict(r, problem=name))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument("--problems", default="synthetic,cv,tsp",
                        help="comma list of " + ", ".join(PROBLEMS))
    parser.add_argument("--conditions", default=None,
                        help="comma list of pruner:on_prune, e.g. racing-p0.95:raise")
    parser.add_argument("--n-trials", type=int, default=None)
    parser.add_argument("--eval-factor", type=int, default=None,
                        help="view B budget = eval-factor x n_instances evaluations")
    parser.add_argument("--views", default="A,B")
    parser.add_argument("--jsonl", default=None, help="append raw rows here")
    parser.add_argument("--overhead", action="store_true", help="only time prune() calls")
    parser.add_argument("--from-jsonl", nargs="+", default=None,
                        help="only print the tables of rows saved by earlier --jsonl runs")
    parser.add_argument("--pool", default=None, metavar="NAME",
                        help="with --from-jsonl: print every record as problem NAME, to pool "
                             "draws of one kind of objective (their seeds must differ)")
    parser.add_argument("--risk-baseline", nargs="+", default=None,
                        help="with --from-jsonl: rows of the same runs with the DP posterior's "
                             "stated risk, compared prune for prune")
    args = parser.parse_args(argv)
    if args.from_jsonl:
        rows = [json.loads(line) for f in args.from_jsonl for line in _open_text(f)]
        for r in rows:
            r["regret"] = 0.0 if abs(r["regret"]) < 1e-12 else r["regret"]
        if args.pool:
            rows = pool_problems(rows, args.pool)
        seeds = sorted({r["seed"] for r in rows})
        print(f"# RacingPruner vs WilcoxonPruner vs no pruning ({len(seeds)} seeds)")
        for view in sorted({r["view"] for r in rows}):
            print(table(rows, view))
        print(paired(rows))
        print(paired_differences(rows))
        print(risk_table(rows))
        if args.risk_baseline:
            baseline = [json.loads(line) for f in args.risk_baseline
                        for line in _open_text(f)]
            print(risk_comparison(rows, baseline))
        return
    _patch_wilcoxon_pruner()
    if args.overhead:
        overhead()
        return
    n_seeds = args.seeds or (3 if args.quick else 10)
    n_trials = args.n_trials or (40 if args.quick else 100)
    eval_factor = args.eval_factor or 10
    if args.conditions:
        conditions = [tuple(c.split(":")) for c in args.conditions.split(",")]
    else:
        conditions = QUICK_CONDITIONS if args.quick else FULL_CONDITIONS
    rows = []
    sink = open(args.jsonl, "a") if args.jsonl else None
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        for view in args.views.split(","):
            for cond, onp in conditions:
                if cond == "none" and onp == "raise":
                    continue
                for s in range(args.seed_offset, args.seed_offset + n_seeds):
                    if view == "A":
                        r = run_study(problem, cond, onp, s, n_trials=n_trials)
                    else:
                        r = run_study(problem, cond, onp, s,
                                      max_evals=eval_factor * problem.n_instances)
                    # View B rows carry their budget, so runs at several budgets can merge.
                    tag = view if view == "A" or eval_factor == 10 else f"B x{eval_factor}"
                    r.update(problem=pname, condition=cond, on_prune=onp, seed=s, view=tag)
                    rows.append(r)
                    if sink:
                        sink.write(json.dumps(r) + "\n")
                        sink.flush()
                print(f"done {pname} {view} {cond} {onp}", file=sys.stderr, flush=True)
    print(f"# RacingPruner vs WilcoxonPruner vs no pruning ({n_seeds} seeds from "
          f"{args.seed_offset}; A: {n_trials} trials; B: {eval_factor} x n_instances "
          "evaluations; TPE)")
    for view in sorted({r["view"] for r in rows}):
        print(table(rows, view))
    print(paired_differences(rows))
    print(risk_table(rows))


if __name__ == "__main__":
    main()
