"""Against a real Prefect server: serve the nightly deployment, read the schedule back, start
runs as the UI's "Quick run" and "Custom run" (in Chromium) do, and retry a failed run.

Slow (a server and a serving process start, about 30 s), but with the crash file
(``test_server_crash.py``) it is the only test of what users actually run in production, so it
runs in CI. The two files have a server each (``tests/e2e_server.py``), so that two
pytest-xdist workers can share them.
"""

from __future__ import annotations

import shutil

import httpx
import pytest
from e2e_server import (
    ARTIFACTS,
    create_run,
    new_page,
    retry_from_the_cli,
    screenshot_failed_run,
    task_runs,
    wait,
    wait_terminal,
    write_dp_policy,
    write_policy,
)

#: A real server, a serving process and browsers (``tests/conftest.py`` marks a test slow by
#: its fixtures; this file does not use the session's test server).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _prefect():
    """Replaces ``tests/flows/conftest.py``'s: these tests talk to their own server
    (``server``), never to the session's Prefect test server, so they do not start it."""
    yield


def test_schedule_read_back_from_the_api_is_nightly(served):
    schedules = served.deployment["schedules"]
    assert [s["schedule"]["cron"] for s in schedules] == ["0 2 * * *"]
    assert schedules[0]["schedule"]["timezone"] == "UTC"
    assert schedules[0]["active"] is True


def test_quick_run_completes_and_publishes(server, served):
    api = server["api"]
    deployment_id = served.deployment["id"]
    # What the UI's "Quick run" button sends: a run of the deployment with its defaults.
    created = create_run(api, deployment_id, json={}, timeout=10)
    assert created.status_code == 201, created.text
    run = wait_terminal(api, created.json()["id"])
    assert run["state"]["type"] == "COMPLETED", (
        run["state"],
        served.log.read_text()[-3000:],
    )
    assert "gate PASSED" in run["state"]["message"]
    releases = [p for p in (served.output / "adult").iterdir() if p.is_dir()]
    assert len(releases) == 1
    assert (releases[0] / "release.csv").is_file() and (releases[0] / "manifest.json").is_file()

    # Pressed twice (same data, policy and day): the second run says who published the release.
    again = create_run(api, deployment_id, json={}, timeout=10)
    second = wait_terminal(api, again.json()["id"])
    assert second["state"]["type"] == "COMPLETED", second["state"]
    assert f"already published by run {run['id']}: {releases[0]}" in second["state"]["message"]
    assert [p for p in (served.output / "adult").iterdir() if p.is_dir()] == releases


