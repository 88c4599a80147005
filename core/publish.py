"""Atomic publishing: stage, verify, then rename into place, or leave nothing behind.

A release folder ``<root>/<dataset>/<release-id>/`` appears in one ``rename`` once its file and
manifest are complete and fsynced, so a reader never sees a half-written release. Until then
everything lives in a ``.staging-*`` folder next to it, which is never mistaken for a release:

- a blocked gate or a failed step (a full disk included) removes it (:func:`discard`), and a
  failed write removes its partial file at once, so a full disk is freed again;
- a process that dies without cleaning up (SIGKILL, a host crash, an out-of-memory kill) leaves
  it behind; its name records the owner (host, process id and the process's start time), and
  the next run that stages a release of the dataset sweeps every staging folder whose owner is
  gone (:func:`sweep_stale`). A folder of a live run is never touched; one from another host is
  swept only once it is older than :data:`FOREIGN_STALE_SECONDS`.

The input file is only ever read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from privgate.core.exceptions import PublishError
from privgate.core.textcsv import frame_csv_quoting

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FOREIGN_STALE_SECONDS",
    "StagedRelease",
    "discard",
    "make_release_id",
    "publish",
    "published_by",
    "published_by_another",
    "rolled_back_name",
    "sha256_file",
    "stage_release",
    "staging_owner",
    "sync_to_disk",
    "sweep_stale",
    "sweep_stale_files",
]

_CHUNK = 1 << 20
_log = logging.getLogger(__name__)

#: Prefixes of the working folders next to the releases (never releases themselves).
_STAGING = ".staging-"
_ROLLED_BACK = ".rolled-back-"

#: A staging folder made on another host (a shared release folder) is swept once it is older
#: than this: its owner cannot be asked whether it is alive, and no run lives this long (every
#: stage has a timeout far below it).
FOREIGN_STALE_SECONDS = 48 * 3600


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


def sync_to_disk(path: Path) -> None:
    """Flush a file's content, or a folder's entries (after a rename into it), to disk: a
    rename is atomic, but without this a power loss right after it can leave the new name
    pointing at a file whose blocks were never written."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _host_tag(host: str | None = None) -> str:
    return hashlib.sha256((host or socket.gethostname()).encode()).hexdigest()[:8]


