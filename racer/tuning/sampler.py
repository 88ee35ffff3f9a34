"""irace's sampling of configurations, for irace's parameter spaces (racer's own code).

Read from irace 3.5's ``sampleUniform``, ``initialiseModel``, ``updateModel``, ``sampleModel``,
``sample_norm`` and ``numeric_value_round``:

* First iteration: every active parameter uniform (``i``: uniform on ``[lower, upper + 1)``
  then floored; ``,log``: uniform in log space; ``r``: rounded to ``digits`` decimals).
* After each race the elites carry a model: for ``c`` a probability vector, for ``i``/``r`` a
  standard deviation and a mean, for ``o`` a standard deviation in index units. A new
  elite inherits its parent's model with the mean moved to its own value.
* Before sampling iteration ``j`` (of ``N``): ``c`` probabilities are shrunk by
  ``1 - (j-1)/N`` and the elite's value gets ``+ (j-1)/N``, then (elitist irace) capped at
  ``0.2^(1/nbVariable)`` and renormalised; every ``sd`` is multiplied by
  ``(1/nbNew)^(1/nbVariable)``.
* A new configuration picks a parent among the elites with weights ``n - rank + 1`` (best
  first) and samples each active parameter in dependency order: numbers from a normal
  truncated to the domain around the parent's value (in log space for ``,log``), ordinals
  from a truncated normal over the indices, categoricals from the parent's probabilities.
* A forbidden configuration is resampled (at most 100 times, then an error, as irace). racer
  also resamples exact duplicates of configurations already raced (irace does not), and skips
  a configuration when only duplicates come out.

Soft restarts (irace's ``softRestart``, read from ``similarConfigurations``,
``numeric.configurations.equal`` and ``restartConfigurations``): after sampling, if two of the
race's configurations (elites and new ones) are *similar* -- the same value of every
categorical and ordinal parameter, and every numerical one either inactive in both or within
``softRestartThreshold`` (default ``10^-digits``) of each other relative to its domain's width
-- the model of each similar configuration's elite (its own, or its parent's for a new one) is
widened: categorical probabilities ``0.9 p + 0.1 max(p)``, renormalised; every standard
deviation ``min(sd * nbNew^(2/nbVariable), sd0 * (1/nbNew)^(1/nbVariable))`` with ``sd0`` the
initial one; and the new configurations are sampled again. See :meth:`Sampler.similar` and
:meth:`Sampler.soft_restart`.

>>> import numpy as np
>>> from racer.tuning.parameters import Parameter, ParameterSpace
>>> space = ParameterSpace([Parameter("x", "--x ", "r", (0.0, 1.0)),
...                         Parameter("k", "--k ", "o", ("a", "b", "c"))], digits=2)
>>> s = Sampler(space)
>>> configs = s.sample_uniform(3, np.random.default_rng(0))
>>> all(0.0 <= c["x"] <= 1.0 and c["k"] in "abc" for c in configs)
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from racer.tuning.parameters import Parameter, ParameterSpace

__all__ = ["Sampler", "SamplingError", "OptunaSampler"]

MAX_RETRIES = 100


class SamplingError(RuntimeError):
    """No configuration outside the forbidden rules could be sampled."""


def _rtnorm(rng: np.random.Generator, mean: float, sd: float, lower: float, upper: float) -> float:
    if not sd > 0:
        return min(max(mean, lower), upper)
    # Imported here, not with the module: scipy.stats costs a second on a cold start, which
    # `racer --check` and a scenario mistake should not pay.
    from scipy.stats import truncnorm

    a, b = (lower - mean) / sd, (upper - mean) / sd
    return float(truncnorm.rvs(a, b, loc=mean, scale=sd, random_state=rng))


def _log_bounds(p: Parameter) -> tuple[float, float]:
    lo, hi = p.domain
    return math.log(lo), math.log(hi + 1 if p.type == "i" else hi)


class Sampler:
    """Samples configurations of ``space`` as irace does; holds the elites' model."""

    def __init__(self, space: ParameterSpace) -> None:
        if not isinstance(space, ParameterSpace):
            raise TypeError(f"`space` must be a ParameterSpace; got {space!r}")
        self.space = space
        self.model: dict[int, dict[str, list]] = {}

    # ------------------------------------------------------------------ numbers

    def _round(self, p: Parameter, value: float) -> Any:
        lo, hi = p.domain
        if p.type == "i":
            v = int(math.floor(value))
            return min(max(v, lo), hi)
        v = round(value, self.space.digits)
        return min(max(v, lo), hi)

    def _uniform(self, p: Parameter, rng: np.random.Generator) -> Any:
        if p.type in ("c", "o"):
            return p.domain[int(rng.integers(len(p.domain)))]
        lo, hi = p.domain
        upper = hi + 1 if p.type == "i" else hi
        if p.log:
            tlo, thi = _log_bounds(p)
            value = math.exp(tlo + (thi - tlo) * rng.random())
        else:
            value = lo + (upper - lo) * rng.random()
        return self._round(p, value)

    def _normal(self, p: Parameter, mean: float, sd: float, rng: np.random.Generator) -> Any:
        lo, hi = p.domain
        upper = hi + 1 if p.type == "i" else hi
        if p.type == "i":
            mean = mean + 0.5
        if p.log:
            tlo, thi = _log_bounds(p)
            tmean = (math.log(mean) - tlo) / (thi - tlo)
            value = math.exp(tlo + (thi - tlo) * _rtnorm(rng, tmean, sd, 0.0, 1.0))
        else:
            value = _rtnorm(rng, mean, sd, lo, upper)
        return self._round(p, value)

    # ------------------------------------------------------------------ sampling

    def _fill(self, draw, rng) -> dict:
        values: dict = {p.name: None for p in self.space.declared}
        for p in self.space.params:
            if not self.space.is_active(p, values):
                values[p.name] = None
            elif p.is_fixed:
                values[p.name] = p.domain[0]
            else:
                values[p.name] = draw(p)
        return values

    def _sample(self, n: int, draw_one, rng, seen: set) -> list:
        out = []
        for _ in range(n):
            got = None
            allowed = None
            for _attempt in range(MAX_RETRIES):
                values, extra = draw_one()
                if self.space.is_forbidden(values):
                    continue
                allowed = (values, extra)
                key = self.key(values)
                if key in seen:
                    continue
                got = allowed
                seen.add(key)
                break
            if allowed is None:
                raise SamplingError(
                    f"{MAX_RETRIES} configurations in a row were forbidden: the forbidden rules "
                    "of the scenario leave (almost) nothing to sample")
            if got is not None:
                out.append(got)
        return out

    def key(self, values: dict) -> tuple:
        return tuple(values.get(n) for n in self.space.names)

    def sample_uniform(self, n: int, rng: np.random.Generator, seen: set | None = None) -> list[dict]:
        """``n`` configurations (fewer if only duplicates of ``seen`` come out)."""
        seen = set() if seen is None else seen
        got = self._sample(n, lambda: (self._fill(lambda p: self._uniform(p, rng), rng), None), rng, seen)
        return [v for v, _ in got]

    def init_model(self, elites: list, keep: bool = False) -> None:
        """irace's ``initialiseModel`` for ``elites`` (objects with ``id`` and ``values``);
        ``keep``: the entries already there stay (pipelined iterations,
        :mod:`racer.tuning.next_race`, sampled the second race before the first ended)."""
        if not keep:
            self.model = {}
        for e in elites:
            if keep and e.id in self.model:
                continue
            self.model[e.id] = {p.name: self._initial(p, e.values.get(p.name))
                                for p in self.space.declared if not p.is_fixed}

    def _initial(self, p: Parameter, value: Any) -> list:
        if p.type == "c":
            return [1.0 / len(p.domain)] * len(p.domain)
        if p.type == "o":
            return [(len(p.domain) - 1) / 2.0]
        sd = 0.5 if p.log else (p.domain[1] - p.domain[0]) / 2.0
        return [sd, value]

    def update_model(self, elites: list, iteration: int, n_iterations: int, n_new: int,
                     elitist: bool = True, keep_others: bool = False) -> None:
        """irace's ``updateModel`` before sampling ``n_new`` configurations in ``iteration``.
        ``keep_others``: the entries of configurations not among ``elites`` stay, unchanged
        (pipelined iterations, :mod:`racer.tuning.next_race`: ``elites`` are then the
        provisional ones of a race not yet ended, and its final elites may be others, whose
        entries its next race's sampling needs)."""
        n_var = max(self.space.n_variable, 1)
        shrink = (1.0 / max(n_new, 1)) ** (1.0 / n_var)
        frac = (iteration - 1) / n_iterations
        new_model = {}
        for e in elites:
            entry = {}
            for p in self.space.declared:
                if p.is_fixed:
                    continue
                if e.id in self.model:
                    vec = list(self.model[e.id][p.name])
                elif e.parent not in self.model:
                    # drawn uniformly, with no parent (the Tuner tops up a collapsed model
                    # so): the first iteration's wide model around its own values
                    vec = self._initial(p, e.values.get(p.name))
                else:
                    vec = list(self.model[e.parent][p.name])
                    if p.type in ("i", "r") and e.values.get(p.name) is not None:
                        vec[1] = e.values[p.name]
                if p.type == "c":
                    value = e.values.get(p.name)
                    if value is not None:
                        probs = np.asarray(vec) * (1.0 - frac)
                        probs[p.domain.index(value)] += frac
                        if elitist:
                            probs = probs / probs.sum()
                            probs = np.minimum(probs, 0.2 ** (1.0 / n_var))
                        vec = list(probs / probs.sum())
                else:
                    vec[0] = vec[0] * shrink
                entry[p.name] = vec
            new_model[e.id] = entry
        self.model = {**self.model, **new_model} if keep_others else new_model

    def similar(self, configurations: list, threshold: float) -> list:
        """irace's ``similarConfigurations``: the ids of the configurations (objects with ``id``
        and ``values``) that are similar to another one of the list (see the module docstring),
        in the order given; empty if none is.

        >>> from types import SimpleNamespace as C
        >>> from racer.tuning.parameters import Parameter, ParameterSpace
        >>> space = ParameterSpace([Parameter("x", "--x ", "r", (0.0, 10.0)),
        ...                         Parameter("k", "--k ", "c", ("a", "b"))], digits=2)
        >>> confs = [C(id=1, values={"x": 1.0, "k": "a"}), C(id=2, values={"x": 1.05, "k": "a"}),
        ...          C(id=3, values={"x": 1.0, "k": "b"})]
        >>> Sampler(space).similar(confs, 0.01)   # |1.05 - 1.0| / 10 <= 0.01; k differs for 3
        [1, 2]
        """
        variable = [p for p in self.space.declared if not p.is_fixed]
        cats = [p for p in variable if p.type in ("c", "o")]
        nums = [p for p in variable if p.type not in ("c", "o")]
        groups: dict = {}
        for c in configurations:
            groups.setdefault(tuple(c.values.get(p.name) for p in cats), []).append(c)
        found: set = set()
        for group in groups.values():
            if len(group) < 2:
                continue
            if not nums:  # equal on every categorical parameter, and there is nothing else
                found.update(c.id for c in group)
                continue
            for i, x in enumerate(group):
                for y in group[i + 1:]:
                    if self._numerically_equal(x.values, y.values, nums, threshold):
                        found.update((x.id, y.id))
        return [c.id for c in configurations if c.id in found]

    @staticmethod
    def _numerically_equal(x: dict, y: dict, nums: list, threshold: float) -> bool:
        """irace's ``numeric.configurations.equal`` for one pair: every parameter inactive in
        both, or within ``threshold`` of each other relative to the domain's width (on the
        declared scale, also for ``,log``, as irace)."""
        for p in nums:
            a, b = x.get(p.name), y.get(p.name)
            if a is None and b is None:
                continue
            if a is None or b is None:
                return False
            width = p.domain[1] - p.domain[0]
            if abs(float(a) - float(b)) / width > threshold:
                return False
        return True

    def soft_restart(self, configurations: list, ids: list, n_new: int) -> list:
        """irace's ``restartConfigurations``: widen the model of the elites behind ``ids`` (a
        new configuration's elite is its ``parent``) before ``n_new`` configurations are
        sampled again. Returns the elite ids whose model was widened.

        >>> from types import SimpleNamespace as C
        >>> from racer.tuning.parameters import Parameter, ParameterSpace
        >>> space = ParameterSpace([Parameter("x", "--x ", "r", (0.0, 10.0))], digits=2)
        >>> s = Sampler(space)
        >>> elite = C(id=1, values={"x": 1.0}, parent=None)
        >>> s.init_model([elite])
        >>> s.model[1]["x"][0] = 0.01            # a model that has shrunk
        >>> s.soft_restart([elite, C(id=2, values={"x": 1.0}, parent=1)], [2], n_new=4)
        [1]
        >>> s.model[1]["x"][0]                   # min(0.01 * 4^2, 5 * (1/4)^1)
        0.16
        """
        by_id = {c.id: c for c in configurations}
        elites: list = []
        for cid in ids:
            eid = cid if cid in self.model else by_id[cid].parent
            if eid not in elites:
                elites.append(eid)
        n_var = max(self.space.n_variable, 1)
        grow = max(n_new, 1) ** (2.0 / n_var)
        cap = (1.0 / max(n_new, 1)) ** (1.0 / n_var)
        for eid in elites:
            entry = self.model[eid]
            for p in self.space.declared:
                if p.is_fixed:
                    continue
                vec = list(entry[p.name])
                if p.type == "c":
                    probs = np.asarray(vec, dtype=float)
                    probs = 0.9 * probs + 0.1 * probs.max()
                    vec = list(probs / probs.sum())
                else:
                    vec[0] = min(vec[0] * grow, self._initial(p, None)[0] * cap)
                entry[p.name] = vec
        return elites

    def sample_model(self, elites: list, n: int, rng: np.random.Generator,
                     seen: set | None = None) -> list[tuple[dict, int]]:
        """``n`` configurations sampled around ``elites`` (best first), as (values, parent id)."""
        seen = set() if seen is None else seen
        k = len(elites)
        weights = np.array([k - r for r in range(k)], dtype=float)
        weights /= weights.sum()

        def draw_one():
            parent = elites[int(rng.choice(k, p=weights))]
            model = self.model[parent.id]

            def draw(p: Parameter):
                pv = parent.values.get(p.name)
                if p.type in ("i", "r"):
                    sd, mean = model[p.name]
                    if pv is not None:
                        mean = pv
                    lo, hi = p.domain
                    if mean is None or not lo <= mean <= hi:
                        return self._uniform(p, rng)
                    return self._normal(p, float(mean), sd, rng)
                if p.type == "o":
                    if pv is None:
                        return self._uniform(p, rng)
                    m = len(p.domain)
                    mean = p.domain.index(pv) + 1
                    idx = int(math.floor(_rtnorm(rng, mean + 0.5, model[p.name][0], 1.0, m + 1.0)))
                    return p.domain[min(max(idx, 1), m) - 1]
                probs = np.asarray(model[p.name], dtype=float)
                return p.domain[int(rng.choice(len(p.domain), p=probs / probs.sum()))]

            return self._fill(draw, rng), parent.id

        return self._sample(n, draw_one, rng, seen)


