"""Fingerprint task: the input file's sha256, which keys every cached stage (I/O: retries)."""

from __future__ import annotations

import time

from prefect import task
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.policy import ReleasePolicy


@task(name="fingerprint", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=600)
def fingerprint_task(policy: ReleasePolicy) -> str:
    """sha256 of the input file ("" if it is missing: ingest then names the problem)."""
    started = time.perf_counter()
    digest = stages.fingerprint_input(policy)
    get_run_logger().info(
        "fingerprint: %s sha256 %s (%.2fs)",
        policy.input.path,
        digest[:12] or "<missing>",
        time.perf_counter() - started,
    )
    return digest
