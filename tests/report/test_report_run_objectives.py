"""The run-level report of a tuning on several objectives (``racer report EXECDIR``): the
final Pareto front, each objective's training and test means, the front figure."""

import csv
import json
import os
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from racer import ParetoTest, Race, plot, report  # noqa: E402
from racer.cli import EXIT_OK, main  # noqa: E402
from racer.tuning.record import (  # noqa: E402
    SCHEMA, CandidateRecord, IterationRecord, ParameterInfo, RunRecord, ScheduleRecord,
    TestRecord, read_exec_dir, write_record,
)
from racer.racing.base import KeepAll  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "tsp-sa-two-objectives")


def _points(html_text, group):
    """Markers drawn in the SVG group with id ``group`` (one <use> per scatter point)."""
    return sum(body.count("<use ") for body in re.findall(
        rf'<g id="{re.escape(group)}">(.*?)</g>\s*</g>', html_text, flags=re.S))


def _test_table(text):
    """The Test-phase table of the page: {configuration id: [cell texts after 'runs']}."""
    start = text.index("<h2>Test phase")
    body = text[start:text.index("</table>", start)]
    rows = re.findall(r"<tr><td class=num>#(\d+)</td><td class=num>[^<]*</td>(.*?)</tr>", body)
    return {int(cid): re.findall(r"<td class=num>([^<]*)</td>", cells) for cid, cells in rows}


class Configuration:
    """A candidate whose repr is the command line's (``Configuration(id: name=value)``)."""

    def __init__(self, cid, x):
        self.id, self.x = cid, x

    def __repr__(self):
        return f"Configuration({self.id}: x={self.x})"


def _evaluate(c, i):  # a trade-off: small x is fast and costly; id 3, 6 are dominated
    noise = np.random.default_rng([c.id, i]).normal(0, 0.02, 2)
    return (1.0 - c.x + (0.3 if c.id % 3 == 0 else 0.0) + noise[0], c.x + noise[1])


def test_the_front_of_a_hand_built_exec_dir(tmp_path):
    # A race journaled as the Tuner journals it, a test journal of three elites, and a run
    # record naming them (the Tuner's Pareto set, in its rank order) with their training
    # means: the report shows those, not the race's first survivors.
    jdir = tmp_path / "racer-journal"
    jdir.mkdir()
    meta = {"objective_names": ["cost", "time"]}
    configs = [Configuration(i, round(0.1 * i, 2)) for i in range(1, 8)]
    res = Race(configs, direction=["minimize", "minimize"], storage=jdir / "iteration-1.sqlite",
               random_state=0, max_instances=10, metadata={**meta, "iteration": 1},
               test=ParetoTest(min_instances=5, credibility=0.95)).run(_evaluate, range(10),
                                                                       progress=False)
    chosen = [configs[int(i)] for i in res.pareto_front_indices[:3]][::-1]  # not race order
    assert len(chosen) == 3
    test = Race(chosen, direction=["minimize", "minimize"], storage=jdir / "test.sqlite",
                random_state=0, test=KeepAll(), metadata=meta).run(_evaluate, range(100, 106),
                                                                  progress=False)
    iteration = IterationRecord(
        1, "iteration-1.sqlite", 88, tuple(CandidateRecord(c.id, None, {"x": c.x}) for c in configs),
        tuple(c.id for c in configs), elites=tuple(c.id for c in chosen),
        elite_means=tuple((0.5 + c.id, 10.0 - c.id) for c in chosen), elite_instances=(10,) * 3,
        n_instances=10, n_runs=88, stop_reason="budget")
    tested = TestRecord("test.sqlite", tuple(c.id for c in chosen), tuple(map(str, range(6))),
                        tuple(range(6)), tuple(tuple(tuple(v) for v in test.objective_scores[:, j])
                                               for j in range(3)))
    write_record(str(jdir / "run.json"), RunRecord(
        schema=SCHEMA, racer_version="test", mode="iterated", seed=0,
        parameters=(ParameterInfo("x", "real", (0.0, 1.0)),),
        directions=("minimize", "minimize"), objective_names=("cost", "time"),
        schedule=ScheduleRecord(88, 0.0, 1, 3, 6), iterations=(iteration,), experiments=88,
        stop_reason="budget", final_elites=tuple(c.id for c in chosen), test=tested,
        complete=True))
    run = read_exec_dir(tmp_path)
    assert run.final_elites == [c.id for c in chosen]
    assert run.objectives == {"names": ["cost", "time"], "directions": ["minimize", "minimize"]}
    assert run.training_means == {c.id: [0.5 + c.id, 10.0 - c.id] for c in chosen}
    for j, c in enumerate(chosen):
        # Summed the same way in the same order as the journal's own means: equal to rounding.
        assert run.test_means(c.id) == pytest.approx(test.mean_objective_scores[j].tolist(),
                                                     rel=1e-12)
    text = open(report.write_report(tmp_path, tmp_path / "report.html"), encoding="utf-8").read()
    assert "costs here are the first" not in text.split("<h2>Races")[0].split("Final Pareto")[0]
    assert "cost (minimize)<br>test mean" in text and "time (minimize)<br>training mean" in text
    assert _points(text, "front-test-o1o2") == 3
    assert _points(text, "front-training-o1o2") == 3
    shown = _test_table(text)
    assert sorted(shown) == sorted(c.id for c in chosen)
    for c in chosen:
        assert [float(v) for v in shown[c.id]] == pytest.approx(run.test_means(c.id), rel=1e-5)
    assert f"{10.0 - chosen[0].id:.6g}" in text  # a training mean of the record


def test_the_run_front_figure_refuses_one_objective():
    from racer.tuning.record import IteratedRun

    run = IteratedRun(parameters=[], configurations={1: {}}, iteration_of={1: 1},
                      elites={1: [1]}, races=[], candidate_ids=[], final_elites=[1])
    with pytest.raises(ValueError, match="one objective"):
        plot.plot_run_pareto_front(run)
    with pytest.raises(ValueError, match="several objectives"):
        run.test_means(1)


@pytest.mark.slow  # a real tuning, about 40 s on a shared machine
def test_the_report_of_the_two_objective_example(tmp_path):
    arena = tmp_path / "arena"  # the example's files in place (its runner imports its solver)
    arena.mkdir()
    assert main(["--scenario", os.path.join(EXAMPLE, "scenario.txt"), "--exec-dir", str(arena),
                 "--max-experiments", "150", "--quiet", "1"]) == EXIT_OK
    saved = json.loads((arena / "results.json").read_text())
    run = read_exec_dir(arena)
    assert run.final_elites == [e["id"] for e in saved["elites"]]
    assert {str(c) for c in run.final_elites} == set(saved["pareto_front"])
    with open(arena / "test.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    html_text = open(report.write_report(arena, tmp_path / "r.html"), encoding="utf-8").read()
    assert _points(html_text, "front-test-o1o2") == len(saved["pareto_front"])
    shown = _test_table(html_text)
    assert sorted(shown) == sorted(run.final_elites)
    for cid in run.final_elites:
        mine = [r for r in rows if int(r["configuration"]) == cid]
        means = [np.mean([float(r[f"cost.{n}"]) for r in mine]) for n in ("length", "steps")]
        # test.csv holds repr() of each cost, the table 6 significant digits.
        assert [float(v) for v in shown[cid]] == pytest.approx(means, rel=1e-5)
        assert run.training_means[cid] == [saved["pareto_front"][str(cid)]["mean"][n]
                                           for n in ("length", "steps")]
