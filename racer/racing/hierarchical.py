"""Racing over several data sets with folds inside: Corani et al.'s (2017) hierarchical model in a race.

When a race's instances are ``(data set, fold)`` pairs -- k-fold cross-validation run on each
of several data sets -- its rows are not exchangeable: folds of one data set share most of
their training data (their differences are correlated, ``rho = 1/k``) and data sets differ
from each other. A rank or sign test that treats every row as an independent instance answers
"which candidate wins on more rows", and is overconfident about "which candidate is better on
a data set like these". Corani et al.'s (2017) hierarchical model
(:func:`racer.stats.hierarchical_test`) answers the second question, with a rope.

:class:`HierarchicalRacingTest` uses it where it matters and keeps the step cheap: a fit
costs ~0.1 s for 10 data sets x 10 folds (4 chains x (500 + 1000)), so the model compares
only the leader with the few survivors closest to it (``top``); a cheap ``base`` racing test
eliminates the clear losers among the rest. :func:`instance_groups` maps instances to their
data sets, and :meth:`racer.RaceResult.hierarchical_comparison` compares two candidates of a
finished race with the full model. The decision and its measurements are in
``docs/stats-hierarchical.md`` ("In a race").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from racer._validation import check_int, check_nonnegative, check_probability
from racer.racing.base import Elimination, RacingTest
from racer.racing.posterior_best import OPTIONS_BEFORE_ISSUE_20, PosteriorBestTest

__all__ = ["HierarchicalRacingTest", "instance_groups"]


def instance_groups(instances: Sequence, group: Any = None) -> list:
    """The data set of each instance.

    Parameters
    ----------
    instances : sequence
        The race's instances, in row order.
    group : None, int, mapping, sequence or callable
        How an instance names its data set. None or an int ``k``: the instance is a sequence
        (a ``(data set, fold)`` tuple) and its data set is ``instance[k]`` (``k = 0`` for
        None). A mapping or a sequence: ``group[instance]`` (e.g. split index -> data set,
        what :class:`racer.adapters.sklearn.RaceSearchCV` passes). A callable:
        ``group(instance)``.

    Returns
    -------
    list of hashable labels, one per instance.

    Examples
    --------
    >>> instance_groups([("iris", 0), ("wine", 0), ("iris", 1)])
    ['iris', 'wine', 'iris']
    >>> instance_groups([0, 1, 2], group=["a", "a", "b"])
    ['a', 'a', 'b']
    """
    if group is None:
        group = 0
    if isinstance(group, (int, np.integer)) and not isinstance(group, bool):
        key = int(group)

        def label_of(inst):
            try:
                return inst[key]
            except (TypeError, IndexError, KeyError) as exc:
                raise ValueError(
                    f"`group`={key}: instance {inst!r} has no item {key}; with group=None or "
                    "an int, instances must be (data set, fold) sequences (or pass a mapping "
                    "or a callable as `group`)"
                ) from exc
    elif isinstance(group, (Mapping, Sequence)) and not isinstance(group, (str, bytes)):
        def label_of(inst):
            try:
                return group[inst]
            except (TypeError, IndexError, KeyError) as exc:
                raise ValueError(f"`group` has no data set for instance {inst!r}") from exc
    elif callable(group):
        label_of = group
    else:
        raise TypeError(
            "`group` must be None, an int (position of the data set in each instance), a "
            f"mapping or sequence (instance -> data set) or a callable; got {group!r}"
        )
    labels = [label_of(inst) for inst in instances]
    for label in labels:
        try:
            hash(label)
        except TypeError as exc:
            raise TypeError(
                f"data-set labels must be hashable (a name or a number); got {label!r}"
            ) from exc
    return labels


def _usable_rows(labels: list) -> tuple[np.ndarray, int]:
    """Rows of data sets with >= 2 folds so far (the model needs a within-data-set spread)."""
    counts: dict = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    keep = np.array([counts[label] >= 2 for label in labels], dtype=bool)
    return keep, sum(1 for c in counts.values() if c >= 2)


def _group_codes(labels: list) -> tuple[np.ndarray, int]:
    """Each row's data set as a code ``0 .. n_groups - 1`` (in order of first appearance),
    and ``n_groups``."""
    index = {label: k for k, label in enumerate(dict.fromkeys(labels))}
    return np.array([index[label] for label in labels]), len(index)


def _order_by_group_means(scores: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Candidates, best first, by the mean over data sets of their per-data-set mean, so that
    a data set with more folds raced does not weigh more (the model's delta0 is a mean over
    data sets); ties keep the earlier candidate."""
    sums = np.zeros((n_groups, scores.shape[1]))
    np.add.at(sums, codes, scores)
    counts = np.bincount(codes, minlength=n_groups)[:, None]
    return np.argsort(-(sums / counts).mean(axis=0), kind="stable")


