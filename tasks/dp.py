"""DP tasks: the noisy release (charged to the ledger, persisted) and the ledger's publish mark.

The noisy result is persisted and keyed by the release id (data fingerprint, policy hash and
release date) plus the policy sections it reads, so retrying a failed run, or running the same
release again, reuses the noise already drawn and paid for instead of drawing (and spending)
again. A new release date is a new release: it draws fresh noise and spends again. A refusal
(budget exhausted) is never retried.
"""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.cache_policies import INPUTS
from prefect.logging import get_run_logger

from privgate.core.dp.gate import verify_dp_release
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.release import (
    COUNT_COLUMN,
    DPTable,
    LedgerAccountant,
    check_dp_utility,
    dp_release,
    ledger_for,
)
from privgate.core.gate import GateDecision
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import StagedRelease, discard, stage_release
from privgate.tasks._progress import forward_progress

#: The noisy result is keyed by its token alone, not by the task's source: a code change must
#: never make a rerun of an unpublished release draw (and pay for) its noise again.
NOISE_CACHE = INPUTS - "frame" - "policy" - "hierarchies" - "run_id"


@task(name="dp-release", timeout_seconds=3600, persist_result=True, cache_policy=NOISE_CACHE)
def dp_release_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    release_id: str,
    run_id: str,
    cache_token: str,
) -> DPTable:
    """Draw the DP release, committing every spend to the ledger before its noise is drawn."""

    log = get_run_logger()
    with ledger_for(policy) as ledger:
        return _draw(frame, policy, hierarchies, release_id, run_id, ledger, log)


def _draw(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    release_id: str,
    run_id: str,
    ledger: BudgetLedger,
    log,
) -> DPTable:
    dp = policy.differential_privacy
    account = ledger.open_account(policy.dataset, dp.budget.epsilon, dp.budget.delta)
    left = account.remaining
    log.info(
        "dp: %s with epsilon=%g over %d rows; dataset %r has (epsilon=%g, delta=%g) left of "
        "its lifetime budget",
        dp.method,
        dp.epsilon,
        len(frame),
        policy.dataset,
        left[0],
        left[1],
    )
    # Refuse before any noise exists when the whole run cannot fit.
    ledger.check(policy.dataset, dp.epsilon, 0.0)
    accountant = LedgerAccountant(
        ledger, policy.dataset, release_id, run_id, budget=(dp.epsilon, 0.0)
    )
    with forward_progress():
        table = dp_release(frame, policy, hierarchies, accountant, run_id=run_id)
    if "error" in table.utility:
        log.error("dp: the owner's clustering check failed: %s", table.utility["error"])
    elif table.utility:
        log.info(
            "dp: the release's %s clustering agrees with the owner's: F-measure %.4f, "
            "MatchPoint %.4f (owner's check, not published)",
            table.utility["clustering"],
            table.utility["f_measure"],
            table.utility["match_point"],
        )
    log.info(
        "dp: %d partitions, spent (epsilon=%g, delta=%g) in %d steps, %.2fs",
        len(table.frame),
        table.epsilon,
        table.delta,
        len(table.spends),
        table.metrics["seconds"],
    )
    return table


@task(name="ledger-mark-published", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=120)
def ledger_publish_task(policy: ReleasePolicy, release_id: str, path: str, run_id: str) -> None:
    """Record in the ledger which published release the spends paid for."""
    from prefect.transactions import get_transaction

    with ledger_for(policy) as ledger:
        ledger.mark_published(policy.dataset, release_id, path, run_id)
    transaction = get_transaction()
    if transaction is not None:
        transaction.set("ledger_marked", [policy.model_dump(mode="json"), release_id])
    get_run_logger().info("ledger: release %s marked published", release_id)


@ledger_publish_task.on_rollback
def _unmark(transaction) -> None:
    marked = transaction.get("ledger_marked", None)
    if not marked:
        return
    policy = ReleasePolicy.model_validate(marked[0])
    with ledger_for(policy) as ledger:
        ledger.unmark_published(policy.dataset, marked[1])
    get_run_logger().warning("ledger: publish mark of %s rolled back", marked[1])


@task(name="utility-gate-dp")
def dp_utility_gate_task(table: DPTable, policy: ReleasePolicy):
    """Apply the policy's clustering thresholds to the DP release (uncached: milliseconds)."""
    decision = check_dp_utility(table, policy)
    log = get_run_logger()
    (log.info if decision.passed else log.error)("utility gate: %s", decision.summary)
    return decision


@task(name="verify-and-gate-dp", timeout_seconds=1800)
def dp_gate_task(
    table: DPTable, policy: ReleasePolicy, release_id: str
) -> tuple[StagedRelease, GateDecision]:
    """Write to staging, re-read the file and the ledger, and decide (never cached)."""
    staged = stage_release(
        table.frame, policy.output.directory, policy.dataset, release_id, policy.output.format
    )
    try:
        dp = policy.differential_privacy
        with ledger_for(policy) as ledger:
            decision = verify_dp_release(
                staged.release_file,
                expected_columns=[*policy.quasi_identifiers, COUNT_COLUMN],
                forbidden_columns=policy.identifiers,
                count_column=COUNT_COLUMN,
                ledger=ledger,
                dataset=policy.dataset,
                release_id=release_id,
                run_id=table.run_id,
                epsilon=dp.epsilon,
                delta=0.0,
            )
    except BaseException:
        discard(staged)  # the flow never receives it: clean up here
        raise
    log = get_run_logger()
    m = decision.measurements
    if decision.passed:
        log.info(
            "gate: PASSED: %s partitions; this release spent epsilon=%g; dataset %r has "
            "epsilon=%g of %g left",
            m.get("rows"),
            m.get("run_epsilon"),
            policy.dataset,
            m.get("remaining_epsilon"),
            m.get("budget_epsilon"),
        )
    else:
        log.error("gate: BLOCKED: %s", "; ".join(decision.reasons))
    return staged, decision
