"""Expectation tasks: the Great Expectations input and release suites, as run artifacts.

Thin wrappers over :mod:`validations.expectations`. Each task records its suite's results in
the flow run (a markdown summary and a table, one row per expectation) before it raises, so a
refused input or release can be reviewed in the Prefect UI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy
from privgate.validations.expectations import (
    ExpectationSample,
    format_check,
    raise_for_input,
    raise_for_release,
    report,
    validate_input_expectations,
    validate_release_expectations,
    write_data_docs,
)

#: Where, inside a release folder, the Data Docs sites and the JSON report are written.
DATA_DOCS_DIR = "data_docs"

#: The manifest's ``expectations.data_docs`` when the run left the pages out (otherwise it
#: maps each suite to its index page).
DATA_DOCS_LEFT_OUT = (
    "not built: the run's data_docs parameter was off (privgate run --no-data-docs)"
)

REPORT_FILE = "expectations.json"


def _artifact_key(policy: ReleasePolicy, kind: str) -> str:
    """Artifact keys allow lowercase letters, digits and dashes only."""
    dataset = re.sub(r"[^a-z0-9-]+", "-", policy.dataset.lower()).strip("-")
    return f"{dataset}-{kind}-expectations"


def _record(summary: Mapping[str, Any], policy: ReleasePolicy) -> None:
    """A markdown summary and a per-expectation table, attached to the current run."""
    status = "PASSED" if summary["success"] else "FAILED"
    lines = [
        f"### {summary['suite']}: {status}",
        "",
        f"{summary['successful']} of {summary['evaluated']} expectations met on "
        f"{summary['rows']} rows (Great Expectations {summary['gx_version']})."
        + (f" Note: {summary['sample']['note']}." if "sample" in summary else ""),
        "",
        "| | expectation | found |",
        "|---|---|---|",
    ]
    rows = []
    for entry in summary["expectations"]:
        found = "" if entry["success"] else format_check(entry).removeprefix(entry["text"] + ": ")
        mark = "PASS" if entry["success"] else "**FAIL**"
        lines.append(f"| {mark} | {entry['text']} | {found.replace('|', '/')} |")
        rows.append(
            {
                "status": "PASS" if entry["success"] else "FAIL",
                "expectation": entry["text"],
                "type": entry["expectation"],
                "column": entry["column"] or "",
                "observed": json.dumps(entry["observed"], default=str),
                "unexpected": entry["unexpected_count"] or 0,
                "found": found,
            }
        )
    key = _artifact_key(policy, summary["kind"])
    description = f"{summary['suite']}: {status}"
    create_markdown_artifact("\n".join(lines), key=key, description=description)
    create_table_artifact(rows, key=f"{key}-table", description=description)


def _log(summary: Mapping[str, Any]) -> None:
    log = get_run_logger()
    status = "PASSED" if summary["success"] else "FAILED"
    (log.info if summary["success"] else log.error)(
        "%s expectations: suite %s %s, %d of %d met",
        summary["kind"],
        summary["suite"],
        status,
        summary["successful"],
        summary["evaluated"],
    )


# Not cached: both suites take well under a second, the release suite writes into the staging
# folder of its own run, and hashing a whole table for a cache key would cost more than that.
@task(name="input-expectations", cache_policy=NO_CACHE, timeout_seconds=900)
def input_expectations_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    run_name: str | None = None,
    sampled: ExpectationSample | None = None,
) -> dict:
    """Run the input suite on the validated table; raise if it fails.

    ``sampled``: ``frame`` already is this seeded sample of a larger table (the partitioned
    path). Returns the suite's summary (pass it on to :func:`release_expectations_task`, which
    writes the Data Docs of both suites next to the release).
    """
    summary = validate_input_expectations(
        frame, policy, hierarchies, run_name=run_name, sampled=sampled
    )
    _record(summary, policy)
    _log(summary)
    if "sample" in summary:
        get_run_logger().info("input expectations: %s", summary["sample"]["note"])
    raise_for_input(summary)
    return summary


@task(name="release-expectations", cache_policy=NO_CACHE, timeout_seconds=900)
def release_expectations_task(
    release_file: Path,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    manifest: dict,
    input_summary: dict,
    release_dir: Path | None = None,
    data_docs: bool = True,
) -> dict:
    """Run the release suite on the staged file; raise if it fails, else write Data Docs.

    With ``release_dir`` (the staging folder), writes ``expectations.json`` and, unless
    ``data_docs`` is off, ``data_docs/input/`` and ``data_docs/release/`` into it, so they are
    published with the release, atomically. Returns a small dict for the manifest: each suite's
    counts and the Data Docs index pages (when written), relative to the release folder.
    """
    summary = validate_release_expectations(release_file, policy, hierarchies, manifest)
    _record(summary, policy)
    _log(summary)
    if "sample" in summary:
        get_run_logger().info("release expectations: %s", summary["sample"]["note"])
    raise_for_release(summary)
    summaries = [input_summary, summary]
    entry: dict[str, Any] = {
        s["kind"]: {
            "suite": s["suite"],
            "success": s["success"],
            "evaluated": s["evaluated"],
            "failed": s["failed"],
            **({"sample": s["sample"]} if "sample" in s else {}),
        }
        for s in summaries
    }
    if release_dir is not None:
        release_dir = Path(release_dir)
        # The HTML pages are about a quarter of a second of CPU and 9 MB per release; a run
        # that nobody reads them from can leave them out (expectations.json has every result).
        if data_docs:
            docs = write_data_docs(summaries, release_dir / DATA_DOCS_DIR)
            entry["data_docs"] = {
                kind: Path(path).relative_to(release_dir).as_posix() for kind, path in docs.items()
            }
            get_run_logger().info(
                "expectations: Data Docs written to %s", release_dir / DATA_DOCS_DIR
            )
        else:  # said in the manifest: a reader must not take the missing pages for a fault
            entry["data_docs"] = DATA_DOCS_LEFT_OUT
        (release_dir / REPORT_FILE).write_text(
            json.dumps(report(summaries), indent=2, default=str) + "\n", encoding="utf-8"
        )
        entry["report"] = REPORT_FILE
    return entry
