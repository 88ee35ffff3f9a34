"""A scikit-learn hyperparameter search that races candidates split by split.

:class:`RaceSearchCV` (in ``_search.py``) is a drop-in for ``GridSearchCV``,
``RandomizedSearchCV`` and ``HalvingGridSearchCV``; :class:`WithinGroupKFold` (in
``datasets.py``) cross-validates inside each of several stacked data sets for
``RaceSearchCV(test="hierarchical")``. The package's other modules are its parts: ``_splits.py``
lists the splits and the training sizes, ``_results.py`` builds ``cv_results_``.
"""

from racer.adapters.sklearn._search import RaceSearchCV, SearchTypeError
from racer.adapters.sklearn.datasets import WithinGroupKFold

__all__ = ["RaceSearchCV", "SearchTypeError", "WithinGroupKFold"]
