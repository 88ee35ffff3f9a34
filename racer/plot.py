"""Figures of a race and of the statistics behind it (matplotlib, the ``plot`` extra).

Every function returns a :class:`matplotlib.figure.Figure` built directly (never through
``pyplot``), so nothing touches matplotlib's global state, no window opens, and the figures
work under any backend, Agg included: save them with ``fig.savefig("x.svg")`` or show them in
a notebook by evaluating ``fig``. matplotlib is imported inside the functions, so
``import racer`` never imports it; without it a function raises an ImportError that says how
to install it (``pip install "bayes-racer[plot]"``).

Figures of a race take a :class:`racer.RaceResult` (or the one rebuilt from a journal by
:func:`racer.storage.result_from_journal`):

* :func:`plot_race_timeline` -- survivors over instances, and one lifeline per candidate that
  ends where it was eliminated, marked by reason and annotated with the probability;
* :func:`plot_score_matrix` -- the instances x candidates score matrix;
* :func:`plot_evaluations` -- evaluations spent on each candidate;
* :func:`plot_pareto_front` -- a race on several objectives: every candidate's mean
  objective vector, the Pareto front highlighted (pairwise panels for k > 2).

The statistics figures take a score matrix ``(n_blocks, n_candidates)`` (array or DataFrame;
larger is better unless ``maximize=False``) or a RaceResult, from which they take the
columns named by ``candidates`` and the instances on which all of them were evaluated:

* :func:`plot_pairwise_probabilities` -- ``Pr[i beats j]`` of the Bayesian sign test
  (:func:`racer.stats.prob_greater_matrix`) as a heat map;
* :func:`plot_critical_difference` -- Demšar's critical-difference diagram (Friedman test,
  Nemenyi post-hoc);
* :func:`plot_bayesian_critical_difference` -- its Bayesian counterpart (see its docstring);
* :func:`plot_posterior_simplex` -- the posterior of a Bayesian sign test with a rope on the
  (y better, equivalent, x better) simplex.

Figures of an iterated race take a :class:`racer.tuning.record.IteratedRun`, the path of a
``racer --scenario`` execution directory, or the result of
:class:`racer.adapters.optuna.IteratedRace`:

* :func:`plot_parameter_frequencies` -- for each parameter, how often each value was sampled,
  iteration by iteration (irace's sampling frequencies);
* :func:`plot_elite_parallel_coordinates` -- the elites of every iteration as lines across
  the parameters' ranges (irace's parallel coordinates of the elites);
* :func:`plot_elite_costs` -- box plots of the final elites' scores on the training and the
  test instances (iraceplot's box plots).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from racer._validation import (
    as_paired,
    as_score_matrix,
    check_bool,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_random_state,
)
from racer._text import clip, short_repr
from racer.result import RaceResult

__all__ = [
    "plot_bayesian_critical_difference",
    "plot_elite_costs",
    "plot_elite_parallel_coordinates",
    "plot_parameter_frequencies",
    "plot_critical_difference",
    "plot_evaluations",
    "plot_pairwise_probabilities",
    "plot_pareto_front",
    "plot_run_pareto_front",
    "plot_posterior_simplex",
    "plot_race_timeline",
    "plot_score_matrix",
]

# Colour and marker per elimination reason; survivors are drawn in _SURVIVOR.
_REASON_STYLE = {
    "dominated": ("#c0392b", "X"),
    "indistinguishable": ("#e67e22", "o"),
    "failed": ("#555555", "s"),
}
_OTHER_REASON = ("#8e44ad", "D")
_SURVIVOR = "#1e8449"
# Above this many candidates the per-candidate text (labels, probabilities) is left out: it
# would overlap into an unreadable block; the markers stay.
_MAX_LABELLED = 40


def _figure(figsize: Any, default: tuple[float, float]):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - the test environment has matplotlib
        raise ImportError(
            "racer.plot needs matplotlib, an optional dependency: "
            'pip install "bayes-racer[plot]"'
        ) from exc
    if figsize is None:
        figsize = default
    else:
        try:
            w, h = (float(v) for v in figsize)
        except (TypeError, ValueError):
            raise TypeError(f"`figsize` must be a pair of numbers (width, height); got {figsize!r}") from None
        if not (w > 0 and h > 0 and math.isfinite(w) and math.isfinite(h)):
            raise ValueError(f"`figsize` must be two positive finite numbers; got {figsize!r}")
        figsize = (w, h)
    return Figure(figsize=figsize, layout="constrained")


def _check_result(result: Any) -> RaceResult:
    if not isinstance(result, RaceResult):
        raise TypeError(
            f"`result` must be a racer.RaceResult (from Race.run() or "
            f"racer.storage.result_from_journal()); got {type(result).__name__}"
        )
    if result.n_instances == 0:
        raise ValueError("`result` has no instances yet: there is nothing to plot")
    return result


def candidate_label(result: RaceResult, index: int, width: int = 32) -> str:
    """``"#index repr"`` of a candidate, shortened to ``width`` characters."""
    return f"#{index} {short_repr(result.candidates[index], width)}"


def _status(result: RaceResult) -> dict[int, Any]:
    return {rec.candidate_index: rec for rec in result.history}


# --------------------------------------------------------------------------- race figures


def plot_race_timeline(result: RaceResult, *, figsize: Any = None):
    """The race over time: survivors per instance, and every candidate's lifeline.

    Top panel: survivors after each instance (a step plot). Bottom panel: one row per
    candidate in ranking order (best on top); its line runs over the instances it was
    evaluated on and ends, for an eliminated candidate, with a marker whose shape and colour
    give the reason (dominated, indistinguishable, failed) and, when there are at most 40
    candidates, a label with the probability behind the decision and who beat it. There is
    exactly one marker per record of ``result.history``.

    Examples
    --------
    >>> from racer import race
    >>> res = race(lambda c, i: c + (i % 3), [0.0, 1.0, 5.0], range(12), progress=False,
    ...            random_state=0)
    >>> fig = plot_race_timeline(res)
    >>> fig.axes[1].get_xlabel()
    'instances evaluated'
    """
    result = _check_result(result)
    n_cand = len(result.candidates)
    labelled = n_cand <= _MAX_LABELLED
    height = 3.0 + (0.28 * n_cand if labelled else 5.0)
    fig = _figure(figsize, (9.0, min(height, 16.0)))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[1, 3])

    n = result.n_instances
    eliminated_at = np.zeros(n + 1, dtype=np.int64)
    for rec in result.history:
        eliminated_at[min(rec.n_instances, n)] += 1
    alive = n_cand - np.cumsum(eliminated_at)
    top.step(np.arange(n + 1), alive, where="post", color="#2c3e50", lw=2)
    top.set_ylabel("survivors")
    top.set_ylim(0, n_cand * 1.08 + 0.5)
    top.grid(alpha=0.3)
    top.set_title(
        f"{n_cand} candidates, {n} instances, {result.n_evaluations} evaluations "
        f"(stopped: {result.stop_reason.replace('_', ' ')})",
        fontsize=10,
    )

    records = _status(result)
    row_of = {int(idx): row for row, idx in enumerate(result.ranking_indices)}
    for idx in range(n_cand):
        rec = records.get(idx)
        seen = int(result.n_evaluated[idx])
        color = _SURVIVOR if rec is None else _REASON_STYLE.get(rec.reason, _OTHER_REASON)[0]
        end = rec.n_instances if rec is not None else seen
        bottom.plot([0, end], [row_of[idx]] * 2, color=color, lw=1.6 if rec is None else 1.0,
                    alpha=0.9, solid_capstyle="butt")

    # One scatter per reason, so a legend entry and a count per reason come for free.
    by_reason: dict[str, list] = {}
    for rec in result.history:
        by_reason.setdefault(rec.reason, []).append(rec)
    for reason, recs in by_reason.items():
        color, marker = _REASON_STYLE.get(reason, _OTHER_REASON)
        xs = [rec.n_instances for rec in recs]
        ys = [row_of[rec.candidate_index] for rec in recs]
        bottom.scatter(xs, ys, marker=marker, color=color, s=42, zorder=3,
                       label=f"{reason} ({len(recs)})", gid=f"elimination-{reason}")
        if labelled:
            for rec, x, y in zip(recs, xs, ys):
                text = "failed" if rec.by_index is None else f"p={rec.probability:.3g} by #{rec.by_index}"
                bottom.annotate(text, (x, y), xytext=(6, 0), textcoords="offset points",
                                va="center", fontsize=7, color=color)
    bottom.plot([], [], color=_SURVIVOR, lw=1.6, label=f"survivor ({len(result.survivors)})")
    bottom.set_ylim(n_cand - 0.5, -0.5)
    if labelled:
        bottom.set_yticks(range(n_cand))
        width = 44 if n_cand <= 20 else 28
        bottom.set_yticklabels([candidate_label(result, int(i), width) for i in result.ranking_indices],
                               fontsize=7)
    else:
        bottom.set_yticks([])
    bottom.set_ylabel("candidates (ranking order)")
    bottom.set_xlabel("instances evaluated")
    bottom.set_xlim(0, max(n, 1) * 1.12 + 1)
    bottom.grid(axis="x", alpha=0.3)
    bottom.legend(loc="lower right", fontsize=8, framealpha=0.9)
    return fig


def plot_score_matrix(result: RaceResult, *, candidates: Any = "survivors", figsize: Any = None):
    """The raw scores, instances (rows) x candidates (columns), as an image.

    ``candidates="survivors"`` (default) shows the survivors, best first; ``"all"`` every
    candidate in ranking order, so the matrix also shows where each eliminated candidate
    stopped (missing evaluations are grey: irace's "experiments matrix"); a sequence of
    candidate indices shows those.

    >>> from racer import race
    >>> res = race(lambda c, i: c + (i % 3), [0.0, 1.0, 5.0], range(12), progress=False,
    ...            random_state=0)
    >>> plot_score_matrix(res, candidates="all").axes[0].get_ylabel()
    'instance'
    """
    result = _check_result(result)
    if isinstance(candidates, str) and candidates == "all":
        cols = np.asarray(result.ranking_indices)
    elif isinstance(candidates, str) and candidates == "survivors":
        cols = np.asarray(result.survivor_indices)
    else:
        cols = _index_list(candidates, len(result.candidates), allow_keywords=("survivors", "all"))
    from matplotlib import colormaps

    data = result.scores[:, cols]
    fig = _figure(figsize, (min(3.0 + 0.45 * len(cols), 14.0), 6.0))
    ax = fig.subplots()
    cmap = colormaps["viridis"].with_extremes(bad="#dddddd")
    masked = np.ma.masked_invalid(data)
    image = ax.imshow(masked, aspect="auto", interpolation="nearest", cmap=cmap)
    better = "higher" if result.maximize else "lower"
    fig.colorbar(image, ax=ax, label=f"score ({better} is better)")
    ax.set_ylabel("instance")
    ax.set_xlabel("candidate")
    if len(cols) <= _MAX_LABELLED:
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels([f"#{int(i)}" for i in cols], rotation=90 if len(cols) > 12 else 0,
                           fontsize=8)
    ax.set_title("score matrix" + (" (grey: not evaluated or failed)" if masked.mask.any() else ""),
                 fontsize=10)
    return fig


def plot_evaluations(result: RaceResult, *, figsize: Any = None):
    """Evaluations spent on each candidate (bars, ranking order), coloured by its fate.

    >>> from racer import race
    >>> res = race(lambda c, i: c + (i % 3), [0.0, 1.0, 5.0], range(12), progress=False,
    ...            random_state=0)
    >>> [round(p.get_height()) for p in plot_evaluations(res).axes[0].patches] == list(
    ...     res.n_evaluated[res.ranking_indices])
    True
    """
    result = _check_result(result)
    order = np.asarray(result.ranking_indices)
    records = _status(result)
    colors = []
    for idx in order:
        rec = records.get(int(idx))
        colors.append(_SURVIVOR if rec is None else _REASON_STYLE.get(rec.reason, _OTHER_REASON)[0])
    n_cand = len(order)
    fig = _figure(figsize, (min(3.0 + 0.3 * n_cand, 14.0), 4.0))
    ax = fig.subplots()
    ax.bar(range(n_cand), result.n_evaluated[order], color=colors)
    ax.set_xlabel("candidate (ranking order)")
    ax.set_ylabel("evaluations")
    if n_cand <= _MAX_LABELLED:
        ax.set_xticks(range(n_cand))
        ax.set_xticklabels([f"#{int(i)}" for i in order], rotation=90 if n_cand > 12 else 0,
                           fontsize=8)
    else:
        ax.set_xticks([])
    from matplotlib.patches import Patch

    present = [_SURVIVOR] + [_REASON_STYLE.get(r.reason, _OTHER_REASON)[0] for r in result.history]
    handles = [Patch(color=_SURVIVOR, label="survivor")] + [
        Patch(color=c, label=reason) for reason, (c, _m) in _REASON_STYLE.items() if c in present
    ]
    ax.legend(handles=handles, fontsize=8)
    full = n_cand * result.n_instances
    ax.set_title(
        f"{result.n_evaluations} evaluations, {100.0 * result.n_evaluations / full:.0f}% of "
        f"running all {n_cand} candidates on {result.n_instances} instances",
        fontsize=10,
    )
    ax.grid(axis="y", alpha=0.3)
    return fig


def objective_labels(result: RaceResult, names: Any = None) -> list[str]:
    """``"name (minimize)"`` for each objective of a race on several objectives; ``names``
    (one string per objective) or ``"objective 1"``, ``"objective 2"``, ...

    >>> from racer import race
    >>> res = race(lambda c, i: (c, -c), [0, 1], range(5), progress=False,
    ...            direction=["minimize", "maximize"], random_state=0)
    >>> objective_labels(res), objective_labels(res, ["error", "speed"])
    (['objective 1 (minimize)', 'objective 2 (maximize)'], ['error (minimize)', 'speed (maximize)'])
    """
    directions = result.directions
    if directions is None:
        raise ValueError(
            "`result` is a race on one objective: it has no objectives to draw (race with "
            "`direction` a list, one entry per objective)"
        )
    k = len(directions)
    if names is None:
        names = [f"objective {o + 1}" for o in range(k)]
    elif isinstance(names, str) or not isinstance(names, Sequence) or len(names) != k \
            or not all(isinstance(n, str) for n in names):
        raise ValueError(f"`names` must hold one name (str) per objective ({k}); got {names!r}")
    return [f"{name} ({d})" for name, d in zip(names, directions)]


def _objective_panels(k: int, figsize: Any):
    """A figure with one panel per pair of ``k`` objectives (one panel for two), three to a
    row; panels left over are hidden. Returns (figure, axes, pairs)."""
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    ncols = min(len(pairs), 3)
    nrows = -(-len(pairs) // ncols)
    fig = _figure(figsize, (5.2 * ncols + 0.8, 4.4 * nrows + 0.4))
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax in axes[len(pairs):]:
        ax.set_axis_off()
    return fig, axes, pairs


def _pareto_staircase(ax, points: np.ndarray, directions: Sequence[str], gid: str) -> None:
    """The front of two objectives (``points``, one row each) as a staircase: what it
    dominates lies behind it. Nothing for fewer than two points."""
    if len(points) < 2:
        return
    sign = np.array([1.0 if d == "maximize" else -1.0 for d in directions])
    pts = points[np.argsort(-sign[0] * points[:, 0])]
    xs, ys = [pts[0, 0]], [pts[0, 1]]
    for x, y in pts[1:]:
        xs += [x, x]
        ys += [ys[-1], y]
    ax.plot(xs, ys, color="black", lw=0.9, alpha=0.6, zorder=1, gid=gid)


def plot_pareto_front(result: RaceResult, *, names: Any = None, figsize: Any = None):
    """A race on several objectives: every candidate's mean objective vector, the Pareto front
    highlighted, the eliminated candidates marked by reason.

    Two objectives: one scatter; k > 2: one panel per pair of objectives. Each candidate is a
    point at :attr:`~racer.RaceResult.mean_objective_scores` (an eliminated one's over the
    instances it saw, so its point is less certain): the front
    (:attr:`~racer.RaceResult.pareto_front_indices`) as large circles, joined by a staircase
    with two objectives; other survivors as small circles; eliminated candidates with the
    timeline's marker and colour for their reason. Points are labelled ``#index`` up to 40
    candidates. Axes say each objective's direction; ``names`` (one per objective) names them,
    else "objective 1", "objective 2", .... A candidate without a usable score has no point.
    In SVG output the points are groups with ids ``pareto-front-o1o2``, ``survivor-o1o2``
    and ``elimination-<reason>-o1o2`` (objectives 1 and 2; one set per panel).

    >>> import numpy as np
    >>> from racer import race
    >>> means = {0: (0.2, 1.0), 1: (0.15, 2.0), 2: (0.3, 1.5)}
    >>> res = race(lambda c, i: np.add(means[c], np.random.default_rng([c, i]).normal(0, 0.05, 2)),
    ...            [0, 1, 2], range(20), direction=["minimize", "minimize"], random_state=0,
    ...            progress=False)
    >>> fig = plot_pareto_front(res, names=["error", "seconds"])
    >>> fig.axes[0].get_xlabel(), len(fig.axes)
    ('error (minimize)', 1)
    """
    result = _check_result(result)
    labels = objective_labels(result, names)
    means = result.mean_objective_scores
    k = means.shape[1]
    fig, axes, pairs = _objective_panels(k, figsize)
    front = [int(i) for i in result.pareto_front_indices]
    records = _status(result)
    other = [int(i) for i in result.survivor_indices if int(i) not in set(front)]
    by_reason: dict[str, list[int]] = {}
    for rec in result.history:
        by_reason.setdefault(rec.reason, []).append(rec.candidate_index)
    usable = np.all(np.isfinite(means), axis=1)
    labelled = len(result.candidates) <= _MAX_LABELLED
    for ax, (a, b) in zip(axes, pairs):
        panel = f"o{a + 1}o{b + 1}"  # ids of the points' groups, one set per panel
        for reason, idx in by_reason.items():
            idx = [i for i in idx if usable[i]]
            color, marker = _REASON_STYLE.get(reason, _OTHER_REASON)
            ax.scatter(means[idx, a], means[idx, b], marker=marker, color=color, s=34, alpha=0.75,
                       zorder=2, label=f"eliminated: {reason} ({len(idx)})",
                       gid=f"elimination-{reason}-{panel}")
        keep = [i for i in other if usable[i]]
        if keep:
            ax.scatter(means[keep, a], means[keep, b], marker="o", color=_SURVIVOR, s=34, zorder=3,
                       label=f"survivor, dominated on the means ({len(keep)})",
                       gid=f"survivor-{panel}")
        on_front = [i for i in front if usable[i]]
        ax.scatter(means[on_front, a], means[on_front, b], marker="o", s=110, color=_SURVIVOR,
                   edgecolors="black", linewidths=1.4, zorder=4,
                   label=f"Pareto front ({len(on_front)})", gid=f"pareto-front-{panel}")
        if k == 2:
            _pareto_staircase(ax, means[on_front], result.directions, f"pareto-staircase-{panel}")
        if labelled:
            for i in np.flatnonzero(usable):
                rec = records.get(int(i))
                color = _SURVIVOR if rec is None else _REASON_STYLE.get(rec.reason, _OTHER_REASON)[0]
                ax.annotate(f"#{int(i)}", (means[i, a], means[i, b]), xytext=(5, 4),
                            textcoords="offset points", fontsize=7, color=color)
        ax.set_xlabel(labels[a])
        ax.set_ylabel(labels[b])
        ax.margins(0.1)  # room for the labels of the outermost points
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best", framealpha=0.9)
    fig.suptitle(f"Mean objectives of {int(usable.sum())} candidates (eliminated ones: over the "
                 "instances they saw)", fontsize=10)
    return fig


# --------------------------------------------------------------------------- statistics input


def _index_list(candidates: Any, n_cand: int, allow_keywords: Sequence[str]) -> np.ndarray:
    if isinstance(candidates, str):
        raise ValueError(
            f"`candidates` must be one of {', '.join(map(repr, allow_keywords))} or a sequence "
            f"of candidate indices; got {candidates!r}"
        )
    try:
        idx = [int(i) for i in candidates]
        ok = all(float(i) == int(i) for i in candidates)
    except (TypeError, ValueError):
        raise TypeError(
            f"`candidates` must be one of {', '.join(map(repr, allow_keywords))} or a sequence "
            f"of candidate indices; got {candidates!r}"
        ) from None
    if not ok or any(i < 0 or i >= n_cand for i in idx) or len(set(idx)) != len(idx):
        raise ValueError(
            f"`candidates` must hold distinct indices in [0, {n_cand}); got {list(candidates)!r}"
        )
    return np.asarray(idx, dtype=np.int64)


def contenders(result: RaceResult) -> np.ndarray:
    """The candidates of ``candidates="auto"``: the survivors if there are two or more, else
    the survivor plus every candidate eliminated at the race's last elimination step (the
    final contenders), best first."""
    survivors = list(np.asarray(result.survivor_indices))
    if len(survivors) >= 2 or not result.history:
        return np.asarray(survivors, dtype=np.int64)
    last = max(rec.step for rec in result.history)
    late = [rec.candidate_index for rec in result.history if rec.step == last and rec.reason != "failed"]
    order = [int(i) for i in result.ranking_indices if int(i) in set(survivors) | set(late)]
    return np.asarray(order, dtype=np.int64)


def _comparison_matrix(data: Any, maximize: Any, names: Any, candidates: Any):
    """(scores, names, maximize) for a statistics figure, from an array or a RaceResult."""
    if isinstance(data, RaceResult):
        matrix, labels, maximize = _race_comparison(data, maximize, names, candidates)
    else:
        if not (isinstance(candidates, str) and candidates == "auto"):
            raise ValueError("`candidates` only applies to a RaceResult; select the columns of an array yourself")
        matrix, frame_names = as_score_matrix(data, "scores")
        labels = names if names is not None else frame_names
        if labels is None:
            labels = [f"#{j}" for j in range(matrix.shape[1])]
        if maximize is None:
            maximize = True
    maximize = check_bool(maximize, "maximize")
    if isinstance(labels, str) or len(labels) != matrix.shape[1]:
        raise ValueError(
            f"`names` must hold one name per candidate ({matrix.shape[1]}); got {labels!r}"
        )
    return matrix, [str(x) for x in labels], maximize


def _race_comparison(result: RaceResult, maximize: Any, names: Any, candidates: Any):
    """(scores, names, maximize) of the ``candidates`` of a race, on the instances they all
    completed: at least two of each."""
    _check_result(result)
    n_cand = len(result.candidates)
    if isinstance(candidates, str) and candidates == "auto":
        cols = contenders(result)
    elif isinstance(candidates, str) and candidates == "survivors":
        cols = np.asarray(result.survivor_indices)
    elif isinstance(candidates, str) and candidates == "all":
        cols = np.arange(n_cand)
    else:
        cols = _index_list(candidates, n_cand, ("auto", "survivors", "all"))
    if len(cols) < 2:
        raise ValueError(
            f"`candidates`={candidates!r} selects {len(cols)} candidate(s) of this race; a "
            "comparison needs at least two (try candidates='all' or a list of indices)"
        )
    sub = result.scores[:, cols]
    rows = np.all(np.isfinite(sub), axis=1)
    if rows.sum() < 2:
        raise ValueError(
            f"the candidates {[int(c) for c in cols]} were all evaluated (without failure) "
            f"on {int(rows.sum())} instance(s); a comparison needs at least two"
        )
    labels = [f"#{int(c)}" for c in cols] if names is None else names
    return sub[rows], labels, result.maximize if maximize is None else maximize


# --------------------------------------------------------------------------- statistics figures


def plot_pairwise_probabilities(
    scores: Any,
    *,
    maximize: bool | None = None,
    names: Sequence | None = None,
    candidates: Any = "auto",
    figsize: Any = None,
):
    """Heat map of ``P[i, j] = Pr[i beats j]`` under the Bayesian sign test.

    ``P`` is :func:`racer.stats.prob_greater_matrix` of the pairwise win counts (Benavoli et al. 2015,
    Theorem 2: ``Pr[theta_ij > 1/2]`` with ``theta_ij = P(X_i > X_j) + 1/2 P(X_i = X_j)``).
    Rows are the candidate that wins; cells hold the probability when there are at most 12
    candidates. ``scores`` is a score matrix (larger is better unless ``maximize=False``) or a
    RaceResult (``candidates``: ``"auto"``, ``"survivors"``, ``"all"`` or indices; the
    instances used are those where all the chosen candidates were evaluated).

    References
    ----------
    .. [1] Benavoli, A., Mangili, F., Corani, G. & Zaffalon, M. (2015). A Bayesian
       nonparametric procedure for comparing algorithms. Proceedings of the 32nd International
       Conference on Machine Learning (ICML 2015), PMLR 37.

    >>> import numpy as np
    >>> scores = np.random.default_rng(0).normal(size=(20, 3)) + [0.0, 0.5, 1.5]
    >>> fig = plot_pairwise_probabilities(scores, names=["a", "b", "c"])
    >>> fig.axes[0].get_ylabel()
    'i (row) beats j (column)'
    """
    from racer.stats import SignCounts

    matrix, labels, maximize = _comparison_matrix(scores, maximize, names, candidates)
    prob = np.array(SignCounts.from_scores(matrix, maximize=maximize).prob_greater(), dtype=float)
    np.fill_diagonal(prob, np.nan)
    k = len(labels)
    size = min(3.0 + 0.55 * k, 14.0)
    fig = _figure(figsize, (size + 1.2, size))
    ax = fig.subplots()
    from matplotlib import colormaps

    image = ax.imshow(np.ma.masked_invalid(prob), vmin=0.0, vmax=1.0,
                      cmap=colormaps["RdBu_r"].with_extremes(bad="white"))
    fig.colorbar(image, ax=ax, label="Pr[row beats column]")
    if k <= _MAX_LABELLED:
        ax.set_xticks(range(k))
        ax.set_xticklabels(labels, rotation=90 if k > 8 else 0, fontsize=8)
        ax.set_yticks(range(k))
        ax.set_yticklabels(labels, fontsize=8)
    if k <= 12:
        for i in range(k):
            for j in range(k):
                if i != j:
                    value = prob[i, j]
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                            color="white" if abs(value - 0.5) > 0.35 else "black")
    ax.set_xlabel("j (column)")
    ax.set_ylabel("i (row) beats j (column)")
    ax.set_title(f"Bayesian sign test, {matrix.shape[0]} instances", fontsize=10)
    return fig


def _maximal_groups(n: int, together) -> list[tuple[int, int]]:
    """Maximal runs [a, b] of the rank-sorted candidates in which every pair is ``together``."""
    groups: list[tuple[int, int]] = []
    for a in range(n):
        b = a
        while b + 1 < n and all(together(i, b + 1) for i in range(a, b + 1)):
            b += 1
        if b > a and not any(ga <= a and b <= gb for ga, gb in groups):
            groups.append((a, b))
    return groups


def _rank_diagram(fig, ranks, labels, groups, *, title, errors=None, bar=None):
    """Demšar's layout: a rank axis, candidates hanging from it to both sides, groups as bars."""
    ax = fig.subplots()
    k = len(ranks)
    order = np.argsort(ranks, kind="stable")
    lo, hi = 1.0, float(k)
    ax.set_xlim(lo - 0.1 * k - 0.6, hi + 0.1 * k + 0.6)
    left = order[: (k + 1) // 2]
    right = order[(k + 1) // 2:][::-1]
    step = 1.0
    # Rows start below the group bars, so a bar never sits on a candidate's horizontal line.
    offset = 0.3 * len(groups)
    depth = max(len(left), len(right)) + offset
    ax.set_ylim(-(depth + 0.5) * step, 2.1 if bar is not None else 1.0)
    ax.hlines(0, lo, hi, color="black", lw=1.2)
    for t in range(1, k + 1):
        ax.vlines(t, 0, 0.18, color="black", lw=1)
        ax.text(t, 0.3, str(t), ha="center", va="bottom", fontsize=9)
    for row, j in enumerate(left, start=1):
        y = -(row + offset) * step
        ax.plot([ranks[j], ranks[j], lo - 0.05 * k - 0.2], [0, y, y], color="#2c3e50", lw=0.9)
        ax.text(lo - 0.05 * k - 0.3, y, f"{labels[j]} ({ranks[j]:.2f})", ha="right", va="center",
                fontsize=9)
    for row, j in enumerate(right, start=1):
        y = -(row + offset) * step
        ax.plot([ranks[j], ranks[j], hi + 0.05 * k + 0.2], [0, y, y], color="#2c3e50", lw=0.9)
        ax.text(hi + 0.05 * k + 0.3, y, f"({ranks[j]:.2f}) {labels[j]}", ha="left", va="center",
                fontsize=9)
    if errors is not None:
        ax.errorbar(ranks, np.zeros(k), xerr=errors, fmt="o", color="#2980b9", ms=4,
                    capsize=3, lw=1.2, zorder=3)
    # Groups sit just below the axis, each on its own line, like Demšar's thick bars.
    for g, (a, b) in enumerate(groups):
        y = -0.35 - 0.3 * g
        ax.hlines(y, ranks[order[a]] - 0.03, ranks[order[b]] + 0.03, color="#c0392b", lw=4,
                  gid="group")
    if bar is not None:
        length, text = bar
        ax.hlines(1.7, lo, lo + length, color="black", lw=1.5)
        ax.vlines([lo, lo + length], 1.6, 1.8, color="black", lw=1.5)
        ax.text(lo + length + 0.1, 1.7, text, va="center", fontsize=9)
    ax.set_axis_off()
    ax.set_title(title + "\npositions: mean rank (1 = best)", fontsize=9)
    return ax


def plot_critical_difference(
    scores: Any,
    *,
    alpha: float = 0.05,
    maximize: bool | None = None,
    names: Sequence | None = None,
    candidates: Any = "auto",
    figsize: Any = None,
):
    """Critical-difference diagram (Demšar 2006): mean ranks, and red bars joining the
    candidates that the Nemenyi test does not separate at level ``alpha``.

    Mean ranks and p-values come from :func:`racer.stats.nemenyi` (rank 1 = best), the critical
    difference drawn at the top from its ``critical_difference(alpha)``, the Friedman p-value
    in the title from :func:`racer.stats.friedman`. A bar joins a maximal run of adjacent
    candidates in which no pair has a Nemenyi p-value below ``alpha`` -- for Nemenyi that is
    a mean-rank difference below the CD. ``scores``: see :func:`plot_pairwise_probabilities`.

    References
    ----------
    .. [1] Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets.
       Journal of Machine Learning Research 7, 1–30.

    >>> import numpy as np
    >>> scores = np.random.default_rng(0).normal(size=(30, 4)) + [0.0, 0.1, 0.2, 2.0]
    >>> fig = plot_critical_difference(scores, names=["a", "b", "c", "d"])
    >>> len([c for c in fig.axes[0].collections if c.get_gid() == "group"])  # a-b-c together
    1
    """
    from racer.stats import friedman, nemenyi

    alpha = check_probability(alpha, "alpha")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"`alpha` must be in (0, 1); got {alpha!r}")
    matrix, labels, maximize = _comparison_matrix(scores, maximize, names, candidates)
    res = nemenyi(matrix, maximize=maximize)
    fried = friedman(matrix, maximize=maximize)
    ranks = np.asarray(res.mean_ranks)
    order = np.argsort(ranks, kind="stable")
    groups = _maximal_groups(len(ranks), lambda a, b: res.pvalue[order[a], order[b]] >= alpha)
    cd = res.critical_difference(alpha)
    k = len(labels)
    fig = _figure(figsize, (9.0, 2.2 + 0.32 * ((k + 1) // 2) + 0.2 * len(groups)))
    _rank_diagram(
        fig, ranks, labels, groups,
        title=(f"Friedman p = {fried.pvalue:.3g}; Nemenyi at alpha = {alpha:g}, "
               f"{matrix.shape[0]} instances"),
        bar=(cd, f"CD = {cd:.2f}"),
    )
    return fig


def plot_bayesian_critical_difference(
    scores: Any,
    *,
    credibility: float = 0.95,
    prior_strength: float = 1.0,
    maximize: bool | None = None,
    names: Sequence | None = None,
    candidates: Any = "auto",
    random_state: Any = None,
    figsize: Any = None,
):
    """The Bayesian counterpart of the critical-difference diagram.

    Same layout as :func:`plot_critical_difference`, with Bayesian quantities:

    * positions are the posterior mean ranks of :func:`racer.stats.bayesian_friedman` (the
      Dirichlet-process posterior of the expected rank vector with prior strength
      ``prior_strength`` at the all-tied point), with whiskers of one posterior standard
      deviation (the square root of the diagonal of its covariance);
    * a red bar joins a maximal run of rank-adjacent candidates in which no pair is
      *credibly* ordered: for every pair both ``Pr[i beats j]`` and ``Pr[j beats i]`` of the
      Bayesian sign test (:func:`racer.stats.prob_greater_matrix`, the statements racer's
      race eliminates with) are below ``credibility``. The pairwise probabilities are marginal,
      not joint: a bar says "not separated pair by pair", as Nemenyi's bars do;
    * the title gives the Bayesian Friedman verdict at ``credibility``.

    ``random_state`` seeds the Monte Carlo Friedman region used when there are few instances
    for the candidates (see :func:`racer.stats.bayesian_friedman`).

    >>> import numpy as np
    >>> scores = np.random.default_rng(0).normal(size=(30, 4)) + [0.0, 0.1, 0.2, 2.0]
    >>> fig = plot_bayesian_critical_difference(scores, random_state=0)
    >>> len([c for c in fig.axes[0].collections if c.get_gid() == "group"])
    1
    """
    from racer.stats import SignCounts, bayesian_friedman

    credibility = check_probability(credibility, "credibility")
    if not 0.5 < credibility < 1.0:
        raise ValueError(f"`credibility` must be in (0.5, 1); got {credibility!r}")
    prior_strength = check_positive(prior_strength, "prior_strength")
    rng = check_random_state(random_state)
    matrix, labels, maximize = _comparison_matrix(scores, maximize, names, candidates)
    post = bayesian_friedman(matrix, maximize=maximize, prior_strength=prior_strength,
                             credibility=credibility, random_state=rng)
    prob = SignCounts.from_scores(matrix, maximize=maximize).prob_greater()
    ranks = np.asarray(post.mean_ranks, dtype=float)
    sd = np.sqrt(np.clip(np.diagonal(post.covariance), 0.0, None))
    order = np.argsort(ranks, kind="stable")
    groups = _maximal_groups(
        len(ranks),
        lambda a, b: max(prob[order[a], order[b]], prob[order[b], order[a]]) < credibility,
    )
    verdict = "candidates differ" if post.reject else "no credible difference"
    k = len(labels)
    fig = _figure(figsize, (9.0, 2.2 + 0.32 * ((k + 1) // 2) + 0.2 * len(groups)))
    _rank_diagram(
        fig, ranks, labels, groups, errors=sd,
        title=(f"Bayesian Friedman ({post.method}): {verdict} at {credibility:g}; bars: no pair "
               f"with Pr[beats] >= {credibility:g}; {matrix.shape[0]} instances"),
    )
    return fig


def plot_posterior_simplex(
    x: Any,
    y: Any = None,
    *,
    rope: float = 0.0,
    prior_strength: float = 1.0,
    maximize: bool = True,
    names: Sequence = ("x", "y"),
    n_samples: int = 3000,
    random_state: Any = None,
    figsize: Any = None,
):
    """Posterior of the Bayesian sign test with a rope on the simplex (Benavoli et al. 2017).

    ``x`` and ``y`` are paired scores, passed to :func:`racer.stats.bayesian_sign_test` with
    ``rope``, ``prior_strength``, ``maximize``, ``n_samples`` and ``random_state``; or ``x``
    is a :class:`racer.stats.BayesianSignResult` that kept its ``posterior_samples`` (``y``
    then None). Each posterior draw of the three cell probabilities (y better by more than the
    rope, equivalent, x better) is a point of the triangle in barycentric coordinates; the
    lines from the centre split it into the regions where each cell is the largest, and each
    corner shows the posterior probability of its region (``prob_x_better`` etc.).

    (The signed-rank test, :func:`racer.stats.bayesian_signed_rank`, exposes its rope
    probabilities but not its posterior draws, so it cannot be drawn here.)

    References
    ----------
    .. [1] Benavoli, A., Corani, G., Demšar, J. & Zaffalon, M. (2017). Time for a change: a
       tutorial for comparing multiple classifiers through Bayesian analysis. Journal of
       Machine Learning Research 18, 2653–2688.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.normal(0.3, 1, 40), rng.normal(0, 1, 40)
    >>> fig = plot_posterior_simplex(x, y, rope=0.1, names=("new", "old"), random_state=0)
    >>> len(fig.axes[0].collections[0].get_offsets())
    3000
    """
    from racer.stats import BayesianSignResult, bayesian_sign_test

    if isinstance(x, BayesianSignResult):
        if y is not None:
            raise ValueError("`y` must be None when `x` is a BayesianSignResult")
        if x.posterior_samples is None:
            raise ValueError(
                "`x` is a BayesianSignResult without posterior_samples (it was computed with "
                "n_samples=0); rerun bayesian_sign_test with n_samples > 0"
            )
        res = x
    else:
        if y is None:
            raise TypeError("`y` is required when `x` holds scores")
        as_paired(x, y)  # names the bad argument before the test does
        n_samples = check_int(n_samples, "n_samples", minimum=1)
        res = bayesian_sign_test(x, y, rope=check_nonnegative(rope, "rope"),
                                 prior_strength=prior_strength, maximize=maximize,
                                 n_samples=n_samples, random_state=random_state)
    if isinstance(names, str) or len(names) != 2:
        raise ValueError(f"`names` must be two names (x, y); got {names!r}")
    name_x, name_y = (str(v) for v in names)
    samples = np.asarray(res.posterior_samples)
    h = math.sqrt(3.0) / 2.0
    # Corners: y better at (0, 0), x better at (1, 0), equivalent at the top.
    px = samples[:, 2] + 0.5 * samples[:, 1]
    py = h * samples[:, 1]
    fig = _figure(figsize, (6.0, 5.6))
    ax = fig.subplots()
    ax.scatter(px, py, s=3, alpha=0.25, color="#2980b9", rasterized=True, linewidths=0)
    ax.plot([0, 1, 0.5, 0], [0, 0, h, 0], color="black", lw=1.2)
    centre = (0.5, h / 3.0)
    for mid in ((0.5, 0.0), (0.25, h / 2.0), (0.75, h / 2.0)):
        ax.plot([centre[0], mid[0]], [centre[1], mid[1]], color="grey", lw=0.8, ls="--")
    ax.text(0.0, -0.05, f"{name_y} better\nP = {res.prob_y_better:.3f}", ha="center", va="top", fontsize=9)
    ax.text(1.0, -0.05, f"{name_x} better\nP = {res.prob_x_better:.3f}", ha="center", va="top", fontsize=9)
    ax.text(0.5, h + 0.03, f"equivalent (|diff| <= {res.rope:g})\nP = {res.prob_equivalent:.3f}",
            ha="center", va="bottom", fontsize=9)
    ax.set_xlim(-0.15, 1.15)
    ax.set_ylim(-0.2, h + 0.18)
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(
        f"Bayesian sign test, {name_x} vs {name_y}: {res.n_x_better} / {res.n_rope} / "
        f"{res.n_y_better} blocks ({name_x} better / rope / {name_y} better)",
        fontsize=9,
    )
    return fig


# --------------------------------------------------------------------------- iterated races


def _iteration_colors(iterations: Sequence[int]) -> dict:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    n = len(iterations)
    return {it: cmap(0.85 * k / max(n - 1, 1)) for k, it in enumerate(iterations)}


def _check_parameters(run, parameters: Any) -> list:
    if parameters is None:
        return list(run.parameters)
    by_name = {p.name: p for p in run.parameters}
    if isinstance(parameters, str) or not isinstance(parameters, Sequence):
        raise TypeError(f"`parameters` must be a sequence of parameter names or None; got {parameters!r}")
    unknown = [n for n in parameters if n not in by_name]
    if unknown or not parameters:
        raise ValueError(f"`parameters` must name parameters of the run ({sorted(by_name)}); got "
                         f"{list(parameters)!r}")
    return [by_name[n] for n in parameters]


def plot_parameter_frequencies(run: Any, *, parameters: Any = None, figsize: Any = None):
    """How often each parameter value was sampled, iteration by iteration.

    One panel per parameter (``parameters``: names, default all). A categorical or ordinal
    parameter gets, for each level, one bar per iteration: the share of that iteration's new
    configurations that took the level. A numerical one gets one histogram line per iteration
    (shares per bin; log-spaced bins for a log parameter). Colours run from the first
    iteration (dark) to the last (light), so a parameter whose sampling concentrates shows
    the light bars or lines piling up on a few values -- what irace's model does as it learns.
    Configurations where the parameter is inactive (a condition is false) are counted in the
    panel's title, not in the bars.

    ``run`` is a :class:`racer.tuning.record.IteratedRun`, a ``racer`` execDir path or an
    :class:`racer.adapters.optuna.IteratedRaceResult`.

    >>> from racer.tuning.record import IteratedRun, ParameterInfo
    >>> run = IteratedRun(
    ...     parameters=[ParameterInfo("algo", "categorical", ("a", "b")),
    ...                 ParameterInfo("x", "real", (0.0, 1.0))],
    ...     configurations={1: {"algo": "a", "x": 0.1}, 2: {"algo": "b", "x": 0.9},
    ...                     3: {"algo": "b", "x": 0.8}},
    ...     iteration_of={1: 1, 2: 1, 3: 2}, elites={1: [2], 2: [3]}, races=[],
    ...     candidate_ids=[], final_elites=[3])
    >>> fig = plot_parameter_frequencies(run)
    >>> [ax.get_title() for ax in fig.axes[:2]]
    ['algo', 'x']
    """
    from racer.tuning.record import as_iterated_run

    run = as_iterated_run(run)
    params = _check_parameters(run, parameters)
    iterations = sorted(set(run.iteration_of.values()))
    if not iterations:
        raise ValueError("`run` holds no sampled configuration: there is nothing to plot")
    colors = _iteration_colors(iterations)
    by_iter = {it: [cid for cid, i in run.iteration_of.items() if i == it] for it in iterations}
    n_cols = min(3, len(params))
    n_rows = math.ceil(len(params) / n_cols)
    fig = _figure(figsize, (4.2 * n_cols, 3.0 * n_rows + 0.6))
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel()
    for ax, p in zip(axes, params):
        inactive = sum(run.configurations[c].get(p.name) is None for c in run.configurations)
        # Each iteration's values of p among its new configurations (None: inactive).
        samples = {it: [run.configurations[c].get(p.name) for c in by_iter[it]] for it in iterations}
        if not p.numeric:
            _draw_level_shares(ax, p, samples, colors)
        else:
            _draw_histogram_shares(ax, p, samples, colors)
        ax.set_title(p.name, fontsize=10)
        if inactive:
            ax.set_title(f"{p.name}\n({inactive} of {len(run.configurations)} inactive)", fontsize=9)
        ax.set_ylabel("share of the iteration's samples", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(params):]:
        ax.set_axis_off()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=min(len(iterations), 6),
               fontsize=8, title="sampled in (new configurations)", title_fontsize=8)
    return fig


def _draw_level_shares(ax, p, samples: dict, colors: dict) -> None:
    """A categorical or ordinal parameter's panel: per level, one bar per iteration."""
    levels = [str(v) for v in p.domain]
    width = 0.8 / len(samples)
    for k, (it, values) in enumerate(samples.items()):
        active = [str(v) for v in values if v is not None]
        shares = [active.count(lv) / len(active) if active else 0.0 for lv in levels]
        ax.bar(np.arange(len(levels)) - 0.4 + width * (k + 0.5), shares, width,
               color=colors[it], label=f"iteration {it} ({len(values)})",
               gid=f"freq-{p.name}-{it}")
    ax.set_xticks(range(len(levels)))
    ax.set_xticklabels([clip(str(lv), 12, "\u2026") for lv in levels],
                       rotation=45 if len(levels) > 4 else 0, fontsize=8)


def _draw_histogram_shares(ax, p, samples: dict, colors: dict) -> None:
    """A numerical parameter's panel: one histogram line per iteration (log-spaced bins for
    a log parameter)."""
    lo, hi = float(p.domain[0]), float(p.domain[1])
    log = p.log and lo > 0
    edges = (np.geomspace(lo, hi, 11) if log else np.linspace(lo, hi, 11)) if hi > lo else None
    for it, values in samples.items():
        active = np.array([float(v) for v in values if v is not None])
        if active.size == 0 or edges is None:
            continue
        counts, _ = np.histogram(np.clip(active, lo, hi), bins=edges)
        ax.stairs(counts / active.size, edges, color=colors[it], lw=1.8,
                  label=f"iteration {it} ({len(values)})", gid=f"freq-{p.name}-{it}")
    if log:
        ax.set_xscale("log")
    if hi > lo:
        ax.set_xlim(lo, hi)


def plot_elite_parallel_coordinates(run: Any, *, parameters: Any = None, figsize: Any = None):
    """The elites of every iteration as lines across the parameters (parallel coordinates).

    One vertical axis per parameter (``parameters``: names, default all), running over its
    domain: bottom to top from its lower to its upper bound (log scale for a log parameter),
    or its levels in order for a categorical or ordinal one, each labelled at both ends (and
    every level when there are at most six). Each elite an iteration kept is one line,
    coloured by iteration (dark: first, light: last); the final elites are drawn thick and
    black, dashed beyond the best one. A value at "NA", below an axis, means the parameter was
    inactive. Lines that converge iteration by iteration show where the tuning settled.

    ``run``: see :func:`plot_parameter_frequencies`.

    >>> from racer.tuning.record import IteratedRun, ParameterInfo
    >>> run = IteratedRun(
    ...     parameters=[ParameterInfo("algo", "categorical", ("a", "b")),
    ...                 ParameterInfo("x", "real", (0.0, 1.0))],
    ...     configurations={1: {"algo": "a", "x": 0.1}, 2: {"algo": "b", "x": 0.9},
    ...                     3: {"algo": "b", "x": 0.8}},
    ...     iteration_of={1: 1, 2: 1, 3: 2}, elites={1: [2, 1], 2: [3, 2]}, races=[],
    ...     candidate_ids=[], final_elites=[3, 2])
    >>> fig = plot_elite_parallel_coordinates(run)
    >>> len([ln for ln in fig.axes[0].lines if (ln.get_gid() or "").startswith("elite-")])
    4
    """
    from racer.tuning.record import as_iterated_run, normalized

    run = as_iterated_run(run)
    params = _check_parameters(run, parameters)
    if not run.elites:
        raise ValueError("`run` has no elites yet (no race finished): there is nothing to plot")
    iterations = sorted(run.elites)
    colors = _iteration_colors(iterations)
    k = len(params)
    fig = _figure(figsize, (min(2.0 + 1.6 * k, 15.0), 5.0))
    ax = fig.subplots()
    na = -0.12
    xs = np.arange(k)

    def ys(cid):
        values = run.configurations[cid]
        out = np.array([normalized(p, values.get(p.name)) for p in params])
        return np.where(np.isnan(out), na, out)

    for it in iterations:
        for rank, cid in enumerate(run.elites[it]):
            ax.plot(xs, ys(cid), color=colors[it], lw=1.2, alpha=0.75, marker="o", ms=3,
                    gid=f"elite-{it}-{cid}",
                    label=f"iteration {it}" if rank == 0 else None)
    for rank, cid in enumerate(run.final_elites):
        if cid in run.configurations:
            ax.plot(xs, ys(cid), color="black", lw=2.6 if rank == 0 else 1.6,
                    ls="-" if rank == 0 else "--", zorder=4, gid=f"final-{cid}",
                    label=(f"final elites (best: #{cid})" if rank == 0 else None))
    for x, p in zip(xs, params):
        ax.vlines(x, 0, 1, color="#555555", lw=1)
        for y, label in _axis_ticks(p):
            ax.text(x + 0.04, y, label, fontsize=7, va="center", ha="left", color="#333333")
        ax.text(x + 0.04, na, "NA", fontsize=7, va="center", ha="left", color="#999999")
    ax.set_xticks(xs)
    ax.set_xticklabels([clip(str(p.name), 16, "\u2026") + (" (log)" if p.log else "") for p in params],
                       fontsize=8, rotation=30 if k > 6 else 0)
    ax.set_yticks([])
    ax.set_ylim(na - 0.08, 1.08)
    ax.set_xlim(-0.3, k - 0.4)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    n_el = sum(len(v) for v in run.elites.values())
    ax.set_title(f"elites of {len(iterations)} iterations ({n_el} lines); black: final elites",
                 fontsize=10)
    return fig


def _axis_ticks(p) -> list[tuple[float, str]]:
    """(height in [0, 1], label) along a parameter's axis of the parallel coordinates: its
    bounds, or its levels (the first and last only when there are more than six)."""
    if p.numeric:
        lo, hi = p.domain[0], p.domain[1]
        return [(0.0, f"{lo:g}"), (1.0, f"{hi:g}")]
    levels = [str(v) for v in p.domain]
    step = 1 if len(levels) <= 6 else len(levels) - 1
    return [(i / max(len(levels) - 1, 1), clip(str(levels[i]), 10, "\u2026"))
            for i in range(0, len(levels), step)]


def _spread(n: int, width: float = 0.32) -> np.ndarray:
    """Horizontal offsets of ``n`` points in a strip: deterministic (golden-ratio steps), so
    the same run draws the same figure, and not ordered by instance, so no false trend."""
    if n <= 1:
        return np.zeros(n)
    return (np.mod(np.arange(n) * 0.6180339887498949, 1.0) - 0.5) * width


def _check_elite_ids(run, elites: Any) -> list:
    if elites is None:
        chosen = [c for c in run.final_elites if c in run.configurations]
        if not chosen:
            raise ValueError("`run` has no final elites yet (no race finished): there is "
                             "nothing to plot")
        return chosen
    if isinstance(elites, (str, bytes)) or not isinstance(elites, Sequence):
        raise TypeError(f"`elites` must be a sequence of configuration ids or None; got {elites!r}")
    ids = []
    for cid in elites:
        if isinstance(cid, bool) or not isinstance(cid, (int, np.integer)):
            raise TypeError(f"`elites` must hold configuration ids (integers); got {list(elites)!r}")
        ids.append(int(cid))
    unknown = [c for c in ids if c not in run.configurations]
    if not ids or unknown or len(set(ids)) != len(ids):
        raise ValueError(f"`elites` must be distinct ids of configurations of the run; got "
                         f"{list(elites)!r}" + (f" (unknown: {unknown})" if unknown else ""))
    return ids


def plot_run_pareto_front(run: Any, *, figsize: Any = None):
    """The answer of a tuning on several objectives: its final Pareto set of elites in
    objective space, each elite's mean on the test instances (filled circles, joined by the
    staircase of those not dominated on the test means, as :func:`plot_pareto_front` joins a
    race's front) and on the training instances of the last race (hollow circles, a thin line
    to the same elite's test point: how far the front moved on unseen instances). Without a
    test phase, only the training means. Two objectives: one scatter; k > 2: one panel per
    pair. ``run``: an :class:`racer.tuning.record.IteratedRun` (or an execDir path) of a
    ``racer --scenario`` run with the scenario option ``objectives``.

    In SVG output the points are groups with ids ``front-test-o1o2`` and
    ``front-training-o1o2`` (objectives 1 and 2; one set per panel).

    >>> from racer.tuning.record import IteratedRun
    >>> run = IteratedRun(parameters=[], configurations={1: {}, 2: {}}, iteration_of={1: 1, 2: 1},
    ...                   elites={1: [1, 2]}, races=[], candidate_ids=[], final_elites=[1, 2],
    ...                   test={"instances": ["t"], "costs": {1: [1.0], 2: [2.0]},
    ...                         "objective_costs": {1: [[1.0, 9.0]], 2: [[2.0, 5.0]]}},
    ...                   objectives={"names": ["length", "steps"],
    ...                               "directions": ["minimize", "minimize"]},
    ...                   training_means={1: [0.9, 9.5], 2: [1.8, 5.5]})
    >>> fig = plot_run_pareto_front(run)
    >>> fig.axes[0].get_xlabel(), len(fig.axes)
    ('length (minimize)', 1)
    """
    from racer.tuning.record import as_iterated_run

    run = as_iterated_run(run)
    if run.objectives is None:
        raise ValueError("`run` is a tuning on one objective: it has no Pareto front (the "
                         "scenario option `objectives` names several)")
    names, directions = run.objectives["names"], run.objectives["directions"]
    k = len(names)
    labels = [f"{n} ({d})" for n, d in zip(names, directions)]
    front = _RunFront.of(run, k, directions)
    fig, axes, pairs = _objective_panels(k, figsize)
    for ax, (a, b) in zip(axes, pairs):
        _draw_run_front_panel(ax, front, a, b, k, directions)
        ax.set_xlabel(labels[a])
        ax.set_ylabel(labels[b])
        ax.margins(0.1)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="best", framealpha=0.9)
    where = (f"on {len(run.test.get('instances', []))} test instances" if front.tested.size
             else "on the training instances")
    fig.suptitle(f"Final Pareto front: {len(front.elites)} elites, mean objectives {where}",
                 fontsize=10)
    return fig


@dataclasses.dataclass(frozen=True)
class _RunFront:
    """The final elites of a tuning on several objectives, as :func:`plot_run_pareto_front`
    draws them: each one's training and test means (rows, NaN where missing)."""

    elites: list
    train: np.ndarray  # (n_elites, k) means on the last race's training instances
    test: np.ndarray  # (n_elites, k) means on the test instances
    has_train: np.ndarray  # (n_elites,) bool: a training mean on every objective
    has_test: np.ndarray
    tested: np.ndarray  # rows with a test mean
    best: np.ndarray  # rows of ``tested`` no other dominates on the test means
    signs: np.ndarray  # +1 to maximize, -1 to minimize, per objective

    @classmethod
    def of(cls, run, k: int, directions: list) -> "_RunFront":
        from racer.stats.pareto import nondominated_mask

        elites = [cid for cid in run.final_elites if cid in run.configurations]
        nan = [math.nan] * k
        train = np.array([run.training_means.get(cid, nan) for cid in elites], dtype=float).reshape(-1, k)
        test = (np.array([run.test_means(cid) or nan for cid in elites], dtype=float).reshape(-1, k)
                if run.test else np.full((len(elites), k), math.nan))
        has_train, has_test = np.isfinite(train).all(axis=1), np.isfinite(test).all(axis=1)
        if not (has_train.any() or has_test.any()):
            raise ValueError("`run` has no final elite with a mean on every objective")
        signs = np.array([1.0 if d == "maximize" else -1.0 for d in directions])
        tested = np.flatnonzero(has_test)
        best = tested[nondominated_mask(test[tested] * signs)] if tested.size else tested
        return cls(elites, train, test, has_train, has_test, tested, best, signs)


def _draw_run_front_panel(ax, front: _RunFront, a: int, b: int, k: int, directions: list) -> None:
    """Objectives ``a`` and ``b`` of :func:`plot_run_pareto_front`: each elite's training mean
    joined to its test mean, the test front's staircase (two objectives) and the ids."""
    from racer.stats.pareto import nondominated_mask

    train, test, tested = front.train, front.test, front.tested
    panel = f"o{a + 1}o{b + 1}"
    both = np.flatnonzero(front.has_train & front.has_test)
    for i in both:  # each elite from its training mean to its test mean
        ax.plot([train[i, a], test[i, a]], [train[i, b], test[i, b]], color=_SURVIVOR,
                lw=0.6, alpha=0.5, zorder=1)
    rows = np.flatnonzero(front.has_train)
    ax.scatter(train[rows, a], train[rows, b], marker="o", s=70, facecolors="none",
               edgecolors=_SURVIVOR, linewidths=1.2, zorder=3,
               label=f"training mean, last race ({rows.size})", gid=f"front-training-{panel}")
    if tested.size:
        ax.scatter(test[tested, a], test[tested, b], marker="o", s=110, color=_SURVIVOR,
                   edgecolors="black", linewidths=1.4, zorder=4,
                   label=f"test mean ({tested.size})", gid=f"front-test-{panel}")
    if k == 2:
        stair = test[front.best] if tested.size else train[rows][nondominated_mask(train[rows] * front.signs)]
        _pareto_staircase(ax, stair, directions, f"front-staircase-{panel}")
    if len(front.elites) <= _MAX_LABELLED:
        where = np.where(front.has_test[:, None], test, train)
        for i, cid in enumerate(front.elites):
            if np.isfinite(where[i, [a, b]]).all():
                ax.annotate(f"#{cid}", (where[i, a], where[i, b]), xytext=(5, 4),
                            textcoords="offset points", fontsize=7, color=_SURVIVOR)


def plot_elite_costs(run: Any, *, elites: Any = None, figsize: Any = None):
    """Box plots of the final elites' costs on the training and the test instances (iraceplot).

    One box per elite (``elites``: configuration ids; default the run's final elites, best
    first), labelled ``#id``, over its scores on the training instances it was raced on
    (:meth:`racer.tuning.record.IteratedRun.training_costs`: each instance once, as in
    ``runs.csv``) and, in a second panel on the same y axis when the run has a test phase,
    on the test instances. Every score is also drawn as a point over its box (a strip with
    deterministic spread), so a handful of test instances is seen as what it is; a triangle
    marks the mean. A tick label gives the instance count and the failed evaluations, which
    are left out of the box. The test panel holds the elites the test phase ran (irace tests
    ``testNbElites`` of them); its title names the others.

    The training boxes are not a paired comparison: each elite has the instances of the races
    it took part in, so one sampled late has fewer; every tested elite ran on the same test
    instances.

    Each elite's points are one scatter with gid ``costs-train-<id>`` or ``costs-test-<id>``
    (its y values are the scores, in instance order).

    ``run``: see :func:`plot_parameter_frequencies`.

    >>> from racer.tuning.record import IteratedRun
    >>> from racer import race
    >>> res = race(lambda c, i: c + i % 3, [1.0, 2.0, 9.0], range(8), progress=False,
    ...            random_state=0)
    >>> run = IteratedRun(parameters=[], configurations={1: {}, 2: {}, 3: {}},
    ...                   iteration_of={1: 1, 2: 1, 3: 1}, elites={1: [1, 2]},
    ...                   races=[(1, "race 1", res)], candidate_ids=[[1, 2, 3]],
    ...                   final_elites=[1, 2],
    ...                   test={"instances": ["t1", "t2"], "costs": {1: [1.5, 2.5]}})
    >>> fig = plot_elite_costs(run)
    >>> [ax.get_title() for ax in fig.axes]
    ['training instances', 'test instances (2)\\nnot tested: #2']
    >>> [p.get_gid() for p in fig.axes[1].collections]
    ['costs-test-1']
    >>> fig.axes[1].collections[0].get_offsets()[:, 1].tolist()
    [1.5, 2.5]
    """
    from racer.tuning.record import as_iterated_run

    run = as_iterated_run(run)
    ids = _check_elite_ids(run, elites)
    panels = _elite_cost_panels(run, ids)
    ratios = [max(len(shown) + 0.8, 2.4 if "\n" in title else 1.8)
              for _kind, title, shown, _costs in panels]
    fig = _figure(figsize, (min(1.2 + 0.75 * sum(ratios), 15.0), 4.8))
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, squeeze=False,
                                      width_ratios=ratios)).ravel()
    for ax, panel in zip(axes, panels):
        _draw_cost_panel(ax, *panel)
    better = "higher" if run.maximize else "lower"
    axes[0].set_ylabel(f"{'score' if run.maximize else 'cost'} ({better} is better)")
    fig.suptitle("final elites, best first" if elites is None else "elites", fontsize=10)
    return fig


def _elite_cost_panels(run, ids: list) -> list:
    """(kind, title, ids shown, {id: costs}) of the training panel and, with a test phase,
    the test panel (the elites the test phase ran; its title names the others)."""
    panels = [("train", "training instances", ids,
               {cid: list(run.training_costs(cid).values()) for cid in ids})]
    if run.test:
        tested = run.test.get("costs", {})
        shown = [cid for cid in ids if cid in tested]
        untested = [f"#{cid}" for cid in ids if cid not in tested]
        title = f"test instances ({len(run.test.get('instances', []))})"
        if untested:
            # irace tests only testNbElites elites: say who is missing rather than leave gaps,
            # three ids a line so the title fits a panel of one box.
            more = f" (+{len(untested) - 9})" if len(untested) > 9 else ""
            rows = [", ".join(untested[i:i + 3]) for i in range(0, min(len(untested), 9), 3)]
            title += "\nnot tested: " + ",\n".join(rows) + more
        panels.append(("test", title, shown, {cid: list(tested[cid]) for cid in shown}))
    return panels


_COST_BOX_COLORS = {"train": "#aed6f1", "test": "#f5cba7"}


def _draw_cost_panel(ax, kind: str, title: str, shown: list, costs: dict) -> None:
    """One panel of :func:`plot_elite_costs`: each elite's points, then its box."""
    k = len(shown)
    data, positions, labels = [], [], []
    for pos, cid in enumerate(shown):
        values = costs[cid]
        ok = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
        n_failed = len(values) - ok.size
        labels.append(f"#{cid}\n{ok.size} inst." + (f"\n{n_failed} failed" if n_failed else ""))
        ax.scatter(pos + _spread(ok.size), ok, s=12, color="#1b2631", alpha=0.7, zorder=3,
                   linewidths=0, gid=f"costs-{kind}-{cid}")
        if ok.size:
            data.append(ok)
            positions.append(pos)
    if data:
        parts = ax.boxplot(data, positions=positions, widths=0.55, showfliers=False,
                           showmeans=True, patch_artist=True, manage_ticks=False,
                           medianprops={"color": "#922b21", "lw": 1.6},
                           meanprops={"marker": "^", "markerfacecolor": "white",
                                      "markeredgecolor": "#922b21", "markersize": 6})
        for box in parts["boxes"]:
            box.set_facecolor(_COST_BOX_COLORS[kind])
        for pos, median in zip(positions, parts["medians"]):
            median.set_gid(f"median-{kind}-{shown[pos]}")
    ax.set_xticks(range(k))
    ax.set_xticklabels(labels, fontsize=8 if k <= 12 else 6, rotation=0 if k <= 12 else 90)
    ax.set_xlim(-0.6, max(k, 1) - 0.4)
    ax.set_title(title, fontsize=10 if "\n" not in title else 9)
    ax.grid(axis="y", alpha=0.3)
    if not k:
        ax.text(0.5, 0.5, "none\ntested", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="#555555")
