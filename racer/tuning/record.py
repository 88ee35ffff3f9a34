"""An iterated race as data: the configurations each iteration sampled and the elites it kept.

The figures of iterated racing (:func:`racer.plot.plot_parameter_frequencies`,
:func:`racer.plot.plot_elite_parallel_coordinates`) and the report of a ``racer`` run
(``racer report EXECDIR``) read an :class:`IteratedRun`, built from where the data lives:

* :func:`read_exec_dir` -- a ``racer --scenario ...`` execution directory. Everything comes
  from the race journals in ``<execDir>/racer-journal/`` (``iteration-<k>.sqlite``,
  ``fixed-list.sqlite``, ``test.sqlite``), so an interrupted or still-running tuning reads too:
  each journal's fingerprint holds the configurations (their ``repr``, which lists every
  parameter's value) and, in its metadata, the parameter space and the iteration.
  ``results.json``, written at the end of a run, adds the final elites and why the tuning
  stopped when it exists (on several objectives, the Pareto set of elites in the Tuner's
  rank order and their training means, ``pareto_front``; the test journal gives each test
  run's objective vector);
* :func:`from_iterated_race` -- the result of :class:`racer.adapters.optuna.IteratedRace`
  (each trial's iteration is its user attribute ``racer_iteration``, its parameters and their
  distributions are Optuna's). Read by attribute names, so this module imports no adapter.

No matplotlib here: the data can be inspected without the ``plot`` extra.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
import re
from typing import Any

import numpy as np

from racer.result import RaceResult

__all__ = ["IteratedRun", "ParameterInfo", "from_iterated_race", "read_exec_dir"]

JOURNAL_DIR = "racer-journal"  # racer.tuning.tuner.JOURNAL_DIR (not imported: front ends are apart)
_ITERATION_FILE = re.compile(r"^iteration-(\d+)\.sqlite$")
_CONFIG_REPR = re.compile(r"^Configuration\((\d+): (.*)\)$", re.S)


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
        instances of the last race (results.json's ``pareto_front``, as the Tuner wrote it;
        the last race's means when the run has not finished).
    info : dict
        What else is known (``stop_reason``, ``experiments``, ``budget``, ``seed``...).
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


# --------------------------------------------------------------------------- CLI execDir


def _literal(text: str) -> Any:
    """A value of a journal's metadata: stored as ``repr`` of the ``repr`` the CLI passed."""
    value = ast.literal_eval(text)
    return ast.literal_eval(value) if isinstance(value, str) else value


_KINDS = {"c": "categorical", "o": "ordinal", "i": "integer", "r": "real"}


def _space_from(fingerprint: dict, where: str) -> list:
    meta = fingerprint.get("metadata") or {}
    if "space" not in meta:
        raise ValueError(f"{where}: the journal's metadata has no parameter space: it was not "
                         "written by `racer --scenario` (or by a racer too old to store it)")
    try:
        declared = _literal(meta["space"])
        return [ParameterInfo(str(name), _KINDS[kind], tuple(domain), bool(log))
                for name, _switch, kind, domain, log, _cond in declared]
    except (ValueError, SyntaxError, KeyError, TypeError) as exc:
        raise ValueError(f"{where}: cannot read the parameter space in its metadata ({exc})") from None


def _parse_configuration(text: str, params: list, where: str) -> tuple[int, dict]:
    """``Configuration(12: a=1, b=x)`` -> (12, {"a": 1, "b": "x"}). Split at the known names in
    their order (the repr lists them so), so a categorical level holding ", " still parses."""
    match = _CONFIG_REPR.match(text)
    if match is None:
        raise ValueError(f"{where}: candidate {text!r} is not a racer CLI configuration")
    cid, body = int(match.group(1)), match.group(2)
    values: dict = {}
    starts = []
    pos = 0
    for k, p in enumerate(params):
        token = f"{p.name}=" if k == 0 else f", {p.name}="
        found = body.find(token, pos)
        if found < 0:
            raise ValueError(f"{where}: configuration {cid} has no value for {p.name!r}")
        starts.append((found, found + len(token)))
        pos = found + len(token)
    for k, p in enumerate(params):
        end = starts[k + 1][0] if k + 1 < len(params) else len(body)
        raw = body[starts[k][1]:end]
        if raw == "NA":
            values[p.name] = None
        elif p.kind == "integer":
            values[p.name] = int(float(raw))
        elif p.kind == "real":
            values[p.name] = float(raw)
        else:
            values[p.name] = raw
    return cid, values


def _elite_indices(result: RaceResult, cap: int) -> list:
    """The candidates a race of the CLI keeps as elites, best first: irace's ``cap`` best
    survivors; on several objectives the Tuner's Pareto set (``racer.tuning.tuner.elites_of``:
    the non-dominated survivors thinned to ``cap`` and ranked by crowding distance)."""
    front = np.asarray(result.pareto_front_indices if result.directions is not None else [],
                       dtype=np.int64)
    if front.size == 0:  # one objective, or no survivor with a success (irace's rule then)
        return [int(i) for i in result.survivor_indices[:cap]]
    from racer.tuning.objectives import pareto_elites

    signs = np.array([1.0 if d == "maximize" else -1.0 for d in result.directions])
    return [int(i) for i in pareto_elites(front, result.mean_objective_scores[front] * signs,
                                          max(cap, 1))]


