"""`privgate budget DATASET`: the account as the ledger holds it, and clear refusals."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from privgate.core.dp.ledger import BudgetLedger, default_ledger_url
from privgate.flows.cli import main


@dataclass(frozen=True)
class Paid:
    mechanism: str = "discrete_laplace"
    epsilon: float = 0.3
    delta: float = 0.0
    step: str = "leaf counts"


def test_budget_shows_spent_and_remaining(tmp_path: Path, capsys) -> None:
    ledger = BudgetLedger(default_ledger_url(tmp_path))
    ledger.open_account("adult-dp", 1.0, 0.0)
    ledger.charge("adult-dp", release_id="2026-12-01-abc", run_id="run-1", spends=[Paid()])
    assert main(["budget", "adult-dp", "--output", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "spent:     (epsilon=0.3, delta=0.0)" in shown
    assert "remaining: (epsilon=0.7, delta=0.0)" in shown
    assert "release 2026-12-01-abc" in shown and "not published" in shown


def test_budget_of_an_unknown_dataset_names_the_known_ones(tmp_path: Path, capsys) -> None:
    BudgetLedger(default_ledger_url(tmp_path)).open_account("adult-dp", 1.0, 0.0)
    assert main(["budget", "census", "--output", str(tmp_path)]) == 2
    assert "adult-dp" in capsys.readouterr().err


def test_budget_without_a_ledger_creates_nothing(tmp_path: Path, capsys) -> None:
    assert main(["budget", "adult-dp", "--output", str(tmp_path / "releases")]) == 2
    assert "no privacy ledger at" in capsys.readouterr().err
    assert not (tmp_path / "releases").exists()
