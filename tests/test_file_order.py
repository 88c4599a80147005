"""``make test`` hands test files to its workers longest first (``tests/file_order.py``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import file_order


@dataclass
class _Item:
    nodeid: str
    slow: bool = False
    markers: dict = field(default_factory=dict)

    def get_closest_marker(self, name: str):
        return object() if name == "slow" and self.slow else None


@dataclass
class _Report:
    nodeid: str
    duration: float


def _items() -> list[_Item]:
    return [
        _Item("tests/a.py::t1"),
        _Item("tests/a.py::t2"),
        _Item("tests/b.py::t1", slow=True),
        _Item("tests/c.py::t1[1]"),
        _Item("tests/c.py::t1[2]"),
        _Item("tests/new_slow.py::t", slow=True),
        _Item("tests/new_fast.py::t"),
    ]


def test_files_are_handed_out_longest_first_and_keep_their_tests_together_in_order():
    items = _items()
    record = {"tests/a.py": 3.0, "tests/b.py": 40.0, "tests/c.py": 25.0}
    file_order.longest_first(items, record)
    assert [item.nodeid for item in items] == [
        "tests/b.py::t1",  # 40 s
        "tests/c.py::t1[1]",  # 25 s
        "tests/c.py::t1[2]",
        "tests/new_slow.py::t",  # unknown, has a slow test: 20 s
        "tests/a.py::t1",  # 3 s
        "tests/a.py::t2",
        "tests/new_fast.py::t",  # unknown: 1 s
    ]


def test_without_a_record_slow_files_go_first_in_collection_order():
    items = _items()
    file_order.longest_first(items, {})
    assert [item.nodeid.split("::")[0] for item in items] == [
        "tests/b.py", "tests/new_slow.py", "tests/a.py", "tests/a.py",
        "tests/c.py", "tests/c.py", "tests/new_fast.py",
    ]  # fmt: skip


def test_the_recorder_adds_every_phase_per_file_and_the_record_reads_back(tmp_path):
    path = tmp_path / "durations.json"
    recorder = file_order.DurationRecorder(path)
    for report in (
        _Report("tests/a.py::t1", 1.0),  # setup
        _Report("tests/a.py::t1", 2.5),  # call
        _Report("tests/a.py::t2", 0.25),
        _Report("tests/b.py::t[x::y]", 7.0),
    ):
        recorder.pytest_runtest_logreport(report)
    recorder.pytest_sessionfinish(session=None)
    assert list(json.loads(path.read_text())) == ["tests/b.py", "tests/a.py"]
    assert file_order.load_record(path) == {"tests/b.py": 7.0, "tests/a.py": 3.8}
    assert file_order.load_record(tmp_path / "missing.json") == {}


def test_the_committed_record_names_files_that_exist():
    """A record of renamed or deleted files would order nothing; refresh it (see file_order)."""
    record = file_order.load_record()
    assert record, f"no record at {file_order.RECORD}"
    repo = file_order.RECORD.parent.parent
    assert [name for name in record if not (repo / name).is_file()] == []
