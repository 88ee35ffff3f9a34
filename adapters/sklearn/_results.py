"""``cv_results_`` of a :class:`~racer.adapters.sklearn.RaceSearchCV` race.

The keys are ``GridSearchCV``'s, computed over the splits each candidate was evaluated on
(a race evaluates each candidate on its own number of splits), plus the race's own:
``n_splits_evaluated``, ``eliminated_at``, ``elimination_reason``, ``eliminated_by``,
``elimination_probability``, ``n_fits_failed`` and ``n_resources``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import FitFailedWarning

__all__ = ["cv_results", "stage_rank", "top_level_mean", "warn_fit_failures"]


def cv_results(candidates, outcomes, names, history, *, n_splits, n_resources, error_score,
               return_train_score, by_largest_size):
    """``cv_results_`` and the (candidate, split) mask of evaluated fits.

    ``outcomes`` maps ``(candidate, split)`` to a fit's outcome (``failed``, ``test`` and
    ``train`` scores by metric name, ``fit_time``, ``score_time``); ``history`` is the race's
    elimination records; ``n_resources`` the training size of each split's fits. With
    ``by_largest_size`` (``resource="n_samples"``) the ranks compare means at the largest
    training size each candidate reached.
    """
    n_cand = len(candidates)
    evaluated = np.zeros((n_cand, n_splits), dtype=bool)
    failed = np.zeros((n_cand, n_splits), dtype=bool)
    fit_time = np.full((n_cand, n_splits), np.nan)
    score_time = np.full((n_cand, n_splits), np.nan)
    error_value = np.nan if error_score == "raise" else float(error_score)
    test = {name: np.full((n_cand, n_splits), np.nan) for name in names}
    train = {name: np.full((n_cand, n_splits), np.nan) for name in names}
    for (c, s), out in outcomes.items():
        evaluated[c, s] = True
        fit_time[c, s] = out["fit_time"]
        score_time[c, s] = out["score_time"]
        if out["failed"]:
            failed[c, s] = True
            for name in names:
                test[name][c, s] = error_value
                train[name][c, s] = error_value
        else:
            for name in names:
                test[name][c, s] = out["test"][name]
                if return_train_score:
                    train[name][c, s] = out["train"][name]
    n_evaluated = evaluated.sum(axis=1)

    results: dict[str, Any] = {}

    def store(key, array, splits=False, rank=False):
        if splits:
            for k in range(n_splits):
                results[f"split{k}_{key}"] = array[:, k]
        mean, std = mean_std_over(array, evaluated, n_evaluated)
        results[f"mean_{key}"] = mean
        results[f"std_{key}"] = std
        if rank:
            results[f"rank_{key}"] = stage_rank(n_evaluated, mean)

    store("fit_time", fit_time)
    store("score_time", score_time)
    results.update(masked_param_arrays(candidates))
    results["params"] = candidates
    for name in names:
        store(f"test_{name}", test[name], splits=True, rank=True)
        if return_train_score:
            store(f"train_{name}", train[name], splits=True)
    for name in names:
        mean = results[f"mean_test_{name}"]
        if not np.all(np.isfinite(mean)):
            # cv_results < RaceSearchCV._store_results < fit < its _fit_context wrapper <
            # the caller
            warnings.warn(
                f"One or more of the test scores are non-finite: {mean}", UserWarning,
                stacklevel=5,
            )
            break

    eliminated_at = np.full(n_cand, -1, dtype=np.int64)
    eliminated_by = np.full(n_cand, -1, dtype=np.int64)
    reason = np.full(n_cand, "", dtype=object)
    probability = np.full(n_cand, np.nan)
    for record in history:
        i = record.candidate_index
        eliminated_at[i] = record.n_instances
        reason[i] = record.reason
        if record.reason == "dominated" and np.isnan(record.probability):
            reason[i] = "halving"  # HalvingFloor's quota cut, not a test's decision
        probability[i] = record.probability
        if record.by_index is not None:
            eliminated_by[i] = record.by_index
    results["n_splits_evaluated"] = n_evaluated.astype(np.int64)
    results["n_fits_failed"] = failed.sum(axis=1).astype(np.int64)
    results["eliminated_at"] = eliminated_at
    results["elimination_reason"] = reason
    results["eliminated_by"] = eliminated_by
    results["elimination_probability"] = probability
    # The largest training size each candidate was fitted on (HalvingGridSearchCV has the
    # same key, per iteration); with resource="splits" the full training parts.
    reached = np.zeros(n_cand, dtype=np.int64)
    for c, s in outcomes:
        reached[c] = max(reached[c], int(n_resources[s]))
    results["n_resources"] = reached
    if by_largest_size:
        # Rank on the largest training size: among candidates that went equally far, the
        # mean over the splits of the largest size they reached (Halving's last
        # iteration), not a mean mixing subsample sizes.
        for name in names:
            top = top_level_mean(results, name, n_resources, reached, evaluated)
            results[f"rank_test_{name}"] = stage_rank(results["n_splits_evaluated"], top)
    return results, evaluated


def masked_param_arrays(candidates: list[dict]) -> dict[str, np.ma.MaskedArray]:
    """``param_<name>`` columns: one masked entry per candidate, masked where it is unset."""
    names = sorted({name for params in candidates for name in params})
    columns = {}
    for name in names:
        present = [name in params for params in candidates]
        values = [params.get(name) for params in candidates]
        column = np.empty(len(candidates), dtype=object)
        column[:] = values
        if all(present):
            try:
                typed = np.asarray(values)
                if typed.ndim == 1 and typed.dtype.kind in "biufUS":
                    column = typed
            except (ValueError, TypeError):
                pass
        columns[f"param_{name}"] = np.ma.MaskedArray(column, mask=[not p for p in present])
    return columns


def mean_std_over(array, evaluated, n_evaluated):
    """Mean and (population) std of each row over its evaluated entries only.

    A failed fit scored as NaN stays in and makes the mean NaN, as in ``GridSearchCV``;
    an entry the race never ran is left out.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        filled = np.where(evaluated, array, 0.0)
        mean = filled.sum(axis=1) / n_evaluated
        dev = np.where(evaluated, array - mean[:, None], 0.0)
        std = np.sqrt((dev**2).sum(axis=1) / n_evaluated)
    return mean, std


