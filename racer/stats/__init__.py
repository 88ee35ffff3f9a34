"""Statistics on score matrices and paired samples, with no idea of a race.

Conventions (contract):

* a score matrix has shape ``(n_blocks, n_candidates)``: one row per instance (data set, fold,
  seed), one column per candidate; a pandas DataFrame is accepted and its column labels are
  used as candidate names;
* larger scores are better unless a function takes ``maximize=False``;
* ties count one half (the Heaviside step of Benavoli et al. 2014 and 2015);
* every function returns a small frozen result object with named fields; frequentist results
  carry ``statistic`` and ``pvalue`` and unpack like SciPy's;
* every Monte Carlo function takes ``n_samples`` and ``random_state``; the same seed gives the
  same answer.
"""

from racer._lazy import lazy_exports as _lazy_exports

# Public name -> module that defines it. Modules load on first attribute access (PEP 562):
# ``import racer`` then pays neither for scipy.stats nor for kernels the race never calls.
_EXPORTS = {
    "ConoverResult": "frequentist",
    "ControlResult": "frequentist",
    "FriedmanResult": "frequentist",
    "MeanRanksResult": "frequentist",
    "NemenyiResult": "frequentist",
    "P_ADJUST_METHODS": "frequentist",
    "PairwiseResult": "frequentist",
    "SignTestResult": "frequentist",
    "WilcoxonResult": "frequentist",
    "conover": "frequentist",
    "conover_from_sums": "frequentist",
    "control_test": "frequentist",
    "friedman": "frequentist",
    "friedman_from_sums": "frequentist",
    "mean_ranks_test": "frequentist",
    "mean_ranks_test_from_sums": "frequentist",
    "nemenyi": "frequentist",
    "p_adjust": "frequentist",
    "sign_test": "frequentist",
    "sign_test_from_counts": "frequentist",
    "wilcoxon": "frequentist",
    "BootstrapTestResult": "classifier_tests",
    "CorrelatedTTestResult": "classifier_tests",
    "McNemarResult": "classifier_tests",
    "ProportionTestResult": "classifier_tests",
    "bootstrap_test": "classifier_tests",
    "correlated_ttest": "classifier_tests",
    "mcnemar": "classifier_tests",
    "proportion_test": "classifier_tests",
    "BayesianSignResult": "bayesian_sign",
    "SignCounts": "bayesian_sign",
    "bayesian_sign_test": "bayesian_sign",
    "prob_greater_from_counts": "bayesian_sign",
    "prob_greater_matrix": "bayesian_sign",
    "prob_indistinguishable": "bayesian_sign",
    "IDP_PRIOR_STRENGTH": "_bayesian_signed_rank",
    "BayesianSignedRankResult": "_bayesian_signed_rank",
    "bayesian_signed_rank": "_bayesian_signed_rank",
    "signed_rank_prob": "_bayesian_signed_rank",
    "signed_rank_posterior_mean": "_bayesian_signed_rank",
    "BayesianCorrelatedTTestResult": "bayesian_ttest",
    "bayesian_correlated_ttest": "bayesian_ttest",
    "bayesian_correlated_ttest_from_moments": "bayesian_ttest",
    "BayesianFriedmanResult": "_bayesian_friedman",
    "FriedmanAccumulator": "_bayesian_friedman",
    "auto_min_blocks": "_bayesian_friedman",
    "bayesian_friedman": "_bayesian_friedman",
    "bayesian_friedman_from_sums": "_bayesian_friedman",
    "RankPosteriorResult": "bayesian_mean_ranks",
    "prob_smallest": "bayesian_mean_ranks",
    "rank_posterior": "bayesian_mean_ranks",
    "rank_posterior_from_sums": "bayesian_mean_ranks",
    "JointComparisonsResult": "joint",
    "joint_comparisons": "joint",
    "joint_prefix_probabilities": "joint",
    "ParetoDominanceResult": "pareto",
    "pareto_dominance": "pareto",
    "prob_not_best": "selection",
    "ConvergenceError": "_hierarchical",
    "HierarchicalResult": "_hierarchical",
    "hierarchical_test": "_hierarchical",
    "odds_grade": "_hierarchical",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
