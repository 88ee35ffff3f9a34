"""The engine's incremental statistics (racer/_race_stats.py) through whole races: a resumed
race decides exactly as an uninterrupted one, with the statistics-reading tests."""

from __future__ import annotations

import numpy as np
import pytest

from racer.racing.frace import FRaceTest
from racer.racing.bayesian import BayesianTest
from racer.engine import Race

from _helpers.races import tell_first

DATA = np.round(np.random.default_rng(11).normal(np.linspace(0, 1.2, 10), 1.0, size=(120, 10)), 1)
TESTS = {
    "bayes": lambda: BayesianTest(credibility=0.9, small_n="reject"),
    "bayes_idp": lambda: BayesianTest(credibility=0.9, small_n="montecarlo", prior="idp",
                                      n_samples=2000),
    "conover": lambda: FRaceTest(),
    "sign": lambda: FRaceTest(post_hoc="sign"),
}


def score(candidate, instance):
    return float(DATA[instance, candidate])


def new_race(name, **extra):
    return Race(list(range(10)), test=TESTS[name](), first_test=5, each_test=2,
                max_instances=120, random_state=9, **extra)


@pytest.mark.parametrize("name", sorted(TESTS))
@pytest.mark.parametrize("n_first", [37, 260])
def test_resumed_race_decides_as_an_uninterrupted_one(tmp_path, name, n_first):
    ref = new_race(name).run(score, range(120), progress=False)
    assert len(ref.history) >= 3  # survivors changed several times: re-ranking was exercised
    path = tmp_path / "race.sqlite"
    r = new_race(name, storage=path)
    r.add_instances(range(120))
    tell_first(r, n_first, score)
    resumed = new_race(name, storage=path).run(score, range(120), progress=False)
    assert resumed.history == ref.history  # same eliminations, steps and probabilities
    assert resumed.best_index == ref.best_index
    assert resumed.n_evaluations == ref.n_evaluations
