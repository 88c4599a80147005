"""One engine for every entry point (issue 18): the release flow publishes, row for row up to
order, the file `privgate anonymize` writes for the same policy on real Adult."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from adult_reference import ADULT_POLICY

from privgate.core.textcsv import read_text_columns


def _rows(path: Path) -> list[tuple]:
    columns = read_text_columns(path)
    return sorted(zip(*columns.values(), strict=True), key=lambda row: [str(c) for c in row])


@pytest.mark.parametrize("k", [5, 50])
def test_flow_publishes_what_privgate_anonymize_writes(shared_data, tmp_path, k):
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.policy import load_policy
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    shared_data("arx/adult.csv")
    overrides = {"output.directory": str(tmp_path / "releases")}
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(ADULT_POLICY), k=k, release_date=date(2026, 11, 26),
            overrides=overrides, data_docs=False,  # the release file is compared here
        )
    )  # fmt: skip
    assert outcome["published"]
    published = Path(outcome["path"]) / "release.csv"

    policy = load_policy(ADULT_POLICY).with_overrides(**{"privacy.k": k})
    decision, summary = anonymize_csv(policy, tmp_path / "anonymize.csv")
    assert decision.passed

    manifest = json.loads((published.parent / "manifest.json").read_text())
    assert manifest["gate"]["passed"] is True
    assert list(read_text_columns(published)) == list(read_text_columns(tmp_path / "anonymize.csv"))
    assert _rows(published) == _rows(tmp_path / "anonymize.csv")
    assert manifest["transformation"] == summary["levels"]
    assert summary["suppressed"] == 30162 - manifest["output"]["rows"]


def test_a_large_input_is_validated_on_a_seeded_sample_the_report_states(
    shared_data, tmp_path, monkeypatch
):
    """Above PRIVGATE_EXPECTATIONS_MAX_ROWS (set small here) both Great Expectations suites
    run on a seeded sample; its size and seed are in the manifest, expectations.json and the
    report, and the gate still checks the whole written file."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    shared_data("arx/adult.csv")
    monkeypatch.setenv("PRIVGATE_EXPECTATIONS_MAX_ROWS", "5000")
    monkeypatch.setenv("PRIVGATE_EXPECTATIONS_SEED", "11")
    outcome = release_flow(
        ReleaseParameters(
            policy_path=str(ADULT_POLICY), release_date=date(2026, 11, 27),
            overrides={"output.directory": str(tmp_path / "releases")},
            data_docs=False,  # the sample's statement is checked, not the HTML pages
        )
    )  # fmt: skip
    folder = Path(outcome["path"])
    manifest = json.loads((folder / "manifest.json").read_text())
    sampled = manifest["expectations"]
    assert {k: sampled["input"]["sample"][k] for k in ("rows", "of_rows", "seed")} == {
        "rows": 5000,
        "of_rows": 30162,
        "seed": 11,
    }
    released = manifest["output"]["rows"]
    assert sampled["release"]["sample"]["of_rows"] == released
    assert sampled["release"]["sample"]["rows"] == 5000
    assert outcome["gate"]["measurements"]["rows"] == released  # the gate: every row
    full = json.loads((folder / "expectations.json").read_text())
    assert full["input"]["rows"] == 5000 and full["input"]["sample"]["seed"] == 11
    report = (folder / "report.html").read_text()
    assert "seeded random sample of 5,000 of 30,162 rows (seed 11" in report
