"""The run record (racer/tuning/record.py): what the Tuner decided, written by the Tuner to
``racer-journal/run.json`` as it decides, and the only source read_exec_dir and the report
take the Tuner's decisions from."""

import json
import os
import sys

import numpy as np
import pytest

import racer
from racer.racing.frace import FRaceTest
from racer.storage import result_from_journal
from racer.tuning.instances import Instance
from racer.tuning.objectives import elite_cap
from racer.tuning.record import JOURNAL_DIR, RUN_FILE, RecordError, read_exec_dir, read_record
from racer.tuning.tuner import Settings, Tuner, elites_of

from _helpers.tuner import SPACE, TRAIN, FakeRunner

TEST = [Instance(str(k)) for k in (20, 21, 22)]
TIMES = ("started_at", "written_at")


def tuner(folder, runner=None, **settings):
    s = Settings(**{"max_experiments": 200, "seed": 5, "parallel": 2, **settings})
    return Tuner(SPACE, runner or FakeRunner(), TRAIN, s, FRaceTest(alpha=0.05),
                 journal_dir=str(folder / JOURNAL_DIR), test_instances=TEST)


def run_json(folder):
    """run.json as data, without its timestamps."""
    data = json.loads((folder / JOURNAL_DIR / RUN_FILE).read_text())
    assert all(data.pop(k) for k in TIMES)  # present and not empty
    return data


def test_the_record_holds_what_the_tuner_decided(tmp_path):
    t = tuner(tmp_path)
    result = t.run()
    record = read_record(tmp_path)
    assert record == t.record  # the file is the Tuner's own record, whole
    assert record.complete and record.mode == "iterated" and record.seed == 5
    assert record.stop_reason == result.stop_reason and record.experiments == result.experiments
    assert record.final_elites == tuple(e.id for e in result.elites)
    assert record.schedule.iterations_planned == result.planned_iterations
    assert record.schedule.max_experiments == 200 and record.schedule.min_survival == t.min_survival
    assert [p.name for p in record.parameters] == ["mode", "x"]
    assert len(record.iterations) == result.iterations == len(result.races) >= 2
    sampled = set()
    for it, (iteration, race, candidates) in zip(record.iterations, result.races):
        assert it.iteration == iteration and it.journal == f"iteration-{iteration}.sqlite"
        # The candidates in the race's column order, with their ids, parents and typed values.
        assert [(c.id, c.parent, c.values) for c in it.candidates] == \
            [(c.id, c.parent, c.values) for c in candidates]
        assert all(isinstance(c.values["x"], float) for c in it.candidates)
        assert set(it.new) == {c.id for c in candidates} - sampled
        sampled |= set(it.new)
        # The elites the Tuner's own rule keeps from the race it ran, with their means.
        kept = elites_of(race, elite_cap(t.min_survival, None), None)
        assert it.elites == tuple(e.id for e in kept)
        cols = [candidates.index(e) for e in kept]
        assert [m for (m,) in it.elite_means] == race.mean_scores[cols].tolist()
        assert list(it.elite_instances) == race.n_evaluated[cols].tolist()
        assert it.n_instances == race.n_instances and it.stop_reason == race.stop_reason
    assert it.elites == record.final_elites  # the last race's elites are the answer
    assert sum(it.n_runs for it in record.iterations) == result.experiments
    # irace's per-iteration budget: a share of what is left when the iteration starts.
    spent = np.cumsum([0] + [it.n_runs for it in record.iterations])
    assert all(0 < b <= 200 - used for b, used in zip(record.iteration_budgets, spent))
    # The test phase: the best elite (testNbElites = 1) on each test instance.
    assert record.test.elites == (result.elites[0].id,)
    assert record.test.instances == ("20", "21", "22")
    assert record.test.seeds == tuple(task.seed for task in result.test["tasks"])
    assert record.test.costs == (tuple(result.test["costs"][result.elites[0].id]),)


def test_the_same_seed_writes_the_same_record_apart_from_timestamps(tmp_path):
    tuner(tmp_path / "a").run()
    tuner(tmp_path / "b").run()
    assert run_json(tmp_path / "a") == run_json(tmp_path / "b")
    tuner(tmp_path / "c", seed=6).run()
    assert run_json(tmp_path / "c")["iterations"] != run_json(tmp_path / "a")["iterations"]


