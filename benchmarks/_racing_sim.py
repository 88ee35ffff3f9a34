"""Benavoli et al. (2015) §7.1 racing simulation: data, methods, one repetition on the real engine.

Reading I of the protocol (benchmarks/results/paper_racing.md): an iteration gives every survivor 5
new instances, a test follows every iteration, at most 300 iterations (1500 instances),
ITER = iterations used / 300. Every method of a repetition races on the same pre-generated
matrix, so differences between methods are paired.
"""

from __future__ import annotations

import time

import numpy as np

from racer.racing.frace import FRaceTest
from racer.racing.bayesian import BayesianTest
from racer._race_stats import RaceStats
from racer.racing.base import RaceView
from racer.engine import Race

SETTINGS = [(30, 1.0), (50, 1.0), (100, 1.0), (100, 0.5), (100, 0.1), (200, 0.1)]
PAPER = {  # Benavoli et al. (2015) Tables 2-3: (ITER, MAE) per method, and Bayesian # indistinguishable
    "bayes": [(0.63, 0.70), (0.72, 0.92), (0.75, 1.84), (0.67, 1.15), (0.36, 0.28), (0.50, 0.46)],
    "frace_s": [(0.67, 0.80), (0.80, 1.22), (0.84, 2.31), (0.74, 1.19), (0.36, 0.30), (0.51, 0.63)],
    "frace_mr": [(0.58, 0.77), (0.69, 1.15), (0.70, 2.05), (0.62, 1.26), (0.35, 0.30), (0.50, 0.58)],
}
PAPER_INDIST = [0.9, 1.7, 4.5, 3.1, 2.4, 2.7]
BLOCK = 5
MAX_ITERATIONS = 300


def make_methods(extra: dict | None = None) -> dict:
    """Name -> factory of a fresh RacingTest (caches are per race)."""
    methods = {
        "bayes": lambda: BayesianTest(),
        "frace_s": lambda: FRaceTest(post_hoc="sign"),
        "frace_mr": lambda: FRaceTest(post_hoc="mean_ranks"),
        "frace_conover": lambda: FRaceTest(post_hoc="conover"),
    }
    variants = {
        # pilot variants of the Bayesian race (options of BayesianTest); "bayes" is the default
        "bayes_all": dict(statements="all"),
        "bayes_all_c95": dict(statements="all", credibility=0.95),
        "bayes_all_c98": dict(statements="all", credibility=0.98),
        "bayes_all_idp": dict(statements="all", prior="idp"),
        "bayes_c95": dict(credibility=0.95),
        "bayes_c99": dict(credibility=0.99),
        "bayes_c98": dict(credibility=0.98),
        "bayes_c97": dict(credibility=0.97),
        "bayes_idp": dict(prior="idp"),
        "bayes_gate2": dict(gate_two=True),
        "bayes_reject": dict(small_n="reject"),
        "bayes_chi2": dict(small_n="chi2"),
        "bayes_mc": dict(small_n="montecarlo"),
        "bayes_nogate_ind": dict(gate_indistinguishable=False),
        "bayes_c95_g2": dict(credibility=0.95, gate_two=True),  # variant C of the notes
        "bayes_pl": dict(statements="per_loser"),
        "bayes_pl_c98": dict(statements="per_loser", credibility=0.98),
        "bayes_pl_c99": dict(statements="per_loser", credibility=0.99),
    }
    for name, kw in variants.items():
        methods[name] = (lambda kw=kw: BayesianTest(**kw))
    if extra:
        methods.update(extra)
    return methods


def data_seed(q, rho, rep):
    return [2015, q, int(round(1000 * rho)), rep]


def make_data(q, rho, rep):
    """True means mu ~ U(0, 1) and a (1500, q) matrix of N(mu, rho^2) scores."""
    rng = np.random.default_rng(data_seed(q, rho, rep))
    mu = rng.uniform(0.0, 1.0, size=q)
    scores = mu + rho * rng.standard_normal((BLOCK * MAX_ITERATIONS, q))
    return mu, scores


def race_seed(q, rho, rep):
    """Seed of the race (the engine gives the test at step k default_rng([seed, k]))."""
    return int(np.random.SeedSequence([7, q, int(round(1000 * rho)), rep]).generate_state(1)[0])


def run_engine(test, scores, seed):
    """Drive racer.Race by ask/tell on a pre-generated matrix; return the RaceResult."""
    n_rows, q = scores.shape
    # winner="mean": the paper's rule for every method (a test's own rule, e.g. FRaceTest's
    # irace rank sum, would make the methods' winners incomparable).
    race = Race(
        range(q), test=test, first_test=BLOCK, each_test=BLOCK, max_instances=n_rows,
        instances=range(n_rows), random_state=seed, winner="mean", direction="maximize"
    )
    return race_on_matrix(race, scores)


