"""irace 3.5's own t-test race decisions on fixed cost matrices, stored for the tests.

Runs ``irace:::aux.ttest`` (R) on ~30 cost matrices -- random ones, plus ties, constant
columns, a dominated column, two survivors and near-equal means -- for each ``adjust``
("none", "bonferroni", "holm") and writes the matrices and irace's answers (who stays alive,
the best column, the smallest adjusted p-value) to ``tests/data/trace_reference.json``.
``tests/racing/test_trace.py`` checks ``racer.racing.trace.TRaceTest`` against the stored answers,
and against R itself (through :func:`run_irace`) when ``Rscript`` with irace is installed.

Regenerate (seconds; needs R with irace, e.g. ``apt-get install -y r-cran-irace``):

    .venv/bin/python benchmarks/trace_reference.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "trace_reference.json"
ADJUST = ("none", "bonferroni", "holm")
CONFIDENCE = 0.95

# Reads "nrow ncol v1 v2 ..." lines (column-major values), answers one line per matrix and
# adjust: "<adjust> <best> <p.value> <alive as 0/1...>".
_R = r"""
lines <- readLines(commandArgs(TRUE)[1])
conf <- as.numeric(commandArgs(TRUE)[2])
for (line in lines) {
  v <- as.numeric(strsplit(line, " ")[[1]])
  y <- matrix(v[-(1:2)], nrow = v[1], ncol = v[2])
  for (adj in c("none", "bonferroni", "holm")) {
    r <- irace:::aux.ttest(y, rep(TRUE, ncol(y)), seq_len(ncol(y)), conf, adjust = adj)
    cat(adj, r$best, sprintf("%.17g", r$p.value), as.integer(r$alive), "\n")
  }
}
"""


def irace_available() -> bool:
    """True when ``Rscript`` runs and has the irace package."""
    if shutil.which("Rscript") is None:
        return False
    proc = subprocess.run(["Rscript", "-e", "cat(requireNamespace('irace', quietly=TRUE))"],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode == 0 and proc.stdout.strip() == "TRUE"


def run_irace(matrices, confidence: float = CONFIDENCE) -> list[dict]:
    """irace's ``aux.ttest`` on each cost matrix (rows instances, columns configurations,
    smaller is better): per matrix a dict ``{adjust: {"best", "p_value", "alive"}}`` with
    ``best`` 0-based."""
    with tempfile.TemporaryDirectory() as tmp:
        data, script = Path(tmp) / "m.txt", Path(tmp) / "t.R"
        script.write_text(_R)
        with data.open("w") as f:
            for y in matrices:
                y = np.asarray(y, dtype=np.float64)
                values = " ".join(f"{v:.17g}" for v in y.ravel(order="F"))
                f.write(f"{y.shape[0]} {y.shape[1]} {values}\n")
        proc = subprocess.run(["Rscript", str(script), str(data), repr(confidence)],
                              capture_output=True, text=True, check=True, timeout=600)
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    if len(rows) != len(ADJUST) * len(matrices):
        raise RuntimeError(f"Rscript answered {len(rows)} lines for {len(matrices)} matrices:\n"
                           + proc.stdout + proc.stderr)
    out: list[dict] = []
    for k, row in enumerate(rows):
        if k % len(ADJUST) == 0:
            out.append({})
        out[-1][row[0]] = {"best": int(row[1]) - 1, "p_value": float(row[2]),
                           "alive": [bool(int(a)) for a in row[3:]]}
    return out


def cases(seed: int = 20260125) -> list[tuple[str, np.ndarray]]:
    """The stored cost matrices, by name."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(14):  # random: 2-8 configurations, 3-20 instances, various gaps
        n, m = int(rng.integers(3, 21)), int(rng.integers(2, 9))
        shift = rng.uniform(0.0, 1.5) * rng.standard_normal(m)
        inst = rng.standard_normal((n, 1))  # instance effect: what makes pairing matter
        out.append((f"random-{k}", inst + shift + rng.normal(0.0, 1.0, (n, m))))
    for k in range(4):  # integer costs: ties within and between configurations
        n, m = int(rng.integers(4, 15)), int(rng.integers(3, 7))
        out.append((f"ties-{k}", rng.integers(0, 4, (n, m)).astype(float)))
    y = rng.normal(0.0, 1.0, (8, 4))
    y[:, 2] = 0.3  # a constant column (var < 10 eps: eliminated untested)
    out.append(("constant-column", y))
    y = rng.normal(0.0, 1.0, (8, 4))
    y[:, 0] = -5.0  # a constant best: every other column goes
    out.append(("constant-best", y))
    y = rng.normal(0.0, 1.0, (10, 4))
    y[:, 1] -= 2.0
    y[:, 3] = y[:, 1]
    y[0, 3] += 0.01  # no better than the best anywhere: eliminated although p(t) ~ 0.34
    out.append(("dominated", y))
    y = rng.normal(0.0, 1.0, (10, 4))
    y[:, 3] = y[:, 0]  # an exact copy of a column: equal means, p = 1 if it is the best
    y[:, 1] = y[:, 0] - 0.05
    y[:, 2] = y[:, 1]
    out.append(("tied-best", y))
    y = rng.normal(0.0, 1.0, (10, 3))
    y[:, 1] = y[:, 0] * (1 + 1e-12)  # all.equal but not identical
    y[:, 2] = y[:, 0] + 1e-4 * rng.standard_normal(10)
    out.append(("near-equal-means", y))
    y = rng.normal(0.0, 1.0, (10, 3))
    y[:, 0] -= 1.0
    y[:, 1] = y[:, 0] + 0.5  # a constant difference to the best: untested, p = 0
    out.append(("constant-difference", y))
    for k in range(4):  # two survivors (irace has no special case, unlike its F-race)
        n = int(rng.integers(3, 16))
        x = rng.standard_normal(n)
        out.append((f"two-{k}", np.column_stack([x, x + rng.normal(0.4 * k, 0.6, n)])))
    out.append(("two-identical", np.column_stack([x, x])))
    big = rng.normal(0.0, 1.0, (30, 40))
    big[:, :3] -= 1.0
    out.append(("many-columns", big))
    y = rng.normal(1e6, 1.0, (12, 5))  # large offset: var and all.equal scales
    out.append(("offset", y))
    return out


def main() -> None:
    named = cases()
    answers = run_irace([y for _, y in named])
    data = {
        "source": "irace 3.5 irace:::aux.ttest via benchmarks/trace_reference.py",
        "confidence": CONFIDENCE,
        "cases": [{"name": name, "costs": y.tolist(), "irace": ans}
                  for (name, y), ans in zip(named, answers)],
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    dropped = sum(sum(not a for a in c["irace"][adj]["alive"]) for c in data["cases"] for adj in ADJUST)
    print(f"wrote {OUT}: {len(named)} matrices x {len(ADJUST)} adjustments, {dropped} eliminations")


if __name__ == "__main__":
    main()
