"""Small seeded races shared by several files."""

import numpy as np

NOISY_CANDIDATES = [{"mu": float(m), "id": i} for i, m in enumerate(np.linspace(0.0, 1.0, 8))]
"""8 candidates whose scores are their ``mu`` plus noise; larger is better."""


def noisy_score(c, inst):
    """``c["mu"]`` plus N(0, 0.5) noise fixed by (instance, candidate id)."""
    rng = np.random.default_rng([inst, c["id"]])
    return c["mu"] + rng.normal(0.0, 0.5)


def assert_same_decisions(got, expected):
    """Same eliminations; the probability behind each to 1e-12 relative.

    A test reaching its counts and rank sums incrementally and a fresh one in one batch must
    agree exactly on the decisions, but the probabilities are floats from batches of another
    shape (BLAS may sum in another order), so a few ulp of difference is not a disagreement.
    """
    assert [(e.index, e.reason, e.by) for e in got] == [(e.index, e.reason, e.by) for e in expected]
    np.testing.assert_allclose(
        [e.probability for e in got], [e.probability for e in expected], rtol=1e-12, atol=0
    )


def tell_first(race, n_first, evaluate):
    """Tell ``race`` its first ``n_first`` evaluations through ask/tell, then close it without
    finishing, as a crash would leave its journal; returns how many were told."""
    told = 0
    while told < n_first and not race.finished:
        for ev in race.ask():
            if told == n_first:
                break
            race.tell(ev, evaluate(ev.candidate, ev.instance))
            told += 1
    race.close()
    return told
