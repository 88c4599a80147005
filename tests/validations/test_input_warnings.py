"""`privgate validate` reports an entirely missing quasi-identifier as a warning (issue 16).

The hospital generator's admissions with the ``language`` column emptied (an export that lost a
column) and ``nullable: true`` declared: the input is valid (exit 0), and the command says the
column carries no information, in its text and in ``--json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from privgate.core.hospital_data import write_admissions_csv
from privgate.core.policy import load_policy
from privgate.flows.cli import main

HOSPITAL_POLICY = Path(__file__).resolve().parents[2] / "policies" / "hospital.yaml"


def hospital_without_language(tmp_path: Path) -> Path:
    """A policy file for generated admissions whose language column is empty in every row."""
    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=300, seed=3)
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    frame["language"] = ""
    frame.to_csv(data, index=False)
    spec = load_policy(HOSPITAL_POLICY).model_dump(mode="json", exclude_none=True)
    spec["input"]["path"] = str(data)
    spec["output"]["directory"] = str(tmp_path / "releases")
    spec["columns"]["language"]["nullable"] = True
    policy = tmp_path / "hospital.yaml"
    policy.write_text(json.dumps(spec))  # JSON is YAML
    return policy


WARNING = (
    "column 'language' (quasi_identifier) is missing in all {rows} rows: check the export and "
    "the policy's column mapping; it carries no information"
)


def test_validate_warns_about_an_entirely_missing_quasi_identifier(tmp_path, capsys) -> None:
    policy = hospital_without_language(tmp_path)
    rows = len(pd.read_csv(tmp_path / "admissions.csv"))
    assert main(["validate", str(policy)]) == 0
    out = capsys.readouterr().out
    assert f"warning:  {WARNING.format(rows=rows)}" in out
    assert out.rstrip().endswith("result:   VALID")
    assert main(["validate", str(policy), "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["valid"] is True
    assert outcome["warnings"] == [WARNING.format(rows=rows)]


def test_validate_has_no_warning_for_the_hospital_example(tmp_path, capsys) -> None:
    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=300, seed=3)
    assert main(["validate", str(HOSPITAL_POLICY), "--input", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []
