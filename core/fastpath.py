"""Anonymize a CSV file in one short process: read, search, write, verify.

The release flow (ingest, pandera validation, Prefect tasks, atomic publish with a manifest) is
what a data owner schedules. This path is for quick, interactive work on a CSV file, such as
trying a k or comparing algorithms: it runs the same encoding, search and gate without Prefect,
pandera or pandas, so a whole process on Adult takes well under a second. It checks less at
ingest (declared columns present, no undeclared ones; values are checked by the hierarchies)
and it never publishes: the output file appears only once the gate has passed on it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from privgate.core.anonymize import make_algorithm, require_full_domain
from privgate.core.anonymize._generalize import generalize_columns
from privgate.core.encoding import encode_table
from privgate.core.exceptions import AnonymizationError, GateBlockedError, IngestError
from privgate.core.gate import GateDecision, verify_release
from privgate.core.hierarchy import hierarchies_for, sensitive_hierarchies_for
from privgate.core.policy import ReleasePolicy
from privgate.core.privacy import models_from_policy
from privgate.core.textcsv import read_text_columns, write_text_columns

__all__ = ["anonymize_csv"]


def _read(policy: ReleasePolicy) -> dict[str, np.ndarray]:
    spec = policy.input
    if spec.format != "csv":
        raise IngestError(
            f"input.format is {spec.format!r}: `privgate anonymize` reads CSV only; use "
            "`privgate run` for other formats"
        )
    columns = read_text_columns(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    missing = [c for c in policy.columns if c not in columns]
    extra = [c for c in columns if c not in policy.columns]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing} (declared in the policy)")
        if extra:
            parts.append(f"unexpected column(s) {extra} (not declared in the policy)")
        raise IngestError(f"{spec.path}: " + "; ".join(parts))
    if not len(next(iter(columns.values()))):
        raise IngestError(f"{spec.path}: no data rows (only a header)")
    return columns


def anonymize_csv(
    policy: ReleasePolicy, output: str | Path, shuffle_seed: int | None = 0
) -> tuple[GateDecision, dict]:
    """Anonymize the policy's CSV input into ``output`` and verify it there.

    Parameters
    ----------
    policy : ReleasePolicy
        Its algorithm must be a full-domain one (optimal, datafly, multi_attribute_datafly).
    output : path
        The release file (CSV). Written to a temporary name first and renamed once verified.
    shuffle_seed : int or None, default=0
        Seed of the row permutation (``None`` keeps the input order).

    Returns
    -------
    decision : GateDecision
    summary : dict
        Levels chosen, suppressed records, loss and the time of each phase.

    Raises
    ------
    IngestError, HierarchyError, AnonymizationError
        Bad input or an unreachable privacy model.
    GateBlockedError
        The written file failed verification (it is removed).
    """
    require_full_domain(policy, "`privgate anonymize`")
    timings: dict[str, float] = {}
    started = time.perf_counter()
    columns = _read(policy)
    n_rows = len(next(iter(columns.values())))
    k = policy.privacy.k
    if k > n_rows:
        raise AnonymizationError(
            f"privacy.k = {k} is larger than the table ({n_rows} rows): no release of it can "
            f"be {k}-anonymous"
        )
    timings["read"] = time.perf_counter() - started

    mark = time.perf_counter()
    models = models_from_policy(policy.privacy, sensitive_hierarchies_for(policy))
    sensitive = sorted({m.column for m in models if hasattr(m, "column")})
    encoded = encode_table(columns, hierarchies_for(policy), sensitive)
    freq = encoded.frequency_set()
    timings["encode"] = time.perf_counter() - mark

    mark = time.perf_counter()
    algorithm = make_algorithm(
        policy.algorithm.name,
        models,
        policy.privacy.suppression_limit,
        metric=policy.algorithm.metric,
    )
    result = algorithm.anonymize(freq)
    timings["search"] = time.perf_counter() - mark

    mark = time.perf_counter()
    release = generalize_columns(columns, encoded, result, policy.released_columns)
    if shuffle_seed is not None:
        order = np.random.default_rng(shuffle_seed).permutation(n_rows - result.n_suppressed)
        release = {name: values[order] for name, values in release.items()}
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    write_text_columns(staging, release)
    timings["write"] = time.perf_counter() - mark

    mark = time.perf_counter()
    decision = verify_release(
        staging,
        policy.quasi_identifiers,
        models,
        input_rows=n_rows,
        suppression_limit=policy.privacy.suppression_limit,
        expected_columns=policy.released_columns,
        forbidden_columns=policy.identifiers,
    )
    timings["verify"] = time.perf_counter() - mark
    if not decision.passed:
        staging.unlink(missing_ok=True)
        raise GateBlockedError(f"gate blocked {output}: {decision.summary}", decision)
    os.replace(staging, output)
    summary = {
        "algorithm": result.algorithm,
        "levels": result.levels,
        "input_rows": n_rows,
        "suppressed": result.n_suppressed,
        **{f"search_{key}": value for key, value in result.details.items()},
        "seconds": {key: round(value, 4) for key, value in timings.items()},
    }
    return decision, summary
