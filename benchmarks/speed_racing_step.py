"""One warm racing-test step with 200 survivors at n = 200..220 instances (a target of the default).

For each n the matrix is the paper generator's (mu ~ U(0, 1), N(mu, rho^2) scores, 200
candidates); a step is *warm* when the per-race statistics are already up to date for the
first n - 5 rows and only the last block of 5 rows is new:

* ``FRaceTest("conover")`` reads the same engine statistics, also brought up to date on
  n - 5 rows before the timed call;
* ``PosteriorBestTest`` reads ``RaceView.rank_sums`` / ``rank_sq_sums``, which the engine's
  ``RaceStats`` maintains incrementally: it is brought up to date on n - 5 rows, and ranking
  the new block is inside the timed call. A *cold* step (a view without engine statistics:
  ranks of the whole matrix computed in the call) is reported too.

Only steps in which PosteriorBestTest eliminates are kept (the target is about those); both
tests are timed on the same matrices in the same run, interleaved, and the ratio of medians
is reported.

    .venv/bin/python benchmarks/speed_racing_step.py --quick
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from racer import PosteriorBestTest, RaceView
from racer.racing.frace import FRaceTest
from racer._race_stats import RaceStats


def one_n(n, m, rho, rep, repeats):
    rng = np.random.default_rng([2026, 91, n, rep])
    mu = rng.uniform(0.0, 1.0, m)
    x = mu + rho * rng.standard_normal((n, m))
    ids = np.arange(m)
    test = PosteriorBestTest()
    kw = dict(budget_left=None, instances_left=1500 - n, each_test=5, n_candidates=m, step=n // 5)
    out = test.decide(RaceView.from_scores(x, ids, **kw), np.random.default_rng(0))
    if not out:
        return None
    warm, cold, conover = [], [], []
    for _ in range(repeats):
        stats = RaceStats(m)
        stats.rank_sums(x[: n - 5], ids)  # the engine's statistics after the previous step
        view = RaceView(x, ids, stats=stats, **kw)
        t0 = time.perf_counter()
        test.decide(view, np.random.default_rng(0))
        warm.append(time.perf_counter() - t0)

        view = RaceView(x, ids, **kw)
        t0 = time.perf_counter()
        test.decide(view, np.random.default_rng(0))
        cold.append(time.perf_counter() - t0)

        frace = FRaceTest(post_hoc="conover")
        stats = RaceStats(m)
        stats.rank_sums(x[: n - 5], ids)
        view = RaceView(x, ids, stats=stats, **kw)
        t0 = time.perf_counter()
        frace.decide(view, np.random.default_rng(0))
        conover.append(time.perf_counter() - t0)
    return len(out), np.median(warm), np.median(cold), np.median(conover), min(warm), min(conover)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 200, 210, 220 and 5 repeats")
    ap.add_argument("--m", type=int, default=200)
    ap.add_argument("--rho", type=float, default=1.0)
    a = ap.parse_args()
    ns = [200, 210, 220] if a.quick else list(range(200, 221, 5))
    repeats = 5 if a.quick else 21
    # warm-up: imports, first calls
    one_n(200, a.m, a.rho, 99, 1)
    print(f"m = {a.m}, rho = {a.rho}, {platform.processor() or platform.machine()}, "
          f"numpy {np.__version__}; medians over {repeats} repeats (ms)")
    print("| n | eliminated | PosteriorBestTest warm | cold | Conover warm | ratio warm/Conover "
          "| min warm / min Conover |")
    print("|---|---|---|---|---|---|---|")
    ratios, warms = [], []
    for n in ns:
        res = one_n(n, a.m, a.rho, 0, repeats)
        if res is None:
            print(f"| {n} | 0 | (no elimination: not timed) | | | | |")
            continue
        k, w, c, f, wmin, fmin = res
        ratios.append(w / f)
        warms.append(w)
        print(f"| {n} | {k} | {1e3 * w:.2f} | {1e3 * c:.2f} | {1e3 * f:.2f} | {w / f:.2f} "
              f"| {1e3 * wmin:.2f} / {1e3 * fmin:.2f} |")
    if warms:
        print(f"\nworst warm step {1e3 * max(warms):.2f} ms; median ratio to Conover "
              f"{np.median(ratios):.2f}")


if __name__ == "__main__":
    main()
