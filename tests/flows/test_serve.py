"""`privgate serve`'s deployments: absolute policy paths, the timezone in the description, and
names that never collide with the work-pool deployments of deployments/prefect.yaml."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
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


def test_a_crash_window_a_late_heartbeat_could_exceed_is_refused():
    from privgate.core.exceptions import PrivgateError
    from privgate.flows.crash_detection import build_automation, check_crash_after

    with pytest.raises(PrivgateError, match="--crash-after 35: must be at least"):
        check_crash_after(35, 30)
    automation = build_automation(120)
    assert automation.trigger.within.total_seconds() == 120
    assert automation.actions[0].state.value == "CRASHED"


def test_every_task_has_a_timeout():
    """A stage that hangs (a stuck file system, a runaway search) must end, not hold the
    nightly run forever: every Prefect task of privgate declares a timeout."""
    import importlib
    import pkgutil

    from prefect import Task

    import privgate.tasks

    found = {}
    for module in pkgutil.iter_modules(privgate.tasks.__path__):
        loaded = importlib.import_module(f"privgate.tasks.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, Task) and value.__module__ == loaded.__name__:
                found[value.name] = value.timeout_seconds
    assert len(found) >= 19, sorted(found)  # the walk finds them (tiers run in "anonymize")
    assert {name for name, seconds in found.items() if not seconds} == set(), found


def test_crash_detection_command_creates_the_automation_once_and_updates_it(capsys, monkeypatch):
    """`privgate crash-detection` against the session's server: one automation by name; run
    again unchanged it is left alone (updating would forget the heartbeats it has seen), a new
    window updates it in place."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    from privgate.flows.cli import main
    from privgate.flows.crash_detection import AUTOMATION_NAME

    monkeypatch.setenv("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "30")
    api = PREFECT_API_URL.value()

    def automations() -> list[dict]:
        found = httpx.post(f"{api}/automations/filter", json={}, timeout=10).json()
        return [a for a in found if a["name"] == AUTOMATION_NAME]

    assert main(["crash-detection", "--after", "90"]) == 0
    (first,) = automations()
    assert first["trigger"]["within"] == 90
    assert first["id"] in capsys.readouterr().out
    assert main(["crash-detection", "--after", "90"]) == 0
    (same,) = automations()
    assert same["trigger"]["id"] == first["trigger"]["id"]  # untouched
    assert main(["crash-detection", "--after", "150"]) == 0
    (updated,) = automations()
    assert updated["id"] == first["id"] and updated["trigger"]["within"] == 150
    assert main(["crash-detection", "--after", "35"]) == 2  # shorter than heartbeat + 10 s
    assert "must be at least the heartbeat period plus 10 s" in capsys.readouterr().err
