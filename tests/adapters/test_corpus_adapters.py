"""A corpus of malformed inputs to the racing tests and the adapters.

BayesianTest / FRaceTest / CorrelatedTTestRacing (constructors and ``decide``), RaceSearchCV
parameters, RacingPruner, instance_objective and IteratedRace arguments. Each case must end in a
ValueError/TypeError whose message names the argument (checked by regex). Cases marked
``# fixed`` were accepted silently, or failed with a bare error, before the corpus existed.
"""

from __future__ import annotations

import numpy as np
import pytest

from racer import BayesianTest
from racer.racing.base import RaceView

optuna = pytest.importorskip("optuna")
pytest.importorskip("sklearn")

from optuna.distributions import FloatDistribution  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from racer.racing.frace import FRaceTest  # noqa: E402
from racer.adapters.optuna import IteratedRace, RacingPruner, instance_objective  # noqa: E402
from racer.adapters.sklearn import RaceSearchCV  # noqa: E402
from racer.racing import CorrelatedTTestRacing  # noqa: E402

S = np.random.default_rng(0).normal(size=(8, 3))
SPACE = {"x": FloatDistribution(-1.0, 1.0)}
X_FIT = np.random.default_rng(1).normal(size=(30, 2))
Y_FIT = np.repeat([0, 1], 15)


def _evaluate(params, instance):
    return params["x"] ** 2 + instance


def _search(**kwargs):
    # Every case below fails in the parameter checks at the start of fit(), before any fit.
    grid = kwargs.pop("param_grid", {"n_neighbors": [1, 3]})
    kwargs = {"cv": 3, "n_repeats": 1, **kwargs}
    return RaceSearchCV(KNeighborsClassifier(), grid, **kwargs).fit(X_FIT, Y_FIT)


