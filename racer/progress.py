"""Progress of long work on stderr, with no dependency: races, iterated races, searches, loops.

Where a display can redraw a line in place -- a terminal (``stream.isatty()``), or a Jupyter
notebook, whose front ends honour a carriage return in a cell's stderr -- a bar is redrawn at
most ten times a second::

    [racer] |#########---------------| 98/265 evaluations (37%) | instance 12 | 3/8 survivors | 4s

When the stream is a file or a pipe (CI logs, ``nohup``), work stays quiet: one line at each
quarter of the bar (25%, 50%, 75%) and the final line, or only the final line when the total
is unknown, so a log gets at most four lines per race. ``Race.run(progress=False)`` (and the
``progress``/``verbose`` options of the front ends) silence it.

* :class:`ProgressBar` -- the display: a fraction and a text in, a bar or quarter lines out;
* :class:`ProgressLine` -- a running :class:`racer.Race` (budget used, instance, survivors);
* :func:`track` -- a loop (``for seed in track(seeds, label="paper"): ...``), as the benchmark
  scripts use it: drawn only where it can be redrawn in place, silent in logs.

Why not tqdm: it is not a dependency of racer, and a bar that looks different depending on
what happens to be installed is harder to document and to test; this one is a few lines and
gives the same experience in a terminal and a notebook (a line redrawn in place).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["ProgressBar", "ProgressLine", "iteration_text", "iterations_done_text",
           "redraws_in_place", "track"]

_BAR_WIDTH = 24
# Quarters of the bar at which a non-terminal stream gets a line.
_MILESTONES = (0.25, 0.5, 0.75)


def redraws_in_place(stream: Any) -> bool:
    """True when ``stream`` shows a carriage return as "back to the start of the line": a
    terminal, or the stderr of a Jupyter kernel (ipykernel's ``OutStream``)."""
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is not None and isatty():
            return True
    except (ValueError, OSError):  # a closed stream
        return False
    return type(stream).__module__.startswith("ipykernel")


class ProgressBar:
    """A progress display: ``update(fraction, text)`` while working, ``close(text)`` at the end.

    ``fraction`` is the share done in [0, 1] (None when the total is unknown: no bar, and no
    quarter lines); ``text`` is a string or a function returning one, called only when the
    line is drawn (so an expensive summary costs nothing between redraws). ``enabled=False``
    draws nothing; ``quiet_in_logs=True`` draws nothing either where the line cannot be
    redrawn in place (the benchmark loops' choice), instead of quarter lines.

    >>> import io
    >>> log = io.StringIO()  # not a terminal: quarter lines and the final line
    >>> bar = ProgressBar(stream=log, prefix="[demo]")
    >>> for done in range(1, 9):
    ...     bar.update(done / 8, lambda: f"{done}/8 steps")
    >>> bar.close("finished")
    >>> [line.split("| ")[1] for line in log.getvalue().splitlines()]
    ['2/8 steps ', '4/8 steps ', '6/8 steps ', 'finished ']
    """

    def __init__(self, *, prefix: str = "[racer]", stream: Any = None, enabled: bool = True,
                 quiet_in_logs: bool = False) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._prefix = str(prefix)
        self._tty = redraws_in_place(self._stream)
        self._enabled = bool(enabled) and (self._tty or not quiet_in_logs)
        self._start = time.monotonic()
        self._last = -float("inf")
        self._next_milestone = 0
        self._fraction: float | None = None
        self._drawn = False

    @property
    def redraws(self) -> bool:
        """Whether the line is redrawn in place (a terminal or a notebook)."""
        return self._tty

    def _line(self, fraction: float | None, text: str) -> str:
        bar = ""
        if fraction is not None:
            filled = int(round(min(max(fraction, 0.0), 1.0) * _BAR_WIDTH))
            bar = f"|{'#' * filled}{'-' * (_BAR_WIDTH - filled)}| "
        return f"{self._prefix} {bar}{text} | {time.monotonic() - self._start:.0f}s"

    def update(self, fraction: float | None, text: str | Callable[[], str]) -> None:
        self._fraction = fraction
        if not self._enabled:
            return
        if self._tty:
            now = time.monotonic()
            if now - self._last < 0.1:
                return
            self._last = now
            self._stream.write("\r" + self._line(fraction, _text(text)).ljust(79))
            self._stream.flush()
            self._drawn = True
            return
        if fraction is None:
            return
        crossed = False
        while self._next_milestone < len(_MILESTONES) and fraction >= _MILESTONES[self._next_milestone]:
            self._next_milestone += 1
            crossed = True
        if crossed and fraction < 1.0:
            self._stream.write(self._line(fraction, _text(text)) + "\n")
            self._stream.flush()

    def close(self, text: str | Callable[[], str] | None = None, fraction: Any = "last") -> None:
        """Draw the final line (``text``; None: end the redrawn line without a final one)."""
        if not self._enabled:
            return
        if fraction == "last":
            fraction = self._fraction
        if text is None:
            if self._tty and self._drawn:
                self._stream.write("\n")
                self._stream.flush()
            return
        line = self._line(fraction, _text(text))
        self._stream.write(("\r" + line.ljust(79) + "\n") if self._tty else line + "\n")
        self._stream.flush()


def _text(text: str | Callable[[], str]) -> str:
    return text() if callable(text) else str(text)


class ProgressLine:
    """Shows budget used, instances raced and survivors of a running :class:`racer.Race`."""

    def __init__(self, race: Any, stream: Any = None) -> None:
        self._race = race
        self._bar = ProgressBar(stream=stream)

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
        if budget:
            evals = f"{used}/{budget} evaluations ({100.0 * used / budget:.0f}%)"
        else:
            evals = f"{used} evaluations"
            if fraction is not None:
                evals = f"{100.0 * fraction:.0f}% of instances, {evals}"
        return (f"{evals} | instance {race.n_instances} | "
                f"{len(race.survivor_indices)}/{len(race.candidates)} survivors")

    def update(self, _race: Any = None) -> None:
        fraction = self.fraction()
        self._bar.update(fraction, lambda: self._text(fraction))

    def close(self) -> None:
        """Draw the final state (with why the race stopped) and end the line."""
        reason = getattr(self._race, "stop_reason", None)
        fraction = self.fraction()
        # The bar shows what was used, not 100%: a race that stops early (min_survivors) has
        # saved the rest, and that is worth seeing.
        self._bar.close(self._text(fraction) + (f" | done: {reason}" if reason else ""), fraction)


def iteration_text(iteration: int, planned: int) -> str:
    """Where an iterated race is, in the words every front end uses.

    ``planned`` is the number of iterations announced at the start (irace's
    ``nbIterations``: an estimate from the number of parameters, unless the user fixed it).
    Like irace, an iterated race goes on past it while budget is left; the text then says so
    instead of moving the target (irace's "Iteration 5 of 5") or stopping at "4/4".

    >>> iteration_text(3, 4)
    'iteration 3/4'
    >>> iteration_text(5, 4)
    'iteration 5 (beyond the 4 planned: budget left)'
    """
    if iteration <= planned:
        return f"iteration {iteration}/{planned}"
    return f"iteration {iteration} (beyond the {planned} planned: budget left)"


def iterations_done_text(done: int, planned: int) -> str:
    """How many iterations an iterated race ran, against the ``planned`` announced.

    >>> iterations_done_text(4, 4)
    '4 iterations (as planned)'
    >>> iterations_done_text(5, 4)
    '5 iterations (4 planned, 1 more: budget left)'
    >>> iterations_done_text(3, 4)
    '3 iterations (4 planned)'
    >>> iterations_done_text(1, 1)
    '1 iteration (as planned)'
    """
    words = f"{done} iteration{'s' if done != 1 else ''}"
    if done == planned:
        return f"{words} (as planned)"
    if done > planned:
        return f"{words} ({planned} planned, {done - planned} more: budget left)"
    return f"{words} ({planned} planned)"


def track(iterable: Iterable, *, total: int | None = None, label: str = "",
          stream: Any = None, enabled: bool = True) -> Iterator:
    """Yield the items of ``iterable`` while drawing a bar of how many were done.

    Drawn only where the line can be redrawn in place (a terminal, a notebook); silent in
    logs and pipes, so a script's output file holds its results only. ``total`` defaults to
    ``len(iterable)`` when it has one.

    >>> import io
    >>> [x * 2 for x in track(range(3), label="demo", stream=io.StringIO())]
    [0, 2, 4]
    """
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    bar = ProgressBar(prefix=f"[{label}]" if label else "[racer]", stream=stream,
                      enabled=enabled, quiet_in_logs=True)
    done = 0
    for item in iterable:
        yield item
        done += 1
        bar.update(done / total if total else None,
                   lambda: f"{done}/{total}" if total else f"{done} done")
    bar.close(f"{done}/{total}" if total else f"{done} done")
