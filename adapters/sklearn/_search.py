"""A scikit-learn hyperparameter search that races candidates split by split.

:class:`RaceSearchCV` is a drop-in for ``GridSearchCV``, ``RandomizedSearchCV`` and
``HalvingGridSearchCV``. Cross-validation splits are the race's instances: every surviving
candidate is fitted on the same split, and after each split the racing test drops the
candidates the scores already show to be worse than, or practically tied with, a better one.
Fits are only spent on candidates that still matter.

The race itself is :class:`racer.engine.Race`; this module turns its ``ask()`` tasks into fits
(each one a public ``sklearn.model_selection.cross_validate`` call on a single split) and sends
the scores back with ``tell()``. The engine never imports scikit-learn.
"""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Mapping

import numpy as np
from sklearn.base import _fit_context, clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid, ParameterSampler, check_cv
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import indexable
from sklearn.utils._param_validation import HasMethods, Hidden, Interval, StrOptions

from racer._validation import check_int, check_random_state, describe
from racer.adapters.sklearn._fits import Fits
from racer.adapters.sklearn._results import cv_results, top_level_mean, warn_fit_failures
from racer.adapters.sklearn._splits import plan_splits
from racer.execution import check_timeout, effective_n_jobs
from racer.engine import RaceFailedError
from racer.race_loop import drive, progress_line
from racer.racing import registry
from racer.racing.base import KeepAll
from racer.racing.cv import (
    HalvingFloor,
    ImpreciseEquivalence,
    ScoreResolution,
)

__all__ = ["RaceSearchCV", "SearchTypeError"]


class SearchTypeError(RaceFailedError, TypeError):
    """Every fit of a :class:`RaceSearchCV` failed, each with a ``TypeError`` (data the
    estimator cannot take, such as objects where numbers are expected).

    A :class:`racer.RaceFailedError` (so a ``ValueError``, as scikit-learn's "All the fits
    failed", and a ``RuntimeError``, as before) that is also a ``TypeError``, the
    type the estimator itself raised: ``GridSearchCV`` reaches its refit, which raises the
    estimator's ``TypeError``, whenever one fit or score of its grid went through, while the
    race stops at its first block of failures (scikit-learn's ``check_dtype_object`` expects
    the ``TypeError``).
    """


# The tests of racer.racing.registry that RaceSearchCV configures for CV scores (_racing_test);
# each is accepted under every spelling the registry gives it ("bayes", "frace", ...).
_CV_TESTS = ("t-test", "bayesian", "posterior-best", "F-test", "correlated-t", "hierarchical")
_TEST_NAMES = tuple(s for name in _CV_TESTS for s in registry.lookup(name).spellings)
_BAYES_SMALL_N = "reject"
# resource="n_samples": cut to Halving's quota at the end of each subsample level.
_SUBSAMPLE_CUT = True
# Chosen by replaying variants on the full grids of pilot seeds 100-104 (second round of
# defaults; docs/sklearn.md "Tied scores"): the 0.975/0.975/0.05 of the first round picked the
# reference best but spent a median 68% of the grid's fits, as the IDP needs 6 straight wins
# for 0.975 and 22 all-tied splits for the band. These are the loosest values whose picks
# stayed within reference rank 2 on every pilot problem-seed.
_DOMINANCE_CREDIBILITY = 0.85
_EQUIVALENCE_CREDIBILITY = 0.8
_EQUIVALENCE_EPS = 0.1
# The defaults of resource="splits": race on the user's own folds, as
# GridSearchCV(cv=cv) fits them, so that the race's pick is the grid's whenever the grid's
# winner survives; irace's t-test from the second fold, whose rule "the leader scores at least
# as well on every fold seen" is what can act on two to five folds (a rank test cannot).
# Chosen on pilot problems/seeds by replaying designs on the grid's own folds
# (benchmarks/sklearn_search.py --pilot-grid; benchmarks/RESULTS.md): a median 46%
# of the 5-fold grid's fits, regret -0.0011 +- 0.0008 against the grid's pick.
_SPLITS_DEFAULTS = {"n_repeats": 1, "test": "t-test", "first_test": 2}
# Kept after a fold-2 margin was tried (racer.racing.cv.EarlyMargin: at fold 2 the leader must
# be ahead by more than ``rope`` on both folds; chosen among 18 fold-2 rules on the pilot):
# on the held-out problems it fixed iris-knn's regret (+0.0039 +- 0.0022, within 2 SE) but
# cost 62% and 68% of the grid's fits on iris-knn and diabetes-elasticnet (CPU 0.64, 0.73),
# so the target held on 4 of 6 problems instead of 5 (benchmarks/results/sklearn_vs_grid.md,
# "after the fold-2 rule"). It stays an opt-in (docs/sklearn.md).
# resource="n_samples" keeps the design measured against HalvingGridSearchCV.
_SUBSAMPLE_DEFAULTS = {"n_repeats": 3, "test": "bayes", "first_test": 4}
# first_test when the user names the test but not first_test: the earlier default.
_FIRST_TEST_NAMED = 4


