"""Against a real Prefect server: serve the nightly deployment, read the schedule back, start
runs as the UI's "Quick run" and "Custom run" (in Chromium) do, retry a failed run, and recover
from a host crash mid-run.

Slow (a server and a serving process start, about 30 s), but it is the only test of what users
actually run in production, so it runs in CI.

The host crash is set up first (:func:`host_crash`, before the file's first test: two runs
frozen mid-run, the serving process killed with them and started again) and checked last
(:func:`test_runs_killed_with_their_worker_become_crashed_and_a_retry_publishes_once`). Most of
its time is Prefect's own clock, which a test cannot shorten without changing the mechanism: a
flow run's heartbeat period has a floor of 30 s in Prefect 3.8
(``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, ``MINIMUM_HEARTBEAT_INTERVAL``) and privgate refuses a
crash window shorter than heartbeat + 10 s, so a frozen run is marked Crashed 10 to 45 s after
it stopped sending heartbeats. The file's other tests run on the restarted serving process while
that window elapses (it was a file of its own, with its own server, serving process and
Chromium, that waited out the window doing nothing). The crashed runs have datasets of their own
(``adult-crash``, ``adult-dp-crash``: their own cached results, ledger account and folders), so
nothing the other tests run or publish touches them.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from e2e_server import (
    ARTIFACTS,
    CRASH_AFTER,
    REPO,
    create_run,
    new_page,
    open_ui,
    read_api,
    retry_from_the_cli,
    retry_from_the_ui,
    retrying_from_the_cli,
    run_state,
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


#: The test that checks the host crash :func:`host_crash` sets up.
CRASH_TEST = "test_runs_killed_with_their_worker_become_crashed_and_a_retry_publishes_once"

_STAGING_OWNER = re.compile(r"\.(\d+)\.\d+-[0-9a-f]{8}$")


def _freeze_when_staged(dataset_dirs: list[Path], timeout: float = 240) -> list[int]:
    """Wait until each run stages its release in its dataset folder (the gate's stage: the
    search, and for DP the noise draws, are done; verify, report and publish are not) and
    SIGSTOP the process owning the staging folder at once, so that it stays mid-run until it
    is killed. Returns the frozen processes' ids."""
    frozen: dict[Path, int] = {}

    def all_staged():
        for folder in dataset_dirs:
            if folder in frozen or not folder.is_dir():
                continue
            for staging in folder.glob(".staging-*"):
                if match := _STAGING_OWNER.search(staging.name):
                    os.kill(int(match.group(1)), signal.SIGSTOP)
                    frozen[folder] = int(match.group(1))
        return len(frozen) == len(dataset_dirs)

    wait(all_staged, timeout, f"staging folders in {dataset_dirs}", interval=0.02)
    return list(frozen.values())


def _alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@dataclass
class HostCrash:
    """What :func:`host_crash` did and saw right after the kill, for :data:`CRASH_TEST`."""

    output: Path
    #: The two crashed runs' ids, by kind ("k", "dp").
    runs: dict[str, str] = field(default_factory=dict)
    #: ``time.time()`` when the serving process was killed (the server's clock is this host's).
    killed_at: float = 0.0
    #: Each run's state type once its process was dead.
    states_after_kill: dict[str, str] = field(default_factory=dict)
    #: The DP release's ledger: its release ids, ε spent and the draws, read after the kill.
    dp_releases: list[str] = field(default_factory=list)
    spent_after_kill: float = 0.0
    drawn: list[tuple] = field(default_factory=list)
    #: What went wrong while setting the crash up, raised by :data:`CRASH_TEST` (so that the
    #: file's other tests still run, on a serving process that is running).
    error: BaseException | None = None


@pytest.fixture(scope="module", autouse=True)
def host_crash(request, server, served, tmp_path_factory):
    """A host crash mid-run, before the file's first test: a k-anonymous and a DP release run
    in the served process; each is frozen once it has staged its release, then the serving
    process and both flow-run processes are SIGKILLed, and the operator starts it again. The
    rest of the file runs while the crash window elapses; :data:`CRASH_TEST` checks the rest.
    Nothing is set up when that test is not selected."""
    if not any(item.name == CRASH_TEST for item in request.session.items):
        yield None
        return
    from privgate.core.dp.ledger import BudgetLedger, default_ledger_url

    api = server["api"]
    crash = HostCrash(output=tmp_path_factory.mktemp("crash") / "out")
    try:
        dp_policy = crash.output.parent / "adult-dp-crash.yaml"
        write_dp_policy(dp_policy, crash.output, max_relative_noise=0.5, dataset="adult-dp-crash")
        for name, parameters in (
            ("k", {"policy_path": str(REPO / "policies" / "adult.yaml"), "k": 9,
                   "overrides": {"output.directory": str(crash.output),
                                 "dataset": "adult-crash"}}),
            ("dp", {"policy_path": str(dp_policy)}),
        ):  # fmt: skip
            created = create_run(
                api,
                served.deployment["id"],
                json={"parameters": {"parameters": parameters}},
            )
            assert created.status_code == 201, created.text
            crash.runs[name] = created.json()["id"]
        frozen = _freeze_when_staged(
            [crash.output / "adult-crash", crash.output / "adult-dp-crash"]
        )
        served.kill()
        crash.killed_at = time.time()
        wait(lambda: not any(_alive(pid) for pid in frozen), 30, "the flow-run processes to die")
        for name, run_id in crash.runs.items():
            crash.states_after_kill[name] = run_state(api, run_id)["state"]["type"]
        ledger = BudgetLedger(default_ledger_url(server["home"] / "privgate-data"))
        account = ledger.account("adult-dp-crash")
        crash.dp_releases = list(account.releases())
        crash.spent_after_kill = account.spent_epsilon
        if len(crash.dp_releases) == 1:
            drawn = ledger.draws("adult-dp-crash", crash.dp_releases[0])
            crash.drawn = [(d.seq, d.attempt, d.value) for d in drawn]
    except Exception as exc:  # noqa: BLE001 - raised again by CRASH_TEST
        crash.error = exc
        if served.process.poll() is None:
            served.kill()  # with any run left frozen: nothing stays stopped
    finally:
        if served.process is None or served.process.poll() is not None:
            served.start()  # the operator brings the host back
    yield crash


