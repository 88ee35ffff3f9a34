"""racer.report: the result rebuilt from a journal, the HTML report, the CSV/JSON exports."""

import csv
import json
import math
import os
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from racer import Race  # noqa: E402
from racer import report, storage  # noqa: E402

from _helpers.chromium import chromium, render_in_chromium  # noqa: E402
from _helpers.races import NOISY_CANDIDATES, noisy_score  # noqa: E402


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fin") / "race.sqlite")
    with Race(NOISY_CANDIDATES, max_instances=30, random_state=0, storage=path, direction="maximize") as r:
        res = r.run(noisy_score, range(60), progress=False)
    return path, res


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A race stopped in the middle of its 14th instance, with one failed evaluation."""
    path = str(tmp_path_factory.mktemp("int") / "race.sqlite")
    r = Race(NOISY_CANDIDATES, random_state=0, storage=path, direction="maximize")
    r.add_instances(range(60))
    last = 0
    while last < 13:
        for ev in r.ask():
            last = max(last, ev.instance_index)
            if ev.instance_index == 13 and ev.candidate_index % 2:
                continue  # never told: the race is "killed" here
            if ev.instance_index == 2 and ev.candidate_index == 6:
                r.tell(ev, error="solver crashed")
            else:
                r.tell(ev, noisy_score(ev.candidate, ev.instance))
    res = r.result()
    r.close()
    return path, res


def test_result_from_finished_journal(finished):
    path, res = finished
    back = storage.result_from_journal(path)
    assert back.stop_reason == res.stop_reason == "max_instances"
    assert back.best_index == res.best_index
    assert repr(back.best) == repr(res.best)
    np.testing.assert_array_equal(back.survivor_indices, res.survivor_indices)
    np.testing.assert_array_equal(back.ranking_indices, res.ranking_indices)
    np.testing.assert_array_equal(back.n_evaluated, res.n_evaluated)
    # Journal values are the floats the race recorded: the same numbers, bit for bit.
    np.testing.assert_array_equal(back.scores, res.scores)
    np.testing.assert_allclose(back.mean_scores, res.mean_scores, rtol=1e-15, atol=0)
    assert back.n_evaluations == res.n_evaluations and back.n_instances == res.n_instances
    assert [(h.candidate_index, h.reason, h.by_index, h.n_instances, h.step) for h in back.history] == sorted(
        [(h.candidate_index, h.reason, h.by_index, h.n_instances, h.step) for h in res.history],
        key=lambda t: (t[4], t[0]))
    assert [h.probability for h in sorted(back.history, key=lambda h: h.candidate_index)] == [
        h.probability for h in sorted(res.history, key=lambda h: h.candidate_index)]


def test_result_from_interrupted_journal(interrupted):
    path, res = interrupted
    back = storage.result_from_journal(path)
    assert back.stop_reason == "interrupted"
    assert back.n_instances == 14
    assert back.failures == ((6, 2, "solver crashed"),)
    np.testing.assert_array_equal(back.n_evaluated, res.n_evaluated)
    # The survivors with odd indices never told instance 13.
    assert len(back.survivor_indices) >= 2
    for c in back.survivor_indices:
        assert bool(np.isnan(back.scores[13, c])) == bool(c % 2)


def test_result_from_journal_validation(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such journal"):
        storage.result_from_journal(tmp_path / "missing.sqlite")
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="not a racer journal"):
        storage.result_from_journal(bad)
    with pytest.raises(ValueError, match="lacks"):
        storage.result_from_journal({"fingerprint": {}})


class _Resources(HTMLParser):
    """Collects every attribute that could load something from outside the page."""

    def __init__(self):
        super().__init__()
        self.external = []
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            value = (value or "").strip()
            if name in ("src", "href", "xlink:href", "data", "poster", "srcset", "action"):
                if not (value.startswith("#") or value.startswith("data:")):
                    self.external.append((tag, name, value))
        if tag == "link" or (tag == "script" and dict(attrs).get("src")):
            self.external.append((tag, "", ""))


def _check_self_contained(text):
    parser = _Resources()
    parser.feed(text)
    assert parser.external == []
    assert "script" not in parser.tags  # no scripts at all
    assert "@import" not in text and "url(http" not in text
    return parser


@pytest.fixture(scope="module")
def finished_html(finished, tmp_path_factory):
    return report.write_report(finished[0], tmp_path_factory.mktemp("html") / "report.html")


def test_report_of_finished_race(finished, finished_html, tmp_path):
    path, res = finished
    text = open(finished_html, encoding="utf-8").read()
    parser = _check_self_contained(text)
    assert parser.tags.count("svg") == 7  # timeline, evaluations, matrix, heat map, 2 CD, simplex
    assert "finished: max_instances instances were raced" in text
    assert "Not drawn" not in text
    # Every elimination is a row with its probability.
    for rec in res.history:
        assert f"<code>#{rec.candidate_index} " in text
        assert f"<td class=num>{rec.probability:.4g}</td>" in text
    # Same journal, same page apart from the time it was read.
    again = open(report.write_report(path, tmp_path / "again.html"), encoding="utf-8").read()
    strip = lambda t: "\n".join(line for line in t.splitlines() if ", read " not in line)  # noqa: E731
    assert strip(again) == strip(text)


def test_report_evidence_matches_scores(finished):
    path, res = finished
    back = storage.result_from_journal(path)
    rec = back.history[0]
    ev = report._evidence(back, rec)
    a = res.scores[: rec.n_instances, rec.candidate_index]
    b = res.scores[: rec.n_instances, rec.by_index]
    assert ev["n"] == rec.n_instances
    assert (ev["wins"], ev["ties"], ev["losses"]) == (int((a > b).sum()), int((a == b).sum()), int((a < b).sum()))
    assert ev["losses"] > ev["wins"]  # a dominated candidate lost more often than it won


def test_report_of_interrupted_race(interrupted, tmp_path):
    path, _res = interrupted
    out = report.write_report(path, tmp_path / "report.html", title="Half a race <b>")
    text = open(out, encoding="utf-8").read()
    _check_self_contained(text)
    assert "interrupted: the last block was not evaluated by every survivor" in text
    assert "solver crashed" in text
    assert "Half a race &lt;b&gt;" in text  # the title is escaped


def test_report_while_race_runs(tmp_path):
    # The writer holds the journal's lock; the report reads it anyway (read-only).
    path = str(tmp_path / "live.sqlite")
    r = Race(NOISY_CANDIDATES[:4], random_state=0, storage=path)
    r.add_instances(range(20))
    for ev in r.ask():
        r.tell(ev, noisy_score(ev.candidate, ev.instance))
    out = report.write_report(path, tmp_path / "live.html")
    assert "<svg" in open(out, encoding="utf-8").read()
    r.close()


def test_write_report_validation(finished, tmp_path):
    path, _ = finished
    with pytest.raises(FileNotFoundError, match="does not exist"):
        report.write_report(path, tmp_path / "no" / "r.html")
    with pytest.raises(IsADirectoryError):
        report.write_report(path, tmp_path)
    with pytest.raises(ValueError, match="rope"):
        report.write_report(path, tmp_path / "r.html", rope=-0.1)
    with pytest.raises(TypeError, match="title"):
        report.write_report(path, tmp_path / "r.html", title=3)
    with pytest.raises(TypeError, match="journal_path"):
        report.write_report(None, tmp_path / "r.html")


def test_csv_and_json_exports(finished, tmp_path):
    path, res = finished
    assert report.main([path, "--csv", str(tmp_path / "runs.csv"), "--json", str(tmp_path / "race.json")]) == 0
    assert not os.path.exists(os.path.splitext(path)[0] + ".html")  # only what was asked
    with open(tmp_path / "runs.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == res.n_evaluations
    for row in rows[:20]:
        assert float(row["value"]) == res.scores[int(row["instance"]), int(row["candidate"])]
        assert row["candidate_repr"] == repr(res.candidates[int(row["candidate"])])
    data = json.loads((tmp_path / "race.json").read_text())
    assert data["status"] == "max_instances" and data["best_index"] == res.best_index
    assert len(data["evaluations"]) == res.n_evaluations
    assert len(data["decisions"]) == len(res.history)
    by_index = {c["index"]: c for c in data["candidates"]}
    for rec in res.history:
        c = by_index[rec.candidate_index]
        assert c["reason"] == rec.reason and c["by_index"] == rec.by_index
        assert math.isclose(c["probability"], rec.probability, rel_tol=0, abs_tol=0)
    assert data["settings"]["direction"] == "maximize"


def test_json_has_no_nan(interrupted, tmp_path):
    path, _ = interrupted
    out = report.export_json(path, tmp_path / "race.json")
    text = open(out, encoding="utf-8").read()
    assert "NaN" not in text
    data = json.loads(text)
    failed = [e for e in data["evaluations"] if e["error"] is not None]
    assert failed == [{"candidate": 6, "instance": 2, "value": None, "error": "solver crashed"}]


@pytest.mark.slow
def test_cli(interrupted, tmp_path, capsys):
    path, _ = interrupted
    out = tmp_path / "r.html"
    assert report.main([path, "-o", str(out), "--rope", "0.1"]) == 0
    assert "rope 0.1" in out.read_text()
    assert report.main([str(tmp_path / "missing.sqlite"), "-o", str(out)]) == 2  # input error
    assert "no such journal" in capsys.readouterr().err


def test_racer_is_the_only_console_script():
    """`racer report` and the examples replaced the `racer-report` and `racer-demo` scripts."""
    from importlib.metadata import entry_points

    ours = {ep.name: ep.value for ep in entry_points(group="console_scripts")
            if ep.value.partition(".")[0].partition(":")[0] == "racer"}
    if not ours:
        pytest.skip("bayes-racer is not installed with its console scripts (pip install -e .)")
    assert ours == {"racer": "racer.cli:main"}


@pytest.mark.skipif(chromium() is None, reason="headless Chromium is not installed")
def test_report_renders_in_headless_chromium(finished_html, tmp_path):
    data = render_in_chromium(finished_html, tmp_path / "shot.png", 1200, 2000)
    assert len(data) > 50_000  # a page with tables and figures, not a blank one


def test_report_of_frace_and_of_an_unstarted_race(tmp_path):
    from racer.racing.frace import FRaceTest

    path = str(tmp_path / "frace.sqlite")
    with Race(NOISY_CANDIDATES[:5], test=FRaceTest(), random_state=0, storage=path) as r:
        res = r.run(noisy_score, range(25), progress=False)
    assert res.history
    text = open(report.write_report(path, tmp_path / "f.html"), encoding="utf-8").read()
    assert "<th>p-value</th>" in text and "<th>probability</th>" not in text

    empty = str(tmp_path / "empty.sqlite")
    Race(NOISY_CANDIDATES[:3], random_state=0, storage=empty).close()
    assert storage.result_from_journal(empty).stop_reason == "not_started"
    text = open(report.write_report(empty, tmp_path / "e.html"), encoding="utf-8").read()
    assert "not started: no instance has been raced yet" in text
    # Every figure says why it is missing instead of failing the report.
    assert text.count("Not drawn:") == 7


# --------------------------------------------------------------------------- journaled stop


def test_journal_records_stop_reason_and_winner(finished, tmp_path):
    from racer.storage import read_journal

    path, res = finished
    data = read_journal(path)
    assert data["stop_reason"] == res.stop_reason == "max_instances"
    assert data["winner"] == "mean"
    # A stop by the driver (Race.stop) is journaled too, and a resume clears it while running.
    stopped = str(tmp_path / "stopped.sqlite")
    with Race(NOISY_CANDIDATES, random_state=0, storage=stopped, instances=range(60)) as r:
        for ev in r.ask():
            r.tell(ev, noisy_score(ev.candidate, ev.instance))
        r.stop("deadline")
        assert r.ask() == [] and r.pending() == [] and r.finished
    assert read_journal(stopped)["stop_reason"] == "deadline"
    assert storage.result_from_journal(stopped).stop_reason == "deadline"
    r = Race(NOISY_CANDIDATES, random_state=0, storage=stopped, instances=range(60))
    assert read_journal(stopped)["stop_reason"] is None  # running again
    r.close()
    # Not stopped, and the block opened after instance 5 holds no evaluation yet.
    assert storage.result_from_journal(stopped).stop_reason == "interrupted"
    with pytest.raises(ValueError, match="reason"):
        Race(NOISY_CANDIDATES, random_state=0).stop("")


def test_report_orders_survivors_by_the_journaled_winner_rule(tmp_path):
    from racer.racing import KeepAll

    path = str(tmp_path / "ranks.sqlite")
    # Candidate 0 is best on five instances and far worst on one, 2 and 1 are constant: the
    # rank-sum order and the mean order disagree whichever direction the race takes.
    def evaluate(c, i):
        return (-50.0 if i == 0 else 1.0) if c == 0 else float(c == 1) * 0.5
    with Race([0, 1, 2], test=KeepAll(), winner="rank_sum", max_instances=6, first_test=6,
              random_state=0, storage=path) as r:
        res = r.run(evaluate, range(6), progress=False)
    back = storage.result_from_journal(path)
    assert res.survivor_indices.tolist() == back.survivor_indices.tolist()
    oriented = res.mean_scores if res.maximize else -res.mean_scores
    by_mean = np.argsort(-oriented[res.survivor_indices], kind="stable")
    assert res.survivor_indices[by_mean].tolist() != back.survivor_indices.tolist()
    page = report.write_report(path, tmp_path / "r.html")
    assert "<code>rank_sum</code>" in open(page, encoding="utf-8").read()


def test_old_journal_without_stop_reason_is_inferred(finished, tmp_path):
    import sqlite3

    path, res = finished
    old = tmp_path / "old.sqlite"
    shutil.copy(path, old)
    conn = sqlite3.connect(old)
    conn.execute("DELETE FROM meta WHERE key IN ('winner', 'stop_reason')")
    conn.commit()
    conn.close()
    back = storage.result_from_journal(str(old))
    assert back.stop_reason == "max_instances"  # inferred from the fingerprint
    text = open(report.write_report(str(old), tmp_path / "old.html"), encoding="utf-8").read()
    assert "inferred" in text and "not journaled" in text
