"""The docstring examples run by conftest.py are the package's own, imported as installed.

conftest.py collects every module of ``racer/`` and ``adapters/`` for doctest by its installed
dotted name (``adapters/`` installs as ``racer.adapters``). These tests check the parts of
that which a passing doctest run cannot show: that each file maps to the module Python really
imports for it, that doctest sees every ``>>>`` line written in the sources (an example it
cannot reach would never run), and that no second copy of an adapter was imported under the
folder's name.
"""

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import ROOT

SOURCES = sorted(ROOT.glob("racer/**/*.py")) + sorted(ROOT.glob("adapters/**/*.py"))


@pytest.fixture(scope="module")
def conftest(root_conftest):
    # The root conftest.py: tests/conftest.py is a module named `conftest` too (see there).
    return root_conftest


def _import(conftest, path: Path):
    name = conftest._dotted_name(path)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] in conftest.OPTIONAL_DEPENDENCIES:
            pytest.skip(f"{name} needs {exc.name}")
        raise


def test_the_sources_are_all_there(conftest):
    names = {conftest._dotted_name(p) for p in SOURCES}
    assert {"racer", "racer.engine", "racer.stats.frequentist", "racer.tuning.sampler",
            "racer.adapters", "racer.racing.frace", "racer.adapters.sklearn",
            "racer.adapters.sklearn._search", "racer.adapters.optuna.pruner"} <= names
    assert conftest._dotted_name(conftest.ROOT / "tests" / "engine" / "test_engine.py") is None
    assert conftest._dotted_name(conftest.ROOT / "benchmarks" / "frontier.py") is None


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_file_is_collected_as_the_module_python_imports(conftest, path):
    assert conftest.ROOT == ROOT
    module = _import(conftest, path)
    assert Path(module.__file__).resolve() == path.resolve()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_doctest_sees_every_example_written_and_each_compares_output(conftest, path):
    module = _import(conftest, path)
    tests = [t for t in doctest.DocTestFinder().find(module, module.__name__) if t.examples]
    written = sum(line.lstrip().startswith(">>>") for line in path.read_text().splitlines())
    found = sum(len(t.examples) for t in tests)
    assert found == written
    # The modules whose examples hand-written tests used to run, with the least they held.
    least = {"racer.stats.bayesian_sign": 10, "racer._validation": 5,
             "racer.stats._hierarchical": 4, "racer.racing.hierarchical": 8, "racer.result": 6,
             "racer.adapters.sklearn.datasets": 4,
             "racer.engine": 1, "racer.storage": 1, "racer.plot": 1, "racer.report": 1,
             "racer.tuning.record": 1, "racer.progress": 1, "racer.racing.frace": 1,
             "racer.tuning.rexpr": 1, "racer.tuning.parameters": 1, "racer.cli.scenario": 1,
             "racer.tuning.sampler": 1, "racer.cli.target_runner": 1}
    assert found >= least.get(module.__name__, 0)
    for test in tests:  # an example that prints nothing and raises nothing asserts nothing
        assert any(e.want.strip() or e.exc_msg for e in test.examples), test.name


@pytest.mark.slow
def test_pytest_collects_an_adapter_through_the_package():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "adapters/sklearn/datasets.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line for line in proc.stdout.splitlines() if line.startswith("adapters/sklearn/datasets.py::")]
    assert "adapters/sklearn/datasets.py::racer.adapters.sklearn.datasets.WithinGroupKFold" in ids
    assert all("::racer.adapters.sklearn.datasets." in i for i in ids)


@pytest.mark.slow
def test_the_readme_test_command_collects_the_examples_of_every_module(conftest):
    # `pytest -q` from the root, as README.md and .ci/run give it: every module with an example
    # has its doctests among the items (one per documented object).
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    collected = {line.partition("::")[0] for line in proc.stdout.splitlines() if "::" in line}
    missing = []
    for path in SOURCES:
        relative = str(path.relative_to(ROOT))
        if ">>>" not in path.read_text() or relative in collected:
            continue
        try:
            importlib.import_module(conftest._dotted_name(path))
        except ModuleNotFoundError as exc:  # skipped at collection, rightly
            if (exc.name or "").partition(".")[0] in conftest.OPTIONAL_DEPENDENCIES:
                continue
            raise
        missing.append(relative)
    assert not missing, "modules whose examples `pytest -q` does not collect:\n" + "\n".join(missing)
    assert {"racer/engine.py", "adapters/sklearn/_search.py", "README.md"} <= collected


def test_no_adapter_was_imported_under_its_folder_name():
    # Collected by file path, adapters/sklearn/_search.py would load as `adapters.sklearn._search`: a second copy
    # whose classes are not racer.adapters.sklearn's.
    assert not [name for name in sys.modules if name == "adapters" or name.startswith("adapters.")]
