"""The ``racer`` command's parts: the parser, loading a scenario, ``--check``, the run,
``--init`` and :func:`main`, which dispatches between them (the package face,
:mod:`racer.cli`, re-exports :func:`main` and the exit codes). The tuning itself is
:mod:`racer.tuning.tuner`; its parallel dispatcher, :mod:`racer.tuning.dispatch`.
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


# --on-error's values, racer's one failure vocabulary (docs/conventions.md), and the tuner's
# error policy each stands for; "stop" and "reject" are their former names here.
ON_ERROR_POLICIES = {"raise": "stop", "eliminate": "reject", "worst": "worst"}
_ON_ERROR_RENAMED = {"stop": "raise", "reject": "eliminate"}


def _on_error_policy(value: str) -> str:
    """``--on-error VALUE`` as the tuner's error policy; a former name works, with a warning
    on stderr naming the new one."""
    if value in _ON_ERROR_RENAMED:
        new = _ON_ERROR_RENAMED[value]
        _warn(f"--on-error {value} is renamed --on-error {new} (racer's one name for it); "
              f"'{value}' will be removed")
        value = new
    if value not in ON_ERROR_POLICIES:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {value!r} (choose from {', '.join(map(repr, ON_ERROR_POLICIES))})")
    return ON_ERROR_POLICIES[value]


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
    # The parsed value is the tuner's error policy (_on_error_policy); a string default is
    # parsed too.
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
    warnings = check_space(space)
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
        if v[name] < 1:
            raise ScenarioError(f"must be >= 1; got {v[name]}", option=name, **sc.where(name))
    if v["firstTest"] % v["eachTest"] != 0:
        raise ScenarioError(f"firstTest = {v['firstTest']} must be a multiple of eachTest = {v['eachTest']}",
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


def objectives_of(sc):
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
    from racer.cli.target_runner import TargetRunner, build_command

    sc = loaded["scenario"]
    launcher = sc.values["targetRunnerLauncher"]
    if launcher and not os.path.isabs(launcher) and os.sep in launcher:
        launcher = sc.path("targetRunnerLauncher")
    command = build_command(loaded["runner_path"], launcher, sc.values["targetRunnerLauncherArgs"])
    timeout = sc.values["targetRunnerTimeout"] or None
    return TargetRunner(command, loaded["exec_dir"], retries=sc.values["targetRunnerRetries"],
                        timeout=timeout, reaper=reaper, objectives=objectives_of(sc),
                        need_time=("maxTime" if sc.values["maxTime"] > 0 else
                                   "capping" if sc.values["capping"] else False))


#: The racing test when neither ``--racing-test`` nor the scenario's ``testType`` names one.
#: irace's default there is its F-test; racer's is irace's t-test (Birattari's tNo-race),
#: chosen on the tuning suite's pilot scenario (benchmarks/RESULTS.md): the F-test
#: keeps and finally picks the configuration of best rank sum, and on heavy-tailed costs
#: (a SAT solver's effort) that is at times one that wins most instances by a little and
#: loses a few by a lot. On sat-cadical's seeds 1-10, racer's F-test ended seed 2 at 733
#: (3.6x the untuned default, 4.5x the median), the t-test, which eliminates and picks by
#: mean cost (what the scenario asks to minimise), no seed above 174 (irace's worst: 204).
#: A scenario that names ``testType`` gets that test, irace's F-test included.
DEFAULT_TEST = "t-test"


def irace_procedure_requested(racing_test: str | None, test_type: str) -> bool:
    """Whether a run asks for irace's procedure: ``--racing-test`` names one of irace's tests
    (a registry entry with ``irace=True``, options allowed), or, without ``--racing-test``,
    the scenario sets ``testType``. Then racer keeps irace's rules where irace and racer
    differ (a budget below irace's minimum is refused, as irace refuses it). Otherwise the
    run is racer's own: racer's default test when both are empty (:func:`make_test`), and
    :meth:`racer.tuning.schedule.IraceSchedule.small_budget_plan` for a small budget.
    ``--racing-test`` wins over ``testType``, as it does for the test itself.

    >>> irace_procedure_requested(None, "F-test"), irace_procedure_requested("t.holm:alpha=0.1", "")
    (True, True)
    >>> irace_procedure_requested(None, ""), irace_procedure_requested("bayesian", "F-test")
    (False, False)
    """
    if racing_test:
        try:
            return registry.lookup(racing_test.partition(":")[0].strip()).irace
        except ValueError:  # package.module:Class is racer's own
            return False
    return bool(test_type)


def make_test(name: str | None, confidence: float, *, confidence_given: bool = False):
    """``(racing test, Race winner rule)`` for ``--racing-test`` or, without it, irace's
    ``testType`` (empty: racer's :data:`DEFAULT_TEST`; :func:`irace_procedure_requested` is
    then False), looked up in :mod:`racer.racing.registry`: the F-race orders survivors by
    rank sum, the t-test races by mean cost (irace's ``overall.ranks``); irace's tests take
    ``alpha = 1 - confidence``.

    ``confidence_given`` (the scenario or ``--confidence`` set it): the other tests take it
    too, each through its own level (the registry's ``confidence_options``: BayesianTest's
    credibilities, PosteriorBestTest's ``error_rate = 1 - confidence``, ...); an option in
    ``--racing-test name:key=value`` wins. Left at irace's default 0.95, those tests keep
    their own defaults: 0.95 is the F-test's level, chosen for irace, while theirs were
    chosen on racer's pilot seeds, and a scenario that says nothing about confidence asks
    for no change.

    >>> test, winner = make_test("", 0.95)
    >>> type(test).__name__, test.adjust, round(test.alpha, 2), winner
    ('TRaceTest', 'none', 0.05, 'mean')
    >>> type(make_test("F-test", 0.9)[0]).__name__
    'FRaceTest'
    >>> make_test("bayesian", 0.95)[0].credibility  # irace's default: the test's own 0.975
    0.975
    >>> make_test("bayesian", 0.9, confidence_given=True)[0].credibility
    0.9
    """
    from racer.racing.registry import make_test as build

    try:
        return build(name or DEFAULT_TEST, alpha=1.0 - confidence,
                     confidence=confidence if confidence_given else None)
    except (ValueError, TypeError) as exc:
        source = f" (with confidence = {confidence:g})" if confidence_given else ""
        raise UsageError(f"--racing-test {name!r}{source}: {exc}") from None


#: The racing test of a tuning on several objectives when ``--racing-test`` names none.
DEFAULT_MULTI_TEST = "pareto"


def racing_test(args, sc):
    """``(racing test, winner rule)`` of a run: ``--racing-test``, else the scenario's
    ``testType`` (:func:`make_test`). A tuning on several objectives (``objectives``) gets
    :data:`DEFAULT_MULTI_TEST` unless ``--racing-test`` names another test on several
    objectives; irace's ``testType`` (one cost) is refused there, and a test on several
    objectives without ``objectives`` too (UsageError or ScenarioError saying what to set)."""
    from racer.cli.scenario import ScenarioError

    v = sc.values
    objectives = objectives_of(sc)
    name = args.racing_test if args.racing_test is not None else v["testType"]
    if objectives is not None and args.racing_test is None:
        if v["testType"]:
            raise ScenarioError(
                f"testType = {v['testType']!r} is one of irace's tests, which compare one cost, "
                f"but objectives names {objectives.k} ({', '.join(objectives.names)}); leave "
                f"testType unset (racer's test for several objectives is "
                f"{DEFAULT_MULTI_TEST!r}) or give --racing-test", option="testType",
                **sc.where("testType"))
        name = DEFAULT_MULTI_TEST
    test, winner = make_test(name, v["confidence"], confidence_given="confidence" in sc.origin)
    kind = getattr(test, "objectives", "single")
    if objectives is not None and kind == "single":
        raise UsageError(f"--racing-test {name!r} compares one cost per run, but objectives "
                         f"names {objectives.k} ({', '.join(objectives.names)}); use "
                         f"--racing-test {DEFAULT_MULTI_TEST} (the default for several "
                         "objectives)")
    if objectives is None and kind == "multi":
        raise UsageError(f"--racing-test {name!r} races on several objectives: name them with "
                         "the scenario option objectives or --objectives, e.g. "
                         "--objectives quality,time (the target-runner then prints one number "
                         "per objective)")
    if objectives is not None and args.sampler == "optuna":
        raise UsageError("--sampler optuna proposes configurations for one cost; a tuning on "
                         "several objectives uses irace's sampler (leave --sampler unset)")
    return test, winner


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


def _seed(sc, journal_dir: str) -> int:
    if sc.values["seed"] is not None:
        return int(sc.values["seed"])
    path = os.path.join(journal_dir, "seed.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return int(f.read().strip())
    import numpy as np

    seed = int(np.random.SeedSequence().entropy % (2**31 - 1))
    os.makedirs(journal_dir, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"{seed}\n")
    os.replace(path + ".tmp", path)
    return seed


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
    objectives = objectives_of(sc)
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
    """Tune (or race the configurations file): resume or continue from the journal, run the
    Tuner, write the output files, print the elites and the test."""
    v = loaded["scenario"].values
    exec_dir = loaded["exec_dir"]
    tuner, result, test, winner = run_tuning(loaded, args)
    _print_summary(result, tuner, v, test, winner)
    written = write_run_report(exec_dir) if not getattr(args, "no_report", False) else None
    print(f"# Files in {exec_dir}: elites.txt runs.csv eliminations.csv results.json"
          + (" test.csv" if result.test is not None else "") + (" report.html" if written else ""))
    if written:
        print(f"# Report: {written}")
    return EXIT_OK


def run_tuning(loaded: dict, args, *, runner=None, executor=None, announce: bool = True):
    """The tuning of a loaded scenario, as ``racer --scenario`` runs it: the seed (drawn and
    kept in the journal when the scenario has none), the racing test, the settings, the
    resume check, the Tuner, its run and the output files in execDir. Returns ``(tuner,
    result, test, winner)``. racer.tune calls it with its own ``runner`` and ``executor``
    (see :func:`_make_tuner`): one tuning behind the command line and Python."""
    from racer.tuning.tuner import JOURNAL_DIR

    sc, space = loaded["scenario"], loaded["space"]
    v = sc.values
    exec_dir = loaded["exec_dir"]
    journal_dir = os.path.join(exec_dir, JOURNAL_DIR)
    if args.fresh:
        _start_afresh(exec_dir, journal_dir)
    resuming = os.path.isdir(journal_dir) and any(f.endswith(".sqlite") for f in os.listdir(journal_dir))
    seed = _seed(sc, journal_dir)
    # racer's own --racing-test, when given, overrides the scenario's testType.
    test, winner = racing_test(args, sc)
    if args.fixed_list and not loaded["initial"]:
        raise UsageError("--fixed-list needs configurationsFile")
    settings = _settings(v, args, seed)
    settings.budget_rule = ("irace" if irace_procedure_requested(args.racing_test, v["testType"])
                            else "racer")
    quiet = v["quiet"] or (args.opt_quiet not in (None, "0", "FALSE", "false"))
    tuner, closing = _make_tuner(loaded, args, settings, test, winner, seed, resuming, quiet,
                                 runner=runner, executor=executor, announce=announce)
    result = _tune(tuner, closing, exec_dir, report=not getattr(args, "no_report", False))
    header = {"seed": seed, "budget": v["maxExperiments"], "max_time": v["maxTime"],
              "soft_restarts": result.soft_restarts}
    if settings.directions is not None:
        header["objectives"] = {"names": list(settings.objective_names),
                                "directions": list(settings.directions)}
    _write_outputs(exec_dir, space, result, header)
    return tuner, result, test, winner


def _start_afresh(exec_dir: str, journal_dir: str) -> None:
    """``--fresh``: forget the journal and the run log of an earlier run."""
    if os.path.isdir(journal_dir):
        shutil.rmtree(journal_dir)
        for name in ("runs.csv",):
            if os.path.exists(os.path.join(exec_dir, name)):
                os.remove(os.path.join(exec_dir, name))


def _settings(v: dict, args, seed: int):
    """The tuner's Settings from the scenario's values and the command line."""
    from racer.tuning.tuner import Settings

    return Settings(
        max_experiments=v["maxExperiments"], max_time=v["maxTime"],
        min_measurable_time=v["minMeasurableTime"], first_test=v["firstTest"], each_test=v["eachTest"],
        mu=v["mu"], min_survival=v["minNbSurvival"], n_iterations=v["nbIterations"],
        n_configurations=v["nbConfigurations"], experiments_per_iteration=v["nbExperimentsPerIteration"],
        elitist=v["elitist"], elitist_new_instances=v["elitistNewInstances"],
        elitist_limit=v["elitistLimit"],
        deterministic=v["deterministic"], sample_instances=v["sampleInstances"], seed=seed,
        parallel=max(1, v["parallel"]), test_n_elites=max(1, v["testNbElites"]),
        error_policy=args.on_error, fixed_list=args.fixed_list,
        lookahead=not getattr(args, "no_lookahead", False),
        soft_restart=v["softRestart"], soft_restart_threshold=v["softRestartThreshold"],
        capping=_capping(v), **_objective_settings(v))


def _objective_settings(v: dict) -> dict:
    """Settings' ``directions`` and ``objective_names`` (none for one objective)."""
    from racer.tuning.objectives import parse_objectives

    objectives = parse_objectives(v["objectives"])
    if objectives is None:
        return {}
    return {"directions": objectives.directions, "objective_names": objectives.names}


def _capping(v: dict):
    """The capping options (racer.tuning.capping.Capping), or None when the scenario sets
    neither capping nor boundMax."""
    from racer.tuning.capping import Capping

    if not v["capping"] and v["boundMax"] <= 0:
        return None
    return Capping(enabled=bool(v["capping"]), type=v["cappingType"], bound_type=v["boundType"],
                   bound_max=float(v["boundMax"]), digits=v["boundDigits"], par=v["boundPar"],
                   as_timeout=bool(v["boundAsTimeout"]), min_measurable_time=v["minMeasurableTime"],
                   after_first_test=bool(v["cappingAfterFirstTest"]))


def _make_tuner(loaded: dict, args, settings, test, winner, seed: int, resuming: bool,
                quiet: bool, *, runner=None, executor=None, announce: bool = True):
    """The Tuner of this run, after the resume check (racer.tuning.resume), and the run log,
    reaper and executor it needs; announces the run unless ``quiet`` (or not ``announce``).
    Returns ``(tuner, closing)``: ``closing`` holds what to close at the end, and
    ``progress``. racer.tune passes its own ``runner`` (then no reaper: nothing runs in a
    session of its own) and ``executor`` (an Executor object, not ``--executor``'s text)."""
    from racer.tuning.tuner import JOURNAL_DIR, Tuner
    from racer.tuning.output import Progress, RunLog
    from racer.tuning.resume import check_resume, settings_of
    from racer.cli.target_runner import Reaper

    space, v = loaded["space"], loaded["scenario"].values
    exec_dir = loaded["exec_dir"]
    journal_dir = os.path.join(exec_dir, JOURNAL_DIR)
    reaper = Reaper() if runner is None else None
    runner = make_runner(loaded, reaper) if runner is None else runner
    prior_times = read_prior_times(os.path.join(exec_dir, "runs.csv")) if v["maxTime"] > 0 else {}
    # Capping: the times (cut at their bounds) that earlier runs left for the bounds to come.
    prior_capped = (read_prior_capped_times(os.path.join(exec_dir, "runs.csv"), settings.capping)
                    if settings.capping is not None and settings.capping.enabled else {})
    log = RunLog(os.path.join(exec_dir, "runs.csv"), settings.objective_names)
    closing = {"log": log, "reaper": reaper, "executor": None, "progress": Progress(quiet=quiet)}
    metadata = {"targetRunner": " ".join(runner.command), "space": repr([(p.name, p.switch, p.type, p.domain, p.log, p.condition_text) for p in space.declared]),
                "forbidden": repr([t for t, _ in space.forbidden])}
    try:
        # Before anything runs: the same settings resume, a larger budget continues, anything
        # else is refused in the scenario's words (racer.tuning.resume).
        earlier = check_resume(journal_dir, settings_of(loaded, args, seed, runner.command),
                               resuming=resuming, exec_dir=exec_dir,
                               command=(args.argv if getattr(args, "argv", None) is not None
                                        else sys.argv[1:]),
                               start_over=getattr(args, "start_over", None))
        settings.earlier_budgets = tuple(earlier)
        sampler = _sampler(args, space, seed, metadata)
        if executor is None:
            executor, closing["executor"] = make_executor(args.executor, settings.parallel)
        tuner = Tuner(space, runner, loaded["train"], settings, test, initial=loaded["initial"],
                      sampler=sampler, executor=executor,
                      test_instances=loaded["test"], journal_dir=journal_dir, on_run=log,
                      progress=closing["progress"], winner=winner, metadata=metadata,
                      prior_times=prior_times, prior_capped=prior_capped)
    except BaseException:
        # Nothing ran yet, but the run log, the reaper and a started cluster are open.
        _close(closing)
        raise
    if not quiet and announce:
        _announce(tuner, args, v, test, seed, resuming, earlier)
    return tuner, closing


def _sampler(args, space, seed: int, metadata: dict):
    """``--sampler optuna``: Optuna's TPE instead of irace's model (None: irace's)."""
    if args.sampler != "optuna":
        return None
    from racer.tuning.sampler import OptunaSampler

    try:
        sampler = OptunaSampler(space, seed=seed)
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    metadata["sampler"] = "optuna-tpe"
    return sampler


def _close(closing: dict) -> None:
    closing["log"].close()
    if closing["reaper"] is not None:
        closing["reaper"].close()
    if closing["executor"] is not None:
        closing["executor"]()


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
    # Where the test came from: racer's default differs from irace's (DEFAULT_TEST).
    chosen = ("--racing-test" if getattr(args, "racing_test", None) is not None
              else "testType" if v["testType"] else
              f"racer's default for {len(settings.directions)} objectives, {DEFAULT_MULTI_TEST}"
              if settings.directions is not None else
              f"racer's default, {DEFAULT_TEST}; testType = \"F-test\" for irace's")
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


def _tune(tuner, closing: dict, exec_dir: str, *, report: bool):
    """Run the tuning; on Ctrl-C write the report of the run so far (unless ``report`` is
    off), then let the interrupt through. Closes what ``closing`` holds."""
    from racer.progress import iterations_done_text

    progress = closing["progress"]
    try:
        result = tuner.run()
    except KeyboardInterrupt:
        progress.end()
        if report:
            # What the journals hold so far; a second Ctrl-C skips it.
            print(f"racer: interrupted; writing the report of the run so far to "
                  f"{os.path.join(exec_dir, 'report.html')} (Ctrl-C again to skip)",
                  file=sys.stderr, flush=True)
            try:
                if write_run_report(exec_dir):
                    print(f"racer: report: {os.path.join(exec_dir, 'report.html')}", file=sys.stderr)
            except KeyboardInterrupt:
                pass
        raise
    except BaseException:
        progress.end()
        raise
    finally:
        _close(closing)
    done = iterations_done_text(result.iterations, result.planned_iterations)
    progress.end(f"done: {result.stop_reason}; {result.experiments} runs; {done}")
    return result


def _write_outputs(exec_dir: str, space, result, header: dict) -> None:
    """elites.txt, eliminations.csv, test.csv (with test instances) and results.json."""
    from racer.tuning.output import write_eliminations, write_elites, write_results, write_test

    write_elites(os.path.join(exec_dir, "elites.txt"), space, result.elites)
    write_eliminations(os.path.join(exec_dir, "eliminations.csv"), result.races)
    if result.test is not None:
        names = (header.get("objectives") or {}).get("names") or ()
        write_test(os.path.join(exec_dir, "test.csv"), result.test, tuple(names))
    write_results(os.path.join(exec_dir, "results.json"), space, result, header)


def _print_summary(result, tuner, v: dict, test, winner) -> None:
    """Why the tuning stopped, the elites, and their mean cost on the test instances."""
    import numpy as np

    from racer.tuning.output import elites_report
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
    if result.test is not None:
        print("# Testing of elite configurations: mean cost on "
              f"{len(result.test['tasks'])} test instances")
        for e in result.elites[: tuner.settings.test_n_elites]:
            costs = [c for c in result.test["costs"][e.id] if c is not None]
            mean = f"{np.mean(costs):.6g}" if costs else "NA"
            print(f"{e.id}  {mean}")


def _prior_training_runs(path: str):
    """``(iteration, configuration, instance id, time, row)`` of each training run with a
    readable time in an existing runs.csv (an interrupted session), in file order; a torn
    or timeless line is skipped."""
    import csv

    if not os.path.exists(path):
        return
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            try:
                it, cid, iid = int(row["iteration"]), int(row["configuration"]), int(row["instance_id"])
                t = float(row["time"])
            except (TypeError, ValueError, KeyError):
                continue
            if it > 0:
                yield it, cid, iid, t, row


def read_prior_times(path: str) -> dict:
    """Reported times of the training runs in an existing runs.csv (an interrupted session),
    by (iteration, configuration, instance id); the last line of a key wins (a run repeated
    after a kill). A torn last line is skipped."""
    from racer.tuning.lookahead import UNUSED

    # an unused look-ahead run is no run
    return {(it, cid, iid): t for it, cid, iid, t, row in _prior_training_runs(path)
            if row.get("status") != UNUSED}


def read_prior_capped_times(path: str, capping) -> dict:
    """Capping: the time of each training run in an existing runs.csv (an interrupted
    session), cut at its bound (:func:`racer.tuning.capping.capped_time`), by (configuration,
    instance id); the last line of a key wins (a run repeated after a kill)."""
    from racer.tuning.capping import capped_time

    times: dict = {}
    for _it, cid, iid, t, row in _prior_training_runs(path):
        if row.get("status") != "ok":
            continue
        try:
            bound = float(row["bound"]) if row.get("bound") else None
        except ValueError:
            continue
        times[(cid, iid)] = capped_time(t, bound, capping)
    return times


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
    import errno

    oserrors, sqlite_text, from_sqlite = _storage_errors(exc)
    codes = {e.errno for e in oserrors if e.errno}
    if not codes and not from_sqlite:
        return None
    path = next((e.filename for e in oserrors if e.filename), None)
    folder = exec_dir or (os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    writing = f" while writing {path}" if path else ""
    free = _free_bytes(folder)
    resume = "then run the same command again (racer resumes from its journal)"
    sqlite_full = "disk is full" in sqlite_text or "disk I/O error" in sqlite_text
    if codes & {errno.ENOSPC, errno.EDQUOT} or (sqlite_full and free is not None and free < 1 << 20):
        return (f"disk full: no space left on the file system of {folder} "
                f"({free if free is not None else '?'} bytes free){writing}. "
                f"Free some space or set execDir to another disk, {resume}.\n({exc})")
    if errno.EFBIG in codes or sqlite_full:
        return _write_refused(errno.EFBIG in codes, folder, writing, resume, exc)
    strerror = next((e.strerror for e in oserrors if e.errno in codes), None)
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
