"""Cross-validation inside each of several data sets, for ``RaceSearchCV(test="hierarchical")``.

A scikit-learn search sees one ``X``. Several data sets that share a feature space (sites,
hospitals, subjects, years, sensors) are stacked into that ``X`` and named by ``groups`` (one
data-set label per sample), and :class:`WithinGroupKFold` runs k-fold CV *inside* each data
set: every split trains and tests on one data set only. The race's instances are then
(data set, fold) pairs, which is what Corani et al.'s (2017) hierarchical model compares candidates over
(``docs/stats-hierarchical.md``, "In a race"; ``docs/sklearn.md``). scikit-learn's own
``GroupKFold`` is the opposite (it keeps each group out of the training set).
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold

from racer._validation import check_bool, check_int

__all__ = ["WithinGroupKFold", "split_datasets"]


class WithinGroupKFold:
    """K-fold cross-validation inside each group (data set) of the samples.

    For every distinct label of ``groups`` the samples with that label are split by
    ``KFold`` (``StratifiedKFold`` with ``stratified=True``); the splits are listed fold by
    fold (fold 0 of every data set, then fold 1, ...). Each split's training and test parts
    lie in one data set. ``RaceSearchCV`` repeats it with ``shuffle=True`` and a fresh
    ``random_state`` per repeat, as any splitter with those options.

    Parameters
    ----------
    n_splits : int >= 2, default 5
        Folds per data set (each data set needs at least that many samples).
    shuffle : bool, default False
    random_state : None or int
        As in ``KFold``; the data sets get different streams from the one seed.
    stratified : bool, default False
        Stratify each data set's folds by ``y`` (classification).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((12, 1)); groups = ["a"] * 6 + ["b"] * 6
    >>> cv = WithinGroupKFold(n_splits=3)
    >>> cv.get_n_splits(X, groups=groups)
    6
    >>> [sorted(set(np.take(groups, test).tolist())) for _, test in cv.split(X, groups=groups)]
    [['a'], ['b'], ['a'], ['b'], ['a'], ['b']]
    """

    def __init__(self, n_splits=5, *, shuffle=False, random_state=None, stratified=False):
        self.n_splits = n_splits
        self.shuffle = shuffle
        self.random_state = random_state
        self.stratified = stratified

    def __repr__(self) -> str:
        return (f"WithinGroupKFold(n_splits={self.n_splits}, shuffle={self.shuffle}, "
                f"random_state={self.random_state}, stratified={self.stratified})")

    def _labels(self, X, groups):
        if groups is None:
            raise ValueError(
                "WithinGroupKFold needs `groups` (one data-set label per sample), e.g. "
                "search.fit(X, y, groups=data_set_of_each_sample)"
            )
        groups = np.asarray(groups)
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        if groups.shape != (n,):
            raise ValueError(
                f"`groups` must hold one label per sample ({n}); got shape {groups.shape}"
            )
        return groups, list(dict.fromkeys(groups.tolist()))

    def get_n_splits(self, X=None, y=None, groups=None):
        n_splits = check_int(self.n_splits, "n_splits", minimum=2)
        if groups is None:
            raise ValueError("WithinGroupKFold.get_n_splits needs `groups`")
        return n_splits * len(set(np.asarray(groups).tolist()))

    def split(self, X, y=None, groups=None):
        n_splits = check_int(self.n_splits, "n_splits", minimum=2)
        shuffle = check_bool(self.shuffle, "shuffle")
        stratified = check_bool(self.stratified, "stratified")
        groups, labels = self._labels(X, groups)
        if stratified and y is None:
            raise ValueError("WithinGroupKFold(stratified=True) needs `y`")
        seeds = (np.random.default_rng(self.random_state).integers(0, 2**31 - 1, len(labels))
                 if shuffle else [None] * len(labels))
        per_group = []
        for label, seed in zip(labels, seeds):
            members = np.flatnonzero(groups == label)
            if members.size < n_splits:
                raise ValueError(
                    f"data set {label!r} has {members.size} samples, fewer than "
                    f"n_splits={n_splits}"
                )
            kind = StratifiedKFold if stratified else KFold
            inner = kind(n_splits, shuffle=shuffle, random_state=None if seed is None
                         else int(seed))
            target = None if y is None else np.asarray(y)[members]
            per_group.append([(members[tr], members[te])
                              for tr, te in inner.split(members, target)])
        for fold in range(n_splits):
            for splits in per_group:
                yield splits[fold]


def split_datasets(splits, groups) -> tuple:
    """The data set of each ``(train, test)`` split: the one label its samples share.

    Raises ValueError when a split's samples come from several data sets (use a splitter
    that cross-validates inside each data set, such as :class:`WithinGroupKFold`).

    >>> split_datasets([([0, 1], [2]), ([3], [4, 5])], ["a", "a", "a", "b", "b", "b"])
    ('a', 'b')
    """
    if groups is None:
        raise ValueError(
            "test='hierarchical' needs `groups` in fit (one data-set label per sample) and a "
            "splitter that cross-validates inside each data set, e.g. "
            "RaceSearchCV(..., test='hierarchical', cv=WithinGroupKFold(10)).fit(X, y, "
            "groups=data_set_of_each_sample)"
        )
    groups = np.asarray(groups)
    out = []
    for k, (train, test) in enumerate(splits):
        labels = set(groups[np.asarray(train)].tolist()) | set(groups[np.asarray(test)].tolist())
        if len(labels) != 1:
            shown = sorted(map(repr, labels))[:4]
            raise ValueError(
                f"split {k} mixes samples of {len(labels)} data sets ({', '.join(shown)}); "
                "test='hierarchical' needs every split inside one data set (cv="
                "WithinGroupKFold(...))"
            )
        out.append(labels.pop())
    return tuple(out)
