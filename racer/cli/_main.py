"""The ``racer`` command's parts: the parser, loading a scenario, ``--check``, the run,
``--init`` and :func:`main`, which dispatches between them (the package face,
:mod:`racer.cli`, re-exports :func:`main` and the exit codes). The command translates the
scenario and its flags into the tuning's typed settings (:func:`tuning_settings`) and calls
:func:`racer.tuning.run.run_tuning`, the entry ``racer.tune`` calls too; the tuner itself is
:mod:`racer.tuning.tuner`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import traceback

from racer.racing import registry
from racer.tuning.settings import FORMER_ON_ERROR, IRACE_OPTIONS, ON_ERROR

# numpy, and the race engine with SciPy and Numba behind it, are imported inside the functions
# that run something: `racer --help`, `--version`, `--init` and a scenario mistake answer without
# them (they cost a second or more on a cold start).

__all__ = ["main", "EXIT_OK", "EXIT_INTERNAL", "EXIT_SCENARIO", "EXIT_RUNNER", "EXIT_INTERRUPTED"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_SCENARIO = 2
EXIT_RUNNER = 3
EXIT_INTERRUPTED = 130


class UsageError(ValueError):
    pass




def _outlier_factor(value: str) -> float | None:
    """``--outlier-factor X``: a number above 1, or 0 for none (None)."""
    try:
        x = float(value)
    except ValueError:
        x = float("nan")
    if x == 0:
        return None
    if not (x > 1 and x < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a number above 1, or 0 for none; got {value!r}")
    return x


def _on_error_policy(value: str) -> str:
    """``--on-error VALUE``, one of racer's failure policies (docs/conventions.md); a former
    name works, with a warning on stderr naming the new one."""
    if value in FORMER_ON_ERROR:
        new = FORMER_ON_ERROR[value]
        _warn(f"--on-error {value} is renamed --on-error {new} (racer's one name for it); "
              f"'{value}' will be removed")
        value = new
    if value not in ON_ERROR:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {value!r} (choose from {', '.join(map(repr, ON_ERROR))})")
    return value


def _parser():
    from racer.cli.scenario import OPTIONS

    p = argparse.ArgumentParser(
        prog="racer",
        allow_abbrev=False,
        description="Tune an algorithm's parameters from an irace scenario (irace's files and "
                    "flags), racing configurations with racer. Exit codes: 0 ok, 1 internal "
                    "error, 2 bad scenario, 3 failing target-runner, 130 interrupted.",
        epilog="`racer report PATH -o report.html` writes the HTML report of a race journal "
               "or of an execDir (`racer report --help`).",
    )
    p.add_argument("-s", "--scenario", metavar="FILE", help="irace scenario file (default ./scenario.txt if it exists)")
    p.add_argument("-c", "--check", action="store_true", help="validate the scenario and run one configuration on one instance")
    p.add_argument("-i", "--init", action="store_true", help="write template scenario files in the current directory")
    p.add_argument("-v", "--version", action="store_true", help="print the version")
    p.add_argument("-q", "--quiet", dest="opt_quiet", metavar="0|1", help="irace's quiet (no progress line)")
    g = p.add_argument_group("racer's own options")
    g.add_argument("--racing-test", default=None, metavar="NAME",
                   help="racing test, overriding the scenario's testType: 'F-test' (irace's "
                        "Friedman + Conover, irace's default), 't-test' (racer's default when "
                        "the scenario names no testType), 't-test-bonferroni', "
                        "'t-test-holm' (irace's paired t-tests against the best mean, "
                        "racer.racing.trace.TRaceTest), 'bayesian' (racer.BayesianTest), "
                        "'posterior-best' (racer.PosteriorBestTest), 'correlated-t', "
                        "'hierarchical' or 'module:Class' for any racer RacingTest; options "
                        "follow a colon, e.g. 'posterior-best:error_rate=0.01', and win over "
                        "the level a set confidence gives each test (docs/cli.md)")
    # The parsed value is racer's word (_on_error_policy); a string default is parsed too.
    g.add_argument("--on-error", type=_on_error_policy, default="raise",
                   metavar="{raise,eliminate,worst}",
                   help="a run that fails after its retries (non-zero exit, unreadable output, "
                        "timeout): 'raise' stops racer with exit code 3 (irace's behaviour, "
                        "default), 'eliminate' eliminates the configuration, 'worst' ranks it "
                        "worst on that instance (formerly 'stop' and 'reject' for the first "
                        "two, still accepted with a warning)")
    g.add_argument("--sampler", choices=("irace", "optuna"), default="irace",
                   help="how new configurations are proposed: irace's model around the elites "
                        "(default) or Optuna's TPE sampler (needs optuna)")
    g.add_argument("--executor", default="threads", metavar="SPEC",
                   help="where runs go: 'threads' (default: --parallel threads here), 'dask' "
                        "(a local Dask cluster of --parallel worker processes) or "
                        "'dask:ADDRESS' (an existing Dask scheduler, e.g. dask:tcp://host:8786), "
                        "'ray' (a local Ray instance of --parallel CPUs) or 'ray:ADDRESS' (an "
                        "existing Ray cluster, e.g. ray:auto)")
    g.add_argument("--outlier-factor", type=_outlier_factor, default=1000.0, metavar="X",
                   help="drop at once a configuration with a run at least X times the median "
                        "configuration's cost on that instance, whatever the racing test, and "
                        "stop a run that has taken X times the median wall time of the runs "
                        "finished on its instance (default 1000; 0: never; the cost rule: one "
                        "objective, positive costs)")
    g.add_argument("--fixed-list", action="store_true",
                   help="race only the configurations of configurationsFile, in one race with "
                        "the whole budget (no sampling)")
    g.add_argument("--no-lookahead", action="store_true",
                   help="do not give idle workers speculative runs: the next block's runs, "
                        "and a new configuration's next runs before its first answered "
                        "(look-ahead, on by default: same elites and runs used, shorter wall "
                        "time; runs the race does not use are killed or discarded, marked "
                        "speculative-unused in runs.csv and paid from a reserve of the budget). "
                        "Turn it off when every run costs money")
    g.add_argument("--pipelined", action="store_true",
                   help="start each race's next two blocks of every survivor (none during a "
                        "race's first block) together with the current block, whatever the "
                        "workers (Dask and Ray included), and charge every run started to the "
                        "budget: the same seed gives the same elites on any number of workers, "
                        "in any order runs finish; runs the race does not use are marked "
                        "speculative-unused in runs.csv. Replaces look-ahead; not with capping")
    g.add_argument("--pipelined-iterations", action="store_true",
                   help="--pipelined, and also sample each race's next race at the race's "
                        "first test and start its first block there: less wall time on many "
                        "workers, at some cost in quality at equal runs (docs/cli.md)")
    g.add_argument("--fresh", action="store_true",
                   help="discard the journal in execDir and start over instead of resuming")
    g.add_argument("--no-report", action="store_true",
                   help="do not write the HTML report execDir/report.html at the end of the run "
                        "(it needs matplotlib; `racer report EXECDIR` writes it later)")
    o = p.add_argument_group("irace options (scenario file names in brackets)")
    for name, opt in OPTIONS.items():
        if opt.flag is None or name == "quiet":
            continue
        o.add_argument(opt.flag, dest=f"opt_{name}", metavar="VALUE",
                       help=f"[{name}]" + ("" if opt.implemented else " (not implemented: warned)")
                       + (f" {opt.help}" if opt.help else ""))
    return p


def _warn(message: str) -> None:
    print(f"racer: warning: {message}", file=sys.stderr)


def _error(message: str) -> None:
    print(f"racer: error: {message}", file=sys.stderr)


def load(args) -> dict:
    """Read everything the scenario names; raise ScenarioError/ParameterFileError/UsageError."""
    from racer.tuning.checks import check_space
    from racer.tuning.parameters import read_configurations, read_forbidden, read_parameters
    from racer.cli.scenario import OPTIONS, ScenarioError, defaults, read_instances, read_scenario

    sc = defaults()
    scenario_file = args.scenario
    if scenario_file is None and os.path.exists("scenario.txt"):
        scenario_file = "scenario.txt"
    if scenario_file is not None:
        read_scenario(scenario_file, sc)
    for name in OPTIONS:
        value = getattr(args, f"opt_{name}", None)
        if value is not None:
            sc.set(name, value, origin=("command line", None))
    irace4_warnings: list = []
    sc.resolve_irace4(irace4_warnings)
    _check_values(sc)
    v = sc.values

    pfile = _input_file(sc, "parameterFile", "parameter file")
    space = read_parameters(pfile, digits=v["digits"])
    if sc.origin.get("digits"):
        space.digits = v["digits"]
        space.digits_origin = (sc.where("digits")["path"], sc.where("digits")["line"])
    ffile = sc.path("forbiddenFile")
    if ffile:
        space.add_forbidden(read_forbidden(_input_file(sc, "forbiddenFile", "forbidden file")))
    warnings = check_space(space) + irace4_warnings
    initial = []
    discarded: list = []
    cfile = sc.path("configurationsFile")
    if cfile:
        initial = read_configurations(_input_file(sc, "configurationsFile", "configurations file"),
                                      space, discarded)
        for line, rule in discarded:
            warnings.append(f"{cfile}:{line}: configuration discarded: it is forbidden by the rule "
                            f"{rule!r} (as irace does)")
    train = read_instances(sc, "train", warnings)
    if not train:
        raise ScenarioError("no training instances: set trainInstancesDir and/or trainInstancesFile",
                            option="trainInstancesFile", **sc.where("trainInstancesFile"))
    test = read_instances(sc, "test", warnings)
    runner_path = sc.path("targetRunner")
    launcher = sc.values["targetRunnerLauncher"]
    if launcher:
        _check_launcher(sc)
    else:
        _check_runner(sc, runner_path)
    _check_cmdline(sc, runner_path)
    exec_dir = sc.path("execDir")
    _check_exec_dir(sc, exec_dir)
    return {"scenario": sc, "space": space, "initial": initial, "train": train, "test": test,
            "exec_dir": exec_dir, "runner_path": runner_path, "warnings": warnings}


def _check_values(sc) -> None:
    """Refuse scenario values irace would refuse (ScenarioError naming the option and where
    it was set): the race schedule, the budget, the test, then counts and paths."""
    from racer.cli.scenario import ScenarioError

    v = sc.values
    for name in ("firstTest", "eachTest", "mu"):
        if v[name] is not None and v[name] < 1:
            raise ScenarioError(f"must be >= 1; got {v[name]}", option=name, **sc.where(name))
    # firstTest unset is irace's 5 unless racer lowers it for a deterministic scenario with few
    # instances (racer.tuning.run._first_test checks that case when the instances are read)
    first = v["firstTest"] if v["firstTest"] is not None else (None if v["deterministic"] else 5)
    if first is not None and first % v["eachTest"] != 0:
        raise ScenarioError(f"firstTest = {first} must be a multiple of eachTest = {v['eachTest']}"
                            + ("" if v["firstTest"] is not None else
                               " (firstTest left unset is irace's 5: set it)"),
                            option="firstTest", **sc.where("firstTest"))
    if not 0 < v["confidence"] < 1:
        raise ScenarioError(f"must be in (0, 1); got {v['confidence']}", option="confidence", **sc.where("confidence"))
    if v["maxExperiments"] <= 0 and v["maxTime"] <= 0:
        raise ScenarioError("set maxExperiments (runs) or maxTime (seconds) to a positive budget",
                            option="maxExperiments", **sc.where("maxExperiments"))
    if v["maxTime"] > 0 and v["maxExperiments"] > 0:
        raise ScenarioError("set only one of maxExperiments and maxTime", option="maxTime",
                            **sc.where("maxTime"))
    if v["testType"] and v["testType"].lower() not in {n.lower() for n in registry.names(irace=True)}:
        raise ScenarioError(f"{v['testType']!r} is not a test irace knows ('F-test', 't-test', "
                            "'t-test-bonferroni' or 't-test-holm'; racer's --racing-test for others)",
                            option="testType", **sc.where("testType"))
    _check_capping(sc)
    _check_objectives(sc)
    _check_counts_and_paths(sc)


def _objectives(sc):
    """The scenario's objectives (:class:`racer.tuning.objectives.Objectives`), or None for
    one objective (irace's tuning). The value was checked by :func:`_check_values`."""
    from racer.tuning.objectives import parse_objectives

    return parse_objectives(sc.values["objectives"])


def _check_objectives(sc) -> None:
    """``objectives`` names valid objectives; a tuning on several has no capping (irace's
    capping races on run time, one objective)."""
    from racer.tuning.objectives import parse_objectives
    from racer.cli.scenario import ScenarioError

    try:
        objectives = parse_objectives(sc.values["objectives"])
    except ValueError as exc:
        raise ScenarioError(str(exc), option="objectives", **sc.where("objectives")) from None
    if objectives is not None and sc.values["capping"]:
        raise ScenarioError(f"capping races on the run time alone; it cannot be combined with "
                            f"objectives = {sc.values['objectives']!r} (make the time one of "
                            "the objectives instead)", option="capping", **sc.where("capping"))


def _check_capping(sc) -> None:
    """irace 3.5's checks of the capping options (``checkScenario``)."""
    from racer.tuning.capping import BOUND_TYPES, CAPPING_TYPES
    from racer.cli.scenario import ScenarioError

    v = sc.values
    if v["boundMax"] < 0:
        raise ScenarioError(f"must be >= 0; got {v['boundMax']}", option="boundMax", **sc.where("boundMax"))
    if not v["capping"]:
        return
    if not v["elitist"]:
        raise ScenarioError("capping needs elitist = 1 (as in irace)", option="capping", **sc.where("capping"))
    if v["boundMax"] <= 0:
        raise ScenarioError(f"capping needs boundMax > 0 (the longest run, in the runner's time "
                            f"unit); got {v['boundMax']}", option="boundMax", **sc.where("boundMax"))
    for name, allowed in (("cappingType", CAPPING_TYPES), ("boundType", BOUND_TYPES)):
        if v[name] not in allowed:
            raise ScenarioError(f"must be one of {', '.join(allowed)}; got {v[name]!r}",
                                option=name, **sc.where(name))
    if v["boundPar"] < 1:
        raise ScenarioError(f"must be >= 1; got {v['boundPar']}", option="boundPar", **sc.where("boundPar"))
    if v["boundDigits"] < 0:
        raise ScenarioError(f"must be >= 0; got {v['boundDigits']}", option="boundDigits",
                            **sc.where("boundDigits"))


def _check_counts_and_paths(sc) -> None:
    from racer.cli.scenario import OPTIONS, ScenarioError

    v = sc.values
    for name in ("targetRunnerRetries", "elitistNewInstances", "elitistLimit", "testNbElites", "minNbSurvival",
                 "nbIterations", "nbConfigurations", "nbExperimentsPerIteration", "parallel",
                 "minMeasurableTime"):
        if v[name] < 0:
            raise ScenarioError(f"must be >= 0; got {v[name]}", option=name, **sc.where(name))
    if v["seed"] is not None and v["seed"] < 0:
        # NumPy seeds are non-negative (R's set.seed takes negative ones: not the same stream
        # anyway).
        raise ScenarioError(f"must be a non-negative integer; got {v['seed']}", option="seed",
                            **sc.where("seed"))
    if v["softRestartThreshold"] is not None and not v["softRestartThreshold"] >= 0:
        raise ScenarioError(f"must be >= 0; got {v['softRestartThreshold']}", option="softRestartThreshold",
                            **sc.where("softRestartThreshold"))
    if v["targetRunnerTimeout"] < 0:
        raise ScenarioError("must be >= 0", option="targetRunnerTimeout", **sc.where("targetRunnerTimeout"))
    for name in ("execDir", "parameterFile", "targetRunner"):
        if not v[name]:
            raise ScenarioError(f"is empty; set it (irace's default is {OPTIONS[name].default!r})",
                                option=name, **sc.where(name))


def _input_file(sc, option: str, what: str) -> str:
    """The path of the file ``option`` names; ScenarioError if it is missing or a folder."""
    from racer.cli.scenario import ScenarioError

    path = sc.path(option)
    if os.path.isdir(path):
        raise ScenarioError(f"{what} {path} is a folder, not a file", option=option, **sc.where(option))
    if not os.path.isfile(path):
        raise ScenarioError(f"{what} {path} does not exist", option=option, **sc.where(option))
    return path


def _check_runner(sc, path: str) -> None:
    """The target-runner can be executed: a file, executable, and a ``#!`` line naming an
    interpreter that exists (exec's own error says only "No such file or directory")."""
    from racer.cli.scenario import ScenarioError

    where = {"option": "targetRunner", **sc.where("targetRunner")}
    if os.path.isdir(path):
        raise ScenarioError(f"target-runner {path} is a folder, not a file", **where)
    if not os.path.isfile(path):
        raise ScenarioError(f"target-runner {path} does not exist", **where)
    if not os.access(path, os.X_OK):
        raise ScenarioError(f"target-runner {path} is not executable (chmod +x it, or set "
                            "targetRunnerLauncher, e.g. to a Python interpreter)", **where)
    try:
        with open(path, "rb") as f:
            first = f.readline(512)
    except OSError as exc:
        raise ScenarioError(f"cannot read the target-runner {path}: {exc.strerror}", **where) from None
    if not first.startswith(b"#!"):
        return  # a binary, or a script the kernel runs with /bin/sh
    if first.rstrip(b"\n").endswith(b"\r"):
        raise ScenarioError(f"target-runner {path} has Windows line endings (its #! line ends with "
                            "a carriage return, so it cannot be started): convert it, e.g. "
                            "dos2unix, or sed -i 's/\\r$//'", **where)
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.isabs(words[0]) and not os.path.exists(words[0]):
        raise ScenarioError(f"target-runner {path}: its #! line names {words[0]}, which does not "
                            "exist (fix the #! line, or set targetRunnerLauncher)", **where)


def _check_launcher(sc) -> None:
    from racer.cli.scenario import ScenarioError
    from racer.cli.target_runner import build_command

    launcher = sc.values["targetRunnerLauncher"]
    found = (sc.path("targetRunnerLauncher") if os.sep in launcher else shutil.which(launcher))
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise ScenarioError(f"{launcher} is not an executable file (nor a command on PATH)",
                            option="targetRunnerLauncher", **sc.where("targetRunnerLauncher"))
    try:
        build_command(sc.path("targetRunner"), launcher, sc.values["targetRunnerLauncherArgs"])
    except ValueError as exc:
        raise ScenarioError(str(exc), option="targetRunnerLauncherArgs",
                            **sc.where("targetRunnerLauncherArgs")) from None


def _check_cmdline(sc, runner_path: str) -> None:
    """targetCmdline (irace 4) is one irace accepts, and not beside targetRunnerLauncherArgs."""
    from racer.cli.scenario import ScenarioError
    from racer.cli.target_runner import runner_command

    v = sc.values
    try:
        runner_command(runner_path, v["targetRunnerLauncher"], v["targetRunnerLauncherArgs"],
                       v["targetCmdline"], capping=bool(v["capping"]))
    except ValueError as exc:
        raise ScenarioError(str(exc), option="targetCmdline", **sc.where("targetCmdline")) from None


def _check_exec_dir(sc, path: str) -> None:
    """execDir exists, is a folder and racer can create files in it (runs.csv, the journal)."""
    from racer.cli.scenario import ScenarioError

    where = {"option": "execDir", **sc.where("execDir")}
    if os.path.isfile(path):
        raise ScenarioError(f"execDir {path} is a file; execDir must be a folder (create one, "
                            "e.g. mkdir, and point execDir to it)", **where)
    if not os.path.isdir(path):
        raise ScenarioError(f"execDir {path} does not exist (irace requires it too: mkdir it)", **where)
    if not os.access(path, os.W_OK | os.X_OK):
        raise ScenarioError(f"execDir {path} is not writable: racer writes runs.csv and its journal "
                            "there (make it writable, e.g. chmod u+w, or choose another execDir)", **where)


def make_runner(loaded: dict, reaper=None):
    from racer.cli.target_runner import TargetRunner, runner_command

    sc = loaded["scenario"]
    launcher = sc.values["targetRunnerLauncher"]
    if launcher and not os.path.isabs(launcher) and os.sep in launcher:
        launcher = sc.path("targetRunnerLauncher")
    command, cmdline = runner_command(loaded["runner_path"], launcher,
                                      sc.values["targetRunnerLauncherArgs"],
                                      sc.values["targetCmdline"], capping=bool(sc.values["capping"]))
    timeout = sc.values["targetRunnerTimeout"] or None
    return TargetRunner(command, loaded["exec_dir"], retries=sc.values["targetRunnerRetries"],
                        timeout=timeout, reaper=reaper, objectives=_objectives(sc),
                        need_time=("maxTime" if sc.values["maxTime"] > 0 else
                                   "capping" if sc.values["capping"] else False),
                        cmdline=cmdline)


# The tuning's settings (racer.tuning.settings.Settings) as the command names them: the
# scenario's options, racer's own flags; and how the command sets what a refusal advises.
COMMAND_NAMES = {
    **IRACE_OPTIONS, "test": "--racing-test", "on_error": "--on-error", "sampler": "--sampler",
    "fixed_list": "--fixed-list", "lookahead": "--no-lookahead", "pipelined": "--pipelined",
    "pipelined_iterations": "--pipelined-iterations",
    "progress": "quiet",
    "outlier_factor": "--outlier-factor",
}
COMMAND_ADVICE = {
    "objectives": "the scenario option objectives or --objectives, e.g. --objectives "
                  "quality,time (the target-runner then prints one number per objective)",
    "initial": "configurationsFile",
}


def tuning_settings(sc, args):
    """The tuning's :class:`racer.tuning.settings.Settings` for a scenario checked by
    :func:`_check_values` and the command's flags; refusals name the option."""
    from racer.tuning.settings import Settings

    v = sc.values
    fields = {field: v[irace] for field, irace in IRACE_OPTIONS.items()}
    fields["n_jobs"] = max(1, v["parallel"])
    # A confidence the scenario leaves at irace's default leaves each test its own level.
    fields["confidence"] = v["confidence"] if "confidence" in sc.origin else None
    # irace 4's postselection is a number (0: off); racer races once with the budget left.
    fields["postselection"] = bool(v["postselection"] > 0)
    quiet = v["quiet"] or (args.opt_quiet not in (None, "0", "FALSE", "false"))
    return Settings(**fields, test=args.racing_test, on_error=args.on_error,
                    sampler=args.sampler, fixed_list=args.fixed_list,
                    lookahead=not args.no_lookahead, pipelined=args.pipelined,
                    pipelined_iterations=args.pipelined_iterations,
                    progress=not quiet,
                    outlier_factor=args.outlier_factor,
                    names=COMMAND_NAMES, advice=COMMAND_ADVICE)


def make_test(name: str | None, confidence: float, *, confidence_given: bool = False):
    """:func:`racer.tuning.run.make_test` for ``--racing-test`` (or the scenario's
    ``testType``), a bad name or option a UsageError naming ``--racing-test``.

    >>> test, winner = make_test("", 0.95)
    >>> type(test).__name__, winner
    ('TRaceTest', 'mean')
    """
    from racer.tuning.run import make_test as build

    try:
        return build(name, confidence, confidence_given=confidence_given)
    except (ValueError, TypeError) as exc:
        source = f" (with confidence = {confidence:g})" if confidence_given else ""
        raise UsageError(f"--racing-test {name!r}{source}: {exc}") from None


def racing_test(args, sc):
    """``(racing test, winner rule)`` of a run (:func:`racer.tuning.run.racing_test`):
    ``--racing-test``, else the scenario's ``testType``; for several objectives racer's
    default for them. A test that does not fit is refused naming the option: a
    ScenarioError where the scenario's ``testType`` is at fault, else a UsageError."""
    from racer.cli.scenario import ScenarioError
    from racer.tuning.run import racing_test as choose
    from racer.tuning.settings import SettingsError

    v = sc.values
    confidence = v["confidence"] if "confidence" in sc.origin else None
    try:
        return choose(args.racing_test, v["testType"], confidence, objectives=_objectives(sc),
                      sampler=args.sampler, names=COMMAND_NAMES, advice=COMMAND_ADVICE)
    except SettingsError as exc:
        if exc.field == "test_type":
            raise ScenarioError(str(exc), option="testType", **sc.where("testType")) from None
        raise UsageError(str(exc)) from None


def make_executor(spec: str, parallel: int):
    """``(executor or None, close)`` for ``--executor``."""
    if spec in ("threads", "", None):
        return None, lambda: None
    if spec == "dask" or spec.startswith("dask:"):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UsageError("--executor dask needs Dask: pip install 'bayes-racer[dask]'") from None
        if spec == "dask":
            cluster = LocalCluster(n_workers=parallel, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)

            def close():
                client.close()
                cluster.close()
        else:
            try:
                client = Client(spec[len("dask:"):])
            except (OSError, TimeoutError, ValueError) as exc:
                raise UsageError(f"--executor {spec}: cannot reach the Dask scheduler ({exc}); "
                                 "check the address, or use --executor dask for a local cluster") from None
            close = client.close
        return client.get_executor(), close
    if spec == "ray" or spec.startswith("ray:"):
        from racer.ray_executor import RayExecutor

        try:
            if spec == "ray":
                ex = RayExecutor(num_cpus=parallel)
            else:
                ex = RayExecutor(address=spec[len("ray:"):])
        except ImportError as exc:
            raise UsageError(f"--executor ray: {exc}") from None
        return ex, lambda: ex.shutdown(wait=True, cancel_futures=True)
    raise UsageError(f"--executor must be 'threads', 'dask', 'dask:ADDRESS', 'ray' or 'ray:ADDRESS'; got {spec!r}")


def write_run_report(exec_dir: str) -> str | None:
    """Write ``<execDir>/report.html``; never fails the run: without matplotlib, or on any
    error, it warns (saying how to get the report) and returns None. The one place where the
    command line calls the report front end (imported here, lazily, so the core install and
    ``racer --check`` never load it)."""
    try:
        import matplotlib  # noqa: F401  (the figures need it; the core install has none)
    except ImportError:
        _warn("report.html not written: the HTML report needs matplotlib "
              "(pip install 'bayes-racer[plot]'), then: racer report " + exec_dir)
        return None
    path = os.path.join(exec_dir, "report.html")
    try:
        from racer.report import write_report

        return write_report(exec_dir, path)
    except Exception as exc:  # a report is a by-product: it never changes the run's outcome
        _warn(f"report.html not written ({type(exc).__name__}: {exc}); try: racer report {exec_dir}")
        return None


def do_check(loaded: dict, args) -> int:
    import numpy as np

    from racer.tuning.tuner import _derived_seed
    from racer.tuning.sampler import Sampler

    sc, space = loaded["scenario"], loaded["space"]
    # The racing test is checked too (a bad --racing-test would otherwise wait for the run).
    racing_test(args, sc)
    objectives = _objectives(sc)
    print(f"scenario: {sc.file or '(command line only)'}")
    print(f"parameters: {len(space.declared)} ({space.n_variable} variable), "
          f"{len(space.forbidden)} forbidden rules, digits = {space.digits}")
    print(f"training instances: {len(loaded['train'])}; test instances: {len(loaded['test'])}; "
          f"initial configurations: {len(loaded['initial'])}")
    if objectives is not None:
        print(f"objectives: {', '.join(f'{n} ({d})' for n, d in zip(objectives.names, objectives.directions))}"
              " (the target-runner prints one number each, in this order)")
    runner = make_runner(loaded)
    if loaded["initial"]:
        values = loaded["initial"][0]
    else:
        values = Sampler(space).sample_uniform(1, np.random.default_rng(sc.values["seed"] or 0))[0]
    inst = loaded["train"][0]
    seed = _derived_seed(sc.values["seed"] or 0, 9) % (2**31 - 1)
    switches = space.command_line(values)
    import shlex
    print(f"running configuration 1 on instance 1 in {loaded['exec_dir']}:")
    print("  " + shlex.join(runner.argv(1, 1, seed, inst, switches)))
    res = runner.run(1, 1, seed, inst, switches)
    if res.status == "ok":
        cost = (f"cost {res.cost!r}" if res.objectives is None else
                ", ".join(f"{n} {x!r}" for n, x in zip(objectives.names, res.objectives)))
        print(f"OK: {cost}" + (f", time {res.time!r}" if res.time is not None else "")
              + f" ({res.wall:.3f} s)")
        return EXIT_OK
    if res.status == "inf":
        print("OK: the runner answered Inf (this configuration would be rejected)")
        return EXIT_OK
    _error("target-runner check failed: " + res.describe(loaded["exec_dir"]))
    return EXIT_RUNNER


def do_run(loaded: dict, args) -> int:
    """Tune (or race the configurations file): the scenario's settings, the target-runner and
    the executor, then :func:`racer.tuning.run.run_tuning` (resume or continue from the
    journal, the Tuner, the output files); print the elites and the test, write the report."""
    from racer.cli.target_runner import Reaper
    from racer.tuning.run import run_tuning

    sc = loaded["scenario"]
    v = sc.values
    exec_dir = loaded["exec_dir"]
    settings = tuning_settings(sc, args)
    racing_test(args, sc)  # refused before a runner or a cluster starts, in the scenario's words
    report = not getattr(args, "no_report", False)

    def announce(tuner, resuming: bool, earlier: list) -> None:
        _announce(tuner, args, v, tuner.test, tuner.settings.seed, resuming, earlier)

    def report_so_far() -> None:
        if not report:
            return
        # What the journals hold so far; a second Ctrl-C skips it.
        path = os.path.join(exec_dir, "report.html")
        print(f"racer: interrupted; writing the report of the run so far to {path} (Ctrl-C "
              "again to skip)", file=sys.stderr, flush=True)
        try:
            if write_run_report(exec_dir):
                print(f"racer: report: {path}", file=sys.stderr)
        except KeyboardInterrupt:
            pass

    reaper = Reaper()
    closers = [reaper.close]
    try:
        runner = make_runner(loaded, reaper)
        executor, close_executor = make_executor(args.executor, settings.n_jobs)
        closers.insert(0, close_executor)
        run = run_tuning(
            settings, loaded["space"], runner, loaded["train"], loaded["test"],
            exec_dir=exec_dir, initial=loaded["initial"], executor=executor,
            on_announce=announce if settings.progress else None, on_interrupt=report_so_far,
            fresh=args.fresh, start_over=shlex.join(["racer", *getattr(args, "argv", []), "--fresh"]),
            sources={"parameterFile": v["parameterFile"], "forbiddenFile": v["forbiddenFile"],
                     "configurationsFile": v["configurationsFile"],
                     "trainInstances": v["trainInstancesFile"] or v["trainInstancesDir"],
                     "testInstances": v["testInstancesFile"] or v["testInstancesDir"]})
    finally:
        for close in closers:
            close()
    _print_summary(run.result, run.tuner, v, run.test, run.winner)
    written = write_run_report(exec_dir) if report else None
    print(f"# Files in {exec_dir}: elites.txt runs.csv eliminations.csv results.json"
          + (" test.csv" if run.result.test is not None else "") + (" report.html" if written else ""))
    if written:
        print(f"# Report: {written}")
    return EXIT_OK


def _announce(tuner, args, v: dict, test, seed: int, resuming: bool, earlier: list) -> None:
    """The run's first lines: what is tuned how, and whether it resumes or continues."""
    settings = tuner.settings
    mode = "one race of the configurations file" if args.fixed_list else (
        f"iterated racing, {tuner.n_iterations} iterations "
        + ("at most" if settings.n_iterations else
           "planned (" + ("racer's small-budget plan" if tuner.budget_plan is not None
                          else "irace's nbIterations estimate") + "; more run while budget is left)")
        + f", minNbSurvival = {tuner.min_survival}")
    budget_text = (f"maxTime = {v['maxTime']:g} s" if v["maxTime"] > 0
                   else f"maxExperiments = {v['maxExperiments']}")
    # Where the test came from: racer's default differs from irace's (DEFAULT_TUNING_TEST).
    chosen = ("--racing-test" if getattr(args, "racing_test", None) is not None
              else "testType" if v["testType"] else
              f"racer's default for {len(settings.directions)} objectives, {registry.DEFAULT_PARETO_TEST}"
              if settings.directions is not None else
              f"racer's default, {registry.DEFAULT_TUNING_TEST}; testType = \"F-test\" for irace's")
    print(f"# racer: {mode}; {budget_text}; seed = {seed}; "
          f"parallel = {settings.parallel}; test {type(test).__name__} ({chosen})"
          + ("; resuming from the journal" if resuming else ""), flush=True)
    note = tuner.plan_note()
    if note is not None:
        print(f"# racer: {note}", flush=True)
    if earlier:
        kind = "maxTime" if v["maxTime"] > 0 else "maxExperiments"
        print(f"# racer: continuing the tuning of {kind} = {earlier[-1]:g} with {kind} = "
              f"{v[kind]:g}: every run already made is kept, new iterations use the rest",
              flush=True)


def _print_summary(result, tuner, v: dict, test, winner) -> None:
    """Why the tuning stopped, the elites, and their mean cost on the test instances."""
    import numpy as np

    from racer.tuning.output import elites_report, prob_not_best_line
    from racer.progress import iterations_done_text

    done = iterations_done_text(result.iterations, result.planned_iterations)
    stated = winner or getattr(test, "winner", None) or "mean"
    label = "sum of ranks" if stated in ("rank_sum", "mean_rank") else "mean cost"
    used = (f"{result.experiments} runs, {result.time_used:.6g} s of maxTime = {v['maxTime']:g} s"
            if v["maxTime"] > 0 else f"{result.experiments} runs of {v['maxExperiments']}")
    print(f"# Stopped: {result.stop_reason}; {used}; {done}"
          + (f"; soft restart in iteration(s) {', '.join(map(str, result.soft_restarts))}"
             if result.soft_restarts else ""))
    if tuner.settings.directions is not None:
        from racer.tuning.output import front_report

        print(front_report(tuner.space, result, tuner.settings))
        return
    print(elites_report(tuner.space, result.elites, label))
    print(prob_not_best_line(result))
    if result.test is not None:
        print("# Testing of elite configurations: mean cost on "
              f"{len(result.test['tasks'])} test instances")
        for e in result.elites[: tuner.settings.test_n_elites]:
            costs = [c for c in result.test["costs"][e.id] if c is not None]
            mean = f"{np.mean(costs):.6g}" if costs else "NA"
            print(f"{e.id}  {mean}")


INIT_FILES = {
    "scenario.txt": """## racer / irace scenario (R syntax: name = value). Paths are relative to this file.
parameterFile = "parameters.txt"
targetRunner = "target-runner"
trainInstancesDir = ""
trainInstancesFile = "instances.txt"
maxExperiments = 300
# parallel = 2
# seed = 1
# testInstancesFile = "test-instances.txt"
# configurationsFile = "configurations.txt"
# targetRunnerTimeout = 60
""",
    "parameters.txt": """# name  switch     type  domain           | condition
mode    "--mode "  c     (fast, careful)
x       "--x "     r     (-5, 5)
steps   "--steps " i,log (1, 1000)       | mode == "careful"
""",
    "instances.txt": "".join(f"instance-{i}\n" for i in range(1, 11)),
    "target-runner": """#!{python}
# irace target-runner: <configID> <instanceID> <seed> <instance> <switches...>
# Print the cost (smaller is better) as the last line of stdout; exit 0.
import random
import sys

config_id, instance_id, seed, instance = sys.argv[1:5]
args = dict(zip(sys.argv[5::2], sys.argv[6::2]))
rng = random.Random(int(seed))
x = float(args["--x"])
noise = rng.gauss(0, 0.5 if args["--mode"] == "fast" else 0.1)
print((x - 1.0) ** 2 + noise + int(instance.split("-")[-1]) * 0.1)
""",
}


def do_init(directory: str) -> int:
    existing = [n for n in INIT_FILES if os.path.exists(os.path.join(directory, n))]
    if existing:
        _error(f"not overwriting {', '.join(existing)} in {directory}")
        return EXIT_SCENARIO
    for name, text in INIT_FILES.items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("{python}", sys.executable))
        if name == "target-runner":
            os.chmod(path, 0o755)
    print(f"wrote {', '.join(INIT_FILES)} in {directory}; try: racer --check, then racer")
    return EXIT_OK


