"""A self-contained HTML report of a race, read from its journal; CSV and JSON exports.

``write_report("race.sqlite", "report.html")`` (or ``racer report race.sqlite -o report.html``;
a ``racer`` execDir instead of a journal gives the report of the whole tuning, see
:func:`write_report`)
reads the journal with :func:`racer.storage.read_journal` (and rebuilds its result with
:func:`racer.storage.result_from_journal`) -- read-only and without the
writer's lock, so it works on a finished race, an interrupted one, and one still running --
and writes one HTML file: the race's status and settings, the best candidate and the
survivors, every elimination with its evidence (the number behind the decision, a p-value or
a posterior probability as the test declares, :func:`elimination_statistic`, and the paired
record against the candidate that beat or matched it on the instances seen at that point),
the failed evaluations, the whole ranking, and the figures of :mod:`racer.plot` as inline SVG.
The file has no external scripts, styles, fonts or images: it can be mailed or archived.

``racer report race.sqlite --csv runs.csv --json race.json`` exports the journal for other
tools: the CSV has one row per evaluation, the JSON holds the settings, one record per
candidate, the decisions and the evaluations (NaN written as null).

What a journal does not hold, and what the report does about it (see docs/report.md):

* the candidates and instances are stored as their ``repr`` text, not as objects; the rebuilt
  result holds :class:`racer.storage.Repr` objects that print as that text;
* why the race stopped and the ``winner`` rule are journaled (``meta`` keys ``stop_reason``
  and ``winner``, see :mod:`racer.storage`) and shown as stored. A journal that has the rule
  but no stop reason belongs to a race that has not stopped: still running, or interrupted
  (the report says which when the last block is incomplete). Journals written before racer
  recorded them lack both: their status is inferred from the settings in the fingerprint
  (``min_survivors``, ``max_instances``, ``budget``) and from whether the last instance was
  evaluated by every survivor (a race that ran out of instances and one stopped between
  blocks look alike, "stopped between blocks"), and their survivors are ordered by mean
  score; the report says that it inferred them;
* under ``on_error="worst"`` the substitute scores of failed evaluations are not journaled:
  means are over the successful evaluations (a race on several objectives recomputes them as
  the race did, :func:`racer.storage.result_from_journal`).

A race on several objectives (``direction`` a list) gets its objectives (named by
``metadata={"objective_names": [...]}``, else "objective 1".."objective k"), its Pareto front
(:func:`racer.plot.plot_pareto_front`), each objective's means and each elimination's
dominance evidence; its CSV and JSON carry every objective (docs/report.md).
"""

from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import datetime
import html
import importlib
import io
import json
import math
import os
import re
import sys
from typing import Any

import numpy as np

from racer._text import short_repr
from racer.result import EliminationRecord, RaceResult
from racer.storage import as_path, journal_data, objective_names, result_from_journal

__all__ = ["elimination_statistic", "export_csv", "export_json", "main", "write_report"]


_STATUS_TEXT = {
    "min_survivors": "finished: no more than min_survivors candidates were left",
    "max_instances": "finished: max_instances instances were raced",
    "budget": "finished: the budget could not pay for another block",
    "interrupted": "interrupted: the last block was not evaluated by every survivor",
    "stopped_between_blocks": (
        "stopped between blocks: the instances ran out, or the race was interrupted between "
        "two blocks (a journal does not record which)"
    ),
    "not_started": "not started: no instance has been raced yet",
    "unfinished": ("not finished: the race is still running, or was interrupted between two "
                   "blocks (its journal records no stop)"),
    "instances_exhausted": "finished: the instances ran out",
    "failed": "failed: no candidate had a usable score",
    "elitist_limit": "finished: elitistLimit tests in a row eliminated nobody (irace's elitist race)",
}
# Stop reasons of a race that ended by its own rules (or its driver's): shown as finished.
_FINISHED = {"min_survivors", "max_instances", "budget", "instances_exhausted", "elitist_limit"}


def status_text(reason: str) -> str:
    """A sentence for a stop reason (journaled or inferred)."""
    return _STATUS_TEXT.get(reason, f"stopped: {reason}")


# --------------------------------------------------------------------------- evidence


def _evidence(result: RaceResult, rec: EliminationRecord) -> dict:
    """The paired record of ``rec``'s candidate against the one that beat or matched it, on
    the instances both had been evaluated on when the decision was taken."""
    if rec.by_index is None:
        return {}
    rows = slice(0, rec.n_instances)
    a = result.scores[rows, rec.candidate_index]
    b = result.scores[rows, rec.by_index]
    both = np.isfinite(a) & np.isfinite(b)
    a, b = a[both], b[both]
    if not result.maximize:
        a, b = -a, -b
    return {
        "n": int(both.sum()),
        "wins": int(np.sum(a > b)),
        "ties": int(np.sum(a == b)),
        "losses": int(np.sum(a < b)),
        "mean": float(np.mean(result.scores[rows, rec.candidate_index][both])) if both.any() else math.nan,
        "by_mean": float(np.mean(result.scores[rows, rec.by_index][both])) if both.any() else math.nan,
    }


def _objective_evidence(result: RaceResult, rec: EliminationRecord) -> dict:
    """For a race on several objectives: each objective's mean of ``rec``'s candidate and of
    the one that dominated or matched it, and on how many instances the latter dominated it
    (at least as good on every objective, better on one), on the instances both had been
    evaluated on when the decision was taken."""
    if rec.by_index is None:
        return {}
    rows = slice(0, rec.n_instances)
    a = result.objective_scores[rows, rec.candidate_index]
    b = result.objective_scores[rows, rec.by_index]
    both = np.all(np.isfinite(a) & np.isfinite(b), axis=1)
    a, b = a[both], b[both]
    sign = np.array([1.0 if d == "maximize" else -1.0 for d in result.directions])
    better, worse = b * sign > a * sign, b * sign < a * sign
    return {
        "n": int(both.sum()),
        "by_dominates": int(np.sum(better.any(axis=1) & ~worse.any(axis=1))),
        "dominates_by": int(np.sum(worse.any(axis=1) & ~better.any(axis=1))),
        "means": a.mean(axis=0) if both.any() else np.full(len(sign), math.nan),
        "by_means": b.mean(axis=0) if both.any() else np.full(len(sign), math.nan),
    }


# --------------------------------------------------------------------------- what the numbers are


def elimination_statistic(journal: Any) -> str:
    """What the number behind each elimination of a journaled race is: ``"p-value"``,
    ``"posterior probability"``, or ``"unknown"``.

    A racing test declares it (:attr:`racer.racing.base.RacingTest.elimination_statistic`);
    a journal stores the test's class path and settings, so the report imports that class
    (which runs its module, as unpickling would) and reads the declaration. A wrapper that
    declares None (:class:`~racer.racing.base.ProtectElites`), or that declares nothing and
    journals the test it wraps as ``inner``, passes on that test's numbers: the report reads
    the inner test's declaration, found by name among the racing tests racer has imported.
    What cannot be imported or found is ``"unknown"``: the report then says it does not know
    rather than guess. ``journal`` is a path or the dict of :func:`racer.storage.read_journal`.

    >>> import os, tempfile
    >>> from racer import race
    >>> from racer.racing import TRaceTest
    >>> path = os.path.join(tempfile.mkdtemp(), "r.sqlite")
    >>> _ = race(lambda c, i: c * i, [1, 2, 3], range(8), test=TRaceTest(), progress=False,
    ...          random_state=0, storage=path)
    >>> elimination_statistic(path)
    'p-value'
    """
    return _fingerprint_statistic(journal_data(journal)["fingerprint"])


