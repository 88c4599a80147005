"""The release report of Adult runs: every section, every figure, nothing fetched from outside."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import pytest

from privgate.core.report import (
    SECTIONS,
    ReleaseReport,
    artifact_key,
    blocked_report_path,
    build_report,
    markdown_summary,
    render_html,
    summary_table,
    write_report,
)

PNG = b"\x89PNG\r\n\x1a\n"


class _Collector(HTMLParser):
    """Sections in order, each section's images, and every URL the page references."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: dict[str, list[str]] = {}
        self.urls: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        if tag == "section":
            self.sections.append(attrs["id"])
        if tag == "img":
            self.images.setdefault(self.sections[-1], []).append(attrs["src"])
        for key in ("src", "href"):
            if key in attrs:
                self.urls.append(attrs[key])


def _parse(html: str) -> _Collector:
    collector = _Collector()
    collector.feed(html)
    return collector


@pytest.fixture(scope="module")
def published(adult_run) -> ReleaseReport:
    return build_report(status="published", **adult_run)


@pytest.fixture(scope="module")
def published_html(published, tmp_path_factory) -> str:
    """The published report as :func:`write_report` writes it, read back from the file.

    Rendered once for the module: drawing its eight figures is most of a test's time, and the
    tests below read different parts of the same page."""
    path = write_report(published, tmp_path_factory.mktemp("report") / "report.html")
    return path.read_text(encoding="utf-8")


def test_report_has_every_section_in_order_and_embeds_its_plots(published, published_html) -> None:
    assert published.passed and published.blocked_by == []
    html = published_html
    page = _parse(html)
    assert (
        tuple(page.sections)
        == SECTIONS
        == (
            "decision",
            "privacy",
            "risk",
            "utility",
            "validation",
            "run",
        )
    )
    # privacy: class sizes, risk, and the sensitive column (l-diversity + t-closeness panels)
    assert len(page.images["privacy"]) == 3
    # risk: measures before/after and uniqueness by attribute combination, one figure
    assert len(page.images["risk"]) == 1
    # utility: classification, clustering, loss + total variation, generalization levels
    assert len(page.images["utility"]) == 4
    for src in page.images["privacy"] + page.images["risk"] + page.images["utility"]:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG)
    # self-contained: no script, no stylesheet link, no URL but data: images and in-page anchors
    assert "script" not in page.tags and "link" not in page.tags
    assert all(u.startswith(("data:image/png;base64,", "#")) for u in page.urls)
    assert not re.search(r"https?://", html)
    assert "PUBLISHED" in html and "5-anonymity" in html and "0.3-closeness" in html


def test_report_shows_the_risk_before_and_after(published, published_html) -> None:
    """The input's and the release's risk, as privgate.core.risk measures them."""
    before, after = published.risk["before"], published.risk["after"]
    assert before["prosecutor"]["highest"] == 1.0  # Adult has sample uniques
    assert after["prosecutor"]["highest"] <= 1 / 5 + 1e-12  # the release is 5-anonymous
    assert after["sample_uniques"] == 0
    assert before["drivers"]["top"]["1"][0]["unique_share"] >= 0
    html = published_html
    risk = html[html.index('id="risk"') : html.index('id="utility"')]
    assert "highest prosecutor risk" in risk and "strongest combination" in risk
    assert f"{after['prosecutor']['average']:.4f}" in risk


def test_report_shows_the_numbers(published, published_html) -> None:
    html = published_html
    u = published.utility
    assert f"{u['loss']['total']:.4f}" in html
    for s in u["classification"]["scores"]:
        assert f"{s['auc_release']:.4f}" in html and f"{s['auc_original']:.4f}" in html
    for s in u["clustering"]["scores"]:
        assert f"{s['f_measure']:.4f}" in html and f"{s['match_point']:.4f}" in html
    levels = published.transformation["levels"]
    assert set(levels) == set(published.transformation["heights"]) and "level" in html
    assert "salary-class" in html and "30,162" in html  # validation summary
    json.dumps(published.to_dict())  # plain data all the way down


def test_blocked_report_leads_with_the_reasons(adult_run, tmp_path) -> None:
    from privgate.core.policy import UtilityThresholds
    from privgate.core.utility import check_utility

    decision = check_utility(adult_run["utility"], UtilityThresholds(max_loss=0.01))
    report = build_report(status="blocked", **{**adult_run, "utility_decision": decision})
    assert report.blocked_by == ["utility"] and not report.passed
    path = write_report(report, blocked_report_path(tmp_path, "adult", report.release_id))
    assert path == tmp_path / "adult" / "blocked" / report.release_id / "report.html"
    html = path.read_text(encoding="utf-8")
    decision_part = html[html.index('id="decision"') : html.index('id="privacy"')]
    assert "BLOCKED by the utility gate" in decision_part
    assert "above max_loss = 0.01" in decision_part
    markdown = markdown_summary(report)
    assert markdown.startswith("# adult `2026-11-22-0123456789ab`: BLOCKED by the utility gate")
    assert "above max_loss = 0.01" in markdown


@pytest.mark.slow  # its fixture runs Mondrian and the utility models on Adult: 19 s under load
def test_mondrian_report_has_no_levels_but_all_sections(adult_mondrian_run) -> None:
    report = build_report(status="dry-run", **adult_mondrian_run)
    html = render_html(report)
    page = _parse(html)
    assert tuple(page.sections) == SECTIONS
    assert len(page.images["privacy"]) == 2  # no l-diversity or t-closeness here
    assert len(page.images["utility"]) == 4
    assert report.transformation["levels"] == {}
    assert report.transformation["partitions"] > 1000
    assert "local recoding" in html and "dry run" in html


def test_markdown_and_table_summaries(published) -> None:
    markdown = markdown_summary(published, "/x/report.html")
    assert markdown.startswith("# adult `2026-11-22-0123456789ab`: PUBLISHED")
    assert "| svm |" in markdown and "| kmeans | 3 |" in markdown
    assert "Full report: `/x/report.html`" in markdown
    rows = summary_table(published)
    assert set(rows[0]) == {"section", "measure", "original", "release", "limit", "holds"}
    by_measure = {r["measure"]: r for r in rows}
    assert by_measure["5-anonymity"]["holds"] == "yes"
    assert by_measure["svm ROC AUC"]["limit"] == "ratio >= 0.5"
    assert by_measure["information loss (total)"]["limit"] == "0.8000"
    assert artifact_key(published, "report") == "privgate-report-adult"


def test_status_is_checked() -> None:
    with pytest.raises(ValueError, match="'status' parameter of ReleaseReport"):
        ReleaseReport(dataset="d", release_id="r", status="maybe")
    with pytest.raises(ValueError, match="blocked by the utility gate cannot have status"):
        ReleaseReport(dataset="d", release_id="r", status="published", blocked_by=["utility"])
