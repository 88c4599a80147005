"""The release report of Adult runs: every section, every figure, nothing fetched from outside."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
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


class _Collector(HTMLParser):
    """Sections in order, each section's figures (inline SVG), and every URL the page
    references."""

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
        if tag == "svg":
            self.images.setdefault(self.sections[-1], []).append(attrs["aria-label"])
        for key in ("src", "href", "xlink:href"):
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

    Rendered once for the module: the tests below read different parts of the same page."""
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
    assert page.images["privacy"] == [
        "class size histogram",
        "risk distribution",
        "sensitive column salary-class",
    ]
    # self-contained: no script, no stylesheet link, no image file, no font, no URL but
    # in-page anchors (the figures are SVG markup in the page)
    assert not page.tags & {"script", "link", "img", "object", "iframe", "image", "use"}
    assert all(u.startswith("#") for u in page.urls)
    assert not re.search(r"https?://|url\(|@import|@font-face", html)
    assert "PUBLISHED" in html and "5-anonymity" in html and "0.3-closeness" in html


def _charts(html: str) -> dict[str, ET.Element]:
    """Every figure of the page (inline SVG, well-formed XML), by its label."""
    charts = [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]
    return {svg.get("aria-label"): svg for svg in charts}


def _bars(svg: ET.Element, **data: str) -> list[ET.Element]:
    return [
        rect
        for rect in svg.iter("rect")
        if rect.get("class") == "bar" and all(rect.get(f"data-{k}") == v for k, v in data.items())
    ]


def _values(bars: list[ET.Element]) -> list[float]:
    return [float(bar.get("data-value")) for bar in bars]


def _texts(svg: ET.Element) -> list[str]:
    return [" ".join(t.itertext()) for t in svg.iter("text")]


def _titles(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter("title")]


def _assert_lengths_proportional(svg: ET.Element) -> None:
    """In each panel of a linear axis, every bar is as long as its value (from its base)
    times one scale: the scale of the panel's longest bar."""
    panels: dict[tuple, list[tuple[float, float]]] = {}
    for bar in _bars(svg):
        axis = bar.get("data-axis")
        if axis == "x-log":
            continue
        span = float(bar.get("data-value")) - float(bar.get("data-base"))
        length = float(bar.get("height" if axis == "y" else "width"))
        panels.setdefault((bar.get("data-panel"), axis), []).append((span, length))
    assert panels, svg.get("aria-label")
    for bars in panels.values():
        longest_span, longest = max(bars)
        assert longest_span > 0 and longest > 20
        for span, length in bars:
            assert length == pytest.approx(longest / longest_span * span, abs=0.02)


def test_every_chart_carries_its_numbers(published, published_html) -> None:
    """Each figure draws the report's own numbers: bar lengths proportional to them, the
    values as labels or tooltips, the limits (k, 1/k, t, majority class) as marked lines."""
    charts = _charts(published_html)
    assert len(charts) == 8
    for svg in charts.values():
        _assert_lengths_proportional(svg)
    p, u, t = published.privacy, published.utility, published.transformation

    sizes = {int(s): int(c) for s, c in p["class_sizes"].items()}
    svg = charts["class size histogram"]
    for panel, weight in (("0", lambda s, c: c), ("1", lambda s, c: s * c)):
        bars = _bars(svg, panel=panel)
        assert sum(_values(bars)) == sum(weight(s, c) for s, c in sizes.items())
        for bar in bars:  # each bin holds exactly the classes whose size falls in it
            low, high = float(bar.get("data-low")), float(bar.get("data-high"))
            last = bar is bars[-1]
            inside = [(s, c) for s, c in sizes.items() if low <= s < high or (last and s == high)]
            assert float(bar.get("data-value")) == sum(weight(s, c) for s, c in inside)
    assert "k = 5" in _titles(svg) and "k = 5" in _texts(svg)

    records = sum(s * c for s, c in sizes.items())
    uppers = (0.01, 0.02, 0.05, 0.1, 0.2, 1 / 3, 0.5, 1.0)
    shares = [0.0] * len(uppers)
    for s, c in sizes.items():
        shares[next(i for i, up in enumerate(uppers) if 1 / s <= up + 1e-12)] += s * c / records
    svg = charts["risk distribution"]
    assert _values(_bars(svg)) == pytest.approx([100 * share for share in shares])
    assert all(f"{100 * share:.1f}%" in _texts(svg) for share in shares)
    assert "1/k = 0.2" in _titles(svg)

    entry = p["sensitive"]["salary-class"]
    svg = charts["sensitive column salary-class"]
    distinct = {int(v): int(c) for v, c in entry["distinct_per_class"].items()}
    assert _values(_bars(svg, panel="0")) == list(distinct.values())
    assert sum(_values(_bars(svg, panel="1"))) == len(entry["t_distances"]) == sum(sizes.values())
    assert "t = 0.3" in _titles(svg)

    before, after = published.risk["before"], published.risk["after"]
    svg = charts["re-identification risk"]
    for label, analysis in (("original", before), ("release", after)):
        measures = [
            analysis["prosecutor"]["highest"],
            analysis["prosecutor"]["average"],
            analysis["prosecutor"]["share_at_risk"],
            analysis["marketer"],
            analysis["sample_uniques"] / analysis["records"],
        ]
        assert _values(_bars(svg, series=label)) == pytest.approx(measures)
        top = analysis["drivers"]["top"]
        points = [float(c.get("data-value")) for c in svg.iter("circle")
                  if c.get("data-series") == label]  # fmt: skip
        assert points == [top[n][0]["unique_share"] for n in sorted(top, key=int)]

    svg = charts["classification before and after"]
    scores = u["classification"]["scores"]
    for key, panel in (("auc", "0"), ("accuracy", "1")):
        for label in ("original", "release"):
            values = [s[f"{key}_{label}"] for s in scores]
            assert _values(_bars(svg, panel=panel, series=label)) == pytest.approx(values)
            assert all(f"{v:.3f}" in _texts(svg) for v in values)
    majority = u["classification"]["majority_accuracy"]
    assert f"majority class {majority:.3f}" in _titles(svg)

    svg = charts["clustering agreement"]
    for label, key in (("F-measure", "f_measure"), ("MatchPoint", "match_point")):
        values = [s[key] for s in u["clustering"]["scores"]]
        assert _values(_bars(svg, series=label)) == pytest.approx(values)
        assert all(f"{v:.3f}" in _texts(svg) for v in values)

    svg = charts["loss per attribute"]
    assert _values(_bars(svg, panel="0")) == list(u["loss"]["per_attribute"].values())
    assert _values(_bars(svg, panel="1")) == list(u["distribution"].values())
    names = [*u["loss"]["per_attribute"], *u["distribution"]]
    assert [text for text in _texts(svg) if text in names] == names

    svg = charts["generalization per quasi-identifier"]
    names = list(t["labels"])
    assert _values(_bars(svg, series="level")) == [t["levels"][n] for n in names]
    assert _values(_bars(svg, series="height")) == [max(t["heights"][n], 1) for n in names]
    assert all(f"level {t['levels'][n]}/{max(t['heights'][n], 1)}" in _texts(svg) for n in names)


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
