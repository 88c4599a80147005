"""Forward the engine's progress lines (``privgate.progress``) into the Prefect run's log.

``core`` never imports Prefect, so its long steps report through standard logging; a task wraps
its call in :func:`forward_progress` and the lines appear in the task run's log in the UI.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.logging import get_run_logger

from privgate.core.progress import PROGRESS_LOGGER


class _ToRunLogger(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._run_logger = get_run_logger()

    def emit(self, record: logging.LogRecord) -> None:
        self._run_logger.log(record.levelno, record.getMessage())


@contextmanager
def forward_progress() -> Iterator[None]:
    """While the block runs, progress lines from the engine go to the current run's log."""
    source = logging.getLogger(PROGRESS_LOGGER)
    handler = _ToRunLogger()
    previous = source.level
    source.setLevel(logging.INFO)
    source.addHandler(handler)
    try:
        yield
    finally:
        source.removeHandler(handler)
        source.setLevel(previous)
