"""The release flow: ingest -> validate -> rank -> anonymize (or DP) -> utility -> gate -> publish.

Nothing is published unless the privacy gate passes on the file as written and the utility gate
passes on the measured utility. A blocked gate or a failure at any stage discards the staging
folder and ends the flow run in a Failed state whose message states the reason; a published
release ends it Completed with the gate's decision as its message. Every run that reaches the
gates leaves a report: ``report.html`` next to the manifest when published,
``<output>/<dataset>/blocked/<release-id>/report.html`` when blocked, and Markdown and table
artifacts on the Prefect run in every case (dry runs included). Stage results are persisted
and keyed by the data and the policy sections each stage reads
(:mod:`privgate.core.cache_keys`), so retrying a failed run redoes only what failed.

The ranking stage runs when the policy has a ``ranking`` section. A run may make several
releases (a tiered policy: one per tier, each ``<release-id>-e<E>``, whose manifest states the
columns its k-anonymity covers); those the policy publishes are verified first and published
together or not at all. A ``differential_privacy`` policy shares the opening (fingerprint,
ingest) and then takes the DP branch (:mod:`privgate.flows.dp_release`): the ε ledger, not
k-anonymity, is what its gate verifies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

import pandas as pd
from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State
from prefect.transactions import transaction

from privgate.core.anonymize import SearchSetup, select_releases
from privgate.core.attacks import ControlSplit, split_control
from privgate.core.cache_keys import StageTokens, stage_tokens, utility_token
from privgate.core.engine_choice import choose_engine
from privgate.core.exceptions import (
    GateBlockedError,
    PrivgateError,
    PublishError,
    UtilityBlockedError,
    blocked_refusal,
)
from privgate.core.gate import GateDecision
from privgate.core.history import CrossReleaseState, HistoryEntry, searched_policy
from privgate.core.manifest import build_manifest, release_id_for, run_facts
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import (
    StagedRelease,
    discard,
    published_by,
    published_by_another,
    sha256_file,
)
from privgate.core.ranking import Ranking
from privgate.core.report import REPORT_FILE, ReleaseReport, blocked_report_path, build_report
from privgate.core.stages import AnonymizedTable, IngestedTable
from privgate.flows.parameters import ReleaseParameters
from privgate.tasks.anonymize import anonymize_task
from privgate.tasks.expectations import input_expectations_task, release_expectations_task
from privgate.tasks.fingerprint import fingerprint_task
from privgate.tasks.gate import gate_task
from privgate.tasks.history import (
    history_past_task,
    history_protect_task,
    history_record_task,
    history_row_keys_task,
)
from privgate.tasks.ingest import ingest_task
from privgate.tasks.publish import publish_task
from privgate.tasks.rank import rank_task
from privgate.tasks.report import report_task
from privgate.tasks.results import discard_private_results, prepare_private_results
from privgate.tasks.utility import utility_gate_task, utility_task
from privgate.tasks.validate import validate_task
from privgate.validations.schema import input_warnings


@flow(name="privgate-release", log_prints=True)
def release_flow(parameters: ReleaseParameters) -> State:
    """Produce the verified releases of the table a policy describes.

    Returns a Completed state whose data (what a caller of the flow receives) holds the
    release id, path, whether it was published (``already_published_by``: the run that did,
    when a duplicated or retried run finds its release in place), the gate's decision and the
    metrics; a run that makes several releases adds ``releases`` (each of them) and ``tiers``.

    A refusal (a blocking gate, bad input) ends the run Failed with the decision as the first
    words of its state message, which is what the UI shows on the run (Prefect's own message
    would start with "Flow run encountered an exception"); a caller of the flow gets the
    refusal raised.
    """
    try:
        return _release(parameters)
    except PrivgateError as exc:
        return Failed(message=state_message(exc), data=exc)


def state_message(exc: PrivgateError) -> str:
    """A refused run's state message: the decision first, then where its report is."""
    text = str(exc) if exc.exit_code == 3 else f"error: {exc}"
    if exc.report_path:
        text += f"; report: {exc.report_path}"
    return text


