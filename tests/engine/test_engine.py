"""The race engine: loop, schedule, budget, stopping rules, failures, ask/tell, executors.

The engine is tested with small deterministic RacingTest subclasses defined here (real tests,
not stubs of the engine), so that every expectation can be worked out by hand, and against an
independent re-implementation of irace's race loop (irace 3.5's R sources) driven by the
F-race test.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import logging
import math

import numpy as np

from racer.racing.base import RaceView
import pytest

from racer import (
    Elimination,
    Evaluation,
    EvaluationError,
    Race,
    RaceFailedError,
    RaceResult,
    RacingTest,
    race,
)


class DropWorstMean(RacingTest):
    """Eliminates the survivor with the worst mean once it has seen ``after`` instances."""

    def __init__(self, after: int = 1):
        self.after = after

    def decide(self, view, rng):
        scores, ids = view.scores, view.ids
        if scores.shape[0] < self.after:
            return []
        means = scores.mean(axis=0)
        worst, best = int(np.argmin(means)), int(np.argmax(means))
        if worst == best:
            return []
        return [Elimination(worst, "dominated", best, 0.99)]

    def get_params(self):
        return {"after": self.after}


class KeepAll(RacingTest):
    """Never eliminates; records every call so the schedule and inputs can be inspected."""

    def __init__(self):
        self.calls = []

    def decide(self, view, rng):
        scores, ids = view.scores, view.ids
        self.calls.append((scores.copy(), ids.copy(), rng.random()))
        return []

    def get_params(self):
        return {}


class RandomDrop(RacingTest):
    """Drops one survivor chosen with the step's rng: decisions depend on the rng stream."""

    def decide(self, view, rng):
        scores, ids = view.scores, view.ids
        m = scores.shape[1]
        loser = int(rng.integers(m))
        winner = (loser + 1) % m
        return [Elimination(loser, "indistinguishable", winner, float(rng.random()))]

    def get_params(self):
        return {}


def linear_evaluate(candidate, instance):
    """Score = candidate + a deterministic instance effect + a small deterministic wobble."""
    return float(candidate) + 0.1 * math.sin(3.0 * instance + candidate)


def drive(r: Race, evaluate, order=None):
    """Drive a race with ask/tell; ``order`` permutes each block's tells (arrival order)."""
    rng = np.random.default_rng(order)
    while not r.finished:
        batch = r.ask()
        if order is not None:
            batch = [batch[i] for i in rng.permutation(len(batch))]
        for ev in batch:
            r.tell(ev, evaluate(ev.candidate, ev.instance))
    return r.result()


# ---------------------------------------------------------------------------- schedule


def test_tests_run_at_first_test_then_every_each_test():
    test = KeepAll()
    r = Race([0, 1, 2], test=test, first_test=4, each_test=3, max_instances=14, random_state=0)
    res = r.run(linear_evaluate, range(100), progress=False)
    # n >= first_test and (n - first_test) % each_test == 0: 4, 7, 10, 13; the last block (14)
    # is partial (max_instances) and, as in irace, not tested.
    assert [c[0].shape[0] for c in test.calls] == [4, 7, 10, 13]
    assert res.n_instances == 14 and res.stop_reason == "max_instances"
    assert res.n_evaluations == 3 * 14


def test_test_sees_all_rows_of_survivors_oriented_and_ids():
    test = KeepAll()
    cands = [{"a": 1}, {"a": 2}, {"a": 3}]
    evaluate = lambda c, i: c["a"] * 10.0 + i  # noqa: E731
    Race(cands, test=test, first_test=2, max_instances=3, direction="minimize", random_state=0).run(
        evaluate, range(10), progress=False
    )
    scores, ids, _ = test.calls[-1]
    expected = -np.array([[10.0 * a + i for a in (1, 2, 3)] for i in range(3)])
    np.testing.assert_array_equal(scores, expected)  # negated because direction="minimize"
    np.testing.assert_array_equal(ids, [0, 1, 2])


