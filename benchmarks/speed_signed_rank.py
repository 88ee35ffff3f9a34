"""Speed of the Bayesian signed-rank test: racer's fused kernel against NumPy and baycomp.

Times one test (50 000 posterior samples by default) for several numbers of paired
observations n, as medians over repeats:

* ``racer``: ``bayesian_signed_rank`` (IDP: lower and upper from one pass), Numba threads as
  configured, and the same with one Numba thread;
* ``numpy O(n)``: the same sorted suffix-sum algorithm in plain NumPy (chunks of samples,
  NumPy's Exp(1) generator), to show what the fused kernel adds;
* ``baycomp``: ``SignedRankTest.probs`` (DP with a pseudo-observation at 0, O(n^2) per sample
  in a Python loop). Slow, so it is timed at fewer samples and scaled linearly in the number
  of samples (its cost is exactly linear in them: one loop iteration each), marked ``~``.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/speed_signed_rank.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from racer.stats import bayesian_signed_rank


def _median_ms(fn, repeats):
    """Median wall-clock and median process CPU time, in ms.

    On a shared machine the wall clock includes time spent waiting for a core; the process
    CPU time does not, so for a one-thread run it estimates the wall time on an idle core.
    """
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return 1e3 * statistics.median(wall), 1e3 * statistics.median(cpu)


def numpy_sorted_prob(z, n_samples, rng, chunk=2048):
    """DP (s -> 0) P[theta > 1/2] with the O(n)-per-sample suffix sums, plain NumPy."""
    z = np.sort(z)
    gt = np.searchsorted(z, -z, side="right")
    ge = np.searchsorted(z, -z, side="left")
    hits = 0
    for start in range(0, n_samples, chunk):
        rows = min(chunk, n_samples - start)
        e = rng.standard_exponential((rows, z.size))
        suffix = np.zeros((rows, z.size + 1))
        suffix[:, :-1] = np.cumsum(e[:, ::-1], axis=1)[:, ::-1]
        mass = 0.5 * np.einsum("si,si->s", e, suffix[:, gt] + suffix[:, ge])
        hits += int(np.sum(mass > 0.5 * suffix[:, 0] ** 2))
    return hits / n_samples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--samples", type=int, default=50_000)
    args = parser.parse_args(argv)

    sizes = [10, 200, 1000] if args.quick else [10, 50, 200, 1000]
    repeats = 3 if args.quick else 7
    n_samples = args.samples
    try:
        import baycomp
    except ImportError:  # pragma: no cover - optional oracle
        baycomp = None

    rng = np.random.default_rng(0)
    # Warm up (compilation or cache load happens here, not in the timings).
    bayesian_signed_rank(rng.normal(size=20), np.zeros(20), n_samples=100, random_state=0)

    threads = numba.get_num_threads()
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for n in sizes:
            x = rng.normal(0.02, 0.1, n)
            y = np.zeros(n)
            racer_ms = _median_ms(
                lambda: bayesian_signed_rank(x, y, n_samples=n_samples, random_state=1), repeats
            )
            numba.set_num_threads(1)
            try:
                racer_1t_ms = _median_ms(
                    lambda: bayesian_signed_rank(x, y, n_samples=n_samples, random_state=1),
                    repeats,
                )
            finally:
                numba.set_num_threads(threads)
            numpy_ms = _median_ms(
                lambda: numpy_sorted_prob(x - y, n_samples, np.random.default_rng(1)),
                max(1, repeats // 2),
            )
            baycomp_ms, baycomp_note = float("nan"), "n/a"
            if baycomp is not None:
                # Samples timed: all of them for small n, fewer for large n (then scaled).
                if n <= 50:
                    timed = n_samples if not args.quick else n_samples // 10
                elif n <= 200:
                    timed = n_samples // 10 if not args.quick else n_samples // 50
                else:
                    timed = n_samples // 100 if not args.quick else n_samples // 500
                ms = _median_ms(
                    lambda: baycomp.SignedRankTest.probs(y, x, nsamples=timed, random_state=1),
                    1 if n >= 200 else 3,
                )
                baycomp_ms = ms[1] * n_samples / timed
                baycomp_note = "" if timed == n_samples else f"~ (from S={timed})"
            rows.append((n, racer_ms, racer_1t_ms, numpy_ms, baycomp_ms, baycomp_note))

    print(f"Bayesian signed-rank, S = {n_samples} samples, IDP (lower+upper in one pass); "
          f"median ms over {repeats} repeats; Numba threads = {threads}, BLAS threads = 1.\n"
          "wall = elapsed time; cpu = process CPU time (all threads), which for one thread "
          "estimates the elapsed time on an idle core. Ratios use cpu times, one thread.\n")
    print("| n | racer wall | racer cpu | racer 1 thread wall | racer 1 thread cpu | "
          "numpy O(n) cpu | baycomp cpu | baycomp / racer | numpy / racer |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, racer_ms, racer_1t_ms, numpy_ms, baycomp_ms, note in rows:
        print(
            f"| {n} | {racer_ms[0]:.1f} | {racer_ms[1]:.1f} | {racer_1t_ms[0]:.1f} | "
            f"{racer_1t_ms[1]:.1f} | {numpy_ms[1]:.1f} | {baycomp_ms:.0f} {note} | "
            f"{baycomp_ms / racer_1t_ms[1]:.0f}x | {numpy_ms[1] / racer_1t_ms[1]:.1f}x |"
        )


if __name__ == "__main__":
    main()
