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


# ---------------------------------------------------------------------------------------------
# Signed-rank posterior sampling (owner: bayesian_signed_rank.py)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Joint-prefix Monte Carlo (owner: joint.py)
# ---------------------------------------------------------------------------------------------
