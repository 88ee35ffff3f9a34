"""What ``racer`` writes: the progress line, the final elites, and files in ``execDir``.

* ``elites.txt``: the final elites, best first, as an irace configurations file (header of
  parameter names, ``NA`` where inactive), readable back as a ``configurationsFile``;
* ``runs.csv``: every target-runner call, appended as the race uses it (iteration,
  configuration, instance ID, seed, instance, cost, time, status, attempts, wall seconds,
  message, the execution bound passed to the runner: empty without ``boundMax``); the cost
  is the runner's, before capping's PARk; a look-ahead run the race did not use has status ``speculative-unused``;
  on several objectives (``objectives``), ``cost`` is the first one and a column
  ``cost.<name>`` per objective follows ``bound``;
* ``eliminations.csv``: every elimination of every race;
* ``test.csv``: the test phase, one row per (elite, test instance) (several objectives: a
  column ``cost.<name>`` per objective instead of ``cost``);
* ``results.json``: the elites, their command lines, the budget used and the stop reason
  (and, on one objective, ``prob_not_best``: :func:`prob_not_best_line` says what it is).

These files are for people and for irace's tools. What the Tuner decided is in its run record,
``racer-journal/run.json`` (:mod:`racer.tuning.record`), which the Tuner writes itself and
racer's own readers (the report, resume) read.

All but ``runs.csv`` are written at the end, each to a temporary file then renamed over the
old one (a killed racer never leaves half a file).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shlex
import threading
from typing import Any

import numpy as np

from racer.tuning.parameters import ParameterSpace, format_value

__all__ = ["RunLog", "Progress", "write_elites", "write_eliminations", "write_test",
           "write_results", "elites_report", "front_report", "prob_not_best_line",
           "configuration_words", "objective_columns"]

RUN_FIELDS = ["iteration", "configuration", "instance_id", "seed", "instance", "cost", "time",
              "status", "attempts", "wall", "message", "bound"]


def objective_columns(names) -> list:
    """The columns of runs.csv and test.csv holding each objective (several objectives)."""
    return [f"cost.{n}" for n in names]


def _quote(v: Any) -> str:
    text = format_value(v)
    return shlex.quote(text) if (text == "" or any(c.isspace() for c in text) or "'" in text or '"' in text) else text


def configuration_words(space: ParameterSpace, values: dict) -> list[str]:
    return [_quote(values.get(name)) for name in space.names]


@contextlib.contextmanager
def _replacing(path: str, newline: str | None = None):
    """A file written next to ``path`` and renamed over it once complete: a racer killed while
    writing its outputs leaves the previous file or none, never a truncated one (the same
    command writes them again)."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8", newline=newline) as f:
            yield f
    except BaseException:
        os.remove(tmp)
        raise
    os.replace(tmp, path)


def write_elites(path: str, space: ParameterSpace, elites: list) -> None:
    """An irace configurations file of ``elites`` (best first), columns aligned."""
    rows = [list(space.names)] + [configuration_words(space, e.values) for e in elites]
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    with _replacing(path) as f:
        f.write("# racer: final elite configurations, best first (irace configurations file)\n")
        for r in rows:
            f.write(" ".join(w.ljust(widths[j]) for j, w in enumerate(r)).rstrip() + "\n")


class RunLog:
    """``runs.csv``, appended and flushed after every run (a killed racer keeps every line
    written before it died). ``objective_names``: a tuning on several objectives, whose
    rows end with one column per objective."""

    def __init__(self, path: str, objective_names: tuple = ()) -> None:
        self.path = path
        self.objective_names = tuple(objective_names)
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        torn = False
        if not new:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
        self._f = open(path, "a", newline="", encoding="utf-8")
        if torn:
            # A racer killed in the middle of a line: end that line, so that the first row of
            # this session starts a line of its own instead of completing the torn one.
            self._f.write("\n")
            self._f.flush()
        self._w = csv.writer(self._f)
        if new:
            self._w.writerow(RUN_FIELDS + objective_columns(self.objective_names))
            self._f.flush()
        self._lock = threading.Lock()

    def __call__(self, iteration, configuration, task, result) -> None:
        row = [iteration, configuration.id, task.index, task.seed,
               " ".join([task.instance.name, *task.instance.extra]),
               "" if result.cost is None else repr(result.cost),
               "" if result.time is None else repr(result.time),
               result.status, result.attempts, f"{result.wall:.4f}", result.message,
               "" if result.bound is None else repr(float(result.bound))]
        if self.objective_names:
            values = result.objectives or ()
            row += [repr(float(x)) for x in values] or [""] * len(self.objective_names)
        with self._lock:
            self._w.writerow(row)
            self._f.flush()

    def close(self) -> None:
        self._f.close()


