"""Look-ahead dispatch (racer.tuning.lookahead): runs of a race's next block started while workers
would idle must change nothing the race sees while the budget does not bind (same elites,
same runs used), must be paid from look-ahead's reserve of the budget and visible when
unused, must fill idle
workers, and must survive kill -9 without repeating more than the runs in flight."""

import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from racer.racing.frace import FRaceTest
from racer.cli import EXIT_OK, main
from racer.tuning.dispatch import SKIPPED
from racer.tuning.tuner import Settings, Tuner
from racer.tuning.lookahead import UNUSED
from racer.tuning.instances import Instance
from racer.cli.target_runner import RunResult, TargetRunner
from racer.engine import Race

from _helpers.cli import ENV, PARAMS_1, make_scenario, racer_command, read_runs, wait_for_runs
from _helpers.tuner import SPACE, TRAIN, CountingRunner

pytestmark = pytest.mark.slow  # subprocesses, worker processes: `pytest -m "not slow"` skips them


class SleepyRunner(CountingRunner):
    """A CountingRunner (cost from x, mode, instance and noise, after ``delay`` seconds) that
    also records every call's start and end times."""

    def __init__(self, delay=0.0):
        super().__init__(delay)
        self.intervals = []

    def run(self, config_id, instance_id, seed, instance, switches):
        start = time.monotonic()
        res = super().run(config_id, instance_id, seed, instance, switches)
        with self._lock:
            self.intervals.append((start, time.monotonic()))
        return res


# Settings under which the budget never binds: two iterations of at most 60 runs out of 1,000
# (the races get the budget less look-ahead's reserve, which pays the unused runs ahead:
# racer/tuning/lookahead.py, "Budget"; tests/tuning/test_budget_cap.py; here the comparison
# with look-ahead off needs no reserve arithmetic).
NOT_BINDING = dict(max_experiments=1000, n_iterations=2, experiments_per_iteration=60)


def run_tuner(tmp_path, runner, *, initial=None, **settings):
    s = Settings(**{"max_experiments": 200, "seed": 5, "parallel": 2, **settings})
    log = []
    t = Tuner(SPACE, runner, TRAIN, s, FRaceTest(alpha=0.05), initial=initial,
              journal_dir=str(tmp_path / "j"),
              on_run=lambda it, cand, task, res: log.append((it, cand.id, task.index, task.seed,
                                                             res.status, res.cost)))
    return t.run(), log


def used(log):
    return sorted(row for row in log if row[4] != UNUSED)


def max_overlap(intervals):
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals],
                    key=lambda e: (e[0], e[1]))
    now = best = 0
    for _, step in events:
        now += step
        best = max(best, now)
    return best


@pytest.mark.parametrize("parallel", [2, 4])
def test_lookahead_changes_neither_elites_nor_runs_used(tmp_path, parallel):
    off, log_off = run_tuner(tmp_path / "off", SleepyRunner(), parallel=1, lookahead=False,
                             **NOT_BINDING)
    runner = SleepyRunner(delay=0.002)
    on, log_on = run_tuner(tmp_path / "on", runner, parallel=parallel, **NOT_BINDING)
    assert [(e.id, e.values) for e in on.elites] == [(e.id, e.values) for e in off.elites]
    assert used(log_on) == used(log_off)
    assert on.experiments == off.experiments == len(used(log_on)) <= 120
    # Every call is logged once: used, or marked unused (not an experiment, but paid).
    assert len(runner.calls) == len(log_on)
    unused = [row for row in log_on if row[4] == UNUSED]
    assert len(runner.calls) == on.experiments + len(unused) <= 1000


def test_lookahead_fills_idle_workers(tmp_path):
    # Three configurations, four workers: a block is three runs, so without look-ahead a
    # fourth worker always idles; with it, the next block's runs fill it.
    initial = [{"mode": "a", "x": x} for x in (0.0, 1.0, 2.5)]
    overlaps = {}
    for lookahead in (False, True):
        runner = SleepyRunner(delay=0.02)
        result, log = run_tuner(tmp_path / str(lookahead), runner, initial=initial, parallel=4,
                                fixed_list=True, max_experiments=45, lookahead=lookahead)
        overlaps[lookahead] = max_overlap(runner.intervals)
        assert result.experiments == len(used(log))
    assert overlaps[False] <= 3
    assert overlaps[True] == 4


