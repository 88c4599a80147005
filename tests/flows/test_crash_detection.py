"""Crash detection of the served runs: the crash window and the ``privgate crash-detection``
command's automation on the session's Prefect server."""

from __future__ import annotations

import pytest


def test_a_crash_window_a_late_heartbeat_could_exceed_is_refused():
    from privgate.core.exceptions import PrivgateError
    from privgate.flows.crash_detection import build_automation, check_crash_after

    with pytest.raises(PrivgateError, match="--crash-after 35: must be at least"):
        check_crash_after(35, 30)
    automation = build_automation(120)
    assert automation.trigger.within.total_seconds() == 120
    assert automation.actions[0].state.value == "CRASHED"


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
