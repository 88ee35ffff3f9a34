"""How fast is the race engine itself?

1. A race of 200 candidates over 1 500 instances with an instant ``evaluate`` (a lookup in a
   pre-generated score matrix: true means ~ U(0, 1), N(mean, 1) noise, larger is better),
   under the Bayesian test (``racer.BayesianTest``) and under the F-race baseline
   (``FRaceTest``, irace's Conover post-hoc), first_test=5, each_test=1. Reported: wall time,
   time spent inside the test's ``decide`` and in the engine, evaluations, instances, tests
   run, survivors. Target: under 30 s with the Bayesian test.
2. Engine overhead per evaluation (ask/tell bookkeeping): a race whose test never eliminates,
   so every evaluation goes through the full loop, driven by ask/tell, by ``run()`` in
   process, and by ``run()`` with the SQLite journal (one committed insert per evaluation).

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_race.py [--quick] [--seed 0]

Time it with OPENBLAS_NUM_THREADS=1; on a shared machine the wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from racer import KeepAll, Race, RacingTest


class Timed(RacingTest):
    """Wraps a test to time its decide() calls."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0

    def decide(self, view, rng):
        start = time.perf_counter()
        out = self.inner.decide(view, rng)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out

    def get_params(self):
        return self.inner.get_params()


def make_matrix(n_instances, n_candidates, seed):
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.0, 1.0, n_candidates)
    return means, rng.normal(means, 1.0, size=(n_instances, n_candidates))


def race_speed(name, test, scores, means, seed):
    n_instances, n_candidates = scores.shape
    timed = Timed(test)
    lookup = scores.__getitem__
    start = time.perf_counter()
    res = Race(range(n_candidates), test=timed, first_test=5, each_test=1, random_state=seed, direction="maximize").run(
        lambda c, i: lookup((i, c)), range(n_instances), progress=False
    )
    wall = time.perf_counter() - start
    true_rank = int(np.sum(means > means[res.best_index])) + 1
    return {
        "test": name,
        "wall s": wall,
        "in test s": timed.seconds,
        "engine s": wall - timed.seconds,
        "evaluations": res.n_evaluations,
        "instances": res.n_instances,
        "tests": timed.calls,
        "survivors": len(res.survivors),
        "true rank of winner": true_rank,
    }


def overhead(n_candidates, n_instances, mode):
    values = np.random.default_rng(1).normal(size=(n_instances, n_candidates))
    lookup = values.__getitem__
    evaluate = lambda c, i: lookup((i, c))  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        storage = os.path.join(tmp, "bench.sqlite") if mode == "run() + SQLite journal" else None
        # KeepAll costs nothing and removes no one: what is left is the engine's own work.
        r = Race(range(n_candidates), test=KeepAll(), first_test=5, random_state=0,
                 storage=storage, instances=range(n_instances))
        start = time.perf_counter()
        if mode == "ask/tell":
            while not r.finished:
                for ev in r.ask():
                    r.tell(ev, evaluate(ev.candidate, ev.instance))
            n = r.n_evaluations
        else:
            n = r.run(evaluate, progress=False).n_evaluations
        wall = time.perf_counter() - start
        # The bare cost of calling evaluate n times, to subtract.
        start = time.perf_counter()
        for i in range(n_instances):
            for c in range(n_candidates):
                evaluate(c, i)
        bare = time.perf_counter() - start
        r.close()
    return {"mode": mode, "evaluations": n, "wall s": wall,
            "overhead us/eval": 1e6 * (wall - bare) / n}


def table(rows):
    keys = list(rows[0])
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 candidates x 300 instances")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    q, n = (50, 300) if args.quick else (200, 1500)
    means, scores = make_matrix(n, q, args.seed)

    from racer.racing.frace import FRaceTest

    tests = [("FRaceTest (conover)", FRaceTest)]
    try:
        from racer.racing.bayesian import BayesianTest

        tests.insert(0, ("BayesianTest (defaults)", BayesianTest))
    except ImportError:
        print("(racer.racing.bayesian not available: Bayesian row skipped)")

    # Compile/caches warm-up on a small race so JIT time is not counted.
    warm_means, warm = make_matrix(40, 8, 99)
    for _name, cls in tests:
        race_speed("warm", cls(), warm, warm_means, 0)

    print(f"## Race of {q} candidates x {n} instances, instant evaluate (seed {args.seed})\n")
    print(table([race_speed(name, cls(), scores, means, args.seed) for name, cls in tests]))

    oq, on = (50, 100) if args.quick else (100, 300)
    print(f"\n## Engine overhead per evaluation ({oq} candidates x {on} instances, no eliminations)\n")
    print(table([overhead(oq, on, m) for m in ("ask/tell", "run()", "run() + SQLite journal")]))


if __name__ == "__main__":
    main()