def write_eliminations(path: str, races: list) -> None:
    with _replacing(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(["iteration", "configuration", "instances", "reason", "by", "probability", "step"])
        for iteration, result, candidates in races:
            for rec in result.history:
                w.writerow([iteration, rec.candidate.id, rec.n_instances, rec.reason,
                            "" if rec.by is None else rec.by.id,
                            "" if np.isnan(rec.probability) else repr(float(rec.probability)), rec.step])


def write_test(path: str, test: dict, objective_names: tuple = ()) -> None:
    """test.csv; with ``objective_names`` (several objectives) one column per objective."""
    k = len(objective_names)
    with _replacing(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(["configuration", "instance_id", "seed", "instance"]
                   + (objective_columns(objective_names) if k else ["cost"]))
        for cid, costs in test["costs"].items():
            for task, cost in zip(test["tasks"], costs):
                values = ([""] * max(k, 1) if cost is None
                          else [repr(float(x)) for x in cost] if k else [repr(cost)])
                w.writerow([cid, task.index, task.seed,
                            " ".join([task.instance.name, *task.instance.extra]), *values])


def elites_report(space: ParameterSpace, elites: list, label: str = "sum of ranks",
                  heading: str | None = None) -> str:
    """irace's two final blocks: the elites as a table, then as command lines (``heading``
    replaces the first block's heading)."""
    lines = [heading or f"# Best configurations (first number is the configuration ID; listed "
             f"from best to worst according to the {label}):"]
    rows = [[""] + list(space.names)] + [[str(e.id)] + configuration_words(space, e.values) for e in elites]
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    for r in rows:
        lines.append(" ".join(w.rjust(widths[j]) for j, w in enumerate(r)).rstrip())
    lines.append("# Best configurations as commandlines (first number is the configuration ID; "
                 "same order as above):")
    for e in elites:
        lines.append(f"{e.id}  " + " ".join(shlex.quote(w) for w in space.command_line(e.values)))
    return "\n".join(lines)


def prob_not_best_line(result) -> str:
    """The final summary's line on how sure the best is (one objective): the posterior
    probability that another final elite has a lower expected cost over the instances'
    distribution, and the instances it rests on (:func:`racer.tuning.record.prob_not_best_of`).

    >>> from types import SimpleNamespace as NS
    >>> print(prob_not_best_line(NS(elites=[1, 2, 3], prob_not_best=0.0412,
    ...                             prob_not_best_instances=12)))  # doctest: +NORMALIZE_WHITESPACE
    # P(another of the 3 final elites has a lower expected cost than the best) = 0.041
    (Bayesian bootstrap over the 12 training instances all of them ran)
    >>> print(prob_not_best_line(NS(elites=[1, 2], prob_not_best=None,
    ...                             prob_not_best_instances=1)))  # doctest: +NORMALIZE_WHITESPACE
    # P(another of the 2 final elites has a lower expected cost than the best): not stated,
    one training instance ran by all of them (two are needed)
    """
    n = len(result.elites)
    if n < 2:
        return ("# P(another final elite has a lower expected cost than the best) = 0 (the best "
                "is the only final elite)" if n else "# P(another final elite has a lower "
                "expected cost than the best): not stated (no final elite)")
    head = f"# P(another of the {n} final elites has a lower expected cost than the best)"
    k = result.prob_not_best_instances
    if result.prob_not_best is None:
        ran = "no training instance" if k == 0 else "one training instance"
        return f"{head}: not stated, {ran} ran by all of them (two are needed)"
    return (f"{head} = {result.prob_not_best:.2g} (Bayesian bootstrap over the {k} training "
            "instances all of them ran)")


def front_means(result, names: tuple) -> dict:
    """``{configuration id: (instances, [mean of each objective])}`` of the final elites of
    a tuning on several objectives, on the training instances of the last race (the race
    they were chosen in: every elite ran on all its instances)."""
    _iteration, race, candidates = result.races[-1]
    index = {c.id: i for i, c in enumerate(candidates)}
    out = {}
    for e in result.elites:
        ci = index[e.id]
        out[e.id] = (int(race.n_evaluated[ci]),
                     [float(x) for x in race.mean_objective_scores[ci]])
    return out


def test_means(costs: list, k: int) -> list:
    """Each objective's mean over the test instances an elite ran on (None: no run)."""
    ok = [c for c in costs if c is not None]
    return [float(np.mean([c[o] for c in ok])) if ok else None for o in range(k)]


def front_report(space: ParameterSpace, result, settings) -> str:
    """The end of a tuning on several objectives: the Pareto set of elites with each
    objective's mean on the training instances of the last race (and on the test
    instances), then the configurations as irace lists them."""
    names, directions = settings.objective_names, settings.directions
    k = len(names)
    means = front_means(result, names)
    header = ["ID"] + [f"{n} ({d[:3]})" for n, d in zip(names, directions)]
    rows = [header + ["instances"]]
    for e in result.elites:
        n, m = means[e.id]
        rows.append([str(e.id)] + [f"{x:.6g}" for x in m] + [str(n)])
    lines = [f"# Pareto front: {len(result.elites)} elite configuration"
             f"{'s' if len(result.elites) != 1 else ''}, none dominated by another on the "
             "mean objectives; ranked by crowding distance, the front's ends first "
             "(docs/cli.md). Mean on the training instances of the last race:"]
    lines += _table(rows)
    if result.test is not None:
        lines.append(f"# Testing of the Pareto front: mean on {len(result.test['tasks'])} test "
                     "instances")
        rows = [header]
        for e in result.elites:
            m = test_means(result.test["costs"].get(e.id, []), k)
            rows.append([str(e.id)] + ["NA" if x is None else f"{x:.6g}" for x in m])
        lines += _table(rows)
    lines.append(elites_report(space, result.elites, heading=(
        "# Pareto front configurations (first number is the configuration ID; same order "
        "as above):")))
    return "\n".join(lines)


def _table(rows: list) -> list:
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return ["  ".join(w.rjust(widths[j]) for j, w in enumerate(r)).rstrip() for r in rows]


def write_results(path: str, space: ParameterSpace, result, extra: dict) -> None:
    data = {
        "elites": [{"id": e.id, "parent": e.parent,
                    "values": {k: v for k, v in e.values.items()},
                    "command_line": space.command_line(e.values)} for e in result.elites],
        "iterations": result.iterations,
        "iterations_planned": result.planned_iterations,
        "experiments": result.experiments,
        "stop_reason": result.stop_reason,
        "time_used": result.time_used,
        **extra,
    }
    names = extra.get("objectives", {}).get("names") if isinstance(extra.get("objectives"), dict) else None
    if not names:
        data["prob_not_best"] = result.prob_not_best
    else:
        data["pareto_front"] = {str(cid): {"instances": n, "mean": dict(zip(names, m))}
                                for cid, (n, m) in front_means(result, names).items()}
    if result.test is not None:
        data["test"] = {str(cid): {"mean": (dict(zip(names, test_means(costs, len(names))))
                                            if names else _mean(costs)), "costs": costs}
                        for cid, costs in result.test["costs"].items()}
    with _replacing(path) as f:
        json.dump(data, f, indent=1, default=str)


def _mean(costs: list) -> float | None:
    ok = [c for c in costs if c is not None]
    return float(np.mean(ok)) if ok else None


class Progress:
    """The live progress line on stderr: iteration, race state, runs used of the budget, best
    so far, drawn by :class:`racer.progress.ProgressBar` as every racer progress display is: a
    bar over the budget (maxExperiments) redrawn in place on a terminal or in a notebook, and
    in a log or pipe one line at each quarter of the budget (without a run budget, maxTime,
    only the final line)."""

    def __init__(self, stream: Any = None, quiet: bool = False) -> None:
        from racer.progress import ProgressBar

        self.quiet = quiet
        self._bar = ProgressBar(stream=stream, enabled=not quiet)
        self.text = ""
        self._state: dict = {}
        self._races = 0
        self._race_id = None

    def _describe(self, state: dict, race) -> str:
        from racer.progress import iteration_text

        it = state.get("iteration")
        where = "test phase" if it == "test" else iteration_text(it, state.get("planned", it))
        budget = state.get("budget") or 0
        used = state.get("experiments", 0)
        spent = f"{used}/{budget} runs" if budget else f"{used} runs"
        best = ""
        res = race.result()
        if res.directions is not None:  # several objectives: no best, a front
            best = f" | front of {len(res.pareto_front_indices)}"
        elif len(res.survivors):
            b = res.survivors[0]
            mean = res.mean_scores[res.best_index]
            best = f" | best #{b.id} mean {mean:.6g}" if np.isfinite(mean) else f" | best #{b.id}"
        self.text = (f"{where} | race {self._races}: instance {race.n_instances}, "
                     f"{len(race.survivor_indices)}/{len(race.candidates)} alive | {spent}{best}")
        return self.text

    def __call__(self, state: dict, race) -> None:
        if id(race) != self._race_id:
            self._race_id = id(race)
            self._races += 1
        self._state = state
        budget = state.get("budget") or 0
        used = state.get("experiments", 0)
        self._bar.update(min(used / budget, 1.0) if budget else None,
                         lambda: self._describe(state, race))

    def end(self, summary: str | None = None) -> None:
        """End the line; ``summary`` (e.g. why the tuning stopped) is drawn as the final line."""
        self._bar.close(summary)
