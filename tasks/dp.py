"""DP tasks: thin wrappers over :mod:`privgate.core.dp.pipeline` and the ε ledger.

The noise needs no Prefect result to survive a retry: every draw is journaled in the ledger
before it is used, so re-running ``dp-release`` (a Retry, a rerun of the same release, another
worker) replays the journal and spends nothing more. The task's result is therefore not
persisted (it would only be a second copy of owner-side numbers). A refusal (budget exhausted)
is never retried.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from privgate.core.dp import pipeline
from privgate.core.dp.release import DPTable, check_dp_utility, open_ledger, run_dp_release
from privgate.core.exceptions import GateBlockedError, UtilityBlockedError
from privgate.core.gate import GateDecision
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import StagedRelease
from privgate.tasks._caching import retry_transient
from privgate.tasks._progress import forward_progress
from privgate.validations.schema import validate_columns


@task(name="check-columns", timeout_seconds=600)
def dp_columns_task(frame: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The DP input check: the declared columns only (values go through the domain rule)."""
    checked = validate_columns(frame, policy)
    get_run_logger().info(
        "check-columns: the input has exactly the %d declared columns", checked.shape[1]
    )
    return checked


@task(name="dp-dry-run", timeout_seconds=300)
def dp_dry_run_task(policy: ReleasePolicy, release_id: str) -> dict:
    """Would the release fit? Read-only: draws, reserves and creates nothing."""
    outcome = pipeline.dry_run_check(policy, release_id)
    get_run_logger().info(outcome["message"])
    return outcome


@task(
    name="dp-release",
    timeout_seconds=3600,
    retries=1,
    retry_delay_seconds=[5],
    retry_condition_fn=retry_transient,
)
def dp_release_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    release_id: str,
    run_id: str,
) -> DPTable:
    """Reserve, draw (or replay) and journal the DP release (:func:`run_dp_release`)."""
    with open_ledger() as ledger, forward_progress():
        return run_dp_release(
            frame, policy, hierarchies, release_id=release_id, run_id=run_id, ledger=ledger
        )


@task(name="utility-gate-dp", timeout_seconds=120)
def dp_utility_gate_task(table: DPTable, policy: ReleasePolicy, release_id: str):
    """The DP utility gate: thresholds computed from the DP output alone.

    A violated threshold fails this task (red in the UI) with :class:`UtilityBlockedError`.
    """
    decision = check_dp_utility(table, policy)
    log = get_run_logger()
    (log.info if decision.passed else log.error)("utility gate: %s", decision.summary)
    if not decision.passed:
        raise UtilityBlockedError(
            f"utility gate blocked DP release {release_id}: {decision.summary}", decision
        )
    return decision


@task(name="verify-and-gate-dp", timeout_seconds=1800)
def dp_gate_task(
    table: DPTable, policy: ReleasePolicy, release_id: str
) -> tuple[StagedRelease, GateDecision]:
    """Write to staging, re-read the file and the ledger's journal, and decide.

    A blocked release fails this task (red in the UI, the gate's reasons as its state
    message), as the k-anonymous gate does; the :class:`GateBlockedError` carries the decision
    and the staged release so the flow can still write the blocked report (then discards it).
    """
    staged, decision = pipeline.stage_and_verify(table, policy, release_id)
    log = get_run_logger()
    m = decision.measurements
    if decision.passed:
        log.info(
            "gate: PASSED: %s partitions from %s journaled draws composing to epsilon=%g; "
            "dataset %r has epsilon=%s of %g left",
            m.get("rows"),
            m.get("draws"),
            m.get("release_epsilon"),
            policy.dataset,
            (m.get("remaining_exact") or ["?"])[0],
            m.get("budget_epsilon"),
        )
    else:
        log.error("gate: BLOCKED: %s", "; ".join(decision.reasons))
        error = GateBlockedError(
            f"gate blocked DP release {release_id}: {'; '.join(decision.reasons)}", decision
        )
        error.staged = staged
        raise error
    return staged, decision


@task(name="ledger-mark-published", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=120)
def ledger_publish_task(policy: ReleasePolicy, release_id: str, path: str, run_id: str) -> None:
    """Record in the ledger which published release the reservation paid for."""
    from prefect.transactions import get_transaction

    with open_ledger() as ledger:
        ledger.mark_published(policy.dataset, release_id, path, run_id)
    transaction = get_transaction()
    if transaction is not None:
        transaction.set("ledger_marked", [policy.dataset, release_id])
    get_run_logger().info("ledger: release %s marked published", release_id)


@ledger_publish_task.on_rollback
def _unmark(transaction) -> None:
    marked = transaction.get("ledger_marked", None)
    if not marked:
        return
    with open_ledger() as ledger:
        ledger.unmark_published(marked[0], marked[1])
    get_run_logger().warning("ledger: publish mark of %s rolled back", marked[1])


@task(name="report-dp", timeout_seconds=300)
def dp_report_task(manifest: dict, table: DPTable, path: Path, status: str) -> Path:
    """Write the DP release's self-contained HTML report (rendered from its manifest)."""
    written = pipeline.write_dp_report(manifest, table, path, status)
    get_run_logger().info("report: %s", written)
    return written
