"""Great Expectations on large tables (issue 18): above PRIVGATE_EXPECTATIONS_MAX_ROWS rows both
suites run on a seeded sample whose size and seed the summary states, and leave out what only
the whole table has. Real Adult, the limit set small."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import PolicyError
from privgate.core.policy import load_policy
from privgate.core.textcsv import read_text_columns, write_text_columns
from privgate.validations.expectations import (
    MAX_ROWS_VARIABLE,
    SEED_VARIABLE,
    expectation_sample,
    validate_input_expectations,
    validate_release_expectations,
)
from privgate.validations.schema import validate_input

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def adult(shared_data):
    shared_data("arx/adult.csv")
    policy = load_policy(REPO / "policies" / "adult.yaml")
    hierarchies = stages.load_hierarchies(policy)
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    return policy, hierarchies, frame


def _checks(summary: dict) -> set[str]:
    return {entry["check"] for entry in summary["expectations"]}


def test_the_sample_is_seeded_sorted_and_only_above_the_limit(monkeypatch):
    monkeypatch.setenv(MAX_ROWS_VARIABLE, "1000")
    monkeypatch.setenv(SEED_VARIABLE, "7")
    assert expectation_sample(1000) is None
    sample = expectation_sample(30162)
    assert sample is not None and sample.to_dict() == {"rows": 1000, "of_rows": 30162, "seed": 7}
    assert np.all(np.diff(sample.rows) > 0) and sample.rows[-1] < 30162
    assert np.array_equal(sample.rows, expectation_sample(30162).rows)
    monkeypatch.setenv(SEED_VARIABLE, "8")
    assert not np.array_equal(sample.rows, expectation_sample(30162).rows)


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_bad_limit_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv(MAX_ROWS_VARIABLE, value)
    with pytest.raises(PolicyError, match=MAX_ROWS_VARIABLE):
        expectation_sample(10)


def test_adult_input_suite_runs_on_every_row_below_the_default_limit(adult):
    policy, hierarchies, frame = adult
    summary = validate_input_expectations(frame, policy, hierarchies)
    assert summary["success"] and summary["rows"] == 30162
    assert "sample" not in summary and "row_count_k" in _checks(summary)


def test_adult_input_suite_on_a_seeded_sample(adult, monkeypatch):
    policy, hierarchies, frame = adult
    monkeypatch.setenv(MAX_ROWS_VARIABLE, "5000")
    monkeypatch.setenv(SEED_VARIABLE, "3")
    sample = expectation_sample(len(frame))
    summary = validate_input_expectations(frame, policy, hierarchies)
    assert summary["success"] and summary["rows"] == 5000
    assert summary["sample"]["rows"] == 5000 and summary["sample"]["of_rows"] == 30162
    assert summary["sample"]["seed"] == 3
    assert "5,000 of 30,162 rows (seed 3" in summary["sample"]["note"]
    assert "row_count_k" not in _checks(summary)  # a property of the whole table
    assert {"columns", "type", "categories", "hierarchy_domain"} <= _checks(summary)

    # A value outside its declared categories is caught in a sampled row, and is, honestly,
    # not seen in a row the sample left out.
    inside, outside = int(sample.rows[10]), int(np.setdiff1d(np.arange(30162), sample.rows)[0])
    for row, caught in [(inside, True), (outside, False)]:
        bad = frame.copy()
        bad.iloc[row, bad.columns.get_loc("salary-class")] = "unknown"
        failed = validate_input_expectations(bad, policy, hierarchies)
        assert failed["success"] is not caught, row


def test_adult_release_suite_on_a_seeded_sample(adult, tmp_path, monkeypatch):
    policy, hierarchies, frame = adult
    setup = SearchSetup.from_policy(policy, hierarchies)
    (table,) = stages.anonymize(frame, setup)
    path = tmp_path / "release.csv"
    cells = {name: table.frame[name].astype(object).where(table.frame[name].notna(), None)
             for name in table.frame.columns}  # fmt: skip
    write_text_columns(path, {n: np.asarray(c, dtype=object) for n, c in cells.items()})
    manifest = {
        "release_id": "2026-11-26-sample",
        "input": {"rows": len(frame)},
        "output": {"rows": len(table.frame)},
        "transformation": table.result.levels,
    }
    whole = validate_release_expectations(path, policy, hierarchies, manifest)
    assert whole["success"] and "sample" not in whole
    assert {"row_count_manifest", "row_count_suppression", "min_class_size"} <= _checks(whole)

    monkeypatch.setenv(MAX_ROWS_VARIABLE, "4000")
    summary = validate_release_expectations(path, policy, hierarchies, manifest)
    assert summary["success"] and summary["rows"] == 4000
    assert summary["sample"] == {
        "rows": 4000,
        "of_rows": len(table.frame),
        "seed": 0,
        "note": summary["sample"]["note"],
    }
    left_out = {"row_count_manifest", "row_count_suppression", "min_class_size"}
    assert not left_out & _checks(summary)
    assert "suppression_marker" in _checks(summary)

    # A starred cell in a sampled row of the written file fails the sampled suite.
    written = read_text_columns(path)
    row = int(expectation_sample(len(table.frame)).rows[0])
    written["salary-class"][row] = "*"
    write_text_columns(path, written)
    failed = validate_release_expectations(path, policy, hierarchies, manifest)
    assert not failed["success"]
    assert any(
        e["check"] == "suppression_marker" and not e["success"] for e in failed["expectations"]
    )


def test_validate_command_states_the_sample(shared_data, monkeypatch, capsys):
    """`privgate validate` on a table above the limit says the suite ran on a sample."""
    from privgate.flows.cli import main

    shared_data("arx/adult.csv")
    monkeypatch.setenv(MAX_ROWS_VARIABLE, "2000")
    assert main(["validate", str(REPO / "policies" / "adult.yaml")]) == 0
    shown = capsys.readouterr().out
    assert "note: the input expectations ran on a seeded random sample of 2,000 of 30,162" in shown
    assert "result:   VALID" in shown
