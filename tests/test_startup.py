"""Start-up ("answer at once"): ``import racer``, ``racer --help``, ``--version``,
``--init`` and a scenario mistake load neither SciPy, Numba nor matplotlib; the lazily loaded
public names are the same objects as before.

Every check runs in a fresh interpreter: what is imported depends on import history, which one
pytest process (that has imported everything) cannot reset. The checks are on ``sys.modules``,
never on time; ``benchmarks/startup.py`` measures the time.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import racer
import racer.stats
from racer.cli import EXIT_OK, EXIT_SCENARIO
from racer.cli._main import INIT_FILES

# Seconds to import, each, on a cold start; the command line's quick answers need none of them.
HEAVY = ("scipy", "numba", "matplotlib")
# numpy costs a tenth of that and is needed once anything is computed. `import racer`, --help,
# --version and --init do without it too; a scenario mistake is held to HEAVY only.
WATCHED = (*HEAVY, "numpy")

# Runs `body` (which sets `outcome`), then prints, on its last line, the outcome and the heavy
# top-level packages then in sys.modules.
_PROBE = """
import json, sys
{body}
loaded = sorted({{name.partition(".")[0] for name in sys.modules}} & set({watched!r}))
print("\\nPROBE " + json.dumps({{"outcome": outcome, "loaded": loaded}}))
"""

# `racer ARGV` as the console script runs it (racer.cli:main), its exit code as the outcome.
_CLI = """
from racer.cli import main
try:
    outcome = main({argv!r})
except SystemExit as exc:  # argparse exits after --help
    outcome = exc.code
"""


def probe(body, cwd):
    # cwd: the installed package is imported, not whatever sits in the current directory.
    out = subprocess.run([sys.executable, "-c", _PROBE.format(body=body, watched=WATCHED)],
                         cwd=cwd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.rsplit("PROBE ", 1)[1])
    return found["outcome"], found["loaded"], out


def run_cli(argv, cwd):
    return probe(_CLI.format(argv=list(argv)), cwd)


def write_scenario(directory, **replace):
    """`racer --init`'s files in `directory`, with `replace` = {file name: text} swapped in."""
    for name, text in {**INIT_FILES, **replace}.items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace("{python}", sys.executable))
        if name == "target-runner":
            os.chmod(path, 0o755)


@pytest.mark.slow
def test_import_racer_loads_no_heavy_module(tmp_path):
    outcome, loaded, _ = probe("import racer\noutcome = racer.__version__", tmp_path)
    assert outcome == racer.__version__
    assert loaded == []


@pytest.mark.slow
def test_import_racer_stats_loads_no_heavy_module(tmp_path):
    _, loaded, _ = probe("import racer.stats\noutcome = None", tmp_path)
    assert loaded == []


@pytest.mark.slow
def test_a_public_name_loads_its_module_only_when_used(tmp_path):
    # The laziness is real, not an import of everything on first access: the race engine is
    # numpy only; the Bayesian test brings SciPy.
    _, loaded, _ = probe("import racer\nracer.Race\noutcome = None", tmp_path)
    assert loaded == ["numpy"]
    _, loaded, _ = probe("import racer\nracer.BayesianTest\noutcome = None", tmp_path)
    assert "scipy" in loaded


@pytest.mark.slow
def test_help_loads_no_heavy_module(tmp_path):
    code, loaded, out = run_cli(["--help"], tmp_path)
    assert code == EXIT_OK
    assert "--scenario FILE" in out.stdout and "--max-experiments" in out.stdout
    assert loaded == []


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_loads_no_heavy_module(flag, tmp_path):
    code, loaded, out = run_cli([flag], tmp_path)
    assert code == EXIT_OK
    assert out.stdout.startswith(f"racer {racer.__version__}\n")
    assert loaded == []


@pytest.mark.slow
def test_init_loads_no_heavy_module(tmp_path):
    code, loaded, _ = run_cli(["--init"], tmp_path)
    assert code == EXIT_OK
    assert sorted(os.listdir(tmp_path)) == sorted(INIT_FILES)
    assert loaded == []


SCENARIO_MISTAKES = {
    "no-scenario-file": (["--scenario", "missing.txt"], {}, "scenario file not found"),
    "check-no-scenario-file": (["--check", "--scenario", "missing.txt"], {},
                               "scenario file not found"),
    "bad-option-value": (["--scenario", "scenario.txt"],
                         {"scenario.txt": INIT_FILES["scenario.txt"] + "firstTest = 'five'\n"},
                         "option firstTest: expected a number"),
    "no-budget": (["--check"],
                  {"scenario.txt": INIT_FILES["scenario.txt"] + "maxExperiments = 0\n"},
                  "option maxExperiments"),
    "bad-parameter-type": (["--check"], {"parameters.txt": 'x "--x " z (1, 2)\n'},
                           "parameters.txt:1"),
    "bad-parameter-bounds": ([], {"parameters.txt": 'x "--x " r (1, 0)\n'},
                             "lower bound 1 > upper bound 0"),
    "bad-condition": ([], {"parameters.txt": 'x "--x " r (0, 1) | y ==\n'}, "parameters.txt:1"),
    "runner-missing": ([], {"scenario.txt": INIT_FILES["scenario.txt"].replace(
        '"target-runner"', '"no-runner"')}, "does not exist"),
    "command-line-option": (["--first-test", "4", "--each-test", "3"], {},
                            "firstTest = 4 must be a multiple of eachTest = 3"),
}


