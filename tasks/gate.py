"""Gate task: stage the release, re-read it, and verify every criterion (never cached)."""

from __future__ import annotations

import time

from prefect import task
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.gate import GateDecision
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import StagedRelease, discard


@task(name="verify-and-gate", timeout_seconds=1800)
def gate_task(
    table: stages.AnonymizedTable,
    policy: ReleasePolicy,
    release_id: str,
    input_rows: int,
    covered: list[str] | None = None,
) -> tuple[StagedRelease, GateDecision]:
    """Write to staging and verify the file as written; the decision is returned as data.

    ``covered``: the quasi-identifiers a tiered release must protect, as the flow derives them
    from the ranking (default: every declared one).
    """
    started = time.perf_counter()
    staged = stages.stage(table, policy, release_id)
    try:
        decision = stages.verify(staged.release_file, policy, input_rows, covered=covered)
    except BaseException:
        discard(staged)  # the flow never receives it: clean up here
        raise
    log = get_run_logger()
    (log.info if decision.passed else log.error)(
        "gate: %s (%.2fs)", decision.summary, time.perf_counter() - started
    )
    return staged, decision
