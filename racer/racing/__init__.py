"""Every racing test, and the interface between them and the race engine.

A racing test reads a :class:`RaceView` of the survivors after each block of instances and
returns the :class:`Elimination` decisions; :class:`racer.engine.Race` runs the loop. Each test
takes its formulas from :mod:`racer.stats`.

=============================  ===================================================================
module                         racing tests
=============================  ===================================================================
:mod:`racer.racing.base`       the interface (``RacingTest``, ``RaceView``, ``Elimination``),
                               ``ProtectElites`` and ``KeepAll``
:mod:`racer.racing.pareto`     ``ParetoTest``: races on several objectives (Pareto dominance)
:mod:`racer.racing.posterior_best`  ``PosteriorBestTest``, the default
:mod:`racer.racing.bayesian`   ``BayesianTest``: Bayesian Friedman gate + joint sign tests
:mod:`racer.racing.hierarchical`  ``HierarchicalRacingTest`` for grouped instances
:mod:`racer.racing.frace`      ``FRaceTest``: irace's F-race (Friedman + Conover) and variants
:mod:`racer.racing.trace`      ``TRaceTest``: irace's t-test races
:mod:`racer.racing.cv`         ``CorrelatedTTestRacing`` and the cross-validation wrappers
:mod:`racer.racing.capped`     ``CappedTest``: irace's adaptive capping's dominance elimination
:mod:`racer.racing.registry`   the names the command line, the demo and ``RaceSearchCV`` accept
=============================  ===================================================================
"""

from racer._lazy import lazy_exports as _lazy_exports

# Public name -> submodule. Loaded on first access (PEP 562), as in `racer` itself: the F-race
# and the t-race import scipy.stats, which `import racer.racing.base` should not pay for.
_EXPORTS = {
    "Elimination": "base",
    "KeepAll": "base",
    "ProtectElites": "base",
    "RaceView": "base",
    "RacingTest": "base",
    "BayesianTest": "bayesian",
    "CappedTest": "capped",
    "CorrelatedTTestRacing": "cv",
    "FRaceTest": "frace",
    "HierarchicalRacingTest": "hierarchical",
    "instance_groups": "hierarchical",
    "ParetoTest": "pareto",
    "OutlierGuard": "outliers",
    "PosteriorBestTest": "posterior_best",
    "TRaceTest": "trace",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
