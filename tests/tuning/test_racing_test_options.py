"""``--racing-test NAME:key=value`` with a key the test does not take is refused naming the key,
the test, a close match and the valid keys (not a constructor's "unexpected keyword
argument")."""

import re

import pytest

from racer.racing.registry import make_test


@pytest.mark.parametrize("spec, pattern", [
    ("posterior-best:error_rat=0.01",
     r"racing test 'posterior-best' has no option 'error_rat' \(did you mean 'error_rate'\?\); "
     r"its options are .*\berror_rate\b"),
    ("t-test:confidence=0.99",
     r"racing test 't-test' has no option 'confidence'; its options are alpha, adjust; a "
     r"scenario's confidence \(--confidence, racer.tune's confidence=\) sets its level "
     r"through 'alpha'"),
    ("bayes:credibilty=0.9", r"racing test 'bayesian' has no option 'credibilty' "
                             r"\(did you mean 'credibility'\?\)"),
    ("racer.racing.base:KeepAll:foo=1",
     r"racing test 'racer.racing.base:KeepAll' has no option 'foo'; its options are none"),
])
def test_an_unknown_option_names_the_key_the_test_and_the_valid_keys(spec, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        make_test(spec)
    assert "unexpected keyword" not in str(info.value)


def test_known_options_and_bad_values_are_unchanged():
    assert make_test("posterior-best:error_rate=0.01")[0].error_rate == 0.01
    # A known key with a bad value is still the test's own refusal.
    with pytest.raises(ValueError, match=r"racing test 't-test:alpha=x': `alpha`"):
        make_test("t-test:alpha=x")


@pytest.mark.parametrize("spec, key, close", [
    ("posterior-best:error_rat=0.01", "error_rat", "error_rate"),
    ("t-test:confidence=0.99", "confidence", None),
])
def test_the_command_refuses_an_unknown_option_before_any_run(tmp_path, capsys, spec, key, close):
    from racer.cli import EXIT_SCENARIO, main

    (tmp_path / "parameters.txt").write_text('x "--x " r (0, 5)\n')
    (tmp_path / "instances.txt").write_text("a\nb\n")
    runner = tmp_path / "target-runner"
    runner.write_text("#!/bin/sh\nexit 1\n")  # never started: the test is refused first
    runner.chmod(0o755)
    (tmp_path / "scenario.txt").write_text(
        'parameterFile = "parameters.txt"\nmaxExperiments = 100\n'
        'trainInstancesFile = "instances.txt"\ntargetRunner = "target-runner"\n')
    code = main(["--scenario", str(tmp_path / "scenario.txt"), "--check", "--racing-test", spec])
    err = capsys.readouterr().err
    assert code == EXIT_SCENARIO
    assert "--racing-test" in err and f"has no option {key!r}" in err
    assert "unexpected keyword" not in err
    if close is not None:
        assert re.search(rf"did you mean {close!r}", err)
