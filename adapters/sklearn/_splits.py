"""The splits a :class:`~racer.adapters.sklearn.RaceSearchCV` race visits, what each fit trains on.

The race's instances are cross-validation splits. :func:`plan_splits` lists them once
(:func:`materialise_splits`: the base splitter, repeated with fresh seeds), orders them
(:func:`visit_order`: repeat by repeat) and sizes the training part of each
(:func:`resource_schedule`: whole, or growing subsamples for ``resource="n_samples"``).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import warnings
from typing import Any

import numpy as np

from racer._validation import describe
from racer.adapters.sklearn.datasets import split_datasets

__all__ = ["SplitPlan", "materialise_splits", "plan_splits", "resource_schedule", "visit_order"]


def splitter_accepts(splitter: Any, name: str) -> bool:
    try:
        return name in inspect.signature(type(splitter).__init__).parameters
    except (TypeError, ValueError):
        return False


def materialise_splits(cv, X, y, groups, n_repeats: int, rng: np.random.Generator):
    """List every (train, test) split once, with the repeat each came from.

    ``n_repeats == 1`` uses ``cv`` exactly as given, so that a race too short to test matches
    ``GridSearchCV(cv=cv)`` split for split. With more repeats every repeat is a copy of the
    splitter with ``shuffle=True`` (where it has that option) and its own ``random_state``: this
    keeps stratification and grouping (``StratifiedKFold``, ``GroupKFold``,
    ``StratifiedGroupKFold``, ``ShuffleSplit``...) while giving new partitions. A splitter with
    no ``random_state`` (``LeaveOneGroupOut``, ``TimeSeriesSplit``, a list of splits) would
    repeat identical splits, so it is used once and a warning says so.

    Returns the list of splits, the repeat index of each, and the number of repeats used.
    """
    randomisable = splitter_accepts(cv, "random_state") and hasattr(cv, "random_state")
    if n_repeats > 1 and not randomisable:
        warnings.warn(
            f"`cv`={describe(cv)} has no random_state, so repeating it would only duplicate "
            f"its splits; n_repeats={n_repeats} is ignored and each split is used once.",
            UserWarning,
            # materialise_splits < plan_splits < RaceSearchCV._plan_splits < fit < its
            # _fit_context wrapper < the caller
            stacklevel=6,
        )
        n_repeats = 1
    if n_repeats == 1:
        splitters = [cv]
    else:
        seeds = rng.integers(0, 2**31 - 1, size=n_repeats)
        splitters = []
        for seed in seeds:
            repeat = copy.deepcopy(cv)
            if splitter_accepts(repeat, "shuffle") and hasattr(repeat, "shuffle"):
                repeat.shuffle = True
            repeat.random_state = int(seed)
            splitters.append(repeat)
    splits, repeat_of_split = [], []
    for r, splitter in enumerate(splitters):
        for train, test in splitter.split(X, y, groups):
            splits.append((np.asarray(train), np.asarray(test)))
            repeat_of_split.append(r)
    if not splits:
        raise ValueError(f"`cv`={describe(cv)} yielded no splits")
    return splits, np.asarray(repeat_of_split, dtype=np.int64), n_repeats


def visit_order(repeat_of_split: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Order in which the race visits the splits: repeat by repeat, folds shuffled within.

    Finishing one repeat before starting the next means that, once a race has seen as many
    splits as there are folds, every sample has been in a test set exactly once: the early
    means are ordinary k-fold estimates rather than averages over overlapping test sets.
    """
    order = []
    for r in np.unique(repeat_of_split):
        members = np.flatnonzero(repeat_of_split == r)
        order.append(rng.permutation(members))
    return np.concatenate(order)


