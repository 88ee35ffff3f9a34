"""One name per quantity across racer's five entry points (docs/conventions.md).

``racer.race``/``racer.Race``, ``racer.tune``, ``IteratedRace``, ``RaceSearchCV`` and the
``racer`` command: each quantity they share has one Python keyword everywhere and one
command-line name, read here from the signatures (``inspect.signature``) and from the
command's parser and scenario options. A former or foreign name may only survive as a
deprecated alias that warns and names the new keyword. A failure prints the table as found.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import warnings

import pytest

import racer

# quantity -> (Python keywords, command-line names, names no entry point may take silently)
QUANTITIES = {
    "budget": (("budget",), ("maxExperiments",),
               ("max_fits", "max_experiments", "maxExperiments", "max_evaluations")),
    "racing test": (("test",), ("--racing-test", "testType"),
                    ("racing_test", "test_type", "testType")),
    "elites kept": (("min_survivors",), ("minNbSurvival",),
                    ("n_elites", "min_survival", "minNbSurvival", "n_survivors")),
    "failure policy": (("on_error",), ("--on-error",), ("error_policy", "on_failure")),
    "storage": (("storage",), ("execDir",), ("exec_dir", "execDir", "journal", "journal_dir")),
    "seed": (("random_state",), ("seed",), ("seed", "random_seed", "rng")),
    "parallelism": (("n_jobs", "executor", "timeout"),
                    ("--parallel", "--executor", "targetRunnerTimeout"),
                    ("parallel", "n_workers", "workers", "target_runner_timeout")),
    "direction": (("direction",), ("objectives",), ("directions", "maximize", "objectives")),
}
ENTRY_POINTS = ("race/Race", "racer.tune", "IteratedRace", "RaceSearchCV", "racer --scenario")
# What an entry point does not take, and why (docs/conventions.md): RaceSearchCV is a
# scikit-learn search (error_score for failures, greater-is-better scorers, one answer, no
# storage of its own).
ABSENT = {"RaceSearchCV": {"elites kept", "failure policy", "storage", "direction"}}
# A valid value of each quantity, to call an entry point with a former name of it.
VALUES = {"budget": 200, "racing test": "t-test", "elites kept": 2}
ON_ERROR = ("raise", "eliminate", "worst")
ON_ERROR_RENAMED = {"stop": "raise", "reject": "eliminate"}


def _parameters(*functions) -> set[str]:
    names = set()
    for f in functions:
        names |= {p.name for p in inspect.signature(f).parameters.values()
                  if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return names


def _keywords(entry: str) -> set[str]:
    """The keywords an entry point accepts: its signature, plus the irace options
    ``racer.tune`` passes through ``**options``."""
    if entry == "race/Race":
        return _parameters(racer.race, racer.Race.__init__, racer.Race.run)
    if entry == "racer.tune":
        module = importlib.import_module("racer._tune")
        names = _parameters(racer.tune)
        if any(p.kind == p.VAR_KEYWORD for p in inspect.signature(racer.tune).parameters.values()):
            names |= set(getattr(module, "OPTION_NAMES", {}))
        return names
    if entry == "IteratedRace":
        from racer.adapters.optuna import IteratedRace

        return _parameters(IteratedRace.__init__)
    if entry == "RaceSearchCV":
        from racer.adapters.sklearn import RaceSearchCV

        return _parameters(RaceSearchCV.__init__)
    raise AssertionError(entry)


def _command_names() -> set[str]:
    """The command's option strings and its scenario options."""
    from racer.cli._main import _parser
    from racer.cli.scenario import OPTIONS

    strings = {s for action in _parser()._actions for s in action.option_strings}
    return strings | set(OPTIONS)


