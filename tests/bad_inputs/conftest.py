"""Fixtures of the bad-input corpus: ways to run its cases (``make_case``, which writes a case's
table and policy, is in ``tests/conftest.py``: the expectation-task tests use it too).

Every bad file is generated from code into ``tmp_path`` (no binary fixtures are committed).
The CLI runs in-process; errors found after Prefect has started need the session's Prefect
test server (``prefect_harness``, shared with ``tests/flows``).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

import pytest


@pytest.fixture(autouse=True)
def _prefect(prefect_harness):
    yield


@pytest.fixture
def cli() -> Callable[..., tuple[int, str, str]]:
    """Run ``privgate.flows.cli.main(args)`` in-process: (exit code, stdout, stderr).

    The CLI resolves ``sys.stdout`` / ``sys.stderr`` when it prints, so redirecting them does
    not disturb Prefect's own log handler (bound to the real stream at import).
    """
    from privgate.flows.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue(), err.getvalue()

    return run


@pytest.fixture(autouse=True)
def _no_ingest_retries(monkeypatch):
    """Fail a bad file at once instead of after 6 s of retries.

    ``privgate.tasks.ingest`` retries every exception, including deterministic refusals (an
    ``IngestError`` is the same on every attempt): the refusal itself, its message and that
    nothing is published do not depend on it. Remove once the ingest task retries only I/O
    errors.
    """
    from privgate.flows import release as flows_release

    monkeypatch.setattr(
        flows_release, "ingest_task", flows_release.ingest_task.with_options(retries=0)
    )
