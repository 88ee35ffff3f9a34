"""Speed of racer's frequentist statistics against the libraries they are checked against.

Times the median wall time of repeated calls (same inputs for both sides) of:

* ``friedman`` vs ``scipy.stats.friedmanchisquare`` (SciPy gives only chi2 and p; racer also
  ranks, Iman–Davenport and mean ranks);
* ``conover`` vs scikit-posthocs ``posthoc_conover_friedman`` (both k x k);
* ``nemenyi`` vs scikit-posthocs ``posthoc_nemenyi_friedman`` (studentized-range tails);
* ``mean_ranks_test`` (k x k z-test; no library equivalent for the whole matrix);
* ``p_adjust`` vs statsmodels ``multipletests`` (holm, hommel);
* ``wilcoxon`` vs ``scipy.stats.wilcoxon`` (exact without ties; exact with ties, where SciPy
  enumerates sign flips in a permutation test);
* ``bootstrap_test`` for F1: the multinomial-cell path vs the callable path (index resampling
  and a NumPy F1 per replicate).

Scores are normal draws rounded to 2 decimals, so blocks contain ties. Run with BLAS pinned:

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_frequentist.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scikit_posthocs as sp  # noqa: E402
from scipy import stats  # noqa: E402
from statsmodels.stats.multitest import multipletests  # noqa: E402

from racer.stats import (  # noqa: E402
    bootstrap_test,
    conover,
    friedman,
    mean_ranks_test,
    nemenyi,
    p_adjust,
    wilcoxon,
)


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up: imports, caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def scores(n: int, k: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(rng.normal(size=(n, k)) + np.linspace(0, 1, k), 2)


def f1_numpy(y, p):
    tp = np.count_nonzero((y == 1) & (p == 1))
    wrong = np.count_nonzero((y == 1) != (p == 1))
    return 2.0 * tp / (2.0 * tp + wrong) if tp + wrong else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args()
    reps = 3 if args.quick else 7
    rows = []

    shapes = [(20, 10), (200, 50)] if args.quick else [(20, 10), (200, 50), (200, 200), (1000, 200)]
    for n, k in shapes:
        s = scores(n, k)
        rows.append((f"friedman n={n} k={k}", median_time(lambda: friedman(s), reps),
                     "scipy friedmanchisquare", median_time(lambda: stats.friedmanchisquare(*s.T), reps)))
        rows.append((f"conover n={n} k={k}", median_time(lambda: conover(s), reps),
                     "scikit-posthocs conover", median_time(lambda: sp.posthoc_conover_friedman(s), reps)))
        rows.append((f"mean_ranks_test n={n} k={k}", median_time(lambda: mean_ranks_test(s), reps),
                     "-", np.nan))
    for n, k in ([(20, 10), (200, 50)] if args.quick else [(20, 10), (200, 50), (200, 200)]):
        s = scores(n, k)
        r = 1 if k > 50 else reps
        rows.append((f"nemenyi n={n} k={k}", median_time(lambda: nemenyi(s), r),
                     "scikit-posthocs nemenyi", median_time(lambda: sp.posthoc_nemenyi_friedman(s), r)))

    for m in ([1000] if args.quick else [1000, 20000]):
        p = np.random.default_rng(1).random(m) ** 3
        rows.append((f"p_adjust holm m={m}", median_time(lambda: p_adjust(p, "holm"), reps),
                     "statsmodels multipletests", median_time(lambda: multipletests(p, method="holm"), reps)))
    m = 300 if args.quick else 1000
    p = np.random.default_rng(1).random(m) ** 3
    rows.append((f"p_adjust hommel m={m}", median_time(lambda: p_adjust(p, "hommel"), reps),
                 "statsmodels multipletests", median_time(lambda: multipletests(p, method="hommel"), reps)))

    rng = np.random.default_rng(2)
    x, y = rng.normal(size=30), rng.normal(size=30) + 0.3
    rows.append(("wilcoxon exact n=30, no ties", median_time(lambda: wilcoxon(x, y), reps),
                 "scipy wilcoxon exact", median_time(lambda: stats.wilcoxon(x, y, method="exact"), reps)))
    x13, y13 = np.round(x[:13], 0), np.round(y[:13], 0)
    rows.append(("wilcoxon exact n=13, ties+zeros", median_time(lambda: wilcoxon(x13, y13, method="exact"), reps),
                 "scipy wilcoxon auto (permutation)", median_time(lambda: stats.wilcoxon(x13, y13), reps)))

    n_ex = 2000 if args.quick else 10000
    b_fast = 5000
    b_slow = 200 if args.quick else 1000
    yt = rng.integers(0, 2, n_ex)
    pa = np.where(rng.random(n_ex) < 0.8, yt, 1 - yt)
    pb = np.where(rng.random(n_ex) < 0.78, yt, 1 - yt)
    fast = median_time(lambda: bootstrap_test(yt, pa, pb, "f1", n_samples=b_fast, random_state=0), reps)
    slow = median_time(lambda: bootstrap_test(yt, pa, pb, f1_numpy, n_samples=b_slow, random_state=0), 1)
    rows.append((f"bootstrap_test 'f1' N={n_ex} B={b_fast}", fast,
                 f"callable F1 path, B={b_fast} (extrapolated from B={b_slow})", slow * b_fast / b_slow))

    print(f"# racer frequentist statistics: speed ({'quick' if args.quick else 'full'})\n")
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; "
          f"median of {reps} runs (1 for the slow reference paths).\n")
    print("| racer call | racer | reference | reference time | ratio |")
    print("| --- | ---: | --- | ---: | ---: |")
    for name, t_ours, ref_name, t_ref in rows:
        ratio = "-" if not np.isfinite(t_ref) else f"{t_ref / t_ours:.1f}x"
        ref_time = "-" if not np.isfinite(t_ref) else fmt(t_ref)
        print(f"| {name} | {fmt(t_ours)} | {ref_name} | {ref_time} | {ratio} |")


if __name__ == "__main__":
    main()
