"""AIM and SafePub releases through the whole flow, on real Adult records (issue 21).

As ``test_dp_synthetic_release.py`` does for MST: each release reserves its (ε, δ) in the
ledger before drawing, publishes records with exactly the declared columns and values, is
charged what OpenDP's maps say, and passes the DP gate. AIM's records are re-derived by the
gate from the journaled draw (a changed record is refused); SafePub's release is k-anonymous at
the k its (ε, δ) determines, with every draw journaled.
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


def _policy(tmp_path: Path, dataset: str, method_lines: list[str], columns: list[str]) -> Path:
    lines = [
        f"dataset: {dataset}",
        "input: {path: %s, format: csv, delimiter: ';', header: true}" % (ARX / "adult_subset.csv"),
        "columns:",
        *columns,
        "differential_privacy:",
        *[f"  {line}" for line in method_lines],
        "  budget: {epsilon: 4.0, delta: 1.0e-5}",
        f"output: {{directory: {tmp_path / 'releases'}, format: csv}}",
    ]
    path = tmp_path / f"{dataset}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _hierarchy(name: str) -> str:
    return "{kind: arx, path: %s}" % (ARX / f"adult_hierarchy_{name}.csv")


def _run(policy: Path) -> tuple[dict, Path, dict]:
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    outcome = release_flow(
        ReleaseParameters(policy_path=str(policy), release_date=date(2026, 12, 1))
    )
    folder = Path(outcome["path"]) if outcome.get("path") else None
    manifest = json.loads((folder / "manifest.json").read_text()) if folder else {}
    return outcome, folder, manifest


def _reserved_once(dataset: str, epsilon: float) -> BudgetLedger:
    ledger = BudgetLedger(configured_ledger_url())
    account = ledger.account(dataset)
    assert [e.mechanism for e in account.entries] == [RESERVATION]
    assert account.spent_epsilon == pytest.approx(epsilon)
    return ledger


def test_an_aim_release_is_paid_for_published_and_rederived_by_the_gate(
    prefect_harness, shared_data, tmp_path
) -> None:
    shared_data("arx/adult_subset.csv")
    released = ["sex", "race", "salary-class"]
    dropped = ["age", "marital-status", "education", "native-country", "workclass", "occupation"]
    columns = [
        f"  sex: {{role: quasi_identifier, hierarchy: {_hierarchy('sex')}}}",
        f"  race: {{role: quasi_identifier, hierarchy: {_hierarchy('race')}}}",
        *[f"  {name}: {{role: identifier}}" for name in dropped],
        "  salary-class: {role: sensitive, categories: ['<=50K', '>50K']}",
    ]
    method = ["method: aim", "epsilon: 1.0", "delta: 1.0e-6", "aim_degree: 2", "aim_rounds: 3"]
    outcome, folder, manifest = _run(_policy(tmp_path, "adult-aim", method, columns))

    assert outcome["published"]
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert list(release.columns) == released
    assert set(release["sex"]) <= {"Male", "Female"}
    assert set(release["salary-class"]) <= {"<=50K", ">50K"}
    assert abs(len(release) - 3016) < 300  # the noisy total, not the exact one
    dp = manifest["differential_privacy"]
    assert dp["method"] == "aim" and len(dp["draws"]) == 1
    assert 0.99 < dp["epsilon"] <= 1.0 and 0 < dp["delta"] <= 1e-6
    assert manifest["gate"]["passed"]
    assert "input_rows" not in json.dumps(manifest)
    ledger = _reserved_once("adult-aim", 1.0)

    # the gate re-derives AIM's records from the journaled draw: one changed record is refused
    tampered = tmp_path / "tampered.csv"
    rows = list(release.itertuples(index=False, name=None))
    changed = release.copy()
    changed.loc[0, "sex"] = "Female" if changed.loc[0, "sex"] == "Male" else "Male"
    changed.to_csv(tampered, index=False)
    decision = verify_dp_microdata_release(
        tampered,
        expected_columns=released,
        forbidden_columns=[],
        allowed={"sex": {"Male", "Female"}},
        ledger=ledger,
        dataset="adult-aim",
        release_id=outcome["release_id"],
        used_draws=[(d["seq"], d["attempt"]) for d in dp["draws"]],
        epsilon=1.0,
        delta=1e-6,
        expected_rows=rows,
    )
    assert not decision.passed
    assert any("journaled draw yields" in r for r in decision.reasons)


def test_a_safepub_release_is_paid_for_k_anonymous_and_passes_the_gate(
    prefect_harness, shared_data, tmp_path
) -> None:
    shared_data("arx/adult_subset.csv")
    qis = ["sex", "age", "race", "marital-status"]
    dropped = ["education", "native-country", "workclass", "occupation"]
    columns = [
        *[f"  {q}: {{role: quasi_identifier, hierarchy: {_hierarchy(q)}}}" for q in qis],
        *[f"  {name}: {{role: identifier}}" for name in dropped],
        "  salary-class: {role: sensitive, categories: ['<=50K', '>50K']}",
    ]
    method = ["method: safepub", "epsilon: 1.0", "delta: 1.0e-5"]
    outcome, folder, manifest = _run(_policy(tmp_path, "adult-safepub", method, columns))

    assert outcome["published"]
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert list(release.columns) == [*qis, "salary-class"]
    dp = manifest["differential_privacy"]
    assert dp["method"] == "safepub"
    assert dp["epsilon"] == pytest.approx(1.0, rel=1e-9) and 0 < dp["delta"] <= 1e-5
    assert manifest["gate"]["passed"]
    assert "input_rows" not in json.dumps(manifest)
    _reserved_once("adult-safepub", 1.0)
    safepub = manifest["metrics"]["safepub"]
    k = safepub["k"]
    assert k >= 2 and release.groupby(qis).size().min() >= k  # the k-filter held
    assert 0 < len(release) < 3016  # a sample of the input, filtered
    assert set(release["salary-class"]) <= {"<=50K", ">50K"}
