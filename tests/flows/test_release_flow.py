"""End-to-end release flow on real data: publish when verified, nothing otherwise."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from adult_reference import ADULT_POLICY, ADULT_QI
from pycanon import anonymity
from task_runs import final_task_states

from privgate.core.exceptions import AnonymizationError, GateBlockedError, PolicyError, PublishError

RELEASE_DATE = date(2026, 11, 22)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(tmp_path: Path, **params):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    overrides = {"output.directory": str(tmp_path / "releases")}
    overrides.update(params.pop("overrides", {}))
    return_state = params.pop("return_state", False)
    return release_flow(
        ReleaseParameters(
            policy_path=str(ADULT_POLICY), release_date=RELEASE_DATE, overrides=overrides, **params
        ),
        return_state=return_state,
    )


def _published(tmp_path: Path) -> list[Path]:
    root = tmp_path / "releases"
    return sorted(p.parent for p in root.glob("*/*/manifest.json")) if root.exists() else []


def _leftovers(tmp_path: Path) -> list[Path]:
    root = tmp_path / "releases"
    return sorted(root.glob("*/.staging-*")) if root.exists() else []


@dataclass(frozen=True)
class Published:
    """A run's output folder (``root / "releases"``), the input's sha256 before the run, and
    the run's outcome."""

    root: Path
    input_sha256: str
    outcome: dict


@pytest.fixture(scope="module")
def adult_k5(prefect_harness, shared_data, tmp_path_factory) -> Published:
    """The module's one default release of Adult (k = 5, Data Docs built: this file's
    in-process check of that path). The k-anonymity test reads it at k = 5, and the
    publish-once test makes a second run of the same release id into its folder (the same
    run was made twice, once in each test). Its own privgate data directory, as a test's."""
    adult = shared_data("arx/adult.csv")
    root = tmp_path_factory.mktemp("adult-k5")
    before = _sha256(adult)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PRIVGATE_DATA_DIR", str(tmp_path_factory.mktemp("privgate-data")))
        patch.delenv("PRIVGATE_LEDGER_URL", raising=False)
        return Published(root, before, _run(root, k=5))


@pytest.mark.parametrize("k", [2, 5, 10])
def test_adult_release_is_k_anonymous_per_pycanon(
    prefect_harness, shared_data, tmp_path, request, k
):
    adult = shared_data("arx/adult.csv")
    if k == 5:  # the default run, Data Docs built; the other two check the release only
        published: Published = request.getfixturevalue("adult_k5")
        tmp_path, before, outcome = published.root, published.input_sha256, published.outcome
    else:
        before = _sha256(adult)
        outcome = _run(tmp_path, k=k, data_docs=False)

    folder = Path(outcome["path"])
    assert outcome["published"] and folder.parent.name == "adult"
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert anonymity.k_anonymity(release, ADULT_QI) >= k

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["gate"]["passed"] is True
    assert manifest["policy"]["privacy"]["k"] == k
    assert manifest["output"]["sha256"] == _sha256(folder / "release.csv")
    assert manifest["input"]["sha256"] == before
    assert manifest["input"]["rows"] == 30162
    assert manifest["output"]["rows"] == len(release)
    assert 30162 - len(release) <= int(0.02 * 30162)
    assert set(manifest["transformation"]) == set(ADULT_QI)
    assert _sha256(adult) == before, "the input file must never be modified"
    assert _leftovers(tmp_path) == []


def test_impossible_k_is_refused_and_publishes_nothing(prefect_harness, shared_data, tmp_path):
    adult = shared_data("arx/adult.csv")
    before = _sha256(adult)
    with pytest.raises(AnonymizationError, match=r"privacy\.k = 40000 is larger than the table"):
        _run(tmp_path, k=40000)
    assert _published(tmp_path) == [] and _leftovers(tmp_path) == []
    assert _sha256(adult) == before


def test_gate_blocks_a_release_that_is_not_k_anonymous(
    task_run_records, shared_data, tmp_path, lying_algorithm
):
    """Make the algorithm lie (publish the raw QIs); the gate must catch it on the file.

    What the UI shows: the gate's own task ends Failed with the gate's reasons, and the run's
    state message starts with the decision and names the blocked report."""
    shared_data("arx/adult.csv")
    # A suppression limit no other test uses: the liar's persisted result must not be reused
    # by another test's run.
    state = _run(tmp_path, overrides={"privacy.suppression_limit": 0.0199}, return_state=True)
    assert state.is_failed()
    refusal = state.result(raise_on_failure=False)
    assert isinstance(refusal, GateBlockedError)
    assert refusal.decision.passed is False
    assert refusal.decision.measurements["min_class_size"] == 1
    assert state.message.startswith("gate blocked release "), state.message
    assert "5-anonymity not met" in state.message
    report = Path(state.message.rsplit("; report: ", 1)[1])
    assert report.is_file() and report.parent.parent.name == "blocked"
    tasks = _task_states(state.state_details.flow_run_id, "verify-and-gate", "report", full=True)
    assert tasks["verify-and-gate"].is_failed(), tasks
    assert "5-anonymity not met" in tasks["verify-and-gate"].message
    assert tasks["report"].is_completed()
    assert _published(tmp_path) == [] and _leftovers(tmp_path) == []


