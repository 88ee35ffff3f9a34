"""The journal of a race on several objectives: every objective of every evaluation
is journaled, a resume after an interruption anywhere ends exactly where the uninterrupted race
ends, the journal rebuilds the result and its Pareto front, old journals still read."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from racer import KeepAll, ParetoTest, Race
from racer import storage as storage_module
from racer.storage import read_journal, result_from_journal

from _helpers.processes import job_script
from _helpers.races import tell_first

DIRECTIONS = ["minimize", "maximize", "minimize"]
# (error, accuracy-like score, seconds): "worse" and "far-worse" are dominated; "fast" and
# "accurate" trade off; "tied" is within noise of "fast" on every objective.
MEANS = {"fast": (0.20, 0.8, 1.0), "accurate": (0.15, 0.85, 2.0), "worse": (0.30, 0.7, 1.5),
         "far-worse": (0.40, 0.6, 3.0), "fast-too": (0.201, 0.799, 1.01)}
CANDIDATES = list(MEANS)


def evaluate(c, i):
    if (c, i) == ("worse", 3):
        return (math.nan, 0.7, 1.5)  # a failed evaluation: imputed per objective
    noise = np.random.default_rng([CANDIDATES.index(c), i]).normal(0, [0.03, 0.03, 0.2])
    return tuple(np.add(MEANS[c], noise))


OPTIONS = dict(direction=DIRECTIONS, first_test=4, max_instances=30, random_state=11,
               test=ParetoTest(min_instances=4, credibility=0.95, rope=[0.03, 0.03, 0.2]))


class Counter:
    def __init__(self):
        self.calls = []

    def __call__(self, c, i):
        self.calls.append((c, i))
        return evaluate(c, i)


def reference(**extra):
    return Race(CANDIDATES, **{**OPTIONS, **extra}).run(evaluate, range(100), progress=False)


def interrupted(path, n_first, **extra):
    """Tell ``n_first`` evaluations through ask/tell, then drop the race as a crash would."""
    r = Race(CANDIDATES, storage=path, **{**OPTIONS, **extra})
    r.add_instances(range(100))
    return tell_first(r, n_first, evaluate)


def decisions(result):
    # Candidates by position: a result read from a journal holds their reprs.
    return [(h.candidate_index, h.n_instances, h.reason, h.by_index, h.probability, h.step)
            for h in result.history]


def assert_same_result(got, ref):
    assert decisions(got) == decisions(ref)  # who, when, why, by whom, with what probability
    assert [repr(c) for c in got.candidates] == [repr(c) for c in ref.candidates]
    np.testing.assert_array_equal(got.objective_scores, ref.objective_scores)
    np.testing.assert_array_equal(got.scores, ref.scores)
    np.testing.assert_array_equal(got.mean_objective_scores, ref.mean_objective_scores)
    np.testing.assert_array_equal(got.mean_scores, ref.mean_scores)
    assert got.pareto_front_indices.tolist() == ref.pareto_front_indices.tolist()
    assert got.ranking_indices.tolist() == ref.ranking_indices.tolist()
    assert got.n_evaluations == ref.n_evaluations and got.failures == ref.failures
    assert got.directions == ref.directions == tuple(DIRECTIONS)


def test_the_reference_race_eliminates_fails_and_keeps_a_front():
    # What the resume tests below replay is a race with something to get wrong.
    ref = reference()
    assert {h.reason for h in ref.history} == {"dominated", "indistinguishable"}
    assert ref.failures and ref.failures[0][:2] == (CANDIDATES.index("worse"), 3)
    assert sorted(ref.pareto_front) == ["accurate", "fast-too"]
    assert [h.n_instances for h in ref.history] == [4, 4, 7]  # two tests apart


@pytest.mark.parametrize("n_first", [1, 4, 19, 20, 23, 29, 41, 1000])
def test_a_resume_after_an_interruption_anywhere_is_the_uninterrupted_race(tmp_path, n_first):
    # 1: inside the first row; 4/19/20: inside and at the end of the first block (5 x 4);
    # 23: inside a block of 3; 29: just before the step that eliminates "fast"; 41: with two
    # survivors; 1000: a finished race run again.
    path = tmp_path / "race.sqlite"
    ref = reference()
    told = interrupted(path, n_first)
    counter = Counter()
    resumed = Race(CANDIDATES, storage=path, **OPTIONS).run(counter, range(100), progress=False)
    assert_same_result(resumed, ref)
    assert len(counter.calls) == ref.n_evaluations - told  # nothing journaled runs again
    # The journal holds every objective of every successful evaluation, the first also in
    # `evaluations`, and rebuilds the live result.
    data = read_journal(path)
    ok = [(c, i) for c, i, v, e in data["evaluations"] if e is None]
    assert len(data["objective_values"]) == 3 * len(ok)
    for c, i, v, _e in data["evaluations"]:
        if v is not None:
            assert v == ref.objective_scores[i, c, 0]
    for c, i, k, v in data["objective_values"]:
        assert v == ref.objective_scores[i, c, k]  # bit for bit
    assert_same_result(result_from_journal(path), ref)


def test_a_race_interrupted_twice_resumes_and_continues_with_a_larger_budget(tmp_path):
    path = tmp_path / "race.sqlite"
    ref = reference()
    interrupted(path, 9)
    interrupted(path, 31)  # a resumed race, interrupted again: replays 9, tells 22 more
    resumed = Race(CANDIDATES, storage=path, **OPTIONS).run(evaluate, range(100), progress=False)
    assert_same_result(resumed, ref)
    # Continuing the finished race with a larger max_instances is one larger race.
    longer = reference(max_instances=40)
    more = Race(CANDIDATES, storage=path, **{**OPTIONS, "max_instances": 40}).run(
        evaluate, range(100), progress=False)
    assert_same_result(more, longer)


def test_the_journal_of_an_interrupted_race_is_the_live_result_at_that_point(tmp_path):
    # Interrupted at a block boundary (the live race has no open block) and mid-row.
    for n_first in (20, 22):
        path = tmp_path / f"race{n_first}.sqlite"
        r = Race(CANDIDATES, storage=path, **OPTIONS)
        r.add_instances(range(100))
        told = 0
        while told < n_first:
            for ev in r.ask():
                if told < n_first:
                    r.tell(ev, evaluate(ev.candidate, ev.instance))
                    told += 1
        live = r.result()
        r.close()
        back = result_from_journal(path)
        assert back.stop_reason == "interrupted"  # the next block began (20) or is half done
        np.testing.assert_array_equal(back.objective_scores, live.objective_scores)
        np.testing.assert_array_equal(back.mean_objective_scores, live.mean_objective_scores)
        assert back.pareto_front_indices.tolist() == live.pareto_front_indices.tolist()
        assert decisions(back) == decisions(live)


def test_on_error_eliminate_and_a_keep_all_race_rebuild_from_the_journal(tmp_path):
    path = tmp_path / "race.sqlite"
    options = dict(direction=DIRECTIONS, test=KeepAll(), on_error="eliminate", first_test=4,
                   max_instances=8, random_state=0)
    live = Race(CANDIDATES, storage=path, **options).run(evaluate, range(8), progress=False)
    assert [h.reason for h in live.history] == ["failed"]
    back = result_from_journal(path)
    assert_same_result(back, live)
    # Means over successes only under "eliminate": the failure is not imputed.
    worse = CANDIDATES.index("worse")
    np.testing.assert_allclose(back.mean_objective_scores[worse],
                               np.nanmean(back.objective_scores[:4, worse], axis=0), rtol=1e-15)


@pytest.mark.parametrize("now, words", [
    (dict(direction=["minimize", "minimize", "minimize"]),
     "direction: journal ['minimize', 'maximize', 'minimize'], now ['minimize', 'minimize', "
     "'minimize'] (pass direction=['minimize', 'maximize', 'minimize'] to continue it)"),
    (dict(direction=["minimize", "maximize"], test=ParetoTest()),
     "direction: journal ['minimize', 'maximize', 'minimize'], now ['minimize', 'maximize']"),
    (dict(direction="minimize", test=KeepAll()),
     "direction: journal ['minimize', 'maximize', 'minimize'], now 'minimize'"),
])
def test_a_resume_with_other_directions_is_refused_naming_direction(tmp_path, now, words):
    path = tmp_path / "race.sqlite"
    interrupted(path, 7)
    with pytest.raises(ValueError, match="holds a race with other settings") as info:
        Race(CANDIDATES, storage=path, **{**OPTIONS, **now})
    assert words in str(info.value)
    # Nothing was written: the journal resumes with its own directions.
    resumed = Race(CANDIDATES, storage=path, **OPTIONS).run(evaluate, range(100), progress=False)
    assert_same_result(resumed, reference())


def test_a_single_objective_journal_is_refused_to_a_race_on_several(tmp_path):
    path = tmp_path / "race.sqlite"
    Race([1, 2], test=KeepAll(), first_test=2, max_instances=3, storage=path, random_state=0).run(
        lambda c, i: c * i, range(5), progress=False)
    with pytest.raises(ValueError, match=r"direction: journal 'minimize', now \['minimize', "
                                         r"'minimize'\] \(pass direction='minimize'"):
        Race([1, 2], test=KeepAll(), first_test=2, max_instances=3, storage=path, random_state=0,
             direction=["minimize", "minimize"])


def _tables_and_schema(path):
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        schema = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0]
    finally:
        conn.close()
    return tables, schema


def test_a_single_objective_journal_keeps_the_old_layout_and_reads_as_before(tmp_path):
    path = tmp_path / "race.sqlite"
    live = Race([1, 2, 3], max_instances=8, storage=path, random_state=0).run(
        lambda c, i: abs(c - 2) + 0.1 * (i % 3), range(8), progress=False)
    # The tables and schema marker every racer before several objectives wrote and reads.
    assert _tables_and_schema(path) == ({"meta", "instances", "evaluations", "decisions"}, "1")
    data = read_journal(path)
    assert data["objective_values"] == [] and data["fingerprint"]["direction"] == "minimize"
    back = result_from_journal(path)
    assert back.directions is None and back.objective_scores is None
    assert back.pareto_front_indices.tolist() == [live.best_index] == live.pareto_front_indices.tolist()


def test_an_old_journal_without_the_new_keys_still_reads(tmp_path):
    # A journal written before `objective_values` (and the dict read_journal returned then).
    path = tmp_path / "race.sqlite"
    Race([1, 2, 3], max_instances=8, storage=path, random_state=0).run(
        lambda c, i: abs(c - 2) + 0.1 * (i % 3), range(8), progress=False)
    old = {k: v for k, v in read_journal(path).items() if k != "objective_values"}
    assert result_from_journal(old).best == result_from_journal(path).best


def test_a_multi_objective_journal_is_schema_2_and_an_older_racer_refuses_it(tmp_path, monkeypatch):
    path = tmp_path / "race.sqlite"
    interrupted(path, 5)
    tables, schema = _tables_and_schema(path)
    assert "objective_values" in tables and schema == "2"
    # A racer that reads schema 1 only would read one objective of three without a word:
    # it refuses the journal instead.
    monkeypatch.setattr(storage_module, "_SCHEMA_VERSION", 1)
    with pytest.raises(ValueError, match=r"racer journal of schema '2'.*upgrade racer"):
        read_journal(path)
    with pytest.raises(ValueError, match=r"racer journal of schema '2'.*upgrade racer"):
        Race(CANDIDATES, storage=path, **OPTIONS)


def test_an_evaluation_without_its_objective_values_is_a_damaged_journal(tmp_path):
    path = tmp_path / "race.sqlite"
    interrupted(path, 5)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM objective_values WHERE candidate = 1 AND instance = 0 AND objective = 2")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match=r"evaluation of candidate 1 on instance 0 without its 3 "
                                         r"objective values; it is damaged"):
        result_from_journal(path)
    with pytest.raises(ValueError, match=r"evaluation \(1, 0\) without its 3 objective values"):
        Race(CANDIDATES, storage=path, **OPTIONS)


KILL_SCRIPT = '''
import json, sys, time
import numpy as np
from racer import ParetoTest, Race

MEANS = [(0.20, 1.0), (0.15, 2.0), (0.30, 1.5), (0.40, 3.0), (0.21, 1.05), (0.16, 2.1)]

def evaluate(c, i):
    time.sleep(0.003)  # slow enough for a kill to land mid-race
    return tuple(np.add(MEANS[c], np.random.default_rng([c, i]).normal(0, [0.03, 0.2])))

def make_race(storage=None):
    return Race(list(range(6)), direction=["minimize", "minimize"], first_test=4,
                max_instances=40, random_state=7, storage=storage,
                test=ParetoTest(min_instances=4, credibility=0.95, rope=[0.02, 0.1]))

def summarise(res):
    return {"history": [[h.candidate_index, h.n_instances, h.reason, h.by_index, h.probability]
                        for h in res.history],
            "objectives": np.nan_to_num(res.objective_scores, nan=-999.0).tolist(),
            "front": res.pareto_front_indices.tolist(), "n_evaluations": res.n_evaluations}

if __name__ == "__main__":
    res = make_race(sys.argv[1]).run(evaluate, range(100), progress=False)
    with open(sys.argv[2], "w") as fh:
        json.dump(summarise(res), fh)
'''


@pytest.mark.slow  # subprocesses
@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_at_random_points_then_resume_matches_uninterrupted(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    script, job = job_script(tmp_path, "mo_job", KILL_SCRIPT)
    expected = job.summarise(job.make_race().run(job.evaluate, range(100), progress=False))
    assert expected["history"]  # something to decide again wrongly

    def count(path):
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
            try:
                return conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            return 0

    storage, out = tmp_path / "race.sqlite", tmp_path / "out.json"
    rng = np.random.default_rng(0)
    kills, last = 0, 0
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, str(script), str(storage), str(out)],
                                stderr=subprocess.PIPE)
        if kills < 3:
            deadline = time.monotonic() + 30
            while count(storage) <= last and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(float(rng.uniform(0.0, 0.1)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
            proc.stderr.close()
            last = count(storage)
        else:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
        if out.exists():
            break
    assert kills >= 2
    with open(out) as fh:
        assert json.load(fh) == expected  # same decisions, probabilities, objectives, front
    data = read_journal(storage)
    assert len(data["objective_values"]) == 2 * expected["n_evaluations"]  # none half-written


def test_a_journal_interrupted_mid_block_counts_the_full_rows_of_that_block(tmp_path):
    # The decision where the journal cannot say where the open block began (racer.storage,
    # _replayed_table): the front of an interrupted race is computed on every row all its
    # candidates completed, where the live race counts none of its open block's rows.
    from racer.stats.pareto import nondominated_mask

    path = tmp_path / "race.sqlite"
    r = Race(CANDIDATES, storage=path, **OPTIONS)  # first block: 4 instances x 5 candidates
    r.add_instances(range(100))
    for ev in r.ask()[:12]:  # rows 0 and 1 complete, row 2 begun
        r.tell(ev, evaluate(ev.candidate, ev.instance))
    live = r.result()
    r.close()
    back = result_from_journal(path)
    assert sorted(live.pareto_front_indices.tolist()) == list(range(5))  # no complete row: all
    oriented = back.objective_scores[:2] * np.array([-1.0, 1.0, -1.0])
    expected = np.flatnonzero(nondominated_mask(oriented.mean(axis=0)))
    assert sorted(back.pareto_front_indices.tolist()) == expected.tolist()
    assert len(expected) < 5  # the two rows do tell candidates apart
    np.testing.assert_array_equal(back.objective_scores, live.objective_scores)
