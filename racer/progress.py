"""A one-line progress display on stderr, with no dependency.

On a terminal the line is redrawn in place (carriage return) at most ten times a second; when
stderr is a file or a pipe (CI logs), a full line is written at most every ten seconds, so logs
stay short. ``Race.run(progress=False)`` silences it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["ProgressLine"]


class ProgressLine:
    """Shows budget used, instances raced and survivors of a running :class:`racer.Race`."""

    def __init__(self, race: Any, stream: Any = None) -> None:
        self._race = race
        self._stream = sys.stderr if stream is None else stream
        isatty = getattr(self._stream, "isatty", None)
        self._tty = bool(isatty and isatty())
        self._interval = 0.1 if self._tty else 10.0
        self._start = time.monotonic()
        self._last = -float("inf")
        self._shown = False

    def _text(self) -> str:
        race = self._race
        used = race.n_evaluations
        budget = race.budget
        spent = f"{used}/{budget} evaluations ({100.0 * used / budget:.0f}%)" if budget else (
            f"{used} evaluations"
        )
        elapsed = time.monotonic() - self._start
        return (
            f"[racer] {spent} | instance {race.n_instances} | "
            f"{len(race.survivor_indices)}/{len(race.candidates)} survivors | {elapsed:.0f}s"
        )

    def update(self, _race: Any = None) -> None:
        now = time.monotonic()
        if now - self._last < self._interval:
            return
        self._last = now
        self._write()

    def _write(self) -> None:
        text = self._text()
        if self._tty:
            self._stream.write("\r" + text.ljust(79))
        else:
            self._stream.write(text + "\n")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        """Draw the final state and end the line."""
        self._write()
        if self._tty:
            self._stream.write("\n")
            self._stream.flush()
