"""Race configurations of SciPy's differential evolution: ``python race_de.py``.

A complete race from Python (README.md, "What a race does"). Candidates are settings of
``scipy.optimize.differential_evolution`` (``strategy``, ``mutation``, ``recombination``,
``popsize``); instances are (test function, dimension, seed) triples over five standard
functions (sphere, Rosenbrock, Rastrigin, Ackley, Griewank, all with minimum 0 at a known
point); an evaluation runs DE for a fixed number of generations and scores
``log10(f(x_best) - f* + 1e-12)``, which is minimised (the log makes the functions' very
different scales comparable, the 1e-12 keeps exact hits finite).

Every evaluation and decision is journaled to ``./racer-demo.sqlite`` by default: interrupt it
(Ctrl-C, or kill it) and run the same command again to resume where it stopped; ``--fresh``
starts over. ``python race_de.py --help`` lists the options. The functions below are importable
too (the test suite imports this file by path).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys
import time

import numpy as np

DEFAULT_STORAGE = "racer-demo.sqlite"


# Test functions take x of shape (d,) or (d, S) (DE's vectorized mode evaluates a whole
# population per call) and return f of shape () or (S,).


def sphere(x):
    return np.sum(x * x, axis=0)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2, axis=0)


def rastrigin(x):
    return 10.0 * x.shape[0] + np.sum(x * x - 10.0 * np.cos(2.0 * np.pi * x), axis=0)


def ackley(x):
    d = x.shape[0]
    return (
        -20.0 * np.exp(-0.2 * np.sqrt(np.sum(x * x, axis=0) / d))
        - np.exp(np.sum(np.cos(2.0 * np.pi * x), axis=0) / d)
        + 20.0
        + np.e
    )


def griewank(x):
    i = np.arange(1, x.shape[0] + 1, dtype=np.float64).reshape((-1,) + (1,) * (x.ndim - 1))
    return 1.0 + np.sum(x * x, axis=0) / 4000.0 - np.prod(np.cos(x / np.sqrt(i)), axis=0)


# name -> (function, half-width of the search box); every minimum is f* = 0.
FUNCTIONS = {
    "sphere": (sphere, 5.12),
    "rosenbrock": (rosenbrock, 2.048),
    "rastrigin": (rastrigin, 5.12),
    "ackley": (ackley, 32.768),
    "griewank": (griewank, 600.0),
}


def make_candidates():
    """The DE settings raced: 3 strategies x 2 mutations x 2 recombinations x 2 popsizes.

    24 candidates, so that the Bayesian Friedman gate (defined once the instances outnumber the
    survivors) opens within the demo's budget.
    """
    grid = itertools.product(
        ["best1bin", "rand1bin", "currenttobest1bin"],
        [0.5, (0.5, 1.0)],
        [0.3, 0.9],
        [5, 15],
    )
    return [
        {"strategy": s, "mutation": m, "recombination": r, "popsize": p} for s, m, r, p in grid
    ]


def make_instances(n_seeds, dims=(2, 5)):
    """(function, dimension, seed) triples; the race shuffles them with its seed."""
    return [
        (name, dim, seed)
        for seed in range(n_seeds)
        for name in FUNCTIONS
        for dim in dims
    ]


def evaluate_de(candidate, instance, maxiter=20):
    """Run DE with ``candidate`` settings on ``instance``; return log10 of the final gap."""
    from scipy.optimize import differential_evolution

    name, dim, seed = instance
    func, half_width = FUNCTIONS[name]
    result = differential_evolution(
        func,
        [(-half_width, half_width)] * dim,
        maxiter=maxiter,
        tol=0.0,
        polish=False,
        seed=seed,
        vectorized=True,
        updating="deferred",  # required by vectorized=True
        **candidate,
    )
    return float(np.log10(max(float(result.fun), 0.0) + 1e-12))


class _Evaluate:
    """Picklable ``evaluate`` with the number of generations bound (for n_jobs > 1)."""

    def __init__(self, maxiter):
        self.maxiter = maxiter

    def __call__(self, candidate, instance):
        return evaluate_de(candidate, instance, self.maxiter)

    def __repr__(self):
        return f"evaluate_de(maxiter={self.maxiter})"


def _make_test(name):
    """The racing test of ``--test``: a name of :mod:`racer.racing.registry`, as everywhere."""
    from racer.racing.registry import make_test

    return make_test(name)[0]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="race_de.py",
        description=(
            "Race settings of scipy.optimize.differential_evolution (strategy, mutation, "
            "recombination, popsize: 24 candidates) over sphere, Rosenbrock, Rastrigin, Ackley "
            "and Griewank in 2 and 5 dimensions x seeds, minimising log10(f - f* + 1e-12) after "
            "a fixed number of generations. The race is journaled: run the same command again "
            "to resume an interrupted race."
        ),
    )
    parser.add_argument("--storage", default=DEFAULT_STORAGE,
                        help=f"SQLite journal (default: ./{DEFAULT_STORAGE}); 'none' disables it")
    parser.add_argument("--fresh", action="store_true",
                        help="delete the journal first and start a new race")
    parser.add_argument("--test", default="posterior-best", metavar="NAME",
                        help="racing test, a name as for racer's --racing-test: posterior-best "
                             "(PosteriorBestTest, default), bayesian (Benavoli et al.'s (2015) BayesianTest; "
                             "also 'bayes', 'seed002'), frace (irace's F-race), t-test-holm, ...; "
                             "options after a colon, e.g. posterior-best:error_rate=0.01")
    parser.add_argument("--budget", type=int, default=1500,
                        help="maximum number of DE runs (default: 1500)")
    parser.add_argument("--seeds", type=int, default=10,
                        help="seeds per (function, dimension): instances = 10 x seeds (default: 10)")
    parser.add_argument("--candidates", type=int, default=None,
                        help="race only the first N of the 24 settings (for quick trials)")
    parser.add_argument("--maxiter", type=int, default=20,
                        help="DE generations per evaluation (default: 20)")
    parser.add_argument("--first-test", type=int, default=5, help="instances before the first test (default: 5)")
    parser.add_argument("--each-test", type=int, default=1, help="instances between tests (default: 1)")
    parser.add_argument("--n-jobs", type=int, default=-1,
                        help="worker processes for the evaluations of a block (default: -1 = all CPUs; 1 = in process)")
    parser.add_argument("--seed", type=int, default=0, help="race seed: instance order and test streams (default: 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress line and no elimination log")
    return parser


# Race's arguments (and metadata keys) in a journal's refusal -> this command's options.
_OPTION_OF = {"metadata['maxiter']": "--maxiter", "metadata['seeds']": "--seeds",
              "random_state": "--seed", "first_test": "--first-test", "each_test": "--each-test",
              "candidates": "--candidates", "test": "--test"}


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    # Out-of-range options are refused, never clamped: a silently different race is worse.
    for option, value, low in (("--seeds", args.seeds, 1), ("--maxiter", args.maxiter, 1),
                               ("--budget", args.budget, 1)):
        if value < low:
            parser.error(f"{option} must be >= {low}; got {value}")
    n_settings = len(make_candidates())
    if args.candidates is not None and not 1 <= args.candidates <= n_settings:
        parser.error(f"--candidates must be between 1 and {n_settings}; got {args.candidates}")
    from racer import Race

    if not args.quiet:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    storage = None if args.storage.lower() == "none" else args.storage
    if storage is not None and args.fresh and os.path.exists(storage):
        # Open it as a journal first: that refuses a file that is not a racer journal (never
        # delete another application's data) and one that a live race still holds.
        from racer.storage import Journal, JournalInUseError

        try:
            Journal(storage).close()
        except (ValueError, OSError, JournalInUseError) as exc:
            sys.exit(f"error: --fresh will not delete {storage}: {exc}")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(storage + suffix):
                os.remove(storage + suffix)
    candidates = make_candidates()
    if args.candidates is not None:
        candidates = candidates[: args.candidates]
    instances = make_instances(args.seeds)
    try:
        race = Race(
            candidates,
            test=_make_test(args.test),
            direction="minimize",
            budget=args.budget,
            first_test=args.first_test,
            each_test=args.each_test,
            shuffle=True,
            random_state=args.seed,
            storage=storage,
            # The journal must not mix evaluations made under different settings.
            metadata={"maxiter": args.maxiter, "seeds": args.seeds, "objective": "log10(f - f* + 1e-12)"},
        )
    except (ValueError, OSError, RuntimeError) as exc:  # RuntimeError: JournalInUseError
        if storage is not None and "holds a race with other settings" in str(exc):
            # The journal names Race's arguments; this command's user knows its options.
            changes = str(exc).partition("\n")[2]
            for word, option in _OPTION_OF.items():
                changes = changes.replace(f"  {word}: ", f"  {option}: ")
            sys.exit(f"error: {storage} holds a race with other settings. To start over: add "
                     f"--fresh (or --storage another file). To continue it, undo these "
                     f"changes:\n{changes}")
        sys.exit(f"error: {exc}")
    start = time.perf_counter()
    try:
        # Run as a script, _Evaluate is __main__._Evaluate, which no worker can import by
        # name: racer sends it to the workers by value (cloudpickle).
        result = race.run(_Evaluate(args.maxiter), instances, n_jobs=args.n_jobs,
                          progress=not args.quiet)
    except ValueError as exc:  # e.g. --first-test beyond the instances, or a bad --n-jobs
        sys.exit(f"error: {exc}")
    elapsed = time.perf_counter() - start
    print(result.summary(max_rows=15))
    best = result.best
    print(
        f"\nWinner: strategy={best['strategy']}, mutation={best['mutation']}, "
        f"recombination={best['recombination']}, popsize={best['popsize']}"
    )
    where = f"; journal: {storage}" if storage else ""
    print(f"Wall time {elapsed:.1f} s{where}")
    return result


if __name__ == "__main__":
    main()
