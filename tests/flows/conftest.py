"""Flow tests run against the session's Prefect test server (``prefect_harness``), except the
end-to-end files (``test_server_*.py``): they start a real server, ``privgate serve`` and one
Chromium of their own (``server``, ``served``, ``browser``: :mod:`e2e_server`) and replace
``_prefect`` below, so they do not start the test server."""

from __future__ import annotations

import pytest
from e2e_server import browser, served, server  # noqa: F401 - fixtures of the end-to-end files


@pytest.fixture(autouse=True)
def _prefect(prefect_harness):
    yield


@pytest.fixture(scope="module")
def demo_csv(tmp_path_factory):
    """The demo's seeded census table, 3,000 rows (``fault_runs.write_demo_csv``): for the
    fault files, where the fault, not the data, is the point."""
    from fault_runs import write_demo_csv

    return write_demo_csv(tmp_path_factory.mktemp("demo-data"))


@pytest.fixture
def lying_algorithm(monkeypatch, fresh_stages):
    """Make the anonymize stage lie: it publishes the raw quasi-identifiers while claiming
    level 0 everywhere, so only the gate, reading the written file, can catch it."""
    import dataclasses

    import numpy as np

    from privgate.core import stages
    from privgate.core.anonymize import release_table

    real_anonymize = stages.anonymize

    def lying_anonymize(frame, setup, ranking=None):
        tables = real_anonymize(frame, setup, ranking)
        qis = list(setup.quasi_identifiers)
        liar = dataclasses.replace(
            tables[-1].result,
            algorithm="liar",
            suppressed=np.zeros(len(frame), dtype=bool),
            labels={q: frame[q].astype(str).to_numpy() for q in qis},
            levels=dict.fromkeys(qis, 0),
        )
        raw = release_table(frame, liar, setup.released_columns)
        return [stages.AnonymizedTable(raw, liar, tables[-1].metrics, qis)]

    monkeypatch.setattr(stages, "anonymize", lying_anonymize)
