"""PosteriorBestTest: the racing test that drops the survivors least likely to be best."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import racer
from racer import PosteriorBestTest, Race, RaceView
from racer.stats import rank_posterior


def _view(scores, **kw):
    return RaceView.from_scores(np.asarray(scores, float), **kw)


def test_importable_from_racer_and_get_params():
    assert racer.PosteriorBestTest is PosteriorBestTest
    params = PosteriorBestTest(error_rate=0.05).get_params()
    assert params["error_rate"] == 0.05 and params["gamma_min"] == 0.001 and params["gamma_max"] == 0.2


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("budget_left", [None, 0, 400, 5000])
def test_eliminated_mass_within_step_level_and_set_is_largest(seed, budget_left):
    rng = np.random.default_rng(seed)
    m = 12
    x = rng.normal(np.linspace(0, 1.5, m), 1.0, size=(10, m))
    view = _view(x, budget_left=budget_left, each_test=5)
    test = PosteriorBestTest(loss_tol=None)  # the mass rule alone
    gamma = test.step_level(view)
    expected = 0.001 if budget_left is None else max(0.001, 0.2 / (1 + budget_left // (5 * m)))
    assert abs(gamma - expected) < 1e-15
    out = test.decide(view, np.random.default_rng(0))
    p = rank_posterior(x).prob_best
    gone = [e.index for e in out]
    mass = p[gone].sum() if gone else 0.0
    assert mass <= gamma + 1e-12
    leader = int(np.flatnonzero(p == p.max())[-1]) if out else int(np.argmax(p))
    assert leader not in gone and p[leader] == p.max()
    for e in out:
        assert e.reason == "dominated" and e.by == leader
        assert abs(e.probability - (1 - mass)) < 1e-9  # continuous scores: no guard
    # largest set: the least probable survivor kept would push the mass over gamma
    kept = [j for j in range(m) if j not in gone and j != leader]
    if kept:
        assert mass + p[kept].min() > gamma


def test_two_survivors_is_a_bayesian_paired_t():
    rng = np.random.default_rng(1)
    for shift in (0.1, 0.5, 1.0):
        x = rng.normal([shift, 0.0], 1.0, size=(15, 2))
        d = x[:, 0] - x[:, 1]
        post = stats.t(len(d) - 1, loc=d.mean(), scale=d.std(ddof=1) / math.sqrt(len(d)))
        p0 = post.sf(0.0)  # P(candidate 0 has the larger mean)
        out = PosteriorBestTest(loss_tol=None).decide(_view(x), np.random.default_rng(0))
        if max(p0, 1 - p0) >= 1 - 0.001:
            assert len(out) == 1
            assert abs(out[0].probability - max(p0, 1 - p0)) < 1e-9
            assert out[0].index == (1 if p0 > 0.5 else 0)
        else:
            assert out == []


def _coarse(rng, n, m):
    """Accuracies on small folds: binomial counts out of 20, many ties within a fold."""
    acc = rng.uniform(0.6, 0.95, size=m)
    return rng.binomial(20, acc, size=(n, m)) / 20.0


@pytest.mark.filterwarnings("ignore:PosteriorBestTest:RuntimeWarning")  # budget_left=0 views
@pytest.mark.parametrize("n", [2, 5, 9])
def test_coarse_ties_never_reach_0999_before_ten_instances(n):
    rng = np.random.default_rng(n)
    seen = 0
    for _ in range(60):
        x = _coarse(rng, n, 24)
        for budget_left in (None, 0):  # the most careful and the boldest level
            for e in PosteriorBestTest().decide(_view(x, budget_left=budget_left), rng):
                seen += 1
                assert e.probability < 0.999
    # the worst case: a perfectly consistent order with ties (zero residual variance)
    x = np.tile(np.repeat([0.9, 0.8, 0.7], 4), (n, 1))
    for e in PosteriorBestTest().decide(_view(x, budget_left=0), rng):
        seen += 1
        assert e.probability < 0.999
    assert seen > 0 or n == 2  # the guard limits, it does not silence the test


def test_coarse_ties_guard_releases_with_data():
    # a 12-0 record with ties elsewhere: the IDP sign lower probability is 1 - 2^-12
    x = np.tile([0.9, 0.9, 0.5], (12, 1))
    out = PosteriorBestTest().decide(_view(x), np.random.default_rng(0))
    assert [e.index for e in out] == [2]
    assert abs(out[0].probability - (1 - 2.0**-12)) < 1e-12
    # without the guard the zero residual variance claims certainty
    out = PosteriorBestTest(tie_guard=False).decide(_view(x[:5]), np.random.default_rng(0))
    assert [e.probability for e in out] == [1.0]


def test_guard_sees_a_single_tie_in_a_large_matrix():
    # one tie among 8 x 60 continuous scores is enough to switch the guard on
    rng = np.random.default_rng(3)
    x = rng.normal(np.r_[np.zeros(59), 1.5], 1.0, size=(8, 60))
    x[4, 1] = x[4, 0]
    view = _view(x, budget_left=0)  # gamma = 0.2
    out = PosteriorBestTest(loss_tol=None).decide(view, rng)  # the mass rule's guard
    unguarded = PosteriorBestTest(tie_guard=False, loss_tol=None).decide(view, rng)
    assert out and {e.index for e in out} < {e.index for e in unguarded}
    for e in out:
        wins = np.sum(x[:, e.by] > x[:, e.index])
        losses = np.sum(x[:, e.by] < x[:, e.index])
        lower = stats.beta.sf(0.5, wins, losses + 1)  # IDP s = 1 on the loser's side
        assert lower >= 0.8 and e.probability <= lower + 1e-12
    x[4, 1] += 1e-9  # no tie left: the guard is off
    view = _view(x, budget_left=0)
    assert PosteriorBestTest().decide(view, rng) == PosteriorBestTest(tie_guard=False).decide(view, rng)


def test_error_rate_levels_sum_to_at_most_alpha_over_any_race():
    alpha = 0.05
    test = PosteriorBestTest(error_rate=alpha)
    assert PosteriorBestTest().pair_level(_view(np.eye(3))) is None
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 3))
    for budget, instances, m0 in [(3000, 1500, 100), (None, 300, 10), (800, 1500, 30)]:
        # worst case for the sum: survivors fall to 2 at once, so the horizon stays long
        total, step, rows = 0.0, 1, 5
        spent = m0 * 5
        while True:
            view = RaceView(x, np.arange(3), budget_left=None if budget is None else budget - spent,
                            instances_left=instances - rows, each_test=5, n_candidates=m0, step=step)
            total += test.pair_level(view) * (m0 - 1)
            if (budget is not None and spent + 10 > budget) or rows + 5 > instances:
                break
            spent += 10
            rows += 5
            step += 1
        assert total <= alpha + 1e-12
        assert total > 0.5 * alpha  # the schedule does not waste most of alpha
    # no bound at all: 6 / (pi^2 t^2) sums to 1
    levels = [test.pair_level(RaceView(x, np.arange(3), step=t)) * 2 for t in range(1, 5000)]
    assert 0.99 * alpha < sum(levels) <= alpha


@pytest.mark.parametrize("seed", range(4))
def test_error_rate_protect_rank_eliminates_only_below_conovers_level(seed):
    rng = np.random.default_rng(seed)
    m = 15
    x = rng.normal(np.linspace(0, 3, m), 1.0, size=(30, m))
    view = _view(x, instances_left=100, each_test=5)
    bounded = PosteriorBestTest(error_rate=0.05, protect="rank", loss_tol=None)
    level = bounded.pair_level(view)
    out = bounded.decide(view, rng)
    free = PosteriorBestTest(loss_tol=None).decide(view, rng)
    assert {e.index for e in out} <= {e.index for e in free}
    assert len(out) > 0
    res = rank_posterior(x)
    for e in out:
        diff = (res.mean_ranks[e.by] - res.mean_ranks[e.index]) / (math.sqrt(2) * res.scale)
        assert stats.t.cdf(diff, res.df) <= level * (1 + 1e-9)


def test_warns_when_the_race_cannot_race():
    x = np.ones((40, 6))  # indistinguishable candidates: the first test eliminates nobody

    def run(budget):
        r = Race(range(6), test=PosteriorBestTest(), first_test=5, each_test=5,
                 budget=budget, random_state=0)
        return r.run(lambda c, i: float(x[i, c]), range(40))

    with pytest.warns(RuntimeWarning, match="uniform allocation"):
        run(6 * 5 + 29)  # the first block, and not one more
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(6 * 5 * 3)


def test_decisions_depend_only_on_the_view():
    rng = np.random.default_rng(7)
    x = rng.normal(np.linspace(0, 2, 20), 1.0, size=(15, 20))
    test = PosteriorBestTest()
    a = test.decide(_view(x, budget_left=300), np.random.default_rng(1))
    test.decide(_view(rng.normal(size=(30, 8))), np.random.default_rng(2))
    b = test.decide(_view(x, budget_left=300), np.random.default_rng(3))
    assert a == b and len(a) > 0


def test_validates_options():
    with pytest.raises(ValueError, match="gamma_max"):
        PosteriorBestTest(gamma_max=1.5)
    with pytest.raises(ValueError, match="gamma_min"):
        PosteriorBestTest(gamma_min=0.2, gamma_max=0.1)
    with pytest.raises(ValueError, match="error_rate"):
        PosteriorBestTest(error_rate=0.0)
    with pytest.raises(ValueError, match="spending"):
        PosteriorBestTest(spending=-1.0)
    with pytest.raises(TypeError, match="tie_guard"):
        PosteriorBestTest(tie_guard="yes")
    with pytest.raises(ValueError, match="loss_tol"):
        PosteriorBestTest(loss_tol=-0.1)
    with pytest.raises(ValueError, match="protect"):
        PosteriorBestTest(protect="median")
    with pytest.raises(ValueError, match="endgame"):
        PosteriorBestTest(endgame=1)
    with pytest.raises(ValueError, match="guard_level"):
        PosteriorBestTest(guard_level=1.0)