class OptunaSampler(Sampler):
    """New configurations proposed by an Optuna sampler (TPE by default) instead of irace's
    model: every configuration is an Optuna trial, sampled define-by-run in dependency order
    (inactive parameters are not suggested), and told the mean cost it reached in its race.
    Forbidden and duplicate proposals are told as failed trials and asked again. Needs
    ``optuna`` (``pip install bayes-racer[optuna]``).

    >>> import numpy as np
    >>> from racer.tuning.parameters import Parameter, ParameterSpace
    >>> space = ParameterSpace([Parameter("x", "--x ", "r", (0.0, 1.0))], digits=2)
    >>> s = OptunaSampler(space, seed=0)
    >>> [0.0 <= c["x"] <= 1.0 for c in s.sample_uniform(2, np.random.default_rng(0))]
    [True, True]
    """

    def __init__(self, space: ParameterSpace, seed: int = 0, sampler: Any = None) -> None:
        super().__init__(space)
        try:
            import optuna
        except ImportError as exc:  # pragma: no cover - optuna is in the test extras
            raise ImportError("--sampler optuna needs optuna: pip install bayes-racer[optuna]") from exc
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.study = optuna.create_study(
            direction="minimize",
            sampler=sampler if sampler is not None else optuna.samplers.TPESampler(seed=seed))
        self._trials: dict[tuple, Any] = {}

    def _suggest(self, trial) -> dict:
        values: dict = {p.name: None for p in self.space.declared}
        for p in self.space.params:
            if not self.space.is_active(p, values):
                continue
            if p.is_fixed:
                values[p.name] = p.domain[0]
            elif p.type in ("c", "o"):
                values[p.name] = trial.suggest_categorical(p.name, list(p.domain))
            elif p.type == "i":
                values[p.name] = trial.suggest_int(p.name, p.domain[0], p.domain[1], log=p.log)
            else:
                values[p.name] = self._round(p, trial.suggest_float(p.name, p.domain[0], p.domain[1], log=p.log))
        return values

    def _ask(self, n: int, seen: set) -> list:
        out = []
        fail = self._optuna.trial.TrialState.FAIL
        for _ in range(n):
            allowed = False
            for _attempt in range(MAX_RETRIES):
                trial = self.study.ask()
                values = self._suggest(trial)
                key = self.key(values)
                forbidden = self.space.is_forbidden(values)
                allowed = allowed or not forbidden
                if forbidden or key in seen:
                    self.study.tell(trial, state=fail)
                    continue
                seen.add(key)
                self._trials[key] = trial
                out.append(values)
                break
            else:
                if not allowed:
                    raise SamplingError(f"{MAX_RETRIES} proposals in a row were forbidden: the "
                                        "forbidden rules of the scenario leave (almost) nothing "
                                        "to sample")
                # the model proposes only configurations already raced (a small grid, a
                # model that has converged): fewer, as irace's sampler gives
                break
        return out

    def sample_uniform(self, n: int, rng: np.random.Generator, seen: set | None = None) -> list[dict]:
        """``n`` configurations Optuna's sampler proposes, and where it proposes only
        configurations already raced, uniform ones (not Optuna trials: their results do not
        reach the study)."""
        seen = set() if seen is None else seen
        out = self._ask(n, seen)
        if len(out) < n:
            out += super().sample_uniform(n - len(out), rng, seen)
        return out

    def init_model(self, elites: list) -> None:
        pass

    def update_model(self, elites: list, iteration: int, n_iterations: int, n_new: int,
                     elitist: bool = True) -> None:
        pass

    def sample_model(self, elites: list, n: int, rng: np.random.Generator,
                     seen: set | None = None) -> list[tuple[dict, int]]:
        return [(v, None) for v in self._ask(n, set() if seen is None else seen)]

    def similar(self, configurations: list, threshold: float) -> list:
        """Optuna's sampler has no model around the elites to restart: never similar."""
        return []

    def observe(self, candidates: list, result: Any) -> None:
        """Tell each configuration's trial its mean cost in ``result`` (failures: a failed
        trial). Configurations told before (elites) are skipped."""
        for i, cand in enumerate(candidates):
            trial = self._trials.pop(self.key(cand.values), None)
            if trial is None:
                continue
            mean = float(result.mean_scores[i])
            if math.isfinite(mean):
                self.study.tell(trial, mean)
            else:
                self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