def test_schedule_read_back_from_the_api_is_nightly(served):
    schedules = served.deployment["schedules"]
    assert [s["schedule"]["cron"] for s in schedules] == ["0 2 * * *"]
    assert schedules[0]["schedule"]["timezone"] == "UTC"
    assert schedules[0]["active"] is True


def test_quick_run_completes_and_publishes(server, served):
    api = server["api"]
    deployment_id = served.deployment["id"]
    # What the UI's "Quick run" button sends: a run of the deployment with its defaults.
    created = create_run(api, deployment_id, json={})
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
    again = create_run(api, deployment_id, json={})
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
        open_ui(page, f"http://127.0.0.1:{port}/deployments")
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
            runs = read_api("POST", f"{api}/flow_runs/filter", json=body).json()
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
        # Nothing is read from the page it went to while the run runs (its run page is opened
        # again below, once the run ended): a blank page, not a live one redrawn all along
        # (its renderer took about 8 of the browser's 27 s of CPU, and its API calls the server's).
        page.goto("about:blank")
        run = wait_terminal(api, created["id"])
        open_ui(page, f"http://127.0.0.1:{port}/runs/flow-run/{run['id']}")
        page.get_by_text("Completed").first.wait_for()
        page.screenshot(path=str(ARTIFACTS / "ui-custom-run-completed.png"), full_page=True)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    assert run["parameters"]["parameters"]["k"] == 8
    assert "gate PASSED" in run["state"]["message"]


def test_runs_killed_with_their_worker_become_crashed_and_a_retry_publishes_once(
    server, host_crash, browser
):
    """A host crash mid-run (:func:`host_crash`): a k-anonymous and a DP release were running
    in the served process; each was frozen once it had staged its release, then the serving
    process and both flow-run processes were SIGKILLed. Nothing reports their end, yet the crash
    automation marks both Crashed within heartbeat + window + 5 s (read from the Crashed state's
    own timestamp, set by the server). Retried (the k-anonymous one from the UI), each publishes
    exactly one release, sweeping the dead run's staging folder; the search is not run again and
    the DP release's ε is charged once, its noise replayed from the journal."""
    from privgate.core.dp.ledger import BudgetLedger, default_ledger_url

    crash = host_crash
    if crash.error is not None:
        raise crash.error
    api = server["api"]
    runs, output = crash.runs, crash.output
    assert crash.states_after_kill == {"k": "RUNNING", "dp": "RUNNING"}, crash.states_after_kill
    (dp_release,) = crash.dp_releases
    drawn = crash.drawn
    assert drawn and crash.spent_after_kill == pytest.approx(0.5)

    limit = 30 + CRASH_AFTER + 5
    for run_id in runs.values():
        crashed = wait(
            lambda run_id=run_id: run_state(api, run_id)["state"]["type"] == "CRASHED",
            max(limit + 60 - (time.time() - crash.killed_at), 1),
            f"flow run {run_id} to be marked Crashed",
            interval=0.5,
        )
        assert crashed
        state = run_state(api, run_id)["state"]
        took = datetime.fromisoformat(state["timestamp"]).timestamp() - crash.killed_at
        assert took <= limit + 15, f"Crashed only {took:.0f}s after the kill (stated: {limit}s)"
    message = run_state(api, runs["k"])["state"]["message"]
    assert "no heartbeat" in message, message

    # The operator clicks Retry on the k-anonymous run while the data owner types the DP run's
    # retry: the two retries are independent, so they happen at once.
    with retrying_from_the_cli(server, runs["dp"]):
        retry_from_the_ui(browser, server["port"], runs["k"])
    for name, run_id in runs.items():
        run = wait_terminal(api, run_id)
        assert run["state"]["type"] == "COMPLETED", (name, run["state"])
        assert run["run_count"] >= 2, name
    for dataset in ("adult-crash", "adult-dp-crash"):
        folder = output / dataset
        assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [], dataset
        assert len([m for m in folder.glob("*/manifest.json")]) == 1, dataset
    anonymize = [
        t["state"]["name"] for t in task_runs(api, runs["k"]) if t["name"].startswith("anonymize")
    ]
    assert anonymize[-1] == "Cached" and anonymize.count("Completed") <= 1, anonymize
    ledger = BudgetLedger(default_ledger_url(server["home"] / "privgate-data"))
    account = ledger.account("adult-dp-crash")
    assert account.spent_epsilon == pytest.approx(0.5)  # charged once
    assert [
        (d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp-crash", dp_release)
    ] == drawn
    assert list(account.published) == [dp_release]
    shutil.rmtree(output)
