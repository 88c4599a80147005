"""The order in which ``make test`` hands test files to its pytest-xdist workers.

``make test`` runs ``-n N --dist loadfile --no-loadscope-reorder``: every file goes whole to one
worker, the next file to whichever worker is free first, in collection order. A long file that
starts last keeps one worker busy while the others idle, so the files are handed out longest
first (the longest-processing-time rule), from the seconds each file took in a recorded run
(``tests/file_durations.json``). A file the record does not know yet (a new file, a renamed
one) is placed as if it took :data:`UNKNOWN_SLOW_FILE_SECONDS` when it has a slow test, else
:data:`UNKNOWN_FILE_SECONDS`, so a new slow file is not left to the end either.

The record only orders; it selects nothing: every collected test still runs, and a stale record
costs time, never a test. Refresh it after a change that moves a file's time much::

    .venv/bin/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder \\
        --record-file-durations tests/file_durations.json
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import pytest

RECORD = Path(__file__).with_name("file_durations.json")
#: Seconds assumed for a file missing from the record, with and without a ``slow`` test.
UNKNOWN_SLOW_FILE_SECONDS = 20.0
UNKNOWN_FILE_SECONDS = 1.0


def file_of(nodeid: str) -> str:
    """The file of a node id: ``tests/core/test_x.py::test_y[1]`` -> ``tests/core/test_x.py``."""
    return nodeid.split("::", 1)[0]


def load_record(path: Path = RECORD) -> dict[str, float]:
    """Seconds per test file from a recorded run; an empty record when there is none."""
    if not path.is_file():
        return {}
    return {str(name): float(seconds) for name, seconds in json.loads(path.read_text()).items()}


def longest_first(items: list[pytest.Item], record: dict[str, float]) -> None:
    """Sort ``items`` in place: files by their expected seconds, longest first; the tests of a
    file stay together and in their collection order (a stable sort on the file's rank)."""
    expected: dict[str, float] = {}
    order: dict[str, int] = {}
    for item in items:
        name = file_of(item.nodeid)
        order.setdefault(name, len(order))
        if name not in expected:
            expected[name] = record.get(name, UNKNOWN_FILE_SECONDS)
        if name not in record and item.get_closest_marker("slow") is not None:
            expected[name] = UNKNOWN_SLOW_FILE_SECONDS
    items.sort(key=lambda item: (-expected[file_of(item.nodeid)], order[file_of(item.nodeid)]))


class DurationRecorder:
    """Adds up setup + call + teardown seconds per test file from the reports the controlling
    process receives (under xdist the workers' reports reach it too), and writes them sorted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        write_record(self.seconds.items(), self.path)


def write_record(seconds: Iterable[tuple[str, float]], path: Path) -> None:
    """Write seconds per file, longest first, rounded to 0.1 s."""
    ordered = sorted(seconds, key=lambda pair: (-pair[1], pair[0]))
    path.write_text(json.dumps({name: round(value, 1) for name, value in ordered}, indent=1) + "\n")
