"""Verify a written, partitioned release the way the gate does, without loading it whole.

Each partition of the release, read back from disk, is summarized by the distinct tuples of its
QI and sensitive cells *as text* with their counts (:func:`partition_histogram` with
``text=True``); the summaries are summed along a tree; the merged tuples are grouped by their
QI part into equivalence classes. The class statistics are :class:`~core.encoding.ClassStats`
built as :func:`core.gate.class_stats_of` builds them (a missing cell is a value of its own,
sensitive values sorted with a missing value last), and the verdict applies the same checks and
the same models' ``achieved``/``holds`` as :func:`core.gate.verify_table`, so the decision and
its measurements are the gate's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import dask.dataframe as dd
import numpy as np

from privgate.core.encoding import ClassStats
from privgate.core.exceptions import VerificationError
from privgate.core.gate import (
    GateDecision,
    check_columns,
    decide,
    sensitive_columns_of,
    with_reference,
)
from privgate.core.privacy import PrivacyModel
from privgate.core.scale._frequency import histogram_of
from privgate.core.scale._histogram import PartialHistogram

__all__ = ["class_stats_from_histogram", "reference_from_histogram", "verify_parquet_release"]


def class_stats_from_histogram(histogram: PartialHistogram, n_quasi_identifiers: int) -> ClassStats:
    """Equivalence classes over the first ``n_quasi_identifiers`` columns of ``histogram``;
    the remaining columns are sensitive."""
    q = n_quasi_identifiers
    n = len(histogram.counts)
    if histogram.n_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return ClassStats(empty, {}, {}, {})
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for j in range(q):
        radix = len(histogram.values[j]) + 1  # one more code for a missing cell
        if space * radix >= 2**62:
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            space = int(key.max()) + 1
        key = key * radix + (histogram.tuples[:, j].astype(np.int64) + 1)
        space *= radix
    _, class_ids = np.unique(key, return_inverse=True)
    class_ids = class_ids.reshape(-1)
    n_classes = int(class_ids.max()) + 1 if n else 0
    sens_codes, sens_values = {}, {}
    for i, name in enumerate(histogram.columns[q:]):
        codes = histogram.tuples[:, q + i].astype(np.int64)
        values = histogram.values[q + i]
        if (codes < 0).any():
            codes = np.where(codes < 0, len(values), codes)
            values = np.append(values, np.array([None], dtype=object))
        sens_codes[name] = codes
        sens_values[name] = values
    weights = histogram.counts.astype(np.float64)
    return ClassStats.from_labels(class_ids, n_classes, weights, sens_codes, sens_values)


def reference_from_histogram(histogram: PartialHistogram) -> dict[str, dict[str | None, int]]:
    """Per column of a text histogram (``histogram_of(..., text=True)``), the count of each
    value (``None``: a missing cell): the form :func:`privgate.core.gate.with_reference` takes.
    """
    out: dict[str, dict[str | None, int]] = {}
    for j, name in enumerate(histogram.columns):
        counts: dict[str | None, int] = {}
        codes = histogram.tuples[:, j].astype(np.int64)
        for code, count in zip(codes.tolist(), histogram.counts.tolist(), strict=True):
            value = None if code < 0 else str(histogram.values[j][code])
            counts[value] = counts.get(value, 0) + int(count)
        out[name] = counts
    return out


def generalized_away_from_histogram(
    histogram: PartialHistogram, n_quasi_identifiers: int
) -> dict[str, str | None]:
    """:func:`privgate.core.gate.generalized_away` on a text histogram: the quasi-identifiers
    (its first ``n_quasi_identifiers`` columns) holding one value in every row."""
    if histogram.n_rows == 0:
        return {}
    out: dict[str, str | None] = {}
    for j, name in enumerate(histogram.columns[:n_quasi_identifiers]):
        codes = histogram.tuples[:, j]
        if (codes == codes[0]).all():
            out[name] = None if codes[0] < 0 else str(histogram.values[j][codes[0]])
    return out


def verify_parquet_release(
    path: str | Path,
    quasi_identifiers: Sequence[str],
    models: Sequence[PrivacyModel],
    *,
    input_rows: int | None = None,
    suppression_limit: float = 0.0,
    expected_columns: Sequence[str] | None = None,
    forbidden_columns: Sequence[str] = (),
    reference: Mapping[str, Mapping[str | None, int]] | None = None,
    expected_rows: int | None = None,
) -> GateDecision:
    """The gate's decision on a partitioned Parquet release (a folder of part files).

    Same parameters and result as :func:`privgate.core.gate.verify_table`; the release is read back
    from ``path`` partition by partition on the active dask scheduler. An unreadable release
    is a blocked release. ``reference`` is t-closeness' distribution, the input's (the one
    definition the search and the pandas gate use, see
    :func:`privgate.core.gate.sensitive_reference`; on this path
    :func:`privgate.core.scale.reference_stage` counts it on the input).
    ``expected_rows``: the rows the search's plan releases; written parts holding another
    number are not the release the search, the utility figures and the manifest describe
    (a writer that lost or repeated rows), so the release is blocked even when the rows
    that are there satisfy every model.
    """
    try:
        frame = dd.read_parquet(str(path))
        present = list(frame.columns)
    except Exception as exc:  # any reader failure means the release is unreadable
        return GateDecision(False, [f"cannot read release {path}: {exc}"], {})
    reasons = check_columns(present, quasi_identifiers, models, expected_columns, forbidden_columns)
    if any(r.startswith("cannot verify") for r in reasons):
        return GateDecision(False, reasons, {})
    sensitive = sensitive_columns_of(models)
    try:
        histogram = histogram_of(frame, [*quasi_identifiers, *sensitive], text=True)
    except Exception as exc:
        return GateDecision(False, [f"cannot read release {path}: {exc}"], {})
    stats = class_stats_from_histogram(histogram, len(quasi_identifiers))
    if reference:
        try:
            stats = with_reference(stats, reference)
        except VerificationError as exc:
            return GateDecision(False, [*reasons, str(exc)], {"rows": histogram.n_rows})
    decision = decide(stats, histogram.n_rows, models, reasons, input_rows, suppression_limit)
    if expected_rows is not None and histogram.n_rows != expected_rows:
        mismatch = (
            f"the written release has {histogram.n_rows} rows, the search's plan releases "
            f"{expected_rows}: the parts are not the release that was searched"
        )
        decision = GateDecision(False, [*decision.reasons, mismatch], decision.measurements)
    away = generalized_away_from_histogram(histogram, len(quasi_identifiers))
    decision.measurements["generalized_away"] = away
    return decision
