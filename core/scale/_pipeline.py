"""The dask path end to end: read, frequency set, search, generalize + write, verify, publish."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from privgate.core.anonymize import AnonymizationResult, make_algorithm, require_full_domain
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import AnonymizationError, GateBlockedError
from privgate.core.gate import GateDecision
from privgate.core.hierarchy import hierarchies_for, sensitive_hierarchies_for
from privgate.core.policy import ReleasePolicy
from privgate.core.privacy import models_from_policy
from privgate.core.scale._apply import GeneralizationPlan, generalize_frame, plan_generalization
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._frequency import histogram_of, read_input
from privgate.core.scale._verify import verify_parquet_release

__all__ = [
    "ScaleRun",
    "anonymize_dask",
    "frequency_stage",
    "publish_stage",
    "search_stage",
    "verify_stage",
    "write_stage",
]


@dataclass(frozen=True)
class ScaleRun:
    """What a dask-path run produced: the gate's decision, the release folder, the facts."""

    decision: GateDecision
    output: Path
    levels: dict[str, int]
    summary: dict = field(default_factory=dict)


def _needed_columns(policy: ReleasePolicy, sensitive: list[str]) -> list[str]:
    wanted = [*policy.quasi_identifiers, *sensitive, *policy.released_columns]
    return list(dict.fromkeys(wanted))


def _models_and_sensitive(policy: ReleasePolicy):
    models = models_from_policy(policy.privacy, sensitive_hierarchies_for(policy))
    sensitive = sorted({m.column for m in models if hasattr(m, "column")})
    return models, sensitive


def frequency_stage(policy: ReleasePolicy, blocksize: str | int = "64MB") -> FrequencySet:
    """Read the input partition by partition and return its merged frequency set."""
    require_full_domain(policy, "the Dask path")
    _, sensitive = _models_and_sensitive(policy)
    frame = read_input(policy.input, _needed_columns(policy, sensitive), blocksize)
    hierarchies = hierarchies_for(policy)
    histogram = histogram_of(frame, [*hierarchies, *sensitive])
    freq = frequency_set_from_histogram(histogram, hierarchies, sensitive)
    k = policy.privacy.k
    if k > freq.table.n_rows:
        raise AnonymizationError(
            f"privacy.k = {k} is larger than the table ({freq.table.n_rows} rows): no release "
            f"of it can be {k}-anonymous"
        )
    return freq


def search_stage(
    freq: FrequencySet, policy: ReleasePolicy
) -> tuple[GeneralizationPlan, AnonymizationResult]:
    """The lattice search on the merged frequency set (one node), and the plan it implies."""
    require_full_domain(policy, "the Dask path")
    models, _ = _models_and_sensitive(policy)
    algorithm = make_algorithm(
        policy.algorithm.name,
        models,
        policy.privacy.suppression_limit,
        metric=policy.algorithm.metric,
    )
    result = algorithm.anonymize(freq)
    plan = plan_generalization(freq, result.levels, models, policy.released_columns)
    return plan, result


def write_stage(
    plan: GeneralizationPlan,
    policy: ReleasePolicy,
    staging: str | Path,
    blocksize: str | int = "64MB",
    shuffle_seed: int | None = 0,
) -> Path:
    """Generalize every partition (``map_partitions``) and write them as Parquet parts."""
    _, sensitive = _models_and_sensitive(policy)
    frame = read_input(policy.input, _needed_columns(policy, sensitive), blocksize)
    release = generalize_frame(frame, plan, shuffle_seed)
    staging = Path(staging)
    release.to_parquet(str(staging), write_index=False, write_metadata_file=False)
    return staging


def verify_stage(staging: str | Path, policy: ReleasePolicy, input_rows: int) -> GateDecision:
    """The gate on the written parts, computed partition by partition."""
    models, _ = _models_and_sensitive(policy)
    return verify_parquet_release(
        staging,
        policy.quasi_identifiers,
        models,
        input_rows=input_rows,
        suppression_limit=policy.privacy.suppression_limit,
        expected_columns=policy.released_columns,
        forbidden_columns=policy.identifiers,
    )


def publish_stage(staging: str | Path, output: str | Path, decision: GateDecision) -> Path:
    """Rename the verified folder into place, or remove it and raise if the gate blocked."""
    staging, output = Path(staging), Path(output)
    if not decision.passed:
        shutil.rmtree(staging, ignore_errors=True)
        raise GateBlockedError(f"gate blocked {output}: {decision.summary}", decision)
    os.rename(staging, output)  # atomic on one file system; fails if output exists
    return output


def anonymize_dask(
    policy: ReleasePolicy,
    output: str | Path,
    *,
    blocksize: str | int = "64MB",
    shuffle_seed: int | None = 0,
) -> ScaleRun:
    """Anonymize the policy's input into a partitioned Parquet release folder ``output``.

    Runs on the active dask scheduler (enter a ``distributed.Client`` to use a cluster). The
    input is read twice, block by block (frequency set, then generalization); the release is
    written to a staging folder next to ``output``, verified there, and renamed into place
    only if the gate passes.

    Raises
    ------
    FileExistsError
        ``output`` already exists.
    IngestError, HierarchyError, AnonymizationError
        Bad input or an unreachable privacy model.
    GateBlockedError
        The written release failed verification (the staging folder is removed).
    """
    output = Path(output)
    if output.exists():
        raise FileExistsError(f"release folder already exists: {output}")
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    timings: dict[str, float] = {}

    mark = time.perf_counter()
    freq = frequency_stage(policy, blocksize)
    timings["ingest_frequency"] = time.perf_counter() - mark

    mark = time.perf_counter()
    plan, result = search_stage(freq, policy)
    timings["search"] = time.perf_counter() - mark

    mark = time.perf_counter()
    write_stage(plan, policy, staging, blocksize, shuffle_seed)
    timings["generalize_write"] = time.perf_counter() - mark

    mark = time.perf_counter()
    n_rows = freq.table.n_rows
    decision = verify_stage(staging, policy, n_rows)
    timings["verify"] = time.perf_counter() - mark

    publish_stage(staging, output, decision)
    summary = {
        "algorithm": result.algorithm,
        "levels": plan.levels,
        "input_rows": n_rows,
        "distinct_tuples": int(len(freq.counts)),
        "suppressed": plan.suppressed,
        **{f"search_{key}": value for key, value in result.details.items()},
        "seconds": {key: round(value, 4) for key, value in timings.items()},
    }
    return ScaleRun(decision, output, plan.levels, summary)
