"""Flow tests run against Prefect's in-process test harness (one temporary API per session).

Prefect is imported and the harness started before any test captures output: its console log
handler keeps the stream it first sees, and a per-test captured stream is closed afterwards.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

import prefect  # noqa: E402,F401  (after the environment is set; see the module docstring)


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(autouse=True, scope="session")
def _harness_before_capture(prefect_harness):
    yield
