"""What makes :class:`racer.tuning.tuner.Tuner` (irace's iterated racing, racer's one copy)
run on the user's Optuna study for :class:`~racer.adapters.optuna.IteratedRace`:

* :class:`StudySampler`, the Tuner's sampler: asks the user's study (through its in-memory
  mirror) for each new configuration, with the fixed distributions or the define-by-run
  function, and tells each trial how its race went (IteratedRace's docstring); on a resume it
  first hands back the trials the interrupted run sampled, in order, so the replayed tuning
  races the same configurations;
* :class:`StudyRunner`, the Tuner's runner (racer.tune's runner of a Python callable): it
  answers (trial, instance) from the scores the study recorded instead of running
  ``evaluate`` again, so a resumed run replays to the same elites at no cost;
* :func:`schedule_space`, the space the Tuner sizes its schedule by.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import numbers
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from racer.adapters.optuna._common import ITERATION_ATTR, N_INSTANCES_ATTR
from racer.tuning.parameters import Parameter, ParameterSpace
from racer.tuning.sampler import OptunaSampler, Sampler
from racer.tuning.runner import CallableRunner

__all__ = ["StudySampler", "StudyRunner", "schedule_space", "PARAMS_ATTR"]

# Duplicates asked in a row before an iteration races fewer new configurations.
MAX_DUPLICATES = 10
# Duplicates in a row from the study's sampler before proposals are drawn uniformly.
EXPLORE_AFTER = 3

# User attribute of a trial whose define-by-run function returned parameters other than
# ``trial.params``: what was raced, so that a resumed run replays it.
PARAMS_ATTR = "racer_params"


def schedule_space(distributions: dict) -> ParameterSpace:
    """The Tuner's space for an Optuna search space: one placeholder parameter per name,
    fixed where the distribution has a single value.

    Decision: the Tuner reads its space only for irace's schedule (``nbVariable``: how many
    parameters vary) and soft restarts (which an Optuna sampler never asks for); every value
    is suggested by Optuna from the user's own distributions. So the space is not translated
    (:func:`racer.parameter_space` refuses what irace's sampler cannot express, such as a
    choice None, which Optuna samples fine); for a define-by-run space it is built from the
    distributions of the first trial (the old loop counted that trial's parameters too).

    >>> from optuna.distributions import FloatDistribution, CategoricalDistribution
    >>> schedule_space({"x": FloatDistribution(0, 1), "k": CategoricalDistribution([None])}
    ...                ).n_variable
    1
    """
    params = [Parameter(name, "", "c", ("fixed",) if dist.single() else ("a", "b"))
              for name, dist in distributions.items()]
    return ParameterSpace(params, source="<Optuna distributions>")


def _key(params: dict) -> tuple:
    # Names are unique, so sorting never compares two values.
    return tuple(sorted(params.items()))


class StudySampler(OptunaSampler):
    """The Tuner's sampler on the user's study (``mirror``: an ``_StudyMirror``).

    ``search_space`` is a dict of distributions or a define-by-run function; ``replay`` the
    trials to hand back before asking new ones, as ``(optuna.Trial or None, number,
    params)`` (None: a trial already finished); ``sign`` -1 when the study maximizes (the
    Tuner minimizes costs). Configurations are keyed by their parameters (a dict of the
    active ones), so a duplicate is told FAIL and asked again, as OptunaSampler does.
    """

    def __init__(self, space: ParameterSpace, mirror: Any, search_space: Any, replay: list,
                 sign: float, seed: int) -> None:
        Sampler.__init__(self, space)  # not OptunaSampler's: its study is the user's here
        self.explorer = optuna.samplers.RandomSampler(seed=seed % 2**32)
        self.mirror = mirror
        self.search_space = search_space
        self.replay = collections.deque(replay)
        self.sign = sign
        self.iteration = 1
        self.number_of: dict[tuple, int] = {}  # configuration key -> trial number
        self.params_of: dict[int, dict] = {}  # raced trial -> its parameters
        self._trials: dict[int, optuna.Trial] = {}  # raced trials not told yet
        self.told: list[int] = []

    def key(self, values: dict) -> tuple:
        return _key(values)

    def new_trial(self, explore: bool = False) -> tuple:
        """A new trial asked from the study, marked with the iteration, and stored; with
        ``explore``, its parameters drawn by Optuna's RandomSampler instead of the study's."""
        work = self.mirror.work
        sampler = work.sampler
        if explore:
            work.sampler = self.explorer
        try:
            if isinstance(self.search_space, dict):
                trial = work.ask(fixed_distributions=self.search_space)
                params = dict(trial.params)
            else:
                trial = work.ask()
                got = self.search_space(trial)
                params = dict(trial.params if got is None else got)
                if params != trial.params:
                    trial.set_user_attr(PARAMS_ATTR, params)
        finally:
            work.sampler = sampler
        trial.set_user_attr(ITERATION_ATTR, self.iteration)
        self.mirror.sampled(trial)
        return trial, trial.number, params

    def _ask(self, n: int, seen: set) -> list:
        # Decision: a duplicate of a configuration already raced is told FAIL and asked again,
        # at most MAX_DUPLICATES times in a row; then fewer configurations are raced this
        # iteration (as irace's sampler in racer skips one when only duplicates come out).
        # Not MAX_RETRIES: each duplicate stays in the user's study as a FAIL trial, and a
        # small space (a conditional branch without parameters) is used up quickly.
        # Decision: after EXPLORE_AFTER duplicates in a row, the next proposals are drawn
        # uniformly (Optuna's RandomSampler, seeded) - the Optuna sampler's counterpart of
        # irace's soft restart: TPE that has collapsed onto the elites on a small space keeps
        # proposing them, while configurations never raced remain.
        out = []
        for _ in range(n):
            for attempt in range(MAX_DUPLICATES):
                trial, number, params = (self.replay.popleft() if self.replay
                                         else self.new_trial(attempt >= EXPLORE_AFTER))
                key = self.key(params)
                if key in seen:
                    if trial is not None:
                        self.mirror.work.tell(trial, state=TrialState.FAIL)
                        self.mirror.sync(number)
                    continue
                seen.add(key)
                self.number_of[key] = number
                self.params_of[number] = params
                if trial is not None:
                    self._trials[number] = trial
                out.append(dict(params))
                break
            else:
                break
        return out

    def sample_uniform(self, n: int, rng: Any, seen: set | None = None) -> list[dict]:
        # Every configuration raced is a trial of the user's study: no uniform draws outside
        # it (OptunaSampler's top-up); _ask already turns to Optuna's RandomSampler after
        # EXPLORE_AFTER duplicates, and gives fewer when the space is used up.
        return self._ask(n, set() if seen is None else seen)

    def update_model(self, elites: list, iteration: int, n_iterations: int, n_new: int,
                     elitist: bool = True) -> None:
        self.iteration = iteration  # the trials sampled next are this iteration's

    def is_open(self, number: int) -> bool:
        """Whether trial ``number`` can still change (its scores go to its user attributes)."""
        return number in self._trials

    def observe(self, candidates: list, result: Any) -> None:
        """Tell each trial this race sampled how it did, once: PRUNED, with its running mean
        (the user's sign) at ``step`` = instances it was raced on; a survivor its race mean
        at that step; a trial the race never evaluated (the budget ran out first) FAIL."""
        alive = set(result.survivor_indices.tolist())
        for ci, cand in enumerate(candidates):
            number = self.number_of[self.key(cand.values)]
            trial = self._trials.pop(number, None)
            if trial is None:
                continue
            column = result.scores[:, ci]
            k = int(result.n_evaluated[ci])
            if k == 0:
                self.mirror.work.tell(trial, state=TrialState.FAIL)
            else:
                seen = column[np.isfinite(column)]
                mean = (float(result.mean_scores[ci]) if ci in alive
                        else float(np.mean(seen)) if seen.size else math.nan)
                trial.set_user_attr(N_INSTANCES_ATTR, k)
                trial.report(self.sign * mean, step=k)
                self.mirror.work.tell(trial, state=TrialState.PRUNED)
            self.mirror.sync(number)
            self.told.append(number)

    def fail_open(self) -> None:
        """Tell every raced trial not told yet FAIL (a race that failed as a whole)."""
        for number, trial in list(self._trials.items()):
            self.mirror.work.tell(trial, state=TrialState.FAIL)
            self.mirror.sync(number)
        self._trials.clear()


@dataclasses.dataclass(frozen=True)
class TrialArguments:
    """What the runner gets for a configuration: its trial, parameters and recorded scores
    (instance position -> the user's score; NaN: a failure), for a resumed run's replay."""

    number: int
    params: dict
    recorded: dict


class _WithoutSeed:
    """IteratedRace's ``evaluate(params, instance)`` as racer.tune's runner calls a function
    (with a seed), its value negated when the study maximizes (the Tuner minimizes)."""

    def __init__(self, evaluate: Any, maximize: bool) -> None:
        self.evaluate = evaluate
        self.maximize = maximize

    def __call__(self, params: dict, instance: Any, seed: int) -> Any:
        value = self.evaluate(params, instance)
        if self.maximize and isinstance(value, numbers.Real) and not isinstance(value, bool):
            return -value
        return value


class StudyRunner(CallableRunner):
    """racer.tune's runner of a Python callable, for IteratedRace: ``arguments`` names the
    trial (``number_of``: the sampler's map) and carries its scores recorded in the study
    (``recorded``); a run whose instance has a recorded score is answered from it, not run."""

    def __init__(self, evaluate: Any, objects: list, instances: dict, *, maximize: bool,
                 n_workers: int, timeout: float | None, number_of: dict,
                 recorded: dict) -> None:
        super().__init__(_WithoutSeed(evaluate, maximize), objects, instances,
                         n_workers=n_workers, timeout=timeout, retries=0, need_time=False,
                         exec_dir="", name="evaluate")
        self.sign = -1.0 if maximize else 1.0
        self.number_of = number_of
        self.recorded = recorded

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.update(number_of={}, recorded={})  # a worker gets each run's TrialArguments
        return state

    def arguments(self, space: Any, values: dict) -> TrialArguments:
        number = self.number_of[_key(values)]
        return TrialArguments(number, dict(values), dict(self.recorded.get(number, {})))

    def run(self, config_id: int, instance_id: int, seed: int, instance: Any,
            arguments: TrialArguments, tag: object = None, bound: float | None = None) -> Any:
        from racer.tuning.runner import RunResult

        index = self.instances[instance]
        if index in arguments.recorded:
            score = arguments.recorded[index]
            if math.isnan(score):
                return RunResult("error", None, None, "failed (as recorded in the study)",
                                 list(self.command), None, "", "", 0.0, 0, None)
            return RunResult("ok", self.sign * score, None, "", list(self.command), None, "",
                             "", 0.0, 0, None)
        return super().run(config_id, instance_id, seed, instance, arguments.params, tag, bound)
