"""Helpers shared by test modules in several files (``from _helpers.cli import make_scenario``).

Plain functions and constants live here; pytest fixtures live in ``tests/conftest.py`` and the
``conftest.py`` of a folder. A test module never imports another test module: pytest imports
each test file by its path, so an import of ``test_x`` from a file of another folder depends on
which folders happen to be on ``sys.path`` (pyproject.toml puts ``tests/`` there, for this
package).

* :mod:`_helpers.processes`: is a process alive, its descendants, waiting until some are gone
  (from ``/proc``; zombies count as gone).
* :mod:`_helpers.cli`: a small irace scenario with a Python target runner, reading racer's
  outputs, running the ``racer`` command in a subprocess; the ``kill -9`` and resume kit.
* :mod:`_helpers.terminal`: a text stream that says whether it is a terminal.
* :mod:`_helpers.chromium`: a headless Chromium screenshot of a report.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root folder (where pyproject.toml is)."""
