"""The release flow: fingerprint -> ingest -> validate -> input expectations -> rank ->
anonymize -> utility -> verify + gate -> release expectations -> publish.

Nothing is published unless the privacy gate passes on the file as written and the utility gate
passes on the measured utility. A blocked gate or a failure at any stage discards the staging
folder and ends the flow run in a Failed state whose message states the reason; a published
release ends it Completed with the gate's decision as its message. Every run that reaches the
gates leaves a report: ``report.html`` next to the manifest when published,
``<output>/<dataset>/blocked/<release-id>/report.html`` when blocked, and Markdown and table
artifacts on the Prefect run in every case (dry runs included). Stage results are persisted
and keyed by the data and the policy sections each stage reads (see ``tasks/_caching.py``),
so retrying a failed run redoes only what failed.

The ranking stage runs when the policy has a ``ranking`` section (RFKA and tiered releases use
it). A tiered policy computes every tiered release E = 1..n in one run and publishes the tiers
the policy names, each as its own release ``<release-id>-e<E>`` whose manifest states the
columns its k-anonymity covers. A ``differential_privacy`` policy takes the DP branch
(:mod:`privgate.flows.dp_release`): the ε ledger, not k-anonymity, is what its gate verifies.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import pandas as pd
from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed
from prefect.transactions import transaction

from privgate.core import stages
from privgate.core.exceptions import (
    GateBlockedError,
    PolicyError,
    PublishError,
    UtilityBlockedError,
)
from privgate.core.gate import GateDecision
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import RANKED_ALGORITHMS, Algorithm, ReleasePolicy
from privgate.core.publish import StagedRelease, discard, sha256_file
from privgate.core.ranking import Ranking
from privgate.core.report import REPORT_FILE, ReleaseReport, blocked_report_path, build_report
from privgate.flows.parameters import ReleaseParameters
from privgate.flows.policy_overrides import resolve_policy
from privgate.tasks._results import discard_private_results, prepare_private_results
from privgate.tasks.anonymize import anonymize_task, anonymize_tiers_task
from privgate.tasks.expectations import input_expectations_task, release_expectations_task
from privgate.tasks.fingerprint import fingerprint_task
from privgate.tasks.gate import gate_task
from privgate.tasks.ingest import ingest_task
from privgate.tasks.publish import publish_task
from privgate.tasks.rank import rank_task
from privgate.tasks.report import report_task
from privgate.tasks.utility import utility_gate_task, utility_task, utility_token
from privgate.tasks.validate import validate_task

#: The policy sections each cached stage reads (its cache token covers exactly these).
_INGEST_SECTIONS = ("dataset", "input", "columns")
_RANK_SECTIONS = ("dataset", "input", "columns", "ranking")
_ANONYMIZE_SECTIONS = ("dataset", "input", "columns", "privacy", "algorithm", "ranking")


@flow(name="privgate-release", log_prints=True)
def release_flow(parameters: ReleaseParameters) -> dict:
    """Produce one verified release of the table a policy describes.

    Parameters
    ----------
    parameters : ReleaseParameters
        The policy path and run-time overrides (k, suppression limit, ε, release date, dry
        run).

    Returns
    -------
    dict
        Release id, path, whether it was published, the gate's decision and the metrics (a
        tiered run: those of the last published tier, and every tier under ``"tiers"``).
    """
    log = get_run_logger()
    p = parameters
    policy = resolve_policy(p.policy_path, p.k, p.suppression_limit, p.overrides, p.epsilon)
    release_date = p.release_date or datetime.now(UTC).date()
    log.info(prepare_private_results(policy))
    if policy.is_differentially_private:
        from privgate.flows.dp_release import dp_release

        return dp_release(policy, p, release_date)
    hierarchies = stages.load_hierarchies(policy)
    log.info(
        "policy %s: dataset %r, %d quasi-identifiers, k=%d, suppression limit %.2f%%, %s",
        p.policy_path,
        policy.dataset,
        len(policy.quasi_identifiers),
        policy.privacy.k,
        100 * policy.privacy.suppression_limit,
        policy.algorithm.name.value,
    )

    input_sha256 = fingerprint_task(policy)
    ingest_token = stages.cache_token(policy, input_sha256, *_INGEST_SECTIONS)
    ingested = ingest_task(policy, input_sha256, ingest_token)
    validated = validate_task(ingested.frame, policy, hierarchies, ingest_token)
    release_id = stages.release_id_for(policy, input_sha256, release_date)
    # The Great Expectations input suite: the reviewable contract (pandera already coerced).
    input_expectations = input_expectations_task(
        validated, policy, hierarchies, run_name=release_id
    )
    ranking = None
    if policy.ranking is not None:
        rank_token = stages.cache_token(policy, input_sha256, *_RANK_SECTIONS)
        ranking = rank_task(validated, policy, rank_token)
    searched = policy
    if policy.algorithm.name is Algorithm.TIERED:
        # Which tiers are published does not change the tables: keep the computed tiers.
        searched = policy.with_overrides(
            **{"algorithm.release_tiers": None, "algorithm.accept_narrower_coverage": None}
        )
    sections = _ANONYMIZE_SECTIONS
    if policy.algorithm.name not in RANKED_ALGORITHMS:  # the search does not read the ranking
        sections = tuple(section for section in sections if section != "ranking")
    anonymize_token = stages.cache_token(searched, input_sha256, *sections)
    # The row order of the release depends only on what the search depends on, so a change to
    # another policy section (a utility threshold) keeps the cached search valid.
    shuffle_seed = int(anonymize_token[:12], 16)
    context = _RunContext(
        policy, p, release_date, hierarchies, ingested, validated, input_expectations, ranking
    )
    if policy.algorithm.name is not Algorithm.TIERED:
        table = anonymize_task(
            validated, policy, hierarchies, shuffle_seed, anonymize_token, ranking=ranking
        )
        verified = _verify(context, table, release_id, anonymize_token, shuffle_seed)
        return _publish([verified], p.dry_run, policy)[0]

    found = sorted(set(ranking.tiers.values()))
    wanted = policy.algorithm.release_tiers or [max(found)]
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise PolicyError(
            f"algorithm.release_tiers: tiers {missing} do not exist; the ranking found tiers "
            f"{found} (fewer distinct importance scores than ranking.tiers)"
        )
    tables = anonymize_tiers_task(
        validated, policy, hierarchies, shuffle_seed, anonymize_token, ranking=ranking
    )
    by_tier = {t.tier: t for t in tables}
    # Every requested tier is verified before any is published: all of them, or none.
    verified: list[_Verified] = []
    try:
        for tier in sorted(wanted):
            verified.append(
                _verify(
                    context,
                    by_tier[tier],
                    f"{release_id}-e{tier}",
                    f"{anonymize_token}-e{tier}",
                    shuffle_seed,
                    covered=ranking.columns_in_tiers(tier),
                )
            )
    except BaseException:
        for item in verified:
            discard(item.staged)
        raise
    states = _publish(verified, p.dry_run, policy)
    outcomes = [state.data for state in states]
    summary = [
        {"tier": t.tier, "covers": t.covered, "loss": t.metrics["loss"]}
        for t in sorted(tables, key=lambda t: t.tier)
    ]
    outcome = dict(outcomes[-1], tiers=summary, releases=outcomes)
    paths = ", ".join(str(o["path"] or o["release_id"]) for o in outcomes)
    verb = "verified (dry run)" if p.dry_run else "published"
    return Completed(message=f"{len(outcomes)} tiered releases {verb}: {paths}", data=outcome)


@dataclass
class _RunContext:
    """What every release of one run shares (a tiered run makes several)."""

    policy: ReleasePolicy
    parameters: ReleaseParameters
    release_date: date
    hierarchies: dict[str, Hierarchy]
    ingested: stages.IngestedTable
    validated: pd.DataFrame
    input_expectations: dict | None = None
    ranking: Ranking | None = None


@dataclass
class _Verified:
    """A release written to staging and verified, with its manifest and report, not yet
    published."""

    staged: StagedRelease
    manifest: dict
    report: ReleaseReport
    decision: GateDecision
    outcome: dict


def _verify(
    ctx: _RunContext,
    table: stages.AnonymizedTable,
    release_id: str,
    anonymize_token: str,
    shuffle_seed: int,
    covered: list[str] | None = None,
) -> _Verified:
    """Measure, gate and report one release table; raise if a gate blocks it.

    ``covered`` (a tiered release) is the coverage the gate verifies, derived from the ranking
    (tiers 1..E), not taken from the algorithm's own account.
    """
    policy, p, hierarchies, ingested = ctx.policy, ctx.parameters, ctx.hierarchies, ctx.ingested
    utility = utility_task(
        ctx.validated,
        table,
        policy,
        hierarchies,
        shuffle_seed,
        utility_token(anonymize_token, policy),
    )
    utility_decision = utility_gate_task(utility, policy)
    staged, decision = gate_task(table, policy, release_id, ingested.rows, covered)
    outcome = {
        "release_id": release_id,
        "path": None,
        "published": False,
        "gate": decision.to_dict(),
        "utility_gate": utility_decision.to_dict(),
        "metrics": table.metrics,
    }
    try:
        passed = decision.passed and utility_decision.passed
        run = {
            "run_id": str(flow_run.get_id() or ""),
            "flow_run": flow_run.get_name(),
            "release_date": ctx.release_date.isoformat(),
            "policy": p.policy_path,
            "policy_sha256": policy.fingerprint(),
            "input": {"path": ingested.path, "sha256": ingested.sha256, "rows": ingested.rows},
            "privgate": stages.package_version(),
            "seconds": {"anonymize": table.metrics["seconds"], "utility": utility.seconds},
        }
        if ctx.ranking is not None:
            run["ranking"] = ctx.ranking.to_dict()
        if table.tier is not None:
            run["tier"] = {"tier": table.tier, "covers": table.covered}
        report = build_report(
            policy=policy,
            release_id=release_id,
            original=ctx.validated,
            table=table,
            privacy_decision=decision,
            status="dry-run" if p.dry_run else ("published" if passed else "blocked"),
            utility=utility,
            utility_decision=utility_decision,
            hierarchies=hierarchies,
            run=run,
        )
        if not passed:
            blocked = blocked_report_path(policy.output.directory, policy.dataset, release_id)
            report_task(report, None if p.dry_run else blocked)
        if not decision.passed:
            raise GateBlockedError(
                f"gate blocked release {release_id}: {decision.summary}", decision
            )
        if not utility_decision.passed:
            raise UtilityBlockedError(
                f"utility gate blocked release {release_id}: {utility_decision.summary}",
                utility_decision,
            )
        manifest = stages.build_manifest(
            policy=policy,
            release_id=release_id,
            release_date=ctx.release_date,
            ingested=ingested,
            table=table,
            staged=staged,
            decision=decision,
            run_id=str(flow_run.get_id() or ""),
        )
        manifest["utility"] = utility.to_dict()
        manifest["utility_gate"] = utility_decision.to_dict()
        if ctx.ranking is not None:
            manifest["ranking"] = ctx.ranking.to_dict()
        # The release suite on the staged file (raises ReleaseContractError, exit 3, if it
        # fails); its Data Docs and JSON report are written into the staging folder, so they
        # are published with the release in the same rename.
        manifest["expectations"] = release_expectations_task(
            staged.release_file,
            policy,
            hierarchies,
            manifest,
            ctx.input_expectations,
            release_dir=None if p.dry_run else staged.staging_dir,
        )
        if not p.dry_run:
            # Written into the staging folder: published atomically with the release, or not.
            written = report_task(
                report,
                staged.staging_dir / REPORT_FILE,
                location=str(staged.final_dir / REPORT_FILE),
            )
            manifest["report"] = {"file": REPORT_FILE, "sha256": sha256_file(written)}
    except OSError as exc:  # a full disk while the Data Docs or the report are written
        discard(staged)
        where = staged.staging_dir.parent
        raise PublishError(f"cannot write the release into {where}: {exc}") from None
    except BaseException:
        discard(staged)
        raise
    return _Verified(staged, manifest, report, decision, outcome)


def _publish(verified: list[_Verified], dry_run: bool, policy: ReleasePolicy) -> list:
    """Publish verified releases, all in one transaction: if one rename fails, those already
    renamed are taken out of place again (``tasks/publish.py``), so a run publishes all of its
    releases or none. A dry run discards them instead."""
    log = get_run_logger()
    states = []
    try:
        if dry_run:
            for item in verified:
                report_task(item.report, None)
                log.info("dry run: release %s verified, not published", item.staged.release_id)
                states.append(
                    Completed(
                        message=f"dry run, gate {item.decision.summary}; nothing published",
                        data=item.outcome,
                    )
                )
            return states
        with transaction():
            paths = [publish_task(item.staged, item.manifest) for item in verified]
    finally:
        for item in verified:
            if item.staged.staging_dir.exists():
                discard(item.staged)
    if verified:
        removed = discard_private_results(policy)
        if removed:
            log.info("published: %s", removed)
    for item, path in zip(verified, paths, strict=True):
        log.info("released %s: %s", path, item.decision.summary)
        item.outcome.update(path=str(path), published=True)
        states.append(
            Completed(message=f"gate {item.decision.summary}; published {path}", data=item.outcome)
        )
    return states