def test_rng_of_step_k_is_default_rng_seed_k():
    test = KeepAll()
    Race([0, 1], test=test, first_test=1, max_instances=4, random_state=123).run(
        linear_evaluate, range(10), progress=False
    )
    expected = [np.random.default_rng([123, k]).random() for k in (1, 2, 3, 4)]
    assert [c[2] for c in test.calls] == expected


def test_no_test_with_a_single_survivor_and_stop_at_min_survivors():
    test = DropWorstMean()
    res = Race([0, 1, 2, 3], test=test, first_test=2, random_state=0, direction="maximize").run(
        linear_evaluate, range(100), progress=False
    )
    # One elimination per test from instance 2 on: 4 -> 1 survivors at instance 4.
    assert res.n_instances == 4 and res.stop_reason == "min_survivors"
    assert [h.n_instances for h in res.history] == [2, 3, 4]
    assert [h.candidate for h in res.history] == [0, 1, 2]
    assert res.best == 3 and res.survivors == [3]
    assert res.n_evaluations == 4 * 2 + 3 + 2


def test_min_survivors_two_keeps_two():
    res = Race([0, 1, 2, 3], test=DropWorstMean(), first_test=2, min_survivors=2, random_state=0,
               direction="maximize").run(
        linear_evaluate, range(100), progress=False
    )
    assert sorted(res.survivors) == [2, 3] and res.best == 3 and res.n_instances == 3


def test_eliminated_candidates_are_not_evaluated_again_and_survivors_share_rows():
    res = Race(list(range(5)), test=DropWorstMean(), first_test=3, each_test=2, random_state=0).run(
        linear_evaluate, range(100), progress=False
    )
    evaluated = ~np.isnan(res.scores)
    for rec in res.history:
        col = evaluated[:, rec.candidate_index]
        assert col[: rec.n_instances].all() and not col[rec.n_instances :].any()
    assert evaluated[:, res.best_index].all()
    np.testing.assert_array_equal(res.n_evaluated, evaluated.sum(axis=0))


# ---------------------------------------------------------------------------- budget