def stage_rank(n_evaluated: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Rank 1 = best: first by splits evaluated (more is better), then by mean score.

    Candidates eliminated at the same stage saw the same splits, so their means are comparable;
    means over different sets of splits are never compared. NaN means (failed fits) rank last
    within their stage, ties share the smallest rank (``method="min"``, as scikit-learn).
    """
    filled = np.where(np.isnan(mean), -np.inf, mean)
    order = np.lexsort((-filled, -n_evaluated))
    ranks = np.empty(len(mean), dtype=np.int32)
    previous = None
    for position, i in enumerate(order, start=1):
        key = (n_evaluated[i], filled[i])
        if key != previous:
            current = position
            previous = key
        ranks[i] = current
    return ranks


def top_level_mean(results, name, n_resources, reached, evaluated):
    """Each candidate's mean ``name`` test score over the splits it was evaluated on at the
    largest training size it reached (a failed fit scored NaN makes it NaN, as every mean)."""
    out = np.full(len(reached), np.nan)
    scores = np.column_stack([results[f"split{k}_test_{name}"] for k in range(len(n_resources))])
    for c in range(len(reached)):
        mask = evaluated[c] & (n_resources == reached[c])
        if mask.any():
            out[c] = scores[c, mask].mean()
    return out


def warn_fit_failures(failures, n_fits, error_score):
    messages: dict[str, int] = {}
    for _unit, message in failures:
        messages[message] = messages.get(message, 0) + 1
    details = "\n".join(
        f"{count} fits failed with the following error:\n{message}"
        for message, count in messages.items()
    )
    warnings.warn(
        f"\n{len(failures)} fits failed out of a total of {n_fits}.\n"
        f"The score on these train-test partitions for these parameters will be set to "
        f"{error_score}.\nIf these failures are not expected, you can try to debug them by "
        f"setting error_score='raise'.\n\n{details}",
        FitFailedWarning,
        # warn_fit_failures < RaceSearchCV._store_results < fit < its _fit_context wrapper <
        # the caller
        stacklevel=5,
    )
