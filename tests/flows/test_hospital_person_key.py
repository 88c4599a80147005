"""End to end: the hospital example policy, people not rows, through the release flow."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd

from privgate.core.hospital_data import write_admissions_csv

HOSPITAL_POLICY = Path(__file__).resolve().parents[2] / "policies" / "hospital.yaml"
QIS = ["gender", "age", "ethnicity", "marital_status", "insurance", "admission_type",
       "language", "admitted"]  # fmt: skip


def test_hospital_release_protects_patients_not_admissions(prefect_harness, tmp_path):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=600, seed=7)
    admissions = pd.read_csv(data, dtype=str)
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(HOSPITAL_POLICY),
            release_date=date(2026, 11, 24),
            overrides={"input.path": str(data), "output.directory": str(tmp_path / "releases")},
        )
    )
    folder = Path(outcome["path"])
    assert outcome["published"]
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    # The person key and the admission id are never published, nor written beside the release.
    assert "subject_id" not in release.columns and "admission_id" not in release.columns
    assert not any("S000" in p.read_text(errors="ignore") for p in folder.iterdir() if p.is_file())
    manifest = json.loads((folder / "manifest.json").read_text())
    gate = manifest["gate"]
    assert gate["passed"] is True
    assert gate["measurements"]["suppressed_unit"] == "persons"
    assert gate["measurements"]["min_class_size"] >= 5
    # Suppression is counted in patients, and the release's classes are the gate's.
    n_patients = admissions["subject_id"].nunique()
    assert n_patients - gate["measurements"]["persons"] <= int(0.03 * n_patients)
    classes = release.groupby(QIS).size()
    assert len(classes) == gate["measurements"]["classes"]