@dataclasses.dataclass(eq=False)
class HierarchicalRacingTest(RacingTest):
    """Racing test for instances that are (data set, fold) pairs: Corani et al.'s (2017) model at the top.

    At each step the survivors are ordered by their mean over data sets of their per-data-set
    mean score. The leader is compared with each of the next ``top - 1`` survivors by
    :func:`racer.stats.hierarchical_test` on the differences ``other - leader``, grouped by
    data set (only data sets with at least two folds so far; at least two such data sets,
    else no comparison): with ``P(left) >= credibility`` the other is eliminated as
    ``"dominated"`` by the leader, with ``P(rope) >= credibility`` as ``"indistinguishable"``
    from it, and with ``P(right) >= credibility`` the leader is eliminated as dominated by it
    (``P`` are the paper's §3.2 probabilities, ``prob_left/rope/right``). The survivors
    below the top are left to ``base``, a cheap test over the rows; its eliminations of
    candidates in the top are ignored (there the hierarchical model decides).

    Parameters
    ----------
    test_fraction : float in (0, 1)
        ``n_test / (n_train + n_test)`` of one fold (``1/k`` for k-fold CV): the correlation
        of the differences within a data set.
    rope : float >= 0, default 0.01
        Half-width of the region of practical equivalence, in score units (the model
        assumes scores in [0, 1], e.g. accuracy).
    group : None, int, mapping, sequence or callable, default None
        How an instance names its data set (:func:`instance_groups`); None: instances are
        ``(data set, fold)`` tuples. With ``storage``, prefer None, an int or a plain
        container: their repr, stored in the journal, is stable between runs.
    credibility : float in (0, 1), default 0.95
        Posterior probability an elimination needs (the paper's 0.95).
    top : int >= 2 or None, default 4
        Survivors decided by the hierarchical model (the leader and the ``top - 1`` next);
        None: all of them (one fit per survivor and step).
    base : RacingTest or None, default PosteriorBestTest(**OPTIONS_BEFORE_ISSUE_20)
        Decides for the survivors outside the top; None: they are kept. The default is
        :class:`PosteriorBestTest` as it was before its endgame stop (``OPTIONS_BEFORE_ISSUE_20``),
        so this test's decisions did not change with the default test's endgame.
    n_warmup, n_draws, max_retries : int, default 500, 1000, 1
        Passed to :func:`racer.stats.hierarchical_test` (half its defaults: its convergence
        gate, R-hat < 1.01 and bulk ESS >= 400, still applies). A comparison that does not
        converge decides nothing at that step.

    Notes
    -----
    A data set on which the two candidates' differences are all equal (they tie on every
    fold) is given a spread of ``N(0, s^2)`` with ``s = rope / 100`` (``1e-8`` when
    ``rope = 0``) drawn from the step's generator, so that identical candidates are found
    equivalent instead of making the model refuse. The random stream of each step comes
    from the engine, so a resumed race decides exactly like an uninterrupted one.

    References
    ----------
    .. [1] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.

    Examples
    --------
    Eight data sets x 10 folds; candidate 2 is worse by 0.05 everywhere, 0 and 1 are alike:

    >>> import numpy as np
    >>> from racer import RaceView
    >>> rng = np.random.default_rng(0)
    >>> level = rng.uniform(0.7, 0.9, 8)                 # each data set's accuracy level
    >>> instances = [(d, f) for f in range(10) for d in range(8)]
    >>> base = np.array([level[d] for d, _ in instances])
    >>> scores = base[:, None] + [0.0, 0.0, -0.05] + rng.normal(0, 0.02, (80, 3))
    >>> view = RaceView.from_scores(scores, instances=instances)
    >>> out = HierarchicalRacingTest(test_fraction=0.1).decide(view, rng)
    >>> [(e.index, e.reason) for e in out]
    [(2, 'dominated')]
    """

    elimination_statistic = "posterior probability"  # below the top: `base`'s

    test_fraction: float
    rope: float = 0.01
    group: Any = None
    credibility: float = 0.95
    top: int | None = 4
    base: RacingTest | None = dataclasses.field(
        default_factory=lambda: PosteriorBestTest(**OPTIONS_BEFORE_ISSUE_20))
    n_warmup: int = 500
    n_draws: int = 1000
    max_retries: int = 1

    def __post_init__(self):
        self.test_fraction = check_probability(self.test_fraction, "test_fraction")
        self.rope = check_nonnegative(self.rope, "rope")
        self.credibility = check_probability(self.credibility, "credibility")
        self.top = check_int(self.top, "top", minimum=2, allow_none=True)
        if self.base is not None and not isinstance(self.base, RacingTest):
            raise TypeError(f"`base` must be a RacingTest or None; got {self.base!r}")
        self.n_warmup = check_int(self.n_warmup, "n_warmup", minimum=0)
        self.n_draws = check_int(self.n_draws, "n_draws", minimum=10)
        self.max_retries = check_int(self.max_retries, "max_retries", minimum=0)
        if not (self.group is None or callable(self.group)
                or isinstance(self.group, (int, np.integer, Mapping, Sequence))) \
                or isinstance(self.group, (bool, str, bytes)):
            raise TypeError(
                "`group` must be None, an int, a mapping or sequence (instance -> data set) "
                f"or a callable; got {self.group!r}"
            )

    def decide(self, view, rng):
        if view.instances is None:
            raise ValueError(
                "HierarchicalRacingTest needs the instances of the rows (RaceView.instances) "
                "to group folds by data set; a race provides them, RaceView.from_scores takes "
                "`instances=`"
            )
        # Separate streams for base and the fits (Generator.spawn needs numpy >= 1.25).
        base_rng, model_rng = (np.random.default_rng(int(seed))
                               for seed in rng.integers(0, 2**63 - 1, size=2))
        labels = instance_groups(view.instances, self.group)
        codes, n_groups = _group_codes(labels)
        order = _order_by_group_means(view.scores, codes, n_groups)
        top = order if self.top is None else order[: self.top]

        out = []
        if self.base is not None and len(top) < view.scores.shape[1]:
            in_top = set(int(c) for c in top)
            out = [dec for dec in self.base.decide(view, base_rng) or ()
                   if int(dec.index) not in in_top]

        keep, n_usable = _usable_rows(labels)
        if n_usable < 2:
            return out
        rows = np.flatnonzero(keep)
        leader = int(top[0])
        found = []
        for other in (int(c) for c in top[1:]):
            dec = self._compare(view.scores, rows, labels, codes, n_groups, leader, other,
                                model_rng)
            if dec is not None:
                found.append(dec)
        if any(e.index == leader for e in found):
            # Equivalence to a leader that leaves is no reason to leave; dominance by it is
            # (the other is then worse than a candidate that beats the leader).
            found = [e for e in found if e.reason != "indistinguishable"]
        return out + found

    def _compare(self, scores, rows, labels, codes, n_groups, leader, other, rng):
        """The elimination that :func:`racer.stats.hierarchical_test` on the ``rows`` of
        ``other - leader`` supports, or None (no conclusion, or no comparison this step)."""
        from racer.stats import ConvergenceError, hierarchical_test
        from racer.stats._hierarchical import jitter_constant_groups, jitter_scale

        kept_labels = [labels[r] for r in rows]
        diffs = scores[rows, other] - scores[rows, leader]
        diffs = jitter_constant_groups(diffs, kept_labels, jitter_scale(self.rope), rng)
        used = np.unique(codes[rows])
        means = (np.bincount(codes[rows], weights=diffs, minlength=n_groups)[used]
                 / np.bincount(codes[rows], minlength=n_groups)[used])
        if np.ptp(means) == 0.0:
            return None  # the prior bound of sigma0 would be 0; no comparison this step
        try:
            res = hierarchical_test(
                diffs, self.test_fraction, self.rope, groups=kept_labels,
                n_warmup=self.n_warmup, n_draws=self.n_draws,
                max_retries=self.max_retries, random_state=rng,
            )
        except ConvergenceError:
            return None  # the gate refused an answer: decide nothing about this pair now
        if res.prob_left >= self.credibility:
            return Elimination(other, "dominated", leader, res.prob_left)
        if res.prob_rope >= self.credibility:
            return Elimination(other, "indistinguishable", leader, res.prob_rope)
        if res.prob_right >= self.credibility:
            return Elimination(leader, "dominated", other, res.prob_right)
        return None
