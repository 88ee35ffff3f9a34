"""What a reader meets runs in the test suite, from the plain ``pytest -q`` of the README.

* Every fenced ``python`` and ``bash`` block of README.md and docs/*.md runs with Sybil, page by
  page, as a reader would paste it into one session: the blocks of a page share a namespace and
  a working folder (a fresh temporary folder holding a copy of ``examples/``, as a clone would),
  in the order the page gives them. ``bash`` blocks run under ``bash -e`` with the ``racer``
  command of the interpreter running the tests first on ``PATH``; a ``cd`` carries over to the
  page's next blocks, Python ones included. A block that cannot run is preceded by
  ``<!-- skip: next "why" -->`` and the page says why next to it.
* A block that starts processes or runs a tuning (the ``racer`` command, ``racer.tune``,
  ``n_jobs=``, an executor) is preceded by ``<!-- slow -->`` on the line before its fence:
  it gets pytest's ``slow`` marker, as such tests do, so ``pytest -m "not slow"`` leaves it
  out (``_mark_slow_blocks``). A later block of the page that needs what a slow block made
  (its files, its ``cd``) is marked slow too.
* Every docstring example of the package runs with pytest's doctest support. ``adapters/``
  installs as ``racer.adapters`` (the package-dir mapping of pyproject.toml), so each module is
  imported by its installed dotted name, never by its file path: collected by path,
  ``adapters/sklearn/_search.py`` would load a second copy called
  ``adapters.sklearn._search``.
  A module that needs an optional dependency which is absent is skipped, naming it. The few
  examples that start processes or run a tuning are listed in ``SLOW_DOCTESTS`` and get the
  ``slow`` marker too.
"""

from __future__ import annotations

import doctest
import importlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _pytest.doctest import DoctestItem, DoctestModule
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent

# Optional extras (pyproject.toml): a module importing one of these is skipped without it.
OPTIONAL_DEPENDENCIES = {"sklearn", "optuna", "ConfigSpace", "matplotlib", "distributed", "dask",
                         "ray", "pandas"}


# ------------------------------------------------------------------------- README.md, docs/*.md

def _copy_examples(target: Path) -> None:
    """The repository's examples as a clone has them: the files git tracks, without what a run
    made here left behind (the README's first command writes examples/tsp-sa/arena/ and the
    tests come second; a copied execDir is a moved one, which racer rightly refuses to resume).
    Outside a git checkout (an unpacked sdist), the folder as it is."""
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "examples"],
                                capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(ROOT / "examples", target)
        return
    for name in filter(None, listed.split("\0")):
        destination = target.parent / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)


def _start_page(namespace: dict) -> None:
    # A reader's session: a script's module name (functions defined on the page are
    # `__main__.f`, as in a script or a notebook) and a fresh folder next to a copy of the
    # repository's examples, where files the page writes (race.sqlite, report.html) land.
    namespace["__name__"] = "__main__"
    folder = Path(tempfile.mkdtemp(prefix="racer-doc-"))
    _copy_examples(folder / "examples")
    namespace["_page"] = {"folder": folder, "cwd_before": os.getcwd()}
    os.chdir(folder)


def _end_page(namespace: dict) -> None:
    page = namespace.pop("_page")
    os.chdir(page["cwd_before"])
    shutil.rmtree(page["folder"], ignore_errors=True)


class ShellBlockParser(CodeBlockParser):
    """Runs a ``bash`` block as one paste into a terminal that stops at the first failure."""

    language = "bash"

    def evaluate(self, example) -> None:
        handle, name = tempfile.mkstemp(prefix="racer-doc-cwd-")
        os.close(handle)
        where = Path(name)
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        # `pip install ...` and `pytest ...` on a page install racer and run this very suite:
        # racer is installed already (that is how these tests run), and the suite must not run
        # itself. README.md says so.
        prelude = ('pip() { echo "(doc test: racer is installed already)"; }\n'
                   'pytest() { echo "(doc test: the test suite does not run itself)"; }\n')
        script = f"{prelude}{example.parsed}\npwd -P > {shlex.quote(str(where))}\n"
        try:
            proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=env,
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise AssertionError(
                    f"bash block exited with status {proc.returncode}\n"
                    f"--- stdout (last 3000 characters)\n{proc.stdout[-3000:]}\n"
                    f"--- stderr (last 3000 characters)\n{proc.stderr[-3000:]}")
            os.chdir(where.read_text().strip())  # a `cd` in the block holds for the next ones
        finally:
            where.unlink(missing_ok=True)


