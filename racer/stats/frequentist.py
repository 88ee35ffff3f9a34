"""Frequentist tests for comparing candidates over blocks (Demšar 2006).

Omnibus test: :func:`friedman` (chi-square with tie correction, Iman–Davenport F).
Post-hoc tests on the k x k pairs: :func:`nemenyi`, :func:`conover` (the rank-sum t-test of
irace's F-race), :func:`mean_ranks_test` (the z-test of F-Race_MR, Benavoli et al. 2015 section 3).
Comparisons with a control: :func:`control_test` (Demšar's Bonferroni–Dunn / Holm).
Two paired samples: :func:`sign_test`, :func:`wilcoxon`. Multiplicity: :func:`p_adjust`.
For callers that keep the rank sums themselves (a race does), :func:`friedman_from_sums`,
:func:`conover_from_sums` and :func:`mean_ranks_test_from_sums` are the same tests from those
sums, and :func:`sign_test_from_counts` the sign test from win counts.

Conventions shared by every function here:

* score matrices are ``(n_blocks, n_candidates)`` and larger is better unless
  ``maximize=False``; ranks are taken within each block, 1 = best, ties get the mean rank;
* a k x k ``statistic`` is antisymmetric and **positive when the row candidate is better**:
  entry ``(i, j)`` compares candidate ``i`` with candidate ``j``, so with
  ``alternative="greater"`` its p-value tests "i is better than j" and with ``"less"`` it
  tests "i is worse than j". The diagonal holds statistic 0 and p-value 1 (a candidate is
  never tested against itself);
* for two paired samples ``x`` and ``y``, ``alternative="greater"`` means "x tends to be
  larger than y".
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import ClassVar

import numpy as np
from scipy import stats as _st

from racer._validation import (
    as_1d,
    as_paired,
    as_score_matrix,
    check_bool,
    check_int,
    check_option,
    check_probability,
    describe,
    numeric_array,
)
from racer.stats._ranks import block_ranks, check_rank_sums, tie_group_sizes_term
from racer.stats._result import StatsResult

__all__ = [
    "FriedmanResult",
    "PairwiseResult",
    "NemenyiResult",
    "ConoverResult",
    "MeanRanksResult",
    "ControlResult",
    "SignTestResult",
    "WilcoxonResult",
    "friedman",
    "friedman_from_sums",
    "nemenyi",
    "conover",
    "conover_from_sums",
    "mean_ranks_test",
    "mean_ranks_test_from_sums",
    "control_test",
    "sign_test",
    "sign_test_from_counts",
    "wilcoxon",
    "p_adjust",
    "P_ADJUST_METHODS",
]

_ALTERNATIVES = ("two-sided", "greater", "less")

# Canonical names first; statsmodels' spellings are accepted as aliases so that code written
# against ``multipletests`` or scikit-posthocs' ``p_adjust=`` keeps working.
P_ADJUST_METHODS = ("bonferroni", "holm", "hochberg", "hommel", "bh", "by")
_P_ADJUST_ALIASES = {
    "simes-hochberg": "hochberg",
    "fdr_bh": "bh",
    "fdr_by": "by",
    "benjamini-hochberg": "bh",
    "benjamini-yekutieli": "by",
}


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.asarray(arr)
    arr.setflags(write=False)
    return arr


# ---------------------------------------------------------------------------------------------
# Result objects
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False)
class FriedmanResult(StatsResult):
    """Friedman test; unpacks as ``(statistic, pvalue)``.

    ``statistic`` is the chi-square statistic (tie-corrected unless asked otherwise) with
    ``pvalue`` from chi-square(k - 1); ``iman_davenport`` is the F statistic built from the same
    chi-square, with ``iman_davenport_pvalue`` from F(k - 1, (k - 1)(n - 1)). ``mean_ranks``
    has 1 = best.
    """

    statistic: float
    pvalue: float
    iman_davenport: float
    iman_davenport_pvalue: float
    mean_ranks: np.ndarray
    n_blocks: int
    n_candidates: int
    tie_correction: bool
    names: tuple | None = dataclasses.field(default=None, repr=False)

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


@dataclasses.dataclass(frozen=True, repr=False)
class PairwiseResult(StatsResult):
    """k x k post-hoc comparison; ``statistic[i, j] > 0`` when candidate ``i`` is better."""

    statistic: np.ndarray
    pvalue: np.ndarray
    mean_ranks: np.ndarray
    n_blocks: int
    n_candidates: int
    alternative: str
    p_adjust: str | None
    names: tuple | None = dataclasses.field(default=None, repr=False)

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")

    def to_frame(self, field: str = "pvalue"):
        """The k x k ``field`` ("pvalue" or "statistic") as a pandas DataFrame.

        Rows and columns are the candidate names (column labels of the input DataFrame) or
        0..k-1. pandas is imported here only, so it stays an optional dependency.
        """
        import pandas as pd

        field = check_option(field, "field", ("pvalue", "statistic"))
        labels = list(self.names) if self.names is not None else list(range(self.n_candidates))
        return pd.DataFrame(np.array(getattr(self, field)), index=labels, columns=labels)


@dataclasses.dataclass(frozen=True, repr=False)
class NemenyiResult(PairwiseResult):
    """Nemenyi test: ``statistic`` is the mean-rank z, p-values from the studentized range."""

    def critical_difference(self, alpha: float = 0.05) -> float:
        """Smallest mean-rank difference significant at level ``alpha`` (Demšar's CD).

        ``CD = q_alpha * sqrt(k (k + 1) / (6 n))`` with ``q_alpha`` the upper-``alpha``
        quantile of the studentized range of k means (infinite df) divided by sqrt(2).
        """
        return nemenyi_critical_difference(self.n_candidates, self.n_blocks, alpha)


@dataclasses.dataclass(frozen=True, repr=False)
class ConoverResult(PairwiseResult):
    """Conover's rank-sum t-test; ``statistic`` is t with ``df`` degrees of freedom."""

    rank_sums: np.ndarray = dataclasses.field(default=None)
    df: float = dataclasses.field(default=np.nan)
    standard_error: float = dataclasses.field(default=np.nan)

    def critical_difference(self, alpha: float = 0.05) -> float:
        """Rank-sum difference beyond which a pair differs at two-sided level ``alpha``.

        ``t_{1 - alpha/2, df} * standard_error``: irace's ``t*``; its F-race eliminates every
        candidate whose rank sum exceeds the best one's by more than this.
        """
        alpha = check_probability(alpha, "alpha")
        return float(_st.t.isf(alpha / 2.0, self.df) * self.standard_error)


@dataclasses.dataclass(frozen=True, repr=False)
class MeanRanksResult(PairwiseResult):
    """Mean-ranks z-test; ``statistic`` is z, ``standard_error`` = sqrt(k (k + 1) / (6 n))."""

    standard_error: float = dataclasses.field(default=np.nan)


@dataclasses.dataclass(frozen=True, repr=False)
class ControlResult(StatsResult):
    """Every candidate against a control.

    ``statistic`` and ``pvalue`` have one entry per candidate (NaN at the control itself);
    positive statistics mean the candidate is better than the control.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    control: int
    method: str
    alternative: str
    p_adjust: str | None
    mean_ranks: np.ndarray
    names: tuple | None = dataclasses.field(default=None, repr=False)

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


@dataclasses.dataclass(frozen=True, repr=False)
class SignTestResult(StatsResult):
    """Sign test; ``statistic`` is the number of wins credited to ``x`` out of ``n``."""

    statistic: float
    pvalue: float
    n_wins: int
    n_losses: int
    n_ties: int
    n: int
    alternative: str
    ties: str

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


@dataclasses.dataclass(frozen=True, repr=False)
class WilcoxonResult(StatsResult):
    """Wilcoxon signed-rank test.

    ``statistic`` is ``min(r_plus, r_minus)`` for the two-sided test (Demšar's T) and
    ``r_plus`` for one-sided ones, as in SciPy. ``method`` is the method actually used.
    """

    statistic: float
    pvalue: float
    r_plus: float
    r_minus: float
    n: int
    zero_method: str
    alternative: str
    method: str
    zstatistic: float

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


# ---------------------------------------------------------------------------------------------
# Small shared pieces
# ---------------------------------------------------------------------------------------------


def _names_tuple(names) -> tuple | None:
    return None if names is None else tuple(names)


def _normal_pvalues(z: np.ndarray, alternative: str) -> np.ndarray:
    if alternative == "two-sided":
        return np.minimum(1.0, 2.0 * _st.norm.sf(np.abs(z)))
    if alternative == "greater":
        return _st.norm.sf(z)
    return _st.norm.cdf(z)


def _t_pvalues(t: np.ndarray, df: float, alternative: str) -> np.ndarray:
    if alternative == "two-sided":
        return np.minimum(1.0, 2.0 * _st.t.sf(np.abs(t), df))
    if alternative == "greater":
        return _st.t.sf(t, df)
    return _st.t.cdf(t, df)


def _antisymmetric_ratio(better_by: np.ndarray, scale: float) -> np.ndarray:
    """``diff / scale`` for a k x k difference matrix, defined when ``scale`` is 0.

    A zero scale happens only when every block ranks the candidates the same way (or all tie):
    then a non-zero difference is infinitely significant and a zero one not at all.
    """
    if scale > 0:
        return better_by / scale
    with np.errstate(invalid="ignore"):  # 0 * inf in the branch np.where discards
        return np.where(better_by == 0, 0.0, np.sign(better_by) * np.inf)


def _check_p_adjust(method, name: str = "p_adjust", allow_none: bool = True) -> str | None:
    if method is None and allow_none:
        return None
    if isinstance(method, str) and method.lower() in _P_ADJUST_ALIASES:
        return _P_ADJUST_ALIASES[method.lower()]
    options = P_ADJUST_METHODS + tuple(_P_ADJUST_ALIASES)
    if isinstance(method, str) and method.lower() in options:
        return method.lower()
    extra = " or None" if allow_none else ""
    raise ValueError(
        f"`{name}` must be one of {', '.join(repr(o) for o in options)}{extra}; "
        f"got {describe(method)}"
    )


def _pairwise_pvalue_matrix(stat: np.ndarray, pvalue_fn, alternative: str, method: str | None):
    """Fill a k x k p-value matrix from an antisymmetric statistic matrix.

    Two-sided p-values are symmetric, so the family is the k (k - 1) / 2 unordered pairs (as in
    scikit-posthocs). One-sided entries (i, j) and (j, i) are different hypotheses ("i better
    than j" and "j better than i"), so the family is the k (k - 1) ordered pairs.
    """
    k = stat.shape[0]
    pvals = np.ones((k, k))
    if alternative == "two-sided":
        iu = np.triu_indices(k, 1)
        upper = pvalue_fn(stat[iu])
        if method is not None:
            upper = _adjust_flat(upper, method)
        pvals[iu] = upper
        pvals[iu[1], iu[0]] = upper
    else:
        off = ~np.eye(k, dtype=bool)
        values = pvalue_fn(stat[off])
        if method is not None:
            values = _adjust_flat(values, method)
        pvals[off] = values
    return pvals


def _scores_and_ranks(scores, maximize):
    maximize = check_bool(maximize, "maximize")
    arr, names = as_score_matrix(scores, "scores")
    ranks = block_ranks(arr, maximize=maximize)
    return arr, ranks, names


# ---------------------------------------------------------------------------------------------
# Friedman
# ---------------------------------------------------------------------------------------------


def _friedman_chi2(rank_sums: np.ndarray, n: int, k: int, tie_term: float) -> float:
    spread = float(np.sum((rank_sums - n * (k + 1) / 2.0) ** 2))
    denominator = n * k * (k + 1) - tie_term / (k - 1)
    if denominator <= 0:
        # Every block ties all candidates: no ordering information at all.
        return 0.0
    return 12.0 * spread / denominator


def _iman_davenport(chi2: float, n: int, k: int) -> tuple[float, float]:
    room = n * (k - 1) - chi2
    if room <= 1e-12 * n * (k - 1):
        # chi2 reaches its maximum n (k - 1) when every block ranks the candidates alike.
        return np.inf, 0.0
    f_stat = (n - 1) * chi2 / room
    return float(f_stat), float(_st.f.sf(f_stat, k - 1, (k - 1) * (n - 1)))


def friedman(scores, *, maximize: bool = True, tie_correction: bool = True) -> FriedmanResult:
    """Friedman test that all candidates perform alike, with Iman–Davenport's F.

    With ``R_j`` the rank sum of candidate j over n blocks and k candidates (ranks within each
    block, 1 = best, ties averaged) and ``t`` the sizes of tie groups within blocks::

        chi2 = 12 * sum_j (R_j - n (k + 1) / 2)^2 / (n k (k + 1) - sum (t^3 - t) / (k - 1))
        F    = (n - 1) chi2 / (n (k - 1) - chi2)

    ``chi2`` is referred to chi-square(k - 1) and ``F`` to F(k - 1, (k - 1)(n - 1)). Without
    ties the first line is Demšar's chi2_F = 12 n / (k (k + 1)) (sum_j Rbar_j^2 - k (k + 1)^2 / 4)
    (Demšar 2006, section 3.2.2). With ties, the tie-corrected form is
    SciPy's ``friedmanchisquare``; ``tie_correction=False`` gives Demšar's hand formula. The F is
    computed from whichever chi2 is reported; from the tie-corrected one it equals the
    repeated-measures ANOVA F on the ranks (Conover's T2), which is what Iman and Davenport
    proposed.

    Decisions: when every block ties all candidates, chi2 = F = 0 and both p-values are 1 (the
    data carry no evidence of a difference; SciPy returns NaN). When every block ranks the
    candidates identically, F is infinite and its p-value 0.

    Parameters
    ----------
    scores : array_like or DataFrame, shape (n_blocks, n_candidates)
    maximize : bool
        Larger scores are better (default); False mirrors the ranks.
    tie_correction : bool
        Divide by the tie-corrected variance of the ranks (default, as SciPy).

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import friedman
    >>> scores = np.array([[0.9, 0.8, 0.7], [0.8, 0.7, 0.75], [0.95, 0.9, 0.6], [0.7, 0.5, 0.6]])
    >>> res = friedman(scores)
    >>> res.mean_ranks
    array([1. , 2.5, 2.5])
    >>> round(res.statistic, 3), round(res.pvalue, 4)
    (6.0, 0.0498)
    """
    tie_correction = check_bool(tie_correction, "tie_correction")
    arr, ranks, names = _scores_and_ranks(scores, maximize)
    n, k = ranks.shape
    tie_term = tie_group_sizes_term(arr) if tie_correction else 0.0
    return _friedman_result(ranks.sum(axis=0), n, k, tie_term, tie_correction, names)


def friedman_from_sums(
    rank_sums, rank_sq_sum, n_blocks, *, tie_correction: bool = True
) -> FriedmanResult:
    """:func:`friedman` from the rank sums and the sum of squared ranks.

    For callers that keep the sums themselves (a race keeps them incrementally:
    :attr:`racer.racing.base.RaceView.rank_sums` and ``rank_sq_sums``; irace's F-race works
    from them). The tie correction needs no more: averaged ranks of a tie group of size
    ``t`` lose ``(t^3 - t)/12`` of squared rank, so over the blocks
    ``sum (t^3 - t) = 12 (n k (k + 1)(2k + 1)/6 - sum r^2)``, exactly (ranks are multiples
    of 1/2).

    Parameters
    ----------
    rank_sums : array_like (k,)
        Per-candidate sums of within-block ranks over ``n_blocks`` blocks (1 = best, ties
        averaged).
    rank_sq_sum : float
        Sum of every squared within-block rank.
    n_blocks : int >= 1
    tie_correction : bool
        As in :func:`friedman`.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import friedman, friedman_from_sums
    >>> scores = np.array([[0.9, 0.8, 0.7], [0.8, 0.7, 0.75], [0.95, 0.9, 0.6], [0.7, 0.5, 0.6]])
    >>> res = friedman_from_sums([4.0, 10.0, 10.0], 4 * 14.0, 4)  # ranks 1, 2, 3 in each row
    >>> (res.statistic, res.pvalue) == tuple(friedman(scores))
    True
    """
    tie_correction = check_bool(tie_correction, "tie_correction")
    sums, sum_sq, n, k = check_rank_sums(rank_sums, rank_sq_sum, n_blocks)
    tie_term = 12.0 * (n * k * (k + 1) * (2 * k + 1) / 6.0 - sum_sq) if tie_correction else 0.0
    return _friedman_result(sums, n, k, tie_term, tie_correction, None)


def _friedman_result(rank_sums, n, k, tie_term, tie_correction, names) -> FriedmanResult:
    chi2 = _friedman_chi2(rank_sums, n, k, tie_term)
    pvalue = float(_st.chi2.sf(chi2, k - 1)) if chi2 > 0 else 1.0
    if chi2 > 0:
        f_stat, f_p = _iman_davenport(chi2, n, k)
    else:
        f_stat, f_p = 0.0, 1.0
    return FriedmanResult(
        statistic=float(chi2),
        pvalue=pvalue,
        iman_davenport=f_stat,
        iman_davenport_pvalue=f_p,
        mean_ranks=_frozen(rank_sums / n),
        n_blocks=n,
        n_candidates=k,
        tie_correction=tie_correction,
        names=_names_tuple(names),
    )


# ---------------------------------------------------------------------------------------------
# Post-hoc tests on all pairs
# ---------------------------------------------------------------------------------------------


def nemenyi_critical_difference(n_candidates: int, n_blocks: int, alpha: float = 0.05) -> float:
    """Demšar's critical difference of mean ranks for the Nemenyi test at level ``alpha``."""
    k = check_int(n_candidates, "n_candidates", minimum=2)
    n = check_int(n_blocks, "n_blocks", minimum=1)
    alpha = check_probability(alpha, "alpha")
    q_alpha = _st.studentized_range.isf(alpha, k, np.inf) / np.sqrt(2.0)
    return float(q_alpha * np.sqrt(k * (k + 1) / (6.0 * n)))


def _mean_rank_z(mean_ranks: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    k = mean_ranks.shape[0]
    se = float(np.sqrt(k * (k + 1) / (6.0 * n)))
    # Row i better than column j <=> smaller mean rank, hence R_j - R_i.
    z = (mean_ranks[None, :] - mean_ranks[:, None]) / se
    return z, se


def nemenyi(scores, *, maximize: bool = True) -> NemenyiResult:
    """Nemenyi test of every pair of candidates (Demšar 2006, section 3.2.2).

    ``z_ij = (Rbar_j - Rbar_i) / sqrt(k (k + 1) / (6 n))`` (positive when i is better), and the
    two-sided p-value is ``P(Q_k > sqrt(2) |z_ij|)`` with ``Q_k`` the studentized range of k
    means with infinite degrees of freedom, as scikit-posthocs' ``posthoc_nemenyi_friedman``.
    The family-wise error is controlled by construction, so there is no ``p_adjust``.
    ``critical_difference(alpha)`` gives Demšar's CD.

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import nemenyi
    >>> rng = np.random.default_rng(0)
    >>> res = nemenyi(rng.normal(size=(20, 4)) + [0.0, 0.0, 0.0, 1.5])
    >>> bool(res.pvalue[3, 0] < 0.05 and res.statistic[3, 0] > 0)
    True
    >>> round(res.critical_difference(0.05), 4)
    1.0488
    """
    _, ranks, names = _scores_and_ranks(scores, maximize)
    n, k = ranks.shape
    mean_ranks = ranks.mean(axis=0)
    z, _ = _mean_rank_z(mean_ranks, n)

    def pvalue_fn(values):
        # The studentized-range tail is a numerical integral (~60 us per value), and mean-rank
        # differences repeat a lot (rank sums are multiples of 1/2): evaluate each value once.
        q = np.sqrt(2.0) * np.abs(values)
        uniq, inverse = np.unique(q, return_inverse=True)
        return np.minimum(1.0, _st.studentized_range.sf(uniq, k, np.inf))[inverse]

    pvals = _pairwise_pvalue_matrix(z, pvalue_fn, "two-sided", None)
    return NemenyiResult(
        statistic=_frozen(z),
        pvalue=_frozen(pvals),
        mean_ranks=_frozen(mean_ranks),
        n_blocks=n,
        n_candidates=k,
        alternative="two-sided",
        p_adjust=None,
        names=_names_tuple(names),
    )


def _conover_scale(rank_sums: np.ndarray, sum_sq_ranks: float, n: int, k: int
                   ) -> tuple[float, float]:
    # n A - sum_j R_j^2 >= 0 by Cauchy-Schwarz; clip rounding noise below zero.
    residual = max(n * sum_sq_ranks - float(np.sum(rank_sums**2)), 0.0)
    df = float((n - 1) * (k - 1))
    se = float(np.sqrt(2.0 * residual / df))
    return se, df


def conover(
    scores, *, maximize: bool = True, p_adjust: str | None = None, alternative: str = "two-sided"
) -> ConoverResult:
    """Conover's post-hoc t-test for the Friedman design, as irace's F-race uses it.

    With ``R_j`` the rank sums, ``A = sum_ij r_ij^2`` and ``df = (n - 1)(k - 1)``::

        t_ij = (R_j - R_i) / sqrt(2 (n A - sum_j R_j^2) / df)      (positive when i is better)

    referred to Student's t with ``df`` degrees of freedom (Conover 1999; irace's F-race).
    This is Conover's ``t * [2 n (A - C)/df * (1 - T1 / (n (k - 1)))]^(1/2)`` written without
    the Friedman statistic T1, and it agrees with scikit-posthocs'
    ``posthoc_conover_friedman``. irace compares every candidate with the best rank sum and
    eliminates those with ``R_j - R_best > t_{1 - alpha/2, df} * se`` at the unadjusted level:
    :meth:`ConoverResult.critical_difference` returns that threshold.

    ``p_adjust`` adjusts over the k (k - 1) / 2 pairs (two-sided) or the k (k - 1) ordered pairs
    (one-sided). If every block ranks the candidates identically the scale is 0: differing
    pairs get t = +-inf (p = 0) and equal ones t = 0 (p = 1).

    References
    ----------
    .. [1] Conover, W. J. (1999). Practical Nonparametric Statistics, 3rd edition. Wiley.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import conover
    >>> x = np.array([[31, 27, 24], [31, 28, 31], [45, 29, 46], [21, 18, 48], [42, 36, 46],
    ...               [32, 17, 40]])
    >>> res = conover(x, maximize=False)
    >>> res.rank_sums
    array([13.5,  7. , 15.5])
    >>> round(float(res.pvalue[1, 2]), 4)
    0.0057
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    method = _check_p_adjust(p_adjust)
    _, ranks, names = _scores_and_ranks(scores, maximize)
    n, k = ranks.shape
    return _conover_result(ranks.sum(axis=0), float(np.sum(ranks**2)), n, k, alternative,
                           method, names)


def conover_from_sums(
    rank_sums, rank_sq_sum, n_blocks, *, p_adjust: str | None = None,
    alternative: str = "two-sided",
) -> ConoverResult:
    """:func:`conover` from the rank sums and the sum of squared ranks (``A``), which is all
    the test reads: irace's F-race works from them (see :func:`friedman_from_sums` for the
    arguments; ``n_blocks >= 2``).

    Examples
    --------
    >>> from racer.stats import conover_from_sums
    >>> res = conover_from_sums([13.5, 7.0, 15.5], 83.5, 6)  # conover()'s example, from its sums
    >>> round(float(res.pvalue[1, 2]), 4), round(res.critical_difference(0.05), 4)
    (0.0057, 5.4121)
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    method = _check_p_adjust(p_adjust)
    sums, sum_sq, n, k = check_rank_sums(rank_sums, rank_sq_sum, n_blocks, min_blocks=2)
    return _conover_result(sums, sum_sq, n, k, alternative, method, None)


def _conover_result(rank_sums, sum_sq, n, k, alternative, method, names) -> ConoverResult:
    se, df = _conover_scale(rank_sums, sum_sq, n, k)
    t = _antisymmetric_ratio(rank_sums[None, :] - rank_sums[:, None], se)
    pvals = _pairwise_pvalue_matrix(
        t, lambda v: _t_pvalues(v, df, alternative), alternative, method
    )
    np.fill_diagonal(t, 0.0)
    return ConoverResult(
        statistic=_frozen(t),
        pvalue=_frozen(pvals),
        mean_ranks=_frozen(rank_sums / n),
        n_blocks=n,
        n_candidates=k,
        alternative=alternative,
        p_adjust=method,
        names=_names_tuple(names),
        rank_sums=_frozen(rank_sums),
        df=df,
        standard_error=se,
    )


def mean_ranks_test(
    scores, *, maximize: bool = True, alternative: str = "two-sided", p_adjust: str | None = None
) -> MeanRanksResult:
    """Mean-ranks z-test of every pair of candidates (Demšar 2006; Benavoli et al. 2015, section 3).

    ``z_ij = (Rbar_j - Rbar_i) / sqrt(k (k + 1) / (6 n))`` with mean ranks ``Rbar`` (1 = best),
    referred to the standard normal. This is Demšar's ``z = (R_i - R_j)/SE`` oriented so that a
    positive entry (i, j) means candidate i is better; with ``alternative="greater"`` entry
    (i, j) tests "i better than j", with ``"less"`` "i worse than j". F-Race_MR (Benavoli et al. 2015
    section 7.1) uses the directional one-sided test at level alpha without adjustment.

    ``p_adjust`` adjusts over the k (k - 1) / 2 pairs (two-sided) or the k (k - 1) ordered pairs
    (one-sided), see :func:`p_adjust`.

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.
    .. [2] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import mean_ranks_test
    >>> scores = np.array([[3., 2, 1], [3, 1, 2], [3, 2, 1], [2, 3, 1]])
    >>> res = mean_ranks_test(scores, alternative="greater")
    >>> res.mean_ranks
    array([1.25, 2.  , 2.75])
    >>> round(float(res.statistic[0, 2]), 4), round(float(res.pvalue[0, 2]), 4)
    (2.1213, 0.0169)
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    method = _check_p_adjust(p_adjust)
    _, ranks, names = _scores_and_ranks(scores, maximize)
    n, k = ranks.shape
    return _mean_ranks_result(ranks.sum(axis=0) / n, n, k, alternative, method, names)


def mean_ranks_test_from_sums(
    rank_sums, n_blocks, *, alternative: str = "two-sided", p_adjust: str | None = None
) -> MeanRanksResult:
    """:func:`mean_ranks_test` from the rank sums over ``n_blocks`` blocks (1 = best), which
    is all the test reads (F-Race_MR works from a race's rank sums).

    Examples
    --------
    >>> from racer.stats import mean_ranks_test_from_sums
    >>> res = mean_ranks_test_from_sums([5.0, 8.0, 11.0], 4, alternative="greater")
    >>> round(float(res.statistic[0, 2]), 4), round(float(res.pvalue[0, 2]), 4)
    (2.1213, 0.0169)
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    method = _check_p_adjust(p_adjust)
    sums, _, n, k = check_rank_sums(rank_sums, None, n_blocks)
    return _mean_ranks_result(sums / n, n, k, alternative, method, None)


def _mean_ranks_result(mean_ranks, n, k, alternative, method, names) -> MeanRanksResult:
    z, se = _mean_rank_z(mean_ranks, n)
    pvals = _pairwise_pvalue_matrix(
        z, lambda v: _normal_pvalues(v, alternative), alternative, method
    )
    return MeanRanksResult(
        statistic=_frozen(z),
        pvalue=_frozen(pvals),
        mean_ranks=_frozen(mean_ranks),
        n_blocks=n,
        n_candidates=k,
        alternative=alternative,
        p_adjust=method,
        names=_names_tuple(names),
        standard_error=se,
    )


# ---------------------------------------------------------------------------------------------
# Comparison with a control
# ---------------------------------------------------------------------------------------------


def _resolve_control(control, k: int, names) -> int:
    if names is not None and not isinstance(control, (numbers.Integral, np.integer)):
        if control in names:
            return names.index(control)
        raise ValueError(
            f"`control` must be a column of `scores` or an index; got {describe(control)}"
        )
    if isinstance(control, bool) or not isinstance(control, (numbers.Integral, np.integer)):
        raise TypeError(f"`control` must be an integer column index; got {describe(control)}")
    control = int(control)
    if not 0 <= control < k:
        raise ValueError(f"`control` must be a column index in [0, {k - 1}]; got {control}")
    return control


def control_test(
    scores,
    control,
    *,
    maximize: bool = True,
    method: str = "mean_ranks",
    p_adjust: str | None = "holm",
    alternative: str = "two-sided",
) -> ControlResult:
    """Compare every candidate with a control (Demšar 2006, section 3.2.2).

    ``method="mean_ranks"``: ``z_j = (Rbar_control - Rbar_j) / sqrt(k (k + 1) / (6 n))``,
    normal p-values; with ``p_adjust="bonferroni"`` this is the Bonferroni–Dunn test and with
    ``"holm"`` Holm's step-down procedure, over the k - 1 comparisons (as scikit-posthocs'
    ``posthoc_demsar``). ``"conover"``: Conover's t of :func:`conover` against the control.
    ``"sign"``: the sign test of each candidate against the control, ties split
    (:func:`sign_test`). A positive statistic means the candidate is better than the control;
    ``alternative="greater"`` tests "candidate better than control".

    ``control`` is a column index, or a column label when ``scores`` is a DataFrame. The
    control's own entries are NaN.

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import control_test
    >>> rng = np.random.default_rng(1)
    >>> res = control_test(rng.normal(size=(30, 3)) + [0.0, 0.1, 1.0], control=0)
    >>> res.pvalue.round(4)
    array([   nan, 0.6985, 0.001 ])
    """
    method_name = check_option(method, "method", ("mean_ranks", "conover", "sign"))
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    adjust = _check_p_adjust(p_adjust)
    arr, ranks, names = _scores_and_ranks(scores, maximize)
    n, k = ranks.shape
    c = _resolve_control(control, k, names)
    others = np.flatnonzero(np.arange(k) != c)
    mean_ranks = ranks.mean(axis=0)
    if method_name == "mean_ranks":
        se = np.sqrt(k * (k + 1) / (6.0 * n))
        stat = (mean_ranks[c] - mean_ranks[others]) / se
        pvals = _normal_pvalues(stat, alternative)
    elif method_name == "conover":
        rank_sums = ranks.sum(axis=0)
        se, df = _conover_scale(rank_sums, float(np.sum(ranks**2)), n, k)
        stat = _antisymmetric_ratio(rank_sums[c] - rank_sums[others], se)
        pvals = _t_pvalues(stat, df, alternative)
    else:
        oriented = arr if maximize else -arr
        diff = oriented[:, others] - oriented[:, [c]]
        wins = np.count_nonzero(diff > 0, axis=0)
        losses = np.count_nonzero(diff < 0, axis=0)
        ties_ = n - wins - losses
        stat, pvals, _ = _sign_counts_pvalue(wins, losses, ties_, alternative, "split")
    if adjust is not None:
        pvals = _adjust_flat(np.asarray(pvals, dtype=float), adjust)
    full_stat = np.full(k, np.nan)
    full_p = np.full(k, np.nan)
    full_stat[others] = stat
    full_p[others] = pvals
    return ControlResult(
        statistic=_frozen(full_stat),
        pvalue=_frozen(full_p),
        control=c,
        method=method_name,
        alternative=alternative,
        p_adjust=adjust,
        mean_ranks=_frozen(mean_ranks),
        names=_names_tuple(names),
    )


# ---------------------------------------------------------------------------------------------
# Sign test
# ---------------------------------------------------------------------------------------------


def _binom_half_pvalue(successes, trials, alternative: str):
    """Binomial(trials, 1/2) p-values, vectorised; zero trials give p = 1."""
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    upper = _st.binom.sf(successes - 1, trials, 0.5)  # P(X >= s)
    lower = _st.binom.cdf(successes, trials, 0.5)  # P(X <= s)
    if alternative == "greater":
        p = upper
    elif alternative == "less":
        p = lower
    else:
        # Binomial(n, 1/2) is symmetric, so SciPy's likelihood-ordered two-sided p-value is
        # twice the smaller tail (capped at 1).
        p = np.minimum(1.0, 2.0 * np.minimum(upper, lower))
    return np.where(trials == 0, 1.0, p)


def _sign_counts_pvalue(wins, losses, ties, alternative: str, ties_mode: str):
    wins = np.asarray(wins, dtype=np.int64)
    losses = np.asarray(losses, dtype=np.int64)
    ties = np.asarray(ties, dtype=np.int64)
    if ties_mode == "split":
        # Demšar: each tie gives half a win to either side; with an odd number one tie is
        # dropped, so the count of successes stays an integer.
        half = ties // 2
        successes = wins + half
        trials = wins + losses + 2 * half
    else:
        successes = wins
        trials = wins + losses
    return successes, _binom_half_pvalue(successes, trials, alternative), trials


def sign_test_from_counts(
    n_wins, n_losses, n_ties=0, *, alternative: str = "two-sided", ties: str = "split"
):
    """Sign-test p-values from win/loss/tie counts, vectorised over arrays of counts.

    The same test as :func:`sign_test` (see there for the handling of ties), for callers that
    already hold the counts, e.g. every pair of survivors in a race. Returns
    ``(statistic, pvalue, n)`` arrays: successes credited to the winner side, p-values and
    the number of binomial trials.

    >>> from racer.stats import sign_test_from_counts
    >>> s, p, n = sign_test_from_counts([10, 3], [2, 3], [2, 0])
    >>> p.round(4)
    array([0.0574, 1.    ])
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    ties_mode = check_option(ties, "ties", ("split", "drop"))
    arrays = []
    for name, value in (("n_wins", n_wins), ("n_losses", n_losses), ("n_ties", n_ties)):
        arr = np.asarray(value)
        message = f"`{name}` must hold non-negative integer counts; got {describe(value)}"
        if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
            raise TypeError(message)
        # Finite and below 2**53 first: inf and 1e30 pass the whole-number test but turn into
        # garbage (with only a RuntimeWarning) when cast to int64.
        if (
            np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.floor(arr))
            or np.any(arr > 2**53)
        ):
            raise ValueError(message)
        arrays.append(arr.astype(np.int64))
    try:
        wins, losses, ties_ = np.broadcast_arrays(*arrays)
    except ValueError as exc:
        raise ValueError(
            "`n_wins`, `n_losses` and `n_ties` must have broadcastable shapes; got "
            f"{arrays[0].shape}, {arrays[1].shape} and {arrays[2].shape}"
        ) from exc
    return _sign_counts_pvalue(wins, losses, ties_, alternative, ties_mode)


def sign_test(x, y, *, alternative: str = "two-sided", ties: str = "split") -> SignTestResult:
    """Sign test for paired samples: does ``x`` win more often than chance?

    Counts wins (x > y), losses and ties, and refers the wins to Binomial(n, 1/2). Ties follow
    Demšar 2006 section 3.1.3 by default (``ties="split"``): each tie counts half a win for
    either side, and if their number is odd one tie is dropped, so the statistic is
    ``wins + floor(ties / 2)`` out of ``wins + losses + 2 floor(ties / 2)``. ``ties="drop"``
    ignores ties (the textbook test; statsmodels' ``sign_test``). With no trials left the
    p-value is 1. The two-sided p-value is twice the smaller binomial tail, capped at 1
    (the same as SciPy's ``binomtest``).

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    Demšar's C4.5 vs C4.5+m: 2 wins, 10 losses, 2 ties for C4.5.

    >>> from racer.stats import sign_test
    >>> res = sign_test([0, 0, 1, 1] + [0] * 10, [0, 0, 0, 0] + [1] * 10)
    >>> res.statistic, res.n, round(res.pvalue, 4)
    (3.0, 14, 0.0574)
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    ties_mode = check_option(ties, "ties", ("split", "drop"))
    xa, ya = as_paired(x, y, ("x", "y"))
    wins = int(np.count_nonzero(xa > ya))
    losses = int(np.count_nonzero(xa < ya))
    n_ties = xa.shape[0] - wins - losses
    successes, pvalue, trials = _sign_counts_pvalue(wins, losses, n_ties, alternative, ties_mode)
    return SignTestResult(
        statistic=float(successes),
        pvalue=float(pvalue),
        n_wins=wins,
        n_losses=losses,
        n_ties=n_ties,
        n=int(trials),
        alternative=alternative,
        ties=ties_mode,
    )


# ---------------------------------------------------------------------------------------------
# Wilcoxon signed-rank test
# ---------------------------------------------------------------------------------------------


def _signed_rank_exact_pvalue(doubled_ranks: np.ndarray, doubled_obs: float, alternative: str):
    """Exact p-value of R+ under random signs of the non-zero differences.

    ``doubled_ranks`` are twice the (mid)ranks of the non-zero differences, hence integers; the
    null distribution of their signed sum is built by convolution, one difference at a time
    (O(n * sum of ranks), a few microseconds per difference for n <= 50). Conditioning on the
    observed ranks makes it exact with ties and zeros, where SciPy's ``method="exact"`` uses
    the no-ties table.
    """
    weights = doubled_ranks.astype(np.int64)
    total = int(weights.sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    for w in weights:
        shifted = np.zeros_like(dist)
        shifted[w:] = dist[: total + 1 - w]
        dist = 0.5 * (dist + shifted)
    obs = int(round(doubled_obs))
    # Both tails summed directly (no 1 - cdf), so tiny p-values keep their precision.
    p_less = float(min(1.0, dist[: obs + 1].sum()))
    p_greater = float(min(1.0, dist[obs:].sum()))
    if alternative == "greater":
        return p_greater
    if alternative == "less":
        return p_less
    return min(1.0, 2.0 * min(p_less, p_greater))


def wilcoxon(
    x,
    y=None,
    *,
    zero_method: str = "zsplit",
    alternative: str = "two-sided",
    method: str = "auto",
    correction: bool = False,
) -> WilcoxonResult:
    """Wilcoxon signed-rank test on paired samples (Demšar 2006, section 3.1.3).

    Differences ``d = x - y`` (or ``x`` itself when ``y`` is None) are ranked by ``|d|`` with
    mid-ranks for ties; ``R+`` sums the ranks of positive differences and ``R-`` those of
    negative ones. Zero differences: ``"zsplit"`` (default, Demšar) ranks them and adds half of
    their ranks to each of R+ and R-; ``"wilcox"`` drops them; ``"pratt"`` ranks them and then
    ignores them. ``alternative="greater"`` tests "x tends to exceed y".

    Methods:

    * ``"exact"``: the permutation distribution of R+ given the observed ranks (every
      non-zero difference equally likely positive or negative; zeros fixed). It is exact with
      ties and zeros too; without them it equals SciPy's exact table.
    * ``"asymptotic"``: the normal approximation with SciPy's mean and tie-corrected variance
      (zsplit counts zeros as a tie group of the n ranks; pratt uses Cureton's adjustment),
      optional continuity ``correction``. Delegated to ``scipy.stats.wilcoxon``.
    * ``"auto"``: as SciPy: exact for n <= 50 without ties or zeros, exact (the same
      permutation distribution SciPy enumerates) for n <= 13 otherwise, else asymptotic.
    * ``"R"``: R's ``wilcox.test`` switch, which irace's F-race uses with two survivors:
      exact for fewer than 50 non-zero differences when there are no ties among ``|d|`` and
      no zero difference (before ``"wilcox"`` drops them), else asymptotic. R's own call is
      ``wilcoxon(x, y, zero_method="wilcox", correction=True, method="R")``.

    ``statistic`` is ``min(R+, R-)`` (Demšar's T) for two-sided tests and ``R+`` otherwise.
    With no non-zero difference the p-value is 1.

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    Demšar's (2006) C4.5 vs C4.5+m: T = 12, p = 0.011 (asymptotic, zsplit).

    >>> from racer.stats import wilcoxon
    >>> a = [.763, .599, .954, .628, .882, .936, .661, .583, .775, 1., .94, .619, .972, .957]
    >>> b = [.768, .591, .971, .661, .888, .931, .668, .583, .838, 1., .962, .666, .981, .978]
    >>> res = wilcoxon(a, b)
    >>> res.statistic, res.r_plus, res.r_minus, round(res.pvalue, 5), res.method
    (12.0, 12.0, 93.0, 0.01097, 'asymptotic')
    >>> round(wilcoxon(a, b, zero_method="wilcox", correction=True, method="R").pvalue, 5)
    0.01203
    """
    zero_method = check_option(zero_method, "zero_method", ("zsplit", "wilcox", "pratt"))
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    method = check_option(method, "method", ("auto", "exact", "asymptotic", "R"))
    correction = check_bool(correction, "correction")
    if y is None:
        d = as_1d(x, "x")
    else:
        xa, ya = as_paired(x, y, ("x", "y"))
        d = xa - ya
    zeros = d == 0
    any_zero = bool(zeros.any())
    if zero_method == "wilcox":
        d = d[~zeros]
        zeros = zeros[~zeros]
    n = int(d.shape[0])
    if n == 0 or np.all(zeros):
        # No non-zero difference: no evidence either way. zsplit shares the zeros' ranks.
        half = n * (n + 1) / 4.0 if zero_method == "zsplit" else 0.0
        return WilcoxonResult(half, 1.0, half, half, n, zero_method, alternative,
                              "exact" if method in ("auto", "R") else method, np.nan)
    ranks = _st.rankdata(np.abs(d))
    r_plus = float(np.sum(ranks[d > 0]))
    r_minus = float(np.sum(ranks[d < 0]))
    zero_half = float(np.sum(ranks[zeros])) / 2.0 if zero_method == "zsplit" else 0.0
    has_ties = np.unique(ranks).shape[0] < n
    if method == "auto":
        if n <= 50 and not has_ties and not zeros.any():
            method = "exact"
        elif n <= 13:
            method = "exact"
        else:
            method = "asymptotic"
    elif method == "R":
        n_nonzero = n - int(np.count_nonzero(zeros))
        method = "exact" if n_nonzero < 50 and not has_ties and not any_zero else "asymptotic"
    zstat = np.nan
    if method == "exact":
        nonzero = ~zeros
        pvalue = _signed_rank_exact_pvalue(2.0 * ranks[nonzero], 2.0 * r_plus, alternative)
    else:
        res = _st.wilcoxon(d, zero_method=zero_method, correction=correction,
                           alternative=alternative, method="asymptotic")
        pvalue = float(res.pvalue)
        zstat = float(res.zstatistic)
    r_plus += zero_half
    r_minus += zero_half
    statistic = min(r_plus, r_minus) if alternative == "two-sided" else r_plus
    return WilcoxonResult(
        statistic=float(statistic),
        pvalue=float(pvalue),
        r_plus=r_plus,
        r_minus=r_minus,
        n=n,
        zero_method=zero_method,
        alternative=alternative,
        method=method,
        zstatistic=zstat,
    )


# ---------------------------------------------------------------------------------------------
# Multiple-testing adjustment
# ---------------------------------------------------------------------------------------------


def _hommel_sorted(p: np.ndarray) -> np.ndarray:
    """Hommel's adjustment of ascending p-values (the closed-testing algorithm of R's p.adjust)."""
    m = p.shape[0]
    i = np.arange(1, m + 1)
    q = np.full(m, np.min(m * p / i))
    adjusted = q.copy()
    # One pass per subset size; each is vectorised over the hypotheses, and m is the size of a
    # family of comparisons (not a hot path).
    for size in range(m - 1, 1, -1):
        head = m - size + 1
        q_tail = np.min(size * p[head:] / np.arange(2, size + 1))
        q_new = np.empty(m)
        q_new[:head] = np.minimum(size * p[:head], q_tail)
        q_new[head:] = q_new[head - 1]
        adjusted = np.maximum(adjusted, q_new)
    return np.maximum(adjusted, p)


def _adjust_flat(p: np.ndarray, method: str) -> np.ndarray:
    m = p.shape[0]
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    ps = p[order]
    i = np.arange(1, m + 1, dtype=float)
    if method == "bonferroni":
        adj = ps * m
    elif method == "holm":
        adj = np.maximum.accumulate((m - i + 1) * ps)
    elif method == "hochberg":
        adj = np.minimum.accumulate(((m - i + 1) * ps)[::-1])[::-1]
    elif method == "hommel":
        adj = _hommel_sorted(ps)
    else:
        scale = 1.0 if method == "bh" else float(np.sum(1.0 / i))
        adj = np.minimum.accumulate((scale * m / i * ps)[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


def p_adjust(pvalues, method: str = "holm") -> np.ndarray:
    """Adjust p-values for multiple testing; returns an array of the same shape.

    Every entry is one hypothesis of the family (any shape; flattened in C order, adjusted,
    reshaped). For a symmetric k x k matrix of two-sided pairwise p-values that would count
    each pair twice and the diagonal too: adjust its upper triangle instead, or pass
    ``p_adjust=`` to the post-hoc functions, which do exactly that. With sorted p-values
    ``p_(1) <= ... <= p_(m)``:

    * ``"bonferroni"``: ``m p``;
    * ``"holm"`` (step-down): ``max_{j <= i} (m - j + 1) p_(j)``;
    * ``"hochberg"`` (step-up): ``min_{j >= i} (m - j + 1) p_(j)``;
    * ``"hommel"``: Hommel's closed Simes procedure;
    * ``"bh"`` / ``"by"``: Benjamini–Hochberg ``min_{j >= i} m p_(j) / j`` (times
      ``sum_{l <= m} 1/l`` for Benjamini–Yekutieli);

    all capped at 1. They agree with statsmodels' ``multipletests`` (whose names
    ``"simes-hochberg"``, ``"fdr_bh"``, ``"fdr_by"`` are accepted too). Demšar 2006 section 3.2.2
    describes Holm's and Hochberg's procedures.

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    Examples
    --------
    >>> from racer.stats import p_adjust
    >>> p_adjust([0.01, 0.04, 0.03, 0.2], "holm")
    array([0.04, 0.09, 0.09, 0.2 ])
    """
    method = _check_p_adjust(method, "method", allow_none=False)
    arr = numeric_array(pvalues, "pvalues", "an array of numbers")
    if arr.size == 0:
        raise ValueError("`pvalues` must hold at least one p-value; got an empty array")
    if np.isnan(arr).any():
        raise ValueError(f"`pvalues` must not contain NaN; got {describe(pvalues)}")
    if np.any((arr < 0) | (arr > 1)):
        bad = arr.ravel()[np.flatnonzero((arr.ravel() < 0) | (arr.ravel() > 1))[0]]
        raise ValueError(f"`pvalues` must lie in [0, 1]; found {bad}")
    return _adjust_flat(arr.ravel(), method).reshape(arr.shape)
