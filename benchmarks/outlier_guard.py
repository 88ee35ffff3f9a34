"""What does :class:`racer.racing.outliers.OutlierGuard` cost on heavy-tailed costs, and what
does it save?

Simulated races through :class:`racer.engine.Race`: ``--configs`` configurations whose
median costs differ by a lognormal factor of sigma 0.3, ``--instances`` instances whose
costs differ up to 27-fold (log-uniform), each run's cost multiplied by lognormal noise of
sigma 1, 2 or 3. The true best is the configuration of least expected cost (every one has
the same noise, so the least median). Every variant races the same cost matrix of a seed
(paired): the racing test alone (irace's t-test by default), and wrapped in ``OutlierGuard``
with ``factor`` 100 or 1000 and the median or the best-mean reference. Reported per sigma
and variant, over the seeds:

* ``best dropped``: races in which the guard eliminated the true best (its eliminations are
  those whose number exceeds 1: the guard records a ratio, the t-test a p-value);
* ``any drop``: races in which the guard eliminated anything;
* ``evals`` and ``saved``: mean evaluations per race, and the fraction saved against the test
  alone; ``cost saved``: the same for the sum of the costs of the runs made (time, for a
  solver);
* ``regret``: mean relative excess expected cost of the race's winner over the true best;
* ``outlier kept``: a second matrix per seed in which one configuration other than the true
  best has one run 10^4 times its own cost; the races in which it is still a survivor at the
  end, its mean number of runs (``its runs``), and the cost saved on that matrix against the
  test alone, the outlier run itself left out (every variant pays it).

    OPENBLAS_NUM_THREADS=1 python benchmarks/outlier_guard.py [--quick] [--seeds N]
        [--test t-test]

``--quick``: 40 seeds instead of 200.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from racer.engine import Race
from racer.racing.outliers import OutlierGuard
from racer.racing.registry import make_test

SIGMAS = (1.0, 2.0, 3.0)
VARIANTS = (("alone", None, None), ("median x100", 100.0, "median"),
            ("best x100", 100.0, "best"), ("median x1000", 1000.0, "median"),
            ("best x1000", 1000.0, "best"))
OUTLIER = 1e4


def costs_of(seed: int, sigma: float, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(costs (n, m), log median of each configuration)`` of one seed."""
    rng = np.random.default_rng([seed, int(sigma * 10)])
    config = rng.normal(0.0, 0.3, size=m)
    instance = rng.uniform(0.0, np.log(27.0), size=n)
    noise = rng.normal(0.0, sigma, size=(n, m))
    return np.exp(instance[:, None] + config[None, :] + noise), config


def run_race(test, costs: np.ndarray, seed: int, skip=None):
    """``(result, sum of the costs of the runs made but the cell skip)``."""
    n, m = costs.shape
    race = Race(list(range(m)), test=test, first_test=5, each_test=1, instances=range(n),
                random_state=seed)
    spent = 0.0
    while not race.finished:
        for ev in race.ask():
            value = float(costs[ev.instance, ev.candidate])
            if (ev.instance, ev.candidate) != skip:
                spent += value
            race.tell(ev, value)
    return race.result(), spent


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 seeds")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (200)")
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--instances", type=int, default=40)
    parser.add_argument("--test", default="t-test", help="racing test name (registry)")
    args = parser.parse_args(argv)
    n_seeds = args.seeds or (40 if args.quick else 200)
    m, n = args.configs, args.instances
    start = time.perf_counter()
    print(f"# OutlierGuard on lognormal costs: {m} configurations, {n} instances, "
          f"{n_seeds} seeds, test {args.test}")
    for sigma in SIGMAS:
        stats = {name: {"best": 0, "any": 0, "evals": [], "cost": [], "regret": [], "kept": 0,
                        "ocost": [], "oruns": []} for name, _, _ in VARIANTS}
        for seed in range(n_seeds):
            costs, config = costs_of(seed, sigma, m, n)
            true_best = int(np.argmin(config))
            rng = np.random.default_rng([seed, 99])
            victim = int(rng.choice([j for j in range(m) if j != true_best]))
            spoiled, row = costs.copy(), int(rng.integers(n))
            spoiled[row, victim] *= OUTLIER
            for name, factor, reference in VARIANTS:
                base = make_test(args.test)[0]
                test = base if factor is None else OutlierGuard(base, factor,
                                                                reference=reference)
                s = stats[name]
                res, spent = run_race(test, costs, seed)
                guard_drops = [h.candidate_index for h in res.history if h.probability > 1]
                s["best"] += true_best in guard_drops
                s["any"] += bool(guard_drops)
                s["evals"].append(res.n_evaluations)
                s["cost"].append(spent)
                s["regret"].append(np.exp(config[res.best_index] - config[true_best]) - 1)
                res, spent = run_race(test, spoiled, seed, skip=(row, victim))
                s["kept"] += victim in res.survivor_indices.tolist()
                s["oruns"].append(res.n_evaluated[victim])
                s["ocost"].append(spent)
        alone = stats["alone"]
        print(f"\n## sigma {sigma:g}\n")
        print("| variant | best dropped | any drop | evals | saved | cost saved | regret "
              "| outlier kept | its runs | cost saved (outlier) |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, _, _ in VARIANTS:
            s = stats[name]
            evals, cost, ocost = (np.mean(s[k]) for k in ("evals", "cost", "ocost"))
            print(f"| {name} | {s['best'] / n_seeds:.3f} | {s['any'] / n_seeds:.3f} "
                  f"| {evals:.1f} | {1 - evals / np.mean(alone['evals']):.1%} "
                  f"| {1 - cost / np.mean(alone['cost']):.1%} "
                  f"| {np.mean(s['regret']):.4f} | {s['kept'] / n_seeds:.3f} "
                  f"| {np.mean(s['oruns']):.1f} "
                  f"| {1 - ocost / np.mean(alone['ocost']):.1%} |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
