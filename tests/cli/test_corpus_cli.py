"""Corpus of command-line faults: malformed irace files, runner faults, environment faults.

Each case runs ``racer`` on a small valid scenario with one thing broken and asserts (a) no
Python traceback in what it printed, (b) a message naming the file and line, or the option,
and saying what to fix, and (c) the exit code of docs/cli.md's table (0 ok, 2 bad scenario,
command line or environment, 3 failing target-runner, 130 interrupted). The command line runs
in-process (``racer.cli.main``) where that is equivalent, and as a subprocess for signals,
mounts and resource limits. Accepted oddities (a byte-order mark, Windows line endings, tabs)
are cases too: exit 0 and no warning.
"""

from __future__ import annotations

import os
import pathlib
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from racer.cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNNER, EXIT_SCENARIO, main
from racer.tuning import checks, rexpr
from racer.tuning.checks import check_space
from racer.tuning.parameters import ForbiddenRule, ParameterFileError, read_parameters

from _helpers import ROOT
from _helpers.cli import ENV

PARAMETERS = """\
mode  "--mode " c (a, b)
x     "--x "    r (-5, 5)
pen   "--pen "  o (1, 2, 4)  | mode == "b"
"""

SCENARIO = """\
parameterFile = "parameters.txt"
targetRunner = "target-runner"
execDir = "arena"
trainInstancesDir = ""
trainInstancesFile = "instances.txt"
maxExperiments = 100
seed = 3
"""
EXTRA = 8  # the line number of the first line appended to SCENARIO

# The runner is a shell script: a case costs milliseconds, not a Python start-up.
RUNNER = "#!/bin/sh\necho 1.5\n"


def runner(body: str) -> str:
    return "#!/bin/sh\n" + body + "\n"


def write_scenario(folder, changes: dict | None = None) -> None:
    """The valid scenario in ``folder``, then ``changes``: file name -> text (str), bytes,
    None (delete it), or a callable given the path. ``"scenario+"`` appends lines to the
    scenario file (a later line overrides an earlier one, as in irace)."""
    files = {"parameters.txt": PARAMETERS, "scenario.txt": SCENARIO, "target-runner": RUNNER,
             "instances.txt": "i1\ni2\ni3\n"}
    (folder / "arena").mkdir(exist_ok=True)
    changes = dict(changes or {})
    extra = changes.pop("scenario+", "")
    files["scenario.txt"] += extra
    for name, content in {**files, **changes}.items():
        path = folder / name
        if content is None:
            if path.is_dir():
                path.rmdir()
            elif path.exists():
                path.unlink()
        elif callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if (folder / "target-runner").is_file() and not callable(changes.get("target-runner")):
        (folder / "target-runner").chmod(0o755)


def run_in_process(argv, capsys) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def check(code, output, expected_code, pattern) -> None:
    assert "Traceback" not in output, output
    assert code == expected_code, output
    assert re.search(pattern, output), f"{pattern!r} not in:\n{output}"


def mkdir(path):
    path.mkdir()


def make_file(path):
    path.write_text("not a folder\n")


def bom(text: str) -> bytes:
    return b"\xef\xbb\xbf" + text.encode()


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


def hidden_only(path):
    path.mkdir()
    (path / ".DS_Store").write_text("x")


P = "parameters.txt"
S = "scenario+"
E = EXTRA