def resource_schedule(splits, repeat_of_split, n_repeats, resource, min_resources, factor,
                       y_strata, rng: np.random.Generator):
    """Training-set sizes per split and the splits the fits actually use.

    ``resource="splits"``: every fit trains on its split's whole training part. With
    ``resource="n_samples"`` the splits of repeat ``r`` (the race visits repeat by repeat, see
    :func:`visit_order`) train on ``min(n_train, min_resources * factor**r)`` samples drawn
    without replacement from their training part (stratified for classifiers, through
    scikit-learn's public ``resample``); ``min_resources="exhaust"`` picks the smallest
    first size whose last repeat trains on everything, as ``HalvingGridSearchCV`` does for
    its last iteration. Test parts are never subsampled, so every score is comparable
    within a split, which is all the rank tests compare.

    Returns ``(n_resources, fit_splits)``: one training size per split and the (possibly
    subsampled) ``(train, test)`` pairs.
    """
    from sklearn.utils import resample

    n_train = np.array([len(train) for train, _ in splits])
    if resource == "splits":
        return n_train.astype(np.int64), splits
    if min_resources == "exhaust":
        first = int(np.ceil(n_train.min() / float(factor) ** (n_repeats - 1)))
        if y_strata is not None:
            # HalvingGridSearchCV's "smallest" floor (2 samples per class and fold): below it
            # a classifier's scores say little about the same classifier on the full data.
            n_folds = len(splits) // n_repeats
            first = max(first, 2 * len(np.unique(y_strata)) * n_folds)
        first = min(first, int(n_train.min()))
    else:
        first = int(min_resources)
        if first > n_train.min():
            raise ValueError(
                f"`min_resources`={min_resources!r} exceeds the smallest training part of the "
                f"splits ({int(n_train.min())} samples)"
            )
    sizes = np.minimum(n_train, np.ceil(first * float(factor) ** repeat_of_split)).astype(np.int64)
    fit_splits = []
    for (train, test), size in zip(splits, sizes):
        if size >= len(train):
            fit_splits.append((train, test))
            continue
        seed = int(rng.integers(0, 2**31 - 1))
        strata = None if y_strata is None else np.asarray(y_strata)[train]
        try:
            sub = resample(train, replace=False, n_samples=int(size), random_state=seed,
                           stratify=strata)
        except ValueError:
            # Too few samples for every class (or a class with a single member): plain draw.
            sub = resample(train, replace=False, n_samples=int(size), random_state=seed)
        fit_splits.append((np.sort(np.asarray(sub)), test))
    return sizes, fit_splits


@dataclasses.dataclass(frozen=True)
class SplitPlan:
    """What :func:`plan_splits` decides: every materialised split (``splits``, split ``k`` at
    position ``k``), the ``(train, test)`` pairs the fits use (``fit_splits``: the training
    parts possibly subsampled), the repeats used, the visit order, the training size of each
    split's fits and, for the hierarchical test, the data set of each split."""

    splits: list
    fit_splits: list
    n_repeats: int
    order: np.ndarray
    n_resources: np.ndarray
    datasets: tuple | None


def plan_splits(cv, X, y, groups, *, n_repeats, resource, min_resources, factor, y_strata,
                by_dataset, rngs) -> SplitPlan:
    """List, order and size the splits; ``rngs`` holds one generator for the repeats' seeds,
    one for the visit order and one for the subsamples, so each use keeps its own stream."""
    seed_splits, seed_order, seed_subsample = rngs
    splits, repeat_of_split, n_repeats = materialise_splits(cv, X, y, groups, n_repeats,
                                                            seed_splits)
    order = visit_order(repeat_of_split, seed_order)
    # What the fits train on: the whole training part of each split, or (resource=
    # "n_samples") a subsample of it that grows with the repeat the split belongs to.
    n_resources, fit_splits = resource_schedule(
        splits, repeat_of_split, n_repeats, resource, min_resources, factor, y_strata,
        seed_subsample,
    )
    return SplitPlan(splits=splits, fit_splits=fit_splits, n_repeats=n_repeats, order=order,
                     n_resources=n_resources,
                     datasets=split_datasets(splits, groups) if by_dataset else None)
