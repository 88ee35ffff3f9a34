"""irace 4.4's options: a scenario of irace 4 reads unchanged, every option of irace 4.4's table
is known (honoured, or refused with why), and each honoured option changes what the tuning does
as irace 4 does: minExperiments sets the budget, targetCmdline the runner's words, blockSize
where races may eliminate, postselection a last race of the final elites."""

import os
import stat
import sys

import pytest

from racer.cli.scenario import OPTIONS, R_ONLY, ScenarioError, defaults, read_scenario
from racer.cli.target_runner import (DEFAULT_CMDLINE, TargetRunner, expand_cmdline,
                                     runner_command)
from racer.racing.frace import FRaceTest
from racer.tuning.capping import Capping
from racer.tuning.instances import Instance
from racer.tuning.record import read_record
from racer.tuning.runner import RunResult
from racer.tuning.tuner import Settings, Tuner

from _helpers.tuner import SPACE, TRAIN, FakeRunner

# irace 4.4's option table (scripts/irace_options.json of irace 4.4), less the command line's
# own actions (.help, .version, .check, .init, .onlytest) and scenarioFile (--scenario).
IRACE44 = (
    "execDir parameterFile parameters initConfigurations configurationsFile logFile "
    "recoveryFile instances trainInstancesDir trainInstancesFile sampleInstances "
    "testInstancesDir testInstancesFile testInstances testNbElites testIterationElites "
    "testType firstTest blockSize eachTest targetRunner targetRunnerLauncher targetCmdline "
    "targetRunnerRetries targetRunnerTimeout targetRunnerData targetRunnerParallel "
    "targetEvaluator deterministic maxExperiments minExperiments maxTime budgetEstimation "
    "minMeasurableTime parallel loadBalancing mpi batchmode quiet debugLevel seed softRestart "
    "softRestartThreshold elitist elitistNewInstances elitistLimit repairConfiguration capping "
    "cappingAfterFirstTest cappingType boundType boundMax boundDigits boundPar boundAsTimeout "
    "postselection aclib nbIterations nbExperimentsPerIteration minNbSurvival nbConfigurations "
    "mu confidence").split()

SCENARIO = '''## an irace 4 scenario
parameterFile = "parameters.txt"
trainInstancesFile = "train.txt"
targetRunner = "./target-runner.py"
targetRunnerLauncher = "python3"
targetCmdline = "-u {targetRunner} {configurationID} {instanceID} --seed {seed} -i {instance} {targetRunnerArgs}"
minExperiments = 500
blockSize = 2
postselection = 1
capping = NA
budgetEstimation = 0.05
targetRunnerTimeout = 10
cappingAfterFirstTest = 0
parameters = NULL
initConfigurations = NULL
'''


def test_every_irace44_option_is_known():
    missing = [name for name in IRACE44 if name not in OPTIONS and name not in R_ONLY]
    assert missing == []
    # R_ONLY holds exactly irace 4.4's options of R type ("x").
    assert set(R_ONLY) == {"parameters", "initConfigurations", "instances", "testInstances",
                           "targetRunnerData", "targetRunnerParallel", "repairConfiguration"}
    honoured = ("minExperiments", "targetCmdline", "blockSize", "postselection", "capping")
    assert all(OPTIONS[name].implemented for name in honoured)


def test_irace4_scenario_parses(tmp_path):
    path = tmp_path / "scenario.txt"
    path.write_text(SCENARIO)
    sc = read_scenario(str(path))
    v = sc.values
    assert v["minExperiments"] == 500 and v["blockSize"] == 2 and v["postselection"] == 1.0
    assert v["targetCmdline"].startswith("-u {targetRunner}")
    assert v["capping"] is False and "capping" in sc.na  # NA: irace 4 decides (resolve_irace4)
    assert sc.unimplemented() == ["budgetEstimation = 0.05 (%s:11)" % path]
    warnings = []
    sc.resolve_irace4(warnings)
    # minExperiments: maxExperiments follows it (as irace 4's checkScenario), so the budget
    # check of the command passes; the Tuner takes it from tuner_options.
    assert v["maxExperiments"] == 500 and v["capping"] is False and warnings == []
    assert sc.tuner_options() == {"min_experiments": 500, "block_size": 2, "postselection": True}
    command, template = runner_command(sc.path("targetRunner"), v["targetRunnerLauncher"],
                                       v["targetRunnerLauncherArgs"], v["targetCmdline"])
    assert command == ["python3"]
    assert template.split()[:2] == ["-u", os.path.join(str(tmp_path), "target-runner.py")]


