"""Fixtures of the DP tests: the ledger backends the concurrency tests run on."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite ledger file in ``tmp_path``, or the session's PostgreSQL server."""
    from privgate.core.dp.ledger import default_ledger_url

    if request.param == "sqlite":
        return default_ledger_url(tmp_path)
    return request.getfixturevalue("postgres_url")
