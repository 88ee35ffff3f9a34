"""Racing tests for cross-validation scores, and the wrappers RaceSearchCV builds around them.

Scores of one candidate on k-fold CV splits are correlated (the training sets overlap), and
scores on small test folds are coarse. :class:`CorrelatedTTestRacing` races with the Bayesian
correlated t-test of Corani & Benavoli (2015); the wrappers make any rank test treat scores
closer than a ROPE as tied (:class:`ScoreResolution`), let the first test on two splits act
only on a clear margin (:class:`EarlyMargin`), keep equivalence eliminations only where
the imprecise Dirichlet process still supports them (:class:`ImpreciseEquivalence`), and cap
how many candidates a halving schedule keeps (:class:`HalvingFloor`). None of them needs
scikit-learn: :class:`racer.adapters.sklearn.RaceSearchCV` composes them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from racer._validation import check_nonnegative, check_probability
from racer.racing.base import Elimination, RacingTest, check_view

__all__ = ["CorrelatedTTestRacing", "EarlyMargin", "HalvingFloor", "ImpreciseEquivalence",
           "ScoreResolution"]



class ScoreResolution(RacingTest):
    """Wraps a rank-based test so that scores closer than ``rope`` count as tied.

    Scores are rounded to multiples of ``rope`` before the inner test sees them: two
    candidates whose scores on a split fall in the same cell are tied on that split, which the
    sign and rank tests count as one half each way. This is a resolution rather than a
    pairwise ROPE (two scores ``rope/10`` apart can straddle a cell edge), chosen because a
    RacingTest only sees the score matrix, not pairwise differences.
    """

    elimination_statistic = None  # the wrapped test's

    def __init__(self, inner: RacingTest, rope: float):
        self.inner = inner
        self.rope = rope

    def decide(self, view, rng):
        snapped = np.round(view.scores / self.rope) * self.rope
        return self.inner.decide(view.with_scores(snapped), rng)

    def get_params(self) -> dict[str, Any]:
        inner = {f"inner__{k}": v for k, v in self.inner.get_params().items()}
        return {"inner": type(self.inner).__name__, "rope": self.rope, **inner}


class EarlyMargin(RacingTest):
    """Keeps an inner test's eliminations made on fewer than ``below`` splits only where the
    candidate that eliminates (``by``) is ahead by more than ``margin`` on every split seen.

    irace's t-test (:class:`racer.racing.trace.TRaceTest`) eliminates, whatever its level,
    a candidate that the leader beats *or ties* on every instance seen. On two folds of coarse
    scores (accuracy in steps of ``1/n_test`` on a small data set) that rule removes
    candidates that trail by one tie and one step, and such a candidate is sometimes the one
    ``GridSearchCV`` picks after five folds (``iris-knn`` was 2.06 SE worse than the
    grid). Before ``below`` splits a tie or a one-cell difference (``margin`` is the score
    resolution, ``rope``) is therefore not enough; from ``below`` splits on the inner test
    decides alone. ``by`` is the leader for the t-test, so the condition is "the leader
    is ahead of it by more than ``margin`` on each fold". Chosen on pilot problems and seeds
    against other fold-2 rules (a mean gap, no elimination at all, p-values only), it is an
    opt-in, not ``RaceSearchCV``'s default: on held-out problems it brought iris-knn's regret
    within 2 SE of the grid's but spent 53% of the grid's fits instead of 44%, above 60% of
    its CPU on two problems (``benchmarks/results/sklearn_vs_grid.md``, "after the fold-2 rule").
    Wrap it inside the score resolution, so that it sees the rounded scores:
    ``RaceSearchCV(..., test=ScoreResolution(EarlyMargin(TRaceTest(), 0.005), 0.005),
    first_test=2)``.

    >>> from racer.racing.base import RaceView
    >>> from racer.racing.trace import TRaceTest
    >>> scores = [[0.90, 0.90, 0.80], [0.95, 0.90, 0.85]]  # column 1 ties the leader once
    >>> [e.index for e in TRaceTest().decide(RaceView.from_scores(scores), None)]
    [1, 2]
    >>> guarded = EarlyMargin(TRaceTest(), margin=0.005)
    >>> [e.index for e in guarded.decide(RaceView.from_scores(scores), None)]
    [2]
    """

    elimination_statistic = None  # the wrapped test's

    def __init__(self, inner: RacingTest, margin: float, below: int = 3):
        self.inner = inner
        self.margin = margin
        self.below = below

    def decide(self, view, rng):
        out = self.inner.decide(view, rng)
        scores = view.scores
        if scores.shape[0] >= self.below or not out:
            return out
        # Scores snapped by ScoreResolution differ by whole multiples of the margin up to
        # rounding, so a one-cell lead must not pass by 1e-17: the margin is widened by
        # 1e-9 of itself, far below one cell.
        threshold = self.margin * (1 + 1e-9)
        return [e for e in out
                if np.all(scores[:, e.by] - scores[:, e.index] > threshold)]

    def get_params(self) -> dict[str, Any]:
        inner = {f"inner__{k}": v for k, v in self.inner.get_params().items()}
        return {"inner": type(self.inner).__name__, "margin": self.margin,
                "below": self.below, **inner}


class ImpreciseEquivalence(RacingTest):
    """Keeps an inner test's "indistinguishable" eliminations only where the imprecise DP
    (IDP) lower probability of the equivalence band still exceeds ``credibility``.

    Under the DP of Benavoli et al. (2015) the prior pseudo-observation sits at the tie, so a pair
    tied on every split is certain to be equivalent (``Pr = 1``) after any number of splits: with coarse
    scores (accuracies on small folds) five tied splits removed most of a grid "with p=1".
    The IDP (Benavoli et al. 2015 section 7) lets the pseudo-observation be anywhere; its lower
    probability moves it to the worst place for the statement, a win for one side. The band
    is then ``Pr[w < 2 eps]`` with ``w ~ Beta(s, n)`` when every split ties: 0.41 after 5,
    0.65 after 10 (``eps=0.05``), so near-certainty has to come from many splits, not from
    where the prior sits. The probability recorded is that lower probability. The formula is
    :func:`racer.stats.bayesian_sign.prob_indistinguishable` with the pseudo-observation as
    one more win (and a vanishing weight left at the tie).

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    """

    elimination_statistic = None  # the wrapped test's

    def __init__(self, inner, credibility: float, eps: float, prior_strength: float = 1.0):
        self.inner = inner
        self.credibility = credibility
        self.eps = eps
        self.prior_strength = prior_strength

    def decide(self, view, rng):
        out = self.inner.decide(view, rng)
        equivalent = [e for e in out if e.reason == "indistinguishable"]
        if not equivalent:
            return out
        # The pseudo-observation enters as whole counts: s = 1, Benavoli et al.'s (2015) strength.
        greater, n, s = view.greater, view.scores.shape[0], int(round(self.prior_strength))
        kept = []
        for e in out:
            if e.reason != "indistinguishable":
                kept.append(e)
                continue
            wins, losses = int(greater[e.by, e.index]), int(greater[e.index, e.by])
            lower = _idp_lower_band(wins, losses, n, self.eps, s)
            if lower > self.credibility:
                kept.append(dataclasses.replace(e, probability=float(lower)))
        return kept

    def get_params(self) -> dict[str, Any]:
        inner = {f"inner__{k}": v for k, v in self.inner.get_params().items()}
        return {"inner": type(self.inner).__name__, "credibility": self.credibility,
                "eps": self.eps, "prior_strength": self.prior_strength, **inner}


def _idp_lower_band(wins: int, losses: int, n: int, eps: float = 0.05, s: int = 1) -> float:
    """IDP lower probability of ``|theta - 1/2| < eps`` from a pair's sign counts over ``n``
    blocks: the ``s`` pseudo-observations moved to a win for either side, whichever is lower
    (see :class:`ImpreciseEquivalence`)."""
    from racer.stats.bayesian_sign import prob_indistinguishable

    return min(
        prob_indistinguishable(wins + s, losses, n + s, _VANISHING, eps),
        prob_indistinguishable(wins, losses + s, n + s, _VANISHING, eps),
    )


# Weight left at the tie by the IDP band (prob_indistinguishable needs a positive one); at
# 1e-12 the band equals the pure "one more win" Beta value to 1e-12 (checked in the tests).
_VANISHING = 1e-12


class HalvingFloor(RacingTest):
    """Caps an inner test's eliminations so that, while the race is on a subsample level
    below the last, at least as many candidates survive as ``HalvingGridSearchCV`` would keep
    after that level (``ceil(n_candidates / factor**(level + 1))``, and at least two); the
    best-scoring of the condemned are spared first. With ``cut``, the end of such a level
    also cuts the field down to that quota by the level's mean, as Halving does. Low-fidelity scores (a k-NN fitted on 16 samples) can order
    candidates differently from full ones, so the subsample levels may thin the field but not
    decide it alone (``resource="n_samples"``; docs/sklearn.md)."""

    elimination_statistic = None  # the wrapped test's

    def __init__(self, inner, n_candidates: int, splits_per_level: int, n_levels: int,
                 factor: float, cut: bool = False):
        self.inner = inner
        self.n_candidates = n_candidates
        self.splits_per_level = splits_per_level
        self.n_levels = n_levels
        self.factor = factor
        self.cut = cut

    def decide(self, view, rng):
        out = self.inner.decide(view, rng)
        n, m = view.scores.shape
        level = (n - 1) // self.splits_per_level
        if level >= self.n_levels - 1:
            return out
        # At least two reach the last level, so that the winner is chosen on full training
        # parts (Halving's "exhaust" ends on the full size too).
        floor = max(2, int(np.ceil(self.n_candidates / self.factor ** (level + 1))))
        allowed = max(0, m - floor)
        means = view.scores.mean(axis=0)
        if len(out) > allowed:
            out = sorted(out, key=lambda e: means[e.index])[:allowed]
        if self.cut and n % self.splits_per_level == 0 and m - len(out) > floor:
            # End of a level with more survivors than Halving keeps: cut to Halving's quota
            # by the mean over this level's splits, as Halving does at the end of a rung. No
            # test stands behind it, hence no probability (NaN; cv_results_ says "halving").
            rows = view.scores[n - self.splits_per_level:]
            level_mean = rows.mean(axis=0)
            gone = {e.index for e in out}
            alive = [j for j in np.argsort(-level_mean, kind="stable") if j not in gone]
            best = int(alive[0])
            out = list(out) + [Elimination(int(j), "dominated", best, float("nan"))
                               for j in alive[floor:]]
        return out

    def get_params(self) -> dict[str, Any]:
        inner = {f"inner__{k}": v for k, v in self.inner.get_params().items()}
        return {"inner": type(self.inner).__name__, "n_candidates": self.n_candidates,
                "splits_per_level": self.splits_per_level, "n_levels": self.n_levels,
                "factor": self.factor, **inner}


@dataclasses.dataclass
class CorrelatedTTestRacing(RacingTest):
    """Racing test for cross-validation scores: Bayesian correlated t-test against the leader.

    Every survivor ``j`` is compared with the survivor of best mean score, ``b``, through the
    differences ``d_k = x_kb - x_kj`` over the ``n`` splits seen. The correlated t-test
    statistic ``mean(d) / sqrt(var(d) (1/n + rho/(1 - rho)))`` with ``rho = n_test / n``
    (Nadeau & Bengio 2003) becomes, in its Bayesian form
    (Corani & Benavoli 2015, as in baycomp's ``CorrelatedTTest``), a Student t posterior of
    the mean difference with ``n - 1`` degrees of freedom, location ``mean(d)`` and scale
    ``sqrt((1/n + rho/(1 - rho)) var(d))``
    (:func:`racer.stats.bayesian_correlated_ttest_from_moments`, all survivors at once). The
    ROPE reading follows Corani et al. (2017, section 3.1: equivalence when the
    posterior mass inside the rope is large; the papers use +-0.01 of accuracy). The
    ``rho/(1 - rho)`` term does not shrink as splits are added: correlated splits never add
    up to certainty, which is why a ``rope`` is needed to let near-equal candidates go.

    * dominated when ``P(mu > rope) > credibility``;
    * indistinguishable when ``P(|mu| < rope) > credibility`` (``rope > 0`` only).

    Both decisions are about the leader, so no candidate is dropped for losing to a candidate
    that is itself dominated. The probability recorded is the posterior probability above.

    References
    ----------
    .. [1] Nadeau, C. & Bengio, Y. (2003). Inference for the generalization error. Machine
       Learning 52(3), 239–281.
    .. [2] Corani, G. & Benavoli, A. (2015). A Bayesian approach for comparing cross-validated
       algorithms on multiple data sets. Machine Learning 100(2), 285–304.
    .. [3] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [4] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.

    >>> import numpy as np
    >>> scores = np.array([[0.90, 0.80, 0.905], [0.92, 0.81, 0.91], [0.91, 0.79, 0.915],
    ...                    [0.93, 0.80, 0.925], [0.90, 0.82, 0.905]])
    >>> from racer.racing.base import RaceView
    >>> test = CorrelatedTTestRacing(rho=0.2, rope=0.02)
    >>> view = RaceView.from_scores(scores)
    >>> [(e.index, e.reason, e.by) for e in test.decide(view, None)]
    [(1, 'dominated', 0), (2, 'indistinguishable', 0)]
    """

    elimination_statistic = "posterior probability"

    rho: float = 0.2
    rope: float = 0.01
    credibility: float = 0.95

    def __post_init__(self):
        # The shared checks first: a string or None gets a TypeError naming the argument
        # rather than a bare comparison error.
        self.rho = check_probability(self.rho, "rho", open_left=False)
        self.rope = check_nonnegative(self.rope, "rope")
        self.credibility = check_probability(self.credibility, "credibility")
        if not (0.5 < self.credibility < 1.0):
            raise ValueError(f"`credibility` must be in (0.5, 1); got {self.credibility!r}")

    def decide(self, view, rng):
        check_view(view)
        scores = view.scores
        n, m = scores.shape
        if n < 2 or m < 2:
            return []
        from racer.stats import bayesian_correlated_ttest_from_moments

        means = scores.mean(axis=0)
        leader = int(np.argmax(means))
        diff = scores[:, [leader]] - scores
        rope = self.rope
        # The leader against every survivor at once (zero variance: a point mass).
        post = bayesian_correlated_ttest_from_moments(
            diff.mean(axis=0), diff.var(axis=0, ddof=1), n, self.rho, rope=rope)
        prob_dominated = np.array(post.prob_positive)
        prob_equivalent = np.array(post.prob_equivalent)
        point = post.scale == 0
        # Coarse scores: tied splits, or differences so regular that the t posterior is a
        # point mass (p = 1 from a few splits). There both probabilities are capped by the
        # IDP sign test on the same splits, as the default test does (docs/sklearn.md,
        # "Tied scores").
        tied = (diff == 0).any(axis=0) | point
        tied[leader] = False
        if tied.any():
            from racer.stats.bayesian_sign import prob_greater_from_counts

            wins = (diff > 0).sum(axis=0)[tied]
            losses = (diff < 0).sum(axis=0)[tied]
            prob_dominated[tied] = np.minimum(
                prob_dominated[tied], prob_greater_from_counts(wins, losses + 1)
            )
            if rope > 0:
                band = [_idp_lower_band(int(w), int(lo), n) for w, lo in zip(wins, losses)]
                prob_equivalent[tied] = np.minimum(prob_equivalent[tied], band)
        out = []
        for j in np.flatnonzero(prob_dominated > self.credibility):
            if j != leader:
                out.append(Elimination(int(j), "dominated", leader, float(prob_dominated[j])))
        for j in np.flatnonzero(prob_equivalent > self.credibility):
            if j != leader and prob_dominated[j] <= self.credibility:
                out.append(
                    Elimination(int(j), "indistinguishable", leader, float(prob_equivalent[j]))
                )
        return out
