"""The report of a race on several objectives: the objectives, the Pareto front drawn
with every candidate's mean vector, each elimination's evidence, and the CSV/JSON exports
carrying every objective; and the report of an execDir whose races are on several objectives."""

import csv
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from racer import ParetoTest, Race, plot, race, report  # noqa: E402
from racer.storage import read_journal, result_from_journal  # noqa: E402

MEANS = {"fast": (0.20, 0.8, 1.0), "accurate": (0.15, 0.85, 2.0), "worse": (0.30, 0.7, 1.5),
         "far-worse": (0.40, 0.6, 3.0), "mid": (0.17, 0.83, 1.5)}
CANDIDATES = list(MEANS)


def evaluate3(c, i):
    if (c, i) == ("worse", 3):
        raise RuntimeError("solver crashed")
    noise = np.random.default_rng([CANDIDATES.index(c), i]).normal(0, [0.03, 0.03, 0.2])
    return tuple(np.add(MEANS[c], noise))


def evaluate2(c, i):
    error, _accuracy, seconds = evaluate3(c, i)
    return error, seconds


def journaled(tmp_path, k, **options):
    path = str(tmp_path / f"race{k}.sqlite")
    evaluate = evaluate2 if k == 2 else evaluate3
    direction = ["minimize", "minimize"] if k == 2 else ["minimize", "maximize", "minimize"]
    with Race(CANDIDATES, direction=direction, storage=path, random_state=1, max_instances=20,
              test=ParetoTest(min_instances=5, credibility=0.95, rope=0.01), **options) as r:
        res = r.run(evaluate, range(40), progress=False)
    return path, res


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.rows, self._row = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        ident = dict(attrs).get("id")
        if ident:
            self.ids.append(ident)
        if tag == "tr":
            self._row = []

    def handle_data(self, data):
        if self._row is not None:
            self._row.append(data)

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append("".join(self._row))
            self._row = None


def _points(html_text, group):
    """Markers drawn in the SVG groups with id ``group`` (one <use> per scatter point; the
    figures of several races each have theirs)."""
    return sum(body.count("<use ") for body in re.findall(
        rf'<g id="{re.escape(group)}">(.*?)</g>\s*</g>', html_text, flags=re.S))


def test_the_report_of_two_objectives_draws_the_front_and_the_evidence(tmp_path):
    path, live = journaled(tmp_path, 2, metadata={"objective_names": ["error", "seconds"]})
    assert live.history and live.failures  # something eliminated, something failed
    out = report.write_report(path, tmp_path / "r.html")
    text = open(out, encoding="utf-8").read()
    page = _Page()
    page.feed(text)
    assert "script" not in page.tags and "Objectives" in text
    assert any(r.startswith("Objectives") and "error (minimize), seconds (minimize)" in r
               for r in page.rows)
    front = [int(i) for i in live.pareto_front_indices]
    assert any(r.startswith("Pareto front") and ", ".join(f"#{i}" for i in front) in r
               for r in page.rows)
    # One scatter panel: every front member a large marker, every dominated one a cross.
    assert _points(text, "pareto-front-o1o2") == len(front)
    dominated = [h for h in live.history if h.reason == "dominated"]
    assert _points(text, "elimination-dominated-o1o2") == len(dominated)
    assert 'id="pareto-staircase-o1o2"' in text and 'id="pareto-front-o1o3"' not in text
    # Each elimination: its probability, who dominated it, and the per-instance record,
    # recomputed here from the scores.
    for h in live.history:
        row = next(r for r in page.rows if r.startswith(f"{h.step}{h.n_instances}#{h.candidate_index} "))
        assert f"#{h.by_index}" in row and f"{h.probability:.4g}" in row
        a = live.objective_scores[:h.n_instances, h.candidate_index]
        b = live.objective_scores[:h.n_instances, h.by_index]
        ok = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
        by_dominates = int(np.sum(np.all(b[ok] <= a[ok], axis=1) & np.any(b[ok] < a[ok], axis=1)))
        assert f"{by_dominates} / 0 of {int(ok.sum())}" in row
        assert f"{a[ok, 1].mean():.4g}" in row  # the mean of seconds
    # The single-objective statistics figures are not drawn for such a race.
    assert "Critical-difference" not in text and "Posterior simplex" not in text
    assert "Score matrix of error" in text


