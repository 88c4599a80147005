"""Publish task: atomic rename of the verified staging folder, with its manifest."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.logging import get_run_logger

from core.publish import StagedRelease, publish


@task(name="publish", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=600)
def publish_task(staged: StagedRelease, manifest: dict) -> Path:
    """Move the verified release into ``releases/<dataset>/<release-id>/``."""
    path = publish(staged, manifest)
    get_run_logger().info("publish: %s (%d rows)", path, manifest["output"]["rows"])
    return path