def _call_with(entry: str, keyword: str, value) -> None:
    """Call ``entry`` with ``keyword=value`` and otherwise valid, small settings."""
    if entry == "race/Race":
        racer.Race([1, 2, 3], **{keyword: value})
    elif entry == "racer.tune":
        settings = {"budget": 150, "random_state": 3, "progress": False}
        settings.pop(keyword, None)
        racer.tune(lambda c, i, s: (c["x"] - 0.3) ** 2 + i, 'x "" r (0, 1)',
                   [0.1 * k for k in range(10)], **settings, **{keyword: value})
    elif entry == "IteratedRace":
        from optuna.distributions import FloatDistribution

        from racer.adapters.optuna import IteratedRace

        settings = {"budget": 100, "progress": False}
        settings.pop(keyword, None)
        IteratedRace(lambda p, i: p["x"], {"x": FloatDistribution(0, 1)}, [0, 1, 2],
                     **settings, **{keyword: value}).run()
    elif entry == "RaceSearchCV":
        from sklearn.datasets import load_iris
        from sklearn.neighbors import KNeighborsClassifier

        from racer.adapters.sklearn import RaceSearchCV

        X, y = load_iris(return_X_y=True)
        RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 5]},
                     **{keyword: value}).fit(X, y)
    else:
        raise AssertionError(entry)


