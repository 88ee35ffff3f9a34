"""irace scenario files (``scenario.txt``) and instance lists.

A scenario file is R syntax: ``name = value`` (or ``name <- value``), ``#`` comments. Values
are strings, numbers, ``TRUE``/``FALSE`` or ``NULL``/``""`` (unset). Option names and
command-line flags are irace's (table :data:`OPTIONS`); relative paths in the scenario file
are relative to the scenario file's folder, relative paths on the command line to the current
directory. An unknown option is an error (as in irace); an option racer does not implement,
set to anything but irace's default, is named in a warning.

>>> import os, pathlib, tempfile
>>> d = tempfile.mkdtemp()
>>> _ = pathlib.Path(d, "scenario.txt").write_text('maxExperiments = 300  # budget\\n')
>>> sc = read_scenario(os.path.join(d, "scenario.txt"))
>>> sc.values["maxExperiments"], sc.values["eachTest"], sc.path("targetRunner") == os.path.join(d, "target-runner")
(300, 1, True)

An unset ``firstTest`` is None: irace's 5 for irace's tests, else racer's default
(:func:`racer.tuning.schedule.default_first_test`, lower for a deterministic scenario with
few instances):

>>> sc.values["firstTest"] is None
True
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import shlex
from typing import Any

from racer.tuning import rexpr
from racer.tuning.instances import Instance, read_text

#: irace 4's default ``targetCmdline``: the arguments in irace 3.5's fixed order (what
#: racer.cli.target_runner expands; defined here, where the option is, so that reading a
#: scenario, and ``racer --help``, import no part of the runner, nor NumPy through it).
DEFAULT_CMDLINE = "{configurationID} {instanceID} {seed} {instance} {bound} {targetRunnerArgs}"

__all__ = ["OPTIONS", "R_ONLY", "DEFAULT_CMDLINE", "Option", "Scenario", "ScenarioError",
           "read_scenario", "Instance",
           "read_instances", "read_text"]


class ScenarioError(ValueError):
    """A bad scenario: the message names the file, the line and the option when known."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 option: str | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        what = f"option {option}: " if option else ""
        if path == "command line" and option in OPTIONS and OPTIONS[option].flag:
            # Name the flag the user typed, and the scenario-file name it stands for.
            what = f"option {OPTIONS[option].flag} ({option}): "
        super().__init__(f"{where}{what}{message}")
        self.path, self.line, self.option = path, line, option


@dataclasses.dataclass(frozen=True)
class Option:
    name: str
    type: str  # p path, s string, i int, r real, b bool
    flag: str | None
    default: Any
    implemented: bool
    help: str = ""


def _o(name, typ, flag, default, implemented=True, help=""):
    return Option(name, typ, flag, default, implemented, help)


