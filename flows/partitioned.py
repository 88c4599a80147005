"""The release flow for tables larger than memory: what ``privgate run`` takes above a size.

fingerprint -> frequency set -> validate (a seeded sample) -> search -> loss + utility gate
-> generalize + write (Parquet parts) -> verify + gate (every written row) -> report,
manifest -> atomic publish.

Why a flow of its own: the in-memory release flow (:mod:`privgate.flows.release`) holds the
table as pandas frames from ingest on (10M rows of Adult passed 5 GiB); this one holds the
distinct tuples, never the rows (:mod:`privgate.core.scale`, on dask's threaded scheduler,
one partition per thread). It publishes into the same place with the same manifest fields
(``release_id``, ``input``, ``output``, ``policy``, ``transformation``, ``metrics``, ``gate``,
``utility``, ``utility_gate``, ``expectations``, ``flags``) plus ``engine`` (the path and
why). What it does differently, in the open: the release is a folder of Parquet parts
(``release/``), the input suites run on the seeded sample the in-memory flow uses above
``PRIVGATE_EXPECTATIONS_MAX_ROWS`` (its size and seed in the manifest and report), the
utility is the information loss and precision counted on the frequency set (no classifier,
clustering or total variation: :func:`privgate.core.engine_choice.partitioned_blockers` refuses
policies that ask for them), and the release suite of Great Expectations does not run (the
gate re-reads every written row). The gate's verification reads the written parts back,
independently of the search's result.
"""

from __future__ import annotations

import platform
import time
from datetime import UTC, date, datetime

import dask
import numpy as np
import pandas as pd
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State

from privgate.core.anonymize import SearchSetup
from privgate.core.encoding import FrequencySet
from privgate.core.engine_choice import EngineChoice, partitioned_blockers
from privgate.core.exceptions import (
    GateBlockedError,
    PolicyError,
    PrivgateError,
    UtilityBlockedError,
)
from privgate.core.gate import GateDecision
from privgate.core.manifest import package_version, release_id_for
from privgate.core.policy import ReleasePolicy
from privgate.core.publish import StagedRelease, discard, publish
from privgate.core.report import REPORT_FILE, blocked_report_path
from privgate.core.scale import (
    GeneralizationPlan,
    frequency_stage,
    input_fingerprint,
    partitioned_report,
    parts_fingerprint,
    read_rows,
    reference_stage,
    release_loss,
    scale_setup,
    search_stage,
    stage_folder,
    verify_stage,
    write_stage,
    write_text_synced,
)
from privgate.core.utility import UtilityDecision, UtilityReport, check_utility
from privgate.flows.parameters import ReleaseParameters
from privgate.tasks.expectations import input_expectations_task
from privgate.validations.expectations import ExpectationSample, expectation_sample, report
from privgate.validations.schema import input_warnings, validate_distinct_values, validate_input

__all__ = ["partitioned_release_flow"]

#: Bytes of input per dask partition (one partition per thread at a time).
BLOCKSIZE = "64MB"


@task(name="fingerprint", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[1, 5])
def fingerprint_task(policy: ReleasePolicy) -> str:
    """sha256 of the input file (or of a folder of parts)."""
    return input_fingerprint(policy.input.path)


@task(name="frequency-set", cache_policy=NO_CACHE)
def frequency_task(policy: ReleasePolicy, setup: SearchSetup) -> tuple[FrequencySet, dict | None]:
    """The input's frequency set and the models' reference distribution, partition by
    partition (every row read, none held)."""
    freq = frequency_stage(policy, setup, BLOCKSIZE)
    reference = reference_stage(policy, setup, BLOCKSIZE)
    get_run_logger().info(
        "frequency set: %d rows, %d distinct tuples", freq.table.n_rows, len(freq.counts)
    )
    return freq, reference


@task(name="validate-sample", cache_policy=NO_CACHE)
def validate_sample_task(
    policy: ReleasePolicy, setup: SearchSetup, n_rows: int
) -> tuple[ExpectationSample | None, pd.DataFrame, list[str]]:
    """The schema (pandera) on the rows the input suite runs on, read in one streamed pass:
    a seeded sample above ``PRIVGATE_EXPECTATIONS_MAX_ROWS`` rows, else every row. Returns
    the sample (or ``None``), the validated rows and the validation's warnings; raises on an
    invalid input."""
    sample = expectation_sample(n_rows)
    positions = np.arange(n_rows) if sample is None else sample.rows
    frame = read_rows(policy.input, list(policy.columns), positions)
    validated = validate_input(frame, policy, setup.hierarchies)
    warnings = input_warnings(validated, policy)
    get_run_logger().info(
        "validate: %d of %d rows match the policy schema%s",
        len(validated),
        n_rows,
        "" if sample is None else f" ({sample.describe('input')})",
    )
    return sample, validated, warnings


