"""Racing for Optuna users: a Bayesian instance-wise pruner and an iterated race.

Two ways to bring racing to an Optuna study, matching the two ways Optuna users work:

* :class:`RacingPruner` (``pruner.py``) is a drop-in replacement for
  :class:`optuna.pruners.WilcoxonPruner`; :func:`instance_objective` writes the instance-wise
  reporting loop it reads.
* :class:`IteratedRace` (``iterated.py``) runs irace's loop (sample candidates, race them with
  the elites, refocus the sampler on the survivors) with any Optuna sampler as the proposal
  model; it returns an :class:`IteratedRaceResult`.
* :class:`ParetoPruner` (``pareto.py``) prunes in studies with several objectives, where
  Optuna refuses ``trial.report``; :func:`pareto_instance_objective` writes its loop.

The race core never imports this package or Optuna.
"""

from racer.adapters.optuna.iterated import IteratedRace, IteratedRaceResult
from racer.adapters.optuna.pareto import (
    ParetoPruner,
    pareto_instance_objective,
    report_objectives,
    should_prune_objectives,
)
from racer.adapters.optuna.pruner import RacingPruner, instance_objective

__all__ = ["IteratedRace", "IteratedRaceResult", "ParetoPruner", "RacingPruner",
           "instance_objective", "pareto_instance_objective", "report_objectives",
           "should_prune_objectives"]
