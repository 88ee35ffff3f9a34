"""The tuner's outlier rule (``outlier_factor``, ``--outlier-factor``): a configuration with a
run orders of magnitude costlier than the median survivor's on the same instance leaves its
race at once, whatever the racing test (racer.racing.OutlierGuard inside every race)."""

from __future__ import annotations

import pytest

import racer
from racer.tuning.settings import Settings, SettingsError

SPACE = 'x "" r (0, 1)\n'
TRAIN = [float(k) for k in range(1, 13)]


def heavy_tailed(config, instance, seed):
    # Every x above 0.8 is as good as the optimum on most instances and catastrophic (10^5
    # times an ordinary run) on three: a mean-based test cannot eliminate it for long, one
    # huge run keeping its t statistic near 1 (a SAT solver's run of 1.47 billion
    # propagations, typical runs 10^4-10^6, was seen to hold a tuning this way).
    if config["x"] > 0.8:
        return instance * (1e5 if instance in (1.0, 2.0, 3.0) else 1.0)
    return instance * (1.0 + (config["x"] - 0.3) ** 2)


def _runs_per_catastrophic_configuration(result):
    runs = result.runs
    rows = runs.to_dict("records") if hasattr(runs, "to_dict") else runs
    counts: dict = {}
    for row in rows:
        if row["iteration"] == 0 or row["status"] != "ok":
            continue
        if result.configurations[row["configuration"]]["x"] > 0.8:
            counts[row["configuration"]] = counts.get(row["configuration"], 0) + 1
    return counts


def _tune(**kw):
    return racer.tune(heavy_tailed, SPACE, TRAIN, budget=300, random_state=1, progress=False,
                      **kw)


def test_a_catastrophic_configuration_leaves_at_its_first_test():
    guarded, unguarded = _tune(), _tune(outlier_factor=None)
    with_guard = _runs_per_catastrophic_configuration(guarded)
    without = _runs_per_catastrophic_configuration(unguarded)
    assert with_guard and without  # the sampler did propose such configurations
    # The first test comes after firstTest = 5 instances (a catastrophic one among them
    # with this seed): with the rule no such configuration runs past it, while irace's
    # t-test alone keeps them for more instances and the sampler proposes more of them.
    assert max(with_guard.values()) == 5
    assert max(without.values()) > 5
    assert sum(without.values()) > 2 * sum(with_guard.values())
    assert guarded.best["x"] <= 0.8


def test_ordinary_costs_are_not_touched():
    # No run is 1000 times the median: the rule changes nothing, to the run.
    def smooth(config, instance, seed):
        return instance * (1.0 + (config["x"] - 0.3) ** 2)

    a = racer.tune(smooth, SPACE, TRAIN, budget=200, random_state=2, progress=False)
    b = racer.tune(smooth, SPACE, TRAIN, budget=200, random_state=2, progress=False,
                   outlier_factor=None)
    assert a.elite_ids == b.elite_ids and a.experiments == b.experiments


@pytest.mark.parametrize("bad", [1, 0.5, -3, float("nan"), float("inf"), "10", True])
def test_a_bad_outlier_factor_is_refused_naming_it(bad):
    with pytest.raises((ValueError, TypeError), match="outlier_factor"):
        racer.tune(heavy_tailed, SPACE, TRAIN, budget=100, outlier_factor=bad, progress=False)


def test_settings_refuse_a_factor_not_above_one():
    with pytest.raises(SettingsError, match="outlier_factor"):
        Settings(budget=100, outlier_factor=1.0)
    assert Settings(budget=100).outlier_factor == 1000.0
    assert Settings(budget=100, outlier_factor=None).outlier_factor is None


@pytest.mark.parametrize("value, expected", [("0", None), ("50", 50.0), ("1e4", 1e4)])
def test_the_command_reads_outlier_factor(value, expected):
    from racer.cli._main import _parser

    args = _parser().parse_args(["--outlier-factor", value])
    assert args.outlier_factor == expected


@pytest.mark.parametrize("value", ["1", "0.5", "-2", "abc", "inf"])
def test_the_command_refuses_a_bad_outlier_factor(value, capsys):
    from racer.cli._main import _parser

    with pytest.raises(SystemExit):
        _parser().parse_args(["--outlier-factor", value])
    assert "--outlier-factor" in capsys.readouterr().err
