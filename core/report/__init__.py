"""The release report: one self-contained HTML file per release and per blocked run.

:func:`build_report` gathers a run's stage outputs into a :class:`ReleaseReport` (plain data),
:func:`render_html` turns it into HTML (inline style, figures as inline SVG written by
:mod:`._plots`, no plotting library), and :func:`write_report` writes it atomically.
:func:`markdown_summary` and :func:`summary_table` give the same summary in the shapes Prefect's
artifacts take.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from privgate.core.report._data import ReleaseReport, build_report, validation_summary
from privgate.core.report._dp import DP_SECTIONS, render_dp_html
from privgate.core.report._html import SECTIONS, render_html
from privgate.core.report._summary import artifact_key, markdown_summary, summary_table

__all__ = [
    "DP_SECTIONS",
    "REPORT_FILE",
    "SECTIONS",
    "ReleaseReport",
    "artifact_key",
    "blocked_report_path",
    "build_report",
    "markdown_summary",
    "render_dp_html",
    "render_html",
    "summary_table",
    "validation_summary",
    "write_html",
    "write_report",
]

#: The report's file name, next to ``manifest.json``.
REPORT_FILE = "report.html"


def blocked_report_path(output_directory: str | Path, dataset: str, release_id: str) -> Path:
    """Where a blocked run's report goes: ``<output>/<dataset>/blocked/<release-id>/report.html``.

    Release ids start with their date (``2026-11-22-...``), so the ``blocked`` folder can never
    be mistaken for a release, and it holds no release file.
    """
    return Path(output_directory) / dataset / "blocked" / release_id / REPORT_FILE


def write_report(report: ReleaseReport, path: str | Path) -> Path:
    """Render ``report`` and write it to ``path`` atomically (temporary file, then rename).

    Returns
    -------
    Path
        The written file.
    """
    return write_html(render_html(report), path)


def write_html(html: str, path: str | Path) -> Path:
    """Write a rendered report to ``path`` atomically (temporary file, fsync, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(html)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
