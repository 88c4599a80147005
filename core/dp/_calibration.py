"""MST/AIM budget searches kept on disk, found again by their public setting only.

Why: the budget search of :mod:`privgate.core.dp.synthetic` (ρ within a few ulps of the
largest OpenDP accepts, MST's measure split, a rehearsal on an empty table) is a function of
public settings alone. Kept per process, every pytest-xdist worker and every ``privgate run``
child paid it again: then thousands of OpenDP privacy-map checks, since
:mod:`~privgate.core.dp._scale_search` a few CPU seconds (a few OpenDP builds and the
rehearsal), which a kept file still spares. Opt-in: a directory
named by ``PRIVGATE_CALIBRATION_DIR`` (the test suite sets one under ``.pytest_cache``).

What a file holds: the public setting it was searched for (declared columns, their keys, the
:class:`~privgate.core.dp.synthetic.SyntheticConfig`, OpenDP's version) and the ``rho`` and
``mst_measure_split`` found. The search never sees a record, so nothing in a file is derived
from one (``tests/core/dp/test_calibration.py``).

What is trusted: nothing. The caller rebuilds the OpenDP measurement at the kept values and
uses it only when they are ones a search could have returned and OpenDP's own privacy map of
that measurement is within the release's (ε, δ)
(:func:`privgate.core.dp.synthetic._from_kept`); every draw of it is fresh OpenDP noise. A file
that cannot be read, holds another setting or fails those checks is ignored and overwritten by
a new search.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["ENVIRONMENT", "load", "setting_document", "store"]

#: The environment variable naming the directory; unset or empty: nothing is kept on disk.
ENVIRONMENT = "PRIVGATE_CALIBRATION_DIR"
#: Bumped when what a file means changes.
FORMAT = 1


def _directory() -> Path | None:
    value = os.environ.get(ENVIRONMENT, "")
    return Path(value) if value else None


def setting_document(columns: list[str], keys: dict[str, list[str]], config: Any) -> dict:
    """The public setting of a search as JSON-ready data (the file's identity)."""
    from importlib.metadata import version

    return {
        "format": FORMAT,
        "opendp": version("opendp"),
        "columns": list(columns),
        "keys": {name: [str(v) for v in values] for name, values in keys.items()},
        "config": dataclasses.asdict(config),
    }


def _path(directory: Path, document: dict) -> Path:
    text = json.dumps(document, sort_keys=True)
    return directory / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def load(document: dict) -> tuple[float, float] | None:
    """The ``(rho, mst_measure_split)`` kept for ``document``, or None (none, unreadable, or
    another setting's). Not yet trusted: the caller checks them against OpenDP."""
    directory = _directory()
    if directory is None:
        return None
    try:
        data = json.loads(_path(directory, document).read_text())
        rho, split = data["rho"], data["mst_measure_split"]
        if data["setting"] != document:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(type(x) is float and math.isfinite(x) for x in (rho, split)):
        return None
    return rho, split


def store(document: dict, rho: float, split: float) -> None:
    """Keep a search's result for ``document`` (atomically: a reader sees all of it or none)."""
    directory = _directory()
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    path = _path(directory, document)
    text = json.dumps({"setting": document, "rho": rho, "mst_measure_split": split})
    # A fresh, exclusively created temporary file (mkstemp: O_EXCL, owner-only): a name known in
    # advance could be a link planted by another user of a shared directory, and writing
    # through it would overwrite whatever it points to.
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
