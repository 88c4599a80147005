"""Data Docs: each suite's pages, written next to a release and readable offline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from privgate.validations.expectations._gx import SITE_NAME, ephemeral_context, gx_api
from privgate.validations.expectations._messages import format_check
from privgate.validations.offline_assets import localize_data_docs

__all__ = ["write_data_docs"]


def write_data_docs(summaries: Sequence[Mapping[str, Any]], directory: str | Path) -> dict:
    """Write one Data Docs site per summary, in ``directory/<kind>/``.

    Each site holds the suite's page (every expectation, as Great Expectations renders it) and
    the validation result's page (each expectation with its observed value and, when it failed,
    the unexpected values). Returns ``{kind: path of the site's index.html}``.
    """
    g = gx_api()
    from great_expectations.core.expectation_validation_result import (
        expectationSuiteValidationResultSchema,
    )
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    directory = Path(directory)
    written = {}
    for summary in summaries:
        site_dir = directory / summary["kind"]
        site_dir.mkdir(parents=True, exist_ok=True)
        context = ephemeral_context(site_dir)
        suite_dict = dict(summary["gx_suite"])
        suite_dict.pop("id", None)
        context.suites.add(g.gx.ExpectationSuite(**suite_dict))
        result = expectationSuiteValidationResultSchema.load(summary["gx_result"])
        key = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=summary["suite"]),
            run_id=RunIdentifier(
                run_name=summary["run_name"],
                run_time=datetime.fromisoformat(summary["run_time"]),
            ),
            batch_identifier=summary["kind"],
        )
        result.meta["run_id"] = key.run_id
        context.validation_results_store.set(key, result)
        context.build_data_docs(site_names=[SITE_NAME])
        _make_readable_offline(site_dir, summary)
        written[summary["kind"]] = str(site_dir / "index.html")
    localize_data_docs(directory)  # the CDN assets shipped in directory/vendor/: no network
    return written


#: Data Docs take their icon font, styles and scripts from CDNs. Offline, the status icons are
#: blank and the index page's tables (filled by JavaScript) are empty; these styles and the
#: static summary below keep every page readable without any network access.
_OFFLINE_CSS = """
<style id="privgate-offline">
i.fa-check-circle::before { content: "\\2714  PASS"; color: #1a7f37; }
i.fa-times::before { content: "\\2718  FAIL"; color: #c62828; }
i.fa-exclamation-triangle::before { content: "\\26A0  ERROR"; color: #b26a00; }
i.fa-check-circle::before, i.fa-times::before, i.fa-exclamation-triangle::before {
  font-family: sans-serif !important; font-style: normal; font-weight: bold; white-space: nowrap;
}
#privgate-summary table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; }
#privgate-summary th, #privgate-summary td {
  border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top;
}
#privgate-summary .pass { color: #1a7f37; font-weight: bold; }
#privgate-summary .fail { color: #c62828; font-weight: bold; }
</style>
"""

_INDEX_ANCHOR = '<div id="section-1-content-block-2"'


def _summary_html(site_dir: Path, summary: Mapping[str, Any]) -> str:
    """A static table of the suite's expectations and their results, for the index page."""
    from html import escape

    pages = sorted((site_dir / "validations").rglob("*.html"))
    link = pages[-1].relative_to(site_dir).as_posix() if pages else ""
    suite_page = "expectations/" + "/".join(summary["suite"].split(".")) + ".html"
    status = "PASSED" if summary["success"] else "FAILED"
    rows = []
    for entry in summary["expectations"]:
        mark = (
            '<span class="pass">PASS</span>'
            if entry["success"]
            else '<span class="fail">FAIL</span>'
        )
        found = "" if entry["success"] else format_check(entry).removeprefix(entry["text"] + ": ")
        observed = entry.get("observed")
        if entry["success"] and observed is not None:
            found = f"observed {observed}"
        elif entry["success"] and entry.get("unexpected_count") == 0:
            found = "0 unexpected values"
        rows.append(
            f"<tr><td>{mark}</td><td>{escape(entry['text'])}</td>"
            f"<td><code>{escape(entry['expectation'])}</code></td><td>{escape(str(found))}</td></tr>"
        )
    return (
        f'<section id="privgate-summary" class="container-fluid pl-3">'
        f"<h3>{escape(summary['suite'])}: {status}, {summary['successful']} of "
        f"{summary['evaluated']} expectations met</h3>"
        f"<p>{summary['rows']} rows, run {escape(str(summary['run_name']))} at "
        f"{escape(summary['run_time'])}. "
        f'<a href="{escape(link)}">Validation result page</a> | '
        f'<a href="{escape(suite_page)}">Expectation suite page</a></p>'
        "<table><tr><th>Status</th><th>Expectation</th><th>Type</th><th>Found</th></tr>"
        + "".join(rows)
        + "</table></section>"
    )


def _make_readable_offline(site_dir: Path, summary: Mapping[str, Any]) -> None:
    """Add offline styles to every page and a static results table to the index page."""
    for page in site_dir.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if 'id="privgate-offline"' in html:
            continue
        html = html.replace("</head>", _OFFLINE_CSS + "</head>", 1)
        if page == site_dir / "index.html":
            block = _summary_html(site_dir, summary)
            if _INDEX_ANCHOR in html:
                html = html.replace(_INDEX_ANCHOR, block + _INDEX_ANCHOR, 1)
            else:
                html = html.replace("</body>", block + "</body>", 1)
        page.write_text(html, encoding="utf-8")
