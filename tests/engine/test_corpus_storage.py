"""Corpus of malformed inputs and faults for ``storage=`` and ``read_journal``.

Each case asserts a clear error naming the argument (``storage`` / ``path``) and the path, or
the documented behaviour (see racer/storage.py's module docstring), and that a refused file is
left exactly as it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3

import pytest

import racer.storage as storage_mod
from racer import KeepAll, Race
from racer.storage import APPLICATION_ID, JournalInUseError, read_journal


def make(storage, **extra):
    return Race([0, 1, 2], test=KeepAll(), first_test=2, max_instances=4, random_state=1,
                storage=storage, **extra)


def finish(race):
    res = race.run(lambda c, i: c + 0.1 * i, range(4), progress=False)
    race.close()
    return res


def snapshot(folder):
    """Every file in ``folder`` with its bytes: a refused call must not change any."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def sqlite_db(path, *statements, application_id=0):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {application_id}")
    for sql in statements:
        conn.execute(sql)
    conn.close()


# ------------------------------------------------------------------ not a path at all

@pytest.mark.parametrize("bad", [3, 3.5, True, ["race.sqlite"], {"path": "x"}, object()])
def test_storage_that_is_not_a_path_is_a_type_error(bad):
    with pytest.raises(TypeError, match=r"`storage` must be a file path \(str or os.PathLike\); got"):
        make(bad)


@pytest.mark.parametrize("bad", [None, 3, 2.0])
def test_read_journal_of_a_non_path_is_a_type_error(bad):
    with pytest.raises(TypeError, match=r"`path` must be a file path"):
        read_journal(bad)


@pytest.mark.parametrize("bad, match", [
    ("", r"`storage`='' is an empty path"),
    ("   ", r"`storage`='   ' is an empty path"),
    (":memory:", r"`storage`=':memory:' is not a file.*leave storage=None"),
    ("race\x00.sqlite", r"`storage`='race\\x00.sqlite' contains a NUL character"),
])
def test_paths_that_cannot_be_a_journal_file_are_value_errors(tmp_path, monkeypatch, bad, match):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=match):
        make(bad)
    assert snapshot(tmp_path) == {}  # nothing created, not even a file named ':memory:'


def test_a_bytes_path_is_accepted_and_is_the_same_journal(tmp_path):
    path = tmp_path / "race.sqlite"
    first = finish(make(os.fsencode(path)))
    again = finish(make(str(path)))  # resumes the journal written through the bytes path
    assert again.history == first.history and again.n_evaluations == first.n_evaluations
    assert len(read_journal(os.fsencode(path))["evaluations"]) == first.n_evaluations


# ------------------------------------------------------------------ where the path points

def test_a_folder_is_refused_naming_it(tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"`storage`={str(tmp_path)!r} is a folder.*race\.sqlite"):
        make(tmp_path)
    with pytest.raises(IsADirectoryError, match=rf"`path`={str(tmp_path)!r} is a folder"):
        read_journal(tmp_path)
    assert snapshot(tmp_path) == {}


def test_a_missing_folder_is_refused_naming_the_folder(tmp_path):
    path = tmp_path / "no" / "such" / "race.sqlite"
    with pytest.raises(FileNotFoundError, match=rf"`storage`={str(path)!r}: its folder "
                                                rf"{str(path.parent)!r} does not exist"):
        make(path)
    assert not (tmp_path / "no").exists()  # racer creates no folders


def test_a_file_used_as_a_folder_is_refused(tmp_path):
    (tmp_path / "plain.txt").write_text("x")
    path = tmp_path / "plain.txt" / "race.sqlite"
    with pytest.raises(NotADirectoryError, match=r"`storage`=.*plain\.txt/race\.sqlite'.*is not a folder"):
        make(path)


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_is_refused():
    with pytest.raises(ValueError, match=r"`storage`='/dev/null' is not a regular file"):
        make("/dev/null")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root ignores file permissions, so a read-only folder cannot be tested")
def test_a_folder_without_write_permission_is_a_permission_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match=r"`storage`=.*ro/race\.sqlite'.*no permission"):
            make(folder / "race.sqlite")
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("code, exc_type, words", [
    (errno.EACCES, PermissionError, "no permission"),
    (errno.EROFS, OSError, "read-only file system"),
])
def test_os_refusing_the_lock_file_names_the_path_and_the_cause(tmp_path, monkeypatch, code, exc_type, words):
    # Simulated (root ignores permissions, and no read-only file system is mounted for tests):
    # the OS refuses to create the lock file with this errno, as it would in a read-only folder
    # or on a read-only mount. What is tested is how racer reports it.
    real_open = os.open

    def refusing_open(path, flags, *args):
        if str(path).endswith(".lock"):
            raise OSError(code, os.strerror(code), path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(storage_mod.os, "open", refusing_open)
    path = tmp_path / "race.sqlite"
    with pytest.raises(exc_type, match=rf"`storage`={str(path)!r}: cannot create its lock file "
                                       rf".*race\.sqlite\.lock' \({words}\)") as info:
        make(path)
    assert info.value.errno == code
    assert not path.exists()  # refused before the database was created


# ------------------------------------------------------------------ what the file holds

def test_another_applications_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "app.db"
    sqlite_db(path, "CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('ada')")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"`storage`=.*app\.db' is not a racer journal.*holds table "
                                         r"users.*never writes into it"):
        make(path)
    with pytest.raises(ValueError, match=r"`path`=.*app\.db' is not a racer journal.*table users"):
        read_journal(path)
    assert snapshot(tmp_path) == before


