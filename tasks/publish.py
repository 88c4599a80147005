"""Publish task: atomic rename of the verified staging folder, with its manifest.

Inside a Prefect ``transaction`` (a DP release publishes and marks the ledger in one), a failure
later in the transaction rolls the publication back: the folder this task renamed into place is
removed again. A release that was already published before (a duplicated run) is never touched.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prefect import task
from prefect.logging import get_run_logger
from prefect.transactions import get_transaction

from privgate.core.publish import StagedRelease, publish, rolled_back_name

#: Transaction key under which publish_task records the folder it created.
PUBLISHED_KEY = "published_dir"


@task(name="publish", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=600)
def publish_task(staged: StagedRelease, manifest: dict) -> Path:
    """Move the verified release into ``releases/<dataset>/<release-id>/``."""
    existed = staged.final_dir.exists()
    staging = _identity(staged.staging_dir)
    path = publish(staged, manifest)
    # A concurrent run may publish between the check above and the rename: its folder is
    # kept, and a rollback of this run must not take it out. The folder in place is this
    # run's only if it is this run's staging folder renamed (the same inode): a DP manifest
    # has no run id to compare with, so the manifest cannot tell.
    ours = not existed and staging is not None and _identity(path) == staging
    transaction = get_transaction()
    if transaction is not None and ours:
        transaction.set(PUBLISHED_KEY, str(path))
    get_run_logger().info("publish: %s (%d rows)", path, manifest["output"]["rows"])
    return path


def _identity(folder: Path) -> tuple[int, int] | None:
    """The folder's (device, inode), which a rename keeps; ``None`` if it is not there."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_dev, info.st_ino


@publish_task.on_rollback
def _unpublish(transaction) -> None:
    """Take a release this run published out of place again (rename first: readers never see
    a half-deleted folder)."""
    published = transaction.get(PUBLISHED_KEY, None)
    if not published:
        return
    path = Path(published)
    if path.exists():
        doomed = rolled_back_name(path)
        path.rename(doomed)
        shutil.rmtree(doomed, ignore_errors=True)
    get_run_logger().warning("publish rolled back: %s removed", path)
