"""The SQLite journal that makes a race resumable.

``Race(..., storage="race.sqlite")`` writes every evaluation, every instance it raced (as a
``repr``) and every elimination to this file the moment it happens, each in its own committed
transaction, with the standard library's ``sqlite3`` in WAL mode. Killing the process (even
with SIGKILL) loses at most the evaluations that were running: ``synchronous=NORMAL`` in WAL
mode is durable against a crash of the process, only an OS crash or power loss can drop the
last transactions.

Resuming is replay: the same race constructed on the same file reads the recorded
evaluations, and when the engine opens a block it takes every value it finds in the journal
instead of asking for it. Tests are deterministic functions of the scores and of an rng derived
from ``(seed, step)``, so the replayed race takes exactly the decisions it took before and
continues where it stopped.

A journal belongs to one race. Its first writer stores a fingerprint (candidates' reprs, test
class and ``get_params()``, every decision-changing option, the seed, ``metadata``); a race
whose fingerprint differs is refused with a message that says first how to start over, then
each difference in the words of ``Race``'s arguments (:func:`describe_changes`), and so is a
run whose instances differ from the journaled ones. The stop limits ``budget`` and
``max_instances`` may differ: a larger one continues a finished race (see ``Race``). Every test
step taken is marked in ``meta`` (``tested``) in the transaction of its eliminations, so a
resume applies the journaled eliminations of those steps instead of deciding them again.

**What a resume cannot check: ``evaluate``.** It is passed to ``run()``, after the journal is
claimed, and no fingerprint of a Python function is reliable (its code, closures, the files
and library versions it reads all change its scores). A resumed race takes the journaled
values as they are, so after changing ``evaluate`` it would mix old and new scores without a
word. Pass ``metadata={"evaluate_version": "2"}`` (bump it whenever ``evaluate`` or its data
change) and such a resume is refused; or start a new file.

**Only racer journals are opened, and only journals are written.** A journal carries a marker:
the SQLite header's ``application_id`` is ``0x5243524A`` ("RCRJ") and ``meta`` holds
``schema = 1``. Before anything is written, a path that exists is inspected read-only
(``mode=ro``): a file that is not an SQLite database, an SQLite database of another
application (another ``application_id``, or tables that are not racer's) and a journal of a
newer schema are refused with a ``ValueError`` naming the path; nothing is written into them.
A missing or empty file (0 bytes, or an SQLite database without any table) becomes a new
journal.

**Path errors name the argument and the path**, with the operating system's exception type:
a missing parent folder (``FileNotFoundError``; racer creates no folders), a folder
(``IsADirectoryError``), no permission (``PermissionError``), a read-only file system
(``OSError`` with ``errno.EROFS``). A non-path (``None``, a number) is a ``TypeError``; ``""``
and ``":memory:"`` are a ``ValueError`` (a journal is a file; leave ``storage=None`` to race
without one). ``bytes`` paths are accepted (decoded with :func:`os.fsdecode`).

**One live writer per journal.** The writer holds an exclusive ``flock`` on a sidecar file,
``<journal>.lock`` (next to the real path, symlinks resolved), for the race's lifetime: it is
released by ``Race.close()``, by garbage collection of the race, and by the kernel when the
process dies, SIGKILL included, so a killed race never leaves a stale lock. A second writer,
in another process or another ``Race`` object of the same process, gets a
:class:`JournalInUseError` naming the journal and the holder (pid, host, since when, as written
in the lock file). Why a sidecar and not SQLite's own locking: ``locking_mode=EXCLUSIVE`` would
also lock out readers, and :func:`read_journal` (and any report tool or SQLite client) must be
able to read a journal while its race writes it; and a second descriptor on the database file
itself is forbidden, because closing it would drop the POSIX locks SQLite holds on that file in
the same process. The lock file stays after the race (deleting it could let two writers lock
two different files); it is empty of meaning when no process holds it. Limits: hard links to
one journal get different lock files, an older racer (without the lock) is not kept out, and a
network file system must support ``flock`` (Linux NFS emulates it with byte-range locks).
Processes forked from the writer (e.g. a ``fork`` process pool) close their copy of the lock
descriptor, so a leftover worker never holds a dead race's lock.

Tables: ``meta(key, value)``, ``instances(idx, repr)``, ``evaluations(candidate, instance,
value, error)`` (value NULL when the evaluation failed, ``error`` says why) and
``decisions(step, n_instances, candidate, reason, by, probability)`` (step 0 = eliminated for
failing). They are plain SQL, so a race can be inspected with any SQLite client, or with
:func:`read_journal`, which opens the file read-only and never takes the lock.

**A race on several objectives** (``direction`` a list of k >= 2) also has the table
``objective_values(candidate, instance, objective, value)``: every objective of every
successful evaluation (objective 0 to k - 1), written in the transaction of its
``evaluations`` row, whose ``value`` is the first objective (what ``RaceResult.scores``
holds), so whatever reads one score per evaluation reads such a journal unchanged. Its
``meta`` ``schema`` is ``2``, written with the table when the race claims the journal: a
racer that predates this table refuses the journal ("upgrade racer") instead of reading one
objective of k without a word. A single-objective journal stays schema 1, byte for byte as
before. The directions are in the fingerprint (``direction``, a list), so a resume with
other directions is refused naming ``direction``.

``meta`` also holds ``winner``, the rule that orders the survivors (written when the race
claims the journal), and ``stop_reason``, written when the race stops (``Race.stop_reason``)
and removed when it runs again (a resume, or new instances after ``instances_exhausted``), so
a report reads why a race ended instead of guessing it. Journals written before these keys
existed lack both and still read (:func:`read_journal` returns None for them).
"""

from __future__ import annotations

import ast
import errno
import gc
import json
import math
import numbers
import os
import pathlib
import socket
import sqlite3
import time
import weakref
from typing import TYPE_CHECKING, Any

from racer._text import clip, stable_repr

if TYPE_CHECKING:
    from racer.result import RaceResult

# NumPy, the argument checks and the result are imported where a race or a result needs them:
# the command line imports this module (JournalInUseError) for every command, --help included.

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

__all__ = [
    "Journal",
    "JournalInUseError",
    "NullJournal",
    "RaceJournal",
    "Repr",
    "as_path",
    "changed_keys",
    "describe_changes",
    "journal_data",
    "list_difference",
    "race_fingerprint",
    "read_journal",
    "result_from_journal",
]

# The header's application_id marks a racer journal ("RCRJ"); unregistered with SQLite's
# magic.txt and not used by any format we know of.
APPLICATION_ID = 0x5243524A
# The newest schema this racer reads. A single-objective journal is written as schema 1 (the
# layout of every racer before races on several objectives); a multi-objective one as 2.
_SCHEMA_VERSION = 2
_SCHEMA_SINGLE = 1
_SCHEMA_OBJECTIVES = 2
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS instances (idx INTEGER PRIMARY KEY, repr TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS evaluations (
        candidate INTEGER NOT NULL,
        instance INTEGER NOT NULL,
        value REAL,
        error TEXT,
        PRIMARY KEY (candidate, instance)
    )""",
    """CREATE TABLE IF NOT EXISTS decisions (
        step INTEGER NOT NULL,
        n_instances INTEGER NOT NULL,
        candidate INTEGER NOT NULL,
        reason TEXT NOT NULL,
        by INTEGER,
        probability REAL,
        PRIMARY KEY (step, candidate)
    )""",
]
# Created, and the schema raised to 2, when a race on several objectives claims the journal.
_OBJECTIVES_TABLE = """CREATE TABLE IF NOT EXISTS objective_values (
    candidate INTEGER NOT NULL,
    instance INTEGER NOT NULL,
    objective INTEGER NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (candidate, instance, objective)
)"""


class JournalInUseError(RuntimeError):
    """Another live race (in this process or another) holds the journal's lock."""


# Journals whose lock this process holds, by lock-file path: lets a conflict inside one process
# be told apart from one with another process, and lets forked children drop their copies. No
# mutex: an entry is removed before its descriptor is closed, so no other journal of the same
# path can be registered in between (it cannot get the flock earlier), and __del__ may run
# from any allocation, where a non-reentrant lock could deadlock.
_HELD: dict[str, weakref.ref] = {}


def _forget_locks_in_child() -> None:
    # A forked child shares the parent's open file description, hence its flock; closing the
    # child's descriptor leaves the parent's lock intact (flock is released only when the last
    # descriptor closes), so a child that outlives its parent cannot keep the journal locked.
    for ref in list(_HELD.values()):
        journal = ref()
        if journal is not None and journal._lock_fd is not None:
            try:
                os.close(journal._lock_fd)
            except OSError:  # pragma: no cover
                pass
            journal._lock_fd = None
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_in_child)


