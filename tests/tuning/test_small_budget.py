"""A budget below irace's minimum: irace's rule (refused) when the run asks for irace's
procedure, racer's small-budget plan (fewer iterations and elites) when the scenario leaves
``testType`` open (racer/tuning/schedule.py, ``IraceSchedule.small_budget_plan``)."""

import csv

import pytest

from racer.tuning.schedule import IraceSchedule
from racer.cli import EXIT_OK, EXIT_SCENARIO, main
from racer.tuning.run import irace_procedure_requested
from racer.tuning.tuner import BudgetError, Settings, Tuner
from racer.tuning.parameters import Parameter, ParameterSpace
from racer.racing.frace import FRaceTest

from _helpers.cli import make_scenario
from _helpers.tuner import TRAIN, FakeRunner

PARAMS = range(5, 16)
BUDGETS = range(30, 401, 10)


def space(n_params):
    """mode and x (what FakeRunner reads), then reals it ignores, ``n_params`` in all."""
    extra = [Parameter(f"y{i}", f"--y{i} ", "r", (0.0, 1.0)) for i in range(n_params - 2)]
    return ParameterSpace([Parameter("mode", "--mode ", "c", ("a", "b")),
                           Parameter("x", "--x ", "r", (-4.0, 4.0)), *extra], digits=3)


def test_irace_minimum_is_computeMinimumBudget():
    # irace 3.5, elitist: (minNbSurvival + 1) x nbIterations x (mu + eachTest + (nbIterations
    # - 1) x max(eachTest, elitistNewInstances)), both counts floor(2 + log2(parameters)):
    # 180 for 4-7 parameters (5 x 4 x 9), 300 for 8-15 (6 x 5 x 10), 504 for 16-31 (the
    # nbIterations > 5 branch: 7 x 6 x (5 + 1 + 1 x 1 + 5 x 1)).
    for n_params, minimum in [(4, 180), (7, 180), (8, 300), (15, 300), (16, 504)]:
        assert IraceSchedule(n_params=n_params).minimum_budget() == minimum
    # Non-elitist: (S + 1) x N x (mu + 5 eachTest).
    assert IraceSchedule(n_params=10).minimum_budget(elitist=False) == 6 * 5 * 10
    # Its own arguments: eachTest = 2, elitistNewInstances = 3, mu = 8 > firstTest.
    s = IraceSchedule(n_params=4, first_test=4, each_test=2, mu=8, new_instances=3)
    assert s.minimum_budget() == 5 * 4 * (8 + 2 + 3 * 3)


