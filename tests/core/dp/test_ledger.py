"""The ε ledger: budget arithmetic, refusals, publishing marks, reading back, any SQLAlchemy URL."""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import pytest
from sqlalchemy import create_mock_engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateTable

from privgate.core.dp import PrivacyParameterError, Spend
from privgate.core.dp._ledger_schema import METADATA
from privgate.core.dp.ledger import (
    LEDGER_FILENAME,
    Account,
    BudgetLedger,
    _account_for_update,
    default_ledger_url,
)
from privgate.core.exceptions import BudgetExceededError, GateBlockedError, LedgerError


@dataclass(frozen=True)
class FakeSpend:
    """A duck-typed spend: the ledger must not need :class:`privgate.core.dp.Spend` itself."""

    mechanism: str
    epsilon: float
    delta: float = 0.0
    step: str = ""


@pytest.fixture()
def ledger(tmp_path: Path) -> BudgetLedger:
    with BudgetLedger(default_ledger_url(tmp_path)) as opened:
        yield opened


def charge(ledger: BudgetLedger, epsilon: float, delta: float = 0.0, release: str = "r1"):
    return ledger.charge(
        "adult",
        release_id=release,
        run_id="run-1",
        spends=[FakeSpend("laplace", epsilon, delta, "counts")],
    )


# ---------------------------------------------------------------------------------------------
# URLs and accounts


def test_default_url_is_an_absolute_sqlite_file_in_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = default_ledger_url("releases")
    assert url == f"sqlite:///{tmp_path.resolve() / 'releases' / LEDGER_FILENAME}"
    # The folder does not exist yet: opening the ledger creates it and the file.
    BudgetLedger(url).close()
    assert (tmp_path / "releases" / LEDGER_FILENAME).is_file()


def test_open_account_creates_then_returns_the_same_budget(ledger: BudgetLedger) -> None:
    opened = ledger.open_account("adult", 2.0, 1e-6)
    assert (opened.budget_epsilon, opened.budget_delta) == (2.0, 1e-6)
    assert (opened.spent_epsilon, opened.spent_delta) == (0.0, 0.0)
    assert opened.remaining == (2.0, 1e-6)
    assert ledger.open_account("adult", 2.0, 1e-6).budget_epsilon == 2.0
    assert ledger.datasets() == ["adult"]
    assert len(ledger.account("adult").history) == 1


def test_open_account_with_a_different_budget_is_refused(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 2.0)
    with pytest.raises(LedgerError, match=r"already has a lifetime budget.*set_budget"):
        ledger.open_account("adult", 3.0)
    with pytest.raises(LedgerError, match="delta=1e-06"):
        ledger.open_account("adult", 2.0, 1e-6)
    assert ledger.account("adult").budget_epsilon == 2.0


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(-1.0, 0.0), (math.nan, 0.0), (math.inf, 0.0), (1.0, 1.0), (1.0, -1e-9), (True, 0.0)],
)
def test_invalid_budgets_are_refused(ledger: BudgetLedger, epsilon: float, delta: float) -> None:
    with pytest.raises(PrivacyParameterError, match="budget"):
        ledger.open_account("adult", epsilon, delta)
    assert ledger.datasets() == []


def test_missing_account_names_the_accounts_there_are(ledger: BudgetLedger) -> None:
    with pytest.raises(LedgerError, match=r"no account for dataset 'bank'.*accounts: none"):
        ledger.account("bank")
    ledger.open_account("census", 1.0)
    ledger.open_account("adult", 1.0)
    with pytest.raises(LedgerError, match=r"accounts: 'adult', 'census'"):
        ledger.account("bank")
    with pytest.raises(LedgerError, match="no account"):
        ledger.charge("bank", release_id="r", run_id="x", spends=[FakeSpend("laplace", 0.1)])
    assert ledger.datasets() == ["adult", "census"]


# ---------------------------------------------------------------------------------------------
# Budget arithmetic


