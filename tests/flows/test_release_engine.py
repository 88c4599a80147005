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
            overrides=overrides,
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