def as_path(path: Any, arg: str) -> str:
    """Validate ``path``, the argument ``arg``, as a file path and return it as
    ``str`` (``bytes`` decoded); the message of a refusal names ``arg``.

    >>> as_path(b"race.sqlite", "storage")
    'race.sqlite'
    >>> as_path(":memory:", "storage")
    Traceback (most recent call last):
    ...
    ValueError: `storage`=':memory:' is not a file: a journal must be a file to be resumed; leave storage=None to race without a journal
    """
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"`{arg}` must be a file path (str or os.PathLike); got {path!r}") from None
    if isinstance(text, bytes):
        try:
            text = os.fsdecode(text)
        except UnicodeDecodeError as exc:
            raise ValueError(f"`{arg}`={path!r} cannot be decoded as a file name: {exc}") from None
    if not text.strip():
        raise ValueError(f"`{arg}`={path!r} is an empty path; a journal is a file")
    if text == ":memory:":
        raise ValueError(
            f"`{arg}`=':memory:' is not a file: a journal must be a file to be resumed; "
            "leave storage=None to race without a journal"
        )
    if "\x00" in text:
        raise ValueError(f"`{arg}`={path!r} contains a NUL character")
    return text


def _check_location(text: str, arg: str, *, must_exist: bool) -> str:
    """Return the absolute path after checking that it can be a journal file."""
    absolute = os.path.abspath(text)
    if os.path.isdir(absolute):
        raise IsADirectoryError(
            errno.EISDIR,
            f"`{arg}`={text!r} is a folder, not a journal file; pass a file path such as "
            f"{os.path.join(text, 'race.sqlite')!r}",
            text,
        )
    if os.path.exists(absolute):
        if not os.path.isfile(absolute):
            raise ValueError(f"`{arg}`={text!r} is not a regular file (a device, a socket or a pipe)")
        return absolute
    parent = os.path.dirname(absolute)
    if must_exist:
        raise FileNotFoundError(errno.ENOENT, f"`{arg}`={text!r}: no such journal file", text)
    if not os.path.exists(parent):
        raise FileNotFoundError(
            errno.ENOENT,
            f"`{arg}`={text!r}: its folder {parent!r} does not exist (racer does not create "
            "folders; create it first)",
            text,
        )
    if not os.path.isdir(parent):
        raise NotADirectoryError(errno.ENOTDIR, f"`{arg}`={text!r}: {parent!r} is not a folder", text)
    return absolute


def _os_error(exc: OSError, arg: str, text: str, doing: str, target: str) -> OSError:
    """The same kind of OSError, with a message naming the argument, the path and the cause."""
    code = exc.errno
    hint = ""
    if code in (errno.EACCES, errno.EPERM):
        hint = " (no permission)"
    elif code == errno.EROFS:
        hint = " (read-only file system)"
    message = f"`{arg}`={text!r}: cannot {doing} {target!r}{hint}: {exc.strerror or exc}"
    new = type(exc)(code, message, target) if code is not None else OSError(message)
    return new


