"""Concurrent writers among crashing writers, and whole DP releases racing for one budget.

The other half of ``test_ledger_concurrency.py`` (split so that both pytest-xdist workers can
take a share): the same child processes (:mod:`ledger_children`), the same two backends
(SQLite and a real PostgreSQL server) and the same check of the ledger against what the
children reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ledger_children import (
    PROCESSES,
    assert_ledger_matches,
    crasher,
    fresh_dataset,
    one_release,
    read_reports,
    run,
    writer,
)

from privgate.core.dp.ledger import BudgetLedger

#: Real child processes, crashes and DP releases on SQLite and PostgreSQL ledgers: slow (make
#: test-fast leaves them out; make test and CI run them).
pytestmark = pytest.mark.slow


def test_writers_and_crashing_writers_together(ledger_url: str, tmp_path: Path) -> None:
    dataset = fresh_dataset()
    with BudgetLedger(ledger_url) as ledger:
        ledger.open_account(dataset, 2.0, 1e-7)
    children = [
        (writer, (ledger_url, dataset, worker, 8, tmp_path / f"w{worker}.jsonl"))
        for worker in range(3)
    ]
    children += [
        (crasher, (ledger_url, dataset, worker, crash_at, tmp_path / f"c{worker}.jsonl"))
        for worker, crash_at in ((3, 2), (4, 5), (5, 8))
    ]
    assert run(children, PROCESSES.Event()) == [0, 0, 0, 1, 1, 1]
    reports = read_reports(tmp_path)
    with BudgetLedger(ledger_url) as ledger:
        assert_ledger_matches(ledger, dataset, reports)
        crashed = {f"c{worker}-a{crash_at}" for worker, crash_at in ((3, 2), (4, 5), (5, 8))}
        assert not [e for e in ledger.entries(dataset) if e.release_id in crashed]


def _toy_policy(tmp_path: Path, dataset: str) -> dict:
    """A small DP policy over a seeded table: two quasi-identifiers, a declared class."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], 300),
            "age": rng.integers(18, 90, 300),
            "cls": rng.choice(["low", "high"], 300),
        }
    )
    frame.to_csv(tmp_path / "toy.csv", index=False)
    return {
        "dataset": dataset,
        "input": {"path": str(tmp_path / "toy.csv"), "format": "csv"},
        "columns": {
            "sex": {
                "role": "quasi_identifier",
                "hierarchy": {"kind": "taxonomy", "tree": {"person": ["F", "M"]}},
            },
            "age": {
                "role": "quasi_identifier",
                "type": "integer",
                "minimum": 0,
                "maximum": 99,
                "hierarchy": {"kind": "interval", "bands": [10, 50]},
            },
            "cls": {"role": "sensitive", "categories": ["low", "high"]},
        },
        "differential_privacy": {
            "epsilon": 0.5,
            "rounds": 2,
            "class_column": "cls",
            "budget": {"epsilon": 2.0},
        },
        "output": {"directory": str(tmp_path / "releases")},
    }


def test_eight_concurrent_releases_on_a_budget_for_four(ledger_url: str, tmp_path: Path) -> None:
    """Reservation before the first draw: four publish, four are refused having drawn nothing."""
    dataset = fresh_dataset()
    policy = _toy_policy(tmp_path, dataset)
    with BudgetLedger(ledger_url) as ledger:
        ledger.open_account(dataset, 2.0, 0.0)
    children = [
        (one_release, (ledger_url, policy, day, tmp_path / f"r{day}.json")) for day in range(1, 9)
    ]
    assert run(children, PROCESSES.Event()) == [0] * 8
    outcomes = [json.loads((tmp_path / f"r{day}.json").read_text()) for day in range(1, 9)]
    published = [o["release"] for o in outcomes if o["outcome"] == "published"]
    refused = [o["release"] for o in outcomes if o["outcome"] == "refused"]
    assert len(published) == 4 and len(refused) == 4
    folders = sorted(p.name for p in (tmp_path / "releases" / dataset).iterdir())
    assert folders == sorted(published)
    with BudgetLedger(ledger_url) as ledger:
        account = ledger.account(dataset)
        assert account.spent_epsilon == 2.0  # four reservations of 0.5, nothing burned
        assert sorted(account.published) == sorted(published)
        for release in refused:
            assert ledger.draws(dataset, release) == []
            assert ledger.reservation(dataset, release) is None
