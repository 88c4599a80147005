"""The expectation tasks inside a flow run: artifacts, refusals, Data Docs next to the release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bad_input_corpus import GOOD_ROWS, csv_text
from prefect import flow

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.policy import load_policy
from privgate.tasks.expectations import (
    DATA_DOCS_LEFT_OUT,
    input_expectations_task,
    release_expectations_task,
)
from privgate.validations.expectations import InputContractError, ReleaseContractError
from privgate.validations.schema import validate_input


def _artifacts(key: str) -> list:
    """Every version of a keyed artifact, newest first."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        return client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.CREATED_DESC,
        )


@flow(name="expectations-test")
def _input_flow(policy_path: str) -> dict:
    policy = load_policy(policy_path)
    hierarchies = stages.load_hierarchies(policy)
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    return input_expectations_task(frame, policy, hierarchies, run_name="test-run")


@flow(name="expectations-release-test")
def _release_flow(
    policy_path: str, staging: str, tamper: bool = False, data_docs: bool = True
) -> dict:
    policy = load_policy(policy_path)
    hierarchies = stages.load_hierarchies(policy)
    ingested = stages.ingest(policy)
    frame = validate_input(ingested.frame, policy, hierarchies)
    input_summary = input_expectations_task(frame, policy, hierarchies)
    table = stages.anonymize(frame, SearchSetup.from_policy(policy, hierarchies))[-1]
    release_file = Path(staging) / "release.csv"
    table.frame.to_csv(release_file, index=False)
    manifest = {
        "release_id": "2026-11-22-abc",
        "input": {"rows": ingested.rows},
        "output": {"rows": len(table.frame) + (1 if tamper else 0)},
        "transformation": table.result.levels or {},
    }
    return release_expectations_task(
        release_file,
        policy,
        hierarchies,
        manifest,
        input_summary,
        release_dir=Path(staging),
        data_docs=data_docs,
    )


def test_input_task_records_its_results_as_artifacts(make_case):
    case = make_case()
    summary = _input_flow(str(case.policy))
    assert summary["success"]
    markdown = _artifacts("toy-input-expectations")[0]
    assert markdown.type == "markdown"
    assert "### toy.input: PASSED" in markdown.data
    assert "| PASS | identifier 'person_id' is unique |" in markdown.data
    table = _artifacts("toy-input-expectations-table")[0]
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert {row["status"] for row in rows} == {"PASS"}
    assert len(rows) == summary["evaluated"]


def test_input_task_fails_the_run_after_recording_why(make_case):
    rows = [list(r) for r in GOOD_ROWS]
    rows[11][0] = rows[0][0]  # a duplicate identifier: pandera has no opinion, the suite does
    case = make_case(csv_text(rows))
    with pytest.raises(InputContractError, match=r"identifier 'person_id' is unique"):
        _input_flow(str(case.policy))
    latest = _artifacts("toy-input-expectations")[0]
    assert "### toy.input: FAILED" in latest.data
    assert "| **FAIL** | identifier 'person_id' is unique |" in latest.data


def test_release_task_writes_data_docs_and_report_next_to_the_release(make_case, tmp_path):
    case = make_case()
    staging = tmp_path / "staging"
    staging.mkdir()
    entry = _release_flow(str(case.policy), str(staging))
    assert entry["input"]["success"] and entry["release"]["success"]
    assert entry["data_docs"] == {
        "input": "data_docs/input/index.html",
        "release": "data_docs/release/index.html",
    }
    for page in entry["data_docs"].values():
        assert (staging / page).is_file()
    report = json.loads((staging / entry["report"]).read_text())
    assert report["release"]["suite"] == "toy.release"
    assert report["release"]["failed"] == 0


def test_release_task_without_data_docs_still_runs_both_suites_and_writes_the_report(
    make_case, tmp_path
):
    """``data_docs=False`` (``privgate run --no-data-docs``) leaves out only the HTML pages."""
    case = make_case()
    staging = tmp_path / "staging"
    staging.mkdir()
    entry = _release_flow(str(case.policy), str(staging), data_docs=False)
    assert entry["data_docs"] == DATA_DOCS_LEFT_OUT and not (staging / "data_docs").exists()
    assert entry["input"]["success"] and entry["release"]["success"]
    report = json.loads((staging / entry["report"]).read_text())
    assert report["release"]["suite"] == "toy.release" and report["release"]["failed"] == 0
    assert report["input"]["suite"] == "toy.input"
    # the release suite still refuses a release inconsistent with its manifest
    refused = tmp_path / "refused"
    refused.mkdir()
    with pytest.raises(ReleaseContractError, match="rows, as the manifest records"):
        _release_flow(str(case.policy), str(refused), tamper=True, data_docs=False)
    assert not (refused / "expectations.json").exists()


def test_release_task_refuses_a_release_inconsistent_with_its_manifest(make_case, tmp_path):
    case = make_case()
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(ReleaseContractError, match="rows, as the manifest records"):
        _release_flow(str(case.policy), str(staging), tamper=True)
    assert not (staging / "data_docs").exists()  # nothing is written for a refused release
    assert "### toy.release: FAILED" in _artifacts("toy-release-expectations")[0].data
