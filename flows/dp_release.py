"""The release flow's differentially private branch.

(fingerprint -> ingest, shared with the k-anonymous branch) -> check columns -> DP release
(ε reserved in the ledger before the first draw; every draw journaled before it is used) ->
utility gate (from the DP output alone) -> stage -> DP gate (re-read the file; the journal's
draws compose within the policy's ε and are the published counts) -> publish and mark the
ledger, in one Prefect transaction.

A release that does not fit what is left of the dataset's lifetime budget is refused before any
noise exists: the run ends Failed, saying how much budget is left, and nothing is published. A
retry — after a utility or gate block, a failed publication or a crash at any point — replays
the journaled draws and spends nothing more; a draw lost in a crash is charged to the account as
such. The stages are plain functions in :mod:`privgate.core.dp.pipeline`.
"""

from __future__ import annotations

import uuid
from datetime import date

from prefect.artifacts import create_markdown_artifact
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed
from prefect.transactions import transaction

from privgate.core.attacks import split_control
from privgate.core.dp import pipeline
from privgate.core.dp.release import DPTable
from privgate.core.exceptions import GateBlockedError
from privgate.core.gate import GateDecision
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import discard, sha256_file
from privgate.core.report import REPORT_FILE, blocked_report_path
from privgate.core.stages import IngestedTable, load_hierarchies
from privgate.flows.parameters import ReleaseParameters
from privgate.tasks.attacks import owner_attacks_task
from privgate.tasks.dp import (
    dp_columns_task,
    dp_dry_run_task,
    dp_gate_task,
    dp_release_task,
    dp_report_task,
    dp_utility_gate_task,
    ledger_publish_task,
)
from privgate.tasks.publish import publish_task
from privgate.tasks.results import discard_private_results


def _attach_summary(
    policy: ReleasePolicy,
    release_id: str,
    table: DPTable,
    decision: GateDecision,
    status: str,
    where: str | None = None,
) -> None:
    create_markdown_artifact(
        markdown=pipeline.summary_markdown(policy, release_id, table, decision, status, where),
        key=f"privgate-dp-{policy.dataset.lower()}".replace("_", "-").replace(".", "-"),
        description=f"{policy.dataset} {release_id}: DP release {status}",
    )


def dp_release(
    policy: ReleasePolicy, p: ReleaseParameters, release_date: date, ingested: IngestedTable
):
    """Run the DP branch of the release flow on the ingested table (called inside the
    release flow, after the opening both branches share)."""
    log = get_run_logger()
    dp = policy.differential_privacy
    hierarchies = load_hierarchies(policy)
    release_id = pipeline.dp_release_id(policy, release_date)
    log.info(
        "policy %s: dataset %r, DP release %s (%s), epsilon=%g of a lifetime budget of %g",
        p.policy_path,
        policy.dataset,
        release_id,
        dp.method,
        dp.epsilon,
        dp.budget.epsilon,
    )
    checked = dp_columns_task(ingested.frame, policy)
    split = None
    if policy.attacks is not None:  # held out of the release; attacked after publication
        split = split_control(checked, policy)
        checked = split.kept
        log.info("attacks: %d records held out of the release (owner-side)", len(split.control))
    if p.dry_run:
        outcome = dp_dry_run_task(policy, release_id)
        return Completed(message=outcome["message"], data=outcome)
    run_id = str(flow_run.get_id() or f"local-{uuid.uuid4()}")
    table = dp_release_task(checked, policy, hierarchies, release_id, run_id)
    utility_decision = dp_utility_gate_task(table, policy, release_id)  # raises if blocked
    try:  # a blocked gate fails its own task (red in the UI); the report is still written
        staged, decision = dp_gate_task(table, policy, release_id)
    except GateBlockedError as exc:
        staged, decision = exc.staged, exc.decision
    outcome = {
        "release_id": release_id,
        "path": None,
        "published": False,
        "gate": decision.to_dict(),
        "metrics": table.metrics,
        "differential_privacy": {"epsilon": table.epsilon, "spends": table.spends},
    }
    try:
        manifest = pipeline.build_dp_manifest(
            policy, release_id, release_date, table, staged, decision, utility_decision.to_dict()
        )
        if not decision.passed:
            _attach_summary(policy, release_id, table, decision, "blocked")
            blocked = blocked_report_path(policy.output.directory, policy.dataset, release_id)
            dp_report_task(manifest, table, blocked, "blocked")
            raise GateBlockedError(
                f"gate blocked DP release {release_id}: {'; '.join(decision.reasons)}", decision
            )
        # The report goes into staging: published with the release in the same rename.
        written = dp_report_task(manifest, table, staged.staging_dir / REPORT_FILE, "published")
        manifest["report"] = {"file": REPORT_FILE, "sha256": sha256_file(written)}
        # Publish and mark the ledger together: if either fails, both are rolled back.
        with transaction():
            path = publish_task(staged, manifest)
            ledger_publish_task(policy, release_id, str(path), run_id)
    finally:
        if staged.staging_dir.exists():
            discard(staged)
    _attach_summary(policy, release_id, table, decision, "published", str(path))
    if split is not None:  # after publication: the evidence cannot decide it, nor fail the run
        attacked = owner_attacks_task(
            path / staged.release_file.name, split, policy, hierarchies, release_id,
            return_state=True,
        )  # fmt: skip
        if not attacked.is_completed():
            log.error("owner-side attacks on %s not measured: %s", release_id, attacked.message)
    removed = discard_private_results(policy)
    if removed:
        log.info("published: %s", removed)
    m = decision.measurements
    outcome.update(path=str(path), published=True)
    remaining = (m.get("remaining_exact") or [m.get("remaining_epsilon")])[0]
    return Completed(
        message=f"DP gate PASSED: the release's draws compose to epsilon "
        f"{m['release_epsilon']:g}; {remaining} of {m['budget_epsilon']:g} left; published {path}",
        data=outcome,
    )
