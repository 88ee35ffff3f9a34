"""The test suite's layout, and what its files share.

Each folder tests one part of the package, as racer/ is laid out:

========== ==============================================================================
stats/     racer.stats: each formula against an independent oracle (SciPy, scikit-posthocs,
           statsmodels, baycomp, stored NumPyro posteriors), its input corpus
racing/    racer.racing: each racing test (F-race, t-race, Bayesian, posterior-best,
           hierarchical), RaceView and the winner rule
engine/    the race and what drives it: Race, storage (journal, resume, continue), execution
           (worker pools, timeouts, by-value functions), progress, and their input corpora
tuning/    racer.tuning and racer.tune: the iterated tuner, its schedule, dispatch and
           look-ahead, capping, several objectives, the sampler, the parameter language
cli/       the ``racer`` command: scenario parsing, the target-runner subprocess, kill -9 and
           resume, Ray and Dask, ``python -m racer``
adapters/  racer.adapters: scikit-learn's RaceSearchCV, Optuna, their input corpus
report/    racer.report and racer.plot: the HTML report, the exports, the figures
benchmarks/ the scripts of benchmarks/ that the suite keeps honest
========== ==============================================================================

Tests of the project as a whole stay in tests/: the layout and its targets (test_layout.py),
the conventions across APIs, start-up imports, and that every docstring example is collected.

Shared code: plain functions and constants are in ``tests/_helpers/`` (a test module never
imports another test module), fixtures here or in a folder's ``conftest.py``. The racing test
that eliminates nothing is the package's own, :class:`racer.racing.KeepAll`.

``pytest -m "not slow"`` leaves out the tests marked ``slow`` (pyproject.toml): those that
start worker pools, clusters or the ``racer`` command in subprocesses. CI runs everything.

This file is not the repository's root ``conftest.py``, which collects the docstring examples
and the code blocks of README.md and docs/. Both are named ``conftest``, so neither can be
imported by name from a test: use the ``root_conftest`` fixture.
"""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def root_conftest(pytestconfig):
    """The repository's root conftest.py (the doc collector), as pytest loaded it."""
    path = Path(pytestconfig.rootpath) / "conftest.py"
    module = pytestconfig.pluginmanager.get_plugin(str(path))
    assert module is not None, f"{path} was not loaded as a conftest"
    return module


@pytest.fixture(scope="module")
def one_thread():
    """BLAS/OpenMP pools limited to one thread for a module (``pytestmark =
    pytest.mark.usefixtures("one_thread")``): k-NN's OpenMP distance kernels spin for ~0.2 s
    per call when the 2 shared cores are busy; the tests measure behaviour, not speed, so one
    thread is both faster and steadier."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield
