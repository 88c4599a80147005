"""Differentially private releases through the whole flow, on real Adult data.

The ε ledger is the gate's criterion: nightly releases reserve from the lifetime budget until
it is spent, and the run that would overspend is refused before drawing any noise and publishes
nothing, whatever ``--output`` it is given. A failed publication is rolled back together with
its ledger mark, and rerunning the same release replays the journaled noise. Neighbouring
inputs (one added record with a new category, a new class, an extreme value) give manifests and
release labels that are identical except for noisy numbers.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from task_runs import final_task_states

from privgate.core.dp.ledger import RESERVATION, BudgetLedger, configured_ledger_url
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


def _ledger() -> BudgetLedger:
    return BudgetLedger(configured_ledger_url())


def _published(folder: Path) -> list[Path]:
    return sorted(p.parent for p in folder.glob("adult-dp/*/manifest.json"))


def test_nightly_dp_releases_stop_at_the_lifetime_budget(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    first = _run(tmp_path, 1)
    second = _run(tmp_path, 2)
    assert first["published"] and second["published"]
    assert first["release_id"] != second["release_id"]  # a new night is a new release

    # Another output folder is no way around the budget: the ledger is the data owner's.
    with pytest.raises(BudgetExceededError) as info:  # 0.4 of 2.0 left, 0.8 asked
        _run(tmp_path / "elsewhere", 3)
    assert "remaining (epsilon=0.4" in str(info.value)
    assert not (tmp_path / "elsewhere" / "releases" / "adult-dp").exists() or not list(
        (tmp_path / "elsewhere" / "releases" / "adult-dp").iterdir()
    )

    assert [p.name for p in _published(tmp_path / "releases")] == sorted(
        [first["release_id"], second["release_id"]]
    )
    assert not list((tmp_path / "releases" / "adult-dp").glob(".staging-*"))
    ledger = _ledger()
    account = ledger.account("adult-dp")
    assert account.spent_epsilon == pytest.approx(1.6)
    assert [e.mechanism for e in account.entries] == [RESERVATION, RESERVATION]
    assert set(account.published) == {first["release_id"], second["release_id"]}
    refused = sorted(set(account.releases()) - set(account.published))
    assert refused == []  # the refused run reserved nothing and drew nothing

    folder = Path(second["path"])
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert release.columns[-1] == "count"
    assert set(release.columns) == {*QIS, "count"}
    manifest = json.loads((folder / "manifest.json").read_text())
    dp = manifest["differential_privacy"]
    assert sum(s["epsilon"] for s in dp["spends"]) == pytest.approx(0.8)
    assert dp["budget_split"]["score"] == "max"
    assert dp["budget_split"]["classes"] == 2  # the declared classes, public
    assert dp["declared_domains"]["classes"] == ["<=50K", ">50K"]
    assert {s["mechanism"] for s in dp["spends"]} >= {"exponential", "discrete_laplace"}
    assert len(dp["draws"]) == len(ledger.draws("adult-dp", second["release_id"]))
    assert manifest["gate"]["measurements"]["remaining_exact"][0] == "0.4"
    assert "score" not in json.dumps(dp["specializations"])
    # nothing exact about the private data in a DP release's manifest or id
    input_sha256 = hashlib.sha256(Path(manifest["input"]["path"]).read_bytes()).hexdigest()
    published = json.dumps(manifest)
    assert input_sha256 not in published and input_sha256[:12] not in second["release_id"]
    assert "rows" not in manifest["input"] and "input_rows" not in manifest["metrics"]
    assert "seconds" not in published and "created_at" not in published

    # The report: spends, the remaining budget, declared domains, the noise in plain words.
    report = (folder / "report.html").read_text()
    assert (
        manifest["report"]["sha256"]
        == hashlib.sha256((folder / "report.html").read_bytes()).hexdigest()
    )
    for expected in (
        "Privacy budget",
        "ε remaining",
        "0.4",
        "Declared domains",
        "&lt;=50K",
        "discrete Laplace noise of scale",
        "on average it is off by",
        "DPHeter leaf counts",
    ):
        assert expected in report, expected
    assert "<script" not in report and "http" not in report.replace("http-equiv", "")

    from privgate.flows.cli import main

    # redirect_stdout, not capsys: Prefect's console handler must keep the real stream
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["budget", "adult-dp"]) == 0
    shown = out.getvalue()
    assert "remaining: (epsilon=0.4, delta=0)" in shown
    assert shown.count("published at") == 2


def _extra_record(adult: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One record to add: a new category, a new class, or an extreme value."""
    extra = adult.iloc[[0]].copy()
    if kind == "new category":
        extra["native-country"] = "Atlantis"
    elif kind == "new class":
        extra["salary-class"] = ">1M"
    else:
        extra["age"] = "150"  # beyond the declared maximum (100)
    return extra