def _fingerprint_statistic(fp: dict) -> str:
    test = fp.get("test")
    params = fp.get("test_params") or {}
    if not isinstance(test, str) or not isinstance(params, dict):
        return "unknown"
    return _statistic_of(_class_at(test), params)


def _statistic_of(cls: type | None, params: dict) -> str:
    """The declaration of the racing test ``cls`` journaled with ``params`` (values as the
    journal stores them: reprs), following a wrapper to the test it wraps."""
    from racer.racing.base import RacingTest

    if not (isinstance(cls, type) and issubclass(cls, RacingTest)):
        return "unknown"
    declared = cls.elimination_statistic
    undeclared = not any("elimination_statistic" in vars(c) for c in cls.__mro__
                         if c is not RacingTest)
    if declared is None or (undeclared and "inner" in params):
        return _inner_statistic(params)
    return declared if isinstance(declared, str) and declared else "unknown"


def _inner_statistic(params: dict) -> str:
    """The declaration of the test a wrapper journaled as ``inner``: ``"Name[(key, value),
    ...]"`` (ProtectElites, CappedTest) or ``"Name"`` with ``inner__key`` entries beside it
    (the cross-validation wrappers), found by name among the racing tests imported."""
    text = _literal(params.get("inner"))
    match = re.match(r"\s*([A-Za-z_][\w.]*)", text) if isinstance(text, str) else None
    if match is None:
        return "unknown"
    name, rest = match.group(1), text[match.end():].strip()
    inner_params = {key[len("inner__"):]: value for key, value in params.items()
                    if key.startswith("inner__")}
    if rest:
        try:
            inner_params = {str(k): repr(v) for k, v in _literal(rest)}
        except (TypeError, ValueError):
            pass  # settings that are no literal: the class alone may still say
    kinds = {_statistic_of(cls, inner_params) for cls in _racing_test_classes()
             if cls.__qualname__ == name}
    # Not found, or two classes of that name that disagree: racer cannot tell.
    return kinds.pop() if len(kinds) == 1 else "unknown"


def _literal(text: Any) -> Any:
    """A journaled repr read back where it is a literal; the text itself otherwise."""
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _class_at(path: str) -> type | None:
    """The class at ``package.module.Qual.Name``, or None when it cannot be imported."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - any failure to import means "cannot tell"
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj if isinstance(obj, type) else None
    return None


def _racing_test_classes() -> list[type]:
    """Every RacingTest subclass imported so far, after importing racer's own racing tests."""
    import pkgutil

    import racer.racing
    from racer.racing.base import RacingTest

    for module in pkgutil.iter_modules(racer.racing.__path__):
        importlib.import_module(f"racer.racing.{module.name}")
    found, todo = [], [RacingTest]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def _statistic_phrase(statistic: str) -> str:
    """The words of the eliminations' paragraph for the test's number."""
    if statistic == "unknown":
        return ("number the test reported (a p-value or a posterior probability: racer could "
                "not import the journaled test class, or the test it wraps, to read which)")
    return f"{statistic} the test reported"


def _statistic_word(statistic: str) -> str:
    """The test's number in a caption."""
    if statistic == "unknown":
        return "the test's number (a p-value or a probability: unknown)"
    return statistic


def _statistic_header(statistic: str) -> str:
    return "p-value or probability (unknown)" if statistic == "unknown" else _esc(statistic)



# --------------------------------------------------------------------------- exports


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating,)):
        return _jsonable(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def export_csv(journal: Any, path: Any) -> str:
    """Write one row per evaluation: candidate, candidate_repr, instance, instance_repr,
    value (empty when failed), error. Returns the path written.

    >>> import os, tempfile
    >>> from racer import race
    >>> folder = tempfile.mkdtemp()
    >>> _ = race(lambda c, i: c * i, [1, 2], range(5), progress=False, random_state=0,
    ...          storage=os.path.join(folder, "r.sqlite"))
    >>> out = export_csv(os.path.join(folder, "r.sqlite"), os.path.join(folder, "runs.csv"))
    >>> open(out).readline().strip()
    'candidate,candidate_repr,instance,instance_repr,value,error'
    """
    data = journal_data(journal)
    out = _output_path(path, "path")
    cands = data["fingerprint"]["candidates"]
    insts = data["instances"]
    directions = data["fingerprint"].get("direction")
    k = len(directions) if isinstance(directions, list) else 0
    vectors: dict = {}
    for cand, inst, objective, value in data.get("objective_values") or ():
        vectors.setdefault((cand, inst), [None] * k)[objective] = value
    with open(out, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        # A race on several objectives: `value` is the first (as in the journal), then every
        # objective in its own column (names and directions are in the JSON export).
        writer.writerow(["candidate", "candidate_repr", "instance", "instance_repr", "value", "error"]
                        + [f"objective_{o + 1}" for o in range(k)])
        for cand, inst, value, error in data["evaluations"]:
            vector = vectors.get((cand, inst), [None] * k)
            writer.writerow([
                cand, cands[cand] if cand < len(cands) else "", inst,
                insts[inst] if inst < len(insts) else "",
                "" if value is None else repr(float(value)), "" if error is None else error,
            ] + ["" if v is None else repr(float(v)) for v in vector])
    return out


def race_record(journal: Any) -> dict:
    """The race as plain JSON-ready data (what ``--json`` writes). Each elimination's
    ``probability`` is what ``elimination_statistic`` says (:func:`elimination_statistic`)."""
    data = journal_data(journal)
    result = result_from_journal(data)
    records = {rec.candidate_index: rec for rec in result.history}
    rank = np.empty(len(result.candidates), dtype=np.int64)
    rank[result.ranking_indices] = np.arange(1, len(result.candidates) + 1)
    candidates = []
    for idx, cand in enumerate(result.candidates):
        rec = records.get(idx)
        candidates.append({
            "index": idx, "repr": cand.text, "rank": int(rank[idx]),
            "mean_score": _jsonable(float(result.mean_scores[idx])),
            "n_evaluated": int(result.n_evaluated[idx]), "survivor": rec is None,
            "reason": None if rec is None else rec.reason,
            "by_index": None if rec is None else rec.by_index,
            "probability": None if rec is None else _jsonable(rec.probability),
            "eliminated_at": None if rec is None else rec.n_instances,
            "step": None if rec is None else rec.step,
        })
    evaluations = [
        {"candidate": c, "instance": i, "value": _jsonable(v), "error": e}
        for c, i, v, e in data["evaluations"]
    ]
    extra = ({} if result.directions is None
             else _objective_record(data, result, candidates, evaluations))
    return {
        "format": "racer-race/1",
        "status": result.stop_reason,
        "status_text": status_text(result.stop_reason),
        "status_journaled": bool(data.get("stop_reason")),
        "winner": data.get("winner"),
        "best_index": result.best_index,
        "survivor_indices": [int(i) for i in result.survivor_indices],
        "n_candidates": len(result.candidates),
        "n_instances": result.n_instances,
        "n_evaluations": result.n_evaluations,
        "maximize": result.maximize,
        "seed": data["seed"],
        "settings": data["fingerprint"],
        "elimination_statistic": _fingerprint_statistic(data["fingerprint"]),
        "candidates": candidates,
        "instances": data["instances"],
        "decisions": [
            dict(zip(("step", "n_instances", "candidate", "reason", "by", "probability"),
                     (step, n, c, r, b, _jsonable(p))))
            for step, n, c, r, b, p in data["decisions"]
        ],
        "evaluations": evaluations,
        **extra,
    }


def _objective_record(data: dict, result: RaceResult, candidates: list, evaluations: list) -> dict:
    """A race on several objectives: each candidate's means and whether it is on the front,
    and each evaluation's vector, added to the records of :func:`race_record`; returns the
    objectives and the front, for its top level."""
    names = objective_names(data["fingerprint"], len(result.directions))
    front = set(result.pareto_front_indices.tolist())
    for idx, entry in enumerate(candidates):
        entry["mean_objectives"] = [_jsonable(float(v)) for v in result.mean_objective_scores[idx]]
        entry["on_pareto_front"] = idx in front
    vectors: dict = {}
    for cand, inst, objective, value in data.get("objective_values") or ():
        vectors.setdefault((cand, inst), [None] * len(names))[objective] = _jsonable(value)
    for entry in evaluations:
        entry["values"] = vectors.get((entry["candidate"], entry["instance"]))  # None: failed
    return {
        "objectives": [{"name": n, "direction": d} for n, d in zip(names, result.directions)],
        "pareto_front_indices": [int(i) for i in result.pareto_front_indices],
    }


def export_json(journal: Any, path: Any) -> str:
    """Write :func:`race_record` as JSON (strict: NaN becomes null). Returns the path."""
    record = race_record(journal)
    out = _output_path(path, "path")
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1, allow_nan=False)
        fh.write("\n")
    return out


def _output_path(path: Any, arg: str) -> str:
    text = as_path(path, arg)
    absolute = os.path.abspath(text)
    if os.path.isdir(absolute):
        raise IsADirectoryError(f"`{arg}`={text!r} is a folder; pass a file path")
    parent = os.path.dirname(absolute)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"`{arg}`={text!r}: its folder {parent!r} does not exist")
    return text


