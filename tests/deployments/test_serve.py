"""`privgate serve`'s deployments: absolute policy paths, the timezone in the description, and
names that never collide with the work-pool deployments of deployments/prefect.yaml."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from privgate.deployments.serve import build_deployments

REPO = Path(__file__).resolve().parents[2]


def test_served_deployments_store_absolute_paths_and_state_their_timezone(monkeypatch):
    monkeypatch.chdir(REPO)
    (deployment,) = build_deployments(["policies/demo.yaml"], "30 1 * * *", "Europe/Berlin")
    stored = deployment.parameters["parameters"]["policy_path"]
    assert Path(stored).is_absolute() and Path(stored) == REPO / "policies" / "demo.yaml"
    assert "Europe/Berlin" in deployment.description and "30 1 * * *" in deployment.description
    assert deployment.schedules[0].schedule.timezone == "Europe/Berlin"


def test_work_pool_deployments_have_their_own_names_absolute_paths_and_timezones(monkeypatch):
    monkeypatch.chdir(REPO)
    served = {d.name for d in build_deployments(sorted(str(p) for p in _pool_policies()))}
    declared = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    pooled = {d["name"] for d in declared["deployments"]}
    assert not served & pooled, served & pooled
    for item in declared["deployments"]:
        assert item["parameters"]["parameters"]["policy_path"].startswith("{{ $PRIVGATE_HOME }}/")
        for schedule in item["schedules"]:
            assert f"timezone {schedule['timezone']}" in item["description"], item["name"]


def test_nightly_deployments_check_keyed_datasets_against_their_release_history(monkeypatch):
    """Both ways to deploy run nightly with ``release_history`` on: a policy that names its
    persons (hospital) is checked and recorded; one without a key (Adult) cannot be, and a DP
    policy composes through the ledger; the reason is stated."""
    from privgate.flows.parameters import ReleaseParameters

    monkeypatch.chdir(REPO)
    (served,) = build_deployments(["policies/hospital.yaml"])
    assert served.parameters["parameters"]["release_history"] is True
    declared = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    assert all(d["parameters"]["parameters"]["release_history"] for d in declared["deployments"])

    hospital = ReleaseParameters(policy_path="policies/hospital.yaml", release_history=True)
    assert hospital.policy().history_key == "subject_id"
    assert hospital.history_note == "on, following 'subject_id' from one release to the next"
    adult = ReleaseParameters(policy_path="policies/adult.yaml", release_history=True)
    assert adult.policy().history_key is None
    assert "nobody can be followed" in adult.history_note
    dp = ReleaseParameters(policy_path="policies/hospital-dp.yaml", release_history=True)
    assert dp.policy().history is None and "ε ledger" in dp.history_note
    own = ReleaseParameters(
        policy_path="policies/hospital.yaml",
        release_history=True,
        overrides={"history.check": False, "history.key": "subject_id"},
    )
    assert own.policy().history_key is None and "own history section (off)" in own.history_note
    assert ReleaseParameters(policy_path="policies/hospital.yaml").policy().history is None


def _pool_policies():
    declared = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    for item in declared["deployments"]:
        path = item["parameters"]["parameters"]["policy_path"]
        yield path.replace("{{ $PRIVGATE_HOME }}", os.fspath(REPO))


def test_work_pool_runs_send_the_heartbeats_the_crash_automation_watches():
    from privgate.flows.crash_detection import HEARTBEAT_SECONDS, RUN_TAG

    declared = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    for item in declared["deployments"]:
        env = item["work_pool"]["job_variables"]["env"]
        assert env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == str(HEARTBEAT_SECONDS), item["name"]
        assert RUN_TAG in item["tags"], item["name"]
    (served,) = build_deployments([str(REPO / "policies" / "demo.yaml")])
    assert RUN_TAG in served.tags