def test_neighbouring_inputs_differ_only_in_noisy_numbers(
    prefect_harness, shared_data, tmp_path, monkeypatch
):
    """D and D' = D + one record (a new category, a new class, an extreme value).

    The DP *selections* are replayed from D's journal, so both releases have the same cuts;
    the leaf counts are drawn afresh on each input. Then every field of the manifest except
    the noisy counts (and the output's digest) is identical, and so is every label of the
    release: nothing published depends on the data except through the charged noise, and the
    extra record is handled by the declared-domain rule, never by widening a domain.
    """
    import sqlalchemy

    from privgate.core.dp.release import LEAF_COUNTS_STEP
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    adult = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str).head(4000)
    source = tmp_path / "input.csv"
    # Replaying D's selections over D' is what the ledger's input binding refuses in a real run
    # (tests/core/dp/test_release_input_binding.py); this experiment does it on purpose, so
    # every input gets one fingerprint here (the run-time refusal made it fail since faf1fb3).
    monkeypatch.setattr(
        "privgate.core.dp.release.input_fingerprint", lambda frame, hierarchies: "0" * 64
    )

    def release(rows: pd.DataFrame, name: str) -> tuple[dict, pd.DataFrame]:
        rows.to_csv(source, sep=";", index=False)
        with sqlalchemy.create_engine(configured_ledger_url()).begin() as db:
            db.execute(
                sqlalchemy.text("DELETE FROM privgate_ledger_draws WHERE step = :step"),
                {"step": LEAF_COUNTS_STEP},
            )
        outcome = release_flow(
            ReleaseParameters(
                policy_path=str(DP_POLICY),
                release_date=date(2026, 12, 1),
                overrides={
                    "input.path": str(source),
                    "output.directory": str(tmp_path / name),
                    "differential_privacy.rounds": 6,
                },
            )
        )
        folder = Path(outcome["path"])
        manifest = json.loads((folder / "manifest.json").read_text())
        table = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
        return manifest, table

    _ledger().open_account("adult-dp", 2.0, 0.0)  # so the first DELETE finds its table
    base_manifest, base_table = release(adult, "d")

    def comparable(manifest: dict) -> dict:
        manifest = json.loads(json.dumps(manifest))
        manifest["policy"]["output"].pop("directory")  # the operator's choice per run
        manifest.pop("policy_sha256")
        manifest["output"].pop("sha256")  # a digest of the noisy counts
        manifest["report"].pop("sha256")  # the report shows the noisy total
        manifest["metrics"].pop("noisy_total")
        manifest["gate"]["measurements"].pop("noisy_total")
        manifest["utility"]["measurements"].pop("relative_noise")
        for draw in manifest["differential_privacy"]["draws"]:
            draw.pop("run_id")  # which (random-id) run drew the fresh counts
        return manifest

    for kind in ("new category", "new class", "extreme value"):
        rows = pd.concat([adult, _extra_record(adult, kind)])
        manifest, table = release(rows, kind.replace(" ", "-"))
        assert comparable(manifest) == comparable(base_manifest), kind
        assert table.drop(columns="count").equals(base_table.drop(columns="count")), kind
        assert not table["count"].equals(base_table["count"])  # fresh noise was drawn
        text = json.dumps(manifest) + table.to_csv()
        assert "Atlantis" not in text and ">1M" not in text
    domains = base_manifest["differential_privacy"]["declared_domains"]
    assert domains["numeric"]["age"] == [1.0, 100.0]
    assert domains["classes"] == ["<=50K", ">50K"]