def _check_header(absolute: str, arg: str, text: str) -> int | None:
    """Refuse a file that is not SQLite or belongs to another application, from its header alone.

    Returns the header's application_id (None for an empty file, whose content is decided by
    SQLite itself: a 0-byte database may still have a write-ahead log)."""
    try:
        with open(absolute, "rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise _os_error(exc, arg, text, "read", absolute) from exc
    if not head:
        return None
    if not head.startswith(_SQLITE_MAGIC):
        raise ValueError(
            f"`{arg}`={text!r} is not a racer journal: it is not an SQLite database (it starts "
            f"with {head[:16]!r}); racer never writes into such a file; pass a new path"
        )
    if len(head) < 72:
        raise ValueError(f"`{arg}`={text!r} is not a racer journal: a truncated SQLite header")
    app_id = int.from_bytes(head[68:72], "big", signed=True)
    if app_id not in (0, APPLICATION_ID):
        raise ValueError(
            f"`{arg}`={text!r} is not a racer journal: it is the SQLite database of another "
            f"application (application_id {app_id:#x}); racer never writes into it; pass a new path"
        )
    return app_id


def _classify(conn: sqlite3.Connection, arg: str, text: str) -> str:
    """``"journal"`` or ``"empty"``; anything else is refused. Only reads."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    objects = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
    if app_id not in (0, APPLICATION_ID):
        raise ValueError(
            f"`{arg}`={text!r} is not a racer journal: it is the SQLite database of another "
            f"application (application_id {app_id:#x}); racer never writes into it; pass a new path"
        )
    if app_id == 0:
        if not objects:
            return "empty"
        # racer stamps the marker in the transaction that creates its tables, so a file
        # holding anything without the marker is another application's.
        what = ", ".join(sorted(f"{kind} {name}" for kind, name in objects
                                if not name.startswith("sqlite_autoindex_")))
        raise ValueError(
            f"`{arg}`={text!r} is not a racer journal: an SQLite database without racer's "
            f"marker that holds {what}; racer never writes into it; pass a new path"
        )
    names = {name for kind, name in objects if kind == "table"}
    if "meta" in names:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None:
            try:
                version = int(row[0])
            except ValueError:
                version = None
            if version is None or version > _SCHEMA_VERSION:
                raise ValueError(
                    f"`{arg}`={text!r} is a racer journal of schema {row[0]!r}, which this "
                    f"version of racer (schema {_SCHEMA_VERSION}) cannot read; upgrade racer"
                )
    return "journal"


def _read_only(absolute: str) -> sqlite3.Connection:
    uri = pathlib.Path(absolute).as_uri() + "?mode=ro"
    return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)


def _inspect_read_only(absolute: str, arg: str, text: str) -> str:
    """Classify an existing file without writing to it."""
    app_id = _check_header(absolute, arg, text)
    try:
        conn = _read_only(absolute)
    except sqlite3.Error as exc:
        raise _sqlite_open_error(exc, arg, text, absolute) from exc
    try:
        return _classify(conn, arg, text)
    except sqlite3.DatabaseError as exc:
        if "readonly" in str(exc) and app_id == APPLICATION_ID:
            # A process killed in the middle of a write (e.g. while close() switched the
            # journal back to rollback mode) leaves a hot journal that only a writer can roll
            # back. The header carries racer's marker, so the writer may open it; _open()
            # classifies it again inside its write transaction.
            return "journal"
        raise ValueError(f"`{arg}`={text!r} is not a racer journal: SQLite cannot read it ({exc})") from exc
    finally:
        conn.close()


def _sqlite_open_error(exc: sqlite3.Error, arg: str, text: str, absolute: str) -> OSError:
    if not os.access(os.path.dirname(absolute), os.W_OK) or (
        os.path.exists(absolute) and not os.access(absolute, os.R_OK)
    ):
        return PermissionError(errno.EACCES, f"`{arg}`={text!r}: SQLite cannot open it (no permission): {exc}", text)
    return OSError(f"`{arg}`={text!r}: SQLite cannot open it: {exc}")


def _holder(fd: int) -> str:
    try:
        info = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
    except OSError:  # pragma: no cover - e.g. a Windows byte-range lock hides the content
        info = ""
    return info or "holder unknown"


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:  # pragma: no cover - Windows, untested: a mandatory lock on byte 0
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except BlockingIOError:
        return False
    except PermissionError:  # pragma: no cover - how msvcrt reports a held lock
        if fcntl is None:
            return False
        raise
    return True


class Journal:
    """One race's journal file. Used by :class:`racer.Race`; not needed by users.

    Opening it validates the path, refuses anything that is not a racer journal, takes the
    journal's writer lock and creates the tables of a new journal (see the module docstring).
    """

    def __init__(self, path: Any, arg: str = "storage") -> None:
        self._conn = None
        self._pid = os.getpid()
        self._lock_fd: int | None = None
        self._lock_path: str | None = None
        text = as_path(path, arg)
        self.path = text
        absolute = _check_location(text, arg, must_exist=False)
        # Read-only first: a foreign file is refused before the lock file is even created.
        if os.path.exists(absolute):
            _inspect_read_only(absolute, arg, text)
        self._lock(absolute, arg, text)
        try:
            self._open(absolute, arg, text)
        except BaseException:
            self.close()
            raise

    # -------------------------------------------------------------- lock

    def _lock(self, absolute: str, arg: str, text: str) -> None:
        lock_path = os.path.realpath(absolute) + ".lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError as exc:
            try:  # an existing lock file we may not write can still be locked
                fd = os.open(lock_path, os.O_RDONLY)
            except OSError:
                raise _os_error(exc, arg, text, "create its lock file", lock_path) from exc
        except OSError as exc:
            raise _os_error(exc, arg, text, "create its lock file", lock_path) from exc
        try:
            locked = _try_lock(fd)
            if not locked and lock_path in _HELD:
                # A Race of this process may be unreachable but not yet collected (a reference
                # cycle): collect it, which closes its journal, and try once more.
                gc.collect()
                locked = _try_lock(fd)
        except OSError as exc:
            os.close(fd)
            raise _os_error(exc, arg, text, "lock", lock_path) from exc
        if not locked:
            holder = _holder(fd)
            os.close(fd)
            here = lock_path in _HELD
            where = "another Race object in this process" if here else "another race"
            advice = (
                "close() that race first (or let it be garbage collected)"
                if here
                else "wait until that race ends, or stop it"
            )
            raise JournalInUseError(
                f"`{arg}`={text!r} is in use: {where} holds its lock {lock_path!r} ({holder}). "
                f"A journal has one live writer; {advice}. A running race's journal can still "
                "be read with racer.storage.read_journal()."
            )
        try:
            info = f"pid {os.getpid()} on {socket.gethostname()}, since " + time.strftime(
                "%Y-%m-%d %H:%M:%S UTC", time.gmtime()
            )
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode() + b"\n", 0)
        except OSError:
            pass  # informational only (a read-only lock file): the flock is what protects
        self._lock_fd = fd
        self._lock_path = lock_path
        _HELD[lock_path] = weakref.ref(self)

    # -------------------------------------------------------------- open

    def _open(self, absolute: str, arg: str, text: str) -> None:
        try:
            self._conn = sqlite3.connect(
                pathlib.Path(absolute).as_uri() + "?mode=rwc", uri=True, isolation_level=None,
                timeout=30.0,
            )
        except sqlite3.Error as exc:
            raise _sqlite_open_error(exc, arg, text, absolute) from exc
        conn = self._conn
        try:
            # isolation_level=None: every statement commits on its own, so each evaluation is
            # durable the moment tell() returns. The file is classified again inside the write
            # transaction (we hold the lock now, and a 0-byte file's log is only seen by SQLite),
            # so nothing is written unless it is empty or a racer journal.
            conn.execute("BEGIN IMMEDIATE")
            try:
                kind = _classify(conn, arg, text)
                if kind != "journal":
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(_SCHEMA_SINGLE),)
                    )
                conn.execute("COMMIT")
            except BaseException:
                # SQLite has already rolled back after some errors (a full disk): a second
                # ROLLBACK would fail and hide the cause ("cannot rollback - no transaction").
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            # After the marker is committed (in the main file, not in a log), switch to WAL.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "readonly" in message or "read-only" in message:
                raise PermissionError(
                    errno.EACCES,
                    f"`{arg}`={text!r}: the journal cannot be written (read-only file or file "
                    f"system): {message}",
                    text,
                ) from exc
            raise OSError(f"`{arg}`={text!r}: SQLite failed to open the journal: {message}") from exc
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"`{arg}`={text!r} is not a racer journal: SQLite cannot read it ({exc})") from exc

    # -------------------------------------------------------------- race data

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def get_meta(self, key: str) -> str | None:
        """One ``meta`` entry, or None (see :meth:`set_meta`)."""
        return self._meta(key)

    def load_seed(self) -> int | None:
        value = self._meta("seed")
        return None if value is None else int(value)

    def claim(self, fingerprint: dict, seed: int, *, limits: tuple = ()) -> dict | None:
        """Mark the journal as this race's, or refuse if another race wrote it.

        Keys in ``limits`` (the race's stop limits: ``budget``, ``max_instances``) may differ
        from the journal's: the journaled fingerprint is returned (None for a new journal) so
        that the caller can check them against what the journal already holds, and then
        record the new values with :meth:`update_fingerprint`."""
        stored = self._meta("fingerprint")
        if stored is None:
            with self._conn:  # one transaction: a journal never holds half a claim
                self._conn.execute("BEGIN")
                self._conn.execute(
                    "INSERT INTO meta VALUES ('fingerprint', ?), ('seed', ?)",
                    (json.dumps(fingerprint, sort_keys=True), str(seed)),
                )
                if isinstance(fingerprint.get("direction"), list):
                    self._conn.execute(_OBJECTIVES_TABLE)
                    self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)",
                                       (str(_SCHEMA_OBJECTIVES),))
            return None
        old = json.loads(stored)
        same = {k: v for k, v in old.items() if k not in limits}
        now = {k: v for k, v in fingerprint.items() if k not in limits}
        if same != now:
            changes = describe_changes(old, fingerprint, skip=limits)
            raise ValueError(
                f"`storage`={self.path!r} holds a race with other settings. To start over, pass "
                f"another `storage=` path (or delete {self.path!r}); to continue the journaled "
                "race, pass the settings it was started with:\n  "
                + "\n  ".join(changes)
            )
        return old

    def update_fingerprint(self, fingerprint: dict) -> None:
        """Record a claimed race's new stop limits (a resume with a larger ``budget``)."""
        self.set_meta("fingerprint", json.dumps(fingerprint, sort_keys=True))

    def set_meta(self, key: str, value: str | None) -> None:
        """Write (or, with None, delete) one ``meta`` entry: ``winner``, ``stop_reason``."""
        if value is None:
            self._conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self._conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))

    def load_evaluations(self, n_objectives: int = 1) -> dict[tuple[int, int], tuple[Any, str | None]]:
        """``{(candidate, instance): (score, error)}``: the score a float (NaN for a failure),
        or with ``n_objectives`` >= 2 a (k,) float64 array of every objective."""
        rows = self._conn.execute("SELECT candidate, instance, value, error FROM evaluations")
        out = {
            (cand, inst): (math.nan if value is None else float(value), error)
            for cand, inst, value, error in rows
        }
        if n_objectives > 1:
            import numpy as np

            vectors: dict[tuple[int, int], Any] = {}
            for cand, inst, objective, value in self._conn.execute(
                    "SELECT candidate, instance, objective, value FROM objective_values"):
                vector = vectors.get((cand, inst))
                if vector is None:
                    vector = vectors[(cand, inst)] = np.full(n_objectives, np.nan)
                vector[objective] = value
            for key, (value, error) in out.items():
                if error is None:
                    vector = vectors.get(key)
                    if vector is None or np.isnan(vector).any():
                        raise ValueError(
                            f"`storage`={self.path!r}: the journal holds evaluation {key} "
                            f"without its {n_objectives} objective values; it is damaged")
                    out[key] = (vector, None)
        return out

    def load_instances(self) -> list[str]:
        rows = self._conn.execute("SELECT idx, repr FROM instances ORDER BY idx").fetchall()
        return [text for _idx, text in rows]

    def record_instances(self, rows: list[tuple[int, str]]) -> None:
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR IGNORE INTO instances VALUES (?, ?)", rows)

    def record_evaluation(self, candidate: int, instance: int, value: Any, error: str | None) -> None:
        """Write one evaluation: ``value`` a float (NaN: failed), or a race on several
        objectives' (k,) array, whose objectives go to ``objective_values`` in the same
        transaction (a kill never leaves an evaluation without them)."""
        if isinstance(value, float):
            self._conn.execute(
                "INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?, ?)",
                (candidate, instance, None if math.isnan(value) else value, error),
            )
            return
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.execute("INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?, ?)",
                               (candidate, instance, float(value[0]), error))
            self._conn.executemany(
                "INSERT OR REPLACE INTO objective_values VALUES (?, ?, ?, ?)",
                [(candidate, instance, k, float(v)) for k, v in enumerate(value)])

    def record_decisions(self, step: int, n_instances: int, applied: list, *,
                         tested: bool = False) -> None:
        """Journal the eliminations of one step; with ``tested`` also mark test step ``step``
        as taken (meta ``tested``), in the same transaction, so that a resume applies the
        journaled decisions of that step instead of deciding it again (see
        :meth:`load_decisions`)."""
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "INSERT OR IGNORE INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (step, n_instances, cand, reason, by, None if math.isnan(prob) else prob)
                    for cand, reason, by, prob in applied
                ],
            )
            if tested:
                self._conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('tested', ?)", (str(step),))

    def load_decisions(self) -> tuple[int, dict[int, list]]:
        """``(last test step taken, {step: [(candidate, reason, by, probability), ...]})``.

        Journals written before racer recorded the ``tested`` marker give the last step that
        eliminated someone (the steps after it are decided again on resume)."""
        rows = self._conn.execute(
            "SELECT step, candidate, reason, by, probability FROM decisions "
            "WHERE step > 0 ORDER BY step, rowid"  # rowid: the order decided
        ).fetchall()
        by_step: dict[int, list] = {}
        for step, cand, reason, by, prob in rows:
            by_step.setdefault(step, []).append(
                (cand, reason, by, math.nan if prob is None else float(prob)))
        marker = self._meta("tested")
        tested = int(marker) if marker is not None else max(by_step, default=0)
        return tested, by_step

    # -------------------------------------------------------------- close

    def close(self) -> None:
        """Close the database, then release the writer lock (in that order: nothing is written
        once another writer can get in)."""
        conn, self._conn = self._conn, None
        # A forked child's copy of the connection only drops it: the parent still writes.
        if conn is not None and os.getpid() == self._pid:
            try:
                # Leave a closed journal as one self-contained file in rollback mode, so that
                # copying it takes everything and a read-only reader (read_journal) does not
                # have to create -wal/-shm files next to it. Skipped, without waiting, while
                # another connection reads it: the journal then simply stays in WAL mode.
                conn.execute("PRAGMA busy_timeout = 0")
                conn.execute("PRAGMA journal_mode = DELETE")
            except sqlite3.Error:
                pass
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover
                pass
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            ref = _HELD.get(self._lock_path)
            if ref is not None and ref() in (self, None):  # None: called from __del__
                _HELD.pop(self._lock_path, None)
            # Closing (never LOCK_UN) releases the lock: LOCK_UN would also release it for a
            # forked child's shared description, closing affects only this descriptor.
            try:
                os.close(fd)
            except OSError:  # pragma: no cover
                pass

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


