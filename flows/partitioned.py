"""The release flow for tables larger than memory: what ``privgate run`` takes above a size.

fingerprint -> frequency set -> validate (a seeded sample) -> search -> loss + utility gate
-> generalize + write (Parquet parts) -> fingerprint again (the passes read one file: a file
rewritten meanwhile is refused) -> verify + gate (every written row) -> report, manifest ->
atomic publish.

Why a flow of its own: the in-memory release flow (:mod:`privgate.flows.release`) holds the
table as pandas frames from ingest on (10M rows of Adult passed 5 GiB); this one holds the
distinct tuples, never the rows (:mod:`privgate.core.scale`, on dask's threaded scheduler).
It publishes into the same place with the manifest of the same builder
(:func:`privgate.core.manifest.partitioned_manifest`) plus ``engine`` (the path and why).
What it does differently, in the open: the release is a folder of Parquet parts
(``release/``), the input suites run on the seeded sample the in-memory flow uses above
``PRIVGATE_EXPECTATIONS_MAX_ROWS`` (its size and seed in the manifest and report), the
utility is the information loss and precision counted on the frequency set
(:func:`privgate.core.scale.loss_utility`; policies asking for more are refused by
:func:`privgate.core.engine_choice.partitioned_blockers`), and the release suite of Great
Expectations does not run (the gate re-reads every written row, independently of the search).

A retried run takes the frequency set, the validation and the search ``Cached``, writes the
parts again and always runs the gate on them (:mod:`privgate.tasks.scale` says why).
"""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State

from privgate.core.cache_keys import partitioned_tokens
from privgate.core.engine_choice import partitioned_blockers
from privgate.core.exceptions import (
    GateBlockedError,
    IngestError,
    PolicyError,
    PrivgateError,
    UtilityBlockedError,
    blocked_refusal,
)
from privgate.core.manifest import partitioned_manifest, release_id_for
from privgate.core.publish import discard, published_by, published_by_another, sha256_file
from privgate.core.report import REPORT_FILE, blocked_report_path
from privgate.core.scale import loss_utility, release_metrics, scale_setup, stage_folder
from privgate.flows.parameters import ReleaseParameters
from privgate.tasks.expectations import input_expectations_task
from privgate.tasks.fingerprint import fingerprint_task
from privgate.tasks.publish import publish_task
from privgate.tasks.results import discard_private_results, prepare_private_results
from privgate.tasks.scale import (
    frequency_task,
    partitioned_report_task,
    search_task,
    validate_sample_task,
    verify_task,
    write_task,
)
from privgate.tasks.utility import utility_gate_task
from privgate.validations.expectations import expectation_sample
from privgate.validations.schema import input_warnings

__all__ = ["partitioned_release_flow"]

#: Bytes of input per dask partition (one partition per thread at a time).
BLOCKSIZE = "64MB"


@flow(name="privgate-partitioned-release", log_prints=True)
def partitioned_release_flow(parameters: ReleaseParameters, engine: dict | None = None) -> State:
    """One release of the policy's table on the partitioned path (see the module).

    ``engine``: why this path was taken (:meth:`~privgate.core.engine_choice.EngineChoice.facts`),
    recorded in the manifest and the report. Returns a Completed state whose data has the
    release flow's outcome keys (``release_id``, ``path``, ``published``,
    ``already_published_by``, ``gate``, ``utility_gate``, ``metrics``); a refusal ends the run
    Failed, as the release flow's does.
    """
    try:
        return _release(parameters, engine or {"path": "partitioned", "reason": "called directly"})
    except PrivgateError as exc:  # the decision first, as the release flow's state says it
        text = str(exc) if exc.exit_code == 3 else f"error: {exc}"
        return Failed(message=text, data=exc)


