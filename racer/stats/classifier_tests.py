"""Frequentist tests for comparing two classifiers (or any two learners).

* :func:`correlated_ttest`: Nadeau and Bengio's (2003) corrected resampled t-test on
  cross-validation differences.
* :func:`mcnemar`, :func:`proportion_test`, :func:`bootstrap_test`: the three tests of Keller,
  Bengio and Wong (2005, section 2) on the predictions of two classifiers on one test set.

Direction: a positive statistic and ``alternative="greater"`` mean the first learner (``a``)
is better: higher score in ``correlated_ttest`` (differences are ``a - b``), fewer errors or a
larger metric in the others.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar

import numpy as np
from scipy import stats as _st

from racer._validation import (
    as_1d,
    check_bool,
    check_int,
    check_option,
    check_probability,
    check_random_state,
    describe,
)
from racer.stats._result import StatsResult

__all__ = [
    "CorrelatedTTestResult",
    "McNemarResult",
    "ProportionTestResult",
    "BootstrapTestResult",
    "correlated_ttest",
    "mcnemar",
    "proportion_test",
    "bootstrap_test",
]

_ALTERNATIVES = ("two-sided", "greater", "less")


@dataclasses.dataclass(frozen=True, repr=False)
class CorrelatedTTestResult(StatsResult):
    """Corrected resampled t-test; ``statistic`` is t with ``df`` degrees of freedom."""

    statistic: float
    pvalue: float
    df: int
    mean: float
    standard_error: float
    alternative: str

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


@dataclasses.dataclass(frozen=True, repr=False)
class McNemarResult(StatsResult):
    """McNemar's test; ``n01`` = only ``a`` wrong, ``n10`` = only ``b`` wrong."""

    statistic: float
    pvalue: float
    n01: int
    n10: int
    exact: bool
    correction: bool

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


@dataclasses.dataclass(frozen=True, repr=False)
class ProportionTestResult(StatsResult):
    """Proportion z-test; ``statistic`` > 0 when ``a`` makes fewer errors."""

    statistic: float
    pvalue: float
    errors_a: int
    errors_b: int
    n: int
    alternative: str

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


@dataclasses.dataclass(frozen=True, repr=False)
class BootstrapTestResult(StatsResult):
    """Percentile bootstrap test of ``metric(a) - metric(b)``.

    ``statistic`` is the observed difference, ``confidence_interval`` the equal-tailed
    percentile interval at ``confidence_level``, ``bootstrap_distribution`` the replicates.
    """

    statistic: float
    pvalue: float
    confidence_interval: tuple[float, float]
    confidence_level: float
    n_samples: int
    alternative: str
    metric: str
    bootstrap_distribution: np.ndarray = dataclasses.field(repr=False)

    _unpack: ClassVar[tuple[str, ...]] = ("statistic", "pvalue")


def _pvalue_from_t(t: float, df: float, alternative: str) -> float:
    if alternative == "greater":
        return float(_st.t.sf(t, df))
    if alternative == "less":
        return float(_st.t.cdf(t, df))
    return float(min(1.0, 2.0 * _st.t.sf(abs(t), df)))


