"""TRaceTest: irace 3.5's t-test races (``aux.ttest``), checked against irace itself.

The irace answers are stored in ``tests/data/trace_reference.json`` (made by
``benchmarks/trace_reference.py``, which runs ``irace:::aux.ttest`` in R); when ``Rscript``
with irace is installed, the same matrices also go to R live.
"""

import json
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from racer import Race
from racer.racing.trace import TRaceTest
from racer.stats import p_adjust
from racer.racing.base import RaceView

from _helpers import ROOT

REFERENCE = json.loads((ROOT / "tests" / "data" / "trace_reference.json").read_text())
ALPHA = 1.0 - REFERENCE["confidence"]
CASES = REFERENCE["cases"]


def _decisions(costs, adjust):
    """(alive flags, best column, smallest adjusted p) as irace's aux.ttest returns them."""
    costs = np.asarray(costs, dtype=np.float64)
    test = TRaceTest(alpha=ALPHA, adjust=adjust)
    out = test.decide(RaceView.from_scores(-costs), np.random.default_rng(0))
    alive = np.ones(costs.shape[1], dtype=bool)
    alive[[e.index for e in out]] = False
    p = test.pvalues(costs)
    best = int(np.argmin(costs.mean(axis=0)))
    assert all(e.by == best for e in out)
    return alive.tolist(), best, float(p.min())