@pytest.mark.parametrize("budget", [15, 16, 17, 18, 19, 23, 24, 40])
def test_budget_never_exceeded_and_no_block_left_unfinished(budget):
    # 3 candidates, nobody eliminated: first block 3 x 3 = 9, then blocks of 3 x 2 = 6.
    res = Race([0, 1, 2], test=KeepAll(), first_test=3, each_test=2, budget=budget, random_state=0).run(
        linear_evaluate, range(100), progress=False
    )
    assert res.n_evaluations <= budget
    assert res.n_evaluations == 9 + 6 * ((budget - 9) // 6)
    assert res.stop_reason == "budget"
    assert not np.isnan(res.scores).any()  # every started block was finished


def test_budget_accounts_for_shrinking_blocks():
    res = Race(list(range(4)), test=DropWorstMean(), first_test=2, budget=12, min_survivors=1,
               random_state=0).run(linear_evaluate, range(100), progress=False)
    # 8 for the first block, one elimination -> 3 survivors -> 3 more = 11; next block of 2 would
    # make 13 > 12.
    assert res.n_evaluations == 11 and res.stop_reason == "budget"


def test_budget_too_small_for_first_block_is_refused():
    with pytest.raises(ValueError, match=r"`budget`=14 cannot pay for the first block: 3 candidates x 5"):
        Race([0, 1, 2], test=KeepAll(), budget=14)


# ---------------------------------------------------------------------------- instances


def test_endless_generator_with_max_instances():
    res = Race([0, 1], test=KeepAll(), first_test=2, max_instances=7, random_state=0).run(
        linear_evaluate, itertools.count(), progress=False
    )
    assert res.instances == list(range(7)) and res.stop_reason == "max_instances"


def test_instances_exhausted_and_reopened_by_add_instances():
    r = Race([0, 1], test=KeepAll(), first_test=2, instances=[5, 6, 7], random_state=0)
    drive(r, linear_evaluate)
    assert r.stop_reason == "instances_exhausted" and r.n_instances == 3
    r.add_instances(iter([8, 9]))
    assert not r.finished
    res = drive(r, linear_evaluate)
    assert res.instances == [5, 6, 7, 8, 9]


def test_shuffle_is_seeded_and_needs_a_sequence():
    runs = [
        Race([0, 1], test=KeepAll(), first_test=2, shuffle=True, random_state=s).run(
            linear_evaluate, list(range(20)), progress=False
        ).instances
        for s in (3, 3, 4)
    ]
    assert runs[0] == runs[1] != runs[2]
    assert sorted(runs[0]) == list(range(20)) and runs[0] != list(range(20))
    with pytest.raises(TypeError, match="shuffle=True` needs a sequence"):
        Race([0, 1], test=KeepAll(), shuffle=True, instances=iter(range(5)))


def test_unhashable_candidates_are_returned_as_given():
    cands = [{"x": [1]}, {"x": [3]}, {"x": [2]}]
    res = race(lambda c, i: c["x"][0] + 0.01 * i, cands, range(8), test=DropWorstMean(), first_test=2,
               progress=False, random_state=0, direction="maximize")
    assert res.best is cands[1]
    assert res.history[0].candidate is cands[0] and res.history[0].by is cands[1]
    assert [id(c) for c in res.ranking] == [id(cands[1]), id(cands[2]), id(cands[0])]


# ---------------------------------------------------------------------------- determinism


def test_same_seed_same_race_and_arrival_order_does_not_matter():
    cands = list(range(8))
    results = []
    for order in (None, 1, 2):
        r = Race(cands, test=RandomDrop(), first_test=2, random_state=7, instances=range(50))
        results.append(drive(r, linear_evaluate, order))
    for other in results[1:]:
        assert other.history == results[0].history
        np.testing.assert_array_equal(other.scores, results[0].scores)
    assert len(results[0].history) == 7
    different = drive(Race(cands, test=RandomDrop(), first_test=2, random_state=8, instances=range(50)),
                      linear_evaluate)
    assert different.history != results[0].history


def test_generator_random_state_and_an_interrupted_run_continues():
    kwargs = dict(test=RandomDrop(), first_test=3)
    a = Race(list(range(6)), random_state=np.random.default_rng(5), **kwargs).run(
        linear_evaluate, range(30), progress=False)
    r = Race(list(range(6)), random_state=np.random.default_rng(5), **kwargs)
    calls = []

    def interrupting(c, i):
        calls.append((c, i))
        if len(calls) == 8:
            raise KeyboardInterrupt
        return linear_evaluate(c, i)

    with pytest.raises(KeyboardInterrupt):
        r.run(interrupting, range(30), progress=False)
    b = r.run(linear_evaluate, progress=False)  # the untold evaluations are run again
    assert b.history == a.history and b.n_evaluations == a.n_evaluations
    np.testing.assert_array_equal(b.scores, a.scores)


def test_thread_pool_executor_gives_the_serial_result():
    kwargs = dict(test=RandomDrop(), first_test=3, random_state=11)
    serial = Race(list(range(6)), **kwargs).run(linear_evaluate, range(50), progress=False)
    with cf.ThreadPoolExecutor(4) as pool:
        threaded = Race(list(range(6)), **kwargs).run(linear_evaluate, range(50), executor=pool,
                                                        progress=False)
    assert threaded.history == serial.history
    np.testing.assert_array_equal(threaded.scores, serial.scores)


@pytest.mark.slow
def test_process_pool_n_jobs_gives_the_serial_result():
    # flaky raises, returns NaN and a string: failures must cross the process boundary too.
    kwargs = dict(test=DropWorstMean(), first_test=3, random_state=11)
    serial = Race(list(range(4)), **kwargs).run(flaky, range(50), progress=False)
    pooled = Race(list(range(4)), **kwargs).run(flaky, range(50), n_jobs=2, progress=False)
    assert pooled.history == serial.history and pooled.failures == serial.failures
    assert len(serial.failures) == 3
    np.testing.assert_array_equal(pooled.scores, serial.scores)


class EagerExecutor(cf.Executor):
    """An Executor whose futures are not concurrent.futures.Future (like some frameworks')."""

    class Done:
        def __init__(self, fn, args):
            try:
                self._value, self._exc = fn(*args), None
            except Exception as exc:
                self._value, self._exc = None, exc

        def result(self):
            if self._exc is not None:
                raise self._exc
            return self._value

        def cancel(self):
            return False

    def submit(self, fn, /, *args, **kwargs):
        return self.Done(fn, args)


def test_executor_with_foreign_futures_and_failures():
    kwargs = dict(test=RandomDrop(), first_test=3, random_state=3)
    serial = Race(list(range(5)), **kwargs).run(flaky, range(20), progress=False)
    other = Race(list(range(5)), **kwargs).run(flaky, range(20), executor=EagerExecutor(), progress=False)
    assert other.history == serial.history and other.failures == serial.failures
    assert len(serial.failures) == 3


def test_executor_and_n_jobs_together_is_refused():
    with cf.ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="either `executor` or `n_jobs`"):
        Race([0, 1], test=KeepAll()).run(linear_evaluate, range(5), executor=pool, n_jobs=2)


