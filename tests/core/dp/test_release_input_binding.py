"""A DP release is bound to the table its noise was drawn from: a retry on another table is refused.

The journal replays a crashed release's draws so a retry spends nothing more. Those draws are
DP outputs *of the first input*: replayed over a changed table, DPHeter would republish the old
counts and SafePub would publish the new table's records through filters decided on the old
table's noise (records nobody paid noise for). The ledger records a fingerprint of the
mechanism's input with the first draw and refuses any later draw of the release on another one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from privgate.core.dp import mechanisms
from privgate.core.dp.journal import JournaledAccountant, table_fingerprint
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.release import run_dp_release
from privgate.core.exceptions import LedgerError
from privgate.core.hospital_data import generate_admissions
from privgate.core.policy import load_policy
from privgate.core.stages import load_hierarchies

REPO = Path(__file__).resolve().parents[3]


def _one_draw(ledger: BudgetLedger, run: str, sha: str) -> int:
    accountant = JournaledAccountant(ledger, "toy", "r1", run, budget=(0.5, 0.0), input_sha256=sha)
    return int(
        mechanisms.discrete_laplace_counts([10], 0.5, accountant=accountant, step="count")[0]
    )


def test_the_ledger_replays_a_draw_on_the_same_input_and_refuses_it_on_another(tmp_path):
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("toy", 1.0, 0.0)
    first = _one_draw(ledger, "run-1", "a" * 64)
    assert ledger.release_input("toy", "r1") == "a" * 64
    assert _one_draw(ledger, "run-2", "a" * 64) == first  # replayed, not drawn again
    spent = ledger.account("toy").exact_remaining_text
    with pytest.raises(LedgerError, match="another input table.*Restore the input"):
        _one_draw(ledger, "run-3", "b" * 64)
    assert ledger.account("toy").exact_remaining_text == spent  # nothing drawn, nothing charged
    assert ledger.release_input("toy", "r1") == "a" * 64


def test_the_fingerprint_sees_one_changed_cell_and_ignores_the_index():
    frame = generate_admissions(50, seed=3)
    changed = frame.copy()
    changed.loc[7, "age"] = int(changed.loc[7, "age"]) + 1
    assert table_fingerprint(frame) != table_fingerprint(changed)
    assert table_fingerprint(frame) == table_fingerprint(
        frame.set_axis(range(100, 100 + len(frame)))
    )
    assert table_fingerprint(frame) == table_fingerprint(frame.copy())


def _policy(tmp_path: Path):
    data = yaml.safe_load((REPO / "policies" / "hospital-dp.yaml").read_text())
    data["input"]["path"] = str(tmp_path / "admissions.csv")
    data["output"]["directory"] = str(tmp_path / "releases")
    data["differential_privacy"]["rounds"] = 2
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_policy(path)


def test_a_retry_of_a_dp_release_on_a_changed_table_is_refused_and_spends_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(tmp_path / "owner"))
    policy = _policy(tmp_path)
    hierarchies = load_hierarchies(policy)
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    frame = generate_admissions(200, seed=5)

    def release(table, run):
        return run_dp_release(
            table, policy, hierarchies, release_id="r1", run_id=run, ledger=ledger
        )

    first = release(frame, "run-1")
    again = release(frame.copy(), "run-2")  # the same input: every draw replayed
    assert again.owner["replayed_draws"] == len(first.draws) > 0
    assert again.frame.equals(first.frame)

    spent = ledger.account(policy.dataset).exact_remaining_text
    updated = frame.copy()  # one patient's age corrected overnight (in every admission)
    patient = updated["subject_id"] == updated.loc[0, "subject_id"]
    updated.loc[patient, "age"] = updated.loc[patient, "age"].astype(int) + 1
    with pytest.raises(LedgerError, match="another input table"):
        release(updated, "run-3")
    assert ledger.account(policy.dataset).exact_remaining_text == spent


def _unbound_draw(ledger: BudgetLedger, run: str) -> int:
    """A draw journaled without a fingerprint: what a ledger written before releases were bound
    to their input holds for a release that crashed then."""
    accountant = JournaledAccountant(ledger, "toy", "r1", run, budget=(0.5, 0.0))
    return int(
        mechanisms.discrete_laplace_counts([10], 0.5, accountant=accountant, step="count")[0]
    )


def test_a_release_that_drew_before_its_input_was_bound_is_not_bound_to_a_retrys_table(tmp_path):
    # review5 F1: the first fingerprint the ledger saw was taken as the release's input, even
    # when the release had drawn (unbound) before: a release crashed under an older privgate
    # and retried after the upgrade on a corrected table replayed the old table's draws over
    # the new one, which is what binding exists to refuse.
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("toy", 1.0, 0.0)
    _unbound_draw(ledger, "run-1")
    spent = ledger.account("toy").exact_remaining_text
    with pytest.raises(LedgerError, match="before its input was bound"):
        _one_draw(ledger, "run-2", "b" * 64)
    assert ledger.release_input("toy", "r1") is None  # nothing bound, drawn or charged
    assert ledger.account("toy").exact_remaining_text == spent


def test_a_bound_release_is_not_drawn_by_a_caller_that_names_no_input(tmp_path):
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    ledger.open_account("toy", 1.0, 0.0)
    _one_draw(ledger, "run-1", "a" * 64)
    with pytest.raises(LedgerError, match="bound to the table"):
        _unbound_draw(ledger, "run-2")


def test_a_retry_with_an_edited_hierarchy_file_is_refused(tmp_path, monkeypatch):
    # review5 F3: the release id covers the policy's text, not the content of the ARX files it
    # names, and the fingerprint covered the table only. A run blocked after its draws, its
    # hierarchy file edited (two values swapped between groups), then run again the same day
    # replayed every draw over the new hierarchy: on Adult the noisy count of Prof-school was
    # published as Masters' count, and the gate passed it (the counts are the journaled ones).
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(tmp_path / "owner"))
    hierarchy = tmp_path / "insurance.csv"
    hierarchy.write_text(
        "Medicare;Public;*\nMedicaid;Public;*\nPrivate;Non-public;*\nSelf-pay;Non-public;*\n"
    )
    data = yaml.safe_load((REPO / "policies" / "hospital-dp.yaml").read_text())
    data["input"]["path"] = str(tmp_path / "admissions.csv")
    data["output"]["directory"] = str(tmp_path / "releases")
    data["differential_privacy"]["rounds"] = 2
    data["columns"]["insurance"]["hierarchy"] = {"kind": "arx", "path": str(hierarchy)}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    policy = load_policy(path)
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    frame = generate_admissions(200, seed=5)

    def release(run):
        return run_dp_release(
            frame, policy, load_hierarchies(policy), release_id="r1", run_id=run, ledger=ledger
        )

    first = release("run-1")
    assert release("run-2").owner["replayed_draws"] == len(first.draws)  # same file: replayed
    spent = ledger.account(policy.dataset).exact_remaining_text
    hierarchy.write_text(
        "Medicare;Public;*\nPrivate;Public;*\nMedicaid;Non-public;*\nSelf-pay;Non-public;*\n"
    )
    with pytest.raises(LedgerError, match="another input table or hierarchy file"):
        release("run-3")
    assert ledger.account(policy.dataset).exact_remaining_text == spent