# --------------------------------------------------------------------------- a race's observer

# Options that only stop a race: a resume may raise them (continue a finished race).
_LIMITS = ("budget", "max_instances")


class NullJournal:
    """The journal of a race without ``storage``: every hook does nothing, nothing replays.

    :class:`racer.Race` calls one hook per event (:meth:`on_evaluation`, :meth:`on_instances`,
    :meth:`on_decisions`, :meth:`on_stop`, :meth:`on_restart`) on its journal, this object or
    a :class:`RaceJournal`, instead of asking each time whether it has one. ``closed`` marks
    the stand-in of a journal that was closed: such a race refuses further results.

    >>> journal = NullJournal()
    >>> journal.take((0, 0)) is None, journal.replaying, journal.failure_hint
    (True, False, '')
    """

    path: str | None = None
    failure_hint = ""  # what RaceFailedError's message adds about the journal
    tested_steps = 0  # test steps the journal says were taken (a resume applies their decisions)

    def __init__(self, *, closed: bool = False) -> None:
        self.closed = closed

    @property
    def replaying(self) -> bool:
        """Whether journaled evaluations are left to replay."""
        return False

    def take(self, key: tuple[int, int]) -> tuple[Any, str | None, bool] | None:
        """The journaled ``(score, error message, charged)`` of evaluation ``key``
        (candidate, instance), taken out of the replay; None when there is none. The score
        is a float, or a (k,) array in a race on several objectives (NaN for a failure)."""
        return None

    def decisions_of(self, step: int) -> list:
        """The journaled eliminations of test step ``step``: ``(candidate, reason, by,
        probability)``, in the order they were decided."""
        return []

    def on_evaluation(self, ci: int, row: int, score: float, message: str | None,
                      charge: bool) -> None:
        """Candidate ``ci`` was told on instance ``row``: ``score``, or failed (``message``);
        ``charge=False``: a failure not paid from the budget."""

    def on_instances(self, start: int, new: list) -> None:
        """Instances ``new`` were drawn as rows ``start``, ``start + 1``, ...; a resume checks
        them against the journaled ones (a ValueError names the first that differs)."""

    def on_decisions(self, step: int, n_instances: int, applied: list, *,
                     tested: bool = False) -> None:
        """Eliminations ``(candidate, reason, by, probability)`` applied at ``step`` after
        ``n_instances`` instances; ``tested``: test step ``step`` was taken (even if it
        eliminated nobody)."""

    def on_stop(self, reason: str) -> None:
        """The race stopped for ``reason`` (:attr:`racer.Race.stop_reason`)."""

    def on_restart(self) -> None:
        """A stopped race runs again (new instances after ``instances_exhausted``)."""

    def close(self) -> None:
        """Release the journal (nothing to release here)."""


