"""Anonymize a CSV file in one short process: read, search, write, verify.

The release flow (ingest, pandera validation, Prefect tasks, atomic publish with a manifest) is
what a data owner schedules. This path is for quick, interactive work on a CSV file, such as
trying a k or comparing algorithms: it runs the same search setup, algorithm contract and gate
without Prefect, pandera or pandas, so a whole process on Adult takes well under a second. It
checks less at ingest (declared columns present, no undeclared ones; values are checked by the
hierarchies) and it never publishes: the output file appears only once the gate has passed on
it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from privgate.core.anonymize import (
    SearchInput,
    full_domain_setup,
    make_algorithm,
    release_columns,
)
from privgate.core.exceptions import GateBlockedError, IngestError
from privgate.core.gate import GateDecision, verify_release
from privgate.core.policy import ReleasePolicy
from privgate.core.privacy import TCloseness
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


def _t_reference(columns: dict[str, np.ndarray], models) -> dict[str, dict] | None:
    """t-closeness' reference: the input's count of each value of every t-closeness column,
    as the text the release carries (one definition with the search, see
    :func:`privgate.core.gate.sensitive_reference`); ``None`` without t-closeness."""
    names = sorted({m.column for m in models if isinstance(m, TCloseness)})
    if not names:
        return None
    return {name: dict(Counter(columns[name].tolist())) for name in names}


def anonymize_csv(
    policy: ReleasePolicy, output: str | Path, shuffle_seed: int | None = None
) -> tuple[GateDecision, dict]:
    """Anonymize the policy's CSV input into ``output`` and verify it there.

    Parameters
    ----------
    policy : ReleasePolicy
        Its algorithm must be a full-domain one (optimal, datafly, multi_attribute_datafly).
    output : path
        The release file (CSV). Written to a temporary name first and renamed once verified.
    shuffle_seed : int, optional
        Seed of the row permutation, to reproduce an order in a test. By default the
        permutation is drawn from the operating system's entropy, so that nothing published
        lets anyone recompute it (and with it the input's order).

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
    setup = full_domain_setup(policy, "`privgate anonymize`")
    timings: dict[str, float] = {}
    started = time.perf_counter()
    columns = _read(policy)
    timings["read"] = time.perf_counter() - started

    mark = time.perf_counter()
    data = SearchInput.prepare(columns, setup)
    freq = data.frequency_set
    timings["encode"] = time.perf_counter() - mark

    mark = time.perf_counter()
    result = make_algorithm(setup).anonymize(data)
    timings["search"] = time.perf_counter() - mark

    mark = time.perf_counter()
    release = release_columns(columns, result, setup.released_columns)
    order = np.random.default_rng(shuffle_seed).permutation(result.n_released)
    release = {name: values[order] for name, values in release.items()}
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    write_text_columns(staging, release)
    timings["write"] = time.perf_counter() - mark

    mark = time.perf_counter()
    decision = verify_release(
        staging,
        list(setup.quasi_identifiers),
        list(setup.models),
        reference=_t_reference(columns, setup.models),
        **setup.gate_limits(data.n_rows),
    )
    timings["verify"] = time.perf_counter() - mark
    if not decision.passed:
        staging.unlink(missing_ok=True)
        raise GateBlockedError(f"gate blocked {output}: {decision.summary}", decision)
    os.replace(staging, output)
    summary = {
        "algorithm": result.algorithm,
        "levels": result.levels,
        "input_rows": data.n_rows,
        "distinct_tuples": int(len(freq.counts)),
        "suppressed": result.n_suppressed,
        **{f"search_{key}": value for key, value in result.details.items()},
        "seconds": {key: round(value, 4) for key, value in timings.items()},
    }
    return decision, summary
