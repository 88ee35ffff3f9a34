"""racer.racing.registry: one name -> racing-test table for the CLI, the demo and RaceSearchCV."""

import pytest

from racer.racing import registry
from racer.racing.base import RacingTest
from racer.racing.registry import RACING_TESTS, lookup, make_test, names, parse_options


def test_every_spelling_is_listed_once_and_finds_its_entry():
    spellings = [s.lower() for s in names()]
    assert len(spellings) == len(set(spellings))
    for entry in RACING_TESTS:
        for spelling in entry.spellings:
            assert lookup(spelling) is entry
            assert lookup(spelling.upper()) is entry  # irace lower-cases testType


@pytest.mark.parametrize("entry", RACING_TESTS, ids=lambda e: e.name)
def test_each_entry_builds_a_racing_test_with_its_fixed_options_and_winner(entry):
    extra = {"test_fraction": 0.2} if entry.name == "hierarchical" else {}
    test = entry.build(**extra)
    assert isinstance(test, entry.test_class) and isinstance(test, RacingTest)
    for key, value in entry.options.items():
        assert getattr(test, key) == value
    # The winner rule is the class's, so the table and the race agree.
    assert entry.winner == (getattr(type(test), "winner", None) or "mean")


def test_the_three_old_vocabularies_keep_their_meaning():
    # CLI (irace's names), RaceSearchCV ("bayes", "frace", ...), the demo ("seed002").
    expected = {
        "F-test": ("FRaceTest", "rank_sum"), "friedman": ("FRaceTest", "rank_sum"),
        "frace": ("FRaceTest", "rank_sum"), "t-test": ("TRaceTest", "mean"),
        "t.holm": ("TRaceTest", "mean"), "bayesian": ("BayesianTest", "mean"),
        "bayes": ("BayesianTest", "mean"), "seed002": ("BayesianTest", "mean"),
        "posterior-best": ("PosteriorBestTest", "mean"),
        "correlated-t": ("CorrelatedTTestRacing", "mean"),
    }
    for name, (cls, winner) in expected.items():
        test, rule = make_test(name)
        assert (type(test).__name__, rule) == (cls, winner), name
    from racer.racing.frace import FRaceTest
    from racer.racing.trace import TRaceTest

    # Same objects (and reprs, which journals fingerprint) as the front ends built before.
    assert repr(make_test("frace")[0]) == repr(FRaceTest())
    assert repr(make_test("t-test-bonferroni", alpha=0.1)[0]) == repr(
        TRaceTest(alpha=0.1, adjust="bonferroni"))


def test_alpha_reaches_only_iraces_tests_and_an_option_overrides_it():
    assert make_test("F-test", alpha=0.1)[0].alpha == 0.1
    assert make_test("F-test:alpha=0.2", alpha=0.1)[0].alpha == 0.2
    assert not hasattr(make_test("posterior-best", alpha=0.1)[0], "alpha")


def test_options_in_a_name():
    test, _ = make_test("posterior-best:error_rate=0.01,tie_guard=False")
    assert (test.error_rate, test.tie_guard) == (0.01, False)
    test, _ = make_test("F-test:post_hoc=sign, gate=False")
    assert (test.post_hoc, test.gate) == ("sign", False)
    test, _ = make_test("hierarchical:test_fraction=0.25,top=None")
    assert (test.test_fraction, test.top) == (0.25, None)
    test, winner = make_test("racer.racing.trace:TRaceTest:adjust=holm")
    assert (type(test).__name__, test.adjust, winner) == ("TRaceTest", "holm", None)
    assert parse_options("a=[1, 2],b='x'") == {"a": [1, 2], "b": "x"}


@pytest.mark.parametrize("spec, match", [
    ("anova", r"unknown racing test: the names are 'F-test', .*'posterior-best'.*; got 'anova'"),
    ("posterior-best:error_rate", r"options must read key=value"),
    ("posterior-best:1x=2", r"options must read key=value"),
    ("posterior-best:spending=1,spending=2", r"'spending' given twice"),
    ("posterior-best:alpha=0.1", r"'posterior-best' has no option 'alpha'; its options are .*error_rate"),
    ("posterior-best:error_rate=2", r"error_rate"),
    ("hierarchical", r"test_fraction"),
    ("no_such_module_xyz:Test", r"No module named 'no_such_module_xyz'.*the names are"),
    ("racer.racing.base:Nope", r"has no attribute 'Nope'"),
    ("racer.racing.base:RaceView", r"RaceView"),
    ("collections:OrderedDict", r"is not a racer RacingTest"),
])
def test_bad_names_and_options_are_value_errors_that_say_why(spec, match):
    with pytest.raises(ValueError, match=match):
        make_test(spec)


def test_a_name_must_be_a_string():
    with pytest.raises(TypeError, match="must be a str; got 3"):
        lookup(3)
    with pytest.raises(TypeError, match="must be a str; got None"):
        make_test(None)


def test_irace_names_are_the_scenario_test_types():
    assert set(names(irace=True)) == {"F-test", "friedman", "t-test", "t.none",
                                      "t-test-bonferroni", "t.bonferroni", "t-test-holm", "t.holm"}
    assert all(lookup(n).irace for n in names(irace=True))


def test_the_cli_demo_and_racesearchcv_use_the_table():
    import importlib.util

    from _helpers import ROOT
    from racer.cli import UsageError
    from racer.cli._main import make_test as cli_make_test

    test, winner = cli_make_test("posterior-best:error_rate=0.05", 0.9)
    assert (type(test).__name__, test.error_rate, winner) == ("PosteriorBestTest", 0.05, "mean")
    assert cli_make_test("", 0.9)[0].alpha == pytest.approx(0.1)  # irace's default testType
    with pytest.raises(UsageError, match="--racing-test 'bayes:eps=2'"):
        cli_make_test("bayes:eps=2", 0.95)
    # The differential-evolution example (a script, not a module of the package).
    spec = importlib.util.spec_from_file_location(
        "race_de", ROOT / "examples" / "differential-evolution" / "race_de.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert type(example._make_test("seed002")).__name__ == "BayesianTest"
    pytest.importorskip("sklearn")
    from racer.adapters.sklearn._search import _TEST_NAMES

    assert {"t-test", "bayes", "posterior-best", "frace", "correlated-t", "hierarchical"} <= set(
        _TEST_NAMES)
    assert all(registry.lookup(n).name in ("t-test", "bayesian", "posterior-best", "F-test",
                                           "correlated-t", "hierarchical") for n in _TEST_NAMES)