def correlated_ttest(
    diffs, test_fraction, *, alternative: str = "two-sided"
) -> CorrelatedTTestResult:
    """Nadeau–Bengio corrected resampled t-test (Nadeau & Bengio 2003).

    With n differences ``x_i = a_i - b_i`` (one per train/test split, e.g. per fold of
    repeated k-fold cross-validation), mean ``xbar`` and sample variance ``s^2``::

        t = xbar / sqrt(s^2 (1/n + rho / (1 - rho))),    rho = n_test / (n_train + n_test)

    on Student's t with n - 1 degrees of freedom. The term ``rho / (1 - rho)`` inflates the
    variance for the overlap between training sets; for k-fold cross-validation
    ``rho = 1/k`` and it is ``1/(k - 1)``, as in baycomp's ``CorrelatedTTest``. ``rho = 0``
    (independent test sets) gives the ordinary one-sample t-test.

    When every difference is equal the variance is 0: t is 0 (p = 1) if they are all 0, and
    +-inf (p = 0 in the direction of the sign) otherwise.

    References
    ----------
    .. [1] Nadeau, C. & Bengio, Y. (2003). Inference for the generalization error. Machine
       Learning 52(3), 239–281.

    Examples
    --------
    >>> from racer.stats import correlated_ttest
    >>> res = correlated_ttest([0.02, 0.01, 0.03, 0.0, 0.02, 0.01, 0.02, 0.03, 0.01, 0.02], 0.1)
    >>> round(res.statistic, 3), round(res.pvalue, 4), res.df
    (3.9, 0.0036, 9)
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    rho = check_probability(test_fraction, "test_fraction", open_left=False)
    x = as_1d(diffs, "diffs", min_length=2)
    n = x.shape[0]
    mean = float(np.mean(x))
    var = float(np.var(x, ddof=1))
    se = float(np.sqrt(var * (1.0 / n + rho / (1.0 - rho))))
    if se > 0:
        t = mean / se
    else:
        t = 0.0 if mean == 0 else float(np.sign(mean) * np.inf)
    pvalue = 1.0 if (se == 0 and mean == 0) else _pvalue_from_t(t, n - 1, alternative)
    return CorrelatedTTestResult(
        statistic=float(t), pvalue=pvalue, df=n - 1, mean=mean, standard_error=se,
        alternative=alternative,
    )


def _labels(y_true, pred_a, pred_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = []
    for name, value in (("y_true", y_true), ("pred_a", pred_a), ("pred_b", pred_b)):
        arr = np.asarray(value)
        if arr.ndim != 1:
            raise ValueError(f"`{name}` must be a 1-D array of labels; got shape {arr.shape}")
        if arr.shape[0] == 0:
            raise ValueError(f"`{name}` needs at least 1 label; got 0")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            i = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise ValueError(f"`{name}` must not contain NaN or inf; found {arr[i]} at index {i}")
        arrays.append(arr)
    n = arrays[0].shape[0]
    for name, arr in zip(("pred_a", "pred_b"), arrays[1:]):
        if arr.shape[0] != n:
            raise ValueError(
                f"`y_true` and `{name}` must have the same length; got {n} and {arr.shape[0]}"
            )
    return arrays[0], arrays[1], arrays[2]


def mcnemar(
    y_true, pred_a, pred_b, *, exact: bool | None = None, correction: bool = True
) -> McNemarResult:
    """McNemar's test on the examples the two classifiers disagree about (Keller et al. 2005, eq. (4)).

    ``n01`` counts examples misclassified by ``a`` but not by ``b``, ``n10`` the reverse. The
    chi-square version is ``(|n01 - n10| - 1)^2 / (n01 + n10)`` on chi-square(1) (without the
    ``- 1`` when ``correction=False``); the exact version refers ``min(n01, n10)`` to
    Binomial(n01 + n10, 1/2), two-sided. Both agree with statsmodels'
    ``contingency_tables.mcnemar``. ``exact=None`` (default) picks the exact test when
    ``n01 + n10 < 25``, where the chi-square approximation is poor, and chi-square otherwise.
    With no disagreement at all the p-value is 1.

    References
    ----------
    .. [1] Keller, M., Bengio, S. & Wong, S. Y. (2005). Benchmarking non-parametric statistical
       tests. Advances in Neural Information Processing Systems 18 (NIPS 2005).

    Examples
    --------
    >>> from racer.stats import mcnemar
    >>> y = [0, 1] * 50
    >>> a = y[:90] + [1 - v for v in y[90:]]      # 10 errors
    >>> b = [1 - v for v in y[:30]] + y[30:]      # 30 errors
    >>> res = mcnemar(y, a, b)
    >>> res.n01, res.n10, round(res.statistic, 3), round(res.pvalue, 5)
    (10, 30, 9.025, 0.00266)
    """
    if exact is not None:
        exact = check_bool(exact, "exact")
    correction = check_bool(correction, "correction")
    y, a, b = _labels(y_true, pred_a, pred_b)
    a_right = a == y
    b_right = b == y
    n01 = int(np.count_nonzero(~a_right & b_right))
    n10 = int(np.count_nonzero(a_right & ~b_right))
    disagree = n01 + n10
    use_exact = disagree < 25 if exact is None else exact
    if use_exact:
        statistic = float(min(n01, n10))
        pvalue = float(min(1.0, 2.0 * _st.binom.cdf(statistic, disagree, 0.5))) if disagree else 1.0
    elif disagree == 0:
        statistic, pvalue = 0.0, 1.0
    else:
        # Keller et al.'s (2005) formula as written (and statsmodels): the corrected gap is not
        # clipped at 0, so n01 == n10 gives 1 / (n01 + n10) rather than 0; the p-value stays near 1.
        gap = abs(n01 - n10) - (1.0 if correction else 0.0)
        statistic = float(gap**2 / disagree)
        pvalue = float(_st.chi2.sf(statistic, 1))
    return McNemarResult(statistic, pvalue, n01, n10, bool(use_exact), correction)


def proportion_test(
    y_true, pred_a, pred_b, *, alternative: str = "two-sided"
) -> ProportionTestResult:
    """Proportion test of the difference of error rates (Keller et al. 2005, equations (1) and (3)).

    With ``N_a``, ``N_b`` errors on the same N examples::

        z = (N_b - N_a) / N / sqrt(2 C (1 - C) / N),    C = (N_a + N_b) / (2 N)

    on the standard normal. This is the pooled two-sample z-test for proportions with equal
    sample sizes (statsmodels ``proportions_ztest([N_b, N_a], [N, N])``, no continuity
    correction). It treats the errors of the two classifiers as independent although they are
    made on the same examples; the seed finds it conservative in most conditions, and McNemar's
    test is the paired alternative. If neither or both classifiers err everywhere (C = 0 or 1)
    z = 0 and p = 1.

    References
    ----------
    .. [1] Keller, M., Bengio, S. & Wong, S. Y. (2005). Benchmarking non-parametric statistical
       tests. Advances in Neural Information Processing Systems 18 (NIPS 2005).

    Examples
    --------
    >>> from racer.stats import proportion_test
    >>> y = [0, 1] * 50
    >>> a = y[:90] + [1 - v for v in y[90:]]      # 10 errors
    >>> b = [1 - v for v in y[:30]] + y[30:]      # 30 errors
    >>> res = proportion_test(y, a, b)
    >>> round(res.statistic, 4), round(res.pvalue, 5)
    (3.5355, 0.00041)
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    y, a, b = _labels(y_true, pred_a, pred_b)
    n = y.shape[0]
    err_a = int(np.count_nonzero(a != y))
    err_b = int(np.count_nonzero(b != y))
    mean_error = (err_a + err_b) / (2.0 * n)
    sigma = np.sqrt(2.0 * mean_error * (1.0 - mean_error) / n)
    if sigma > 0:
        z = (err_b - err_a) / n / sigma
        if alternative == "greater":
            pvalue = float(_st.norm.sf(z))
        elif alternative == "less":
            pvalue = float(_st.norm.cdf(z))
        else:
            pvalue = float(min(1.0, 2.0 * _st.norm.sf(abs(z))))
    else:
        z, pvalue = 0.0, 1.0
    return ProportionTestResult(float(z), pvalue, err_a, err_b, n, alternative)


