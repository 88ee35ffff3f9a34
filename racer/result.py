"""What a race returns: the winner, the survivors, the scores and the audit trail of decisions.

:class:`RaceResult` is built by :meth:`racer.Race.result` (with :meth:`RaceResult._from_race`,
which holds the winner rule and the ordering); users do not construct it. It holds
the candidates as the objects the user passed (dicts are fine, nothing needs to be hashable),
the full score matrix (instances x candidates, NaN where an evaluation was not run or failed)
and one :class:`EliminationRecord` per eliminated candidate, so a race can be audited after
the fact: who left, when, why, beaten or matched by whom, and with what probability.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from racer._text import short_repr
from racer.stats._ranks import block_ranks

if TYPE_CHECKING:
    from racer._scores import ScoreTable

__all__ = ["EliminationRecord", "RaceResult"]


@dataclasses.dataclass(frozen=True)
class EliminationRecord:
    """One eliminated candidate.

    Attributes
    ----------
    candidate : object
        The eliminated candidate, as passed by the user.
    candidate_index : int
        Its position in the race's candidate list.
    n_instances : int
        Instances it had been evaluated on when it was eliminated.
    reason : str
        ``"dominated"`` (worse than ``by``), ``"indistinguishable"`` (practically equivalent to
        ``by``, which is at least as good) or ``"failed"`` (an evaluation failed under
        ``on_error="eliminate"``; ``by`` is then None).
    by : object or None
        The candidate that beat or matched it, as passed by the user.
    by_index : int or None
        Position of ``by`` in the candidate list.
    probability : float
        The number behind the decision as reported by the test (a posterior probability for
        Bayesian tests, a p-value for frequentist ones); NaN for failures.
    step : int
        The test step (1 = first test of the race) that made the decision; 0 for failures
        handled before any test of that block.
    """

    candidate: Any
    candidate_index: int
    n_instances: int
    reason: str
    by: Any
    by_index: int | None
    probability: float
    step: int

    def __repr__(self) -> str:
        by = "" if self.by_index is None else f", by={short_repr(self.by, 48)}"
        return (
            f"EliminationRecord(candidate={short_repr(self.candidate, 48)}, "
            f"n_instances={self.n_instances}, reason={self.reason!r}{by}, "
            f"probability={self.probability:.4g})"
        )


@dataclasses.dataclass(frozen=True, repr=False)
class RaceResult:
    """The outcome of a race.

    Attributes
    ----------
    best : object
        The winner: among the survivors, the best by the race's winner rule (``"mean"``:
        best mean score over all instances; ``"mean_rank"`` / ``"rank_sum"``: best mean /
        sum of within-instance ranks among the survivors; by default the rule the test
        states, see :class:`racer.Race`). Ties go to the earlier candidate. A candidate whose every
        evaluation failed is never the winner (see "Failures" in docs/racing.md).
    best_index : int
        Position of ``best`` in ``candidates``.
    survivors : list
        The candidates still in the race when it stopped, best first (those without a single
        usable score last).
    survivor_indices : ndarray of int
        Their positions in ``candidates``.
    ranking : list
        Every candidate, best first: survivors in winner order, then eliminated candidates
        by the number of instances they saw (more is better, as in irace), then by mean score
        over the instances they saw; candidates whose every evaluation failed come last
        (survivors first among them).
    ranking_indices : ndarray of int
        Positions of ``ranking`` in ``candidates``.
    candidates : list
        The candidates as passed by the user.
    instances : list
        The instances in the order they were raced (row order of ``scores``).
    scores : ndarray of shape (n_instances, n_candidates)
        Raw scores as returned by ``evaluate`` (not negated), NaN where not run or failed.
    mean_scores : ndarray of shape (n_candidates,)
        Mean raw score of each candidate over the instances it was evaluated on, failures
        counted at their substitute value under ``on_error="worst"`` and left out otherwise.
    n_evaluated : ndarray of int, shape (n_candidates,)
        Evaluations of each candidate (failures included): the instances it saw.
    n_evaluations : int
        Evaluations spent (failures included).
    n_instances : int
        Instances started (raced).
    history : tuple of EliminationRecord
        One record per eliminated candidate, in order of elimination.
    failures : tuple of (candidate_index, instance_index, message)
        Every failed evaluation, by instance then candidate.
    stop_reason : str
        ``"min_survivors"``, ``"budget"``, ``"max_instances"`` or ``"instances_exhausted"``
        (``"running"`` for the result of an unfinished race).
    maximize : bool
        Whether larger scores were better (``direction == "maximize"``).
    budget : int or None
        The evaluation budget given.
    seed : int
        The race seed (the test at step ``k`` received ``numpy.random.default_rng([seed, k])``).
    n_instances_available : int or None
        Instances the race could have raced: every instance given (all its sources have a
        length), capped at ``max_instances``; ``max_instances`` alone for an endless or
        unsized iterator; None when that is unknown too. The cost of running every candidate
        on all of them is what :meth:`summary` compares the race's cost with.
    pareto_front_indices : ndarray of int
        Positions of :attr:`pareto_front`: in a race on several objectives, the survivors
        whose mean score vector (over the instances every survivor saw, failures at their
        imputed value) no other survivor's dominates, in survivor order; with one objective,
        the winner alone (a result read from a journal holds the same:
        :func:`racer.storage.result_from_journal`; None only in a result built without it).
    directions : tuple of str or None
        One direction per objective in a race on several objectives (``best``,
        ``mean_scores``, ``scores`` and the ranking then follow the first one); else None.
    objective_scores : ndarray (n_instances, n_candidates, k) or None
        Raw scores of every objective as returned by ``evaluate``, NaN where not run or failed.
    mean_objective_scores : ndarray (n_candidates, k) or None
        Each candidate's mean per objective, as :attr:`mean_scores` is for one.

    References
    ----------
    .. [1] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.

    Examples
    --------
    >>> from racer import Elimination, Race, RacingTest
    >>> class DropWorst(RacingTest):
    ...     def decide(self, view, rng):
    ...         means = view.scores.mean(axis=0)
    ...         return [Elimination(int(means.argmin()), "dominated", int(means.argmax()), 1.0)]
    ...     def get_params(self):
    ...         return {}
    >>> loss = lambda c, i: abs(c["lr"] - 0.3) + 0.01 * i  # minimised (the default direction)
    >>> res = Race([{"lr": 0.1}, {"lr": 0.2}, {"lr": 0.3}], test=DropWorst(), first_test=2,
    ...            random_state=0).run(loss, range(10), progress=False)
    >>> res.best, res.n_evaluations, [h.n_instances for h in res.history]
    ({'lr': 0.3}, 8, [2, 3])
    >>> res.history[0]
    EliminationRecord(candidate={'lr': 0.1}, n_instances=2, reason='dominated', by={'lr': 0.3}, probability=1)
    """

    best: Any
    best_index: int
    survivors: list
    survivor_indices: np.ndarray
    ranking: list
    ranking_indices: np.ndarray
    candidates: list
    instances: list
    scores: np.ndarray
    mean_scores: np.ndarray
    n_evaluated: np.ndarray
    n_evaluations: int
    n_instances: int
    history: tuple
    failures: tuple
    stop_reason: str
    maximize: bool
    budget: int | None
    seed: int
    n_instances_available: int | None = None
    pareto_front_indices: np.ndarray | None = None
    directions: tuple | None = None
    objective_scores: np.ndarray | None = None
    mean_objective_scores: np.ndarray | None = None

    @classmethod
    def _from_race(
        cls,
        table: ScoreTable,
        *,
        candidates: list,
        instances: list,
        survivors: np.ndarray,
        winner: str,
        on_error: str,
        history: tuple,
        failures: list,
        n_evaluations: int,
        n_instances_available: int | None,
        stop_reason: str,
        budget: int | None,
        seed: int,
    ) -> RaceResult:
        """The result of a race (:meth:`racer.Race.result`) from its score table and state.

        Means: under ``on_error="worst"`` over every evaluation, failures at their imputed
        score; otherwise over the successful ones. Survivors are ordered by the ``winner``
        rule; eliminated candidates after them, by instances seen, then mean; candidates
        without a usable score last (see "Failures" in docs/racing.md). Ties go to the
        earlier candidate.
        """
        maximize = table.maximize
        n_rows = len(instances)
        raw = table.raw[:n_rows].copy()
        oriented = table.oriented[:n_rows]
        with np.errstate(invalid="ignore"):
            counts = np.sum(~np.isnan(oriented), axis=0)
            oriented_mean = np.where(
                counts > 0, np.nansum(oriented, axis=0) / np.maximum(counts, 1), np.nan
            )
            if on_error == "worst":
                mean_scores = oriented_mean if maximize else -oriented_mean
            else:
                raw_counts = np.sum(~np.isnan(raw), axis=0)
                mean_scores = np.where(
                    raw_counts > 0, np.nansum(raw, axis=0) / np.maximum(raw_counts, 1), np.nan
                )
        order = _order_survivors(table, survivors, oriented_mean, winner)
        surv_sorted = survivors[order]
        alive = np.zeros(len(candidates), dtype=bool)
        alive[survivors] = True
        eliminated = np.flatnonzero(~alive)
        key_mean = np.where(np.isnan(oriented_mean), -np.inf, oriented_mean)
        elim_sorted = eliminated[
            np.lexsort((eliminated, -key_mean[eliminated], -table.n_seen[eliminated]))
        ]
        # A candidate without a single usable score ranks after every one with some, and is
        # never the winner (see "Failures" in docs/racing.md). Stable, so the orders above
        # hold within each group; before any evaluation nothing moves.
        usable = table.usable
        if usable.any():
            surv_sorted = np.concatenate([surv_sorted[usable[surv_sorted]],
                                          surv_sorted[~usable[surv_sorted]]])
            ranking_idx = np.concatenate([
                surv_sorted[usable[surv_sorted]], elim_sorted[usable[elim_sorted]],
                surv_sorted[~usable[surv_sorted]], elim_sorted[~usable[elim_sorted]],
            ]).astype(np.int64)
        else:
            ranking_idx = np.concatenate([surv_sorted, elim_sorted]).astype(np.int64)
        best = int(ranking_idx[0])
        if usable.any() and not usable[surv_sorted[0]]:
            warnings.warn(
                f"no survivor has a usable score (every evaluation of the {len(survivors)} "
                f"survivors failed); the winner is the best eliminated candidate with one, "
                f"#{best} {short_repr(candidates[best], 80, stable=True)}",
                RuntimeWarning,
                stacklevel=3,  # the caller of Race.result()
            )
        return cls(
            best=candidates[best],
            best_index=best,
            survivors=[candidates[i] for i in surv_sorted],
            survivor_indices=surv_sorted.astype(np.int64),
            ranking=[candidates[i] for i in ranking_idx],
            ranking_indices=ranking_idx,
            candidates=list(candidates),
            instances=list(instances),
            scores=raw,
            mean_scores=np.asarray(mean_scores, dtype=np.float64),
            n_evaluated=table.n_seen.copy(),
            n_evaluations=n_evaluations,
            n_instances=n_rows,
            n_instances_available=n_instances_available,
            history=tuple(history),
            # Sorted (instance, candidate) so the result does not depend on arrival order.
            failures=tuple(sorted(failures, key=lambda f: (f[1], f[0]))),
            stop_reason=stop_reason,
            maximize=maximize,
            budget=budget,
            seed=seed,
            **_objective_fields(table, n_rows, on_error, surv_sorted, usable, best),
        )

    @property
    def pareto_front(self) -> list:
        """The surviving non-dominated candidates (:attr:`pareto_front_indices`), as passed.

        >>> import numpy as np, racer
        >>> res = racer.race(lambda c, i: (c, -c), [0, 1], range(5), progress=False,
        ...                  direction=["minimize", "minimize"], random_state=0)
        >>> res.pareto_front, res.directions     # a trade-off: both are Pareto-optimal
        ([0, 1], ('minimize', 'minimize'))
        """
        indices = self.pareto_front_indices
        if indices is None:  # a result built without it: one objective, the winner
            indices = [self.best_index]
        return [self.candidates[i] for i in indices]

    @property
    def direction(self) -> str:
        """``"maximize"`` or ``"minimize"``: the race's ``direction``."""
        return "maximize" if self.maximize else "minimize"

    def __repr__(self) -> str:
        return (
            f"RaceResult(best={short_repr(self.best, 48)}, survivors={len(self.survivors)}, "
            f"candidates={len(self.candidates)}, n_instances={self.n_instances}, "
            f"n_evaluations={self.n_evaluations}, stop_reason={self.stop_reason!r})"
        )

    def cost_text(self) -> str:
        """The race's cost against running every candidate on every instance, in one phrase.

        Compared with all the instances available (:attr:`n_instances_available`), which is
        what racing saves, and with the instances raced; says so when the instance set is
        endless or of unknown size.

        >>> import numpy as np
        >>> from racer import Elimination, Race, RacingTest
        >>> class DropWorst(RacingTest):
        ...     def decide(self, view, rng):
        ...         m = view.scores.mean(axis=0)
        ...         return [Elimination(int(m.argmin()), "dominated", int(m.argmax()), 1.0)]
        ...     def get_params(self):
        ...         return {}
        >>> res = Race([0, 1, 2], test=DropWorst(), first_test=2, random_state=0).run(
        ...     lambda c, i: c + 0.01 * i, range(10), progress=False)
        >>> res.cost_text()
        '8 evaluations: 27% of running all 3 candidates on all 10 instances (89% on the 3 instances raced)'
        """
        n_cand = len(self.candidates)
        head = f"{self.n_evaluations} evaluations"
        if self.n_instances == 0:
            return head
        raced = 100.0 * self.n_evaluations / (n_cand * self.n_instances)
        available = self.n_instances_available
        if available is None:
            return (
                f"{head}: {raced:.0f}% of running all {n_cand} candidates on the "
                f"{self.n_instances} instances raced (the instance set is endless or of "
                "unknown size)"
            )
        full = 100.0 * self.n_evaluations / (n_cand * available)
        if available == self.n_instances:
            return (f"{head}: {full:.0f}% of running all {n_cand} candidates on all "
                    f"{available} instances (every instance was raced)")
        return (
            f"{head}: {full:.0f}% of running all {n_cand} candidates on all {available} "
            f"instances ({raced:.0f}% on the {self.n_instances} instances raced)"
        )

    def summary(self, max_rows: int = 20) -> str:
        """A readable multi-line report: the winner, the race's cost, and the top of the ranking.

        ``max_rows`` (>= 0) limits the ranking table."""
        if isinstance(max_rows, bool) or not isinstance(max_rows, numbers.Integral):
            raise TypeError(f"`max_rows` must be an integer; got {short_repr(max_rows, 48)}")
        if max_rows < 0:
            raise ValueError(f"`max_rows` must be >= 0; got {max_rows}")
        n_cand = len(self.candidates)
        direction = "maximized" if self.maximize else "minimized"
        budget = "none" if self.budget is None else str(self.budget)
        lines = [
            f"Race over {n_cand} candidates, {self.n_instances} instances raced; budget {budget}.",
            f"Cost: {self.cost_text()}.",
            f"Stopped because: {_STOP_TEXT.get(self.stop_reason, self.stop_reason)}.",
            f"Best: {short_repr(self.best, 100)}  (mean score {self.mean_scores[self.best_index]:.6g}, "
            f"{direction})",
            f"Survivors: {len(self.survivors)}; eliminated: {len(self.history)} "
            f"({self._reason_counts()}); failed evaluations: {len(self.failures)}.",
            "",
        ]
        if self.directions is not None:
            front = " ".join(f"#{i}" for i in self.pareto_front_indices)
            lines.insert(-1, f"Objectives: {', '.join(self.directions)} (best, mean and the "
                             f"ranking follow the first); Pareto front: {front}.")
        records = {rec.candidate_index: rec for rec in self.history}
        n_seen = self.n_evaluated
        # The status names the eliminator by its number, the "#k" of the candidate column (and
        # of the HTML report): a repr cut to fit made every eliminator of a race over parameter
        # dicts read the same ("dominated by {'strategy': 'currenttobest1bin', 'm..."). An
        # eliminator saw at least as many instances, so it ranks above: it is in the table.
        width = min(60, max(len(short_repr(c, 60)) for c in self.candidates) + 1 + len(str(n_cand)))
        header = f"{'rank':>4}  {'mean':>11}  {'inst':>5}  {'candidate':<{width}}  status"
        lines.append(header)
        lines.append("-" * len(header))
        for rank, idx in enumerate(self.ranking_indices[:max_rows], start=1):
            rec = records.get(int(idx))
            if rec is None:
                status = "survivor" + (" (best)" if idx == self.best_index else "")
            elif rec.reason == "failed":
                status = "failed"
            else:
                status = f"{rec.reason} by #{rec.by_index} (p={rec.probability:.3g})"
            mean = self.mean_scores[idx]
            mean_text = "nan" if math.isnan(mean) else f"{mean:.5g}"
            candidate = f"#{idx} {short_repr(self.candidates[idx], 60)}"
            lines.append(
                f"{rank:>4}  {mean_text:>11}  {int(n_seen[idx]):>5}  {candidate:<{width}}  "
                f"{status}"
            )
        if n_cand > max_rows:
            lines.append(f"... {n_cand - max_rows} more")
        return "\n".join(lines)

    def hierarchical_comparison(self, a, b, test_fraction, rope=0.01, *, group=None,
                                random_state=None, **options):
        """Compare candidates ``a`` and ``b`` over data sets with Corani et al.'s (2017) hierarchical model.

        For a race whose instances are ``(data set, fold)`` pairs (k-fold CV on several data
        sets): fits :func:`racer.stats.hierarchical_test` to the differences ``b - a`` on the
        instances both candidates were evaluated on (failed evaluations left out), grouped by
        data set. Differences are oriented so that larger is better whatever the race's
        direction: ``prob_right`` is the probability that ``b`` is the better one on the next
        data set, ``prob_left`` that ``a`` is, ``prob_rope`` that they are practically
        equivalent (as baycomp's ``HierarchicalTest(x=a, y=b)``).

        Parameters
        ----------
        a, b : int
            Positions of the two candidates in :attr:`candidates`.
        test_fraction : float in (0, 1)
            ``n_test / (n_train + n_test)`` of one fold (``1/k`` for k-fold CV).
        rope : float >= 0, default 0.01
            Practical equivalence, in score units (the model assumes scores in [0, 1]).
        group : None, int, mapping, sequence or callable
            How an instance names its data set (:func:`racer.instance_groups`); None:
            instances are ``(data set, fold)`` tuples.
        random_state : None, int or numpy.random.Generator
        **options
            Passed to :func:`racer.stats.hierarchical_test` (``n_chains``, ``n_draws``, ...).

        Returns
        -------
        racer.stats.HierarchicalResult
            Its ``groups`` lists the data sets used: every data set on which both candidates
            have at least two usable folds (the model needs a spread within each).

        Notes
        -----
        A data set on which the two candidates tie on every fold (all differences equal,
        which :func:`racer.stats.hierarchical_test` refuses) is given a spread of
        ``N(0, s^2)``, ``s = rope / 100`` (``1e-8`` when ``rope = 0``), drawn from
        ``random_state``, exactly as
        :class:`racer.HierarchicalRacingTest` does: a tie on every fold is evidence of
        equivalence, not something to drop.

        Examples
        --------
        >>> import numpy as np
        >>> from racer import HierarchicalRacingTest, race
        >>> level = np.random.default_rng(1).uniform(0.7, 0.9, 8)   # accuracy per data set
        >>> def evaluate(shift, inst):
        ...     data_set, fold = inst
        ...     noise = np.random.default_rng([data_set, fold, int(1000 * shift)])
        ...     return level[data_set] + shift + noise.normal(0, 0.02)
        >>> instances = [(d, f) for f in range(10) for d in range(8)]
        >>> res = race(evaluate, [0.0, 0.002, -0.06], instances, first_test=16, each_test=8,
        ...            direction="maximize", test=HierarchicalRacingTest(test_fraction=0.1),
        ...            random_state=0, progress=False)
        >>> h = res.hierarchical_comparison(0, 1, test_fraction=0.1, random_state=0)
        >>> h.prob_rope > h.prob_left and h.prob_rope > h.prob_right
        True
        """
        from racer._validation import check_nonnegative, check_random_state
        from racer.racing.hierarchical import instance_groups
        from racer.stats import hierarchical_test
        from racer.stats._hierarchical import jitter_constant_groups, jitter_scale

        n_cand = len(self.candidates)
        for name, value in (("a", a), ("b", b)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) \
                    or not 0 <= value < n_cand:
                raise ValueError(
                    f"`{name}` must be the position of a candidate (0 to {n_cand - 1}); "
                    f"got {value!r}"
                )
        if a == b:
            raise ValueError(f"`a` and `b` must be two different candidates; got {a} twice")
        both = ~np.isnan(self.scores[:, [a, b]]).any(axis=1)
        labels = instance_groups([inst for inst, ok in zip(self.instances, both) if ok], group)
        counts: dict = {}
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
        usable = np.array([counts[label] >= 2 for label in labels], dtype=bool)
        rows = np.flatnonzero(both)[usable]
        kept = [label for label, ok in zip(labels, usable) if ok]
        sign = 1.0 if self.maximize else -1.0
        diffs = sign * self.scores[rows, b] - sign * self.scores[rows, a]
        rope = check_nonnegative(rope, "rope")
        rng = check_random_state(random_state)
        # Spreads only data sets tied on every fold, drawing from the same stream only then:
        # a comparison without such a data set is hierarchical_test(a, y=b)'s own, bit for bit.
        diffs = jitter_constant_groups(diffs, kept, jitter_scale(rope), rng)
        return hierarchical_test(diffs, test_fraction, rope, groups=kept, random_state=rng,
                                 **options)

    def _reason_counts(self) -> str:
        counts: dict[str, int] = {}
        for rec in self.history:
            counts[rec.reason] = counts.get(rec.reason, 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"

    def to_frame(self):
        """One row per candidate (in candidate order) as a pandas DataFrame.

        Columns: ``candidate``, ``mean_score``, ``n_instances``, ``rank`` (1 = best),
        ``survivor``, ``reason``, ``by_index``, ``probability``, ``eliminated_at``. pandas is
        imported here only, so it stays an optional dependency.
        """
        import pandas as pd

        records = {rec.candidate_index: rec for rec in self.history}
        rank = np.empty(len(self.candidates), dtype=np.int64)
        rank[self.ranking_indices] = np.arange(1, len(self.candidates) + 1)
        n_failed = np.zeros(len(self.candidates), dtype=np.int64)
        for cand, _inst, _msg in self.failures:
            n_failed[cand] += 1
        n_seen = self.n_evaluated
        rows = []
        for idx, cand in enumerate(self.candidates):
            rec = records.get(idx)
            rows.append(
                {
                    "candidate": cand,
                    "mean_score": float(self.mean_scores[idx]),
                    "n_instances": int(n_seen[idx]),
                    "n_failed": int(n_failed[idx]),
                    "rank": int(rank[idx]),
                    "survivor": rec is None,
                    "reason": "" if rec is None else rec.reason,
                    "by_index": None if rec is None else rec.by_index,
                    "probability": math.nan if rec is None else rec.probability,
                    "eliminated_at": -1 if rec is None else rec.n_instances,
                }
            )
        return pd.DataFrame(rows)


def _objective_fields(table: ScoreTable, n_rows: int, on_error: str, survivors: np.ndarray,
                      usable: np.ndarray, best: int) -> dict:
    """The multi-objective fields of a result (the winner alone as the front for one)."""
    if table.directions is None:
        return {"pareto_front_indices": np.array([best], dtype=np.int64)}
    from racer.stats.pareto import nondominated_mask

    raw = table.raw_objectives[:n_rows].copy()
    oriented = table.oriented_objectives[:n_rows]
    signs = table._signs
    with np.errstate(invalid="ignore"):
        source = oriented * signs if on_error == "worst" else raw
        counts = np.sum(~np.isnan(source), axis=0)
        means = np.where(counts > 0, np.nansum(source, axis=0) / np.maximum(counts, 1), np.nan)
    front = survivors[usable[survivors]]
    rows = table.complete_rows
    if front.size > 1 and rows > 0:
        front = front[nondominated_mask(oriented[:rows, front].mean(axis=0))]
    return {"pareto_front_indices": front.astype(np.int64), "directions": table.directions,
            "objective_scores": raw, "mean_objective_scores": means}


def _order_survivors(table: ScoreTable, survivors: np.ndarray, oriented_mean: np.ndarray,
                     winner: str) -> np.ndarray:
    """Positions in ``survivors``, best first, by the ``winner`` rule (ties: earlier first)."""
    rows = table.complete_rows
    if winner in ("mean_rank", "rank_sum") and rows > 0 and len(survivors) > 1:
        # Rank sums over the same rows for every survivor: the mean rank orders alike.
        key = block_ranks(table.oriented[:rows, survivors]).sum(axis=0)
        return np.lexsort((np.arange(len(survivors)), key))
    key = oriented_mean[survivors]
    key = np.where(np.isnan(key), -np.inf, key)
    return np.lexsort((np.arange(len(survivors)), -key))


_STOP_TEXT = {
    "min_survivors": "no more than min_survivors candidates were left",
    "budget": "the evaluation budget could not pay for another block",
    "max_instances": "max_instances instances were raced",
    "instances_exhausted": "there were no more instances",
}
