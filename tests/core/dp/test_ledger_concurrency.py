"""The ledger never loses or double-counts a spend: concurrent charging processes and crashes.

Every test runs against SQLite and a real PostgreSQL server (the ``postgres_url`` fixture:
Debian's ``postgresql``, started on a loopback port), the backend a team's workers share.

Every child process (:mod:`ledger_children`, forked from a server that has the ledger imported)
opens its own :class:`BudgetLedger` on the same database and reports each charge that
*returned* to a file of its own. The parent then reads the ledger back and checks it against
the reports: the spent total is exactly the sum of the successful charges, it never exceeds the
budget, and no entry is missing, duplicated or left by a charge that failed. Writers mixed with
crashing writers, and whole DP releases racing for a budget:
``test_ledger_concurrent_releases.py``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from ledger_children import (
    JOIN_TIMEOUT,
    PROCESSES,
    FakeSpend,
    assert_ledger_matches,
    die_inside_charge,
    equal_writer,
    fresh_dataset,
    read_reports,
    report_preloaded,
    run,
    spends,
    writer,
)

from privgate.core.dp.ledger import BudgetLedger

#: Real child processes and crashes on SQLite and PostgreSQL ledgers: slow (make test-fast leaves
#: them out; make test and CI run them).
pytestmark = pytest.mark.slow


def test_children_start_with_the_ledger_imported(tmp_path: Path) -> None:
    """The fork server preloads this module's children's code, so a child starts charging
    at once instead of importing the ledger, OpenDP and scikit-learn first (about 3 s each),
    even when another test module (collected later) sets its own preload list."""
    child = PROCESSES.Process(target=report_preloaded, args=(tmp_path / "preloaded.json",))
    child.start()
    child.join(JOIN_TIMEOUT)
    assert child.exitcode == 0
    assert json.loads((tmp_path / "preloaded.json").read_text()) is True


def test_equal_charges_from_six_processes_fill_the_budget_exactly(
    ledger_url: str, tmp_path: Path
) -> None:
    dataset = fresh_dataset()
    with BudgetLedger(ledger_url) as ledger:
        ledger.open_account(dataset, 1.5)
    children = [
        (equal_writer, (ledger_url, dataset, worker, 10, tmp_path / f"w{worker}.jsonl"))
        for worker in range(6)
    ]
    assert run(children, PROCESSES.Event()) == [0] * 6
    reports = read_reports(tmp_path)
    # 60 attempts of 0.05 against 1.5: exactly 30 fit, whoever wins the races.
    assert len(reports) == 30
    with BudgetLedger(ledger_url) as ledger:
        assert_ledger_matches(ledger, dataset, reports)
        assert ledger.account(dataset).remaining == (0.0, 0.0)


def test_mixed_multi_spend_charges_never_overdraw_or_lose_a_spend(
    ledger_url: str, tmp_path: Path
) -> None:
    dataset = fresh_dataset()
    with BudgetLedger(ledger_url) as ledger:
        ledger.open_account(dataset, 2.0, 1e-7)
    children = [
        (writer, (ledger_url, dataset, worker, 10, tmp_path / f"w{worker}.jsonl"))
        for worker in range(6)
    ]
    assert run(children, PROCESSES.Event()) == [0] * 6
    reports = read_reports(tmp_path)
    asked = sum(len(spends(w, a)) for w in range(6) for a in range(10))
    succeeded = sum(len(report["ids"]) for report in reports)
    assert 0 < succeeded < asked, "the budget should admit some charges and refuse others"
    with BudgetLedger(ledger_url) as ledger:
        assert_ledger_matches(ledger, dataset, reports)


@pytest.mark.parametrize("rows_before_crash", [1, 3])
def test_a_crash_inside_a_charge_leaves_none_of_it(
    ledger_url: str, tmp_path: Path, rows_before_crash: int
) -> None:
    dataset = fresh_dataset()
    with BudgetLedger(ledger_url) as ledger:
        ledger.open_account(dataset, 1.0)
        ledger.charge(dataset, release_id="r0", run_id="x", spends=[FakeSpend("laplace", 0.25)])
    child = PROCESSES.Process(
        target=die_inside_charge, args=(ledger_url, dataset, rows_before_crash)
    )
    child.start()
    child.join(JOIN_TIMEOUT)
    assert child.exitcode == 1
    with BudgetLedger(ledger_url) as ledger:
        assert ledger.entries(dataset, "crashed") == []
        assert ledger.account(dataset).spent_epsilon == 0.25
        # The dead writer's lock is gone and the file is intact: the next charge goes through.
        ledger.charge(dataset, release_id="r1", run_id="y", spends=[FakeSpend("laplace", 0.75)])
        assert ledger.account(dataset).remaining == (0.0, 0.0)
    if ledger_url.startswith("sqlite"):
        with sqlite3.connect(tmp_path / "privacy-ledger.sqlite") as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
