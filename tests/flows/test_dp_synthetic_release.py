"""A DP synthetic release (``method: mst``) through the whole flow, on real Adult records.

The release reserves (ε, δ) in the ledger before its one draw, publishes synthetic records with
exactly the declared columns and values, and the DP gate re-derives them from the ledger's
journaled draw: a file that differs from what the draw yields is blocked.
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
        f"output: {{directory: {tmp_path / 'releases'}, format: csv}}",
    ]
    path = tmp_path / "adult-mst.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_mst_release_is_paid_for_published_and_rederived_by_the_gate(
    prefect_harness, shared_data, tmp_path
) -> None:
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    shared_data("arx/adult.csv")
    outcome = release_flow(
        ReleaseParameters(policy_path=str(_policy(tmp_path)), release_date=date(2026, 12, 1))
    )
    assert outcome["published"]
    folder = Path(outcome["path"])
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert list(release.columns) == RELEASED
    assert set(release["sex"]) <= {"Male", "Female"}
    assert set(release["salary-class"]) <= {"<=50K", ">50K"}
    assert release["age"].astype(int).between(17, 90).all()
    assert abs(len(release) - 30162) < 500  # the noisy total, not the exact one
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
