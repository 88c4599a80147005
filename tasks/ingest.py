"""Ingest task: read the input file as declared (I/O, so it retries)."""

from __future__ import annotations

import time

from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.policy import ReleasePolicy
from privgate.tasks._caching import retry_transient, stage_task


@stage_task(
    name="ingest",
    retries=2,
    retry_delay_seconds=[1, 5],
    retry_condition_fn=retry_transient,
    timeout_seconds=1800,
)
def ingest_task(policy: ReleasePolicy, input_sha256: str, cache_token: str) -> stages.IngestedTable:
    """Read the input table (cached by the data fingerprint and the input/columns sections)."""
    started = time.perf_counter()
    ingested = stages.ingest(policy, input_sha256)
    get_run_logger().info(
        "ingest: %d rows x %d columns from %s (%.2fs)",
        ingested.rows,
        ingested.frame.shape[1],
        ingested.path,
        time.perf_counter() - started,
    )
    return ingested
