"""``privgate validate``: ingest, the pandera schema and the input suite, without Prefect."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privgate.core.exceptions import SchemaValidationError
from privgate.core.policy import ReleasePolicy
from privgate.validations.expectations._data_docs import write_data_docs
from privgate.validations.expectations._messages import format_check
from privgate.validations.expectations._run import typed_view, validate_input_expectations

__all__ = ["check_policy_input", "format_validation"]


def check_policy_input(policy: ReleasePolicy, docs_dir: str | Path | None = None) -> dict:
    """Ingest the policy's input and run both the pandera schema and the input suite.

    Raises what ingest raises (``IngestError``) and what building the hierarchies raises
    (``HierarchyError``); a table that fails the schema or the suite is reported, not raised.

    Returns
    -------
    dict
        ``valid``, ``input`` (path, sha256, rows, columns), ``schema`` (pandera: ``success``,
        ``problems``, ``message``, ``error``: the error type it raised) and ``expectations``
        (the input suite's summary), ``warnings``
        (:func:`privgate.validations.schema.input_warnings`: they leave the input valid);
        ``data_docs`` when ``docs_dir`` is given.
    """
    from privgate.core import stages
    from privgate.validations.schema import input_warnings, validate_input

    ingested = stages.ingest(policy)
    hierarchies = stages.load_hierarchies(policy)
    schema: dict[str, Any] = {"success": True, "problems": 0, "message": "", "error": None}
    try:
        frame = validate_input(ingested.frame, policy, hierarchies)
    except SchemaValidationError as exc:
        schema = {
            "success": False,
            "problems": len(exc.failures) or 1,
            "message": str(exc),
            "error": type(exc).__name__,
        }
        frame = typed_view(ingested.frame, policy)
    summary = validate_input_expectations(frame, policy, hierarchies)
    outcome = {
        "valid": schema["success"] and summary["success"],
        "dataset": policy.dataset,
        "input": {
            "path": ingested.path,
            "sha256": ingested.sha256,
            "rows": ingested.rows,
            "columns": [str(c) for c in ingested.frame.columns],
        },
        "schema": schema,
        "expectations": summary,
        # Facts about a valid input a data owner should see (an entirely missing
        # quasi-identifier); they do not make it invalid.
        "warnings": input_warnings(frame, policy),
    }
    if docs_dir is not None:
        outcome["data_docs"] = write_data_docs([summary], docs_dir)
    return outcome


def format_validation(outcome: Mapping[str, Any]) -> str:
    """A readable report of :func:`check_policy_input`: input, schema, every expectation."""
    source = outcome["input"]
    summary = outcome["expectations"]
    schema = outcome["schema"]
    columns = source["columns"]
    lines = [
        f"dataset:  {outcome['dataset']}",
        f"input:    {source['path']}",
        f"sha256:   {source['sha256']}",
        f"rows:     {source['rows']}",
        f"columns:  {len(columns)}: {', '.join(columns)}",
    ]
    if schema["success"]:
        lines.append(f"schema:   OK (pandera): {len(columns)} columns match the policy")
    else:
        lines.append(f"schema:   FAILED (pandera, {schema['error']}): {schema['message']}")
    lines.append(
        f"expectations: {summary['successful']} of {summary['evaluated']} passed "
        f"(Great Expectations suite {summary['suite']})"
    )
    if "sample" in summary:  # a large input: say which rows the suite saw
        lines.append(f"  note: {summary['sample']['note']}")
    for entry in summary["expectations"]:
        lines.append(f"  {'PASS' if entry['success'] else 'FAIL'}  {format_check(entry)}")
    for kind, path in (outcome.get("data_docs") or {}).items():
        lines.append(f"data docs ({kind}): {path}")
    for warning in outcome.get("warnings", []):
        lines.append(f"warning:  {warning}")
    if outcome["valid"]:
        lines.append("result:   VALID")
    else:
        problems = []
        if not schema["success"]:
            problems.append(f"schema: {schema['problems']} problem(s)")
        if not summary["success"]:
            problems.append(f"expectations: {summary['failed']} of {summary['evaluated']} failed")
        lines.append("result:   INVALID (" + "; ".join(problems) + ")")
    return "\n".join(lines)