# irace 3.5's options (irace:::.irace.params.def) and irace 4.4's (scripts/irace_options.json:
# targetRunnerTimeout, cappingAfterFirstTest, minExperiments, targetCmdline, blockSize,
# postselection), with racer's status. Not implemented = named in a warning when set to a
# non-default value. irace 4.4's options that only R can give (an R object or function) are in
# R_ONLY, refused with what to use instead. The defaults are irace 3.5's where irace 4.4 changed
# them (trainInstancesDir, budgetEstimation, softRestartThreshold, capping, postselection):
# docs/cli.md says what each does here.
OPTIONS: dict[str, Option] = {o.name: o for o in [
    _o("execDir", "p", "--exec-dir", "./", help="directory where runs happen and outputs go"),
    _o("parameterFile", "p", "--parameter-file", "./parameters.txt"),
    _o("forbiddenFile", "p", "--forbidden-file", ""),
    _o("configurationsFile", "p", "--configurations-file", ""),
    _o("logFile", "p", "--log-file", "./irace.Rdata", False),
    _o("recoveryFile", "p", "--recovery-file", "", False,
       help="racer resumes from its journal in execDir instead"),
    _o("trainInstancesDir", "p", "--train-instances-dir", "./Instances"),
    _o("trainInstancesFile", "p", "--train-instances-file", ""),
    _o("sampleInstances", "b", "--sample-instances", True),
    _o("testInstancesDir", "p", "--test-instances-dir", ""),
    _o("testInstancesFile", "p", "--test-instances-file", ""),
    _o("testNbElites", "i", "--test-num-elites", 1),
    _o("testIterationElites", "b", "--test-iteration-elites", False, False),
    _o("testType", "s", "--test-type", ""),
    _o("firstTest", "i", "--first-test", None),
    _o("eachTest", "i", "--each-test", 1),
    _o("targetRunner", "p", "--target-runner", "./target-runner"),
    _o("targetRunnerLauncher", "p", "--target-runner-launcher", ""),
    _o("targetRunnerLauncherArgs", "s", "--target-runner-args", "{targetRunner} {targetRunnerArgs}",
       help="racer (before irace 4's targetCmdline): the launcher's words, ending with "
            "{targetRunnerArgs}"),
    _o("targetCmdline", "s", "--target-cmdline", DEFAULT_CMDLINE,
       help="irace 4: the runner's arguments, a template of {configurationID} {instanceID} "
            "{seed} {instance} {bound} {targetRunnerArgs} (and {targetRunner})"),
    _o("targetRunnerRetries", "i", "--target-runner-retries", 0),
    _o("targetRunnerTimeout", "r", "--target-runner-timeout", 0,
       help="seconds before a run's whole process group is killed (0: none)"),
    _o("targetEvaluator", "p", "--target-evaluator", "", False),
    _o("deterministic", "b", "--deterministic", False),
    _o("maxExperiments", "i", "--max-experiments", 0),
    _o("minExperiments", "i", "--min-experiments", None,
       help="irace 4: the budget is the larger of this and irace's minimum for the parameters "
            "(maxExperiments is then ignored)"),
    _o("maxTime", "r", "--max-time", 0),
    _o("budgetEstimation", "r", "--budget-estimation", 0.02, False),
    _o("minMeasurableTime", "r", "--min-measurable-time", 0.01),
    _o("parallel", "i", "--parallel", 0),
    _o("loadBalancing", "b", "--load-balancing", True, False),
    _o("mpi", "b", "--mpi", False, False),
    _o("batchmode", "s", "--batchmode", "0", False),
    _o("digits", "i", "--digits", 4),
    _o("quiet", "b", "--quiet", False),
    _o("debugLevel", "i", "--debug-level", 0, False),
    _o("seed", "i", "--seed", None),
    _o("softRestart", "b", "--soft-restart", True),
    _o("softRestartThreshold", "r", "--soft-restart-threshold", None,
       help="(default 10^-digits)"),
    _o("elitist", "b", "--elitist", True),
    _o("elitistNewInstances", "i", "--elitist-new-instances", 1),
    _o("elitistLimit", "i", "--elitist-limit", 2),
    _o("capping", "b", "--capping", False,
       help="irace's adaptive capping (runtime tuning; racer.tuning.capping)"),
    _o("cappingAfterFirstTest", "b", "--capping-after-first-test", False,
       help="irace 4: no dominance elimination before firstTest instances"),
    _o("cappingType", "s", "--capping-type", "median"),
    _o("boundType", "s", "--bound-type", "candidate"),
    _o("boundMax", "i", "--bound-max", 0,
       help="the longest run; passed to every run as its bound when > 0"),
    _o("boundDigits", "i", "--bound-digits", 0),
    _o("boundPar", "i", "--bound-par", 1),
    _o("boundAsTimeout", "b", "--bound-as-timeout", True),
    _o("postselection", "r", "--postselection", 0,
       help="a post-selection race of the final elites on the remaining budget (> 0: on; "
            "irace 4's default is on, racer's off)"),
    _o("aclib", "b", "--aclib", False, False),
    _o("nbIterations", "i", "--iterations", 0),
    _o("nbExperimentsPerIteration", "i", "--experiments-per-iteration", 0),
    _o("minNbSurvival", "i", "--min-survival", 0),
    _o("nbConfigurations", "i", "--num-configurations", 0),
    _o("mu", "i", "--mu", 5),
    _o("confidence", "r", "--confidence", 0.95),
    _o("blockSize", "i", "--block-size", 1,
       help="irace 4: instances come in blocks of this many (one per class); it multiplies "
            "firstTest, eachTest and elitistNewInstances"),
    # racer's own: tuning on several objectives (racer.tuning.objectives; irace has none).
    _o("objectives", "s", "--objectives", "",
       help="racer: several objectives, e.g. \"quality,time:max\" (the target-runner then "
            "prints one number per objective; docs/cli.md)"),
]}

