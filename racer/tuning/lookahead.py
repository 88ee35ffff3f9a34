"""Look-ahead runs: runs of a race's next block started while a worker would otherwise idle.

A race is block-synchronous: after the last run of a block comes a test, then the next block.
With ``parallel`` workers and blocks that are not a multiple of ``parallel`` long, the last runs
of every block run while other workers idle (tsp-sa, ``--parallel 2``: racer 1.47x the floor of
the same calls through a bare pool, most of it this barrier). The tuner therefore starts, when
a worker is free and every run of the current block is already submitted, the runs the race
will ask next -- the next ``eachTest`` instances for the configurations alive and proven (a
success, no failure) -- and hands their results to the race when it asks. The race sees the
same values in the same order as without look-ahead (the runner is deterministic given
configuration, instance and seed), so the same seed gives the same elites whatever the timing
(under ``maxExperiments`` ``B``: those of a tuning of ``B - R`` without look-ahead, below,
"Budget").

The same setting also lets idle workers start, within the current block, the next runs of a
configuration that has no success yet before its earlier run answered (:mod:`racer.tuning.dispatch`,
"provisional" runs: told only once the earlier rows answered, discarded after a failure).

**Budget: a fixed reserve.** Every run started counts against ``maxExperiments``
(``budget`` in :func:`racer.tune`), used or not: a user who pays per run paid for a look-ahead
run the race never used, so the runs started never exceed the budget ``B``. Which runs go
unused depends on timing, so that count must never reach a decision of the tuning, or the
same seed would end with other elites from one run to the next. Look-ahead therefore gets a
fixed share of the budget, :func:`reserve` ``R = min(2 x parallel, ceil(B / 20))`` (0 when
no setting lets runs start ahead: ``parallel`` 1, look-ahead off, capping, no journal),
decided from the settings alone (the first session's: "Resume", below). A Dask or Ray
executor, on which nothing runs ahead, keeps the reserve all the same, so that the executor
never changes the result.
Everything the tuning decides -- irace's schedule, where a race stops for lack of budget, what
the last race may spend -- sees the budget ``B - R`` and counts only the runs used, so a
tuning with look-ahead is the tuning of ``B - R`` without it, run for run, whatever the
timing. Look-ahead (and a provisional run) starts a run
only while the runs unused so far plus those started speculatively and not yet settled are
below ``R``, and the runs started plus those in flight are below ``B``; a speculative run the
race uses is an ordinary run of the race, paid from ``B - R``. Hence at most ``(B - R) + R =
B`` runs start. Why this ``R``: every run of ``R`` is lost to the races of every tuning,
while a spent ``R`` costs only wall time (look-ahead stops starting runs for the rest of the
tuning: slower, same result), so ``R`` is small. Look-ahead gives a worker a run only at a
block's tail, so its unused runs grow with ``parallel`` and hardly with the budget (the test
runner of tests/tuning/test_budget_cap.py, budgets of 150 to 1000, no reserve: 1 to 4 unused
runs over a whole tuning on 2 workers, 6 to 13 on 3, 5 to 17 on 4): ``2 x parallel`` pays
for them on 2 workers and for half or more on 3 or 4 (the rest of such a tuning runs without
look-ahead); ``ceil(B / 20)`` keeps a small budget's share at most 5%. The reserve is the tuning's, not each race's: the unused runs of earlier races
(``tuner.state["unused"]``) count. A tuning whose every run costs money can still start with
look-ahead off (``--no-lookahead``, ``lookahead=False``) and race the whole budget. Under
``maxTime`` there is no reserve: an unused run's time is not counted. An unused run is
cancelled if not started, else its process group is killed, and it appears in ``runs.csv``
with status ``speculative-unused`` (the result's ``experiments`` counts the runs the races
used; ``runs.csv`` lists the others).

Resume: every finished look-ahead run is appended to ``<race journal>.lookahead.jsonl``
before the tuner keeps it, so that after ``kill -9`` a resumed race reuses it instead of
running it again: the promise "at most the runs in flight are repeated" holds with look-ahead.
The file also records the runs written to ``runs.csv`` as unused, so a resume does not write
them twice and counts them against the reserve again (:attr:`Lookahead.unused`), so that ``R``
is not exceeded over the whole tuning; only the runs in flight at the kill, made again, are
paid twice (as without look-ahead). ``R`` is sized for the workers of the session that
started the tuning, kept in the journal folder (:func:`reserve_workers`), so that a resume
with another ``parallel`` or look-ahead setting sizes its races alike (it then runs ahead only
within that ``R``, and not at all if it was 0).

Pipelined blocks (``pipelined``, ``--pipelined``): runs ahead by rule, not by idle workers.
Look-ahead above runs ahead when a worker is free and pays from a reserve sized for the
workers, so its answer depends on ``parallel``, and it cannot run on Dask or Ray, whose runs
nothing here can stop. Pipelined blocks instead start, with each block, the next
:data:`racer.tuning.dispatch.PIPELINE_BLOCKS` (2) blocks' runs of every configuration alive
(:func:`racer.tuning.dispatch.pipelined_block`; none during a race's first block, whose test
eliminates most), and a new configuration's later runs of a block without waiting for its
first (provisional, told in row order, SKIPPED after a failure), whatever the workers. Which
runs start is a function of the results alone, so the same seed gives the same elites on 1
or 256 workers, on racer's pool, Dask or Ray, in whatever order the runs finish. Every run
started is charged to ``maxExperiments`` when it starts, used or not
(:meth:`Lookahead.charged_keys` with the race's own cells,
:meth:`racer.tuning.dispatch.RacePlan.charged`), and no run starts beyond it: there is no
reserve, and a run dropped before it started (on racer's pool) is charged all the same (so
the count, and the answer, never depend on timing). Runs of a configuration the test then
eliminates are logged ``speculative-unused`` (on Dask or Ray, with their own result if they
end before the race does); runs of a race's survivors beyond its end are waited for, logged
as runs of that race and handed to the next race, which would otherwise make them again
(:meth:`racer.tuning.dispatch.Dispatcher.carry_survivors`). The plan of each block is
journaled before its runs start, so that a resumed race charges the runs in flight at a kill
once, as the uninterrupted race does, and makes them again. Refused with capping (a capped
run's bound waits for the elites' runs: racer.tuning.run._capping). With
``pipelined_iterations`` the tuner also samples each race's next race at the race's first test
and starts its first block there (:mod:`racer.tuning.next_race`): this class holds those runs
too, in the next race's journal. What it gives and costs is measured in
benchmarks/RESULTS.md, "Pipelined blocks" and "Pipelined iterations".
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import itertools
import json
import os
import time
from typing import Any

from racer.tuning.runner import RunResult

__all__ = ["RESERVE_FILE", "UNUSED", "Lookahead", "reserve", "reserve_workers"]

# runs.csv status of a look-ahead run the race never used.
UNUSED = "speculative-unused"

# Keep this much of a runner's stdout/stderr in the look-ahead journal (the error report of a
# run shows only its last lines; see RunResult.describe).
_KEEP_OUTPUT = 4000

# In a tuning's journal folder: the workers its reserve is sized for (see reserve_workers).
RESERVE_FILE = "lookahead-reserve.json"

_TAGS = itertools.count(1)
# Longest wait, at the end of a race, for its unused runs being stopped (see Lookahead.close).
_CLOSE_WAIT = 10.0


def reserve(budget: int, parallel: int) -> int:
    """Runs of a budget of ``budget`` runs kept for look-ahead's unused runs with ``parallel``
    workers (module docstring, "Budget"): ``min(2 x parallel, ceil(budget / 20))``, 0 with one
    worker. The caller passes ``parallel`` 1 when nothing runs ahead.

    >>> reserve(1000, 4), reserve(150, 4), reserve(150, 2), reserve(150, 1), reserve(10, 8)
    (8, 8, 4, 0, 1)
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"`budget` must be an int >= 0; got {budget!r}")
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ValueError(f"`parallel` must be an int >= 1; got {parallel!r}")
    if parallel == 1:
        return 0
    return min(2 * parallel, -(-budget // 20))


def reserve_workers(journal_dir: str, workers: int, keep: bool = False) -> int:
    """The ``parallel`` a tuning's reserve is sized for (:func:`reserve`): the one of the
    session that started it, read from ``journal_dir``'s :data:`RESERVE_FILE`; else, when the
    folder already holds race journals (a tuning started by a racer without the reserve), 1
    (no reserve, as it ran); else ``workers`` (this session's: ``parallel``, 1 when nothing
    runs ahead), written to the file when ``keep``.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> reserve_workers(folder, 4), reserve_workers(folder, 4, keep=True)
    (4, 4)
    >>> reserve_workers(folder, 1)  # a resume on one worker: the first session's reserve
    4
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"`workers` must be an int >= 1; got {workers!r}")
    path = os.path.join(journal_dir, RESERVE_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            kept = json.loads(text)["parallel"]
        except (ValueError, KeyError, TypeError):
            kept = None
        if isinstance(kept, bool) or not isinstance(kept, int) or kept < 1:
            raise ValueError(f"{path} holds {text[:80]!r}, not {{\"parallel\": <int >= 1>}}: "
                             "write the --parallel the tuning started with there, or start "
                             "the tuning afresh")
        return kept
    if os.path.isdir(journal_dir) and any(n.endswith(".sqlite") for n in os.listdir(journal_dir)):
        return 1
    if keep:
        os.makedirs(journal_dir, exist_ok=True)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"parallel": int(workers)}, f)
        os.replace(path + ".tmp", path)  # whole or absent, even after kill -9
    return workers


@dataclasses.dataclass(eq=False)
class Ahead:
    """One look-ahead run: configuration ``cand`` on ``task``, running (``future``) or done
    (``result``)."""

    cand: Any
    task: Any
    future: cf.Future | None = None
    result: RunResult | None = None
    tag: int = 0


class Lookahead:
    """The look-ahead runs of one race and their journal (see the module docstring).

    ``candidates`` and ``tasks`` are the race's; a journal left by an interrupted session is
    read back so that its finished runs are reused.
    """

    def __init__(self, path: str, candidates: list, tasks: list, runner: Any, on_run: Any,
                 iteration: int, bound: float | None = None, killable: bool = True) -> None:
        self.path = path
        self.runner = runner
        # An unused run on racer's own pool is killed; on a Dask or Ray worker (``killable``
        # False) nothing here can stop it: it is left to finish there.
        self.left_to_finish = not killable
        # Pipelined blocks (module docstring): the runs started by rule, journaled before they
        # start, and the runs logged unused; with the cells the race told, every run charged.
        self.planned: set = set()
        self.discarded: set = set()
        self.carried: set = set()  # survivors' runs logged as runs of the race (carry_survivors)
        self.bound = bound  # boundMax, passed to every run (no look-ahead under capping)
        self.on_run = on_run
        self.iteration = iteration
        self.entries: dict[tuple, Ahead] = {}  # (configuration id, Task) -> run
        self.dying: dict[cf.Future, Ahead] = {}  # no longer needed, being stopped
        self.plan: list | None = None  # the next block's (candidate index, row, key), per block
        self.started = 0
        # Runs of this race started and not used, earlier sessions' included (one "discard"
        # line of the journal each): paid from look-ahead's reserve (module docstring).
        self.unused = 0
        self.row_of = {t: row for row, t in enumerate(tasks)}  # the race's rows
        self._closed = False
        torn = False
        if os.path.exists(path):
            torn = self._read_journal(path, candidates, tasks)
        self._file = open(path, "a", encoding="utf-8")
        if torn:  # end the torn line, so that the next record is a line of its own
            self._file.write("\n")

    def _read_journal(self, path: str, candidates: list, tasks: list) -> bool:
        """Take back the finished runs an interrupted session journaled, less those it
        discarded, and count the discarded ones as unused; True if the last line is torn."""
        by_id = {c.id: c for c in candidates}
        by_task = {(t.index, t.seed): t for t in tasks}
        discarded = []
        torn = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                torn = not line.endswith("\n")
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line torn by kill -9: that run counts as in flight
                if "discard" in rec:
                    discarded.append(tuple(rec["discard"]))
                    continue
                if "carried" in rec:
                    cid, index, seed = rec["carried"]
                    if (index, seed) in by_task:
                        self.carried.add((cid, by_task[(index, seed)]))
                    continue
                if "plan" in rec:
                    self.planned.update((cid, by_task[(index, seed)]) for cid, index, seed
                                        in rec["plan"] if (index, seed) in by_task)
                    continue
                cand, task = by_id.get(rec["c"]), by_task.get((rec["i"], rec["s"]))
                if cand is not None and task is not None:
                    self.entries[(cand.id, task)] = Ahead(cand, task, result=RunResult(**rec["r"]))
        for cid, index, seed in discarded:
            task = by_task.get((index, seed))
            if task is not None:
                self.entries.pop((cid, task), None)
                self.discarded.add((cid, task))
        self.unused = len(discarded)
        return torn

    # ------------------------------------------------------------------ runs

    def running(self) -> list:
        """Futures of look-ahead runs not finished (those being stopped included)."""
        return [e.future for e in self.entries.values() if e.future is not None] + list(self.dying)

    def n_running(self) -> int:
        return sum(e.future is not None for e in self.entries.values()) + len(self.dying)

    def outstanding(self) -> int:
        """Runs started and not yet settled: neither taken by the race nor logged unused
        (running, finished and waiting, being stopped): each may still go unused."""
        return len(self.entries) + len(self.dying)

    def start(self, pool: cf.Executor, cand: Any, task: Any, switches: list) -> None:
        tag = next(_TAGS)
        # A tag lets kill_run stop the run; a runner without kill_run (tests' fakes) or on a
        # Dask or Ray worker (nothing to kill from here) is called without one.
        options: dict = {}
        if not self.left_to_finish and self.bound is not None:
            options = {"tag": tag, "bound": self.bound}
        elif not self.left_to_finish and hasattr(self.runner, "kill_run"):
            options = {"tag": tag}
        fut = pool.submit(self.runner.run, cand.id, task.index, task.seed, task.instance,
                          switches, **options)
        self.entries[(cand.id, task)] = Ahead(cand, task, future=fut, tag=tag)
        self.started += 1

    def start_planned(self, pool: cf.Executor, runs: list, switches_of: Any) -> None:
        """Pipelined blocks: start ``runs`` (``(configuration, task)``, chosen by rule), the
        plan journaled first, so that a resumed race charges the runs in flight at a kill
        as the uninterrupted one does (:meth:`charged_keys`)."""
        runs = [(cand, task) for cand, task in runs if (cand.id, task) not in self.entries]
        if not runs:
            return
        self._write({"plan": [[cand.id, task.index, task.seed] for cand, task in runs]})
        for cand, task in runs:
            self.planned.add((cand.id, task))
            self.start(pool, cand, task, switches_of(cand))

    def mark_carried(self, cand: Any, task: Any) -> None:
        """Journal that the run of ``cand`` on ``task`` was logged as a run of the race, so
        that a resumed session does not log it again."""
        self.carried.add((cand.id, task))
        self._write({"carried": [cand.id, task.index, task.seed]})

    def charged_keys(self) -> set:
        """``(configuration id, task)`` of every run this race started by rule or logged
        unused, earlier sessions' included: with the cells the race told, the runs charged
        under pipelined blocks. A set of cells, not a count of events, so that a run made
        again after a kill is charged once, as in the tuning that was not interrupted."""
        return self.planned | self.discarded

    def take(self, cid: int, task: Any) -> Ahead | None:
        """The look-ahead run of ``(cid, task)``, now the race's, or None."""
        return self.entries.pop((cid, task), None)

    def collect(self, done: set) -> None:
        """Journal the look-ahead runs among ``done`` (before the tuner keeps them), and log
        the stopped ones as unused."""
        for entry in self.entries.values():
            fut = entry.future
            if fut is not None and fut in done:
                entry.result = fut.result()  # a runner never raises; an interrupt does
                entry.future = None
                self._journal(entry)
        for fut in [f for f in self.dying if f in done]:
            entry = self.dying.pop(fut)
            if not fut.cancelled():
                entry.result = fut.result()
                self._log_unused(entry)

    def discard_except(self, keep: set, upto: int, told: Any) -> None:
        """The race asked the block of the keys ``keep``, which ends before row ``upto``: stop
        the look-ahead runs of earlier rows not in it (of configurations eliminated
        meanwhile). Runs of later rows stay (read back from the journal, of the block after
        the one a resumed race asks first); runs the race already holds (``told(cid, task)``:
        used before a resume) are dropped silently."""
        for key in [k for k in self.entries if k not in keep and self.row_of[k[1]] < upto]:
            entry = self.entries.pop(key)
            if entry.future is None and told(*key):
                continue
            self._discard(entry)

    def _discard(self, entry: Ahead) -> None:
        if entry.future is None:
            self._log_unused(entry)
        elif entry.future.cancel():
            pass  # never started: nothing ran, nothing to log
        else:
            # Running: killing frees the worker at once (measured against letting it finish
            # in benchmarks/results/cli_vs_irace.md, "Look-ahead").
            if self.left_to_finish:
                # On a Dask or Ray worker: left to finish there, and logged unused with its
                # result when it ends during the race (collect), else when the race ends.
                self.dying[entry.future] = entry
                return
            kill = getattr(self.runner, "kill_run", None)
            if kill is not None and not entry.future.done():
                kill(entry.tag)
            self.dying[entry.future] = entry

    def _journal(self, entry: Ahead) -> None:
        r = dataclasses.asdict(entry.result)
        r["stdout"], r["stderr"] = r["stdout"][-_KEEP_OUTPUT:], r["stderr"][-_KEEP_OUTPUT:]
        self._write({"c": entry.cand.id, "i": entry.task.index, "s": entry.task.seed, "r": r})

    def _write(self, rec: dict) -> None:
        self._file.write(json.dumps(rec) + "\n")
        self._file.flush()

    def _log_unused(self, entry: Ahead) -> None:
        self.log_unused(entry.cand, entry.task, entry.result, "look-ahead run not used by the race"
                        + (f" ({entry.result.message})" if entry.result.message else ""))

    def log_unused(self, cand: Any, task: Any, result: RunResult, message: str) -> None:
        """A run made and not used (a look-ahead run, or the dispatcher's provisional run
        of a configuration that then failed): logged with status ``speculative-unused``,
        counted in :attr:`unused`, and journaled, so that a resumed session counts it too."""
        self.unused += 1
        self.discarded.add((cand.id, task))
        if self.on_run is not None:
            self.on_run(self.iteration, cand, task,
                        dataclasses.replace(result, status=UNUSED, message=message))
        self._write({"discard": [cand.id, task.index, task.seed]})

    # ------------------------------------------------------------------ end of the race

    def close(self, told: Any = None) -> None:
        """End of the race. ``told(cid, task)`` says whether the race holds that cell (used in
        an earlier session, before a resume): every other run left is stopped and logged as
        unused. ``told=None`` (an interruption): cancel what has not started and keep the
        journal as it is, for the resume. Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if told is None:
                for entry in self.entries.values():
                    if entry.future is not None:
                        entry.future.cancel()
                return
            for key in list(self.entries):
                entry = self.entries.pop(key)
                if entry.future is None and told(entry.cand.id, entry.task):
                    continue
                self._discard(entry)
            # Killed runs end at once; a run on a Dask or Ray worker cannot be killed from
            # here: it is left to finish there, and logged as unused now, without waiting.
            deadline = time.monotonic() + (0.0 if self.left_to_finish else _CLOSE_WAIT)
            self.collect({f for f in self.dying if f.done()})
            while self.dying and time.monotonic() < deadline:
                done, _ = cf.wait(list(self.dying), timeout=max(0.0, deadline - time.monotonic()),
                                  return_when=cf.FIRST_COMPLETED)
                self.collect(done)
            for fut in list(self.dying):
                entry = self.dying.pop(fut)
                entry.result = RunResult("error", None, None, "still running when its race ended "
                                         "(not killed: left to finish on its worker)", [], None,
                                         "", "", 0.0)
                self._log_unused(entry)
        finally:
            self._file.close()
