"""All Numba kernels of racer, in one module.

Why one module: the kernels are the only compiled code, they share the threading set-up below,
and keeping them together keeps the set small (each compiles one fixed signature, cached on
disk with ``cache=True``, so only the first process on a machine pays the compile).

Threading on small machines: GNU OpenMP's default busy-wait makes a tiny ``prange`` region
cost 16-32 ms now and then on 2 cores; the passive wait policy makes it ~20 µs. It must be set
before Numba starts its threading layer, hence before the import below. A user's own setting
wins. BLAS threads are pinned by callers through ``threadpoolctl`` where BLAS and Numba run
back to back (see ``blas_single_thread``).

Everything here trusts its inputs: the public functions validate and convert first.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

__all__ = ["blas_single_thread"]


def blas_single_thread():
    """Context manager pinning BLAS to one thread (OpenBLAS workers fight Numba on 2 cores)."""
    return threadpool_limits(limits=1, user_api="blas")


# ---------------------------------------------------------------------------------------------
# Pairwise sign counts and the closed-form sign-test table (owner: bayesian_sign.py)
# ---------------------------------------------------------------------------------------------
# Fixed dtypes, one signature each: scores float64 C-contiguous, indices and counts int64
# C-contiguous, tables float64. Serial: at 200 candidates each call is well under a
# millisecond, where a parallel region costs more than it saves on 2 cores.


@nb.njit(cache=True, nogil=True)
def sign_counts_add_rows(rows, active, wins, ties):
    """Add blocks one row at a time: rows (b, m) scores of the candidates ``active`` (m,).

    ``wins[i, j] += [x_i > x_j]``, ``ties[i, j] += [x_i == x_j]`` (both orders), and
    ``ties[i, i]`` counts the blocks in which ``i`` took part. Best for a few new rows.
    """
    n_rows, m = rows.shape
    for r in range(n_rows):
        row = rows[r]
        for a in range(m):
            ia = active[a]
            xa = row[a]
            ties[ia, ia] += 1
            for c in range(a + 1, m):
                ic = active[c]
                xc = row[c]
                if xa > xc:
                    wins[ia, ic] += 1
                elif xc > xa:
                    wins[ic, ia] += 1
                else:
                    ties[ia, ic] += 1
                    ties[ic, ia] += 1


@nb.njit(cache=True, nogil=True)
def sign_counts_add_columns(columns, active, wins, ties):
    """Same counts from candidate-major scores: columns (m, b), one row per candidate.

    The inner loop runs over blocks with two integer reductions, which LLVM vectorises;
    this is the fast path when many blocks arrive at once (a count from scratch).
    """
    m, n_blocks = columns.shape
    for a in range(m):
        ia = active[a]
        xa = columns[a]
        ties[ia, ia] += n_blocks
        for c in range(a + 1, m):
            ic = active[c]
            xc = columns[c]
            greater = 0
            less = 0
            for t in range(n_blocks):
                greater += xa[t] > xc[t]
                less += xa[t] < xc[t]
            wins[ia, ic] += greater
            wins[ic, ia] += less
            tied = n_blocks - greater - less
            ties[ia, ic] += tied
            ties[ic, ia] += tied


@nb.njit(cache=True, nogil=True)
def sign_prob_greater_table(size):
    """Table T[g, l] = Pr[theta > 1/2] = I_{1/2}(l, g) for 0 <= g, l < size.

    Built by the recurrence T[g, l] = (T[g, l-1] + T[g-1, l]) / 2 with T[0, l] = 0 and
    T[g, 0] = 1 (g >= 1): with k = g - 1 and n = g + l - 1, T[g, l] = P(Bin(n, 1/2) <= k),
    and the binomial CDF obeys C_n(k) = (C_{n-1}(k) + C_{n-1}(k-1)) / 2. Only additions
    and halvings of positive numbers, so the relative error stays below (g + l) ulp, and
    the whole table costs O(size^2) flops instead of size^2 incomplete-beta calls.
    """
    table = np.empty((size, size), dtype=np.float64)
    for l in range(size):
        table[0, l] = 0.0
    for g in range(1, size):
        table[g, 0] = 1.0
        for l in range(1, size):
            table[g, l] = 0.5 * (table[g, l - 1] + table[g - 1, l])
    return table


@nb.njit(cache=True, nogil=True)
def sign_prob_greater_gather(wins, table, active, out):
    """out[a, c] = T[wins[i, j], wins[j, i]] for i = active[a], j = active[c]."""
    m = active.shape[0]
    for a in range(m):
        ia = active[a]
        for c in range(m):
            ic = active[c]
            out[a, c] = table[wins[ia, ic], wins[ic, ia]]


# ---------------------------------------------------------------------------------------------
# Signed-rank posterior sampling (owner: bayesian_signed_rank.py)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Joint-prefix Monte Carlo (owner: joint.py)
# ---------------------------------------------------------------------------------------------