def test_three_objectives_get_a_panel_per_pair_and_default_names(tmp_path):
    path, live = journaled(tmp_path, 3)
    text = open(report.write_report(path, tmp_path / "r.html"), encoding="utf-8").read()
    assert "objective 1 (minimize), objective 2 (maximize), objective 3 (minimize)" in text
    front = len(live.pareto_front_indices)
    for panel in ("o1o2", "o1o3", "o2o3"):
        assert _points(text, f"pareto-front-{panel}") == front
    assert "pareto-staircase" not in text  # a staircase only means something for two


def test_the_exports_carry_every_objective(tmp_path):
    path, live = journaled(tmp_path, 3, metadata={"objective_names": ["error", "acc", "s"]})
    with open(report.export_csv(path, tmp_path / "runs.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == live.n_evaluations
    for row in rows:
        c, i = int(row["candidate"]), int(row["instance"])
        values = [row[f"objective_{o}"] for o in (1, 2, 3)]
        if row["error"]:
            assert values == ["", "", ""] and row["value"] == ""
        else:
            assert [float(v) for v in values] == live.objective_scores[i, c].tolist()
            assert float(row["value"]) == float(values[0])
    record = json.loads(open(report.export_json(path, tmp_path / "race.json")).read())
    assert record["objectives"] == [{"name": "error", "direction": "minimize"},
                                    {"name": "acc", "direction": "maximize"},
                                    {"name": "s", "direction": "minimize"}]
    assert record["pareto_front_indices"] == live.pareto_front_indices.tolist()
    for entry in record["candidates"]:
        idx = entry["index"]
        assert entry["mean_objectives"] == pytest.approx(live.mean_objective_scores[idx].tolist(),
                                                         rel=0, abs=0)
        assert entry["on_pareto_front"] == (idx in live.pareto_front_indices)
    failed = [e for e in record["evaluations"] if e["error"]]
    assert failed and all(e["values"] is None for e in failed)
    e = next(e for e in record["evaluations"] if not e["error"])
    assert e["values"] == live.objective_scores[e["instance"], e["candidate"]].tolist()


def test_racer_report_writes_the_page_and_the_exports_of_such_a_journal(tmp_path, capsys):
    path, live = journaled(tmp_path, 2)
    html, csv_path, json_path = (str(tmp_path / n) for n in ("r.html", "r.csv", "r.json"))
    assert report.main([path, "-o", html, "--csv", csv_path, "--json", json_path]) == 0
    assert 'id="pareto-front-o1o2"' in open(html, encoding="utf-8").read()
    assert json.load(open(json_path))["pareto_front_indices"] == live.pareto_front_indices.tolist()
    assert "wrote" in capsys.readouterr().out


def test_a_single_objective_export_has_no_objective_columns(tmp_path):
    path = str(tmp_path / "one.sqlite")
    race(lambda c, i: c * i, [1, 2], range(6), progress=False, random_state=0, storage=path)
    with open(report.export_csv(path, tmp_path / "runs.csv"), newline="") as fh:
        assert next(csv.reader(fh)) == ["candidate", "candidate_repr", "instance",
                                        "instance_repr", "value", "error"]
    record = report.race_record(path)
    assert "objectives" not in record and "values" not in record["evaluations"][0]


def test_plot_pareto_front_validation():
    one = race(lambda c, i: c * i, [1, 2], range(6), progress=False, random_state=0)
    with pytest.raises(ValueError, match="`result` is a race on one objective"):
        plot.plot_pareto_front(one)
    two = race(lambda c, i: (c, -c), [1, 2], range(6), progress=False, random_state=0,
               direction=["minimize", "minimize"])
    with pytest.raises(ValueError, match=r"`names` must hold one name \(str\) per objective \(2\)"):
        plot.plot_pareto_front(two, names=["a"])
    fig = plot.plot_pareto_front(two)
    assert fig.axes[0].get_ylabel() == "objective 2 (minimize)"


def test_objective_names_that_do_not_fit_fall_back_to_numbers():
    assert report.objective_names({"metadata": {"objective_names": "['a']"}}, 2) == \
        ["objective 1", "objective 2"]
    assert report.objective_names({"metadata": {"objective_names": "not python"}}, 2) == \
        ["objective 1", "objective 2"]


# --------------------------------------------------------------------------- an execDir


class Configuration:
    """A candidate whose repr is the command line's (``Configuration(id: name=value)``)."""

    def __init__(self, cid, x):
        self.id, self.x = cid, x

    def __repr__(self):
        return f"Configuration({self.id}: x={self.x})"


def test_the_report_of_an_exec_dir_with_races_on_two_objectives(tmp_path):
    # The command line's Tuner journals each race through Race(storage=); two such races,
    # the second with the first's survivors and new configurations.
    jdir = tmp_path / "racer-journal"
    jdir.mkdir()
    space = repr([("x", "--x ", "r", (0.0, 1.0), False, "")])
    metadata = {"space": space, "objective_names": ["cost", "time"]}

    def evaluate(c, i):  # a trade-off: small x is fast and costly
        noise = np.random.default_rng([c.id, i]).normal(0, 0.02, 2)
        return (1.0 - c.x + (0.3 if c.id % 3 == 0 else 0.0) + noise[0], c.x + noise[1])

    first = [Configuration(i, round(0.1 * i, 2)) for i in range(1, 7)]
    res1 = Race(first, direction=["minimize", "minimize"], storage=jdir / "iteration-1.sqlite",
                random_state=0, max_instances=12, metadata={**metadata, "iteration": 1},
                test=ParetoTest(min_instances=5, credibility=0.95)).run(evaluate, range(12),
                                                                        progress=False)
    kept = [first[i] for i in res1.pareto_front_indices]
    second = kept + [Configuration(i, round(0.1 * i - 0.05, 2)) for i in range(7, 10)]
    res2 = Race(second, direction=["minimize", "minimize"], storage=jdir / "iteration-2.sqlite",
         random_state=1, max_instances=12, metadata={**metadata, "iteration": 2},
         test=ParetoTest(min_instances=5, credibility=0.95)).run(evaluate, range(12, 24),
                                                                 progress=False)
    # The Tuner's record of the two races (racer.tuning.record): each race's Pareto set kept.
    from racer.tuning import record as rec

    iterations = tuple(rec.IterationRecord(
        k, f"iteration-{k}.sqlite", 72, tuple(rec.CandidateRecord(c.id, None, {"x": c.x}) for c in cs),
        tuple(c.id for c in cs if c not in kept or k == 1),
        elites=tuple(cs[i].id for i in r.pareto_front_indices),
        elite_means=tuple(tuple(r.mean_objective_scores[i]) for i in r.pareto_front_indices),
        elite_instances=tuple(int(r.n_evaluated[i]) for i in r.pareto_front_indices),
        n_instances=r.n_instances, n_runs=r.n_evaluations, stop_reason=r.stop_reason)
        for k, cs, r in ((1, first, res1), (2, second, res2)))
    rec.write_record(str(jdir / "run.json"), rec.RunRecord(
        rec.SCHEMA, "test", "iterated", 0, (rec.ParameterInfo("x", "real", (0.0, 1.0)),),
        ("minimize", "minimize"), ("cost", "time"), rec.ScheduleRecord(144, 0.0, 2, 3, 6),
        iterations))
    out = report.write_report(tmp_path, tmp_path / "report.html")
    text = open(out, encoding="utf-8").read()
    page = _Page()
    page.feed(text)
    assert any(r.startswith("Objectives") and "cost (minimize), time (minimize)" in r
               for r in page.rows)
    assert text.count("Pareto front</h4>") == 2  # one front per race, in its section
    back = result_from_journal(str(jdir / "iteration-2.sqlite"))
    assert back.pareto_front_indices.tolist() == res2.pareto_front_indices.tolist()
    assert _points(text, "pareto-front-o1o2") == len(res1.pareto_front_indices) + len(
        res2.pareto_front_indices)
    assert f"{len(back.pareto_front_indices)} of {len(back.survivors)} survivors" in text
    assert "costs here are the first, cost." in text
    assert read_journal(jdir / "iteration-1.sqlite")["objective_values"]
