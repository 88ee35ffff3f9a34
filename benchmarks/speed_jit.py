"""Numba compile and cache costs of every kernel a race uses (racer/stats/_kernels.py).

Targets: a cold cache (fresh process, NUMBA_CACHE_DIR an empty directory) compiles
everything in <= 10 s; with the cache warm, importing racer.stats and making the first call
of each kernel takes <= 1 s in total.

Each measurement is a separate child process, so nothing is shared through memory: child 1
starts on an empty cache directory (compiles and writes the cache), child 2 and 3 reuse it.
In each child the kernels are reached through the public functions a race calls; every
call is made twice and "first - second" is that call's compile (or cache load) cost. The
child also lists every dispatcher in ``_kernels`` that no call reached, so a kernel added
later without a line here shows up as not measured.

    python benchmarks/speed_jit.py            # ~30-60 s on a loaded 2-core machine
    python benchmarks/speed_jit.py --quick    # same measurement (compile time does not scale)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, time
t0 = time.perf_counter()
import numpy as np
import racer.stats as rs
from racer.stats import _kernels
t_import = time.perf_counter() - t0

calls = []
def timed(name, fn):
    try:
        t = time.perf_counter(); fn(); first = time.perf_counter() - t
        t = time.perf_counter(); fn(); second = time.perf_counter() - t
        calls.append((name, first, second, None))
    except Exception as exc:  # an API that moved: report it, keep measuring the rest
        calls.append((name, float("nan"), float("nan"), f"{type(exc).__name__}: {exc}"))

import numba
def _numba_init():
    # Numba's one-time set-up (LLVM, typing) is paid by whichever kernel runs first; a
    # trivial uncached function takes it here so the rows below are per-kernel costs.
    numba.njit(lambda a: a + 1)(1)
timed("Numba initialisation (trivial function, not cached)", _numba_init)

rng = np.random.default_rng(0)
x = rng.normal(size=(40, 12)) + np.linspace(0, 1, 12)
small_signs = np.sign(rng.normal(size=(5, 8)) + 0.5).astype(np.int8)
big_signs = np.sign(rng.normal(size=(40, 64)) + 1.0).astype(np.int8)

timed("joint_prefix_probabilities (Numba kernel, small)",
      lambda: rs.joint_prefix_probabilities(small_signs, 2000, np.random.default_rng(1)))
timed("joint_prefix_probabilities (GEMM + Numba scan)",
      lambda: rs.joint_prefix_probabilities(big_signs, 2000, np.random.default_rng(1)))
timed("joint_comparisons", lambda: rs.joint_comparisons(x, n_samples=2000, random_state=0))
timed("bayesian_friedman", lambda: rs.bayesian_friedman(x[:8], n_samples=2000, random_state=0))

def sign_counts():
    c = rs.SignCounts(12)
    c.add_blocks(x[:20])
    c.add_blocks(x[20:30, :6], active=np.arange(6))
    c.add_blocks(x[30:])
    c.prob_greater()
    c.prob_indistinguishable()
timed("SignCounts add/prob_greater/prob_indistinguishable", sign_counts)
timed("prob_greater_matrix", lambda: rs.prob_greater_matrix(np.array([[0, 20], [10, 0]])))
timed("bayesian_sign_test", lambda: rs.bayesian_sign_test(x[:, 0], x[:, 1], random_state=0))
timed("bayesian_signed_rank", lambda: rs.bayesian_signed_rank(x[:, 0], x[:, 1], random_state=0))

dispatchers = {name: obj for name, obj in vars(_kernels).items()
               if hasattr(obj, "signatures") and hasattr(obj, "py_func")}
reached = sorted(n for n, d in dispatchers.items() if d.signatures)
missed = sorted(n for n, d in dispatchers.items() if not d.signatures)
print(json.dumps({"import": t_import, "calls": calls, "reached": reached, "missed": missed,
                  "wall": time.perf_counter() - t0}))
"""


def run_child(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, OPENBLAS_NUM_THREADS="1")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                         check=True)
    wall = time.perf_counter() - t
    data = json.loads(out.stdout.strip().splitlines()[-1])
    data["process"] = wall
    return data


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="same run (kept for uniformity)")
    parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="racer-numba-cache-") as cache_dir:
        runs = [run_child(cache_dir) for _ in range(3)]
    print(f"# Numba JIT and cache — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (shared machine)\n")
    print("| call (first minus second call, ms) | cold cache (compile + write) | warm cache | warm cache, again |")
    print("|---|---|---|---|")
    for i, (name, *_rest) in enumerate(runs[0]["calls"]):
        cells = []
        for run in runs:
            _, first, second, err = run["calls"][i]
            cells.append("error" if err else f"{(first - second) * 1e3:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    totals = [sum(max(0.0, c[1] - c[2]) for c in run["calls"] if c[3] is None) for run in runs]
    print("| **sum of first-call overheads** | " + " | ".join(f"**{t * 1e3:.0f}**" for t in totals) + " |")
    print("| import racer.stats | " + " | ".join(f"{r['import'] * 1e3:.0f}" for r in runs) + " |")
    first_use = [r["import"] + t for r, t in zip(runs, totals)]
    print("| import + first calls | " + " | ".join(f"{t * 1e3:.0f}" for t in first_use) + " |")
    print("| whole child process (wall) | " + " | ".join(f"{r['process'] * 1e3:.0f}" for r in runs) + " |")
    errors = [(c[0], c[3]) for c in runs[0]["calls"] if c[3]]
    print(f"\nKernels reached: {', '.join(runs[0]['reached'])}.")
    print(f"Kernels not reached by these calls: {', '.join(runs[0]['missed']) or 'none'}.")
    for name, err in errors:
        print(f"Call failed (API moved?): {name}: {err}")
    cold, warm = totals[0], first_use[1]
    print(f"\nCold-cache compile of everything reached: {cold:.1f} s (target <= 10 s). "
          f"Warm cache, import + first calls: {warm:.2f} s (target <= 1 s).")


if __name__ == "__main__":
    main()