#: irace 4.4's options that hold an R object or function (R's ``scenario()`` only): racer reads
#: files and runs commands, so each is refused with what to use instead.
R_ONLY: dict[str, str] = {
    "parameters": "R objects cannot be given to racer: parameters is irace's "
                  "readParameters() result; racer reads the parameters from a file: write "
                  "them to one and set parameterFile",
    "initConfigurations": "R objects cannot be given to racer: initConfigurations is a data "
                          "frame; racer reads configurations from a file: write them to one and "
                          "set configurationsFile",
    "instances": "R objects cannot be given to racer: instances is a vector of training "
                 "instances; racer reads them from a file or a folder: set trainInstancesFile "
                 "or trainInstancesDir",
    "testInstances": "R objects cannot be given to racer: testInstances is a vector of test "
                     "instances; racer reads them from a file or a folder: set "
                     "testInstancesFile or testInstancesDir",
    "targetRunnerData": "R functions cannot be given to racer: targetRunnerData is data for a "
                        "targetRunner written in R; racer runs targetRunner as a command: put "
                        "the data in a file the runner reads, or pass it in targetCmdline",
    "targetRunnerParallel": "R functions cannot be given to racer: targetRunnerParallel "
                            "parallelises an R targetRunner; racer runs the runs itself: set "
                            "parallel (threads), or --executor (Dask, Ray)",
    "repairConfiguration": "R functions cannot be given to racer: repairConfiguration repairs "
                           "configurations in R; state the rule as a forbidden expression in "
                           "forbiddenFile, or as a parameter's condition",
}

_LINE = re.compile(r"^\s*([A-Za-z.][A-Za-z0-9._]*)\s*(?:=|<-)\s*(.*?)\s*$")


def convert(option: Option, value: Any, where: dict) -> Any:
    """``value`` (from a file or a flag) as the option's type; ScenarioError otherwise."""
    if value is None or value == () or (option.type in "ps" and value == ""):
        return option.default if option.type not in "ps" else ""
    if option.type in "ps":
        return _as_text(option, value)
    if option.type == "b":
        return _as_bool(option, value, where)
    return _as_number(option, value, where)


def _as_text(option: Option, value: Any) -> str:
    if isinstance(value, tuple) and option.name == "objectives":
        return ",".join(str(v) for v in value)  # R's c("quality", "time:max")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _as_bool(option: Option, value: Any, where: dict) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().upper() in ("TRUE", "FALSE", "T", "F", "0", "1"):
        return value.strip().upper() in ("TRUE", "T", "1")
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise ScenarioError(f"expected 0/1 or TRUE/FALSE; got {value!r}", option=option.name, **where)


def _as_number(option: Option, value: Any, where: dict) -> float | int:
    """A finite number (``option.type`` "r"), or an integer ("i")."""
    name = option.name
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(f"expected a number; got {value!r}", option=name, **where) from None
    if not math.isfinite(x):
        raise ScenarioError(f"expected a finite number; got {value!r}", option=name, **where)
    if option.type == "i":
        if not x.is_integer():
            raise ScenarioError(f"expected an integer; got {value!r}", option=name, **where)
        return int(x)
    return x


