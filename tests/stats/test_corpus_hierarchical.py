"""Malformed inputs to ``racer.stats.hierarchical_test``: each must raise a ValueError/TypeError
whose message names the argument (checked by regex), before any sampling starts."""

from __future__ import annotations

import numpy as np
import pytest

import racer.stats as rs

RNG = np.random.default_rng(0)
D = RNG.normal(0.01, 0.05, (4, 10))
X = RNG.uniform(0.7, 0.9, (4, 10))
Y = X + D


def _const_row():
    d = D.copy()
    d[2] = 0.03
    return d


def _nan():
    d = D.copy()
    d[1, 3] = np.nan
    return d


CASES = [
    pytest.param(lambda: rs.hierarchical_test(D[0], 0.1), ValueError, r"`diffs` must be 2-D",
                 id="diffs-1d"),
    pytest.param(lambda: rs.hierarchical_test(D[:1], 0.1), ValueError,
                 r"`diffs` needs at least 2 data sets", id="diffs-one-dataset"),
    pytest.param(lambda: rs.hierarchical_test(D[:, :1], 0.1), ValueError,
                 r"`diffs` needs at least 2 differences", id="diffs-one-fold"),
    pytest.param(lambda: rs.hierarchical_test(_nan(), 0.1), ValueError,
                 r"`diffs` must be finite; found nan at row 1, column 3", id="diffs-nan"),
    pytest.param(lambda: rs.hierarchical_test([["a", "b"], ["c", "d"]], 0.1), TypeError,
                 r"`diffs`", id="diffs-strings"),
    pytest.param(lambda: rs.hierarchical_test(D > 0, 0.1), TypeError, r"`diffs` .*not booleans",
                 id="diffs-bool"),
    pytest.param(lambda: rs.hierarchical_test([[0.1, 0.2], [0.3]], 0.1), TypeError, r"`diffs`",
                 id="diffs-ragged"),
    pytest.param(lambda: rs.hierarchical_test(_const_row(), 0.1), ValueError,
                 r"`diffs`: every difference of data set 2 equals 0.03", id="diffs-constant-row"),
    pytest.param(lambda: rs.hierarchical_test(D + 1.5, 0.1), ValueError,
                 r"`diffs`: the mean difference of data set 0 .*rescale", id="diffs-out-of-range"),
    pytest.param(lambda: rs.hierarchical_test(np.tile([0.25, -0.25, 0.5, -0.5], (3, 1)), 0.1),
                 ValueError, r"`diffs`: every data set has the same mean", id="diffs-equal-means"),
    pytest.param(lambda: rs.hierarchical_test(X, 0.1, y=Y[:, :5]), ValueError,
                 r"`diffs` \(x\) and `y` must have the same shape", id="y-shape"),
    pytest.param(lambda: rs.hierarchical_test(X, 0.1, y=Y[0]), ValueError, r"`y` must be 2-D",
                 id="y-1d"),
    pytest.param(lambda: rs.hierarchical_test(X, 0.1, y=X), ValueError,
                 r"`y - x`: every difference of data set 0", id="y-equal-x"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.0), ValueError,
                 r"`test_fraction` must lie in \(0, 1\)", id="test-fraction-zero"),
    pytest.param(lambda: rs.hierarchical_test(D, 1.2), ValueError, r"`test_fraction`",
                 id="test-fraction-above-one"),
    pytest.param(lambda: rs.hierarchical_test(D, "0.1"), TypeError, r"`test_fraction`",
                 id="test-fraction-string"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, rope=-0.01), ValueError,
                 r"`rope` must be >= 0", id="rope-negative"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, rope=np.nan), ValueError, r"`rope`",
                 id="rope-nan"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, n_chains=1), ValueError,
                 r"`n_chains` must be >= 2", id="n-chains-one"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, n_chains=4.0), TypeError, r"`n_chains`",
                 id="n-chains-float"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, n_draws=5), ValueError,
                 r"`n_draws` must be >= 10", id="n-draws-small"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, n_warmup=-1), ValueError,
                 r"`n_warmup` must be >= 0", id="n-warmup-negative"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, max_retries=True), TypeError,
                 r"`max_retries`", id="max-retries-bool"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, random_state="seed"), TypeError,
                 r"`random_state`", id="random-state-string"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, random_state=-3), ValueError,
                 r"`random_state` must be a non-negative integer", id="random-state-negative"),
    pytest.param(lambda: rs.hierarchical_test(D, 0.1, groups=[0] * 4), ValueError,
                 r"`diffs` must be 1-D when `groups` is given", id="groups-with-matrix"),
    pytest.param(lambda: rs.hierarchical_test(D.ravel(), 0.1, groups=[0, 1] * 3), ValueError,
                 r"`groups` must have one label per difference", id="groups-length"),
    pytest.param(lambda: rs.hierarchical_test(D.ravel(), 0.1, groups=[0] * 40), ValueError,
                 r"`groups` needs at least 2 data sets", id="groups-one-dataset"),
    pytest.param(lambda: rs.hierarchical_test(D.ravel(), 0.1, groups=[0] * 39 + [1]),
                 ValueError, r"`groups`: data set 1 has 1 difference", id="groups-singleton"),
    pytest.param(lambda: rs.hierarchical_test(D.ravel(), 0.1, groups=[[0]] * 40), TypeError,
                 r"`groups` labels must be hashable", id="groups-unhashable"),
    pytest.param(lambda: rs.hierarchical_test(D.ravel(), 0.1, groups=7), TypeError,
                 r"`groups` must be a sequence", id="groups-scalar"),
]


@pytest.mark.parametrize("call, exc, pattern", CASES)
def test_malformed_input_names_the_argument(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
