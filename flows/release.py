"""The release flow: ingest -> validate -> anonymize -> verify + gate -> publish.

Nothing is published unless the gate passes on the file as written. A blocked gate or a failure
at any stage discards the staging folder and ends the flow run in a Failed state whose message
states the reason.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run

from core import stages
from core.exceptions import GateBlockedError
from core.publish import discard
from flows.policy_overrides import resolve_policy
from tasks.anonymize import anonymize_task
from tasks.gate import gate_task
from tasks.ingest import ingest_task
from tasks.publish import publish_task
from tasks.validate import validate_task


@flow(name="privgate-release", log_prints=True)
def release_flow(
    policy_path: str,
    k: int | None = None,
    suppression_limit: float | None = None,
    release_date: date | None = None,
    dry_run: bool = False,
    overrides: dict[str, Any] | None = None,
) -> dict:
    """Produce one verified release of the table a policy describes.

    Parameters
    ----------
    policy_path : str
        The release policy (YAML).
    k, suppression_limit : optional
        Override the policy's values for this run.
    release_date : date, optional
        The release's date (default: today, UTC); part of the release id.
    dry_run : bool, default=False
        Do everything but publish.
    overrides : dict, optional
        Further dotted-key overrides, e.g. ``{"output.directory": "/tmp/out"}``.
    """
    log = get_run_logger()
    policy = resolve_policy(policy_path, k, suppression_limit, overrides)
    release_date = release_date or datetime.now(UTC).date()
    hierarchies = stages.load_hierarchies(policy)
    log.info(
        "policy %s: dataset %r, %d quasi-identifiers, k=%d, suppression limit %.2f%%",
        policy_path,
        policy.dataset,
        len(policy.quasi_identifiers),
        policy.privacy.k,
        100 * policy.privacy.suppression_limit,
    )

    ingested = ingest_task(policy)
    validated = validate_task(ingested.frame, policy, hierarchies)
    release_id = stages.release_id_for(policy, ingested.sha256, release_date)
    shuffle_seed = int(release_id.rsplit("-", 1)[-1], 16)
    table = anonymize_task(validated, policy, hierarchies, shuffle_seed)
    staged, decision = gate_task(table, policy, release_id, ingested.rows)
    try:
        if not decision.passed:
            raise GateBlockedError(
                f"gate blocked release {release_id}: {decision.summary}", decision
            )
        manifest = stages.build_manifest(
            policy=policy,
            release_id=release_id,
            release_date=release_date,
            ingested=ingested,
            table=table,
            staged=staged,
            decision=decision,
            run_id=str(flow_run.get_id() or ""),
        )
        if dry_run:
            log.info("dry run: release %s verified, not published", release_id)
            return {
                "release_id": release_id,
                "path": None,
                "published": False,
                "gate": decision.to_dict(),
                "metrics": table.metrics,
            }
        path = publish_task(staged, manifest)
    finally:
        if staged.staging_dir.exists():
            discard(staged)
    log.info("released %s: %s", path, decision.summary)
    return {
        "release_id": release_id,
        "path": str(path),
        "published": True,
        "gate": decision.to_dict(),
        "metrics": table.metrics,
    }