@dataclasses.dataclass
class Scenario:
    """Option values (irace names), where each was set, and the folder relative paths of each
    option are resolved against."""

    values: dict
    base: dict  # option -> base directory for relative paths
    origin: dict  # option -> (path, line) or ("command line", None)
    file: str | None = None
    # Options set to NA or NULL (irace's "unset"): their value is the default, but irace 4
    # decides some of them from the others (resolve_irace4: capping).
    na: set = dataclasses.field(default_factory=set)

    def path(self, name: str) -> str:
        """Absolute path of a path option ("" when unset)."""
        value = self.values[name]
        if not value:
            return ""
        value = os.path.expanduser(value)
        if os.path.isabs(value):
            return os.path.normpath(value)
        # Defaults are relative to the scenario file's folder, as irace resolves them.
        default_base = os.path.dirname(self.file) if self.file else os.getcwd()
        return os.path.normpath(os.path.join(self.base.get(name, default_base), value))

    def where(self, name: str) -> dict:
        path, line = self.origin.get(name, (self.file, None))
        return {"path": path, "line": line}

    def set(self, name: str, value: Any, origin=("command line", None), base: str | None = None) -> None:
        option = OPTIONS[name]
        self.values[name] = convert(option, value, {"path": origin[0], "line": origin[1]})
        self.origin[name] = origin
        if value is None:
            self.na.add(name)
        else:
            self.na.discard(name)
        self.base[name] = base if base is not None else os.getcwd()

    def resolve_irace4(self, warnings: list | None = None) -> None:
        """What irace 4's ``checkScenario`` derives once every option is read (the file, then
        the command line): call it before the checks and before the options are used.

        * ``capping`` left unset or NA (irace 4's default: NA) is on when ``elitist``,
          ``maxTime > 0`` and ``boundMax > 0``, as irace 4 decides; set, it is what it says.
        * ``minExperiments``: ``maxExperiments`` becomes the larger of the two (irace 4 does
          the same, then ignores ``maxExperiments``: :meth:`tuner_options`).
        * ``postselection`` without ``elitist`` is turned off, named in ``warnings`` (irace
          warns too).

        ScenarioError for ``blockSize`` or ``minExperiments`` below 1 and a negative
        ``postselection``.

        >>> sc = defaults()
        >>> sc.set("maxTime", 100); sc.set("boundMax", 10); sc.resolve_irace4()
        >>> sc.values["capping"], sc.origin["capping"][0]
        (True, "irace 4's default (elitist, maxTime > 0, boundMax > 0)")
        """
        v = self.values
        for name in ("blockSize", "minExperiments"):
            if v[name] is not None and v[name] < 1:
                raise ScenarioError(f"must be >= 1; got {v[name]}", option=name, **self.where(name))
        if v["postselection"] < 0:
            raise ScenarioError(f"must be 0 (off) or positive (on); got {v['postselection']}",
                                option="postselection", **self.where("postselection"))
        unset = "capping" not in self.origin or "capping" in self.na
        if unset and v["elitist"] and v["maxTime"] > 0 and v["boundMax"] > 0:
            v["capping"] = True
            self.origin["capping"] = ("irace 4's default (elitist, maxTime > 0, boundMax > 0)",
                                      None)
        if v["minExperiments"] is not None:
            v["maxExperiments"] = max(v["maxExperiments"], v["minExperiments"])
        if v["postselection"] > 0 and not v["elitist"]:
            v["postselection"] = 0.0
            if warnings is not None:
                warnings.append("postselection needs elitist racing: it is off (as irace turns "
                                "it off)")

    def tuner_options(self) -> dict:
        """The :class:`racer.tuning.tuner.Tuner` keyword arguments of irace 4's options:
        ``min_experiments`` (None when unset), ``block_size``, ``postselection``.

        >>> sc = defaults(); sc.set("minExperiments", 500); sc.set("blockSize", 3)
        >>> sorted(sc.tuner_options().items())
        [('block_size', 3), ('min_experiments', 500), ('postselection', False)]
        """
        v = self.values
        return {"min_experiments": v["minExperiments"], "block_size": int(v["blockSize"]),
                "postselection": bool(v["postselection"] > 0)}

    def unimplemented(self) -> list[str]:
        """Options set to a value racer does not implement (for the warning)."""
        out = []
        for name, option in OPTIONS.items():
            if option.implemented:
                continue
            if self.values.get(name) != convert(option, option.default, {}):
                path, line = self.origin.get(name, (None, None))
                where = f" ({path}:{line})" if line else (f" ({path})" if path else "")
                out.append(f"{name} = {self.values[name]!r}{where}")
        return out


def defaults() -> Scenario:
    values = {name: convert(o, o.default, {}) for name, o in OPTIONS.items()}
    return Scenario(values, {}, {}, None)


def read_scenario(path: str, scenario: Scenario | None = None) -> Scenario:
    """Read ``path`` into ``scenario`` (default: irace's defaults)."""
    sc = scenario if scenario is not None else defaults()
    path = os.path.abspath(path)
    text = read_text(path, lambda line, message: ScenarioError(
        "scenario file not found" if message == "file not found" else message, path=path, line=line))
    sc.file = path
    base = os.path.dirname(path)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = rexpr.strip_comment(raw).strip()
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            raise ScenarioError(f"expected `name = value`; got {line!r}", path=path, line=lineno)
        name, value_text = m.group(1), m.group(2)
        if name in R_ONLY:
            if value_text.strip() in ("NULL", '""', "''"):
                continue  # irace's default: unset
            raise ScenarioError(R_ONLY[name], path=path, line=lineno, option=name)
        if name not in OPTIONS:
            close = ([o for o in OPTIONS if o.lower() == name.lower()]
                     or difflib.get_close_matches(name, OPTIONS, n=1, cutoff=0.75))
            hint = f" (did you mean {close[0]}?)" if close else " (irace's options are listed by racer --help)"
            raise ScenarioError(f"unknown option{hint}", path=path, line=lineno, option=name)
        if not value_text:
            raise ScenarioError("missing value", path=path, line=lineno, option=name)
        try:
            tree = rexpr.parse(value_text)
            if rexpr.names(tree):
                raise rexpr.RSyntaxError("a value must be a constant (no variables, no functions)", value_text, 1)
            value = rexpr.evaluate(tree, {})
        except (rexpr.RSyntaxError, ValueError) as exc:
            raise ScenarioError(f"cannot read the value: {exc}", path=path, line=lineno, option=name) from None
        sc.set(name, value, origin=(path, lineno), base=base)
    return sc