@pytest.mark.parametrize("name", sorted(R_ONLY))
def test_r_only_options_are_refused_saying_why(tmp_path, name):
    path = tmp_path / "scenario.txt"
    path.write_text(f'maxExperiments = 100\n{name} = "something"\n')
    with pytest.raises(ScenarioError) as info:
        read_scenario(str(path))
    message = str(info.value)
    assert f":2: option {name}: R " in message and "cannot be given to racer" in message
    # ... and what to use instead.
    wanted = {"parameters": "parameterFile", "initConfigurations": "configurationsFile",
              "instances": "trainInstancesFile", "testInstances": "testInstancesFile",
              "targetRunnerData": "targetCmdline", "targetRunnerParallel": "parallel",
              "repairConfiguration": "forbiddenFile"}[name]
    assert wanted in message


def test_capping_na_is_irace4s_rule():
    def resolved(**values):
        sc = defaults()
        for name, value in values.items():
            sc.set(name, value)
        sc.resolve_irace4()
        return sc.values["capping"]

    assert resolved(maxTime=100, boundMax=10) is True
    assert resolved(maxTime=100, boundMax=10, capping=0) is False  # set: as said
    assert resolved(maxTime=100, boundMax=10, elitist=0) is False
    assert resolved(maxExperiments=100, boundMax=10) is False
    assert resolved(maxTime=100) is False


def test_postselection_without_elitist_is_turned_off_with_a_warning():
    sc = defaults()
    sc.set("postselection", 1)
    sc.set("elitist", 0)
    warnings = []
    sc.resolve_irace4(warnings)
    assert sc.values["postselection"] == 0 and "elitist" in warnings[0]
    sc.set("blockSize", 0)
    with pytest.raises(ScenarioError, match="option --block-size \\(blockSize\\): must be >= 1"):
        sc.resolve_irace4()


# ---------------------------------------------------------------- minExperiments


def make_tuner(tmp_path, runner=None, **kwargs):
    settings = {"max_experiments": 1000, "seed": 5, "parallel": 1, "lookahead": False}
    irace4 = {k: kwargs.pop(k) for k in ("min_experiments", "block_size", "postselection")
              if k in kwargs}
    s = Settings(**{**settings, **kwargs})
    return Tuner(SPACE, runner or FakeRunner(), TRAIN, s, FRaceTest(alpha=0.05),
                 journal_dir=str(tmp_path / "j"), **irace4)


def test_min_experiments_budget_is_at_least_irace_minimum(tmp_path):
    # Two parameters: 3 iterations keeping 3 elites, each configuration budgeted for
    # mu + eachTest + 2 max(eachTest, elitistNewInstances) = 8 instances: (3 + 1) x 3 x 8.
    low = make_tuner(tmp_path / "a", min_experiments=50)
    assert low.schedule.minimum_budget() == 96 and low.max_experiments == 96
    high = make_tuner(tmp_path / "b", min_experiments=300)  # maxExperiments = 1000 ignored
    assert high.max_experiments == 300 and high.state["budget"] == 300
    assert make_tuner(tmp_path / "c").max_experiments == 1000  # not given: maxExperiments


@pytest.mark.slow
def test_min_experiments_tuning_spends_that_budget(tmp_path):
    runner = FakeRunner()
    t = make_tuner(tmp_path, runner, min_experiments=150, max_experiments=5000)
    result = t.run()
    assert t.record.schedule.max_experiments == 150
    assert 120 < result.experiments == len(runner.calls) <= 150


