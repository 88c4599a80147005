"""Data Docs that render styled without a network: their assets shipped inside the release.

Great Expectations' Data Docs pages load Bootstrap, jQuery, Font Awesome, bootstrap-table,
a date picker, a dark theme and Vega from CDNs, and their logo from S3; they end with a
newsletter footer. A release is read offline (an auditor's laptop, an air-gapped archive), and a
page that fetches from the web on opening also tells a third party that, and when, someone read
it. So every page of a Data Docs folder is rewritten to load nothing from the network:

- Bootstrap 4 (CSS and its JS bundle, which includes Popper), jQuery and Font Awesome are
  copied, from the pinned ``xstatic-*`` packages, into ``<docs>/vendor/`` once for all sites of
  the folder, and each page links them by a relative path;
- what is not shipped is dropped: the date picker and bootstrap-table (used for the index's
  filterable tables, whose content privgate's static summary already shows), the dark theme and
  Vega (charts our suites do not produce);
- the logo comes from the site's own ``static/images/`` (in the pages and in Great
  Expectations' stylesheet); the newsletter footer is removed. Font Awesome's brand icons are
  not shipped (the pages use none).

:func:`remote_references` lists whatever a page would still fetch (the tests require none).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

__all__ = ["VENDOR_DIR", "localize_data_docs", "remote_references"]

#: The folder, next to the Data Docs sites, that holds the shipped assets.
VENDOR_DIR = "vendor"

# (package, file inside the package's data folder, where it goes under vendor/)
_FILES = [
    ("bootstrap", "css/bootstrap.min.css", "bootstrap/css/bootstrap.min.css"),
    ("bootstrap", "js/bootstrap.bundle.min.js", "bootstrap/js/bootstrap.bundle.min.js"),
    ("jquery", "jquery.min.js", "jquery/jquery.min.js"),
    ("font_awesome", "css/all.min.css", "fontawesome/css/all.min.css"),
    # all.min.css finds its fonts in ../webfonts/; Chromium, Firefox and Safari use woff2.
    ("font_awesome", "webfonts/fa-solid-900.woff2", "fontawesome/webfonts/fa-solid-900.woff2"),
    ("font_awesome", "webfonts/fa-regular-400.woff2", "fontawesome/webfonts/fa-regular-400.woff2"),
    (
        "font_awesome",
        "webfonts/fa-v4compatibility.woff2",
        "fontawesome/webfonts/fa-v4compatibility.woff2",
    ),
]

# A CDN URL's distinctive part -> the shipped file replacing it (None: dropped).
_REPLACEMENTS: list[tuple[str, str | None]] = [
    ("bootstrap-prefers-dark", None),
    ("bootstrap-datepicker", None),
    ("bootstrap-table", None),
    ("npm/vega", None),
    ("popper.min.js", None),  # in bootstrap.bundle.min.js
    ("bootstrap/4.3.1/css/bootstrap.min.css", "bootstrap/css/bootstrap.min.css"),
    ("bootstrap/4.3.1/js/bootstrap.min.js", "bootstrap/js/bootstrap.bundle.min.js"),
    ("jquery-3.7.1.min.js", "jquery/jquery.min.js"),
    ("font-awesome/6.6.0/css/all.min.css", "fontawesome/css/all.min.css"),
]

_TAG = re.compile(
    r"<link\b[^>]*\bhref=\"(https?://[^\"]+)\"[^>]*>|"
    r"<script\b[^>]*\bsrc=\"(https?://[^\"]+)\"[^>]*>\s*</script>",
    re.IGNORECASE,
)
_LOGO = re.compile(r"https://great-expectations-web-assets\.s3[^\"')\s]*")
# The newsletter footer (and the call-to-action footer of older versions).
_FOOTER = re.compile(
    r"<footer>\s*<p>[^<]*newsletter.*?</footer>|"
    r"<footer\b[^>]*\bid=\"ge-cta-footer\".*?</footer>\s*<script>.*?</script>",
    re.DOTALL | re.IGNORECASE,
)
# A fetch on opening: src=, a stylesheet/icon href=, a CSS url() or @import with http(s).
_REMOTE = re.compile(
    r"\bsrc=\"(https?://[^\"]+)\"|"
    r"<link\b[^>]*\bhref=\"(https?://[^\"]+)\"|"
    r"url\(\s*['\"]?(https?://[^'\")]+)|"
    r"@import\s+['\"](https?://[^'\"]+)",
    re.IGNORECASE,
)


def _ship_assets(vendor: Path) -> None:
    import importlib

    for package, source, target in _FILES:
        data = Path(importlib.import_module(f"xstatic.pkg.{package}").BASE_DIR)
        destination = vendor / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        if not destination.exists():
            shutil.copyfile(data / source, destination)


def _relative(target: Path, page: Path) -> str:
    return Path(os.path.relpath(target, page.parent)).as_posix()


def _localize_page(html: str, page: Path, vendor: Path, site_dir: Path) -> str:
    def replace(match: re.Match) -> str:
        url = match.group(1) or match.group(2)
        for marker, shipped in _REPLACEMENTS:
            if marker in url:
                if shipped is None:
                    return ""
                local = _relative(vendor / shipped, page)
                if match.group(1):
                    return f'<link rel="stylesheet" href="{local}">'
                return f'<script src="{local}"></script>'
        return match.group(0)  # unknown: left for remote_references to report

    html = _TAG.sub(replace, html)
    html = _LOGO.sub(_relative(site_dir / "static" / "images" / "logo-long.png", page), html)
    return _FOOTER.sub("", html)


def localize_data_docs(docs_dir: str | Path) -> None:
    """Ship the assets into ``docs_dir/vendor/`` and rewrite every page under ``docs_dir``.

    ``docs_dir`` holds one Data Docs site per folder (``input/``, ``release/``); each site's own
    ``static/`` folder (Great Expectations' styles and images) is already local.
    """
    docs_dir = Path(docs_dir)
    vendor = docs_dir / VENDOR_DIR
    _ship_assets(vendor)
    for page in [*docs_dir.rglob("*.html"), *docs_dir.rglob("*.css")]:
        if vendor in page.parents:
            continue
        site_dir = next(p for p in page.parents if p.parent == docs_dir)
        text = page.read_text(encoding="utf-8")
        localized = _localize_page(text, page, vendor, site_dir)
        if localized != text:
            page.write_text(localized, encoding="utf-8")


def remote_references(docs_dir: str | Path) -> dict[str, list[str]]:
    """What each page (and shipped stylesheet) would fetch from the network: ``{file: urls}``.

    Plain links (``<a href>``) are not fetches and are not listed.
    """
    found: dict[str, list[str]] = {}
    docs_dir = Path(docs_dir)
    for path in [*docs_dir.rglob("*.html"), *docs_dir.rglob("*.css")]:
        urls = [next(g for g in m.groups() if g) for m in _REMOTE.finditer(path.read_text())]
        if urls:
            found[path.relative_to(docs_dir).as_posix()] = urls
    return found