def _release(parameters: ReleaseParameters, engine: dict) -> State:
    log = get_run_logger()
    policy = parameters.policy()
    log.info(prepare_private_results(policy))  # (again, when called from the release flow)
    blockers = partitioned_blockers(policy)
    if blockers:
        raise PolicyError(f"the partitioned path cannot honour {', '.join(blockers)}")
    setup = scale_setup(policy)
    release_date = parameters.release_date or datetime.now(UTC).date()
    sha256 = fingerprint_task(policy)
    release_id = release_id_for(policy, sha256, release_date)
    tokens = partitioned_tokens(policy, sha256)
    freq, reference = frequency_task(policy, setup, BLOCKSIZE, tokens.frequency)
    n_rows = freq.table.n_rows
    sample = expectation_sample(n_rows)
    rows = tokens.validate_sample("every row" if sample is None else str(sample.to_dict()))
    validated = validate_sample_task(policy, setup, freq, sample, rows)
    warnings = input_warnings(validated, policy)
    for warning in warnings:
        log.warning("validate: %s", warning)
    suite = input_expectations_task(
        validated, policy, setup.hierarchies, run_name=release_id, sampled=sample
    )
    del validated
    plan, facts, loss = search_task(freq, policy, setup, tokens.search)
    utility = loss_utility(loss)
    try:  # a blocking gate fails its own task; the run still writes the report with both
        utility_decision = utility_gate_task(utility, policy, release_id)
    except UtilityBlockedError as exc:
        utility_decision = exc.decision
    staged = stage_folder(policy.output.directory, policy.dataset, release_id, policy.output.mode)
    try:
        write_task(plan, policy, setup, staged.release_file, BLOCKSIZE)
        if fingerprint_task(policy) != sha256:  # every pass read the file fingerprinted
            raise IngestError(
                f"the input {policy.input.path} changed while the run read it (sha256 "
                f"{sha256[:12]} at the start): its passes read different rows; nothing is "
                "published, run again once the file is complete"
            )
        try:
            decision = verify_task(
                staged.release_file, setup, n_rows, reference,
                expected_rows=n_rows - plan.suppressed,
            )  # fmt: skip
        except GateBlockedError as exc:
            decision = exc.decision
        manifest = partitioned_manifest(
            policy=policy, release_id=release_id, release_date=release_date,
            input_sha256=sha256, input_rows=n_rows, staged=staged, plan=plan, setup=setup,
            metrics=release_metrics(facts, loss, plan, n_rows), decision=decision, utility=utility,
            utility_decision=utility_decision, engine=engine, input_suite=suite,
            run_id=str(flow_run.get_id() or ""), input_warnings=warnings,
            schema_sample=None if sample is None else sample.to_dict(),
        )  # fmt: skip
        if not (decision.passed and utility_decision.passed):
            error = blocked_refusal(release_id, decision, utility_decision)
            if not parameters.dry_run:  # a blocked run leaves its report, as in memory
                path = blocked_report_path(policy.output.directory, policy.dataset, release_id)
                error.report_path = str(partitioned_report_task(manifest, "blocked", path))
            raise error
        status = "dry-run" if parameters.dry_run else "published"
        written = partitioned_report_task(manifest, status, staged.staging_dir / REPORT_FILE)
        manifest["report"] = {"file": REPORT_FILE, "sha256": sha256_file(written)}
        earlier = None if parameters.dry_run else published_by(staged.final_dir)
        path = None if parameters.dry_run else str(publish_task(staged, manifest))
        if path is not None:  # a concurrent run may have published between check and rename
            earlier = earlier or published_by_another(staged.final_dir, manifest.get("run_id"))
    finally:
        if staged.staging_dir.exists():
            discard(staged)
    if path is not None:  # published: the cached private stage results are not needed any more
        removed = discard_private_results(policy)
        log.info("released %s: %s%s", path, decision.summary, f"; {removed}" if removed else "")
    return _outcome(manifest, path, earlier, decision.summary)


def _outcome(manifest: dict, path: str | None, earlier: str | None, gate: str) -> State:
    """What a caller of the flow receives (the release flow's outcome keys), from the
    manifest; ``gate`` is the gate's summary."""
    keys = ("release_id", "gate", "utility_gate", "metrics", "engine", "expectations")
    outcome = {key: manifest[key] for key in keys}
    outcome.update(
        path=path,
        published=path is not None,
        already_published_by=earlier,
        levels=manifest["transformation"],
    )
    if path is None:
        message = f"dry run, gate {gate}; nothing published"
    elif earlier:
        message = f"gate {gate}; already published by run {earlier}: {path}"
    else:
        message = f"gate {gate}; published {path}"
    return Completed(message=message, data={**outcome, "message": message})