def test_ten_charges_of_a_tenth_spend_exactly_one(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0)
    for _ in range(10):
        charge(ledger, 0.1)
    account = ledger.account("adult")
    # A float loop gives 0.9999999999999999; the ledger adds the decimals the policy wrote.
    assert account.spent_epsilon == 1.0
    assert account.remaining == (0.0, 0.0)
    with pytest.raises(BudgetExceededError):
        charge(ledger, 1e-12)


def test_spends_compose_sequentially_in_epsilon_and_delta(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 3.0, 1e-5)
    charge(ledger, 0.5, 1e-6, release="r1")
    ledger.charge(
        "adult",
        release_id="r2",
        run_id="run-2",
        spends=[FakeSpend("gaussian", 0.25, 2e-6), FakeSpend("exponential", 0.125)],
    )
    account = ledger.account("adult")
    assert (account.spent_epsilon, account.spent_delta) == (0.875, 3e-6)
    assert account.remaining == (2.125, 7e-6)
    assert len(account.entries) == 3


def test_charging_exactly_the_remaining_budget_succeeds_and_1e9_more_fails(
    ledger: BudgetLedger,
) -> None:
    ledger.open_account("adult", 1.0, 1e-6)
    charge(ledger, 0.3, 4e-7)
    remaining = ledger.account("adult").remaining
    assert remaining == (0.7, 6e-7)
    with pytest.raises(BudgetExceededError):
        charge(ledger, remaining[0] + 1e-9)
    with pytest.raises(BudgetExceededError):
        charge(ledger, 0.1, remaining[1] + 1e-15)
    assert ledger.check("adult", *remaining) == (0.0, 0.0)
    charge(ledger, *remaining)
    account = ledger.account("adult")
    assert (account.spent_epsilon, account.spent_delta) == (1.0, 1e-6)
    assert account.remaining == (0.0, 0.0)


def test_the_remaining_budget_read_as_a_float_can_always_be_spent(ledger: BudgetLedger) -> None:
    # 1 - 0.1111111111111111 = 0.8888888888888889 exactly, whose nearest float prints as
    # 0.888888888888889: a few 1e-17 *more* than what is left. It still fits, is recorded as
    # exactly the rest, and the account ends exactly at its budget.
    ledger.open_account("adult", 1.0)
    charge(ledger, 1 / 9)
    left = ledger.account("adult").remaining[0]
    assert repr(left) == "0.888888888888889"
    with pytest.raises(BudgetExceededError):
        charge(ledger, math.nextafter(left, 2.0))
    (entry,) = charge(ledger, left)
    assert entry.epsilon == left
    account = ledger.account("adult")
    assert account.spent_epsilon == 1.0
    assert account.remaining == (0.0, 0.0)
    with pytest.raises(BudgetExceededError):
        charge(ledger, 5e-324)
    # A spend that cost nothing still fits an exhausted account.
    charge(ledger, 0.0)


def test_a_refused_charge_records_nothing_and_says_what_is_left(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0, 1e-6)
    charge(ledger, 0.8)
    before = ledger.account("adult")
    with pytest.raises(BudgetExceededError) as refused:
        ledger.charge(
            "adult",
            release_id="r2",
            run_id="run-2",
            spends=[FakeSpend("laplace", 0.15), FakeSpend("laplace", 0.15)],
        )
    error = refused.value
    assert isinstance(error, GateBlockedError) and error.exit_code == 3
    assert error.remaining == pytest.approx((0.2, 1e-6), rel=1e-15)
    message = str(error)
    assert "'adult'" in message and "'r2'" in message
    assert "asked (epsilon=0.3, delta=0.0)" in message
    assert "remaining (epsilon=0.2" in message
    after = ledger.account("adult")
    assert after.entries == before.entries
    assert after.spent_epsilon == 0.8
    assert ledger.entries("adult", "r2") == []