@pytest.mark.slow
@pytest.mark.parametrize("argv, files, message", list(SCENARIO_MISTAKES.values()),
                         ids=list(SCENARIO_MISTAKES))
def test_a_scenario_mistake_is_reported_without_heavy_modules(argv, files, message, tmp_path):
    write_scenario(tmp_path, **files)
    code, loaded, out = run_cli(argv, tmp_path)
    assert code == EXIT_SCENARIO, out.stderr
    assert message in out.stderr
    assert not set(loaded) & set(HEAVY), loaded


@pytest.mark.slow
@pytest.mark.parametrize("test_type", ["F-test", "t-test"])
def test_a_budget_too_small_is_caught_from_the_engine_without_scipy(test_type, tmp_path):
    # BudgetError comes from the tuner, imported only once a run starts: the lazy `except`
    # must still turn it into exit code 2 with its message, not a traceback. The racing test
    # is built by then, but SciPy waits for its first decision.
    write_scenario(tmp_path, **{"scenario.txt": INIT_FILES["scenario.txt"].replace(
        "maxExperiments = 300", f"maxExperiments = 5\ntestType = {test_type!r}")})
    code, loaded, out = run_cli(["--no-report"], tmp_path)
    assert code == EXIT_SCENARIO, out.stderr
    assert "maxExperiments = 5 is too small" in out.stderr
    assert "Traceback" not in out.stderr
    assert not set(loaded) & set(HEAVY), loaded


@pytest.mark.slow
def test_every_public_name_resolves_in_a_fresh_interpreter(tmp_path):
    body = textwrap.dedent("""
        import types
        import racer, racer.stats
        bad = [f"racer.{n}" for n in racer.__all__
               if isinstance(getattr(racer, n), types.ModuleType)]
        bad += [f"racer.stats.{n}" for n in racer.stats.__all__
                if isinstance(getattr(racer.stats, n), types.ModuleType)]
        outcome = {"bad": bad, "race": type(racer.race).__name__,
                   "stats": racer.stats.friedman.__module__}
    """)
    outcome, _, _ = probe(body, tmp_path)
    assert outcome == {"bad": [], "race": "function", "stats": "racer.stats.frequentist"}


@pytest.mark.slow
def test_star_import_binds_every_public_name(tmp_path):
    body = textwrap.dedent("""
        from racer import *
        import racer
        outcome = [n for n in racer.__all__ if globals().get(n) is not getattr(racer, n)]
    """)
    outcome, _, _ = probe(body, tmp_path)
    assert outcome == []


# What `dir(racer)` lists before anything is loaded (tab completion): the public names, the
# submodules `import racer` used to bind, and nothing of the lazy-loading machinery.
DIR_BEFORE_LAZY = [
    "BayesianTest", "CorrelatedTTestRacing", "Elimination", "EliminationRecord", "Evaluation",
    "EvaluationError", "FRaceTest", "HierarchicalRacingTest", "JournalInUseError", "KeepAll",
    "ParetoTest", "PosteriorBestTest", "ProtectElites", "Race", "RaceFailedError", "RaceResult", "RaceView",
    "RacingTest", "TRaceTest", "TuneResult", "__all__", "__builtins__", "__cached__", "__doc__", "__file__",
    "__loader__", "__name__", "__package__", "__path__", "__spec__", "__version__",
    "_race_stats", "_validation", "instance_groups", "parameter_space", "race", "racing", "result",
    "stats", "storage", "tune",  # parameter_space, tune and TuneResult: loaded lazily
    # ParetoTest
]


@pytest.mark.slow
def test_dir_lists_what_it_did_before_anything_is_loaded(tmp_path):
    outcome, loaded, _ = probe("import racer\noutcome = dir(racer)", tmp_path)
    assert outcome == DIR_BEFORE_LAZY
    assert loaded == []  # listing names loads nothing


@pytest.mark.parametrize("first", [
    "import racer.engine",
    "from racer.engine import Race",
    "import racer.tuning.tuner",  # the tuner imports the race engine itself
    "from racer.cli import main; main(['--version'])",
])
@pytest.mark.slow
def test_racer_race_is_the_function_whoever_imports_the_engine_first(first, tmp_path):
    # The engine module is racer.engine, so no submodule named ``race`` can shadow the function.
    body = (first + "\nimport racer\n"
            "outcome = [racer.race.__module__, callable(racer.race), type(racer.race).__name__]")
    outcome, _, _ = probe(body, tmp_path)
    assert outcome == ["racer.engine", True, "function"]


@pytest.mark.slow
def test_help_of_the_package_renders_every_public_name(tmp_path):
    body = "import pydoc, racer\ntext = pydoc.render_doc(racer, renderer=pydoc.plaintext)\n" \
           "outcome = [n for n in racer.__all__ if n != '__version__' and n not in text]"
    outcome, _, _ = probe(body, tmp_path)
    assert outcome == []


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'racer' has no attribute 'nope'"):
        racer.nope  # noqa: B018
    assert not hasattr(racer, "nope")
