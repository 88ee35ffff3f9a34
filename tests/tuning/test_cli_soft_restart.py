"""irace's soft restart (``softRestart``): which configurations are similar (checked against
irace 3.5's own ``similarConfigurations`` when R and irace are installed), how the model is
widened, and what the tuner does with it."""

import csv
import shutil
import subprocess
from types import SimpleNamespace as C

import numpy as np
import pytest

from racer.racing.frace import FRaceTest
from racer.tuning.tuner import Settings, Tuner
from racer.tuning import rexpr
from racer.tuning.parameters import Parameter, ParameterSpace
from racer.tuning.sampler import Sampler

from _helpers.tuner import TRAIN, FakeRunner

MIXED = ParameterSpace([
    Parameter("x", "--x ", "r", (0.0, 10.0)),
    Parameter("l", "--l ", "r", (0.01, 100.0), log=True),
    Parameter("k", "--k ", "c", ("a", "b")),
    Parameter("o", "--o ", "o", ("lo", "mid", "hi")),
    Parameter("n", "--n ", "i", (1, 5), condition=rexpr.parse('k == "a"'), condition_text='k == "a"'),
    Parameter("f", "--f ", "c", ("z",)),
], digits=2)

IRACE_PARAMS = """
x "--x " r (0, 10)
l "--l " r,log (0.01, 100)
k "--k " c (a, b)
o "--o " o (lo, mid, hi)
n "--n " i (1, 5) | k == "a"
f "--f " c (z)
"""


def _random_cases(n_cases, rng):
    """Sets of 3-6 configurations of MIXED, many of them near-copies of another."""
    cases = []
    for _ in range(n_cases):
        base = []
        for _ in range(int(rng.integers(3, 7))):
            if base and rng.random() < 0.6:
                v = dict(base[int(rng.integers(len(base)))])
                v["x"] = round(min(10.0, max(0.0, v["x"] + rng.choice([0.0, 0.04, 0.1, 0.3]))), 2)
                v["l"] = round(min(100.0, max(0.01, v["l"] + rng.choice([0.0, 0.5, 2.0]))), 2)
                if rng.random() < 0.2:
                    v["o"] = str(rng.choice(["lo", "mid", "hi"]))
                if rng.random() < 0.2:
                    v["k"] = "b" if v["k"] == "a" else "a"
                    v["n"] = None if v["k"] == "b" else 3
            else:
                k = str(rng.choice(["a", "b"]))
                v = {"x": round(float(rng.uniform(0, 10)), 2), "l": round(float(rng.uniform(0.01, 100)), 2),
                     "k": k, "o": str(rng.choice(["lo", "mid", "hi"])),
                     "n": int(rng.integers(1, 6)) if k == "a" else None, "f": "z"}
            base.append(v)
        cases.append([C(id=i + 1, values=v) for i, v in enumerate(base)])
    return cases


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
def test_similar_matches_irace_similar_configurations(tmp_path):
    if subprocess.run(["Rscript", "-e", "library(irace)"], capture_output=True).returncode != 0:
        pytest.skip("irace is not installed")
    cases = _random_cases(40, np.random.default_rng(7))
    threshold = 0.01
    names = ["x", "l", "k", "o", "n", "f"]
    with open(tmp_path / "cases.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", ".ID."] + names)
        for ci, case in enumerate(cases):
            for c in case:
                w.writerow([ci, c.id] + ["NA" if c.values[n] is None else c.values[n] for n in names])
    (tmp_path / "params.txt").write_text(IRACE_PARAMS)
    script = f"""
suppressMessages(library(irace))
p <- readParameters("{tmp_path / 'params.txt'}", digits = 2)
d <- read.csv("{tmp_path / 'cases.csv'}", stringsAsFactors = FALSE, check.names = FALSE,
              colClasses = c(k = "character", o = "character", f = "character"))
for (ci in sort(unique(d$case))) {{
  conf <- d[d$case == ci, -1]
  conf$.PARENT. <- NA
  ids <- irace:::similarConfigurations(conf, p, threshold = {threshold})
  cat(ci, ":", sort(ids), "\\n")
}}
"""
    out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, check=True).stdout
    theirs = {}
    for line in out.splitlines():
        ci, _, ids = line.partition(":")
        theirs[int(ci)] = sorted(int(x) for x in ids.split())
    assert len(theirs) == len(cases)
    s = Sampler(MIXED)
    ours = {ci: sorted(s.similar(case, threshold)) for ci, case in enumerate(cases)}
    assert ours == theirs
    # The cases exercise both answers.
    assert sum(bool(v) for v in ours.values()) >= 10 and sum(not v for v in ours.values()) >= 5


