"""Report task: write the release report and attach its summary to the Prefect run."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.logging import get_run_logger

from privgate.core.report import (
    ReleaseReport,
    artifact_key,
    markdown_summary,
    summary_table,
    write_report,
)


@task(name="report", timeout_seconds=900)
def report_task(
    report: ReleaseReport, path: Path | None, location: str | None = None
) -> Path | None:
    """Write the self-contained HTML report (unless ``path`` is None) and attach its summary
    to the run as Markdown and table artifacts; ``location`` is where readers will find the
    file (default: ``path``)."""
    written = write_report(report, path) if path is not None else None
    where = location or (str(written) if written else None)
    description = f"{report.dataset} {report.release_id}: {report.status}"
    create_markdown_artifact(
        markdown=markdown_summary(report, where),
        key=artifact_key(report, "report"),
        description=description,
    )
    create_table_artifact(
        table=summary_table(report), key=artifact_key(report, "measures"), description=description
    )
    get_run_logger().info("report: %s", where or "artifacts only")
    return written