def _warns_naming(entry: str, old: str, new: str, value) -> bool:
    """Whether ``entry(old=value)`` raises a FutureWarning naming ``new`` (warnings are
    errors here, so nothing runs once the warning is given)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        try:
            _call_with(entry, old, value)
        except FutureWarning as warning:
            return re.search(rf"\b{new}\b", str(warning)) is not None
        except Exception:  # noqa: BLE001 - refused without the warning: not an alias
            return False
    return False


def _python_cell(entry: str, keywords: set, quantity: str) -> tuple[str, bool]:
    """``(cell, right)``: the names ``entry`` takes for ``quantity`` as the table shows them
    (a former name that warns marked "deprecated", one that does not with "!"), and whether
    that is the one name the conventions give."""
    names, _, former = QUANTITIES[quantity]
    found = [n for n in names if n in keywords]
    expected = [] if quantity in ABSENT.get(entry, ()) else list(names)
    right = found == expected
    cell = ", ".join(found) or "—"
    for old in (n for n in former if n in keywords):
        ok = _warns_naming(entry, old, names[0], VALUES.get(quantity))
        cell += f" (+{old}: {'deprecated' if ok else 'NOT WARNED!'})"
        right = right and ok
    if found and not expected:
        cell += " (should be absent!)"
    elif not found and expected:
        cell += f" (missing {', '.join(expected)}!)"
    return cell, right


def _table() -> tuple[str, bool]:
    """The table of names as found, and whether every cell is right."""
    command = _command_names()
    columns = {entry: {} for entry in ENTRY_POINTS}
    all_right = True
    for entry in ENTRY_POINTS[:-1]:
        keywords = _keywords(entry)
        for quantity in QUANTITIES:
            cell, right = _python_cell(entry, keywords, quantity)
            columns[entry][quantity] = cell
            all_right = all_right and right
    for quantity, (_, names, _) in QUANTITIES.items():
        missing = [n for n in names if n not in command]
        columns[ENTRY_POINTS[-1]][quantity] = ", ".join(names) + (
            f" (missing {', '.join(missing)}!)" if missing else "")
        all_right = all_right and not missing
    header = "| quantity | " + " | ".join(ENTRY_POINTS) + " |"
    rows = [f"| {q} | " + " | ".join(columns[e][q] for e in ENTRY_POINTS) + " |"
            for q in QUANTITIES]
    return "\n".join([header, "|---" * (len(ENTRY_POINTS) + 1) + "|", *rows]), all_right


def test_each_quantity_has_one_name_across_the_entry_points():
    table, right = _table()
    assert right, "names as found (docs/conventions.md has the one name of each):\n" + table


def test_on_error_takes_one_set_of_values():
    # Race and IteratedRace: raise, eliminate, worst and nothing else.
    pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    from racer.adapters.optuna import IteratedRace

    for value in ON_ERROR:
        racer.Race([1, 2, 3], on_error=value)
        IteratedRace(lambda p, i: p["x"], {"x": FloatDistribution(0, 1)}, [0, 1, 2],
                     budget=100, on_error=value)
    for old in ON_ERROR_RENAMED:
        with pytest.raises(ValueError, match="`on_error`"):
            racer.Race([1, 2, 3], on_error=old)
        with pytest.raises(ValueError, match="`on_error`"):
            IteratedRace(lambda p, i: p["x"], {"x": FloatDistribution(0, 1)}, [0, 1, 2],
                         budget=100, on_error=old)
    # racer.tune: a wrong value is refused with the three; a former one is never silent.
    with pytest.raises(ValueError) as refused:
        _call_with("racer.tune", "on_error", "ignore")
    assert all(f"'{value}'" in str(refused.value) for value in ON_ERROR), str(refused.value)
    for old, new in ON_ERROR_RENAMED.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            with pytest.raises((FutureWarning, ValueError), match=new):
                _call_with("racer.tune", "on_error", old)


def test_the_command_takes_the_same_on_error_values(capsys):
    from racer.cli._main import _parser

    parsed = {}
    for value in ON_ERROR:
        parsed[value] = _parser().parse_args(["--on-error", value]).on_error
        assert capsys.readouterr().err == ""
    assert len(set(parsed.values())) == 3
    assert _parser().parse_args([]).on_error == parsed["raise"]
    for old, new in ON_ERROR_RENAMED.items():
        assert _parser().parse_args(["--on-error", old]).on_error == parsed[new]
        err = capsys.readouterr().err
        assert f"--on-error {old} is renamed --on-error {new}" in err, err
    with pytest.raises(SystemExit):
        _parser().parse_args(["--on-error", "ignore"])
    err = capsys.readouterr().err
    assert all(f"'{value}'" in err for value in ON_ERROR), err


def test_one_default_racing_test_per_purpose():
    # A race of given candidates: racer.engine.DEFAULT_RACE_TEST. A tuning (racer.tune,
    # IteratedRace, the command): racer.racing.registry.DEFAULT_TUNING_TEST.
    # docs/conventions.md says why each.
    pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution

    import racer.cli._main as command
    from racer.adapters.optuna import IteratedRace
    from racer.engine import DEFAULT_RACE_TEST
    from racer.racing import registry

    assert type(racer.Race([1, 2, 3])._test) is registry.lookup(DEFAULT_RACE_TEST).test_class
    tuning = registry.lookup(registry.DEFAULT_TUNING_TEST)
    driver = IteratedRace(lambda p, i: p["x"], {"x": FloatDistribution(0, 1)}, [0, 1, 2],
                          budget=100, progress=False)
    assert type(driver._test) is tuning.test_class
    assert driver._test.get_params() == tuning.build().get_params()
    assert getattr(command, "DEFAULT_TEST", tuning.name) == tuning.name


def _fields(cls) -> set[str]:
    return ({f.name for f in dataclasses.fields(cls)}
            | {name for name, value in vars(cls).items() if isinstance(value, property)})


def test_results_give_a_quantity_one_name():
    # docs/conventions.md, "Results": the same quantity under the same name, the earlier
    # names kept as aliases.
    pytest.importorskip("optuna")
    from sklearn.datasets import load_iris
    from sklearn.neighbors import KNeighborsClassifier

    from racer.adapters.optuna import IteratedRaceResult
    from racer.adapters.sklearn import RaceSearchCV

    results = {"RaceResult": racer.RaceResult, "TuneResult": racer.TuneResult,
               "IteratedRaceResult": IteratedRaceResult}
    expected = {
        "best": ("RaceResult", "TuneResult", "IteratedRaceResult"),
        "n_evaluations": ("RaceResult", "TuneResult", "IteratedRaceResult"),
        "n_iterations": ("TuneResult", "IteratedRaceResult"),
        "stop_reason": ("RaceResult", "TuneResult"),
        "best_params": ("IteratedRaceResult",),
        "experiments": ("TuneResult",),
        "iterations": ("TuneResult",),
    }
    missing = [f"{cls}.{name}" for name, classes in expected.items() for cls in classes
               if name not in _fields(results[cls])]
    assert not missing, missing
    X, y = load_iris(return_X_y=True)
    search = RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 5]},
                          random_state=0).fit(X, y)
    assert search.n_evaluations_ == search.n_fits_ == search.race_.n_evaluations > 0