def test_similar_rules_by_parameter_type():
    s = Sampler(MIXED)
    base = {"x": 1.0, "l": 1.0, "k": "a", "o": "lo", "n": 2, "f": "z"}

    def pair(**change):
        return s.similar([C(id=1, values=base), C(id=2, values={**base, **change})], 0.01)

    assert pair(x=1.09) == [1, 2]           # 0.09 / 10 <= 0.01
    assert pair(x=1.11) == []               # 0.011 > 0.01
    assert pair(l=1.5) == [1, 2]            # log parameters on the declared scale, as irace
    assert pair(o="mid") == []              # ordinals compare as categories
    assert pair(n=3) == []                  # integers: 1 / 4 > 0.01
    assert pair(k="b", n=None) == []        # a categorical differs (and n active in one only)
    assert s.similar([C(id=1, values={**base, "k": "b", "n": None}),
                      C(id=2, values={**base, "k": "b", "n": None})], 0.01) == [1, 2]  # both NA


def test_soft_restart_widens_the_elites_model():
    s = Sampler(MIXED)
    e1 = C(id=1, values={"x": 1.0, "l": 1.0, "k": "a", "o": "lo", "n": 2, "f": "z"}, parent=None)
    e2 = C(id=2, values={"x": 5.0, "l": 9.0, "k": "b", "o": "hi", "n": None, "f": "z"}, parent=None)
    s.init_model([e1, e2])
    for iteration in (2, 3):  # shrunk twice: the restart's cap is above it
        s.update_model([e1, e2], iteration=iteration, n_iterations=4, n_new=6)
    before = {e: {k: list(v) for k, v in s.model[e].items()} for e in (1, 2)}
    new = C(id=3, values=dict(e1.values), parent=1)
    assert s.soft_restart([e1, e2, new], [3], n_new=6) == [1]   # a new one restarts its parent
    assert s.model[2] == before[2]
    n_var = MIXED.n_variable  # 5: f has a single value
    for name, sd0 in (("x", 5.0), ("l", 0.5), ("o", 1.0), ("n", 2.0)):
        want = min(before[1][name][0] * 6 ** (2 / n_var), sd0 * (1 / 6) ** (1 / n_var))
        assert s.model[1][name][0] == pytest.approx(want, rel=1e-12)
        assert s.model[1][name][0] > before[1][name][0]
    p = np.asarray(before[1]["k"])
    np.testing.assert_allclose(s.model[1]["k"], (0.9 * p + 0.1 * p.max()) / (0.9 * p + 0.1 * p.max()).sum(),
                               rtol=1e-12)


def _run(tmp_path, name, soft_restart):
    space = ParameterSpace([Parameter("mode", "--mode ", "c", ("a", "b")),
                            Parameter("x", "--x ", "r", (-4.0, 4.0))], digits=1)
    runner = FakeRunner()
    s = Settings(max_experiments=300, seed=5, parallel=2, soft_restart=soft_restart)
    t = Tuner(space, runner, TRAIN, s, FRaceTest(alpha=0.05), journal_dir=str(tmp_path / name))
    return t.run(), runner


@pytest.mark.slow
def test_tuner_soft_restarts_when_the_race_holds_near_copies(tmp_path):
    # digits = 1: values 0.1 apart on a width of 8 are similar (0.1 / 8 <= 10^-1), which
    # happens once the model has shrunk.
    on, runner_on = _run(tmp_path, "on", True)
    off, runner_off = _run(tmp_path, "off", False)
    assert on.soft_restarts and not off.soft_restarts
    assert on.experiments <= 300 and off.experiments <= 300
    first = on.soft_restarts[0]
    cands = {it: [c.values for c in cands] for it, _, cands in on.races}
    cands_off = {it: [c.values for c in cands] for it, _, cands in off.races}
    for it in range(1, first):  # identical until the first soft restart, then resampled
        assert cands[it] == cands_off[it]
    assert cands[first] != cands_off[first]
    again, _ = _run(tmp_path, "again", True)
    assert again.soft_restarts == on.soft_restarts
    assert [e.values for e in again.elites] == [e.values for e in on.elites]
