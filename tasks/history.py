"""Release-history tasks: read the earlier releases, protect the new one, record it on publish.

Thin wrappers over :mod:`privgate.core.history` and :mod:`privgate.core.stages`. None is cached:
the history changes from one night to the next. Recording runs inside the publish transaction,
so a release whose publication is rolled back is taken out of the history again, and a rerun
of a published release records nothing twice (the history is idempotent by release id).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.history import (
    CrossReleaseState,
    HistoryEntry,
    ReleaseHistory,
    check_entry_is_published,
    discard_row_keys,
    history_exists,
    save_row_keys,
)
from privgate.core.policy import ReleasePolicy
from privgate.tasks._caching import retry_transient


@task(
    name="history-read",
    timeout_seconds=300,
    retries=2,
    retry_delay_seconds=[1, 5],
    retry_condition_fn=retry_transient,
)
def history_past_task(policy: ReleasePolicy, release_id: str) -> CrossReleaseState:
    """Every recorded release of the dataset but this one (a rerun checks against the rest),
    folded once into the criterion's state (the protection and the gate both check against
    it). Reading creates nothing: without a history yet there is nothing earlier to check."""
    if not history_exists():
        get_run_logger().info("history: no release of %r recorded yet", policy.dataset)
        return CrossReleaseState()
    with ReleaseHistory() as history:
        past = CrossReleaseState.of(history.past_releases(policy.dataset, excluding=release_id))
        where = history.url
    get_run_logger().info(
        "history: %d earlier release(s) of %r in %s", len(past), policy.dataset, where
    )
    return past


@task(name="history-protect", timeout_seconds=1800)
def history_protect_task(
    table: stages.AnonymizedTable,
    policy: ReleasePolicy,
    past: CrossReleaseState,
    release_id: str,
) -> stages.AnonymizedTable:
    """Remove the people the release combined with the earlier ones would expose."""
    protected = stages.protect_against_history(table, policy, past, release_id)
    removed = protected.metrics.get("removed_by_history", 0)
    get_run_logger().info(
        "history: %d row(s) removed so that the release combined with %d earlier one(s) "
        "exposes no one",
        removed,
        len(past),
    )
    return protected


@task(name="history-row-keys", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=300)
def history_row_keys_task(policy: ReleasePolicy, entry: HistoryEntry, release_file: str) -> str:
    """Keep, owner-only, the history key of each row of the file about to be published, so
    that a release published and not recorded can still be recorded from its file
    (``privgate history DATASET --record-published RELEASE_DIR``); removed once recorded."""
    path = save_row_keys(
        policy.dataset, entry.snapshot.release_id, release_file, entry.row_keys, entry.key
    )
    get_run_logger().info("history: row keys of the release kept privately in %s", path.parent)
    return str(path)


@task(name="history-record", retries=2, retry_delay_seconds=[1, 5], timeout_seconds=300)
def history_record_task(policy: ReleasePolicy, entry: HistoryEntry, path: str) -> bool:
    """Record the published release in the history (False: it was already recorded).

    A release this run finds already published but not yet recorded (a retry after a crash
    between the rename and this write) is recorded only if the published file holds the rows
    this run checked (:func:`check_entry_is_published`)."""
    from prefect.transactions import get_transaction

    with ReleaseHistory() as history:
        known = {r.release_id for r in history.releases(policy.dataset)}
        if entry.file_name and entry.snapshot.release_id not in known:
            check_entry_is_published(entry, Path(path) / entry.file_name, policy)
        recorded = history.record(
            policy.dataset,
            entry.snapshot,
            key=entry.key,
            class_labels=entry.class_labels,
            checks=entry.checks,
            path=path,
        )
    discard_row_keys(policy.dataset, entry.snapshot.release_id)  # recorded: not needed
    transaction = get_transaction()
    if recorded and transaction is not None:
        transaction.set("history_recorded", [policy.dataset, entry.snapshot.release_id])
    get_run_logger().info(
        "history: release %s %s",
        entry.snapshot.release_id,
        "recorded" if recorded else "was already recorded (a rerun): nothing added",
    )
    return recorded


@history_record_task.on_rollback
def _forget(transaction) -> None:
    recorded = transaction.get("history_recorded", None)
    if not recorded:
        return
    with ReleaseHistory() as history:
        history.forget(recorded[0], recorded[1], force=True)
    get_run_logger().warning("history: release %s taken out again (rolled back)", recorded[1])