def test_check_reports_what_would_remain_and_writes_nothing(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0)
    charge(ledger, 0.25)
    assert ledger.check("adult", 0.5) == (0.25, 0.0)
    with pytest.raises(BudgetExceededError, match=r"remaining \(epsilon=0.75") as refused:
        ledger.check("adult", 0.76)
    assert refused.value.remaining == (0.75, 0.0)
    assert len(ledger.entries("adult")) == 1


@pytest.mark.parametrize(
    "spends",
    [
        [],
        [FakeSpend("laplace", -0.1)],
        [FakeSpend("laplace", math.nan)],
        [FakeSpend("gaussian", 0.1, 1.0)],
        [FakeSpend("", 0.1)],
        [FakeSpend("laplace", 0.1), object()],
        "laplace",
    ],
)
def test_malformed_spends_are_refused_before_anything_is_recorded(
    ledger: BudgetLedger, spends: object
) -> None:
    ledger.open_account("adult", 1.0)
    with pytest.raises(PrivacyParameterError):
        ledger.charge("adult", release_id="r1", run_id="x", spends=spends)
    assert ledger.entries("adult") == []


def test_charge_accepts_the_accountants_spends(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0, 1e-6)
    spends = [
        Spend("discrete_laplace", 0.5, step="leaf counts", scale=2.0),
        Spend("gaussian", 0.25, 1e-7, step="mean"),
    ]
    entries = ledger.charge("adult", release_id="r1", run_id="flow-7", spends=spends)
    assert [(e.mechanism, e.step, e.epsilon, e.delta) for e in entries] == [
        ("discrete_laplace", "leaf counts", 0.5, 0.0),
        ("gaussian", "mean", 0.25, 1e-7),
    ]
    assert entries[0].charge_id == entries[1].charge_id != ""
    assert entries[0].id < entries[1].id
    assert all(e.run_id == "flow-7" and e.recorded_at.tzinfo == UTC for e in entries)


# ---------------------------------------------------------------------------------------------
# Budget changes


