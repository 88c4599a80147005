"""Progress lines: rate-limited, informative, and emitted by the optimal search."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from privgate.core.anonymize import OptimalLattice
from privgate.core.encoding import encode_table
from privgate.core.hierarchy import IntervalHierarchy, MaskingHierarchy
from privgate.core.privacy import KAnonymity
from privgate.core.progress import PROGRESS_LOGGER, Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    progress = Progress("search", total=100, interval=5.0, clock=clock)
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        progress.update(1, "first")  # t = 0: too early
        clock.now = 4.9
        progress.update(2)
        clock.now = 5.0
        progress.update(25, lambda: "12 nodes evaluated")
        clock.now = 6.0
        progress.update(30)  # within 5 s of the last line
        clock.now = 10.5
        progress.update(50)
    messages = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert messages == [
        "search: 25 of 100 (25%), 5.0s; 12 nodes evaluated",
        "search: 50 of 100 (50%), 10.5s",
    ]
    assert progress.lines == 2


def test_detail_is_built_only_when_a_line_is_due() -> None:
    clock = FakeClock()
    progress = Progress("search", total=10, interval=1.0, clock=clock)
    progress.update(1, lambda: pytest.fail("built although no line was due"))


def test_optimal_search_reports_progress(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRIVGATE_PROGRESS_SECONDS", "0")
    frame = pd.DataFrame(
        {
            "age": [20 + (i * 7) % 50 for i in range(400)],
            "zip": [f"{10000 + (i * 13) % 97}" for i in range(400)],
            "sex": ["F" if i % 3 else "M" for i in range(400)],
        }
    )
    hierarchies = {
        "age": IntervalHierarchy("age", [5, 10, 20]),
        "zip": MaskingHierarchy("zip", 5),
        "sex": MaskingHierarchy("sex", 1),
    }
    freq = encode_table(frame, hierarchies).frequency_set()
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        OptimalLattice([KAnonymity(k=5)], 0.02).search(freq)
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert lines, "the search printed no progress"
    assert lines[0].startswith("optimal search: 0 of ")
    assert "nodes evaluated, best loss" in lines[-1]
