"""The runner protocol: what the tuner asks of whatever makes its runs.

:class:`Runner` is the protocol, :class:`RunResult` one run's outcome and
:class:`TargetRunnerError` a run that failed under the policy that stops the tuning. Two
runners implement it: the command line's :class:`racer.cli.target_runner.TargetRunner` (a
process per run) and :class:`racer.tuning.CallableRunner` (a Python function, the runner of
:func:`racer.tune`).
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any, Protocol, runtime_checkable

from racer.tuning.instances import Instance

__all__ = ["RunResult", "Runner", "TargetRunnerError", "death_cause"]

# How many lines of a failed run's stdout and stderr its description shows.
_TAIL_LINES = 10


def death_cause(returncode: int) -> str:
    from racer.execution import death_cause as cause  # stdlib-only module; lazily, as it is rare

    return cause(returncode)


@dataclasses.dataclass
class RunResult:
    status: str  # "ok", "inf" or "error"
    cost: float | None
    time: float | None
    message: str
    command: list
    returncode: int | None
    stdout: str
    stderr: str
    wall: float
    attempts: int = 1
    bound: float | None = None  # the execution bound passed to the runner (boundMax, capping)
    # A tuning on several objectives (racer.tuning.objectives): every objective the runner
    # printed, in order (``cost`` is then the first); None for one objective.
    objectives: tuple | None = None

    def describe(self, exec_dir: str) -> str:
        """The failure as a user needs it: what, the exact command, exit status, output tails."""
        if self.returncode is None:
            status = "none (not started or killed)"
        elif self.returncode < 0:
            status = f"{self.returncode} ({death_cause(self.returncode)})"
        else:
            status = str(self.returncode)
        lines = [self.message,
                 f"  command (run in {exec_dir}): {shlex.join(self.command)}",
                 f"  exit status: {status}" + (f"; attempts: {self.attempts}" if self.attempts > 1 else "")]
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            tail = [ln for ln in text.splitlines()][-_TAIL_LINES:]
            if tail:
                lines.append(f"  {name} (last {len(tail)} lines):")
                lines.extend("    | " + ln for ln in tail)
            else:
                lines.append(f"  {name}: (empty)")
        return "\n".join(lines)


@runtime_checkable
class Runner(Protocol):
    """What the tuner (:class:`racer.tuning.tuner.Tuner`, its dispatcher and look-ahead)
    asks of whatever makes its runs. Two implementations: :class:`TargetRunner` (the
    command line: a process per run) and racer.tune's runner of a Python callable.

    ``run`` makes one run and never raises for a failing one: it returns a
    :class:`RunResult` whose status is "ok", "inf" (the configuration is rejected) or
    "error" (after the runner's retries; the tuner's error policy decides what follows).
    ``arguments`` is what ``run`` gets for a configuration: the runner's own
    ``arguments(space, values)`` when it has that method, else irace's switches
    (``space.command_line(values)``; :meth:`racer.tuning.tuner.Tuner.run_arguments`).
    ``tag`` marks a look-ahead run that ``kill_run(tag)`` may stop (a runner without
    ``kill_run`` gets no tag); ``bound`` is irace's execution bound (capping, boundMax).
    ``kill_all`` stops every run in flight (an interruption); ``exec_dir`` names where runs
    happen, for error messages.
    """

    exec_dir: str

    def run(self, config_id: int, instance_id: int, seed: int, instance: Instance,
            arguments: Any, tag: object = None, bound: float | None = None) -> RunResult: ...

    def kill_all(self) -> None: ...


class TargetRunnerError(RuntimeError):
    """A run failed under the policy "stop"; ``result`` holds the command and output."""

    def __init__(self, result: RunResult, exec_dir: str) -> None:
        super().__init__(result.describe(exec_dir))
        self.result = result