# ---------------------------------------------------------------------------- failures


def flaky(candidate, instance):
    if candidate == 1 and instance == 1:
        raise RuntimeError("boom")
    if candidate == 2 and instance == 2:
        return float("nan")
    if candidate == 0 and instance == 0:
        return "oops"
    return float(candidate) + instance


def test_on_error_worst_substitutes_below_every_success():
    test = KeepAll()
    res = Race([0, 1, 2, 3], test=test, first_test=3, max_instances=3, on_error="worst",
               random_state=0, direction="maximize").run(flaky, range(10), progress=False)
    scores = test.calls[0][0]
    # instance 0: successes 1,2,3 -> lowest 1, spread 2 -> substitute -1 for candidate 0.
    # instance 1: successes 1,3,4 -> substitute 1 - 3 = -2; instance 2: 2,3,5 -> 2 - 3 = -1.
    np.testing.assert_array_equal(scores[:, 0], [-1.0, 1.0, 2.0])
    np.testing.assert_array_equal(scores[:, 1], [1.0, -2.0, 3.0])
    np.testing.assert_array_equal(scores[:, 2], [2.0, 3.0, -1.0])
    assert np.isnan(res.scores[0, 0]) and np.isnan(res.scores[1, 1]) and np.isnan(res.scores[2, 2])
    assert len(res.failures) == 3 and res.n_evaluations == 12
    np.testing.assert_array_equal(res.n_evaluated, [3, 3, 3, 3])  # failures count as seen
    assert "boom" in res.failures[1][2] and "non-number" in res.failures[0][2]
    assert res.mean_scores[0] == pytest.approx((-1 + 1 + 2) / 3)  # substitutes count in means


def test_on_error_worst_with_minimize_and_all_failed_rows():
    test = KeepAll()
    evaluate = lambda c, i: float("inf") if i == 1 else (10.0 if c == 0 else 20.0) + (c == 1 and i == 0) * 5  # noqa: E731
    Race([0, 1, 2], test=test, first_test=2, max_instances=2, direction="minimize", random_state=0).run(
        evaluate, range(5), progress=False
    )
    scores = test.calls[0][0]
    # instance 0 costs (10, 25, 20) -> oriented (-10, -25, -20); instance 1 all failed -> 0.
    np.testing.assert_array_equal(scores, [[-10.0, -25.0, -20.0], [0.0, 0.0, 0.0]])


