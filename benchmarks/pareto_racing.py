"""Racing on two objectives with ParetoTest: accuracy, cost and risk on a known Pareto set.

Simulated candidates, both objectives minimised. Each race draws 10 candidates: 4 on a convex
front (f2 = (1 - f1)^2, one f1 drawn in each quarter of [0, 1], so no two are near-copies)
and 6 dominated ones, each a front point shifted away on both objectives by
``0.25 * U(0.3, 1.5)`` (some close to the front, some far). An instance adds a shared
difficulty N(0, 0.5^2) to every candidate (so blocking matters) and noise per candidate,
correlated between the objectives. Families:

* ``correlated``      noise sd (0.2, 0.2), correlation +0.7 between the objectives;
* ``anti``            the same with correlation -0.7;
* ``unequal``         sd (0.07, 0.35), uncorrelated;
* ``heavy``           Student t(3) noise scaled to sd (0.2, 0.2), correlation +0.3.

Measured per race, against running every candidate on every one of the 100 instances:

* ``keep_front``      every Pareto-optimal candidate survives (target >= 95% of races);
* ``dominated_out``   share of the dominated candidates eliminated (target >= 80%);
* ``cost``            evaluations / (10 x 100) (target <= 60%);
* risk, per dominance elimination: *stated* = mean of ``1 - probability`` recorded (the
  posterior probability that the statement "``by`` dominates it" is false), *measured* = share
  of those eliminations where ``by`` does not truly dominate the eliminated candidate; and per
  race: stated = mean over races of the sum of ``1 - probability`` (a bound on the probability
  of a wrong elimination), measured = share of races that lost a Pareto-optimal candidate.

Usage::

    python benchmarks/pareto_racing.py --pilot              # seeds 0..9, several settings
    python benchmarks/pareto_racing.py --seeds 100 --start 1000   # fresh seeds, the default
    python benchmarks/pareto_racing.py --quick              # 3 seeds, a smoke run
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import racer
from racer import ParetoTest

N_FRONT, N_DOMINATED, N_INSTANCES = 4, 6, 100
GAP = 0.25
FAMILIES = {
    "correlated": dict(sd=(0.2, 0.2), rho=0.7, t=None),
    "anti": dict(sd=(0.2, 0.2), rho=-0.7, t=None),
    "unequal": dict(sd=(0.07, 0.35), rho=0.0, t=None),
    "heavy": dict(sd=(0.2, 0.2), rho=0.3, t=3),
}


def make_problem(family: str, seed: int):
    """True means (m, 2), Pareto-optimal mask, and the score array (instances, m, 2)."""
    spec = FAMILIES[family]
    rng = np.random.default_rng([seed, list(FAMILIES).index(family)])
    f1 = (np.arange(N_FRONT) + rng.uniform(0.1, 0.9, N_FRONT)) / N_FRONT
    front = np.stack([f1, (1 - f1) ** 2], axis=1)
    base = front[rng.integers(0, N_FRONT, N_DOMINATED)]
    dominated = base + GAP * rng.uniform(0.3, 1.5, size=(N_DOMINATED, 2))
    means = np.concatenate([front, dominated])
    m = means.shape[0]
    order = rng.permutation(m)  # the optimal ones are not always the first candidates
    means = means[order]
    optimal = order < N_FRONT
    sd = np.asarray(spec["sd"])
    cov = np.array([[1.0, spec["rho"]], [spec["rho"], 1.0]])
    chol = np.linalg.cholesky(cov)
    z = rng.standard_normal((N_INSTANCES, m, 2)) @ chol.T
    if spec["t"] is not None:
        nu = spec["t"]
        chi = rng.chisquare(nu, size=(N_INSTANCES, m, 1))
        z = z / np.sqrt(chi / nu) / np.sqrt(nu / (nu - 2))
    difficulty = rng.normal(0, 0.5, size=(N_INSTANCES, 1, 2))
    scores = means + difficulty + z * sd
    return means, optimal, scores


def truly_dominates(means, i, j):
    """i dominates j on the true means (minimised)."""
    return bool(np.all(means[i] <= means[j]) and np.any(means[i] < means[j]))


def one_race(family: str, seed: int, options: dict, first_test: int):
    means, optimal, scores = make_problem(family, seed)
    m = means.shape[0]
    res = racer.race(lambda c, i: scores[i, c], list(range(m)), range(N_INSTANCES),
                     direction=["minimize", "minimize"], test=ParetoTest(**options),
                     first_test=first_test, random_state=seed, progress=False)
    survivors = set(res.survivor_indices.tolist())
    dominated = np.flatnonzero(~optimal)
    stated, wrong = [], []
    for h in res.history:
        if h.reason != "dominated":
            continue
        stated.append(1.0 - h.probability)
        wrong.append(not truly_dominates(means, h.by_index, h.candidate_index))
    return {
        "keep_front": all(int(j) in survivors for j in np.flatnonzero(optimal)),
        "dominated_out": float(np.mean([int(j) not in survivors for j in dominated])),
        "cost": res.n_evaluations / (m * N_INSTANCES),
        "stated": stated,
        "wrong": wrong,
        "front_exact": set(res.pareto_front_indices.tolist()) == set(np.flatnonzero(optimal).tolist()),
    }


def summarise(rows):
    n = len(rows)
    keep = np.mean([r["keep_front"] for r in rows])
    out = np.mean([r["dominated_out"] for r in rows])
    cost = np.mean([r["cost"] for r in rows])
    stated = np.concatenate([r["stated"] for r in rows]) if rows else np.array([])
    wrong = np.concatenate([np.asarray(r["wrong"], float) for r in rows]) if rows else np.array([])
    race_stated = np.mean([min(1.0, sum(r["stated"])) for r in rows])
    race_lost = 1 - keep
    se = lambda p, k: np.sqrt(max(p * (1 - p), 1e-12) / max(k, 1))  # noqa: E731
    return {
        "races": n,
        "keep_front": f"{100 * keep:.1f}% +/- {100 * se(keep, n):.1f}",
        "dominated_out": f"{100 * out:.1f}%",
        "cost": f"{100 * cost:.1f}%",
        "elim_stated": f"{100 * stated.mean():.2f}%" if stated.size else "-",
        "elim_measured": (f"{100 * wrong.mean():.2f}% +/- {100 * se(wrong.mean(), wrong.size):.2f} "
                          f"({int(wrong.sum())}/{wrong.size})") if wrong.size else "-",
        "race_stated": f"{100 * race_stated:.1f}%",
        "race_measured": f"{100 * race_lost:.1f}% +/- {100 * se(race_lost, n):.1f}",
        "front_exact": f"{100 * np.mean([r['front_exact'] for r in rows]):.1f}%",
    }


def run(settings, seeds, families):
    table = []
    for name, (options, first_test) in settings.items():
        every = []
        for family in families:
            t0 = time.perf_counter()
            rows = [one_race(family, seed, options, first_test) for seed in seeds]
            every += rows
            table.append((name, family, summarise(rows), time.perf_counter() - t0))
            print_row(*table[-1])
        table.append((name, "all", summarise(every), float("nan")))
        print_row(*table[-1])
    return table


COLUMNS = ["races", "keep_front", "dominated_out", "cost", "elim_stated", "elim_measured",
           "race_stated", "race_measured", "front_exact"]


def print_header():
    print("| setting | family | " + " | ".join(COLUMNS) + " | seconds |")
    print("|" + " --- |" * (len(COLUMNS) + 3), flush=True)


def print_row(name, family, s, secs):
    print(f"| {name} | {family} | " + " | ".join(str(s[c]) for c in COLUMNS)
          + f" | {secs:.0f} |", flush=True)


PILOT = {
    "c0.99_min10": (dict(credibility=0.99, min_instances=10), 5),
    "c0.995_min10": (dict(credibility=0.995, min_instances=10), 5),
    "c0.999_min10": (dict(credibility=0.999, min_instances=10), 5),
    "c0.995_min20": (dict(credibility=0.995, min_instances=20), 5),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pilot", action="store_true",
                        help="pilot seeds 0..9 (or 0..--seeds-1), several settings")
    parser.add_argument("--quick", action="store_true", help="3 seeds, the default only")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--start", type=int, default=1000, help="first seed (fresh: >= 1000)")
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args(argv)
    families = args.families.split(",")
    if args.pilot:
        settings, seeds = PILOT, range(args.seeds if args.seeds < 100 else 10)
    else:
        default = ParetoTest()
        settings = {f"default (credibility {default.credibility})": ({}, 5)}
        seeds = range(args.start, args.start + (3 if args.quick else args.seeds))
    print_header()
    run(settings, seeds, families)


if __name__ == "__main__":
    main()