@pytest.mark.parametrize("n_params", PARAMS)
def test_the_plan_is_the_most_iterations_whose_minimum_fits(n_params):
    s = IraceSchedule(n_params=n_params, first_test=5, each_test=1, mu=5)
    minimum = s.minimum_budget()
    floor = s.minimum_budget(n_iterations=1, survivors=1)
    assert floor == 2 * (5 + 1)
    for budget in BUDGETS:
        plan = s.small_budget_plan(budget)
        if budget >= minimum:
            assert plan is None  # irace's schedule, untouched
            continue
        k = plan.n_iterations
        assert 1 <= k <= s.planned_iterations and plan.survivors == min(s.survivors, k)
        assert s.minimum_budget(n_iterations=k, survivors=plan.survivors) <= budget
        if k < s.planned_iterations:  # one more iteration would not fit
            assert s.minimum_budget(n_iterations=k + 1,
                                    survivors=min(s.survivors, k + 1)) > budget
        # The first race: irace's size for the first iteration's share of the budget, more
        # configurations than elites, every one up to firstTest within that share.
        share = budget // k
        assert plan.first_configurations == min(1024, share // (5 + 1))
        assert plan.first_configurations > plan.survivors
        assert plan.first_configurations * 5 <= share
        assert (plan.irace_minimum, plan.irace_iterations) == (minimum, s.planned_iterations)
    assert s.small_budget_plan(floor - 1) is None and s.small_budget_plan(floor) is not None


@pytest.mark.slow
@pytest.mark.parametrize("n_params,budget", [(5, 30), (5, 90), (5, 150), (10, 60), (10, 150),
                                             (15, 100), (15, 250)])
def test_the_tuner_races_the_plan_within_the_budget(tmp_path, n_params, budget):
    settings = Settings(max_experiments=budget, seed=2, budget_rule="racer")
    runner = FakeRunner()
    tuner = Tuner(space(n_params), runner, TRAIN, settings, FRaceTest(),
                  journal_dir=str(tmp_path / "j"))
    plan = tuner.budget_plan
    assert (tuner.n_iterations, tuner.min_survival) == (plan.n_iterations, plan.survivors)
    result = tuner.run()
    assert len(runner.calls) == result.experiments <= budget
    assert result.planned_iterations == plan.n_iterations
    assert result.iterations >= 1
    assert len(result.races[0][2]) == plan.first_configurations  # the first race's size
    assert 1 <= len(result.elites) <= plan.survivors
    note = tuner.plan_note()
    assert note.startswith(f"maxExperiments = {budget} is below irace's minimum for "
                           f"{n_params} parameters ({plan.irace_minimum} runs")
    assert (f"racing {plan.n_iterations} iteration" in note
            and f"first race of {plan.first_configurations} configurations" in note)


@pytest.mark.slow
def test_irace_rule_refuses_what_irace_refuses(tmp_path):
    # 150 runs, 5 parameters: irace's first race would have 6 configurations (> 4 elites), so
    # racer used to start it; irace refuses it (minimum 180), and so does irace's rule now.
    settings = Settings(max_experiments=150, seed=2)
    tuner = Tuner(space(5), FakeRunner(), TRAIN, settings, FRaceTest(),
                  journal_dir=str(tmp_path / "j"))
    assert tuner.budget_plan is None and tuner.plan_note() is None
    with pytest.raises(BudgetError, match=r"maxExperiments = 150 is too small: irace would "
                                          r"need at least 180 runs"):
        tuner.run()
    # At irace's minimum both rules race irace's schedule.
    for rule in ("irace", "racer"):
        t = Tuner(space(5), FakeRunner(), TRAIN, Settings(max_experiments=180, seed=2,
                                                          budget_rule=rule),
                  FRaceTest(), journal_dir=str(tmp_path / rule))
        assert t.budget_plan is None and t.n_iterations == 4
        assert t.run().experiments <= 180


def test_racer_rule_refuses_below_its_floor(tmp_path):
    settings = Settings(max_experiments=11, seed=2, budget_rule="racer")
    tuner = Tuner(space(5), FakeRunner(), TRAIN, settings, FRaceTest(),
                  journal_dir=str(tmp_path / "j"))
    with pytest.raises(BudgetError, match=r"maxExperiments = 11 is too small: racer races at "
                                          r"least 2 configurations .* 12 runs"):
        tuner.run()
    with pytest.raises(ValueError, match="budget_rule"):
        Tuner(space(5), FakeRunner(), TRAIN, Settings(max_experiments=90, budget_rule="small"),
              FRaceTest(), journal_dir=str(tmp_path / "k"))


def test_which_runs_ask_for_irace_procedure():
    assert irace_procedure_requested(None, "F-test")
    assert irace_procedure_requested(None, "t.holm")
    assert irace_procedure_requested("F-test", "")
    assert irace_procedure_requested("friedman:alpha=0.1", "")
    assert not irace_procedure_requested(None, "")
    assert not irace_procedure_requested("", "")
    # --racing-test wins over testType, as for the test itself.
    assert not irace_procedure_requested("posterior-best", "F-test")
    assert not irace_procedure_requested("racer.racing.frace:FRaceTest", "")


def _runs(tmp_path):
    with open(tmp_path / "arena" / "runs.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if int(r["iteration"]) > 0]


@pytest.mark.slow  # the target runner is a process per run
def test_command_races_a_budget_irace_refuses_and_says_so(tmp_path, capsys):
    # 3 parameters: irace needs 96 runs (4 x 3 x 8); 60 are raced as 2 iterations keeping 2
    # elites, the first race of 5 configurations.
    scen = make_scenario(tmp_path, budget=60)
    assert main(["--scenario", scen, "--no-report", "-q", "1"]) == EXIT_OK
    out = capsys.readouterr().out
    assert len(_runs(tmp_path)) <= 60
    # -q 1 silences the header and its note; without it the note is printed once.
    assert "below irace's minimum" not in out
    scen = make_scenario(tmp_path / "loud", budget=60)
    assert main(["--scenario", scen, "--no-report"]) == EXIT_OK
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "below irace's minimum" in line]
    assert notes == ["# racer: maxExperiments = 60 is below irace's minimum for 3 parameters "
                     "(96 runs for 3 iterations keeping 3 elites, which irace refuses); racing "
                     "2 iterations keeping 2 elites instead, the first race of 5 "
                     "configurations, firstTest = 5 (the most iterations whose minimum fits; "
                     "set testType for irace's rule)"]
    assert len(_runs(tmp_path / "loud")) <= 60


@pytest.mark.slow
@pytest.mark.parametrize("extra,flags", [('testType = "F-test"\n', []),
                                         ('testType = "t-test"\n', []),
                                         ("", ["--racing-test", "F-test"])])
def test_command_asking_for_irace_keeps_its_refusal(tmp_path, capsys, extra, flags):
    scen = make_scenario(tmp_path, budget=60, extra=extra)
    assert main(["--scenario", scen, "--no-report", *flags]) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert "maxExperiments = 60 is too small: irace would need at least 96 runs" in err
    assert not (tmp_path / "arena" / "runs.csv").exists() or not _runs(tmp_path)