def test_irace4_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="`min_experiments` = 200 .* max_time"):
        make_tuner(tmp_path, min_experiments=200, max_experiments=0, max_time=100.0)
    with pytest.raises(ValueError, match="blockSize = 3: the 10 training instances"):
        make_tuner(tmp_path, block_size=3)
    with pytest.raises(ValueError, match="mu = 5 must be a multiple of blockSize = 2"):
        make_tuner(tmp_path, block_size=2, first_test=2)
    capping = Capping(enabled=True, bound_max=10.0)
    with pytest.raises(ValueError, match="capping with blockSize = 2 is not implemented"):
        make_tuner(tmp_path, block_size=2, capping=capping)
    with pytest.raises(TypeError, match="`block_size` must be an int"):
        make_tuner(tmp_path, block_size=2.0)
    with pytest.raises(TypeError, match="`postselection` must be a bool"):
        make_tuner(tmp_path, postselection=1)


# ---------------------------------------------------------------- targetCmdline


def test_expand_cmdline_default_is_irace35_order():
    words = DEFAULT_CMDLINE.split()
    values = {"configurationID": ["3"], "instanceID": ["7"], "seed": ["11"],
              "instance": ["i.cnf", "--opt", "5"], "bound": [], "targetRunnerArgs": ["--x", "1"]}
    assert expand_cmdline(words, values) == ["3", "7", "11", "i.cnf", "--opt", "5", "--x", "1"]


def test_target_cmdline_refusals():
    with pytest.raises(ValueError, match=r"must contain \{seed\}"):
        runner_command("/r", cmdline="{instance} {targetRunnerArgs}")
    with pytest.raises(ValueError, match=r"must contain \{bound\} \(capping"):
        runner_command("/r", cmdline="{seed} {instance} {targetRunnerArgs}", capping=True)
    with pytest.raises(ValueError, match="targetRunnerLauncherArgs"):
        runner_command("/r", "python3", "-u {targetRunner} {targetRunnerArgs}",
                       "{seed} {instance} {targetRunnerArgs}")


RUNNER = '''#!{python}
import json, sys
with open("argv.jsonl", "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
print(1.5)
'''