def _io_failure(exc: BaseException, exec_dir: str | None) -> str | None:
    """What to tell the user when the system refused a write (a full disk, the file-size
    limit, a read-only or unwritable folder), or None for any other error. SQLite reports a
    full disk as "database or disk is full", or as "disk I/O error" when the WAL's shared
    memory could not grow; the free space of execDir's file system tells which."""
    failure = _write_failure(exc, exec_dir)
    return None if failure is None else _write_failure_message(failure, exc)


def _write_failure(exc: BaseException, exec_dir: str | None) -> dict | None:
    """What the error chain of ``exc`` says about a refused write: the errno codes, the file,
    its folder, the free space there, whether SQLite found the disk full; None when ``exc``
    is no refused write."""
    oserrors, sqlite_text, from_sqlite = _storage_errors(exc)
    codes = {e.errno for e in oserrors if e.errno}
    if not codes and not from_sqlite:
        return None
    path = next((e.filename for e in oserrors if e.filename), None)
    folder = exec_dir or (os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    return {"codes": codes, "path": path, "folder": folder,
            "writing": f" while writing {path}" if path else "",
            "free": _free_bytes(folder),
            "sqlite_full": "disk is full" in sqlite_text or "disk I/O error" in sqlite_text,
            "strerror": next((e.strerror for e in oserrors if e.errno in codes), None)}


def _write_failure_message(failure: dict, exc: BaseException) -> str | None:
    """The message for a refused write (:func:`_write_failure`), by its cause."""
    import errno

    codes, path, folder = failure["codes"], failure["path"], failure["folder"]
    writing, free, strerror = failure["writing"], failure["free"], failure["strerror"]
    resume = "then run the same command again (racer resumes from its journal)"
    disk_full = failure["sqlite_full"] and free is not None and free < 1 << 20
    if codes & {errno.ENOSPC, errno.EDQUOT} or disk_full:
        return (f"disk full: no space left on the file system of {folder} "
                f"({free if free is not None else '?'} bytes free){writing}. "
                f"Free some space or set execDir to another disk, {resume}.\n({exc})")
    if errno.EFBIG in codes or failure["sqlite_full"]:
        return _write_refused(errno.EFBIG in codes, folder, writing, resume, exc)
    if codes & {errno.EISDIR, errno.ENOTDIR}:
        return (f"cannot write {path or 'a file in ' + folder}: a folder or file is in the way "
                f"({strerror}). Move it away, {resume}.")
    if codes & {errno.EACCES, errno.EPERM, errno.EROFS}:
        return (f"cannot write in {folder}{writing}: {strerror}. "
                f"Make {folder} writable or set execDir elsewhere, {resume}.")
    return None


def _storage_errors(exc: BaseException) -> tuple[list, str, bool]:
    """The OSErrors among ``exc`` and its causes, the text of those and of SQLite's errors,
    and whether SQLite raised any of them."""
    import sqlite3

    chain, seen = [], exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    sqlite_text = " ".join(str(e) for e in chain if isinstance(e, (sqlite3.Error, OSError)))
    from_sqlite = any(isinstance(e, sqlite3.Error) for e in chain) or "SQLite" in sqlite_text
    return [e for e in chain if isinstance(e, OSError)], sqlite_text, from_sqlite


def _free_bytes(folder: str) -> int | None:
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def _write_refused(too_big: bool, folder: str, writing: str, resume: str,
                   exc: BaseException) -> str:
    """A write refused with space left: the file-size limit (``ulimit -f``), or the disk."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if too_big or limit != resource.RLIM_INFINITY:
        shown = "unlimited" if limit == resource.RLIM_INFINITY else f"{limit} bytes"
        return (f"file too large: a file in {folder} went past the file-size limit (ulimit -f: "
                f"{shown}){writing}. Raise the limit (ulimit -f unlimited), {resume}.\n({exc})")
    return f"the system failed to write in {folder}{writing} ({exc}); check that disk, {resume}."


class _NotRaised(Exception):
    """Stands in, in an ``except`` clause, for an error class whose module is not imported."""


def _if_imported(module: str, name: str, default=None):
    """``module.name`` if ``module`` is imported, else ``default``.

    main() catches the race engine's errors without importing the engine (numpy, SciPy, Numba)
    for ``--help``, ``--version``, ``--init`` or a scenario mistake: an error can only have been
    raised, and a run can only be under way, once its module is imported.
    """
    loaded = sys.modules.get(module)
    return default if loaded is None else getattr(loaded, name, default)


def _clear_interrupted() -> None:
    interrupted = _if_imported("racer.tuning.dispatch", "INTERRUPTED")
    if interrupted is not None:
        interrupted.clear()


def main(argv: list | None = None) -> int:
    """Entry point of the ``racer`` console script; returns the exit code."""
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "report":
        # `racer report ...`: the report's own command line (racer.report.main).
        # Dispatched on the first word so every `racer --scenario ...` command stays as it was.
        from racer.report import main as report_main

        return report_main(list(argv[1:]), prog="racer report")
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = list(argv)  # to repeat the command in advice (--fresh)
    if args.version:
        from racer import __version__
        print(f"racer {__version__}")
        return EXIT_OK
    if args.init:
        return do_init(os.getcwd())

    def on_signal(signum, frame):
        # See dispatch.INTERRUPTED: the raise alone can be lost in a finaliser. Before a run has
        # imported the engine there is no run to tell.
        interrupted = _if_imported("racer.tuning.dispatch", "INTERRUPTED")
        if interrupted is not None:
            interrupted.set()
        raise KeyboardInterrupt

    _clear_interrupted()
    old = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            old[signum] = signal.signal(signum, on_signal)
        except ValueError:  # not the main thread (tests calling main() from a thread)
            pass
    exec_dir = loaded = None
    try:
        loaded = load(args)
        exec_dir = loaded["exec_dir"]
        for message in loaded["warnings"]:
            _warn(message)
        for item in loaded["scenario"].unimplemented():
            _warn(f"option not implemented by racer, ignored: {item}")
        if args.check:
            return do_check(loaded, args)
        return do_run(loaded, args)
    except Exception as exc:  # noqa: BLE001 - each known failure has its exit code
        return _failed(exc, loaded, argv, exec_dir)
    except KeyboardInterrupt:
        _error("interrupted; run the same command again to resume from the journal")
        return EXIT_INTERRUPTED
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        _clear_interrupted()  # a Tuner driven from Python afterwards starts uninterrupted


def _failed(exc: Exception, loaded: dict | None, argv: list, exec_dir: str | None) -> int:
    """Say what went wrong in the scenario's words and return the exit code (called from
    main's ``except``: an error of no known kind is printed with its traceback)."""
    from racer.tuning.parameters import ParameterFileError
    from racer.tuning.resume import ResumeError
    from racer.tuning.rexpr import RSyntaxError
    from racer.cli.scenario import ScenarioError
    from racer.tuning.runner import TargetRunnerError
    from racer.tuning.settings import SettingsError
    from racer.storage import JournalInUseError

    if isinstance(exc, _if_imported("racer.tuning.tuner", "BudgetError", _NotRaised)):
        # Raised once racing starts: name where the budget was set.
        sc = loaded["scenario"]
        option = "maxTime" if sc.values["maxTime"] > 0 else "maxExperiments"
        where = sc.where(option)
        prefix = ""
        if option in str(exc):
            prefix = (f"{where['path']}:{where['line']}: " if where["line"] is not None
                      else f"{where['path']}: " if where["path"] else "")
        _error(f"{prefix}{exc}")
        return EXIT_SCENARIO
    if isinstance(exc, (ScenarioError, ParameterFileError, RSyntaxError, UsageError, ResumeError,
                        SettingsError,
                        _if_imported("racer.tuning.sampler", "SamplingError", _NotRaised))):
        _error(str(exc))
        return EXIT_SCENARIO
    if isinstance(exc, JournalInUseError):
        _error(f"{exc} (is another racer running on this execDir?)")
        return EXIT_SCENARIO
    if isinstance(exc, TargetRunnerError):
        _error("target-runner failed:\n" + str(exc)
               + "\n(use --on-error eliminate or targetRunnerRetries to go on despite failures; "
               "rerun the same command to resume)")
        return EXIT_RUNNER
    if isinstance(exc, _if_imported("racer.engine", "RaceFailedError", _NotRaised)):
        _error("no configuration could be evaluated (every run of a race failed): "
               f"{exc}\nCheck the runner with `racer --check`; once it works, start over with --fresh.")
        return EXIT_RUNNER
    if isinstance(exc, ValueError) and "`storage`" in str(exc):
        # A journal of the execDir refused the run (an execDir of a racer without
        # racer-journal/settings.json, whose settings are not known in the scenario's words).
        fresh = shlex.join(["racer", *argv, "--fresh"])
        _error(f"the journal in execDir cannot be resumed by this command. To start over: "
               f"{fresh} (or set another execDir). The journal says:\n{exc}")
        return EXIT_SCENARIO
    message = None if isinstance(exc, ValueError) else _io_failure(exc, exec_dir)
    if message is not None:
        _error(message)
        return EXIT_SCENARIO
    traceback.print_exc()
    return EXIT_INTERNAL