def test_an_interrupted_tuning_resumes_to_the_same_record(tmp_path):
    tuner(tmp_path / "ref").run()
    folder = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        tuner(folder, FakeRunner(interrupt_after=70)).run()
    # What the record says at the interruption: the iterations decided so far, not finished.
    partial = read_record(folder)
    ref = read_record(tmp_path / "ref")
    assert not partial.complete and partial.stop_reason is None and partial.test is None
    ended = partial.ended_iterations
    assert ended and ended == list(ref.iterations[:len(ended)])
    assert partial.iterations[-1].candidates == ref.iterations[len(partial.iterations) - 1].candidates
    tuner(folder).run()
    assert run_json(folder) == run_json(tmp_path / "ref")
    assert read_record(folder).started_at == partial.started_at  # the tuning's first session


def test_a_replay_that_decides_otherwise_than_the_record_is_refused(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        tuner(tmp_path, FakeRunner(interrupt_after=70)).run()
    path = tmp_path / JOURNAL_DIR / RUN_FILE
    data = json.loads(path.read_text())
    first = data["iterations"][0]
    others = [c["id"] for c in first["candidates"] if c["id"] not in first["elites"]]
    # Another candidate of the race in place of the first elite: still a valid record, but
    # not what the race decided.
    first["elites"] = [others[0]] + first["elites"][1:]
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="iteration 1 keeps the elites .* the run record says"
                                          ".* disagree"):
        tuner(tmp_path).run()


