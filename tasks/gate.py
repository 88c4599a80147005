"""Gate task: stage the release, re-read it, and verify every criterion (never cached)."""

from __future__ import annotations

import time

from prefect import task
from prefect.logging import get_run_logger

from core import stages
from core.gate import GateDecision
from core.policy import ReleasePolicy
from core.publish import StagedRelease


@task(name="verify-and-gate", timeout_seconds=1800)
def gate_task(
    table: stages.AnonymizedTable, policy: ReleasePolicy, release_id: str, input_rows: int
) -> tuple[StagedRelease, GateDecision]:
    """Write to staging and verify the file as written; the decision is returned as data."""
    started = time.perf_counter()
    staged = stages.stage(table, policy, release_id)
    decision = stages.verify(staged.release_file, policy, input_rows, covered=table.covered)
    log = get_run_logger()
    (log.info if decision.passed else log.error)(
        "gate: %s (%.2fs)", decision.summary, time.perf_counter() - started
    )
    return staged, decision
