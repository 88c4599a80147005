"""Shared pytest fixtures for the privgate test suite."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

#: Real public datasets live next to the repository, in ``../shared/data``; they are never
#: copied into the project.
SHARED_DATA_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Callable[[str], Path]:
    """Return a function mapping a path relative to ``../shared/data`` to an existing file.

    If the file is missing, the calling test is skipped, except in CI (``CI=true``), where a
    missing dataset is a broken setup and the test fails instead of silently passing.
    """

    def resolve(relative: str) -> Path:
        path = (SHARED_DATA_DIR / relative).resolve()
        if not path.is_file():
            message = f"shared dataset not found: {path}"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
        return path

    return resolve
