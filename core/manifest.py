"""What identifies and describes a k-anonymous release: its id, its manifest, its run facts.

The manifest is written next to the release and is everything needed to audit it: the input's
fingerprint, the output's, the policy, the transformation, the metrics, the gate's decision,
the utility and its gate, the ranking a tiered or RFKA release used, and the expectation
suites. The flows gather the stage outputs; the shape lives here, once, for a release held in
memory (:func:`build_manifest`) and for one written as Parquet parts
(:func:`partitioned_manifest`).
"""

from __future__ import annotations

import platform
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from privgate.core.publish import make_release_id, sha256_file

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd

    from privgate.core.anonymize import SearchSetup
    from privgate.core.gate import GateDecision
    from privgate.core.policy import ReleasePolicy
    from privgate.core.publish import StagedRelease
    from privgate.core.ranking import Ranking
    from privgate.core.scale import GeneralizationPlan
    from privgate.core.stages import AnonymizedTable, IngestedTable
    from privgate.core.utility import UtilityDecision, UtilityReport

__all__ = [
    "input_facts",
    "attack_facts",
    "build_manifest",
    "output_facts",
    "package_version",
    "partitioned_manifest",
    "release_id_for",
    "run_facts",
]


def package_version() -> str:
    """The installed privgate version (``0+unknown`` from an uninstalled source tree)."""
    try:
        return version("privgate")
    except PackageNotFoundError:
        return "0+unknown"


def output_facts(staged: StagedRelease, frame: pd.DataFrame) -> dict[str, Any]:
    """The manifest's ``output`` section: the written file, its sha256, rows and columns."""
    return {
        "file": staged.release_file.name,
        "sha256": sha256_file(staged.release_file),
        "rows": len(frame),
        "columns": list(frame.columns),
    }


def input_facts(ingested: IngestedTable) -> dict[str, Any]:
    """The input as the manifest and report record it: the file's path, sha256 and rows (the
    rows released from: with a research subset, the subset's, which ``research_subset``
    describes beside the key file's sha256 and the whole table's rows)."""
    facts: dict[str, Any] = {"path": ingested.path, "sha256": ingested.sha256}
    if ingested.subset is not None:
        facts["sha256"] = ingested.file_sha256
        facts["research_subset"] = ingested.subset.to_dict()
    facts["rows"] = ingested.rows
    return facts


def release_id_for(policy: ReleasePolicy, input_sha256: str, release_date: date) -> str:
    """A k-anonymous release's id: data fingerprint, policy hash and date (see
    :func:`privgate.core.publish.make_release_id`)."""
    return make_release_id(input_sha256, policy.fingerprint(), release_date)


def run_facts(
    *,
    policy: ReleasePolicy,
    policy_path: str,
    release_date: date,
    ingested: IngestedTable,
    table: AnonymizedTable,
    utility: UtilityReport,
    ranking: Ranking | None = None,
    run_id: str = "",
    run_name: str | None = None,
) -> dict[str, Any]:
    """The run section of a release's report: where it came from and what it took."""
    run: dict[str, Any] = {
        "run_id": run_id,
        "flow_run": run_name,
        "release_date": release_date.isoformat(),
        "policy": policy_path,
        "policy_sha256": policy.fingerprint(),
        "input": input_facts(ingested),
        "privgate": package_version(),
        "seconds": {"anonymize": table.metrics["seconds"], "utility": utility.seconds},
    }
    if ranking is not None:
        run["ranking"] = ranking.to_dict()
    if table.tier is not None:
        run["tier"] = {"tier": table.tier, "covers": table.covered}
    return run


