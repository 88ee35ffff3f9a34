"""racer: Bayesian nonparametric racing of costly, noisy configurations.

The statistics live in :mod:`racer.stats`; the race engine in :mod:`racer.race`; adapters for
scikit-learn, Optuna and the F-race baseline in :mod:`racer.adapters`.
"""

__version__ = "0.1.0"

from .bayesian_test import BayesianTest
from .elimination import Elimination, RaceView, RacingTest
from .hierarchical_racing import HierarchicalRacingTest, instance_groups
from .posterior_best_test import PosteriorBestTest
from .race import Evaluation, EvaluationError, Race, RaceFailedError, race
from .result import EliminationRecord, RaceResult
from .storage import JournalInUseError

__all__ = [
    "__version__",
    "BayesianTest",
    "Elimination",
    "EliminationRecord",
    "Evaluation",
    "EvaluationError",
    "HierarchicalRacingTest",
    "JournalInUseError",
    "PosteriorBestTest",
    "Race",
    "RaceFailedError",
    "RaceResult",
    "RaceView",
    "RacingTest",
    "race",
    "instance_groups",
]
