"""``python -m racer`` is the ``racer`` command (racer/__main__.py), as ``python -m pip`` is pip."""

from __future__ import annotations

import subprocess
import sys

import pytest

from racer import __version__

pytestmark = pytest.mark.slow  # every test starts `python -m racer`


def _python_m_racer(*args):
    return subprocess.run([sys.executable, "-m", "racer", *args], capture_output=True, text=True,
                          timeout=120)


def test_help_is_the_commands_help():
    done = _python_m_racer("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: racer ")
    for option in ("--scenario", "--check", "--init", "--racing-test", "--parallel"):
        assert option in done.stdout
    assert "differential_evolution" not in done.stdout  # the demo moved to examples/


def test_version():
    done = _python_m_racer("--version")
    assert (done.returncode, done.stdout) == (0, f"racer {__version__}\n"), done.stderr


def test_exit_code_is_the_commands():
    # A scenario that does not exist: the command's "bad scenario" exit code, 2, reaches the shell.
    done = _python_m_racer("--scenario", "no-such-scenario.txt")
    assert done.returncode == 2
    assert "no-such-scenario.txt" in done.stderr
