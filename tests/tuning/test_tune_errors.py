"""``racer.tune``'s refusals speak Python: each names tune's keyword (never the command line's
option) and says what to do, and each is a ValueError or TypeError. Also the renamed keywords
(``test``, ``on_error``'s values), whose former names still work with a FutureWarning."""

import concurrent.futures
import re
import warnings

import pytest

import racer
from racer.tuning.tuner import BudgetError

SPACE = 'x "" r (0, 1)\nk "" c (a, b)\nw "" i (1, 9) | k == "b"'
TRAIN = [0.1 * k for k in range(10)]


def timed(config, instance, seed):
    """Every run reports 0.05 s."""
    return (config["x"] - 0.3) ** 2 + instance, 0.05


def quadratic(config, instance, seed):
    return (config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance


def tune(evaluate=quadratic, **kw):
    return racer.tune(evaluate, SPACE, TRAIN, **{"random_state": 1, "progress": False, **kw})


@pytest.mark.slow  # runs a tuning
def test_a_max_time_too_small_says_how_many_seconds_are_needed():
    with pytest.raises(BudgetError) as info:
        tune(timed, max_time=2)
    text = str(info.value)
    assert text.startswith("`max_time` = 2 s is too small: runs took 0.05 s each")
    assert "maxExperiments" not in text and "maxTime" not in text and "budget" not in text
    # The tuner estimates the runs a time buys as (max_time - time spent) / mean time: 2 s
    # buy round(1.95 / 0.05) = 39 runs.
    assert "it pays for about 39 runs" in text
    needed = int(re.search(r"the first iteration needs (\d+) runs", text).group(1))
    seconds = float(re.search(r"give `max_time` = ([\d.]+) s or more", text).group(1))
    assert seconds == pytest.approx(0.05 + needed * 0.05, abs=0.01)
    # The seconds said are enough, and a run's time less is not.
    assert tune(timed, max_time=seconds).experiments > 0
    with pytest.raises(BudgetError, match="is too small"):
        tune(timed, max_time=seconds - 0.05)


def test_the_command_lines_name_of_a_keyword_is_refused_naming_tunes():
    with pytest.raises(TypeError, match="'maxExperiments': the command line's maxExperiments "
                                        "is `budget` here"):
        tune(maxExperiments=100)
    with pytest.raises(TypeError, match="'seed': the command line's seed is `random_state`"):
        tune(budget=100, seed=3)
    with pytest.raises(TypeError, match="'firstTest': the command line's firstTest is "
                                        "`first_test`"):
        tune(budget=100, firstTest=2)


def test_an_unknown_keyword_suggests_the_closest_one():
    with pytest.raises(TypeError, match="unexpected keyword argument 'fisrt_test'; did you "
                                        "mean `first_test`?"):
        tune(budget=100, fisrt_test=3)
    with pytest.raises(TypeError, match="'zzz' \\(irace's options here: first_test, "):
        tune(budget=100, zzz=3)


def test_a_pareto_test_on_one_objective_asks_for_direction():
    with pytest.raises(ValueError) as info:
        tune(budget=100, test="pareto")
    text = str(info.value)
    assert text.startswith("`test` 'pareto' races on several objectives: give `direction`")
    assert "--objectives" not in text and "target-runner" not in text


def test_a_bad_racing_test_is_named_by_its_keyword():
    with pytest.raises(ValueError, match="`test` 'bayes:eps=2'"):
        tune(budget=100, test="bayes:eps=2")


def test_a_storage_that_is_a_file_is_refused_naming_storage(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    with pytest.raises(ValueError, match=f"`storage` must be a folder .*; {path} is a file"):
        tune(budget=100, storage=path)
    with pytest.raises(ValueError, match="`storage`: cannot make the folder"):
        tune(budget=100, storage=path / "below")


def test_an_executor_with_n_jobs_is_refused_naming_both():
    with concurrent.futures.ThreadPoolExecutor(1) as executor:
        with pytest.raises(ValueError, match="give either `executor` or `n_jobs`, not both; "
                                             "got n_jobs=2"):
            tune(budget=100, executor=executor, n_jobs=2)


@pytest.mark.slow  # runs a tuning
def test_racing_test_is_the_former_name_of_test():
    with pytest.warns(FutureWarning, match="tune\\(test=...\\)"):
        former = tune(budget=120, racing_test="F-test")
    assert former.elite_ids == tune(budget=120, test="F-test").elite_ids
    with pytest.raises(TypeError, match="give `test` only"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tune(budget=120, racing_test="F-test", test="t-test")


@pytest.mark.slow  # runs a tuning
def test_irace_test_type_warns_naming_test_and_races_as_before():
    with pytest.warns(FutureWarning, match="tune\\(test=...\\)"):
        typed = tune(budget=120, test_type="F-test")
    assert typed.elite_ids == tune(budget=120, test="F-test").elite_ids
    with pytest.warns(FutureWarning), pytest.raises(ValueError,
                                                    match="`test_type` must be one of ''"):
        tune(budget=120, test_type="wilcoxon")


def failing(config, instance, seed):
    if config["k"] == "b":
        raise ZeroDivisionError("k = b")
    return quadratic(config, instance, seed)


@pytest.mark.slow  # runs a tuning
@pytest.mark.parametrize("former, new", [("stop", "raise"), ("reject", "eliminate")])
def test_on_errors_former_words_warn_and_mean_the_new_ones(former, new):
    with pytest.warns(FutureWarning, match=f"on_error={new!r}"):
        try:
            got = tune(failing, budget=150, on_error=former).elite_ids
        except racer.EvaluationError:
            got = "raised"
    try:
        expected = tune(failing, budget=150, on_error=new).elite_ids
    except racer.EvaluationError:
        expected = "raised"
    assert got == expected and (got == "raised") == (new == "raise")


@pytest.mark.slow  # runs a tuning
def test_on_error_takes_racer_races_words():
    with pytest.raises(racer.EvaluationError, match="on_error='eliminate' or 'worst'"):
        tune(failing, budget=150)  # "raise" by default
    worst = tune(failing, budget=150, on_error="worst")
    assert worst.best["k"] == "a"
    with pytest.raises(ValueError, match="`on_error` must be one of 'raise', 'eliminate', "
                                         "'worst'; got 'ignore'"):
        tune(budget=150, on_error="ignore")


def test_one_rule_is_refused_in_each_callers_words():
    from racer._tune import _NAMES
    from racer.cli._main import COMMAND_NAMES
    from racer.tuning.settings import Settings, SettingsError

    for names, words in ((_NAMES, ("`first_test`", "`each_test`", "`min_survivors`",
                                   "`random_state`", "`budget`", "`max_time`")),
                         (COMMAND_NAMES, ("firstTest", "eachTest", "minNbSurvival", "seed",
                                          "maxExperiments", "maxTime"))):
        first, each, survivors, seed, budget, max_time = words
        with pytest.raises(SettingsError, match=f"^{first} = 4 must be a multiple of {each} = 3$"):
            Settings(budget=10, first_test=4, each_test=3, names=names)
        with pytest.raises(SettingsError, match=f"^{survivors} must be an integer >= 0; got -1$"):
            Settings(budget=10, min_survivors=-1, names=names)
        with pytest.raises(SettingsError, match=f"^{seed} must be None or an integer >= 0"):
            Settings(budget=10, seed=-3, names=names)
        with pytest.raises(SettingsError, match=f"^set only one of {budget} and {max_time}$"):
            Settings(budget=10, max_time=5.0, names=names)
    with pytest.raises(TypeError, match="^`mu` must be an integer >= 1; got 2.5$"):
        Settings(budget=10, mu=2.5)


def test_every_setting_has_its_constraints_and_irace_options_name_settings():
    import dataclasses

    from racer.cli.scenario import OPTIONS
    from racer.tuning.settings import CONSTRAINTS, IRACE_OPTIONS, Settings

    fields = {f.name for f in dataclasses.fields(Settings)} - {"names", "advice"}
    assert set(CONSTRAINTS) == fields and set(IRACE_OPTIONS) <= fields
    # The defaults are irace's, and pass their own constraints (with a budget).
    default = Settings(budget=1)
    for field, irace in IRACE_OPTIONS.items():
        expected = OPTIONS[irace].default
        got = getattr(default, field)
        if field in ("budget", "confidence"):
            continue  # a budget is required; None: each test keeps its own level
        assert got == expected or (field == "n_jobs" and expected == 0), field


@pytest.mark.slow
def test_racer_tune_neither_imports_nor_raises_the_command_lines_errors():
    import json
    import subprocess
    import sys

    from _helpers.cli import ENV

    script = f"""
import json, sys, racer
caught = []
for kw in ({{"first_test": 0}}, {{"test": "pareto"}}, {{"budget": 8}}):
    try:
        racer.tune(lambda c, i, s: c["x"] + i, {SPACE!r}, {TRAIN!r}, progress=False,
                   **{{"budget": 100, **kw}})
    except Exception as exc:
        caught.append([type(exc).__module__, type(exc).__name__, isinstance(exc, ValueError)])
print(json.dumps({{"caught": caught, "cli": sorted(m for m in sys.modules if m.startswith("racer.cli"))}}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["cli"] == []
    assert len(got["caught"]) == 3 and all(valueerror for _, _, valueerror in got["caught"])
    assert all(not module.startswith("racer.cli") for module, _, _ in got["caught"])