def _check_test(test: object) -> None:
    """``test``: None, a name of :data:`_TEST_NAMES` or a racing test (anything with
    ``decide``)."""
    if test is None:
        return
    if isinstance(test, str):
        if test not in _TEST_NAMES:
            raise ValueError(
                f"`test` must be one of {', '.join(map(repr, _TEST_NAMES))} or a RacingTest "
                f"instance; got {describe(test)}"
            )
    elif not hasattr(test, "decide"):
        raise TypeError(
            "`test` must be a string or a racer.racing.base.RacingTest instance; got "
            f"{describe(test)}"
        )


class RaceSearchCV(BaseSearchCV):
    """Hyperparameter search that races candidates over cross-validation splits.

    Every candidate of ``param_grid`` (or ``n_iter`` draws from ``param_distributions``)
    starts the race. Splits are visited one at a time; each surviving candidate is fitted on
    the split's training part and scored on its test part, and after ``first_test`` splits a
    racing test reads the survivors' scores (of the ``refit`` metric) after every split and
    eliminates the candidates that are worse than another survivor, or practically
    indistinguishable from a better one. The race stops when one candidate is left, when the
    splits run out, or when ``budget`` is spent. The winner (best mean over all splits
    among the survivors) is refitted on the whole data, as in ``GridSearchCV``.

    By default the race visits the user's own folds (``cv``, once, in an order drawn from
    ``random_state``), the very splits ``GridSearchCV(cv=cv)`` fits, through the grid's own
    per-fit function: where the grid's winner survives, the pick is the grid's, and the
    fits of the candidates eliminated on the way are saved. From the second fold on, irace's
    paired t-test against the leader (Birattari 2009) eliminates a candidate whose scores are
    significantly lower, or lower on average and higher on no fold seen (a rank test cannot
    decide on five folds). Against ``GridSearchCV(cv=5)`` on six problems held out from the choice this
    costs a median 41-56% of its CPU time per problem with a regret within 2 SE of the grid's
    on five of six (``docs/sklearn.md``, "Against GridSearchCV"). ``n_repeats > 1`` repeats the splitter
    (``shuffle=True`` and a fresh ``random_state`` per repeat, stratification and groups
    kept) for a pick closer to the one of the full grid on all repeats, at more fits; scores on
    CV splits are correlated (the training sets overlap), so a test that treats them as
    independent is overconfident; see ``rope`` and the notes.

    Parameters
    ----------
    estimator : estimator object
        Cloned for every fit.
    param_grid : dict or list of dicts, optional
        As in ``GridSearchCV``. Exactly one of ``param_grid`` and ``param_distributions``.
    param_distributions : dict or list of dicts, optional
        As in ``RandomizedSearchCV``; ``n_iter`` settings are drawn with ``random_state``.
    n_iter : int, optional
        Number of settings drawn from ``param_distributions`` (default 10), as in
        ``RandomizedSearchCV``. Not allowed with ``param_grid``.
    scoring, refit, n_jobs, pre_dispatch, error_score, return_train_score
        As in ``GridSearchCV``. With several metrics, the ``refit`` metric drives the race and
        the others are recorded. There is no ``direction``: scikit-learn's scorers are
        greater-is-better (losses come negated, ``"neg_log_loss"``), so the race maximises.
    verbose : int, default=0
        As in ``GridSearchCV``: ``0`` silent; ``>= 1`` one summary line of the whole search
        (candidates, splits, most fits) and one line per race step (splits seen, fits so far,
        eliminated, left); ``>= 2`` also one line per eliminated candidate (its parameters,
        reason, by whom, probability) and one ``[CV] END <params>; total time=...`` line per
        fit; ``>= 3`` those fit lines also carry the split (``[CV k/N]``) and its test score.
    cv : int, cross-validation generator or iterable, default=None
        The base splitter (``None``: 5-fold, stratified for classifiers).
    n_repeats : int, optional
        How many times the base splitter is repeated. ``1`` uses ``cv`` exactly as given.
        Default (None): 1, and 3 with ``resource="n_samples"`` (3 for both in earlier versions).
    test : {"t-test", "bayes", "posterior-best", "frace", "correlated-t", "hierarchical"} or \
RacingTest, optional
        Default (None): ``"t-test"``, and ``"bayes"`` with ``resource="n_samples"``
        (``"bayes"`` for both in earlier versions). ``"t-test"``: irace's paired t-tests against
        the leader (:class:`racer.racing.trace.TRaceTest`, no correction, level 0.05; Birattari
        2009) on scores rounded to ``rope``; a candidate the leader beats or ties on every
        fold seen (and whose mean is lower) goes whatever the level: that rule is what decides on few
        folds (on coarse scores it sometimes removes the grid's eventual winner after two;
        :class:`racer.racing.cv.EarlyMargin` trades fits for that, ``docs/sklearn.md``).
        ``"bayes"``: the Bayesian nonparametric racing test (:class:`racer.BayesianTest`,
        Benavoli et al. 2015 sections 5-7) with ``small_n="reject"``, so that it can decide while there
        are fewer splits than candidates, in its imprecise-DP form (``prior="idp"`` for
        dominance, the IDP lower probability of the equivalence band): tied coarse scores are
        not evidence, so no elimination reaches 0.999 before 10 splits (``docs/sklearn.md``,
        "Tied scores"). Its levels (joint dominance credibility 0.85, equivalence band
        ``eps=0.1`` at lower probability 0.8) were chosen on pilot seeds to spend at most
        half the grid's fits: tied pairs leave after 8 tied splits (p = 0.83), a candidate
        losing every split after 4 (p = 0.94). ``"posterior-best"``: :class:`racer.PosteriorBestTest` (with its tie
        guard). ``"frace"``: the F-race baseline
        (:class:`racer.racing.frace.FRaceTest`). ``"correlated-t"``:
        :class:`racer.racing.CorrelatedTTestRacing`, the Bayesian correlated t-test against
        the leader with the Nadeau-Bengio correction. ``"hierarchical"``: several data sets with folds
        inside -- ``X`` stacks data sets sharing one feature space, ``fit(X, y,
        groups=data_set_of_each_sample)``, and every split lies inside one data set (``cv=
        WithinGroupKFold(k)``); :class:`racer.HierarchicalRacingTest` then compares the
        leaders with Corani et al.'s (2017) hierarchical model (``rope`` is its rope) and
        ``"posterior-best"`` handles the rest (``docs/sklearn.md``, "Several data sets").
        The names are those of :mod:`racer.racing.registry`, which also accepts their other
        spellings here (``"bayesian"``, ``"F-test"``, ...).
        A :class:`racer.racing.base.RacingTest` instance is used as given (``rope`` then does
        not apply).
    rope : float, default=0.005
        Practical equivalence in units of the ``refit`` score. For ``"correlated-t"`` the
        ROPE of the mean difference; for the rank tests a score resolution: scores are
        rounded to multiples of ``rope`` before the test sees them, so smaller differences
        count as ties (see ``docs/sklearn.md``). ``0`` disables it.
    first_test : int, optional
        Splits every candidate is evaluated on before the first test. Default (None): 2 with
        the ``"t-test"``, 4 with any other test (4 for every test in earlier versions).
    budget : int, optional
        Fits the race may start (the final refit not included): a hard limit, racer's
        ``budget`` everywhere (docs/conventions.md). Formerly ``max_fits``, still accepted
        with a FutureWarning.
    resource : {"splits", "n_samples"}, default="splits"
        What grows as the race goes on. ``"splits"``: every fit trains on its split's whole
        training part; only the number of splits grows. ``"n_samples"``: racing on growing
        subsamples *and* folds, for a wall time like ``HalvingGridSearchCV``'s. The splits of
        repeat ``r`` (the race visits repeat by repeat) train on
        ``min(n_train, first * factor**r)`` samples drawn without replacement from their
        training part (stratified for classifiers); test parts are whole, and all survivors
        of a split train on the same subsample, so each split is still a fair block for the
        rank tests. Below the last repeat, eliminations never leave fewer survivors than
        Halving would keep after that level (``ceil(n_candidates / factor**(r + 1))``):
        low-fidelity scores may thin the field but not decide it. The winner is ranked on its
        mean at the largest size it reached (``best_score_`` too); at least two candidates
        reach the last repeat, so the winner is chosen on whole training parts unless the
        test decides between those two earlier. At the end of each level below the last the
        field is also cut to that quota by the level's mean, as Halving cuts a rung
        (``elimination_reason`` ``"halving"``, probability NaN; in ``race_`` these are
        "dominated" with a NaN probability). Needs ``n_repeats >= 2`` to subsample at all.
    min_resources : int or "exhaust", default="exhaust"
        ``resource="n_samples"`` only: training samples of the first repeat's fits.
        ``"exhaust"``: the size whose last repeat trains on everything, but at least
        Halving's "smallest" (2 samples per class and fold, for classifiers).
    factor : float, default=3
        ``resource="n_samples"`` only: growth of the training size from one repeat to the
        next, and the share of candidates Halving would keep (as in ``HalvingGridSearchCV``).
    executor : concurrent.futures.Executor, optional
        Runs the fits of a block instead of joblib (``n_jobs`` is then ignored); any object
        with ``submit`` returning futures works (a Dask ``Client``, a process pool).
    timeout : float, optional
        Seconds one fit (with its scoring) may take; None: no limit. With a timeout the fits
        run in racer's worker processes (``n_jobs`` of them, at least one) instead of joblib:
        a fit over its limit is stopped (its worker killed and replaced) and a worker that
        dies (a segfault in a solver) is recorded, naming the candidate and split; both count
        as failed fits (``error_score``, ``n_fits_failed``). The estimator, data and
        ``fit_params`` are sent to the workers by value (cloudpickle: an estimator class
        defined in a notebook or an unguarded script works). Cannot be
        combined with ``executor`` (a ValueError).
    random_state : None, int, numpy Generator, RandomState or SeedSequence
        Seeds the repeats, the visit order, the sampled candidates and the test's Monte Carlo.
    progress : bool, default=False
        Show the race's progress on stderr (:class:`racer.progress.ProgressLine`: a bar over
        the splits, or ``budget``, redrawn in place in a terminal or a notebook; a line at
        each quarter in a log). Off by default: a search is silent at ``verbose=0``, as in
        scikit-learn.

    Attributes
    ----------
    cv_results_ : dict of arrays
        One row per candidate with the usual keys (``split{k}_test_<metric>`` is NaN where the
        race did not evaluate split ``k``; means and stds are over the evaluated splits), plus
        ``n_splits_evaluated``, ``eliminated_at`` (splits seen when eliminated, -1 for
        survivors), ``elimination_reason`` (``"dominated"``, ``"indistinguishable"``,
        ``"failed"`` or ``""``), ``eliminated_by`` (candidate index or -1),
        ``elimination_probability`` (the test's probability behind the decision, NaN for
        survivors), ``n_fits_failed`` and ``n_resources`` (the largest training size the
        candidate was fitted on, as ``HalvingGridSearchCV``'s key). ``rank_test_<metric>`` ranks first by
        ``n_splits_evaluated`` (further is better, as in irace) and then by the mean, so that
        means over different sets of splits are never compared.
    best_estimator_, best_index_, best_params_, best_score_, refit_time_, scorer_,
    multimetric_, n_splits_
        As in ``GridSearchCV``; ``n_splits_`` counts every materialised split (folds x
        repeats) and ``best_score_`` is the winner's mean over the splits it was evaluated on.
    n_repeats_ : int
        Repeats actually used.
    n_resources_ : ndarray of int
        Training samples of the fits on split ``k`` (the whole training part unless
        ``resource="n_samples"``).
    splits_ : list of (ndarray, ndarray)
        The materialised (train, test) index arrays, split ``k`` at position ``k``: pass them
        as ``GridSearchCV(cv=search.splits_)`` to see what the full grid would have said on
        the very same splits.
    split_order_ : ndarray of int
        The splits (indices ``k`` of ``split{k}_*``) in the order the race visited them.
    split_datasets_ : tuple or None
        With ``test="hierarchical"``: the data set (``groups`` label) of each split; else None.
    n_evaluations_ : int
        Fits run by the race (failed ones included; the final refit not included), as
        ``race_.n_evaluations``: racer's name for the evaluations used (docs/conventions.md).
    n_fits_ : int
        The same, under its earlier name (kept as an alias).
    n_candidates_, n_remaining_candidates_ : int
        Candidates raced, and survivors at the end.
    race_ : racer.RaceResult
        The engine's result, with the history of eliminations; its candidates are the
        parameter dicts (``race_.best`` is ``best_params_``, ``race_.summary()`` lists
        parameters), in the order of ``cv_results_["params"]`` (so ``race_.best_index`` and
        ``EliminationRecord.candidate_index`` index it), and its instances are split indices.

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.
    .. [2] Corani, G., Benavoli, A., Demšar, J., Mangili, F. & Zaffalon, M. (2017). Statistical
       comparison of classifiers through Bayesian hierarchical modelling. Machine Learning
       106(11), 1817–1837.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from racer.adapters.sklearn import RaceSearchCV
    >>> X, y = load_iris(return_X_y=True)
    >>> search = RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 5, 15, 40, 80]},
    ...                       random_state=0).fit(X, y)
    >>> search.best_params_["n_neighbors"] in (5, 15)
    True
    >>> int(search.n_evaluations_) < 5 * search.n_splits_
    True

    Racing on growing subsamples (here 30, 90 and all 120 training samples per split):

    >>> fast = RaceSearchCV(KNeighborsClassifier(), {"n_neighbors": [1, 5, 15, 40, 80]},
    ...                     resource="n_samples", random_state=0).fit(X, y)
    >>> sorted(set(fast.n_resources_.tolist()))
    [30, 90, 120]
    >>> fast.best_params_["n_neighbors"] in (1, 5, 15)
    True
    >>> int(fast.cv_results_["n_resources"][fast.best_index_])  # chosen on full training parts
    120
    """

    def __init__(
        self,
        estimator,
        param_grid=None,
        *,
        param_distributions=None,
        n_iter=None,
        scoring=None,
        refit=True,
        cv=None,
        n_repeats=None,
        test=None,
        rope=0.005,
        first_test=None,
        budget=None,
        resource="splits",
        min_resources="exhaust",
        factor=3,
        n_jobs=None,
        executor=None,
        timeout=None,
        pre_dispatch="2*n_jobs",
        error_score=np.nan,
        return_train_score=False,
        random_state=None,
        verbose=0,
        progress=False,
        max_fits="deprecated",
    ):
        super().__init__(
            estimator=estimator,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.param_grid = param_grid
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.n_repeats = n_repeats
        self.test = test
        self.rope = rope
        self.first_test = first_test
        self.budget = budget
        self.resource = resource
        self.min_resources = min_resources
        self.factor = factor
        self.executor = executor
        self.timeout = timeout
        self.random_state = random_state
        self.progress = progress
        self.max_fits = max_fits

    # scikit-learn's own validation (InvalidParameterError, a ValueError and TypeError naming
    # the parameter and quoting the value), run by fit's _fit_context as in every search CV;
    # _check_race_params adds what a per-parameter constraint cannot say (exclusive pairs,
    # finiteness, the timeout/executor clash).
    _parameter_constraints: dict = {
        **BaseSearchCV._parameter_constraints,
        "param_grid": [dict, list, None],
        "param_distributions": [dict, list, None],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_repeats": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "test": [StrOptions(set(_TEST_NAMES)), HasMethods(["decide"]), None],
        "rope": [Interval(numbers.Real, 0, None, closed="left")],
        "first_test": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "budget": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "resource": [StrOptions({"splits", "n_samples"})],
        "min_resources": [Interval(numbers.Integral, 1, None, closed="left"),
                          StrOptions({"exhaust"})],
        "factor": [Interval(numbers.Real, 1, None, closed="neither")],
        "executor": [HasMethods(["submit"]), None],
        # The range (> 0, finite) is racer's check_timeout, shared with IteratedRace.
        "timeout": [numbers.Real, None],
        # racer's one seed convention (README, "Conventions"): scikit-learn's "random_state"
        # (None, RandomState, an int below 2**32) with any non-negative int, as racer takes,
        # a Generator and a SeedSequence.
        "random_state": [Interval(numbers.Integral, 0, None, closed="left"),
                         np.random.RandomState, np.random.Generator, np.random.SeedSequence, None],
        "progress": ["boolean"],
        # The former name of `budget`, warned about in fit.
        "max_fits": [Interval(numbers.Integral, 1, None, closed="left"), None,
                     Hidden(StrOptions({"deprecated"}))],
    }

    def _run_search(self, evaluate_candidates, *, callback_ctx=None):
        # BaseSearchCV.fit would fit every candidate on every split; the race has its own fit.
        raise NotImplementedError("RaceSearchCV runs its race in fit(); _run_search is unused")

    # ---------------------------------------------------------------------------- checks

    def _check_race_params(self):
        self._check_search_space()
        check_int(self.n_repeats, "n_repeats", minimum=1, allow_none=True)
        check_int(self.first_test, "first_test", minimum=1, allow_none=True)
        check_int(self.budget, "budget", minimum=1, allow_none=True)
        if isinstance(self.rope, bool) or not isinstance(self.rope, numbers.Real) or not (
            np.isfinite(self.rope) and self.rope >= 0
        ):
            raise ValueError(f"`rope` must be a finite number >= 0; got {describe(self.rope)}")
        _check_test(self.test)
        if not (
            (isinstance(self.error_score, str) and self.error_score == "raise")
            or (isinstance(self.error_score, numbers.Real) and not isinstance(self.error_score, bool))
        ):
            raise ValueError(
                f"`error_score` must be 'raise' or a number; got {describe(self.error_score)}"
            )
        self._check_execution()
        if not isinstance(self.random_state, np.random.RandomState):
            check_random_state(self.random_state)  # a RandomState would advance: fit draws

    def _check_search_space(self):
        """Exactly one of ``param_grid`` and ``param_distributions``; ``n_iter`` with the
        latter only."""
        if (self.param_grid is None) == (self.param_distributions is None):
            raise ValueError(
                "exactly one of `param_grid` and `param_distributions` must be given; got "
                f"param_grid={describe(self.param_grid)}, "
                f"param_distributions={describe(self.param_distributions)}"
            )
        if self.param_grid is not None and self.n_iter is not None:
            raise ValueError(
                "`n_iter` only applies to `param_distributions`; got "
                f"n_iter={self.n_iter!r} with a param_grid"
            )
        check_int(self.n_iter, "n_iter", minimum=1, allow_none=True)

    def _check_execution(self):
        """``executor``, ``timeout`` and ``n_jobs`` as they can go together: a timeout needs
        racer's own worker processes."""
        if self.executor is not None and not hasattr(self.executor, "submit"):
            raise TypeError(
                "`executor` must have a submit() method (concurrent.futures.Executor); got "
                f"{describe(self.executor)}"
            )
        timeout = check_timeout(self.timeout)
        if timeout is not None and self.executor is not None:
            raise ValueError(
                f"`timeout`={timeout!r} cannot be combined with `executor`: racer can only stop "
                "fits in its own worker processes; use the executor's own time limits"
            )
        if timeout is not None:
            effective_n_jobs(self.n_jobs)

    def _budget(self):
        """``budget``, or what was given as ``max_fits``, its former name."""
        if isinstance(self.max_fits, str) and self.max_fits == "deprecated":
            return self.budget
        return self.max_fits

    def _warn_max_fits(self) -> None:
        """``max_fits`` is the former name of ``budget``: a FutureWarning, or a TypeError
        when both are given."""
        if isinstance(self.max_fits, str) and self.max_fits == "deprecated":
            return
        if self.budget is not None:
            raise TypeError(
                "`max_fits` is the former name of `budget`: give `budget` only; got "
                f"max_fits={self.max_fits!r} and budget={self.budget!r}"
            )
        warnings.warn(
            "`max_fits` is renamed `budget` (racer's one name for it across its entry "
            f"points); `max_fits` will be removed: pass budget={self.max_fits!r}",
            # fit <- scikit-learn's _fit_context <- the caller
            FutureWarning, stacklevel=4,
        )

    def _design(self) -> tuple[int, object, int]:
        """``(n_repeats, test, first_test)`` with None resolved (:func:`resolve_design`)."""
        return resolve_design(self.n_repeats, self.test, self.first_test, self.resource)

    def _candidate_params(self, rng: np.random.Generator) -> list[dict]:
        if self.param_grid is not None:
            candidates = list(ParameterGrid(self.param_grid))
        else:
            n = 10 if self.n_iter is None else int(self.n_iter)
            seed = int(rng.integers(0, 2**31 - 1))
            candidates = list(ParameterSampler(self.param_distributions, n, random_state=seed))
        if not candidates:
            raise ValueError("the parameter grid is empty: there are no candidates to race")
        return candidates

    # ------------------------------------------------------------------------------ fit

    @_fit_context(
        # The estimator inside is validated by its own fit, as in BaseSearchCV.fit.
        prefer_skip_nested_validation=False
    )
    def fit(self, X, y=None, **params):
        """Race the candidates over the cross-validation splits, then refit the winner.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), optional
        **params : dict
            ``groups`` goes to the splitter; everything else to the estimator's ``fit``
            (arrays of length ``n_samples`` are split with the data).

        Returns
        -------
        self
        """
        self._check_race_params()
        self._warn_max_fits()
        rng = check_random_state(self.random_state)  # racer's one seed convention
        # Draw every seed up front so that each use has its own stream whatever the others do.
        seed_candidates, seed_splits, seed_order, seed_race = (
            np.random.default_rng(s) for s in rng.integers(0, 2**63 - 1, size=4)
        )
        # Drawn after the four above so that resource="splits" races keep their seeds.
        seed_subsample = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))
        candidates = self._candidate_params(seed_candidates)

        X, y = indexable(X, y)
        fit_params = dict(params)
        groups = fit_params.pop("groups", None)
        fit_splits = self._plan_splits(X, y, groups, (seed_splits, seed_order, seed_subsample))

        base_estimator = clone(self.estimator)
        with Fits(self, base_estimator, candidates, X, y, fit_splits, fit_params) as fits:
            try:
                race = self._race(candidates, fit_splits, fits, seed_race)
            except RaceFailedError as exc:
                # Already a ValueError (scikit-learn's type for a search whose every fit
                # failed); also a TypeError when every fit raised one.
                if fits.outcomes and all(o.get("type_error") for o in fits.outcomes.values()):
                    raise SearchTypeError(str(exc), exc.failures, exc.n_evaluations) from exc
                raise
        fits.finish()
        self._store_results(candidates, fits, race)
        if self.refit:
            self._refit_best(base_estimator, X, y, fit_params)
        self.scorer_ = self._build_scorer()
        return self

    def _plan_splits(self, X, y, groups, rngs) -> list:
        """Set ``n_repeats_``, ``n_splits_``, ``splits_``, ``split_order_``,
        ``split_datasets_`` and ``n_resources_``; return the ``(train, test)`` pairs the fits
        use (training parts subsampled with ``resource="n_samples"``)."""
        classifier = is_classifier(self.estimator)
        n_repeats, test, _ = self._design()
        plan = plan_splits(
            check_cv(self.cv, y, classifier=classifier), X, y, groups,
            n_repeats=n_repeats, resource=self.resource,
            min_resources=self.min_resources, factor=self.factor,
            y_strata=y if classifier else None,
            by_dataset=(isinstance(test, str)
                        and registry.lookup(test).name == "hierarchical"),
            rngs=rngs,
        )
        self.n_repeats_ = plan.n_repeats
        self.n_splits_ = len(plan.splits)
        self.splits_ = plan.splits
        self.split_order_ = plan.order
        self.split_datasets_ = plan.datasets
        self.n_resources_ = plan.n_resources
        return plan.fit_splits

    def _store_results(self, candidates, fits, race) -> None:
        """Set the race's attributes, ``cv_results_`` and (where there is one) the winner."""
        self.multimetric_ = fits.multimetric
        self.race_ = race
        self.n_evaluations_ = self.n_fits_ = len(fits.outcomes)
        self.n_candidates_ = len(candidates)
        self.n_remaining_candidates_ = len(race.survivor_indices)
        failures = [(u, o["error"]) for u, o in fits.outcomes.items() if o["failed"]]
        if failures:
            warn_fit_failures(failures, len(fits.outcomes), self.error_score)
        results, evaluated = cv_results(
            candidates, fits.outcomes, fits.names, race.history, n_splits=self.n_splits_,
            n_resources=self.n_resources_, error_score=self.error_score,
            return_train_score=self.return_train_score,
            by_largest_size=self.resource == "n_samples",
        )
        self.cv_results_ = results
        if self.refit or not self.multimetric_:
            self._select_best(results, fits.refit_metric, evaluated)

    def _select_best(self, results, refit_metric, evaluated) -> None:
        if callable(self.refit):
            best_index = self.refit(results)
            if not isinstance(best_index, numbers.Integral):
                raise TypeError("best_index_ returned is not an integer")
            if best_index < 0 or best_index >= len(results["params"]):
                raise IndexError("best_index_ index out of range")
        else:
            best_index = int(np.argmin(results[f"rank_test_{refit_metric}"]))
            self.best_score_ = results[f"mean_test_{refit_metric}"][best_index]
            if self.resource == "n_samples":
                self.best_score_ = top_level_mean(
                    results, refit_metric, self.n_resources_, results["n_resources"], evaluated,
                )[best_index]
        self.best_index_ = int(best_index)
        self.best_params_ = results["params"][self.best_index_]

    def _refit_best(self, base_estimator, X, y, fit_params) -> None:
        self.best_estimator_ = clone(base_estimator).set_params(
            **clone(self.best_params_, safe=False)
        )
        start = time.time()
        if y is not None:
            self.best_estimator_.fit(X, y, **fit_params)
        else:
            self.best_estimator_.fit(X, **fit_params)
        self.refit_time_ = time.time() - start
        if hasattr(self.best_estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.best_estimator_.feature_names_in_

    def _build_scorer(self):
        scoring = self.scoring
        if isinstance(scoring, Mapping):
            return {name: check_scoring(self.estimator, scoring=s) for name, s in scoring.items()}
        if isinstance(scoring, (list, tuple, set)):
            return {name: check_scoring(self.estimator, scoring=name) for name in scoring}
        if callable(scoring):
            return scoring
        return check_scoring(self.estimator, scoring=scoring)

    # ----------------------------------------------------------------------------- race

    def _racing_test(self, rho: float):
        """The RacingTest behind ``test``, configured for correlated CV scores."""
        return cv_racing_test(self._design()[1], float(self.rope), rho,
                              getattr(self, "split_datasets_", None))

    def _race(self, candidates, fit_splits, fits, rng):
        """Race the candidates over the splits with the fits of ``fits``; return the
        :class:`~racer.result.RaceResult`."""
        race = self._new_race(candidates, fit_splits, rng)
        verbose = int(self.verbose)
        n_splits = len(fit_splits)
        if verbose > 0:
            # GridSearchCV's opening line, with the race's ceiling instead of its total.
            print(
                f"Racing {len(candidates)} candidates over {n_splits} splits "
                f"({n_splits // self.n_repeats_} folds x {self.n_repeats_} repeats), "
                f"at most {len(candidates) * n_splits} fits"
            )
        position = {int(s): k for k, s in enumerate(self.split_order_)}
        seen: set[int] = set()
        n_history = 0

        def report(race, batch):
            nonlocal n_history
            units = [(ev.candidate_index, ev.instance) for ev in batch]
            if verbose > 1:
                for c, s in units:
                    print(_fit_line(candidates[c], position[s], n_splits, fits.outcomes[c, s],
                                    verbose))
            seen.update(s for _, s in units)
            if verbose > 0:
                new = race.history[n_history:]
                n_history += len(new)
                print(
                    f"[RaceSearchCV] {len(seen)}/{n_splits} splits, "
                    f"{race.n_evaluations} fits: {len(units)} fits of "
                    f"{len({c for c, _ in units})} candidates; eliminated {len(new)}, "
                    f"{len(race.survivor_indices)} left"
                )
                if verbose > 1:
                    for record in new:
                        print(_elimination_line(record, candidates))

        with progress_line(race, bool(self.progress)):
            drive(race, fits.backend, settle=fits.settle, after_block=report)
        return race.result()

    def _new_race(self, candidates, fit_splits, rng):
        """The :class:`racer.engine.Race` over the splits, with the test for correlated CV
        scores."""
        from racer.engine import Race

        n_candidates = len(candidates)
        n_test = np.mean([len(test) for _, test in fit_splits])
        n_total = np.mean([len(train) + len(test) for train, test in fit_splits])
        requested_first_test = self._design()[2]
        first_test = min(requested_first_test, len(fit_splits))
        budget = self._budget()
        if budget is not None and budget < n_candidates * first_test:
            raise ValueError(
                f"`budget`={budget} cannot pay for the first block: {n_candidates} "
                f"candidates x {first_test} splits = {n_candidates * first_test} fits"
            )
        racing_test = self._racing_test(rho=float(n_test / n_total))
        if self.resource == "n_samples" and self.n_repeats_ > 1:
            racing_test = HalvingFloor(racing_test, n_candidates,
                                        len(fit_splits) // self.n_repeats_, self.n_repeats_,
                                        float(self.factor), cut=_SUBSAMPLE_CUT)
        if first_test < requested_first_test:
            # Fewer splits than first_test: no test may run (exactly GridSearchCV). The engine
            # refuses first_test > max_instances (a race that can never test), so say it.
            racing_test = KeepAll()
        return Race(
            # The parameter dicts themselves, so that race_.best and race_.summary() speak of
            # parameters; positions still index cv_results_.
            candidates,
            test=racing_test,
            direction="maximize",  # scikit-learn scorers: greater is better
            budget=budget,
            max_instances=len(fit_splits),
            first_test=first_test,
            instances=self.split_order_.tolist(),
            # A failed fit ranks below every successful one on its split, whatever error_score
            # is; cv_results_ still shows error_score, as GridSearchCV does.
            on_error="worst",
            winner="mean",
            random_state=int(rng.integers(0, 2**63 - 1)),
        )


def resolve_design(n_repeats, test, first_test, resource) -> tuple[int, object, int]:
    """``(n_repeats, test, first_test)`` of a ``RaceSearchCV`` with None resolved: the user's
    folds raced by irace's t-test from the second fold for ``resource="splits"``; 3 repeats and
    the Bayesian test from the fourth split for ``resource="n_samples"`` (``_SPLITS_DEFAULTS``,
    ``_SUBSAMPLE_DEFAULTS``); a named test other than the t-test starts at the fourth split."""
    defaults = _SUBSAMPLE_DEFAULTS if resource == "n_samples" else _SPLITS_DEFAULTS
    n_repeats = defaults["n_repeats"] if n_repeats is None else int(n_repeats)
    test = defaults["test"] if test is None else test
    if first_test is not None:
        first_test = int(first_test)
    elif isinstance(test, str) and registry.lookup(test).name == "t-test":
        first_test = _SPLITS_DEFAULTS["first_test"]
    else:
        first_test = _FIRST_TEST_NAMED
    return n_repeats, test, first_test


def cv_racing_test(test, rope: float, rho: float, split_datasets):
    """The RacingTest behind ``RaceSearchCV(test=...)``, configured for correlated CV scores
    (``rope``: the score resolution; ``rho``: test share of a split; ``split_datasets``: the
    data set of each split, for ``"hierarchical"``)."""
    if not isinstance(test, str):
        return test
    entry = registry.lookup(test)
    if entry.name == "t-test":
        # irace's paired t-tests against the leader (TRaceTest); with the score resolution
        # a leader that is ahead by less than ``rope`` on a fold does not count as ahead.
        inner = entry.build()
        return ScoreResolution(inner, rope) if rope > 0 else inner
    if entry.name == "bayesian":
        # small_n: the Friedman ellipsoid (eq. 19) is undefined while n <= m - 1, and a CV
        # race rarely has more splits than candidates, so "hold" would never decide. On
        # pilot seeds (docs/sklearn.md) "chi2" sometimes never opened the gate (100% of
        # the fits), while "reject" (pairwise joint sign tests decide alone) used 39% of
        # the fits with a median reference rank of 1.
        # prior="idp" for dominance (a 5-0 record is 0.969, not 1; 0.999 needs 10 wins) and
        # the IDP lower band for equivalence: coarse tied scores give no near-certain
        # elimination from a few splits (docs/sklearn.md "Tied scores").
        bayes = entry.build(small_n=_BAYES_SMALL_N, prior="idp",
                            credibility=_DOMINANCE_CREDIBILITY, eps=_EQUIVALENCE_EPS)
        inner = ImpreciseEquivalence(bayes, _EQUIVALENCE_CREDIBILITY, bayes.eps,
                                      bayes.prior_strength)
        return ScoreResolution(inner, rope) if rope > 0 else inner
    if entry.name in ("posterior-best", "F-test"):
        # PosteriorBestTest's tie guard caps every elimination on tied splits by the IDP
        # sign test.
        inner = entry.build()
        return ScoreResolution(inner, rope) if rope > 0 else inner
    if entry.name == "hierarchical":
        # Instances are split indices; split_datasets_ names the data set of each.
        # the base as before the endgame stop: the hierarchical race decides as it did
        from racer.racing.posterior_best import OPTIONS_BEFORE_ISSUE_20

        base = registry.lookup("posterior-best").build(**OPTIONS_BEFORE_ISSUE_20)
        return entry.build(
            test_fraction=rho, rope=rope, group=split_datasets,
            base=ScoreResolution(base, rope) if rope > 0 else base,
        )
    return entry.build(rho=rho, rope=rope)


def _params_text(params: Mapping) -> str:
    """``a=1, b=x``, keys sorted, as scikit-learn's fit lines print parameters."""
    return ", ".join(f"{k}={params[k]}" for k in sorted(params))


def _fit_line(params, position, n_splits, out, verbose) -> str:
    """One fit as ``GridSearchCV`` prints it at ``verbose >= 2`` (``>= 3``: with the split
    and its score), right-aligned to 80 columns like scikit-learn's ``[CV] END`` lines."""
    progress = f" {position + 1}/{n_splits}" if verbose > 2 else ""
    start = f"[CV{progress}] END "
    result = _params_text(params) + ";"
    if verbose > 2:
        if out["failed"]:
            result += " score=failed"
        else:
            for name in sorted(out["test"]):
                label = "score" if name == "score" else name
                if out["train"]:
                    result += (f" {label}=(train={out['train'][name]:.3f}, "
                               f"test={out['test'][name]:.3f})")
                else:
                    result += f" {label}={out['test'][name]:.3f}"
    total = out["fit_time"] + out["score_time"]
    result += f" total time={total:5.1f}s"
    return start + "." * max(0, 80 - len(start) - len(result)) + result


def _elimination_line(record, candidates) -> str:
    """One elimination as ``verbose >= 2`` prints it."""
    by = "" if record.by_index is None else (
        f" by #{record.by_index} {_params_text(candidates[record.by_index])}"
    )
    return (
        f"[RaceSearchCV]   eliminated #{record.candidate_index} "
        f"{_params_text(candidates[record.candidate_index])}: "
        f"{record.reason}{by} (p={record.probability:.4g}) "
        f"after {record.n_instances} splits"
    )

