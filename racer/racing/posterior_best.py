"""PosteriorBestTest: eliminate the survivors that are least likely to be the best.

At every step the test computes, for each survivor, the posterior probability that it is the
best -- from the posterior of the mean within-instance ranks
(:func:`racer.stats.rank_posterior`: the normal approximation of Benavoli et al.'s (2015) Bayesian
Friedman posterior with Conover's pooled variance and Student tails) -- and removes the largest set of
least probable survivors whose probabilities sum to at most ``gamma`` at this step: the
posterior probability that the best leaves at this step is at most ``gamma``. With two
survivors the posterior is a Bayesian paired t on the raw score differences.

``gamma`` is budget-aware: ``max(gamma_min, gamma_max / (1 + blocks still affordable))``, so
the race is bold when few blocks remain (an elimination then buys evaluations for the rest)
and careful when many do. Among the last few survivors an expected-loss stop
(``loss_tol``) drops those whose possible gain in mean over the best mean is negligible, so
near-tied survivors are not raced to the end. With ``error_rate=alpha`` an elimination also
needs a paired t against some survivor below a level spent over the whole race, which bounds
the probability of ever eliminating the best mean by ``alpha`` (see
:class:`PosteriorBestTest`). The design, the alternatives that were measured and the pilot
evidence for the defaults are in ``docs/racing-tests.md``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from racer._validation import (check_bool, check_int, check_nonnegative, check_option,
                                check_probability)
from racer.racing.base import Elimination, RacingTest
from racer.stats import rank_posterior_from_sums

__all__ = ["PosteriorBestTest", "OPTIONS_BEFORE_ISSUE_20"]

#: ``PosteriorBestTest(**OPTIONS_BEFORE_ISSUE_20)`` decides as the default test did before
#: its endgame stop (no endgame stop, the guard at ``1 - gamma``, ``error_rate`` on the best mean
#: rank). Tests built on it (``HierarchicalRacingTest``'s ``base``) keep their decisions.
OPTIONS_BEFORE_ISSUE_20 = {"loss_tol": None, "protect": "rank", "guard_level": 0.0}

#: Default of ``loss_tol`` (chosen on the frontier's pilot families and seeds; see the class).
LOSS_TOL = 0.01
#: Default of ``endgame``: the most survivors among which the expected-loss rule acts.
ENDGAME = 5
#: Default of ``guard_level``: the least level of the coarse-score guard's sign test.
GUARD_LEVEL = 0.05

#: Prior strength of the imprecise (IDP) sign-test guard: one pseudo-instance on the loser's
#: side, Benavoli et al.'s (2015) s = 1. A record of n wins and no loss then has lower probability
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
        Bound on the probability that the race eliminates the best candidate -- the one with
        the best **mean** score, the candidate the engine's ``"mean"`` winner rule is after
        (``protect="mean"``) -- over the whole race (every step counted), for any
        configuration of true means: a frequentist guarantee, not only a posterior statement.
        Step ``t`` gets ``alpha_t = error_rate * t^-a / sum_{s <= H_t} s^-a``
        (``a = spending``), where ``H_t`` = ``t`` + the most further steps the race could
        still run (instances left, or budget left paying two survivors per block); ``H_t``
        can only shrink from step to step and always covers the steps actually run, so the
        ``alpha_t`` of all steps sum to at most ``error_rate`` (with neither a budget nor an
        instance bound, ``alpha_t = 6 error_rate / (pi^2 t^2)``). A candidate is then
        eliminated (by any rule) only if, in addition, some survivor beats it in mean with
        posterior probability at least ``1 - alpha_t / (n_candidates - 1)``. Under the flat
        prior that pairwise posterior is the one-sided p-value of the paired t test, so the
        best, which cannot be truly worse than any other candidate,
        falls below it at a step with probability at most ``alpha_t`` (union over its
        ``n - 1`` rivals) and over the race with probability at most ``error_rate`` -- as far
        as the paired t's level holds for the score distribution (its central limit
        approximation; measured on skewed and heavy-tailed families in
        ``docs/racing-tests.md``). The posterior mass alone does not give this: measured, its
        sum over steps underestimates the rate of losing the best several-fold.
    protect : {"mean", "rank"}, default "mean"
        Which best ``error_rate`` protects. ``"rank"`` (the earlier behaviour) protects
        the best mean **rank** with Conover's t on the mean ranks (with three or more
        survivors; with two, the paired t on the scores): when a candidate's mean and
        typical rank disagree (rare large wins, crashes scored as penalties), the best mean
        can then be lost far more often than ``error_rate`` (0.75 +/- 0.13 of races at
        ``error_rate=0.05`` in the frontier's ``reversal`` family, fresh seeds). Without ``error_rate``
        this option changes nothing.
    spending : float >= 0, default 0.5
        Exponent ``a`` of that schedule: 0 spends evenly over the horizon, larger values
        spend more early.
    tie_guard : bool, default True
        When the survivors' scores tie on some instance (coarse scores, e.g. accuracies on
        small folds), the continuous rank model may claim certainty that the data cannot give.
        Each candidate is then also required to lose to the leader under the imprecise
        (IDP, s = 1) Bayesian sign test at level ``max(gamma, guard_level)``, and the reported
        probability is the lower of the two: near-certainty has to come from instances (a
        5-0 record gives 0.969, 9-0 gives 0.998).
    guard_level : float in [0, 1), default 0.05
        The least level of that guard. At 0 the guard asks for ``1 - gamma``, i.e. 0.999
        sign-test certainty in an unbudgeted race (ten straight wins over the leader's
        closest rivals), which on coarse or crash-tied scores kept twice Conover's
        evaluations in the early race; 0.05 asks for what a 5-0 record gives. It trades
        evaluations for the guard's caution in unbudgeted and loosely budgeted races; where
        the budget binds, ``gamma`` is above 0.05 and nothing changes. The guard still caps
        every reported probability.
    loss_tol : float >= 0 or None, default 0.01
        The endgame stop (expected loss), in races without a budget (``budget_left`` None;
        with one, the evaluations are paid for and stopping early would only leave them
        unspent -- measured, it spent 0.4-0.6x the budget at 30q): once at most ``endgame``
        survivors remain, a survivor goes (``"indistinguishable"``, by the survivor with the
        best mean) when the posterior expected amount by which its mean beats the best mean,
        ``E[max(mu_j - mu_best, 0)]`` under the Bayesian paired t, is at most ``loss_tol``
        standard deviations of their per-instance difference: keeping it could gain so little
        that racing on to tell them apart is not worth the evaluations. An exact tie goes
        after about ``(0.4 / loss_tol)^2`` instances; a rival behind by ``z`` posterior
        standard deviations goes sooner. The tolerance is relative to the instance spread
        of the difference, not to the gaps between candidates: larger values save more
        evaluations among near-tied survivors and lose more ranks in fields whose good
        candidates are dense. None: no endgame stop (the behaviour before it).
    endgame : int >= 2, default 5
        The most survivors among which ``loss_tol`` acts. With many survivors the leader's
        lead is inflated by selection (the best of many noisy means) and the per-pair
        posterior would drop the best early: measured on the pilot, applying the rule at
        every step lost the true best in 50-100% of unbudgeted races.

    Notes
    -----
    The mass rule's eliminations are ``"dominated"`` by the survivor most likely to be best,
    with ``probability`` = the posterior probability that no candidate eliminated at this
    step is the best (``1 - `` their summed probability of being best), capped by the guard.
    The endgame's are ``"indistinguishable"``, with ``probability`` = the posterior
    probability that the best-mean survivor is at least as good (capped by the guard).

    Defaults were chosen on the pilot seeds of ``benchmarks/frontier.py`` (repetitions 0-15
    of seven families) and reported on fresh seeds (``docs/racing-tests.md``).
    ``PosteriorBestTest(loss_tol=None, protect="rank", guard_level=0.0)`` is the test as it
    was before the endgame stop, decision for decision.

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

    elimination_statistic = "posterior probability"

    gamma_max: float = 0.2
    gamma_min: float = 0.001
    error_rate: float | None = None
    spending: float = 0.5
    tie_guard: bool = True
    loss_tol: float | None = LOSS_TOL
    protect: str = "mean"
    endgame: int = ENDGAME
    guard_level: float = GUARD_LEVEL

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
        if self.loss_tol is not None:
            self.loss_tol = check_nonnegative(self.loss_tol, "loss_tol")
        self.protect = check_option(self.protect, "protect", ("mean", "rank"))
        self.endgame = check_int(self.endgame, "endgame", minimum=2)
        self.guard_level = check_probability(self.guard_level, "guard_level", open_left=False)

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
        if view.budget_left is None:
            # With a budget the evaluations are paid for: racing on can only help the pick,
            # so the stop is for races without one (bounded by instances or by nothing).
            out += self._endgame(scores, {e.index for e in out}, pair)
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
            cand = cand[cap[cand] >= 1.0 - max(gamma, self.guard_level)]
        if pair is not None:
            if self.protect == "rank":
                # posterior P(mean rank of j < the leader's): Conover's one-sided t
                cand = cand[post.prob_better(cand, leader) <= pair]
            else:
                # j goes only if some survivor beats it in mean: a paired t per pair, so
                # it holds with candidate-specific noise and whatever the ranks say.
                cand = cand[_beaten_in_mean(view.scores, cand) <= pair]
        mass = np.cumsum(p[cand])
        k = int(np.searchsorted(mass, gamma, side="right"))
        if k == 0:
            return []
        gone = cand[:k]
        joint = 1.0 - float(mass[k - 1])
        return [
            Elimination(int(j), "dominated", leader, min(joint, float(cap[j]))) for j in gone
        ]

    def _endgame(self, scores, gone, pair):
        """The expected-loss stop (``loss_tol``): among the survivors this step keeps, drop
        every one whose posterior expected gain in mean score over the best mean is at most
        ``loss_tol`` standard deviations of their per-instance difference."""
        if self.loss_tol is None:
            return []
        from racer.stats import bayesian_correlated_ttest_from_moments  # scipy.stats: on use

        n, m = scores.shape
        # Only among a few survivors: with many, the leader's lead is inflated by selection
        # (the best of many noisy means) and a per-pair posterior drops the best early.
        if not 2 <= m - len(gone) <= self.endgame or n < 3:  # df > 1 for the positive part
            return []
        keep = np.setdiff1d(np.arange(m), np.fromiter(gone, dtype=np.int64, count=len(gone)))
        x = scores[:, keep]
        means = x.mean(axis=0)
        lead = int(np.argmax(means))  # the engine's pick among them ("mean" winner rule)
        others = np.delete(np.arange(keep.size), lead)
        d = x[:, others] - x[:, [lead]]
        var = d.var(axis=0, ddof=1)
        post = bayesian_correlated_ttest_from_moments(d.mean(axis=0), var, n, 0.0)
        gain = _expected_positive_part(post.mean, post.scale, post.df)
        # Identical differences on every instance (coarse scores) carry no spread to measure
        # the gain against: such a pair is left to the mass rule and its guard.
        ok = var > 0.0
        if pair is not None:
            ok &= _beaten_in_mean(x, others) <= pair
        ok &= gain <= self.loss_tol * np.sqrt(var)
        gone_cols = others[ok]
        prob = 1.0 - post.prob_positive[ok]
        if self.tie_guard and gone_cols.size and _has_ties(x):
            # coarse scores: the reported certainty is capped as the mass rule's is
            lead_wins = np.count_nonzero(d[:, ok] < 0.0, axis=0)
            lose_wins = np.count_nonzero(d[:, ok] > 0.0, axis=0)
            prob = np.minimum(prob, _guard(lead_wins, lose_wins))
        leader = int(keep[lead])
        return [
            Elimination(int(keep[j]), "indistinguishable", leader, float(pr))
            for j, pr in zip(gone_cols, prob)
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
    sits on the candidate's side (Benavoli et al. 2015, section 7; ties drop out)."""
    # Lazy: the sign-test module brings Numba, which ``import racer`` should not pay for.
    from racer.stats.bayesian_sign import prob_greater_from_counts

    return prob_greater_from_counts(lead_wins, np.asarray(lose_wins) + _GUARD_STRENGTH)


