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
            data_docs=False,  # the release, not its HTML pages, is checked here
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


def test_hospital_release_with_entropy_diversity_and_closeness_counted_in_patients(
    prefect_harness, tmp_path
):
    """Entropy 3-diversity and 0.3-closeness of diagnosis, both counted per patient (each
    patient weighs 1 in a class, split over their admissions there; docs/PERSONS.md), pass
    through the release flow on the built-in hospital table and are what the gate measured."""
    import yaml

    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=600, seed=7)
    policy = yaml.safe_load(HOSPITAL_POLICY.read_text())
    policy["privacy"]["l_diversity"] = [{"column": "diagnosis", "variant": "entropy", "l": 3}]
    policy["privacy"]["t_closeness"] = [{"column": "diagnosis", "t": 0.3}]
    path = tmp_path / "hospital-entropy.yaml"
    path.write_text(yaml.safe_dump(policy))
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(path),
            release_date=date(2026, 11, 24),
            overrides={"input.path": str(data), "output.directory": str(tmp_path / "releases")},
            data_docs=False,  # the release, not its HTML pages, is checked here
        )
    )
    assert outcome["published"]
    folder = Path(outcome["path"])
    gate = json.loads((folder / "manifest.json").read_text())["gate"]
    assert gate["passed"] is True
    assert gate["measurements"]["suppressed_unit"] == "persons"
    achieved = gate["measurements"]["achieved"]
    assert achieved["entropy-3-diversity(diagnosis)"] >= 3
    assert achieved["0.3-closeness(diagnosis, equal distance)"] <= 0.3
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert "subject_id" not in release.columns
    assert len(release.groupby(QIS).size()) == gate["measurements"]["classes"]
