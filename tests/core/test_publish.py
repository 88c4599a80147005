"""Tests for core.publish: stage, publish atomically, discard, deterministic release ids."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.exceptions import PublishError
from privgate.core.publish import (
    StagedRelease,
    discard,
    make_release_id,
    publish,
    published_by_another,
    sha256_file,
    stage_release,
)

RELEASE_ID = "2024-05-01-0123456789ab"


def release_table(label: str = "a") -> pd.DataFrame:
    return pd.DataFrame({"age": ["30-39", "30-39"], "label": [label, label]})


def leftovers(root: Path, dataset: str = "toy") -> list[str]:
    return sorted(p.name for p in (root / dataset).iterdir() if p.name.startswith(".staging-"))


def test_stage_writes_into_a_staging_folder(tmp_path: Path) -> None:
    staged = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    assert isinstance(staged, StagedRelease)
    assert staged.staging_dir.parent == tmp_path / "toy"
    assert staged.staging_dir.name.startswith(f".staging-{RELEASE_ID}-")
    assert staged.final_dir == tmp_path / "toy" / RELEASE_ID
    assert staged.release_id == RELEASE_ID
    assert staged.release_file == staged.staging_dir / "release.csv"
    assert staged.release_file.read_text() == "age,label\n30-39,a\n30-39,a\n"
    assert not staged.final_dir.exists()


def test_stage_then_publish(tmp_path: Path) -> None:
    staged = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    manifest = {"release_id": RELEASE_ID, "rows": 2, "created": date(2024, 5, 1)}
    final = publish(staged, manifest)
    assert final == tmp_path / "toy" / RELEASE_ID
    assert sorted(p.name for p in final.iterdir()) == ["manifest.json", "release.csv"]
    assert (final / "release.csv").read_text() == "age,label\n30-39,a\n30-39,a\n"
    written = json.loads((final / "manifest.json").read_text(encoding="utf-8"))
    assert written == {"release_id": RELEASE_ID, "rows": 2, "created": "2024-05-01"}
    assert not staged.staging_dir.exists()
    assert leftovers(tmp_path) == []


def test_a_release_holding_a_carriage_return_is_staged_so_the_gate_reads_it_back(tmp_path):
    """The csv module (and pandas' to_csv) quote only the line terminator's characters, so a
    lone "\\r" went out bare and the gate's readers split the row (review11 F4)."""
    from privgate.core.gate import read_release, read_release_codes

    table = pd.DataFrame(
        {"age": ["30-39", "30-39", "40-49"], "note": ["cr\rx", None, "plain"], "n": [1, 2, 3]}
    )
    staged = stage_release(table, tmp_path, "toy", RELEASE_ID)
    expected = {"age": ["30-39", "30-39", "40-49"], "note": ["cr\rx", None, "plain"]}
    expected["n"] = ["1", "2", "3"]
    assert {n: c.tolist() for n, c in read_release(staged.release_file).items()} == expected
    codes = read_release_codes(staged.release_file)
    assert {n: c.tolist() for n, c in codes.items()} == expected
    plain = stage_release(release_table(), tmp_path, "toy", "other-id")
    assert plain.release_file.read_text() == "age,label\n30-39,a\n30-39,a\n"  # unquoted


def test_stage_parquet(tmp_path: Path) -> None:
    staged = stage_release(release_table(), tmp_path, "toy", RELEASE_ID, fmt="parquet")
    assert staged.release_file.name == "release.parquet"
    final = publish(staged, {})
    pd.testing.assert_frame_equal(pd.read_parquet(final / "release.parquet"), release_table())


def test_discard_removes_staging(tmp_path: Path) -> None:
    staged = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    discard(staged)
    assert not staged.staging_dir.exists()
    assert not staged.final_dir.exists()
    assert leftovers(tmp_path) == []
    discard(staged)  # idempotent


def test_publishing_the_same_id_twice_keeps_the_first(tmp_path: Path) -> None:
    first = publish(stage_release(release_table("first"), tmp_path, "toy", RELEASE_ID), {"n": 1})
    second_staged = stage_release(release_table("second"), tmp_path, "toy", RELEASE_ID)
    second = publish(second_staged, {"n": 2})
    assert second == first
    assert "first" in (first / "release.csv").read_text()
    assert json.loads((first / "manifest.json").read_text()) == {"n": 1}
    assert not second_staged.staging_dir.exists()
    assert leftovers(tmp_path) == []
    assert [p.name for p in (tmp_path / "toy").iterdir()] == [RELEASE_ID]


def failing_rename(src: object, dst: object) -> None:
    raise OSError(28, "No space left on device")


def test_failed_rename_raises_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(PublishError) as info:
        publish(staged, {"n": 1})
    assert str(staged.final_dir) in str(info.value)
    assert "No space left on device" in str(info.value)
    assert not staged.final_dir.exists()
    # publish() keeps the staging folder for a retry; the caller discards it when it gives up
    # (flows/release.py does so in a ``finally``), after which nothing is left.
    assert staged.staging_dir.exists()
    discard(staged)
    assert not staged.final_dir.exists()
    assert leftovers(tmp_path) == []
    assert list((tmp_path / "toy").iterdir()) == []


def test_publish_can_be_retried_after_a_failed_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    with monkeypatch.context() as patch:
        patch.setattr(os, "rename", failing_rename)
        with pytest.raises(PublishError):
            publish(staged, {"n": 1})
    final = publish(staged, {"n": 2})
    assert json.loads((final / "manifest.json").read_text()) == {"n": 2}
    assert (final / "release.csv").is_file()
    assert leftovers(tmp_path) == []


def test_stage_into_an_unwritable_root_raises_publish_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(PublishError, match="cannot write the release"):
        stage_release(release_table(), blocker, "toy", RELEASE_ID)


# ---------------------------------------------------------------------------------------------
# Release ids and file hashes
# ---------------------------------------------------------------------------------------------

DATA_SHA = "a" * 64
POLICY_SHA = "b" * 64
DAY = date(2024, 5, 1)


def test_make_release_id_is_deterministic() -> None:
    release_id = make_release_id(DATA_SHA, POLICY_SHA, DAY)
    assert release_id == make_release_id(DATA_SHA, POLICY_SHA, DAY)
    prefix, _, digest = release_id.rpartition("-")
    assert prefix == "2024-05-01"
    assert len(digest) == 12
    int(digest, 16)


@pytest.mark.parametrize(
    "changed",
    [
        ("c" * 64, POLICY_SHA, DAY),
        (DATA_SHA, "c" * 64, DAY),
        (DATA_SHA, POLICY_SHA, date(2024, 5, 2)),
    ],
    ids=["input", "policy", "date"],
)
def test_make_release_id_changes_with_each_input(changed: tuple[str, str, date]) -> None:
    assert make_release_id(*changed) != make_release_id(DATA_SHA, POLICY_SHA, DAY)


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    content = os.urandom(3 * (1 << 20) + 7)  # spans several read chunks
    path.write_bytes(content)
    assert sha256_file(path) == hashlib.sha256(content).hexdigest()


# --- faults: a full disk, a dead process -------------------------------------------------------


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path, monkeypatch) -> None:
    """The disk fills up while the release is written: the error names the folder and the
    partial staging folder is gone at once (the space is freed)."""

    def full_disk(self, path, **kwargs):
        Path(path).write_text("age,label\n30-39,a\n")  # a partial file
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    with pytest.raises(PublishError, match="No space left on device"):
        stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    assert list((tmp_path / "toy").iterdir()) == []


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_run_sweeps_staging_of_dead_processes_only(tmp_path: Path) -> None:
    from privgate.core.publish import staging_owner, sweep_stale

    live = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)  # this process: alive
    host, _, ticks = staging_owner().split(".")
    dead = tmp_path / "toy" / f".staging-{RELEASE_ID}-{host}.{_dead_pid()}.{ticks}-0badc0de"
    dead.mkdir()
    (dead / "release.csv").write_text("partial")
    reused = tmp_path / "toy" / f".staging-{RELEASE_ID}-{host}.{os.getpid()}.1-0badc0df"
    reused.mkdir()  # our pid, but another start time: a pid reused after its owner died
    foreign = tmp_path / "toy" / f".staging-{RELEASE_ID}-0000beef.{os.getpid()}.1-12345678"
    foreign.mkdir()  # another host's: its age decides
    assert sorted(sweep_stale(tmp_path / "toy")) == sorted([dead, reused])
    assert live.staging_dir.is_dir() and foreign.is_dir()
    from privgate.core.publish import FOREIGN_STALE_SECONDS

    later = foreign.stat().st_mtime + FOREIGN_STALE_SECONDS + 1
    assert sweep_stale(tmp_path / "toy", now=later) == [foreign]
    assert live.staging_dir.is_dir()
    # Staging the next release sweeps what is left of dead runs, and publishes once.
    dead.mkdir()
    again = stage_release(release_table(), tmp_path, "toy", RELEASE_ID)
    assert not dead.exists()
    publish(again, {"release_id": RELEASE_ID})
    discard(live)
    assert leftovers(tmp_path) == []
    assert [p.name for p in (tmp_path / "toy").iterdir()] == [RELEASE_ID]


