"""The release flow's utility stage, utility gate and release report, on Adult."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

import pytest
from adult_reference import ADULT_POLICY

from privgate.core.exceptions import GateBlockedError, UtilityBlockedError

RELEASE_DATE = date(2026, 11, 22)
FAST_UTILITY = {
    "target": "salary-class",
    "models": ["random_forest", "logistic_regression"],
    "sample_size": 1500,
    "cv_folds": 3,
    "clusters": [3],
    "clustering": ["kmeans"],
}


def _run(tmp_path: Path, utility: dict, **params):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    overrides = {"output.directory": str(tmp_path / "releases"), "utility": utility}
    return release_flow(
        ReleaseParameters(
            policy_path=str(ADULT_POLICY), release_date=RELEASE_DATE, overrides=overrides, **params
        )
    )


def _artifacts(run_id):
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def read():
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
            )

    return {a.key: a for a in run_coro_as_sync(read())}


def test_published_release_has_its_report_next_to_the_manifest(
    prefect_harness, shared_data, tmp_path
):
    shared_data("arx/adult.csv")
    outcome = _run(tmp_path, {**FAST_UTILITY, "thresholds": {"min_auc_ratio": 0.5}})
    folder = Path(outcome["path"])
    assert sorted(p.name for p in folder.iterdir()) == [
        "data_docs",
        "expectations.json",
        "manifest.json",
        "release.csv",
        "report.html",
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    report = (folder / "report.html").read_bytes()
    assert manifest["report"] == {
        "file": "report.html",
        "sha256": hashlib.sha256(report).hexdigest(),
    }
    assert manifest["utility_gate"]["passed"] is True
    assert manifest["utility"]["classification"]["target"] == "salary-class"
    assert b"PUBLISHED" in report and b'id="utility"' in report
    run_id = manifest["run_id"]
    found = _artifacts(run_id)
    assert found["privgate-report-adult"].data.startswith("# adult `")
    assert str(folder / "report.html") in found["privgate-report-adult"].data
    assert found["privgate-measures-adult"].type == "table"
    assert not (tmp_path / "releases" / "adult" / "blocked").exists()


def test_utility_gate_blocks_and_publishes_nothing(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    with pytest.raises(UtilityBlockedError, match=r"below min_auc_ratio = 1\.5") as info:
        _run(tmp_path, {**FAST_UTILITY, "thresholds": {"min_auc_ratio": 1.5, "max_loss": 0.9}})
    assert info.value.exit_code == 3
    assert info.value.decision.passed is False
    assert len(info.value.decision.reasons) == 2  # one per model; the loss holds
    root = tmp_path / "releases" / "adult"
    assert list(root.glob("*/manifest.json")) == [] and list(root.glob(".staging-*")) == []
    (blocked,) = root.glob("blocked/*/report.html")
    assert info.value.report_path == str(blocked)  # printed by the CLI, named in the UI
    html = blocked.read_text()
    assert "BLOCKED by the utility gate" in html and "below min_auc_ratio = 1.5" in html
    assert sorted(p.name for p in root.iterdir()) == ["blocked"]


def test_privacy_block_leaves_a_report_too(prefect_harness, shared_data, tmp_path, lying_algorithm):
    """The algorithm lies (raw QIs); the privacy gate blocks and the report says why."""
    shared_data("arx/adult.csv")
    with pytest.raises(GateBlockedError, match="5-anonymity not met"):
        _run(tmp_path, {"clusters": [], "models": []})
    root = tmp_path / "releases" / "adult"
    assert list(root.glob("*/manifest.json")) == [] and list(root.glob(".staging-*")) == []
    (blocked,) = root.glob("blocked/*/report.html")
    html = blocked.read_text()
    assert "BLOCKED by the privacy gate" in html and "5-anonymity not met" in html
