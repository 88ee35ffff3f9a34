"""``racer --executor ray`` and :class:`racer.ray_executor.RayExecutor` on a real local Ray
instance (one for the module: starting Ray costs seconds), checked against the thread pool."""

import json
import math
import os
import sys
import textwrap
import time

import numpy as np
import pytest

from racer import Race
from racer.cli import EXIT_OK, main
from racer.racing.frace import FRaceTest

from _helpers.cli import PARAMS_1, make_scenario, read_runs

ray = pytest.importorskip("ray")

from racer.ray_executor import RayExecutor  # noqa: E402
from racer.cli.scenario import Instance  # noqa: E402
from racer.cli.target_runner import TargetRunner  # noqa: E402

from _helpers.processes import alive, descendants  # noqa: E402

pytestmark = pytest.mark.slow  # subprocesses, worker processes: `pytest -m "not slow"` skips them


@pytest.fixture(scope="module")
def ray_executor():
    if ray.is_initialized():
        pytest.skip("Ray is already running in this process")
    before = descendants(os.getpid())
    ex = RayExecutor(num_cpus=2, include_dashboard=False)
    # Ray's processes (GCS, raylet, workers) as they are once a task has run.
    ex.submit(math.hypot, 3, 4).result()
    ex.ray_pids = descendants(os.getpid()) - before
    yield ex
    ex.shutdown()


def test_ray_executor_refuses_bad_arguments():
    with pytest.raises(ValueError, match="`num_cpus` must be a positive integer"):
        RayExecutor(num_cpus=0)
    with pytest.raises(TypeError, match="`address` must be a string"):
        RayExecutor(address=8786)


def test_a_race_on_ray_gives_the_serial_result(ray_executor):
    # math.hypot: an evaluate Ray's workers import by name; candidate 0 is best everywhere.
    kwargs = dict(test=FRaceTest(), first_test=3, random_state=5)
    serial = Race(list(range(5)), **kwargs).run(math.hypot, range(1, 15), progress=False)
    on_ray = Race(list(range(5)), **kwargs).run(math.hypot, range(1, 15), executor=ray_executor,
                                              progress=False)
    assert on_ray.history == serial.history
    np.testing.assert_array_equal(on_ray.scores, serial.scores)


def test_cli_executor_ray_gives_the_same_elites_as_threads(tmp_path):
    a, b = tmp_path / "threads", tmp_path / "ray"
    a.mkdir()
    b.mkdir()
    scen_a, scen_b = make_scenario(a, budget=60, params=PARAMS_1), make_scenario(b, budget=60, params=PARAMS_1)
    assert main(["--scenario", scen_a, "--parallel", "2", "--quiet", "1", "--seed", "3"]) == EXIT_OK
    # Ray is initialised in this process (the fixture's), so racer runs on it and leaves it up.
    assert ray.is_initialized()
    assert main(["--scenario", scen_b, "--parallel", "2", "--quiet", "1", "--seed", "3",
                 "--executor", "ray"]) == EXIT_OK
    assert ray.is_initialized()
    assert (b / "arena" / "elites.txt").read_text() == (a / "arena" / "elites.txt").read_text()
    # Unused look-ahead runs depend on timing; the runs the races used do not.
    runs_a, runs_b = ([r for r in read_runs(d) if r["status"] != "speculative-unused"] for d in (a, b))
    assert len(runs_b) == len(runs_a)
    key = lambda r: (r["iteration"], r["configuration"], r["instance_id"], r["seed"], r["cost"])  # noqa: E731
    assert sorted(map(key, runs_b)) == sorted(map(key, runs_a))


