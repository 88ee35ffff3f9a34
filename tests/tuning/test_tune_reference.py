"""Same seed, same elites, same runs: ``racer.tune`` and ``racer --scenario`` against a
reference recorded before the two were given one typed entry to the tuner
(``racer.tuning.run.run_tuning``), in ``tests/data/tuning_reference.json``; likewise a capped
tuning and an Optuna ``IteratedRace`` study (recorded with racer at 18f2078, before the tuner
left the command-line package).

The reference holds, per case, the elites (IDs and values), the runs that count (iteration,
configuration, instance ID, seed, cost, status; look-ahead runs left unused are not runs) in
one order, the runs charged, the iterations, the stop reason and the test phase. Running this
file as a script writes the reference anew from the racer it imports (only when a change of
the runs is intended, and said so in the commit)::

    python tests/tuning/test_tune_reference.py
"""

import csv
import json
import math
import re
import shutil
import sys
from pathlib import Path

import pytest

import racer

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "data" / "tuning_reference.json"

SPACE = 'x "" r (0, 1)\nk "" c (a, b)\nw "" i (1, 9) | k == "b"'
TRAIN = [0.1 * k for k in range(10)]


def quadratic(config, instance, seed):
    import random

    noise = random.Random(seed).gauss(0, 0.01)
    return (config["x"] - 0.3) ** 2 + (0.5 if config["k"] == "b" else 0.0) + instance + noise


def failing(config, instance, seed):
    if config["k"] == "b" and config["w"] > 4:
        raise ZeroDivisionError("w > 4")
    return quadratic(config, instance, seed)


def two(config, instance, seed):
    x = config["x"]
    return (x ** 2 + instance, (1 - x) ** 2 + (0.5 if config["k"] == "b" else 0.0))


def timed(config, instance, seed):
    return quadratic(config, instance, seed), 0.5 + config["x"]


# The failure policy is given in the command line's word ("reject"), which racer.tune keeps
# accepting, so that the reference ran unchanged on the racer it was recorded with.
CASES = {
    "single": dict(evaluate=quadratic, budget=150, random_state=3, test_instances=[9.0, 9.5]),
    "reject": dict(evaluate=failing, budget=150, random_state=5, on_error="reject"),
    "pareto": dict(evaluate=two, budget=200, random_state=1, direction=["minimize", "minimize"]),
    "max_time": dict(evaluate=timed, max_time=60, random_state=2),
}
TSP_BUDGET = 120


def _runs(rows):
    """The runs that count, in one order: the order of runs.csv is the order runs answered."""
    kept = [r for r in rows if r["status"] != "speculative-unused"]
    kept.sort(key=lambda r: (r["iteration"], r["configuration"], r["instance_id"]))
    return [[r["iteration"], r["configuration"], r["instance_id"], r["seed"],
             None if r["cost"] is None or r["cost"] != r["cost"] else r["cost"], r["status"]]
            for r in kept]


def tune_case(name):
    import warnings

    kw = dict(CASES[name])
    evaluate = kw.pop("evaluate")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # on_error="reject": the old word
        res = racer.tune(evaluate, SPACE, TRAIN, progress=False, **kw)
    rows = res.runs.to_dict("records") if hasattr(res.runs, "to_dict") else res.runs
    return {"elite_ids": res.elite_ids, "elites": res.elites, "experiments": res.experiments,
            "iterations": res.iterations, "stop_reason": res.stop_reason,
            "test": None if res.test is None else {str(k): v for k, v in res.test.items()},
            "pareto_objectives": res.pareto_objectives, "runs": _runs(rows)}


def tsp_sa_case(folder, budget=TSP_BUDGET):
    from racer.cli import EXIT_OK, main

    dest = Path(folder) / "tsp-sa"
    shutil.copytree(ROOT / "examples" / "tsp-sa", dest, ignore=shutil.ignore_patterns("arena"))
    (dest / "arena").mkdir()
    code = main(["--scenario", str(dest / "scenario.txt"), "--max-experiments", str(budget),
                 "--quiet", "1", "--no-report", "--target-runner-launcher", sys.executable])
    assert code == EXIT_OK
    results = json.loads((dest / "arena" / "results.json").read_text())
    with open(dest / "arena" / "runs.csv", newline="", encoding="utf-8") as f:
        rows = [{"iteration": int(r["iteration"]), "configuration": int(r["configuration"]),
                 "instance_id": int(r["instance_id"]), "seed": int(r["seed"]),
                 "cost": float(r["cost"]) if r["cost"] else None, "status": r["status"]}
                for r in csv.DictReader(f)]
    return {"budget": budget, "elite_ids": [e["id"] for e in results["elites"]],
            "elites": [e["values"] for e in results["elites"]],
            "experiments": results["experiments"], "iterations": results["iterations"],
            "test": {k: v["costs"] for k, v in results["test"].items()}, "runs": _runs(rows)}