def read_instances(sc: Scenario, kind: str, warnings: list | None = None) -> list[Instance]:
    """Training (``kind="train"``) or test instances of the scenario, as irace finds them:
    ``<kind>InstancesFile`` lines (instance, then optional extra arguments; ``#`` comments),
    each prefixed by ``<kind>InstancesDir`` when that is set; without a file, every file under
    the directory (sorted), hidden files and folders excepted. Listed instances that
    ``<kind>InstancesDir`` makes paths of files that do not exist are named in ``warnings``
    (irace passes them on unchecked: instances may be names, not files)."""
    dir_opt, file_opt = f"{kind}InstancesDir", f"{kind}InstancesFile"
    directory = sc.path(dir_opt)
    listing = sc.path(file_opt)
    if listing:
        out, numbers = _read_instances_file(sc, listing, file_opt, directory)
        if directory and warnings is not None:
            _warn_missing_files(sc, listing, dir_opt, out, numbers, warnings)
        return out
    if not directory:
        return []
    if not os.path.isdir(directory):
        if kind == "test" and dir_opt not in sc.origin:
            return []  # irace's default "" only; a folder the user named must exist
        raise ScenarioError(f"instances directory {directory} does not exist (set {file_opt}, "
                            f"or {dir_opt} to a folder of instances)", option=dir_opt, **sc.where(dir_opt))
    return _instances_in_folder(sc, directory, dir_opt)


def _read_instances_file(sc: Scenario, listing: str, file_opt: str,
                         directory: str) -> tuple[list[Instance], list[int]]:
    """The instances of the file ``listing`` (``directory`` before each relative name) and the
    line of each; ScenarioError naming the line for a line shlex cannot split."""
    def error(line, message):
        if line is not None:
            return ScenarioError(message, path=listing, line=line)
        return ScenarioError(f"{listing}: {message}", option=file_opt, **sc.where(file_opt))

    out, numbers = [], []
    for lineno, raw in enumerate(read_text(listing, error).splitlines(), start=1):
        try:
            words = shlex.split(raw, comments=True)
        except ValueError as exc:
            raise ScenarioError(f"{exc}", path=listing, line=lineno) from None
        if not words:
            continue
        name = words[0]
        if directory and not os.path.isabs(name):
            name = os.path.join(directory, name)
        out.append(Instance(name, tuple(words[1:])))
        numbers.append(lineno)
    if not out:
        raise ScenarioError(f"no instances in {listing}", option=file_opt, **sc.where(file_opt))
    return out, numbers


def _warn_missing_files(sc: Scenario, listing: str, dir_opt: str, instances: list,
                        numbers: list, warnings: list) -> None:
    """Name, in ``warnings``, the listed instances that the instances folder makes paths of
    files that do not exist."""
    missing = [(n, i) for n, i in zip(numbers, instances) if not os.path.exists(i.name)]
    if missing:
        line, first = missing[0]
        warnings.append(
            f"{listing}:{line}: {len(missing)} of the {len(instances)} instances are no files: "
            f"{first.name} does not exist ({dir_opt} = {sc.values[dir_opt]!r} is put "
            f"before each name). racer passes them to the runner anyway, as irace does; "
            f"if the instances are not files, set {dir_opt} = \"\"")


def _instances_in_folder(sc: Scenario, directory: str, dir_opt: str) -> list[Instance]:
    """Every file under ``directory``, sorted; hidden files and folders (.DS_Store, .git) are
    no instances: irace's list.files() skips them too."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(os.path.join(root, f) for f in files if not f.startswith("."))
    if not found:
        raise ScenarioError(f"no instance files in {directory} (hidden files are skipped, as "
                            "irace does)", option=dir_opt, **sc.where(dir_opt))
    return [Instance(p) for p in sorted(found)]