def build_manifest(
    *,
    policy: ReleasePolicy,
    release_id: str,
    release_date: date,
    ingested: IngestedTable,
    table: AnonymizedTable,
    staged: StagedRelease,
    decision: GateDecision,
    utility: UtilityReport | None = None,
    utility_decision: UtilityDecision | None = None,
    ranking: Ranking | None = None,
    run_id: str | None = None,
    input_warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything needed to audit a release: inputs, outputs, policy, metrics, decisions
    (and ``input.warnings``: what validation found about the valid input, such as an entirely
    missing quasi-identifier)."""
    manifest = _manifest(
        policy=policy,
        release_id=release_id,
        release_date=release_date,
        run_id=run_id,
        inputs={**input_facts(ingested), "warnings": list(input_warnings)},
        output=output_facts(staged, table.frame),
        # Exactly the columns the release's k-anonymity covers (a tiered release E: tiers
        # 1..E), as the gate verified them.
        covers=decision.measurements.get(
            "covered_quasi_identifiers", table.covered or policy.quasi_identifiers
        ),
        tier=table.tier,
        # The full-domain levels ({} for a local recoding or a feature selection), and what
        # was done to each quasi-identifier in words, for every algorithm.
        transformation=dict(table.result.levels or {}),
        recoding=dict(table.result.transformation),
        metrics=table.metrics,
        decision=decision,
    )
    attacks = decision.measurements.get("attacks")
    if attacks is not None:
        manifest["input"]["released_from_rows"] = attacks["details"]["control"][
            "released_from_rows"
        ]
        manifest["attacks"] = attack_facts(attacks)
    return _close(manifest, utility, utility_decision, ranking)


def partitioned_manifest(
    *,
    policy: ReleasePolicy,
    release_id: str,
    release_date: date,
    input_sha256: str,
    input_rows: int,
    staged: StagedRelease,
    plan: GeneralizationPlan,
    setup: SearchSetup,
    metrics: dict[str, Any],
    decision: GateDecision,
    utility: UtilityReport,
    utility_decision: UtilityDecision,
    engine: dict[str, Any],
    input_suite: Mapping[str, Any],
    run_id: str | None = None,
    input_warnings: Sequence[str] = (),
    schema_sample: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a release written as Parquet parts (the partitioned path): the same
    fields as :func:`build_manifest`'s, the output described by its parts, plus ``engine``
    (the path taken and why) and ``expectations`` (the input suite's summary, ``input_suite``;
    the release suite does not run on this path: the gate re-reads every written row).

    ``input.validated``: the rows the schema (types, ranges, categories, hierarchy coverage)
    was checked on, ``schema_sample`` (its size, the table's rows and the seed; ``None``: every
    row), and that the sensitive columns' values were checked on every row. Without it the
    manifest stated the sample for the expectation suite only, and a reader took the schema
    as checked on every row (review9 F4)."""
    from privgate.core.scale import parts_fingerprint

    parts = sorted(p.name for p in staged.release_file.glob("*.parquet"))
    manifest = _close(
        _manifest(
            policy=policy,
            release_id=release_id,
            release_date=release_date,
            run_id=run_id,
            engine=engine,
            inputs={
                "path": str(policy.input.path),
                "sha256": input_sha256,
                "rows": input_rows,
                "warnings": list(input_warnings),
                "validated": {
                    "schema": "every row" if schema_sample is None else dict(schema_sample),
                    "sensitive_values": "every row",
                },
            },
            output={
                "file": staged.release_file.name,
                "format": "parquet parts",
                "parts": parts,
                "sha256": parts_fingerprint(staged.release_file),
                # the gate's count of the written rows (= the plan's, or the gate blocked)
                "rows": decision.measurements.get("rows"),
                "columns": list(plan.released_columns),
            },
            covers=policy.quasi_identifiers,
            tier=None,
            transformation=dict(plan.levels),
            recoding={
                q: f"level {plan.levels[q]}/{setup.hierarchies[q].height}"
                for q in plan.quasi_identifiers
            },
            metrics=metrics,
            decision=decision,
        ),
        utility,
        utility_decision,
    )
    summary = ("suite", "success", "evaluated", "failed", "sample")
    manifest["expectations"] = {
        "input": {key: input_suite[key] for key in summary if key in input_suite},
        "release": "not run on the partitioned path (the gate re-reads every row)",
    }
    return manifest


def _manifest(
    *,
    policy: ReleasePolicy,
    release_id: str,
    release_date: date,
    run_id: str | None,
    inputs: dict[str, Any],
    output: dict[str, Any],
    covers: Sequence[str],
    tier: int | None,
    transformation: dict[str, Any],
    recoding: dict[str, Any],
    metrics: dict[str, Any],
    decision: GateDecision,
    engine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The fields every k-anonymous release's manifest has, in their order."""
    manifest: dict[str, Any] = {
        "release_id": release_id,
        "dataset": policy.dataset,
        "release_date": release_date.isoformat(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "privgate_version": package_version(),
        "python": platform.python_version(),
        "run_id": run_id,
    }
    if engine is not None:
        manifest["engine"] = engine
    manifest.update(
        {
            "input": inputs,
            "output": output,
            "policy": policy.model_dump(mode="json"),
            "policy_sha256": policy.fingerprint(),
            "quasi_identifiers": policy.quasi_identifiers,
            "k_anonymity_covers": covers,
            "tier": tier,
            "transformation": transformation,
            "recoding": recoding,
            "metrics": metrics,
            "gate": decision.to_dict(),
        }
    )
    return manifest


def _close(
    manifest: dict[str, Any],
    utility: UtilityReport | None,
    utility_decision: UtilityDecision | None,
    ranking: Ranking | None = None,
) -> dict[str, Any]:
    """The utility, its gate and the ranking, then the flags of both gates together: what the
    release does not say although both gates passed."""
    if utility is not None:
        manifest["utility"] = utility.to_dict()
    if utility_decision is not None:
        manifest["utility_gate"] = utility_decision.to_dict()
    if ranking is not None:
        manifest["ranking"] = ranking.to_dict()
    manifest["flags"] = [
        *manifest["gate"]["flags"],
        *manifest.get("utility_gate", {}).get("flags", []),
    ]
    return manifest


def attack_facts(measured: dict[str, Any]) -> dict[str, Any]:
    """The manifest's ``attacks`` section from the gate's attack measurements: each risk with
    its confidence interval, the unique exact-match rate, the limits and how the gate read
    them, and the held-out control split (the full counts stay in ``gate.measurements``)."""
    details = measured["details"]
    return {
        "risks": measured["risks"],
        "unique_exact_match": measured["unique_exact_match"],
        "limits": measured["limits"],
        "checks": measured["checks"],
        "rule": measured["rule"],
        "control": details["control"],
        "columns": details["columns"],
        "secrets": details["inference"]["secrets"],
        "n_attacks": details["n_attacks"],
        "seed": details["seed"],
        "confidence_level": (measured.get("singling_out") or {}).get("confidence_level", 0.95),
    }
