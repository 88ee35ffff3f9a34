"""The SQLite journal: resume replays, refuses foreign journals, records decisions."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from racer import Elimination, Race, RacingTest
from racer.storage import read_journal


class CoinDrop(RacingTest):
    """Drops the worst-mean survivor when the step's rng says so: decisions depend on the rng
    stream, so a resume that re-derived it wrongly would diverge."""

    def __init__(self, p: float = 0.6):
        self.p = p

    def decide(self, view, rng):
        scores, ids = view.scores, view.ids
        means = scores.mean(axis=0)
        worst, best = int(np.argmin(means)), int(np.argmax(means))
        u = float(rng.random())
        if worst != best and u < self.p:
            return [Elimination(worst, "dominated", best, u)]
        return []

    def get_params(self):
        return {"p": self.p}


def score(candidate, instance):
    return candidate + math.sin(1.7 * instance * (candidate + 1))


class Counter:
    def __init__(self, fail=None):
        self.calls = []
        self.fail = fail

    def __call__(self, candidate, instance):
        self.calls.append((candidate, instance))
        if self.fail is not None and (candidate, instance) == self.fail:
            raise ValueError("bad")
        return score(candidate, instance)


OPTIONS = dict(first_test=3, max_instances=30, random_state=5)


def reference(**extra):
    return Race(list(range(6)), test=CoinDrop(), **{**OPTIONS, **extra}).run(
        score, range(100), progress=False
    )


def interrupted_then_resumed(path, n_first, **extra):
    """Tell ``n_first`` evaluations, abandon the race (as a crash would), resume with run()."""
    r = Race(list(range(6)), test=CoinDrop(), storage=path, **{**OPTIONS, **extra})
    r.add_instances(range(100))
    told = 0
    while told < n_first and not r.finished:
        for ev in r.ask():
            if told == n_first:
                break
            r.tell(ev, score(ev.candidate, ev.instance))
            told += 1
    r.close()
    counter = Counter()
    resumed = Race(list(range(6)), test=CoinDrop(), storage=path, **{**OPTIONS, **extra}).run(
        counter, range(100), progress=False
    )
    return resumed, counter.calls, told


@pytest.mark.parametrize("n_first", [1, 17, 18, 40, 1000])
def test_resume_evaluates_nothing_twice_and_ends_like_an_uninterrupted_race(tmp_path, n_first):
    ref = reference()
    resumed, calls, told = interrupted_then_resumed(tmp_path / "race.sqlite", n_first)
    assert resumed.history == ref.history
    np.testing.assert_array_equal(resumed.scores, ref.scores)
    assert resumed.n_evaluations == ref.n_evaluations
    assert len(calls) == ref.n_evaluations - told  # nothing recorded is evaluated again
    journal = read_journal(tmp_path / "race.sqlite")
    assert len(journal["evaluations"]) == ref.n_evaluations
    assert [(d[2], d[1], d[3], d[4]) for d in journal["decisions"]] == [
        (h.candidate_index, h.n_instances, h.reason, h.by_index) for h in ref.history
    ]
    assert journal["instances"] == [repr(i) for i in ref.instances]


def test_random_state_none_resumes_with_the_journaled_seed(tmp_path):
    path = tmp_path / "race.sqlite"
    first = Race(list(range(6)), test=CoinDrop(), first_test=3, max_instances=30, storage=path)
    seed = first.seed
    first.close()
    r = Race(list(range(6)), test=CoinDrop(), first_test=3, max_instances=30, storage=path)
    assert r.seed == seed == read_journal(path)["seed"]
    res = r.run(score, range(100), progress=False)
    ref = Race(list(range(6)), test=CoinDrop(), first_test=3, max_instances=30, random_state=seed).run(
        score, range(100), progress=False
    )
    assert res.history == ref.history


@pytest.mark.parametrize(
    "change, what",
    [
        (dict(candidates=list(range(7))), "candidates"),
        (dict(test=CoinDrop(p=0.5)), "test_params"),
        (dict(first_test=4), "first_test"),
        (dict(maximize=False), "maximize"),
        (dict(random_state=6), "random_state"),
        (dict(on_error="eliminate"), "on_error"),
    ],
)
def test_a_journal_of_another_race_is_refused(tmp_path, change, what):
    path = tmp_path / "race.sqlite"
    Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(score, range(100), progress=False)
    kwargs = {"candidates": list(range(6)), "test": CoinDrop(), **OPTIONS, **change}
    cands = kwargs.pop("candidates")
    with pytest.raises(ValueError, match=rf"holds a different race \({what}: journal"):
        Race(cands, storage=path, **kwargs)


def test_other_instances_are_refused(tmp_path):
    path = tmp_path / "race.sqlite"
    Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(score, range(100), progress=False)
    with pytest.raises(ValueError, match="instance #0 = '0'.*instance #0 is '7'"):
        Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(
            score, range(7, 100), progress=False
        )


def test_failures_are_journaled_and_replayed(tmp_path):
    path = tmp_path / "race.sqlite"
    counter = Counter(fail=(2, 1))
    first = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(counter, range(100),
                                                                              progress=False)
    rows = [e for e in read_journal(path)["evaluations"] if e[3] is not None]
    assert rows == [(2, 1, None, "raised ValueError: bad")]
    again = Counter()
    second = Race(list(range(6)), test=CoinDrop(), storage=path, **OPTIONS).run(again, range(100),
                                                                               progress=False)
    assert again.calls == [] and second.failures == first.failures
    assert second.history == first.history


def test_not_a_journal(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ValueError, match="is not a racer journal"):
        Race([0, 1], test=CoinDrop(), storage=path)
    with pytest.raises(TypeError, match="`storage` must be a file path"):
        Race([0, 1], test=CoinDrop(), storage=3.5)


def test_journal_is_wal_and_readable_while_open(tmp_path):
    path = tmp_path / "race.sqlite"
    r = Race(list(range(6)), test=CoinDrop(), storage=path, instances=range(100), **OPTIONS)
    for ev in r.ask(4):
        r.tell(ev, 1.0)
    conn = sqlite3.connect(path)  # another reader sees every told evaluation at once
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 4
    finally:
        conn.close()
        r.close()