@pytest.mark.parametrize("damage, words", [
    (lambda text: text[:len(text) // 2], "is damaged: it is not JSON"),
    (lambda text: text.replace('"seed": 5', '"seed": "5"'), "field 'seed' is '5', not of type int"),
    (lambda text: text.replace('"schema": 1', '"schema": 99'), "has schema 99 .* reads schema 1"),
    (lambda text: json.dumps({**json.loads(text), "iterations": [{"iteration": 1}]}),
     r"field 'iterations\[0\]\.\w+' is missing"),
    (lambda text: "[]", "the record is not a JSON object"),
])
def test_a_damaged_record_is_refused_naming_the_file(tmp_path, damage, words):
    tuner(tmp_path).run()
    path = tmp_path / JOURNAL_DIR / RUN_FILE
    path.write_text(damage(path.read_text()))
    with pytest.raises(RecordError, match=words) as info:
        read_exec_dir(tmp_path)
    assert str(path) in str(info.value)
    # The Tuner does not resume over it either, and says what to do.
    with pytest.raises(RecordError, match="Delete it and run the same command again"):
        tuner(tmp_path).run()


def test_an_exec_dir_without_a_record_is_refused_and_the_same_command_writes_one(tmp_path):
    # An execDir of a racer older than the record: race journals, no run.json.
    tuner(tmp_path).run()
    before = run_json(tmp_path)
    os.remove(tmp_path / JOURNAL_DIR / RUN_FILE)
    with pytest.raises(RecordError, match="older than the run record .* run the tuning again "
                                          "with this racer version") as info:
        read_exec_dir(tmp_path)
    assert repr(str(tmp_path)) in str(info.value)
    # Resumed, it replays every race from its journals and records it as it went. Its test
    # journal, which no record names, is set aside and the test runs are made again.
    runner = FakeRunner()
    tuner(tmp_path, runner).run()
    assert run_json(tmp_path) == before
    assert len(runner.calls) == len(TEST)
    assert (tmp_path / JOURNAL_DIR / "test-earlier-1.sqlite").exists()
    assert read_exec_dir(tmp_path).final_elites == list(before["final_elites"])


def test_a_continued_tuning_records_the_earlier_test_phase_and_reuses_its_runs(tmp_path):
    # Look-ahead off: the races get the whole budgets (no reserve), for which this holds.
    first = tuner(tmp_path, max_experiments=200, lookahead=False).run()
    runner = FakeRunner()
    again = tuner(tmp_path, runner, max_experiments=400, earlier_budgets=(200,),
                  lookahead=False).run()
    record = read_record(tmp_path)
    tested_before, tested_now = first.elites[0].id, again.elites[0].id
    assert tested_before != tested_now  # this seed and budget change the best elite
    (earlier,) = record.earlier_tests
    assert earlier.journal == "test-earlier-1.sqlite" and earlier.elites == (tested_before,)
    assert record.test.elites == (tested_now,)
    # The new best elite's test runs are made; none is made twice.
    test_seeds = set(record.test.seeds)
    assert sorted(s for _c, _i, s in runner.calls if s in test_seeds) == sorted(test_seeds)
    assert record.schedule.earlier_budgets == (200,)


def test_read_exec_dir_and_the_figures_take_the_elites_from_the_record(tmp_path):
    tuner(tmp_path).run()
    record = read_record(tmp_path)
    run = read_exec_dir(tmp_path)
    assert run.elites == {it.iteration: list(it.elites) for it in record.iterations}
    assert run.final_elites == list(record.final_elites)
    assert run.candidate_ids == [[c.id for c in it.candidates] for it in record.iterations]
    assert run.iteration_of == {cid: it.iteration for it in record.iterations for cid in it.new}
    assert all(run.configurations[c.id] == c.values for it in record.iterations
               for c in it.candidates)
    assert run.test["costs"] == {cid: list(row) for cid, row in zip(record.test.elites,
                                                                    record.test.costs)}
    assert run.info["stop_reason"] == record.stop_reason
    assert run.info["iterations_planned"] == record.schedule.iterations_planned
    # Each race's journal read beside it: the race the record names, its candidates in order.
    for (iteration, label, result), it in zip(run.races, record.iterations):
        assert (iteration, label) == (it.iteration, it.journal)
        assert len(result.candidates) == len(it.candidates)
    # The report's figure of the elites by iteration draws the record's elites.
    pytest.importorskip("matplotlib")
    from racer import plot

    fig = plot.plot_elite_parallel_coordinates(run)
    drawn = {ln.get_gid() for ln in fig.axes[0].lines if (ln.get_gid() or "").startswith("elite-")}
    assert drawn == {f"elite-{it.iteration}-{cid}" for it in record.iterations for cid in it.elites}


def test_an_unfinished_tuning_reads_its_decided_iterations(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        tuner(tmp_path, FakeRunner(interrupt_after=70)).run()
    record = read_record(tmp_path)
    run = read_exec_dir(tmp_path)
    ended = record.ended_iterations
    assert run.elites == {it.iteration: list(it.elites) for it in ended}
    assert run.final_elites == list(ended[-1].elites)  # the last race's elites so far
    assert "stop_reason" not in run.info and run.test is None
    # The race under way when the tuning stopped is read too (its journal, no elites yet).
    assert [label for _it, label, _res in run.races] == [it.journal for it in record.iterations]


def _tune(folder, **options):
    return racer.tune(lambda c, inst, seed: (c["x"] - 0.3) ** 2 + (0.2 if c["k"] == "b" else 0)
                      + inst, 'x "" r (0, 1)\nk "" c (a, b)', [0.01 * j for j in range(8)],
                      budget=150, random_state=2, progress=False, storage=str(folder),
                      test_instances=[1.0, 2.0], **options)


def test_racer_tune_records_what_it_decided(tmp_path):
    res = _tune(tmp_path / "run")
    record = read_record(tmp_path / "run")
    assert record.final_elites == tuple(res.elite_ids) and record.complete
    assert record.experiments == res.experiments and record.stop_reason == res.stop_reason
    assert len(record.ended_iterations) == res.iterations
    for it in record.iterations:
        for c in it.candidates:  # racer.tune leaves inactive parameters out; none here
            # The record's values went through JSON, the result's did not: the same names,
            # numbers equal to 1e-12 relative (JSON writes a float's shortest repr, exact in
            # practice; the tolerance only guards against a serialiser that rounds).
            got, expected = c.values, res.configurations[c.id]
            assert got.keys() == expected.keys()
            for name, value in expected.items():
                if isinstance(value, float):
                    assert got[name] == pytest.approx(value, rel=1e-12)
                else:
                    assert got[name] == value
        # Runs charged to this iteration, as the run log has them.
        runs = res.runs[(res.runs.iteration == it.iteration)
                        & (res.runs.status != "speculative-unused")]
        assert it.n_runs == len(runs)
        assert set(it.new) <= set(runs.configuration)
        # The elites' means are the race's means in its journal.
        race = result_from_journal(str(tmp_path / "run" / JOURNAL_DIR / it.journal))
        cols = [[c.id for c in it.candidates].index(e) for e in it.elites]
        assert [m for (m,) in it.elite_means] == pytest.approx(race.mean_scores[cols].tolist(),
                                                               rel=1e-12)
    assert {cid: list(row) for cid, row in zip(record.test.elites, record.test.costs)} == res.test
    _tune(tmp_path / "again")
    assert run_json(tmp_path / "again") == run_json(tmp_path / "run")


def test_racer_tune_on_two_objectives_records_the_pareto_elites_and_their_means(tmp_path):
    res = racer.tune(lambda c, inst, seed: (c["x"] ** 2 + inst, (1 - c["x"]) ** 2),
                     'x "" r (0, 1)', [0.01 * j for j in range(8)], budget=150, random_state=1,
                     progress=False, storage=str(tmp_path), direction=["minimize", "minimize"])
    record = read_record(tmp_path)
    assert record.directions == ("minimize", "minimize")
    last = record.ended_iterations[-1]
    assert record.final_elites == last.elites == tuple(res.elite_ids)
    assert np.allclose(np.array(last.elite_means), np.array(res.pareto_objectives), rtol=1e-12)
    run = read_exec_dir(tmp_path)
    assert run.objectives["directions"] == ["minimize", "minimize"]
    assert run.training_means == {cid: list(m) for cid, m in zip(last.elites, last.elite_means)}


# --------------------------------------------------------------------------- the command


@pytest.mark.slow  # target-runner processes
def test_the_command_records_what_it_decided_and_its_files_agree(tmp_path):
    from racer.cli import EXIT_OK, main

    from _helpers.cli import make_scenario, read_csv, read_runs

    scen = make_scenario(tmp_path)
    assert main(["--scenario", scen, "--parallel", "2", "--quiet", "1", "--no-report"]) == EXIT_OK
    arena = tmp_path / "arena"
    record = read_record(arena)
    results = json.loads((arena / "results.json").read_text())
    assert record.final_elites == tuple(e["id"] for e in results["elites"])
    assert record.experiments == results["experiments"] and record.complete
    assert record.stop_reason == results["stop_reason"]
    assert len(record.ended_iterations) == results["iterations"]
    final = {c.id: c for it in record.iterations for c in it.candidates}
    for e in results["elites"]:
        assert final[e["id"]].values == e["values"] and final[e["id"]].parent == e["parent"]
    runs = [r for r in read_runs(tmp_path) if r["status"] != "speculative-unused"]
    for it in record.iterations:
        mine = [r for r in runs if r["iteration"] == str(it.iteration)]
        assert it.n_runs == len(mine)
        assert {int(r["configuration"]) for r in mine} >= set(it.new)
    test = read_csv(arena / "test.csv")
    for cid, row in zip(record.test.elites, record.test.costs):
        assert [float(r["cost"]) for r in test if int(r["configuration"]) == cid] == list(row)
    run = read_exec_dir(arena)
    assert run.elites == {it.iteration: list(it.elites) for it in record.iterations}


@pytest.mark.slow  # target-runner processes, kill -9
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 of a process group")
def test_kill_9_then_the_same_command_writes_the_same_record(tmp_path):
    from racer.cli import EXIT_OK, main

    from _helpers.cli import kill, racer_args, read_runs, rows_at_least, scenario

    ref = tmp_path / "ref"
    assert main(racer_args(scenario(ref))) == EXIT_OK
    first = sum(r["iteration"] == "1" for r in read_runs(ref))
    folder = tmp_path / "run"
    scen = scenario(folder)
    kill(folder, scen, when=rows_at_least(folder, first + 3))  # in the second race
    partial = read_record(folder / "arena")
    assert not partial.complete and partial.ended_iterations
    assert main(racer_args(scen)) == EXIT_OK
    assert run_json(folder / "arena") == run_json(ref / "arena")
