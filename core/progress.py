"""Progress lines for long computations, without tying the engine to an orchestrator.

The engine reports through the standard ``logging`` module (logger ``privgate.progress``), at
most one line every ``interval`` seconds, so a search over a large lattice shows that it is
alive and how far it got, and a fast one prints nothing extra. The Prefect tasks forward these
records into the run's log (see ``tasks/_progress.py``); the command line's engine-only path can
show them with ordinary logging configuration.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

__all__ = ["PROGRESS_LOGGER", "Progress"]

#: The logger every progress line goes to.
PROGRESS_LOGGER = "privgate.progress"

_log = logging.getLogger(PROGRESS_LOGGER)


def _interval_from_environment() -> float:
    """``PRIVGATE_PROGRESS_SECONDS``, or 5 s; a bad value is named, not a crash mid-search."""
    text = os.environ.get("PRIVGATE_PROGRESS_SECONDS", "5")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        _log.warning("PRIVGATE_PROGRESS_SECONDS=%r is not a number of seconds; using 5", text)
        return 5.0
    return value


class Progress:
    """Rate-limited progress of one step.

    Parameters
    ----------
    what : str
        The step, e.g. ``"optimal search"``; every line starts with it.
    total : int
        How many units the step has at most (nodes, rounds, runs).
    interval : float, optional
        Seconds between two lines (the first comes after ``interval`` seconds). Default: the
        ``PRIVGATE_PROGRESS_SECONDS`` environment variable, else 5.
    clock : callable
        Time source (tests pass a fake clock).
    """

    def __init__(
        self,
        what: str,
        total: int,
        interval: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.what = what
        self.total = total
        if interval is None:
            interval = _interval_from_environment()
        self.interval = interval
        self._clock = clock
        self._started = clock()
        self._next = self._started + interval
        self.lines = 0

    def update(self, done: int, detail: Callable[[], str] | str = "") -> None:
        """Report ``done`` units if ``interval`` has passed since the last line.

        ``detail`` may be a callable so that the text is only built when a line is due.
        """
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self.interval
        text = detail() if callable(detail) else detail
        share = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        _log.info(
            "%s: %d of %d%s, %.1fs%s",
            self.what,
            done,
            self.total,
            share,
            now - self._started,
            f"; {text}" if text else "",
        )
        self.lines += 1