def test_failed_publication_rolls_back_and_the_rerun_spends_nothing_more(
    prefect_harness, shared_data, tmp_path
):
    shared_data("arx/adult.csv")

    def ledger_down(self, *args, **kwargs):
        raise OSError("ledger database unreachable")

    with pytest.MonkeyPatch.context() as patch:  # undone alone: the data directory stays
        patch.setattr(BudgetLedger, "mark_published", ledger_down)
        with pytest.raises(OSError, match="unreachable"):
            _run(tmp_path, 5)
    # the rename into place happened, then the ledger mark failed: both are rolled back
    assert _published(tmp_path / "releases") == []
    assert not [p for p in (tmp_path / "releases" / "adult-dp").iterdir() if p.is_dir()]
    ledger = _ledger()
    account = ledger.account("adult-dp")
    assert account.spent_epsilon == pytest.approx(0.8)  # reserved: the noise was drawn
    assert account.published == {}
    (release_id,) = account.releases()
    drawn = [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp", release_id)]

    outcome = _run(tmp_path, 5)
    assert outcome["published"]
    account = ledger.account("adult-dp")
    assert account.spent_epsilon == pytest.approx(0.8)  # no second spend
    # The published noise is the first run's: the rerun replayed the journal.
    assert [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp", release_id)] == drawn
    assert account.published == {outcome["release_id"]: outcome["path"]}


def test_utility_threshold_blocks_a_dp_release_without_a_second_spend(
    prefect_harness, shared_data, tmp_path
):
    shared_data("arx/adult.csv")
    unreachable = {"utility": {"thresholds": {"max_relative_noise": 1e-9}}}
    with pytest.raises(UtilityBlockedError, match="max_relative_noise = 1e-09 not met"):
        _run(tmp_path, 7, **unreachable)
    assert _published(tmp_path / "releases") == []
    assert _ledger().account("adult-dp").spent_epsilon == pytest.approx(0.8)
    outcome = _run(tmp_path, 7, **{"utility": {"thresholds": {"max_relative_noise": 0.5}}})
    assert outcome["published"]
    assert _ledger().account("adult-dp").spent_epsilon == pytest.approx(0.8)


def test_dp_dry_run_reserves_draws_and_creates_nothing(
    prefect_harness, shared_data, tmp_path, _private_data_dir
):
    shared_data("arx/adult.csv")
    outcome = _run(tmp_path, 9, dry_run=True)
    assert not outcome["published"] and outcome["dry_run"]
    assert outcome["gate"]["measurements"]["remaining_epsilon"] == pytest.approx(1.2)
    assert not (_private_data_dir / "privacy-ledger.sqlite").exists()  # no ledger, no account
    assert not list((tmp_path / "releases").glob("adult-dp/*/manifest.json"))

    _run(tmp_path, 8, epsilon=1.5)  # a real release spends 1.5 of 2.0
    with pytest.raises(BudgetExceededError, match="only 0.5 is left"):
        _run(tmp_path, 9, dry_run=True)
    assert _ledger().account("adult-dp").spent_epsilon == pytest.approx(1.5)


def test_a_blocked_dp_gate_fails_its_own_task_with_the_reason(
    task_run_records, shared_data, tmp_path, monkeypatch
):
    """The DPHeter release claims a draw the ledger's journal never recorded: the DP gate must
    block it, and the UI must show that on the gate's own task (Failed, reason as message),
    as it does for the k-anonymous gate; the blocked report is still written."""
    shared_data("arx/adult.csv")

    from privgate.core.dp import pipeline
    from privgate.core.exceptions import GateBlockedError
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    honest = pipeline.verify_dp_release

    def with_an_unjournaled_draw(*args, used_draws, **kwargs):
        return honest(*args, used_draws=[*used_draws, (10_000, 0)], **kwargs)

    monkeypatch.setattr(pipeline, "verify_dp_release", with_an_unjournaled_draw)
    state = release_flow(
        ReleaseParameters(
            policy_path=str(DP_POLICY),
            release_date=date(2026, 12, 21),
            overrides={
                "output.directory": str(tmp_path / "releases"),
                "differential_privacy.rounds": 4,
            },
        ),
        return_state=True,
    )
    assert state.is_failed()
    refusal = state.result(raise_on_failure=False)
    assert isinstance(refusal, GateBlockedError) and refusal.decision.passed is False
    assert state.message.startswith("gate blocked DP release "), state.message
    tasks = final_task_states(state.state_details.flow_run_id, "verify-and-gate-dp", "report-dp")
    gate = tasks["verify-and-gate-dp"]
    assert gate.is_failed(), tasks
    assert gate.message and "gate blocked DP release" in gate.message
    assert "; ".join(refusal.decision.reasons) in gate.message
    assert tasks["report-dp"].is_completed()
    assert _published(tmp_path / "releases") == []
    assert list((tmp_path / "releases" / "adult-dp" / "blocked").glob("*/report.html"))
    assert not list((tmp_path / "releases" / "adult-dp").glob(".staging-*"))
