"""``racer.tune``: the command line's tuner for a Python ``evaluate``.

The acceptance test: on examples/tsp-sa, ``racer --scenario`` (its target-runner) and
``racer.tune`` (tsp_sa.evaluate, the solver the target-runner calls) with the same seed end
with the same elites, the same runs and the same test costs."""

import concurrent.futures as cf
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import racer
from racer.cli import EXIT_OK, main
from racer.tuning.parameters import Parameter, ParameterSpace

from _helpers import ROOT
from _helpers.cli import ENV

SPACE = 'x "" r (0, 1)\nk "" c (a, b)\nw "" i (1, 9) | k == "b"'
TRAIN = [0.1 * k for k in range(10)]


def quadratic(config, instance, seed):
    """Best at x = 0.3 with k = "a" (k = "b" costs 0.5 more); each instance shifts all costs."""
    import random

    noise = random.Random(seed).gauss(0, 0.01)
    return (config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance + noise


def small(**kw):
    return racer.tune(quadratic, SPACE, TRAIN, **{"budget": 150, "random_state": 3,
                                                  "progress": False, **kw})


def test_racer_tune_is_the_function_once_its_module_is_imported():
    import importlib

    # The module is racer._tune, so importing it cannot rebind the name racer.tune.
    module = importlib.import_module("racer._tune")
    assert racer.tune is module.tune and callable(racer.tune)


@pytest.mark.slow
def test_the_target_runner_and_the_callable_runner_are_one_protocol(tmp_path):
    from racer.tuning.instances import Instance
    from racer.cli.target_runner import Runner, TargetRunner
    from racer.tuning.runner import CallableRunner

    inst = Instance("i")
    callable_runner = CallableRunner(quadratic, [0.5], {inst: 0}, n_workers=0, timeout=None,
                                      retries=0, need_time=False, exec_dir=str(tmp_path),
                                      name="python:quadratic")
    target_runner = TargetRunner([sys.executable, "-c", "print(0.5)"], str(tmp_path))
    assert isinstance(callable_runner, Runner) and isinstance(target_runner, Runner)
    config = {"x": 0.3, "k": "a"}
    got = callable_runner.run(1, 1, 7, inst, config)
    assert (got.status, got.cost) == ("ok", quadratic(config, 0.5, 7))
    assert target_runner.run(1, 1, 7, inst, []).cost == 0.5


@pytest.mark.slow
def test_a_runner_shipped_with_a_timeout_reuses_its_processes_and_frees_an_idle_tunings():
    # What a Dask or Ray worker does with a runner it unpickles: with a timeout, each run goes
    # to a killable process of that worker's, kept for the tuning's next run (no interpreter
    # started per run), and closed once that tuning has been idle when another one borrows.
    import pickle

    import cloudpickle

    from racer.tuning import runner as runner_module
    from racer.tuning.instances import Instance

    inst = Instance("i")

    def shipped():
        # Its cost is the process that made the run.
        local = runner_module.CallableRunner(
            lambda config, instance, seed: float(__import__("os").getpid()), [0.5], {inst: 0},
            n_workers=0, timeout=5.0, retries=0, need_time=False, exec_dir=".", name="python:f")
        return pickle.loads(cloudpickle.dumps(local))  # as Dask ships it

    pools = runner_module._ShippedPools()
    old = runner_module._SHIPPED_POOLS
    runner_module._SHIPPED_POOLS = pools
    try:
        first = shipped()
        pids = {first.run(1, 1, seed, inst, {"x": 0.3}).cost for seed in range(3)}
        assert len(pids) == 1 and pids != {os.getpid()}  # one process of its own, reused
        (pool,) = pools._free[first._token]
        pools.idle = 0.0
        second = shipped()
        assert second.run(1, 1, 0, inst, {"x": 0.3}).cost not in pids
        assert first._token not in pools._free and pool._closed
        (pool,) = pools._free[second._token]
        second.close()  # the tuning's end, where it ran (a thread executor's case)
        assert second._token not in pools._free and pool._closed
    finally:
        runner_module._SHIPPED_POOLS = old
        for free in pools._free.values():
            for p in free:
                p.close()


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("call, error, words", [
    (lambda: racer.tune(42, SPACE, TRAIN, budget=100), TypeError, "`evaluate`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=0), ValueError, "`budget`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=2.5), TypeError, "`budget`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN), ValueError, "`budget`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=10, max_time=5), ValueError, "both"),
    (lambda: racer.tune(quadratic, SPACE, [], budget=100), ValueError, "`instances` is empty"),
    (lambda: racer.tune(quadratic, SPACE, "inst", budget=100), TypeError, "`instances`"),
    (lambda: racer.tune(quadratic, 3, TRAIN, budget=100), TypeError, "`space`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, n_jobs=0), ValueError, "`n_jobs`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, timeout=-1), ValueError, "`timeout`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, first_test=0), ValueError,
     "`first_test` must be None or an integer >= 1; got 0"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, first_test=4, each_test=3),
     ValueError, "`first_test` = 4 must be a multiple of `each_test` = 3"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, elitist=1), TypeError,
     "`elitist` must be True or False; got 1"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, random_state=-1), ValueError,
     "`random_state` must be None or an integer >= 0; got -1"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, confidence=1.5), ValueError,
     "`confidence` must be None or a number in (0, 1); got 1.5"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, test="wilcoxon"), ValueError,
     "`test` 'wilcoxon': "),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, firstTest=2), TypeError, "'firstTest'"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, on_error="ignore"), ValueError,
     "`on_error`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, initial=[{"y": 1}]), ValueError,
     "`initial[0]` names 'y'"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, initial=[{"x": 2.0, "k": "a"}]),
     ValueError, "`initial[0]` is not a valid configuration"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, capping=True, bound_max=10),
     TypeError, "`bound` keyword"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, n_jobs=2,
                        executor=__import__("concurrent.futures").futures.ThreadPoolExecutor(1)),
     ValueError, "give either `executor` or `n_jobs`"),
    (lambda: racer.tune(quadratic, SPACE, TRAIN, budget=100, forbidden=3), TypeError, "`forbidden`"),
    (lambda: racer.tune(quadratic, 'x "" r (0, 1', TRAIN, budget=100), ValueError, "`space`"),
])
def test_bad_arguments_are_refused_naming_the_argument(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_every_scenario_option_that_decides_the_runs_has_a_python_name():
    import inspect

    from racer.tuning.resume import _TUNING_OPTIONS
    from racer.tuning.settings import IRACE_OPTIONS
    from racer.cli.scenario import OPTIONS
    from racer._tune import _NAMES, OPTION_NAMES

    assert set(_TUNING_OPTIONS) <= set(IRACE_OPTIONS.values()) <= set(OPTIONS)
    # Every setting is one of tune's keywords (by its own name or the one _NAMES gives it).
    keywords = set(inspect.signature(racer.tune).parameters) | set(OPTION_NAMES)
    shown = {_NAMES.get(field, f"`{field}`").strip("`") for field in IRACE_OPTIONS}
    assert shown <= keywords


def test_a_budget_too_small_to_race_says_so_in_tunes_words():
    with pytest.raises(ValueError, match="`budget` = 8 is too small: racer races at least 2"):
        small(budget=8)
    with pytest.raises(ValueError, match=r"`budget` = 20 is too small: irace would need at "
                                         r"least \d+ runs \(\(`min_survivors` \+ 1\) x "
                                         r"`n_iterations` x"):
        small(budget=20, test="F-test")


# ----------------------------------------------------------------------------- tuning

@pytest.mark.slow
def test_a_small_tuning_finds_the_known_best_and_the_same_seed_repeats_it():
    res = small()
    assert res.best["k"] == "a" and abs(res.best["x"] - 0.3) < 0.1
    assert "w" not in res.best  # inactive: left out, as ConfigSpace leaves it out
    assert res.experiments <= 150 and res.elite_ids[0] in res.configurations
    assert res.configurations[res.elite_ids[0]] == res.best
    runs = res.runs
    assert list(runs.columns[:3]) == ["iteration", "configuration", "instance_id"]
    assert (runs.status != "speculative-unused").sum() == res.experiments
    again = small()
    assert again.elites == res.elites and again.elite_ids == res.elite_ids
    order = ["iteration", "configuration", "instance_id"]  # runs are logged as they answer
    assert (again.runs.sort_values(order)["cost"].tolist()
            == runs.sort_values(order)["cost"].tolist())
    other = small(random_state=4)
    assert other.runs["seed"].tolist() != runs["seed"].tolist()


@pytest.mark.slow
def test_a_parameter_space_object_instances_of_any_kind_and_a_test_phase():
    space = ParameterSpace([Parameter("x", "", "r", (0.0, 1.0)), Parameter("k", "", "c", ("a", "b"))])
    data = [{"shift": 0.1 * k} for k in range(8)]  # objects without a name: named by position
    res = racer.tune(lambda c, inst, s: (c["x"] - 0.3) ** 2 + inst["shift"], space, data,
                     test_instances=[{"shift": 5.0}, {"shift": 6.0}], budget=120,
                     random_state=0, progress=False)
    assert set(res.runs["instance"]) == {f"train-{k}" for k in range(1, 9)} | {"test-1", "test-2"}
    (tested, costs), = res.test.items()
    assert tested == res.elite_ids[0]
    x = res.configurations[tested]["x"]
    assert costs == pytest.approx([(x - 0.3) ** 2 + 5.0, (x - 0.3) ** 2 + 6.0], abs=1e-12)
    assert space.forbidden == []  # the caller's space is not changed


@pytest.mark.slow
def test_a_configspace_space_gives_evaluate_configurations_and_races_its_default_first():
    cs_module = pytest.importorskip("ConfigSpace")
    cs = cs_module.ConfigurationSpace(seed=0)
    k = cs_module.Categorical("k", ["a", "b"], default="b")
    x = cs_module.Float("x", (0.0, 1.0), default=0.9)
    w = cs_module.Integer("w", (1, 9), default=5)
    cs.add([k, x, w, cs_module.EqualsCondition(w, k, "b")])
    seen = []

    def smac_style(config, instance, seed):  # SMAC3's target function signature
        seen.append(type(config).__name__)
        return (config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance

    res = racer.tune(smac_style, cs, TRAIN, budget=150, random_state=3, progress=False)
    assert set(seen) == {"Configuration"}  # a ConfigSpace Configuration, as SMAC passes
    # The first configuration raced is ConfigSpace's default (k = "b", x = 0.9, w = 5).
    first = res.runs[res.runs.iteration == 1].configuration.min()
    assert res.configurations[first] == {"k": "b", "x": 0.9, "w": 5}
    assert res.best["k"] == "a" and abs(res.best["x"] - 0.3) < 0.1 and "w" not in res.best
    none = racer.tune(smac_style, cs, TRAIN, budget=150, random_state=3, progress=False,
                      initial=[])
    assert {"k": "b", "x": 0.9, "w": 5} not in none.configurations.values()


@pytest.mark.slow
def test_a_dict_of_optuna_distributions_is_a_space():
    optuna = pytest.importorskip("optuna")
    space = {"x": optuna.distributions.FloatDistribution(0.0, 1.0),
             "k": optuna.distributions.CategoricalDistribution(["a", "b"]),
             "n": optuna.distributions.IntDistribution(1, 64, log=True)}
    types = set()

    def evaluate(config, instance, seed):
        types.add(type(config["n"]))
        return (config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance

    res = racer.tune(evaluate, space, TRAIN, budget=150, random_state=3, progress=False)
    assert types == {int} and res.best["k"] == "a" and abs(res.best["x"] - 0.3) < 0.1
    assert all(space[name]._contains(space[name].to_internal_repr(v))
               for name, v in res.best.items())


@pytest.mark.slow
def test_forbidden_rules_and_initial_configurations_are_the_scenario_files():
    res = small(forbidden='k == "b" & w > 3', initial=[{"x": 0.5, "k": "b", "w": 2}])
    assert res.configurations[1] == {"x": 0.5, "k": "b", "w": 2}  # configuration 1
    assert all(c.get("w", 0) <= 3 for c in res.configurations.values())


@pytest.mark.slow
def test_a_failing_evaluate_stops_the_tuning_with_its_traceback_or_is_rejected():
    def evaluate(config, instance, seed):
        if config["k"] == "b":
            raise ZeroDivisionError("the solver divided by zero")
        return config["x"] + instance

    with pytest.raises(racer.EvaluationError) as info:
        racer.tune(evaluate, SPACE, TRAIN, budget=150, random_state=3, progress=False)
    text = str(info.value)
    assert "raised ZeroDivisionError: the solver divided by zero" in text
    assert "'k': 'b'" in text and "Traceback" in text and "on_error=" in text
    res = racer.tune(evaluate, SPACE, TRAIN, budget=150, random_state=3, progress=False,
                     on_error="eliminate")
    failed = res.runs[res.runs.status == "error"]
    assert len(failed) > 0 and all("ZeroDivisionError" in m for m in failed.message)
    assert res.best["k"] == "a"


@pytest.mark.slow
def test_retries_call_evaluate_again_as_a_target_runner_is_started_again():
    attempts = {}

    def flaky(config, instance, seed):
        key = (tuple(sorted(config.items())), instance, seed)
        attempts[key] = attempts.get(key, 0) + 1
        if attempts[key] == 1:
            raise OSError("licence server busy")
        return quadratic(config, instance, seed)

    res = racer.tune(flaky, SPACE, TRAIN, budget=150, random_state=3, progress=False, retries=1)
    assert set(res.runs["status"]) == {"ok"} and set(res.runs["attempts"]) == {2}
    plain = small()
    # Runs are logged as they answer (two that end together, in either order): compare them
    # in one order.
    order = ["iteration", "configuration", "instance_id"]
    assert res.elites == plain.elites
    assert (res.runs.sort_values(order)["cost"].tolist()
            == plain.runs.sort_values(order)["cost"].tolist())


def test_what_evaluate_returns_is_read_as_a_target_runners_output():
    from racer.tuning.runner import _read_value

    assert _read_value(2, False) == ("ok", 2.0, None, "")
    assert _read_value((2, 0.5), "max_time") == ("ok", 2.0, 0.5, "")
    assert _read_value(float("inf"), False)[0] == "inf"
    assert _read_value(float("nan"), False)[0] == "error"
    assert "needs the time" in _read_value(2.0, "max_time")[3]
    assert "expected a number" in _read_value("2", False)[3]
    assert "expected a number" in _read_value(True, False)[3]


@pytest.mark.slow
def test_max_time_counts_the_times_evaluate_reports():
    res = racer.tune(lambda c, i, s: (c["x"] + i, 0.5), SPACE, TRAIN, max_time=60,
                     random_state=1, progress=False)
    used = res.runs[(res.runs.iteration > 0) & (res.runs.status != "speculative-unused")]
    assert used["time"].sum() <= 60 * 1.1 and len(used) == res.experiments


@pytest.mark.slow
def test_capping_passes_each_run_its_bound():
    def evaluate(config, instance, seed, bound=None):
        run_time = 1.0 + 10 * config["x"] + instance
        return min(run_time, bound), min(run_time, bound)

    res = racer.tune(evaluate, SPACE, TRAIN, budget=150, random_state=2, progress=False,
                     capping=True, bound_max=5)
    training = res.runs[res.runs.iteration > 0]
    assert training["bound"].notna().all() and (training["bound"] <= 5).all()
    assert (training["bound"] < 5).any()  # capping bounded some runs below boundMax
    assert res.best["x"] < 0.2


@pytest.mark.slow
def test_storage_holds_the_command_lines_files_and_the_report(tmp_path):
    res = small(storage=tmp_path / "run", test_instances=[9.0])
    for name in ("runs.csv", "elites.txt", "results.json", "test.csv", "racer-journal"):
        assert (tmp_path / "run" / name).exists()
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [e["id"] for e in saved["elites"]] == res.elite_ids
    pytest.importorskip("matplotlib")
    out = res.report(tmp_path / "report.html")
    assert "<svg" in open(out, encoding="utf-8").read()
    # The same call again replays the journals: no new run, the same elites.
    again = small(storage=tmp_path / "run", test_instances=[9.0])
    assert again.elite_ids == res.elite_ids and len(again.runs) == len(res.runs)
    with pytest.raises(ValueError, match=r"other settings(.|\n)*firstTest: \(default\) -> 10"):
        small(storage=tmp_path / "run", test_instances=[9.0], first_test=10)


@pytest.mark.slow
def test_without_storage_the_temporary_folder_goes_with_the_result():
    res = small()
    folder = res.storage
    assert os.path.isdir(folder)
    del res
    import gc

    gc.collect()
    assert not os.path.exists(folder)


# ----------------------------------------------------------------------------- processes

@pytest.mark.slow
def test_n_jobs_2_runs_a_function_of_a_script_without_a_main_guard(tmp_path):
    script = tmp_path / "tuning.py"
    script.write_text(textwrap.dedent("""
        import json, os, racer

        def evaluate(config, instance, seed):
            return (config["x"] - 0.3) ** 2 + instance, os.getpid()

        pids = set()
        res = racer.tune(lambda c, i, s: evaluate(c, i, s)[0], 'x "" r (0, 1)',
                         [0.1 * k for k in range(10)], budget=120, random_state=5,
                         n_jobs=2, progress=False, n_iterations=2, experiments_per_iteration=40)
        print(json.dumps({"best": res.best, "ids": res.elite_ids, "runs": res.experiments}))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=ENV, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    one = racer.tune(lambda c, i, s: (c["x"] - 0.3) ** 2 + i, 'x "" r (0, 1)',
                     [0.1 * k for k in range(10)], budget=120, random_state=5, progress=False,
                     n_iterations=2, experiments_per_iteration=40)
    # Look-ahead and worker processes change when runs are made, never which ones count
    # while the budget does not bind (80 of 120 runs here: look-ahead's unused runs are paid).
    assert got["ids"] == one.elite_ids and got["runs"] == one.experiments
    assert got["best"] == one.best


@pytest.mark.slow
def test_a_timeout_kills_the_run_and_it_is_a_failed_run():
    def evaluate(config, instance, seed):
        if config["k"] == "b":
            import time

            time.sleep(30)
        return config["x"] + instance

    res = racer.tune(evaluate, SPACE, TRAIN, budget=150, random_state=3, progress=False,
                     timeout=1.0, on_error="eliminate")
    slow = res.runs[res.runs.status == "error"]
    assert len(slow) > 0 and all("timed out after 1.0 s" in m for m in slow.message)
    assert res.best["k"] == "a"


@contextlib.contextmanager
def _dask_executor(n_workers, threads_per_worker):
    """A real local Dask cluster of worker processes, as ``executor=`` takes it."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client.get_executor()


@pytest.mark.slow
def test_a_dask_executor_runs_evaluate_on_its_workers():
    with _dask_executor(2, 1) as executor:
        here_pid = os.getpid()

        def evaluate(config, instance, seed):
            if os.getpid() == here_pid:
                raise RuntimeError("a run was made in the tuning's own process")
            return quadratic(config, instance, seed)

        res = racer.tune(evaluate, SPACE, TRAIN, budget=150, random_state=3, progress=False,
                         executor=executor)
    here = small()
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments
    # Runs are logged as they answer: compare them in one order.
    order = ["iteration", "configuration", "instance_id"]
    assert (res.runs.sort_values(order)["cost"].tolist()
            == here.runs.sort_values(order)["cost"].tolist())


@pytest.mark.slow
def test_pipelined_on_a_dask_cluster_of_many_workers_gives_the_one_worker_answer():
    # Pipelined blocks run ahead on Dask too (nothing there can be killed: unused runs are left
    # to finish), by rule: 12 worker threads in 2 processes, runs finishing in any order, give
    # the elites, the runs used and the runs charged of racer's own single worker.
    with _dask_executor(2, 6) as executor:
        res = racer.tune(quadratic, SPACE, TRAIN, budget=300, random_state=3, progress=False,
                         executor=executor, pipelined=True)
    here = racer.tune(quadratic, SPACE, TRAIN, budget=300, random_state=3, progress=False,
                      pipelined=True)
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments <= 300
    order = ["iteration", "configuration", "instance_id"]
    used = lambda r: r.runs[r.runs.status != "speculative-unused"].sort_values(order)  # noqa: E731
    assert used(res)[order + ["cost"]].values.tolist() == used(here)[order + ["cost"]].values.tolist()


@pytest.mark.slow
def test_pipelined_on_dask_survives_a_worker_that_dies(tmp_path):
    # A Dask worker process dies in the middle of a run (the first call of one configuration
    # ends its process): Dask's nanny restarts it and the run is made again elsewhere, so the
    # tuning ends with the answer of an undisturbed one.
    flag = tmp_path / "died"

    def evaluate(config, instance, seed):
        if config["k"] == "b" and not flag.exists():
            flag.write_text("x")
            os._exit(1)
        return quadratic(config, instance, seed)

    with _dask_executor(2, 2) as executor:
        res = racer.tune(evaluate, SPACE, TRAIN, budget=200, random_state=3, progress=False,
                         executor=executor, pipelined=True)
    assert flag.exists()  # a worker did die
    here = racer.tune(quadratic, SPACE, TRAIN, budget=200, random_state=3, progress=False,
                      pipelined=True)
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments


def _marking_runs(folder, seconds):
    """quadratic's costs after ``seconds`` of sleep, each run leaving a file named after the
    process that made it in ``folder`` (which workers made runs). Self-contained (no global
    of this module): it travels by value to workers that cannot import this test module, as
    dask-jobqueue's, started by a job script."""

    def evaluate(config, instance, seed):
        import os
        import random
        import time

        (folder / str(os.getpid())).touch()
        time.sleep(seconds)
        return ((config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance
                + random.Random(seed).gauss(0, 0.01))

    return evaluate


def _when(condition, then, limit=120.0):
    """A thread that calls ``then()`` once ``condition()`` holds (polled)."""
    import threading

    def watch():
        end = time.monotonic() + limit
        while not condition() and time.monotonic() < end:
            time.sleep(0.05)
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
def test_workers_that_join_a_dask_cluster_late_take_runs_and_change_nothing(tmp_path):
    # The tuning starts on a cluster of one worker; three more join once it has made runs.
    # Pipelined runs wait in Dask's queue, so the newcomers take some of them, and the answer
    # is the one-worker answer.
    distributed = pytest.importorskip("distributed")
    kw = dict(budget=200, random_state=3, progress=False, pipelined=True)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        first = set()
        join = _when(lambda: any(tmp_path.iterdir()),
                     lambda: (first.update(p.name for p in tmp_path.iterdir()), cluster.scale(4)))
        res = racer.tune(_marking_runs(tmp_path, 0.05), SPACE, TRAIN,
                         executor=client.get_executor(), **kw)
        join.join()
    assert len(first) == 1
    late = {p.name for p in tmp_path.iterdir()} - first
    assert late, "no worker that joined late made a run"
    (tmp_path / "here").mkdir()
    here = racer.tune(_marking_runs(tmp_path / "here", 0.0), SPACE, TRAIN, **kw)
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments


@pytest.mark.slow
def test_a_dask_jobqueue_cluster_runs_the_tuning_of_one_worker(tmp_path):
    # dask-jobqueue (SLURM, PBS, ...) through its LocalCluster: the same job scripts and
    # worker start-up as a batch system, the jobs run as local processes. Two jobs of one
    # worker each; pipelined iterations give the one-worker answer.
    local = pytest.importorskip("dask_jobqueue.local")
    distributed = pytest.importorskip("distributed")
    kw = dict(budget=150, random_state=3, progress=False, pipelined_iterations=True)
    with local.LocalCluster(cores=1, processes=1, memory="1GiB",
                            local_directory=str(tmp_path / "jobs")) as cluster, \
            distributed.Client(cluster) as client:
        cluster.scale(jobs=2)
        client.wait_for_workers(2, timeout=120)
        (tmp_path / "marks").mkdir()
        res = racer.tune(_marking_runs(tmp_path / "marks", 0.0), SPACE, TRAIN,
                         executor=client.get_executor(), **kw)
    assert len(list((tmp_path / "marks").iterdir())) == 2  # both jobs' workers made runs
    here = racer.tune(_marking_runs(tmp_path, 0.0), SPACE, TRAIN, **kw)
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments


def _hangs_on_b(config, instance, seed):
    """quadratic, except that every run of k = "b" hangs (a run a cluster would wait for forever)."""
    if config["k"] == "b":
        import time

        time.sleep(60)
    return quadratic(config, instance, seed)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["threads", "dask"])
def test_a_timeout_stops_a_hung_run_on_an_executor_as_on_racers_pool(where):
    # With an executor, `timeout` makes each run in a killable process of the worker's own
    # (a thread pool's: this process; Dask's: each worker process): a run that hangs is
    # killed at its timeout and is a failed run, and the tuning ends with the answer of
    # racer's own pool under the same timeout.
    kw = dict(budget=150, random_state=3, progress=False, timeout=1.0, on_error="eliminate")
    with (cf.ThreadPoolExecutor(2) if where == "threads"
          else _dask_executor(2, 1)) as executor:
        res = racer.tune(_hangs_on_b, SPACE, TRAIN, executor=executor, **kw)
    here = racer.tune(_hangs_on_b, SPACE, TRAIN, **kw)
    hung = res.runs[res.runs.status == "error"]
    assert len(hung) > 0 and all("timed out after 1.0 s" in m for m in hung.message)
    assert res.best["k"] == "a"
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments


def _copy_tsp_sa(tmp_path):
    dest = tmp_path / "tsp-sa"
    shutil.copytree(ROOT / "examples" / "tsp-sa", dest, ignore=shutil.ignore_patterns("arena"))
    (dest / "arena").mkdir()
    return dest


@pytest.mark.slow
def test_the_command_line_and_racer_tune_give_the_same_elites_on_tsp_sa(tmp_path):
    # racer.tune's acceptance test. The target-runner and tsp_sa.evaluate call one solver
    # (examples/tsp-sa/tsp_sa.py); the scenario's files become tune's arguments.
    dest = _copy_tsp_sa(tmp_path)
    budget = 200
    code = main(["--scenario", str(dest / "scenario.txt"), "--max-experiments", str(budget),
                 "--quiet", "1", "--no-report", "--target-runner-launcher", sys.executable])
    assert code == EXIT_OK
    cli = json.loads((dest / "arena" / "results.json").read_text())
    sys.path.insert(0, str(dest))
    try:
        import tsp_sa
    finally:
        sys.path.remove(str(dest))

    def instances(listing):
        return [str(dest / "instances" / line.strip())
                for line in (dest / listing).read_text().splitlines() if line.strip()]

    res = racer.tune(tsp_sa.evaluate, dest / "parameters.txt", instances("train.txt"),
                     test_instances=instances("test.txt"), budget=budget, random_state=1,
                     forbidden=dest / "forbidden.txt", digits=4, progress=False,
                     initial=[{"move": "2opt", "t0": 1.0, "cooling": 0.995, "effort": "medium",
                               "restarts": "0"}])
    assert [e["id"] for e in cli["elites"]] == res.elite_ids
    assert [{k: v for k, v in e["values"].items() if v is not None}
            for e in cli["elites"]] == res.elites
    assert cli["experiments"] == res.experiments and cli["iterations"] == res.iterations
    assert {int(k): v["costs"] for k, v in cli["test"].items()} == res.test


RESUME_SCRIPT = """
import sys, time, racer

def evaluate(config, instance, seed):
    time.sleep(0.02)
    return (config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance

# Three iterations of at most 40 runs: the budget does not bind, so look-ahead's unused runs
# (paid from it) cannot end the reference and the resumed tuning at different points.
res = racer.tune(evaluate, {space!r}, [0.1 * k for k in range(10)], budget=150,
                 random_state=7, storage=sys.argv[1], progress=False, n_jobs={n_jobs},
                 n_iterations=3, experiments_per_iteration=40)
print(res.elite_ids, res.experiments)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 of a process group")
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_kill_9_then_the_same_call_resumes_to_the_same_elites(tmp_path, n_jobs):
    script = tmp_path / "tuning.py"
    script.write_text(RESUME_SCRIPT.format(space=SPACE, n_jobs=n_jobs))

    def run(folder):
        return subprocess.run([sys.executable, str(script), str(folder)], capture_output=True,
                              text=True, env=ENV, timeout=300)

    reference = run(tmp_path / "ref")
    assert reference.returncode == 0, reference.stderr
    folder = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(script), str(folder)], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    runs = folder / "runs.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if runs.exists() and runs.read_text().count("\n") > 60:  # into the second iteration
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the tuning ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = runs.read_text().count("\n")
    resumed = run(folder)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[-1] == reference.stdout.splitlines()[-1]
    assert killed_at < runs.read_text().count("\n")


def test_a_numpy_number_as_an_instance_is_named_by_its_text():
    # runs.csv and the runs table name a number instance by its text: np.float64(0.25) is
    # "0.25", as the float 0.25 is, not NumPy's repr "np.float64(0.25)".
    import numpy as np
    res = racer.tune(lambda c, i, s: (c["x"] - i) ** 2, 'x "" r (0, 1)',
                     [np.float64(0.25), np.float64(0.5), 0.75, np.int64(1)], budget=60,
                     random_state=0, progress=False)
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    assert rows and {r["instance"] for r in rows} <= {"0.25", "0.5", "0.75", "1"}
