"""``racer`` on the execDir of a finished tuning with a larger ``maxExperiments`` or ``maxTime``
continues it: every run already made is kept (runner invocations counted), new iterations use
the extra budget, the outputs are rewritten; killed with ``kill -9`` it resumes to the same
outputs. Any other change is refused, saying first how to start over, then each change as
``name: old -> new`` in the scenario's words."""

import json
import os
import pathlib
import shutil

import pytest

from racer.cli import EXIT_OK, EXIT_SCENARIO, main
from racer.tuning.lookahead import UNUSED

from _helpers.cli import (BUDGET, PARAMS_1, check_resumed, kill, make_scenario, outputs, racer_args,
                          read_runs, rows_at_least, scenario)

pytestmark = pytest.mark.slow  # subprocesses, worker processes: `pytest -m "not slow"` skips them

MORE = 150


def runs_made(folder):
    """Runner invocations so far (one pid file each) and the runs used, by key."""
    used = [r for r in read_runs(folder) if r["status"] != UNUSED]
    keys = [(r["iteration"], r["configuration"], r["instance_id"]) for r in used]
    return len(os.listdir(folder / "arena" / "pids")), keys


def set_budget(scen, value, old=BUDGET):
    _edit(pathlib.Path(scen), f"maxExperiments = {old}", f"maxExperiments = {value}")


@pytest.fixture(scope="module")
def continued(tmp_path_factory):
    """A tuning of maxExperiments = 60, then the same command with 150 in scenario.txt."""
    folder = tmp_path_factory.mktemp("continue") / "ref"
    scen = scenario(folder)
    assert main(racer_args(scen)) == EXIT_OK
    before = runs_made(folder), outputs(folder)
    set_budget(scen, MORE)
    assert main(racer_args(scen)) == EXIT_OK
    return folder, scen, before


def test_a_larger_budget_continues_the_tuning_keeping_every_run(continued):
    folder, scen, ((pids_before, keys_before), outputs_before) = continued
    pids_after, keys_after = runs_made(folder)
    results = json.loads((folder / "arena" / "results.json").read_text())
    # Kept runs are not repeated: every key once, the old ones first, each runner started
    # once per run (unused look-ahead runs may add starts, never fewer).
    assert len(set(keys_after)) == len(keys_after) and keys_after[: len(keys_before)] == keys_before
    new = keys_after[len(keys_before):]
    tuning_new = [k for k in new if k[0] != "0"]
    assert tuning_new and pids_after - pids_before >= len(new)
    assert results["experiments"] == sum(k[0] != "0" for k in keys_after) <= MORE
    assert results["experiments"] > outputs_before["results.json"]["experiments"]
    assert results["budget"] == MORE
    # New iterations after the old ones; the test phase ran on the new elites, reusing the
    # test runs of elites already tested (no key of iteration 0 twice, checked above).
    assert min(int(k[0]) for k in tuning_new) > max(int(k[0]) for k in keys_before if k[0] != "0")
    assert results["iterations"] > outputs_before["results.json"]["iterations"]
    tested = {row["configuration"] for row in outputs(folder)["test.csv"]}
    assert tested == {str(e["id"]) for e in results["elites"][:1]}
    # The same command again resumes the finished continued tuning: no run at all.
    assert main(racer_args(scen)) == EXIT_OK
    assert runs_made(folder) == (pids_after, keys_after)
    # A smaller budget than the last session's is refused, naming both values.
    set_budget(scen, 100, old=MORE)
    try:
        assert main(racer_args(scen)) == EXIT_SCENARIO
    finally:
        set_budget(scen, MORE, old=100)
    assert runs_made(folder) == (pids_after, keys_after)


def test_the_continued_tuning_killed_with_kill_9_resumes_to_the_same_outputs(continued, tmp_path):
    ref, _, ((_, keys_before), _) = continued
    folder = tmp_path / "run"
    scen = scenario(folder)
    assert main(racer_args(scen)) == EXIT_OK
    set_budget(scen, MORE)
    # Killed 10 runs into the continuation (the new iterations), then the same command.
    killed_rows, _ = kill(folder, scen, when=rows_at_least(folder, len(read_runs(folder)) + 10))
    assert len(read_runs(folder)) > len(keys_before)
    assert main(racer_args(scen)) == EXIT_OK
    check_resumed(ref, folder, killed_rows, in_flight=2)