# (id, changes, extra argv, exit code, pattern the output must match)
FILE_CASES = [
    # ------------------------------------------------------------ scenario.txt
    ("unknown-option-typo", {S: "maxExperimnts = 50\n"}, [], 2,
     rf"scenario\.txt:{E}: option maxExperimnts: unknown option \(did you mean maxExperiments\?\)"),
    ("unknown-option-case", {S: "maxexperiments = 50\n"}, [], 2, r"did you mean maxExperiments\?"),
    ("unknown-option-far", {S: "fooBar = 1\n"}, [], 2,
     rf"scenario\.txt:{E}: option fooBar: unknown option \(irace's options are listed by racer --help\)"),
    ("missing-value", {S: "seed =\n"}, [], 2, rf"scenario\.txt:{E}: option seed: missing value"),
    ("no-equals", {S: "maxExperiments 50\n"}, [], 2, rf"scenario\.txt:{E}: expected `name = value`"),
    ("string-for-int", {S: 'maxExperiments = "lots"\n'}, [], 2,
     rf"scenario\.txt:{E}: option maxExperiments: expected a number; got 'lots'"),
    ("real-for-int", {S: "maxExperiments = 100.5\n"}, [], 2, r"option maxExperiments: expected an integer"),
    ("bad-bool", {S: "deterministic = 2\n"}, [], 2, r"option deterministic: expected 0/1 or TRUE/FALSE"),
    ("vector-value", {S: "seed = c(1, 2)\n"}, [], 2, r"option seed: expected a number"),
    ("unterminated-string", {S: 'parameterFile = "parameters.txt\n'}, [], 2,
     rf"scenario\.txt:{E}: option parameterFile: cannot read the value"),
    ("variable-value", {S: "maxExperiments = budget\n"}, [], 2, r"a value must be a constant"),
    ("r-function", {S: "repairConfiguration = repair\n"}, [], 2,
     r"option repairConfiguration: R functions cannot be given to racer"),
    ("nan", {S: "confidence = NaN\n"}, [], 2, r"option confidence: expected a finite number"),
    ("inf", {S: "maxExperiments = 0\nmaxTime = Inf\n"}, [], 2, r"option maxTime: expected a finite number"),
    ("confidence-range", {S: "confidence = 1.5\n"}, [], 2, rf"scenario\.txt:{E}: option confidence: must be in \(0, 1\)"),
    ("first-test-zero", {S: "firstTest = 0\n"}, [], 2, r"option firstTest: must be >= 1"),
    ("each-test-zero", {S: "eachTest = 0\n"}, [], 2, r"option eachTest: must be >= 1"),
    ("mu-zero", {S: "mu = 0\n"}, [], 2, r"option mu: must be >= 1"),
    ("first-test-multiple", {S: "eachTest = 2\n"}, [], 2, r"option firstTest: firstTest = 5 must be a multiple of eachTest = 2"),
    ("no-budget", {S: "maxExperiments = 0\n"}, [], 2, r"set maxExperiments \(runs\) or maxTime \(seconds\)"),
    ("two-budgets", {S: "maxTime = 60\n"}, [], 2, r"option maxTime: set only one of maxExperiments and maxTime"),
    ("test-type", {S: 'testType = "wilcoxon"\n'}, [], 2, r"option testType: 'wilcoxon' is not a test irace knows"),
    ("retries-negative", {S: "targetRunnerRetries = -1\n"}, [], 2, r"option targetRunnerRetries: must be >= 0; got -1"),
    ("parallel-negative", {S: "parallel = -2\n"}, [], 2, r"option parallel: must be >= 0"),
    ("iterations-negative", {S: "nbIterations = -1\n"}, [], 2, r"option nbIterations: must be >= 0"),
    ("per-iteration-negative", {S: "nbExperimentsPerIteration = -10\n"}, [], 2,
     r"option nbExperimentsPerIteration: must be >= 0"),
    ("elitist-limit-negative", {S: "elitistLimit = -1\n"}, [], 2, r"option elitistLimit: must be >= 0"),
    ("min-measurable-negative", {S: "minMeasurableTime = -1\n"}, [], 2, r"option minMeasurableTime: must be >= 0"),
    ("soft-restart-negative", {S: "softRestartThreshold = -1\n"}, [], 2, r"option softRestartThreshold: must be >= 0"),
    ("timeout-negative", {S: "targetRunnerTimeout = -5\n"}, [], 2, r"option targetRunnerTimeout: must be >= 0"),
    ("seed-negative", {S: "seed = -1\n"}, [], 2, rf"scenario\.txt:{E}: option seed: must be a non-negative integer; got -1"),
    ("seed-real", {S: "seed = 1.5\n"}, [], 2, r"option seed: expected an integer; got 1.5"),
    ("digits-zero", {S: "digits = 0\n"}, [], 2,
     rf"scenario\.txt:{E}: digits = 0 is outside irace's range 1\.\.15 \(irace refuses it too\): it would round every real parameter to an integer"),
    ("digits-negative", {S: "digits = -3\n"}, [], 2, rf"scenario\.txt:{E}: digits = -3 is outside irace's range"),
    ("digits-too-many", {S: "digits = 20\n"}, [], 2,
     rf"scenario\.txt:{E}: digits = 20 is outside irace's range 1\.\.15 \(irace refuses it too\).*use digits = 15"),
    ("exec-dir-empty", {S: 'execDir = ""\n'}, [], 2, r"option execDir: is empty; set it \(irace's default is '\./'\)"),
    ("runner-empty", {S: 'targetRunner = ""\n'}, [], 2, r"option targetRunner: is empty"),
    ("scenario-not-utf8", {"scenario.txt": SCENARIO.encode() + b"# caf\xe9\n"}, [], 2,
     rf"scenario\.txt:{E}: not UTF-8 text: byte 0xe9 at column 6 \(save the file as UTF-8\)"),
    ("budget-too-small", {S: "maxExperiments = 10\n"}, None, 2,
     rf"scenario\.txt:{E}: maxExperiments = 10 is too small: racer races at least 2 "
     r"configurations over max\(mu, firstTest\) \+ eachTest = 6 instances, 12 runs"),
    ("budget-below-irace-minimum", {S: "maxExperiments = 60\ntestType = 'F-test'\n"}, None, 2,
     rf"scenario\.txt:{E}: maxExperiments = 60 is too small: irace would need at least \d+ runs"),
    # ------------------------------------------------------------ the command line
    ("flag-seed-negative", {}, ["--seed", "-1"], 2, r"command line: option --seed \(seed\): must be a non-negative integer"),
    ("flag-not-a-number", {}, ["--parallel", "abc"], 2,
     r"command line: option --parallel \(parallel\): expected a number; got 'abc'"),
    ("flag-digits-zero", {}, ["--digits", "0"], 2, r"command line: digits = 0 is outside irace's range"),
    ("flag-unknown", {}, ["--max-experimentz", "10"], 2, r"unrecognized arguments: --max-experimentz"),
    ("flag-on-error-choice", {}, ["--on-error", "maybe"], 2, r"--on-error: invalid choice: 'maybe'"),
    ("flag-racing-test", {}, ["--racing-test", "nonsense", "--no-report"], 2, r"--racing-test 'nonsense': unknown racing test: the names are 'F-test', .*; got 'nonsense'"),
    ("flag-executor", {}, ["--executor", "cloud", "--no-report"], 2, r"--executor must be 'threads'"),
    ("fixed-list-without-file", {}, ["--fixed-list", "--no-report"], 2, r"--fixed-list needs configurationsFile"),
    ("scenario-missing", {}, ["--scenario", "nope.txt"], 2, r"nope\.txt: scenario file not found"),
    ("scenario-folder", {"folder.txt": mkdir}, ["--scenario", "folder.txt"], 2, r"folder\.txt: is a folder, not a file"),
    # ------------------------------------------------------------ parameters.txt
    ("param-missing-type", {P: 'x "--x " (1, 2)\n'}, [], 2,
     r"parameters\.txt:1: cannot read 'x \"--x \" \(1, 2\)': expected `name \"switch\" type \(domain\)"),
    ("param-unknown-type", {P: 'x "--x " f (1, 2)\n'}, [], 2,
     r"parameters\.txt:1: cannot read .* with type c, o, i, r, i,log or r,log; unknown type 'f'"),
    ("param-unquoted-switch", {P: "x --x r (1, 2)\n"}, [], 2,
     r"parameters\.txt:1: cannot read .*; the switch must be quoted, e\.g\. \"--x \""),
    ("param-domain-unclosed", {P: 'x "--x " r (1, 2\n'}, [], 2, r"parameters\.txt:1: cannot read .*; the domain needs a closing \)"),
    ("param-condition-without-bar", {P: PARAMETERS + 'q "--q " r (0, 1) mode == "a"\n'}, [], 2,
     r"parameters\.txt:4: cannot read .*; after the domain only a condition may follow, starting with \|"),
    ("param-bounds-reversed", {P: 'x "--x " r (3, 1)\n'}, [], 2, r"parameters\.txt:1: x: lower bound 3 > upper bound 1"),
    ("param-bounds-text", {P: 'x "--x " r (low, high)\n'}, [], 2, r"parameters\.txt:1: x: bounds must be numbers"),
    ("param-int-bounds-real", {P: 'x "--x " i (1.5, 3)\n'}, [], 2, r"parameters\.txt:1: x: integer bounds must be integers"),
    ("param-log-categorical", {P: 'x "--x " c,log (a, b)\n'}, [], 2, r"parameters\.txt:1: x: ',log' applies to i and r only"),
    ("param-log-nonpositive", {P: 'x "--x " r,log (0, 1)\n'}, [], 2, r"parameters\.txt:1: x: a log-scale domain must be positive"),
    ("param-three-bounds", {P: 'x "--x " r (1, 2, 3)\n'}, [], 2, r"parameters\.txt:1: x: type r needs \(lower, upper\)"),
    ("param-empty-domain", {P: 'x "--x " c ()\n'}, [], 2, r"parameters\.txt:1: x: empty domain"),
    ("param-repeated-values", {P: 'x "--x " c (a, b, a)\n'}, [], 2, r"parameters\.txt:1: x: repeated values"),
    ("param-duplicate-name", {P: PARAMETERS + 'x "--y " r (0, 1)\n'}, [], 2, r"parameters\.txt:4: parameter 'x' defined twice"),
    ("param-condition-syntax", {P: PARAMETERS + 'q "--q " r (0, 1) | mode = "b"\n'}, [], 2,
     r"parameters\.txt:4: q: condition: unexpected character '='"),
    ("param-condition-unknown", {P: PARAMETERS + 'q "--q " r (0, 1) | mod == "b"\n'}, [], 2,
     r"parameters\.txt:4: the condition of q \(mod == \"b\"\) uses 'mod', which is not a parameter \(did you mean mode\?\)"),
    ("param-condition-cycle", {P: 'a "--a " r (0, 1) | b > 0\nb "--b " r (0, 1) | a > 0\n'}, [], 2,
     r"parameters\.txt:\d: conditions form a cycle"),
    ("param-condition-function", {P: PARAMETERS + 'q "--q " r (0, 1) | grepl("a", mode)\n'}, [], 2,
     r"parameters\.txt:4: q: condition: unsupported function grepl\(\)"),
    ("param-curly-quotes", {P: PARAMETERS + 'q "--q " r (0, 1) | mode == \u201cb\u201d\n'}, [], 2,
     r"parameters\.txt:4: .*LEFT DOUBLE QUOTATION MARK: R strings take straight quotes"),
    ("param-unknown-section", {P: PARAMETERS + "[options]\n"}, [], 2, r"parameters\.txt:4: unknown section \[options\]"),
    ("param-global-unknown", {P: PARAMETERS + "[global]\nprecision = 3\n"}, [], 2,
     r"parameters\.txt:5: unknown \[global\] option 'precision' \(known: digits\)"),
    ("param-global-digits-text", {P: PARAMETERS + "[global]\ndigits = many\n"}, [], 2,
     r"parameters\.txt:5: digits must be an integer"),
    ("param-global-digits-zero", {P: PARAMETERS + "[global]\ndigits = 0\n"}, [], 2,
     r"parameters\.txt:5: digits = 0 is outside irace's range 1\.\.15"),
    ("param-none", {P: "# nothing here\n"}, [], 2, r"parameters\.txt: no parameters defined"),
    ("param-not-utf8", {P: PARAMETERS.encode() + b'q "--q" c (\xff, b)\n'}, [], 2,
     r"parameters\.txt:4: not UTF-8 text: byte 0xff"),
    ("param-file-missing", {S: 'parameterFile = "params.txt"\n'}, [], 2,
     rf"scenario\.txt:{E}: option parameterFile: parameter file .*params\.txt does not exist"),
    ("param-file-folder", {"params": mkdir, S: 'parameterFile = "params"\n'}, [], 2,
     r"option parameterFile: parameter file .*params is a folder, not a file"),
    ("param-bom-in-the-middle", {P: PARAMETERS + '\ufeffq "--q " r (0, 1)\n'}, [], 2,
     r"parameters\.txt:4: cannot read"),
    # ------------------------------------------------------------ forbidden rules
    ("forbidden-unknown-file", {"forbidden.txt": 'mode == "a" & y > 1\n', S: 'forbiddenFile = "forbidden.txt"\n'}, [], 2,
     r"forbidden\.txt:1: the forbidden rule `mode == \"a\" & y > 1` uses 'y', which is not a parameter \(parameters: mode, x, pen\)"),
    ("forbidden-unknown-section", {P: PARAMETERS + "[forbidden]\nmdoe == 'a'\n"}, [], 2,
     r"parameters\.txt:5: the forbidden rule `mdoe == 'a'` uses 'mdoe', which is not a parameter \(did you mean mode\?\)"),
    ("forbidden-syntax", {"forbidden.txt": "x >> 1\n", S: 'forbiddenFile = "forbidden.txt"\n'}, [], 2,
     r"forbidden\.txt:1: forbidden rule: unexpected '>'"),
    ("forbidden-file-missing", {S: 'forbiddenFile = "forbidden.txt"\n'}, [], 2,
     r"option forbiddenFile: forbidden file .*forbidden\.txt does not exist"),
    ("forbidden-always", {P: PARAMETERS + "[forbidden]\nx > -10\n"}, [], 2,
     r"parameters\.txt:5: the forbidden rule `x > -10` holds for every configuration \(x is in \[-5, 5\]\), so every configuration is forbidden"),
    ("forbidden-together-always", {P: PARAMETERS + '[forbidden]\nmode == "a"\nmode == "b"\n'}, [], 2,
     r"the forbidden rules together hold for every configuration.*parameters\.txt:5.*parameters\.txt:6"),
    ("forbidden-not-evaluable", {P: PARAMETERS + "[forbidden]\nabs(x, 1) > 2\n"}, [], 2,
     r"parameters\.txt:5: the forbidden rule `abs\(x, 1\) > 2` cannot be evaluated: abs\(\) takes one argument"),
    # ------------------------------------------------------------ configurations file
    ("configurations-missing", {S: 'configurationsFile = "configurations.txt"\n'}, [], 2,
     r"option configurationsFile: configurations file .*configurations\.txt does not exist"),
    ("configurations-bad-column", {"c.txt": "mode y\na 1\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt:1: column 'y' is not a parameter"),
    ("configurations-count", {"c.txt": "mode x\na\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt:2: 1 values for 2 columns"),
    ("configurations-outside", {"c.txt": "mode x\na 7\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt:2: invalid configuration: parameter x = 7.0 is outside \[-5, 5\]"),
    ("configurations-inactive", {"c.txt": "mode x pen\na 1 2\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt:2: invalid configuration: parameter pen is inactive"),
    ("configurations-duplicate", {"c.txt": "mode x\na 1\na 1\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt:3: duplicate of the configuration on line 2"),
    ("configurations-header-only", {"c.txt": "mode x\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt: no configurations after the header"),
    ("configurations-not-a-number", {"c.txt": "mode x\na one\n", S: 'configurationsFile = "c.txt"\n'}, [], 2,
     r"c\.txt:2: x: could not convert string to float: 'one'"),
    # ------------------------------------------------------------ instances
    ("instances-file-missing", {"instances.txt": None}, [], 2,
     r"option trainInstancesFile: .*instances\.txt: file not found"),
    ("instances-dir-missing", {S: 'trainInstancesFile = ""\ntrainInstancesDir = "inst"\n'}, [], 2,
     r"option trainInstancesDir: instances directory .*inst does not exist"),
    ("instances-dir-empty", {"inst": mkdir, S: 'trainInstancesFile = ""\ntrainInstancesDir = "inst"\n'}, [], 2,
     r"option trainInstancesDir: no instance files in .*inst"),
    ("instances-dir-hidden-only", {"inst": hidden_only, S: 'trainInstancesFile = ""\ntrainInstancesDir = "inst"\n'}, [], 2,
     r"no instance files in .*inst \(hidden files are skipped, as irace does\)"),
    ("test-instances-dir-missing", {S: 'testInstancesDir = "tests"\n'}, [], 2,
     r"option testInstancesDir: instances directory .*tests does not exist \(set testInstancesFile"),
    ("instances-none", {S: 'trainInstancesFile = ""\n'}, [], 2,
     r"no training instances: set trainInstancesDir and/or trainInstancesFile"),
    ("instances-comments-only", {"instances.txt": "# none yet\n"}, [], 2, r"option trainInstancesFile: no instances in"),
    ("instances-quote", {"instances.txt": 'i1\n"i2\n'}, [], 2, r"instances\.txt:2: No closing quotation"),
    ("instances-not-utf8", {"instances.txt": b"i1\n\xe9\n"}, [], 2, r"instances\.txt:2: not UTF-8 text"),
    # ------------------------------------------------------------ the target-runner, before it runs
    ("runner-missing", {"target-runner": None}, [], 2, r"option targetRunner: target-runner .*target-runner does not exist"),
    ("runner-not-executable", {"target-runner": lambda p: (p.write_text(RUNNER), p.chmod(0o644))}, [], 2,
     r"target-runner .* is not executable \(chmod \+x it, or set targetRunnerLauncher"),
    ("runner-folder", {"target-runner": mkdir}, [], 2, r"option targetRunner: target-runner .* is a folder, not a file"),
    ("runner-crlf", {"target-runner": crlf(RUNNER)}, [], 2,
     r"has Windows line endings .*dos2unix"),
    ("runner-bad-shebang", {"target-runner": "#!/no/such/python\nprint(1)\n"}, [], 2,
     r"its #! line names /no/such/python, which does not exist"),
    ("launcher-missing", {S: 'targetRunnerLauncher = "python9"\n'}, [], 2,
     r"option targetRunnerLauncher: python9 is not an executable file \(nor a command on PATH\)"),
    ("launcher-args", {S: 'targetRunnerLauncher = "sh"\ntargetRunnerLauncherArgs = "{targetRunnerArgs} {targetRunner}"\n'}, [], 2,
     r"option targetRunnerLauncherArgs: targetRunnerLauncherArgs must end with \{targetRunnerArgs\}"),
    # ------------------------------------------------------------ the target-runner, running
    ("output-text", {"target-runner": runner("echo done")}, [], 3,
     r"the last line of stdout is 'done'; expected `cost` or `cost time` \(numbers\)"),
    ("output-empty", {"target-runner": runner("true")}, [], 3, r"printed nothing on stdout \(expected `cost \[time\]`"),
    ("output-three-numbers", {"target-runner": runner("echo 1 2 3")}, [], 3, r"the last line of stdout is '1 2 3'"),
    ("output-number-and-text", {"target-runner": runner("echo 1.5 seconds")}, [], 3, r"the last line of stdout is '1.5 seconds'"),
    ("output-comma", {"target-runner": runner("echo 1,5")}, [], 3, r"the last line of stdout is '1,5'"),
    ("output-nan", {"target-runner": runner("echo NaN")}, [], 3, r"the target-runner returned the cost 'NaN'"),
    ("output-minus-inf", {"target-runner": runner("echo -Inf")}, [], 3, r"the target-runner returned the cost '-Inf'"),
    ("output-stderr-only", {"target-runner": runner("echo 1.5 >&2")}, [], 3,
     r"printed nothing on stdout(.|\n)*stderr \(last 1 lines\):\n    \| 1.5"),
    ("exit-nonzero", {"target-runner": runner("echo 'solver: out of memory' >&2; exit 3")}, [], 3,
     r"exited with status 3(.|\n)*exit status: 3(.|\n)*\| solver: out of memory"),
    ("killed-by-segv", {"target-runner": runner("kill -SEGV $$")}, [], 3,
     r"the target-runner was killed by SIGSEGV \(signal 11\)(.|\n)*exit status: -11 \(killed by SIGSEGV\)"),
    ("killed-by-kill", {"target-runner": runner("kill -KILL $$")}, [], 3,
     r"killed by SIGKILL \(signal 9\) \(the system's out-of-memory killer sends SIGKILL too: see dmesg\)"),
    ("timeout", {"target-runner": runner("exec sleep 30"), S: "targetRunnerTimeout = 0.3\n"}, [], 3,
     r"the target-runner timed out after 0.3 s; its process group was killed"),
    ("max-time-without-time", {S: "maxExperiments = 0\nmaxTime = 60\n"}, [], 3,
     r"maxTime needs the time of each run: print `cost time` on the last line"),
    ("run-fails-stop", {"target-runner": runner('[ "$1" = 2 ] && exit 4; echo 1.5')}, None, 3,
     r"target-runner failed:(.|\n)*exited with status 4(.|\n)*use --on-error eliminate"),
    ("run-all-fail-reject", {"target-runner": runner("exit 4")}, ["--on-error", "reject", "--no-report"], 3,
     r"no configuration could be evaluated(.|\n)*racer --check"),
    # ------------------------------------------------------------ the environment
    ("exec-dir-missing", {"arena": None}, [], 2, r"option execDir: execDir .*arena does not exist \(irace requires it too: mkdir it\)"),
    ("exec-dir-is-a-file", {"arena": None, "arena-file": make_file, S: 'execDir = "arena-file"\n'}, [], 2,
     rf"scenario\.txt:{E}: option execDir: execDir .*arena-file is a file; execDir must be a folder"),
    ("output-in-the-way", {"arena/runs.csv": mkdir}, ["--no-report"], 2,
     r"racer: error: cannot write .*arena/runs\.csv: a folder or file is in the way \(Is a directory\)\. "
     r"Move it away, then run the same command again"),
    ("init-over-files", {}, ["--init"], 2, r"not overwriting scenario\.txt, parameters\.txt"),
]

ACCEPTED = [
    # (id, changes, extra argv, pattern the output must match), exit 0 and no warning
    ("scenario-bom", {"scenario.txt": bom(SCENARIO)}, [], r"OK: cost 1.5"),
    ("scenario-crlf", {"scenario.txt": crlf(SCENARIO)}, [], r"OK: cost 1.5"),
    ("scenario-tabs", {"scenario.txt": SCENARIO.replace(" = ", "\t=\t")}, [], r"OK: cost 1.5"),
    ("parameters-bom", {P: bom(PARAMETERS)}, [], r"parameters: 3 \(3 variable\)"),
    ("parameters-crlf", {P: crlf(PARAMETERS)}, [], r"parameters: 3 \(3 variable\)"),
    ("parameters-tabs", {P: PARAMETERS.replace("  ", "\t")}, [], r"parameters: 3 \(3 variable\)"),
    ("instances-crlf-bom", {"instances.txt": bom("i1\r\ni2\r\n")}, [], r"training instances: 2"),
    ("output-extra-lines", {"target-runner": runner("echo starting; echo; echo 2.5 0.1")}, [], r"OK: cost 2.5"),
    ("output-inf", {"target-runner": runner("echo Inf")}, [], r"the runner answered Inf"),
    ("same-switch-exclusive", {P: 'mode "--mode " c (a, b)\np "--p " r (0, 1) | mode == "a"\n'
                               'q "--p " i (1, 5) | mode == "b"\n'}, [], r"parameters: 3"),
    ("condition-on-numeric-value", {P: PARAMETERS + 'q "--q " r (0, 1) | x > 2\n'}, [], r"parameters: 4"),
]

WARNED = [
    # (id, changes, extra argv, warning pattern): exit 0, the warning printed once
    ("same-switch", {P: PARAMETERS + 'y "--x " r (0, 1)\n'}, [],
     r"parameters\.txt:4: parameters x \(line 2\) and y have the same switch '--x ': when both are "
     r"active the target-runner gets it twice"),
    ("condition-outside-domain", {P: PARAMETERS + 'q "--q " r (0, 1) | mode == "c"\n'}, [],
     r"parameters\.txt:4: q can never be active: its condition `mode == \"c\"` never holds: mode is "
     r"compared with \"c\", which is not one of its values \(a, b\)"),
    ("condition-partly-outside", {P: PARAMETERS + 'q "--q " r (0, 1) | mode %in% c("a", "c")\n'}, [],
     r"parameters\.txt:4: the condition of q \(`mode %in% c\(\"a\", \"c\"\)`\): mode is compared with \"c\""),
    ("condition-numeric-never", {P: PARAMETERS + 'q "--q " r (0, 1) | x > 7\n'}, [],
     r"parameters\.txt:4: q can never be active: its condition `x > 7` never holds \(x is in \[-5, 5\]\)"),
    ("condition-ordinal-outside", {P: PARAMETERS + 'q "--q " r (0, 1) | pen == 3\n'}, [],
     r"q can never be active: its condition `pen == 3` never holds: pen is compared with 3, which is not one of its values \(1, 2, 4\)"),
    ("forbidden-never", {P: PARAMETERS + "[forbidden]\nx > 5\n"}, [],
     r"parameters\.txt:5: the forbidden rule `x > 5` can never hold, so it forbids nothing \(x is in \[-5, 5\]\)"),
    ("forbidden-never-inactive", {P: PARAMETERS + '[forbidden]\nmode == "a" & pen == 2\n'}, [],
     r"the forbidden rule `mode == \"a\" & pen == 2` can never hold, so it forbids nothing "
     r"\(mode is one of a, b; pen is one of 1, 2, 4, when mode == \"b\"\)"),
    ("forbidden-outside-domain", {"forbidden.txt": 'mode == "A"\n', S: 'forbiddenFile = "forbidden.txt"\n'}, [],
     r"forbidden\.txt:1: the forbidden rule `mode == \"A\"` can never hold, so it forbids nothing: mode is compared with \"A\""),
    ("forbidden-digits", {P: PARAMETERS + "[forbidden]\nx == 0.123456\n"}, [],
     r"the forbidden rule `x == 0.123456` can never hold, so it forbids nothing: x is compared with 0.123456, but its values have 4 decimals"),
    ("instances-not-files", {S: 'trainInstancesDir = "inst"\n', "inst": mkdir}, [],
     r"instances\.txt:1: 3 of the 3 instances are no files: .*inst/i1 does not exist \(trainInstancesDir = "
     r"'inst' is put before each name\)\. racer passes them to the runner anyway, as irace does; "
     r"if the instances are not files, set trainInstancesDir = \"\""),
    ("unimplemented-option", {S: "aclib = 1\n"}, [], r"option not implemented by racer, ignored: aclib = True"),
    ("configuration-forbidden", {"c.txt": "mode x\na 1\na 2\n", P: PARAMETERS + "[forbidden]\nx > 1.5\n",
                                 S: 'configurationsFile = "c.txt"\n'}, [],
     r"c\.txt:3: configuration discarded: it is forbidden by the rule 'x > 1.5' \(as irace does\)"),
]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("changes, argv, code, pattern",
                         [pytest.param(*case[1:], id=case[0]) for case in FILE_CASES])
def test_fault_is_reported_with_where_and_what_to_fix(in_tmp, capsys, changes, argv, code, pattern):
    write_scenario(in_tmp, changes)
    # argv None: a real run (the fault shows only while racing), as with --no-report or --init
    # in argv; otherwise --check.
    if argv is None:
        argv = ["--no-report"]
    elif "--no-report" not in argv and "--init" not in argv:
        argv = ["--check", *argv]
    got, output = run_in_process(argv, capsys)
    check(got, output, code, pattern)
    if code != EXIT_OK:
        assert re.search(r"racer: error: |usage: racer", output), output


@pytest.mark.slow
@pytest.mark.parametrize("changes, argv, pattern", [pytest.param(*case[1:], id=case[0]) for case in ACCEPTED])
def test_accepted_without_a_warning(in_tmp, capsys, changes, argv, pattern):
    write_scenario(in_tmp, changes)
    got, output = run_in_process(["--check", *argv], capsys)
    check(got, output, EXIT_OK, pattern)
    assert "warning" not in output, output


@pytest.mark.slow
@pytest.mark.parametrize("changes, argv, pattern", [pytest.param(*case[1:], id=case[0]) for case in WARNED])
def test_warning_names_file_and_line_once_and_is_not_fatal(in_tmp, capsys, changes, argv, pattern):
    write_scenario(in_tmp, changes)
    got, output = run_in_process(["--check", *argv], capsys)
    check(got, output, EXIT_OK, r"racer: warning: .*" + pattern)
    assert len(re.findall(pattern, output)) == 1, output


@pytest.mark.slow
def test_warnings_are_printed_once_in_a_whole_run(in_tmp, capsys):
    write_scenario(in_tmp, {P: PARAMETERS + 'y "--x " r (0, 1)\n', S: "maxExperiments = 200\n"})
    got, output = run_in_process(["--no-report"], capsys)
    check(got, output, EXIT_OK, r"# Best configurations")
    assert output.count("have the same switch") == 1


# ---------------------------------------------------------------------------- racer report

@pytest.mark.parametrize("argv, pattern", [
    (["report", "missing.sqlite"], r"racer report: error: .*missing\.sqlite"),
    (["report", "arena", "--csv", "x.csv"], r"racer report: error: 'arena' is a racer execDir"),
    (["report"], r"racer report: error: the following arguments are required: PATH"),
])
def test_report_input_errors_exit_2_not_1(in_tmp, capsys, argv, pattern):
    write_scenario(in_tmp)
    got, output = run_in_process(argv, capsys)
    check(got, output, EXIT_SCENARIO, pattern)


# ---------------------------------------------------------------------------- the environment

RACER = [sys.executable, "-c", "import sys; from racer.cli import main; sys.exit(main())"]


def subprocess_racer(args, cwd, preexec_fn=None, timeout=120):
    return subprocess.run([*RACER, *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, preexec_fn=preexec_fn, timeout=timeout)


def can_mount() -> bool:
    return os.geteuid() == 0 and sys.platform.startswith("linux")


@pytest.fixture
def mount_point(tmp_path):
    """A tmpfs mounted by the test (root only), unmounted afterwards."""
    if not can_mount():
        pytest.skip("mounting a tmpfs needs root")
    point = tmp_path / "mnt"
    point.mkdir()
    mounted = []

    def mount(options: str):
        command = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)]
        if mounted:
            command = ["mount", "-o", "remount," + options, str(point)]
        if subprocess.run(command, capture_output=True).returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {' '.join(command)}")
        mounted.append(options)
        return point

    yield mount
    if mounted:
        subprocess.run(["umount", str(point)], check=False)


@pytest.mark.slow
def test_exec_dir_not_writable(in_tmp, capsys, mount_point):
    # Root ignores permission bits: a read-only file system is what refuses it a write.
    target = mount_point("ro,size=64k")
    write_scenario(in_tmp, {S: f'execDir = "{target}"\n'})
    got, output = run_in_process(["--no-report"], capsys)
    check(got, output, EXIT_SCENARIO,
          rf"scenario\.txt:{E}: option execDir: execDir {re.escape(str(target))} is not writable: "
          r"racer writes runs\.csv and its journal there \(make it writable")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits (the read-only mount case covers it)")
def test_exec_dir_without_write_permission(in_tmp, capsys):
    write_scenario(in_tmp)
    (in_tmp / "arena").chmod(0o555)
    try:
        got, output = run_in_process(["--no-report"], capsys)
    finally:
        (in_tmp / "arena").chmod(0o755)
    check(got, output, EXIT_SCENARIO, r"option execDir: execDir .*arena is not writable")


@pytest.mark.slow
def test_full_disk_says_disk_full_and_resumes_once_space_is_freed(in_tmp, capsys, mount_point):
    """A real ENOSPC: execDir on a 64 KiB tmpfs (racer's journal needs more), then the same
    command after the tmpfs is grown finishes the run."""
    target = mount_point("size=64k")
    write_scenario(in_tmp, {S: f'execDir = "{target}"\n'})
    done = subprocess_racer(["--no-report"], in_tmp)
    output = done.stdout + done.stderr
    check(done.returncode, output, EXIT_SCENARIO,
          rf"racer: error: disk full: no space left on the file system of {re.escape(str(target))} "
          r"\(\d+ bytes free\)(.|\n)*Free some space or set execDir to another disk, then run the "
          r"same command again")
    mount_point("size=4m")
    got, output = run_in_process(["--no-report"], capsys)
    check(got, output, EXIT_OK, r"resuming from the journal(.|\n)*# Best configurations")


@pytest.mark.slow
@pytest.mark.parametrize("limit", [3000, 40000])
def test_file_size_limit_is_named(in_tmp, limit):
    """A real EFBIG (RLIMIT_FSIZE, SIGXFSZ ignored so that the write fails instead of killing
    racer), on opening the journal (3000 bytes) or while racing (40000)."""
    write_scenario(in_tmp)

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess_racer(["--no-report"], in_tmp, preexec_fn=limit_file_size)
    check(done.returncode, done.stdout + done.stderr, EXIT_SCENARIO,
          rf"racer: error: file too large: a file in .*arena went past the file-size limit "
          rf"\(ulimit -f: {limit} bytes\)(.|\n)*Raise the limit")


@pytest.mark.slow
def test_hanging_runner_and_sigterm(in_tmp):
    """No targetRunnerTimeout and a runner that never answers: racer waits (as irace does);
    SIGTERM stops it with exit code 130, the runner killed, and a message on how to resume."""
    write_scenario(in_tmp, {"target-runner": runner("echo $$ > \"$PWD/runner.pid\"; exec sleep 300")})
    proc = subprocess.Popen([*RACER, "--no-report"], cwd=in_tmp, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid_file = in_tmp / "arena" / "runner.pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert pid_file.exists(), proc.communicate()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    check(proc.returncode, out + err, EXIT_INTERRUPTED,
          r"racer: error: interrupted; run the same command again to resume from the journal")
    runner_pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(runner_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the hanging runner outlived racer")


def test_corpus_size_and_the_documented_exit_codes():
    """At least 80 faults, and the codes they assert are docs/cli.md's table."""
    environment = 3 + 4  # racer report cases; read-only execDir, full disk, 2 file-size limits
    assert len(FILE_CASES) + len(WARNED) + environment + 1 >= 80  # + the hanging runner
    assert len({c[0] for c in FILE_CASES + ACCEPTED + WARNED}) == len(FILE_CASES + ACCEPTED + WARNED)
    with open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8") as f:
        table = f.read().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.*) \|$", table, re.M)}
    assert set(documented) == {EXIT_OK, 1, EXIT_SCENARIO, EXIT_RUNNER, EXIT_INTERRUPTED}
    assert {c[3] for c in FILE_CASES} == {EXIT_SCENARIO, EXIT_RUNNER}
    assert "target-runner failed" in documented[EXIT_RUNNER]
    assert "disk full" in documented[EXIT_SCENARIO] and "interrupted" in documented[EXIT_INTERRUPTED]
    assert "`racer report` exits 0, or 2" in table


# ---------------------------------------------------------------------------- the checks' verdicts

def space_with(rule: str, params: str = PARAMETERS + 'k "--k " i (1, 5)\n'):
    """The corpus's parameters (and an integer k) with one forbidden rule, from forbidden.txt:1."""
    path = pathlib.Path(tempfile.mkdtemp()) / "parameters.txt"
    path.write_text(params)
    space = read_parameters(str(path))
    space.add_forbidden([ForbiddenRule(rule, rexpr.parse(rule), "forbidden.txt", 1)])
    return space


@pytest.mark.parametrize("rule, verdict", [
    # Integers: the constant, its neighbours and the bounds are tried.
    ("k == 3", "some"), ("k > 4.5", "some"), ("k > 5", "never"), ("k >= 1", "always"),
    ("k != 3", "some"), ("k %% 2 == 0", "some"), ("k < 1 | k > 5", "never"),
    # Reals: rounded to digits as sampled values are.
    ("x > 4.99995", "some"), ("x == 0.12345", "never"), ("x >= -5 & x <= 5", "always"),
    ("x * x >= 0", "always"), ("abs(x) > 5", "never"),
    # Conditional parameters are NA when inactive; NA forbids nothing.
    ('pen == 4 & mode == "a"', "never"), ("is.na(pen)", "some"), ('is.na(pen) | mode == "b"', "always"),
    # Two parameters, constants only.
    ('mode == "a" & x > 0', "some"), ("TRUE", "always"), ("FALSE", "never"),
])
def test_forbidden_rule_verdicts(rule, verdict):
    space = space_with(rule)
    if verdict == "always":
        with pytest.raises(ParameterFileError, match=r"forbidden\.txt:1: the forbidden rule .* holds for every configuration"):
            check_space(space)
        return
    warnings = check_space(space)
    assert any("can never hold" in w for w in warnings) == (verdict == "never"), warnings


def test_spaces_too_large_to_enumerate_are_not_judged(monkeypatch):
    monkeypatch.setattr(checks, "MAX_COMBINATIONS", 3)
    assert checks.check_space(space_with("k > 5")) == []  # 5 integers > 3 combinations: no verdict
    monkeypatch.undo()
    assert checks.check_space(space_with("k > 5"))


def test_check_space_refuses_what_is_not_a_space():
    with pytest.raises(TypeError, match=r"`space` must be a ParameterSpace; got 'parameters.txt'"):
        check_space("parameters.txt")