def test_on_error_eliminate_records_failed_and_keeps_other_results():
    res = Race([0, 1, 2, 3], test=KeepAll(), first_test=3, max_instances=4, on_error="eliminate",
               random_state=0).run(flaky, range(10), progress=False)
    failed = [h for h in res.history if h.reason == "failed"]
    assert sorted(h.candidate for h in failed) == [0, 1, 2]
    assert all(h.by is None and h.n_instances == 3 and math.isnan(h.probability) for h in failed)
    assert res.survivors == [3] and res.stop_reason == "min_survivors"
    assert res.scores[1, 0] == 1.0 and res.scores[0, 1] == 1.0  # the blocks' other results kept


def test_on_error_raise_propagates_the_evaluation_error():
    with pytest.raises(RuntimeError, match="boom"):
        Race([0, 1, 2, 3], test=KeepAll(), first_test=3, on_error="raise").run(
            flaky, [1, 2, 3], progress=False
        )
    r = Race([0, 2], test=KeepAll(), first_test=3, on_error="raise", instances=[2, 3, 4])
    with pytest.raises(EvaluationError, match="candidate #1 2 on instance #0 2 returned nan"):
        drive(r, flaky)


# ---------------------------------------------------------------------------- ask / tell


def test_ask_tell_protocol_and_errors():
    r = Race(["a", "b"], test=KeepAll(), first_test=2, instances=range(3), random_state=0)
    first = r.ask(3)
    assert [tuple(e) for e in first] == [(0, "a", 0, 0), (1, "b", 0, 0), (0, "a", 1, 1)]
    assert isinstance(first[0], Evaluation)
    assert len(r.ask()) == 1 and r.ask() == []  # all handed out, none told yet
    assert len(r.pending()) == 4
    r.tell((1, 1), 2.0)  # a (candidate_index, instance_index) pair works too
    with pytest.raises(ValueError, match="already told"):
        r.tell((1, 1), 2.0)
    with pytest.raises(ValueError, match="not part of the current block"):
        r.tell((0, 2), 1.0)
    with pytest.raises(TypeError, match="must be an Evaluation"):
        r.tell("x", 1.0)
    for ev in first:
        r.tell(ev, 1.0)
    assert r.n_evaluations == 4 and r.n_instances == 3  # the next block is open already
    assert [tuple(e)[2] for e in r.ask()] == [2, 2]


def test_told_before_asked_is_not_asked_again():
    r = Race(["a", "b"], test=KeepAll(), first_test=2, instances=range(3), random_state=0)
    r.tell((1, 0), 1.0)
    r.tell(Evaluation(0, "a", 1, 1), 1.0)
    assert [(e.candidate_index, e.instance_index) for e in r.ask()] == [(0, 0), (1, 1)]


def test_a_one_candidate_race_runs_the_first_block_only():
    res = Race(["only"], test=KeepAll(), first_test=3).run(lambda c, i: 1.0, range(10), progress=False)
    assert res.best == "only" and res.n_evaluations == 3 and res.stop_reason == "min_survivors"


# ---------------------------------------------------------------------------- result


def test_winner_mean_versus_mean_rank():
    # Candidate 0 wins most instances by a little and loses one by a lot: best mean rank,
    # worse mean.
    table = {0: [1.0, 1.0, 1.0, -10.0], 1: [0.0, 0.0, 0.0, 0.0]}
    evaluate = lambda c, i: table[c][i]  # noqa: E731
    by_mean = Race([0, 1], test=KeepAll(), first_test=4, direction="maximize").run(
        evaluate, range(4), progress=False)
    by_rank = Race([0, 1], test=KeepAll(), first_test=4, winner="mean_rank",
                   direction="maximize").run(evaluate, range(4), progress=False)
    assert by_mean.best == 1 and by_rank.best == 0
    assert by_mean.ranking == [1, 0] and by_rank.ranking == [0, 1]


