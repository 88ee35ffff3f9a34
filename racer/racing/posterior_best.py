"""PosteriorBestTest: eliminate the survivors that are least likely to be the best.

At every step the test computes, for each survivor, the posterior probability that it is the
best -- from the posterior of the mean within-instance ranks
(:func:`racer.stats.rank_posterior`: the normal approximation of seed 002's Bayesian Friedman
posterior with Conover's pooled variance and Student tails) -- and removes the largest set of
least probable survivors whose probabilities sum to at most ``gamma`` at this step: the
posterior probability that the best leaves at this step is at most ``gamma``. With two
survivors the posterior is a Bayesian paired t on the raw score differences.

``gamma`` is budget-aware: ``max(gamma_min, gamma_max / (1 + blocks still affordable))``, so
the race is bold when few blocks remain (an elimination then buys evaluations for the rest)
and careful when many do. With ``error_rate=alpha`` an elimination also needs the pairwise
posterior against the leader below a level spent over the whole race, which bounds the
probability of ever eliminating the best by ``alpha`` (see :class:`PosteriorBestTest`). The design, the alternatives that were measured and the pilot
evidence for the defaults are in ``docs/racing-tests.md``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from racer._validation import check_bool, check_nonnegative, check_probability
from racer.racing.base import Elimination, RacingTest
from racer.stats import rank_posterior_from_sums

__all__ = ["PosteriorBestTest"]

#: Prior strength of the imprecise (IDP) sign-test guard: one pseudo-instance on the loser's
#: side, seed 002's s = 1. A record of n wins and no loss then has lower probability
#: 1 - 2^-n, so no elimination reaches 0.999 before 10 instances.
_GUARD_STRENGTH = 1.0


@dataclasses.dataclass(eq=False)
class PosteriorBestTest(RacingTest):
    """Bayesian racing test: drop the survivors whose summed probability of being best is small.

    Parameters
    ----------
    gamma_max, gamma_min : float in (0, 1), default 0.2 and 0.001
        The per-step level is ``gamma = max(gamma_min, gamma_max / (1 + b))`` with ``b`` the
        blocks the race can still afford with the current survivors
        (``RaceView.blocks_affordable()``; ``gamma_min`` when nothing bounds the race). Chosen
        on pilot seeds (``docs/racing-tests.md``).
    error_rate : float in (0, 1) or None, default None
        Bound on the probability that the race eliminates the best candidate, over the whole
        race (every step counted), for any configuration of true means -- a frequentist
        guarantee, not only a posterior statement. Step ``t`` gets ``alpha_t = error_rate *
        t^-a / sum_{s <= H_t} s^-a`` (``a = spending``), where ``H_t`` = ``t`` + the most
        further steps the race could still run (instances left, or budget left paying two
        survivors per block); ``H_t`` can only shrink from step to step and always covers the
        steps actually run, so the ``alpha_t`` of all steps sum to at most ``error_rate``
        (with neither a budget nor an instance bound, ``alpha_t = 6 error_rate / (pi^2 t^2)``).
        A candidate is then eliminated only if, in addition, the posterior probability that it
        beats the leader is at most ``alpha_t / (n_candidates - 1)``. Under the flat prior
        that pairwise posterior is the one-sided p-value of Conover's t (two survivors: of the
        paired t), so the best, which cannot be truly worse than any other candidate, falls
        below it at a step with probability at most ``alpha_t`` (union over its ``n - 1``
        rivals) and over the race with probability at most ``error_rate``. The posterior
        mass alone does not give this: measured, its sum over steps underestimates the rate
        of losing the best several-fold (``docs/racing-tests.md``).
    spending : float >= 0, default 0.5
        Exponent ``a`` of that schedule: 0 spends evenly over the horizon, larger values
        spend more early.
    tie_guard : bool, default True
        When the survivors' scores tie on some instance (coarse scores, e.g. accuracies on
        small folds), the continuous rank model may claim certainty that the data cannot give.
        Each candidate is then also required to lose to the leader under the imprecise
        (IDP, s = 1) Bayesian sign test at the same level, and the reported probability is
        the lower of the two: near-certainty has to come from instances (a 5-0 record gives
        0.969, 9-0 gives 0.998).

    Notes
    -----
    Every elimination is ``"dominated"`` by the survivor most likely to be best, with
    ``probability`` = the posterior probability that no candidate eliminated at this step is
    the best (``1 - `` their summed probability of being best), capped by the guard.

    The engine refuses a budget that cannot pay for the first block; when the first test is
    also the last one the race can pay for and it eliminates nobody, the test warns
    (``RuntimeWarning``): the race is then uniform allocation, not racing.

    Examples
    --------
    >>> import numpy as np
    >>> from racer import PosteriorBestTest, RaceView
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal([0.0, 0.1, 1.5, 1.6], 1.0, size=(20, 4))
    >>> out = PosteriorBestTest().decide(RaceView.from_scores(scores), rng)
    >>> sorted(e.index for e in out), {e.reason for e in out}
    ([0, 1], {'dominated'})
    """

    gamma_max: float = 0.2
    gamma_min: float = 0.001
    error_rate: float | None = None
    spending: float = 0.5
    tie_guard: bool = True

    def __post_init__(self):
        self.gamma_max = check_probability(self.gamma_max, "gamma_max")
        self.gamma_min = check_probability(self.gamma_min, "gamma_min")
        if self.gamma_min > self.gamma_max:
            raise ValueError(
                f"`gamma_min`={self.gamma_min} must not exceed `gamma_max`={self.gamma_max}"
            )
        if self.error_rate is not None:
            self.error_rate = check_probability(self.error_rate, "error_rate")
        self.spending = check_nonnegative(self.spending, "spending")
        self.tie_guard = check_bool(self.tie_guard, "tie_guard")

    # -- the level of one step -------------------------------------------------------------

    def step_level(self, view) -> float:
        """The most posterior probability of losing the best that this step may spend."""
        blocks = view.blocks_affordable()
        gamma = self.gamma_min if blocks is None else max(
            self.gamma_min, self.gamma_max / (1.0 + blocks)
        )
        return gamma

    def pair_level(self, view) -> float | None:
        """With ``error_rate``: the most posterior probability of beating the leader that an
        eliminated candidate may have at this step (None without ``error_rate``)."""
        if self.error_rate is None:
            return None
        rivals = max(view.n_candidates - 1, 1)
        return self.error_rate * _spending_weight(view, self.spending) / rivals

    # -- the decision ----------------------------------------------------------------------

    def decide(self, view, rng) -> list[Elimination]:
        scores = view.scores
        n, m = scores.shape
        if m < 2 or n < 2:
            return []
        gamma = self.step_level(view)
        pair = self.pair_level(view)
        if m == 2:
            out = self._two(scores, gamma, pair)
        else:
            out = self._many(view, gamma, pair)
        if view.step == 1 and not out:
            self._warn_if_degenerate(view, gamma)
        return out

    def _two(self, scores, gamma, pair):
        from racer.stats import bayesian_correlated_ttest_from_moments  # scipy.stats: on use

        d = scores[:, 0] - scores[:, 1]
        n = d.shape[0]
        # Bayesian paired t (flat prior on the mean, 1/sigma on the sd): mu_d ~ t_{n-1}, the
        # correlated t posterior with independent instances (test_fraction 0).
        p0 = bayesian_correlated_ttest_from_moments(
            float(d.mean()), float(d.var(ddof=1)), n, 0.0).prob_positive  # P(0 is better)
        leader = 0 if p0 >= 0.5 else 1
        loser = 1 - leader
        prob = max(p0, 1.0 - p0)
        if self.tie_guard and bool(np.any(d == 0.0)):
            lead_wins = int(np.count_nonzero(d > 0 if leader == 0 else d < 0))
            lose_wins = int(np.count_nonzero(d < 0 if leader == 0 else d > 0))
            prob = min(prob, _guard(lead_wins, lose_wins))
        if prob >= 1.0 - gamma and (pair is None or 1.0 - max(p0, 1.0 - p0) <= pair):
            return [Elimination(loser, "dominated", leader, prob)]
        return []

    def _many(self, view, gamma, pair):
        n, m = view.scores.shape
        # engine-maintained sums (new rows only between steps): the posterior needs no more
        rank_sums = view.rank_sums
        sum_sq = float(view.rank_sq_sums.sum())
        post = rank_posterior_from_sums(rank_sums, sum_sq, n)
        loc, p = post.mean_ranks, post.prob_best
        # Least probable first; equal probabilities: the worse mean rank first.
        order = np.lexsort((-loc, p))
        leader = int(order[-1])
        cand = order[:-1]
        cap = np.ones(m)
        # Without ties sum r^2 is exactly n m(m+1)(2m+1)/6; a tie group's averaged ranks
        # lower it by at least 1/2 (ranks are multiples of 1/2, so the sums are exact).
        tied = sum_sq < n * m * (m + 1) * (2 * m + 1) / 6.0 - 0.25
        if self.tie_guard and tied:
            x = view.scores
            lead = x[:, leader][:, None]
            lead_wins = np.count_nonzero(lead > x, axis=0)
            lose_wins = np.count_nonzero(lead < x, axis=0)
            cap = _guard(lead_wins, lose_wins)
            cand = cand[cap[cand] >= 1.0 - gamma]
        if pair is not None:
            # posterior P(mean rank of j < the leader's): Conover's one-sided t
            cand = cand[post.prob_better(cand, leader) <= pair]
        mass = np.cumsum(p[cand])
        k = int(np.searchsorted(mass, gamma, side="right"))
        if k == 0:
            return []
        gone = cand[:k]
        joint = 1.0 - float(mass[k - 1])
        return [
            Elimination(int(j), "dominated", leader, min(joint, float(cap[j]))) for j in gone
        ]

    def _warn_if_degenerate(self, view, gamma):
        """Warn when the first test eliminated nobody and the race cannot pay for another."""
        if view.blocks_affordable() != 0:
            return
        warnings.warn(
            f"{type(self).__name__}: the first test (n={view.n_instances}, gamma={gamma:.3g}) "
            f"eliminated nobody and the race cannot pay for another block of "
            f"{view.each_test} instance(s) for its {view.n_survivors} survivors "
            f"(budget_left={view.budget_left}, instances_left={view.instances_left}): this "
            "race is uniform allocation, not racing. Raise the budget or lower first_test.",
            RuntimeWarning,
            stacklevel=3,
        )


def _guard(lead_wins, lose_wins):
    """IDP (s = 1) lower probability that the leader beats a candidate: the pseudo-instance
    sits on the candidate's side (seed 002, section 7; ties drop out)."""
    # Lazy: the sign-test module brings Numba, which ``import racer`` should not pay for.
    from racer.stats.bayesian_sign import prob_greater_from_counts

    return prob_greater_from_counts(lead_wins, np.asarray(lose_wins) + _GUARD_STRENGTH)


def _spending_weight(view, a):
    """Share of the race-level error rate that step ``view.step`` may spend (see the class)."""
    t = view.step
    bounds = []
    e = view.each_test
    if view.instances_left is not None:
        bounds.append(view.instances_left // e)
    if view.budget_left is not None:
        bounds.append(view.budget_left // (2 * e))
    if not bounds:
        return 6.0 / (math.pi**2 * t * t)
    horizon = t + min(bounds)
    s = np.arange(1, horizon + 1, dtype=np.float64)
    return float(t**-a / np.sum(s**-a))
