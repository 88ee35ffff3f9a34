"""racer's racing test when the scenario names no ``testType``: irace's t-test,
which eliminates and ranks by mean cost, where irace would use its F-test (rank sums)."""

import json

import pytest

from racer.cli import EXIT_OK, main

from _helpers.cli import make_scenario

# Configuration "a" is better than "b" by 1 on seven instances and worse by 98 on the eighth:
# best by ranks (wins 7 of 8), worst by mean cost (13.4 against 2). Deterministic costs.
SKEWED_RUNNER = """
import sys
opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
inst = int(sys.argv[4].rsplit("-", 1)[1])
if opts["--mode"] == "a":
    print(100.0 if inst == 8 else 1.0)
else:
    print(2.0)
"""
PARAMS = 'mode "--mode " c (a, b)\n'
# The budget pays for exactly one block, on purpose (see below): the race says so.
pytestmark = pytest.mark.filterwarnings("ignore:`budget`=16 pays for the first block")


def _race_the_two(tmp_path, capsys, extra: str, *args: str) -> tuple[str, list]:
    # firstTest = 8 with a budget of 16: both run on every instance before any test, so the
    # order below is the winner rule's alone, whatever order the instances come in.
    scen = make_scenario(tmp_path, extra='configurationsFile = "configs.txt"\nfirstTest = 8\n' + extra,
                         budget=16, runner=SKEWED_RUNNER, params=PARAMS)
    (tmp_path / "configs.txt").write_text("mode\na\nb\n")
    assert main(["--scenario", scen, "--fixed-list", "--test-instances-file", "", *args]) == EXIT_OK
    out = capsys.readouterr().out
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    return out, [e["values"]["mode"] for e in results["elites"]]


@pytest.mark.slow
def test_no_test_type_races_by_mean_cost_with_the_t_test(tmp_path, capsys):
    out, order = _race_the_two(tmp_path, capsys, "")
    assert "test TRaceTest (racer's default, t-test" in out
    assert "according to the mean cost" in out
    assert order[0] == "b"  # 2.0 on average against a's 13.4


@pytest.mark.slow
@pytest.mark.parametrize("how", ["scenario", "option"])
def test_named_f_test_keeps_irace_s_rank_order(tmp_path, capsys, how):
    extra, args = ('testType = "F-test"\n', ()) if how == "scenario" else ("", ("--racing-test", "F-test"))
    out, order = _race_the_two(tmp_path, capsys, extra, *args)
    assert "test FRaceTest (" + ("testType" if how == "scenario" else "--racing-test") + ")" in out
    assert "according to the sum of ranks" in out
    assert order[0] == "a"  # 7 wins of 8: the best rank sum
