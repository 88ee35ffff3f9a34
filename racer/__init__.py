"""racer: Bayesian nonparametric racing of costly, noisy configurations.

The statistics live in :mod:`racer.stats`; the race engine in :mod:`racer.engine`; every racing
test (the default, the Bayesian ones, irace's F-race and t-race) in :mod:`racer.racing`;
adapters for scikit-learn and Optuna in :mod:`racer.adapters`; parameter spaces (irace's,
Optuna's, ConfigSpace's) in :mod:`racer.tuning.spaces`; the command line in :mod:`racer.cli`, and
its tuner for a Python function in :func:`racer.tune`.
"""

import importlib

__version__ = "0.1.0"

# Public name -> submodule that defines it. Submodules load on first attribute access (PEP 562):
# ``import racer`` and the command line's ``racer --help`` then pay for neither SciPy nor Numba
# (a second or more on a cold start) until something races.
_EXPORTS = {
    "BayesianTest": "racing",
    "CorrelatedTTestRacing": "racing",
    "Elimination": "racing",
    "FRaceTest": "racing",
    "HierarchicalRacingTest": "racing",
    "KeepAll": "racing",
    "ParetoTest": "racing",
    "PosteriorBestTest": "racing",
    "ProtectElites": "racing",
    "RaceView": "racing",
    "RacingTest": "racing",
    "TRaceTest": "racing",
    "instance_groups": "racing",
    "Evaluation": "engine",
    "EvaluationError": "engine",
    "Race": "engine",
    "RaceFailedError": "engine",
    "race": "engine",
    "EliminationRecord": "result",
    "RaceResult": "result",
    "JournalInUseError": "storage",
    "parameter_space": "tuning.spaces",
    "tune": "_tune",
    "TuneResult": "_tune",
}

# Submodules that ``import racer`` bound as attributes when it imported the above eagerly; they
# still resolve as ``racer.<name>`` (``racer.stats.friedman``) without an import of their own.
_SUBMODULES = (
    "_race_stats",
    "_validation",
    "racing",
    "result",
    "stats",
    "storage",
)

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    # What ``dir(racer)`` listed when everything was imported eagerly: not this lazy machinery.
    return sorted((set(globals()) - _MACHINERY) | set(_EXPORTS) | set(_SUBMODULES))


_MACHINERY = {"importlib", "_EXPORTS", "_SUBMODULES", "_MACHINERY", "__getattr__", "__dir__"}
