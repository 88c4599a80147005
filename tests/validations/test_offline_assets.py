"""Data Docs render styled with no network: their assets are shipped next to them.

Built the way `privgate validate --docs` and every release build them, then opened in Debian's
Chromium with every non-file request refused: Bootstrap's layout, jQuery, the icon font and the
logo must all come from the folder, nothing may be requested from the web, and the newsletter
footer is gone. A screenshot is kept in test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_server import CHROMIUM, CHROMIUM_FLAGS, browser_or_skip

from privgate.core.demo_data import write_census_csv
from privgate.core.policy import load_policy
from privgate.validations.expectations import check_policy_input
from privgate.validations.offline_assets import VENDOR_DIR, remote_references

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("offline-docs")
    data = folder / "census.csv"
    write_census_csv(data, n_rows=400)
    policy = load_policy(REPO / "policies" / "demo.yaml").with_overrides(
        **{"input.path": str(data)}
    )
    outcome = check_policy_input(policy, docs_dir=folder / "docs")
    assert outcome["valid"], outcome
    return folder / "docs"


def test_no_page_fetches_anything_from_the_network(docs):
    assert remote_references(docs) == {}
    pages = list(docs.rglob("*.html"))
    assert len(pages) >= 3
    for page in pages:
        text = page.read_text()
        assert "newsletter" not in text, page
        assert f"{VENDOR_DIR}/bootstrap/css/bootstrap.min.css" in text, page
    assert (docs / VENDOR_DIR / "fontawesome" / "webfonts" / "fa-solid-900.woff2").is_file()


@pytest.mark.slow  # a browser
def test_data_docs_render_styled_in_chromium_without_network(docs):
    sync_playwright = browser_or_skip()
    page_path = next((docs / "input" / "validations").rglob("*.html"))
    refused: list[str] = []
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})

            def only_files(route):
                if route.request.url.startswith("file:"):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", only_files)
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            page.evaluate("document.fonts.ready")
            seen = page.evaluate(
                """() => ({
                  navbar: getComputedStyle(document.querySelector('nav.navbar')).display,
                  bodyFont: getComputedStyle(document.body).fontFamily,
                  logo: document.querySelector('.navbar-brand img').naturalWidth,
                  jquery: typeof window.jQuery,
                  collapse: typeof (window.jQuery && window.jQuery.fn.collapse),
                  iconFont: [...document.fonts].some(
                    f => f.family.includes('Font Awesome') && f.status === 'loaded'),
                })"""
            )
            page.screenshot(path=str(ARTIFACTS / "data-docs-offline.png"))
        finally:
            browser.close()
    assert refused == []
    assert seen["navbar"] == "flex", seen  # Bootstrap's navbar; unstyled it is a block
    assert "Times" not in seen["bodyFont"], seen  # Bootstrap's font stack, not the default
    assert seen["logo"] > 0, seen
    assert seen["jquery"] == "function" and seen["collapse"] == "function", seen
    assert seen["iconFont"], seen
