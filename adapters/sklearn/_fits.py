"""The fits of a :class:`~racer.adapters.sklearn.RaceSearchCV` race: one (candidate, split) unit
at a time, on joblib, a user's executor or racer's worker processes.

:func:`evaluate_unit` fits and scores one candidate on one split through public
``cross_validate``. :class:`Fits` runs the units the race asks for on the back end the
search's options name, keeps every outcome (what ``cv_results_`` is built from), learns the
metric names from the first successful fit and tells the race each score.
"""

from __future__ import annotations

import functools
import inspect
import time
import traceback
import warnings
from collections.abc import Mapping

from sklearn import get_config
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import cross_validate
from sklearn.utils.parallel import Parallel, delayed

from racer.execution import check_timeout
from racer.race_loop import OnExecutor, backend_for

__all__ = ["Fits", "evaluate_unit", "stopped_unit"]


def _grid_fit_and_score():
    """scikit-learn's ``_fit_and_score``, what ``GridSearchCV`` itself runs for every fit,
    where its signature is the one :func:`evaluate_unit` calls (scikit-learn >= 1.4, with
    ``check_scoring(raise_exc=...)``); else None and every fit goes through public
    ``cross_validate``. Why: ``cross_validate`` on one split costs about 3 ms of set-up per fit
    (its own Parallel, validation, routing), a quarter of the CPU of a race of small fits,
    which ``GridSearchCV`` does not pay (benchmarks/RESULTS.md)."""
    try:
        from sklearn.model_selection._validation import _fit_and_score
    except ImportError:  # pragma: no cover - a scikit-learn that moved it
        return None
    try:
        fit_and_score = set(inspect.signature(_fit_and_score).parameters)
        scoring = set(inspect.signature(check_scoring).parameters)
    except (TypeError, ValueError):  # pragma: no cover
        return None
    needed = {"scorer", "train", "test", "verbose", "parameters", "fit_params", "score_params",
              "return_train_score", "return_times", "error_score"}
    if not needed <= fit_and_score or "raise_exc" not in scoring:
        return None  # pragma: no cover - scikit-learn 1.3
    return _fit_and_score


_FIT_AND_SCORE = _grid_fit_and_score()


def _scores(value) -> dict:
    """``_fit_and_score``'s scores (one float, or a dict for several metrics) as a dict named
    the way ``cross_validate`` names them (``"score"`` for a single metric)."""
    if isinstance(value, Mapping):
        return {k: float(v) for k, v in value.items()}
    return {"score": float(value)}


def evaluate_unit(estimator, parameters, X, y, train, test, scoring, fit_params, return_train):
    """Fit one candidate on one split and score it, as ``GridSearchCV`` does.

    Through scikit-learn's ``_fit_and_score`` (``GridSearchCV``'s own per-fit function) where
    its signature is known and metadata routing is off, else through public
    ``cross_validate`` on the one split; the two give the same scores (a test asserts it).
    Both are asked to raise on failure so that a failed fit is known for what it is (the
    caller then applies ``error_score``), instead of being disguised as a score.
    """
    est = clone(estimator).set_params(**clone(parameters, safe=False))
    start = time.perf_counter()
    if _FIT_AND_SCORE is not None and not get_config().get("enable_metadata_routing", False):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitFailedWarning)
                out = _FIT_AND_SCORE(
                    est, X, y,
                    scorer=check_scoring(est, scoring=scoring, raise_exc=True),
                    train=train, test=test, verbose=0, parameters=None,
                    fit_params=fit_params, score_params={},
                    return_train_score=return_train, return_times=True, error_score="raise",
                )
        except Exception as exc:  # noqa: BLE001 - any estimator error is a failed fit
            return _failed(exc, start)
        return {
            "failed": False,
            "test": _scores(out["test_scores"]),
            "train": _scores(out["train_scores"]) if return_train else {},
            "fit_time": float(out["fit_time"]),
            "score_time": float(out["score_time"]),
        }
    try:
        with warnings.catch_warnings():
            # Single-split cross_validate warns about nothing the search does not already report.
            warnings.simplefilter("ignore", FitFailedWarning)
            out = cross_validate(
                est,
                X,
                y,
                cv=[(train, test)],
                scoring=scoring,
                params=fit_params,
                return_train_score=return_train,
                error_score="raise",
            )
    except Exception as exc:  # noqa: BLE001 - any estimator error is a failed fit
        return _failed(exc, start)
    test_scores = {k[5:]: float(v[0]) for k, v in out.items() if k.startswith("test_")}
    train_scores = {k[6:]: float(v[0]) for k, v in out.items() if k.startswith("train_")}
    return {
        "failed": False,
        "test": test_scores,
        "train": train_scores,
        "fit_time": float(out["fit_time"][0]),
        "score_time": float(out["score_time"][0]),
    }


