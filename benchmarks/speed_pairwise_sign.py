"""Speed of the all-pairs sign-test primitives the race calls after every block.

For m candidates and n blocks of scores (continuous scores rounded to 2 decimals, so there
are ties), times the median of:

* racer, from scratch: ``SignCounts`` over all n blocks + ``prob_greater()`` for all pairs;
* racer, one more block: ``add_blocks`` of one row + ``prob_greater()``, both with
  ``active=`` the survivors (the per-block cost in a race, where old blocks are never
  recounted);
* plain NumPy: broadcast comparison of all pairs over all blocks + ``scipy.special.betainc``;
* racer band: ``prob_indistinguishable()`` for all pairs (quantile Gauss-Legendre, Q = 48);
* NumPy Monte Carlo band: 50,000 draws of the aggregated Dirichlet (wins, losses, ties + s)
  per pair -- already the cheap way, O(S) per pair instead of O(S n) -- timed on 20 pairs
  and extrapolated to all pairs;
* baycomp: ``SignTest.probs`` (50,000 Dirichlet draws) timed on a few pairs and
  extrapolated linearly to the m (m - 1) / 2 pairs.

Run with BLAS pinned to one thread (set below unless already set):

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_pairwise_sign.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.special import betainc  # noqa: E402

from racer.stats import SignCounts  # noqa: E402


def median_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def numpy_all_pairs(scores):
    """The obvious vectorised version: O(m^2 n) comparisons and m^2 incomplete betas."""
    wins = (scores[:, :, None] > scores[:, None, :]).sum(axis=0, dtype=np.int64)
    losses = wins.T
    with np.errstate(invalid="ignore"):
        prob = betainc(losses.astype(float), wins.astype(float), 0.5)
    return np.where(wins == 0, 0.0, np.where(losses == 0, 1.0, prob))


def bench(m, n, repeats, baycomp_pairs, rng):
    scores = np.round(rng.normal(size=(n + 1, m)), 2)
    history, extra = scores[:n], scores[n:]

    def scratch():
        counts = SignCounts(m)
        counts.add_blocks(history)
        return counts.prob_greater()

    np.testing.assert_allclose(scratch(), numpy_all_pairs(history), rtol=1e-12, atol=1e-300)
    t_scratch = median_ms(scratch, repeats)
    t_numpy = median_ms(lambda: numpy_all_pairs(history), max(3, repeats // 4))

    counts = SignCounts(m)
    counts.add_blocks(history)
    survivors = np.arange(m)  # as a race calls it: the survivors' ids every block

    def one_more_block():
        counts.add_blocks(extra, active=survivors)
        return counts.prob_greater(active=survivors)

    one_more_block()

    t_update = median_ms(one_more_block, 4 * repeats)
    counts_only = SignCounts(m)
    counts_only.add_blocks(history)
    t_update_counts = median_ms(lambda: counts_only.add_blocks(extra), 4 * repeats)

    band_counts = SignCounts(m)
    band_counts.add_blocks(history)
    band_counts.prob_indistinguishable()
    t_band = median_ms(band_counts.prob_indistinguishable, max(3, repeats // 4))

    mc_rng = np.random.default_rng(0)
    wins, ties = band_counts.wins, band_counts.ties
    some = [(i, (i + 1) % m) for i in range(min(20, m))]

    def mc_band_some_pairs():
        for i, j in some:
            alpha = np.array([wins[i, j], wins[j, i], ties[i, j] + 1.0], dtype=float)
            gam = mc_rng.standard_gamma(alpha, size=(50_000, 3))
            theta = (gam[:, 0] + 0.5 * gam[:, 2]) / gam.sum(axis=1)
            np.mean(np.abs(theta - 0.5) < 0.05)

    t_mc_band = median_ms(mc_band_some_pairs, 3) / len(some) * (m * (m - 1) / 2)

    t_baycomp = float("nan")
    if baycomp_pairs:
        import baycomp

        pairs = [(i, (i + 1) % m) for i in range(baycomp_pairs)]

        def some_pairs():
            for i, j in pairs:
                baycomp.SignTest.probs(history[:, i], history[:, j], rope=0, random_state=0)

        t_baycomp = median_ms(some_pairs, 3) / len(pairs) * (m * (m - 1) / 2)
    return dict(
        m=m, n=n, scratch=t_scratch, update=t_update, update_counts=t_update_counts,
        numpy=t_numpy, band=t_band, mc_band=t_mc_band, baycomp=t_baycomp,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 x 200 only, fewer repeats")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    sizes = [(200, 200)] if args.quick else [
        (10, 10), (10, 200), (50, 50), (50, 200), (200, 10), (200, 50), (200, 200), (500, 500)
    ]
    repeats = 20 if args.quick else 60
    SignCounts(3).add_blocks(np.zeros((20, 3)))  # load or compile the kernels first
    SignCounts(3).add_blocks(np.zeros((1, 3)))

    print(f"# all-pairs sign test, median ms ({platform.processor() or platform.machine()}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, shared machine)\n")
    print("| m | n | racer from scratch | racer +1 block | of which counts | NumPy bcast+betainc "
          "| NumPy / racer scratch | NumPy / racer +1 block | racer band, all pairs "
          "| NumPy MC band (extrap.) | MC band / racer band "
          "| baycomp x pairs (extrapolated) | baycomp / racer scratch |")
    print("|" + " --- |" * 13)
    for m, n in sizes:
        baycomp_pairs = 3 if m * n <= 40_000 else 0
        r = bench(m, n, repeats, baycomp_pairs, rng)
        print(
            f"| {m} | {n} | {r['scratch']:.3g} | {r['update']:.3g} | {r['update_counts']:.3g} "
            f"| {r['numpy']:.3g} | {r['numpy'] / r['scratch']:.0f}x "
            f"| {r['numpy'] / r['update']:.0f}x | {r['band']:.3g} "
            f"| {r['mc_band']:.4g} | {r['mc_band'] / r['band']:.0f}x "
            f"| {r['baycomp']:.4g} | {r['baycomp'] / r['scratch']:.3g}x |"
        )


if __name__ == "__main__":
    main()
