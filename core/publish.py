"""Atomic publishing: stage, verify, then rename into place, or leave nothing behind.

A release folder ``<root>/<dataset>/<release-id>/`` appears in one ``rename`` once its file and
manifest are complete and fsynced, so a reader never sees a half-written release. A blocked
gate or a crash before the rename leaves only a ``.staging-*`` folder, which :func:`discard`
removes when it gives up (and which is never mistaken for a release). The input file is only
ever read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from privgate.core.exceptions import PublishError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "StagedRelease",
    "discard",
    "make_release_id",
    "publish",
    "sha256_file",
    "stage_release",
]

_CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def make_release_id(input_sha256: str, policy_sha256: str, release_date: date) -> str:
    """Release id from (data fingerprint, policy hash, release date).

    A retried or duplicated run for the same data, policy and date gets the same id, so it
    publishes once.
    """
    digest = hashlib.sha256(
        f"{input_sha256}:{policy_sha256}:{release_date.isoformat()}".encode()
    ).hexdigest()
    return f"{release_date.isoformat()}-{digest[:12]}"


#: The default permission of published files (a release is meant to be read).
PUBLISHED_FILE_MODE = 0o644


@dataclass(frozen=True)
class StagedRelease:
    """A written but unpublished release, and the permission its files will be published with."""

    staging_dir: Path
    final_dir: Path
    release_file: Path
    file_mode: int = PUBLISHED_FILE_MODE

    @property
    def release_id(self) -> str:
        return self.final_dir.name


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def stage_release(
    release: pd.DataFrame,
    root: Path,
    dataset: str,
    release_id: str,
    fmt: str = "csv",
    file_mode: int = PUBLISHED_FILE_MODE,
) -> StagedRelease:
    """Write the release table into a fresh staging folder next to its final place.

    ``file_mode`` is applied to every file of the folder (and matching read/execute bits to its
    folders) when it is published: the release, its manifest, report and Data Docs all get the
    one mode the operator chose (``output.file_mode``).
    """
    dataset_dir = Path(root) / dataset
    try:
        dataset_dir.mkdir(parents=True, exist_ok=True)
        staging = dataset_dir / f".staging-{release_id}-{uuid.uuid4().hex[:8]}"
        staging.mkdir()
        release_file = staging / f"release.{fmt}"
        if fmt == "parquet":
            release.to_parquet(release_file, index=False)
        else:
            release.to_csv(release_file, index=False, lineterminator="\n")
        with open(release_file, "rb") as fh:
            os.fsync(fh.fileno())
    except OSError as exc:
        raise PublishError(f"cannot write the release into {dataset_dir}: {exc}") from None
    return StagedRelease(staging, dataset_dir / release_id, release_file, file_mode)


def folder_mode(file_mode: int) -> int:
    """The folder permission matching a file permission: execute wherever read is granted."""
    mode = file_mode | 0o700
    for read, execute in ((0o040, 0o010), (0o004, 0o001)):
        if file_mode & read:
            mode |= execute
    return mode


def apply_published_mode(folder: Path, file_mode: int) -> None:
    """Give every file under ``folder`` ``file_mode`` and every folder the matching mode."""
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, folder_mode(file_mode) if path.is_dir() else file_mode)


def discard(staged: StagedRelease) -> None:
    """Remove a staging folder (blocked gate, failed step)."""
    shutil.rmtree(staged.staging_dir, ignore_errors=True)


def publish(staged: StagedRelease, manifest: dict) -> Path:
    """Write the manifest into the staging folder and rename it into place.

    Returns the published folder. If a release with the same id is already published (a
    retried run), the staging folder is discarded and the existing folder returned untouched.

    Raises
    ------
    PublishError
        If the manifest cannot be written or the rename fails.
    """
    if staged.final_dir.exists():
        discard(staged)
        return staged.final_dir
    manifest_path = staged.staging_dir / "manifest.json"
    try:
        with open(manifest_path, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, sort_keys=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        apply_published_mode(staged.staging_dir, staged.file_mode)
        _fsync_dir(staged.staging_dir)
        os.rename(staged.staging_dir, staged.final_dir)
        _fsync_dir(staged.final_dir.parent)
    except OSError as exc:
        if staged.final_dir.exists() and (staged.final_dir / "manifest.json").exists():
            discard(staged)
            return staged.final_dir  # a concurrent run published the same release first
        # The staging folder is kept so that a retry can publish it; the caller discards it
        # when it gives up.
        raise PublishError(f"cannot publish {staged.final_dir}: {exc}") from None
    return staged.final_dir
