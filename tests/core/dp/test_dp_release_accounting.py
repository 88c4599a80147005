"""The DP release's accounting: write-ahead charges, and a gate that reads the ledger back."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.dp import mechanisms
from privgate.core.dp.gate import verify_dp_release
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.release import LedgerAccountant
from privgate.core.exceptions import BudgetExceededError

QIS = ["age", "sex"]


def _ledger(tmp_path: Path, budget: float = 1.0) -> BudgetLedger:
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("toy", budget, 0.0)
    return ledger


def _draw_then_crash(url: str) -> None:
    ledger = BudgetLedger(url)
    accountant = LedgerAccountant(ledger, "toy", "r1", "run-crash", budget=(1.0, 0.0))
    mechanisms.discrete_laplace_counts([10, 20, 30], 0.3, accountant=accountant, step="counts")
    os._exit(1)  # the process dies right after the noise was drawn, before any result is kept


def test_a_crash_after_the_noise_was_drawn_counts_as_spent(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    child = multiprocessing.get_context("spawn").Process(
        target=_draw_then_crash, args=(ledger.url,)
    )
    child.start()
    child.join(120)
    assert child.exitcode == 1
    account = ledger.account("toy")
    assert account.spent_epsilon == pytest.approx(0.3)
    assert [(e.release_id, e.run_id, e.step) for e in account.entries] == [
        ("r1", "run-crash", "counts")
    ]


def test_each_charge_is_in_the_ledger_before_the_mechanism_returns(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, budget=0.5)
    accountant = LedgerAccountant(ledger, "toy", "r1", "run-1", budget=(0.5, 0.0))
    mechanisms.discrete_laplace_counts([5, 5], 0.2, accountant=accountant, step="a")
    assert ledger.account("toy").spent_epsilon == pytest.approx(0.2)
    mechanisms.exponential_select([1.0, 2.0], 0.2, sensitivity=1.0, accountant=accountant)
    assert ledger.account("toy").spent_epsilon == pytest.approx(0.4)
    # the lifetime account (0.1 left) refuses the next step before it draws
    with pytest.raises(BudgetExceededError) as info:
        mechanisms.discrete_laplace_counts([5], 0.2, accountant=accountant, step="b")
    assert info.value.remaining[0] == pytest.approx(0.1)
    assert len(ledger.account("toy").entries) == 2
    assert accountant.total[0] == pytest.approx(0.4)


def _write(tmp_path: Path, counts: list[str]) -> Path:
    path = tmp_path / "release.csv"
    frame = pd.DataFrame({"age": ["20-39", "40-90"][: len(counts)], "sex": ["*"] * len(counts)})
    frame["count"] = counts
    frame.to_csv(path, index=False)
    return path


def _verify(path: Path, ledger: BudgetLedger, run_id: str = "run-1", epsilon: float = 0.5):
    return verify_dp_release(
        path,
        expected_columns=[*QIS, "count"],
        forbidden_columns=["name"],
        count_column="count",
        ledger=ledger,
        dataset="toy",
        release_id="r1",
        run_id=run_id,
        epsilon=epsilon,
        delta=0.0,
    )


def test_gate_passes_an_accounted_release_and_reports_the_budget(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    accountant = LedgerAccountant(ledger, "toy", "r1", "run-1", budget=(0.5, 0.0))
    mechanisms.discrete_laplace_counts([3, 4], 0.5, accountant=accountant)
    decision = _verify(_write(tmp_path, ["3", "5"]), ledger)
    assert decision.passed, decision.reasons
    m = decision.measurements
    assert m["run_epsilon"] == pytest.approx(0.5)
    assert m["remaining_epsilon"] == pytest.approx(0.5)
    assert m["noisy_total"] == 8


def test_gate_blocks_noise_that_was_never_accounted_for(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    decision = _verify(_write(tmp_path, ["3", "5"]), ledger)
    assert not decision.passed
    assert "holds no spend of run 'run-1'" in decision.reasons[0]


def test_gate_blocks_a_run_that_spent_more_than_its_policy(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    accountant = LedgerAccountant(ledger, "toy", "r1", "run-1", budget=(0.8, 0.0))
    mechanisms.discrete_laplace_counts([3, 4], 0.8, accountant=accountant)
    decision = _verify(_write(tmp_path, ["3", "5"]), ledger, epsilon=0.5)
    assert any("more than the policy's" in r for r in decision.reasons)


def test_gate_blocks_bad_counts_and_undeclared_columns(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    accountant = LedgerAccountant(ledger, "toy", "r1", "run-1", budget=(0.5, 0.0))
    mechanisms.discrete_laplace_counts([3, 4], 0.5, accountant=accountant)
    decision = _verify(_write(tmp_path, ["3", "-2"]), ledger)
    assert any("row 3 holds '-2', not a non-negative integer" in r for r in decision.reasons)
    path = tmp_path / "leaky.csv"
    pd.DataFrame({"age": ["20-39"], "sex": ["*"], "count": ["3"], "name": ["Ann"]}).to_csv(
        path, index=False
    )
    leaky = _verify(path, ledger)
    assert any("direct identifier" in r for r in leaky.reasons)


def test_the_charge_is_committed_before_the_noise_is_drawn(tmp_path: Path, monkeypatch) -> None:
    """Spy on both sides: the ledger's commit and OpenDP's sampler, in the order they happen."""
    events: list[str] = []
    ledger = _ledger(tmp_path, budget=0.5)
    real_charge = BudgetLedger.charge

    def charge(self, *args, **kwargs):
        entries = real_charge(self, *args, **kwargs)
        events.append("charged")
        return entries

    real_measurement = mechanisms._pure_measurement

    def measurement(*args, **kwargs):
        draw, spent, scale = real_measurement(*args, **kwargs)

        def spied(value):
            events.append("drawn")
            return draw(value)

        return spied, spent, scale

    monkeypatch.setattr(BudgetLedger, "charge", charge)
    monkeypatch.setattr(mechanisms, "_pure_measurement", measurement)
    accountant = LedgerAccountant(ledger, "toy", "r1", "run-1", budget=(1.0, 0.0))
    mechanisms.discrete_laplace_counts([5, 5], 0.4, accountant=accountant)
    assert events == ["charged", "drawn"]
    with pytest.raises(BudgetExceededError):  # 0.1 left in the ledger
        mechanisms.discrete_laplace_counts([5, 5], 0.4, accountant=accountant)
    assert events == ["charged", "drawn"]  # refused before any draw