def test_ranking_orders_eliminated_by_instances_seen_then_mean():
    res = Race(list(range(5)), test=DropWorstMean(), first_test=2, random_state=0,
               direction="maximize").run(
        linear_evaluate, range(20), progress=False
    )
    assert res.ranking == [4, 3, 2, 1, 0]
    np.testing.assert_array_equal(res.ranking_indices, [4, 3, 2, 1, 0])


class _DropFirstTwo(RacingTest):
    """At the first test: #0 dominated by #2, #1 indistinguishable from #3."""

    def decide(self, view, rng):
        if len(view.ids) < 4:
            return []
        return [Elimination(0, "dominated", 2, 0.97), Elimination(1, "indistinguishable", 3, 0.96)]

    def get_params(self):
        return {}


def test_summary_names_each_eliminator():
    # With parameter dicts sharing a long prefix (python -m racer's), a cut repr made
    # every "dominated by {...}" read the same; each line must name its own eliminator.
    candidates = [{"strategy": "currenttobest1bin", "mutation": (0.5, 1.0), "recombination": r,
                   "popsize": p} for r in (0.3, 0.9) for p in (5, 15)]
    res = Race(candidates, test=_DropFirstTwo(), first_test=2, random_state=0).run(
        lambda c, i: c["recombination"] + c["popsize"] + i, range(4), progress=False)
    lines = res.summary().splitlines()
    first = next(line for line in lines if line.rstrip().endswith("(p=0.97)"))
    second = next(line for line in lines if line.rstrip().endswith("(p=0.96)"))
    assert first.startswith("   ") and "#0 " in first and first.endswith("dominated by #2 (p=0.97)")
    assert "#1 " in second and second.endswith("indistinguishable by #3 (p=0.96)")
    # The eliminators are in the table, under the numbers the statuses give.
    assert any(" #2 {" in line for line in lines) and any(" #3 {" in line for line in lines)


def test_summary_frame_and_repr():
    pd = pytest.importorskip("pandas")
    res = Race([0.0, 0.5, 1.0], test=DropWorstMean(), first_test=2, random_state=0,
               direction="maximize").run(
        linear_evaluate, range(20), progress=False
    )
    text = res.summary()
    assert "Best: 1.0" in text and "dominated by #2 (p=" in text and "Stopped because" in text
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame["rank"]) == [3, 2, 1]
    assert list(frame["eliminated_at"]) == [2, 3, -1] and list(frame["survivor"]) == [False, False, True]
    assert "RaceResult(best=1.0" in repr(res) and isinstance(res, RaceResult)


def test_logging_and_progress(caplog, capsys):
    with caplog.at_level(logging.INFO, logger="racer"):
        Race([0, 1, 2], test=DropWorstMean(), first_test=2, random_state=0).run(
            linear_evaluate, range(20), progress=True
        )
    messages = [rec.getMessage() for rec in caplog.records if rec.name == "racer"]
    assert sum("eliminated #" in m for m in messages) == 2
    assert "[racer]" in capsys.readouterr().err
    Race([0, 1, 2], test=DropWorstMean(), first_test=2).run(linear_evaluate, range(20), progress=False)
    assert capsys.readouterr().err == ""


def test_progress_line_redraws_in_place_on_a_terminal():
    import io

    from racer.progress import ProgressLine

    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    r = Race([0, 1, 2], test=KeepAll(), first_test=2, budget=12, instances=range(50))
    line = ProgressLine(r, stream=stream)
    drive(r, linear_evaluate)
    line.update()
    line.close()
    text = stream.getvalue()
    assert text.startswith("\r[racer] ") and text.endswith("\n")
    assert "12/12 evaluations (100%) | instance 4 | 3/3 survivors" in text


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"first_test": 0}, ValueError, "`first_test` must be >= 1; got 0"),
        ({"each_test": 1.5}, TypeError, "`each_test` must be an integer; got 1.5"),
        ({"budget": -3}, ValueError, "`budget` must be >= 1; got -3"),
        ({"on_error": "ignore"}, ValueError, "`on_error` must be one of 'worst', 'eliminate', 'raise'; got 'ignore'"),
        ({"winner": "median"}, ValueError, "`winner` must be one of"),
        ({"direction": "up"}, ValueError, "`direction` must be one of 'minimize', 'maximize'; got 'up'"),
        ({"random_state": -1}, ValueError, "`random_state` must be a non-negative integer"),
        ({"test": object()}, TypeError, "`test` must be a racer.racing.base.RacingTest"),
    ],
)
def test_bad_options_are_refused_naming_the_argument(kwargs, exc, match):
    kwargs = {"test": KeepAll(), **kwargs}
    with pytest.raises(exc, match=match.replace("(", r"\(").replace(")", r"\)")):
        Race([0, 1], **kwargs)


