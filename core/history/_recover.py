"""Recording a release that was published and not recorded, from its file and its row keys.

Why: the history must describe every file recipients hold. A run killed between the publishing
rename and the history write, or a retry whose own classes differ from the file the first run
published (refused by :func:`~privgate.core.history.check_entry_is_published`), leaves a
published release outside the history. Its manifest holds the policy and the file's sha256,
and the publishing run kept each row's history key for exactly that file
(:mod:`privgate.core.history._row_keys`): together they give the release as the criterion reads
it, classes read from the published file itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from privgate.core.exceptions import HistoryError
from privgate.core.history._incremental import CrossReleaseResult
from privgate.core.history._release import check_written_release
from privgate.core.history._row_keys import discard_row_keys, find_row_keys
from privgate.core.history._store import ReleaseHistory
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import sha256_file

__all__ = ["RecordedPublished", "record_published"]

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class RecordedPublished:
    """What :func:`record_published` did."""

    release_id: str
    recorded: bool
    people: int
    #: The cross-release criterion on the published file against the releases recorded
    #: before it (None when it was already recorded). The release is out: it is recorded
    #: whatever this says, so that later releases are checked against it.
    result: CrossReleaseResult | None = None


def record_published(
    history: ReleaseHistory,
    dataset: str,
    release_dir: str | Path,
    *,
    keys_file: str | Path | None = None,
) -> RecordedPublished:
    """Record the published release in ``release_dir`` in ``history``.

    Refuses (:class:`HistoryError`, nothing recorded) a folder of another dataset, a release
    file that is not the one its manifest describes, and row keys not written for exactly
    that file. Idempotent: an already recorded release is left as it is.
    """
    folder = Path(release_dir)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HistoryError(f"{folder} is not a published release: {exc}") from None
    release_id, published_for = manifest.get("release_id"), manifest.get("dataset")
    if published_for != dataset:
        raise HistoryError(f"{folder} is a release of {published_for!r}, not of {dataset!r}")
    release_file = folder / manifest["output"]["file"]
    if sha256_file(release_file) != manifest["output"]["sha256"]:
        raise HistoryError(
            f"{release_file} is not the file its manifest describes (sha256 differs): nothing "
            "recorded"
        )
    if release_id in {r.release_id for r in history.releases(dataset)}:
        return RecordedPublished(release_id, False, 0)
    policy = ReleasePolicy.model_validate(manifest["policy"])
    row_keys = find_row_keys(dataset, release_id, release_file, keys_file)
    past = history.past_releases(dataset, excluding=release_id)
    try:
        result, entry = check_written_release(release_file, row_keys.keys, policy, past, release_id)
    except ValueError as exc:  # a different number of rows
        raise HistoryError(f"the row keys do not match {release_file}: {exc}") from None
    checks = {**entry.checks, "recorded_from": "the published file (privgate history)"}
    recorded = history.record(
        dataset,
        entry.snapshot,
        key=row_keys.key,
        class_labels=entry.class_labels,
        checks=checks,
        path=str(folder.resolve()),
    )
    discard_row_keys(dataset, release_id)
    people = len(set(entry.snapshot.membership.index))
    return RecordedPublished(release_id, recorded, people, result)