def test_run_failing_the_utility_check_retried_after_the_fix_reuses_finished_stages(
    server, served, browser, tmp_path
):
    """The policy demands an unreachable utility (total loss <= 0.01): the run fails at the
    utility gate. The data owner relaxes the threshold in the policy file; `prefect flow-run
    retry` reruns the same flow run, and the stages before the gate are not executed again
    (the utility measurement is keyed without its thresholds, so it is reused too)."""
    api = server["api"]
    deployment_id = served.deployment["id"]
    output = tmp_path / "out"
    policy = tmp_path / "adult-utility.yaml"
    write_policy(policy, max_loss=0.01)
    parameters = {
        "parameters": {
            "policy_path": str(policy),
            "k": 6,
            "overrides": {"output.directory": str(output)},
        }
    }
    created = create_run(
        api,
        deployment_id,
        json={"parameters": parameters},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    failed = wait_terminal(api, run_id)
    assert failed["state"]["type"] == "FAILED"
    # The UI tells the story: the run's message leads with the decision and names the report,
    # the stage that blocked is the one that failed (red), with the reasons as its message.
    message = failed["state"]["message"]
    assert message.startswith("utility gate blocked release "), failed["state"]
    assert "; report: " in message and message.endswith("report.html"), message
    tasks = {t["name"].rsplit("-", 1)[0]: t["state"] for t in task_runs(api, run_id)}
    assert tasks["utility-gate"]["type"] == "FAILED", tasks
    assert "max_loss" in tasks["utility-gate"]["message"], tasks["utility-gate"]
    assert {n for n, t in tasks.items() if t["type"] == "FAILED"} == {"utility-gate"}, tasks
    screenshot_failed_run(browser, server["port"], run_id, "ui-blocked-run.png")
    first = {name: state["name"] for name, state in tasks.items()}
    assert first["anonymize"] == "Completed", first  # k=6 is new: the search ran
    assert not (output / "adult").exists() or not list((output / "adult").glob("*/manifest.json"))

    write_policy(policy, max_loss=0.9)  # the fix
    retry_from_the_cli(server, run_id)
    retried = wait_terminal(api, run_id)
    assert retried["state"]["type"] == "COMPLETED", retried["state"]
    assert retried["run_count"] >= 2
    runs = task_runs(api, run_id)
    names = [t["name"].rsplit("-", 1)[0] for t in runs]
    for stage in ("ingest", "validate", "anonymize", "utility"):
        states = [t["state"]["name"] for t in runs if t["name"].rsplit("-", 1)[0] == stage]
        # Never executed twice: the retry takes the persisted result.
        assert states.count("Completed") <= 1 and states[-1] == "Cached", (stage, states, names)
    anonymize = [t["state"]["name"] for t in runs if t["name"].startswith("anonymize")]
    assert anonymize.count("Completed") == 1, anonymize
    releases = [m.parent for m in (output / "adult").glob("*/manifest.json")]
    assert len(releases) == 1
    shutil.rmtree(output)


def test_dp_run_failing_the_utility_check_is_retried_without_a_second_spend(
    server, served, tmp_path
):
    """A DP run blocked by an unreachable utility threshold has already drawn (and paid for)
    its noise. After the fix, `prefect flow-run retry` publishes that same noise: the DP task
    replays the ledger's journal, and the ledger holds one reservation of 0.5, not two."""
    from privgate.core.dp.ledger import BudgetLedger, default_ledger_url

    api = server["api"]
    output = tmp_path / "out"
    policy = tmp_path / "adult-dp.yaml"
    write_dp_policy(policy, output, max_relative_noise=1e-9)
    created = create_run(
        api,
        served.deployment["id"],
        json={"parameters": {"parameters": {"policy_path": str(policy)}}},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    failed = wait_terminal(api, run_id)
    assert failed["state"]["type"] == "FAILED"
    assert "utility gate blocked DP release" in failed["state"]["message"], failed["state"]
    ledger = BudgetLedger(default_ledger_url(server["home"] / "privgate-data"))
    assert ledger.account("adult-dp").spent_epsilon == pytest.approx(0.5)
    (release_id,) = ledger.account("adult-dp").releases()
    drawn = [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp", release_id)]

    write_dp_policy(policy, output, max_relative_noise=0.5)  # the fix
    retry_from_the_cli(server, run_id)
    retried = wait_terminal(api, run_id)
    assert retried["state"]["type"] == "COMPLETED", retried["state"]
    assert "DP gate PASSED" in retried["state"]["message"]
    account = ledger.account("adult-dp")
    assert account.spent_epsilon == pytest.approx(0.5)  # no second spend
    assert [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp", release_id)] == drawn
    assert list(account.published) == [release_id]
    shutil.rmtree(output)


def test_custom_run_from_the_ui_form_completes(server, served, browser):
    """Open the deployment in the UI, fill the parameter form (k = 8), click Run, and see the
    flow run reach Completed with that parameter."""
    api, port = server["api"], server["port"]
    with new_page(browser) as page:
        page.goto(f"http://127.0.0.1:{port}/deployments")
        page.get_by_role("link", name="adult-nightly").click()
        page.wait_for_url("**/deployments/deployment/**")
        run_button = page.get_by_role("button", name="Run", exact=True)
        run_button.wait_for()
        run_button.click()
        page.get_by_text("Custom run", exact=True).click()
        page.get_by_text("K (Optional)", exact=True).wait_for()
        # K is optional (int or None): switch it to an integer and type 8.
        k_field = page.locator("div").filter(has=page.get_by_text("K (Optional)", exact=True))
        k_field.get_by_role("button", name="int", exact=True).last.click()
        k_field.get_by_role("spinbutton").last.fill("8")
        page.screenshot(path=str(ARTIFACTS / "ui-custom-run-form.png"), full_page=True)

        def submitted():
            body = {"deployments": {"id": {"any_": [served.deployment["id"]]}}}
            runs = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=30).json()
            return next((r for r in runs if r["parameters"]["parameters"].get("k") == 8), None)

        # Submit, as a user does: when the busy server refuses the create (its SQLite database
        # locked, the UI shows an error and stays on the form) and no run exists 20 s later,
        # click Submit again (a clean clone's CI run once waited 90 s on a form that never left).
        created = None
        for _ in range(4):
            page.get_by_role("button", name="Submit", exact=True).click()
            try:
                created = wait(submitted, 20, "the submitted run", interval=1)
                break
            except AssertionError:
                page.screenshot(path=str(ARTIFACTS / "ui-custom-run-not-created.png"))
        assert created, "no run with k = 8 was created after four clicks on Submit"
        # The UI leaves the form once the run is created.
        page.wait_for_url(lambda url: "/run?" not in url, timeout=60_000)
        run = wait_terminal(api, created["id"])
        page.goto(f"http://127.0.0.1:{port}/runs/flow-run/{run['id']}")
        page.get_by_text("Completed").first.wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "ui-custom-run-completed.png"), full_page=True)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    assert run["parameters"]["parameters"]["k"] == 8
    assert "gate PASSED" in run["state"]["message"]
