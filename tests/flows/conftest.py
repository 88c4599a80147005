"""Flow tests run against Prefect's in-process test harness (one temporary API per session).

Prefect is imported and the harness started before any test captures output: its console log
handler keeps the stream it first sees, and a per-test captured stream is closed afterwards.
"""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
# Persisted stage results of the tests go to a throwaway folder, not the user's home.
os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", tempfile.mkdtemp(prefix="privgate-results-"))

import prefect  # noqa: E402,F401  (after the environment is set; see the module docstring)
from prefect.settings import PREFECT_TASKS_REFRESH_CACHE, temporary_settings  # noqa: E402


@pytest.fixture
def fresh_stages():
    """Run stages afresh (ignoring cached results), e.g. when a test patches a stage."""
    with temporary_settings({PREFECT_TASKS_REFRESH_CACHE: True}):
        yield


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield


@pytest.fixture(autouse=True, scope="session")
def _harness_before_capture(prefect_harness):
    yield