def test_a_larger_max_time_continues_the_tuning(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_TIME", "1")  # every run reports 1 s
    scen = make_scenario(tmp_path, budget=0, params=PARAMS_1, extra="maxTime = 60\n")
    args = ["--scenario", scen, "--parallel", "2", "-q", "1", "--no-report"]
    assert main(args) == EXIT_OK
    pids, keys = runs_made(tmp_path)
    assert main(args + ["--max-time", "150"]) == EXIT_OK
    pids_after, keys_after = runs_made(tmp_path)
    assert keys_after[: len(keys)] == keys and len(set(keys_after)) == len(keys_after)
    assert len(keys_after) > len(keys) and pids_after - pids >= len(keys_after) - len(keys)
    results = json.loads((tmp_path / "arena" / "results.json").read_text())
    assert 60 < results["time_used"] <= 150


# -------------------------------------------------------------------------- refusals

def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


CHANGES = {
    "seed": (lambda d: _edit(d / "scenario.txt", "seed = 3", "seed = 4"), "seed: 3 -> 4"),
    "budget smaller": (lambda d: _edit(d / "scenario.txt", "maxExperiments = 60", "maxExperiments = 40"),
                       ("maxExperiments: 60 -> 40 (to continue, give 60 or more: a tuning "
                        "continues only with a larger budget)")),
    "budget kind": (lambda d: _edit(d / "scenario.txt", "maxExperiments = 60", "maxTime = 100"),
                    ("budget: maxExperiments = 60 -> maxTime = 100 (a tuning continues only "
                     "with a larger maxExperiments)")),
    "parameter file": (lambda d: _edit(d / "parameters.txt", "(-5, 5)", "(-5, 9)"),
                       ('parameterFile (parameters.txt): parameter x: "--x " r (-5, 5) -> '
                        '"--x " r (-5, 9)')),
    "parameter added": (lambda d: _edit(d / "parameters.txt", "(-5, 5)\n", '(-5, 5)\ny "--y " c (k)\n'),
                        'parameterFile (parameters.txt): parameter y is new: "--y " c (k)'),
    "training instances": (lambda d: _edit(d / "train.txt", "inst-3\n", "inst-33\n"),
                           "training instances (train.txt): instance #3: inst-3 -> inst-33"),
    "test instances": (lambda d: _edit(d / "test.txt", "test-4\n", ""),
                       "test instances (test.txt): 4 -> 3 instances; instance #4 test-4 is gone"),
    "first test": (lambda d: _edit(d / "scenario.txt", "seed = 3", "seed = 3\nfirstTest = 4"),
                   "firstTest: (default) -> 4"),
    "test type": (lambda d: _edit(d / "scenario.txt", "seed = 3", 'seed = 3\ntestType = "t-test"'),
                  "testType: \"\" -> t-test"),
    "forbidden rules": (lambda d: ((d / "forbidden.txt").write_text("x > 4\n"), _edit(
        d / "scenario.txt", "seed = 3", 'seed = 3\nforbiddenFile = "forbidden.txt"')),
        "forbiddenFile (none -> forbidden.txt): 0 -> 1 rules; rule #1 x > 4 is new"),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("refusals") / "done"
    scen = make_scenario(folder, budget=60, params=PARAMS_1)
    assert main(["--scenario", scen, "-q", "1", "--no-report"]) == EXIT_OK
    return folder


def copy_of(finished, tmp_path):
    """The finished tuning in another folder, with the same target-runner command (the command
    is part of the settings, as an absolute path)."""
    folder = tmp_path / "copy"
    shutil.copytree(finished, folder)
    _edit(folder / "scenario.txt", 'targetRunner = "target-runner"',
          f'targetRunner = "{finished / "target-runner"}"')
    return folder


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_is_refused_with_start_over_first_then_old_and_new(finished, tmp_path, capsys, change):
    folder = copy_of(finished, tmp_path)
    edit, line = CHANGES[change]
    edit(folder)
    before = runs_made(folder)
    args = ["--scenario", str(folder / "scenario.txt"), "-q", "1", "--no-report"]
    capsys.readouterr()
    assert main(args) == EXIT_SCENARIO
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"racer: error: the tuning in execDir {folder / 'arena'} was started with "
                      f"other settings. To start over: racer {' '.join(args)} --fresh (or set "
                      "another execDir). To continue it, undo these changes:")
    assert err[1:] == [f"  {line}"]
    assert runs_made(folder) == before  # refused before any run
    if change != "budget kind":  # (maxTime needs a runner that reports times)
        assert main(args + ["--fresh"]) == EXIT_OK  # the advice works


@pytest.mark.parametrize("flag", ["--pipelined", "--pipelined-iterations"])
def test_a_resume_that_turns_pipelined_blocks_on_is_refused(finished, tmp_path, capsys, flag):
    # Pipelined blocks charge the runs started, the default only those used; pipelined
    # iterations sample each race at the last one's first test: a tuning resumed under the
    # other setting would not be the tuning it continues.
    folder = copy_of(finished, tmp_path)
    before = runs_made(folder)
    args = ["--scenario", str(folder / "scenario.txt"), "-q", "1", "--no-report", flag]
    capsys.readouterr()
    assert main(args) == EXIT_SCENARIO
    err = capsys.readouterr().err.splitlines()
    assert "was started with other settings" in err[0]
    assert err[1:] == [f"  {flag}: FALSE -> TRUE"]
    assert runs_made(folder) == before


def test_an_execdir_of_an_older_racer_is_checked_by_its_journals_with_fresh_first(finished, tmp_path, capsys):
    folder = copy_of(finished, tmp_path)
    os.remove(folder / "arena" / "racer-journal" / "settings.json")  # as written before it existed
    _edit(folder / "scenario.txt", "seed = 3", "seed = 4")
    args = ["--scenario", str(folder / "scenario.txt"), "-q", "1", "--no-report"]
    capsys.readouterr()
    assert main(args) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert err.startswith(f"racer: error: the journal in execDir cannot be resumed by this command. "
                          f"To start over: racer {' '.join(args)} --fresh (or set another execDir).")
    assert "holds a race with other settings" in err


def test_settings_json_records_the_budget_of_each_session(continued):
    folder = continued[0]
    settings = json.loads((folder / "arena" / "racer-journal" / "settings.json").read_text())
    assert settings["budgets"] == [{"maxExperiments": BUDGET}, {"maxExperiments": MORE}]


def test_an_unreadable_settings_file_is_refused_with_start_over_first(finished, tmp_path, capsys):
    folder = copy_of(finished, tmp_path)
    (folder / "arena" / "racer-journal" / "settings.json").write_text("{torn")
    args = ["--scenario", str(folder / "scenario.txt"), "-q", "1", "--no-report"]
    capsys.readouterr()
    assert main(args) == EXIT_SCENARIO
    err = capsys.readouterr().err
    assert err.startswith(f"racer: error: the tuning in execDir {folder / 'arena'} cannot be "
                          f"resumed. To start over: racer {' '.join(args)} --fresh (or set "
                          "another execDir). ")
    assert "settings.json cannot be read" in err
