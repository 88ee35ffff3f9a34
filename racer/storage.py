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
class and ``get_params()``, every decision-changing option, the seed); a race whose fingerprint
differs is refused with a message naming what differs, and so is a run whose instances differ
from the journaled ones.

Tables: ``meta(key, value)``, ``instances(idx, repr)``, ``evaluations(candidate, instance,
value, error)`` (value NULL when the evaluation failed, ``error`` says why) and
``decisions(step, n_instances, candidate, reason, by, probability)`` (step 0 = eliminated for
failing). They are plain SQL, so a race can be inspected with any SQLite client.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from typing import Any

__all__ = ["Journal", "read_journal"]

_SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS instances (idx INTEGER PRIMARY KEY, repr TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    candidate INTEGER NOT NULL,
    instance INTEGER NOT NULL,
    value REAL,
    error TEXT,
    PRIMARY KEY (candidate, instance)
);
CREATE TABLE IF NOT EXISTS decisions (
    step INTEGER NOT NULL,
    n_instances INTEGER NOT NULL,
    candidate INTEGER NOT NULL,
    reason TEXT NOT NULL,
    by INTEGER,
    probability REAL,
    PRIMARY KEY (step, candidate)
);
"""


class Journal:
    """One race's journal file. Used by :class:`racer.Race`; not needed by users."""

    def __init__(self, path: Any) -> None:
        try:
            self.path = os.fspath(path)
        except TypeError:
            raise TypeError(f"`storage` must be a file path; got {path!r}") from None
        # isolation_level=None: every statement commits on its own, so each evaluation is
        # durable the moment tell() returns.
        self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ValueError(f"`storage`={self.path!r} is not a racer journal: {exc}") from exc

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def load_seed(self) -> int | None:
        value = self._meta("seed")
        return None if value is None else int(value)

    def claim(self, fingerprint: dict, seed: int) -> None:
        """Mark the journal as this race's, or refuse if another race wrote it."""
        stored = self._meta("fingerprint")
        if stored is None:
            with self._conn:  # one transaction: a journal never holds half a claim
                self._conn.execute("BEGIN")
                self._conn.execute(
                    "INSERT INTO meta VALUES ('schema', ?), ('fingerprint', ?), ('seed', ?)",
                    (_SCHEMA_VERSION, json.dumps(fingerprint, sort_keys=True), str(seed)),
                )
            return
        old = json.loads(stored)
        if old != fingerprint:
            diffs = [k for k in sorted(set(old) | set(fingerprint)) if old.get(k) != fingerprint.get(k)]
            details = "; ".join(
                f"{k}: journal {_clip(old.get(k))} vs now {_clip(fingerprint.get(k))}" for k in diffs
            )
            raise ValueError(
                f"`storage`={self.path!r} holds a different race ({details}); "
                "pass the same candidates, test and options to resume it, or use a new file"
            )

    def load_evaluations(self) -> dict[tuple[int, int], tuple[float, str | None]]:
        rows = self._conn.execute("SELECT candidate, instance, value, error FROM evaluations")
        return {
            (cand, inst): (math.nan if value is None else float(value), error)
            for cand, inst, value, error in rows
        }

    def load_instances(self) -> list[str]:
        rows = self._conn.execute("SELECT idx, repr FROM instances ORDER BY idx").fetchall()
        return [text for _idx, text in rows]

    def record_instances(self, rows: list[tuple[int, str]]) -> None:
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR IGNORE INTO instances VALUES (?, ?)", rows)

    def record_evaluation(self, candidate: int, instance: int, value: float, error: str | None) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?, ?)",
            (candidate, instance, None if math.isnan(value) else value, error),
        )

    def record_decisions(self, step: int, n_instances: int, applied: list) -> None:
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "INSERT OR IGNORE INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (step, n_instances, cand, reason, by, None if math.isnan(prob) else prob)
                    for cand, reason, by, prob in applied
                ],
            )

    def close(self) -> None:
        try:
            self._conn.close()
        except sqlite3.Error:  # pragma: no cover
            pass

    def __del__(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None:
            try:
                conn.close()
            except Exception:  # pragma: no cover
                pass


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def read_journal(path: Any) -> dict:
    """Read a journal's tables as plain Python lists (for inspection and tests).

    Returns ``{"fingerprint": dict, "seed": int, "instances": [repr, ...],
    "evaluations": [(candidate, instance, value, error), ...], "decisions": [(step,
    n_instances, candidate, reason, by, probability), ...]}``.
    """
    conn = sqlite3.connect(os.fspath(path))
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        return {
            "fingerprint": json.loads(meta["fingerprint"]) if "fingerprint" in meta else None,
            "seed": int(meta["seed"]) if "seed" in meta else None,
            "instances": [r[0] for r in conn.execute("SELECT repr FROM instances ORDER BY idx")],
            "evaluations": conn.execute(
                "SELECT candidate, instance, value, error FROM evaluations ORDER BY instance, candidate"
            ).fetchall(),
            "decisions": conn.execute(
                "SELECT * FROM decisions ORDER BY step, candidate"
            ).fetchall(),
        }
    finally:
        conn.close()