def test_unused_lookahead_runs_are_marked_and_paid(tmp_path):
    # The x = 3.5 configuration is eliminated by the test after a few blocks; its look-ahead
    # runs of the block after are not used. Ten instances (deterministic), at most 30 runs
    # used: a budget of 45 does not bind.
    initial = [{"mode": "a", "x": x} for x in (0.9, 1.1, 3.5)]
    kwargs = dict(initial=initial, fixed_list=True, max_experiments=45, deterministic=True)
    runner = SleepyRunner(delay=0.01)
    result, log = run_tuner(tmp_path, runner, parallel=4, **kwargs)
    unused = [row for row in log if row[4] == UNUSED]
    assert result.experiments == len(log) - len(unused) <= 30
    assert len(runner.calls) == len(log) <= 45
    ref, ref_log = run_tuner(tmp_path / "ref", SleepyRunner(), parallel=1, lookahead=False,
                             **kwargs)
    assert used(log) == used(ref_log)
    # Unused runs are of cells the race never told: none of them is among the used ones.
    assert not {r[1:4] for r in unused} & {r[1:4] for r in used(log)}


class CrashingRunner(SleepyRunner):
    def run(self, config_id, instance_id, seed, instance, switches):
        opts = dict(zip(switches[::2], switches[1::2]))
        if float(opts["--x"]) > 2:
            with self._lock:
                self.calls.append((config_id, instance_id, seed))
            return RunResult("error", None, None, "the target-runner exited with status 1", [], 1,
                             "", "", 0.0)
        return super().run(config_id, instance_id, seed, instance, switches)


def test_lookahead_with_failures_uses_the_same_runs(tmp_path):
    off, log_off = run_tuner(tmp_path / "off", CrashingRunner(), parallel=1, lookahead=False,
                             error_policy="reject", **NOT_BINDING)
    on, log_on = run_tuner(tmp_path / "on", CrashingRunner(delay=0.002), parallel=4,
                           error_policy="reject", **NOT_BINDING)
    assert [e.id for e in on.elites] == [e.id for e in off.elites]
    assert used(log_on) == used(log_off)
    assert on.experiments == off.experiments


@pytest.mark.parametrize("iterations", [False, True], ids=["blocks", "iterations"])
def test_pipelined_blocks_with_failures_give_the_same_answer_on_any_workers(tmp_path, iterations):
    # Pipelined blocks start a new configuration's runs of a block at once, before its first
    # answers (told in row order; after a failure SKIPPED, and the runs made are charged
    # unused): the same elites, runs used and runs charged on one worker and on four; with
    # pipelined iterations too (the next race's first block is such a block).
    one, log_one = run_tuner(tmp_path / "one", CrashingRunner(), parallel=1, pipelined=True,
                             pipelined_iterations=iterations, error_policy="reject",
                             max_experiments=300)
    runner = CrashingRunner(delay=0.002)
    four, log_four = run_tuner(tmp_path / "four", runner, parallel=4, pipelined=True,
                               pipelined_iterations=iterations, error_policy="reject",
                               max_experiments=300)
    assert [e.id for e in four.elites] == [e.id for e in one.elites]
    assert used(log_four) == used(log_one)
    assert four.experiments == one.experiments <= 300
    assert any(row[4] == UNUSED for row in log_four)  # runs were made and not used
    assert len(runner.calls) <= four.experiments


def test_kill_run_stops_one_tagged_run(tmp_path):
    path = tmp_path / "sleeper.py"
    path.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\nprint(1)\n")
    path.chmod(0o755)
    runner = TargetRunner([str(path)], str(tmp_path))
    out = {}
    thread = threading.Thread(target=lambda: out.update(r=runner.run(1, 1, 1, Instance("i"), [], tag="t")))
    thread.start()
    deadline = time.monotonic() + 10
    while "t" not in runner._tagged and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.kill_run("t")
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert out["r"].status == "error" and "no longer needed" in out["r"].message
    # A run stopped before it started does not start.
    runner.kill_run("u")
    t0 = time.monotonic()
    res = runner.run(1, 1, 1, Instance("i"), [], tag="u")
    assert res.status == "error" and res.returncode is None and time.monotonic() - t0 < 5


