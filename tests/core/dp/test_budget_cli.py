"""`privgate budget DATASET`: the configured ledger's account, exact decimals, clear refusals."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from privgate.core.dp.ledger import BudgetLedger, configured_ledger_url
from privgate.flows.cli import main


@dataclass(frozen=True)
class Paid:
    mechanism: str = "discrete_laplace"
    epsilon: float = 0.3
    delta: float = 0.0
    step: str = "leaf counts"


def test_budget_reads_the_configured_ledger_and_prints_exact_decimals(capsys) -> None:
    ledger = BudgetLedger(configured_ledger_url())
    ledger.open_account("adult-dp", 1.0, 0.0)
    for release in ("r1", "r2", "r3"):  # 1.0 - 3 x 0.3 as floats is 0.10000000000000009
        ledger.charge("adult-dp", release_id=release, run_id="run-1", spends=[Paid()])
    assert main(["budget", "adult-dp"]) == 0
    shown = capsys.readouterr().out
    assert "spent:     (epsilon=0.9, delta=0.0)" in shown
    assert "remaining: (epsilon=0.1, delta=0)" in shown
    assert "release r1" in shown and "not published" in shown


def test_a_used_up_budget_prints_zero_not_rounding_noise(capsys) -> None:
    ledger = BudgetLedger(configured_ledger_url())
    ledger.open_account("adult-dp", 2.0, 0.0)
    for _ in range(4):
        ledger.charge("adult-dp", release_id="r", run_id="x", spends=[Paid(epsilon=0.5)])
    assert main(["budget", "adult-dp"]) == 0
    assert "remaining: (epsilon=0, delta=0)" in capsys.readouterr().out


def test_budget_of_an_unknown_dataset_names_the_known_ones(capsys) -> None:
    BudgetLedger(configured_ledger_url()).open_account("adult-dp", 1.0, 0.0)
    assert main(["budget", "census"]) == 2
    assert "adult-dp" in capsys.readouterr().err


def test_budget_without_a_ledger_creates_nothing(_private_data_dir: Path, capsys) -> None:
    assert main(["budget", "adult-dp"]) == 2
    assert "no privacy ledger at" in capsys.readouterr().err
    assert list(_private_data_dir.iterdir()) == []


def test_a_budget_changes_only_with_a_reason(capsys) -> None:
    BudgetLedger(configured_ledger_url()).open_account("adult-dp", 1.0, 0.0)
    assert main(["budget", "adult-dp", "--set-epsilon", "3"]) == 2
    assert "--reason" in capsys.readouterr().err
    assert main(["budget", "adult-dp", "--set-epsilon", "3", "--reason", "board approval"]) == 0
    shown = capsys.readouterr().out
    assert "budget:    (epsilon=3.0, delta=0.0)" in shown and "board approval" in shown
