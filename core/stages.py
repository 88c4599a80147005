"""The pipeline's stages as plain functions: what each Prefect task wraps.

Each stage takes values and returns values (no Prefect, no global state), so the whole release
can be driven and tested without an orchestrator, and the tasks in ``tasks/`` stay thin.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from privgate.core.anonymize import (
    AnonymizationResult,
    Mondrian,
    apply_generalization,
    make_algorithm,
)
from privgate.core.anonymize._generalize import shuffle_rows
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError
from privgate.core.gate import GateDecision, check_coverage, verify_release
from privgate.core.hierarchy import Hierarchy, hierarchies_for, sensitive_hierarchies_for
from privgate.core.ingest import read_table
from privgate.core.metrics import precision, table_loss
from privgate.core.policy import Algorithm, ColumnType, ReleasePolicy

if TYPE_CHECKING:
    from privgate.core.ranking import Ranking
from privgate.core.privacy import models_from_policy
from privgate.core.publish import StagedRelease, make_release_id, sha256_file, stage_release

__all__ = [
    "AnonymizedTable",
    "IngestedTable",
    "anonymize",
    "build_manifest",
    "cache_token",
    "fingerprint_input",
    "anonymize_tiers",
    "ingest",
    "load_hierarchies",
    "rank",
    "package_version",
    "release_id_for",
    "stage",
    "verify",
]


def package_version() -> str:
    try:
        return version("privgate")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0+unknown"


@dataclass(frozen=True)
class IngestedTable:
    """The raw input table and the fingerprint of the file it came from."""

    frame: pd.DataFrame
    sha256: str
    path: str

    @property
    def rows(self) -> int:
        return len(self.frame)


def load_hierarchies(policy: ReleasePolicy) -> dict[str, Hierarchy]:
    """One hierarchy per quasi-identifier, in policy order."""
    return hierarchies_for(policy)


def rank(frame: pd.DataFrame, policy: ReleasePolicy) -> Ranking:
    """The sensitivity ranking: how much each quasi-identifier reveals about the target.

    The forests see at most ``ranking.sample_size`` records, a sample stratified by the target
    and seeded by ``ranking.seed``, so a nightly run on a large table stays bounded and the
    ranking is reproducible.
    """
    from privgate.core.ranking import rank_attributes

    spec = policy.ranking
    if spec is None:
        raise AnonymizationError("the policy has no 'ranking' section to rank attributes by")
    sample = frame
    if spec.sample_size is not None and len(frame) > spec.sample_size:
        share = spec.sample_size / len(frame)
        sample = frame.groupby(frame[spec.target], dropna=False, group_keys=False).sample(
            frac=share, random_state=spec.seed
        )
    return rank_attributes(
        sample,
        policy.quasi_identifiers,
        spec.target,
        method=spec.method,
        n_estimators=spec.n_estimators,
        runs=spec.runs,
        n_tiers=spec.tiers,
        random_state=spec.seed,
    )


def fingerprint_input(policy: ReleasePolicy) -> str:
    """sha256 of the input file ("" when it does not exist; ingest then names the problem)."""
    path = Path(policy.input.path)
    return sha256_file(path) if path.is_file() else ""


def cache_token(policy: ReleasePolicy, input_sha256: str, *sections: str) -> str:
    """A key for a stage's cached result: the data, the policy sections the stage reads, and
    the content of every hierarchy file those sections name.

    A stage reruns when any of these changes and is reused otherwise, so editing a utility
    threshold does not redo the anonymization, and a new input file redoes everything.
    """
    digest = hashlib.sha256(input_sha256.encode())
    dumped = policy.model_dump(mode="json", include=set(sections) or None)
    digest.update(json.dumps(dumped, sort_keys=True).encode())
    if not sections or "columns" in sections:
        for name, spec in policy.columns.items():
            path = getattr(spec.hierarchy, "path", None)
            if path is not None and Path(path).is_file():
                digest.update(f"{name}:{sha256_file(path)}".encode())
    return digest.hexdigest()


def ingest(policy: ReleasePolicy, input_sha256: str | None = None) -> IngestedTable:
    """Read the input file (it is only ever read) and record its fingerprint."""
    digest = fingerprint_input(policy) if input_sha256 is None else input_sha256
    frame = read_table(policy.input)
    return IngestedTable(frame, digest, str(policy.input.path))


@dataclass(frozen=True)
class AnonymizedTable:
    """The release table plus what the algorithm decided and measured about it."""

    frame: pd.DataFrame
    result: AnonymizationResult
    metrics: dict = field(default_factory=dict)
    transformation: dict[str, str] = field(default_factory=dict)
    #: The quasi-identifiers the release's k-anonymity covers (``None``: all of them). Only a
    #: tiered release E covers fewer: the attributes of tiers 1..E.
    covered: list[str] | None = None
    #: The tier E of a tiered release, else ``None``.
    tier: int | None = None


def _check_feasible(policy: ReleasePolicy, n_rows: int) -> None:
    k = policy.privacy.k
    if k > n_rows:
        raise AnonymizationError(
            f"privacy.k = {k} is larger than the table ({n_rows} rows): no release of it can "
            f"be {k}-anonymous"
        )


def anonymize(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    shuffle_seed: int | None = None,
    ranking: Ranking | None = None,
) -> AnonymizedTable:
    """Run the policy's algorithm and build the release table.

    Raises
    ------
    AnonymizationError
        The privacy model cannot be met (``k`` larger than the table, or not even the fully
        generalized table satisfies it within the suppression limit).
    HierarchyError
        A quasi-identifier value is not covered by its hierarchy.
    """
    _check_feasible(policy, len(frame))
    started = time.perf_counter()
    models = models_from_policy(policy.privacy, sensitive_hierarchies_for(policy))
    qis = policy.quasi_identifiers
    numeric = {q for q in qis if policy.columns[q].type in (ColumnType.INTEGER, ColumnType.FLOAT)}
    metrics: dict = {"algorithm": policy.algorithm.name.value, "input_rows": len(frame)}
    transformation: dict[str, str] = {}
    if policy.algorithm.name is Algorithm.TIERED:
        raise AnonymizationError("a tiered policy makes several releases: use anonymize_tiers()")
    if policy.algorithm.name is Algorithm.RFKA:
        return _anonymize_rfka(frame, policy, hierarchies, shuffle_seed, ranking, metrics)
    if policy.algorithm.name is Algorithm.MONDRIAN:
        strict = policy.algorithm.strict if policy.algorithm.strict is not None else True
        local = Mondrian(models, strict=strict).anonymize_table(frame, hierarchies, numeric)
        release = local.release[policy.released_columns]
        result = AnonymizationResult(
            "mondrian",
            {},
            np.zeros(len(frame), dtype=bool),
            details={"partitions": local.partitions, "strict": strict},
        )
    else:
        sensitive = sorted({m.column for m in models if hasattr(m, "column")})
        encoded = encode_table(frame, hierarchies, sensitive)
        freq = encoded.frequency_set()
        algorithm = make_algorithm(
            policy.algorithm.name,
            models,
            policy.privacy.suppression_limit,
            metric=policy.algorithm.metric,
        )
        result = algorithm.anonymize(freq)
        release = apply_generalization(frame, encoded, result, policy.released_columns)
        heights = dict(zip(encoded.names, encoded.heights, strict=True))
        metrics["distinct_qi_tuples"] = int(len(freq.counts))
        metrics["precision"] = precision(result.levels, heights, len(frame), result.n_suppressed)
        transformation = {
            name: f"level {lvl}/{heights[name]}" for name, lvl in result.levels.items()
        }
    loss = table_loss(frame[qis], release[qis], hierarchies, numeric)
    metrics.update(
        release_rows=len(release),
        suppressed=result.n_suppressed,
        loss=loss["total"],
        granularity=loss["granularity"],
        loss_per_attribute=loss["per_attribute"],
        **{f"search_{k}": v for k, v in result.details.items()},
        seconds=round(time.perf_counter() - started, 4),
    )
    if shuffle_seed is not None:
        release = shuffle_rows(release, shuffle_seed)
    return AnonymizedTable(release, result, metrics, transformation)


def _require_ranking(policy: ReleasePolicy, ranking: Ranking | None) -> Ranking:
    if ranking is None:
        raise AnonymizationError(
            f"algorithm {policy.algorithm.name.value!r} needs the sensitivity ranking; run the "
            "ranking stage first"
        )
    return ranking


def _finish(
    frame: pd.DataFrame,
    release: pd.DataFrame,
    result: AnonymizationResult,
    metrics: dict,
    hierarchies: dict[str, Hierarchy],
    policy: ReleasePolicy,
    started: float,
) -> dict:
    """Loss over every QI (uncovered ones count as unchanged), suppression and timing."""
    qis = policy.quasi_identifiers
    numeric = {q for q in qis if policy.columns[q].type in (ColumnType.INTEGER, ColumnType.FLOAT)}
    loss = table_loss(frame[qis], release[qis], hierarchies, numeric)
    return {
        **metrics,
        "release_rows": len(release),
        "suppressed": result.n_suppressed,
        "loss": loss["total"],
        "granularity": loss["granularity"],
        "loss_per_attribute": loss["per_attribute"],
        **{f"search_{k}": v for k, v in result.details.items()},
        "seconds": round(time.perf_counter() - started, 4),
    }


def _anonymize_rfka(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    shuffle_seed: int | None,
    ranking: Ranking | None,
    metrics: dict,
) -> AnonymizedTable:
    """RFKA: keep attributes in order of importance while the projection stays k-anonymous."""
    from privgate.core.anonymize._rfka import rfka_release

    started = time.perf_counter()
    order = _require_ranking(policy, ranking).order
    release, selection = rfka_release(frame, order, policy.privacy.k, policy.released_columns)
    result = AnonymizationResult(
        "rfka",
        {},
        np.zeros(len(frame), dtype=bool),
        details={"kept": selection.kept, "suppressed_attributes": selection.rejected},
    )
    metrics = _finish(frame, release, result, metrics, hierarchies, policy, started)
    transformation = {
        q: ("kept" if q in selection.kept else "suppressed (*)") for q in policy.quasi_identifiers
    }
    if shuffle_seed is not None:
        release = shuffle_rows(release, shuffle_seed)
    return AnonymizedTable(release, result, metrics, transformation)


def anonymize_tiers(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    ranking: Ranking,
    shuffle_seed: int | None = None,
) -> list[AnonymizedTable]:
    """RFK-anonymity: every tiered release E = 1..n in one run, tier 1 the most important.

    Release E is k-anonymous (with the policy's other models and suppression limit) over the
    quasi-identifiers of tiers 1..E; the others are released unchanged. Each table records the
    columns its guarantee covers, which the gate and the manifest state.
    """
    from privgate.core.anonymize._tiered import tiered_releases

    _check_feasible(policy, len(frame))
    models = models_from_policy(policy.privacy, sensitive_hierarchies_for(policy))
    tables = []
    for tiered in tiered_releases(
        frame,
        hierarchies,
        ranking.tiers,
        models,
        policy.privacy.suppression_limit,
        policy.released_columns,
        metric=policy.algorithm.metric or "loss",
    ):
        started = time.perf_counter()
        metrics = {"algorithm": "tiered", "input_rows": len(frame), "tier": tiered.tier}
        metrics["covered"] = list(tiered.covered)
        metrics = _finish(frame, tiered.frame, tiered.result, metrics, hierarchies, policy, started)
        transformation = {
            q: (
                f"level {tiered.result.levels[q]}/{hierarchies[q].height}"
                if q in tiered.result.levels
                else "unchanged (not covered)"
            )
            for q in policy.quasi_identifiers
        }
        release = tiered.frame
        if shuffle_seed is not None:
            release = shuffle_rows(release, shuffle_seed)
        tables.append(
            AnonymizedTable(
                release,
                tiered.result,
                metrics,
                transformation,
                covered=list(tiered.covered),
                tier=tiered.tier,
            )
        )
    return tables


def release_id_for(policy: ReleasePolicy, input_sha256: str, release_date: date) -> str:
    return make_release_id(input_sha256, policy.fingerprint(), release_date)


def stage(table: AnonymizedTable, policy: ReleasePolicy, release_id: str) -> StagedRelease:
    """Write the release into a staging folder under the policy's output directory."""
    return stage_release(
        table.frame,
        policy.output.directory,
        policy.dataset,
        release_id,
        policy.output.format,
        file_mode=policy.output.mode,
    )


def verify(
    release_file: Path,
    policy: ReleasePolicy,
    input_rows: int,
    covered: list[str] | None = None,
) -> GateDecision:
    """The gate: re-read the written file and check every criterion of the policy.

    ``covered`` (a tiered release) names the quasi-identifiers the release claims to protect;
    the criteria are measured over exactly those, and the coverage rule
    (:func:`privgate.core.gate.check_coverage`) blocks a narrower release the policy did not accept.
    """
    decision = verify_release(
        release_file,
        covered if covered is not None else policy.quasi_identifiers,
        models_from_policy(policy.privacy, sensitive_hierarchies_for(policy)),
        input_rows=input_rows,
        suppression_limit=policy.privacy.suppression_limit,
        expected_columns=policy.released_columns,
        forbidden_columns=policy.identifiers,
    )
    return check_coverage(
        decision,
        covered if covered is not None else policy.quasi_identifiers,
        policy.quasi_identifiers,
        narrower_accepted=bool(policy.algorithm.accept_narrower_coverage),
    )


def build_manifest(
    *,
    policy: ReleasePolicy,
    release_id: str,
    release_date: date,
    ingested: IngestedTable,
    table: AnonymizedTable,
    staged: StagedRelease,
    decision: GateDecision,
    run_id: str | None = None,
) -> dict:
    """Everything needed to audit a release: inputs, outputs, policy, metrics, decision."""
    return {
        "release_id": release_id,
        "dataset": policy.dataset,
        "release_date": release_date.isoformat(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "privgate_version": package_version(),
        "python": platform.python_version(),
        "run_id": run_id,
        "input": {"path": ingested.path, "sha256": ingested.sha256, "rows": ingested.rows},
        "output": {
            "file": staged.release_file.name,
            "sha256": sha256_file(staged.release_file),
            "rows": len(table.frame),
            "columns": list(table.frame.columns),
        },
        "policy": policy.model_dump(mode="json"),
        "policy_sha256": policy.fingerprint(),
        "quasi_identifiers": policy.quasi_identifiers,
        # Exactly the columns the release's k-anonymity covers (a tiered release E: tiers
        # 1..E), as the gate verified them.
        "k_anonymity_covers": decision.measurements.get(
            "covered_quasi_identifiers", table.covered or policy.quasi_identifiers
        ),
        "tier": table.tier,
        "transformation": table.result.levels,
        "metrics": table.metrics,
        "gate": decision.to_dict(),
    }
