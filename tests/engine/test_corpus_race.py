"""A corpus of malformed inputs and faults for the race engine: none may pass silently.

Each case is one mistake a user makes with ``race``, ``Race``, ``Race.ask``/``tell`` or
``RaceResult``. A ``REFUSED`` case must raise the given exception with a message matching the
regex (which names the argument, or quotes the failing evaluation); a ``BEHAVIOUR`` case checks
the documented outcome (see ``Race``, "Failures"), e.g. that a candidate whose every evaluation
failed is not the winner. Evaluations are counted where the promise is "before any
evaluation".
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import functools
import math
import threading

import numpy as np
import pytest
from scipy.optimize import OptimizeResult

from racer import (
    Elimination,
    EvaluationError,
    KeepAll,
    Race,
    RaceFailedError,
    RacingTest,
    race,
)
from racer.racing.bayesian import BayesianTest


class DropCandidate(RacingTest):
    """Eliminates candidate ``target`` (by id) as dominated by another survivor."""

    def __init__(self, target):
        self.target = target

    def decide(self, view, rng):
        ids = view.ids.tolist()
        if self.target in ids and len(ids) > 1:
            col = ids.index(self.target)
            return [Elimination(col, "dominated", (col + 1) % len(ids), 0.99)]
        return []

    def get_params(self):
        return {"target": self.target}


class Counter:
    """A picklable evaluate that counts its calls and returns ``value(candidate, instance)``."""

    def __init__(self, value):
        self.value = value
        self.calls = 0

    def __call__(self, candidate, instance):
        self.calls += 1
        return self.value(candidate, instance)


def good(candidate, instance):
    return float(candidate) + 0.01 * instance


GENERATOR = (float(x) for x in range(10**6))  # cannot be pickled, even by value


def run_quiet(evaluate, candidates=(1, 2, 3), instances=range(8), **options):
    options.setdefault("test", KeepAll())
    options.setdefault("random_state", 0)
    run_options = {k: options.pop(k) for k in ("executor", "n_jobs", "timeout") if k in options}
    return race(evaluate, list(candidates), instances, progress=False, **options, **run_options)


def all_fail(returned):
    """Run a race whose evaluate always returns ``returned``; it must raise, quoting it."""
    return lambda: run_quiet(lambda c, i: returned)


class BrokenRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


def always_raises(candidate, instance):
    return 1 / 0


async def coroutine_evaluate(candidate, instance):
    await asyncio.sleep(0)
    return 1.0


def fresh_race(**options):
    options.setdefault("test", KeepAll())
    options.setdefault("random_state", 0)
    return Race([1, 2, 3], **options)


def tell_failures_only():
    r = fresh_race(instances=range(10), first_test=5)
    while not r.finished:
        for ev in r.ask():
            r.tell(ev, error=RuntimeError("solver diverged"))
    r.result()


def ask_after_failure():
    r = fresh_race(instances=range(10), first_test=5)
    with pytest.raises(RaceFailedError):
        for ev in r.ask():
            r.tell(ev, float("nan"))
    r.ask()


def result_after_failure():
    r = fresh_race(instances=range(10), first_test=5)
    with pytest.raises(RaceFailedError):
        for ev in r.ask():
            r.tell(ev, None)
    assert r.finished
    r.result()


def result_of_race_without_instances():
    r = fresh_race(instances=[])
    assert r.ask() == [] and r.finished
    r.result()


def ask_with_fewer_instances_than_first_test():
    r = fresh_race(instances=iter([0, 1, 2]), first_test=5)
    r.ask()


def tell_without_value():
    r = fresh_race(instances=range(10), first_test=2)
    r.tell(r.ask()[0])


def unpicklable_on_process_pool():
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        run_quiet(lambda c, i: 1.0, executor=pool)


def closure_over_a_lock_under_n_jobs():
    # Closures and lambdas run on racer's workers (sent by value); a lock they capture cannot.
    lock = threading.Lock()

    def evaluate(c, i):
        with lock:
            return c + 1.0

    run_quiet(evaluate, n_jobs=2)


def all_fail_with_storage(tmp_path):
    run_quiet(lambda c, i: None, storage=str(tmp_path / "journal.sqlite"))


def summary_of(max_rows):
    res = run_quiet(good)
    return res.summary(max_rows=max_rows)


REFUSED = [
    # --- every evaluation fails: RaceFailedError quoting the first failure
    pytest.param(all_fail(None), RaceFailedError,
                 r"candidate #0 1 on instance #0 0 returned a non-number: None \(NoneType\)",
                 id="returns-None"),
    pytest.param(all_fail("0.5"), RaceFailedError, r"returned a non-number: '0\.5' \(str\)",
                 id="returns-str"),
    pytest.param(all_fail(np.array([1.0])), RaceFailedError,
                 r"returned an array, not a number: array\(\[1\.\]\) \(numpy\.ndarray of shape "
                 r"\(1,\)\); return a scalar, e\.g\. x\.item\(\)", id="returns-one-element-array"),
    pytest.param(all_fail(np.array(2.0)), RaceFailedError, r"array.*shape \(\)",
                 id="returns-0d-array"),
    pytest.param(all_fail([1.0]), RaceFailedError, r"non-number: \[1\.0\] \(list\)",
                 id="returns-list"),
    pytest.param(all_fail(1 + 2j), RaceFailedError, r"complex number.*\(1\+2j\) \(complex\)",
                 id="returns-complex"),
    pytest.param(all_fail(True), RaceFailedError, r"returned a bool, not a score: True \(bool\)",
                 id="returns-bool"),
    pytest.param(all_fail(np.True_), RaceFailedError, r"returned a bool, not a score",
                 id="returns-numpy-bool"),
    pytest.param(all_fail(float("nan")), RaceFailedError, r"instance #0 0 returned nan",
                 id="returns-nan"),
    pytest.param(all_fail(-math.inf), RaceFailedError, r"returned -inf", id="returns-inf"),
    pytest.param(all_fail(10**400), RaceFailedError, r"number too large for a float",
                 id="returns-huge-int"),
    pytest.param(all_fail(OptimizeResult(x=np.zeros(2), fun=0.5, success=True)), RaceFailedError,
                 r"OptimizeResult.*return its `\.fun`", id="returns-OptimizeResult"),
    pytest.param(all_fail(BrokenRepr()), RaceFailedError,
                 r"returned a non-number: <unprintable: repr raised RuntimeError> \(.*BrokenRepr\)",
                 id="returns-object-with-broken-repr"),
    pytest.param(all_fail(10**5000), RaceFailedError,
                 r"number too large for a float: <unprintable: repr raised ValueError>",
                 id="returns-int-too-long-to-print"),
    pytest.param(lambda: run_quiet(always_raises), RaceFailedError,
                 r"candidate #0 1 on instance #0 0 raised ZeroDivisionError: division by zero",
                 id="always-raises"),
    pytest.param(lambda: run_quiet(always_raises, on_error="eliminate"), RaceFailedError,
                 r"raised ZeroDivisionError", id="always-raises-on-error-eliminate"),
    pytest.param(tell_failures_only, RaceFailedError,
                 r"after 10 evaluations.*raised RuntimeError: solver diverged",
                 id="ask-tell-only-failures"),
    pytest.param(ask_after_failure, RaceFailedError, r"returned nan", id="ask-after-failure"),
    pytest.param(result_after_failure, RaceFailedError, r"returned a non-number: None",
                 id="result-after-failure"),
    # --- evaluate that cannot work: refused before evaluating
    pytest.param(lambda: run_quiet(lambda c: 1.0), TypeError,
                 r"`evaluate` must accept two positional arguments", id="evaluate-one-arg"),
    pytest.param(lambda: run_quiet(lambda c, i, budget: 1.0), TypeError,
                 r"`evaluate` must accept two positional arguments.*\(c, i, budget\)",
                 id="evaluate-three-args"),
    pytest.param(lambda: run_quiet(lambda *, c, i: 1.0), TypeError,
                 r"`evaluate` must accept two positional arguments", id="evaluate-keyword-only"),
    pytest.param(lambda: run_quiet(coroutine_evaluate), TypeError,
                 r"`evaluate` must return a score.*coroutine function", id="evaluate-async"),
    pytest.param(lambda: run_quiet(3.0), TypeError, r"`evaluate` must be callable; got 3\.0",
                 id="evaluate-not-callable"),
    pytest.param(closure_over_a_lock_under_n_jobs, TypeError,
                 r"`evaluate` \(.*evaluate.*\) cannot be pickled to send it to worker processes"
                 r".*the variable `lock` it captures \(_thread\.lock", id="closure-over-lock-under-n_jobs"),
    pytest.param(lambda: run_quiet(lambda c, i: next(GENERATOR), timeout=5.0), TypeError,
                 r"`evaluate` .* cannot be pickled.*the global `GENERATOR` it uses \(builtins\.generator",
                 id="lambda-using-a-generator-under-timeout"),
    pytest.param(unpicklable_on_process_pool, TypeError,
                 r"`evaluate` \(.*\) cannot be pickled .*ProcessPoolExecutor", id="lambda-on-process-pool"),
    # --- arguments that make the race impossible
    pytest.param(lambda: run_quiet(good, instances=[]), ValueError, r"`instances` is empty",
                 id="race-instances-empty"),
    pytest.param(lambda: fresh_race(instances=[]).run(good, progress=False), ValueError,
                 r"`instances` is empty", id="Race-run-without-instances"),
    pytest.param(lambda: fresh_race().run(good, iter([]), progress=False), ValueError,
                 r"`instances` is empty", id="Race-run-empty-iterator"),
    pytest.param(result_of_race_without_instances, ValueError,
                 r"before any evaluation: `instances` gave none", id="ask-tell-result-without-instances"),
    pytest.param(lambda: fresh_race(min_survivors=4), ValueError,
                 r"`min_survivors`=4 exceeds the number of candidates \(3\)",
                 id="min_survivors-above-candidates"),
    pytest.param(lambda: fresh_race(first_test=5, max_instances=3), ValueError,
                 r"`first_test`=5 exceeds `max_instances`=3", id="first_test-above-max_instances"),
    pytest.param(lambda: run_quiet(good, instances=range(3), first_test=5), ValueError,
                 r"`first_test`=5 but the race has only 3 instances",
                 id="first_test-above-len-instances"),
    pytest.param(ask_with_fewer_instances_than_first_test, ValueError,
                 r"`first_test`=5 but the race has only 3 instances",
                 id="ask-first_test-above-iterator"),
    pytest.param(lambda: fresh_race(budget=5, first_test=2), ValueError,
                 r"`budget`=5 cannot pay for the first block: 3 candidates x 2 instances",
                 id="budget-below-first-block"),
    pytest.param(lambda: Race([], test=KeepAll()), ValueError, r"`candidates` is empty",
                 id="candidates-empty"),
    pytest.param(lambda: Race("abc", test=KeepAll()), TypeError, r"`candidates` must be an iterable",
                 id="candidates-str"),
    pytest.param(lambda: run_quiet(good, instances="abcdefgh"), TypeError,
                 r"`instances` must be an iterable", id="instances-str"),
    pytest.param(lambda: fresh_race(max_instances=0), ValueError, r"`max_instances` must be >= 1",
                 id="max_instances-zero"),
    pytest.param(lambda: fresh_race(first_test=True), TypeError, r"`first_test` must be an integer",
                 id="first_test-bool"),
    pytest.param(lambda: fresh_race(test=BayesianTest), TypeError, r"`test` must be a racer",
                 id="test-class-not-instance"),
    pytest.param(lambda: fresh_race(random_state=1.5), TypeError, r"`random_state` must be",
                 id="random_state-float"),
    pytest.param(lambda: fresh_race(random_state=np.random.PCG64(0)), TypeError,
                 r"`random_state` must be None, a non-negative int, a numpy Generator, "
                 r"RandomState or SeedSequence; got <numpy\.random\._pcg64\.PCG64",
                 id="random_state-bit-generator"),
    pytest.param(lambda: fresh_race(random_state=-3), ValueError,
                 r"`random_state` must be a non-negative integer; got -3",
                 id="random_state-negative"),
    pytest.param(lambda: fresh_race(test="frace"), TypeError, r"`test` must be a racer",
                 id="test-str"),
    pytest.param(lambda: fresh_race(maximize=True), TypeError,
                 r"unexpected keyword argument 'maximize'", id="maximize-gone"),
    pytest.param(lambda: fresh_race(direction="max"), ValueError,
                 r"`direction` must be one of 'minimize', 'maximize'; got 'max'",
                 id="direction-abbreviated"),
    pytest.param(lambda: fresh_race(direction=True), ValueError,
                 r"`direction` must be one of 'minimize', 'maximize'; got True",
                 id="direction-bool"),
    pytest.param(lambda: fresh_race(on_error=None), (TypeError, ValueError), r"`on_error`",
                 id="on_error-None"),
    pytest.param(lambda: fresh_race(metadata=["v1"]), TypeError, r"`metadata` must be a dict",
                 id="metadata-list"),
    pytest.param(lambda: fresh_race(shuffle=True, instances=iter(range(9))), TypeError,
                 r"`shuffle=True` needs a sequence", id="shuffle-iterator"),
    pytest.param(lambda: run_quiet(good, n_jobs=0), ValueError, r"`n_jobs`", id="n_jobs-zero"),
    pytest.param(lambda: run_quiet(good, executor=object()), TypeError, r"`executor` must be",
                 id="executor-without-submit"),
    pytest.param(lambda: fresh_race(instances=range(9)).run(good, progress="yes"), TypeError,
                 r"`progress` must be True or False", id="progress-str"),
    # --- ask/tell misuse
    pytest.param(tell_without_value, TypeError, r"tell\(\) needs the score as `value`",
                 id="tell-without-value"),
    pytest.param(lambda: fresh_race(instances=range(9)).tell((0, 0), error=42), TypeError,
                 r"`error` must be an exception or a message", id="tell-error-int"),
    pytest.param(lambda: fresh_race(instances=range(9)).tell("first", 1.0), TypeError,
                 r"`evaluation` must be an Evaluation", id="tell-bad-evaluation"),
    pytest.param(lambda: fresh_race(instances=range(9)).ask(0), ValueError, r"`n` must be >= 1",
                 id="ask-zero"),
    # --- RaceResult
    pytest.param(lambda: summary_of(-1), ValueError, r"`max_rows` must be >= 0; got -1",
                 id="summary-negative-rows"),
    pytest.param(lambda: summary_of("5"), TypeError, r"`max_rows` must be an integer",
                 id="summary-str-rows"),
]


@pytest.mark.parametrize("action, exc, match", REFUSED)
def test_refused_with_a_clear_error(action, exc, match):
    with pytest.raises(exc, match=match):
        action()


def test_failing_journaled_race_says_the_journal_replays_failures(tmp_path):
    with pytest.raises(RaceFailedError, match=r"`storage` journal keeps these failures"):
        all_fail_with_storage(tmp_path)


class ThreeArguments:
    calls = 0

    def __call__(self, candidate, instance, extra):
        ThreeArguments.calls += 1
        return 1.0


def test_refusals_of_evaluate_come_before_any_evaluation():
    with pytest.raises(TypeError, match=r"two positional arguments.*\(candidate, instance, extra\)"):
        run_quiet(ThreeArguments())
    assert ThreeArguments.calls == 0
    holding_a_lock = Counter(lambda c, i: 1.0)
    holding_a_lock.lock = threading.Lock()  # lambdas go by value; a lock cannot
    with pytest.raises(TypeError, match=r"cannot be pickled.*its attribute `lock` \(_thread\.lock"):
        run_quiet(holding_a_lock, n_jobs=2)
    assert holding_a_lock.calls == 0
    counted = Counter(lambda c, i: 1.0)
    r = fresh_race(instances=range(3), first_test=5)
    with pytest.raises(ValueError, match="`first_test`"):
        r.run(counted, progress=False)
    assert counted.calls == 0 and r.n_evaluations == 0
    # Nothing was consumed: adding instances makes the same race runnable.
    r.add_instances(range(3, 8))
    res = r.run(counted, progress=False)
    assert res.instances[:3] == [0, 1, 2] and counted.calls == res.n_evaluations == 3 * 8


# ------------------------------------------------------------------ documented behaviour


def failing_candidate(bad):
    """evaluate where candidate ``bad`` returns None everywhere and the others succeed."""
    return lambda c, i: None if c == bad else abs(c - 2.0) + 0.01 * i  # a loss: minimised


def behaviour_failing_first_candidate_is_not_the_winner():
    # Candidate 0 would win the tie-break of an all-zero race; its every evaluation fails.
    res = run_quiet(failing_candidate(0), candidates=(0, 1, 5))
    assert res.best == 1 and res.ranking[-1] == 0 and res.survivors[-1] == 0
    assert len(res.failures) == res.n_evaluated[0] == 8


def behaviour_failing_candidate_ranks_after_eliminated_usable_ones():
    res = run_quiet(failing_candidate(3), candidates=(3, 2, 5), test=DropCandidate(1),
                    first_test=2)
    # #1 (value 2) was eliminated but has usable scores: it ranks before the failing survivor.
    assert res.ranking == [5, 2, 3] and res.best == 5


def behaviour_no_usable_survivor_warns_and_picks_a_usable_one():
    evaluate = failing_candidate(0)
    with pytest.warns(RuntimeWarning, match="no survivor has a usable score"):
        res = run_quiet(evaluate, candidates=(0, 2), test=DropCandidate(1), first_test=2)
    assert res.best == 2 and res.survivors == [0]


def behaviour_mean_rank_winner_skips_failing_candidate():
    res = run_quiet(failing_candidate(0), candidates=(0, 1, 5), winner="mean_rank")
    assert res.best == 1 and res.ranking[-1] == 0


def behaviour_on_error_eliminate_keeps_partial_failure_policy():
    res = run_quiet(failing_candidate(0), candidates=(0, 1, 5), on_error="eliminate",
                    first_test=2)
    assert res.best == 1 and [h.reason for h in res.history] == ["failed"]


def behaviour_on_error_raise_is_an_evaluation_error_at_the_first_failure():
    with pytest.raises(EvaluationError, match=r"candidate #0 0 on instance #0 0 returned a non-number") as info:
        run_quiet(failing_candidate(0), candidates=(0, 1, 5), on_error="raise")
    assert not isinstance(info.value, RaceFailedError)


def behaviour_fail_fast_spends_two_instances_worth():
    evaluate = Counter(lambda c, i: None)
    with pytest.raises(RaceFailedError) as info:
        run_quiet(evaluate, candidates=range(24), instances=range(100))
    # 24 candidates x first_test 5 = 120 in the first block; the race stops at 2 x 24.
    assert evaluate.calls == info.value.n_evaluations == len(info.value.failures) == 48


def behaviour_one_instance_failing_everywhere_is_a_tie_not_an_error():
    res = run_quiet(lambda c, i: None if i == 0 else float(c), candidates=(1, 2, 3))
    assert res.best == 1 and len(res.failures) == 3


def behaviour_builtins_and_ufuncs_without_a_usable_signature_are_accepted():
    assert run_quiet(max).best == 1  # no inspect.signature for max
    assert run_quiet(np.subtract).best == 1  # c - i
    assert run_quiet(functools.partial(lambda c, i, k: c * k, k=2.0)).best == 1


def behaviour_summary_cost_against_all_instances():
    res = run_quiet(good, test=DropCandidate(1), instances=range(40), first_test=2,
                    min_survivors=2)
    # 3 candidates x 2 instances, then one is dropped and min_survivors=2 stops the race.
    assert res.n_instances == 2 and res.n_instances_available == 40
    text = res.summary()
    assert "6 evaluations: 5% of running all 3 candidates on all 40 instances (100% on the 2 instances raced)" in text


def behaviour_summary_says_when_instances_are_endless():
    def seeds():
        k = 0
        while True:
            yield k
            k += 1

    res = run_quiet(good, test=DropCandidate(1), instances=seeds(), first_test=2, min_survivors=2)
    assert res.n_instances_available is None
    assert "the instance set is endless or of unknown size" in res.summary()
    capped = run_quiet(good, instances=seeds(), first_test=2, max_instances=4)
    assert capped.n_instances_available == 4
    assert "on all 4 instances (every instance was raced)" in capped.summary()


BEHAVIOUR = [
    pytest.param(behaviour_failing_first_candidate_is_not_the_winner, id="failing-first-candidate"),
    pytest.param(behaviour_failing_candidate_ranks_after_eliminated_usable_ones,
                 id="failing-ranks-after-eliminated"),
    pytest.param(behaviour_no_usable_survivor_warns_and_picks_a_usable_one,
                 id="no-usable-survivor"),
    pytest.param(behaviour_mean_rank_winner_skips_failing_candidate, id="mean-rank-failing"),
    pytest.param(behaviour_on_error_eliminate_keeps_partial_failure_policy,
                 id="eliminate-partial-failure"),
    pytest.param(behaviour_on_error_raise_is_an_evaluation_error_at_the_first_failure,
                 id="raise-partial-failure"),
    pytest.param(behaviour_fail_fast_spends_two_instances_worth, id="fail-fast-48-of-120"),
    pytest.param(behaviour_one_instance_failing_everywhere_is_a_tie_not_an_error,
                 id="one-instance-all-fail"),
    pytest.param(behaviour_builtins_and_ufuncs_without_a_usable_signature_are_accepted,
                 id="builtins-accepted"),
    pytest.param(behaviour_summary_cost_against_all_instances, id="summary-cost-all-instances"),
    pytest.param(behaviour_summary_says_when_instances_are_endless, id="summary-endless"),
]


@pytest.mark.parametrize("check", BEHAVIOUR)
def test_documented_behaviour(check):
    check()
