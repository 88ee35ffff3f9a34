"""racer.plot: every figure on real (small, seeded) races, and its input validation."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

from racer import BayesianTest, Race, race  # noqa: E402
from racer import plot  # noqa: E402
from racer.stats import bayesian_sign_test, nemenyi, prob_greater_matrix  # noqa: E402
from racer.stats import SignCounts  # noqa: E402

from _helpers.races import NOISY_CANDIDATES, noisy_score  # noqa: E402


@pytest.fixture(scope="module")
def result():
    """8 candidates, 40 instances: 5 eliminated at instance 11, 3 survivors."""
    # The test is pinned: the figures are checked against this race's known history.
    return race(noisy_score, NOISY_CANDIDATES, range(40), test=BayesianTest(), random_state=0,
                progress=False, direction="maximize")


@pytest.fixture(scope="module")
def minimize_result():
    # Minimizing the negated scores: the same race seen from the other side, with failures.
    def evaluate(c, inst):
        if c["id"] == 2 and inst == 3:
            raise RuntimeError("boom")
        return -noisy_score(c, inst)

    return Race(NOISY_CANDIDATES, test=BayesianTest(), direction="minimize", on_error="eliminate",
                random_state=1).run(
        evaluate, range(30), progress=False
    )


def _markers(fig):
    ax = fig.axes[1]
    return {c.get_gid(): len(c.get_offsets()) for c in ax.collections
            if (c.get_gid() or "").startswith("elimination-")}


@pytest.mark.slow
def test_import_racer_does_not_import_matplotlib():
    code = "import sys, racer, racer.plot, racer.report; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_timeline_one_marker_per_elimination(result):
    assert len(result.history) == 5
    fig = plot.plot_race_timeline(result)
    assert isinstance(fig, Figure)
    markers = _markers(fig)
    assert sum(markers.values()) == len(result.history)
    assert markers == {"elimination-dominated": 5}
    top, bottom = fig.axes[:2]
    assert top.get_ylabel() == "survivors"
    assert bottom.get_xlabel() == "instances evaluated"
    # The survivors curve: 8 until instance 11, then 3 to the end.
    x, y = top.lines[0].get_data()
    assert y[0] == 8 and y[-1] == 3 and x[-1] == result.n_instances
    # Each elimination is annotated with its probability and who beat it.
    texts = [t.get_text() for t in bottom.texts]
    for rec in result.history:
        assert f"p={rec.probability:.3g} by #{rec.by_index}" in texts
    # The markers sit where the candidates stopped.
    xs = sorted(fig.axes[1].collections[0].get_offsets()[:, 0])
    assert xs == sorted(rec.n_instances for rec in result.history)


def test_timeline_with_failures_and_many_candidates(minimize_result):
    res = minimize_result
    reasons = {rec.reason for rec in res.history}
    assert "failed" in reasons
    markers = _markers(plot.plot_race_timeline(res))
    assert sum(markers.values()) == len(res.history)
    assert markers["elimination-failed"] == sum(r.reason == "failed" for r in res.history)

    many = race(lambda c, i: c + np.random.default_rng([i, c]).normal(0.0, 3.0), list(range(45)),
                range(80), random_state=0, progress=False)
    fig = plot.plot_race_timeline(many)
    assert sum(_markers(fig).values()) == len(many.history)
    assert len(many.history) > 0
    assert len(fig.axes[1].texts) == 0  # too many candidates for labels: markers only


def test_score_matrix(result):
    fig = plot.plot_score_matrix(result)
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_array_equal(image, result.scores[:, result.survivor_indices])
    assert fig.axes[0].get_ylabel() == "instance"
    fig = plot.plot_score_matrix(result, candidates="all")
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (40, 8)
    # Eliminated candidates are masked (grey) after their elimination, nowhere before.
    assert int(image.mask.sum()) == 5 * (40 - 11)
    assert "higher is better" in fig.axes[1].get_ylabel()
    fig = plot.plot_score_matrix(result, candidates=[0, 7])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["#0", "#7"]


def test_evaluations(result):
    fig = plot.plot_evaluations(result)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == list(result.n_evaluated[result.ranking_indices])
    assert sum(heights) == result.n_evaluations
    assert fig.axes[0].get_ylabel() == "evaluations"


def test_pairwise_probabilities_match_stats(result):
    fig = plot.plot_pairwise_probabilities(result, candidates="survivors")
    shown = fig.axes[0].images[0].get_array()
    sub = result.scores[:, result.survivor_indices]
    wins = SignCounts.from_scores(sub).wins
    expected = prob_greater_matrix(wins)
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(shown[off], expected[off], rtol=0, atol=1e-12)
    assert shown.mask[np.eye(3, dtype=bool)].all()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        f"#{i}" for i in result.survivor_indices]
    assert len(fig.axes[0].texts) == 6  # one number per off-diagonal cell


def test_pairwise_from_array_with_minimize():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(25, 3)) + [0.0, 0.3, 2.0]
    hi = plot.plot_pairwise_probabilities(scores).axes[0].images[0].get_array()
    lo = plot.plot_pairwise_probabilities(-scores, maximize=False).axes[0].images[0].get_array()
    np.testing.assert_allclose(hi, lo, rtol=0, atol=1e-12)
    assert hi[2, 0] > 0.99  # column 2 is far better


def test_critical_difference_groups():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(30, 4)) + [0.0, 0.1, 0.2, 2.0]
    fig = plot.plot_critical_difference(scores, names=list("abcd"))
    ax = fig.axes[0]
    groups = [c for c in ax.collections if c.get_gid() == "group"]
    res = nemenyi(scores)
    # a, b, c are not separated by Nemenyi, d is separated from all of them.
    assert (res.pvalue[:3, :3] >= 0.05).all() and (res.pvalue[3, :3] < 0.05).all()
    assert len(groups) == 1
    segs = groups[0].get_segments()[0]
    np.testing.assert_allclose(
        sorted(segs[:, 0]),
        [min(res.mean_ranks[:3]) - 0.03, max(res.mean_ranks[:3]) + 0.03], atol=1e-12)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert f"CD = {res.critical_difference(0.05):.2f}" in texts
    for name in "abcd":
        assert name in texts


def test_critical_difference_on_race(result):
    fig = plot.plot_critical_difference(result, candidates="all")
    assert "11 instances" in fig.axes[0].get_title()  # the rows all 8 saw
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert all(f"#{i}" in texts for i in range(8))


def test_bayesian_critical_difference():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(30, 4)) + [0.0, 0.1, 0.2, 2.0]
    fig = plot.plot_bayesian_critical_difference(scores, random_state=0)
    groups = [c for c in fig.axes[0].collections if c.get_gid() == "group"]
    assert len(groups) == 1
    assert "candidates differ" in fig.axes[0].get_title()
    # At credibility 0.51 every pair is "ordered" unless its win counts are almost even, so
    # the bars are exactly the pairs with max(P[i, j], P[j, i]) < 0.51 (here: none).
    prob = SignCounts.from_scores(scores).prob_greater()
    together = [(i, j) for i in range(4) for j in range(i + 1, 4)
                if max(prob[i, j], prob[j, i]) < 0.51]
    fig = plot.plot_bayesian_critical_difference(scores, credibility=0.51, random_state=0)
    ranks_groups = [c for c in fig.axes[0].collections if c.get_gid() == "group"]
    assert together == [] and ranks_groups == []


def test_bayesian_cd_on_one_survivor_race():
    # One survivor: "auto" compares it with the candidates eliminated at the last step.
    res = race(lambda c, i: c + 0.3 * ((i * 5 + c) % 4), [0.0, 0.2, 3.0], range(30),
               random_state=0, progress=False)
    assert len(res.survivors) == 1
    contenders = plot.contenders(res)
    assert contenders[0] == res.best_index and len(contenders) >= 2
    fig = plot.plot_bayesian_critical_difference(res, random_state=0)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert all(f"#{i}" in texts for i in contenders)
    with pytest.raises(ValueError, match="selects 1 candidate"):
        plot.plot_critical_difference(res, candidates="survivors")


def test_posterior_simplex():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.5, 1.0, 40), rng.normal(0.0, 1.0, 40)
    fig = plot.plot_posterior_simplex(x, y, rope=0.2, names=("new", "old"), n_samples=500,
                                      random_state=3)
    ax = fig.axes[0]
    points = ax.collections[0].get_offsets()
    assert len(points) == 500
    res = bayesian_sign_test(x, y, rope=0.2, n_samples=500, random_state=3)
    s = res.posterior_samples
    np.testing.assert_allclose(points[:, 0], s[:, 2] + 0.5 * s[:, 1], rtol=0, atol=1e-12)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert f"new better\nP = {res.prob_x_better:.3f}" in texts
    assert f"old better\nP = {res.prob_y_better:.3f}" in texts
    # A result with samples is drawn as it is.
    fig2 = plot.plot_posterior_simplex(res, names=("new", "old"))
    np.testing.assert_array_equal(fig2.axes[0].collections[0].get_offsets(), points)


def test_validation(result):
    with pytest.raises(TypeError, match="RaceResult"):
        plot.plot_race_timeline(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="candidates"):
        plot.plot_score_matrix(result, candidates="best")
    with pytest.raises(ValueError, match="distinct indices"):
        plot.plot_score_matrix(result, candidates=[0, 99])
    with pytest.raises(ValueError, match="names"):
        plot.plot_pairwise_probabilities(np.ones((5, 3)), names=["a", "b"])
    with pytest.raises(ValueError, match="at least 2 blocks"):
        plot.plot_critical_difference(np.ones((1, 3)))
    with pytest.raises(ValueError, match="only applies to a RaceResult"):
        plot.plot_critical_difference(np.ones((4, 3)), candidates="all")
    with pytest.raises(ValueError, match="alpha"):
        plot.plot_critical_difference(np.ones((4, 3)), alpha=1.5)
    with pytest.raises(ValueError, match="credibility"):
        plot.plot_bayesian_critical_difference(np.ones((4, 3)), credibility=0.3)
    with pytest.raises(ValueError, match="posterior_samples"):
        plot.plot_posterior_simplex(bayesian_sign_test([1, 2], [2, 1], n_samples=0))
    with pytest.raises(TypeError, match="`y` is required"):
        plot.plot_posterior_simplex([1.0, 2.0])
    with pytest.raises(ValueError, match="rope"):
        plot.plot_posterior_simplex([1.0, 2.0], [0.0, 1.0], rope=-1)
    with pytest.raises(ValueError, match="figsize"):
        plot.plot_evaluations(result, figsize=(0, 3))
    with pytest.raises(TypeError, match="figsize"):
        plot.plot_evaluations(result, figsize="big")
