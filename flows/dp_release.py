"""The release flow's differentially private branch.

fingerprint -> ingest -> validate -> input expectations -> DP release (every spend committed to
the ε ledger before its noise is drawn; the noisy result persisted) -> utility gate (the owner's
clustering agreement, when the policy sets thresholds) -> stage -> DP gate (re-read the file,
read the ledger back) -> publish and mark the ledger, in one Prefect transaction.

A release whose spend would exceed the dataset's lifetime budget is refused before any noise
exists for it: the run ends Failed, saying how much budget is left, and nothing is published. If
publishing or the ledger mark fails, the transaction rolls both back. Retrying a failed run, or
rerunning the same release (same data, policy and date), reuses the persisted noisy result and
spends nothing more.
"""

from __future__ import annotations

import hashlib
import platform
import uuid
from datetime import UTC, date, datetime

from prefect.artifacts import create_markdown_artifact
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed
from prefect.transactions import transaction

from privgate.core import stages
from privgate.core.dp.release import DPTable, ledger_for, ledger_url_for
from privgate.core.exceptions import GateBlockedError, UtilityBlockedError
from privgate.core.gate import GateDecision
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import StagedRelease, discard, make_release_id, sha256_file
from privgate.flows.parameters import ReleaseParameters
from privgate.tasks.dp import (
    dp_gate_task,
    dp_release_task,
    dp_utility_gate_task,
    ledger_publish_task,
)
from privgate.tasks.expectations import input_expectations_task
from privgate.tasks.fingerprint import fingerprint_task
from privgate.tasks.ingest import ingest_task
from privgate.tasks.publish import publish_task
from privgate.tasks.validate import validate_task

_INGEST_SECTIONS = ("dataset", "input", "columns")
_DP_SECTIONS = ("dataset", "input", "columns", "differential_privacy")
#: Values computed on the private data without noise: kept out of a DP release's manifest (the
#: input's size, run times that grow with it, the number of classes observed and the score
#: sensitivity derived from it). The data owner sees them in the run's log and artifacts.
_DATA_DERIVED = frozenset({"input_rows", "seconds", "classes", "sensitivity"})


