"""The SQLite journal: resume replays, refuses foreign journals, records decisions."""

from __future__ import annotations

import gc
import math
import os
import sqlite3

import numpy as np
import pytest

from racer import Elimination, Race, RacingTest
from racer.storage import APPLICATION_ID, JournalInUseError, read_journal

from _helpers.races import tell_first


class CoinDrop(RacingTest):
    """Drops the worst-mean survivor when the step's rng says so: decisions depend on the rng
    stream, so a resume that re-derived it wrongly would diverge."""

    def __init__(self, p: float = 0.6):
        self.p = p

    def decide(self, view, rng):
        scores, ids = view.scores, view.ids
        means = scores.mean(axis=0)
        worst, best = int(np.argmin(means)), int(np.argmax(means))
        u = float(rng.random())
        if worst != best and u < self.p:
            return [Elimination(worst, "dominated", best, u)]
        return []

    def get_params(self):
        return {"p": self.p}


def score(candidate, instance):
    return candidate + math.sin(1.7 * instance * (candidate + 1))


class Counter:
    def __init__(self, fail=None):
        self.calls = []
        self.fail = fail

    def __call__(self, candidate, instance):
        self.calls.append((candidate, instance))
        if self.fail is not None and (candidate, instance) == self.fail:
            raise ValueError("bad")
        return score(candidate, instance)


OPTIONS = dict(first_test=3, max_instances=30, random_state=5)


def reference(**extra):
    return Race(list(range(6)), test=CoinDrop(), **{**OPTIONS, **extra}).run(
        score, range(100), progress=False
    )


def interrupted_then_resumed(path, n_first, **extra):
    """Tell ``n_first`` evaluations, abandon the race (as a crash would), resume with run()."""
    r = Race(list(range(6)), test=CoinDrop(), storage=path, **{**OPTIONS, **extra})
    r.add_instances(range(100))
    told = tell_first(r, n_first, score)
    counter = Counter()
    resumed = Race(list(range(6)), test=CoinDrop(), storage=path, **{**OPTIONS, **extra}).run(
        counter, range(100), progress=False
    )
    return resumed, counter.calls, told


@pytest.mark.parametrize("n_first", [1, 17, 18, 40, 1000])
def test_resume_evaluates_nothing_twice_and_ends_like_an_uninterrupted_race(tmp_path, n_first):
    ref = reference()
    resumed, calls, told = interrupted_then_resumed(tmp_path / "race.sqlite", n_first)
    assert resumed.history == ref.history
    np.testing.assert_array_equal(resumed.scores, ref.scores)
    assert resumed.n_evaluations == ref.n_evaluations
    assert len(calls) == ref.n_evaluations - told  # nothing recorded is evaluated again
    journal = read_journal(tmp_path / "race.sqlite")
    assert len(journal["evaluations"]) == ref.n_evaluations
    assert [(d[2], d[1], d[3], d[4]) for d in journal["decisions"]] == [
        (h.candidate_index, h.n_instances, h.reason, h.by_index) for h in ref.history
    ]
    assert journal["instances"] == [repr(i) for i in ref.instances]


def test_random_state_none_resumes_with_the_journaled_seed(tmp_path):
    path = tmp_path / "race.sqlite"
    first = Race(list(range(6)), test=CoinDrop(), first_test=3, max_instances=30, storage=path)
    seed = first.seed
    first.close()
    r = Race(list(range(6)), test=CoinDrop(), first_test=3, max_instances=30, storage=path)
    assert r.seed == seed == read_journal(path)["seed"]
    res = r.run(score, range(100), progress=False)
    ref = Race(list(range(6)), test=CoinDrop(), first_test=3, max_instances=30, random_state=seed).run(
        score, range(100), progress=False
    )
    assert res.history == ref.history


@pytest.mark.parametrize(
    "change, line",
    [
        (dict(candidates=list(range(7))), r"candidates: journal 6, now 7 \(#6 is new: 6\)"),
        (dict(test=CoinDrop(p=0.5)), r"test parameter p: journal 0.6, now 0.5"),
        (dict(first_test=4), r"first_test: journal 3, now 4"),
        (dict(direction="maximize"), r"direction: journal 'minimize', now 'maximize'"),
        (dict(random_state=6), r"random_state: journal 5, now 6"),
        (dict(on_error="eliminate"), r"on_error: journal worst, now eliminate"),
    ],
)
def test_a_journal_of_another_race_is_refused(tmp_path, change, line):
    # How to start over comes first, then what differs, in the words of Race's arguments.
    path = tmp_path / "race.sqlite"
    Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(score, range(100), progress=False)
    kwargs = {"candidates": list(range(6)), "test": CoinDrop(), **OPTIONS, **change}
    cands = kwargs.pop("candidates")
    with pytest.raises(ValueError, match=r"holds a race with other settings\. To start over, pass "
                                         r"another `storage=` path.*\n  " + line):
        Race(cands, storage=path, **kwargs)


def test_other_instances_are_refused(tmp_path):
    path = tmp_path / "race.sqlite"
    Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(score, range(100), progress=False)
    with pytest.raises(ValueError, match="holds a race on other instances. To start over.*\n  instance #0: journal 0, now 7"):
        Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(
            score, range(7, 100), progress=False
        )


def test_failures_are_journaled_and_replayed(tmp_path):
    path = tmp_path / "race.sqlite"
    counter = Counter(fail=(2, 1))
    first = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(counter, range(100),
                                                                              progress=False)
    rows = [e for e in read_journal(path)["evaluations"] if e[3] is not None]
    assert rows == [(2, 1, None, "raised ValueError: bad")]
    again = Counter()
    second = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(again, range(100),
                                                                               progress=False)
    assert again.calls == [] and second.failures == first.failures
    assert second.history == first.history


