"""Differentially private releases through the whole flow, on real Adult data.

The ε ledger is the gate's criterion: nightly releases compose until the lifetime budget is
spent, and the run that would overspend is refused before drawing any noise and publishes
nothing. A failed publication is rolled back together with its ledger mark, and rerunning the
same release reuses the noise already drawn and paid for.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.dp.ledger import BudgetLedger, default_ledger_url
from privgate.core.exceptions import BudgetExceededError, UtilityBlockedError
from privgate.core.policy import load_policy

REPO = Path(__file__).resolve().parents[2]
DP_POLICY = REPO / "policies" / "adult-dp.yaml"
QIS = load_policy(DP_POLICY).quasi_identifiers


def _run(tmp_path: Path, day: int, epsilon: float = 0.8, dry_run: bool = False, **overrides):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    return release_flow(
        ReleaseParameters(
            policy_path=str(DP_POLICY),
            release_date=date(2026, 12, day),
            epsilon=epsilon,
            dry_run=dry_run,
            overrides={
                "output.directory": str(tmp_path / "releases"),
                "differential_privacy.rounds": 4,
                **overrides,
            },
        )
    )


def _ledger(tmp_path: Path) -> BudgetLedger:
    return BudgetLedger(default_ledger_url(tmp_path / "releases"))


def _published(tmp_path: Path) -> list[Path]:
    return sorted(p.parent for p in (tmp_path / "releases").glob("adult-dp/*/manifest.json"))


def test_nightly_dp_releases_stop_at_the_lifetime_budget(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    first = _run(tmp_path, 1)
    second = _run(tmp_path, 2)
    assert first["published"] and second["published"]
    assert first["release_id"] != second["release_id"]  # a new night is a new release

    with pytest.raises(BudgetExceededError) as info:  # 0.4 of 2.0 left, 0.8 asked
        _run(tmp_path, 3)
    assert "remaining (epsilon=0.4" in str(info.value)
    assert info.value.remaining[0] == pytest.approx(0.4)

    assert [p.name for p in _published(tmp_path)] == sorted(
        [first["release_id"], second["release_id"]]
    )
    assert not list((tmp_path / "releases" / "adult-dp").glob(".staging-*"))
    account = _ledger(tmp_path).account("adult-dp")
    assert account.spent_epsilon == pytest.approx(1.6)
    assert set(account.releases()) == {first["release_id"], second["release_id"]}
    assert set(account.published) == {first["release_id"], second["release_id"]}

    folder = Path(second["path"])
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert release.columns[-1] == "count"
    assert set(release.columns) == {*QIS, "count"}
    assert (release["count"].astype(int) >= 0).all()
    manifest = json.loads((folder / "manifest.json").read_text())
    spends = manifest["differential_privacy"]["spends"]
    assert sum(s["epsilon"] for s in spends) == pytest.approx(0.8)
    split = manifest["differential_privacy"]["budget_split"]  # the policy's choices, recorded
    assert split["score"] == "max"
    assert split["counts"] + split["selection_spent"] == pytest.approx(0.8)
    assert {s["mechanism"] for s in spends} >= {"exponential", "discrete_laplace"}
    assert manifest["gate"]["measurements"]["remaining_epsilon"] == pytest.approx(0.4)
    assert "score" not in json.dumps(manifest["differential_privacy"]["specializations"])
    # nothing exact about the private data in a DP release's manifest or id: no row count, no
    # content hash, no run time, no class count observed in the data
    input_sha256 = hashlib.sha256(Path(manifest["input"]["path"]).read_bytes()).hexdigest()
    published = json.dumps(manifest)
    assert input_sha256 not in published and input_sha256[:12] not in second["release_id"]
    assert "rows" not in manifest["input"] and "input_rows" not in manifest["metrics"]
    assert "seconds" not in manifest["metrics"]
    assert not {"classes", "sensitivity"} & set(split)

    from privgate.flows.cli import main

    # redirect_stdout, not capsys: Prefect's console handler must keep the real stream
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["budget", "adult-dp", "--output", str(tmp_path / "releases")]) == 0
    shown = out.getvalue()
    assert "remaining: (epsilon=0.4" in shown
    assert shown.count("published at") == 2


def test_failed_publication_rolls_back_and_the_rerun_spends_nothing_more(
    prefect_harness, shared_data, tmp_path, monkeypatch
):
    shared_data("arx/adult.csv")

    def ledger_down(self, *args, **kwargs):
        raise OSError("ledger database unreachable")

    monkeypatch.setattr(BudgetLedger, "mark_published", ledger_down)
    with pytest.raises(OSError, match="unreachable"):
        _run(tmp_path, 5)
    # the rename into place happened, then the ledger mark failed: both are rolled back
    assert _published(tmp_path) == []
    assert not [p for p in (tmp_path / "releases" / "adult-dp").iterdir() if p.is_dir()]
    account = _ledger(tmp_path).account("adult-dp")
    assert account.spent_epsilon == pytest.approx(0.8)  # the noise was drawn: it counts
    assert account.published == {}
    drawn_by = {entry.run_id for entry in account.entries}
    assert len(drawn_by) == 1

    monkeypatch.undo()
    outcome = _run(tmp_path, 5)
    assert outcome["published"]
    account = _ledger(tmp_path).account("adult-dp")
    assert account.spent_epsilon == pytest.approx(0.8)  # no second spend
    assert {entry.run_id for entry in account.entries} == drawn_by
    manifest = json.loads((Path(outcome["path"]) / "manifest.json").read_text())
    assert manifest["run_id"] in drawn_by  # the published noise is the first run's
    assert account.published == {outcome["release_id"]: outcome["path"]}


def test_utility_threshold_blocks_a_dp_release_without_a_second_spend(
    prefect_harness, shared_data, tmp_path
):
    shared_data("arx/adult.csv")
    unreachable = {"utility": {"thresholds": {"min_match_point": 1.0}}}
    with pytest.raises(UtilityBlockedError, match="min_match_point = 1 not met"):
        _run(tmp_path, 7, **unreachable)
    assert _published(tmp_path) == []
    assert _ledger(tmp_path).account("adult-dp").spent_epsilon == pytest.approx(0.8)
    outcome = _run(tmp_path, 7, **{"utility": {"thresholds": {"min_match_point": 0.1}}})
    assert outcome["published"]
    assert _ledger(tmp_path).account("adult-dp").spent_epsilon == pytest.approx(0.8)


def test_dp_dry_run_checks_the_budget_without_drawing(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    outcome = _run(tmp_path, 9, dry_run=True)
    assert not outcome["published"] and outcome["dry_run"]
    assert outcome["gate"]["measurements"]["remaining_epsilon"] == pytest.approx(1.2)
    ledger = _ledger(tmp_path)
    account = ledger.account("adult-dp")
    assert account.spent_epsilon == 0 and account.entries == ()
    assert not list((tmp_path / "releases" / "adult-dp").glob("*/manifest.json"))

    @dataclass(frozen=True)
    class Earlier:
        mechanism: str = "laplace"
        epsilon: float = 1.5
        delta: float = 0.0
        step: str = "an earlier release"

    ledger.charge("adult-dp", release_id="earlier", run_id="r0", spends=[Earlier()])
    with pytest.raises(BudgetExceededError, match=r"remaining \(epsilon=0.5"):
        _run(tmp_path, 9, dry_run=True)
    assert ledger.account("adult-dp").spent_epsilon == pytest.approx(1.5)
