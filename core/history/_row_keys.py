"""Who each row of a release file is, kept privately from before publishing until recorded.

Why: a run can publish a release and fail to record it (killed between the publishing rename
and the history write, or a retry whose classes differ from the file the first run published:
:func:`~privgate.core.history.check_entry_is_published` then refuses to record). The published
file names nobody, so the history could not be completed from it alone, and every later check
would miss the people in it. So just before publishing, the run writes the history key of each
row of the file it is about to publish, in the file's order, with the file's sha256, to an
owner-only file in the privgate data directory (``history-row-keys/<dataset>/``, never in a
release). Recording the release removes it. ``privgate history DATASET --record-published
RELEASE_DIR`` records a published release from its file and the row keys whose sha256 is the
file's, and refuses any other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from privgate.core.exceptions import HistoryError
from privgate.core.locations import data_dir, ensure_private_dir, restrict_file
from privgate.core.publish import sha256_file

__all__ = ["RowKeys", "discard_row_keys", "find_row_keys", "row_keys_dir", "save_row_keys"]

ROW_KEYS_FOLDER = "history-row-keys"


@dataclass(frozen=True)
class RowKeys:
    """The history key of every row of one release file, in the file's order."""

    dataset: str
    release_id: str
    key: str
    release_sha256: str
    keys: tuple[str, ...]
    path: Path | None = None


def row_keys_dir(dataset: str) -> Path:
    """``<privgate data directory>/history-row-keys/<dataset>`` (not created)."""
    return data_dir() / ROW_KEYS_FOLDER / dataset


def save_row_keys(
    dataset: str, release_id: str, release_file: str | Path, keys: Sequence[object], key: str
) -> Path:
    """Write the row keys of ``release_file`` (owner-only, atomically); return the file."""
    digest = sha256_file(release_file)
    folder = ensure_private_dir(row_keys_dir(dataset))
    target = folder / f"{release_id}.{digest[:16]}.json"
    partial = target.with_name(target.name + ".partial")
    text = json.dumps(
        {
            "dataset": dataset,
            "release_id": release_id,
            "key": key,
            "release_sha256": digest,
            "keys": [str(k) for k in keys],
        }
    )
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(restrict_file(partial), target)
    return target


def _read(path: Path) -> RowKeys:
    data = json.loads(path.read_text(encoding="utf-8"))
    return RowKeys(
        data["dataset"],
        data["release_id"],
        data["key"],
        data["release_sha256"],
        tuple(data["keys"]),
        path,
    )


def find_row_keys(
    dataset: str, release_id: str, release_file: str | Path, keys_file: str | Path | None = None
) -> RowKeys:
    """The row keys written for exactly ``release_file`` (its sha256), from ``keys_file`` or
    the data directory.

    Raises
    ------
    HistoryError
        No row keys were written for this file (another run's file, or none kept), or they
        are for another release or another number of rows.
    """
    digest = sha256_file(release_file)
    if keys_file is not None:
        candidates = [Path(keys_file)]
    else:
        candidates = sorted(row_keys_dir(dataset).glob(f"{release_id}.*.json"))
    found = [_read(p) for p in candidates]
    matching = [
        r
        for r in found
        if r.release_sha256 == digest and (r.dataset, r.release_id) == (dataset, release_id)
    ]
    if not matching:
        others = ", ".join(f"{r.path.name} (file sha256 {r.release_sha256[:16]})" for r in found)
        raise HistoryError(
            f"no row keys match the published file {release_file} (sha256 {digest[:16]}) of "
            f"release {release_id} of {dataset!r}: "
            + (f"found only {others}, written for other files" if found else "none was kept")
            + "; nothing recorded (the history must describe exactly the file recipients hold)"
        )
    return matching[0]


def discard_row_keys(dataset: str, release_id: str) -> int:
    """Remove every row-keys file of ``release_id`` (it is recorded); return how many."""
    removed = 0
    for path in row_keys_dir(dataset).glob(f"{release_id}.*.json"):
        path.unlink(missing_ok=True)
        removed += 1
    return removed