def _assert_as_irace(costs, adjust, irace):
    alive, best, pmin = _decisions(costs, adjust)
    assert alive == irace["alive"]
    assert best == irace["best"]
    # R's pt and scipy's t distribution agree to ~1e-13 relative; 1e-9 leaves room.
    assert pmin == pytest.approx(irace["p_value"], rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("adjust", ["none", "bonferroni", "holm"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_eliminations_are_irace_s_stored(case, adjust):
    _assert_as_irace(case["costs"], adjust, case["irace"][adjust])


def test_the_stored_cases_exercise_every_branch():
    # The fixture would test little if irace kept everything or if adjust never mattered.
    names = {c["name"]: c for c in CASES}
    dropped = {a: sum(not x for c in CASES for x in c["irace"][a]["alive"]) for a in ("none", "holm")}
    assert dropped["none"] > dropped["holm"] > 0
    assert names["dominated"]["irace"]["none"]["alive"] == [False, True, False, False]
    assert not names["constant-best"]["irace"]["holm"]["alive"][1]
    assert sum(len(c["costs"][0]) == 2 for c in CASES) >= 5


@pytest.mark.slow
def test_eliminations_are_irace_s_live():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from trace_reference import cases, irace_available, run_irace
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    if not irace_available():
        pytest.skip("Rscript with irace is not installed (the stored answers are checked)")
    named = cases()
    # The generator still makes the stored matrices, and R still gives the stored answers.
    assert [n for n, _ in named] == [c["name"] for c in CASES]
    for (_, y), c in zip(named, CASES):
        np.testing.assert_array_equal(y, np.asarray(c["costs"]))
    answers = run_irace([y for _, y in named], 1.0 - ALPHA)
    extra = np.random.default_rng(7).normal(0.0, 1.0, (6, 9, 5)) + np.linspace(0, 1.2, 5)
    answers_extra = run_irace(list(extra), 1.0 - ALPHA)
    for (_, y), ans in zip(named, answers):
        for adjust, irace in ans.items():
            _assert_as_irace(y, adjust, irace)
    for y, ans in zip(extra, answers_extra):
        for adjust, irace in ans.items():
            _assert_as_irace(y, adjust, irace)


def test_pvalues_are_scipy_s_paired_t_tests_then_p_adjust():
    rng = np.random.default_rng(3)
    costs = rng.normal(0.0, 1.0, (12, 6)) + np.array([0.0, 0.3, 0.6, 0.9, 1.2, 0.05])
    costs[:, 4] = costs[:, 0] + 1.0 + rng.uniform(0, 0.1, 12)  # never better than the best
    best = int(np.argmin(costs.mean(axis=0)))
    assert best == 0
    raw = np.array([1.0] + [stats.ttest_rel(costs[:, 0], costs[:, j]).pvalue if j != 4 else 0.0
                            for j in range(1, 6)])
    assert 0.0 < raw[1:4].min() and raw[5] > 0.05
    np.testing.assert_allclose(TRaceTest(adjust="none").pvalues(costs), raw, rtol=1e-12)
    for adjust, method in (("bonferroni", "bonferroni"), ("holm", "holm")):
        expected = multipletests(raw, method=method)[1]
        np.testing.assert_allclose(TRaceTest(adjust=adjust).pvalues(costs), expected, rtol=1e-12)
        np.testing.assert_allclose(p_adjust(raw, adjust), expected, rtol=1e-12)


def test_probability_is_the_adjusted_p_value_and_larger_scores_are_better():
    rng = np.random.default_rng(5)
    costs = rng.normal(0.0, 0.3, (15, 4)) + np.array([2.0, 0.0, 0.1, 3.0])
    test = TRaceTest(alpha=0.05, adjust="holm")
    out = test.decide(RaceView.from_scores(-costs), rng)  # scores: larger is better
    p = test.pvalues(costs)
    assert {e.index for e in out} == {0, 3}  # the costly ones go, not the cheap ones
    assert all(e.by == 1 and e.reason == "dominated" for e in out)
    assert [e.probability for e in out] == [p[e.index] for e in out]
    assert p[1] == 1.0 and p[2] > 0.05


def test_two_survivors_use_the_same_t_test():
    rng = np.random.default_rng(11)
    x = rng.normal(0.0, 1.0, 20)
    costs = np.column_stack([x, x + rng.normal(1.0, 1.0, 20)])
    out = TRaceTest().decide(RaceView.from_scores(-costs), rng)
    p = stats.ttest_rel(costs[:, 0], costs[:, 1]).pvalue
    assert not np.all(costs[:, 0] <= costs[:, 1])  # so the t-test decides, not domination
    assert p < 0.05 and [(e.index, e.probability) for e in out] == [(1, pytest.approx(p, rel=1e-12))]


def test_nothing_to_decide_with_one_row_or_one_survivor():
    assert TRaceTest().decide(RaceView.from_scores([[1.0, 5.0, 9.0]]), None) == []
    assert TRaceTest().decide(RaceView.from_scores([[1.0], [2.0]]), None) == []


def test_the_race_orders_survivors_by_mean():
    # Column 0 wins 9 instances of 10 by a little and loses one by a lot: first by rank sum,
    # second by mean cost. The t-test keeps both (p ~ 0.34); irace's t-race orders by mean.
    costs = np.full((10, 2), 1.0)
    costs[:, 1] = 1.1 + 0.01 * np.arange(10)
    costs[3, 0] = 10.0
    assert TRaceTest.winner == "mean"
    res = Race(list(range(2)), test=TRaceTest(), direction="minimize", first_test=5,
               instances=list(range(10)), random_state=0).run(lambda c, i: costs[i, c])
    assert res.survivor_indices.tolist() == [1, 0]
    rank_sum = Race(list(range(2)), test=TRaceTest(), direction="minimize", first_test=5,
                    instances=list(range(10)), random_state=0, winner="rank_sum"
                    ).run(lambda c, i: costs[i, c])
    assert rank_sum.survivor_indices.tolist() == [0, 1]


@pytest.mark.parametrize("kwargs, match", [
    ({"alpha": 0.0}, "`alpha` must lie in"),
    ({"alpha": 1.5}, "`alpha` must lie in"),
    ({"adjust": "BH"}, "`adjust` must be one of"),
    ({"adjust": None}, "`adjust` must be one of"),
])
def test_parameters_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TRaceTest(**kwargs)


def test_inputs_are_validated():
    with pytest.raises(TypeError, match="`view` must be a racer.racing.base.RaceView"):
        TRaceTest().decide(np.zeros((3, 2)), None)
    with pytest.raises(ValueError, match="`costs` must be a finite"):
        TRaceTest().pvalues([[1.0, 2.0]])
    with pytest.raises(ValueError, match="`costs` must be a finite"):
        TRaceTest().pvalues([[1.0, np.nan], [2.0, 1.0]])


# A runner whose configuration x = 1.0 costs 1.0 except on inst-1 (10.0), x = 1.1 costs
# about 1.1 everywhere, x = 3 about 3: x = 1.0 has the better rank sum, x = 1.1 the better
# mean.
_RUNNER = """
import random, sys

cid, iid, seed, inst = sys.argv[1:5]
x = float(dict(zip(sys.argv[5::2], sys.argv[6::2]))["--x"])
noise = random.Random(int(seed) * 100 + int(cid)).gauss(0, 0.001)
print(x + noise + (9.0 if x < 1.05 and inst == "inst-1" else 0.0))
"""


@pytest.mark.slow
def test_cli_t_test_scenario_runs_and_orders_elites_by_mean(tmp_path, capsys):
    from racer.cli import EXIT_OK, main
    from racer.tuning.parameters import read_configurations, read_parameters

    (tmp_path / "arena").mkdir()
    (tmp_path / "parameters.txt").write_text('x "--x " r (0, 5)\n')
    r = tmp_path / "target-runner"
    r.write_text(f"#!{sys.executable}\n" + textwrap.dedent(_RUNNER))
    r.chmod(0o755)
    (tmp_path / "train.txt").write_text("".join(f"inst-{i}\n" for i in range(1, 9)))
    (tmp_path / "configs.txt").write_text("x\n1.0\n1.1\n3.0\n")
    base = textwrap.dedent("""
        parameterFile = "parameters.txt"
        targetRunner = "target-runner"
        execDir = "arena"
        trainInstancesDir = ""
        trainInstancesFile = "train.txt"
        configurationsFile = "configs.txt"
        maxExperiments = 40
        seed = 2
        """)
    space = read_parameters(str(tmp_path / "parameters.txt"))
    order = {}
    for test_type in ("t-test", "F-test"):
        (tmp_path / "scenario.txt").write_text(base + f'testType = "{test_type}"\n')
        assert main(["--scenario", str(tmp_path / "scenario.txt"), "--fixed-list", "--fresh",
                     "--no-report", "--parallel", "2"]) == EXIT_OK
        out = capsys.readouterr().out
        elites = read_configurations(str(tmp_path / "arena" / "elites.txt"), space)
        order[test_type] = [e["x"] for e in elites]
        assert ("according to the mean cost" in out) == (test_type == "t-test")
    assert "test TRaceTest" not in out and "test FRaceTest" in out
    # x = 3 is never better than x = 1.1: the t-test race drops it untested. The survivors
    # are ordered by mean cost (x = 1.1 first); the F-race ranks x = 1.0 first (its
    # Wilcoxon test even drops x = 1.1, which loses on 7 instances of 8).
    assert order["t-test"] == [1.1, 1.0]
    assert order["F-test"][0] == 1.0


def test_cli_test_type_names(capsys):
    from racer.cli._main import UsageError, make_test

    # irace's names and aliases, any letter case (irace lower-cases them); --racing-test too.
    for name, adjust in (("t-test", "none"), ("T.NONE", "none"), ("t-test-holm", "holm"),
                         ("t.bonferroni", "bonferroni"), ("t-test-bonferroni", "bonferroni")):
        test, winner = make_test(name, 0.9)
        assert (type(test).__name__, test.adjust, test.alpha, winner) == (
            "TRaceTest", adjust, pytest.approx(0.1), "mean")
    assert type(make_test("Friedman", 0.95)[0]).__name__ == "FRaceTest"
    with pytest.raises(UsageError, match="'t-test-holm'.*got 't-test-sidak'"):
        make_test("t-test-sidak", 0.95)


def test_cli_unknown_test_type_is_a_scenario_error(tmp_path, capsys):
    from racer.cli import EXIT_SCENARIO, main

    (tmp_path / "parameters.txt").write_text('x "--x " r (0, 5)\n')
    (tmp_path / "scenario.txt").write_text(
        'parameterFile = "parameters.txt"\nmaxExperiments = 100\ntestType = "wilcoxon"\n')
    assert main(["--scenario", str(tmp_path / "scenario.txt"), "--check"]) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert "testType" in err and "'wilcoxon' is not a test irace knows" in err