# --------------------------------------------------------------------------- HTML


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
  max-width:1100px;margin:24px auto;padding:0 16px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;
  padding-bottom:3px}
.sub{color:#666;margin:0 0 12px}
.status{display:inline-block;padding:2px 8px;border-radius:4px;font-weight:600}
.finished{background:#e3f4e8;color:#1e6b3a}.unknown{background:#eef1f5;color:#34495e}.interrupted{background:#fdf0dc;color:#8a5300}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f6f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
.kv td:first-child{color:#555;white-space:nowrap}
.fig{margin:10px 0 18px}.fig svg{max-width:100%;height:auto}
.note{color:#8a5300;background:#fdf6ea;padding:6px 10px;border-radius:4px}
.best{background:#eef8f0}
details{margin:6px 0}summary{cursor:pointer;color:#245}
"""


_WINNER_TEXT = {
    "mean": "survivors ordered by mean score",
    "mean_rank": "survivors ordered by mean rank on the instances they all completed",
    "rank_sum": "survivors ordered by sum of ranks on the instances they all completed (irace's order)",
}


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float, digits: int = 4) -> str:
    return "&ndash;" if value is None or not math.isfinite(value) else f"{value:.{digits}g}"


def _svg(fig, salt: str) -> str:
    import matplotlib

    buf = io.StringIO()
    # Text as text (small, selectable); a fixed salt per figure gives ids that are the same from
    # run to run and distinct between the figures of one page (they share one id namespace).
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def _figure_adder(out: list, salt: str):
    """``add(title, caption, make)``: append (title, caption, svg), or a note saying why the
    figure could not be drawn. ``salt`` keeps SVG ids distinct between figures of one page."""

    def add(title, caption, make):
        try:
            fig = make()
        except ValueError as exc:
            out.append((title, caption, f'<p class="note">Not drawn: {_esc(exc)}</p>'))
            return
        out.append((title, caption, _svg(fig, f"racer-fig-{salt}{len(out)}")))

    return add


def _figures(result: RaceResult, rope: float, random_state: int, which: str = "all",
             salt: str = "", statistic: str = "unknown") -> list[tuple[str, str, str]]:
    """(title, caption, svg or note) for each figure; a figure that cannot be drawn says why.
    ``which="race"`` draws only the timeline and the score matrix (for the many races of a
    tuning report); ``statistic`` names the timeline's numbers (:func:`elimination_statistic`)."""
    from racer import plot

    out: list = []
    add = _figure_adder(out, salt)
    add("Race timeline", "Survivors after each instance; one line per candidate, ending where "
        f"it was eliminated (marker: reason; label: {_statistic_word(statistic)} and who beat "
        "or matched it).",
        lambda: plot.plot_race_timeline(result))
    if which == "race":
        add("Score matrix", "Every evaluation, instances by candidates in ranking order; grey: "
            "not evaluated (eliminated) or failed.",
            lambda: plot.plot_score_matrix(result, candidates="all"))
        return out
    add("Evaluations per candidate", "Where the budget went, in ranking order.",
        lambda: plot.plot_evaluations(result))
    add("Score matrix", "Every evaluation, instances by candidates in ranking order; grey: "
        "not evaluated (eliminated) or failed.",
        lambda: plot.plot_score_matrix(result, candidates="all"))
    final = plot.contenders(result)
    who = ", ".join(f"#{int(i)}" for i in final)
    add("Pairwise posterior probabilities", f"Bayesian sign test between the final contenders "
        f"({who}) on the instances they all saw.",
        lambda: plot.plot_pairwise_probabilities(result))
    add("Critical-difference diagram", f"Friedman/Nemenyi on the final contenders ({who}).",
        lambda: plot.plot_critical_difference(result))
    add("Bayesian critical-difference diagram", "Posterior mean ranks (Bayesian Friedman, "
        "whiskers: one posterior sd); bars join contenders no pair of which is ordered with "
        "probability >= 0.95 by the Bayesian sign test.",
        lambda: plot.plot_bayesian_critical_difference(result, random_state=random_state))
    if len(result.ranking_indices) >= 2:
        i, j = int(result.ranking_indices[0]), int(result.ranking_indices[1])

        def simplex():
            both = np.isfinite(result.scores[:, i]) & np.isfinite(result.scores[:, j])
            if both.sum() < 1:
                raise ValueError(f"#{i} and #{j} share no evaluated instance")
            return plot.plot_posterior_simplex(
                result.scores[both, i], result.scores[both, j], rope=rope,
                maximize=result.maximize, names=(f"#{i}", f"#{j}"), random_state=random_state)

        add(f"Posterior simplex: #{i} vs #{j}", f"Bayesian sign test with rope {rope:g} (set "
            "with --rope, in score units) between the first two of the ranking, on the "
            "instances both saw; each dot is a posterior draw.", simplex)
    return out


# --------------------------------------------------------------------------- a race's page
#
# One function per section of the page. Each reads the _RacePage (the journal, its rebuilt
# result and what the page derives once from them) and returns its lines; _html puts them in
# order. The lines are joined with newlines, so a section that shows nothing returns [].


@dataclasses.dataclass(frozen=True)
class _RacePage:
    """What every section of a race's page reads."""

    path_text: str
    data: dict
    result: RaceResult
    records: dict  # candidate index -> its EliminationRecord (survivors have none)
    names: list  # the objectives' names; [] for a race on one objective
    statistic: str  # what the eliminations' numbers are (elimination_statistic)

    @property
    def fp(self) -> dict:
        return self.data["fingerprint"]

    @property
    def multi(self) -> bool:
        return self.result.directions is not None

    @property
    def journaled_stop(self) -> bool:
        return bool(self.data.get("stop_reason"))

    @property
    def winner(self) -> Any:
        return self.data.get("winner")


def _race_page(path_text: str, data: dict, result: RaceResult) -> _RacePage:
    fp = data["fingerprint"]
    multi = result.directions is not None
    return _RacePage(
        path_text=path_text, data=data, result=result,
        records={rec.candidate_index: rec for rec in result.history},
        names=objective_names(fp, len(result.directions)) if multi else [],
        statistic=_fingerprint_statistic(fp),
    )


def _html(path_text: str, data: dict, result: RaceResult, rope: float, random_state: int,
          title: str | None, *, standalone: bool = True, figures: str = "all", salt: str = "") -> str:
    """The page of one race, or (``standalone=False``) its section in a tuning's page, one
    heading level down; ``figures`` and ``salt`` as for :func:`_figures`."""
    page = _race_page(path_text, data, result)
    h = _race_heading(page, title) if standalone else []
    h += _status_line(page)
    h += _summary_section(page)
    h += _survivors_section(page)
    h += _eliminations_section(page)
    h += _failures_section(page)
    h += _figures_section(page, rope, random_state, figures, salt)
    h += _ranking_section(page)
    h += _caveats_section(page)
    if standalone:
        h.append("<p class=\"sub\">Generated by racer.report.</p></body></html>")
        return "\n".join(h)
    # Nested in a tuning report: one heading level down.
    text = "\n".join(h)
    for a, b in (("h3", "h4"), ("h2", "h3")):
        text = text.replace(f"<{a}>", f"<{b}>").replace(f"</{a}>", f"</{b}>")
    return text


def _race_heading(page: _RacePage, title: str | None) -> list[str]:
    return [_page_head(title or "racer report: " + os.path.basename(page.path_text)),
            f"<h1>{_esc(title or 'Race report')}</h1>",
            f'<p class="sub">Journal <code>{_esc(page.path_text)}</code>, read {_now()}</p>']


def _status_line(page: _RacePage) -> list[str]:
    reason = page.result.stop_reason
    status_cls = "finished" if reason in _FINISHED else (
        "interrupted" if reason in ("interrupted", "failed") else "unknown")
    source = "as journaled" if page.journaled_stop else "inferred: this journal records no stop"
    return [f'<p><span class="status {status_cls}">{_esc(status_text(reason))}</span> '
            f'<span class="sub">({source})</span></p>']


def _summary_section(page: _RacePage) -> list[str]:
    rows = _summary_rows(page)
    return (["<h2>Summary</h2><table class=\"kv\">"]
            + [f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows] + ["</table>"])


def _summary_rows(page: _RacePage) -> list[tuple[str, str]]:
    """(label, HTML) rows of the summary: the best, the counts, the settings as journaled."""
    result, fp, winner = page.result, page.fp, page.winner
    n_cand = len(result.candidates)
    full = n_cand * result.n_instances
    share = f" ({100.0 * result.n_evaluations / full:.0f}% of every candidate on every instance)" if full else ""
    best_mean = result.mean_scores[result.best_index]
    rows = [
        ("Best", f"<code>#{result.best_index} {_esc(result.best)}</code> "
                 f"(mean score {_num(best_mean, 6)}, {'maximized' if result.maximize else 'minimized'})"),
        ("Candidates", f"{n_cand}: {len(result.survivors)} survivors, {len(result.history)} "
                       f"eliminated ({_esc(result._reason_counts())})"),
        ("Instances raced", str(result.n_instances)),
        ("Evaluations", f"{result.n_evaluations}{share}; failed: {len(result.failures)}"),
        ("Budget", "none" if result.budget is None else str(result.budget)),
        ("Stop reason", f"<code>{_esc(result.stop_reason)}</code>"
                        + ("" if page.journaled_stop else " (inferred)")),
        ("Winner rule", f"<code>{_esc(winner)}</code> ({_WINNER_TEXT.get(winner, '')})"
                        if winner else "not journaled (older racer): survivors ordered by mean score"),
        ("Test", f"<code>{_esc(fp.get('test', '?'))}</code>"),
        ("Test settings", ", ".join(f"{_esc(k)}={_esc(v)}" for k, v in fp.get("test_params", {}).items()) or "&ndash;"),
        ("Race settings", ", ".join(
            f"{k}={_esc(fp.get(k))}" for k in ("first_test", "each_test", "min_survivors",
                                               "max_instances", "shuffle", "on_error")
            if k in fp)),
        ("Seed", _esc(page.data["seed"])),
    ]
    if fp.get("metadata"):
        rows.append(("Metadata", ", ".join(f"{_esc(k)}={_esc(v)}" for k, v in fp["metadata"].items())))
    if page.multi:
        names, front = page.names, result.pareto_front_indices
        rows[0] = ("Best", f"<code>#{result.best_index} {_esc(result.best)}</code> (the best "
                           f"survivor on {_esc(names[0])}, the first objective; the race's answer is "
                           "the Pareto front)")
        rows[1:1] = [
            ("Objectives", ", ".join(f"{_esc(n)} ({d})" for n, d in zip(names, result.directions))),
            ("Pareto front", f"{len(front)} of {len(result.survivors)} survivors: "
                             + ", ".join(f"<code>#{int(i)}</code>" for i in front)),
        ]
    return rows


def _survivors_section(page: _RacePage) -> list[str]:
    result = page.result
    h = [f"<h2>Survivors ({len(result.survivors)})</h2>"]
    if page.multi:
        return h + [_objective_table(result, page.names, result.survivor_indices, page.records)]
    h.append("<table><tr><th>rank</th><th>candidate</th><th>mean score</th><th>instances</th></tr>")
    for rank, idx in enumerate(result.survivor_indices, start=1):
        cls = ' class="best"' if idx == result.best_index else ""
        h.append(f"<tr{cls}><td class=num>{rank}</td><td><code>#{idx} {_esc(result.candidates[idx])}</code></td>"
                 f"<td class=num>{_num(result.mean_scores[idx], 6)}</td>"
                 f"<td class=num>{int(result.n_evaluated[idx])}</td></tr>")
    h.append("</table>")
    return h


def _eliminations_section(page: _RacePage) -> list[str]:
    result = page.result
    h = [f"<h2>Eliminations ({len(result.history)})</h2>"]
    if not result.history:
        return h + ["<p>No candidate has been eliminated.</p>"]
    if page.multi:
        return h + [_objective_eliminations(result, page.names, page.statistic)]
    h.append(f"<p>Each elimination with the {_statistic_phrase(page.statistic)} and the paired "
             "record against the candidate that beat (dominated) or matched "
             "(indistinguishable) it, on the instances both had seen when it was decided "
             "(wins / ties / losses of the eliminated candidate).</p>")
    long = len(result.history) > 25
    if long:  # a long list would push the figures far down: folded, one click away
        h.append(f"<details><summary>Show all {len(result.history)} eliminations</summary>")
    h.append(f"<table><tr><th>step</th><th>after instance</th><th>candidate</th><th>reason</th>"
             f"<th>by</th><th>{_statistic_header(page.statistic)}</th><th>record (W/T/L)</th>"
             "<th>mean</th><th>mean of by</th></tr>")
    for rec in result.history:
        ev = _evidence(result, rec)
        by = "&ndash;" if rec.by_index is None else f"<code>#{rec.by_index}</code>"
        record = f"{ev['wins']}/{ev['ties']}/{ev['losses']} of {ev['n']}" if ev else "&ndash;"
        h.append(
            f"<tr><td class=num>{rec.step}</td><td class=num>{rec.n_instances}</td>"
            f"<td><code>#{rec.candidate_index} {_esc(short_repr(rec.candidate, 60))}</code></td>"
            f"<td>{_esc(rec.reason)}</td><td>{by}</td><td class=num>{_num(rec.probability)}</td>"
            f"<td class=num>{record}</td><td class=num>{_num(ev.get('mean', math.nan))}</td>"
            f"<td class=num>{_num(ev.get('by_mean', math.nan))}</td></tr>")
    h.append("</table>" + ("</details>" if long else ""))
    return h


def _failures_section(page: _RacePage) -> list[str]:
    result = page.result
    if not result.failures:
        return []
    h = [f"<h2>Failed evaluations ({len(result.failures)})</h2><table>"
         "<tr><th>candidate</th><th>instance</th><th>error</th></tr>"]
    for cand, inst, msg in result.failures[:200]:
        h.append(f"<tr><td><code>#{cand}</code></td><td>{inst}: <code>{_esc(short_repr(result.instances[inst], 60))}</code></td>"
                 f"<td><code>{_esc(msg)}</code></td></tr>")
    h.append("</table>")
    if len(result.failures) > 200:
        h.append(f"<p>... {len(result.failures) - 200} more (see --csv).</p>")
    return h


def _figures_section(page: _RacePage, rope: float, random_state: int, figures: str,
                     salt: str) -> list[str]:
    if page.multi:
        drawn = _objective_figures(page.result, page.names, figures, salt, page.statistic)
    else:
        drawn = _figures(page.result, rope, random_state, figures, salt, page.statistic)
    return ["<h2>Figures</h2>"] + _figure_blocks(drawn)


def _figure_blocks(drawn: list[tuple[str, str, str]]) -> list[str]:
    return [f'<div class="fig"><h3>{_esc(fig_title)}</h3><p class="sub">{_esc(caption)}</p>{body}</div>'
            for fig_title, caption, body in drawn]


def _ranking_section(page: _RacePage) -> list[str]:
    result, names = page.result, page.names
    n_cand = len(result.candidates)
    h = [f"<h2>Ranking ({n_cand} candidates)</h2>"]
    if page.multi:
        return h + [f"<details{' open' if n_cand <= 25 else ''}><summary>All candidates: survivors "
                    f"(best first on {_esc(names[0])}), then eliminated ones by instances seen and "
                    f"mean {_esc(names[0])}</summary>"
                    + _objective_table(result, names, result.ranking_indices, page.records, status=True)
                    + "</details>"]
    h.append(f"<details{' open' if n_cand <= 25 else ''}><summary>All candidates, best first: survivors, then eliminated ones by "
             "instances seen and mean score</summary><table><tr><th>rank</th><th>candidate</th>"
             "<th>mean score</th><th>instances</th><th>status</th></tr>")
    for rank, idx in enumerate(result.ranking_indices, start=1):
        status_txt = _candidate_status(page.records.get(int(idx)))
        h.append(f"<tr><td class=num>{rank}</td><td><code>#{idx} {_esc(result.candidates[idx])}</code></td>"
                 f"<td class=num>{_num(result.mean_scores[idx], 6)}</td>"
                 f"<td class=num>{int(result.n_evaluated[idx])}</td><td>{_esc(status_txt)}</td></tr>")
    h.append("</table></details>")
    return h


def _candidate_status(rec: EliminationRecord | None) -> str:
    """"survivor", or why and when the candidate left the race."""
    if rec is None:
        return "survivor"
    return rec.reason if rec.by_index is None else f"{rec.reason} by #{rec.by_index} after {rec.n_instances}"


def _caveats_section(page: _RacePage) -> list[str]:
    """What the journal does not say, and what the page shows instead."""
    h = ["<h2>What the journal does not say</h2><ul>",
         "<li>Candidates and instances are shown as the <code>repr</code> text the journal stores.</li>"]
    if not page.journaled_stop:
        h.append("<li>No stop reason is journaled: the status is inferred from the race's "
                 "settings and from whether the last instance was completed.</li>")
    if not page.winner:
        h.append("<li>The <code>winner</code> rule is not journaled (a journal of an older racer): "
                 "survivors are ordered by mean score.</li>")
    substituted = page.fp.get("on_error") == "worst" and page.result.failures
    if page.multi and substituted:
        h.append("<li>Failed evaluations counted, on each objective, at a substitute score worse "
                 "than every success on their instance during the race "
                 "(<code>on_error=\"worst\"</code>); the substitutes are not journaled but "
                 "recomputed from the journal as the race computed them, so the means and the "
                 "front here are the race's own.</li>")
    elif substituted:
        h.append("<li>Failed evaluations counted at a substitute score during the race "
                 "(<code>on_error=\"worst\"</code>); the substitutes are not journaled, so the "
                 "means here are over successful evaluations only.</li>")
    h.append("</ul>")
    return h


def _objective_table(result: RaceResult, names: list, indices: Any, records: dict, *,
                     status: bool = False) -> str:
    """A table of candidates of a race on several objectives: each objective's mean, the
    instances seen, whether on the Pareto front (and, with ``status``, survivor or why out)."""
    front = set(int(i) for i in result.pareto_front_indices)
    h = ["<table><tr><th>rank</th><th>candidate</th>"
         + "".join(f"<th>mean {_esc(n)} ({d[:3]})</th>" for n, d in zip(names, result.directions))
         + "<th>instances</th><th>Pareto front</th>" + ("<th>status</th>" if status else "") + "</tr>"]
    for rank, idx in enumerate(indices, start=1):
        idx = int(idx)
        rec = records.get(idx)
        cls = ' class="best"' if idx in front else ""
        cells = "".join(f"<td class=num>{_num(v, 6)}</td>" for v in result.mean_objective_scores[idx])
        status_txt = _candidate_status(rec)
        h.append(f"<tr{cls}><td class=num>{rank}</td><td><code>#{idx} {_esc(result.candidates[idx])}</code></td>"
                 f"{cells}<td class=num>{int(result.n_evaluated[idx])}</td>"
                 f"<td>{'yes' if idx in front else ''}</td>"
                 + (f"<td>{_esc(status_txt)}</td>" if status else "") + "</tr>")
    h.append("</table>")
    return "\n".join(h)


def _objective_eliminations(result: RaceResult, names: list, statistic: str) -> str:
    """The eliminations of a race on several objectives, each with its evidence."""
    k = len(names)
    meaning = (": for <em>dominated</em>, that the candidate in <em>by</em> dominates it (at "
               "least as good on every objective, better on one, on the means over the instance "
               "distribution); for <em>indistinguishable</em>, that the two are practically "
               "equivalent on every objective" if statistic == "posterior probability" else "")
    h = [f"<p>Each elimination with the {_statistic_phrase(statistic)}{meaning}. Beside it, on "
         "the instances both had seen when it was decided: on how many "
         "<em>by</em> dominated it instance by instance (and it dominated <em>by</em>), and each "
         "objective's mean of both.</p>"]
    long = len(result.history) > 25
    if long:
        h.append(f"<details><summary>Show all {len(result.history)} eliminations</summary>")
    h.append("<table><tr><th>step</th><th>after instance</th><th>candidate</th><th>reason</th>"
             f"<th>by</th><th>{_statistic_header(statistic)}</th>"
             "<th>instances by dominates it / it dominates by</th>"
             + "".join(f"<th>mean {_esc(n)}</th><th>of by</th>" for n in names) + "</tr>")
    for rec in result.history:
        ev = _objective_evidence(result, rec)
        by = "&ndash;" if rec.by_index is None else f"<code>#{rec.by_index}</code>"
        record = f"{ev['by_dominates']} / {ev['dominates_by']} of {ev['n']}" if ev else "&ndash;"
        means = ev.get("means", [math.nan] * k)
        by_means = ev.get("by_means", [math.nan] * k)
        h.append(
            f"<tr><td class=num>{rec.step}</td><td class=num>{rec.n_instances}</td>"
            f"<td><code>#{rec.candidate_index} {_esc(short_repr(rec.candidate, 60))}</code></td>"
            f"<td>{_esc(rec.reason)}</td><td>{by}</td><td class=num>{_num(rec.probability)}</td>"
            f"<td class=num>{record}</td>"
            + "".join(f"<td class=num>{_num(float(a))}</td><td class=num>{_num(float(b))}</td>"
                      for a, b in zip(means, by_means)) + "</tr>")
    h.append("</table>" + ("</details>" if long else ""))
    return "\n".join(h)


def _objective_figures(result: RaceResult, names: list, which: str = "all",
                       salt: str = "", statistic: str = "unknown") -> list[tuple[str, str, str]]:
    """The figures of a race on several objectives: the front first, then the timeline, and
    (``which="all"``) the evaluations and the score matrix of the first objective. The
    single-objective statistics figures (sign tests, critical differences) are left out: they
    compare one score per instance, which is not what such a race decides on."""
    from racer import plot

    out: list = []
    add = _figure_adder(out, salt)
    k = len(names)
    add("Pareto front", "Every candidate's mean on each objective (an eliminated candidate's "
        "over the instances it saw); large circles: the Pareto front, the survivors no other "
        "survivor dominates on the means" + (", joined by the staircase that bounds what they "
        "dominate" if k == 2 else f"; one panel per pair of the {k} objectives") + "; crosses "
        "and dots: eliminated candidates by reason, as in the timeline.",
        lambda: plot.plot_pareto_front(result, names=names))
    add("Race timeline", "Survivors after each instance; one line per candidate, ending where "
        f"it was eliminated (marker: reason; label: {_statistic_word(statistic)} and who "
        "dominated or matched it). Rows in order of the first objective.",
        lambda: plot.plot_race_timeline(result))
    if which == "all":
        add("Evaluations per candidate", "Where the budget went.",
            lambda: plot.plot_evaluations(result))
    add(f"Score matrix of {names[0]}", f"Every evaluation's {names[0]} (the first objective), "
        "instances by candidates; grey: not evaluated (eliminated) or failed.",
        lambda: plot.plot_score_matrix(result, candidates="all"))
    return out


def _value_text(value: Any) -> str:
    if value is None:
        return "NA"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _run_html(run: Any, rope: float, random_state: int, title: str | None) -> str:
    """The report of a ``racer --scenario`` run (an :class:`racer.tuning.record.IteratedRun`),
    one function per section; the lines are joined with newlines."""
    final = [c for c in run.final_elites if c in run.configurations]
    first_only = _first_objective_note(run)
    h = _run_heading(run, title)
    h += _run_summary_section(run)
    h += _run_elites_section(run, final)
    h += _run_test_section(run, first_only)
    h += _run_elite_figures(run, final, first_only)
    h += _run_figures_section(run)
    h += _run_races_section(run, rope, random_state)
    h.append("<p class=\"sub\">Generated by racer.report.</p></body></html>")
    return "\n".join(h)


def _first_objective_note(run: Any) -> str:
    """What the one-cost tables and figures show of a tuning on several objectives ("" for
    one objective, and for an Optuna run, which has no ``objectives``)."""
    objectives = getattr(run, "objectives", None)
    if objectives is None:
        return ""
    return f" The races are on several objectives: costs here are the first, {objectives['names'][0]}."


def _run_heading(run: Any, title: str | None) -> list[str]:
    h = [_page_head(title or "racer report: " + os.path.basename(os.path.abspath(run.source))),
         f"<h1>{_esc(title or 'Tuning report')}</h1>",
         f'<p class="sub">execDir <code>{_esc(run.source)}</code>, read {_now()}</p>']
    if "stop_reason" in run.info:
        h.append(f'<p><span class="status finished">finished: {_esc(run.info["stop_reason"])}</span></p>')
    else:
        h.append('<p><span class="status interrupted">not finished: no results.json (the run is '
                 'still going, or was interrupted; run the same command to resume)</span></p>')
    return h


def _run_summary_section(run: Any) -> list[str]:
    from racer.progress import iterations_done_text

    info = run.info
    rows = [
        # The words of the command's last line when results.json says what was planned.
        ("Iterations", iterations_done_text(len(run.elites), info["iterations_planned"])
         if info.get("iterations_planned") else str(len(run.elites))),
        ("Configurations sampled", str(len(run.configurations))),
        ("Races", ", ".join(f"{_esc(label)} ({len(res.candidates)} configurations, "
                            f"{_esc(res.stop_reason)})" for _it, label, res in run.races)),
        ("Target-runner runs", _esc(_runs_text(info))),
        ("Parameters", ", ".join(f"{_esc(p.name)} ({p.kind}{', log' if p.log else ''})"
                                 for p in run.parameters)),
    ]
    if "seed" in info:
        rows.append(("Seed", _esc(info["seed"])))
    objectives = getattr(run, "objectives", None)  # an Optuna run has none
    if objectives is not None:
        rows.append(("Objectives", ", ".join(f"{_esc(n)} ({d})" for n, d in
                                             zip(objectives["names"], objectives["directions"]))
                     + " (each race's section below draws its Pareto front)"))
    return (["<h2>Summary</h2><table class=\"kv\">"]
            + [f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows] + ["</table>"])


def _runs_text(info: dict) -> str:
    """The target-runner runs: done (of the budget) from results.json, else as logged so far."""
    if "experiments" in info:
        budget = f" of maxExperiments = {info['budget']}" if info.get("budget") else ""
        return f"{info['experiments']}{budget}"
    if "runs_logged" in info:
        return f"{info['runs_logged']} logged in runs.csv so far"
    return "unknown"


def _run_elites_section(run: Any, final: list) -> list[str]:
    objectives = getattr(run, "objectives", None)
    return [f"<h2>Elites ({len(final)})</h2>",
            "<p>The tuning's answer, " + ("best first" if objectives is None else "a Pareto set")
            + (" (from results.json)" if "stop_reason" in run.info
               else " (the last race's elites so far)") + ".</p>",
            _front_elites_table(run, final) if objectives is not None else _elites_table(run, final)]


def _run_test_section(run: Any, first_only: str) -> list[str]:
    if not run.test:
        return []
    if getattr(run, "objectives", None) is not None:
        return [_front_test_table(run)]
    n_test = len(run.test["instances"])
    h = [f"<h2>Test phase ({n_test} instances)</h2>"
         + (f"<p>{_esc(first_only.strip())}</p>" if first_only else "")
         + "<table><tr><th>configuration</th>"
         "<th>runs</th><th>mean cost</th><th>median</th><th>min</th><th>max</th></tr>"]
    for cid, costs in run.test["costs"].items():
        ok = np.array([c for c in costs if c is not None], dtype=float)
        stats = [float(np.mean(ok)), float(np.median(ok)), float(ok.min()), float(ok.max())] if ok.size else [math.nan] * 4
        h.append(f"<tr><td class=num>#{cid}</td><td class=num>{ok.size} of {n_test}</td>"
                 + "".join(f"<td class=num>{_num(v, 6)}</td>" for v in stats) + "</tr>")
    h.append("</table>")
    return h


def _run_elite_figures(run: Any, final: list, first_only: str) -> list[str]:
    """Next to the test-phase table (or the elites' table when there is no test phase): the
    same elites' scores as box plots, as iraceplot draws them; for several objectives, the
    final front first."""
    from racer import plot

    if not final:
        return []
    boxes: list = []
    test_words = " and on the test instances (right, same axis)" if run.test else ""
    _figure_adder(boxes, "run-elites-")(
        "Elites' costs on the training" + (" and test" if run.test else "") + " instances",
        "One box per final elite, best first: its costs on the training instances it was "
        f"raced on{' (left)' if run.test else ''}{test_words}; every cost is a point, the triangle is the mean. "
        "Elites sampled in different iterations were raced on different training "
        "instances (the count is under each box)." + first_only,
        lambda: plot.plot_elite_costs(run))
    objectives = getattr(run, "objectives", None)
    if objectives is not None:
        k = len(objectives["names"])
        _figure_adder(boxes, "run-front-")(
            "Final Pareto front", "Each final elite's mean of every objective on the test "
            "instances (filled circles, joined by the staircase of those no other dominates "
            "there) and on the training instances of the last race (hollow circles, a line "
            "to the same elite's test mean)" + ("" if k == 2 else
            f"; one panel per pair of the {k} objectives") + ".",
            lambda: plot.plot_run_pareto_front(run))
        boxes.insert(0, boxes.pop())
    return _figure_blocks(boxes)


def _run_figures_section(run: Any) -> list[str]:
    from racer import plot

    out: list = []
    add = _figure_adder(out, "run-")
    add("Parameter sampling frequencies", "For each parameter, the share of each iteration's new "
        "configurations that took each value (bars: levels; lines: histograms of numerical "
        "parameters). Light colours are late iterations: where they pile up, the sampling "
        "model has converged.", lambda: plot.plot_parameter_frequencies(run))
    add("Elites by iteration (parallel coordinates)", "Each line is an elite kept by an "
        "iteration, across the parameters' ranges (bottom: lower bound or first level; NA: "
        "inactive); black: the final elites.", lambda: plot.plot_elite_parallel_coordinates(run))
    return ["<h2>Figures of the iterated race</h2>"] + _figure_blocks(out)


def _run_races_section(run: Any, rope: float, random_state: int) -> list[str]:
    """Every race of the tuning, folded (the last one open), as a race's page shows it."""
    h = [f"<h2>Races ({len(run.races)})</h2>",
         "<p>Each race's journal, as <code>racer report</code> shows a single race (timeline "
         "and score matrix only; run <code>racer report</code> on one journal for every "
         "figure). Candidates are shown as <code>Configuration(id: values)</code>.</p>"]
    last = len(run.races) - 1
    for k, (iteration, label, result) in enumerate(run.races):
        journal = os.path.join(run.source, "racer-journal", label)
        data = journal_data(journal) if os.path.exists(journal) else None
        summary = (f"Iteration {iteration}: {label}, {len(result.candidates)} configurations, "
                   f"{result.n_instances} instances, {result.n_evaluations} evaluations, "
                   f"stopped: {result.stop_reason}")
        h.append(f"<details{' open' if k == last else ''}><summary>{_esc(summary)}</summary>")
        if data is not None:
            h.append(_html(journal, data, result, rope, random_state, None, standalone=False,
                           figures="race", salt=f"race{k}-"))
        h.append("</details>")
    return h


def _elites_table(run: Any, final: list) -> str:
    """The final elites of a tuning on one objective, best first, with their mean test cost."""
    test_costs = (run.test or {}).get("costs", {})
    h = ["<table><tr><th>rank</th><th>id</th><th>sampled in</th>"
         + "".join(f"<th>{_esc(p.name)}</th>" for p in run.parameters)
         + ("<th>mean test cost</th>" if test_costs else "") + "</tr>"]
    for rank, cid in enumerate(final, start=1):
        values = run.configurations[cid]
        cells = "".join(f"<td><code>{_esc(_value_text(values.get(p.name)))}</code></td>"
                        for p in run.parameters)
        test_cell = ""
        if test_costs:
            ok = [c for c in test_costs.get(cid, []) if c is not None]
            test_cell = f"<td class=num>{_num(float(np.mean(ok)) if ok else math.nan, 6)}</td>"
        cls = ' class="best"' if rank == 1 else ""
        h.append(f"<tr{cls}><td class=num>{rank}</td><td class=num>{cid}</td>"
                 f"<td class=num>{run.iteration_of.get(cid, '')}</td>{cells}{test_cell}</tr>")
    h.append("</table>")
    return "\n".join(h)


def _front_elites_table(run: Any, final: list) -> str:
    """The final elites of a tuning on several objectives (a Pareto set, ranked as the Tuner
    ranked it: crowding distance, the front's ends first) with each objective's mean on the
    training instances of the last race and on the test instances."""
    names, directions = run.objectives["names"], run.objectives["directions"]
    tested = bool(run.test)
    heads = "".join(f"<th>{_esc(n)} ({_esc(d)})<br>training mean</th>"
                    for n, d in zip(names, directions))
    if tested:
        heads += "".join(f"<th>{_esc(n)} ({_esc(d)})<br>test mean</th>"
                         for n, d in zip(names, directions))
    h = ["<p>No elite dominates another on the training means; ranked by crowding "
         "distance, the front's ends first (docs/cli.md).</p>",
         "<table><tr><th>rank</th><th>id</th><th>sampled in</th>"
         + "".join(f"<th>{_esc(p.name)}</th>" for p in run.parameters) + heads + "</tr>"]
    nan = [math.nan] * len(names)
    for rank, cid in enumerate(final, start=1):
        values = run.configurations[cid]
        cells = "".join(f"<td><code>{_esc(_value_text(values.get(p.name)))}</code></td>"
                        for p in run.parameters)
        means = list(run.training_means.get(cid, nan)) + ((run.test_means(cid) or nan) if tested else [])
        h.append(f"<tr><td class=num>{rank}</td><td class=num>{cid}</td>"
                 f"<td class=num>{run.iteration_of.get(cid, '')}</td>{cells}"
                 + "".join(f"<td class=num>{_num(v, 6)}</td>" for v in means) + "</tr>")
    h.append("</table>")
    return "\n".join(h)


def _front_test_table(run: Any) -> str:
    """The test phase of a tuning on several objectives: each tested elite's mean of every
    objective over the test instances it ran on without a failure (test.csv's rows)."""
    names, directions = run.objectives["names"], run.objectives["directions"]
    n_test = len(run.test["instances"])
    vectors = run.test.get("objective_costs") or {}
    h = [f"<h2>Test phase ({n_test} instances)</h2>",
         "<table><tr><th>configuration</th><th>runs</th>"
         + "".join(f"<th>{_esc(n)} ({_esc(d)})<br>test mean</th>" for n, d in zip(names, directions))
         + "</tr>"]
    for cid in run.test["costs"]:
        ran = sum(v is not None for v in vectors.get(cid, []))
        h.append(f"<tr><td class=num>#{cid}</td><td class=num>{ran} of {n_test}</td>"
                 + "".join(f"<td class=num>{_num(v, 6)}</td>"
                           for v in (run.test_means(cid) or [math.nan] * len(names))) + "</tr>")
    h.append("</table>")
    return "\n".join(h)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _page_head(title: str) -> str:
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>")


def write_report(journal_path: Any, output_path: Any = "report.html", *, rope: float = 0.0,
                 title: str | None = None, random_state: Any = 0) -> str:
    """Write a self-contained HTML report of the race journaled at ``journal_path``, or of
    the ``racer --scenario`` run whose execution directory ``journal_path`` is.

    For an execDir (finished, interrupted or running; read by
    :func:`racer.tuning.record.read_exec_dir`) the page holds the tuning's summary, the final
    elites with their parameter values (and test costs), the test phase, the parameter
    sampling frequencies and the elites' parallel coordinates by iteration, and every race
    as a folded section (its summary, eliminations, timeline and score matrix).

    Works on a finished race, an interrupted one and one still running (the journal is read
    read-only, without its lock). The page holds the status and settings, the survivors, every
    elimination with its evidence, the failures, the ranking and the :mod:`racer.plot`
    figures as inline SVG; it loads nothing from elsewhere. ``rope`` is the region of practical
    equivalence (in score units) of the posterior simplex of the first two candidates;
    ``random_state`` seeds the figures' Monte Carlo (posterior draws), so the same journal
    gives the same figures. Returns ``output_path``.

    >>> import os, tempfile
    >>> from racer import race
    >>> folder = tempfile.mkdtemp()
    >>> _ = race(lambda c, i: c + (i % 3), [0.0, 1.0, 5.0], range(12), progress=False,
    ...          random_state=0, storage=os.path.join(folder, "race.sqlite"))
    >>> out = write_report(os.path.join(folder, "race.sqlite"), os.path.join(folder, "r.html"))
    >>> "<svg" in open(out).read()
    True
    """
    from racer._validation import check_nonnegative, seed_from_random_state

    journal_text = as_path(journal_path, "journal_path")
    out = _output_path(output_path, "output_path")
    rope = check_nonnegative(rope, "rope")
    random_state = seed_from_random_state(random_state)  # one seed shared by the figures
    if title is not None and not isinstance(title, str):
        raise TypeError(f"`title` must be a str or None; got {title!r}")
    if os.path.isdir(journal_text):
        from racer.tuning.record import read_exec_dir

        page = _run_html(read_exec_dir(journal_text), rope, random_state, title)
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(page)
        return out
    data = journal_data(journal_text)
    result = result_from_journal(data)
    page = _html(journal_text, data, result, rope, random_state, title)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(page)
    return out


def main(argv: list[str] | None = None, prog: str = "racer report") -> int:
    """``racer report PATH [-o report.html] [--csv runs.csv] [--json race.json]``, dispatched
    by :func:`racer.cli.main`. PATH is a race journal or a ``racer`` execDir."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write a self-contained HTML report (and CSV/JSON exports) of a race "
                    "journal, finished, interrupted or still running, or of a `racer "
                    "--scenario` run's execution directory (all its races, the elites, the "
                    "iterated-race figures, the test phase).",
    )
    parser.add_argument("journal", metavar="PATH",
                        help="a race's journal (Race(storage=...)) or a racer execDir")
    parser.add_argument("-o", "--output", help="HTML report to write (default: JOURNAL with "
                        ".html, or EXECDIR/report.html, unless only --csv/--json are asked for)")
    parser.add_argument("--csv", help="write one row per evaluation to this CSV file (a journal only)")
    parser.add_argument("--json", help="write the race (settings, candidates, decisions, "
                        "evaluations) to this JSON file (a journal only)")
    parser.add_argument("--rope", type=float, default=0.0,
                        help="region of practical equivalence for the posterior simplex, in "
                             "score units (default 0)")
    parser.add_argument("--title", help="title of the report")
    args = parser.parse_args(argv)
    output = args.output
    is_dir = os.path.isdir(args.journal)
    if output is None and args.csv is None and args.json is None:
        output = (os.path.join(args.journal, "report.html") if is_dir
                  else os.path.splitext(args.journal)[0] + ".html")
    try:
        if is_dir and (args.csv or args.json):
            raise ValueError(f"{args.journal!r} is a racer execDir: its runs are already in "
                             "runs.csv and its outcome in results.json; --csv/--json export one "
                             "race journal (e.g. racer-journal/iteration-1.sqlite)")
        if output is not None:
            write_report(args.journal, output, rope=args.rope, title=args.title)
            print(f"{prog}: wrote {output}")
        if args.csv is not None:
            export_csv(args.journal, args.csv)
            print(f"{prog}: wrote {args.csv}")
        if args.json is not None:
            export_json(args.journal, args.json)
            print(f"{prog}: wrote {args.json}")
    except ImportError as exc:  # matplotlib missing: the figures need it
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError) as exc:
        # A path that is no journal or execDir, an unwritable output: the user's input, exit
        # code 2 as for `racer` (1 is reserved for internal errors).
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