def _as_a_reader_would(evaluator):
    """Runs a page's Python block; skips it when it imports an optional extra that is absent."""

    def evaluate(example):
        try:
            return evaluator(example)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").partition(".")[0]
            if top in OPTIONAL_DEPENDENCIES:
                pytest.skip(f"the page needs {top}, an optional dependency")
            raise

    return evaluate


class PagePythonParser(PythonCodeBlockParser):
    @staticmethod
    def codeblock_parser_class(language, evaluator):
        return CodeBlockParser(language, _as_a_reader_would(evaluator))


_pages = Sybil(
    parsers=[
        PagePythonParser(doctest_optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE),
        ShellBlockParser(),
        SkipParser(),
    ],
    patterns=["README.md", "docs/*.md"],
    setup=_start_page,
    teardown=_end_page,
    name="page",
)
_collect_page = _pages.pytest()

SLOW_BLOCK = "<!-- slow -->"


def _marked_slow(example) -> bool:
    """Whether the page's text right before a block's opening fence (blank lines aside) is
    ``<!-- slow -->``. A fenced block of ``>>>`` lines is one example per prompt: each looks
    back to the fence that encloses it."""
    before = example.document.text[:example.start]
    if before.count("```") % 2:  # inside a fenced block: an example of a doctest block
        before = before[:before.rfind("```")]
    return before.rstrip().endswith(SLOW_BLOCK)


# Docstring examples (by their doctest name) that start processes or run a tuning.
SLOW_DOCTESTS = {
    "racer._tune.tune",                                 # a tuning
    "racer.adapters.optuna.iterated.IteratedRace",      # a tuning
    "racer.cli.target_runner",                          # starts a target-runner
    "racer.tuning.run.run_tuning",                      # a tuning
    "racer.execution.WorkerPool",                       # starts worker processes
}


def pytest_collection_modifyitems(config, items):
    # Sybil makes one item per block; a block marked on its page gets the `slow` marker, and so
    # does a docstring example listed above.
    for item in items:
        example = getattr(item, "example", None)
        if (example is not None and _marked_slow(example)) or (
                isinstance(item, DoctestItem) and item.name in SLOW_DOCTESTS):
            item.add_marker(pytest.mark.slow)


# ------------------------------------------------------------------------- docstring examples

def _dotted_name(path: Path) -> str | None:
    """The installed module name of a source file of the package, or None."""
    try:
        relative = path.relative_to(ROOT)
    except ValueError:
        return None
    parts = list(relative.with_suffix("").parts)
    if parts[0] == "adapters":
        parts.insert(0, "racer")
    elif parts[0] != "racer":
        return None
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class InstalledModuleDoctests(DoctestModule):
    """Doctests of a package module, imported by its installed dotted name."""

    dotted_name: str

    def _getobj(self):
        try:
            return importlib.import_module(self.dotted_name)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").partition(".")[0]
            if top in OPTIONAL_DEPENDENCIES:
                pytest.skip(f"{self.dotted_name} needs {top}, an optional dependency")
            raise


def pytest_collect_directory(path: Path, parent):
    # A folder of the package is collected as a plain folder, not as a Python package whose
    # __init__.py pytest would import by its path (`adapters/` as a top-level `adapters`).
    if _dotted_name(path / "__init__.py") is not None:
        return pytest.Dir.from_parent(parent, path=path)
    return None


def _doctests(file_path: Path, parent):
    name = _dotted_name(file_path)
    if name is None:
        return None
    module = InstalledModuleDoctests.from_parent(parent, path=file_path)
    module.dotted_name = name
    return module


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".py":
        if parent.session.isinitpath(file_path):
            return None  # named on the command line: pytest_pycollect_makemodule below
        return _doctests(file_path, parent)
    return _collect_page(file_path, parent)


def pytest_pycollect_makemodule(module_path: Path, parent):
    # `pytest adapters/sklearn/_search.py`: pytest's Python plugin would import a file named on
    # the command line by its path, as `adapters.sklearn._search`; its doctests are collected
    # instead.
    return _doctests(module_path, parent)


def pytest_configure(config):
    # A suite started in the background of a non-interactive shell (`(pytest -q &)`) inherits
    # SIGINT ignored, and so would every process it starts: the tests that press Ctrl-C on a
    # race, or cancel a Ray task (Ray cancels by SIGINT), would then test nothing a user does.
    # Restore the terminal's behaviour; processes started from here get the default action.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