def test_published_by_another_names_the_run_whose_manifest_is_in_place(tmp_path):
    """Read after publishing: this run's own release is nobody else's; a folder a concurrent
    run renamed into place first names that run; no manifest, or no run id to compare with,
    claims nothing."""
    release = tmp_path / "release"
    assert published_by_another(release, "run-a") is None  # nothing published
    release.mkdir()
    (release / "manifest.json").write_text(json.dumps({"run_id": "run-a"}))
    assert published_by_another(release, "run-a") is None
    assert published_by_another(release, "run-b") == "run-a"
    assert published_by_another(release, "") is None
    (release / "manifest.json").write_text("{not json")
    assert published_by_another(release, "run-b") == "an earlier run"


def test_stale_staging_files_and_folders_of_dead_owners_are_swept(tmp_path: Path) -> None:
    """``sweep_stale_files`` removes a staging file or folder (a partitioned release's parts)
    whose owner on this host is gone, and keeps a live owner's, another name's and one whose
    owner cannot be asked that is recent."""
    import subprocess

    from privgate.core.publish import staging_owner, sweep_stale_files

    child = subprocess.Popen(["true"])
    child.wait()
    host, pid, _ = staging_owner().split(".")
    gone = f"{host}.{child.pid}.1"
    stale_file = tmp_path / f".out.{gone}.tmp"
    stale_folder = tmp_path / f".out.{gone[:-1]}2.tmp"
    live = tmp_path / f".out.{host}.{pid}.0.tmp"
    foreign = tmp_path / ".out.00000000.1.1.tmp"
    other = tmp_path / f".other.{gone}.tmp"
    for path in (stale_file, live, foreign, other):
        path.write_text("unverified")
    stale_folder.mkdir()
    (stale_folder / "part.0.parquet").write_text("unverified")
    removed = sweep_stale_files(tmp_path, ".out.", ".tmp")
    assert sorted(removed) == sorted([stale_file, stale_folder])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (live, foreign, other)
    )