def test_a_database_with_another_application_id_is_refused_even_without_tables(tmp_path):
    path = tmp_path / "geo.gpkg"
    sqlite_db(path, "PRAGMA user_version = 10200", application_id=0x47504B47)  # GeoPackage
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"SQLite database of another application \(application_id 0x47504b47\)"):
        make(path)
    with pytest.raises(ValueError, match=r"`path`=.*application_id 0x47504b47"):
        read_journal(path)
    assert snapshot(tmp_path) == before


def test_a_view_or_index_of_another_application_is_refused(tmp_path):
    path = tmp_path / "views.db"
    sqlite_db(path, "CREATE VIEW answer AS SELECT 42")
    with pytest.raises(ValueError, match=r"not a racer journal.*holds view answer"):
        make(path)


@pytest.mark.parametrize("content", [b"hello, I am a text file\n" * 20, b"\x00" * 4096, b"SQLite"])
def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path, content):
    path = tmp_path / "notes.sqlite"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"`storage`=.*notes\.sqlite' is not a racer journal: it is "
                                         r"not an SQLite database"):
        make(path)
    with pytest.raises(ValueError, match=r"`path`=.*notes\.sqlite' is not a racer journal"):
        read_journal(path)
    assert snapshot(tmp_path) == {"notes.sqlite": content}


def test_a_truncated_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "cut.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\x10\x00")
    with pytest.raises(ValueError, match=r"is not a racer journal: a truncated SQLite header"):
        make(path)


def test_an_empty_file_becomes_a_journal(tmp_path):
    path = tmp_path / "touched.sqlite"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"`path`=.*touched\.sqlite' is not a racer journal: it is empty"):
        read_journal(path)  # documented: nothing to read yet, and the reader writes nothing
    assert path.read_bytes() == b""
    res = finish(make(path))
    assert len(read_journal(path)["evaluations"]) == res.n_evaluations == 12


def test_an_sqlite_database_without_tables_becomes_a_journal(tmp_path):
    path = tmp_path / "blank.db"
    sqlite_db(path, "PRAGMA user_version = 7")
    res = finish(make(path))
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    finally:
        conn.close()
    assert read_journal(path)["seed"] == 1 and res.n_evaluations == 12


def test_a_journal_of_another_race_is_refused_naming_what_differs(tmp_path):
    path = tmp_path / "race.sqlite"
    finish(make(path, metadata={"evaluate_version": "1"}))
    before = read_journal(path)
    with pytest.raises(ValueError, match=r"(?s)`storage`=.*race\.sqlite' holds a race with other settings.*"
                                         r"metadata\['evaluate_version'\]: journal '1', now '2'"):
        make(path, metadata={"evaluate_version": "2"})  # the documented guard for a new evaluate
    with pytest.raises(ValueError, match=r"other settings.*\n  candidates: journal 3, now 4 \(#3 is new: 3\)"):
        Race([0, 1, 2, 3], test=KeepAll(), first_test=2, max_instances=4, random_state=1,
             storage=path, metadata={"evaluate_version": "1"})
    assert read_journal(path) == before  # the refused races recorded nothing
    # the refusals released the lock: the right race resumes
    again = finish(make(path, metadata={"evaluate_version": "1"}))
    assert again.n_evaluations == 12


def test_a_changed_evaluate_without_metadata_is_not_detected_as_documented(tmp_path):
    # Documented limit: a resume cannot see that evaluate changed; the journaled values win.
    path = tmp_path / "race.sqlite"
    finish(make(path))
    race = make(path)
    res = race.run(lambda c, i: -1000.0, range(4), progress=False)
    race.close()
    assert res.scores.min() >= 0.0  # all 12 values are the journaled ones, none from the new evaluate


# ------------------------------------------------------------------ locks and readers

def test_a_locked_journal_is_refused_naming_it_and_readable_meanwhile(tmp_path):
    path = tmp_path / "race.sqlite"
    holder = make(path)
    holder.add_instances(range(4))
    for ev in holder.ask():
        holder.tell(ev, 1.0)
    with pytest.raises(JournalInUseError, match=rf"`storage`={str(path)!r} is in use: another Race "
                                                rf"object in this process holds its lock .*pid {os.getpid()} "):
        make(path)
    assert len(read_journal(path)["evaluations"]) == 6  # readers are never locked out
    holder.close()
    finish(make(path))


def test_a_symlink_to_a_journal_shares_its_lock(tmp_path):
    path = tmp_path / "race.sqlite"
    link = tmp_path / "link.sqlite"
    holder = make(path)
    link.symlink_to(path)
    with pytest.raises(JournalInUseError, match=r"link\.sqlite' is in use"):
        make(link)
    holder.close()


def test_read_journal_of_a_missing_file_creates_nothing(tmp_path):
    path = tmp_path / "missing.sqlite"
    with pytest.raises(FileNotFoundError, match=rf"`path`={str(path)!r}: no such journal file"):
        read_journal(path)
    assert not path.exists()


def test_read_journal_of_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"`path`=.*nowhere/race\.sqlite': no such journal file"):
        read_journal(tmp_path / "nowhere" / "race.sqlite")
