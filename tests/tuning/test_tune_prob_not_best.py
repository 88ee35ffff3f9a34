"""The tuning's stated probability that its best is not the best of the final elites:
TuneResult.prob_not_best, the run record's field, results.json and the command's summary
line, checked against a recomputation from the runs the tuning logged."""

import json

import numpy as np
import pytest

import racer
from racer.stats import prob_not_best
from racer.tuning.record import JOURNAL_DIR, RUN_FILE, RecordError, read_record

SPACE = 'x "" r (0, 1)'
INSTANCES = [0.1 * k for k in range(8)]


def nearly_flat(config, instance, seed):
    # Every configuration costs the same up to noise of 1e-3 per run: no elite is better.
    return instance + 1e-3 * np.random.default_rng([seed, int(config["x"] * 1e6)]).normal()


def separated(config, instance, seed):
    # The smaller x, the smaller the cost, on every instance, by the same margin.
    return config["x"] + instance


def noisy(config, instance, seed):
    return (config["x"] - 0.3) ** 2 + instance + np.random.default_rng(seed).normal(0, 0.05)


def _tune(evaluate, folder=None, **kwargs):
    options = {"budget": 150, "random_state": 1, "progress": False, "min_survivors": 3, **kwargs}
    return racer.tune(evaluate, SPACE, INSTANCES, storage=folder, **options)


def _from_runs(res):
    """The probability recomputed from the runs the tuning logged: the final elites' costs on
    the training (instance, seed) pairs every one of them ran, in instance-ID order, with the
    seed the tuning derives from its own."""
    runs = res.runs[(res.runs.iteration > 0) & (res.runs.status == "ok")]
    cells = {}
    for r in runs.itertuples():
        cells.setdefault(int(r.configuration), {})[(int(r.instance_id), int(r.seed))] = r.cost
    common = sorted(set.intersection(*(set(cells[e]) for e in res.elite_ids)))
    costs = np.array([[cells[e][t] for e in res.elite_ids] for t in common])
    stated = prob_not_best(costs, 0, maximize=False,
                           random_state=np.random.default_rng([res.seed, 7]))
    return stated, len(common)


@pytest.mark.parametrize("evaluate, seed", [(noisy, 0), (nearly_flat, 1), (noisy, 3)])
def test_the_field_is_the_probability_of_the_elites_runs(tmp_path, evaluate, seed):
    pytest.importorskip("pandas")
    res = _tune(evaluate, tmp_path, random_state=seed)
    assert res.prob_not_best is not None and 0.0 <= res.prob_not_best <= 1.0
    stated, n = _from_runs(res)
    assert n >= 2
    if len(res.elite_ids) == 1:
        assert res.prob_not_best == 0.0
    else:
        # The same draws on the costs read back from runs.csv: a cost whose text differs in
        # its last bit can flip only a draw in which two weighted means tie to that bit, so
        # allow two of the 4,000 draws.
        assert res.prob_not_best == pytest.approx(stated, abs=2 / 4000)
    # Read back from JSON (Python writes a float's shortest repr, which reads back to the same
    # float); the tolerance only admits rounding in the last place, never a different draw.
    record = read_record(tmp_path)
    assert record.prob_not_best == pytest.approx(res.prob_not_best, rel=1e-12)
    assert record.prob_not_best_instances == n
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["prob_not_best"] == pytest.approx(res.prob_not_best, rel=1e-12)


def test_nearly_equal_elites_make_it_large():
    res = _tune(nearly_flat)
    assert len(res.elites) >= 2
    assert res.prob_not_best > 0.25


def test_an_elite_better_on_every_instance_makes_it_zero():
    res = _tune(separated)
    assert len(res.elites) >= 2
    assert res.prob_not_best == 0.0


def test_the_same_seed_states_the_same_probability():
    a = _tune(nearly_flat, random_state=4)
    b = _tune(nearly_flat, random_state=4)
    # Same computation, same seed, same machine: bit-identical by racer's contract, so ==.
    assert a.elite_ids == b.elite_ids and a.prob_not_best == b.prob_not_best


def test_several_objectives_state_none(tmp_path):
    res = racer.tune(lambda c, inst, seed: (c["x"] ** 2 + inst, (1 - c["x"]) ** 2), SPACE,
                     INSTANCES, budget=150, random_state=1, progress=False,
                     storage=str(tmp_path), direction=["minimize", "minimize"])
    assert res.prob_not_best is None
    record = read_record(tmp_path)
    assert record.prob_not_best is None and record.prob_not_best_instances is None
    assert "prob_not_best" not in json.loads((tmp_path / "results.json").read_text())


def test_a_record_written_before_the_field_still_reads(tmp_path):
    _tune(noisy, tmp_path)
    path = tmp_path / JOURNAL_DIR / RUN_FILE
    data = json.loads(path.read_text())
    del data["prob_not_best"], data["prob_not_best_instances"]
    path.write_text(json.dumps(data))
    record = read_record(tmp_path)
    assert record.prob_not_best is None and record.prob_not_best_instances is None
    assert record.complete


def test_a_record_with_a_probability_out_of_range_is_refused(tmp_path):
    _tune(noisy, tmp_path)
    path = tmp_path / JOURNAL_DIR / RUN_FILE
    data = json.loads(path.read_text())
    data["prob_not_best"] = 1.5
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="prob_not_best.*1.5.*not a probability"):
        read_record(tmp_path)


@pytest.mark.slow  # target-runner processes
def test_the_command_prints_the_probability(tmp_path, capsys):
    from racer.cli import EXIT_OK, main

    from _helpers.cli import make_scenario

    scen = make_scenario(tmp_path)
    assert main(["--scenario", scen, "--parallel", "2", "--no-report"]) == EXIT_OK
    out = capsys.readouterr().out
    record = read_record(tmp_path / "arena")
    line = next(ln for ln in out.splitlines() if ln.startswith("# P(another"))
    if len(record.final_elites) == 1:
        assert "the best is the only final elite" in line
    elif record.prob_not_best is None:
        assert "not stated" in line
    else:
        assert f"= {record.prob_not_best:.2g} " in line
        assert f"over the {record.prob_not_best_instances} training instances" in line
