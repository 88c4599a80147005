"""Running a suite on a table, and the plain summary every caller reads."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ColumnType, ReleasePolicy
from privgate.validations.expectations._gx import ephemeral_context, gx_api
from privgate.validations.expectations._sample import ExpectationSample, expectation_sample
from privgate.validations.expectations._suites import build_input_suite, build_release_suite

__all__ = [
    "QUOTED",
    "run_suite",
    "typed_view",
    "validate_input_expectations",
    "validate_release_expectations",
]

#: Unexpected values and rows kept per expectation in summaries and messages.
QUOTED = 10

#: A value longer than this is quoted by its start and its length.
QUOTED_CHARS = 60


def _plain(value: Any) -> Any:
    """A JSON-ready copy: numpy scalars to Python, long text and lists shortened."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value[:QUOTED]]
        return items + ([f"... {len(value) - QUOTED} more"] if len(value) > QUOTED else [])
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (ValueError, AttributeError):
            return str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA:
        return None
    if isinstance(value, str) and len(value) > QUOTED_CHARS:
        return f"{value[:40]}... ({len(value)} characters)"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _entry(expectation: Any, result: Any) -> dict:
    tag = (expectation.meta or {}).get("privgate", {})
    entry = {
        "expectation": expectation.expectation_type,
        "column": getattr(expectation, "column", None),
        "check": tag.get("check"),
        "text": tag.get("text", expectation.expectation_type),
        "success": bool(result.success) if result is not None else False,
        "observed": None,
        "unexpected_count": None,
        "unexpected_values": [],
        "unexpected_rows": [],
        "error": None,
    }
    if result is None:
        entry["error"] = "not evaluated"
        return entry
    info = result.exception_info or {}
    messages = [info.get("exception_message")] if "raised_exception" in info else []
    messages += [v.get("exception_message") for v in info.values() if isinstance(v, dict)]
    messages = [m for m in messages if m]
    if messages:
        entry["error"] = messages[0]
    res = result.result or {}
    entry["observed"] = _plain(res.get("observed_value"))
    if res.get("details"):
        entry["details"] = _plain(res["details"])
    if res.get("unexpected_count") is not None:
        entry["unexpected_count"] = int(res["unexpected_count"])
        entry["unexpected_values"] = [_plain(v) for v in res.get("partial_unexpected_list") or []]
        entry["unexpected_rows"] = [
            _plain(i) for i in res.get("partial_unexpected_index_list") or []
        ]
    return entry


#: What a suite is first validated with: every expectation's outcome, observed value, unexpected
#: count and first unexpected values, without the unexpected rows' index (Great Expectations'
#: ``BASIC``). Asking every expectation for the index (``SUMMARY``) added two metrics per column
#: expectation, a boolean selection of the table each, and was about a third of a passing
#: suite's CPU on Adult; only an expectation that found unexpected values has rows to name.
_FIRST_PASS = {"result_format": "BASIC", "partial_unexpected_count": QUOTED}

#: What an expectation that found unexpected values is validated again with: its first
#: unexpected rows too (``SUMMARY``), which the messages quote ("at row(s) 3, 17").
_DETAILED = {"result_format": "SUMMARY", "partial_unexpected_count": QUOTED}

#: The keys ``SUMMARY`` adds to a column expectation's result; both are empty when it found no
#: unexpected value, so a first-pass result without any gets them as they would be.
_SUMMARY_ONLY_KEYS = ("partial_unexpected_counts", "partial_unexpected_index_list")


def run_suite(suite: Any, frame: pd.DataFrame, kind: str, run_name: str | None) -> dict:
    """Validate ``frame`` against ``suite`` in a fresh ephemeral context; a plain summary.

    Two passes, one result: every expectation in :data:`_FIRST_PASS`, then those that found
    unexpected values (or failed) again in :data:`_DETAILED`, their results replacing the first
    ones. The result is the one a single ``SUMMARY`` validation gives (the Data Docs and the
    messages read it), at the cost of the first pass alone when nothing was unexpected.
    """
    g = gx_api()
    from great_expectations.validator.v1_validator import Validator

    context = ephemeral_context()
    batch_definition = (
        context.data_sources.add_pandas("privgate")
        .add_dataframe_asset(kind)
        .add_batch_definition_whole_dataframe("whole table")
    )
    suite = context.suites.add(suite)
    # A validator of its own per pass (Batch.validate would build one too, after get_batch had
    # already read and fingerprinted the table once more).
    batch = {"dataframe": frame}
    result = Validator(batch_definition, _FIRST_PASS, batch).validate_expectation_suite(suite)
    again = [i for i, r in enumerate(result.results) if _needs_detail(r)]
    if again:
        detailed = Validator(batch_definition, _DETAILED, batch)  # reads the batch once
        by_id = {e.id: e for e in suite.expectations}
        for i in again:
            expectation = by_id[result.results[i].expectation_config.id]
            result.results[i] = detailed.validate_expectation(expectation)
    for r in result.results:
        if r.result and r.result.get("unexpected_count") == 0:
            for key in _SUMMARY_ONLY_KEYS:
                r.result.setdefault(key, [])
    by_id = {r.expectation_config.id: r for r in result.results}
    entries = [_entry(e, by_id.get(e.id)) for e in suite.expectations]
    failed = sum(not e["success"] for e in entries)
    run_time = datetime.now(UTC)
    return {
        "kind": kind,
        "suite": suite.name,
        "success": failed == 0,
        "rows": len(frame),
        "columns": [str(c) for c in frame.columns],
        "evaluated": len(entries),
        "successful": len(entries) - failed,
        "failed": failed,
        "expectations": entries,
        "run_name": run_name or run_time.strftime("%Y%m%dT%H%M%SZ"),
        "run_time": run_time.isoformat(),
        "gx_version": g.gx.__version__,
        "gx_suite": _json_ready(suite.to_json_dict()),
        "gx_result": _json_ready(result.to_json_dict()),
    }