class RaceJournal(NullJournal):
    """The journal of one :class:`racer.Race` (``storage=``): claims it, replays it, records
    each event (the hooks of :class:`NullJournal`).

    Opening it opens the :class:`Journal` (path checks, writer lock), derives the race seed
    (the journaled one when ``random_state`` is None), and claims the journal with the race's
    fingerprint: ``candidates``' and the test's reprs, ``options`` (the decision-changing
    settings, ``budget`` and ``max_instances`` among them, in :class:`racer.Race`'s words), the
    seed and ``metadata``. A resume reads what the race will replay: the evaluations, the
    instances' reprs, the test steps taken and their eliminations. A ``budget`` or
    ``max_instances`` below what the journal holds is refused before anything is written.

    >>> import os, tempfile
    >>> from racer import KeepAll
    >>> path = os.path.join(tempfile.mkdtemp(), "race.sqlite")
    >>> options = dict(direction="minimize", budget=None, max_instances=None, first_test=1,
    ...                each_test=1, min_survivors=1, shuffle=False, on_error="worst")
    >>> journal = RaceJournal(path, 7, candidates=[1, 2], test=KeepAll(), options=options,
    ...                       metadata={}, winner="mean")
    >>> journal.on_instances(0, ["a"]); journal.on_evaluation(0, 0, 0.5, None, True)
    >>> journal.close()
    >>> again = RaceJournal(path, 7, candidates=[1, 2], test=KeepAll(), options=options,
    ...                     metadata={}, winner="mean")
    >>> again.seed, again.replaying, again.take((0, 0)), again.take((0, 0))
    (7, True, (0.5, None, True), None)
    >>> again.close()
    """

    def __init__(self, storage: Any, random_state: Any, *, candidates: list, test: Any,
                 options: dict, metadata: dict, winner: str) -> None:
        from racer._validation import seed_from_random_state

        super().__init__()
        if random_state is None:
            seed_spec = None
        elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
            seed_spec = int(random_state)
        else:
            seed_spec = "generator"
        journal = Journal(storage)
        try:
            stored_seed = journal.load_seed()
            if random_state is None and stored_seed is not None:
                seed = stored_seed
            else:
                seed = seed_from_random_state(random_state)
            fingerprint = race_fingerprint(candidates, test, options, seed_spec, metadata)
            fingerprint["seed"] = str(seed)
            journaled = journal.claim(fingerprint, seed, limits=_LIMITS)
            direction = fingerprint.get("direction")
            self._replay = journal.load_evaluations(
                len(direction) if isinstance(direction, list) else 1)
            uncharged = journal.get_meta("uncharged")
            self._replay_uncharged = (
                {(int(c), int(r)) for c, r in ast.literal_eval(uncharged)} if uncharged else set())
            self._stored_instance_reprs = journal.load_instances()
            if journaled is not None:
                # Before anything is written.
                self._check_limits(journaled, journal.path, options["budget"],
                                   options["max_instances"])
                if any(journaled.get(k) != fingerprint[k] for k in _LIMITS):
                    journal.update_fingerprint(fingerprint)
            self.tested_steps, self._replay_decisions = journal.load_decisions()
            # Not in the fingerprint (journals from before it was recorded resume unchanged):
            # the report reads the rule instead of guessing it. A race on this journal is
            # running again, so any earlier stop reason is stale until it stops anew.
            journal.set_meta("winner", winner)
            journal.set_meta("stop_reason", None)
        except BaseException:
            journal.close()
            raise
        self.seed = seed
        self.path = journal.path
        self.failure_hint = (" The `storage` journal keeps these failures and replays them on "
                             "resume: use a new journal once `evaluate` is fixed.")
        self._journal = journal
        # Failures told with charge=False (evaluations the caller did not make): recorded,
        # not paid from the budget; journaled under the meta key "uncharged" for a resume.
        self._uncharged: set[tuple[int, int]] = set()

    def _check_limits(self, journaled: dict, path: str, budget: int | None,
                      max_instances: int | None) -> None:
        """Refuse a resume whose ``budget`` or ``max_instances`` is below what the journal
        already holds; any limit at or above it continues the race (see the module)."""
        spent = sum(1 for key in self._replay if key not in self._replay_uncharged)
        raced = len(self._stored_instance_reprs)
        start_over = f"to start over, pass another `storage=` path (or delete {path!r})"
        if budget is not None and spent > budget:
            raise ValueError(
                f"To continue the race journaled in `storage`={path!r}, pass budget >= {spent} "
                f"(or budget=None); {start_over}. It already spent {spent} evaluations "
                f"(its budget was {journaled.get('budget')}), more than `budget`={budget}."
            )
        if max_instances is not None and raced > max_instances:
            raise ValueError(
                f"To continue the race journaled in `storage`={path!r}, pass max_instances >= "
                f"{raced} (or max_instances=None); {start_over}. It already raced {raced} "
                f"instances (its max_instances was {journaled.get('max_instances')}), more than "
                f"`max_instances`={max_instances}."
            )

    # -------------------------------------------------------------- replay

    @property
    def replaying(self) -> bool:
        return bool(self._replay)

    def take(self, key: tuple[int, int]) -> tuple[float, str | None, bool] | None:
        hit = self._replay.pop(key, None) if self._replay else None
        if hit is None:
            return None
        charged = key not in self._replay_uncharged
        if not charged:
            self._uncharged.add(key)
        return hit[0], hit[1], charged

    def decisions_of(self, step: int) -> list:
        return self._replay_decisions.get(step, [])

    # -------------------------------------------------------------- events

    def on_evaluation(self, ci: int, row: int, score: float, message: str | None,
                      charge: bool) -> None:
        if not charge:
            self._uncharged.add((ci, row))
            self._journal.set_meta("uncharged", repr(sorted(self._uncharged)))
        self._journal.record_evaluation(ci, row, score, message)

    def on_instances(self, start: int, new: list) -> None:
        known = self._stored_instance_reprs
        fresh = []
        for offset, inst in enumerate(new):
            row, text = start + offset, stable_repr(inst)
            if row < len(known):
                if known[row] != text:
                    was, now = _first_difference(known[row], text)
                    raise ValueError(
                        f"`storage`={self.path!r} holds a race on other instances. To start "
                        f"over, pass another `storage=` path (or delete {self.path!r}); to "
                        "continue the journaled race, pass the instances it raced, in the same "
                        f"order:\n  instance #{row}: journal {was}, now {now}"
                    )
            else:
                fresh.append((row, text))
        if fresh:
            self._journal.record_instances(fresh)

    def on_decisions(self, step: int, n_instances: int, applied: list, *,
                     tested: bool = False) -> None:
        if applied or tested:
            self._journal.record_decisions(step, n_instances, applied, tested=tested)

    def on_stop(self, reason: str) -> None:
        self._journal.set_meta("stop_reason", reason)

    def on_restart(self) -> None:
        self._journal.set_meta("stop_reason", None)

    def close(self) -> None:
        self._journal.close()


def race_fingerprint(candidates: list, test: Any, options: dict, seed_spec: Any,
                     metadata: dict) -> dict:
    """What identifies a race in its journal (the seed is added by the caller): the
    candidates' and the test's stable reprs, ``options`` as given, ``random_state`` as
    ``seed_spec`` (an int, None or ``"generator"``) and ``metadata`` (values by repr)."""
    try:
        params = test.get_params()
    except NotImplementedError:
        params = {"repr": stable_repr(test)}
    if isinstance(options.get("direction"), tuple):
        # Several objectives: stored as a JSON list, so compared as one on resume.
        options = {**options, "direction": list(options["direction"])}
    return {
        "candidates": [stable_repr(c) for c in candidates],
        "test": f"{type(test).__module__}.{type(test).__qualname__}",
        "test_params": {k: stable_repr(v) for k, v in sorted(params.items())},
        **options,
        "random_state": seed_spec,
        "metadata": {str(k): stable_repr(v) for k, v in sorted(metadata.items(), key=str)},
    }


def _short(value: Any, width: int = 40) -> str:
    """A value of a fingerprint as the user wrote it: the stored reprs of strings lose their
    quotes' escapes, long texts are cut."""
    return clip(value if isinstance(value, str) else repr(value), width)