def test_not_a_journal(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match="is not a racer journal"):
        Race([0, 1], test=CoinDrop(), storage=path)
    with pytest.raises(TypeError, match="`storage` must be a file path"):
        Race([0, 1], test=CoinDrop(), storage=3.5)


def test_journal_is_wal_and_readable_while_open(tmp_path):
    path = tmp_path / "race.sqlite"
    r = Race(list(range(6)), test=CoinDrop(), storage=path, instances=range(100), **OPTIONS)
    for ev in r.ask(4):
        r.tell(ev, 1.0)
    conn = sqlite3.connect(path)  # another reader sees every told evaluation at once
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 4
    finally:
        conn.close()
        r.close()


# ---------------------------------------------------------------- marker, foreign files


def test_a_new_journal_carries_the_marker_and_is_one_file_once_closed(tmp_path):
    path = tmp_path / "race.sqlite"
    r = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    r.run(score, range(100), progress=False)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "1"
    finally:
        conn.close()
    r.close()
    # Closed: back in rollback mode, so the .sqlite file alone holds everything.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race.sqlite", "race.sqlite.lock"]
    assert len(read_journal(path)["evaluations"]) == reference().n_evaluations
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race.sqlite", "race.sqlite.lock"]


def _foreign_db(path, journal_mode="delete", application_id=0):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {application_id}")
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ada')")
    conn.close()


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_another_applications_database_is_refused_and_left_untouched(tmp_path, journal_mode):
    path = tmp_path / "app.db"
    _foreign_db(path, journal_mode)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"app\.db'.*not a racer journal.*holds table users"):
        Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    assert path.read_bytes() == before
    assert not (tmp_path / "app.db.lock").exists()  # refused before the lock file is created
    conn = sqlite3.connect(path)
    try:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["users"]
    finally:
        conn.close()


def _strip_marker(path):
    """A racer journal without its marker: what racer never writes."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA application_id = 0")
    conn.close()


def test_racer_tables_without_the_marker_are_refused_and_left_untouched(tmp_path):
    # racer writes the marker in the transaction that creates its tables, so a file holding
    # racer's tables without it was not written by this racer (0.1 was never released).
    path = tmp_path / "race.sqlite"
    r = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    r.add_instances(range(100))
    for ev in r.ask()[:10]:
        r.tell(ev, score(ev.candidate, ev.instance))
    r.close()
    _strip_marker(path)
    before = path.read_bytes()
    holds = r"without racer's marker that holds table decisions, table evaluations, table instances"
    with pytest.raises(ValueError, match=holds):
        Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    with pytest.raises(ValueError, match=holds):
        read_journal(path)
    assert path.read_bytes() == before


def test_a_lookalike_without_the_marker_is_refused(tmp_path):
    # racer's table names but other columns is not a racer journal
    path = tmp_path / "lookalike.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (k TEXT, v TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match=r"not a racer journal.*holds table meta; racer never"):
        Race([0, 1], test=CoinDrop(), storage=path)


def test_a_journal_of_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "race.sqlite"
    Race([0, 1], test=CoinDrop(), storage=path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match=r"racer journal of schema '3'.*upgrade racer"):
        Race([0, 1], test=CoinDrop(), storage=path)
    with pytest.raises(ValueError, match=r"schema '3'"):
        read_journal(path)


# ---------------------------------------------------------------- one live writer


def test_a_second_race_in_the_same_process_is_refused_until_the_first_closes(tmp_path):
    path = tmp_path / "race.sqlite"
    first = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    with pytest.raises(JournalInUseError, match=r"race\.sqlite' is in use: another Race object in "
                                                r"this process holds its lock.*close\(\)"):
        Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    # the refused race did not disturb the holder
    first.add_instances(range(100))
    for ev in first.ask():
        first.tell(ev, score(ev.candidate, ev.instance))
    assert len(read_journal(path)["evaluations"]) == 18
    first.close()
    second = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    second.close()


def test_garbage_collection_releases_the_lock_even_in_a_reference_cycle(tmp_path):
    path = tmp_path / "race.sqlite"
    Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)  # dropped at once
    enabled = gc.isenabled()
    gc.disable()
    try:
        cyclic = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
        cyclic.myself = cyclic  # only the cycle collector can free it
        del cyclic
        # The new race finds the lock held by an unreachable race of this process, collects it
        # and takes the lock: a script that drops a race and resumes it never sees a conflict.
        again = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS)
    finally:
        if enabled:
            gc.enable()
    again.close()


def test_a_journal_is_readable_while_its_race_holds_the_lock(tmp_path):
    path = tmp_path / "race.sqlite"
    r = Race(list(range(6)), test=CoinDrop(), storage=path, instances=range(100), **OPTIONS)
    evs = r.ask()
    for ev in evs[:7]:
        r.tell(ev, 2.0)
    got = read_journal(path)
    assert len(got["evaluations"]) == 7 and got["seed"] == 5
    assert got["instances"] == [repr(i) for i in range(3)]
    r.close()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_keep_the_lock(tmp_path):
    path = tmp_path / "race.sqlite"
    r = Race([0, 1], test=CoinDrop(), storage=path)
    read_end, write_end = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: wait until the parent says so, then leave without cleanup
        os.close(write_end)
        # os.fork() returns in the child only after the at-fork handlers ran, so the child has
        # dropped its copy of the lock by now; say so, or a loaded machine may let the parent
        # test the lock before the child was even scheduled.
        os.write(ready_write, b"1")
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    os.close(ready_write)
    os.read(ready_read, 1)
    os.close(ready_read)
    try:
        r.close()
        # The child is alive and was forked while the lock was held; the lock is free anyway.
        Race([0, 1], test=CoinDrop(), storage=path).close()
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)