def read_exec_dir(path: Any) -> IteratedRun:
    """Read a ``racer --scenario`` execution directory (finished, interrupted or running).

    >>> import os, tempfile
    >>> read_exec_dir(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `path`=...: no racer-journal/ folder with race journals: not a racer execDir...
    """
    from racer.storage import read_journal, result_from_journal

    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"`path` must be a folder path (str or os.PathLike); got {path!r}") from None
    if not os.path.isdir(text):
        raise NotADirectoryError(f"`path`={text!r} is not a folder (a racer execDir)")
    jdir = os.path.join(text, JOURNAL_DIR)
    names = sorted(os.listdir(jdir)) if os.path.isdir(jdir) else []
    iterations = sorted((int(m.group(1)), n) for n in names if (m := _ITERATION_FILE.match(n)))
    files = [(k, n) for k, n in iterations]
    if "fixed-list.sqlite" in names:
        files = [(1, "fixed-list.sqlite")] + files
    if not files:
        raise ValueError(f"`path`={text!r}: no {JOURNAL_DIR}/ folder with race journals: not a "
                         "racer execDir, or no race has started there yet")
    params = None
    configurations: dict = {}
    iteration_of: dict = {}
    elites: dict = {}
    races: list = []
    candidate_ids: list = []
    maximize = False
    for iteration, name in files:
        where = os.path.join(jdir, name)
        data = read_journal(where)
        fp = data["fingerprint"]
        if fp is None:
            continue  # created, not yet claimed: the race had not started
        if params is None:
            params = _space_from(fp, where)
        ids = []
        for rep in fp["candidates"]:
            cid, values = _parse_configuration(rep, params, where)
            configurations.setdefault(cid, values)
            iteration_of.setdefault(cid, iteration)
            ids.append(cid)
        try:
            result = result_from_journal(data)
        except ValueError:
            continue  # e.g. a journal with no evaluation yet
        maximize = result.maximize
        races.append((iteration, name, result))
        candidate_ids.append(ids)
        last_fingerprint = fp
        keep = int(fp.get("min_survivors", 1) or 1)
        if result.directions is not None:
            from racer.tuning.objectives import elite_cap

            keep = elite_cap(keep, result.directions)
        elites[iteration] = [ids[int(i)] for i in _elite_indices(result, keep)]
    if params is None:
        raise ValueError(f"`path`={text!r}: the race journals hold no race yet")
    info: dict = {}
    saved_objectives, saved_front = None, {}
    final = elites[max(elites)] if elites else []
    results_path = os.path.join(text, "results.json")
    if os.path.exists(results_path):
        try:
            with open(results_path, encoding="utf-8") as fh:
                saved = json.load(fh)
            final = [int(e["id"]) for e in saved.get("elites", [])] or final
            saved_objectives = saved.get("objectives")
            # The front's training means as the Tuner wrote them (output.front_means).
            saved_front = {int(cid): [float(entry["mean"][n]) for n in saved_objectives["names"]]
                           for cid, entry in (saved.get("pareto_front") or {}).items()
                           } if isinstance(saved_objectives, dict) else {}
            info = {k: saved[k] for k in ("stop_reason", "iterations", "iterations_planned",
                                          "experiments", "budget", "max_time", "seed",
                                          "time_used") if k in saved}
        except (OSError, ValueError, KeyError, TypeError):
            info = {"note": "results.json could not be read"}
            saved_objectives, saved_front = None, {}
    runs_csv = os.path.join(text, "runs.csv")
    if "experiments" not in info and os.path.exists(runs_csv):
        import csv

        with open(runs_csv, encoding="utf-8", errors="replace", newline="") as fh:
            # Unused look-ahead runs (status speculative-unused) were not runs of the races.
            info["runs_logged"] = sum(1 for r in csv.DictReader(fh)
                                      if r.get("status") != "speculative-unused")
    test = None
    if "test.sqlite" in names:
        tdata = read_journal(os.path.join(jdir, "test.sqlite"))
        if tdata["fingerprint"] is not None and tdata["evaluations"]:
            tids = [_parse_configuration(r, params, "test.sqlite")[0]
                    for r in tdata["fingerprint"]["candidates"]]
            n_inst = len(tdata["instances"])
            costs = {cid: [None] * n_inst for cid in tids}
            for cand, inst, value, _err in tdata["evaluations"]:
                if inst < n_inst:
                    costs[tids[cand]][inst] = None if value is None else float(value)
            test = {"instances": list(tdata["instances"]), "costs": costs}
            if tdata.get("objective_values"):
                cells: dict = {}
                for cand, inst, objective, value in tdata["objective_values"]:
                    if inst < n_inst:
                        cells.setdefault((tids[cand], inst), {})[objective] = value
                k = 1 + max(o for _c, _i, o, _v in tdata["objective_values"])
                # A run with a missing objective failed: None, as test.csv leaves it empty.
                test["objective_costs"] = {
                    cid: [[float(cells[(cid, i)][o]) for o in range(k)]
                          if costs[cid][i] is not None and len(cells.get((cid, i), {})) == k
                          and all(cells[(cid, i)][o] is not None for o in range(k)) else None
                          for i in range(n_inst)] for cid in tids}
    objectives = None
    last = races[-1][2] if races else None
    if last is not None and last.directions is not None:
        from racer.storage import objective_names

        names = (list(saved_objectives["names"]) if saved_objectives
                 else objective_names(last_fingerprint, len(last.directions)))
        objectives = {"names": names, "directions": list(last.directions)}
        if not saved_front:  # not finished: the last race's means, as output.front_means
            ids = candidate_ids[-1]
            saved_front = {cid: [float(x) for x in last.mean_objective_scores[ids.index(cid)]]
                           for cid in final if cid in ids}
    return IteratedRun(parameters=params, configurations=configurations,
                       iteration_of=iteration_of, elites=elites, races=races,
                       candidate_ids=candidate_ids, final_elites=final, test=test,
                       maximize=maximize, info=info, source=text, objectives=objectives,
                       training_means=saved_front if objectives else {})


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