def _has_ties(scores):
    """Whether two survivors' scores tie on some instance (the guard's condition)."""
    return bool(np.any(np.diff(np.sort(scores, axis=1), axis=1) == 0.0))


def _beaten_in_mean(scores, cand):
    """For each ``cand`` column, the smallest over the other survivors ``k`` of the posterior
    P(mean of the column > mean of k): the Bayesian paired t (flat prior), i.e. the one-sided
    p-value of the paired t test that k is better. All pairs at once from the covariance."""
    from racer.stats import bayesian_correlated_ttest_from_moments  # scipy.stats: on use

    n, m = scores.shape
    means = scores.mean(axis=0)
    cov = np.atleast_2d(np.cov(scores, rowvar=False, ddof=1))
    var_d = np.diag(cov)[cand, None] + np.diag(cov)[None, :] - 2.0 * cov[cand, :]
    gap = means[cand, None] - means[None, :]
    prob = bayesian_correlated_ttest_from_moments(
        gap, np.maximum(var_d, 0.0), n, 0.0).prob_positive
    prob[np.arange(len(cand)), cand] = 1.0  # not against itself
    return prob.min(axis=1)


def _expected_positive_part(loc, scale, df):
    """E[max(X, 0)] for X = loc + scale * T_df (df > 1), elementwise; scale 0: max(loc, 0).

    With z = loc / scale: ``loc F(z) + scale (df + z^2) / (df - 1) f(z)``, F and f the
    Student cdf and density (E[T; T > -z] = (df + z^2) f(z) / (df - 1)).
    """
    from scipy import stats  # on use, as the t posterior itself

    loc = np.asarray(loc, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = loc / scale
        out = loc * stats.t.cdf(z, df) + scale * (df + z * z) / (df - 1.0) * stats.t.pdf(z, df)
    return np.where(scale > 0.0, out, np.maximum(loc, 0.0))


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