def _release(parameters: ReleaseParameters) -> State:
    policy = parameters.policy()
    release_date = parameters.release_date or datetime.now(UTC).date()
    get_run_logger().info(prepare_private_results(policy))
    if parameters.history_note is not None:
        get_run_logger().info("release history: %s", parameters.history_note)
    choice = choose_engine(policy, parameters.engine)  # a table past memory: partitioned
    get_run_logger().info("engine: %s", choice.reason)
    if choice.engine == "partitioned":
        from privgate.flows.partitioned import partitioned_release_flow

        outcome = partitioned_release_flow(parameters, choice.facts())  # a subflow
        return Completed(message=outcome["message"], data=outcome)
    opened = _open(policy)
    if policy.is_differentially_private:
        from privgate.flows.dp_release import dp_release

        return dp_release(policy, parameters, release_date, opened.ingested)
    setup = SearchSetup.from_policy(policy)
    release_id = release_id_for(policy, opened.ingested.sha256, release_date)
    run = _Run(policy, parameters, release_date, setup, opened.ingested, opened.tokens, release_id)
    validated = validate_task(
        opened.ingested.frame, policy, setup.hierarchies, opened.tokens.ingest
    )
    warnings = input_warnings(validated, policy)
    for warning in warnings:  # valid, but a data owner must see it (and the report says it)
        get_run_logger().warning("validate: %s", warning)
    run = replace(run, input_warnings=tuple(warnings))
    input_suite = input_expectations_task(validated, policy, setup.hierarchies, run_name=release_id)
    if "sample" in input_suite:  # a large input: the report says which rows the suites saw
        run = replace(run, input_warnings=(*run.input_warnings, input_suite["sample"]["note"]))
    if policy.attacks is not None:  # the attacks' control records never reach the release
        run = replace(run, split=split_control(validated, policy))
        validated = run.split.kept
    ranking = rank_task(validated, policy, opened.tokens.rank) if policy.ranking else None
    searched = setup  # with a release history the search asks for larger classes (a margin)
    if policy.history_key is not None:
        searched = SearchSetup.from_policy(searched_policy(policy), setup.hierarchies)
    tables = anonymize_task(validated, policy, searched, opened.tokens.anonymize, ranking=ranking)
    if policy.history_key is not None:  # who the earlier releases would expose leaves first
        run = replace(run, past=history_past_task(policy, release_id))
        tables = [history_protect_task(t, policy, run.past, release_id) for t in tables]
    verified: list[_Verified] = []
    try:  # every release the policy publishes is verified before any is published
        for table in select_releases(tables, setup):
            verified.append(_verify(run, validated, table, input_suite, ranking))
    except BaseException:
        for item in verified:
            discard(item.staged)
        raise
    return _publish(verified, parameters.dry_run, tables, policy)


@dataclass(frozen=True)
class _Opened:
    """The opening every branch shares: the input's fingerprint, the stage tokens, the table."""

    tokens: StageTokens
    ingested: IngestedTable


def _open(policy: ReleasePolicy) -> _Opened:
    """fingerprint -> ingest (both tasks cached and retried as I/O)."""
    get_run_logger().info(
        "policy: dataset %r, %d quasi-identifiers, %s",
        policy.dataset,
        len(policy.quasi_identifiers),
        "differentially private" if policy.is_differentially_private else policy.algorithm.name,
    )
    input_sha256 = fingerprint_task(policy)
    tokens = stage_tokens(policy, input_sha256)
    return _Opened(tokens, ingest_task(policy, input_sha256, tokens.ingest))


@dataclass(frozen=True)
class _Run:
    """What every release of one run shares."""

    policy: ReleasePolicy
    parameters: ReleaseParameters
    release_date: date
    setup: SearchSetup
    ingested: IngestedTable
    tokens: StageTokens
    release_id: str
    #: The attacks' held-out control records and those the releases are made from.
    split: ControlSplit | None = None
    #: What validation found about a valid input (an entirely missing quasi-identifier).
    input_warnings: tuple[str, ...] = ()
    #: The earlier releases of the dataset (a policy with ``history.check``), else None.
    past: CrossReleaseState | None = None


@dataclass(frozen=True)
class _Verified:
    """A release written to staging and verified, with its manifest and report; not yet
    published."""

    staged: StagedRelease
    manifest: dict
    report: ReleaseReport
    decision: GateDecision
    outcome: dict
    #: What publishing records in the release history (None without a history check).
    history: HistoryEntry | None = None


