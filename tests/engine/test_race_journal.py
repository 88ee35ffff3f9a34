"""The journal as an observer of a race (racer.storage.RaceJournal, NullJournal): each hook
writes what the engine used to write inline, and a resume replays exactly what was written."""

from __future__ import annotations

import math
import sqlite3

import pytest

from racer import Elimination, KeepAll, Race
from racer.storage import NullJournal, RaceJournal, read_journal

OPTIONS = dict(direction="minimize", budget=None, max_instances=None, first_test=2,
               each_test=1, min_survivors=1, shuffle=False, on_error="worst")


def open_journal(path, seed=3, **changes):
    return RaceJournal(path, seed, candidates=["a", "b", "c"], test=KeepAll(),
                       options={**OPTIONS, **changes}, metadata={"v": 1}, winner="mean")


def test_each_hook_writes_its_event_and_a_resume_replays_it(tmp_path):
    path = str(tmp_path / "j.sqlite")
    journal = open_journal(path)
    assert journal.seed == 3 and not journal.replaying and journal.tested_steps == 0
    journal.on_instances(0, [10, 11])
    journal.on_evaluation(0, 0, 1.5, None, True)
    journal.on_evaluation(1, 0, math.nan, "raised ValueError: x", True)
    journal.on_evaluation(2, 0, math.nan, "not run", False)
    journal.on_decisions(0, 2, [(1, "failed", None, math.nan)])
    journal.on_decisions(1, 2, [(2, "dominated", 0, 0.97)], tested=True)
    journal.on_stop("budget")
    journal.close()

    data = read_journal(path)
    assert data["instances"] == ["10", "11"]
    assert data["evaluations"] == [(0, 0, 1.5, None), (1, 0, None, "raised ValueError: x"),
                                   (2, 0, None, "not run")]
    assert data["decisions"] == [(0, 2, 1, "failed", None, None), (1, 2, 2, "dominated", 0, 0.97)]
    assert data["stop_reason"] == "budget" and data["winner"] == "mean" and data["seed"] == 3

    again = open_journal(path)
    assert again.replaying and again.tested_steps == 1
    assert again.decisions_of(1) == [(2, "dominated", 0, 0.97)] and again.decisions_of(2) == []
    assert again.take((0, 0)) == (1.5, None, True)
    assert again.take((0, 0)) is None  # taken once
    score, message, charged = again.take((2, 0))
    assert math.isnan(score) and message == "not run" and charged is False
    assert again.replaying  # (1, 0) is still to replay
    # Claiming a journal again clears its stop reason: the race runs again.
    assert read_journal(path)["stop_reason"] is None
    again.close()


def test_decisions_of_a_step_that_eliminated_nobody_are_written_only_when_tested(tmp_path):
    path = str(tmp_path / "j.sqlite")
    journal = open_journal(path)
    journal.on_decisions(0, 2, [])  # no failure eliminated: nothing to write
    assert open_tested(path) is None
    journal.on_decisions(1, 2, [], tested=True)  # a test step taken: marked even if empty
    assert open_tested(path) == "1"
    journal.close()


def open_tested(path):
    """The journal's ``tested`` marker (the last test step taken), or None."""
    con = sqlite3.connect(path)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'tested'").fetchone()
    finally:
        con.close()
    return None if row is None else row[0]


def test_restart_removes_the_stop_reason(tmp_path):
    path = str(tmp_path / "j.sqlite")
    journal = open_journal(path)
    journal.on_stop("instances_exhausted")
    assert read_journal(path)["stop_reason"] == "instances_exhausted"
    journal.on_restart()
    assert read_journal(path)["stop_reason"] is None
    journal.close()


def test_other_instances_on_resume_are_refused_naming_the_first_difference(tmp_path):
    path = str(tmp_path / "j.sqlite")
    journal = open_journal(path)
    journal.on_instances(0, ["x", "y"])
    journal.close()
    again = open_journal(path)
    again.on_instances(0, ["x"])  # the same prefix: nothing new, nothing refused
    with pytest.raises(ValueError, match=r"(?s)other instances.*instance #1: journal 'y', now 'z'"):
        again.on_instances(1, ["z"])
    again.on_instances(1, ["y", "w"])  # then a new one is recorded
    again.close()
    assert read_journal(path)["instances"] == ["'x'", "'y'", "'w'"]


def test_a_smaller_budget_than_the_journal_spent_is_refused_before_anything_is_written(tmp_path):
    path = str(tmp_path / "j.sqlite")
    journal = open_journal(path, budget=10)
    for ci in range(3):
        journal.on_evaluation(ci, 0, float(ci), None, True)
    journal.on_evaluation(0, 1, math.nan, "skipped", False)  # not charged: not spent
    journal.on_stop("budget")
    journal.close()
    with pytest.raises(ValueError, match=r"pass budget >= 3 .*already spent 3 evaluations"):
        open_journal(path, budget=2)
    assert read_journal(path)["stop_reason"] == "budget"  # the refused claim wrote nothing
    open_journal(path, budget=3).close()


def test_the_null_journal_replays_nothing_and_a_closed_journal_refuses_results(tmp_path):
    journal = NullJournal()
    assert journal.take((0, 0)) is None and journal.decisions_of(1) == []
    assert not journal.replaying and not journal.closed and journal.path is None
    free = Race([1, 2], test=KeepAll(), first_test=1, instances=range(3), random_state=0)
    first = free.ask()[0]
    free.close()  # no journal to close: the race goes on
    free.tell(first, 1.0)
    kept = Race([1, 2], test=KeepAll(), first_test=1, instances=range(3), random_state=0,
                storage=str(tmp_path / "j.sqlite"))
    ev = kept.ask()[0]
    kept.close()  # its results could no longer be saved
    with pytest.raises(RuntimeError, match="journal was closed"):
        kept.tell(ev, 1.0)
    assert read_journal(str(tmp_path / "j.sqlite"))["evaluations"] == []


def test_a_race_writes_through_its_journal_what_it_decided(tmp_path):
    # End to end: the race's own history and stop reason are what its journal holds.
    path = str(tmp_path / "race.sqlite")

    class DropSecond(KeepAll):
        def decide(self, view, rng):
            return [Elimination(1, "dominated", 0, 0.5)] if 1 < len(view.ids) else []

    with Race([0, 1, 2], test=DropSecond(), first_test=2, max_instances=4, storage=path,
              random_state=1) as race:
        res = race.run(lambda c, i: c + i, range(10), progress=False)
    data = read_journal(path)
    assert [(d[0], d[2], d[3], d[4]) for d in data["decisions"]] == [
        (h.step, h.candidate_index, h.reason, h.by_index) for h in res.history]
    assert data["stop_reason"] == res.stop_reason
    assert len(data["evaluations"]) == res.n_evaluations


def test_the_default_test_is_fingerprinted_and_a_race_with_it_resumes(tmp_path):
    # Race(test=None) races PosteriorBestTest(): that is what its journal must name.
    path = str(tmp_path / "race.sqlite")
    with Race([0.0, 0.5, 1.0], max_instances=6, storage=path, random_state=4) as race:
        first = race.run(lambda c, i: c * (1 + i % 3), range(6), progress=False)
    assert read_journal(path)["fingerprint"]["test"].endswith(".PosteriorBestTest")
    calls = []
    with Race([0.0, 0.5, 1.0], max_instances=6, storage=path, random_state=4) as race:
        again = race.run(lambda c, i: calls.append(1) or c, range(6), progress=False)
    assert calls == [] and again.best_index == first.best_index
    assert again.n_evaluations == first.n_evaluations
