"""Racing on several objectives: drop a candidate another survivor Pareto-dominates.

S-Race (Zhang, Georgiopoulos & Anagnostopoulos 2013) and SPRINT-Race (Zhang et al. 2015) race
candidates on several objectives and eliminate one once it is dominated, keeping a set of
non-dominated candidates rather than a single winner. :class:`ParetoTest` does the same with
the Dirichlet-process posterior of :func:`racer.stats.pareto_dominance`: the joint posterior
of the instances' score vectors, one weight vector shared by every candidate and objective.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from racer._validation import check_int, check_positive, check_probability
from racer.racing.base import Elimination, RaceView, RacingTest, check_view
from racer.stats.pareto import check_rope, oriented_pareto_dominance

__all__ = ["ParetoTest"]


@dataclasses.dataclass(eq=False)
class ParetoTest(RacingTest):
    """Eliminate survivors that another survivor dominates on every objective, with a stated level.

    After each block, :func:`racer.stats.pareto_dominance` gives, for every ordered pair of
    survivors, the posterior probability that one dominates the other (better beyond the
    rope on some objective, worse beyond it on none, on the objectives' means over the
    instance distribution) and that they are practically equivalent (within the rope on
    every objective). A survivor j is eliminated

    * as ``"dominated"`` when ``max_i P(i dominates j) > credibility`` (``by`` that i, the
      probability recorded);
    * as ``"indistinguishable"`` when ``P(i and j equivalent) > credibility`` for an i at
      least as good: ``P(i dom j) > P(j dom i)``, or equal and i comes first (the earlier
      candidate is kept, as racer's ties go). Needs ``rope > 0`` (with ``rope = 0`` two
      candidates are never equivalent).

    Decisions where the papers leave a gap: the pairwise probability, not the probability
    that *some* survivor dominates j, is the level (the eliminator is named, and the pairwise
    one is what S-Race tests); if every survivor would go at once (possible only through a
    cycle of near-certain statements, which dominance with a rope allows on three or more
    objectives), the one with the smallest probability against it stays. The risk of losing
    a Pareto-optimal candidate over a whole race is measured in
    ``benchmarks/pareto_racing.py`` (benchmarks/results/pareto_racing.md), not bounded here.

    Parameters
    ----------
    credibility : float in (0.5, 1), default 0.99
        Posterior probability an elimination needs (chosen on the benchmark's pilot seeds).
    rope : float or sequence of float >= 0, default 0
        Practical-equivalence half-width per objective (one number: every objective), in
        score units.
    prior_strength : float > 0, default 1
        ``s`` of the Dirichlet-process prior (Benavoli et al. 2015).
    n_samples : int >= 100, default 4000
        Posterior draws per test step.
    min_instances : int >= 1, default 10
        No elimination before the survivors have this many instances. The Dirichlet
        posterior over a handful of instances is near-certain whenever they all agree (five
        instances better on both objectives give probability 1, whatever the margins), which
        on the benchmark's pilot seeds lost Pareto-optimal candidates in most races;
        certainty must come from data, not from the prior's shape.

    References
    ----------
    .. [1] Zhang, T., Georgiopoulos, M. & Anagnostopoulos, G. C. (2013). S-Race: a
       multi-objective racing algorithm. Proceedings of the Genetic and Evolutionary
       Computation Conference (GECCO 2013), 1565–1572.
    .. [2] Zhang, T., Georgiopoulos, M. & Anagnostopoulos, G. C. (2015). SPRINT multi-objective
       model racing. Proceedings of the Genetic and Evolutionary Computation Conference
       (GECCO 2015), 1383–1390.
    .. [3] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    Examples
    --------
    Error and run time, both minimised: candidate 2 is worse than candidate 0 on both.

    >>> import numpy as np
    >>> import racer
    >>> means = {0: (0.20, 1.0), 1: (0.15, 2.0), 2: (0.30, 1.5)}
    >>> def evaluate(c, i):
    ...     noise = np.random.default_rng([c, i]).normal(0, [0.03, 0.2])
    ...     return tuple(np.add(means[c], noise))
    >>> res = racer.race(evaluate, [0, 1, 2], range(30), direction=["minimize", "minimize"],
    ...                  random_state=0, progress=False)
    >>> res.pareto_front, [(h.candidate, h.reason, h.by) for h in res.history]
    ([1, 0], [(2, 'dominated', 0)])

    The front is in survivor order: best first on the first objective.
    """

    credibility: float = 0.99
    rope: object = 0.0
    prior_strength: float = 1.0
    n_samples: int = 4000
    min_instances: int = 10

    objectives = "multi"
    elimination_statistic = "posterior probability"

    def __post_init__(self):
        self.credibility = check_probability(self.credibility, "credibility")
        if self.credibility <= 0.5:
            raise ValueError(
                f"`credibility` must exceed 0.5 (an elimination must be more likely right than "
                f"wrong); got {self.credibility}"
            )
        if isinstance(self.rope, (list, tuple, np.ndarray)):
            self.rope = tuple(float(r) for r in check_rope(self.rope, len(self.rope)))
        else:
            self.rope = float(check_rope(self.rope, 1)[0])
        self.prior_strength = check_positive(self.prior_strength, "prior_strength")
        self.n_samples = check_int(self.n_samples, "n_samples", minimum=100)
        self.min_instances = check_int(self.min_instances, "min_instances", minimum=1)

    def decide(self, view: RaceView, rng: np.random.Generator) -> list[Elimination]:
        check_view(view)
        objectives = view.objectives
        if objectives is None:
            raise ValueError(
                "ParetoTest needs a race on several objectives (`direction` a list, one entry "
                "per objective; RaceView.objectives); this view has one score per cell"
            )
        if view.n_instances < self.min_instances:
            return []
        k = objectives.shape[2]
        rope = np.broadcast_to(np.asarray(self.rope, dtype=np.float64), (k,)) \
            if np.ndim(self.rope) == 0 or len(self.rope) == k else None
        if rope is None:
            raise ValueError(
                f"ParetoTest `rope` has {len(self.rope)} values but the race has {k} objectives"
            )
        res = oriented_pareto_dominance(objectives, rope, self.prior_strength, self.n_samples, rng)
        return _eliminations(res.prob_dominates, res.prob_equivalent, self.credibility)


def _eliminations(dominates, equivalent, credibility):
    """Eliminations from the pairwise matrices (module rules), vectorised over pairs."""
    m = dominates.shape[0]
    best_by = dominates.argmax(axis=0)
    p_dominated = dominates[best_by, np.arange(m)]
    # i is at least as good as j: dominates j at least as likely as the converse; ties go to
    # the earlier candidate.
    order = np.arange(m)
    at_least_as_good = (dominates > dominates.T) | (
        (dominates == dominates.T) & (order[:, None] < order[None, :]))
    equiv = np.where(at_least_as_good & (equivalent > credibility), equivalent, 0.0)
    np.fill_diagonal(equiv, 0.0)
    equiv_by = equiv.argmax(axis=0)
    p_equivalent = equiv[equiv_by, np.arange(m)]
    is_dominated = p_dominated > credibility
    is_equivalent = ~is_dominated & (p_equivalent > credibility)
    out = is_dominated | is_equivalent
    if out.all():
        # Only a cycle of near-certain statements does this; keep the least certain loss.
        strength = np.where(is_dominated, p_dominated, p_equivalent)
        out[int(np.argmin(strength))] = False
    return [
        Elimination(int(j), "dominated", int(best_by[j]), float(p_dominated[j]))
        if is_dominated[j]
        else Elimination(int(j), "indistinguishable", int(equiv_by[j]), float(p_equivalent[j]))
        for j in np.flatnonzero(out)
    ]
