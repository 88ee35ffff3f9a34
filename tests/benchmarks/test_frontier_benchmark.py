"""Smoke test of benchmarks/frontier.py: structure of its rows and table, pairing, truncation."""

import numpy as np
import pytest

from _helpers.benchmarks import benchmark_module


@pytest.fixture(scope="module")
def frontier():
    with benchmark_module("frontier") as mod:
        yield mod


@pytest.fixture(scope="module")
def rows(frontier):
    # frace_b is the Conover F-race run once per budget (as a budget-aware test would be):
    # its rows must equal the truncated ones.
    return frontier.run(["paper_30_1", "cvacc"], 1, 10000,
                        ["frace_conover", "oracle", "frace_b"],
                        ["frace_b=racer.racing.frace.FRaceTest():budget"], None, 1,
                        progress=False)


def test_rows_cover_every_cell_once(frontier, rows):
    keys = [(r["family"], r["rep"], r["method"], r["budget"]) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * 3 * 4
    assert {r["budget"] for r in rows} == {"10q", "30q", "100q", "unl"}


def test_methods_share_the_matrix_and_oracle_is_exact(frontier, rows):
    crc = {}
    for r in rows:
        crc.setdefault(r["family"], set()).add(r["matrix_crc"])
    assert all(len(v) == 1 for v in crc.values())  # every method raced the same matrix
    assert len({v.pop() for v in crc.values()}) == 2  # and the families differ
    oracle = [r for r in rows if r["method"] == "oracle"]
    assert oracle and all(r["mae"] == 0 and r["regret"] == 0 and not r["lost_best"] for r in oracle)
    # the oracle's pick is the argmax of the family's truth, regenerated independently
    for r in oracle:
        truth, _ = frontier.FAMILIES[r["family"]]["gen"](r["rep"])
        assert r["pick"] == int(np.argmax(truth))


def test_budgets_are_respected_and_truncation_equals_budgeted_race(frontier, rows):
    by = {(r["family"], r["method"], r["budget"]): r for r in rows}
    for fam in ("paper_30_1", "cvacc"):
        q = frontier.FAMILIES[fam]["q"]
        spent = [by[(fam, "frace_conover", b)]["evaluations"] for b in ("10q", "30q", "100q", "unl")]
        assert spent == sorted(spent)
        for label, budget in frontier.budgets_of(q):
            t, b = by[(fam, "frace_conover", label)], by[(fam, "frace_b", label)]
            assert (t["mode"], b["mode"]) == ("t", "b")
            if budget is not None:
                assert t["evaluations"] <= budget
            for k in ("evaluations", "instances", "pick", "mae", "lost_best", "survivors"):
                assert t[k] == b[k], (fam, label, k)


def test_table_structure(frontier, rows):
    text = frontier.summarize(rows, "cmd")
    assert text.count("### ") == 2
    body = [ln for ln in text.splitlines()
            if ln.startswith("| ") and ln.split("|")[1].strip() in ("10q", "30q", "100q", "unl")]
    assert len(body) == 2 * 4 * 3
    # the oracle beats the best F-race wherever that one errs; it is never worse
    oracle = [ln for ln in body if "| oracle |" in ln]
    assert all("▲" not in ln for ln in oracle)


def test_cli_rejects_unknown_names(frontier):
    with pytest.raises(ValueError, match="--families"):
        frontier.main(["--families", "nope"])
    with pytest.raises(ValueError, match="--methods"):
        frontier.main(["--methods", "nope"])


def test_reversal_family_has_the_truth_as_mean(frontier):
    truth, scores = frontier.FAMILIES["reversal"]["gen"](0)
    assert scores.shape == (frontier.MAX_INSTANCES, 50) and truth.shape == (50,)
    # E[a + b + s (E - 1) + 0.3 N] = a (b, E - 1 and N have mean 0): the sample means over
    # 1500 rows are within ~4 SE of the truth (per-column sd <= ~1.8, so SE <= 0.05)
    centred = scores - scores.mean(axis=1, keepdims=True)
    assert np.all(np.abs(centred.mean(axis=0) - (truth - truth.mean())) < 0.2)


def test_versus_table_pairs_against_conover(frontier):
    rows = [dict(family="paper_30_1", rep=r, method=m, budget="unl", evaluations=e, mae=a,
                 lost_best=lb)
            for r in range(3)
            for m, e, a, lb in (("frace_conover", 100, 1, 0), ("old", 150 + r, 1, 0),
                                ("new", 50 + r, 1, 1))]
    text = frontier.versus(rows, "old", "new", loss={"new": 0.05})
    line = next(x for x in text.splitlines() if x.startswith("| paper_30_1"))
    assert "| 3 | 100±0 |" in line and "(1.51×)" in line and "(0.51×)" in line
    assert line.count("**▲**") == 1 and line.count("**▼**") == 1  # old more, new fewer
    assert line.rstrip(" |").endswith("**✗**")  # new lost the best in 3 of 3 > 0.05