def _manifest(
    policy: ReleasePolicy,
    release_id: str,
    release_date: date,
    ingested: stages.IngestedTable,
    table: DPTable,
    staged: StagedRelease,
    decision: GateDecision,
) -> dict:
    return {
        "release_id": release_id,
        "dataset": policy.dataset,
        "release_date": release_date.isoformat(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "privgate_version": stages.package_version(),
        "python": platform.python_version(),
        "run_id": table.run_id,
        # Nothing exact about the private input: no row count, no content hash (a reader
        # could test guesses about the data against either).
        "input": {"path": ingested.path},
        "output": {
            "file": staged.release_file.name,
            "sha256": sha256_file(staged.release_file),
            "rows": len(table.frame),
            "columns": list(table.frame.columns),
        },
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.fingerprint(),
        "differential_privacy": {
            "method": policy.differential_privacy.method,
            "epsilon": table.epsilon,
            "delta": table.delta,
            "class": table.class_source,
            "budget_split": {k: v for k, v in table.budget_split.items() if k not in _DATA_DERIVED},
            "spends": table.spends,
            "specializations": table.specializations,
            "cuts": table.cuts,
        },
        "metrics": {k: v for k, v in table.metrics.items() if k not in _DATA_DERIVED},
        "gate": decision.to_dict(),
    }


def _attach_summary(
    policy: ReleasePolicy,
    release_id: str,
    table: DPTable,
    decision: GateDecision,
    status: str,
    where: str | None = None,
) -> None:
    """The run's Markdown artifact: spend per step, the account, the decision, where it went."""
    create_markdown_artifact(
        markdown=_summary_markdown(policy, release_id, table, decision, status, where),
        key=f"privgate-dp-{policy.dataset.lower()}".replace("_", "-").replace(".", "-"),
        description=f"{policy.dataset} {release_id}: DP release {status}",
    )


def _summary_markdown(
    policy: ReleasePolicy,
    release_id: str,
    table: DPTable,
    decision: GateDecision,
    status: str,
    where: str | None,
) -> str:
    m = decision.measurements
    lines = [
        f"# {policy.dataset} {release_id}: DP release {status}",
        "",
        f"- release: `{where}`" if where else "- nothing published",
        f"- method: {policy.differential_privacy.method}, class: {table.class_source}",
        f"- this release spent epsilon = {table.epsilon:g} (delta = {table.delta:g})",
        f"- lifetime budget epsilon = {m.get('budget_epsilon')}, spent "
        f"{m.get('spent_epsilon')}, remaining {m.get('remaining_epsilon')}",
        f"- {len(table.frame)} leaf partitions",
    ]
    if table.utility and "error" not in table.utility:
        lines.append(
            f"- owner's check (computed on the private data, not published): the release's "
            f"{table.utility['clustering']} clustering agrees with the original's with "
            f"F-measure {table.utility['f_measure']:.4f}, MatchPoint "
            f"{table.utility['match_point']:.4f}"
        )
    lines += [
        "",
        "| step | mechanism | epsilon | delta |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {s['step']} | {s['mechanism']} | {s['epsilon']:g} | {s['delta']:g} |"
        for s in table.spends
    ]
    if not decision.passed:
        lines += ["", "Blocked: " + "; ".join(decision.reasons)]
    return "\n".join(lines)


def _dry_run(policy: ReleasePolicy, release_id: str):
    """A DP dry run draws no noise (drawing is spending): it checks that the spend would fit."""
    dp = policy.differential_privacy
    with ledger_for(policy) as ledger:
        account = ledger.open_account(policy.dataset, dp.budget.epsilon, dp.budget.delta)
        after = ledger.check(policy.dataset, dp.epsilon, 0.0)
    message = (
        f"dry run: DP release {release_id} would spend epsilon {dp.epsilon:g} of the "
        f"{account.remaining[0]:g} left ({after[0]:g} after it); no noise drawn, nothing "
        "published"
    )
    get_run_logger().info(message)
    outcome = {
        "release_id": release_id,
        "path": None,
        "published": False,
        "gate": {"passed": True, "reasons": [], "measurements": {"remaining_epsilon": after[0]}},
        "differential_privacy": {"epsilon": dp.epsilon, "spends": []},
        "dry_run": True,
    }
    return Completed(message=message, data=outcome)


def dp_release(policy: ReleasePolicy, p: ReleaseParameters, release_date: date):
    """Run the DP branch of the release flow (called inside :func:`flows.release.release_flow`)."""
    log = get_run_logger()
    dp = policy.differential_privacy
    hierarchies = stages.load_hierarchies(policy)
    log.info(
        "policy %s: dataset %r, DP release (%s), epsilon=%g of a lifetime budget of %g, "
        "%d quasi-identifiers",
        p.policy_path,
        policy.dataset,
        dp.method,
        dp.epsilon,
        dp.budget.epsilon,
        len(policy.quasi_identifiers),
    )
    input_sha256 = fingerprint_task(policy)
    ingest_token = stages.cache_token(policy, input_sha256, *_INGEST_SECTIONS)
    ingested = ingest_task(policy, input_sha256, ingest_token)
    validated = validate_task(ingested.frame, policy, hierarchies, ingest_token)
    # A DP release is identified by its dataset, the DP settings and the date, never by a hash
    # of the private input (an exact function of the data, which would let a reader test
    # guesses about it): one DP release per policy and day, published once. Editing a utility
    # threshold keeps the release and the noise already drawn and paid for.
    public_settings = stages.cache_token(policy, "", "dataset", "differential_privacy")
    release_id = make_release_id("differential-privacy", public_settings, release_date)
    input_expectations_task(validated, policy, hierarchies, run_name=release_id)
    if p.dry_run:
        return _dry_run(policy, release_id)
    # The noise is keyed by the data, the sections the mechanism reads, the release and the
    # ledger that paid for it (never published).
    dp_sections = stages.cache_token(policy, input_sha256, *_DP_SECTIONS)
    dp_token = hashlib.sha256(
        f"{dp_sections}:{release_id}:{ledger_url_for(policy)}".encode()
    ).hexdigest()
    run_id = str(flow_run.get_id() or f"local-{uuid.uuid4()}")
    table = dp_release_task(validated, policy, hierarchies, release_id, run_id, dp_token)
    utility_decision = dp_utility_gate_task(table, policy)
    if not utility_decision.passed:
        raise UtilityBlockedError(
            f"utility gate blocked DP release {release_id}: {utility_decision.summary}",
            utility_decision,
        )
    staged, decision = dp_gate_task(table, policy, release_id)
    outcome = {
        "release_id": release_id,
        "path": None,
        "published": False,
        "gate": decision.to_dict(),
        "metrics": table.metrics,
        "differential_privacy": {"epsilon": table.epsilon, "spends": table.spends},
    }
    try:
        if not decision.passed:
            _attach_summary(policy, release_id, table, decision, "blocked")
            raise GateBlockedError(
                f"gate blocked DP release {release_id}: {'; '.join(decision.reasons)}", decision
            )
        manifest = _manifest(policy, release_id, release_date, ingested, table, staged, decision)
        # Publish and mark the ledger together: if either fails, both are rolled back.
        with transaction():
            path = publish_task(staged, manifest)
            ledger_publish_task(policy, release_id, str(path), table.run_id)
    finally:
        if staged.staging_dir.exists():
            discard(staged)
    _attach_summary(policy, release_id, table, decision, "published", str(path))
    m = decision.measurements
    outcome.update(path=str(path), published=True)
    return Completed(
        message=f"DP gate PASSED: spent epsilon {m['run_epsilon']:g}, "
        f"{m['remaining_epsilon']:g} of {m['budget_epsilon']:g} left; published {path}",
        data=outcome,
    )
