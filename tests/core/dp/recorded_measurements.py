"""Record every OpenDP measurement a synthetic release builds and runs, for the accounting tests.

:func:`privgate.core.dp.synthetic._budgeted_measurement` keeps one budget search per public
setting (in the process and, when configured, on disk: :mod:`privgate.core.dp._calibration`).
Inside :func:`recording_measurements` nothing kept is used or kept on disk (the search runs
afresh, rehearsal included, and each measurement it builds is wrapped), and on leaving, the
searches made with the wrappers are dropped, so no other test gets a spy.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from privgate.core.dp import _calibration, synthetic


class Recorded:
    """An OpenDP measurement that records the number of records of every table it is run on."""

    def __init__(self, inner, d_in, seen: list) -> None:
        self._inner = inner
        self._d_in = d_in
        self._seen = seen

    def __call__(self, frame):
        self._seen.append((frame.collect().height, self._inner, self._d_in))
        return self._inner(frame)

    def map(self, d_in):
        return self._inner.map(d_in)


@contextmanager
def recording_measurements() -> Iterator[list]:
    """Yield the list of ``(records seen, measurement, d_in)`` of every measurement run."""
    seen: list = []
    original = synthetic._measurement

    def recorded(*args, **kwargs):
        measurement, d_in = original(*args, **kwargs)
        return Recorded(measurement, d_in, seen), d_in

    synthetic._kept_search.cache_clear()
    synthetic._measurement = recorded
    on_disk = os.environ.pop(_calibration.ENVIRONMENT, None)
    try:
        yield seen
    finally:
        synthetic._measurement = original
        synthetic._kept_search.cache_clear()
        if on_disk is not None:
            os.environ[_calibration.ENVIRONMENT] = on_disk
