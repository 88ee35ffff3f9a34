"""Statistics on score matrices and paired samples, with no idea of a race.

Conventions (contract):

* a score matrix has shape ``(n_blocks, n_candidates)``: one row per instance (data set, fold,
  seed), one column per candidate; a pandas DataFrame is accepted and its column labels are
  used as candidate names;
* larger scores are better unless a function takes ``maximize=False``;
* ties count one half (the Heaviside step of the seed papers);
* every function returns a small frozen result object with named fields; frequentist results
  carry ``statistic`` and ``pvalue`` and unpack like SciPy's;
* every Monte Carlo function takes ``n_samples`` and ``random_state``; the same seed gives the
  same answer.
"""

# Each block below is owned by one module; keep them in this order.

# frequentist.py
from .frequentist import (  # noqa: E402
    ConoverResult, ControlResult, FriedmanResult, MeanRanksResult, NemenyiResult,
    P_ADJUST_METHODS, PairwiseResult, SignTestResult, WilcoxonResult, conover, control_test,
    friedman, mean_ranks_test, nemenyi, p_adjust, sign_test, sign_test_from_counts, wilcoxon,
)
# classifier_tests.py
from .classifier_tests import (  # noqa: E402
    BootstrapTestResult, CorrelatedTTestResult, McNemarResult, ProportionTestResult,
    bootstrap_test, correlated_ttest, mcnemar, proportion_test,
)
# bayesian_sign.py
from .bayesian_sign import (  # noqa: E402
    BayesianSignResult, SignCounts, bayesian_sign_test, prob_greater_from_counts,
    prob_greater_matrix, prob_indistinguishable,
)
# bayesian_signed_rank.py
from .bayesian_signed_rank import (  # noqa: E402
    IDP_PRIOR_STRENGTH, BayesianSignedRankResult, bayesian_signed_rank, signed_rank_prob,
    signed_rank_posterior_mean,
)
# bayesian_ttest.py
from .bayesian_ttest import (  # noqa: E402
    BayesianCorrelatedTTestResult, bayesian_correlated_ttest,
)
# bayesian_friedman.py
from .bayesian_friedman import (  # noqa: E402
    BayesianFriedmanResult, FriedmanAccumulator, auto_min_blocks, bayesian_friedman,
)
# joint.py
from .joint import (  # noqa: E402
    JointComparisonsResult, joint_comparisons, joint_prefix_probabilities,
)

# Everything imported above is public; the private helpers live in underscored modules.
__all__ = sorted(name for name in dir() if not name.startswith("_") and name not in {
    "frequentist", "classifier_tests", "bayesian_sign", "bayesian_signed_rank",
    "bayesian_ttest", "bayesian_friedman", "joint",
})
