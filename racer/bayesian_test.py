"""The Bayesian racing test (seed 002_0bc882e2a3e23328.txt, sections 5-7).

After each block the survivors' score matrix goes through three steps:

1. **Gate** -- the Bayesian Friedman test (seed 002 §5.2, eq. 16-19): posterior mean ``mu`` and
   covariance ``Sigma`` of the expected rank vector under a Dirichlet process with prior
   strength ``s`` and its prior point at the all-tied ranks ``R0``; the gate opens when
   ``(mu - R0)' Sigma^-1 (mu - R0)`` over ``m - 1`` components exceeds
   ``F_inv(gate_credibility; m-1, n-m+1) (n-1)(m-1)/(n-m+1)``.
2. **Dominance** -- for every pair the Bayesian sign test in the direction of larger posterior
   (Theorem 2: ``Pr[theta > 1/2] = I_{1/2}(n_less, n_greater)``); statements sorted by that
   probability; the longest prefix whose *joint* posterior probability exceeds ``credibility``
   is accepted (§5.3, Monte Carlo over shared Dirichlet weights); every candidate that loses
   an accepted statement is eliminated as dominated.
3. **Indistinguishability** -- a pair is practically equivalent when
   ``Pr[|theta - 1/2| < eps] > credibility`` (§7.1); the one with the worse mean goes.

The paper leaves several choices open. Each is an option here, with the default chosen on
pilot seeds of the paper's own experiment (``benchmarks/paper_racing.py``, seeds kept apart
from the reported ones; ``docs/racing-tests.md`` has the numbers):

* ``gate_indistinguishable=True`` -- the gate also gates step 3 (without it the race removes
  close pairs as soon as n ~ 380 and ends early with a worse winner);
* ``small_n="hold"`` -- eq. 19 is undefined while ``n <= m - 1``; "hold" makes no decision
  then (the seed leaves the exact small-n region as future work; "montecarlo", "chi2" and
  "reject" are the alternatives; "montecarlo" spends far fewer evaluations, see the docs);
* ``gate_two=False`` -- with two survivors the global null *is* the pairwise null (closed
  testing), so the pairwise tests decide alone;
* ``credibility=0.975`` for dominance and indistinguishability, ``gate_credibility=0.95``;
* ``statements="per_loser"`` -- the joint prefix is formed from each loser's most probable
  statement only (the statements that eliminate someone), not from every pair.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from racer._validation import (
    check_bool,
    check_int,
    check_option,
    check_positive,
    check_probability,
    check_view,
)
from racer._pair_counts import PairCountCache
from racer.elimination import Elimination, RacingTest
from racer.stats._ranks import block_ranks

__all__ = ["BayesianTest"]

# Share of the allowed error (1 - credibility) that the union bound may spend on the leading,
# near-certain statements before the Monte Carlo takes over (see _dominance).
_FOLD = 0.01
# Gauss-Legendre nodes of the band probability quadrature (error <= 4e-6, notes/kernels).
_BAND_NODES, _BAND_WEIGHTS = np.polynomial.legendre.leggauss(48)
# Samples per chunk of the joint Monte Carlo (bounds memory at n_samples x n_instances).
_CHUNK = 4096
# Statements per GEMM block; the pass stops after the block where the joint crosses.
_STATEMENT_BLOCK = 64
# Up to this many statements, instances are grouped by sign pattern (see _joint_prefix_counts).
_PATTERN_MAX_STATEMENTS = 12


# ---------------------------------------------------------------------------------------------
# Incremental pairwise counts and rank moments
# ---------------------------------------------------------------------------------------------


class _FriedmanCache:
    """The Bayesian Friedman posterior of the survivors, carried from one step to the next.

    The ranks and their sums are :class:`racer.stats.FriedmanAccumulator`
    (extended while the survivors stay the same, rebuilt when they change); this class only
    adds the check that the rows it has already ranked are the rows passed (last ranked row
    compared), so a call with unrelated data starts afresh.
    """

    def __init__(self):
        self.accumulator = None

    def update(self, scores, ids, prior_strength):
        from racer.stats import FriedmanAccumulator

        n_seen = 0 if self.accumulator is None else self.accumulator.n_blocks
        if (
            n_seen == 0
            or scores.shape[0] < n_seen
            or self.last_row.shape != scores[n_seen - 1].shape
            or not np.array_equal(scores[n_seen - 1], self.last_row)
        ):
            self.accumulator = FriedmanAccumulator(prior_strength=prior_strength)
        self.accumulator.update(scores, ids)
        self.last_row = scores[-1].copy()
        return self.accumulator


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------


def _prob_greater(n_greater, n_less, pseudo_against=0.0):
    """``Pr[theta > 1/2]`` from win/loss counts (seed 002 Theorem 2), vectorised.

    The DP case is :func:`racer.stats.bayesian_sign.prob_greater_from_counts`.
    ``pseudo_against`` > 0 puts the prior pseudo-observation against the statement: the lower
    probability of the imprecise DP (seed 002 §7, seed 000), ``P(Beta(n_g, n_l + s) > 1/2)``,
    i.e. the same closed form with ``s`` added to the losses (the shared function has no IDP
    option, so it is added here).
    """
    from racer.stats.bayesian_sign import prob_greater_from_counts

    if pseudo_against:
        n_less = np.asarray(n_less, dtype=np.float64) + pseudo_against
    return prob_greater_from_counts(n_greater, n_less)


def _band_probability(n_greater, n_less, n_ties, prior_strength, eps):
    """Band probability for each pair, computed once per distinct count triple.

    Same formula and 48-node rule as :func:`racer.stats.bayesian_sign.prob_indistinguishable`
    (both within 2.0e-5 of scipy.integrate.quad at tolerance 1e-12 on 30 triples, same worst
    case; equal to 8e-16 on 1.8M count triples of a race), kept local on
    purpose: the shared one is exactly symmetric in (wins, losses), this one differs in the
    last bit between (a, b) and (b, a) and between batch positions (BLAS GEMV). Pairs with the
    same band value are taken in that order, so switching changed a race: paper_racing.py
    (100, 0.5) rep 10008, small_n="montecarlo", step n = 530, three pairs at 0.97723573759459
    -- one elimination before, three after, a different winner. Decisions must not move.
    """
    triples = np.stack(np.broadcast_arrays(n_greater, n_less, n_ties)).reshape(3, -1)
    distinct, inverse = np.unique(triples, axis=1, return_inverse=True)
    values = _band_probability_distinct(distinct[0], distinct[1], distinct[2], prior_strength, eps)
    return values[inverse.ravel()]


def _band_probability_distinct(n_greater, n_less, n_ties, prior_strength, eps):
    """``Pr[|theta - 1/2| < eps]`` for vectors of counts, in closed form up to quadrature.

    With ``(W_g, W_l, rest) ~ Dir(a, b, c)``, ``a = n_g, b = n_l, c = s + n_t``:
    ``theta - 1/2 = (W_g - W_l)/2 = T (R - 1/2)`` with ``T = W_g + W_l ~ Beta(a+b, c)`` and
    ``R = W_g/T ~ Beta(a, b)`` independent. Then, with ``d = 2 eps``,
    ``Pr = I_d(a+b, c) + int_{u0}^1 [I_{(1+d/t)/2}(a, b) - I_{(1-d/t)/2}(a, b)] du``,
    ``t = F_T^{-1}(u)``, ``u0 = I_d(a+b, c)``: Gauss-Legendre with 48 nodes in ``u``.
    """
    a = np.asarray(n_greater, dtype=np.float64)
    b = np.asarray(n_less, dtype=np.float64)
    c = np.asarray(n_ties, dtype=np.float64) + prior_strength
    width = 2.0 * eps
    out = np.ones(a.shape)
    informative = (a + b) > 0
    if not informative.any():
        return out
    a, b, c = a[informative], b[informative], c[informative]
    total = a + b
    u0 = special.betainc(total, c, width)
    # T's quantiles depend on (a+b, c) only: few distinct values (one when there are no ties).
    keys, inverse = np.unique(np.stack([total, c]), axis=1, return_inverse=True)
    inverse = inverse.ravel()
    u0_key = special.betainc(keys[0], keys[1], width)
    u_nodes = u0_key[:, None] + (1.0 - u0_key[:, None]) * (_BAND_NODES[None, :] + 1.0) / 2.0
    t_nodes = special.betaincinv(keys[0][:, None], keys[1][:, None], u_nodes)[inverse]
    half_width = np.minimum(width / np.maximum(t_nodes, width), 1.0) / 2.0
    both = (a > 0) & (b > 0)
    with np.errstate(invalid="ignore"):
        inside = special.betainc(a[:, None], b[:, None], 0.5 + half_width) - special.betainc(
            a[:, None], b[:, None], 0.5 - half_width
        )
    # With one count at zero R is 0 or 1, so |theta - 1/2| = T/2 and only T < d counts.
    inside = np.where(both[:, None], inside, 0.0)
    integral = (1.0 - u0) / 2.0 * (inside @ _BAND_WEIGHTS)
    out[informative] = np.clip(u0 + integral, 0.0, 1.0)
    return out


def _band_moments(n_greater, n_less, alpha_total):
    """Posterior mean of ``theta - 1/2`` and its standard deviation (Dirichlet moments)."""
    a = np.asarray(n_greater, dtype=np.float64)
    b = np.asarray(n_less, dtype=np.float64)
    mean = (a - b) / (2.0 * alpha_total)
    var_diff = (a * (alpha_total - a) + b * (alpha_total - b) + 2.0 * a * b) / (
        alpha_total**2 * (alpha_total + 1.0)
    )
    return mean, np.sqrt(var_diff) / 2.0


# ---------------------------------------------------------------------------------------------
# Joint posterior of a sorted list of statements
# ---------------------------------------------------------------------------------------------


def _joint_prefix_counts(signs, n_samples, rng, stop_at, prior_against=None):
    """Monte Carlo counts of samples in which every statement of a prefix holds.

    ``signs`` (L, n) holds ``sgn(X_winner - X_loser)`` per instance, statements in decision
    order. Statement k holds in a sample when ``sum_l e_l signs[k, l] > 0`` with i.i.d. Exp(1)
    weights ``e``: the sign of ``theta - 1/2`` does not depend on normalising the Dirichlet
    weights nor on the prior point at the tie (notes/kernels-performance.md, "sign trick").
    With ``prior_against`` (the IDP lower probability) a Gamma(s) pseudo-weight counts against
    every statement. Statements are processed in blocks and the pass stops once the running
    joint count falls to ``stop_at``: longer prefixes cannot be accepted.

    Returns ``counts`` with ``counts[k]`` = samples in which statements ``0..k`` all hold,
    for the processed statements (the array may be shorter than L).

    Why not :func:`racer.stats.joint.joint_prefix_probabilities`, the same sign-trick
    estimator: that one returns every prefix (no early stop, which is what makes a step at
    m = 200 cheap here), has no IDP pseudo-weight against the statements, and draws its
    weights from its own stream, so switching would change which samples a seed gives and
    with it some race decisions. Both exist on purpose; keep them on the same estimator.
    """
    n_statements, n_instances = signs.shape
    shapes = None
    if n_statements <= _PATTERN_MAX_STATEMENTS:
        # Instances with the same sign pattern across all statements can share one weight:
        # a sum of k i.i.d. Exp(1) is Gamma(k). Late in a race (few survivors, many
        # instances) this replaces n_instances exponentials per sample by a few gammas.
        patterns, counts = np.unique(signs.T, axis=0, return_counts=True)
        informative = np.any(patterns != 0, axis=1)
        patterns, counts = patterns[informative], counts[informative]
        if 2 * len(counts) <= n_instances:
            signs, shapes = patterns.T, counts.astype(np.float64)
            n_instances = len(counts)
    signs32 = np.ascontiguousarray(signs, dtype=np.float32)
    chunk_seeds = rng.integers(0, 2**63 - 1, size=(n_samples + _CHUNK - 1) // _CHUNK)
    chunk_sizes = [min(_CHUNK, n_samples - i * _CHUNK) for i in range(len(chunk_seeds))]
    keep_weights = n_samples * n_instances <= (1 << 23)
    cached = [None] * len(chunk_seeds)

    def weights(i):
        if cached[i] is not None:
            return cached[i]
        gen = np.random.default_rng(chunk_seeds[i])
        if shapes is None:
            e = gen.standard_exponential((chunk_sizes[i], n_instances), dtype=np.float32)
        else:
            e = gen.standard_gamma(shapes, size=(chunk_sizes[i], n_instances)).astype(np.float32)
        e0 = (
            gen.gamma(prior_against, size=chunk_sizes[i]).astype(np.float32)
            if prior_against
            else None
        )
        if keep_weights:
            cached[i] = (e, e0)
        return e, e0

    from racer.stats._kernels import blas_single_thread

    alive = [np.ones(size, dtype=bool) for size in chunk_sizes]
    counts = []
    with blas_single_thread():
        # Fixed blocks of statements: the pass usually stops within a few hundred statements,
        # and a doubling schedule would overshoot the stopping point by up to 2x.
        for start in range(0, n_statements, _STATEMENT_BLOCK):
            stop = min(n_statements, start + _STATEMENT_BLOCK)
            width = stop - start
            failed_at = np.zeros(width + 1, dtype=np.int64)
            n_alive = 0
            for i in range(len(chunk_seeds)):
                e, e0 = weights(i)
                values = e @ signs32[start:stop].T
                holds = values > (e0[:, None] if e0 is not None else 0.0)
                # Index of each sample's first failing statement in the block (width if none):
                # argmin finds the first False; a row without one returns 0 and a True there.
                first_fail = holds.argmin(axis=1)
                first_fail[holds[np.arange(len(first_fail)), first_fail]] = width
                first_fail = first_fail[alive[i]]
                n_alive += len(first_fail)
                failed_at += np.bincount(first_fail, minlength=width + 1)
                alive[i][alive[i]] = first_fail == width
            block_counts = n_alive - np.cumsum(failed_at[:width])
            counts.append(block_counts)
            if block_counts[-1] <= stop_at:
                break
    return np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class BayesianTest(RacingTest):
    """Bayesian racing test: Bayesian Friedman gate, joint sign-test dominance, equivalence.

    Parameters
    ----------
    credibility : float, default 0.975
        Joint posterior probability an accepted list of dominance statements must exceed,
        and posterior probability of the band ``|theta - 1/2| < eps`` that declares a pair
        indistinguishable (``1 - gamma`` in seed 002; a loss ratio ``K1/(K0+K1)`` in eq. 12).
        The paper used 0.95; 0.975 was chosen on pilot seeds (see ``docs/racing-tests.md``).
    eps : float, default 0.05
        Half-width of the practical-equivalence band around ``theta = 1/2``.
    prior_strength : float, default 1.0
        DP prior strength ``s``; the prior point sits at the all-tied outcome.
    n_samples : int, default 10_000
        Monte Carlo samples for the joint probability (SE ~ 0.0016 at 0.975).
    gate_credibility : float, default 0.95
        Level of the Bayesian Friedman ellipsoid test (eq. 19).
    gate_indistinguishable : bool, default True
        Whether a closed gate also blocks indistinguishability eliminations.
    small_n : {"hold", "reject", "chi2", "montecarlo"}, default "hold"
        Gate while ``n <= m - 1`` (eq. 19 undefined): no decision, open, pseudo-inverse of
        the covariance against the chi-square(m - 1) quantile, or the Monte Carlo credible
        region of the DP posterior the seed suggests for small n
        (:func:`racer.stats.bayesian_friedman`, ``method="montecarlo"``,
        ``n_samples`` draws from the step's stream).
    gate_two : bool, default False
        Whether the gate is applied when exactly two candidates survive.
    prior : {"dp", "idp"}, default "dp"
        ``"idp"`` uses the lower probability of the imprecise DP for dominance: the prior
        pseudo-observation is put against each statement (seed 002 §7; seed 000), which stops
        a 5-0 record from being certain. Indistinguishability always uses the DP.
    statements : {"per_loser", "all"}, default "per_loser"
        Which sorted statements form the joint prefix. ``"all"`` is seed 002 §5.3 to the
        letter: every pair's statement counts, including a loser losing again.
        ``"per_loser"`` keeps only each loser's most probable statement, the ones that
        eliminate someone: the accepted set still has joint posterior probability above
        ``credibility`` that every eliminated candidate is worse than the one named, with at
        most m - 1 statements to simulate instead of up to m(m-1)/2. Chosen on pilot seeds:
        same ITER and MAE within noise (slightly better), 5-10x cheaper steps at m = 200.

    Notes
    -----
    Every elimination carries ``reason`` ("dominated" or "indistinguishable"), ``by`` (the
    candidate that beat or matched it) and ``probability``: for "dominated", the joint
    posterior probability that every accepted statement up to the first one this candidate
    loses holds (a lower bound from the union bound when no Monte Carlo was needed); for
    "indistinguishable", ``Pr[|theta - 1/2| < eps]``.

    ``credibility`` holds per test step. A race tests after every block with no sequential
    correction, so the chance that some elimination of a race is wrong is larger (in the
    paper's experiment the true best is eliminated in 10-50% of races, about as often as by
    the F-races). With ``small_n="hold"`` nobody leaves before every survivor has seen as
    many instances as there are survivors, which costs evaluations when there are many
    candidates. Decisions depend only on ``scores``, ``ids`` and ``rng``; the same stream
    gives the same decisions, bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from racer.bayesian_test import BayesianTest
    >>> from racer.elimination import RaceView
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.normal([0.0, 0.0, 1.0], 0.5, size=(20, 3))
    >>> out = BayesianTest().decide(RaceView.from_scores(scores, np.arange(3)), np.random.default_rng(1))
    >>> sorted((e.index, e.reason, e.by) for e in out)
    [(0, 'dominated', 2), (1, 'dominated', 2)]
    """

    credibility: float = 0.975
    eps: float = 0.05
    prior_strength: float = 1.0
    n_samples: int = 10_000
    gate_credibility: float = 0.95
    gate_indistinguishable: bool = True
    small_n: str = "hold"
    gate_two: bool = False
    prior: str = "dp"
    statements: str = "per_loser"
    _pairs: PairCountCache = dataclasses.field(
        default_factory=PairCountCache, init=False, repr=False, compare=False
    )
    _friedman: _FriedmanCache = dataclasses.field(
        default_factory=_FriedmanCache, init=False, repr=False, compare=False
    )

    def __post_init__(self):
        self.credibility = check_probability(self.credibility, "credibility")
        self.eps = check_probability(self.eps, "eps")
        if self.eps >= 0.5:
            raise ValueError(f"`eps` must be < 0.5; got {self.eps}")
        self.prior_strength = check_positive(self.prior_strength, "prior_strength")
        self.n_samples = check_int(self.n_samples, "n_samples", minimum=100)
        self.gate_credibility = check_probability(self.gate_credibility, "gate_credibility")
        self.gate_indistinguishable = check_bool(
            self.gate_indistinguishable, "gate_indistinguishable"
        )
        self.small_n = check_option(
            self.small_n, "small_n", ("hold", "reject", "chi2", "montecarlo")
        )
        self.gate_two = check_bool(self.gate_two, "gate_two")
        self.prior = check_option(self.prior, "prior", ("dp", "idp"))
        self.statements = check_option(self.statements, "statements", ("all", "per_loser"))

    # -- public ------------------------------------------------------------------------------

    def decide(self, view, rng) -> list[Elimination]:
        check_view(view)
        scores, ids = view.scores, view.ids
        """Eliminations warranted by ``scores`` (n_instances, n_survivors), larger better."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 2:
            raise ValueError(f"`scores` must be 2-D; got shape {scores.shape}")
        ids = np.asarray(ids, dtype=np.int64)
        if ids.shape != (scores.shape[1],):
            raise ValueError(
                f"`ids` must have one entry per column of `scores` ({scores.shape[1]}); "
                f"got shape {ids.shape}"
            )
        n, m = scores.shape
        if m < 2 or n < 1:
            return []
        greater = self._pairs.greater(scores, ids)
        gate_open = True
        if m >= 3 or self.gate_two:
            gate_open = self._gate(scores, ids, rng)
        if not gate_open:
            if self.gate_indistinguishable:
                return []
            return self._indistinguishable(scores, greater, np.zeros(m, dtype=bool))
        dominated = self._dominance(scores, greater, rng)
        eliminated = np.zeros(m, dtype=bool)
        for e in dominated:
            eliminated[e.index] = True
        return dominated + self._indistinguishable(scores, greater, eliminated)

    # -- steps -------------------------------------------------------------------------------

    def gate_statistic(self, scores, ids=None):
        """Bayesian Friedman statistic and threshold ``(stat, rho)`` (eq. 16-19).

        ``rho`` is NaN while ``n <= m - 1`` (the F threshold is undefined); ``stat`` then
        uses the pseudo-inverse of the rank-deficient covariance. Otherwise both come from
        :class:`racer.stats.FriedmanAccumulator` (``method="ellipsoid"``),
        whose sums are extended step by step while the survivors stay the same.
        """
        scores = np.asarray(scores, dtype=np.float64)
        n, m = scores.shape
        ids = np.arange(m) if ids is None else np.asarray(ids, dtype=np.int64)
        if n > m - 1:
            res = self._friedman.update(scores, ids, self.prior_strength).result(
                credibility=self.gate_credibility, method="ellipsoid"
            )
            return float(res.statistic), float(res.threshold)
        # Eq. 19 is undefined here and the shared ellipsoid refuses it; small_n="chi2" needs the
        # form with the pseudo-inverse of the (rank-deficient) covariance, so it stays local.
        # At most m - 1 rows: ranking them afresh is cheap.
        ranks = block_ranks(scores)
        s = self.prior_strength
        r0 = np.full(m, (m + 1) / 2.0)
        total = s + n
        mean = (s * r0 + ranks.sum(axis=0)) / total
        second = (s * np.outer(r0, r0) + ranks.T @ ranks) / total
        cov = (second - np.outer(mean, mean)) / (total + 1.0)
        d = (mean - r0)[: m - 1]
        stat = float(d @ np.linalg.pinv(cov[: m - 1, : m - 1], hermitian=True) @ d)
        return stat, math.nan

    def _gate(self, scores, ids, rng=None):
        n, m = scores.shape
        if n <= m - 1 and self.small_n == "montecarlo":
            from racer.stats import bayesian_friedman

            res = bayesian_friedman(
                scores, prior_strength=self.prior_strength, credibility=self.gate_credibility,
                method="montecarlo", n_samples=self.n_samples, random_state=rng,
            )
            return bool(res.reject)
        if n <= m - 1 and self.small_n == "hold":
            return False
        if n <= m - 1 and self.small_n == "reject":
            return True
        stat, rho = self.gate_statistic(scores, ids)
        if n <= m - 1:  # "chi2": the large-n normal limit of the ellipsoid test
            rho = float(special.chdtri(m - 1, 1.0 - self.gate_credibility))
        return stat > rho

    def _dominance(self, scores, greater, rng):
        m = greater.shape[0]
        n = scores.shape[0]
        i, j = np.triu_indices(m, k=1)
        g_ij, g_ji = greater[i, j], greater[j, i]
        pseudo = self.prior_strength if self.prior == "idp" else 0.0
        # Few distinct (wins, losses) pairs occur (about n of them without ties), so the
        # incomplete beta is evaluated once per distinct pair and gathered.
        codes = np.concatenate([g_ij * (n + 1) + g_ji, g_ji * (n + 1) + g_ij])
        distinct, inverse = np.unique(codes, return_inverse=True)
        p_distinct = _prob_greater(distinct // (n + 1), distinct % (n + 1), pseudo)
        p_i_better, p_j_better = np.split(p_distinct[inverse.ravel()], 2)
        i_wins = p_i_better > p_j_better
        prob = np.where(i_wins, p_i_better, p_j_better)
        winner = np.where(i_wins, i, j)
        loser = np.where(i_wins, j, i)
        # A statement in an accepted prefix has marginal >= the joint > credibility.
        keep = prob > self.credibility
        if not keep.any():
            return []
        prob, winner, loser = prob[keep], winner[keep], loser[keep]
        means = scores.mean(axis=0)
        # Decision order: marginal probability, then (ties, e.g. several 1.0) the larger gap
        # in mean, then pair order -- deterministic, so no random tie-breaking is needed.
        gap = means[winner] - means[loser]
        order = np.lexsort((loser, winner, -gap, -prob))
        prob, winner, loser = prob[order], winner[order], loser[order]
        if self.statements == "per_loser":
            # Only each loser's most probable statement can eliminate anyone; the others
            # (a loser losing again) are dropped before the prefix is formed.
            _, first = np.unique(loser, return_index=True)
            first = np.sort(first)
            prob, winner, loser = prob[first], winner[first], loser[first]

        failure = 1.0 - prob
        cum_failure = np.cumsum(failure)
        # Union bound: P(some statement of a prefix fails) <= the sum of their failures.
        bound = 1.0 - cum_failure
        n_accepted = int(np.sum(bound > self.credibility))
        joint = bound
        if n_accepted < len(prob):
            # The leading, near-certain statements (total failure <= _FOLD of the allowed
            # error) are folded into a bound instead of being simulated, since
            # P(A and B) >= P(A) - P(not B); this keeps the Monte Carlo to the statements
            # that can move the decision (thousands of near-sure pairs at m = 200).
            head = int(np.searchsorted(cum_failure, _FOLD * (1.0 - self.credibility), "right"))
            folded = float(cum_failure[head - 1]) if head else 0.0
            signs = np.sign(scores[:, winner[head:]] - scores[:, loser[head:]]).T
            stop_at = (self.credibility + folded) * self.n_samples
            counts = _joint_prefix_counts(
                signs, self.n_samples, rng, stop_at, pseudo if pseudo else None
            )
            mc_joint = np.zeros(len(prob))
            mc_joint[:head] = bound[:head]
            # Statements past the point where the pass stopped cannot be accepted (0).
            mc_joint[head : head + len(counts)] = counts / self.n_samples - folded
            mc_accepted = int(np.sum(mc_joint > self.credibility))
            if mc_accepted > n_accepted:
                n_accepted = mc_accepted
                joint = np.maximum(bound, mc_joint)
        # Each loser once, with the first (most probable) statement it loses.
        _, first = np.unique(loser[:n_accepted], return_index=True)
        first = np.sort(first)
        return [
            Elimination(int(loser[k]), "dominated", int(winner[k]), float(joint[k]))
            for k in first
        ]

    def _indistinguishable(self, scores, greater, eliminated):
        n = scores.shape[0]
        live = np.flatnonzero(~eliminated)
        if len(live) < 2:
            return []
        i, j = np.triu_indices(len(live), k=1)
        i, j = live[i], live[j]
        a, b = greater[i, j].astype(np.float64), greater[j, i].astype(np.float64)
        ties = n - a - b
        mean, sd = _band_moments(a, b, self.prior_strength + n)
        # Cantelli: if the posterior mean sits eps + t outside 1/2, the band has probability
        # at most sd^2/(sd^2 + t^2); pairs that cannot reach `credibility` are skipped.
        reach = self.eps + sd * math.sqrt(self.credibility / (1.0 - self.credibility))
        close = np.abs(mean) < reach
        if not close.any():
            return []
        i, j, a, b, ties = i[close], j[close], a[close], b[close], ties[close]
        band = _band_probability(a, b, ties, self.prior_strength, self.eps)
        hit = band > self.credibility
        if not hit.any():
            return []
        i, j, band = i[hit], j[hit], band[hit]
        means = scores.mean(axis=0)
        order = np.lexsort((j, i, -band))
        out = []
        gone = eliminated.copy()
        for k in order:
            a_idx, b_idx = int(i[k]), int(j[k])
            if gone[a_idx] or gone[b_idx]:
                continue
            worse, better = (a_idx, b_idx) if means[a_idx] < means[b_idx] else (b_idx, a_idx)
            gone[worse] = True
            out.append(Elimination(worse, "indistinguishable", better, float(band[k])))
        return out