def _needs_detail(result: Any) -> bool:
    """Whether a first-pass result lacks something ``SUMMARY`` would show: the expectation
    failed, raised, or found unexpected values (whose rows the messages name)."""
    return not result.success or bool((result.result or {}).get("unexpected_count"))


def _json_ready(value: Any) -> Any:
    from great_expectations.util import convert_to_json_serializable

    return convert_to_json_serializable(value)


def typed_view(frame: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """The ingested text table with each numeric column parsed where it can be.

    For the input suite when the pandera schema has refused the table (``privgate validate``
    still reports every expectation): a numeric column whose every cell parses becomes
    ``Int64`` / ``Float64``; one with an unparseable cell stays an object column of numbers and
    the offending text, so the type expectation names exactly those cells.
    """
    columns = {}
    for name in frame.columns:
        column = frame[name]
        spec = policy.columns.get(str(name))
        numeric = spec is not None and spec.is_numeric
        if not numeric or pd.api.types.is_numeric_dtype(column.dtype):
            columns[name] = column
            continue
        parsed = pd.to_numeric(column.astype("object"), errors="coerce")
        bad = parsed.isna() & column.notna()
        if spec.type is ColumnType.INTEGER:
            bad |= parsed.notna() & (parsed % 1 != 0)
        if not bad.any():
            columns[name] = parsed.astype("Int64" if spec.type is ColumnType.INTEGER else "Float64")
            continue
        cast = int if spec.type is ColumnType.INTEGER else float
        values = [
            None if pd.isna(raw) else (raw if wrong else cast(number))
            for raw, number, wrong in zip(column.astype("object"), parsed, bad, strict=True)
        ]
        columns[name] = pd.Series(values, index=frame.index, dtype="object")
    return pd.DataFrame(columns, index=frame.index)


def _na_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as ``string`` (NA-backed), the dtype the type expectations name.

    pandera coerces to pandas 3's NaN-backed ``str`` dtype, which Great Expectations' type
    names cannot express.
    """
    text = [
        name
        for name, dtype in frame.dtypes.items()
        if isinstance(dtype, pd.StringDtype) and dtype != pd.StringDtype()
    ]
    return frame.astype(dict.fromkeys(text, "string")) if text else frame


def validate_input_expectations(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    *,
    run_name: str | None = None,
    row_bounds: tuple[int | None, int | None] | None = None,
    sampled: ExpectationSample | None = None,
) -> dict:
    """Run the input suite on ``frame`` (pandera's coerced table, or :func:`typed_view`).

    ``sampled``: ``frame`` already is this sample's rows of a larger table (the partitioned
    path reads only those), so the suite runs on it as on a sample and says so.

    Returns a summary: ``success``, counts, one entry per expectation (``text``, ``success``,
    ``observed``, ``unexpected_count``, up to 10 ``unexpected_values`` / ``unexpected_rows``,
    ``error``), and the Great Expectations suite and result for :func:`write_data_docs`.
    """
    sample = sampled if sampled is not None else expectation_sample(len(frame))
    if sample is not None and sampled is None:  # a large table: a seeded sample of its rows
        frame = frame.iloc[sample.rows]
    suite = build_input_suite(policy, hierarchies, row_bounds, whole_table=sample is None)
    summary = run_suite(suite, _na_strings(frame), "input", run_name)
    summary["k"] = policy.privacy.k if policy.privacy is not None else None
    if sample is not None:
        summary["sample"] = {**sample.to_dict(), "note": sample.describe("input")}
    return summary


def validate_release_expectations(
    release_file: str | Path,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    manifest: Mapping[str, Any],
    *,
    run_name: str | None = None,
) -> dict:
    """Run the release suite on the file as written, every cell read back as text.

    See :func:`build_release_suite` for what ``manifest`` must hold. An unreadable file raises
    ``VerificationError`` (as the gate does).
    """
    from privgate.core.gate import read_release_codes

    # As codes first (the cells the gate reads, no Python string per cell), then as text only
    # the rows the suite runs on: every row, or a seeded sample of a large release.
    columns = read_release_codes(release_file)
    n_rows = len(next(iter(columns.values()))) if columns else 0
    sample = expectation_sample(n_rows)
    rows = None if sample is None else sample.rows
    frame = pd.DataFrame(
        {name: pd.Series(c.text(rows), dtype="object") for name, c in columns.items()}
    )
    del columns
    suite = build_release_suite(policy, hierarchies, manifest, whole_table=sample is None)
    summary = run_suite(suite, frame, "release", run_name or manifest.get("release_id"))
    summary["k"] = policy.privacy.k if policy.privacy is not None else None
    summary["file"] = str(release_file)
    if sample is not None:
        summary["sample"] = {**sample.to_dict(), "note": sample.describe("release")}
    return summary
