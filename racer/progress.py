"""Progress of a running race on stderr, with no dependency.

On a terminal (``stream.isatty()``) a bar is redrawn in place (carriage return) at most ten
times a second::

    [racer] |#########---------------| 98/265 evaluations (37%) | instance 12 | 3/8 survivors | 4s

The bar measures the budget when the race has one, else the instances (when their number is
known: a list, or ``max_instances``); with neither it shows the counts only. When stderr is a
file or a pipe (CI logs, a notebook's stderr), the race stays quiet: one line at each quarter
of the bar (25%, 50%, 75%) and the final line, or only the final line when there is no bar,
so logs get at most four lines per race. ``Race.run(progress=False)`` silences it.

Why not tqdm: it is not a dependency of racer, and a bar that looks different depending on
what happens to be installed is harder to document and to test; this one is a few lines.
"""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["ProgressLine"]

_BAR_WIDTH = 24
# Quarters of the bar at which a non-terminal stream gets a line.
_MILESTONES = (0.25, 0.5, 0.75)


class ProgressLine:
    """Shows budget used, instances raced and survivors of a running :class:`racer.Race`."""

    def __init__(self, race: Any, stream: Any = None) -> None:
        self._race = race
        self._stream = sys.stderr if stream is None else stream
        isatty = getattr(self._stream, "isatty", None)
        self._tty = bool(isatty and isatty())
        self._start = time.monotonic()
        self._last = -float("inf")
        self._next_milestone = 0

    def fraction(self) -> float | None:
        """Share of the work done, in [0, 1], or None when the total is unknown."""
        race = self._race
        if race.budget:
            return min(race.n_evaluations / race.budget, 1.0)
        left_fn = getattr(race, "_instances_left", None)
        left = left_fn() if left_fn is not None else None
        if left is None:
            return None
        total = race.n_instances + left
        return race.n_instances / total if total else 1.0

    def _text(self, fraction: float | None) -> str:
        race = self._race
        used = race.n_evaluations
        budget = race.budget
        bar = ""
        if fraction is not None:
            filled = int(round(fraction * _BAR_WIDTH))
            bar = f"|{'#' * filled}{'-' * (_BAR_WIDTH - filled)}| "
        if budget:
            evals = f"{used}/{budget} evaluations ({100.0 * used / budget:.0f}%)"
        else:
            evals = f"{used} evaluations"
            if fraction is not None:
                bar += f"{100.0 * fraction:.0f}% of instances, "
        elapsed = time.monotonic() - self._start
        return (
            f"[racer] {bar}{evals} | instance {race.n_instances} | "
            f"{len(race.survivor_indices)}/{len(race.candidates)} survivors | {elapsed:.0f}s"
        )

    def update(self, _race: Any = None) -> None:
        fraction = self.fraction()
        if self._tty:
            now = time.monotonic()
            if now - self._last < 0.1:
                return
            self._last = now
            self._stream.write("\r" + self._text(fraction).ljust(79))
            self._stream.flush()
            return
        if fraction is None:
            return
        crossed = False
        while self._next_milestone < len(_MILESTONES) and fraction >= _MILESTONES[self._next_milestone]:
            self._next_milestone += 1
            crossed = True
        if crossed and fraction < 1.0:
            self._stream.write(self._text(fraction) + "\n")
            self._stream.flush()

    def close(self) -> None:
        """Draw the final state (with why the race stopped) and end the line."""
        reason = getattr(self._race, "stop_reason", None)
        # The bar shows what was used, not 100%: a race that stops early (min_survivors) has
        # saved the rest, and that is worth seeing.
        text = self._text(self.fraction()) + (f" | done: {reason}" if reason else "")
        self._stream.write(("\r" + text.ljust(79) + "\n") if self._tty else text + "\n")
        self._stream.flush()