# ---------------------------------------------------------------------------------------------
# Bootstrap percentile test
# ---------------------------------------------------------------------------------------------

_NAMED_METRICS = ("accuracy", "error_rate", "f1", "f1_macro")


def _metric_value(value, metric_name):
    """A user metric's return value as a float, or a TypeError naming ``metric``."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        if not (isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iuf"):
            raise TypeError(
                f"`metric` must return a real number; {metric_name} returned {describe(value)}"
            )
    return float(value)


def _cell_metric(name: str, cells: np.ndarray, counts: np.ndarray, labels: np.ndarray, pos_label):
    """Metric of a and of b for each row of ``counts`` over the (y, a, b) cells.

    ``cells`` (C, 3) holds label codes of each distinct (y_true, pred_a, pred_b) triple and
    ``counts`` (..., C) how many examples fall in each; every named metric is a function of
    those counts only, which is what makes the bootstrap vectorised.
    """
    counts = counts.astype(np.float64)
    total = counts.sum(axis=-1)
    out = []
    for col in (1, 2):
        correct = (cells[:, col] == cells[:, 0]).astype(np.float64)
        if name in ("accuracy", "error_rate"):
            acc = counts @ correct / total
            out.append(acc if name == "accuracy" else 1.0 - acc)
            continue
        if name == "f1":
            # The caller has checked that pos_label occurs among the labels.
            classes = [int(np.flatnonzero(labels == pos_label)[0])]
        else:
            classes = list(range(labels.shape[0]))
        scores = []
        for c in classes:
            in_true = cells[:, 0] == c
            in_pred = cells[:, col] == c
            tp = counts @ (in_true & in_pred).astype(np.float64)
            wrong = counts @ (in_true ^ in_pred).astype(np.float64)  # fn + fp
            denom = 2.0 * tp + wrong
            # sklearn's zero_division=0 convention: no positives anywhere gives F1 = 0.
            with np.errstate(invalid="ignore", divide="ignore"):
                scores.append(np.where(denom > 0, 2.0 * tp / np.where(denom > 0, denom, 1.0), 0.0))
        out.append(np.mean(scores, axis=0))
    return out[0], out[1]


def _percentile_pvalue(replicates: np.ndarray, alternative: str) -> float:
    # Duality with the percentile interval: at level alpha the test rejects exactly when 0
    # lies outside the equal-tailed interval (one-sided: beyond the alpha quantile). Replicates
    # equal to 0 count against rejecting (conservative for discrete metrics like accuracy).
    b = replicates.shape[0]
    p_greater = np.count_nonzero(replicates <= 0) / b
    p_less = np.count_nonzero(replicates >= 0) / b
    if alternative == "greater":
        return float(p_greater)
    if alternative == "less":
        return float(p_less)
    return float(min(1.0, 2.0 * min(p_greater, p_less)))


def bootstrap_test(
    y_true,
    pred_a,
    pred_b,
    metric: str | Callable[[Any, Any], float] = "f1",
    *,
    n_samples: int = 5000,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    pos_label: Any = 1,
    random_state=None,
) -> BootstrapTestResult:
    """Bootstrap percentile test of ``metric(a) - metric(b)`` (Keller et al. 2005, section 2.2).

    Draws ``n_samples`` test sets of N examples with replacement, computes the difference of
    the metric on each, and rejects "no difference" at level alpha when 0 lies outside the
    equal-tailed ``1 - alpha`` percentile interval of the replicates (Efron and Tibshirani).
    The p-value is the smallest such alpha: ``2 min(#(d* <= 0), #(d* >= 0)) / B`` (capped at
    1); one-sided, ``#(d* <= 0) / B`` for "greater" (a better) and ``#(d* >= 0) / B`` for
    "less". Replicates equal to 0 count against rejecting. Keller et al. (2005) suggest at least
    50 / alpha replicates (5000 for alpha = 0.01), the default.

    ``metric`` is either a name or a callable ``metric(y_true, y_pred) -> float`` (larger is
    better unless you read the sign yourself, e.g. for "error_rate"):

    * ``"accuracy"``, ``"error_rate"``, ``"f1"`` (binary, class ``pos_label``) and
      ``"f1_macro"`` (unweighted mean of per-class F1 over the labels present in any of the
      three arrays) take a fast vectorised path: each example falls in one cell of
      (y_true, pred_a, pred_b), a bootstrap replicate is a multinomial draw of the cell
      counts, and the metrics follow from the counts. It costs O(n_samples x cells) and has
      exactly the distribution of resampling examples. F1 with no predicted or true positive is
      0 (scikit-learn's ``zero_division=0``).
    * a callable is evaluated on resampled index sets one replicate at a time: a Python loop
      over the samples, unavoidable for an arbitrary Python function.

    The two paths use different random streams, so they agree in distribution, not bit for bit.

    References
    ----------
    .. [1] Keller, M., Bengio, S. & Wong, S. Y. (2005). Benchmarking non-parametric statistical
       tests. Advances in Neural Information Processing Systems 18 (NIPS 2005).

    Examples
    --------
    >>> import numpy as np
    >>> from racer.stats import bootstrap_test
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> a = np.where(rng.random(400) < 0.85, y, 1 - y)
    >>> b = np.where(rng.random(400) < 0.75, y, 1 - y)
    >>> res = bootstrap_test(y, a, b, "accuracy", random_state=1)
    >>> bool(res.statistic > 0 and res.pvalue < 0.01)
    True
    """
    alternative = check_option(alternative, "alternative", _ALTERNATIVES)
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    confidence_level = check_probability(confidence_level, "confidence_level")
    rng = check_random_state(random_state)
    if isinstance(metric, str):
        metric_name = check_option(metric, "metric", _NAMED_METRICS)
    elif callable(metric):
        metric_name = getattr(metric, "__name__", repr(metric))
    else:
        raise TypeError(
            f"`metric` must be one of {', '.join(repr(m) for m in _NAMED_METRICS)} or a callable "
            f"metric(y_true, y_pred) -> float; got {describe(metric)}"
        )
    y, a, b = _labels(y_true, pred_a, pred_b)
    n = y.shape[0]

    if isinstance(metric, str):
        labels, codes = np.unique(np.concatenate([y, a, b]), return_inverse=True)
        codes = codes.reshape(3, n).T
        if metric_name == "f1" and not np.any(labels == pos_label):
            raise ValueError(
                f"`pos_label` {pos_label!r} does not occur in `y_true`, `pred_a` or `pred_b`"
            )
        cells, cell_index = np.unique(codes, axis=0, return_inverse=True)
        observed_counts = np.bincount(cell_index.ravel(), minlength=cells.shape[0])
        m_a, m_b = _cell_metric(metric_name, cells, observed_counts[None, :], labels, pos_label)
        observed = float(m_a[0] - m_b[0])
        counts = rng.multinomial(n, observed_counts / n, size=n_samples)
        r_a, r_b = _cell_metric(metric_name, cells, counts, labels, pos_label)
        replicates = r_a - r_b
    else:
        def diff_on(index):
            yi = y if index is None else y[index]
            ai = a if index is None else a[index]
            bi = b if index is None else b[index]
            return _metric_value(metric(yi, ai), metric_name) - _metric_value(
                metric(yi, bi), metric_name
            )

        observed = diff_on(None)
        replicates = np.empty(n_samples)
        for s in range(n_samples):
            replicates[s] = diff_on(rng.integers(0, n, size=n))
    if not np.all(np.isfinite(replicates)) or not np.isfinite(observed):
        raise ValueError(
            f"`metric` returned a non-finite value on a bootstrap sample ({metric_name})"
        )
    tail = (1.0 - confidence_level) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    replicates.setflags(write=False)
    return BootstrapTestResult(
        statistic=observed,
        pvalue=_percentile_pvalue(replicates, alternative),
        confidence_interval=(float(low), float(high)),
        confidence_level=confidence_level,
        n_samples=n_samples,
        alternative=alternative,
        metric=metric_name,
        bootstrap_distribution=replicates,
    )
