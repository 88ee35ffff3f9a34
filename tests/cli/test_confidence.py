"""The scenario's ``confidence`` reaches racer's Bayesian tests when the scenario (or
``--confidence``) sets it; left at irace's default 0.95 the tests keep their own defaults."""

import pytest

from racer.cli import EXIT_OK, EXIT_SCENARIO, main
from racer.cli._main import make_test
from racer.storage import read_journal

from _helpers.cli import make_scenario


def test_make_test_passes_confidence_only_when_given():
    assert make_test("posterior-best", 0.95)[0].error_rate is None
    assert make_test("posterior-best", 0.9, confidence_given=True)[0].error_rate == pytest.approx(
        0.1, abs=1e-15)  # 1 - 0.9 in floating point
    # irace's tests take 1 - confidence either way (irace's own rule).
    assert make_test("F-test", 0.9)[0].alpha == pytest.approx(0.1, abs=1e-15)


def _error_rate(tmp_path):
    """The ``error_rate`` the first race's posterior-best test ran with, as its journal records
    it: the tuner wraps the test (racer.racing.OutlierGuard), whose record holds the wrapped
    test's parameters in ``inner``."""
    import re

    fingerprint = read_journal(str(tmp_path / "arena" / "racer-journal" / "iteration-1.sqlite"))[
        "fingerprint"]
    params = fingerprint["test_params"]
    if "error_rate" in params:
        return params["error_rate"]
    found = re.search(r"\('error_rate', ([^)]*)\)", params["inner"])
    return found.group(1)


@pytest.mark.slow  # the target runner is a process per run
@pytest.mark.parametrize("extra,flags,error_rate", [
    ("", ["--racing-test", "posterior-best"], "None"),
    ("confidence = 0.9\n", ["--racing-test", "posterior-best"], "0.09999999999999998"),
    ("", ["--racing-test", "posterior-best", "--confidence", "0.99"], "0.010000000000000009"),
    ("confidence = 0.9\n", ["--racing-test", "posterior-best:error_rate=0.2"], "0.2"),
], ids=["default", "scenario", "flag", "option-wins"])
def test_the_run_races_with_the_scenario_confidence(tmp_path, extra, flags, error_rate):
    scen = make_scenario(tmp_path, budget=30, extra=extra)
    assert main(["--scenario", scen, "--no-report", "-q", "1", *flags]) == EXIT_OK
    assert _error_rate(tmp_path) == error_rate


def test_a_confidence_a_test_cannot_take_names_it(tmp_path, capsys):
    scen = make_scenario(tmp_path, budget=60, extra="confidence = 0.4\n")
    assert main(["--scenario", scen, "--check", "--racing-test", "correlated-t"]) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert ("--racing-test 'correlated-t' (with confidence = 0.4): `credibility` must be in "
            "(0.5, 1); got 0.4") in err