def test_bad_candidates_and_test_decisions():
    with pytest.raises(ValueError, match="`candidates` is empty"):
        Race([], test=KeepAll())

    class KillsAll(RacingTest):
        def decide(self, view, rng):
            scores, ids = view.scores, view.ids
            return [Elimination(0, "dominated", 1, 1.0), Elimination(1, "dominated", 0, 1.0)]

        def get_params(self):
            return {}

    with pytest.raises(RuntimeError, match="eliminated every survivor"):
        Race([0, 1], test=KillsAll(), first_test=1).run(linear_evaluate, range(5), progress=False)

    class BadReason(RacingTest):
        def decide(self, view, rng):
            scores, ids = view.scores, view.ids
            return [Elimination(0, "slow", 1, 1.0)]

        def get_params(self):
            return {}

    with pytest.raises(ValueError, match="reason 'slow'"):
        Race([0, 1], test=BadReason(), first_test=1).run(linear_evaluate, range(5), progress=False)


# ---------------------------------------------------------------------------- irace's loop


def irace_loop(costs, test, first_test, each_test, min_survival, max_exp):
    """irace 3.5's race() loop (its R function ``race``) written independently of
    racer.Race: returns (elimination points {candidate: n}, experiments used, alive)."""
    n_tasks, q = costs.shape
    alive = list(range(q))
    used = 0
    eliminated = {}
    step = 0
    for n in range(1, n_tasks + 1):
        if n > first_test:
            if len(alive) <= min_survival:
                break
            if max_exp and (n - 1) % each_test == 0 and used + len(alive) * each_test > max_exp:
                break
        used += len(alive)
        if n >= first_test and n % each_test == 0 and len(alive) > 1:
            step += 1
            scores = -costs[:n][:, alive]
            decisions = test.decide(RaceView.from_scores(scores, np.array(alive)), np.random.default_rng([0, step]))
            gone = {alive[d.index] for d in decisions}
            for cand in gone:
                eliminated[cand] = n
            alive = [a for a in alive if a not in gone]
    return eliminated, used, alive


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("each_test, max_exp", [(1, 0), (5, 0), (1, 700), (5, 900)])
def test_engine_reproduces_irace_loop_with_the_frace_test(seed, each_test, max_exp):
    frace = pytest.importorskip("racer.racing.frace")
    rng = np.random.default_rng(seed)
    q, n_tasks = 20, 60
    costs = rng.normal(rng.uniform(0, 1, q), 1.0, size=(n_tasks, q))
    first_test = 5
    want_elim, want_used, want_alive = irace_loop(
        costs, frace.FRaceTest(), first_test, each_test, 1, max_exp
    )
    res = Race(list(range(q)), test=frace.FRaceTest(), direction="minimize", first_test=first_test,
               each_test=each_test, budget=max_exp or None, random_state=0).run(
        lambda c, i: costs[i, c], range(n_tasks), progress=False
    )
    assert {h.candidate: h.n_instances for h in res.history} == want_elim
    assert res.n_evaluations == want_used
    assert sorted(res.survivors) == want_alive