def test_crash_while_publishing_leaves_no_partial_release(
    prefect_harness, shared_data, tmp_path, monkeypatch
):
    shared_data("arx/adult.csv")
    from privgate.core import publish as core_publish

    def broken_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(core_publish.os, "rename", broken_rename)
    with pytest.raises(PublishError, match="No space left"):
        _run(tmp_path, k=5)
    assert _published(tmp_path) == [] and _leftovers(tmp_path) == []


def test_same_data_policy_and_date_publish_once(adult_k5, tmp_path, monkeypatch):
    """Two runs of one release id publish one release, and the second says whose it is. The
    second run here loses the race: the first run's folder appears only between its check
    for an earlier release and its rename (as with two runs started at once), so only the
    manifest in place, read after publishing, can tell it that it published nothing. The
    first run is the module's (``adult_k5``); its folder is back in place, unchanged, at the
    end."""
    from privgate.tasks import publish as publish_tasks

    first, output = adult_k5.outcome, adult_k5.root
    manifest = (Path(first["path"]) / "manifest.json").read_text()
    assert first["already_published_by"] is None
    aside = tmp_path / "first-release"
    Path(first["path"]).rename(aside)
    real_publish = publish_tasks.publish

    def publish_after_the_first_run(staged, manifest):
        aside.rename(staged.final_dir)  # the concurrent run's rename lands first
        return real_publish(staged, manifest)

    monkeypatch.setattr(publish_tasks, "publish", publish_after_the_first_run)
    second = _run(output, k=5, return_state=True, data_docs=False)
    outcome = second.result()
    assert outcome["release_id"] == first["release_id"]
    assert len(_published(output)) == 1 and _leftovers(output) == []
    assert (Path(first["path"]) / "manifest.json").read_text() == manifest
    # The duplicate says so, naming the run that published (the UI shows this message).
    first_run = json.loads(manifest)["run_id"]
    assert outcome["already_published_by"] == first_run
    assert f"already published by run {first_run}: {first['path']}" in second.message


def test_dry_run_verifies_but_publishes_nothing(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    outcome = _run(tmp_path, k=5, dry_run=True)
    assert outcome["published"] is False and outcome["gate"]["passed"] is True
    assert _published(tmp_path) == [] and _leftovers(tmp_path) == []


def test_bad_override_is_a_policy_error(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    with pytest.raises(PolicyError, match=r"privacy\.suppression_limit"):
        _run(tmp_path, overrides={"privacy.suppression_limit": 1.5})


def test_parameters_reject_invalid_values_before_a_run():
    from pydantic import ValidationError

    from privgate.flows.parameters import ReleaseParameters

    with pytest.raises(ValidationError, match="suppression_limit"):
        ReleaseParameters(policy_path="p.yaml", suppression_limit=1.5)
    with pytest.raises(ValidationError, match="k"):
        ReleaseParameters(policy_path="p.yaml", k=0)


def test_l_diversity_policy_is_enforced_and_verified(prefect_harness, shared_data, tmp_path):
    shared_data("arx/adult.csv")
    ld = [{"column": "salary-class", "variant": "distinct", "l": 2}]
    outcome = _run(tmp_path, k=5, overrides={"privacy.l_diversity": ld}, data_docs=False)
    release = pd.read_csv(Path(outcome["path"]) / "release.csv", dtype=str, keep_default_na=False)
    assert anonymity.l_diversity(release, ADULT_QI, ["salary-class"]) >= 2
    assert outcome["gate"]["measurements"]["achieved"]["distinct-2-diversity(salary-class)"] >= 2


def _task_states(flow_run_id, *expected: str, full: bool = False) -> dict:
    """Task name -> state name (``full``: the state) of one flow run, read through the API
    once the ``expected`` tasks are recorded."""
    states = final_task_states(flow_run_id, *expected)
    return states if full else {name: state.name for name, state in states.items()}


def test_rerun_after_a_failure_reuses_the_stages_that_succeeded(
    task_run_records, shared_data, tmp_path, monkeypatch
):
    """The first run fails at publishing; the rerun takes ingest, validation and the search
    from their persisted results (state Cached) and only publishes."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    shared_data("arx/adult.csv")
    from privgate.core import publish as core_publish

    params = ReleaseParameters(
        policy_path=str(ADULT_POLICY),
        release_date=RELEASE_DATE,
        k=7,  # a k no other test uses, so the first run computes every stage itself
        data_docs=False,  # the stages' states are checked here, not the HTML pages
        overrides={"output.directory": str(tmp_path / "releases")},
    )
    real_rename = core_publish.os.rename
    monkeypatch.setattr(
        core_publish.os, "rename", lambda *a: (_ for _ in ()).throw(OSError(5, "I/O error"))
    )
    failed = release_flow(params, return_state=True)
    assert failed.is_failed() and "I/O error" in failed.message
    first = _task_states(failed.state_details.flow_run_id, "anonymize", "publish")
    assert first["anonymize"] == "Completed" and first["publish"] == "Failed"
    assert _published(tmp_path) == []

    monkeypatch.setattr(core_publish.os, "rename", real_rename)
    rerun = release_flow(params, return_state=True)
    assert rerun.is_completed() and "gate PASSED" in rerun.message
    second = _task_states(
        rerun.state_details.flow_run_id,
        "ingest",
        "validate",
        "anonymize",
        "verify-and-gate",
        "publish",
    )
    assert {second[t] for t in ("ingest", "validate", "anonymize")} == {"Cached"}
    assert second["verify-and-gate"] == "Completed" and second["publish"] == "Completed"
    assert len(_published(tmp_path)) == 1
