"""``racer``: run an irace user's scenario unchanged, with racer's engine and no R.

    racer --scenario scenario.txt [--parallel N] [--seed S] [--max-experiments N] ...
    racer --check --scenario scenario.txt     # validate; run one configuration once
    racer --init                               # write template files here
    racer report EXECDIR|JOURNAL [-o report.html]   # the HTML report (racer.report)

Flags are irace's (``racer --help``); see docs/cli.md. Exit codes: 0 success, 1 internal
error, 2 bad scenario or command line (including a budget too small to race), 3 a failing
target-runner, 130 interrupted (Ctrl-C or SIGTERM). An interrupted or killed run resumes
when the same command is run again (journal in ``<execDir>/racer-journal``); run again with a
larger ``maxExperiments``/``maxTime``, a finished tuning continues (:mod:`racer.tuning.resume`).
At the end of a
run (and after an interruption) the HTML report is written to ``<execDir>/report.html``
unless ``--no-report`` is given; without matplotlib (the ``plot`` extra) racer says how to get
it and goes on, with the same exit code.
"""

from racer.cli._main import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNNER,
    EXIT_SCENARIO,
    UsageError,
    main,
)

__all__ = ["main", "EXIT_OK", "EXIT_INTERNAL", "EXIT_SCENARIO", "EXIT_RUNNER", "EXIT_INTERRUPTED",
           "UsageError"]
