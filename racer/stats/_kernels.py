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

import math
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402
__all__ = ["blas_single_thread"]

_BLAS_CONTROLLER = None


def blas_single_thread():
    """Context manager pinning BLAS to one thread (OpenBLAS workers fight Numba on 2 cores).

    One ``ThreadpoolController`` is built on first use and kept: ``threadpool_limits`` scans
    the loaded libraries on every call (~2 ms), too much for a per-block hot path.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


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
    this is the fast path when many blocks arrive at once (a count from scratch). (Tiling
    the blocks for cache reuse was tried and measured slower up to 500 x 500.)
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
    """Packed table of Pr[theta > 1/2] = I_{1/2}(l, g) for all g + l < size.

    Stored by total N = g + l: entry ``N (N + 1) / 2 + g`` holds T[g, N - g] (a triangle
    uses half the memory of the square). Built by the recurrence
    T[g, l] = (T[g, l-1] + T[g-1, l]) / 2 with T[0, l] = 0 and T[g, 0] = 1 (g >= 1): with
    k = g - 1 and n = g + l - 1, T[g, l] = P(Bin(n, 1/2) <= k), and the binomial CDF obeys
    C_n(k) = (C_{n-1}(k) + C_{n-1}(k-1)) / 2. Only additions and halvings of positive
    numbers, so the relative error stays below (g + l) ulp, and the table costs O(size^2)
    flops instead of size^2 / 2 incomplete-beta calls; each row depends only on the
    previous one, so the inner loop vectorises.
    """
    table = np.empty(size * (size + 1) // 2, dtype=np.float64)
    table[0] = 0.0
    for total in range(1, size):
        row = total * (total + 1) // 2
        prev = row - total
        table[row] = 0.0
        for g in range(1, total):
            table[row + g] = 0.5 * (table[prev + g] + table[prev + g - 1])
        table[row + total] = 1.0
    return table


@nb.njit(cache=True, nogil=True)
def sign_prob_greater_gather(wins, table, active, out):
    """out[a, c] = T[g, l] with g = wins[i, j], l = wins[j, i], i = active[a], j = active[c]."""
    m = active.shape[0]
    for a in range(m):
        ia = active[a]
        for c in range(m):
            ic = active[c]
            g = wins[ia, ic]
            total = g + wins[ic, ia]
            out[a, c] = table[total * (total + 1) // 2 + g]


# ---------------------------------------------------------------------------------------------
# Signed-rank posterior sampling (owner: _bayesian_signed_rank.py)
# ---------------------------------------------------------------------------------------------
#
# Model (Benavoli et al. 2014, Theorem 4): posterior weights (w_0, w_1..w_n) ~ Dir(s, 1, ..., 1) are
# normalised independent Gamma draws, so a sample is (e_0 ~ Gamma(s), e_1..e_n ~ Exp(1)).
# With z sorted, {j : z_i + z_j > c} is a suffix of the sorted order that does not depend on
# the weights, so sum_ij e_i e_j H(z_i + z_j - c) = sum_i e_i (Suf[gt_i] + Suf[ge_i]) / 2 with
# suffix sums Suf of e: O(n) per sample after one sort (baycomp builds the n x n matrix).
#
# Speed: the Exp(1) draws are half the cost, so they are made in the kernel by a counter-based
# generator (splitmix64 of a per-block key and a counter, then -log u with a branch-free
# polynomial log) that LLVM vectorises; numpy's generator cannot be fused. Samples are
# processed _SR_LANES at a time, laid out lane-minor, so the suffix sum (a serial chain per
# sample) and the gathers run across lanes in SIMD. Results depend only on (key, block, lane),
# never on the number of threads, so the same key gives the same answer bit for bit.

from llvmlite import ir as _llvm_ir  # noqa: E402
from numba import types as _nb_types  # noqa: E402
from numba.extending import intrinsic as _nb_intrinsic  # noqa: E402

_SR_LANES = 8
_SR_N_STATS = 10
_SR_CHUNKS = 64
_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_BLOCK_GAMMA = np.uint64(0xD1B54A32D192ED03)
_TWO52 = 4503599627370496.0


@_nb_intrinsic
def _bits_as_float64(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _llvm_ir.DoubleType())

    return _nb_types.float64(_nb_types.uint64), codegen


@_nb_intrinsic
def _float64_as_bits(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _llvm_ir.IntType(64))

    return _nb_types.uint64(_nb_types.float64), codegen


@nb.njit(inline="always", cache=True)
def _mix64(z):
    # splitmix64 finaliser: a bijection of uint64 with full avalanche.
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(inline="always", cache=True, error_model="numpy", fastmath={"contract"})
def _exp1_from_bits(bits):
    """-log(u) for u = (top 52 bits + 1/2) / 2^52 in (0, 1); absolute error below 1e-13."""
    # int -> float through the 2^52 exponent trick: exact, and vectorisable on AVX2, which
    # has no 64-bit integer conversion instruction.
    u = (
        _bits_as_float64((bits >> np.uint64(12)) | np.uint64(0x4330000000000000))
        - (_TWO52 - 0.5)
    ) * (1.0 / _TWO52)
    ubits = _float64_as_bits(u)
    exponent = (
        _bits_as_float64((ubits >> np.uint64(52)) | np.uint64(0x4330000000000000))
        - (_TWO52 + 1023.0)
    )
    mantissa = _bits_as_float64(
        (ubits & np.uint64(0x000FFFFFFFFFFFFF)) | np.uint64(0x3FF0000000000000)
    )
    # log m for m in [sqrt(1/2), sqrt(2)) via atanh: log m = 2 t (1 + t^2/3 + t^4/5 + ...),
    # t = (m - 1)/(m + 1), |t| <= 0.172, so eight terms leave < 2e-14.
    high = mantissa > 1.4142135623730951
    mantissa = mantissa * 0.5 if high else mantissa
    exponent = exponent + 1.0 if high else exponent
    t = (mantissa - 1.0) / (mantissa + 1.0)
    t2 = t * t
    series = 1.0 / 15.0
    series = series * t2 + 1.0 / 13.0
    series = series * t2 + 1.0 / 11.0
    series = series * t2 + 1.0 / 9.0
    series = series * t2 + 1.0 / 7.0
    series = series * t2 + 1.0 / 5.0
    series = series * t2 + 1.0 / 3.0
    series = series * t2 + 1.0
    return -(exponent * 0.6931471805599453 + 2.0 * t * series)


@nb.njit(inline="always", cache=True)
def _block_key(key, block):
    return _mix64(key ^ (np.uint64(block) * _BLOCK_GAMMA))


@nb.njit(inline="always", cache=True, error_model="numpy", fastmath={"contract"})
def _fill_exponentials(block_key, out):
    # An additive counter (not j * gamma): AVX2 has no 64-bit multiply, and the emulated
    # one cost a fifth of this loop. FMA contraction saves another eighth.
    counter = block_key
    for j in range(out.shape[0]):
        counter += _GOLDEN_GAMMA
        out[j] = _exp1_from_bits(_mix64(counter))


@nb.njit(cache=True, error_model="numpy", fastmath={"contract"})
def exponential_block(key, block, n):
    """The (n, _SR_LANES) Exp(1) weights sample block ``block`` of ``signed_rank_mc`` uses.

    Row k holds the weight of the k-th smallest difference; column l is sample
    ``block * _SR_LANES + l``. For tests and for checking the fused kernel on its own weights.
    """
    out = np.empty(n * _SR_LANES)
    _fill_exponentials(_block_key(key, block), out)
    return out.reshape((n, _SR_LANES))


@nb.njit(cache=True)
def walsh_cut_indices(z_sorted, c):
    """First sorted index j with ``z_i + z_j > c`` (``gt``) and with ``>= c`` (``ge``), per i.

    The sums are formed in floating point exactly as a literal implementation forms them, so
    ``H(z_i + z_j - c)`` agrees bit for bit. Two pointers: the cut only moves left as z_i grows.
    """
    n = z_sorted.shape[0]
    gt = np.empty(n, np.int64)
    ge = np.empty(n, np.int64)
    j_gt = n
    j_ge = n
    for i in range(n):
        while j_gt > 0 and z_sorted[i] + z_sorted[j_gt - 1] > c:
            j_gt -= 1
        while j_ge > 0 and z_sorted[i] + z_sorted[j_ge - 1] >= c:
            j_ge -= 1
        gt[i] = j_gt
        ge[i] = j_ge
    return gt, ge


@nb.njit(cache=True)
def walsh_mass_from_weights(weights, gt, ge):
    """Per row w of ``weights`` (columns in sorted order): sum_ij w_i w_j H(z_i + z_j - c).

    ``gt``/``ge`` come from :func:`walsh_cut_indices` for the same sorted z and c. Serial,
    O(n) per row; used to check the fused kernel and to replay baycomp's own weights.
    """
    n_rows, n = weights.shape
    out = np.empty(n_rows)
    suffix = np.empty(n + 1)
    for r in range(n_rows):
        suffix[n] = 0.0
        for k in range(n - 1, -1, -1):
            suffix[k] = suffix[k + 1] + weights[r, k]
        acc = 0.0
        for i in range(n):
            acc += weights[r, i] * (suffix[gt[i]] + suffix[ge[i]])
        out[r] = 0.5 * acc
    return out


@nb.njit(inline="always", cache=True, error_model="numpy")
def _lane_walsh_mass(e, suffix, gt, ge, acc):
    for lane in range(_SR_LANES):
        acc[lane] = 0.0
    for i in range(gt.shape[0]):
        row = i * _SR_LANES
        cut_gt = gt[i] * _SR_LANES
        cut_ge = ge[i] * _SR_LANES
        for lane in range(_SR_LANES):
            acc[lane] += e[row + lane] * (suffix[cut_gt + lane] + suffix[cut_ge + lane])
    for lane in range(_SR_LANES):
        acc[lane] *= 0.5


@nb.njit(parallel=True, cache=True, error_model="numpy", fastmath={"contract"})
def signed_rank_mc(gt0, ge0, gt_x, ge_x, gt_y, ge_y, prior_gamma, key, n_samples, with_rope):
    """Monte Carlo of the DP/IDP signed-rank posterior; returns a (_SR_N_STATS,) float64 vector.

    ``gt0/ge0``: cut indices for c = 0; ``gt_x/ge_x`` for c = 2 rope, ``gt_y/ge_y`` for
    c = -2 rope (ignored unless ``with_rope``). ``prior_gamma[s]`` is sample s's unnormalised
    pseudo-observation weight e_0 ~ Gamma(s) (all zeros for the DP with s -> 0); its length is
    at least ``n_samples`` rounded up to a multiple of _SR_LANES.

    With T = e_0 + sum e_j, A = sum_ij e_i e_j H(z_i + z_j) and m = e_0 (2T - e_0) (the mass
    of all pairs involving the pseudo-observation, Theorem 4's w_0 (2 - w_0) unnormalised):
    stats[0] = #(A > T^2/2) (lower, z_0 = -inf), stats[1] = #(A + m > T^2/2) (upper, +inf),
    stats[2] = sum A/T^2, stats[3] = sum (A + m)/T^2. With a rope, b_x, b_y, b_r are the data
    pair masses above 2 rope, below -2 rope and in between, and stats[4:10] count samples
    where x / rope / y is the largest of the three for every placement of the pseudo-
    observation's mass (lower) and for some placement (upper):
    [x_lower, x_upper, rope_lower, rope_upper, y_lower, y_upper].
    """
    n = gt0.shape[0]
    n_blocks = (n_samples + _SR_LANES - 1) // _SR_LANES
    per_block = np.zeros((n_blocks, _SR_N_STATS))
    # Scratch is allocated once per chunk of blocks, not per block: at small n the
    # allocations would otherwise cost more than the arithmetic. A block's result depends
    # only on (key, block), so the chunking does not change any number.
    n_chunks = min(n_blocks, _SR_CHUNKS)
    for chunk in nb.prange(n_chunks):
        e = np.empty(n * _SR_LANES)
        suffix = np.empty((n + 1) * _SR_LANES)
        mass0 = np.empty(_SR_LANES)
        mass_x = np.empty(_SR_LANES)
        mass_y = np.empty(_SR_LANES)
        stats = np.empty(_SR_N_STATS)  # per-thread, copied out once: no false sharing
        for block in range(chunk, n_blocks, n_chunks):
            stats[:] = 0.0
            _fill_exponentials(_block_key(key, block), e)
            for lane in range(_SR_LANES):
                suffix[n * _SR_LANES + lane] = 0.0
            for k in range(n - 1, -1, -1):
                row = k * _SR_LANES
                for lane in range(_SR_LANES):
                    suffix[row + lane] = suffix[row + _SR_LANES + lane] + e[row + lane]
            _lane_walsh_mass(e, suffix, gt0, ge0, mass0)
            if with_rope:
                _lane_walsh_mass(e, suffix, gt_x, ge_x, mass_x)
                _lane_walsh_mass(e, suffix, gt_y, ge_y, mass_y)
            for lane in range(_SR_LANES):
                sample = block * _SR_LANES + lane
                if sample >= n_samples:
                    break
                data_total = suffix[lane]
                e0 = prior_gamma[sample]
                total = data_total + e0
                total_sq = total * total
                prior_mass = e0 * (2.0 * total - e0)
                a = mass0[lane]
                if a > 0.5 * total_sq:
                    stats[0] += 1.0
                if a + prior_mass > 0.5 * total_sq:
                    stats[1] += 1.0
                stats[2] += a / total_sq
                stats[3] += (a + prior_mass) / total_sq
                if with_rope:
                    data_sq = data_total * data_total
                    b_x = mass_x[lane]
                    b_y = data_sq - mass_y[lane]
                    b_r = data_sq - b_x - b_y
                    top_not_x = max(b_r, b_y)
                    top_not_r = max(b_x, b_y)
                    top_not_y = max(b_x, b_r)
                    if b_x > top_not_x + prior_mass:
                        stats[4] += 1.0
                    if b_x + prior_mass > top_not_x:
                        stats[5] += 1.0
                    if b_r > top_not_r + prior_mass:
                        stats[6] += 1.0
                    if b_r + prior_mass > top_not_r:
                        stats[7] += 1.0
                    if b_y > top_not_y + prior_mass:
                        stats[8] += 1.0
                    if b_y + prior_mass > top_not_y:
                        stats[9] += 1.0
            per_block[block, :] = stats
    out = np.zeros(_SR_N_STATS)
    for block in range(n_blocks):
        for k in range(_SR_N_STATS):
            out[k] += per_block[block, k]
    return out



# ---------------------------------------------------------------------------------------------
# Joint-prefix Monte Carlo (owner: joint.py)
# ---------------------------------------------------------------------------------------------

# Statements evaluated per pass over a tile's weights: each weight loaded from cache feeds
# this many accumulators, which is what moves the kernel from load-bound towards FMA-bound.
JOINT_STATEMENT_GROUP = 8
# Samples per tile (SIMD lanes of the accumulators); the weights come as (tiles, n, TILE).
JOINT_TILE = 128


@nb.njit(cache=True, nogil=True)
def joint_first_fail_histogram(weights, signs, n_valid, hist):
    """Add each sample's first failing statement to ``hist`` (Benavoli et al. 2015 §5.3, sign trick).

    ``weights``: float32 (n_tiles, n, TILE), i.i.d. Exp(1), sample ``t * TILE + j`` is
    ``weights[t, :, j]``; only the first ``n_valid`` samples count. ``signs``: float32 (L, n)
    in {-1, 0, 1}, statement k holds in a sample iff ``sum_l e_l signs[k, l] > 0``.
    ``hist``: int64 (L + 1,), ``hist[k]`` += samples whose first failure is k (L: none).

    Each sum is accumulated in float32 in block order l = 0..n-1, one rounding per term
    (``s * e`` is exact for s in {-1, 0, 1}), so a NumPy loop in the same order reproduces
    the histogram bit for bit. Work stops for a tile once every sample in it has failed.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """
    n_tiles, n, tile = weights.shape
    n_statements = signs.shape[0]
    group = JOINT_STATEMENT_GROUP
    acc = np.zeros((group, tile), dtype=np.float32)
    # int32 lanes: the branch-free min below vectorises twice as wide as with int64.
    first = np.empty(tile, dtype=np.int32)
    none = np.int32(n_statements)
    n4 = n - n % 4
    for t in range(n_tiles):
        valid = min(tile, n_valid - t * tile)
        if valid <= 0:
            break
        for j in range(tile):
            first[j] = none
        for k0 in range(0, n_statements, group):
            kk = min(group, n_statements - k0)
            acc[:, :] = 0.0
            # Four blocks per pass, added one after the other (the same order and roundings
            # as one at a time): the accumulator is stored once per four additions, which
            # takes the loop off the one-store-per-cycle limit (2-5x at small n).
            for l in range(0, n4, 4):
                for q in range(kk):
                    s0 = signs[k0 + q, l]
                    s1 = signs[k0 + q, l + 1]
                    s2 = signs[k0 + q, l + 2]
                    s3 = signs[k0 + q, l + 3]
                    for j in range(tile):
                        acc[q, j] = (
                            ((acc[q, j] + s0 * weights[t, l, j]) + s1 * weights[t, l + 1, j])
                            + s2 * weights[t, l + 2, j]
                        ) + s3 * weights[t, l + 3, j]
            for l in range(n4, n):
                for q in range(kk):
                    s = signs[k0 + q, l]
                    for j in range(tile):
                        acc[q, j] += s * weights[t, l, j]
            # Branch-free: with few blocks per statement this check costs as much as the
            # sums, and statements are visited in order, so the first failure is the min.
            for q in range(kk):
                kq = np.int32(k0 + q)
                for j in range(tile):
                    if acc[q, j] <= 0.0:
                        first[j] = min(first[j], kq)
            alive = 0
            for j in range(valid):
                alive += first[j] == none
            if alive == 0:
                break
        for j in range(valid):
            hist[first[j]] += 1


@nb.njit(cache=True, nogil=True)
def joint_first_nonpositive(values, out):
    """out[r] = first column c with values[r, c] <= 0, or -1 (values float32 (A, B)).

    The scan behind the GEMM back-end of the joint prefixes: a block of statement sums per
    sample comes from BLAS, this finds each sample's first failure in the block.
    """
    n_rows, n_cols = values.shape
    for r in range(n_rows):
        out[r] = -1
        for c in range(n_cols):
            if values[r, c] <= 0.0:
                out[r] = c
                break


# ---------------------------------------------------------------------------------------------
# Hierarchical model of Corani et al. (2017), one Gibbs chain (owner: _hierarchical.py)
# ---------------------------------------------------------------------------------------------
# Per data set i only three numbers enter the likelihood (closed form of the equicorrelated
# MVN): xbar_i, the within sum of squares S_i and n_i, with
#   (x - 1 d)' R^-1 (x - 1 d) = S / (1 - rho) + n (xbar - d)^2 / (1 + (n - 1) rho).
# The Student t on delta_i is a scale mixture: delta_i | lam_i ~ N(delta0, sigma0^2 / lam_i),
# lam_i ~ Gamma(nu/2, rate nu/2). One sweep:
#   1. (sigma0, delta0, delta) as one block: sigma0 by slice sampling its conditional with
#      delta and delta0 integrated out, then delta0 (truncated normal) and delta (normal) exactly;
#      integrating them out is what removes the funnel of the centred parameterisation;
#   2. sigma_i exactly (1/sigma_i^2 is a gamma truncated by the uniform prior's upper bound);
#   3. (nu, lam): nu by slice sampling with lam integrated out (Student t likelihood), then lam
#      exactly (gamma);
#   4. alpha and beta of nu's Gamma prior, each by slice sampling on its bounded interval.
# The 1-D slice sampler is Neal's (2003) stepping out and shrinkage.

_HIER_LOG_SIGMA0 = 0
_HIER_LOG_NU = 1
_HIER_ALPHA = 2
_HIER_BETA = 3
_LOG_SQRT_PI = 0.5 * np.log(np.pi)
_INV_SQRT2 = 1.0 / np.sqrt(2.0)


@nb.njit(cache=True, error_model="numpy")
def _hier_logp(which, u, xbar, cvar, lam, sig2, delta, delta0, sigma0, nu, alpha, beta):
    """Log conditional density (up to a constant) of one scalar, at ``u``."""
    if which == _HIER_LOG_SIGMA0:
        # Marginal of sigma0 (on the log scale, Jacobian included) with delta and delta0
        # integrated out: xbar_i ~ N(delta0, sigma0^2/lam_i + sig2_i c_i), delta0 ~ U(-1, 1).
        s2 = np.exp(2.0 * u)
        q = xbar.shape[0]
        w_sum = 0.0
        wx_sum = 0.0
        log_v = 0.0
        for i in range(q):
            v = s2 / lam[i] + sig2[i] * cvar[i]
            w = 1.0 / v
            w_sum += w
            wx_sum += w * xbar[i]
            log_v += np.log(v)
        m = wx_sum / w_sum
        quad = 0.0
        for i in range(q):
            v = s2 / lam[i] + sig2[i] * cvar[i]
            quad += (xbar[i] - m) ** 2 / v
        sd = np.sqrt(1.0 / w_sum)
        # P(-1 < delta0 < 1) under N(m, sd^2): Phi(z) = erfc(-z / sqrt 2) / 2.
        mass = 0.5 * (math.erfc(-(1.0 - m) / sd * _INV_SQRT2)
                      - math.erfc((1.0 + m) / sd * _INV_SQRT2))
        return u - 0.5 * log_v - 0.5 * quad - 0.5 * np.log(w_sum) + np.log(max(mass, 1e-300))
    if which == _HIER_LOG_NU:
        v = np.exp(u)
        q = delta.shape[0]
        out = alpha * u - beta * v  # Gamma(alpha, rate beta) prior times the Jacobian e^u
        const = math.lgamma(0.5 * (v + 1.0)) - math.lgamma(0.5 * v) - 0.5 * np.log(v) - _LOG_SQRT_PI
        out += q * const
        for i in range(q):
            z = (delta[i] - delta0) / sigma0
            out -= 0.5 * (v + 1.0) * np.log1p(z * z / v)
        return out
    if which == _HIER_ALPHA:
        return u * np.log(beta) - math.lgamma(u) + (u - 1.0) * np.log(nu)
    return alpha * np.log(u) - u * nu  # _HIER_BETA


@nb.njit(cache=True, error_model="numpy")
def _hier_slice(which, u0, width, lo, hi, rng, xbar, cvar, lam, sig2, delta, delta0, sigma0,
                nu, alpha, beta):
    """One slice-sampling update of a scalar on (lo, hi) (Neal 2003, stepping out)."""
    log_y = _hier_logp(which, u0, xbar, cvar, lam, sig2, delta, delta0, sigma0, nu, alpha,
                       beta) - rng.standard_exponential()
    left = u0 - width * rng.random()
    right = left + width
    steps = 64
    while left > lo and steps > 0 and _hier_logp(
        which, left, xbar, cvar, lam, sig2, delta, delta0, sigma0, nu, alpha, beta
    ) > log_y:
        left -= width
        steps -= 1
    steps = 64
    while right < hi and steps > 0 and _hier_logp(
        which, right, xbar, cvar, lam, sig2, delta, delta0, sigma0, nu, alpha, beta
    ) > log_y:
        right += width
        steps -= 1
    left = max(left, lo)
    right = min(right, hi)
    for _ in range(200):
        u = left + (right - left) * rng.random()
        if _hier_logp(which, u, xbar, cvar, lam, sig2, delta, delta0, sigma0, nu, alpha,
                      beta) > log_y:
            return u
        if u < u0:
            left = u
        else:
            right = u
    return u0


@nb.njit(cache=True, error_model="numpy")
def hier_chain(xbar, ss, n_obs, rho, sigma_upper, sigma0_upper, alpha_lo, alpha_hi, beta_lo,
               beta_hi, n_warmup, n_draws, rng, out_delta0, out_sigma0, out_nu, out_delta):
    """Run one chain; fill ``out_*`` (n_draws,) / (n_draws, q) with the kept draws.

    ``xbar``, ``ss``, ``n_obs``: per-data-set mean, within sum of squares and number of
    differences; ``rho``: the correlation of the differences; ``*_upper``, ``*_lo/hi``: the
    bounds of the uniform priors. ``rng``: a ``numpy.random.Generator`` (one per chain).
    """
    q = xbar.shape[0]
    cvar = np.empty(q)  # Var(xbar_i) = sigma_i^2 * cvar_i
    s_scaled = np.empty(q)  # S_i / (1 - rho)
    for i in range(q):
        cvar[i] = (1.0 + (n_obs[i] - 1.0) * rho) / n_obs[i]
        s_scaled[i] = ss[i] / (1.0 - rho)
    # Over-dispersed start, so that split R-hat can see chains that have not mixed.
    mean_x = 0.0
    for i in range(q):
        mean_x += xbar[i]
    mean_x /= q
    spread = 0.0
    for i in range(q):
        spread += (xbar[i] - mean_x) ** 2
    spread = np.sqrt(spread / (q - 1.0)) + 1e-12
    sigma0 = min(spread * np.exp(rng.uniform(-1.0, 1.0)), 0.5 * sigma0_upper)
    delta0 = min(max(mean_x + spread * rng.normal(), -0.999), 0.999)
    alpha = rng.uniform(alpha_lo, alpha_hi)
    beta = rng.uniform(beta_lo, beta_hi)
    nu = max(rng.gamma(alpha, 1.0 / beta), 0.5)
    delta = np.empty(q)
    lam = np.ones(q)
    sig2 = np.empty(q)
    for i in range(q):
        delta[i] = xbar[i]
        sig2[i] = (s_scaled[i] + 1e-300) / max(n_obs[i] - 1.0, 1.0)
    log_s0_hi = np.log(sigma0_upper)
    tau_min = 1.0 / (sigma_upper * sigma_upper)
    for it in range(n_warmup + n_draws):
        # 1. (sigma0, delta0, delta) | lam, sigma_i
        u = _hier_slice(_HIER_LOG_SIGMA0, np.log(sigma0), 1.0, -np.inf, log_s0_hi, rng, xbar,
                        cvar, lam, sig2, delta, delta0, sigma0, nu, alpha, beta)
        sigma0 = np.exp(u)
        s2 = sigma0 * sigma0
        w_sum = 0.0
        wx_sum = 0.0
        for i in range(q):
            w = 1.0 / (s2 / lam[i] + sig2[i] * cvar[i])
            w_sum += w
            wx_sum += w * xbar[i]
        m = wx_sum / w_sum
        sd = np.sqrt(1.0 / w_sum)
        # delta0 ~ N(m, sd) truncated to (-1, 1): rejection, the mass inside is ~1 whenever
        # the data-set means lie inside (which the public function checks).
        delta0 = 2.0
        for _ in range(10000):
            delta0 = m + sd * rng.standard_normal()
            if -1.0 < delta0 < 1.0:
                break
        if not -1.0 < delta0 < 1.0:
            delta0 = min(max(m, -0.999999), 0.999999)
        for i in range(q):
            prec_prior = lam[i] / s2
            prec_data = 1.0 / (sig2[i] * cvar[i])
            prec = prec_prior + prec_data
            mean = (prec_prior * delta0 + prec_data * xbar[i]) / prec
            delta[i] = mean + rng.standard_normal() / np.sqrt(prec)
        # 2. sigma_i | delta_i: 1/sigma_i^2 ~ Gamma((n-1)/2, rate A/2), >= 1/sigma_upper^2
        for i in range(q):
            a = s_scaled[i] + (xbar[i] - delta[i]) ** 2 / cvar[i]
            shape = 0.5 * (n_obs[i] - 1.0)
            scale = 2.0 / a
            tau = rng.gamma(shape, scale)
            for _ in range(1000):
                if tau >= tau_min:
                    break
                tau = rng.gamma(shape, scale)
            sig2[i] = 1.0 / max(tau, tau_min)
        # 3. nu | delta, delta0, sigma0 (lam integrated out), then lam | nu
        u = _hier_slice(_HIER_LOG_NU, np.log(nu), 1.0, -30.0, 30.0, rng, xbar, cvar, lam,
                        sig2, delta, delta0, sigma0, nu, alpha, beta)
        nu = np.exp(u)
        for i in range(q):
            z = (delta[i] - delta0) / sigma0
            lam[i] = rng.gamma(0.5 * (nu + 1.0), 2.0 / (nu + z * z))
        # 4. alpha, beta | nu
        alpha = _hier_slice(_HIER_ALPHA, alpha, 1.0, alpha_lo, alpha_hi, rng, xbar, cvar, lam,
                            sig2, delta, delta0, sigma0, nu, alpha, beta)
        beta = _hier_slice(_HIER_BETA, beta, 0.05, beta_lo, beta_hi, rng, xbar, cvar, lam,
                           sig2, delta, delta0, sigma0, nu, alpha, beta)
        k = it - n_warmup
        if k >= 0:
            out_delta0[k] = delta0
            out_sigma0[k] = sigma0
            out_nu[k] = nu
            for i in range(q):
                out_delta[k, i] = delta[i]


# ---------------------------------------------------------------------------------------------
# Pareto dominance over posterior draws (owner: pareto.py)
# ---------------------------------------------------------------------------------------------
# means float64 (S, m, k) C-contiguous, rope float64 (k,), counts int64. Serial: NumPy's
# reductions over an objective axis of 2 or 3 cost ~20x this loop.

@nb.njit(cache=True, nogil=True)
def pareto_dominance_counts(means, rope, dominates, equivalent, nondominated):
    """Add, over the draws of ``means`` (one row per posterior draw: each candidate's mean per
    objective, larger is better), ``dominates[i, j]`` += draws where i is better than j by
    more than ``rope`` on some objective and worse by more than ``rope`` on none;
    ``equivalent[i, j]`` += draws within ``rope`` on every objective; ``nondominated[j]`` +=
    draws where no candidate dominates j (racer.stats.pareto defines these)."""
    n_draws, m, k = means.shape
    dominated = np.zeros(m, dtype=np.bool_)
    for i in range(m):
        equivalent[i, i] += n_draws
    for t in range(n_draws):
        dominated[:] = False
        # One pass per unordered pair: j's difference to i is minus i's to j, so "i better
        # beyond the rope" is "j worse beyond it" (the same comparisons, half the work).
        for i in range(m):
            for j in range(i + 1, m):
                better = False
                worse = False
                for o in range(k):
                    d = means[t, i, o] - means[t, j, o]
                    if d > rope[o]:
                        better = True
                    elif d < -rope[o]:
                        worse = True
                if better and not worse:
                    dominates[i, j] += 1
                    dominated[j] = True
                elif worse and not better:
                    dominates[j, i] += 1
                    dominated[i] = True
                elif not better and not worse:
                    equivalent[i, j] += 1
                    equivalent[j, i] += 1
        for j in range(m):
            if not dominated[j]:
                nondominated[j] += 1
