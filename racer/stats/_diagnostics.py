"""MCMC convergence diagnostics: rank-normalised split R-hat and bulk ESS.

Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2).
The same definitions as ArviZ's ``rhat(method="rank")`` and ``ess(method="bulk")`` (the tests
compare against ArviZ when it is installed); NumPy/SciPy only, so the core needs neither ArviZ
nor its xarray/pandas stack.

Input: draws of one scalar, shape ``(n_chains, n_draws)``.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = ["split_rhat", "ess_bulk", "rhat_and_ess"]


def _split_chains(draws: np.ndarray) -> np.ndarray:
    # Each chain in two halves; with an odd length the middle draw is dropped (as ArviZ).
    half = draws.shape[-1] // 2
    return np.concatenate((draws[..., :half], draws[..., -half:]), axis=-2)


def _ranks(flat: np.ndarray) -> np.ndarray:
    """Ranks 1..n along the last axis of a 2-D array, ties averaged (as ``rankdata``).

    One argsort per row; ``rankdata`` is called only for rows that have ties (rare for
    continuous draws), which keeps the diagnostics cheaper than the sampling.
    """
    order = np.argsort(flat, axis=-1, kind="stable")
    ranks = np.empty(flat.shape)
    np.put_along_axis(ranks, order, np.arange(1.0, flat.shape[-1] + 1.0)[None, :], axis=-1)
    tied = (np.diff(np.take_along_axis(flat, order, axis=-1), axis=-1) == 0.0).any(axis=-1)
    for row in np.flatnonzero(tied):
        ranks[row] = stats.rankdata(flat[row], method="average")
    return ranks


def _z_scale(draws: np.ndarray) -> np.ndarray:
    # Rank-normalisation with Blom's offsets, ranks pooled over all chains of one quantity,
    # ties averaged.
    flat = draws.reshape((-1, draws.shape[-2] * draws.shape[-1]))
    ranks = _ranks(flat).reshape(draws.shape)
    size = draws.shape[-1] * draws.shape[-2]
    return special.ndtri((ranks - 0.375) / (size + 0.25))


def _rhat_plain(draws: np.ndarray) -> np.ndarray:
    n = draws.shape[-1]
    between = n * np.var(np.mean(draws, axis=-1), axis=-1, ddof=1)
    within = np.mean(np.var(draws, axis=-1, ddof=1), axis=-1)
    return np.sqrt((between / within + n - 1) / n)


def _constant(draws: np.ndarray) -> np.ndarray:
    return np.ptp(draws.reshape(draws.shape[:-2] + (-1,)), axis=-1) == 0.0


def rhat_and_ess(draws) -> tuple[np.ndarray, np.ndarray]:
    """``(split_rhat(draws), ess_bulk(draws))``, sharing the rank-normalisation."""
    draws = np.asarray(draws, dtype=np.float64)
    split = _split_chains(draws)
    z = _z_scale(split)
    return _split_rhat(draws, split, z), _ess_bulk(draws, z)


def split_rhat(draws) -> np.ndarray | float:
    """Rank-normalised split R-hat: the max of the bulk and the folded (tail) versions.

    ``draws``: shape ``(..., n_chains, n_draws)``, one R-hat per leading index. NaN where the
    draws are constant (R-hat is undefined there).
    """
    draws = np.asarray(draws, dtype=np.float64)
    split = _split_chains(draws)
    return _split_rhat(draws, split, _z_scale(split))


def _split_rhat(draws, split, z):
    constant = _constant(draws)
    with np.errstate(invalid="ignore", divide="ignore"):
        bulk = _rhat_plain(z)
        flat = split.reshape(split.shape[:-2] + (-1,))
        median = np.median(flat, axis=-1)[..., None, None]
        tail = _rhat_plain(_z_scale(np.abs(split - median)))
    out = np.where(constant, np.nan, np.maximum(bulk, tail))
    return float(out) if out.ndim == 0 else out


def _autocov(draws: np.ndarray) -> np.ndarray:
    # Biased autocovariance of each chain by FFT (zero padding to a power of two >= 2n).
    n = draws.shape[-1]
    m = 1 << int(2 * n - 1).bit_length()
    centred = draws - draws.mean(axis=-1, keepdims=True)
    f = np.fft.rfft(centred, n=m, axis=-1)
    return np.fft.irfft(f * np.conjugate(f), n=m, axis=-1)[..., :n] / n


def _ess_plain(acov_mean: np.ndarray, chain_mean_var: float, n_chain: int) -> float:
    """Multi-chain ESS with Geyer's initial monotone sequence (Vehtari et al. 2021, §3.2).

    ``acov_mean``: the chains' autocovariances averaged over chains, shape (n_draw,);
    ``chain_mean_var``: the variance (ddof 1) of the chain means.
    """
    n_draw = acov_mean.shape[0]
    mean_var = acov_mean[0] * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus += chain_mean_var
    rho = np.zeros(n_draw)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - acov_mean[1]) / var_plus
    rho[1] = rho_odd
    # Initial positive sequence: sum autocorrelation pairs while they stay positive.
    t = 1
    while t < n_draw - 3 and rho_even + rho_odd > 0.0:
        rho_even = 1.0 - (mean_var - acov_mean[t + 1]) / var_plus
        rho_odd = 1.0 - (mean_var - acov_mean[t + 2]) / var_plus
        if rho_even + rho_odd >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    # Initial monotone sequence: pair sums may not increase.
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    total = n_chain * n_draw
    tau = -1.0 + 2.0 * np.sum(rho[: max_t + 1]) + np.sum(rho[max_t + 1 : max_t + 2])
    tau = max(tau, 1.0 / np.log10(total))
    return float(total / tau)


def ess_bulk(draws) -> np.ndarray | float:
    """Bulk effective sample size: the ESS of the rank-normalised split chains.

    ``draws``: shape ``(..., n_chains, n_draws)``, one ESS per leading index. NaN where the
    draws are constant.
    """
    draws = np.asarray(draws, dtype=np.float64)
    return _ess_bulk(draws, _z_scale(_split_chains(draws)))


def _ess_bulk(draws, z):
    constant = _constant(draws)
    n_chain = z.shape[-2]
    acov_mean = _autocov(z).mean(axis=-2)
    chain_mean_var = np.var(z.mean(axis=-1), axis=-1, ddof=1)
    lead = draws.shape[:-2]
    out = np.full(lead, np.nan)
    for index in np.ndindex(*lead):
        if not constant[index]:
            out[index] = _ess_plain(acov_mean[index], float(chain_mean_var[index]), n_chain)
    return float(out) if out.ndim == 0 else out