def test_default_test_is_the_posterior_best_test_and_races_end_to_end():
    rng = np.random.default_rng(0)
    means = np.array([0.0, 0.2, 0.4, 1.5])
    table = rng.normal(means, 0.3, size=(60, 4))
    r = Race(list(range(4)), random_state=0, direction="maximize")  # test=None -> PosteriorBestTest()
    assert type(r._test).__name__ == "PosteriorBestTest"
    res = r.run(lambda c, i: table[i, c], range(60), progress=False)
    assert res.best == 3 and len(res.history) >= 1
    assert all(h.reason in ("dominated", "indistinguishable") for h in res.history)
    assert res.n_evaluations < 4 * 60  # the race saved evaluations


# ---------------------------------------------------------------------------- no usable score


@pytest.mark.parametrize(
    "n_cand, first_test, expected",
    # min(first block, max(2 x candidates, 10)): about two instances' worth, at least 10
    # evaluations, never more than the first block.
    [(1, 5, 5), (3, 5, 10), (3, 2, 6), (8, 1, 8), (24, 5, 48)],
)
def test_a_race_without_usable_scores_stops_after_two_instances_worth(n_cand, first_test, expected):
    calls = []

    def evaluate(candidate, instance):
        calls.append((candidate, instance))
        raise ValueError(f"bad {candidate}")

    with pytest.raises(RaceFailedError, match=r"First failure: evaluation of candidate #0 0 on "
                       r"instance #0 0 raised ValueError: bad 0") as info:
        Race(list(range(n_cand)), test=KeepAll(), first_test=first_test, random_state=0).run(
            evaluate, range(50), progress=False
        )
    assert len(calls) == info.value.n_evaluations == expected
    assert isinstance(info.value, EvaluationError) and isinstance(info.value, RuntimeError)


def test_one_success_among_the_first_evaluations_keeps_the_race_going():
    # Only candidate 2 on instance 1 succeeds: the race has a usable score and goes on; the
    # successful candidate wins although the tie-break would pick #0.
    def evaluate(candidate, instance):
        return 1.0 if (candidate, instance) == (2, 1) else None

    res = Race([0, 1, 2], test=KeepAll(), first_test=5, max_instances=6, random_state=0).run(
        evaluate, range(10), progress=False
    )
    assert res.best == 2 and res.n_evaluations == 18 and len(res.failures) == 17
    assert res.ranking[0] == 2 and res.survivors[0] == 2


def test_a_failed_journaled_race_fails_again_on_resume(tmp_path):
    storage = str(tmp_path / "race.sqlite")
    with pytest.raises(RaceFailedError, match="use a new journal"):
        Race([0, 1], test=KeepAll(), first_test=5, storage=storage, random_state=0).run(
            lambda c, i: "nope", range(10), progress=False
        )
    # The journal replays the recorded failures: the fixed evaluate is never reached.
    calls = []

    def fixed(candidate, instance):
        calls.append(1)
        return 1.0

    with pytest.raises(RaceFailedError, match=r"returned a non-number: 'nope' \(str\)"):
        Race([0, 1], test=KeepAll(), first_test=5, storage=storage, random_state=0).run(
            fixed, range(10), progress=False
        )
    assert calls == []


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(budget=20, instances=range(100)), "budget`=20 pays for the first block"),
        (dict(budget=21, instances=range(100), each_test=2), "pays for the first block"),
        (dict(instances=range(5)), "only 5 instance"),
        (dict(max_instances=5, instances=range(100)), "only 5 instance"),
    ],
)
def test_a_race_that_cannot_race_says_so_at_the_start(options, match):
    with pytest.warns(RuntimeWarning, match=match):
        Race([0, 1, 2, 3], first_test=5, random_state=0, **options)


def test_a_race_that_can_race_does_not_warn():
    import warnings as _warnings

    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        Race([0, 1, 2, 3], first_test=5, budget=22, instances=range(100), random_state=0)
        Race([0, 1, 2, 3], first_test=5, instances=range(6), random_state=0)
        Race([0, 1, 2, 3], first_test=5, instances=iter(range(5)), random_state=0)  # unknown size
