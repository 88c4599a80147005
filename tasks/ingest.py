"""Ingest task: read the input file as declared (I/O, so it retries)."""

from __future__ import annotations

from prefect import task
from prefect.logging import get_run_logger

from core import stages
from core.policy import ReleasePolicy


@task(name="ingest", retries=2, retry_delay_seconds=[1, 5])
def ingest_task(policy: ReleasePolicy) -> stages.IngestedTable:
    """Read and fingerprint the input table."""
    ingested = stages.ingest(policy)
    get_run_logger().info(
        "ingest: %d rows x %d columns from %s (sha256 %s)",
        ingested.rows,
        ingested.frame.shape[1],
        ingested.path,
        ingested.sha256[:12],
    )
    return ingested
