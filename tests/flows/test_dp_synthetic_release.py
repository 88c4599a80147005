"""A DP synthetic release (``method: mst``) through the whole flow, on real Adult records.

The release reserves (ε, δ) in the ledger before its one draw, publishes synthetic records with
exactly the declared columns and values, and the DP gate re-derives them from the ledger's
journaled draw: a file that differs from what the draw yields is blocked. Its policy also asks
for ``attacks``: the release is published without a number of the attacks in its folder, and
the evidence is kept on the owner's side only.

The module runs that one release (``mst_release``) and its two tests read it: one OpenDP MST
release of whole Adult, searched, drawn, fitted and re-derived by the gate once. (The attack
test ran its own release of the same policy on 3,016 Adult records in
``test_release_flow_attacks.py``: a second search check, draw and two fits.)
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.dp.gate import verify_dp_microdata_release
from privgate.core.dp.ledger import RESERVATION, BudgetLedger, configured_ledger_url

ARX = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "arx"
RELEASED = ["sex", "age", "race", "salary-class"]
ADULT_ROWS = 30162


def _policy(tmp_path: Path) -> Path:
    dropped = ["marital-status", "education", "native-country", "workclass", "occupation"]
    lines = [
        "dataset: adult-mst",
        "input: {path: %s, format: csv, delimiter: ';', header: true}" % (ARX / "adult.csv"),
        "columns:",
        "  sex: {role: quasi_identifier, hierarchy: {kind: arx, path: %s}}"
        % (ARX / "adult_hierarchy_sex.csv"),
        "  age: {role: insensitive, type: integer, minimum: 17, maximum: 90}",
        "  race: {role: quasi_identifier, hierarchy: {kind: arx, path: %s}}"
        % (ARX / "adult_hierarchy_race.csv"),
        *[f"  {name}: {{role: identifier}}" for name in dropped],
        "  salary-class: {role: sensitive, categories: ['<=50K', '>50K']}",
        "differential_privacy:",
        "  method: mst",
        "  epsilon: 1.0",
        "  delta: 1.0e-6",
        "  budget: {epsilon: 4.0, delta: 1.0e-5}",
        "attacks: {n_attacks: 100, seed: 2}",
        f"output: {{directory: {tmp_path / 'releases'}, format: csv}}",
    ]
    path = tmp_path / "adult-mst.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def mst_release(prefect_harness, shared_data, tmp_path_factory):
    """The module's one MST release through the flow: (outcome, the privgate data directory it
    ran with: its ledger and the owner's attack evidence). Each test points
    ``PRIVGATE_DATA_DIR`` at that directory (``owner_data``)."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    shared_data("arx/adult.csv")
    tmp_path = tmp_path_factory.mktemp("mst-release")
    data = tmp_path_factory.mktemp("privgate-data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PRIVGATE_DATA_DIR", str(data))
        patch.delenv("PRIVGATE_LEDGER_URL", raising=False)
        outcome = release_flow(
            ReleaseParameters(policy_path=str(_policy(tmp_path)), release_date=date(2026, 12, 1))
        )
    return outcome, data


@pytest.fixture
def owner_data(mst_release, monkeypatch) -> Path:
    """The release's privgate data directory, made this test's."""
    _, data = mst_release
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(data))
    return data


def _control_rows(outcome: dict) -> int:
    """The records held out of the release for the attacks (owner-side evidence)."""
    from privgate.core.attacks import owner_evidence_path

    evidence = owner_evidence_path("adult-mst", outcome["release_id"])
    return json.loads(evidence.read_text())["details"]["control"]["control_rows"]


def test_an_mst_release_is_paid_for_published_and_rederived_by_the_gate(
    mst_release, owner_data, tmp_path
) -> None:
    outcome, _ = mst_release
    assert outcome["published"]
    folder = Path(outcome["path"])
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert list(release.columns) == RELEASED
    assert set(release["sex"]) <= {"Male", "Female"}
    assert set(release["salary-class"]) <= {"<=50K", ">50K"}
    assert release["age"].astype(int).between(17, 90).all()
    # The noisy total of the records released from (those not held out for the attacks), not
    # the exact one.
    assert abs(len(release) - (ADULT_ROWS - _control_rows(outcome))) < 500
    manifest = json.loads((folder / "manifest.json").read_text())
    dp = manifest["differential_privacy"]
    assert dp["method"] == "mst" and len(dp["draws"]) == 1
    assert 0.99 < dp["epsilon"] <= 1.0 and 0 < dp["delta"] <= 1e-6
    assert manifest["gate"]["passed"]
    assert "input_rows" not in json.dumps(manifest)  # owner-side facts stay owner-side

    ledger = BudgetLedger(configured_ledger_url())
    account = ledger.account("adult-mst")
    assert [e.mechanism for e in account.entries] == [RESERVATION]
    assert account.spent_epsilon == pytest.approx(1.0)

    # One record changed to another declared value: the gate re-derives the release from the
    # journaled draw and refuses the file.
    tampered = tmp_path / "tampered.csv"
    release.loc[0, "sex"] = "Female" if release.loc[0, "sex"] == "Male" else "Male"
    release.to_csv(tampered, index=False)
    with open(folder / "release.csv") as original:
        rows = pd.read_csv(original, dtype=str, keep_default_na=False)
    decision = verify_dp_microdata_release(
        tampered,
        expected_columns=RELEASED,
        forbidden_columns=[],
        allowed={"sex": {"Male", "Female"}, "age": (17, 90, True)},
        ledger=ledger,
        dataset="adult-mst",
        release_id=outcome["release_id"],
        used_draws=[(d["seq"], d["attempt"]) for d in dp["draws"]],
        epsilon=1.0,
        delta=1e-6,
        expected_rows=list(rows.itertuples(index=False, name=None)),
    )
    assert not decision.passed
    assert any("journaled draw yields" in r for r in decision.reasons)


def test_a_dp_release_keeps_its_attack_evidence_owner_side(mst_release, owner_data) -> None:
    """An MST release with ``attacks``: published without a number of the attacks in its
    folder; the evidence is in the owner's data directory only (0600 in 0700 folders)."""
    from privgate.core.attacks import owner_evidence_path

    outcome, _ = mst_release
    assert outcome["published"]
    folder = Path(outcome["path"])
    published = "".join(p.read_text(errors="ignore") for p in folder.rglob("*") if p.is_file())
    for word in ('"risks"', '"n_success"', '"unique_records"', '"control_rows"', "Attacks on"):
        assert word not in published  # (the policy's attacks settings are, without numbers)
    manifest = json.loads((folder / "manifest.json").read_text())
    held = manifest["differential_privacy"]["held_out_for_attacks"]
    assert (held["control_fraction"], held["seed"], held["unit"]) == (0.2, 2, "records")
    assert "held out of this release with probability 0.2" in (folder / "report.html").read_text()
    evidence_file = owner_evidence_path("adult-mst", outcome["release_id"])
    assert evidence_file.is_relative_to(owner_data)
    assert evidence_file.stat().st_mode & 0o777 == 0o600
    assert evidence_file.parent.stat().st_mode & 0o777 == 0o700
    evidence = json.loads(evidence_file.read_text())
    control = evidence["details"]["control"]
    assert 0.17 * ADULT_ROWS < control["control_rows"] < 0.23 * ADULT_ROWS
    for measure in ("singling_out", "linkability", "inference", "unique_exact_match"):
        low, high = evidence["risks"][measure]["ci"]
        assert 0 <= low <= evidence["risks"][measure]["value"] <= high <= 1
