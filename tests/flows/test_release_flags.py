"""`privgate run` on a release that holds but says little: both gates' flags reach the CLI's gate
line, the run log, the manifest and the report (issue 16).

Adult released over race and native country only (the table's projection on them and
the salary class) at k = 1000: both columns are generalized to ``*``, and a classifier of the
salary class on the original does no better than the majority rate.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pandas as pd
import yaml

from privgate.core.hospital_data import write_admissions_csv
from privgate.core.policy import load_policy

REPO = Path(__file__).resolve().parents[2]
DROPPED = ["sex", "age", "marital-status", "education", "workclass", "occupation"]


def _policy(tmp_path: Path, adult_csv: Path) -> Path:
    """Adult's race, native country and salary class (a projection of the real table, in the
    test's temporary folder), with the Adult policy's hierarchies for the two QIs."""
    frame = pd.read_csv(adult_csv, sep=";", dtype=str, keep_default_na=False)
    projected = tmp_path / "adult-race-country.csv"
    frame[["race", "native-country", "salary-class"]].to_csv(projected, sep=";", index=False)
    data = load_policy(REPO / "policies" / "adult.yaml").model_dump(mode="json", exclude_none=True)
    for name in DROPPED:
        del data["columns"][name]
    data["input"]["path"] = str(projected)
    data["privacy"]["k"] = 1000
    data["utility"] = {
        "target": "salary-class",
        "models": ["logistic_regression"],
        "cv_folds": 3,
        "sample_size": 1500,
        "clusters": [],
        "clustering": [],
    }
    data["output"]["directory"] = str(tmp_path / "releases")
    path = tmp_path / "adult-flags.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_run_prints_logs_and_records_the_flags(shared_data, tmp_path):
    """`privgate run` as a user runs it, in its own process against the session's server (an
    in-process run would leave Prefect's console handler bound to this test's closed capture
    stream, and the next test's log lines would fail on it)."""
    from prefect.settings import PREFECT_API_URL

    policy = _policy(tmp_path, shared_data("arx/adult.csv"))
    env = dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), DO_NOT_TRACK="1")
    result = subprocess.run(
        [sys.executable, "-m", "privgate.flows.cli", "run", str(policy),
         "--release-date", "2026-11-25"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out, err = result.stdout, result.stderr
    (line,) = [x for x in out.splitlines() if x.startswith("gate: PASSED")]
    assert line.startswith("gate: PASSED (30162 rows, 1 classes, smallest class 30162")
    away = (  # the policy's columns in YAML's (sorted) order
        "FLAGGED: 2 quasi-identifier(s) generalized away, one value in every released record: "
        "'native-country' ('*'), 'race' ('*')"
    )
    assert away in line
    assert (
        "FLAGGED: logistic_regression's baseline on the original predicts 'salary-class' " in line
    )
    assert "at chance" in line and "majority rate" in line
    # The gate task's warning, in the run log Prefect prints (and keeps on the server).
    assert "gate flag: 2 quasi-identifier(s) generalized away" in out + err
    (folder,) = (tmp_path / "releases" / "adult").iterdir()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["gate"]["measurements"]["generalized_away"] == {
        "native-country": "*",
        "race": "*",
    }
    assert len(manifest["flags"]) == 2 and manifest["flags"][0] == away.removeprefix("FLAGGED: ")
    assert manifest["utility_gate"]["measurements"]["baseline_at_chance"] == {
        "logistic_regression": {"auc": False, "accuracy": True}
    }
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "<b>Flagged</b>" in html and "generalized away" in html and "at chance" in html


class _Collect(logging.Handler):
    """Every message Prefect's loggers emit during a run (independent of which stream Prefect's
    console handler was bound to, which depends on the tests that ran before)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_flow_logs_and_records_an_entirely_missing_quasi_identifier(tmp_path):
    """The release flow on generated admissions whose ``language`` is empty in every row
    (declared nullable): validation's warning is in the run log, the manifest and the report;
    the column, one missing value in every record, is also flagged by the gate."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=600, seed=7)
    frame = pd.read_csv(data, dtype=str, keep_default_na=False)
    frame["language"] = ""
    frame.to_csv(data, index=False)
    parameters = ReleaseParameters(
        policy_path=str(REPO / "policies" / "hospital.yaml"),
        release_date=date(2026, 11, 25),
        overrides={
            "input.path": str(data),
            "output.directory": str(tmp_path / "releases"),
            "columns.language.nullable": True,
        },
    )
    collected = _Collect()
    logging.getLogger("prefect").addHandler(collected)
    try:
        outcome = release_flow(parameters)
    finally:
        logging.getLogger("prefect").removeHandler(collected)
    assert outcome["published"]
    warning = (
        f"column 'language' (quasi_identifier) is missing in all {len(frame)} rows: check the "
        "export and the policy's column mapping; it carries no information"
    )
    assert f"validate: {warning}" in collected.messages  # the run log (Prefect's loggers)
    folder = Path(outcome["path"])
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["input"]["warnings"] == [warning]
    assert manifest["gate"]["measurements"]["generalized_away"]["language"] is None
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "<b>Warning:</b> column &#x27;language&#x27; (quasi_identifier) is missing" in html
