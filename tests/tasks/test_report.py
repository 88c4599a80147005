"""The report task writes the HTML and attaches Markdown and table artifacts to the Prefect run."""

from __future__ import annotations

from privgate.core.report import build_report


def test_report_task_writes_html_and_artifacts(adult_run, tmp_path) -> None:
    from prefect import flow, get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.utilities.asyncutils import run_coro_as_sync

    from privgate.tasks.report import report_task

    report = build_report(status="published", **adult_run)

    @flow(name="report-artifacts-test")
    def run(path):
        from prefect.runtime import flow_run

        return report_task(report, path), flow_run.get_id()

    written, run_id = run(tmp_path / "adult" / "2026-11-22-0123456789ab" / "report.html")
    assert written.is_file() and written.read_text().startswith("<!DOCTYPE html>")

    async def artifacts():
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
            )

    found = {a.key: a for a in run_coro_as_sync(artifacts())}
    assert set(found) == {"privgate-report-adult", "privgate-measures-adult"}
    markdown = found["privgate-report-adult"]
    assert markdown.type == "markdown"
    assert markdown.data.startswith("# adult `2026-11-22-0123456789ab`: PUBLISHED")
    assert str(written) in markdown.data
    table = found["privgate-measures-adult"]
    assert table.type == "table"
    assert "svm ROC AUC" in str(table.data) and "5-anonymity" in str(table.data)
