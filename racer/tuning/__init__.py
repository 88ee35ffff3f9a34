"""irace's iterated racing: what ``racer --scenario``, :func:`racer.tune` and
:class:`racer.adapters.optuna.IteratedRace` share.

Where things are:

* :mod:`racer.tuning.tuner` -- the :class:`~racer.tuning.tuner.Tuner`: iterations, races,
  elites, the test phase;
* :mod:`racer.tuning.schedule` -- irace's budget schedule (iterations, configurations per
  race, first test);
* :mod:`racer.tuning.dispatch`, :mod:`racer.tuning.lookahead` -- how a race's runs reach the
  workers, and the runs started ahead of need;
* :mod:`racer.tuning.capping` -- irace's adaptive capping (execution bounds);
* :mod:`racer.tuning.objectives` -- tuning on several objectives (Pareto elites);
* :mod:`racer.tuning.sampler` -- irace's sampler of new configurations around the elites;
* :mod:`racer.tuning.parameters`, :mod:`racer.tuning.rexpr`, :mod:`racer.tuning.checks`,
  :mod:`racer.tuning.spaces` -- irace's parameter language and the translation of Optuna's and
  ConfigSpace's spaces into it;
* :mod:`racer.tuning.runner` -- the runner protocol (what the tuner asks of whatever makes its
  runs); :mod:`racer.tuning.instances` -- what it races on;
* :mod:`racer.tuning.resume`, :mod:`racer.tuning.output`, :mod:`racer.tuning.record` -- a
  tuning's files: resuming one, writing its outputs, reading them back.

The command line (:mod:`racer.cli`) only reads scenario files and arguments, runs the
target-runner and prints; it imports this package, never the other way round.
"""