@pytest.mark.parametrize("flags", [[], ["--pipelined"], ["--pipelined-iterations"]],
                         ids=["lookahead", "pipelined", "pipelined-iterations"])
def test_kill_9_with_lookahead_resumes_repeating_at_most_the_runs_in_flight(tmp_path, flags):
    # The runner logs each call; after kill -9 and a resume, every used run was made at most
    # once, except those in flight when racer died (at most --parallel of them): finished
    # look-ahead runs are journaled and reused, not made again. Pipelined blocks too: their
    # plan is journaled before its runs start, so the resumed tuning charges what the
    # uninterrupted one did and ends with the same elites.
    runner = """
    import os, random, sys, time
    cid, iid, seed, inst = sys.argv[1:5]
    opts = dict(zip(sys.argv[5::2], sys.argv[6::2]))
    with open("calls.log", "a") as f:
        f.write(f"{cid} {iid} {seed}\\n")
    time.sleep(0.03)
    rng = random.Random(int(seed) * 1000 + int(cid))
    print((float(opts["--x"]) - 1.5) ** 2 + float(inst.rsplit("-", 1)[1]) + rng.gauss(0, 0.05))
    """
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    ref_dir.mkdir()
    run_dir.mkdir()
    # Three iterations of at most 25 runs out of 100: the budget does not bind, so the races'
    # share (the budget less look-ahead's reserve) is the same with look-ahead on and off.
    extra = "nbIterations = 3\nnbExperimentsPerIteration = 25\n"
    ref = make_scenario(ref_dir, budget=100, params=PARAMS_1, runner=runner, extra=extra)
    scen = make_scenario(run_dir, budget=100, params=PARAMS_1, runner=runner, extra=extra)
    assert main(racer_command(ref)[3:] + flags) == EXIT_OK
    proc = subprocess.Popen(racer_command(scen) + flags, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert wait_for_runs(run_dir, 30, proc), "racer ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    again = subprocess.run(racer_command(scen) + flags, env=ENV, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert (run_dir / "arena" / "elites.txt").read_text() == (ref_dir / "arena" / "elites.txt").read_text()

    def used_runs(d):
        return sorted((r["iteration"], r["configuration"], r["instance_id"], r["seed"])
                      for r in read_runs(d) if r["status"] != UNUSED)

    ref_used, run_used = used_runs(ref_dir), used_runs(run_dir)
    assert set(run_used) == set(ref_used)
    assert len(run_used) <= len(ref_used) + 2  # a run in flight at the kill may be logged twice
    calls = (run_dir / "arena" / "calls.log").read_text().split("\n")
    made = {}
    for line in filter(None, calls):
        made[tuple(line.split())] = made.get(tuple(line.split()), 0) + 1
    used_keys = {(c, i, s) for _, c, i, s in ref_used}
    repeats = sum(n - 1 for key, n in made.items() if key in used_keys)
    assert repeats <= 2  # --parallel 2: at most two runs were in flight
    assert (run_dir / "arena" / "racer-journal").exists()


def _race(storage=None):
    from racer.racing import KeepAll as NoElimination

    # Three candidates, two instances in the first block, a budget of 6 + 3: under
    # on_error="eliminate" candidate 2 fails and is out, so two more blocks of 2 fit only if
    # its second cell, not made, is not paid.
    return Race([0, 1, 2], test=NoElimination(), first_test=2, budget=9, instances=range(10),
                random_state=0, on_error="eliminate", storage=storage)


def _first_block(race, charge):
    for ev in race.ask():
        if ev.candidate_index == 2:
            race.tell(ev, error="crashed" if ev.instance_index == 0 else SKIPPED,
                      charge=charge or ev.instance_index == 0)
        else:
            race.tell(ev, float(ev.candidate_index + ev.instance_index))


def _finish(race):
    while not race.finished:
        for ev in race.ask():
            race.tell(ev, float(ev.candidate_index + ev.instance_index))
    return race.result()


@pytest.mark.parametrize("charge, instances", [(True, 3), (False, 4)])
def test_failures_told_uncharged_do_not_use_the_race_budget(charge, instances):
    race = _race()
    _first_block(race, charge)
    assert (race.n_evaluations, race.n_charged) == (6, 6 if charge else 5)
    result = _finish(race)
    assert result.stop_reason == "budget"
    assert race.n_instances == instances
    assert race.n_charged <= 9


def test_uncharged_failures_survive_a_resume(tmp_path):
    race = _race(str(tmp_path / "j.sqlite"))
    _first_block(race, charge=False)
    race.close()
    again = _race(str(tmp_path / "j.sqlite"))
    assert not again.finished
    assert (again.n_evaluations, again.n_charged) == (6, 5)
    _finish(again)
    assert again.n_instances == 4


def test_charge_false_needs_an_error():
    race = _race()
    ev = race.ask()[0]
    with pytest.raises(ValueError, match="charge=False"):
        race.tell(ev, 1.0, charge=False)


class LateCrashRunner(SleepyRunner):
    """Configurations with x > 2 crash on instance "2" (the third training instance), after
    successes on the instances before it in the stream."""

    def run(self, config_id, instance_id, seed, instance, switches):
        opts = dict(zip(switches[::2], switches[1::2]))
        if float(opts["--x"]) > 2 and instance.name == "2":
            time.sleep(self.delay)
            with self._lock:
                self.calls.append((config_id, instance_id, seed))
            return RunResult("error", None, None, "the target-runner exited with status 1", [], 1,
                             "", "", 0.0)
        return super().run(config_id, instance_id, seed, instance, switches)


def test_gated_runs_fill_idle_workers_and_decide_as_one_at_a_time(tmp_path):
    # Three new configurations, six workers: a configuration with no success yet runs one
    # instance at a time, so without speculation at most three runs overlap. Provisional runs
    # fill the other workers; after a crash their results are discarded and told as SKIPPED,
    # so the runs used, the skips and the elites are those of one worker.
    # Ten instances (deterministic), at most 30 runs used: a budget of 45 does not bind.
    initial = [{"mode": "a", "x": x} for x in (0.0, 1.0, 2.5)]
    kwargs = dict(initial=initial, fixed_list=True, max_experiments=45, error_policy="reject",
                  sample_instances=False, deterministic=True)
    ref, ref_log = run_tuner(tmp_path / "ref", LateCrashRunner(), parallel=1, lookahead=False,
                             **kwargs)
    assert any(row[4] == "error" for row in ref_log), "nothing crashed: the test checks nothing"
    overlaps = {}
    for lookahead in (False, True):
        runner = LateCrashRunner(delay=0.02)
        result, log = run_tuner(tmp_path / str(lookahead), runner, parallel=6,
                                lookahead=lookahead, **kwargs)
        overlaps[lookahead] = max_overlap(runner.intervals)
        assert used(log) == used(ref_log)
        assert result.experiments == ref.experiments
        assert [e.id for e in result.elites] == [e.id for e in ref.elites]
        skipped = sorted((c.id, row) for _, res, cands in result.races
                         for ci, row, msg in res.failures if msg.startswith(SKIPPED)
                         for c in [cands[ci]])
        ref_skipped = sorted((c.id, row) for _, res, cands in ref.races
                             for ci, row, msg in res.failures if msg.startswith(SKIPPED)
                             for c in [cands[ci]])
        assert skipped == ref_skipped and skipped
        if lookahead:
            # The crashing configuration's runs after its crash were made (provisionally)
            # and are logged as unused: no experiment, but paid from look-ahead's reserve.
            assert len(runner.calls) == result.experiments + sum(r[4] == UNUSED for r in log)
    assert overlaps[False] <= 3
    assert overlaps[True] >= 5
