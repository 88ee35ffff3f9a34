"""irace's iterated racing: what ``racer --scenario``, :func:`racer.tune` and
:class:`racer.adapters.optuna.IteratedRace` share.

Where things are:

* :mod:`racer.tuning.run` -- :func:`~racer.tuning.run.run_tuning`, the one entry of the
  command and of :func:`racer.tune`: typed :class:`~racer.tuning.settings.Settings` in
  (:mod:`racer.tuning.settings`, checked, refusals in the caller's words), the Tuner's result
  and runs out;
* :mod:`racer.tuning.tuner` -- the :class:`~racer.tuning.tuner.Tuner`: iterations, races,
  elites, the test phase;
* :mod:`racer.tuning.schedule` -- irace's budget schedule (iterations, configurations per
  race, first test);
* :mod:`racer.tuning.dispatch`, :mod:`racer.tuning.lookahead` -- how a race's runs reach the
  workers, and the runs started ahead of need;
* :mod:`racer.tuning.capping` -- irace's adaptive capping (execution bounds);
  :mod:`racer.tuning.slow_runs` -- stopping a run far slower than its instance's others;
* :mod:`racer.tuning.objectives` -- tuning on several objectives (Pareto elites);
* :mod:`racer.tuning.sampler` -- irace's sampler of new configurations around the elites;
* :mod:`racer.tuning.parameters`, :mod:`racer.tuning.rexpr`, :mod:`racer.tuning.checks`,
  :mod:`racer.tuning.spaces` -- irace's parameter language and the translation of Optuna's and
  ConfigSpace's spaces into it;
* :mod:`racer.tuning.runner` -- the runner protocol (what the tuner asks of whatever makes its
  runs) and :class:`~racer.tuning.runner.CallableRunner`, the runner of a Python function;
  :mod:`racer.tuning.instances` -- what it races on;
* :mod:`racer.tuning.resume`, :mod:`racer.tuning.output`, :mod:`racer.tuning.record` -- a
  tuning's files: resuming one, writing its outputs, reading them back.

The command line (:mod:`racer.cli`) only reads scenario files and arguments, runs the
target-runner and prints; it imports this package, never the other way round.

The names below are exported lazily (importing the package loads none of its modules):

>>> import racer.tuning
>>> racer.tuning.run_tuning is racer.tuning.run.run_tuning
True
"""

from racer._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "Tuner": "tuner",
    "Settings": "settings",
    "run_tuning": "run",
    "Runner": "runner",
    "RunResult": "runner",
    "CallableRunner": "runner",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals())
