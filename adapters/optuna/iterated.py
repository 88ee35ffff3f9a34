"""Iterated racing with an Optuna sampler as the proposal model.

:class:`IteratedRace` runs irace's loop (sample candidates, race them with the elites,
refocus the sampler on the survivors) with any Optuna sampler as the proposal model, on the
user's study (written through :class:`_StudyMirror`, resumable after a crash); it returns an
:class:`IteratedRaceResult`.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from racer._validation import (
    check_bool,
    check_int,
    check_option,
    describe,
    seed_from_random_state,
)
from racer.adapters.optuna._common import (
    ANSWER_ATTR,
    ITERATION_ATTR,
    N_INSTANCES_ATTR,
    SCORES_ATTR,
    STATE_ATTR,
    check_instances,
    single_direction,
)
from racer.adapters.optuna._study_tuner import (
    PARAMS_ATTR,
    StudyRunner,
    StudySampler,
    schedule_space,
)
from racer.execution import check_timeout, effective_n_jobs

__all__ = ["IteratedRace", "IteratedRaceResult"]

# The layout of the study user attribute STATE_ATTR (2: racer's shared Tuner).
_STATE_VERSION = 2
# on_error, racer's one failure vocabulary (docs/conventions.md) -> the Tuner's error policy.
_ERROR_POLICY = {"raise": "stop", "eliminate": "reject", "worst": "worst"}


# --------------------------------------------------------------------------------------------
# Iterated racing with an Optuna sampler as the proposal model
# --------------------------------------------------------------------------------------------


# Seconds between two writes of the evaluations of a race to a persistent storage (see
# _StudyMirror): a crash loses at most this much evaluating, and a block that takes longer is
# written as soon as it ends, as before.
_FLUSH_SECONDS = 1.0


class _StudyMirror:
    """The study as the driver sees it: Optuna works in memory, the storage gets the result.

    Why: Optuna's RDB storage costs a database round trip per call, and a sampler
    re-reads every RUNNING trial on every ``suggest_*``. An iterated race keeps a batch of
    trials RUNNING for a whole race and writes their scores after every evaluation, so at
    budget 500 a ``sqlite:///`` study took 17-110x the in-memory time. Here the sampler, ask and
    tell run on ``work``, an in-memory copy of the study (same trials, same numbers, the
    user's sampler), and the user's storage receives the same content through Optuna's
    storage interface: a new trial in one call (parameters, attributes, RUNNING) as soon as
    it is sampled, its score record at most every ``_FLUSH_SECONDS`` and at the end of its
    race, its final attributes, step and state when it is told. At the end of ``run()`` the
    study holds exactly what the direct writes left (tested against an in-memory study).

    With an in-memory study there is nothing to save: ``work`` is the study itself.
    """

    def __init__(self, study: optuna.Study) -> None:
        self.study = study
        # Optuna's storage interface (create_new_trial, set_trial_*) is public; the study's
        # handle on its storage is not, and there is no other way to reach it from a Study.
        self._storage = study._storage
        self.direct = isinstance(self._storage, optuna.storages.InMemoryStorage)
        self._dirty: set[int] = set()
        self._study_attrs: dict[str, Any] = {}
        self._last_flush = time.monotonic()
        if self.direct:
            self.work = study
            return
        self._study_id = self._storage.get_study_id_from_name(study.study_name)
        memory = optuna.storages.InMemoryStorage()
        # Quietly: Optuna logs every new study ("A new study created in memory..."), and this
        # one is not the user's.
        verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            self._work_study_id = memory.create_new_study(list(study.directions),
                                                          study.study_name)
        finally:
            optuna.logging.set_verbosity(verbosity)
        self.work = optuna.Study(study.study_name, memory, sampler=study.sampler,
                                 pruner=study.pruner)
        self._work_storage = memory
        self._stored: dict[int, FrozenTrial] = {}  # number -> what the storage holds
        self._stored_id: dict[int, int] = {}
        self._work_id: dict[int, int] = {}
        for t in study.get_trials(deepcopy=False):
            self._work_id[t.number] = memory.create_new_trial(self._work_study_id, template_trial=t)
            self._stored[t.number] = t
            self._stored_id[t.number] = t._trial_id
        # Some samplers keep state in the study's system attributes: theirs go both ways.
        self._system_attrs = dict(self._storage.get_study_system_attrs(self._study_id))
        for key, value in self._system_attrs.items():
            memory.set_study_system_attr(self._work_study_id, key, value)

    def trial(self, number: int) -> optuna.Trial:
        """The working ``optuna.Trial`` of trial ``number`` (one left RUNNING by a crash)."""
        if self.direct:
            trial_id = next(t._trial_id for t in self.study.get_trials(deepcopy=False)
                            if t.number == number)
            return optuna.trial.Trial(self.study, trial_id)
        return optuna.trial.Trial(self.work, self._work_id[number])

    def sampled(self, trial: optuna.Trial) -> None:
        """Store a trial ``work.ask()`` just created (or took from the queue)."""
        if not self.direct:
            self._work_id[trial.number] = trial._trial_id
            self.sync(trial.number)

    def changed(self, number: int) -> None:
        """Trial ``number``'s attributes changed: stored at the next flush."""
        self._dirty.add(number)

    def set_study_attr(self, key: str, value: Any) -> None:
        if self.direct:
            self.study.set_user_attr(key, value)
        else:
            self._study_attrs[key] = value

    def flush(self, *, due_only: bool = False) -> None:
        """Store what changed; with ``due_only``, only if ``_FLUSH_SECONDS`` have passed."""
        if self.direct or (due_only and time.monotonic() - self._last_flush < _FLUSH_SECONDS):
            return
        for number in sorted(self._dirty):
            self.sync(number)
        self._dirty.clear()
        for key, value in self._study_attrs.items():
            self.study.set_user_attr(key, value)
        self._study_attrs.clear()
        work_attrs = self._work_storage.get_study_system_attrs(self._work_study_id)
        for key, value in work_attrs.items():
            if key not in self._system_attrs or self._system_attrs[key] != value:
                self._storage.set_study_system_attr(self._study_id, key, copy.deepcopy(value))
                self._system_attrs[key] = copy.deepcopy(value)
        self._last_flush = time.monotonic()
        if not due_only:
            # Trial numbers are given by the storage in creation order: they match `work`'s
            # only if nothing else adds trials meanwhile. Checked once per iteration (a read
            # of the study's finished trials, cached by Optuna).
            stored = {t.number: t._trial_id for t in self.study.get_trials(deepcopy=False)}
            wrong = [n for n, tid in self._stored_id.items() if stored.get(n) != tid]
            if wrong or len(stored) != len(self._stored_id):
                raise RuntimeError(
                    "another process added trials to the study while IteratedRace ran, so "
                    "the study's trial numbers no longer match the race's; give each "
                    "IteratedRace a study of its own"
                )

    def sync(self, number: int) -> None:
        """Write what trial ``number`` gained in ``work`` since it was last stored."""
        if self.direct:
            return
        self._dirty.discard(number)
        # A copy: an optuna.Trial edits its cached FrozenTrial, the storage's own, in place.
        now = copy.deepcopy(self._work_storage.get_trial(self._work_id[number]))
        storage = self._storage
        old = self._stored.get(number)
        if old is None:
            # Numbered by the storage in creation order, as in `work` (checked in flush()).
            self._stored_id[number] = storage.create_new_trial(self._study_id, template_trial=now)
            self._stored[number] = now
            return
        trial_id = self._stored_id[number]
        if now.state != old.state and not now.state.is_finished():
            storage.set_trial_state_values(trial_id, now.state)  # a queued trial taken
        for name, value in now.params.items():
            if name not in old.params:
                dist = now.distributions[name]
                storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
        for key, value in now.user_attrs.items():
            if key not in old.user_attrs or old.user_attrs[key] != value:
                storage.set_trial_user_attr(trial_id, key, value)
        for key, value in now.system_attrs.items():
            if key not in old.system_attrs or old.system_attrs[key] != value:
                storage.set_trial_system_attr(trial_id, key, value)
        for step, value in now.intermediate_values.items():
            if old.intermediate_values.get(step, math.nan) != value:
                storage.set_trial_intermediate_value(trial_id, step, value)
        if now.state != old.state and now.state.is_finished():
            storage.set_trial_state_values(trial_id, now.state, now.values)
        self._stored[number] = now


class _SqliteWal:
    """SQLite in WAL mode with ``synchronous=NORMAL`` for the duration of a run.

    SQLite's default (rollback journal, ``synchronous=FULL``) syncs the disk at every commit,
    5-8 ms here, and Optuna commits every storage call. WAL with NORMAL is what racer's own
    journal uses (racer/storage.py): durable against a crash of the process (what resuming is
    for), only an OS crash or power loss can drop the last transactions, never corrupt the
    file. The file's journal mode is put back when the run ends, so it is left as Optuna
    made it. Only for an ``RDBStorage`` on SQLite that IteratedRace opened itself or was
    given as ``storage=``.
    """

    def __init__(self, storage: Any) -> None:
        self._engine = storage.engine
        self._previous = None

    @staticmethod
    def _pragmas(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    def __enter__(self) -> _SqliteWal:
        import sqlalchemy

        with self._engine.connect() as conn:
            self._previous = str(conn.exec_driver_sql("PRAGMA journal_mode").scalar()).lower()
        sqlalchemy.event.listen(self._engine, "connect", self._pragmas)
        self._engine.dispose()  # pooled connections were opened without the pragmas
        return self

    def __exit__(self, *exc) -> None:
        import sqlalchemy

        sqlalchemy.event.remove(self._engine, "connect", self._pragmas)
        self._engine.dispose()
        if self._previous and self._previous != "wal":
            try:
                with self._engine.connect() as conn:
                    conn.exec_driver_sql(f"PRAGMA journal_mode={self._previous}")
            except Exception:  # noqa: BLE001 - another reader holds it: it stays in WAL mode
                pass


def _sqlite_rdb(storage: Any) -> Any:
    """``storage`` as an RDBStorage when it is a SQLite file (a ``sqlite:`` URL or an
    RDBStorage on SQLite), else None. An in-memory SQLite database is left alone: it has no
    disk to wait for, and closing its pooled connection (``_SqliteWal``) would drop it."""
    if isinstance(storage, str) and storage.startswith("sqlite:"):
        import sqlalchemy

        database = sqlalchemy.engine.make_url(storage).database or ""
        if not database or "memory" in database:
            return None
        return optuna.storages.RDBStorage(storage)
    if isinstance(storage, optuna.storages.RDBStorage) and storage.engine.dialect.name == "sqlite":
        database = storage.engine.url.database or ""
        return None if not database or "memory" in database else storage
    return None


def _renamed(old_value: Any, old: str, value: Any, new: str) -> Any:
    """``value``, or what the caller gave under the keyword's former name ``old`` (with a
    FutureWarning naming ``new``: docs/conventions.md has the one name of each quantity).
    ``old_value`` is ``"deprecated"`` when the former name was not used."""
    if isinstance(old_value, str) and old_value == "deprecated":
        return value
    if value is not None:
        raise TypeError(
            f"`{old}` is the former name of `{new}`: give `{new}` only; got {old}={old_value!r} "
            f"and {new}={value!r}"
        )
    warnings.warn(
        f"`{old}` is renamed `{new}` (racer's one name for it across its entry points); "
        f"`{old}` will be removed: pass {new}={old_value!r}",
        FutureWarning, stacklevel=3,
    )
    return old_value


def _check_search_space(search_space: Any) -> None:
    """Refuse anything but a non-empty dict of Optuna distributions or a callable."""
    if isinstance(search_space, dict):
        for name, dist in search_space.items():
            if not isinstance(dist, optuna.distributions.BaseDistribution):
                raise TypeError(
                    f"`search_space[{name!r}]` must be an optuna distribution; got {dist!r}"
                )
        if not search_space:
            raise ValueError("`search_space` is empty")
    elif not callable(search_space):
        raise TypeError(
            "`search_space` must be a dict of optuna distributions or a define-by-run "
            f"callable; got {search_space!r}"
        )


def _check_execution(executor: Any, n_jobs: Any, timeout: Any) -> tuple[float | None, int]:
    """``(timeout, n_workers)`` checked, with ``executor``: an executor has ``submit`` and
    excludes racer's own workers (``n_jobs > 1``); a ``timeout`` then stops runs in killable
    processes of the executor's workers (racer.tuning.runner)."""
    if executor is not None and not hasattr(executor, "submit"):
        raise TypeError(
            f"`executor` must be a concurrent.futures.Executor (with submit); got {executor!r}"
        )
    checked_timeout = check_timeout(timeout)
    n_workers = effective_n_jobs(n_jobs)
    if executor is not None and n_workers > 1:
        raise ValueError(
            "`executor` cannot be combined with `n_jobs` > 1 (runs go where the executor "
            f"sends them); got n_jobs={n_jobs!r}"
        )
    return checked_timeout, n_workers


@dataclasses.dataclass(frozen=True, repr=False)
class IteratedRaceResult:
    """The outcome of :meth:`IteratedRace.run`.

    The names are racer's across its results (:class:`racer.RaceResult`,
    :class:`racer.TuneResult`; docs/conventions.md).

    Attributes
    ----------
    best : dict
        The answer: the parameters of the winner of the last race (the best elite).
        ``run()`` also adds it to the study as its one COMPLETE trial (user attribute
        ``racer_answer_of``), so ``study.best_trial`` has these parameters.
    best_params : dict
        The same as ``best``, under Optuna's name (``study.best_params``); kept as an alias.
    best_trial_number : int
        Its trial in the study.
    best_mean : float
        Its mean score over the instances it was evaluated on.
    best_n_instances : int
        How many instances that mean covers.
    elites : list of dict
        Parameters of the final elites, best first.
    elite_trial_numbers : list of int
    n_evaluations : int
        Evaluations of the tuning (answers served from the elites' cache are not counted;
        those an earlier, interrupted run made and the study recorded are).
    n_iterations : int
        Races run.
    n_candidates : int
        Distinct trials sampled from the study.
    races : list of racer.RaceResult
        One per race of the tuning, those a resumed run replayed from the study included
        (candidates are trial numbers; instances are positions in ``instances``; scores in
        the study's direction).
    study : optuna.Study
    """

    best: dict
    best_trial_number: int
    best_mean: float
    best_n_instances: int
    elites: list
    elite_trial_numbers: list
    n_evaluations: int
    n_iterations: int
    n_candidates: int
    races: list
    study: Any

    @property
    def best_params(self) -> dict:
        """``best``, under Optuna's name."""
        return self.best

    def __repr__(self) -> str:
        return (
            f"IteratedRaceResult(best={self.best!r}, "
            f"best_mean={self.best_mean:.6g} over {self.best_n_instances} instances, "
            f"n_evaluations={self.n_evaluations}, n_iterations={self.n_iterations}, "
            f"n_candidates={self.n_candidates})"
        )


class IteratedRace:
    """irace's iterated racing with any Optuna sampler as the proposal model.

    This is racer's one iterated racing, :class:`racer.tuning.tuner.Tuner` (the command
    line's and :func:`racer.tune`'s), with the study's sampler proposing the configurations:
    irace's budget schedule, elitist races (elites keep their results and are protected on the
    instances they have seen; ``elitistLimit`` 2 ends a race after two tests without an
    elimination), the instances seen before met in a new order in every race
    (``sampleInstances``), the small-budget plan below irace's minimum budget. Each instance
    is raced at most once per trial (``evaluate`` has no seed: irace's ``deterministic``).
    Each iteration asks the study for its new candidates, races them with the elites, tells
    Optuna how each new candidate did, once, and keeps the race's best survivors as the next
    elites.

    What Optuna is told (so that the sampler refocuses on the elites): every raced candidate
    ends PRUNED, once, in the iteration that sampled it, never left RUNNING (constant-liar
    TPE would read that as a bad result), with its mean over the instances it was raced on
    reported at ``step`` = their number (a survivor: its race mean). TPE ranks PRUNED trials
    by the deepest step, then the value there, so survivors rank above candidates eliminated
    late, which rank above candidates eliminated early. A candidate the race never evaluated
    (the budget ran out first) ends FAIL, and so does a proposal that repeats a configuration
    already raced (asked again; after three repeats in a row the proposals are drawn by
    Optuna's RandomSampler: a sampler that has collapsed onto the elites of a small space
    would only repeat them). When no new configuration is found (a small space used up), the
    elites race on the instances they have not seen, down to one, while budget lasts,
    with the survivors of earlier races that were not kept as elites. At the
    end, the race's answer is added as the study's only COMPLETE trial, with its mean over
    every instance it saw: ``study.best_trial`` is the race's answer. (Raced trials are not
    COMPLETE because a told value cannot change, while a survivor's mean only covers its own
    race's instances.)

    Budget, as in irace (:class:`racer.tuning.schedule.IraceSchedule`):
    iteration ``j`` may spend ``B_j = remaining / max(1, n_iterations - j + 1)`` evaluations;
    iterations go on while the remaining budget pays for a race of new candidates. A block is
    only started when the budget can pay for all of it, so ``n_evaluations <= budget`` always.

    A define-by-run ``search_space`` sizes irace's schedule by the parameters of the first
    trial (``nbVariable``: how many of them vary); a dict by its distributions. Optuna
    suggests every value from the user's distributions: the space is never translated into
    irace's (:func:`racer.adapters.optuna._study_tuner.schedule_space`).

    Resuming: the study is the record. Running the same driver on a study that holds an
    interrupted (or shorter) run replays it: the trials it sampled are handed back to the
    tuner in order before new ones are asked, and every (trial, instance) the study has a
    score for is answered from it, not evaluated again, so the replay reaches the elites the
    interrupted run had. What follows is sampled anew; with a sampler whose proposals depend
    on the study only (QMC, grid) the resumed run ends as an uninterrupted one, while TPE's
    random state starts afresh. A larger ``budget`` continues a finished run (each earlier
    session is replayed under its own budget).

    Parameters
    ----------
    evaluate : callable ``(params: dict, instance) -> float``
    search_space : dict of ``optuna.distributions.BaseDistribution`` or callable
        A fixed space, or a define-by-run function ``space(trial) -> dict`` that calls
        ``trial.suggest_*`` (conditional spaces) and returns the parameters (or None, in which
        case ``trial.params`` is used).
    instances : sequence
        The instances; raced in one order drawn from ``random_state``. A pandas DataFrame is
        one instance per row (a dict of its column values); a dict is refused.
    budget : int
        Total number of evaluations (irace's ``maxExperiments``).
    sampler : optuna.samplers.BaseSampler, optional
        Proposal model; default ``TPESampler(seed=...)`` seeded from ``random_state``.
    study : optuna.Study, optional
        An existing study to drive (``storage``, ``study_name``, ``sampler`` must then be
        left out).
    storage, study_name :
        Passed to ``optuna.create_study(..., load_if_exists=True)``. With a persistent
        storage, the evaluations are written as they happen (user attribute ``racer_scores``
        of their trial; at most once a second while evaluations are faster than that, and
        on any exception) and the driver's state after each iteration (study user attribute
        ``racer_iterated_race``): running the same driver on the same study resumes a crashed
        run, re-using every recorded evaluation. Optuna itself (sampler, ask, tell) works
        on an in-memory copy of the study and the storage receives the same content, so
        the study must not get trials from elsewhere while ``run()`` runs (RuntimeError).
        A SQLite storage (a ``sqlite:`` URL or an ``RDBStorage`` on SQLite) runs in WAL mode
        with ``synchronous=NORMAL`` during ``run()``, as racer's own journal does (durable
        against a crash of the process), and is put back in its journal mode afterwards.
    direction : {"minimize", "maximize"}, default "minimize"
        As in Optuna and :class:`racer.Race` (racer's one direction convention).
    test : racer.racing.base.RacingTest, optional
        The racing test; default racer's t-test, the command line's and :func:`racer.tune`'s
        (``TRaceTest``, winner by mean; before the shared tuner ``BayesianTest(small_n="reject")``, see
        docs/optuna.md). The same object serves every race (a test keeps no state; the race
        engine owns the incremental statistics).
    n_iterations : int, optional
        irace's ``nbIterations``: a limit, as in irace; default ``floor(2 + log2(n_params))``,
        and then iterations go on while budget remains.
    min_survivors : int, optional
        Survivors kept as elites (and each race's ``min_survivors``); default
        ``floor(2 + log2(n_params))`` as irace's ``minNbSurvival``. Formerly ``n_elites``,
        still accepted with a FutureWarning.
    first_test, each_test : int
        irace's ``firstTest`` and ``eachTest`` (``first_test`` is cut to the number of
        instances).
    executor : concurrent.futures.Executor, optional
        Runs the new evaluations of each block in parallel (a thread or process pool, Dask's
        ``client.get_executor()``...); results are told as they arrive and the race decides
        once a block is complete, so the run is the same as a serial one. ``evaluate`` must
        then be picklable for process pools (``n_jobs`` instead sends it by value: lambdas
        and closures work there).
    n_jobs : int, optional
        Without ``executor``: the number of racer worker processes to run evaluations on
        (None or 1: in this process; -1: every CPU), as ``n_jobs`` of :meth:`racer.Race.run`.
    timeout : float, optional
        Seconds one evaluation may take (None: no limit). Evaluations then run in racer's
        worker processes (at least one): one over its limit is stopped (its worker killed
        and replaced) and, like one whose worker died, recorded as failed (``on_error``
        decides); ``evaluate`` must be importable by name. With ``executor``, each of its
        workers stops its runs the same way, in killable processes of its own.
    on_error : {"worst", "eliminate", "raise"}, default "worst"
        What a failed evaluation (an exception, NaN, a timeout, a dead worker) does, as in
        :class:`racer.Race`: rank last on its instance (NaN in the trial's scores), eliminate
        its trial at the end of the block, or stop the run with :class:`racer.EvaluationError`
        naming the parameters and the instance, with ``evaluate``'s traceback (the failure
        is not stored: the same driver on the same study resumes and evaluates it again).
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Seeds the instance order, the default sampler and every race (one seed: the int
        itself, or one draw from the others).
    progress : bool, default True
        Show progress on stderr (:class:`racer.progress.ProgressBar`, as ``Race.run`` does): a
        bar over the budget with the iteration, the race's instance and survivors, the
        evaluations used and the best elite so far, redrawn in place in a terminal or a
        notebook; in a log, a line at each quarter of the budget and a final one.

    Examples
    --------
    >>> import optuna
    >>> from optuna.distributions import FloatDistribution
    >>> from racer.adapters.optuna import IteratedRace
    >>> optuna.logging.set_verbosity(optuna.logging.WARNING)
    >>> def evaluate(params, instance):
    ...     return (params["x"] - 0.3) ** 2 + 0.1 * instance
    >>> res = IteratedRace(evaluate, {"x": FloatDistribution(0, 1)}, list(range(20)),
    ...                    budget=300, random_state=0).run()
    >>> res.n_evaluations <= 300 and abs(res.best["x"] - 0.3) < 0.2
    True
    """

    def __init__(
        self,
        evaluate: Callable[[dict, Any], float],
        search_space: dict | Callable[[optuna.Trial], dict | None],
        instances: Sequence[Any],
        *,
        budget: int,
        sampler: optuna.samplers.BaseSampler | None = None,
        study: optuna.Study | None = None,
        storage: Any = None,
        study_name: str | None = None,
        direction: str = "minimize",
        test: Any = None,
        n_iterations: int | None = None,
        min_survivors: int | None = None,
        first_test: int = 5,
        each_test: int = 1,
        executor: Any = None,
        n_jobs: int | None = None,
        timeout: float | None = None,
        on_error: str = "worst",
        random_state: Any = None,
        progress: bool = True,
        n_elites: Any = "deprecated",
    ) -> None:
        from racer.racing.base import RacingTest

        min_survivors = _renamed(n_elites, "n_elites", min_survivors, "min_survivors")
        self._progress = check_bool(progress, "progress")
        if not callable(evaluate):
            raise TypeError(f"`evaluate` must be callable; got {evaluate!r}")
        _check_search_space(search_space)
        self._instances = list(check_instances(instances))
        if not self._instances:
            raise ValueError("`instances` must hold at least one instance; got an empty sequence")
        self._budget = check_int(budget, "budget", minimum=1)
        self._direction = check_option(direction, "direction", ("minimize", "maximize"))
        self._winner = None  # the test's own winner rule
        if test is None:
            from racer.racing.registry import DEFAULT_TUNING_TEST as DEFAULT_TEST
            from racer.racing.registry import make_test

            # Decision: the shared Tuner's default, racer's t-test (the command line's and
            # racer.tune's), replaces BayesianTest(small_n="reject"). Pilot (cv and tsp of
            # benchmarks/optuna_iterated.py, seeds 100-107, budgets 8x and 30x the
            # instances): regret 0.0015 vs 0.0023 (cv, 8x), 0.026 vs 0.046 (tsp, 8x), equal
            # at 30x; docs/optuna.md.
            test, self._winner = make_test(DEFAULT_TEST)
        if not isinstance(test, RacingTest):
            raise TypeError(f"`test` must be a racer.racing.base.RacingTest; got {test!r}")
        self._test = test
        self._n_iterations = check_int(n_iterations, "n_iterations", minimum=1, allow_none=True)
        self._min_survivors = check_int(min_survivors, "min_survivors", minimum=1,
                                        allow_none=True)
        self._first_test = check_int(first_test, "first_test", minimum=1)
        self._each_test = check_int(each_test, "each_test", minimum=1)
        self._seed = seed_from_random_state(random_state)
        self._timeout, self._n_workers = _check_execution(executor, n_jobs, timeout)
        self._executor = executor
        self._on_error = check_option(on_error, "on_error", tuple(_ERROR_POLICY))
        self._sqlite = None
        self._evaluate = evaluate
        self._space = search_space
        if study is not None:
            if sampler is not None or storage is not None or study_name is not None:
                raise ValueError(
                    "pass either `study` or (`sampler`, `storage`, `study_name`), not both"
                )
            if not isinstance(study, optuna.Study):
                raise TypeError(f"`study` must be an optuna.Study; got {study!r}")
            self._study = study
        else:
            self._study = self._create_study(sampler, storage, study_name)
        study_dir = single_direction(self._study, "IteratedRace")
        if study_dir.name.lower() != self._direction:
            raise ValueError(
                f"`direction`={self._direction!r} but the study is set to "
                f"{study_dir.name.lower()!r}"
            )

    def _create_study(self, sampler: Any, storage: Any, study_name: str | None) -> optuna.Study:
        """The study of ``optuna.create_study(..., load_if_exists=True)``; a SQLite storage
        opened here as an RDBStorage (``_sqlite_rdb``), for ``run()``'s WAL mode."""
        if sampler is not None and not isinstance(sampler, optuna.samplers.BaseSampler):
            raise TypeError(
                f"`sampler` must be an optuna sampler (optuna.samplers.BaseSampler); got "
                f"{describe(sampler)}"
            )
        if sampler is None:
            # Optuna seeds a legacy RandomState, which takes 32-bit seeds only.
            sampler = optuna.samplers.TPESampler(seed=self._seed % 2**32)
        self._sqlite = _sqlite_rdb(storage)
        if self._sqlite is not None:
            storage = self._sqlite
        return optuna.create_study(
            storage=storage, sampler=sampler, study_name=study_name,
            direction=self._direction, load_if_exists=True,
        )

    @property
    def study(self) -> optuna.Study:
        return self._study

    # -- the tuning: racer's Tuner, the study as its sampler and its record -----------------

    def run(self) -> IteratedRaceResult:
        """Run (or resume) the iterated race until the budget is spent."""
        import contextlib

        with contextlib.ExitStack() as stack:
            if self._sqlite is not None:
                stack.enter_context(_SqliteWal(self._sqlite))
            return self._run()

    def _budgets(self, state: dict) -> list:
        """The budgets of the study's sessions, this one last: a run with the recorded budget
        resumes it; a larger one continues it (the Tuner replays each earlier session under
        its own budget, ``Settings.earlier_budgets``)."""
        if state and state.get("version") != _STATE_VERSION:
            raise ValueError(
                "the study holds a run of an IteratedRace from before racer's shared tuner, "
                "which this version cannot resume; use a new study to start afresh")
        if state and (state.get("seed") != self._seed
                      or state.get("n_instances") != len(self._instances)):
            raise ValueError(
                "the study holds an IteratedRace run with other `instances` or `random_state`; "
                "use a new study to start afresh")
        budgets = [int(b) for b in state.get("budgets", [])]
        if budgets and self._budget < budgets[-1]:
            raise ValueError(
                f"`budget`={self._budget} is smaller than the budget of the run the study "
                f"holds ({budgets[-1]}); give at least that to resume or continue it")
        if not budgets or self._budget > budgets[-1]:
            budgets.append(self._budget)
        return budgets

    def _run(self) -> IteratedRaceResult:
        from racer.tuning.tuner import Tuner
        from racer.tuning.instances import Instance

        study = self._study
        budgets = self._budgets(dict(study.user_attrs.get(STATE_ATTR) or {}))
        maximize = self._direction == "maximize"
        sign = -1.0 if maximize else 1.0
        raced, cache = _recorded(study)
        mirror = _StudyMirror(study)
        # The trials of the earlier run are handed back to the tuner in order (those left
        # RUNNING by a crash as the trials they are).
        replay = [(mirror.trial(t.number) if t.state == TrialState.RUNNING else None, t.number,
                   dict(t.user_attrs.get(PARAMS_ATTR) or t.params)) for t in raced]
        mirror.set_study_attr(STATE_ATTR, {"version": _STATE_VERSION, "seed": self._seed,
                                           "n_instances": len(self._instances),
                                           "budgets": budgets})
        sampler, space = self._study_sampler(mirror, raced, replay, sign)
        train = [Instance(f"#{k}") for k in range(len(self._instances))]
        position = {inst: k for k, inst in enumerate(train)}
        runner = self._runner(position, maximize, sampler, cache)
        watch = _Watch(sampler, mirror, cache, position, sign, self._budget, self._progress,
                       keep_failures=self._on_error != "raise")
        tuner = Tuner(space or sampler.space, runner, train, self._settings(budgets, len(train)),
                      self._test, journal_dir=None, on_run=watch.on_run,
                      progress=watch.progress, winner=self._winner, sampler=sampler,
                      executor=self._executor)
        result = self._tune(tuner, runner, sampler, mirror, watch)
        self._fail_unraced(sampler, mirror)
        return self._result(result, sampler, mirror, cache, position, maximize, watch.bar)

    def _study_sampler(self, mirror: _StudyMirror, raced: list, replay: list,
                       sign: float) -> tuple:
        """``(sampler, space)``: the Tuner's sampler on the study, and the parameter space
        that sizes irace's schedule (None for a define-by-run space first met here: the
        sampler's, sized by its first trial, which is then the first configuration raced)."""
        if isinstance(self._space, dict):
            space = schedule_space(self._space)
        elif raced:
            space = schedule_space(raced[0].distributions)
        else:
            space = None
        sampler = StudySampler(space or schedule_space({"-": optuna.distributions.
                                                        CategoricalDistribution([0])}),
                               mirror, self._space, replay, sign,
                               int(np.random.SeedSequence([self._seed, 0x5A]).generate_state(1)[0]))
        if space is None:
            first = sampler.new_trial()
            sampler.space = schedule_space(first[0].distributions)
            sampler.replay.appendleft(first)
        return sampler, space

    def _settings(self, budgets: list, n_train: int) -> Any:
        """The Tuner's settings: irace's options from this driver's, ``budgets`` the
        study's sessions (this one last)."""
        from racer.tuning.tuner import Settings

        return Settings(
            max_experiments=self._budget, first_test=min(self._first_test, n_train),
            each_test=self._each_test, min_survival=self._min_survivors or 0,
            n_iterations=self._n_iterations or 0, seed=self._seed,
            # evaluate(params, instance) has no seed: each instance is raced once per trial.
            deterministic=True,
            parallel=max(1, self._n_workers), error_policy=_ERROR_POLICY[self._on_error],
            lookahead=False,
            race_used_up=True,
            earlier_budgets=tuple(budgets[:-1]), budget_rule="racer")

    def _runner(self, position: dict, maximize: bool, sampler: StudySampler,
                cache: dict) -> StudyRunner:
        """The runner of ``evaluate``: in this process, on racer's workers (``n_jobs``,
        ``timeout``) or, with an executor, in the executor's (the Tuner sends them there);
        what the study recorded (``cache``) answers without a call."""
        in_process = self._executor is not None or (self._n_workers <= 1
                                                    and self._timeout is None)
        return StudyRunner(
            self._evaluate, self._instances, position, maximize=maximize,
            n_workers=0 if in_process else max(1, self._n_workers),
            timeout=self._timeout, number_of=sampler.number_of, recorded=cache)

    def _tune(self, tuner: Any, runner: StudyRunner, sampler: StudySampler,
              mirror: _StudyMirror, watch: _Watch) -> Any:
        """Run the Tuner; on the way out the study is left resumable, or its trials FAIL
        when nothing could be evaluated."""
        from racer.tuning.runner import TargetRunnerError
        from racer.tuning.tuner import BudgetError
        from racer.engine import EvaluationError, RaceFailedError

        runner.start()
        try:
            return tuner.run()
        except BudgetError as exc:
            self._fail_unraced(sampler, mirror)
            raise ValueError(f"`budget`={self._budget}: {exc}") from None
        except RaceFailedError:
            # Nothing usable came back: not a crash to resume from, so the trials end FAIL
            # instead of staying RUNNING forever.
            sampler.fail_open()
            self._fail_unraced(sampler, mirror)
            raise
        except TargetRunnerError:
            # on_error="raise": the first failed evaluation ends the run. What was evaluated
            # is stored (the failure is not), so the same driver resumes and evaluates it again.
            mirror.flush()
            raise EvaluationError(watch.failure_text()) from None
        except BaseException:
            # Whatever was evaluated is stored, so that a rerun resumes from it (an
            # interrupted run, or one that failed); a storage that fails again is not news.
            try:
                mirror.flush()
            except Exception:  # noqa: BLE001
                pass
            raise
        finally:
            runner.close()

    def _result(self, result: Any, sampler: StudySampler, mirror: _StudyMirror, cache: dict,
                position: dict, maximize: bool, bar: Any) -> IteratedRaceResult:
        """The tuning's answer, recorded in the study (``_record_answer``) and returned."""
        from racer.progress import iterations_done_text

        study = self._study
        elites = [sampler.number_of[sampler.key(c.values)] for c in result.elites]
        bar.close(f"done: {iterations_done_text(result.iterations, result.planned_iterations)} | "
                  f"{result.experiments}/{self._budget} evaluations"
                  + (f" | best #{elites[0]}" if elites else ""),
                  min(result.experiments / self._budget, 1.0))
        if not elites:
            raise RuntimeError(f"the tuning ended without elites ({result.stop_reason})")
        best = elites[0]
        seen = [v for v in cache.get(best, {}).values() if math.isfinite(v)]
        best_mean = float(np.mean(seen)) if seen else math.nan
        mirror.flush()
        self._record_answer(study, best, best_mean, cache.get(best, {}))
        params_of = sampler.params_of
        return IteratedRaceResult(
            best=dict(params_of[best]),
            best_trial_number=best,
            best_mean=best_mean,
            best_n_instances=len(cache.get(best, {})),
            elites=[dict(params_of[n]) for n in elites],
            elite_trial_numbers=elites,
            n_evaluations=result.experiments,
            n_iterations=result.iterations,
            n_candidates=len(params_of),
            races=[_trial_race(res, cands, sampler, position, maximize)
                   for _it, res, cands in result.races],
            study=study,
        )

    @staticmethod
    def _fail_unraced(sampler: StudySampler, mirror: _StudyMirror) -> None:
        """Trials asked but never raced (a tuning that stopped before the replay was used
        up, or a budget refused after the first define-by-run trial) end FAIL, never
        RUNNING."""
        while sampler.replay:
            trial, number, _params = sampler.replay.popleft()
            if trial is not None:
                mirror.work.tell(trial, state=TrialState.FAIL)
                mirror.sync(number)

    @staticmethod
    def _record_answer(study, best, best_mean, scores) -> None:
        """Add the race's answer to the study as its one COMPLETE trial.

        Its parameters are those of trial ``best``, its value the race mean over every
        instance ``best`` was evaluated on, its intermediate values those scores (step =
        instance position), and the user attribute ``racer_answer_of`` names ``best``. Raced
        trials all end PRUNED, so ``study.best_trial`` is this trial. A resumed run that
        finds the same answer already recorded adds nothing.
        """
        if not math.isfinite(best_mean):
            return
        source = next(t for t in study.get_trials(deepcopy=False) if t.number == best)
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if (t.user_attrs.get(ANSWER_ATTR) == best
                    and t.user_attrs.get(N_INSTANCES_ATTR) == len(scores)):
                return
        study.add_trial(optuna.trial.create_trial(
            params=dict(source.params), distributions=dict(source.distributions),
            value=best_mean,
            intermediate_values={int(k): float(v) for k, v in scores.items()
                                 if math.isfinite(v)},
            user_attrs={ANSWER_ATTR: best, N_INSTANCES_ATTR: len(scores)},
        ))


def _recorded(study: optuna.Study) -> tuple[list, dict]:
    """What an earlier (interrupted or shorter) run recorded in ``study``: its raced trials in
    order, to be replayed, and their scores ``{trial number: {instance position: score}}``,
    which answer the replay's runs (nothing is run twice)."""
    raced = sorted((t for t in study.get_trials(deepcopy=False)
                    if ITERATION_ATTR in t.user_attrs and ANSWER_ATTR not in t.user_attrs),
                   key=lambda t: t.number)
    cache: dict[int, dict[int, float]] = {}
    for t in raced:
        if t.user_attrs.get(SCORES_ATTR):
            cache[t.number] = {int(k): float(v) for k, v in t.user_attrs[SCORES_ATTR].items()}
    for key, record in study.user_attrs.items():
        if key.startswith(SCORES_ATTR + "_"):
            cache.setdefault(int(key[len(SCORES_ATTR) + 1:]), {}).update(
                {int(k): float(v) for k, v in record.items()})
    return raced, cache


class _Watch:
    """The Tuner's callbacks for an IteratedRace: each run's score goes to the study as it
    arrives (``on_run``), the progress bar follows the budget (``progress``), and the study
    is written once per race (the sampler's ``observe``, wrapped here)."""

    def __init__(self, sampler: StudySampler, mirror: _StudyMirror, cache: dict,
                 position: dict, sign: float, budget: int, progress: bool, *,
                 keep_failures: bool = True) -> None:
        from racer.progress import ProgressBar, iteration_text
        from racer.tuning.lookahead import UNUSED

        self._unused, self._iteration_text = UNUSED, iteration_text
        self.sampler, self.mirror, self.cache = sampler, mirror, cache
        self.position, self.sign, self.budget = position, sign, budget
        self.n_runs = 0  # runs told so far (those answered from the record too)
        # Under on_error="raise" a failure ends the run unrecorded; the last one, for its message.
        self.keep_failures = keep_failures
        self.failure: tuple | None = None
        self.bar = ProgressBar(enabled=progress)
        self._observe = sampler.observe
        sampler.observe = self.observed

    def on_run(self, iteration, configuration, task, res) -> None:
        if res.status == self._unused:
            return
        sampler = self.sampler
        number = sampler.number_of[sampler.key(configuration.values)]
        k = self.position[task.instance]
        if res.status == "error" and not self.keep_failures:
            self.failure = (number, k, res)
            return
        self.n_runs += 1
        scores = self.cache.setdefault(number, {})
        if k in scores:
            return  # answered from the study's record
        scores[k] = self.sign * res.cost if res.status == "ok" else math.nan
        record = {str(i): v for i, v in scores.items()}
        if sampler.is_open(number):
            sampler._trials[number].set_user_attr(SCORES_ATTR, record)
            self.mirror.changed(number)
        else:
            # A finished trial cannot change: an elite's later evaluations go to the
            # study, under its trial number.
            self.mirror.set_study_attr(f"{SCORES_ATTR}_{number}", record)
        self.mirror.flush(due_only=True)

    def progress(self, state, race) -> None:
        used = self.n_runs

        def text():
            return (f"{self._iteration_text(state['iteration'], state['planned'])} | race: "
                    f"instance {race.n_instances}, {len(race.survivor_indices)}/"
                    f"{len(race.candidates)} alive | {used}/{self.budget} evaluations")
        self.bar.update(min(used / self.budget, 1.0), text)

    def failure_text(self) -> str:
        """What failed under on_error="raise": the trial, its parameters, the instance and
        ``evaluate``'s traceback."""
        number, k, res = self.failure
        reason = res.stderr.rstrip() if res.stderr else res.message
        return (f"evaluate({self.sampler.params_of[number]!r}, instances[{k}]) failed "
                f"(trial {number}):\n"
                f"{reason}\n(on_error='eliminate' or 'worst' to go on despite failures; the "
                "same IteratedRace on the same study resumes)")

    def observed(self, candidates, result) -> None:
        self._observe(candidates, result)
        self.mirror.flush()  # once per race: every trial told, and the trial numbers checked


def _trial_race(result: Any, candidates: list, sampler: StudySampler, position: dict,
                maximize: bool) -> Any:
    """A race of the Tuner as IteratedRace reports it: candidates are trial numbers,
    instances positions in ``instances``, scores in the user's direction."""
    number = {c.id: sampler.number_of[sampler.key(c.values)] for c in candidates}
    sign = -1.0 if maximize else 1.0
    return dataclasses.replace(
        result,
        best=None if result.best is None else number[result.best.id],
        survivors=[number[c.id] for c in result.survivors],
        ranking=[number[c.id] for c in result.ranking],
        candidates=[number[c.id] for c in candidates],
        instances=[position[t.instance] for t in result.instances],
        scores=sign * result.scores, mean_scores=sign * result.mean_scores,
        history=tuple(dataclasses.replace(
            h, candidate=number[h.candidate.id],
            by=h.by if h.by is None else number[h.by.id]) for h in result.history),
        maximize=maximize)
