"""Reservation before the first draw, journaled draws, replay after crashes, and the DP gate.

The crash tests kill real processes (``os._exit``) at the two points that matter: after a draw
was sampled but before it was journaled (the draw is lost: the retry draws it again and the
ledger charges the lost one), and after it was journaled (the retry replays it and spends
nothing more). Spies on the ledger and OpenDP's sampler check the order of events.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.dp import mechanisms
from privgate.core.dp.gate import compose_draws, verify_dp_release
from privgate.core.dp.journal import JournaledAccountant
from privgate.core.dp.ledger import LOST_DRAW, RESERVATION, BudgetLedger
from privgate.core.exceptions import BudgetExceededError, LedgerError

QIS = ["age", "sex"]

#: Crashing children come from a fork server: each is a clean single-threaded fork (safe beside
#: the threads a Prefect harness may run in this process) with the modules already imported.
_PROCESSES = multiprocessing.get_context("forkserver")
_PROCESSES.set_forkserver_preload(["privgate.core.dp.journal", "privgate.core.dp.mechanisms"])


def _ledger(tmp_path: Path, budget: float = 1.0) -> BudgetLedger:
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("toy", budget, 0.0)
    return ledger


def _accountant(ledger: BudgetLedger, release: str = "r1", run: str = "run-1", eps: float = 0.5):
    return JournaledAccountant(ledger, "toy", release, run, budget=(eps, 0.0))


def _release(accountant: JournaledAccountant) -> list[int]:
    """A tiny two-draw release: a selection, then counts that depend on it."""
    pick = mechanisms.exponential_select(
        [1.0, 5.0, 2.0], 0.2, sensitivity=1.0, accountant=accountant, step="selection"
    )
    counts = [[10, 20], [30, 40], [50, 60]][pick]
    return mechanisms.discrete_laplace_counts(
        counts, 0.3, accountant=accountant, step="counts"
    ).tolist()


def _crash_child(url: str, when: str) -> None:
    ledger = BudgetLedger(url)
    if when == "before-journal":
        real = BudgetLedger.complete_draw

        def die_before(self, *args, **kwargs):
            if kwargs["seq"] == 2:
                os._exit(1)  # the counts were sampled; the process dies before journaling them
            return real(self, *args, **kwargs)

        BudgetLedger.complete_draw = die_before
    accountant = _accountant(ledger, run="run-crash")
    _release(accountant)
    os._exit(1)  # after everything was journaled, before any result is kept


def _crash(ledger: BudgetLedger, when: str) -> None:
    child = _PROCESSES.Process(target=_crash_child, args=(ledger.url, when))
    child.start()
    child.join(120)
    assert child.exitcode == 1


@pytest.mark.slow
def test_a_crash_after_journaling_is_replayed_and_spends_nothing_more(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _crash(ledger, "after-journal")
    journal = ledger.draws("toy", "r1")
    assert [(d.seq, d.attempt, d.completed) for d in journal] == [(1, 1, True), (2, 1, True)]
    retry = _accountant(ledger, run="run-retry")
    counts = _release(retry)
    assert retry.replayed == 2
    assert counts == json.loads(journal[1].value)  # the crashed run's noise, not new noise
    account = ledger.account("toy")
    assert [e.mechanism for e in account.entries] == [RESERVATION]
    assert account.spent_epsilon == pytest.approx(0.5)


@pytest.mark.slow
def test_a_draw_lost_in_a_crash_is_charged_and_drawn_again(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _crash(ledger, "before-journal")
    journal = ledger.draws("toy", "r1")
    assert [(d.seq, d.attempt, d.completed) for d in journal] == [(1, 1, True), (2, 1, False)]
    retry = _accountant(ledger, run="run-retry")
    _release(retry)
    assert retry.replayed == 1  # the selection; the counts are drawn again
    assert [(r.seq, r.attempt) for r in retry.used_draws] == [(1, 1), (2, 2)]
    account = ledger.account("toy")
    lost = [e for e in account.entries if e.mechanism == LOST_DRAW]
    assert len(lost) == 1 and lost[0].epsilon == pytest.approx(0.3)
    # Every draw that may exist is counted: the reservation plus the one lost in flight.
    assert account.spent_epsilon == pytest.approx(0.8)
    # A third run replays everything and charges nothing more.
    again = _accountant(ledger, run="run-3")
    _release(again)
    assert again.replayed == 2
    assert ledger.account("toy").spent_epsilon == pytest.approx(0.8)


def test_the_release_is_reserved_and_each_draw_journaled_before_it_is_used(
    tmp_path: Path, monkeypatch
) -> None:
    """Spy on the ledger and OpenDP's sampler: reserve, start, sample, complete, in order."""
    events: list[str] = []
    ledger = _ledger(tmp_path, budget=0.5)
    for name in ("begin_draw", "complete_draw"):
        real = getattr(BudgetLedger, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            result = _real(self, *args, **kwargs)
            reserved = self.reservation("toy", "r1") is not None
            events.append(f"{_name}{'' if reserved else ' (unreserved)'}")
            return result

        monkeypatch.setattr(BudgetLedger, name, spy)
    real_measurement = mechanisms._pure_measurement

    def measurement(*args, **kwargs):
        draw, spent, scale = real_measurement(*args, **kwargs)

        def sampled(value):
            events.append("sampled")
            return draw(value)

        return sampled, spent, scale

    monkeypatch.setattr(mechanisms, "_pure_measurement", measurement)
    _release(_accountant(ledger))
    assert events == ["begin_draw", "sampled", "complete_draw"] * 2


def test_a_release_that_does_not_fit_is_refused_before_anything_is_drawn(
    tmp_path: Path, monkeypatch
) -> None:
    ledger = _ledger(tmp_path, budget=0.4)
    sampled = []
    real_measurement = mechanisms._pure_measurement

    def measurement(*args, **kwargs):
        draw, spent, scale = real_measurement(*args, **kwargs)
        return (lambda value: sampled.append(1) or draw(value)), spent, scale

    monkeypatch.setattr(mechanisms, "_pure_measurement", measurement)
    with pytest.raises(BudgetExceededError) as info:
        _release(_accountant(ledger, eps=0.5))
    assert info.value.remaining[0] == pytest.approx(0.4)
    assert sampled == []
    assert ledger.draws("toy", "r1") == []
    assert ledger.account("toy").spent_epsilon == 0.0


def test_a_replay_with_other_settings_is_refused(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _release(_accountant(ledger))
    changed = _accountant(ledger)
    mechanisms.exponential_select(
        [1.0, 5.0, 2.0], 0.2, sensitivity=1.0, accountant=changed, step="selection"
    )
    with pytest.raises(LedgerError, match="cannot be replayed"):
        mechanisms.discrete_laplace_counts([1, 2], 0.25, accountant=changed, step="counts")


def test_parallel_group_draws_are_journaled_and_compose_at_their_maximum(tmp_path) -> None:
    ledger = _ledger(tmp_path)
    accountant = _accountant(ledger, eps=0.6)
    with accountant.parallel_group("split points") as group:
        for scores in ([1.0, 2.0], [3.0, 1.0]):
            mechanisms.exponential_select(
                scores, 0.3, sensitivity=1.0, accountant=group, step="split"
            )
    mechanisms.discrete_laplace_counts([4, 5], 0.3, accountant=accountant, step="counts")
    journal = ledger.draws("toy", "r1")
    assert [d.parallel_group for d in journal] == ["group-1", "group-1", ""]
    assert compose_draws(journal)[0] == pytest.approx(0.6)
    assert accountant.total[0] == pytest.approx(0.6)


def _write(tmp_path: Path, counts: list[str], name: str = "release.csv") -> Path:
    path = tmp_path / name
    frame = pd.DataFrame({"age": ["20-39", "40-90"][: len(counts)], "sex": ["*"] * len(counts)})
    frame["count"] = counts
    frame.to_csv(path, index=False)
    return path


def _verify(path: Path, ledger: BudgetLedger, accountant: JournaledAccountant, eps=0.5):
    used = accountant.used_draws
    return verify_dp_release(
        path,
        expected_columns=[*QIS, "count"],
        forbidden_columns=["name"],
        count_column="count",
        ledger=ledger,
        dataset="toy",
        release_id="r1",
        used_draws=[(d.seq, d.attempt) for d in used],
        count_draw=(used[-1].seq, used[-1].attempt),
        epsilon=eps,
        delta=0.0,
    )


def _published(counts: list[int]) -> list[str]:
    return [str(max(c, 0)) for c in counts]


@pytest.mark.slow  # a DP release on Adult, a lost draw and the gate: 17 s under load
def test_gate_passes_a_journaled_release_even_after_a_lost_draw(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    _crash(ledger, "before-journal")
    retry = _accountant(ledger, run="run-retry")
    counts = _release(retry)
    decision = _verify(_write(tmp_path, _published(counts)), ledger, retry)
    assert decision.passed, decision.reasons
    m = decision.measurements
    assert m["release_epsilon"] == pytest.approx(0.5)  # the published release's composition
    assert m["lost_draws_epsilon"] == pytest.approx(0.3)  # charged, stated, not blocking
    assert m["remaining_exact"] == ["0.2", "0"]


def test_gate_blocks_counts_that_are_not_the_journaled_noise(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    accountant = _accountant(ledger)
    counts = _release(accountant)
    forged = _published([c + 1 for c in counts])
    decision = _verify(_write(tmp_path, forged), ledger, accountant)
    assert any("not the journaled noisy counts" in r for r in decision.reasons)


def test_gate_blocks_noise_that_was_never_paid_for(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    paid = _accountant(ledger, release="other")
    counts = _release(paid)
    decision = verify_dp_release(
        _write(tmp_path, _published(counts)),
        expected_columns=[*QIS, "count"],
        forbidden_columns=[],
        count_column="count",
        ledger=ledger,
        dataset="toy",
        release_id="r1",
        used_draws=[(1, 1), (2, 1)],
        count_draw=(2, 1),
        epsilon=0.5,
        delta=0.0,
    )
    assert not decision.passed
    assert any("no reservation for release r1" in r for r in decision.reasons)
    assert any("not in the ledger's journal" in r for r in decision.reasons)


def test_gate_blocks_a_release_whose_draws_exceed_its_policy(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    accountant = _accountant(ledger, eps=0.8)
    counts = _release(accountant)
    decision = _verify(_write(tmp_path, _published(counts)), ledger, accountant, eps=0.4)
    assert any("compose to (epsilon=0.5" in r for r in decision.reasons)
    assert any("reserved (epsilon=0.8" in r for r in decision.reasons)


def test_gate_blocks_bad_counts_and_undeclared_columns(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    accountant = _accountant(ledger)
    _release(accountant)
    decision = _verify(_write(tmp_path, ["3", "-2"]), ledger, accountant)
    assert any("row 3 holds '-2', not a non-negative integer" in r for r in decision.reasons)
    path = tmp_path / "leaky.csv"
    pd.DataFrame(
        {"age": ["20-39", "40-90"], "sex": ["*", "*"], "count": ["3", "4"], "name": ["A", "B"]}
    ).to_csv(path, index=False)
    assert any("direct identifier" in r for r in _verify(path, ledger, accountant).reasons)
