"""Task tests run inside small flows against the session's Prefect test server."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _prefect(prefect_harness):
    yield
