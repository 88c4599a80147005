"""review8: the kept MST/AIM budget searches are written safely in a shared directory.

``PRIVGATE_CALIBRATION_DIR`` may name a directory other users can write to (a shared /tmp).
A kept file is never trusted (tests/core/dp/test_calibration.py), but writing one must not
follow a link another user planted at a predictable temporary name: that would overwrite the
link's target with the writer's permissions.
"""

from __future__ import annotations

import os
from pathlib import Path

from privgate.core.dp import _calibration

DOCUMENT = {"format": _calibration.FORMAT, "columns": ["sex"], "keys": {"sex": ["F", "M"]}}


def test_a_link_planted_at_a_temporary_name_is_not_written_through(tmp_path: Path, monkeypatch):
    kept = tmp_path / "shared"
    kept.mkdir()
    monkeypatch.setenv(_calibration.ENVIRONMENT, str(kept))
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's file")
    path = _calibration._path(kept, DOCUMENT)
    (kept / f"{path.name}.{os.getpid()}.tmp").symlink_to(victim)  # the old predictable name

    _calibration.store(DOCUMENT, 0.25, 0.9)

    assert victim.read_text() == "someone else's file"
    assert _calibration.load(DOCUMENT) == (0.25, 0.9)
    assert not path.is_symlink()
    leftovers = [p.name for p in kept.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]
    assert leftovers == []