def race_on_matrix(race, scores):
    """Run ``race`` (instances = row indices) to its end on a pre-generated score matrix."""
    while not race.finished:
        batch = race.ask()
        if not batch:
            break
        for ev in batch:
            race.tell(ev, float(scores[ev.instance, ev.candidate]))
    return race.result()


def one_repetition(args):
    """Race every method on the data of (q, rho, rep); return one dict per method."""
    q, rho, rep, method_names = args[:4]
    driver = args[4] if len(args) > 4 else "engine"
    run = run_engine if driver == "engine" else run_loop
    methods = make_methods()
    mu, scores = make_data(q, rho, rep)
    true_rank = np.empty(q, dtype=np.int64)
    true_rank[np.argsort(-mu, kind="stable")] = np.arange(1, q + 1)
    best = int(np.argmax(mu))
    seed = race_seed(q, rho, rep)
    rows = []
    for name in method_names:
        t0 = time.perf_counter()
        res = run(methods[name](), scores, seed)
        elapsed = time.perf_counter() - t0
        n_tests = max(1, res.n_instances // BLOCK)
        indist = [h for h in res.history if h.reason == "indistinguishable"]
        # A pair declared indistinguishable is "truly" so when |mu_i - mu_j| maps to a true
        # theta = Phi(dmu / (rho sqrt 2)) inside (1/2 - eps, 1/2 + eps) with eps = 0.05.
        from scipy.stats import norm

        true_theta = [
            norm.cdf((mu[h.candidate_index] - mu[h.by_index]) / (rho * np.sqrt(2))) for h in indist
        ]
        rows.append(
            dict(
                q=q, rho=rho, rep=rep, method=name, driver=driver,
                data_seed="-".join(map(str, data_seed(q, rho, rep))), race_seed=seed,
                iterations=res.n_instances // BLOCK,
                iter=res.n_instances / (BLOCK * MAX_ITERATIONS),
                evaluations=res.n_evaluations,
                winner=res.best_index,
                mae=int(true_rank[res.best_index] - 1),
                best_eliminated=int(best not in set(res.survivor_indices.tolist())),
                n_indist=len(indist),
                n_indist_true=int(sum(abs(t - 0.5) < 0.05 for t in true_theta)),
                n_survivors=len(res.survivor_indices),
                seconds=elapsed,
                ms_per_test=1000.0 * elapsed / n_tests,
            )
        )
    return rows


class LoopResult:
    """The few RaceResult fields the benchmark reads, from :func:`run_loop`."""

    def __init__(self, best_index, survivor_indices, n_instances, n_evaluations, history):
        self.best_index = best_index
        self.survivor_indices = survivor_indices
        self.n_instances = n_instances
        self.n_evaluations = n_evaluations
        self.history = history


class _Record:
    def __init__(self, candidate_index, by_index, reason):
        self.candidate_index, self.by_index, self.reason = candidate_index, by_index, reason


def run_loop(test, scores, seed):
    """The engine's semantics without its per-evaluation bookkeeping (for pilot sweeps).

    Same schedule (first test after 5 instances, then every 5), same streams
    (``default_rng([seed, step])`` at step k), same winner rule (best mean over all instances,
    ties to the earlier candidate). ``tests/racing/test_bayesian_test.py`` checks it races exactly
    like ``racer.Race`` on a few matrices.
    """
    n_rows, q = scores.shape
    alive = np.arange(q)
    stats = RaceStats(q)
    history = []
    evaluations = 0
    rows = 0
    step = 0
    while rows < n_rows and len(alive) > 1:
        evaluations += BLOCK * len(alive)
        rows += BLOCK
        step += 1
        # The engine's incremental statistics, as racer.Race lends them.
        view = RaceView(scores[:rows, alive], alive, instances_left=n_rows - rows,
                        each_test=BLOCK, n_candidates=q, step=step, stats=stats)
        decisions = test.decide(view, np.random.default_rng([seed, step]))
        if decisions:
            stats.survivors_changed()
            gone = np.zeros(len(alive), dtype=bool)
            for e in decisions:
                gone[e.index] = True
                history.append(_Record(int(alive[e.index]), int(alive[e.by]), e.reason))
            alive = alive[~gone]
    means = scores[:rows, alive].mean(axis=0)
    best = int(alive[np.lexsort((np.arange(len(alive)), -means))[0]])
    return LoopResult(best, alive, rows, evaluations, history)
