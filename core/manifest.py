"""What identifies and describes a k-anonymous release: its id, its manifest, its run facts.

The manifest is written next to the release and is everything needed to audit it: the input's
fingerprint, the output's, the policy, the transformation, the metrics, the gate's decision,
the utility and its gate, the ranking a tiered or RFKA release used, and the expectation
suites. The flow gathers the stage outputs; the shape lives here, once.
"""

from __future__ import annotations

import platform
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from privgate.core.publish import make_release_id, sha256_file

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from privgate.core.gate import GateDecision
    from privgate.core.policy import ReleasePolicy
    from privgate.core.publish import StagedRelease
    from privgate.core.ranking import Ranking
    from privgate.core.stages import AnonymizedTable, IngestedTable
    from privgate.core.utility import UtilityDecision, UtilityReport

__all__ = [
    "input_facts",
    "attack_facts",
    "build_manifest",
    "output_facts",
    "package_version",
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
    manifest: dict[str, Any] = {
        "release_id": release_id,
        "dataset": policy.dataset,
        "release_date": release_date.isoformat(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "privgate_version": package_version(),
        "python": platform.python_version(),
        "run_id": run_id,
        "input": {**input_facts(ingested), "warnings": list(input_warnings)},
        "output": output_facts(staged, table.frame),
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.fingerprint(),
        "quasi_identifiers": policy.quasi_identifiers,
        # Exactly the columns the release's k-anonymity covers (a tiered release E: tiers
        # 1..E), as the gate verified them.
        "k_anonymity_covers": decision.measurements.get(
            "covered_quasi_identifiers", table.covered or policy.quasi_identifiers
        ),
        "tier": table.tier,
        # The full-domain levels ({} for a local recoding or a feature selection), and what
        # was done to each quasi-identifier in words, for every algorithm.
        "transformation": dict(table.result.levels or {}),
        "recoding": dict(table.result.transformation),
        "metrics": table.metrics,
        "gate": decision.to_dict(),
    }
    attacks = decision.measurements.get("attacks")
    if attacks is not None:
        manifest["input"]["released_from_rows"] = attacks["details"]["control"][
            "released_from_rows"
        ]
        manifest["attacks"] = attack_facts(attacks)
    if utility is not None:
        manifest["utility"] = utility.to_dict()
    if utility_decision is not None:
        manifest["utility_gate"] = utility_decision.to_dict()
    if ranking is not None:
        manifest["ranking"] = ranking.to_dict()
    # What the release does not say although both gates passed (each gate's flags, together).
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