def _first_difference(old: str, new: str, width: int = 40) -> tuple[str, str]:
    """The parts of two long texts around where they first differ (not the whole dumps)."""
    if len(old) <= width and len(new) <= width:
        return old, new
    at = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    start = max(0, at - 10)
    cut = (lambda t: ("..." if start else "") + t[start:start + width]
           + ("..." if len(t) > start + width else ""))
    return cut(old), cut(new)


def _change(name: str, old: Any, new: Any) -> str:
    if old is None and new is not None:
        return f"{name}: journal has none, now {_short(new)}"
    if new is None and old is not None:
        return f"{name}: journal {_short(old)}, now none"
    a, b = _first_difference(str(old), str(new)) if isinstance(old, str) and isinstance(new, str) \
        else (_short(old), _short(new))
    return f"{name}: journal {a}, now {b}"


def changed_keys(old: dict, new: dict, skip: tuple = ()) -> list:
    """The keys whose values differ between two settings dicts, those in ``skip`` aside: the
    keys of ``old`` in their order, then those only ``new`` has. A key missing on one side
    differs from any value but None. This and :func:`list_difference` compare settings
    wherever racer refuses to continue a run started with others; each caller words the
    differences in its own user's terms (:func:`describe_changes`: ``Race``'s arguments).

    >>> changed_keys({"a": 1, "b": 2, "c": 3}, {"c": 3, "b": 20, "d": 4}, skip=("a",))
    ['b', 'd']
    """
    return [k for k in dict.fromkeys([*old, *new]) if k not in skip and old.get(k) != new.get(k)]


def list_difference(old: list, new: list) -> tuple[int, str]:
    """Where two different lists first differ, and how: ``(i, "changed")`` when their items
    ``i`` differ, ``(i, "new")`` when ``new`` goes on past the end ``i`` of ``old``,
    ``(i, "gone")`` when it ends at ``i`` before ``old`` does.

    >>> list_difference([1, 2], [1, 3, 4]), list_difference([1], [1, 5]), list_difference([1, 2], [1])
    ((1, 'changed'), (1, 'new'), (1, 'gone'))
    """
    at = next((i for i, (x, y) in enumerate(zip(old, new)) if x != y), min(len(old), len(new)))
    if at < min(len(old), len(new)):
        return at, "changed"
    return at, "new" if len(new) > len(old) else "gone"


def describe_changes(old: dict, new: dict, skip: tuple = ()) -> list[str]:
    """One short line per setting that differs between two race fingerprints, in the words
    of ``Race``'s arguments: ``random_state: journal 1, now 2`` (never the derived seed),
    ``candidates: journal 4, now 5 (#4 is new: 0.9)``, a changed test parameter or
    ``metadata`` entry by its key, and long values cut around their first difference.

    >>> describe_changes({"random_state": 1, "seed": "8"}, {"random_state": 2, "seed": "9"})
    ['random_state: journal 1, now 2']
    >>> describe_changes({"candidates": ["1", "2"]}, {"candidates": ["1", "3", "4"]})
    ['candidates: journal 2, now 3 (#1: journal 2, now 3)']
    """
    keys = changed_keys(old, new, skip)
    lines = []
    for key in keys:
        lines += _setting_changes(key, old.get(key), new.get(key), keys)
    return lines


def _setting_changes(key: str, a: Any, b: Any, keys: list) -> list[str]:
    """The lines of :func:`describe_changes` for the fingerprint entry ``key``, journaled
    ``a``, now ``b``; ``keys`` are every entry that changed (some lines defer to others)."""
    if key == "seed":
        if "random_state" in keys:
            return []  # the user's random_state is named; the derived seed means nothing
        return ["random_state: it gives another seed than the journal's race (pass "
                "random_state=None to take the journal's seed)"]
    if key == "random_state":
        return [_change("random_state", "a Generator" if a == "generator" else a,
                        "a Generator" if b == "generator" else b)]
    if key == "candidates" and isinstance(a, list) and isinstance(b, list):
        return [_candidates_change(a, b)]
    if key == "direction" and (a in ("minimize", "maximize") or isinstance(a, list)):
        # Say which argument continues the journal's race (the default is "minimize"),
        # one direction per objective for a race on several.
        return [f"direction: journal {a!r}, now {b!r} (pass direction={a!r} to continue it)"]
    if key == "test":
        return [_change("test", str(a).rsplit(".", 1)[-1], str(b).rsplit(".", 1)[-1])]
    if key == "test_params" and "test" in keys:
        return []  # parameters of two different tests: the class says it
    if key in ("test_params", "metadata") and isinstance(a, dict) and isinstance(b, dict):
        return [_change(f"test parameter {sub}" if key == "test_params" else f"metadata[{sub!r}]",
                        a.get(sub), b.get(sub))
                for sub in changed_keys(a, b)]
    return [_change(key, a, b)]


def _candidates_change(a: list, b: list) -> str:
    """``candidates: journal 4, now 5 (#4 is new: 0.9)``: the counts and the first
    candidate that differs."""
    at, how = list_difference(a, b)
    if how == "changed":
        x, y = _first_difference(a[at], b[at])
        where = f"#{at}: journal {x}, now {y}"
    elif how == "new":
        where = f"#{at} is new: {_short(b[at])}"
    else:
        where = f"#{at} is gone: {_short(a[at])}"
    count = f"journal {len(a)}, now {len(b)}" if len(a) != len(b) else f"{len(a)} each"
    return f"candidates: {count} ({where})"


def read_journal(path: Any) -> dict:
    """Read a journal's tables as plain Python lists (for inspection, reports and tests).

    The file is opened read-only and without the writer lock, so a journal can be read while
    its race writes it; all tables are read in one transaction (one consistent snapshot).
    A missing file is a ``FileNotFoundError``; a file that is not a racer journal (not SQLite,
    another application's database, an empty file) is a ``ValueError`` naming ``path``.

    Returns ``{"fingerprint": dict, "seed": int, "instances": [repr, ...],
    "evaluations": [(candidate, instance, value, error), ...], "decisions": [(step,
    n_instances, candidate, reason, by, probability), ...], "winner": str, "stop_reason":
    str, "objective_values": [(candidate, instance, objective, value), ...]}`` (``fingerprint``
    and ``seed`` are None before the race claimed the journal; ``stop_reason``
    is None while the race runs or after it was interrupted; ``winner`` and ``stop_reason``
    are None in journals written before racer recorded them; ``objective_values`` holds every
    objective of a race on several, whose ``evaluations`` hold the first, and is empty for
    one objective).

    >>> import os, tempfile
    >>> from racer import Race
    >>> from racer.racing.base import RacingTest
    >>> class KeepAll(RacingTest):
    ...     def decide(self, view, rng):
    ...         return []
    ...     def get_params(self):
    ...         return {}
    >>> path = os.path.join(tempfile.mkdtemp(), "race.sqlite")
    >>> race = Race([1, 2], test=KeepAll(), first_test=2, max_instances=2, storage=path,
    ...             random_state=0)
    >>> result = race.run(lambda c, i: c * i, [1, 2], progress=False)
    >>> read_journal(path)["evaluations"]
    [(0, 0, 1.0, None), (1, 0, 2.0, None), (0, 1, 2.0, None), (1, 1, 4.0, None)]
    >>> race.close()
    """
    text = as_path(path, "path")
    absolute = _check_location(text, "path", must_exist=True)
    _check_header(absolute, "path", text)
    try:
        conn = _read_only(absolute)
    except sqlite3.Error as exc:
        raise _sqlite_open_error(exc, "path", text, absolute) from exc
    try:
        conn.execute("BEGIN")
        try:
            kind = _classify(conn, "path", text)
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"`path`={text!r} is not a racer journal: SQLite cannot read it ({exc})") from exc
        if kind == "empty":
            raise ValueError(f"`path`={text!r} is not a racer journal: it is empty (no race has written it)")

        def rows(sql: str) -> list:
            return conn.execute(sql).fetchall()

        # The marker and the tables are written in one transaction: a marked journal has all.
        meta = dict(rows("SELECT key, value FROM meta"))
        result = {
            "fingerprint": json.loads(meta["fingerprint"]) if "fingerprint" in meta else None,
            "seed": int(meta["seed"]) if "seed" in meta else None,
            "instances": [r[0] for r in rows("SELECT repr FROM instances ORDER BY idx")],
            "evaluations": rows(
                "SELECT candidate, instance, value, error FROM evaluations ORDER BY instance, candidate"
            ),
            "decisions": rows("SELECT * FROM decisions ORDER BY step, candidate"),
            "winner": meta.get("winner"),
            "stop_reason": meta.get("stop_reason"),
            "objective_values": rows(
                "SELECT candidate, instance, objective, value FROM objective_values "
                "ORDER BY instance, candidate, objective"
            ) if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                              "'objective_values'").fetchone() else [],
        }
        conn.execute("COMMIT")
        return result
    finally:
        conn.close()