def capped(config, instance, seed, bound):
    # A running time: smaller x runs faster; the bound caps it (irace's capping).
    run_time = 0.5 + 4 * config["x"] + instance + (1.0 if config["k"] == "b" else 0.0)
    return min(run_time, bound), min(run_time, bound)


def capped_case():
    res = racer.tune(capped, SPACE, TRAIN, budget=150, random_state=2, progress=False,
                     capping=True, bound_max=5)
    rows = res.runs.to_dict("records")
    kept = sorted((r for r in rows if r["status"] != "speculative-unused"),
                  key=lambda r: (r["iteration"], r["configuration"], r["instance_id"]))
    return {"elite_ids": res.elite_ids, "elites": res.elites, "experiments": res.experiments,
            "iterations": res.iterations, "stop_reason": res.stop_reason,
            "runs": [[r["iteration"], r["configuration"], r["instance_id"], r["seed"],
                      r["cost"], r["status"], r["bound"]] for r in kept]}


def study_evaluate(params, instance):
    import random
    return (params["x"] - 0.3) ** 2 + (0.2 if params["kind"] == "b" else 0.0) \
        + random.Random(instance).gauss(0, 0.05)


def iterated_race_case():
    import optuna
    from racer.adapters.optuna import IteratedRace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {"x": optuna.distributions.FloatDistribution(0, 1),
             "kind": optuna.distributions.CategoricalDistribution(["a", "b"])}
    race = IteratedRace(study_evaluate, space, list(range(20)), budget=300, random_state=7,
                        progress=False)
    res = race.run()
    trials = [[t.number, t.state.name, t.params, t.value, sorted(t.intermediate_values.items())]
              for t in res.study.trials]
    return {"best_params": res.best_params, "trials": trials}


def _same(got, expected):
    """Equal, floats to 1e-12 relative (the reference went through JSON)."""
    assert got.keys() == expected.keys()
    runs, ref_runs = got["runs"], expected["runs"]
    assert [r[:4] + r[5:] for r in runs] == [r[:4] + r[5:] for r in ref_runs]
    # Failed runs have no cost (None): compared exactly; pytest.approx refuses None in the
    # expected values with a relative tolerance (pytest 9.1 and later).
    assert [r[4] is None for r in runs] == [r[4] is None for r in ref_runs]
    costs = [r[4] for r in runs if r[4] is not None]
    assert costs == pytest.approx([r[4] for r in ref_runs if r[4] is not None], rel=1e-12)
    for key in sorted(got.keys() - {"runs", "test", "pareto_objectives"}):
        assert json.loads(json.dumps(got[key])) == expected[key], key
    for key in {"test", "pareto_objectives"} & got.keys():
        assert _close(json.loads(json.dumps(got[key])), expected[key]), key


def _close(a, b):
    """``a == b`` with floats to 1e-12 relative, in nested lists and dicts."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-12)
    return a == b


def _dumps(data) -> str:
    """The reference as JSON, one run a line (a diff of it then shows which runs changed)."""
    text = json.dumps(data, indent=1)
    # Each run's list on one line: [iteration, configuration, instance, seed, cost, status].
    return re.sub(r"\[\s+(-?\d+),\s+(-?\d+),\s+(-?\d+),\s+(-?\d+),\s+([^\s,]+),\s+(\"[^\"]*\")\s+\]",
                  r"[\1, \2, \3, \4, \5, \6]", text) + "\n"


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_racer_tune_makes_the_recorded_runs_and_elites(reference, name):
    _same(tune_case(name), reference["tune"][name])


@pytest.mark.slow
def test_the_command_makes_the_recorded_runs_and_elites_on_tsp_sa(reference, tmp_path):
    _same(tsp_sa_case(tmp_path, reference["tsp_sa"]["budget"]), reference["tsp_sa"])


@pytest.mark.slow
def test_a_capped_tuning_makes_the_recorded_runs_and_elites(reference):
    got = json.loads(json.dumps(capped_case()))
    assert got == reference["capped"]


@pytest.mark.slow
def test_an_iterated_race_study_makes_the_recorded_trials(reference):
    got = json.loads(json.dumps(iterated_race_case(), default=str))
    assert got == reference["iterated_race"]


if __name__ == "__main__":
    import subprocess
    import tempfile

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        data = {"made_with": f"racer at commit {commit}",
                "tune": {name: tune_case(name) for name in CASES},
                "tsp_sa": tsp_sa_case(tmp), "capped": capped_case(),
                "iterated_race": iterated_race_case()}
    REFERENCE.write_text(_dumps(data))
    print(f"wrote {REFERENCE}")