CASES = [
    # --- BayesianTest ---
    pytest.param(lambda: BayesianTest(credibility=1.0), ValueError, r"`credibility`",
                 id="bayes-credibility-one"),
    pytest.param(lambda: BayesianTest(credibility="0.9"), TypeError, r"`credibility`",
                 id="bayes-credibility-string"),
    pytest.param(lambda: BayesianTest(eps=0.5), ValueError, r"`eps`", id="bayes-eps-half"),
    pytest.param(lambda: BayesianTest(prior_strength=True), TypeError, r"`prior_strength`",
                 id="bayes-prior-strength-bool"),
    pytest.param(lambda: BayesianTest(n_samples=50), ValueError, r"`n_samples`",
                 id="bayes-too-few-samples"),
    pytest.param(lambda: BayesianTest(small_n="wait"), ValueError, r"`small_n`",
                 id="bayes-unknown-small-n"),
    pytest.param(lambda: BayesianTest(gate_two="no"), TypeError, r"`gate_two`",
                 id="bayes-gate-two-string"),
    pytest.param(lambda: BayesianTest(statements="some"), ValueError, r"`statements`",
                 id="bayes-unknown-statements"),
    # --- RaceView, what decide() reads (built from a score matrix by the user or a test) ---
    pytest.param(lambda: RaceView.from_scores(np.where(S > 1, np.nan, S)), ValueError,
                 r"`scores` must be finite", id="view-nan-scores"),
    pytest.param(lambda: RaceView.from_scores(S, [0, 0, 1]), ValueError,
                 r"`ids` must not repeat", id="view-repeated-ids"),  # fixed
    pytest.param(lambda: RaceView.from_scores(S, [0.5, 1.5, 2.5]), ValueError,
                 r"`ids` must hold one integer per column", id="view-float-ids"),
    pytest.param(lambda: RaceView.from_scores(S, np.arange(2)), ValueError,
                 r"`ids` must hold one integer per column", id="view-short-ids"),
    pytest.param(lambda: RaceView.from_scores([["1", "2"], ["3", "4"]]), TypeError,
                 r"`scores`", id="view-digit-strings"),  # fixed
    pytest.param(lambda: RaceView.from_scores(S > 0), TypeError, r"`scores` .*not booleans",
                 id="view-boolean-scores"),  # fixed
    pytest.param(lambda: BayesianTest().decide(S, np.random.default_rng(0)), TypeError,
                 r"`view` must be a racer.racing.base.RaceView", id="bayes-decide-array"),  # fixed
    # --- FRaceTest ---
    pytest.param(lambda: FRaceTest(alpha=1.0), ValueError, r"`alpha`", id="frace-alpha-one"),
    pytest.param(lambda: FRaceTest(alpha=True), TypeError, r"`alpha`", id="frace-alpha-bool"),
    pytest.param(lambda: FRaceTest(alpha=np.nan), ValueError, r"`alpha`", id="frace-alpha-nan"),
    pytest.param(lambda: FRaceTest(post_hoc=None), ValueError, r"`post_hoc`",
                 id="frace-post-hoc-none"),
    pytest.param(lambda: FRaceTest(gate=1), TypeError, r"`gate`", id="frace-gate-int"),
    pytest.param(lambda: FRaceTest().decide(S, None), TypeError,
                 r"`view` must be a racer.racing.base.RaceView", id="frace-decide-array"),  # fixed
    # --- CorrelatedTTestRacing (scikit-learn adapter) ---
    pytest.param(lambda: CorrelatedTTestRacing(rho="0.2"), TypeError, r"`rho`",
                 id="corr-t-rho-string"),  # fixed
    pytest.param(lambda: CorrelatedTTestRacing(rho=None), TypeError, r"`rho`",
                 id="corr-t-rho-none"),  # fixed
    pytest.param(lambda: CorrelatedTTestRacing(rho=1.0), ValueError, r"`rho`",
                 id="corr-t-rho-one"),
    pytest.param(lambda: CorrelatedTTestRacing(rope="x"), TypeError, r"`rope`",
                 id="corr-t-rope-string"),  # fixed
    pytest.param(lambda: CorrelatedTTestRacing(credibility="x"), TypeError, r"`credibility`",
                 id="corr-t-credibility-string"),  # fixed
    pytest.param(lambda: CorrelatedTTestRacing(credibility=0.4), ValueError, r"`credibility`",
                 id="corr-t-credibility-below-half"),
    pytest.param(lambda: CorrelatedTTestRacing().decide(S, None), TypeError,
                 r"`view` must be a racer.racing.base.RaceView", id="corr-t-decide-array"),  # fixed
    # --- RaceSearchCV parameters ---
    pytest.param(lambda: _search(n_repeats=0), ValueError, r"'n_repeats' parameter of RaceSearchCV", id="search-no-repeats"),
    pytest.param(lambda: _search(n_repeats=True), TypeError, r"`n_repeats`",
                 id="search-repeats-bool"),
    pytest.param(lambda: _search(first_test=2.0), TypeError, r"'first_test' parameter of RaceSearchCV",
                 id="search-first-test-float"),
    pytest.param(lambda: _search(max_fits=0), ValueError, r"'max_fits' parameter of RaceSearchCV", id="search-zero-fits"),
    pytest.param(lambda: _search(rope=-0.1), ValueError, r"'rope' parameter of RaceSearchCV", id="search-negative-rope"),
    pytest.param(lambda: _search(rope=np.nan), ValueError, r"'rope' parameter of RaceSearchCV", id="search-nan-rope"),
    pytest.param(lambda: _search(test="wilcoxon"), ValueError, r"'test' parameter of RaceSearchCV must be a str among",
                 id="search-unknown-test"),
    pytest.param(lambda: _search(test=3), TypeError, r"'test' parameter of RaceSearchCV", id="search-test-int"),
    pytest.param(lambda: _search(error_score="nan"), ValueError, r"'error_score' parameter of RaceSearchCV",
                 id="search-error-score-string"),
    pytest.param(lambda: _search(executor="pool"), TypeError, r"'executor' parameter of RaceSearchCV",
                 id="search-executor-string"),
    pytest.param(lambda: _search(random_state="x"), TypeError, r"'random_state' parameter of RaceSearchCV",
                 id="search-random-state-string"),
    pytest.param(lambda: _search(random_state=True), TypeError, r"`random_state`",
                 id="search-random-state-bool"),  # fixed
    pytest.param(lambda: _search(random_state=-3), ValueError, r"'random_state' parameter of RaceSearchCV",
                 id="search-random-state-negative"),
    pytest.param(lambda: _search(n_iter=3), ValueError, r"`n_iter` only applies",
                 id="search-n-iter-with-grid"),
    pytest.param(lambda: _search(n_iter=0), ValueError, r"'n_iter' parameter of RaceSearchCV",
                 id="search-n-iter-zero"),
    pytest.param(lambda: _search(verbose="loud"), ValueError, r"'verbose' parameter of RaceSearchCV",
                 id="search-verbose-string"),
    pytest.param(lambda: _search(return_train_score="yes"), ValueError,
                 r"'return_train_score' parameter of RaceSearchCV", id="search-train-score-string"),
    pytest.param(lambda: RaceSearchCV(KNeighborsClassifier()).fit(X_FIT, Y_FIT), ValueError,
                 r"exactly one of `param_grid` and `param_distributions`", id="search-no-grid"),
    pytest.param(lambda: _search(param_grid=[]), ValueError, r"parameter grid is empty",
                 id="search-empty-grid-list"),
    # --- RacingPruner ---
    pytest.param(lambda: RacingPruner(test="wilcoxon"), ValueError, r"`test`",
                 id="pruner-unknown-test"),
    pytest.param(lambda: RacingPruner(credibility=1.0), ValueError,
                 r"`credibility` must lie in \(0, 1\); got 1.0", id="pruner-credibility-one"),
    pytest.param(lambda: RacingPruner(eps=0.5), ValueError, r"`eps`", id="pruner-eps-half"),
    pytest.param(lambda: RacingPruner(rope=np.nan), ValueError, r"`rope`", id="pruner-rope-nan"),
    pytest.param(lambda: RacingPruner(top_k=0), ValueError, r"`top_k`", id="pruner-top-k-zero"),
    pytest.param(lambda: RacingPruner(n_startup_steps=1), ValueError, r"`n_startup_steps`",
                 id="pruner-one-startup-step"),
    pytest.param(lambda: RacingPruner(random_state=True), TypeError, r"`random_state`",
                 id="pruner-random-state-bool"),
    pytest.param(lambda: RacingPruner(random_state=np.random.PCG64(0)), TypeError,
                 r"`random_state` must be .*; got <numpy\.random\._pcg64\.PCG64",
                 id="pruner-random-state-bit-generator"),
    pytest.param(lambda: RacingPruner(test="signed-rank", prior="idp"), ValueError, r"`prior",
                 id="pruner-idp-signed-rank"),
    # --- instance_objective ---
    pytest.param(lambda: instance_objective(3, [1, 2]), TypeError, r"`evaluate`",
                 id="objective-not-callable"),
    pytest.param(lambda: instance_objective(_evaluate, "abc"), TypeError, r"`instances`",
                 id="objective-instances-string"),
    pytest.param(lambda: instance_objective(_evaluate, []), ValueError, r"`instances`",
                 id="objective-no-instances"),
    pytest.param(lambda: instance_objective(_evaluate, (i for i in range(3))), TypeError,
                 r"`instances`", id="objective-instances-generator"),
    pytest.param(lambda: instance_objective(_evaluate, {"b", "a", "c"}), TypeError,
                 r"`instances` must be an ordered sequence", id="objective-instances-set"),  # fixed
    pytest.param(lambda: instance_objective(_evaluate, {"a": 1}), TypeError,  # fixed
                 r"`instances` is a dict, which iterates over its keys \(\['a'\]\): pass "
                 r"list\(instances.values\(\)\)", id="objective-instances-dict"),
    pytest.param(lambda: instance_objective(_evaluate, [1, 2], on_prune="skip"), ValueError,
                 r"`on_prune`", id="objective-unknown-on-prune"),
    pytest.param(lambda: instance_objective(_evaluate, [1, 2], random_state=1.5), TypeError,
                 r"`random_state`", id="objective-random-state-float"),
    # --- IteratedRace ---
    pytest.param(lambda: IteratedRace(_evaluate, {"x": [0, 1]}, [1, 2], budget=10), TypeError,
                 r"`search_space\['x'\]`", id="iterated-bad-distribution"),
    pytest.param(lambda: IteratedRace(_evaluate, {}, [1, 2], budget=10), ValueError,
                 r"`search_space`", id="iterated-empty-space"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, {1, 2}, budget=10), TypeError,
                 r"`instances` must be an ordered sequence", id="iterated-instances-set"),  # fixed
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=0), ValueError,
                 r"`budget`", id="iterated-zero-budget"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10.0), TypeError,
                 r"`budget`", id="iterated-float-budget"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, direction="max"),
                 ValueError, r"`direction`", id="iterated-unknown-direction"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, test="frace"),
                 TypeError, r"`test`", id="iterated-test-string"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, each_test=0),
                 ValueError, r"`each_test`", id="iterated-each-test-zero"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, executor=2),
                 TypeError, r"`executor`", id="iterated-executor-int"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, random_state="x"),
                 TypeError, r"`random_state`", id="iterated-random-state-string"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, study="s"),
                 TypeError, r"`study`", id="iterated-study-string"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, sampler="tpe"),
                 TypeError, r"`sampler` must be an optuna sampler .*; got 'tpe'",
                 id="iterated-sampler-string"),  # fixed: was accepted, failed at the first ask
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, 5, budget=10), TypeError,
                 r"`instances` must be an ordered sequence .*; got int 5",
                 id="iterated-instances-int"),  # fixed: the value is quoted
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, [1, 2], budget=10, random_state=-2),
                 ValueError, r"`random_state` must be a non-negative integer; got -2",
                 id="iterated-random-state-negative"),
    pytest.param(lambda: instance_objective(_evaluate, [1, 2], random_state=np.random.PCG64(1)),
                 TypeError, r"`random_state` must be None, a non-negative int, a numpy Generator, "
                 r"RandomState or SeedSequence; got <numpy", id="objective-random-state-bit-generator"),
    pytest.param(lambda: RacingPruner(eps=-0.01), ValueError,
                 r"`eps` \(half-width of the band \|theta - 1/2\| < eps\) must lie in \[0, 0.5\)"
                 r".*; got -0.01", id="pruner-eps-negative"),
    pytest.param(lambda: IteratedRace(_evaluate, SPACE, list(range(6)), budget=1,
                                      random_state=0).run(),
                 ValueError, r"`budget`=1: .* too small", id="iterated-budget-below-one-race"),
]


@pytest.mark.parametrize("call, error, match", CASES)
def test_malformed_input_is_refused_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_empty_param_grid_races_the_default_estimator_like_grid_search():
    # Documented (scikit-learn's convention, which RaceSearchCV keeps): param_grid={} is one
    # candidate, the estimator's own parameters; nothing to race, no error.
    search = RaceSearchCV(KNeighborsClassifier(), {}, cv=3, n_repeats=1, random_state=0)
    search.fit(X_FIT, Y_FIT)
    assert search.best_params_ == {} and len(search.cv_results_["params"]) == 1