# --------------------------------------------------------------------------- journal -> result


class Repr:
    """A candidate or instance known only by its ``repr`` text (as stored in a journal)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Repr) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def journal_data(journal: Any) -> dict:
    """The tables of a journal that holds a race: ``journal`` is a path (read with
    :func:`read_journal`) or the dict :func:`read_journal` returned, checked to be one.

    A journal without a fingerprint (its race never started) is a ValueError: it holds
    nothing to rebuild or report."""
    if isinstance(journal, dict):
        data = journal
        missing = {"fingerprint", "seed", "instances", "evaluations", "decisions"} - set(data)
        if missing:
            raise ValueError(
                f"`journal` must be a path or the dict of racer.storage.read_journal(); this "
                f"dict lacks {sorted(missing)}"
            )
    else:
        data = read_journal(journal)
    if data["fingerprint"] is None:
        raise ValueError(
            "the journal holds no race yet (no fingerprint: the race that created it had not "
            "started); there is nothing to report"
        )
    return data


def result_from_journal(journal: Any) -> RaceResult:
    """Rebuild the :class:`racer.RaceResult` of a journaled race, finished or not.

    ``journal`` is a journal path or the dict returned by
    :func:`racer.storage.read_journal`. Candidates and instances are :class:`Repr` objects
    (the journal stores their ``repr``). ``stop_reason`` is the journaled one; for a race
    that has not stopped it is ``"interrupted"`` (last block incomplete) or ``"unfinished"``;
    for a journal of an older racer, which did not record it, it is inferred
    (``"min_survivors"``, ``"max_instances"``, ``"budget"``, ``"interrupted"``,
    ``"stopped_between_blocks"`` or ``"not_started"``). Survivors are ordered by the
    journaled ``winner`` rule (by mean score in older journals).

    >>> import os, tempfile
    >>> from racer import race
    >>> path = os.path.join(tempfile.mkdtemp(), "race.sqlite")
    >>> res = race(lambda c, i: c + (i % 3), [0.0, 1.0, 5.0], range(12), progress=False,
    ...            random_state=0, storage=path)
    >>> back = result_from_journal(path)
    >>> back.best, back.best_index == res.best_index, back.n_evaluations == res.n_evaluations
    (0.0, True, True)
    """
    import numpy as np

    from racer.result import RaceResult

    # Read and check: the journal's candidates, instances, scores and eliminations.
    data = journal_data(journal)
    fp = data["fingerprint"]
    candidates, instances = _journal_items(data)
    scores, evaluated, failures = _journal_scores(data, len(instances), len(candidates))
    alive, history = _journal_eliminations(data, candidates)
    if not alive.any():
        raise ValueError("the journal eliminates every candidate; it is not a consistent race")

    # Compute what the journal does not hold: why the race stopped, and (one objective) the
    # order of the candidates.
    survivors = np.flatnonzero(alive)
    n_evals = int(evaluated.sum())
    stop = _journal_stop_reason(data, evaluated, survivors, n_evals)
    budget = fp.get("budget")
    budget = None if budget is None else int(budget)
    seed = int(data["seed"]) if data["seed"] is not None else -1
    winner = data.get("winner")
    directions = fp.get("direction")
    if isinstance(directions, list):
        # Several objectives: the score table is rebuilt as the race filled it (the same
        # imputation of failures, the same rows counted complete), so the result, its means
        # and its Pareto front are the live race's own (RaceResult._from_race).
        table = _replayed_table(data, tuple(directions), len(candidates), evaluated, history)
        return RaceResult._from_race(
            table, candidates=candidates, instances=instances, survivors=survivors,
            winner=winner or "mean", on_error=fp.get("on_error", "worst"), history=history,
            failures=failures, n_evaluations=n_evals, n_instances_available=None,
            stop_reason=stop, budget=budget, seed=seed,
        )
    maximize = directions == "maximize"
    n_evaluated = evaluated.sum(axis=0).astype(np.int64)
    mean_scores, survivor_order, ranking = _journal_ranking(
        scores, evaluated, alive, n_evaluated, maximize, winner)

    # Assemble the result of a race on one objective.
    best = int(survivor_order[0])
    return RaceResult(
        best=candidates[best], best_index=best,
        survivors=[candidates[i] for i in survivor_order],
        survivor_indices=survivor_order.astype(np.int64),
        ranking=[candidates[i] for i in ranking], ranking_indices=ranking,
        candidates=candidates, instances=instances, scores=scores,
        mean_scores=mean_scores, n_evaluated=n_evaluated, n_evaluations=n_evals,
        n_instances=len(instances), history=tuple(history), failures=tuple(failures),
        stop_reason=stop, maximize=maximize, budget=budget, seed=seed,
        pareto_front_indices=np.array([best], dtype=np.int64),
    )


def _journal_items(data: dict) -> tuple[list, list]:
    """The journal's candidates and instances as :class:`Repr` objects; instances evaluated
    but whose repr was not journaled yet (the race was interrupted) get a placeholder."""
    cand_reprs = list(data["fingerprint"].get("candidates", []))
    n_cand = len(cand_reprs)
    if n_cand == 0:
        raise ValueError("the journal's fingerprint lists no candidates")
    instances = [Repr(t) for t in data["instances"]]
    n_rows = len(instances)
    for cand, inst, _v, _e in data["evaluations"]:
        if not (0 <= cand < n_cand and 0 <= inst):
            raise ValueError(f"the journal has an evaluation of candidate {cand}, instance {inst} "
                             f"outside its {n_cand} candidates")
        n_rows = max(n_rows, inst + 1)
    instances += [Repr(f"<instance {i}: repr not journaled>") for i in range(len(instances), n_rows)]
    return [Repr(t) for t in cand_reprs], instances


def _journal_scores(data: dict, n_rows: int, n_cand: int) -> tuple[Any, Any, list]:
    """``(scores, evaluated, failures)``: the score matrix (NaN where not evaluated or
    failed), which evaluations were run, and the failures as ``(candidate, instance,
    error)`` in the order of the race (by instance, then candidate)."""
    import numpy as np

    scores = np.full((n_rows, n_cand), np.nan)
    evaluated = np.zeros((n_rows, n_cand), dtype=bool)
    failures = []
    for cand, inst, value, error in data["evaluations"]:
        evaluated[inst, cand] = True
        if value is None or error is not None:
            failures.append((int(cand), int(inst), str(error)))
        else:
            scores[inst, cand] = float(value)
    failures.sort(key=lambda f: (f[1], f[0]))
    return scores, evaluated, failures


def _journal_eliminations(data: dict, candidates: list) -> tuple[Any, list]:
    """``(alive, history)``: which candidates survive, and an :class:`EliminationRecord`
    per journaled elimination."""
    import numpy as np

    from racer.result import EliminationRecord

    alive = np.ones(len(candidates), dtype=bool)
    history = []
    for step, n_inst, cand, reason, by, prob in data["decisions"]:
        alive[cand] = False
        history.append(EliminationRecord(
            candidate=candidates[cand], candidate_index=int(cand), n_instances=int(n_inst),
            reason=str(reason), by=None if by is None else candidates[by],
            by_index=None if by is None else int(by),
            probability=math.nan if prob is None else float(prob), step=int(step),
        ))
    return alive, history


def _journal_ranking(scores: Any, evaluated: Any, alive: Any, n_evaluated: Any,
                     maximize: bool, winner: str | None) -> tuple[Any, Any, Any]:
    """``(mean_scores, survivor_order, ranking)`` of a race on one objective, as
    ``RaceResult._from_race`` orders a live race: survivors by the ``winner`` rule (rank
    sums for ``"rank_sum"`` and ``"mean_rank"``, else the mean), then the eliminated by
    instances seen and mean; ties to the earlier candidate."""
    import numpy as np

    from racer.stats._ranks import block_ranks

    with np.errstate(invalid="ignore", divide="ignore"):
        counts = np.sum(np.isfinite(scores), axis=0)
        mean_scores = np.where(counts > 0, np.nansum(scores, axis=0) / np.maximum(counts, 1), np.nan)
    oriented = mean_scores if maximize else -mean_scores
    key = np.where(np.isnan(oriented), -np.inf, oriented)
    idx = np.arange(len(alive))
    survivors = idx[alive]
    survivor_order = survivors[np.lexsort((survivors, -key[survivors]))]
    complete_rows = np.flatnonzero(np.all(evaluated[:, survivors], axis=1))
    if winner in ("rank_sum", "mean_rank") and len(survivors) > 1 and len(complete_rows):
        # As Race._order_survivors: rank sums over the instances every survivor completed; a
        # failure ranks last on its instance (its substitute score is not journaled, but any
        # substitute ranks last).
        block = scores[np.ix_(complete_rows, survivors)]
        block = block if maximize else -block
        block = np.where(np.isnan(block), -np.inf, block)
        rank_key = block_ranks(block).sum(axis=0)
        survivor_order = survivors[np.lexsort((survivors, rank_key))]
    elim = idx[~alive]
    elim_sorted = elim[np.lexsort((elim, -key[elim], -n_evaluated[elim]))]
    ranking = np.concatenate([survivor_order, elim_sorted]).astype(np.int64)
    return mean_scores, survivor_order, ranking


def _journal_stop_reason(data: dict, evaluated: Any, survivors: Any, n_evals: int) -> str:
    """Why the journaled race stopped: the journaled reason; for a race that has not
    stopped, ``"interrupted"`` (its last block is incomplete) or ``"unfinished"``; for a
    journal of an older racer, which did not record it, the reason inferred from the
    fingerprint's limits."""
    import numpy as np

    fp = data["fingerprint"]
    n_rows = evaluated.shape[0]
    complete = bool(np.all(evaluated[:, survivors])) if n_rows else True
    budget = fp.get("budget")
    max_inst = fp.get("max_instances")
    each = int(fp.get("each_test", 1) or 1)
    journaled = data.get("stop_reason")
    if journaled:
        return str(journaled)
    if n_rows == 0:
        return "not_started"
    if not complete:
        return "interrupted"
    if data.get("winner") is not None:  # this journal records stops: it has not stopped
        return "unfinished"
    if len(survivors) <= int(fp.get("min_survivors", 1)):
        return "min_survivors"
    if max_inst is not None and n_rows >= int(max_inst):
        return "max_instances"
    if budget is not None and n_evals + len(survivors) * each > int(budget):
        return "budget"
    return "stopped_between_blocks"


