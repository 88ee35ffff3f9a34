"""Writes the instance files and instance lists of the tuning suite (benchmarks/tuning/*/).

Every instance is a pure function of its name's seed, so the files can be regenerated
byte for byte: ``python benchmarks/tuning/generate.py`` (no solver needed; it only writes
text). The training and test lists use disjoint seeds, so the held-out evaluation never sees
a training instance.

* SAT (``sat-cadical``, ``sat-capped``): uniform random 3-SAT in DIMACS CNF at the
  satisfiability threshold (clauses / variables = 4.26), where about half are unsatisfiable
  and solver effort is largest (Mitchell, Selman & Levesque, AAAI 1992).
* Multidimensional knapsack (``mip-mkp``), CPLEX LP format: ``m`` constraints, weights
  uniform in 1..1000, capacity = tightness x row sum, profits correlated with the weights
  (Chu & Beasley, J. Heuristics 1998).
* Generalized assignment (``mip-gap``), CPLEX LP format: 12 jobs to 3 or 4 agents, type D
  (weights uniform in 1..100, cost = 111 - weight + uniform(-10, 10), capacity = 0.8 x
  row sum / agents), the hardest of the classic types (Martello & Toth 1990; Chu & Beasley,
  Comput. Oper. Res. 1997).

The BBOB (``bbob-cma``), PBO (``pbo-deap``) and scikit-learn (``ml-sklearn``) scenarios
name their instances (``f<function>-i<instance>-d<dimension>``, ``f<function>-d<bits>``,
``<dataset>-r<resample>``); only their lists are written here.

Example::

    >>> clauses = random_3sat(20, 4.26, seed=1)
    >>> len(clauses), all(len(c) == 3 for c in clauses)
    (85, True)
"""
from __future__ import annotations

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
RATIO = 4.26


def random_3sat(n: int, ratio: float, seed: int) -> list:
    rng = random.Random(seed)
    return [[v if rng.random() < 0.5 else -v for v in rng.sample(range(1, n + 1), 3)]
            for _ in range(round(n * ratio))]


def dimacs(n: int, clauses: list, comment: str) -> str:
    return (f"c {comment}\np cnf {n} {len(clauses)}\n"
            + "".join(" ".join(map(str, c)) + " 0\n" for c in clauses))


def mkp_lp(n: int, m: int, tightness: float, seed: int) -> str:
    rng = random.Random(seed)
    w = [[rng.randint(1, 1000) for _ in range(n)] for _ in range(m)]
    p = [sum(w[i][j] for i in range(m)) // m + rng.randint(0, 500) for j in range(n)]
    cap = [int(tightness * sum(row)) for row in w]
    lines = [f"\\ multidimensional knapsack n={n} m={m} tightness={tightness} seed={seed}",
             "Maximize", " profit: " + " + ".join(f"{p[j]} x{j}" for j in range(n)), "Subject To"]
    lines += [f" c{i}: " + " + ".join(f"{w[i][j]} x{j}" for j in range(n)) + f" <= {cap[i]}"
              for i in range(m)]
    lines += ["Binary", " " + " ".join(f"x{j}" for j in range(n)), "End"]
    return "\n".join(lines) + "\n"


def gap_lp(m: int, n: int, seed: int) -> str:
    """Generalized assignment, type D (hard: cost falls as the agent's use of capacity rises)."""
    rng = random.Random(seed)
    a = [[rng.randint(1, 100) for _ in range(n)] for _ in range(m)]
    c = [[111 - a[i][j] + rng.randint(-10, 10) for j in range(n)] for i in range(m)]
    b = [int(0.8 * sum(a[i]) / m) for i in range(m)]
    lines = [f"\\ generalized assignment type D agents={m} jobs={n} seed={seed}", "Minimize",
             " cost: " + " + ".join(f"{c[i][j]} x{i}_{j}" for i in range(m) for j in range(n)),
             "Subject To"]
    lines += [f" job{j}: " + " + ".join(f"x{i}_{j}" for i in range(m)) + " = 1" for j in range(n)]
    lines += [f" cap{i}: " + " + ".join(f"{a[i][j]} x{i}_{j}" for j in range(n)) + f" <= {b[i]}"
              for i in range(m)]
    lines += ["Binary", " " + " ".join(f"x{i}_{j}" for i in range(m) for j in range(n)), "End"]
    return "\n".join(lines) + "\n"


def write(root: Path, folder: str, files: dict, train: list, test: list) -> None:
    base = root / folder
    (base / "instances" if files else base).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (base / "instances" / name).write_text(text)
    (base / "train.txt").write_text("".join(f"{t}\n" for t in train))
    (base / "test.txt").write_text("".join(f"{t}\n" for t in test))


def sat(root: Path, folder: str, sizes: tuple, train_seeds: range, test_seeds: range,
        base_seed: int) -> None:
    files, train, test = {}, [], []
    for seeds, names in ((train_seeds, train), (test_seeds, test)):
        for s in seeds:
            for n in sizes:
                name = f"uf{n}-s{s}.cnf"
                files[name] = dimacs(n, random_3sat(n, RATIO, base_seed + 1000 * n + s),
                                     f"uniform random 3-SAT n={n} ratio={RATIO} seed={base_seed + 1000 * n + s}")
                names.append(name)
    write(root, folder, files, train, test)


def main(root: Path = HERE) -> None:
    """Write every scenario's instances and lists under ``root`` (default: this folder)."""
    # CaDiCaL: 160 and 170 variables keep a run under ~0.1 s on a quiet core.
    sat(root, "sat-cadical", (160, 170), range(1, 11), range(101, 107), base_seed=0)
    # The capped scenario: formulas large enough that a cut-off of 10,000 conflicts stops
    # some runs (5-25% of the default solvers' runs).
    sat(root, "sat-capped", (160, 175), range(1, 9), range(101, 106), base_seed=500_000)

    files, train, test = {}, [], []
    for seeds, names in ((range(1, 13), train), (range(101, 107), test)):
        for s in seeds:
            for n, tight in ((20, 0.25), (25, 0.5)):
                name = f"mkp{n}-5-{tight}-s{s}.lp"
                files[name] = mkp_lp(n, 5, tight, 10_000 * n + s)
                names.append(name)
    write(root, "mip-mkp", files, train, test)

    files, train, test = {}, [], []
    for seeds, names in ((range(1, 13), train), (range(101, 107), test)):
        for s in seeds:
            for m in (3, 4):
                name = f"gap{m}x12-s{s}.lp"
                files[name] = gap_lp(m, 12, 100_000 * m + s)
                names.append(name)
    write(root, "mip-gap", files, train, test)

    # BBOB: all 24 functions in dimension 5; instances 1-3 for training, 4-5 held out.
    write(root, "bbob-cma", {}, [f"f{f}-i{i}-d5" for i in (1, 2, 3) for f in range(1, 25)],
          [f"f{f}-i{i}-d5" for i in (4,) for f in range(1, 25)])

    # PBO (IOHexperimenter): W-model LeadingOnes/OneMax variants and Ising models; trained on
    # 49 and 64 bits, tested on 81 (square sizes: the Ising torus needs them).
    pbo = (2, 8, 11, 13, 15, 19, 20, 21)
    write(root, "pbo-deap", {}, [f"f{f}-d{n}" for n in (49, 64) for f in pbo], [f"f{f}-d81" for f in pbo])

    data = ("iris", "wine", "breast_cancer", "digits")
    write(root, "ml-sklearn", {}, [f"{d}-r{r}" for r in range(1, 6) for d in data],
          [f"{d}-r{r}" for r in range(101, 104) for d in data])


if __name__ == "__main__":
    main()
