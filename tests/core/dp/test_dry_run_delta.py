"""A DP dry run answers for delta as well as epsilon (review finding O2): a release whose delta
no longer fits the account is refused by the dry run, as the real run would refuse it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.pipeline import dry_run_check
from privgate.core.exceptions import BudgetExceededError
from privgate.core.policy import load_policy

HOSPITAL_DP = Path(__file__).resolve().parents[3] / "policies" / "hospital-dp.yaml"


def _mst_policy(tmp_path: Path):
    data = yaml.safe_load(HOSPITAL_DP.read_text())
    data["columns"]["admitted"] = {"role": "identifier"}
    data["differential_privacy"].update(
        method="mst", delta=1e-6, class_column=None, score="info_gain",
        budget={"epsilon": 4.0, "delta": 1e-5},
    )  # fmt: skip
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_policy(path)


def test_a_dry_run_refuses_a_delta_the_account_no_longer_has(tmp_path):
    policy = _mst_policy(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    fits = dry_run_check(policy, "r1", url)  # no ledger yet: the whole budget is left
    assert "would reserve epsilon 1 of the 4 left" in fits["message"]
    with BudgetLedger(url) as ledger:  # an account whose lifetime delta is smaller
        ledger.open_account(policy.dataset, 4.0, 1e-7)
    with pytest.raises(BudgetExceededError, match=r"would reserve delta=1e-06, but only 1e-07"):
        dry_run_check(policy, "r1", url)


def test_a_dry_run_of_a_reserved_release_says_a_rerun_replays_only_the_same_input(tmp_path):
    policy = _mst_policy(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    with BudgetLedger(url) as ledger:
        ledger.open_account(policy.dataset, 4.0, 1e-5)
        ledger.reserve(policy.dataset, release_id="r1", run_id="run-1", epsilon=1.0, delta=1e-6)
    message = dry_run_check(policy, "r1", url)["message"]
    assert "already reserved" in message and "refused otherwise" in message