def _failed(exc: BaseException, start: float) -> dict:
    return {
        "failed": True,
        "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
        "exception": exc,
        "fit_time": time.perf_counter() - start,
        "score_time": 0.0,
    }


def evaluate_unit_by_index(estimator, candidates, X, y, splits, scoring, fit_params, return_train,
                            c, s):
    """:func:`evaluate_unit` of candidate ``c`` on split ``s``: what a racer worker runs, so the
    data travel to each worker once, at its start, and a task sends two integers."""
    return evaluate_unit(estimator, candidates[c], X, y, splits[s][0], splits[s][1], scoring,
                          fit_params, return_train)


def stopped_unit(message: str, timeout: float | None) -> dict:
    """The outcome of a fit that was stopped (time limit) or whose worker process died."""
    timed_out = message.startswith("timed out")
    return {
        "failed": True,
        "error": message,
        "exception": (TimeoutError if timed_out else RuntimeError)(message),
        "fit_time": float(timeout) if timed_out else float("nan"),
        "score_time": 0.0,
    }


def _unit(ev) -> tuple[int, int]:
    """The (candidate, split) of an Evaluation: candidates are parameter dicts, so the
    candidate is named by its position; instances are split indices."""
    return ev.candidate_index, ev.instance


class Fits:
    """Run a search's (candidate, split) units and keep their outcomes.

    ``backend`` is a back end of :func:`racer.race_loop.drive`: joblib's ``Parallel``
    (``n_jobs``, ``pre_dispatch``; this object's :meth:`results`), the user's ``executor``
    (:class:`~racer.race_loop.OnExecutor`), or, with a ``timeout``, racer's
    :class:`~racer.execution.WorkerPool` (joblib cannot stop a running fit; racer's pool
    can). ``settle`` records an outcome and tells the race its score. Use as a context
    manager: it opens and closes the back end.
    """

    def __init__(self, search, estimator, candidates, X, y, fit_splits, fit_params) -> None:
        self._search = search
        self._candidates = candidates
        self._timeout = check_timeout(search.timeout)
        self._error_score = search.error_score
        self._args = (estimator, X, y, fit_splits, search.scoring, fit_params,
                      bool(search.return_train_score))
        self.outcomes: dict[tuple[int, int], dict] = {}
        self.names: list[str] | None = None
        self.multimetric: bool | None = None
        self.refit_metric: str | None = None
        self._parallel = None
        self._close = None
        self.backend = None

    def __enter__(self) -> Fits:
        search = self._search
        if self._timeout is not None:
            # The estimator, data and fit_params go to each worker once, at its start; a task
            # sends the two integers of its unit.
            estimator, X, y, splits, scoring, fit_params, return_train = self._args
            candidates = self._candidates
            self.backend, self._close = backend_for(
                functools.partial(evaluate_unit_by_index, estimator, candidates, X, y, splits,
                                  scoring, fit_params, return_train),
                n_jobs=search.n_jobs, timeout=self._timeout, args_of=_unit,
                describe=lambda ev: (f"candidate #{ev.candidate_index} "
                                     f"{candidates[ev.candidate_index]!r} on split "
                                     f"#{ev.instance}"),
                name="estimator, data and fit_params",
            )
        elif search.executor is not None:
            self.backend = OnExecutor.of(search.executor, evaluate_unit,
                                         args_of=lambda ev: self._unit_args(*_unit(ev)))
        else:
            self._parallel = Parallel(n_jobs=search.n_jobs, pre_dispatch=search.pre_dispatch)
            self._parallel.__enter__()
            self.backend = self
        return self

    def __exit__(self, *exc) -> None:
        if self._close is not None:
            self._close()
        if self._parallel is not None:
            self._parallel.__exit__(*exc)

    def _unit_args(self, c: int, s: int) -> tuple:
        estimator, X, y, splits, scoring, fit_params, return_train = self._args
        return (estimator, self._candidates[c], X, y, splits[s][0], splits[s][1], scoring,
                fit_params, return_train)

    def results(self, batch: list):
        """The joblib back end: run the fits of ``batch`` with ``Parallel``; yield
        ``(evaluation, True, outcome)`` in block order (a fit's failure is in its outcome)."""
        outs = self._parallel(delayed(evaluate_unit)(*self._unit_args(*_unit(ev))) for ev in batch)
        for ev, out in zip(batch, outs):
            yield ev, True, out

    def settle(self, race, ev, ok: bool, out) -> None:
        """Record one fit's outcome and tell ``race``: a failed fit is told as an error (it
        ranks below every successful one on its split, whatever ``error_score`` is), and
        raised with ``error_score="raise"``."""
        if not ok:
            # evaluate_unit reports the estimator's errors in its outcome; what fails here
            # is the back end: a fit stopped at its time limit or a dead worker (a message),
            # or an executor's own error, raised as it is.
            if isinstance(out, BaseException):
                raise out
            out = stopped_unit(str(out), self._timeout)
        if out["failed"]:
            if isinstance(self._error_score, str) and self._error_score == "raise":
                raise out["exception"]
            # Kept (the exception itself is not: cv_results_ holds messages) for the error a
            # search whose every fit failed raises (RaceSearchCV.fit).
            out["type_error"] = isinstance(out.pop("exception", None), TypeError)
        elif self.multimetric is None:
            self._learn_metrics(out["test"])
        self.outcomes[_unit(ev)] = out
        if out["failed"]:
            race.tell(ev, error=out["error"])
        else:
            race.tell(ev, out["test"][self.refit_metric])

    def _learn_metrics(self, first_scores: Mapping[str, float] | None) -> None:
        """The metric names, whether there are several, and the one that drives the race:
        from the first successful fit (a callable ``scoring`` names its metrics only then),
        or from ``scoring`` alone if every fit failed."""
        scoring = self._search.scoring
        self.names = _metric_names(scoring, first_scores)
        self.multimetric = _is_multimetric(scoring, first_scores)
        self.refit_metric = _refit_metric(self._search.refit, self.multimetric, self.names)

    def finish(self) -> None:
        """After the race: the metrics, even if every single fit failed."""
        if self.multimetric is None:
            self._learn_metrics(None)


def _metric_names(scoring, first_scores: Mapping[str, float] | None) -> list[str]:
    if isinstance(scoring, Mapping):
        return list(scoring)
    if isinstance(scoring, (list, tuple, set)):
        return list(scoring)
    if first_scores is not None:
        return list(first_scores)
    return ["score"]


def _is_multimetric(scoring, first_scores: Mapping[str, float] | None) -> bool:
    if isinstance(scoring, (Mapping, list, tuple, set)):
        return True
    if callable(scoring) and first_scores is not None:
        return set(first_scores) != {"score"}
    return False


def _refit_metric(refit, multimetric: bool, names: list[str]) -> str:
    if not multimetric:
        return "score"
    if callable(refit) or refit is False:
        # The race still needs a score to drive it: the first metric, as documented.
        return names[0]
    if not (isinstance(refit, str) and refit in names):
        raise ValueError(
            "with several metrics, `refit` must be the name of one of them "
            f"({', '.join(map(repr, names))}), a callable or False; got {refit!r}"
        )
    return refit