def _replayed_table(data: dict, directions: tuple, n_cand: int, evaluated: Any,
                    history: list) -> Any:
    """The :class:`racer._scores.ScoreTable` of a journaled race on several objectives, filled
    as the race filled it: each instance's row by the candidates racing then (those not yet
    eliminated, known from the eliminations' instance counts), a row finalized (failures
    imputed among that row's candidates) once every one of them is recorded. Rows from the
    first incomplete one on are left open, as the open block of an interrupted race: the
    race's complete rows are those before it. (The live race counts complete rows up to its
    open block's start; the journal does not record where a block began, so a race
    interrupted after some full rows of its last block counts those rows too.)"""
    import numpy as np

    from racer._scores import ScoreTable

    k = len(directions)
    n_rows = evaluated.shape[0]
    vectors = np.full((n_rows, n_cand, k), np.nan)
    for cand, inst, objective, value in data.get("objective_values") or ():
        if not (0 <= cand < n_cand and 0 <= inst < n_rows and 0 <= objective < k):
            raise ValueError(
                f"the journal has objective {objective} of candidate {cand} on instance {inst}, "
                f"outside its {n_cand} candidates, {n_rows} instances and {k} objectives")
        vectors[inst, cand, objective] = value
    failed = np.zeros((n_rows, n_cand), dtype=bool)
    for cand, inst, value, error in data["evaluations"]:
        failed[inst, cand] = value is None or error is not None
    missing = evaluated & ~failed & np.isnan(vectors).any(axis=2)
    if missing.any():
        inst, cand = (int(v) for v in np.argwhere(missing)[0])
        raise ValueError(f"the journal holds the evaluation of candidate {cand} on instance "
                         f"{inst} without its {k} objective values; it is damaged")
    racing_until = np.full(n_cand, n_rows + 1)  # rows < this: the candidate was racing
    for rec in history:
        racing_until[rec.candidate_index] = rec.n_instances
    table = ScoreTable(n_cand, maximize=directions[0] == "maximize", capacity=max(n_rows, 1),
                       directions=directions)

    def fill(start: int, stop: int, cols: Any) -> None:
        table.open_rows(start, stop, cols)
        for row in range(start, stop):
            for ci in np.flatnonzero(evaluated[row]):
                table.record(int(ci), row, vectors[row, ci], failed=bool(failed[row, ci]))

    for row in range(n_rows):
        cols = np.flatnonzero((racing_until > row) | evaluated[row])
        if not evaluated[row, cols].all():
            fill(row, n_rows, cols)  # the open block: left open
            return table
        fill(row, row + 1, cols)
        table.close_rows()
    return table


def objective_names(fingerprint: dict, k: int) -> list[str]:
    """The names of a race's ``k`` objectives: ``metadata["objective_names"]`` of its
    fingerprint when it holds ``k`` strings (``Race(..., metadata={"objective_names":
    ["error", "seconds"]})``), else ``"objective 1"``, ``"objective 2"``, ...

    >>> objective_names({"metadata": {"objective_names": "['error', 'seconds']"}}, 2)
    ['error', 'seconds']
    >>> objective_names({"metadata": {}}, 2)
    ['objective 1', 'objective 2']
    """
    text = (fingerprint.get("metadata") or {}).get("objective_names")
    try:
        names = ast.literal_eval(text) if isinstance(text, str) else None
    except (ValueError, SyntaxError):
        names = None
    if isinstance(names, (list, tuple)) and len(names) == k and all(isinstance(n, str) for n in names):
        return list(names)
    return [f"objective {o + 1}" for o in range(k)]
