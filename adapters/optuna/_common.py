"""What the Optuna adapters share: the keys they write into a study, and their input checks.

The ``*_ATTR`` keys are the adapters' contract with whoever reads a study they wrote (the
pruner, the benchmarks, a resumed :class:`~racer.adapters.optuna.IteratedRace`).
"""

from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np
import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial

from racer._validation import as_race_items, describe

__all__ = ["ANSWER_ATTR", "ITERATION_ATTR", "N_INSTANCES_ATTR", "OBJECTIVES_ATTR", "PRUNED_ATTR",
           "PRUNE_REASON_ATTR", "PRUNE_REFERENCE_ATTR", "SCORES_ATTR",
           "STATE_ATTR", "check_instances", "single_direction", "steps_and_values"]

# Keys the adapters write into trial user attributes. Readers (the pruner, the benchmarks,
# a resumed IteratedRace) rely on these names: they are part of the adapter's contract.
PRUNED_ATTR = "racer_pruned"
N_INSTANCES_ATTR = "racer_n_instances"
SCORES_ATTR = "racer_scores"  # {instance position: score} of an IteratedRace candidate
ITERATION_ATTR = "racer_iteration"  # the IteratedRace iteration that sampled the trial
STATE_ATTR = "racer_iterated_race"  # study user attribute: the driver's resumable state
ANSWER_ATTR = "racer_answer_of"  # the COMPLETE trial IteratedRace adds: its answer's number
# Written by RacingPruner.prune and ParetoPruner.prune when they prune: why, and against
# which trial. The risk a prune took is returned by their decide(), not written: measured
# against ground truth it was not the rate at which prunes are wrong.
PRUNE_REASON_ATTR = "racer_prune_reason"
PRUNE_REFERENCE_ATTR = "racer_prune_reference"
# A trial's score vectors in a study with several objectives, where Optuna refuses
# trial.report: {str(instance position): [value per objective]}, written by
# report_objectives and read by ParetoPruner.
OBJECTIVES_ATTR = "racer_objectives"


def single_direction(study: optuna.Study, who: str) -> StudyDirection:
    directions = study.directions
    if len(directions) != 1:
        raise ValueError(
            f"{who} supports single-objective studies only; this study has "
            f"{len(directions)} objectives ({[d.name for d in directions]})"
        )
    return directions[0]


def steps_and_values(trial: FrozenTrial) -> tuple[np.ndarray, np.ndarray]:
    reported = trial.intermediate_values
    n = len(reported)
    steps = np.fromiter(reported.keys(), dtype=np.int64, count=n)
    values = np.fromiter(reported.values(), dtype=np.float64, count=n)
    order = np.argsort(steps, kind="stable")
    return steps[order], values[order]


def check_instances(instances: Any) -> Any:
    """``instances`` as the sequence to use: a DataFrame is one instance per row (a dict of
    its column values), a dict is refused with what to pass (racer's rule for containers,
    :func:`racer._validation.as_race_items`)."""
    instances = as_race_items(instances, "instances")
    # Positions in `instances` are the step ids trials are paired on: a set has no order that
    # holds across processes (string hashing is salted per process), so workers sharing a
    # study would pair different instances under one step.
    if (
        isinstance(instances, (str, bytes, collections.abc.Set, collections.abc.Mapping))
        or not hasattr(instances, "__len__")
    ):
        raise TypeError(
            "`instances` must be an ordered sequence (list, tuple, array); got "
            f"{type(instances).__name__} {describe(instances)}"
        )
    return instances