def _verify(
    run: _Run,
    validated: pd.DataFrame,
    table: AnonymizedTable,
    input_suite: dict,
    ranking: Ranking | None,
) -> _Verified:
    """utility -> gate on the staged file -> report -> manifest -> release expectations.

    Raises :class:`GateBlockedError` or :class:`UtilityBlockedError` (after writing the
    blocked report) when a gate blocks the release; the staging folder is then discarded.
    """
    policy, hierarchies, dry_run = run.policy, run.setup.hierarchies, run.parameters.dry_run
    release_id = table.release_id(run.release_id)
    token = utility_token(table.release_id(run.tokens.anonymize), policy)
    utility = utility_task(validated, table, policy, hierarchies, token)
    # A blocking gate fails its own task (red in the UI); the run still writes the report with
    # both decisions before the refusal is raised again.
    try:
        utility_decision = utility_gate_task(utility, policy, release_id)
    except UtilityBlockedError as exc:
        utility_decision = exc.decision
    staged: StagedRelease | None = None
    entry: HistoryEntry | None = None
    try:
        input_rows = run.ingested.rows if run.split is None else len(run.split.kept)
        staged, decision, entry = gate_task(
            table, run.setup, policy, release_id, input_rows, run.split, run.past
        )
    except GateBlockedError as exc:
        decision = exc.decision
    run_id = str(flow_run.get_id() or "")
    try:
        passed = decision.passed and utility_decision.passed
        report = build_report(
            policy=policy,
            release_id=release_id,
            original=validated,
            table=table,
            privacy_decision=decision,
            status="dry-run" if dry_run else ("published" if passed else "blocked"),
            utility=utility,
            utility_decision=utility_decision,
            hierarchies=hierarchies,
            setup=run.setup,
            input_warnings=run.input_warnings,
            run=run_facts(
                policy=policy,
                policy_path=run.parameters.policy_path,
                release_date=run.release_date,
                ingested=run.ingested,
                table=table,
                utility=utility,
                ranking=ranking,
                run_id=run_id,
                run_name=flow_run.get_name(),
            ),
        )
        if not passed:
            blocked = blocked_report_path(policy.output.directory, policy.dataset, release_id)
            report_task(report, None if dry_run else blocked)
            error = blocked_refusal(release_id, decision, utility_decision)
            error.report_path = None if dry_run else str(blocked)
            raise error
        assert staged is not None  # both gates passed, so the gate staged the release
        manifest = build_manifest(
            policy=policy,
            release_id=release_id,
            release_date=run.release_date,
            ingested=run.ingested,
            table=table,
            staged=staged,
            decision=decision,
            utility=utility,
            utility_decision=utility_decision,
            ranking=ranking,
            run_id=run_id,
            input_warnings=run.input_warnings,
        )
        # The release suite on the staged file (raises ReleaseContractError, exit 3, if it
        # fails); its Data Docs and JSON report go into the staging folder, so they are
        # published with the release in the same rename.
        manifest["expectations"] = release_expectations_task(
            staged.release_file,
            policy,
            hierarchies,
            manifest,
            input_suite,
            release_dir=None if dry_run else staged.staging_dir,
            data_docs=run.parameters.data_docs,
        )
        if not dry_run:  # into the staging folder: published atomically with the release
            written = report_task(
                report,
                staged.staging_dir / REPORT_FILE,
                location=str(staged.final_dir / REPORT_FILE),
            )
            manifest["report"] = {"file": REPORT_FILE, "sha256": sha256_file(written)}
    except OSError as exc:  # a full disk while the Data Docs or the report are written
        if staged is not None:
            discard(staged)
        where = policy.output.directory / policy.dataset
        raise PublishError(f"cannot write the release into {where}: {exc}") from None
    except BaseException:
        if staged is not None:
            discard(staged)
        raise
    outcome = {
        "release_id": release_id,
        "path": None,
        "published": False,
        "gate": decision.to_dict(),
        "utility_gate": utility_decision.to_dict(),
        "metrics": table.metrics,
    }
    return _Verified(staged, manifest, report, decision, outcome, entry)


def _publish(
    verified: list[_Verified], dry_run: bool, tables: list[AnonymizedTable], policy: ReleasePolicy
) -> State:
    """Publish the verified releases in one transaction: if one rename fails, those already
    renamed are taken out of place again (``tasks/publish.py``), so a run publishes all of its
    releases or none. A dry run discards them instead."""
    log = get_run_logger()
    try:
        if dry_run:
            for item in verified:
                report_task(item.report, None)
                log.info("dry run: release %s verified, not published", item.staged.release_id)
        else:
            earlier = [published_by(item.staged.final_dir) for item in verified]
            for item in verified:  # before the rename: a release out is always recordable
                if item.history is not None:
                    history_row_keys_task(policy, item.history, str(item.staged.release_file))
            with transaction():  # published and recorded in the history, or neither
                paths = [publish_task(item.staged, item.manifest) for item in verified]
                for item, path in zip(verified, paths, strict=True):
                    if item.history is not None:
                        history_record_task(policy, item.history, str(path))
            for item, path, run in zip(verified, paths, earlier, strict=True):
                run = run or published_by_another(path, item.manifest.get("run_id"))
                if run is None:
                    log.info("released %s: %s", path, item.decision.summary)
                else:  # a duplicated or retried run: same release id, nothing new written
                    log.info("already published by run %s: %s", run, path)
                item.outcome.update(path=str(path), published=True, already_published_by=run)
    finally:
        for item in verified:
            if item.staged.staging_dir.exists():
                discard(item.staged)
    if not dry_run:  # published: the cached private stage results are not needed any more
        removed = discard_private_results(policy)
        if removed:
            log.info("published: %s", removed)
    outcomes = [item.outcome for item in verified]
    outcome = dict(outcomes[-1])
    tiers = [
        {"tier": t.tier, "covers": t.covered, "loss": t.metrics["loss"]}
        for t in tables
        if t.tier is not None
    ]
    if tiers:
        outcome.update(tiers=tiers, releases=outcomes)
    gate = verified[-1].decision.summary
    if dry_run:
        message = f"dry run, gate {gate}; nothing published"
    elif len(outcomes) == 1 and outcome.get("already_published_by"):
        message = (
            f"gate {gate}; already published by run {outcome['already_published_by']}: "
            f"{outcome['path']}"
        )
    elif len(outcomes) == 1:
        message = f"gate {gate}; published {outcome['path']}"
    else:
        message = f"{len(outcomes)} releases published: " + ", ".join(o["path"] for o in outcomes)
    return Completed(message=message, data=outcome)
