"""The ledger never loses or double-counts a spend: concurrent processes and injected crashes.

Every test runs against SQLite and a real PostgreSQL server (the ``postgres_url`` fixture:
Debian's ``postgresql``, started on a loopback port), the backend a team's workers share.

Every child process opens its own :class:`BudgetLedger` on the same database and reports each
charge that *returned* to a file of its own (written and flushed before anything else happens,
so a later ``os._exit`` cannot lose the report). The parent then reads the ledger back and
checks it against the reports: the spent total is exactly the sum of the successful charges, it
never exceeds the budget, and no entry is missing, duplicated or left by a charge that failed.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core.dp.ledger import BudgetLedger, default_ledger_url
from privgate.core.exceptions import BudgetExceededError

#: Real child processes and crashes on SQLite and PostgreSQL ledgers: slow (make test-fast leaves
#: them out; make test and CI run them).
pytestmark = pytest.mark.slow

#: Children come from a fork server, not from this process: a fork of a test process that
#: already runs Prefect's harness (threads, event loops, log handlers) inherits their half-held
#: locks, while a fresh interpreter per child costs seconds. The server is single-threaded and
#: has the ledger imported, so each child is a clean fork in milliseconds.
PROCESSES = multiprocessing.get_context("forkserver")
PROCESSES.set_forkserver_preload(["privgate.core.dp.ledger", "privgate.core.dp.release"])
#: Seconds a child may take before the test calls it hung (a lost lock would hang it).
JOIN_TIMEOUT = 120


@dataclass(frozen=True)
class FakeSpend:
    mechanism: str
    epsilon: float
    delta: float = 0.0
    step: str = ""


def _spends(worker: int, attempt: int) -> list[FakeSpend]:
    """1-3 spends of a few hundredths of epsilon, some with a delta: a varied, repeatable mix."""
    count = 1 + (worker + attempt) % 3
    return [
        FakeSpend(
            "gaussian" if (worker * attempt + part) % 4 == 0 else "laplace",
            0.01 * (1 + (worker * 7 + attempt * 3 + part) % 5),
            1e-8 if (worker * attempt + part) % 4 == 0 else 0.0,
            f"step {part}",
        )
        for part in range(count)
    ]


def _report(report: Path, release: str, entries: list) -> None:
    with report.open("a") as out:
        out.write(
            json.dumps(
                {
                    "release": release,
                    "ids": [entry.id for entry in entries],
                    "charge_id": entries[0].charge_id,
                    "epsilon": [repr(entry.epsilon) for entry in entries],
                    "delta": [repr(entry.delta) for entry in entries],
                }
            )
            + "\n"
        )
        out.flush()


def _writer(url: str, dataset: str, worker: int, attempts: int, report: Path, start) -> None:
    """Charge ``attempts`` times (some refused), reporting each charge that returned."""
    start.wait()
    ledger = BudgetLedger(url)
    for attempt in range(attempts):
        release = f"w{worker}-a{attempt}"
        try:
            entries = ledger.charge(
                dataset, release_id=release, run_id=f"run-{worker}", spends=_spends(worker, attempt)
            )
        except BudgetExceededError:
            continue
        _report(report, release, entries)
    ledger.close()


def _crasher(url: str, dataset: str, worker: int, crash_at: int, report: Path, start) -> None:
    """Charge normally, then die with ``os._exit(1)`` between two inserts of charge ``crash_at``."""
    start.wait()
    ledger = BudgetLedger(url)
    insert = BudgetLedger._insert_entry
    attempt = 0

    def insert_then_maybe_die(self, connection, values) -> None:
        insert(self, connection, values)
        if attempt == crash_at:
            os._exit(1)  # the row is inserted, the transaction is not committed

    BudgetLedger._insert_entry = insert_then_maybe_die
    for attempt in range(crash_at + 1):  # noqa: B007 - read by insert_then_maybe_die
        release = f"c{worker}-a{attempt}"
        spends = _spends(worker, attempt) if attempt < crash_at else _spends(1, 1)  # 3 spends
        try:
            entries = ledger.charge(
                dataset, release_id=release, run_id=f"run-{worker}", spends=spends
            )
        except BudgetExceededError:
            continue
        _report(report, release, entries)
    os._exit(3)  # pragma: no cover - the last charge always dies first


def _run(children: list[tuple], start) -> list[int]:
    processes = [PROCESSES.Process(target=target, args=(*args, start)) for target, args in children]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(JOIN_TIMEOUT)
    hung = [process.pid for process in processes if process.is_alive()]
    for process in processes:
        if process.is_alive():
            process.kill()
    assert not hung, f"children {hung} hung: a lock was never released"
    return [process.exitcode for process in processes]


def _reports(folder: Path) -> list[dict]:
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return found


def _assert_ledger_matches(ledger: BudgetLedger, dataset: str, reports: list[dict]) -> None:
    """The ledger holds exactly the reported charges, and their sum is within the budget."""
    account = ledger.account(dataset)
    entries = account.entries
    ids = [entry.id for entry in entries]
    assert len(ids) == len(set(ids)), "an entry was recorded twice"
    reported_ids = sorted(i for report in reports for i in report["ids"])
    assert sorted(ids) == reported_ids, "the ledger lost a spend or kept one of a failed charge"
    by_id = {entry.id: entry for entry in entries}
    for report in reports:
        assert {by_id[i].charge_id for i in report["ids"]} == {report["charge_id"]}
        assert {by_id[i].release_id for i in report["ids"]} == {report["release"]}
    spent = (
        sum((Decimal(e) for report in reports for e in report["epsilon"]), Decimal(0)),
        sum((Decimal(d) for report in reports for d in report["delta"]), Decimal(0)),
    )
    assert (account.spent_epsilon, account.spent_delta) == (float(spent[0]), float(spent[1]))
    assert spent[0] <= Decimal(repr(account.budget_epsilon))
    assert spent[1] <= Decimal(repr(account.budget_delta))


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return default_ledger_url(tmp_path)
    return request.getfixturevalue("postgres_url")


def _dataset() -> str:
    """A fresh account name: tests share one PostgreSQL database."""
    return f"adult-{uuid.uuid4().hex[:8]}"


def test_equal_charges_from_six_processes_fill_the_budget_exactly(url: str, tmp_path: Path):
    dataset = _dataset()
    with BudgetLedger(url) as ledger:
        ledger.open_account(dataset, 1.5)
    children = []
    for worker in range(6):
        report = tmp_path / f"w{worker}.jsonl"
        children.append((_equal_writer, (url, dataset, worker, 10, report)))
    assert _run(children, PROCESSES.Event()) == [0] * 6
    reports = _reports(tmp_path)
    # 60 attempts of 0.05 against 1.5: exactly 30 fit, whoever wins the races.
    assert len(reports) == 30
    with BudgetLedger(url) as ledger:
        _assert_ledger_matches(ledger, dataset, reports)
        assert ledger.account(dataset).remaining == (0.0, 0.0)


def _equal_writer(url: str, dataset: str, worker: int, attempts: int, report: Path, start) -> None:
    start.wait()
    ledger = BudgetLedger(url)
    for attempt in range(attempts):
        release = f"w{worker}-a{attempt}"
        try:
            entries = ledger.charge(
                dataset,
                release_id=release,
                run_id=f"run-{worker}",
                spends=[FakeSpend("laplace", 0.05)],
            )
        except BudgetExceededError:
            continue
        _report(report, release, entries)
    ledger.close()


def test_mixed_multi_spend_charges_never_overdraw_or_lose_a_spend(url: str, tmp_path: Path) -> None:
    dataset = _dataset()
    with BudgetLedger(url) as ledger:
        ledger.open_account(dataset, 2.0, 1e-7)
    children = [
        (_writer, (url, dataset, worker, 10, tmp_path / f"w{worker}.jsonl")) for worker in range(6)
    ]
    assert _run(children, PROCESSES.Event()) == [0] * 6
    reports = _reports(tmp_path)
    asked = sum(len(_spends(w, a)) for w in range(6) for a in range(10))
    succeeded = sum(len(report["ids"]) for report in reports)
    assert 0 < succeeded < asked, "the budget should admit some charges and refuse others"
    with BudgetLedger(url) as ledger:
        _assert_ledger_matches(ledger, dataset, reports)


@pytest.mark.parametrize("rows_before_crash", [1, 3])
def test_a_crash_inside_a_charge_leaves_none_of_it(
    url: str, tmp_path: Path, rows_before_crash: int
) -> None:
    dataset = _dataset()
    with BudgetLedger(url) as ledger:
        ledger.open_account(dataset, 1.0)
        ledger.charge(dataset, release_id="r0", run_id="x", spends=[FakeSpend("laplace", 0.25)])
    child = PROCESSES.Process(target=_die_inside_charge, args=(url, dataset, rows_before_crash))
    child.start()
    child.join(JOIN_TIMEOUT)
    assert child.exitcode == 1
    with BudgetLedger(url) as ledger:
        assert ledger.entries(dataset, "crashed") == []
        assert ledger.account(dataset).spent_epsilon == 0.25
        # The dead writer's lock is gone and the file is intact: the next charge goes through.
        ledger.charge(dataset, release_id="r1", run_id="y", spends=[FakeSpend("laplace", 0.75)])
        assert ledger.account(dataset).remaining == (0.0, 0.0)
    if url.startswith("sqlite"):
        with sqlite3.connect(tmp_path / "privacy-ledger.sqlite") as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _die_inside_charge(url: str, dataset: str, rows_before_crash: int) -> None:
    insert = BudgetLedger._insert_entry
    inserted = 0

    def insert_then_die(self, connection, values) -> None:
        nonlocal inserted
        insert(self, connection, values)
        inserted += 1
        if inserted == rows_before_crash:
            os._exit(1)

    BudgetLedger._insert_entry = insert_then_die
    ledger = BudgetLedger(url)
    ledger.charge(
        dataset,
        release_id="crashed",
        run_id="z",
        spends=[FakeSpend("laplace", 0.1), FakeSpend("laplace", 0.1), FakeSpend("laplace", 0.1)],
    )
    os._exit(3)  # pragma: no cover - never reached


def test_writers_and_crashing_writers_together(url: str, tmp_path: Path) -> None:
    dataset = _dataset()
    with BudgetLedger(url) as ledger:
        ledger.open_account(dataset, 2.0, 1e-7)
    children = [
        (_writer, (url, dataset, worker, 8, tmp_path / f"w{worker}.jsonl")) for worker in range(3)
    ]
    children += [
        (_crasher, (url, dataset, worker, crash_at, tmp_path / f"c{worker}.jsonl"))
        for worker, crash_at in ((3, 2), (4, 5), (5, 8))
    ]
    assert _run(children, PROCESSES.Event()) == [0, 0, 0, 1, 1, 1]
    reports = _reports(tmp_path)
    with BudgetLedger(url) as ledger:
        _assert_ledger_matches(ledger, dataset, reports)
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


def _one_release(url: str, policy_json: dict, day: int, report: Path, start) -> None:
    """One nightly DP release, end to end in core: reserve, draw, verify, publish, mark."""
    from datetime import date

    from privgate.core.dp.pipeline import build_dp_manifest, dp_release_id, stage_and_verify
    from privgate.core.dp.release import run_dp_release
    from privgate.core.hierarchy import hierarchies_for
    from privgate.core.ingest import read_table
    from privgate.core.policy import ReleasePolicy
    from privgate.core.publish import publish

    policy = ReleasePolicy.model_validate(policy_json)
    frame = read_table(policy.input)
    hierarchies = hierarchies_for(policy)
    release_id = dp_release_id(policy, date(2026, 12, day))
    start.wait()
    with BudgetLedger(url) as ledger:
        try:
            table = run_dp_release(
                frame, policy, hierarchies, release_id=release_id, run_id=f"run-{day}",
                ledger=ledger,
            )  # fmt: skip
        except BudgetExceededError:
            report.write_text(json.dumps({"release": release_id, "outcome": "refused"}))
            return
        staged, decision = stage_and_verify(table, policy, release_id, ledger)
        assert decision.passed, decision.reasons
        manifest = build_dp_manifest(
            policy, release_id, date(2026, 12, day), table, staged, decision
        )
        path = publish(staged, manifest)
        ledger.mark_published(policy.dataset, release_id, str(path), f"run-{day}")
    report.write_text(json.dumps({"release": release_id, "outcome": "published"}))


def test_eight_concurrent_releases_on_a_budget_for_four(url: str, tmp_path: Path) -> None:
    """Reservation before the first draw: four publish, four are refused having drawn nothing."""
    dataset = _dataset()
    policy = _toy_policy(tmp_path, dataset)
    with BudgetLedger(url) as ledger:
        ledger.open_account(dataset, 2.0, 0.0)
    children = [
        (_one_release, (url, policy, day, tmp_path / f"r{day}.json")) for day in range(1, 9)
    ]
    assert _run(children, PROCESSES.Event()) == [0] * 8
    outcomes = [json.loads((tmp_path / f"r{day}.json").read_text()) for day in range(1, 9)]
    published = [o["release"] for o in outcomes if o["outcome"] == "published"]
    refused = [o["release"] for o in outcomes if o["outcome"] == "refused"]
    assert len(published) == 4 and len(refused) == 4
    folders = sorted(p.name for p in (tmp_path / "releases" / dataset).iterdir())
    assert folders == sorted(published)
    with BudgetLedger(url) as ledger:
        account = ledger.account(dataset)
        assert account.spent_epsilon == 2.0  # four reservations of 0.5, nothing burned
        assert sorted(account.published) == sorted(published)
        for release in refused:
            assert ledger.draws(dataset, release) == []
            assert ledger.reservation(dataset, release) is None