def test_set_budget_is_audited_and_cannot_go_below_the_spend(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0)
    charge(ledger, 0.6)
    with pytest.raises(LedgerError, match=r"\(epsilon=0.6, delta=0.0\) is already spent"):
        ledger.set_budget("adult", 0.5, 0.0, "tighter")
    with pytest.raises(LedgerError, match="needs a reason"):
        ledger.set_budget("adult", 2.0, 0.0, "  ")
    account = ledger.set_budget("adult", 2.0, 0.0, "board approved a second wave")
    assert account.remaining == (1.4, 0.0)
    assert [(c.epsilon, c.previous_epsilon, c.reason) for c in account.history] == [
        (1.0, None, "account opened"),
        (2.0, 1.0, "board approved a second wave"),
    ]
    # The policy that still says 1.0 is now refused; the new budget is accepted.
    with pytest.raises(LedgerError, match="already has a lifetime budget"):
        ledger.open_account("adult", 1.0)
    assert ledger.open_account("adult", 2.0).budget_epsilon == 2.0
    # Lowering to exactly what was spent is allowed and leaves nothing.
    assert ledger.set_budget("adult", 0.6, 0.0, "closed").remaining == (0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# Publishing


def test_publish_marks_are_idempotent_and_withdrawable(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0)
    with pytest.raises(LedgerError, match="holds no spend"):
        ledger.mark_published("adult", "r1", "releases/adult/r1", "run-1")
    charge(ledger, 0.4, release="r1")
    charge(ledger, 0.3, release="r2")
    ledger.mark_published("adult", "r1", "releases/adult/r1", "run-1")
    ledger.mark_published("adult", "r1", "releases/adult/r1", "run-1")
    assert ledger.account("adult").published == {"r1": "releases/adult/r1"}
    ledger.unmark_published("adult", "r1")
    ledger.unmark_published("adult", "r1")
    ledger.unmark_published("adult", "r2")
    account = ledger.account("adult")
    assert account.published == {}
    # Withdrawing a publication gives no budget back: the noise was drawn.
    assert account.spent_epsilon == 0.7
    ledger.mark_published("adult", "r2", "releases/adult/r2", "run-2")
    assert ledger.account("adult").published == {"r2": "releases/adult/r2"}


def test_entries_filter_by_release_in_commit_order(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 1.0)
    charge(ledger, 0.1, release="r1")
    charge(ledger, 0.2, release="r2")
    charge(ledger, 0.3, release="r1")
    assert [e.epsilon for e in ledger.entries("adult", "r1")] == [0.1, 0.3]
    assert [e.release_id for e in ledger.entries("adult")] == ["r1", "r2", "r1"]
    assert ledger.entries("adult", "r9") == []
    ids = [e.id for e in ledger.entries("adult")]
    assert ids == sorted(ids) and len(set(ids)) == 3


def test_describe_and_to_dict_show_the_whole_account(ledger: BudgetLedger) -> None:
    ledger.open_account("adult", 2.0, 1e-6)
    ledger.charge(
        "adult",
        release_id="2026-11-22-aaa",
        run_id="run-1",
        spends=[FakeSpend("exponential", 0.5, 0.0, "round 1"), FakeSpend("laplace", 0.5)],
    )
    charge(ledger, 0.25, 1e-7, release="2026-11-23-bbb")
    ledger.mark_published("adult", "2026-11-22-aaa", "releases/adult/2026-11-22-aaa", "run-1")
    ledger.set_budget("adult", 3.0, 1e-6, "second wave")
    text = ledger.account("adult").describe()
    lines = text.splitlines()
    assert lines[0] == "privacy budget of dataset 'adult'"
    assert "budget:    (epsilon=3.0, delta=1e-06)" in text
    assert "spent:     (epsilon=1.25, delta=1e-07) in 3 spends over 2 releases" in text
    assert "remaining: (epsilon=1.75, delta=0.0000009)" in text  # exact decimals
    assert (
        "release 2026-11-22-aaa: (epsilon=1.0, delta=0.0), published at "
        "releases/adult/2026-11-22-aaa" in text
    )
    assert "release 2026-11-23-bbb: (epsilon=0.25, delta=1e-07), not published" in text
    assert any("exponential  (epsilon=0.5, delta=0.0)  round 1" in line for line in lines)
    assert any(
        "set to (epsilon=3.0, delta=1e-06)" in line and "second wave" in line for line in lines
    )

    data = json.loads(json.dumps(ledger.account("adult").to_dict()))
    assert data["remaining"] == {"epsilon": 1.75, "delta": 9e-07}
    assert data["published"] == {"2026-11-22-aaa": "releases/adult/2026-11-22-aaa"}
    assert math.fsum(e["epsilon"] for e in data["entries"]) == data["spent"]["epsilon"]
    assert len(data["history"]) == 2


def test_a_hand_made_account_computes_its_remaining_budget() -> None:
    account = Account("adult", 1.0, 1e-6, 0.25, 1e-6)
    assert account.remaining == (0.75, 0.0)
    assert "spent:     (epsilon=0.25, delta=1e-06) in 0 spends" in account.describe()


# ---------------------------------------------------------------------------------------------
# Databases


def test_a_second_ledger_on_the_same_file_sees_the_same_account(tmp_path: Path) -> None:
    url = default_ledger_url(tmp_path)
    with BudgetLedger(url) as first:
        first.open_account("adult", 1.0)
        charge(first, 0.4)
        with BudgetLedger(url) as second:
            assert second.account("adult").spent_epsilon == 0.4
            charge(second, 0.5, release="r2")
            with pytest.raises(BudgetExceededError, match=r"remaining \(epsilon=0.1"):
                charge(first, 0.2, release="r3")
    with BudgetLedger(url) as reopened:
        assert [e.epsilon for e in reopened.entries("adult")] == [0.4, 0.5]


def test_an_unreachable_database_is_a_ledger_error_naming_the_url(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the ledger's folder should be")
    url = f"sqlite:///{blocker}/ledger.sqlite"
    with pytest.raises(LedgerError, match="cannot open the privacy ledger") as failed:
        BudgetLedger(url)
    assert url in str(failed.value)


def test_a_malformed_url_is_a_ledger_error() -> None:
    with pytest.raises(LedgerError, match=r"'not a url' is not a valid SQLAlchemy database URL"):
        BudgetLedger("not a url")


def test_a_missing_driver_is_a_ledger_error_that_hides_the_password() -> None:
    url = "postgresql+nosuchdriver://team:s3cret@db.example:5432/ledger"
    with pytest.raises(LedgerError, match="driver is not installed") as failed:
        BudgetLedger(url)
    assert "s3cret" not in str(failed.value)
    assert "db.example:5432/ledger" in str(failed.value)


def test_an_unreachable_postgresql_server_is_a_ledger_error() -> None:
    pytest.importorskip("asyncpg")
    # Port 1 on the loopback refuses at once; asyncpg is the PostgreSQL driver Prefect installs.
    url = "postgresql+asyncpg://team:s3cret@127.0.0.1:1/ledger?async_fallback=true"
    with (
        pytest.warns(Warning, match="async_fallback"),
        pytest.raises(LedgerError, match="cannot open the privacy ledger") as failed,
    ):
        BudgetLedger(url)
    assert "127.0.0.1:1/ledger" in str(failed.value) and "s3cret" not in str(failed.value)


@pytest.mark.parametrize("url", ["sqlite+pysqlite://", "sqlite:///:memory:"])
def test_an_in_memory_database_is_shared_by_the_ledgers_threads(url: str) -> None:
    with BudgetLedger(url) as memory:
        memory.open_account("adult", 1.0)
        refused: list[BaseException] = []

        def spend() -> None:
            for _ in range(10):
                try:
                    charge(memory, 0.01)
                except BudgetExceededError as error:  # pragma: no cover - would fail the test
                    refused.append(error)

        threads = [threading.Thread(target=spend) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert refused == []
        account = memory.account("adult")
        assert len(account.entries) == 40
        assert account.spent_epsilon == 0.4


def test_the_postgresql_writer_lock_is_select_for_update() -> None:
    statement = _account_for_update("adult")
    on_postgresql = str(statement.compile(dialect=postgresql.dialect()))
    on_sqlite = str(statement.compile(dialect=sqlite.dialect()))
    assert on_postgresql.rstrip().endswith("FOR UPDATE")
    assert "FOR UPDATE" not in on_sqlite  # SQLite locks with BEGIN IMMEDIATE instead


def test_the_schema_compiles_for_postgresql() -> None:
    emitted: list[str] = []
    engine = create_mock_engine(
        "postgresql://",
        lambda sql, *a, **k: emitted.append(str(sql.compile(dialect=engine.dialect))),
    )
    METADATA.create_all(engine, checkfirst=False)
    tables = [sql for sql in emitted if sql.strip().startswith("CREATE TABLE")]
    assert len(tables) == 6
    entries_ddl = str(
        CreateTable(METADATA.tables["privgate_ledger_entries"]).compile(
            dialect=postgresql.dialect()
        )
    )
    assert "SERIAL" in entries_ddl and "TIMESTAMP WITH TIME ZONE" in entries_ddl
    assert "REFERENCES privgate_ledger_accounts (dataset)" in entries_ddl


def test_a_real_postgresql_ledger(postgres_url: str) -> None:
    with BudgetLedger(postgres_url) as team:
        dataset = f"adult-{os.getpid()}-{threading.get_ident()}"
        team.open_account(dataset, 1.0, 1e-6)
        team.charge(dataset, release_id="r1", run_id="x", spends=[FakeSpend("laplace", 0.7)])
        with pytest.raises(BudgetExceededError, match=r"remaining \(epsilon=0.3"):
            team.charge(dataset, release_id="r2", run_id="x", spends=[FakeSpend("laplace", 0.4)])
        team.mark_published(dataset, "r1", "releases/r1", "x")
        account = team.account(dataset)
        assert account.remaining == (0.3, 1e-6)
        assert account.published == {"r1": "releases/r1"}