def _script(tmp_path):
    path = tmp_path / "target-runner.py"
    path.write_text(RUNNER.replace("{python}", sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _argv_seen(tmp_path):
    import json

    with open(tmp_path / "argv.jsonl") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.slow
def test_target_cmdline_is_what_the_runner_sees(tmp_path):
    script = _script(tmp_path)
    instance = Instance("inst 1.cnf", ("--class", "b"))
    # irace 4's default: today's words.
    command, template = runner_command(script)
    assert template is None
    r = TargetRunner(command, str(tmp_path), cmdline=template).run(4, 9, 123, instance, ["--x", "2"])
    assert r.status == "ok" and r.cost == 1.5, r.describe(str(tmp_path))
    # Reordered, with text around the values, and the bound.
    command, template = runner_command(
        script, cmdline="--seed={seed} {targetRunnerArgs} -i {instance} --cut {bound} id{configurationID}")
    TargetRunner(command, str(tmp_path), cmdline=template).run(4, 9, 123, instance, ["--x", "2"],
                                                                bound=2.5)
    # With a launcher: {targetRunner} is where the launcher finds the runner.
    command, template = runner_command(
        script, sys.executable, cmdline="-u {targetRunner} {instanceID} {seed} {instance} {targetRunnerArgs}")
    assert command == [sys.executable]
    TargetRunner(command, str(tmp_path), cmdline=template).run(4, 9, 123, instance, [])
    seen = _argv_seen(tmp_path)
    assert seen[0] == ["4", "9", "123", "inst 1.cnf", "--class", "b", "--x", "2"]
    assert seen[1] == ["--seed=123", "--x", "2", "-i", "inst 1.cnf", "--class", "b", "--cut",
                       "2.5", "id4"]
    assert seen[2] == ["9", "123", "inst 1.cnf", "--class", "b"]


# ---------------------------------------------------------------- blockSize


def _complete_blocks(tasks, block_size):
    """Whether ``tasks`` (a race's first rows) hold whole blocks of the training stream."""
    blocks = {}
    for t in tasks:
        blocks.setdefault((t.index - 1) // block_size, []).append(t)
    return all(len(b) == block_size for b in blocks.values())


@pytest.mark.slow
def test_block_size_eliminates_only_after_complete_blocks(tmp_path):
    t = make_tuner(tmp_path, block_size=2, first_test=2, mu=4, max_experiments=300)
    assert (t.first_test, t.each_test, t.new_instances) == (4, 2, 2)
    # The stream is made of blocks: one instance of each class (the pairs 2k, 2k + 1).
    for k in range(0, 40, 2):
        a, b = t.task(k), t.task(k + 1)
        assert int(a.instance.name) % 2 == 0 and int(b.instance.name) == int(a.instance.name) + 1
    result = t.run()
    points = [(e.n_instances, res.instances[:e.n_instances])
              for _, res, _ in result.races for e in res.history]
    assert points, "no race eliminated anything"
    for n, rows in points:
        assert n >= 4 and n % 2 == 0 and _complete_blocks(rows, 2)
    # Without blocks, the same tuning eliminates at points blockSize = 2 forbids.
    plain = make_tuner(tmp_path / "plain", first_test=2, mu=4, max_experiments=300).run()
    assert any(e.n_instances % 2 or e.n_instances < 4
               for _, res, _ in plain.races for e in res.history)


# ---------------------------------------------------------------- postselection


class SplitRunner(FakeRunner):
    """FakeRunner on the first ``n_seen`` tasks of the stream; after them the best x is -1
    instead of 1: the elites chosen on the training tasks seen are misled."""

    def __init__(self, n_seen):
        super().__init__()
        self.n_seen = n_seen

    def run(self, config_id, instance_id, seed, instance, switches):
        result = super().run(config_id, instance_id, seed, instance, switches)
        if instance_id > self.n_seen:
            x = float(dict(zip(switches[::2], switches[1::2]))["--x"])
            result = RunResult("ok", (x + 1.0) ** 2 + float(instance.name), None, "", [], 0,
                               "", "", 0.0)
        return result


@pytest.mark.slow
def test_postselection_spends_the_rest_on_the_elites_and_can_change_the_best(tmp_path):
    # nbIterations = 2 stops the iterations with 54 of the 400 runs unspent.
    budget = 400
    plain = make_tuner(tmp_path / "plain", max_experiments=budget, n_iterations=2)
    before = plain.run()
    n_seen = plain._ended[0].n_seen
    assert before.experiments < budget - 10  # the iterations leave runs unspent
    assert plain.record.postselection is None

    runner = SplitRunner(n_seen)
    t = make_tuner(tmp_path / "post", runner, max_experiments=budget, n_iterations=2,
                   postselection=True)
    after = t.run()
    post = t.record.postselection
    elites = [e.id for e in before.elites]
    # Same iterations (same seed), then the post-selection race of the final elites.
    assert t._ended[0].n_seen == n_seen and post.skipped is None
    assert list(post.candidates) == elites[:len(post.candidates)] and len(post.candidates) >= 2
    later = runner.calls[before.experiments:]
    assert later and {c for c, _, _ in later} <= set(post.candidates)
    assert all(i > n_seen for _, i, _ in later)  # the elites' old results are reused
    # New instances told the elites apart: the race ended with one, inside the budget.
    assert post.stop_reason == "min_survivors" and after.experiments <= budget
    assert post.n_runs == after.experiments - before.experiments > 0
    # On new instances the best is the elite of smallest x: the answer changed.
    smallest = min(before.elites, key=lambda e: e.values["x"])
    assert before.elites[0] is not smallest and after.elites[0].id == smallest.id
    assert t.record.final_elites[0] == smallest.id == post.elites[0]
    assert read_record(str(tmp_path / "post" / "j" / "run.json")).postselection == post


class TiedRunner(FakeRunner):
    """Every configuration costs the same on an instance: no test can eliminate any."""

    def run(self, config_id, instance_id, seed, instance, switches):
        self.calls.append((config_id, instance_id, seed))
        return RunResult("ok", float(instance.name), None, "", [], 0, "", "", 0.0)


@pytest.mark.slow
def test_postselection_spends_the_remaining_budget(tmp_path):
    runner = TiedRunner()
    # Two iterations of 100 runs each leave 200 of the 400 runs.
    t = make_tuner(tmp_path, runner, max_experiments=400, n_iterations=2,
                   experiments_per_iteration=100, postselection=True)
    result = t.run()
    post = t.record.postselection
    assert post.budget >= 190 and post.stop_reason == "budget" and post.n_runs > 150
    # What is left cannot pay one more instance for every elite still racing.
    assert 0 <= 400 - result.experiments < len(post.candidates)
    assert len(runner.calls) == result.experiments


@pytest.mark.slow
def test_postselection_is_skipped_saying_why(tmp_path):
    t = make_tuner(tmp_path, max_experiments=400, postselection=True, deterministic=True)
    t.run()
    assert "deterministic" in t.record.postselection.skipped


# The command end to end on an irace 4 scenario: every option above read, passed through the
# tuning's Settings to the Tuner and the target-runner.
from _helpers.cli import RUNNER as CLI_RUNNER, make_scenario  # noqa: E402

_ARGV_RUNNER = CLI_RUNNER.replace(
    "cid, iid, seed, inst = sys.argv[1:5]\nopts = dict(zip(sys.argv[5::2], sys.argv[6::2]))",
    """import json
a = sys.argv[1:]
with open("argv.jsonl", "a") as fh:
    fh.write(json.dumps(a) + "\\n")
cid, iid = a[1][2:], a[0]
seed = a[a.index("--seed") + 1]
inst = a[a.index("-i") + 1]
rest = a[a.index("-i") + 2:]
opts = dict(zip(rest[::2], rest[1::2]))""")


@pytest.mark.slow
def test_an_irace4_scenario_runs_unchanged(tmp_path):
    import json
    import subprocess

    assert _ARGV_RUNNER != CLI_RUNNER
    scenario = make_scenario(tmp_path, budget=0, runner=_ARGV_RUNNER, extra=f'''
        targetRunnerLauncher = "{sys.executable}"
        targetCmdline = "-u {{targetRunner}} {{instanceID}} id{{configurationID}} --seed {{seed}} -i {{instance}} {{targetRunnerArgs}}"
        minExperiments = 200
        blockSize = 2
        postselection = 1
        capping = NA
        parameters = NULL
        ''')
    text = open(scenario).read().replace("maxExperiments = 0\n", "")
    open(scenario, "w").write(text)
    done = subprocess.run([sys.executable, "-m", "racer", "--scenario", scenario, "--no-report"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    record = read_record(str(tmp_path / "arena" / "racer-journal" / "run.json"))
    assert record.schedule.max_experiments >= 200          # minExperiments
    assert record.postselection is not None                # postselection = 1 reached the Tuner
    with open(tmp_path / "arena" / "argv.jsonl") as f:
        argv = [json.loads(line) for line in f]
    # targetCmdline's order, not irace 3.5's: instance ID, then id<configuration>, --seed, -i.
    assert all(a[1].startswith("id") and a[2] == "--seed" and a[4] == "-i" for a in argv)


def test_racer_tune_takes_irace4_options_by_their_python_names():
    import racer

    def cost(config, instance, seed):
        return instance * (1.0 + (config["x"] - 0.3) ** 2)

    space = 'x "" r (0, 1)\n'
    train = [float(k) for k in range(1, 13)]
    done = racer.tune(cost, space, train, min_experiments=150, block_size=2, postselection=True,
                      random_state=3, progress=False)
    record = read_record(os.path.join(done.storage, "racer-journal", "run.json"))
    assert record.schedule.max_experiments >= 150  # min_experiments stands for the budget
    assert 0 < done.experiments <= record.schedule.max_experiments
    with pytest.raises(ValueError, match="block_size"):
        racer.tune(cost, space, train, budget=150, block_size=0, progress=False)
