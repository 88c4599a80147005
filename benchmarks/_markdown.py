"""Writing one benchmark's section of BENCHMARKS.md without touching the others."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The file's opening when a benchmark creates it.
DEFAULT_INTRO = "# Benchmarks\n"


def upsert_section(path: Path, heading: str, text: str, intro: str = DEFAULT_INTRO) -> None:
    """Replace the section under ``heading`` (a ``## `` line) in ``path``, or append it.

    Every other section is kept as it is; the file is created with ``intro`` if missing and
    replaced atomically, so a concurrent reader never sees half a file.
    """
    current = path.read_text(encoding="utf-8") if path.exists() else intro
    lines = current.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == heading), None)
    new = text.rstrip("\n") + "\n"
    if start is None:
        body = current.rstrip("\n") + "\n\n" + new
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        after = "".join(lines[end:])
        body = "".join(lines[:start]) + new + ("\n" + after if after else "")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".BENCHMARKS.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
