"""A tuning's run record, written by the Tuner, and an iterated race as data for the report.

**The run record.** The :class:`racer.tuning.tuner.Tuner` records what it decides as it decides
it, in a :class:`RunRecord`: per iteration (:class:`IterationRecord`) the configurations it
raced with their ids, parents and values (typed: str, int, float or None where inactive), the
race's journal, the elites it kept with their means, and the race's instances and runs; the
schedule (:class:`ScheduleRecord`: the budget, the iterations planned, each iteration's
budget); the test phase (:class:`TestRecord`: per tested elite, per test instance, the cost);
the objectives and their directions; why the tuning stopped; on one objective, the
probability that the best is not the best of the final elites (:func:`prob_not_best_of`);
racer's version and the record's schema number. The Tuner writes it as JSON to ``<execDir>/racer-journal/run.json``, whole or
not at all (a temporary file renamed over the old one), when an iteration starts and ends,
when the tuning stops and around the test phase. Only the Tuner writes it; every reader reads
it with :func:`read_record`, which refuses a damaged or foreign file with a
:class:`RecordError` naming it.

The race journals beside it (``iteration-<k>.sqlite``, ``fixed-list.sqlite``,
``test.sqlite``) keep every evaluation; the record says which journal is whose and what was
decided from it, so no reader parses a candidate's ``repr`` or applies a rule of the Tuner
again.

**Reading an execDir.** The figures of iterated racing
(:func:`racer.plot.plot_parameter_frequencies`,
:func:`racer.plot.plot_elite_parallel_coordinates`) and the report of a ``racer`` run
(``racer report EXECDIR``) read an :class:`IteratedRun`, built from where the data lives:

* :func:`read_exec_dir` -- a ``racer --scenario`` (or :func:`racer.tune`) execution directory,
  finished, interrupted or still running: what the Tuner decided from ``run.json``, each race's
  evaluations from its journal;
* :func:`from_iterated_race` -- the result of :class:`racer.adapters.optuna.IteratedRace`
  (each trial's iteration is its user attribute ``racer_iteration``, its parameters and their
  distributions are Optuna's). Read by attribute names, so this module imports no adapter.

**An execDir written before the record existed** (race journals, no ``run.json``) is refused
by :func:`read_exec_dir` with a message naming the folder and saying to run the tuning again
with this racer. Decision: rebuilding what the record holds from such a folder is not cheap
without copying the Tuner's rules -- the configurations' values exist there only as the
``repr`` of each journal's candidates, and the elites of each race only as the Tuner's rule
applied to the race again (the copy of that rule once drifted from the Tuner's). The same
command resumes such a tuning, though: the Tuner replays its journals and writes the record
as it goes.

No matplotlib here: the data can be inspected without the ``plot`` extra.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import numbers
import os
import re
from typing import Any

import numpy as np

from racer.result import RaceResult

__all__ = ["SCHEMA", "JOURNAL_DIR", "RUN_FILE", "RecordError", "CandidateRecord",
           "IterationRecord", "ScheduleRecord", "TestRecord", "PostSelectionRecord", "RunRecord",
           "RunRecorder", "prob_not_best_of",
           "read_record", "write_record", "IteratedRun", "ParameterInfo", "from_iterated_race",
           "read_exec_dir"]

#: The record's layout version: a reader refuses another one.
SCHEMA = 1
#: The folder of an execDir that holds the race journals and the record.
JOURNAL_DIR = "racer-journal"
#: The record's file name in :data:`JOURNAL_DIR`.
RUN_FILE = "run.json"
_ITERATION_FILE = re.compile(r"^iteration-(\d+)\.sqlite$")


class RecordError(ValueError):
    """A run record that cannot be read: missing (an execDir of an older racer), damaged, or
    of another schema."""


# --------------------------------------------------------------------------- the record


@dataclasses.dataclass(frozen=True)
class CandidateRecord:
    """A configuration a race had: its id (from 1), its parent's id (None for a uniform
    sample or an initial configuration) and its values (None where inactive)."""

    id: int
    parent: int | None
    values: dict

    @classmethod
    def of(cls, configuration: Any) -> "CandidateRecord":
        """The record of a tuner's configuration (anything with ``id``, ``parent``, ``values``).

        >>> class Conf:
        ...     id, parent, values = 3, 1, {"x": np.float64(0.5), "n": np.int64(2), "m": None}
        >>> CandidateRecord.of(Conf())
        CandidateRecord(id=3, parent=1, values={'x': 0.5, 'n': 2, 'm': None})
        """
        parent = configuration.parent
        return cls(int(configuration.id), None if parent is None else int(parent),
                   {str(k): _plain(v) for k, v in configuration.values.items()})


@dataclasses.dataclass(frozen=True)
class IterationRecord:
    """One iteration: the race the Tuner ran and the elites it kept.

    ``candidates`` are in the race's column order (the journal's); ``new`` the ids of those
    first raced here; ``budget`` the iteration's budget (irace's per-iteration budget; the
    whole budget for a fixed list). ``elites`` (ids, best first; on several objectives the
    Pareto set in the Tuner's rank order), ``elite_means`` (per elite, its mean of each
    objective over the instances of this race it ran on, ``elite_instances``), ``n_instances``
    (the race's instances), ``n_runs`` (runs it made; results carried forward are not runs)
    and ``stop_reason`` are None until the race has ended."""

    iteration: int
    journal: str | None
    budget: int
    candidates: tuple
    new: tuple
    soft_restart: bool = False
    elites: tuple | None = None
    elite_means: tuple | None = None
    elite_instances: tuple | None = None
    n_instances: int | None = None
    n_runs: int | None = None
    stop_reason: str | None = None

    @property
    def ended(self) -> bool:
        return self.elites is not None


@dataclasses.dataclass(frozen=True)
class ScheduleRecord:
    """The budget and its spread: ``max_experiments`` (0 under ``max_time``, seconds of
    reported run time), the iterations announced at the start, the elites each race keeps
    (``elites_kept``; irace's minNbSurvival, twice that on several objectives), and the
    budgets of the earlier sessions of a tuning continued with a larger one. Each iteration's
    budget is in its :class:`IterationRecord` (:attr:`RunRecord.iteration_budgets`)."""

    max_experiments: int
    max_time: float
    iterations_planned: int
    min_survival: int
    elites_kept: int
    earlier_budgets: tuple = ()


@dataclasses.dataclass(frozen=True)
class TestRecord:
    """The test phase: the elites tested (ids, in the journal's column order), the test
    instances (name and extra words) and their seeds, and ``costs``: per elite, per test
    instance, the cost (on several objectives, the list of each objective's) or None where the
    run failed; None until the test phase has ended."""

    __test__ = False  # not a test class, for pytest, in test modules that import it

    journal: str | None
    elites: tuple
    instances: tuple
    seeds: tuple
    costs: tuple | None = None


@dataclasses.dataclass(frozen=True)
class PostSelectionRecord:
    """The post-selection race (irace 4's ``postselection``), after the last iteration: the
    final elites (``candidates``, ids best first) raced on the ``n_seen`` training instances
    they have results for (reused, not run again) and new ones, on the ``budget`` runs the
    iterations left. ``elites`` (ids, best first: the tuning's answer), ``n_instances``,
    ``n_runs`` and ``stop_reason`` are None until it has ended. ``skipped`` says why it did
    not run (then ``candidates`` are the elites it would have raced, and nothing else is
    set)."""

    journal: str | None
    budget: int
    candidates: tuple
    n_seen: int
    elites: tuple | None = None
    n_instances: int | None = None
    n_runs: int | None = None
    stop_reason: str | None = None
    skipped: str | None = None


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What the Tuner decided in a tuning (see the module docstring).

    ``mode`` is ``"iterated"`` or ``"fixed-list"``; ``directions`` the direction of each
    objective (None for one objective, a cost to minimise) and ``objective_names`` their
    names; ``stop_reason`` and ``final_elites`` are None until the iterations have stopped,
    and ``complete`` is True once the test phase (if any) has ended too. ``postselection``
    is the post-selection race (None when the tuning has none); ``final_elites`` are then its
    elites once it has ended. ``earlier_tests``
    are the test phases of earlier sessions of a tuning continued with a larger budget whose
    journals are kept (``test-earlier-<k>.sqlite``; the Tuner reuses their runs), or the
    journaled test phase of the previous session until this one's starts.
    ``prob_not_best`` is the posterior probability that the first final elite is not the
    best of them (:func:`prob_not_best_of`) and ``prob_not_best_instances`` the number of
    training instances it was computed on; both None on several objectives, before the
    iterations (and the post-selection race) have ended, and in a record of a racer that
    did not state it."""

    schema: int
    racer_version: str
    mode: str
    seed: int
    parameters: tuple
    directions: tuple | None
    objective_names: tuple
    schedule: ScheduleRecord
    iterations: tuple = ()
    experiments: int = 0
    time_used: float = 0.0
    stop_reason: str | None = None
    final_elites: tuple | None = None
    test: TestRecord | None = None
    earlier_tests: tuple = ()
    complete: bool = False
    started_at: str = ""
    written_at: str = ""
    postselection: PostSelectionRecord | None = None
    prob_not_best: float | None = None
    prob_not_best_instances: int | None = None

    @property
    def iteration_budgets(self) -> list:
        return [it.budget for it in self.iterations]

    @property
    def ended_iterations(self) -> list:
        return [it for it in self.iterations if it.ended]

    def to_json(self) -> dict:
        """The record as JSON data (tuples as lists).

        >>> rec = _example_record()
        >>> RunRecord.from_json(json.loads(json.dumps(rec.to_json())), "run.json") == rec
        True
        """
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str) -> "RunRecord":
        """The record of JSON data ``data`` read from ``where`` (named in a refusal)."""
        return _parse_record(_Fields(data, where))


def _plain(value: Any) -> Any:
    """A parameter value or a number as JSON holds it (numpy scalars as Python ones)."""
    if isinstance(value, np.generic):  # before float: np.float64 is one
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"a run record holds str, int, float or None values; got {value!r}")


# --------------------------------------------------------------------------- reading JSON


class _Fields:
    """Typed access to one JSON object of a record, naming the file and the field on refusal."""

    def __init__(self, data: Any, where: str, path: str = "") -> None:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: {path or 'the record'} is not a JSON object")
        self.data, self.where, self.path = data, where, path

    def _bad(self, name: str, what: str) -> RecordError:
        field = f"{self.path}.{name}" if self.path else name
        return RecordError(f"{self.where} is damaged: field {field!r} {what}")

    def get(self, name: str, kinds: tuple, optional: bool = False) -> Any:
        if name not in self.data:
            raise self._bad(name, "is missing")
        value = self.data[name]
        if value is None and optional:
            return None
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise self._bad(name, f"is {value!r}, not of type "
                            + " or ".join(k.__name__ for k in kinds))
        return value

    def int(self, name: str, optional: bool = False) -> int | None:
        return self.get(name, (int,), optional)

    def number(self, name: str) -> float:
        return float(self.get(name, (int, float)))

    def text(self, name: str, optional: bool = False) -> str | None:
        return self.get(name, (str,), optional)

    def items(self, name: str, optional: bool = False) -> list | None:
        return self.get(name, (list,), optional)

    def ints(self, name: str, optional: bool = False) -> tuple | None:
        values = self.items(name, optional)
        if values is None:
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise self._bad(name, f"holds {values!r}, not integers")
        return tuple(values)

    def child(self, name: str, optional: bool = False) -> "_Fields | None":
        value = self.get(name, (dict,), optional)
        return None if value is None else _Fields(value, self.where, self._join(name))

    def children(self, name: str) -> list:
        return [_Fields(v, self.where, f"{self._join(name)}[{k}]")
                for k, v in enumerate(self.items(name))]

    def _join(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name


def _numbers(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cost(value: Any) -> bool:
    """A test cost as recorded: a number, a list of numbers (several objectives) or None."""
    return value is None or _numbers(value) or (
        isinstance(value, list) and all(_numbers(x) for x in value))


def _parse_parameter(f: _Fields) -> ParameterInfo:
    kind = f.text("kind")
    if kind not in ("categorical", "ordinal", "integer", "real"):
        raise f._bad("kind", f"is {kind!r}, not a parameter kind")
    return ParameterInfo(f.text("name"), kind, tuple(f.items("domain")),
                         bool(f.get("log", (bool,))))


def _parse_candidate(f: _Fields) -> CandidateRecord:
    values = f.get("values", (dict,))
    if not all(v is None or isinstance(v, (bool, int, float, str)) for v in values.values()):
        raise f._bad("values", f"holds {values!r}, not str, int, float or null values")
    return CandidateRecord(f.int("id"), f.int("parent", optional=True), dict(values))


def _parse_iteration(f: _Fields) -> IterationRecord:
    elites = f.ints("elites", optional=True)
    means = f.items("elite_means", optional=True)
    if means is not None and not all(isinstance(m, list) and all(_numbers(x) for x in m)
                                     for m in means):
        raise f._bad("elite_means", f"holds {means!r}, not lists of numbers")
    instances = f.ints("elite_instances", optional=True)
    if elites is not None and (means is None or instances is None
                               or not len(elites) == len(means) == len(instances)):
        raise f._bad("elite_means", "does not hold one entry per elite")
    return IterationRecord(
        iteration=f.int("iteration"), journal=f.text("journal", optional=True),
        budget=f.int("budget"),
        candidates=tuple(_parse_candidate(c) for c in f.children("candidates")),
        new=f.ints("new"), soft_restart=bool(f.get("soft_restart", (bool,))), elites=elites,
        elite_means=None if means is None else tuple(tuple(float(x) for x in m) for m in means),
        elite_instances=instances, n_instances=f.int("n_instances", optional=True),
        n_runs=f.int("n_runs", optional=True), stop_reason=f.text("stop_reason", optional=True))


def _parse_schedule(f: _Fields) -> ScheduleRecord:
    earlier = f.items("earlier_budgets")
    if not all(_numbers(b) for b in earlier):
        raise f._bad("earlier_budgets", f"holds {earlier!r}, not numbers")
    return ScheduleRecord(f.int("max_experiments"), f.number("max_time"),
                          f.int("iterations_planned"), f.int("min_survival"),
                          f.int("elites_kept"), tuple(earlier))


def _parse_test(f: _Fields) -> TestRecord:
    elites = f.ints("elites")
    instances = f.items("instances")
    costs = f.items("costs", optional=True)
    if costs is not None and (len(costs) != len(elites) or not all(
            isinstance(row, list) and len(row) == len(instances) and all(map(_cost, row))
            for row in costs)):
        raise f._bad("costs", "does not hold one cost (or null) per elite and test instance")
    return TestRecord(
        journal=f.text("journal", optional=True), elites=elites,
        instances=tuple(str(i) for i in instances), seeds=f.ints("seeds"),
        costs=None if costs is None else tuple(
            tuple(None if c is None else (tuple(float(x) for x in c) if isinstance(c, list)
                                          else float(c)) for c in row) for row in costs))


def _parse_postselection(f: _Fields) -> PostSelectionRecord:
    return PostSelectionRecord(
        journal=f.text("journal", optional=True), budget=f.int("budget"),
        candidates=f.ints("candidates"), n_seen=f.int("n_seen"),
        elites=f.ints("elites", optional=True), n_instances=f.int("n_instances", optional=True),
        n_runs=f.int("n_runs", optional=True), stop_reason=f.text("stop_reason", optional=True),
        skipped=f.text("skipped", optional=True))


def _parse_record(f: _Fields) -> RunRecord:
    schema = f.data.get("schema")
    if schema != SCHEMA:
        version = f.data.get("racer_version", "unknown")
        raise RecordError(f"{f.where} has schema {schema!r} (written by racer {version}); this "
                          f"racer reads schema {SCHEMA}: run the tuning again with this racer")
    directions = f.items("directions", optional=True)
    test = f.child("test", optional=True)
    # Optional: a record written before post-selection existed has none.
    post = f.child("postselection", optional=True) if "postselection" in f.data else None
    return RunRecord(
        schema=schema, racer_version=f.text("racer_version"), mode=f.text("mode"),
        seed=f.int("seed"), parameters=tuple(_parse_parameter(p) for p in f.children("parameters")),
        directions=None if directions is None else tuple(str(d) for d in directions),
        objective_names=tuple(str(n) for n in f.items("objective_names")),
        schedule=_parse_schedule(f.child("schedule")),
        iterations=tuple(_parse_iteration(it) for it in f.children("iterations")),
        experiments=f.int("experiments"), time_used=f.number("time_used"),
        stop_reason=f.text("stop_reason", optional=True),
        final_elites=f.ints("final_elites", optional=True),
        test=None if test is None else _parse_test(test),
        earlier_tests=tuple(_parse_test(t) for t in f.children("earlier_tests")),
        complete=bool(f.get("complete", (bool,))),
        started_at=f.text("started_at"), written_at=f.text("written_at"),
        postselection=None if post is None else _parse_postselection(post),
        **_parse_prob_not_best(f))


def _parse_prob_not_best(f: _Fields) -> dict:
    """The stated probability of not having the best and its instances; absent (a record
    written before racer stated it) reads as None."""
    if "prob_not_best" not in f.data:
        return {}
    prob = f.get("prob_not_best", (int, float), optional=True)
    if prob is not None and not 0.0 <= prob <= 1.0:
        raise f._bad("prob_not_best", f"is {prob!r}, not a probability")
    return {"prob_not_best": None if prob is None else float(prob),
            "prob_not_best_instances": f.int("prob_not_best_instances", optional=True)}


def _record_path(path: Any) -> str:
    """``path`` itself when it names a file, else its ``racer-journal/run.json``."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"`path` must be an execDir or a run record's path (str or "
                        f"os.PathLike); got {path!r}") from None
    return text if os.path.isfile(text) else os.path.join(text, JOURNAL_DIR, RUN_FILE)


def read_record(path: Any) -> RunRecord:
    """The run record of an execDir (or the record file ``path`` itself).

    A missing, unreadable, damaged or foreign record is a :class:`RecordError` naming the
    file.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_record(os.path.join(folder, JOURNAL_DIR, RUN_FILE), _example_record())
    >>> read_record(folder).final_elites
    (2,)
    >>> with open(os.path.join(folder, JOURNAL_DIR, RUN_FILE), "w") as f:
    ...     _ = f.write('{"schema": 1, "seed": 1')
    >>> read_record(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    racer.tuning.record.RecordError: .../run.json is damaged: it is not JSON (...)...
    """
    where = _record_path(path)
    try:
        with open(where, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise RecordError(f"{where} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{where} cannot be read ({exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(f"{where} is damaged: it is not JSON ({exc}); the Tuner writes it "
                          "whole, so it was changed by something else") from None
    return RunRecord.from_json(data, where)


def write_record(path: Any, record: RunRecord) -> None:
    """Write ``record`` to ``path`` whole or not at all: to a temporary file beside it, flushed
    to disk, then renamed over the old one (a kill leaves the old record or the new one)."""
    if not isinstance(record, RunRecord):
        raise TypeError(f"`record` must be a RunRecord; got {type(record).__name__}")
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(record.to_json(), fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- the Tuner's pen


class RunRecorder:
    """The Tuner's pen: builds the :class:`RunRecord` step by step and writes it to ``path``
    after each step (no file when ``path`` is None: the record stays in memory).

    ``previous`` is the record an earlier session of the same tuning left (a resume): while
    the Tuner replays the journaled iterations, each replayed race must leave the elites the
    record says; otherwise the journals and the record disagree and the resume is refused
    with a :class:`RecordError`.
    """

    def __init__(self, path: str | None, header: RunRecord,
                 previous: RunRecord | None = None) -> None:
        self.path = path
        self.previous = previous
        started = previous.started_at if previous is not None else _now()
        # Test phases already journaled: the Tuner sets aside or resumes their journals.
        carried = () if previous is None else previous.earlier_tests + (
            (previous.test,) if previous.test is not None else ())
        self.record = dataclasses.replace(header, started_at=started, earlier_tests=carried)
        self._iterations: list = []

    def _update(self, **changes: Any) -> None:
        self.record = dataclasses.replace(self.record, iterations=tuple(self._iterations),
                                          written_at=_now(), **changes)
        if self.path is not None:
            write_record(self.path, self.record)

    def _recorded(self, iteration: int) -> IterationRecord | None:
        """The previous session's record of ``iteration`` when its race was journaled (a
        record of a race whose journal is gone was not raced: the tuning starts over)."""
        if self.previous is None or self.path is None:
            return None
        folder = os.path.dirname(self.path)
        return next((it for it in self.previous.iterations
                     if it.iteration == iteration and it.journal is not None
                     and os.path.exists(os.path.join(folder, it.journal))), None)

    def _disagree(self, iteration: int, what: str, replayed: Any, recorded: Any) -> RecordError:
        return RecordError(
            f"{self.path}: the resumed tuning's iteration {iteration} {what} {replayed}, but the "
            f"run record says {recorded}: the race journals and the record disagree (a file of "
            "the execDir was changed, or comes from another tuning); start the tuning afresh "
            "or in another execDir")

    def start_iteration(self, iteration: IterationRecord) -> None:
        """An iteration's race is about to start: its configurations are decided. (Whether
        they are those of a journaled race, the race's journal checks when it is opened, and
        says so in the user's words.)"""
        self._iterations.append(iteration)
        self._update()

    def end_iteration(self, experiments: int, time_used: float, **ended: Any) -> None:
        """The current iteration's race has ended: ``ended`` holds the fields
        :class:`IterationRecord` leaves None until then (the elites kept first)."""
        current = dataclasses.replace(self._iterations[-1], **ended)
        recorded = self._recorded(current.iteration)
        if recorded is not None and recorded.ended and recorded.elites != current.elites:
            raise self._disagree(current.iteration, "keeps the elites", list(current.elites),
                                 list(recorded.elites))
        self._iterations[-1] = current
        self._update(experiments=int(experiments), time_used=float(time_used))

    def stop(self, stop_reason: str, final_elites: list, experiments: int,
             time_used: float) -> None:
        """The iterations have stopped: why, and the tuning's answer (ids, best first)."""
        self._update(stop_reason=stop_reason, final_elites=tuple(int(e) for e in final_elites),
                     experiments=int(experiments), time_used=float(time_used))

    def reorder_final(self, final_elites: list) -> None:
        """The final elites (ids, best first) in their final order, as
        :func:`rank_final` gives it."""
        self._update(final_elites=tuple(int(e) for e in final_elites))

    def start_postselection(self, post: PostSelectionRecord) -> None:
        """The post-selection race is about to start (or, ``post.skipped`` set, will not)."""
        self._update(postselection=post)

    def end_postselection(self, experiments: int, time_used: float, **ended: Any) -> None:
        """The post-selection race has ended: ``ended`` holds the fields
        :class:`PostSelectionRecord` leaves None until then; its elites become the tuning's
        final elites. A resumed race must end as the record says."""
        current = dataclasses.replace(self.record.postselection, **ended)
        previous = None if self.previous is None else self.previous.postselection
        if (previous is not None and previous.elites is not None and self.path is not None
                and previous.journal is not None and current.elites != previous.elites
                and os.path.exists(os.path.join(os.path.dirname(self.path), previous.journal))):
            raise RecordError(
                f"{self.path}: the resumed tuning's post-selection race keeps the elites "
                f"{list(current.elites)}, but the run record says {list(previous.elites)}: the "
                "race journals and the record disagree; start the tuning afresh or in another "
                "execDir")
        self._update(postselection=current, final_elites=current.elites,
                     experiments=int(experiments), time_used=float(time_used))

    def state_prob_not_best(self, prob: float | None, n_instances: int) -> None:
        """The iterations (and the post-selection race) have ended: the probability that
        the best is not the best of the final elites, on ``n_instances`` instances
        (:func:`prob_not_best_of`)."""
        self._update(prob_not_best=None if prob is None else float(prob),
                     prob_not_best_instances=int(n_instances))

    def start_test(self, test: TestRecord, earlier: tuple) -> None:
        """The test phase ``test`` is about to run; ``earlier`` are the test phases of
        earlier sessions whose journals are kept."""
        self._update(test=test, earlier_tests=tuple(earlier))

    def end_test(self, costs: list) -> None:
        """The test phase has ended: per tested elite, per test instance, the cost (a list of
        each objective's on several), None where it failed."""
        rows = tuple(tuple(None if c is None else (tuple(float(x) for x in c)
                                                   if isinstance(c, (list, tuple)) else float(c))
                           for c in row) for row in costs)
        self._update(test=dataclasses.replace(self.record.test, costs=rows))

    def complete(self, time_used: float) -> None:
        """The tuning is over (iterations and test phase)."""
        self._update(complete=True, time_used=float(time_used))


def prob_not_best_of(elites: list, cache: dict, seed: int) -> tuple[float | None, int]:
    """``(probability, instances)``: the posterior probability that ``elites[0]`` (the
    tuning's best) does not have the lowest expected cost of the final ``elites``, and the
    number of training instances it rests on.

    The instances are those on which every elite has a cost (``cache``: the Tuner's
    ``{(configuration id, task): (cost, failure message)}``; a failed run counts as not
    run), in task order; the probability is :func:`racer.stats.prob_not_best` of the elites'
    costs there (the Bayesian bootstrap over the instances, 4,000 draws), with the tuning's
    ``seed`` (``default_rng([seed, 7])``: the same seed, the same number). None with fewer
    than two such instances, 0.0 with one elite.

    >>> from racer.tuning.tuner import Configuration, Task
    >>> from racer.tuning.instances import Instance
    >>> a, b = Configuration(1, {}), Configuration(2, {})
    >>> tasks = [Task(k + 1, Instance(f"i{k}"), k) for k in range(4)]
    >>> cache = {(1, t): (1.0 + k, None) for k, t in enumerate(tasks)}
    >>> cache.update({(2, t): (1.5 + k, None) for k, t in enumerate(tasks[:3])})
    >>> prob_not_best_of([a, b], cache, seed=1)   # b is worse on the 3 instances both ran
    (0.0, 3)
    >>> prob_not_best_of([a], cache, seed=1)
    (0.0, 4)
    """
    from racer.stats.selection import prob_not_best

    costs = common_costs(elites, cache)
    if not len(costs):
        return (0.0 if len(elites) == 1 else None), 0
    common = costs.shape[0]
    rng = np.random.default_rng([int(seed), 7])
    return prob_not_best(costs, 0, maximize=False, random_state=rng), common


def common_costs(elites: list, cache: dict) -> np.ndarray:
    """The ``elites``' costs (instances x elites, in task order) on the training instances
    on which every one of them has a successful, finite cost (``cache``: the Tuner's
    ``{(configuration id, task): (cost, failure message)}``); no rows when there are none."""
    runs = [{task: cost for (cid, task), (cost, message) in cache.items()
             if cid == e.id and message is None and math.isfinite(cost)} for e in elites]
    common = sorted(set.intersection(*(set(r) for r in runs)) if runs else set(),
                    key=lambda t: (t.index, t.seed))
    return np.array([[r[t] for r in runs] for t in common], dtype=np.float64).reshape(
        len(common), len(elites))


def rank_final(elites: list, cache: dict) -> list:
    """The final ``elites`` (best first as the last race ranked them) in the tuning's final
    order: by their mean cost over the training instances all of them ran
    (:func:`common_costs`), the race's order breaking ties; as given with fewer than two
    elites or no such instance.

    The last race ranks its survivors on its own rows only: an elitist race cut short by the
    budget ranks elites that ran five instances on the three it reached. The final answer
    uses every instance the elites share, the instances :func:`prob_not_best_of` states its
    probability on, so that ``best`` is always the one that statement is about. Measured on
    the ground-truth pilot (benchmarks/ground_truth.py; benchmarks/RESULTS.md).

    >>> from racer.tuning.tuner import Configuration, Task
    >>> from racer.tuning.instances import Instance
    >>> a, b, c = Configuration(1, {}), Configuration(2, {}), Configuration(3, {})
    >>> tasks = [Task(k + 1, Instance(f"i{k}"), k) for k in range(4)]
    >>> cache = {(1, t): (v, None) for t, v in zip(tasks, (1.0, 1.0, 9.0, 9.0))}
    >>> cache.update({(2, t): (v, None) for t, v in zip(tasks, (2.0, 2.0, 2.0, 2.0))})
    >>> cache.update({(3, t): (v, None) for t, v in zip(tasks[:2], (0.5, 0.5))})
    >>> [e.id for e in rank_final([a, b, c], cache)]  # the first two instances are shared
    [3, 1, 2]
    >>> [e.id for e in rank_final([a, b], cache)]     # all four are
    [2, 1]
    """
    if len(elites) < 2:
        return list(elites)
    costs = common_costs(elites, cache)
    if not len(costs):
        return list(elites)
    means = costs.mean(axis=0)
    return [elites[j] for j in sorted(range(len(elites)), key=lambda j: (means[j], j))]


def _example_record() -> RunRecord:
    """A small record of one iteration (for the examples)."""
    params = (ParameterInfo("x", "real", (0.0, 1.0)),)
    cands = (CandidateRecord(1, None, {"x": 0.25}), CandidateRecord(2, None, {"x": 0.5}))
    it = IterationRecord(1, "iteration-1.sqlite", 20, cands, (1, 2), False, (2,), ((0.5,),),
                         (5,), 5, 10, "min_survivors")
    schedule = ScheduleRecord(20, 0.0, 1, 1, 1)
    return RunRecord(schema=SCHEMA, racer_version="0", mode="iterated", seed=7,
                     parameters=params, directions=None, objective_names=(), schedule=schedule,
                     iterations=(it,), experiments=10, stop_reason="budget exhausted",
                     final_elites=(2,), complete=True, started_at="t0", written_at="t1")


@dataclasses.dataclass(frozen=True)
class ParameterInfo:
    """One tuned parameter: ``kind`` is ``"categorical"``, ``"ordinal"``, ``"integer"`` or
    ``"real"``; ``domain`` the levels (categorical, ordinal) or ``(lower, upper)``."""

    name: str
    kind: str
    domain: tuple
    log: bool = False

    @property
    def numeric(self) -> bool:
        return self.kind in ("integer", "real")


@dataclasses.dataclass
class IteratedRun:
    """The configurations, races and elites of an iterated race.

    Attributes
    ----------
    parameters : list of ParameterInfo
    configurations : dict
        Configuration id -> parameter values (None where a parameter is inactive).
    iteration_of : dict
        Configuration id -> the iteration that sampled it (1 for the first race's).
    elites : dict
        Iteration -> ids of the elites its race kept, best first.
    races : list of (iteration, label, RaceResult)
        The races in order; ``label`` names the journal (or ``"race k"``). Candidates of a
        CLI race are :class:`racer.storage.Repr` texts, of an Optuna one trial numbers.
    candidate_ids : list of list of int
        For each race, the configuration id of each of its candidates (column order).
    final_elites : list of int
        The tuning's answer, best first.
    test : dict or None
        The test phase: ``{"instances": [...], "costs": {id: [cost or None, ...]}}``; on
        several objectives ``costs`` holds the first one and ``"objective_costs"``
        ``{id: [[each objective's cost] or None, ...]}`` every one (None where a run failed).
    maximize : bool
    objectives : dict or None
        A tuning on several objectives (scenario option ``objectives``):
        ``{"names": [...], "directions": [...]}``; None for one objective.
    training_means : dict
        Several objectives: final elite id -> its mean of each objective on the training
        instances of the last race, as the Tuner recorded it (the last race's elites' means
        when the run has not finished).
    info : dict
        What else is known (``budget``, ``seed``, ``iterations_planned``...; once the tuning
        is complete ``stop_reason`` and ``experiments``, until then ``runs_logged``).
    source : str
    """

    parameters: list
    configurations: dict
    iteration_of: dict
    elites: dict
    races: list
    candidate_ids: list
    final_elites: list
    test: dict | None = None
    maximize: bool = False
    info: dict = dataclasses.field(default_factory=dict)
    source: str = ""
    objectives: dict | None = None
    training_means: dict = dataclasses.field(default_factory=dict)

    @property
    def n_iterations(self) -> int:
        return max(self.iteration_of.values(), default=0)

    def test_means(self, config_id: int) -> list | None:
        """Each objective's mean over the test instances ``config_id`` ran on without a failure
        (those of test.csv), or None: not tested, or no successful test run. Several
        objectives only (one objective: ``test["costs"]``).

        >>> run = IteratedRun(parameters=[], configurations={1: {}}, iteration_of={1: 1},
        ...                   elites={1: [1]}, races=[], candidate_ids=[], final_elites=[1],
        ...                   test={"instances": ["a", "b", "c"], "costs": {1: [1.0, None, 3.0]},
        ...                         "objective_costs": {1: [[1.0, 10.0], None, [3.0, 30.0]]}},
        ...                   objectives={"names": ["len", "steps"],
        ...                               "directions": ["minimize", "minimize"]})
        >>> run.test_means(1)
        [2.0, 20.0]
        """
        if self.objectives is None:
            raise ValueError("`test_means` is for a tuning on several objectives; this run has one")
        rows = [c for c in ((self.test or {}).get("objective_costs") or {}).get(config_id, [])
                if c is not None]
        return [float(x) for x in np.mean(np.asarray(rows, dtype=float), axis=0)] if rows else None

    def training_costs(self, config_id: int) -> dict:
        """The scores of configuration ``config_id`` on the training instances it was raced on.

        Instance label (its ``repr``, as a journal stores it) -> score, or None where the
        evaluation failed; each instance once, in the order first raced. An elite's later races
        re-tell its earlier results from a cache (the CLI, :class:`IteratedRace`), so the
        union over :attr:`races` is every instance it ran on, once: for a CLI run, its rows of
        ``runs.csv`` outside the test phase.

        >>> from racer import race
        >>> res = race(lambda c, i: c * i, [1.0, 2.0], range(6), progress=False, random_state=0)
        >>> run = IteratedRun(parameters=[], configurations={7: {}, 8: {}}, iteration_of={7: 1, 8: 1},
        ...                   elites={1: [7]}, races=[(1, "race 1", res)],
        ...                   candidate_ids=[[7, 8]], final_elites=[7])
        >>> run.training_costs(7)
        {'0': 0.0, '1': 1.0, '2': 2.0, '3': 3.0, '4': 4.0}
        """
        if config_id not in self.configurations:
            raise ValueError(f"`config_id`={config_id!r} is not a configuration of the run "
                             f"({len(self.configurations)} configurations)")
        costs: dict = {}
        for (_it, _label, result), ids in zip(self.races, self.candidate_ids):
            if config_id not in ids:
                continue
            col = ids.index(config_id)
            # A failure's score may be a substitute (on_error="worst"), not a cost: None.
            failed = {int(r) for c, r, _msg in result.failures if c == col}
            for row in range(result.n_instances):
                key = repr(result.instances[row])
                value = float(result.scores[row, col])
                if key in costs or not (row in failed or math.isfinite(value)):
                    continue  # seen in an earlier race, or not evaluated (eliminated before)
                costs[key] = None if row in failed else value
        return costs

    def __repr__(self) -> str:
        return (f"IteratedRun({len(self.configurations)} configurations, {self.n_iterations} "
                f"iterations, {len(self.races)} races, final elites {self.final_elites})")


# --------------------------------------------------------------------------- reading an execDir


def _exec_dir_of(path: Any) -> tuple[str, str]:
    """Validate ``path``: a folder that holds a tuning. Returns it and its journal folder."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"`path` must be a folder path (str or os.PathLike); got {path!r}") from None
    if not os.path.isdir(text):
        raise NotADirectoryError(f"`path`={text!r} is not a folder (a racer execDir)")
    jdir = os.path.join(text, JOURNAL_DIR)
    names = os.listdir(jdir) if os.path.isdir(jdir) else []
    if RUN_FILE not in names and not any(_is_journal(n) for n in names):
        raise ValueError(f"`path`={text!r}: no {JOURNAL_DIR}/ folder with a run record or race "
                         "journals: not a racer execDir, or no race has started there yet")
    return text, jdir


def _is_journal(name: str) -> bool:
    return bool(_ITERATION_FILE.match(name)) or name in ("fixed-list.sqlite", "test.sqlite")


def _record_of(text: str, jdir: str) -> RunRecord:
    """The execDir's record; an execDir of a racer older than the record is refused."""
    if not os.path.exists(os.path.join(jdir, RUN_FILE)):
        raise RecordError(
            f"`path`={text!r} was written by a racer older than the run record ({JOURNAL_DIR}/ "
            f"holds race journals but no {RUN_FILE}), which this racer cannot read: run the "
            "tuning again with this racer version (the same command resumes it from its "
            "journals and writes the record)")
    return read_record(os.path.join(jdir, RUN_FILE))


def _race_of(iteration: IterationRecord, jdir: str) -> RaceResult | None:
    """The race of ``iteration`` read from its journal; None for a race not started yet (its
    journal not created or not claimed, or without an evaluation)."""
    from racer.storage import read_journal, result_from_journal

    where = os.path.join(jdir, iteration.journal)
    try:
        data = read_journal(where)
        if data["fingerprint"] is None:
            raise ValueError("the race has not claimed it")
        if len(data["fingerprint"]["candidates"]) != len(iteration.candidates):
            raise RecordError(f"{where} holds {len(data['fingerprint']['candidates'])} "
                              f"candidates where the run record says iteration "
                              f"{iteration.iteration} raced {len(iteration.candidates)}: the "
                              "journal and the record disagree")
        return result_from_journal(data)
    except (FileNotFoundError, ValueError) as exc:
        if iteration.ended or isinstance(exc, RecordError):
            raise RecordError(f"{where}: the journal of iteration {iteration.iteration}, which "
                              f"the run record says ended, cannot be read ({exc})") from None
        return None


def _races(record: RunRecord, jdir: str) -> tuple[list, list]:
    """Each journaled race (iteration, journal name, result) and its candidates' ids."""
    races, candidate_ids = [], []
    for it in record.iterations:
        result = None if it.journal is None else _race_of(it, jdir)
        if result is not None:
            races.append((it.iteration, it.journal, result))
            candidate_ids.append([c.id for c in it.candidates])
    return races, candidate_ids


def _configurations(record: RunRecord) -> tuple[dict, dict]:
    """Configuration id -> values, and id -> the iteration that sampled it."""
    configurations: dict = {}
    iteration_of: dict = {}
    for it in record.iterations:
        for c in it.candidates:
            configurations.setdefault(c.id, dict(c.values))
        for cid in it.new:
            iteration_of.setdefault(cid, it.iteration)
    return configurations, iteration_of


def _test_of(record: RunRecord) -> dict | None:
    """The test phase as :attr:`IteratedRun.test` holds it (None until it has ended)."""
    test = record.test
    if test is None or test.costs is None:
        return None
    if record.directions is None:
        return {"instances": list(test.instances),
                "costs": {cid: list(row) for cid, row in zip(test.elites, test.costs)}}
    return {"instances": list(test.instances),
            "costs": {cid: [None if c is None else c[0] for c in row]
                      for cid, row in zip(test.elites, test.costs)},
            "objective_costs": {cid: [None if c is None else list(c) for c in row]
                                for cid, row in zip(test.elites, test.costs)}}


def _runs_logged(text: str) -> int | None:
    """Rows of runs.csv that are runs of the races (None without runs.csv)."""
    import csv

    path = os.path.join(text, "runs.csv")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        # Unused look-ahead runs (status speculative-unused) were not runs of the races.
        return sum(1 for r in csv.DictReader(fh) if r.get("status") != "speculative-unused")


def _info(record: RunRecord, text: str) -> dict:
    """What :attr:`IteratedRun.info` says: the schedule and seed; once the tuning is complete
    why it stopped and the runs it made, until then the runs logged so far."""
    schedule = record.schedule
    info = {"iterations": len(record.ended_iterations),
            "iterations_planned": schedule.iterations_planned,
            "budget": schedule.max_experiments, "max_time": schedule.max_time,
            "seed": record.seed, "time_used": record.time_used}
    if record.complete:
        info.update(stop_reason=record.stop_reason, experiments=record.experiments)
    else:
        logged = _runs_logged(text)
        if logged is not None:
            info["runs_logged"] = logged
    return info


def _run_of(record: RunRecord, races: list, candidate_ids: list, source: str,
            info: dict) -> IteratedRun:
    """Assemble the :class:`IteratedRun` of ``record`` and its races."""
    configurations, iteration_of = _configurations(record)
    ended = record.ended_iterations
    last = ended[-1] if ended else None
    final = (list(record.final_elites) if record.final_elites is not None
             else list(last.elites) if last is not None else [])
    objectives, training_means = None, {}
    if record.directions is not None:
        objectives = {"names": list(record.objective_names),
                      "directions": list(record.directions)}
        # The final elites' means on the last race's instances, as the Tuner recorded them.
        means = dict(zip(last.elites, last.elite_means)) if last is not None else {}
        training_means = {cid: list(means[cid]) for cid in final if cid in means}
    return IteratedRun(
        parameters=list(record.parameters), configurations=configurations,
        iteration_of=iteration_of, elites={it.iteration: list(it.elites) for it in ended},
        races=races, candidate_ids=candidate_ids, final_elites=final, test=_test_of(record),
        maximize=races[-1][2].maximize if races else False, info=info, source=source,
        objectives=objectives, training_means=training_means)


def read_exec_dir(path: Any) -> IteratedRun:
    """Read a ``racer --scenario`` execution directory (finished, interrupted or running).

    What the Tuner decided comes from its run record (:func:`read_record`), each race's
    evaluations from its journal. An execDir of a racer older than the record is refused
    (see the module docstring).

    >>> import os, tempfile
    >>> read_exec_dir(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `path`=...: no racer-journal/ folder with a run record or race journals: not a racer execDir...
    """
    text, jdir = _exec_dir_of(path)
    record = _record_of(text, jdir)
    races, candidate_ids = _races(record, jdir)
    return _run_of(record, races, candidate_ids, text, _info(record, text))


# --------------------------------------------------------------------------- Optuna


def _parameter_from_distribution(name: str, dist: Any) -> ParameterInfo:
    kind = type(dist).__name__
    if kind == "CategoricalDistribution":
        return ParameterInfo(name, "categorical", tuple(dist.choices))
    log = bool(getattr(dist, "log", False))
    if kind in ("IntDistribution", "IntUniformDistribution", "IntLogUniformDistribution"):
        return ParameterInfo(name, "integer", (dist.low, dist.high), log)
    return ParameterInfo(name, "real", (float(dist.low), float(dist.high)), log)


def from_iterated_race(result: Any) -> IteratedRun:
    """The :class:`IteratedRun` of a :class:`racer.adapters.optuna.IteratedRace` result.

    Configurations are the study's trials sampled by the iterated race (the answer trial it
    adds at the end is left out); the elites of each race are its first ``len(result.elites)``
    survivors.
    """
    study = getattr(result, "study", None)
    races_in = getattr(result, "races", None)
    if study is None or races_in is None or not hasattr(result, "elite_trial_numbers"):
        raise TypeError(f"`result` must be an IteratedRaceResult (racer.adapters.optuna); got "
                        f"{type(result).__name__}")
    parameters: dict = {}
    configurations: dict = {}
    iteration_of: dict = {}
    for t in study.get_trials(deepcopy=False):
        if "racer_answer_of" in t.user_attrs or "racer_iteration" not in t.user_attrs:
            continue
        configurations[t.number] = dict(t.params)
        iteration_of[t.number] = int(t.user_attrs["racer_iteration"])
        for name, dist in t.distributions.items():
            parameters.setdefault(name, _parameter_from_distribution(name, dist))
    for values in configurations.values():
        for name in parameters:
            values.setdefault(name, None)
    n_keep = max(1, len(result.elite_trial_numbers))
    # Races of this call only; a resumed run's earlier iterations are not in `races`.
    first = int(result.n_iterations) - len(races_in) + 1
    races, ids, elites = [], [], {}
    for k, race_result in enumerate(races_in):
        iteration = first + k
        if not isinstance(race_result, RaceResult):
            raise TypeError(f"`result.races[{k}]` is not a RaceResult")
        cids = [int(c) for c in race_result.candidates]
        races.append((iteration, f"race {iteration}", race_result))
        ids.append(cids)
        elites[iteration] = [cids[int(i)] for i in race_result.survivor_indices[:n_keep]]
    maximize = races[0][2].maximize if races else False
    return IteratedRun(parameters=list(parameters.values()), configurations=configurations,
                       iteration_of=iteration_of, elites=elites, races=races, candidate_ids=ids,
                       final_elites=[int(n) for n in result.elite_trial_numbers],
                       maximize=maximize, info={"n_evaluations": result.n_evaluations},
                       source="optuna study " + str(getattr(study, "study_name", "")))


def as_iterated_run(run: Any) -> IteratedRun:
    """An :class:`IteratedRun`, an execDir path or an IteratedRaceResult, as an IteratedRun."""
    if isinstance(run, IteratedRun):
        return run
    if isinstance(run, (str, os.PathLike)):
        return read_exec_dir(run)
    if hasattr(run, "study") and hasattr(run, "races"):
        return from_iterated_race(run)
    raise TypeError(f"`run` must be an IteratedRun, a racer execDir path or an IteratedRaceResult; "
                    f"got {type(run).__name__}")


def normalized(param: ParameterInfo, value: Any) -> float:
    """``value`` on [0, 1] along the parameter's domain (log scale for log parameters; levels
    evenly spaced); NaN for None (inactive) or a value outside the domain's levels."""
    if value is None:
        return math.nan
    if not param.numeric:
        levels = [str(v) for v in param.domain]
        if str(value) not in levels:
            return math.nan
        return levels.index(str(value)) / max(len(levels) - 1, 1)
    lo, hi = float(param.domain[0]), float(param.domain[1])
    v = float(value)
    if param.log and lo > 0 and v > 0:
        lo, hi, v = math.log(lo), math.log(hi), math.log(v)
    return 0.5 if hi == lo else (v - lo) / (hi - lo)