@task(name="search", cache_policy=NO_CACHE)
def search_task(freq: FrequencySet, setup: SearchSetup) -> tuple[GeneralizationPlan, dict, dict]:
    """The lattice search on the frequency set, the plan, and the loss it implies."""
    started = time.perf_counter()
    plan, result = search_stage(freq, setup)
    loss = release_loss(freq, plan, setup)
    get_run_logger().info(
        "search: %s chose %s; %d records suppressed, loss %.4f",
        result.algorithm,
        plan.levels,
        plan.suppressed,
        loss["total"],
    )
    facts = {"algorithm": result.algorithm, **dict(result.details)}
    facts["seconds"] = round(time.perf_counter() - started, 4)
    return plan, facts, loss


@task(name="generalize-write", cache_policy=NO_CACHE)
def write_task(
    plan: GeneralizationPlan, policy: ReleasePolicy, setup: SearchSetup, staged: StagedRelease
) -> None:
    write_stage(plan, policy, setup, staged.release_file, BLOCKSIZE)


@task(name="verify-and-gate", cache_policy=NO_CACHE)
def verify_task(
    staged: StagedRelease, setup: SearchSetup, input_rows: int, reference: dict | None
) -> GateDecision:
    """The gate on the written parts, every row read back (not the search's result)."""
    decision = verify_stage(staged.release_file, setup, input_rows, reference)
    log = get_run_logger()
    (log.info if decision.passed else log.error)("gate: %s", decision.summary)
    return decision


@flow(name="privgate-partitioned-release", log_prints=True)
def partitioned_release_flow(parameters: ReleaseParameters, engine: dict | None = None) -> State:
    """One release of the policy's table on the partitioned path (see the module).

    ``engine``: why this path was taken (:class:`~privgate.core.engine_choice.EngineChoice`
    as a dict), recorded in the manifest and the report. Returns a Completed state whose data
    has the release flow's outcome keys (``release_id``, ``path``, ``published``, ``gate``,
    ``utility_gate``, ``metrics``); a refusal ends the run Failed, as the release flow's does.
    """
    try:
        return _release(parameters, engine or {"path": "partitioned", "reason": "called directly"})
    except PrivgateError as exc:  # the decision first, as the release flow's state says it
        text = str(exc) if exc.exit_code == 3 else f"error: {exc}"
        return Failed(message=text, data=exc)


def engine_facts(choice: EngineChoice) -> dict:
    """The manifest's ``engine`` section."""
    estimate = choice.estimate
    return {
        "path": choice.engine,
        "reason": choice.reason,
        "threshold_rows": choice.threshold,
        "estimated_rows": None if estimate is None else estimate.rows,
        "estimate": None if estimate is None else estimate.method,
    }


