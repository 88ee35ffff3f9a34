"""racer: Bayesian nonparametric racing of costly, noisy configurations.

The statistics live in :mod:`racer.stats`; the race engine in :mod:`racer.race`; every racing
test (the default, the Bayesian ones, irace's F-race and t-race) in :mod:`racer.racing`;
adapters for scikit-learn and Optuna in :mod:`racer.adapters`; parameter spaces (irace's,
Optuna's, ConfigSpace's) in :mod:`racer.tuning.spaces`; the command line in :mod:`racer.cli`, and
its tuner for a Python function in :func:`racer.tune`.
"""

import importlib
import sys
import types

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
    "Evaluation": "race",
    "EvaluationError": "race",
    "Race": "race",
    "RaceFailedError": "race",
    "race": "race",
    "EliminationRecord": "result",
    "RaceResult": "result",
    "JournalInUseError": "storage",
    "parameter_space": "tuning.spaces",
    "tune": "tune",
    "TuneResult": "tune",
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


class _Package(types.ModuleType):
    """``racer`` itself, keeping ``racer.race`` the function.

    The import system binds a submodule on its package once the submodule has run, whoever
    imports it (``from racer.race import Race``, the command line). ``race`` is both a
    submodule and the public function, and the function must win, as it did when this file
    imported it eagerly.
    """

    def __setattr__(self, name, value):
        if (isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name
                and value.__name__ == f"{__name__}.{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
_MACHINERY = {"importlib", "sys", "types", "_EXPORTS", "_SUBMODULES", "_MACHINERY", "_Package",
              "__getattr__", "__dir__"}