def _start_ticks(pid: int) -> str:
    """The process's start time (clock ticks since boot), which tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            stat = fh.read()
    except OSError:
        return "0"  # no /proc (or the process is gone): the pid alone decides
    return stat.rsplit(")", 1)[1].split()[19]


def staging_owner() -> str:
    """``<host>.<pid>.<start>``: who owns the staging folders this process creates."""
    pid = os.getpid()
    return f"{_host_tag()}.{pid}.{_start_ticks(pid)}"


def _owner_alive(owner: str) -> bool | None:
    """True or False for an owner on this host; None when it cannot be told (another host,
    or a name without an owner)."""
    try:
        host, pid_text, ticks = owner.split(".")
        pid = int(pid_text)
    except ValueError:
        return None
    if host != _host_tag():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's live process
    return ticks == "0" or _start_ticks(pid) in (ticks, "0")


def sweep_stale(dataset_dir: Path, now: float | None = None) -> list[Path]:
    """Remove the staging folders that dead processes left in ``dataset_dir``.

    A folder whose owner (on this host) is alive is kept; one from another host, or without
    an owner in its name, is removed only when older than :data:`FOREIGN_STALE_SECONDS`.
    Returns the folders removed.
    """
    removed: list[Path] = []
    try:
        entries = list(Path(dataset_dir).iterdir())
    except OSError:
        return removed
    now = time.time() if now is None else now
    for entry in entries:
        if not entry.name.startswith((_STAGING, _ROLLED_BACK)) or not entry.is_dir():
            continue
        owner = entry.name.rsplit("-", 2)[-2] if entry.name.count("-") >= 2 else ""
        alive = _owner_alive(owner)
        if alive is None:
            try:
                alive = now - entry.stat().st_mtime < FOREIGN_STALE_SECONDS
            except OSError:
                continue
        if alive:
            continue
        # Rename first, so that a concurrent sweep or a reader never sees it half deleted.
        doomed = entry.with_name(f".swept-{entry.name.lstrip('.')}-{uuid.uuid4().hex[:8]}")
        try:
            entry.rename(doomed)
        except OSError:
            continue  # another run swept it first
        shutil.rmtree(doomed, ignore_errors=True)
        _log.warning("removed %s, left behind by a process that is gone", entry)
        removed.append(entry)
    for entry in entries:  # sweeps interrupted by their own crash
        if entry.name.startswith(".swept-") and entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
    return removed


def sweep_stale_files(directory: Path, prefix: str, suffix: str) -> list[Path]:
    """Remove the files (or folders) ``<prefix><owner><suffix>`` in ``directory`` whose owner
    (:func:`staging_owner`) is gone, as :func:`sweep_stale` does for staging folders: one of a
    live process on this host is kept; one whose owner cannot be asked (another host, or no
    owner in its name) only once older than :data:`FOREIGN_STALE_SECONDS`.

    Why: ``privgate anonymize`` (a file) and the Dask path (a folder of parts) write their
    release under such a hidden name and rename it only once the gate has passed it; a
    process killed before that (an out-of-memory kill at 10M rows) left the whole unverified
    release there for good.
    """
    removed: list[Path] = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(suffix)) or len(name) <= len(
            prefix
        ) + len(suffix):
            continue
        alive = _owner_alive(name[len(prefix) : len(name) - len(suffix)])
        try:
            if alive is None:
                alive = now - entry.stat().st_mtime < FOREIGN_STALE_SECONDS
            if not alive and entry.is_dir():  # a partitioned release's staging folder
                doomed = entry.with_name(f".swept-{name.lstrip('.')}-{uuid.uuid4().hex[:8]}")
                entry.rename(doomed)  # a concurrent sweep or reader never sees it half gone
                shutil.rmtree(doomed, ignore_errors=True)
            elif not alive:
                entry.unlink()
        except OSError:
            continue  # gone already, or not ours to remove
        if not alive:
            _log.warning("removed %s, left behind by a process that is gone", entry)
            removed.append(entry)
    return removed


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

    Staging folders that dead processes left behind are swept first. If the write fails (a
    full disk), the partial folder is removed before the error is raised.
    """
    dataset_dir = Path(root) / dataset
    staging = dataset_dir / f"{_STAGING}{release_id}-{staging_owner()}-{uuid.uuid4().hex[:8]}"
    try:
        dataset_dir.mkdir(parents=True, exist_ok=True)
        sweep_stale(dataset_dir)
        staging.mkdir()
        release_file = staging / f"release.{fmt}"
        if fmt == "parquet":
            release.to_parquet(release_file, index=False)
        else:
            quoting = frame_csv_quoting(release)
            release.to_csv(release_file, index=False, lineterminator="\n", quoting=quoting)
        with open(release_file, "rb") as fh:
            os.fsync(fh.fileno())
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
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


def rolled_back_name(release_dir: Path) -> Path:
    """Where a published folder is moved to be deleted when its transaction rolls back (an
    owned working folder, so a crash during the deletion is swept like a staging folder)."""
    return release_dir.with_name(
        f"{_ROLLED_BACK}{release_dir.name}-{staging_owner()}-{uuid.uuid4().hex[:8]}"
    )


def published_by(release_dir: Path) -> str | None:
    """The run id in an already published release's manifest (None if there is no release)."""
    try:
        with open(Path(release_dir) / "manifest.json", encoding="utf-8") as fh:
            return str(json.load(fh).get("run_id") or "an earlier run")
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return "an earlier run"


def published_by_another(release_dir: Path, run_id: str | None) -> str | None:
    """The run that published ``release_dir`` if it was not ``run_id``, read after publishing.

    Why after: a run checks :func:`published_by` before its rename, but a concurrent run with
    the same release id can publish in between; :func:`publish` then keeps that run's folder,
    and only the manifest in place says whose release it is. ``None`` without a ``run_id``
    (nothing to compare with)."""
    if not run_id:
        return None
    other = published_by(release_dir)
    return None if other is None or other == run_id else other


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
        if not staged.staging_dir.is_dir():
            raise FileNotFoundError(f"staging folder {staged.staging_dir} is gone")
        with open(manifest_path, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, sort_keys=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        apply_published_mode(staged.staging_dir, staged.file_mode)
        sync_to_disk(staged.staging_dir)
        os.rename(staged.staging_dir, staged.final_dir)
        sync_to_disk(staged.final_dir.parent)
    except OSError as exc:
        if staged.final_dir.exists() and (staged.final_dir / "manifest.json").exists():
            discard(staged)
            return staged.final_dir  # a concurrent run published the same release first
        # The staging folder is kept so that a retry can publish it; the caller discards it
        # when it gives up. A partial manifest (a full disk) is not kept.
        manifest_path.unlink(missing_ok=True)
        raise PublishError(f"cannot publish {staged.final_dir}: {exc}") from None
    return staged.final_dir