def _release(parameters: ReleaseParameters, engine: dict) -> State:
    log = get_run_logger()
    policy = parameters.policy()
    blockers = partitioned_blockers(policy)
    if blockers:
        raise PolicyError(f"the partitioned path cannot honour {', '.join(blockers)}")
    setup = scale_setup(policy)
    release_date = parameters.release_date or datetime.now(UTC).date()
    with dask.config.set(scheduler="threads"):
        sha256 = fingerprint_task(policy)
        release_id = release_id_for(policy, sha256, release_date)
        freq, reference = frequency_task(policy, setup)
        n_rows = freq.table.n_rows
        sample, validated, warnings = validate_sample_task(policy, setup, n_rows)
        # The sensitive columns the models count are in the frequency set, every row of them:
        # a bad value there (outside the sample) would count as one more sensitive value.
        validate_distinct_values(
            {name: freq.table.sensitive_values[name] for name in setup.sensitive},
            policy,
            where=", among the sensitive values of every row",
        )
        for warning in warnings:
            log.warning("validate: %s", warning)
        suite = input_expectations_task(
            validated, policy, setup.hierarchies, run_name=release_id, sampled=sample
        )
        del validated
        plan, facts, loss = search_task(freq, setup)
        utility = UtilityReport(
            loss={k: v for k, v in loss.items() if k != "precision"},
            metrics={"precision": loss["precision"]},
            distribution={},
            settings={"measured": "loss and precision on the frequency set (partitioned path)"},
        )
        utility_decision = check_utility(
            utility, policy.utility.thresholds if policy.utility else None
        )
        staged = stage_folder(
            policy.output.directory, policy.dataset, release_id, policy.output.mode
        )
        try:
            write_task(plan, policy, setup, staged)
            decision = verify_task(staged, setup, n_rows, reference)
            metrics = {
                "algorithm": facts["algorithm"],
                "input_rows": n_rows,
                "precision": loss["precision"],
                "release_rows": n_rows - plan.suppressed,
                "suppressed": plan.suppressed,
                "loss": loss["total"],
                "granularity": loss["granularity"],
                "loss_per_attribute": loss["per_attribute"],
                **{f"search_{k}": v for k, v in facts.items() if k != "algorithm"},
            }
            expectations = report([suite])
            manifest = _manifest(
                policy, setup, release_id, release_date, sha256, n_rows, staged, plan,
                metrics, decision, utility, utility_decision, warnings, engine,
            )  # fmt: skip
            manifest["expectations"] = {
                "input": {
                    key: expectations["input"][key]
                    for key in ("suite", "success", "evaluated", "failed", "sample")
                    if key in expectations["input"]
                },
                "release": "not run on the partitioned path (the gate re-reads every row)",
            }
            passed = decision.passed and utility_decision.passed
            status = "dry-run" if parameters.dry_run else ("published" if passed else "blocked")
            if not passed:  # a blocked run leaves its report, as the release flow's does
                raise _blocked(policy, release_id, decision, utility_decision, manifest, status)
            written = write_text_synced(
                staged.staging_dir / REPORT_FILE, partitioned_report(manifest, status)
            )
            manifest["report"] = {"file": REPORT_FILE, "sha256": input_fingerprint(written)}
            if parameters.dry_run:
                discard(staged)
                outcome_path = None
            else:
                outcome_path = str(publish(staged, manifest))
                log.info("released %s: %s", outcome_path, decision.summary)
        except BaseException:
            discard(staged)
            raise
    outcome = {
        "release_id": release_id,
        "path": outcome_path,
        "published": outcome_path is not None,
        "gate": decision.to_dict(),
        "utility_gate": utility_decision.to_dict(),
        "metrics": metrics,
        "levels": dict(plan.levels),
        "engine": engine,
        "expectations": manifest["expectations"],
    }
    outcome["message"] = (
        f"dry run, gate {decision.summary}; nothing published"
        if parameters.dry_run
        else f"gate {decision.summary}; published {outcome_path}"
    )
    return Completed(message=outcome["message"], data=outcome)


def _blocked(
    policy: ReleasePolicy,
    release_id: str,
    decision: GateDecision,
    utility_decision: UtilityDecision,
    manifest: dict,
    status: str,
) -> PrivgateError:
    """The refusal of a blocked release, its report written to
    ``<output>/<dataset>/blocked/<release-id>/report.html`` (not for a dry run)."""
    error: GateBlockedError | UtilityBlockedError
    if not decision.passed:
        error = GateBlockedError(f"gate blocked release {release_id}: {decision.summary}", decision)
    else:
        error = UtilityBlockedError(
            f"utility gate blocked release {release_id}: {utility_decision.summary}",
            utility_decision,
        )
    if status != "dry-run":
        path = blocked_report_path(policy.output.directory, policy.dataset, release_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_synced(path, partitioned_report(manifest, "blocked"))
        error.report_path = str(path)
    return error


def _manifest(
    policy: ReleasePolicy,
    setup: SearchSetup,
    release_id: str,
    release_date: date,
    sha256: str,
    n_rows: int,
    staged: StagedRelease,
    plan: GeneralizationPlan,
    metrics: dict,
    decision: GateDecision,
    utility: UtilityReport,
    utility_decision: UtilityDecision,
    warnings: list[str],
    engine: dict,
) -> dict:
    """The release flow's manifest fields for a release written as Parquet parts."""
    parts = sorted(p.name for p in staged.release_file.glob("*.parquet"))
    manifest = {
        "release_id": release_id,
        "dataset": policy.dataset,
        "release_date": release_date.isoformat(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "privgate_version": package_version(),
        "python": platform.python_version(),
        "run_id": str(flow_run.get_id() or ""),
        "engine": engine,
        "input": {
            "path": str(policy.input.path),
            "sha256": sha256,
            "rows": n_rows,
            "warnings": list(warnings),
        },
        "output": {
            "file": staged.release_file.name,
            "format": "parquet parts",
            "parts": parts,
            "sha256": parts_fingerprint(staged.release_file),
            "rows": n_rows - plan.suppressed,
            "columns": list(plan.released_columns),
        },
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.fingerprint(),
        "quasi_identifiers": policy.quasi_identifiers,
        "k_anonymity_covers": policy.quasi_identifiers,
        "tier": None,
        "transformation": dict(plan.levels),
        "recoding": {
            q: f"level {plan.levels[q]}/{setup.hierarchies[q].height}"
            for q in plan.quasi_identifiers
        },
        "metrics": metrics,
        "gate": decision.to_dict(),
        "utility": utility.to_dict(),
        "utility_gate": utility_decision.to_dict(),
    }
    manifest["flags"] = [*manifest["gate"]["flags"], *manifest["utility_gate"].get("flags", [])]
    return manifest
