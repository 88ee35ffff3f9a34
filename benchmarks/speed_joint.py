"""Speed of the joint-prefix Monte Carlo (Benavoli et al. 2015 §5.3) against the machine floor.

The floor of the one-pass first-failure Monte Carlo is

    t_floor = S * n * L_eff / R_fma + S * n * t_exp

with ``R_fma`` the single-thread float32 multiply-add rate (measured here by a 1-thread SGEMM
of the same shape) and ``t_exp`` the cost of one float32 Exp(1) draw (measured here with
NumPy's generator, which racer uses). ``L_eff = 1 + sum_{l<L} P(prefix l)`` is the expected
number of statements a sample evaluates before its first failure. Both ingredients are
measured in the same run as the kernel, so the ratio is meaningful on a shared machine.

Rows: racer's ``joint_prefix_probabilities`` (RNG + back-end, what a race calls; for n >= 32
the BLAS back-end), the Numba kernel alone on pre-drawn weights, and a plain NumPy
implementation (chunked float32 GEMM of weights x statements, then the first failing column
per row) for comparison. An end-to-end ``joint_comparisons`` line (all m(m-1)/2 pair
statements) is added for the largest case.

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_joint.py            # full, ~1-2 min
    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_joint.py --quick    # ~15 s

``--calibration`` instead prints the null rejection rates of the Bayesian Friedman test's
two regions (the table in docs/stats-bayesian-friedman-joint.md) and their power.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from racer.stats import _kernels  # noqa: E402
from racer.stats.bayesian_sign import prob_greater_from_counts  # noqa: E402
from racer.stats.joint import (  # noqa: E402
    _failure_prob,
    _first_fail_histogram,
    _prefix_from_histogram,
    _statements_to_simulate,
    joint_comparisons,
    joint_prefix_probabilities,
)


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def make_statements(m, n, seed=0):
    """The race's typical list: "best beats j" for the m - 1 others, by decreasing marginal.

    Means evenly spaced on [0, 1], unit noise, as in Benavoli et al. (2015) §7.1 (rho = 1).
    """
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, m) + rng.standard_normal((n, m))
    best = int(np.argmax(x.mean(axis=0)))
    others = np.delete(np.arange(m), best)
    signs = np.sign(x[:, [best]] - x[:, others]).T.astype(np.float32)
    marginal = prob_greater_from_counts((signs > 0).sum(1), (signs < 0).sum(1))
    order = np.argsort(-np.asarray(marginal), kind="stable")
    return np.ascontiguousarray(signs[order]), x


def numpy_gemm_prefix(signs, n_samples, rng, chunk=4096):
    n_statements, n = signs.shape
    hist = np.zeros(n_statements + 1, dtype=np.int64)
    done = 0
    while done < n_samples:
        size = min(chunk, n_samples - done)
        e = rng.standard_exponential((size, n), dtype=np.float32)
        fails = (e @ signs.T) <= 0
        first = np.where(fails.any(axis=1), fails.argmax(axis=1), n_statements)
        hist += np.bincount(first, minlength=n_statements + 1)
        done += size
    return _prefix_from_histogram(hist)


def run_case(m, n, n_samples, repeats):
    all_signs, x = make_statements(m, n)
    n_all = all_signs.shape[0]
    # The floor counts the work racer actually does: statements skipped by the union-bound
    # rule (joint.py) are not part of it, so L_eff is measured on the simulated ones.
    signs = np.ascontiguousarray(all_signs[_statements_to_simulate(_failure_prob(all_signs))])
    n_statements = signs.shape[0]
    # L_eff from a first run (also warms the JIT).
    hist = _first_fail_histogram(signs, n_samples, np.random.default_rng(0))
    prefix = _prefix_from_histogram(hist)
    l_eff = 1.0 + float(prefix[:-1].sum())

    # Floor ingredients. FMA rate: 1-thread SGEMM of a (4096, n) x (n, L) product, the shape
    # the BLAS back-end uses. Exp cost: NumPy float32 Exp(1) into a reused (4096, n) buffer,
    # as the driver draws them (no page faults).
    gemm_a = np.random.default_rng(1).standard_exponential((4096, n), dtype=np.float32)
    gemm_b = np.ascontiguousarray(signs.T)
    exp_buffer = np.empty((4096, n), dtype=np.float32)
    exp_rng = np.random.default_rng(2)
    n_chunks = -(-n_samples // 4096)

    def draw_all():
        for _ in range(n_chunks):
            exp_rng.standard_exponential(out=exp_buffer, dtype=np.float32)

    tile = _kernels.JOINT_TILE
    weights = np.random.default_rng(4).standard_exponential(
        (-(-n_samples // tile), n, tile), dtype=np.float32
    )

    def kernel_only():
        h = np.zeros(n_statements + 1, dtype=np.int64)
        _kernels.joint_first_fail_histogram(weights, signs, n_samples, h)

    def public():
        joint_prefix_probabilities(all_signs, n_samples, np.random.default_rng(3))

    def numpy_ref():
        numpy_gemm_prefix(signs, n_samples, np.random.default_rng(5))

    # Interleaved rounds: on a shared machine the load drifts over seconds, so every
    # quantity is timed once per round and the floor and racer of the same round are
    # compared (median ratio), besides the best time of each over all rounds.
    times = {k: [] for k in ("gemm", "exp", "public", "kernel", "numpy")}
    for _ in range(repeats):
        for key, fn in (("gemm", lambda: gemm_a @ gemm_b), ("exp", draw_all),
                        ("public", public), ("kernel", kernel_only), ("numpy", numpy_ref)):
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    gemm_t = np.array(times["gemm"])
    exp_t = np.array(times["exp"]) / (n_chunks * 4096 * n)
    fma_rate = 4096 * n * n_statements / gemm_t
    floors = n_samples * n * l_eff / fma_rate + n_samples * n * exp_t
    ratio_same_round = float(np.median(np.array(times["public"]) / floors))

    best_rate, best_exp = fma_rate.max(), exp_t.min()
    fma_term = n_samples * n * l_eff / best_rate
    rng_term = n_samples * n * best_exp
    floor = fma_term + rng_term
    t_public, t_kernel, t_numpy = (min(times[k]) for k in ("public", "kernel", "numpy"))
    row = {
        "m": m, "n": n, "S": n_samples, "L": n_all, "L simulated": n_statements,
        "L_eff": l_eff,
        "GFMA/s": best_rate / 1e9, "ns/exp": best_exp * 1e9,
        "floor FMA": fma_term * 1e3, "floor RNG": rng_term * 1e3, "floor": floor * 1e3,
        "racer": t_public * 1e3, "kernel only": t_kernel * 1e3, "numpy GEMM": t_numpy * 1e3,
        "racer/floor (best)": t_public / floor, "racer/floor (same round, median)": ratio_same_round,
    }
    return row, x


def print_table(rows, columns):
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        cells = []
        for c in columns:
            v = row[c]
            cells.append(f"{v:.3g}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")


def _rejection_row(m, n, n_datasets, n_samples, seed, mu=0.0):
    """One table row: how often the Monte Carlo ball and the ellipsoid reject, over
    ``n_datasets`` data sets of N(mu_j, 1) scores (n blocks, m candidates)."""
    from racer.stats import bayesian_friedman
    from racer.stats._bayesian_friedman import _auto_method

    rng = np.random.default_rng(seed)
    mc = ell = 0
    for r in range(n_datasets):
        x = mu + rng.standard_normal((n, m))
        mc += bayesian_friedman(x, method="montecarlo", n_samples=n_samples,
                                random_state=r).reject
        if n > m - 1:
            ell += bayesian_friedman(x, method="ellipsoid").reject
    ell_txt = f"{ell / n_datasets:.3f}" if n > m - 1 else "undefined"
    print(f"| {m} | {n} | {mc / n_datasets:.3f} | {ell_txt} | {_auto_method(n, m)} |", flush=True)


def calibration(n_datasets, n_samples):
    from racer.stats import auto_min_blocks

    print(f"Null rejection rate at credibility 0.95, {n_datasets} data sets of i.i.d. N(0,1) "
          f"scores per cell, Monte Carlo region with {n_samples} draws; binomial SE "
          f"{np.sqrt(0.05 * 0.95 / n_datasets):.3f} at 0.05.\n")
    print("| m | n | Monte Carlo ball | ellipsoid (Hotelling F) | auto uses |")
    print("|---|---|---|---|---|")
    for m in (3, 5, 10, 20, 40):
        for n in sorted({3, max(4, m // 2), m, m + 2, auto_min_blocks(m), m + 10, 2 * m}):
            _rejection_row(m, n, n_datasets, n_samples, seed=1000 * m + n)


def power(n_datasets, n_samples):
    print(f"\nPower at credibility 0.95: scores N(mu_j, 1) with mu evenly spaced on [0, 1] "
          f"(the racing study's rho = 1 setting), {n_datasets} data sets per cell.\n")
    print("| m | n | Monte Carlo ball | ellipsoid (Hotelling F) | auto uses |")
    print("|---|---|---|---|---|")
    for m in (5, 10, 20):
        for n in sorted({5, m, 2 * m, 4 * m}):
            _rejection_row(m, n, n_datasets, n_samples, seed=7000 * m + n,
                           mu=np.linspace(0.0, 1.0, m))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and repeats")
    parser.add_argument("--calibration", action="store_true",
                        help="print the Bayesian Friedman null calibration table instead")
    args = parser.parse_args()
    if args.calibration:
        calibration(100 if args.quick else 400, 1000)
        power(50 if args.quick else 200, 1000)
        return
    repeats = 3 if args.quick else 9
    big_s = 10_000 if args.quick else 50_000
    cases = [(200, 200, big_s), (50, 50, big_s), (200, 10, big_s), (10, 200, big_s)]
    print(f"# joint prefix Monte Carlo — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} (shared machine), BLAS pinned to 1 thread\n")
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for m, n, s in cases:
            row, x = run_case(m, n, s, repeats)
            rows.append(row)
        print_table(rows, ["m", "n", "S", "L", "L simulated", "L_eff", "GFMA/s", "ns/exp", "floor FMA",
                           "floor RNG", "floor", "racer", "kernel only", "numpy GEMM",
                           "racer/floor (best)", "racer/floor (same round, median)"])
        print(f"\nTimes in ms, best of {repeats} interleaved rounds. floor = S n L_eff / R_fma"
              " + S n t_exp on one core, from the best FMA rate and Exp cost of the run.")
        m, n = 200, 200
        _, x = make_statements(m, n)
        joint_comparisons(x[:20, :20], n_samples=1000, random_state=0)
        t = best_of(lambda: joint_comparisons(x, n_samples=big_s, random_state=0), max(1, repeats // 3))
        res = joint_comparisons(x, n_samples=big_s, random_state=0)
        print(f"\njoint_comparisons end to end, m = n = {m}, all {m * (m - 1) // 2} pair statements, "
              f"S = {big_s}: {t * 1e3:.0f} ms; {res.n_accepted} statements accepted, "
              f"{_statements_to_simulate(1 - res.marginal).size} simulated (the rest are "
              f"skipped by the union bound).")


if __name__ == "__main__":
    main()
