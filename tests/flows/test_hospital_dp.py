"""End to end: the hospital DP example, where the privacy unit is the patient, not the admission.

``policies/hospital-dp.yaml`` declares ``differential_privacy.person_key: subject_id``. The flow
bounds each patient to one admission before any noise is drawn; the manifest and the report
state the unit; neighbouring inputs at the person level (one patient added with all of their
admissions, including values outside the declared domains) give manifests and labels that differ
only in noisy numbers.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd

from privgate.core.dp.ledger import configured_ledger_url
from privgate.core.dp.person_bounding import BOUNDING_SECRET_FILE
from privgate.core.hospital_data import generate_admissions
from privgate.core.locations import data_dir

HOSPITAL_DP = Path(__file__).resolve().parents[2] / "policies" / "hospital-dp.yaml"


def _release(source: Path, output: Path, rows: pd.DataFrame) -> tuple[dict, pd.DataFrame, Path]:
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    rows.to_csv(source, index=False)
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(HOSPITAL_DP),
            release_date=date(2026, 11, 25),
            overrides={
                "input.path": str(source),
                "output.directory": str(output),
                "differential_privacy.rounds": 4,
            },
        )
    )
    assert outcome["published"], outcome
    folder = Path(outcome["path"])
    manifest = json.loads((folder / "manifest.json").read_text())
    table = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    return manifest, table, folder


def _newcomer(n: int) -> pd.DataFrame:
    """A new patient with ``n`` admissions, one of them with an undeclared ethnicity."""
    pool = generate_admissions(400, seed=99)
    counts = pool["subject_id"].value_counts()
    patient = pool[pool["subject_id"] == counts[counts >= n].index[0]].head(n).copy()
    patient["subject_id"] = "S-NEWCOMER"
    patient["admission_id"] = [f"A-NEW-{i}" for i in range(n)]
    patient.iloc[0, patient.columns.get_loc("ethnicity")] = "Martian"
    return patient


def test_a_hospital_dp_release_is_per_patient_and_neighbouring_patients_change_only_noise(
    tmp_path, monkeypatch
):
    import sqlalchemy

    from privgate.core.dp.release import LEAF_COUNTS_STEP

    admissions = generate_admissions(400, seed=21)
    assert admissions["subject_id"].duplicated().any()
    # D' below replays D's selections: what the ledger's input binding refuses in a real
    # run (tests/core/dp/test_release_input_binding.py). This experiment does it on purpose,
    # so every input gets one fingerprint here (the refusal made it fail since faf1fb3).
    monkeypatch.setattr(
        "privgate.core.dp.release.input_fingerprint", lambda frame, hierarchies: "0" * 64
    )
    source = tmp_path / "admissions.csv"
    manifest, table, folder = _release(source, tmp_path / "d", admissions)

    dp = manifest["differential_privacy"]
    assert dp["privacy_unit"].startswith("one person") and "'subject_id'" in dp["privacy_unit"]
    assert "Privacy unit: one person" in (folder / "report.html").read_text()
    assert "subject_id" not in table.columns and "admission_id" not in table.columns
    published = "".join(p.read_text(errors="ignore") for p in folder.iterdir() if p.is_file())
    assert "S000" not in published  # no patient id anywhere in the folder
    assert (data_dir() / BOUNDING_SECRET_FILE).exists()  # the owner's secret, not published
    assert BOUNDING_SECRET_FILE not in published

    def comparable(m: dict) -> dict:
        m = json.loads(json.dumps(m))
        m["policy"]["output"].pop("directory")
        m.pop("policy_sha256")
        m["output"].pop("sha256")
        m["report"].pop("sha256")
        m["metrics"].pop("noisy_total")
        m["gate"]["measurements"].pop("noisy_total")
        m["utility"].get("measurements", {}).pop("relative_noise", None)
        for draw in m["differential_privacy"]["draws"]:
            draw.pop("run_id")
        return m

    # D' = D + one patient with six admissions: the selections replay D's journal, the leaf
    # counts are drawn afresh; everything but noisy numbers is identical.
    with sqlalchemy.create_engine(configured_ledger_url()).begin() as db:
        db.execute(
            sqlalchemy.text("DELETE FROM privgate_ledger_draws WHERE step = :step"),
            {"step": LEAF_COUNTS_STEP},
        )
    rows = pd.concat([admissions, _newcomer(6)], ignore_index=True)
    manifest_prime, table_prime, _ = _release(source, tmp_path / "d-prime", rows)
    assert comparable(manifest_prime) == comparable(manifest)
    assert table_prime.drop(columns="count").equals(table.drop(columns="count"))
    assert "Martian" not in json.dumps(manifest_prime) + table_prime.to_csv()
