"""A scenario's ``confidence`` reaches every racing test of the registry through the option
that states the same level (racer.racing.registry, ``confidence_options``)."""

import pytest

from racer.racing.registry import RACING_TESTS, make_test

# 1 - 0.9 computed in floating point is 0.09999999999999998: levels derived as 1 - c are
# compared within a few ulp.
ULP = 1e-15


@pytest.mark.parametrize("name", ["F-test", "t-test", "t-test-bonferroni", "t-test-holm"])
def test_irace_tests_take_alpha(name):
    assert make_test(name, confidence=0.9)[0].alpha == pytest.approx(0.1, abs=ULP)
    assert make_test(name)[0].alpha == 0.05  # the test's own default otherwise
    # irace's alpha (the command line's 1 - confidence) and an alpha= option win, in that order.
    assert make_test(name, alpha=0.2, confidence=0.9)[0].alpha == 0.2
    assert make_test(f"{name}:alpha=0.3", alpha=0.2, confidence=0.9)[0].alpha == 0.3


def test_bayesian_takes_both_credibilities():
    default = make_test("bayesian")[0]
    assert (default.credibility, default.gate_credibility) == (0.975, 0.95)
    test = make_test("bayesian", confidence=0.9)[0]
    assert (test.credibility, test.gate_credibility) == (0.9, 0.9)
    test = make_test("bayesian:credibility=0.99", confidence=0.9)[0]
    assert (test.credibility, test.gate_credibility) == (0.99, 0.9)


def test_posterior_best_takes_the_race_wide_error_rate():
    assert make_test("posterior-best")[0].error_rate is None
    assert make_test("posterior-best", confidence=0.99)[0].error_rate == pytest.approx(0.01, abs=ULP)
    assert make_test("posterior-best:error_rate=0.2", confidence=0.99)[0].error_rate == 0.2


def test_correlated_t_takes_its_credibility_and_refuses_a_coin_flip():
    assert make_test("correlated-t", confidence=0.8)[0].credibility == 0.8
    with pytest.raises(ValueError, match=r"`credibility` must be in \(0\.5, 1\); got 0\.4"):
        make_test("correlated-t", confidence=0.4)


def test_hierarchical_takes_its_credibility_and_its_base_test_the_error_rate():
    test = make_test("hierarchical:test_fraction=0.1")[0]
    assert test.credibility == 0.95 and test.base.error_rate is None
    test = make_test("hierarchical:test_fraction=0.1", confidence=0.9)[0]
    assert test.credibility == 0.9
    assert type(test.base).__name__ == "PosteriorBestTest"
    assert test.base.error_rate == pytest.approx(0.1, abs=ULP)
    assert make_test("hierarchical:test_fraction=0.1,base=None", confidence=0.9)[0].base is None


def test_every_entry_maps_confidence():
    # A new test in the table states its level too (or says it has none, deliberately).
    assert all(entry.confidence_options is not None for entry in RACING_TESTS)


def test_confidence_is_checked_and_ignored_for_a_class_by_path():
    with pytest.raises(ValueError, match=r"`confidence` must lie in \(0, 1\); got 1\.0"):
        make_test("bayesian", confidence=1.0)
    with pytest.raises(TypeError, match="`confidence` must be a number"):
        make_test("bayesian", confidence="0.9")
    test, _ = make_test("racer.racing.posterior_best:PosteriorBestTest", confidence=0.9)
    assert test.error_rate is None  # racer cannot know which option is a class's level