def test_cli_pipelined_on_ray_gives_the_elites_of_one_thread(ray_executor, tmp_path):
    # Pipelined blocks start their runs ahead on Ray too, by rule: the same elites and runs
    # charged as one thread of racer's own pool.
    a, b = tmp_path / "one", tmp_path / "ray"
    a.mkdir()
    b.mkdir()
    scen_a, scen_b = make_scenario(a, budget=80, params=PARAMS_1), make_scenario(b, budget=80, params=PARAMS_1)
    assert main(["--scenario", scen_a, "--parallel", "1", "--quiet", "1", "--seed", "3",
                 "--pipelined"]) == EXIT_OK
    assert ray.is_initialized()
    assert main(["--scenario", scen_b, "--parallel", "2", "--quiet", "1", "--seed", "3",
                 "--executor", "ray", "--pipelined"]) == EXIT_OK
    assert (b / "arena" / "elites.txt").read_text() == (a / "arena" / "elites.txt").read_text()
    done = lambda d: json.loads((d / "arena" / "results.json").read_text())["experiments"]  # noqa: E731
    assert done(a) == done(b) <= 80


def test_racer_tune_on_ray_with_a_timeout_stops_a_hung_run_and_gives_the_pool_answer(ray_executor):
    # racer.tune's Python function on Ray, with iterations pipelined: every run of k = "b"
    # hangs; with `timeout` each Ray worker makes its runs in a killable process of its own,
    # so the hung runs are stopped and fail, and the tuning ends with racer's own pool's
    # answer. (A closure: cloudpickle sends it by value to Ray's workers, which cannot
    # import this test module.)
    import racer

    def evaluate(config, instance, seed):
        if config["k"] == "b":
            time.sleep(60)
        return (config["x"] - 0.3) ** 2 + instance

    space = 'x "" r (0, 1)\nk "" c (a, b)'
    kw = dict(budget=60, random_state=3, progress=False, timeout=0.5, on_error="eliminate",
              pipelined_iterations=True)
    res = racer.tune(evaluate, space, [0.1 * k for k in range(6)], executor=ray_executor, **kw)
    # Pipelined: the same answer on any number of workers, so two of racer's own.
    here = racer.tune(evaluate, space, [0.1 * k for k in range(6)], n_jobs=2, **kw)
    hung = res.runs[res.runs.status == "error"]
    assert len(hung) > 0 and all("timed out after 0.5 s" in m for m in hung.message)
    assert res.best["k"] == "a"
    assert res.elite_ids == here.elite_ids and res.experiments == here.experiments <= 60


def test_cancelling_a_run_on_ray_kills_its_runner(ray_executor, tmp_path):
    # Two runs that would sleep two minutes hold both CPUs; cancelling their futures must
    # kill the runner processes (TargetRunner's finally on Ray's KeyboardInterrupt) and free
    # the CPUs for the next run.
    (tmp_path / "pids").mkdir()
    runner = tmp_path / "target-runner"
    runner.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""
        import os, sys, time
        open(os.path.join("pids", str(os.getpid())), "w").close()
        if sys.argv[4] == "slow":
            time.sleep(120)
        print(1.5)
    """))
    runner.chmod(0o755)
    tr = TargetRunner([str(runner)], str(tmp_path))
    slow = [ray_executor.submit(tr.run, k, 1, 1, Instance("slow"), []) for k in (1, 2)]
    deadline = time.monotonic() + 60
    while len(os.listdir(tmp_path / "pids")) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [int(p) for p in os.listdir(tmp_path / "pids")]
    assert len(pids) == 2, "the slow runs did not start"
    assert all(f.cancel() for f in slow) and all(f.cancelled() for f in slow)
    assert tr.run(3, 1, 1, Instance("fast"), []).cost == 1.5  # the runner itself works
    fast = ray_executor.submit(tr.run, 4, 1, 1, Instance("fast"), [])
    assert fast.result(timeout=100).cost == 1.5  # a CPU was freed before the sleeps' end
    while any(map(alive, pids)) and time.monotonic() < deadline + 30:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)]


def test_shutdown_stops_the_ray_it_started_and_leaves_no_process(ray_executor):
    assert ray_executor.owns_ray and ray_executor.ray_pids
    ray_executor.shutdown()
    assert not ray.is_initialized()
    deadline = time.monotonic() + 30
    while any(map(alive, ray_executor.ray_pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in ray_executor.ray_pids if alive(p)]
    with pytest.raises(RuntimeError, match="after shutdown"):
        ray_executor.submit(math.hypot, 1, 1)
