"""The child processes of the ledger concurrency tests, and the fork server they come from.

Children come from a fork server, not from the test process: a fork of a test process that
already runs Prefect's harness (threads, event loops, log handlers) inherits their half-held
locks, while a fresh interpreter per child costs seconds. The server is single-threaded and has
the ledger imported (``PRELOAD``), so each child is a clean fork that starts charging at once:
unpickling its target imports only this small module (Python 3.11's fork server does not
apply the parent's ``sys.path``, so it cannot preload this module itself). That is why the
targets live here and not in the test modules, which import pytest and pandas.

Every child opens its own :class:`BudgetLedger` on the same database and reports each charge
that *returned* to a file of its own (written and flushed before anything else happens, so a
later ``os._exit`` cannot lose the report).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from dataclasses import dataclass
from pathlib import Path

#: Whether the ledger was imported before this module: in a child, by the fork server.
LEDGER_PRELOADED = "privgate.core.dp.ledger" in sys.modules

from privgate.core.dp.ledger import BudgetLedger  # noqa: E402
from privgate.core.exceptions import BudgetExceededError  # noqa: E402

#: What the fork server imports once: the ledger, these targets, and what a DP release child
#: (:func:`one_release`) needs. ``tests/conftest.py`` merges every module's preload list, so a
#: list set by another test module does not replace this one.
PRELOAD = [
    "privgate.core.dp.ledger",
    "privgate.core.dp.release",
    "privgate.core.dp.pipeline",
    "privgate.core.hierarchy",
    "privgate.core.ingest",
    "privgate.core.policy",
    "privgate.core.publish",
]
PROCESSES = multiprocessing.get_context("forkserver")
PROCESSES.set_forkserver_preload(PRELOAD)
#: Seconds a child may take before the test calls it hung (a lost lock would hang it).
JOIN_TIMEOUT = 120


@dataclass(frozen=True)
class FakeSpend:
    mechanism: str
    epsilon: float
    delta: float = 0.0
    step: str = ""


def spends(worker: int, attempt: int) -> list[FakeSpend]:
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


def writer(url: str, dataset: str, worker: int, attempts: int, report: Path, start) -> None:
    """Charge ``attempts`` times (some refused), reporting each charge that returned."""
    start.wait()
    ledger = BudgetLedger(url)
    for attempt in range(attempts):
        release = f"w{worker}-a{attempt}"
        try:
            entries = ledger.charge(
                dataset, release_id=release, run_id=f"run-{worker}", spends=spends(worker, attempt)
            )
        except BudgetExceededError:
            continue
        _report(report, release, entries)
    ledger.close()


def equal_writer(url: str, dataset: str, worker: int, attempts: int, report: Path, start) -> None:
    """Charge 0.05 ``attempts`` times (refusals skipped), reporting each charge that returned."""
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


def crasher(url: str, dataset: str, worker: int, crash_at: int, report: Path, start) -> None:
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
        charged = spends(worker, attempt) if attempt < crash_at else spends(1, 1)  # 3 spends
        try:
            entries = ledger.charge(
                dataset, release_id=release, run_id=f"run-{worker}", spends=charged
            )
        except BudgetExceededError:
            continue
        _report(report, release, entries)
    os._exit(3)  # pragma: no cover - the last charge always dies first


def die_inside_charge(url: str, dataset: str, rows_before_crash: int) -> None:
    """Charge three spends and die with ``os._exit(1)`` after inserting ``rows_before_crash``."""
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


def one_release(url: str, policy_json: dict, day: int, report: Path, start) -> None:
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


def report_preloaded(report: Path) -> None:
    """Write whether this child found the ledger (and OpenDP) imported by the fork server."""
    report.write_text(json.dumps(LEDGER_PRELOADED))


def run(children: list[tuple], start) -> list[int]:
    """Start every ``(target, args)`` child, release them at once, return their exit codes."""
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


def read_reports(folder: Path) -> list[dict]:
    """Every charge the children reported, from their ``*.jsonl`` files."""
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines()]
    return found


def assert_ledger_matches(ledger: BudgetLedger, dataset: str, reports: list[dict]) -> None:
    """The ledger holds exactly the reported charges, and their sum is within the budget."""
    from decimal import Decimal

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


def fresh_dataset() -> str:
    """A fresh account name: tests share one PostgreSQL database."""
    import uuid

    return f"adult-{uuid.uuid4().hex[:8]}"
