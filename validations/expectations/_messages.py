"""A suite's outcome in words, and the errors a failed suite raises."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from privgate.core.anonymize import check_k
from privgate.core.exceptions import GateBlockedError, SchemaValidationError
from privgate.validations.schema import HierarchyCoverageError

__all__ = [
    "InputContractError",
    "ReleaseContractError",
    "describe_failures",
    "format_check",
    "raise_for_input",
    "raise_for_release",
    "report",
]


class InputContractError(SchemaValidationError):
    """The input table fails its expectation suite (``failures``: the failing expectations)."""


class ReleaseContractError(GateBlockedError):
    """The release as written fails its expectation suite, so it is not published.

    ``decision`` holds the suite's summary (every expectation and its result).
    """


def _quote(value: Any) -> str:
    return repr(value) if not isinstance(value, str) or not value.startswith("... ") else value


def format_check(entry: Mapping[str, Any]) -> str:
    """One expectation's outcome in one line: what was expected and what was found."""
    text = entry["text"]
    if entry["success"]:
        return text
    if entry.get("error"):
        error = entry["error"]
        if "must either be None or of the same type" in error:
            error = "the column holds values that are not numbers"
        return f"{text}: could not be evaluated ({error})"
    count = entry.get("unexpected_count")
    if count:
        rows = entry.get("unexpected_rows") or []
        values = entry.get("unexpected_values") or []
        where = f" at row(s) {', '.join(str(r) for r in rows)}" if rows else ""
        more = "..." if count > len(rows) else ""
        quoted = ", ".join(_quote(v) for v in values)
        return f"{text}: {count} unexpected value(s){where}{more}: {quoted}{more}"
    return f"{text}: observed {entry.get('observed')!r}"


def describe_failures(summary: Mapping[str, Any]) -> str:
    """Every failed expectation of a summary, ``; ``-separated."""
    return "; ".join(format_check(e) for e in summary["expectations"] if not e["success"])


def raise_for_input(summary: Mapping[str, Any]) -> None:
    """Raise the error that fits the input suite's failures (nothing if it passed).

    Only too few rows: ``AnonymizationError`` (no k-anonymous release exists). Only values
    outside a hierarchy: ``HierarchyCoverageError``. Anything else: ``InputContractError``.
    """
    if summary["success"]:
        return
    failed = [e for e in summary["expectations"] if not e["success"]]
    checks = {e["check"] for e in failed}
    k, rows = summary.get("k"), summary["rows"]
    if checks == {"row_count_k"} and k is not None and rows < k:
        check_k(k, rows)  # raises AnonymizationError: no k-anonymous release exists
    message = (
        f"input fails {len(failed)} of {summary['evaluated']} expectation(s) of suite "
        f"{summary['suite']!r}: {describe_failures(summary)}"
    )
    error = HierarchyCoverageError if checks == {"hierarchy_domain"} else InputContractError
    raise error(message, failures=failed)


def raise_for_release(summary: Mapping[str, Any]) -> None:
    """Raise :class:`ReleaseContractError` if the release suite failed."""
    if summary["success"]:
        return
    raise ReleaseContractError(
        f"release fails {summary['failed']} of {summary['evaluated']} expectation(s) of suite "
        f"{summary['suite']!r}: {describe_failures(summary)}",
        summary,
    )


def report(summaries: Sequence[Mapping[str, Any]]) -> dict:
    """The summaries without the Great Expectations payloads: for a JSON report or a manifest."""
    return {s["kind"]: {k: v for k, v in s.items() if not k.startswith("gx_")} for s in summaries}
