"""Against a real Prefect server: serve the nightly deployment, trigger a run as the UI's
"Quick run" does, retry a failed run, and read the schedule back.

Slow (a server and a serving process start, about 30 s), but it is the only test of what users
actually run in production, so it runs in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENT = "privgate-release/adult-nightly"
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real `prefect server` on a free loopback port, with its own home and database."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = _free_port()
    env = dict(
        os.environ,
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
        PREFECT_LOCAL_STORAGE_PATH=str(home / "results"),
        PREFECT_UI_ENABLED="true",
        PRIVGATE_DATA_DIR=str(home / "privgate-data"),  # the served runs' ε ledger
    )
    prefect = str(Path(sys.executable).with_name("prefect"))
    log = open(home / "server.log", "w")  # noqa: SIM115 - closed in teardown
    process = subprocess.Popen(
        [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    api = f"http://127.0.0.1:{port}/api"

    def healthy() -> bool:
        try:
            return httpx.get(f"{api}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        _wait(healthy, 300, "the Prefect server")
        yield {"api": api, "env": env, "home": home, "port": port}
    finally:
        _stop(process)
        log.close()


#: The crash window of the served deployments in these tests (the default is 120 s): a killed
#: run is marked Crashed at most heartbeat (30 s) + this + 5 s after it died.
CRASH_AFTER = 40


class _Serving:
    """`privgate serve policies/adult.yaml` running against the server; it can be killed
    (with the flow-run processes it started: they share its process group) and started again."""

    def __init__(self, server: dict, output: Path) -> None:
        self.server, self.output = server, output
        self.log = server["home"] / "serve.log"
        self.process: subprocess.Popen | None = None
        self.deployment: dict = {}

    def start(self) -> None:
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "privgate.flows.cli", "serve", "policies/adult.yaml",
                 "--output", str(self.output), "--crash-after", str(CRASH_AFTER)],
                cwd=REPO, env=self.server["env"], stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        api = self.server["api"]

        def deployment():
            r = httpx.get(f"{api}/deployments/name/{DEPLOYMENT}", timeout=5)
            return r.json() if r.status_code == 200 else None

        # On the first start the deployment appears once serving began (after the crash
        # automation was set up); a restart finds it at once and picks up runs when ready.
        self.deployment = _wait(deployment, 120, "the served deployment")

    def kill(self) -> None:
        """SIGKILL the serving process and every flow-run process it started: a host crash."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)


@pytest.fixture(scope="module")
def served(server, tmp_path_factory):
    serving = _Serving(server, tmp_path_factory.mktemp("releases"))
    try:
        serving.start()
        yield serving
    finally:
        serving.stop()


def _create_run(api: str, deployment_id: str, json: dict, timeout: float = 10) -> httpx.Response:
    """What the UI's Run button sends. A busy server may answer 503 for a moment (its SQLite
    database locked by the scheduler): the UI shows an error and the user clicks again."""
    deadline = time.monotonic() + 60
    while True:
        response = httpx.post(
            f"{api}/deployments/{deployment_id}/create_flow_run", json=json, timeout=timeout
        )
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(2)


def _run_state(api: str, run_id: str) -> dict:
    return httpx.get(f"{api}/flow_runs/{run_id}", timeout=5).json()


def _wait_terminal(api: str, run_id: str, timeout: float = 240) -> dict:
    def done():
        run = _run_state(api, run_id)
        return run if run["state"]["type"] in TERMINAL else None

    return _wait(done, timeout, f"flow run {run_id} to finish", interval=1.0)


def _task_runs(api: str, run_id: str) -> list[dict]:
    body = {"flow_runs": {"id": {"any_": [run_id]}}, "sort": "EXPECTED_START_TIME_ASC"}
    return httpx.post(f"{api}/task_runs/filter", json=body, timeout=10).json()


def test_schedule_read_back_from_the_api_is_nightly(served):
    schedules = served.deployment["schedules"]
    assert [s["schedule"]["cron"] for s in schedules] == ["0 2 * * *"]
    assert schedules[0]["schedule"]["timezone"] == "UTC"
    assert schedules[0]["active"] is True


def test_quick_run_completes_and_publishes(server, served):
    api = server["api"]
    deployment_id = served.deployment["id"]
    # What the UI's "Quick run" button sends: a run of the deployment with its defaults.
    created = _create_run(api, deployment_id, json={}, timeout=10)
    assert created.status_code == 201, created.text
    run = _wait_terminal(api, created.json()["id"])
    assert run["state"]["type"] == "COMPLETED", (
        run["state"],
        served.log.read_text()[-3000:],
    )
    assert "gate PASSED" in run["state"]["message"]
    releases = [p for p in (served.output / "adult").iterdir() if p.is_dir()]
    assert len(releases) == 1
    assert (releases[0] / "release.csv").is_file() and (releases[0] / "manifest.json").is_file()

    # Pressed twice (same data, policy and day): the second run says who published the release.
    again = _create_run(api, deployment_id, json={}, timeout=10)
    second = _wait_terminal(api, again.json()["id"])
    assert second["state"]["type"] == "COMPLETED", second["state"]
    assert f"already published by run {run['id']}: {releases[0]}" in second["state"]["message"]
    assert [p for p in (served.output / "adult").iterdir() if p.is_dir()] == releases


def _write_policy(path: Path, max_loss: float) -> None:
    """Adult's policy with absolute paths and a utility threshold on the total loss."""
    import yaml

    from privgate.core.policy import load_policy

    data = load_policy(REPO / "policies" / "adult.yaml").model_dump(mode="json")
    data["utility"] = {"clusters": [], "clustering": [], "thresholds": {"max_loss": max_loss}}
    data["algorithm"] = {"name": "optimal"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_run_failing_the_utility_check_retried_after_the_fix_reuses_finished_stages(
    server, served, tmp_path
):
    """The policy demands an unreachable utility (total loss <= 0.01): the run fails at the
    utility gate. The data owner relaxes the threshold in the policy file; `prefect flow-run
    retry` reruns the same flow run, and the stages before the gate are not executed again
    (the utility measurement is keyed without its thresholds, so it is reused too)."""
    api = server["api"]
    deployment_id = served.deployment["id"]
    output = tmp_path / "out"
    policy = tmp_path / "adult-utility.yaml"
    _write_policy(policy, max_loss=0.01)
    parameters = {
        "parameters": {
            "policy_path": str(policy),
            "k": 6,
            "overrides": {"output.directory": str(output)},
        }
    }
    created = _create_run(
        api,
        deployment_id,
        json={"parameters": parameters},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    failed = _wait_terminal(api, run_id)
    assert failed["state"]["type"] == "FAILED"
    # The UI tells the story: the run's message leads with the decision and names the report,
    # the stage that blocked is the one that failed (red), with the reasons as its message.
    message = failed["state"]["message"]
    assert message.startswith("utility gate blocked release "), failed["state"]
    assert "; report: " in message and message.endswith("report.html"), message
    tasks = {t["name"].rsplit("-", 1)[0]: t["state"] for t in _task_runs(api, run_id)}
    assert tasks["utility-gate"]["type"] == "FAILED", tasks
    assert "max_loss" in tasks["utility-gate"]["message"], tasks["utility-gate"]
    assert {n for n, t in tasks.items() if t["type"] == "FAILED"} == {"utility-gate"}, tasks
    _screenshot_run(server["port"], run_id, "ui-blocked-run.png")
    first = {name: state["name"] for name, state in tasks.items()}
    assert first["anonymize"] == "Completed", first  # k=6 is new: the search ran
    assert not (output / "adult").exists() or not list((output / "adult").glob("*/manifest.json"))

    _write_policy(policy, max_loss=0.9)  # the fix
    prefect = str(Path(sys.executable).with_name("prefect"))
    subprocess.run(
        [prefect, "flow-run", "retry", run_id], env=server["env"], check=True,
        capture_output=True, timeout=60,
    )  # fmt: skip
    retried = _wait_terminal(api, run_id)
    assert retried["state"]["type"] == "COMPLETED", retried["state"]
    assert retried["run_count"] >= 2
    runs = _task_runs(api, run_id)
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


def _write_dp_policy(
    path: Path, output: Path, max_relative_noise: float, dataset: str = "adult-dp"
) -> None:
    """Adult's DP policy with absolute paths, a utility threshold, 4 rounds."""
    import yaml

    from privgate.core.policy import load_policy

    data = load_policy(REPO / "policies" / "adult-dp.yaml").model_dump(mode="json")
    data["dataset"] = dataset
    data["differential_privacy"]["rounds"] = 4
    data["utility"] = {"thresholds": {"max_relative_noise": max_relative_noise}}
    data["output"]["directory"] = str(output)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


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
    _write_dp_policy(policy, output, max_relative_noise=1e-9)
    created = _create_run(
        api,
        served.deployment["id"],
        json={"parameters": {"parameters": {"policy_path": str(policy)}}},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    failed = _wait_terminal(api, run_id)
    assert failed["state"]["type"] == "FAILED"
    assert "utility gate blocked DP release" in failed["state"]["message"], failed["state"]
    ledger = BudgetLedger(default_ledger_url(server["home"] / "privgate-data"))
    assert ledger.account("adult-dp").spent_epsilon == pytest.approx(0.5)
    (release_id,) = ledger.account("adult-dp").releases()
    drawn = [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp", release_id)]

    _write_dp_policy(policy, output, max_relative_noise=0.5)  # the fix
    prefect = str(Path(sys.executable).with_name("prefect"))
    subprocess.run(
        [prefect, "flow-run", "retry", run_id], env=server["env"], check=True,
        capture_output=True, timeout=60,
    )  # fmt: skip
    retried = _wait_terminal(api, run_id)
    assert retried["state"]["type"] == "COMPLETED", retried["state"]
    assert "DP gate PASSED" in retried["state"]["message"]
    account = ledger.account("adult-dp")
    assert account.spent_epsilon == pytest.approx(0.5)  # no second spend
    assert [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp", release_id)] == drawn
    assert list(account.published) == [release_id]
    shutil.rmtree(output)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Screenshots a CI run keeps (the folder is ignored by git).
ARTIFACTS = REPO / "test-artifacts"


def _browser_or_skip():
    """Playwright driving Debian's Chromium; missing pieces skip locally and fail in CI."""
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("the playwright package")
        sync_playwright = None
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return sync_playwright


def test_custom_run_from_the_ui_form_completes(server, served):
    """Open the deployment in the UI, fill the parameter form (k = 8), click Run, and see the
    flow run reach Completed with that parameter."""
    sync_playwright = _browser_or_skip()
    api, port = server["api"], server["port"]
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
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
            page.get_by_role("button", name="Submit", exact=True).click()
            # The UI leaves the form once the run is created.
            page.wait_for_url(lambda url: "/run?" not in url, timeout=90_000)

            def submitted():
                body = {"deployments": {"id": {"any_": [served.deployment["id"]]}}}
                runs = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()
                return next((r for r in runs if r["parameters"]["parameters"].get("k") == 8), None)

            run = _wait_terminal(api, _wait(submitted, 30, "the submitted run")["id"])
            page.goto(f"http://127.0.0.1:{port}/runs/flow-run/{run['id']}")
            page.get_by_text("Completed").first.wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "ui-custom-run-completed.png"), full_page=True)
        finally:
            browser.close()
    assert run["state"]["type"] == "COMPLETED", run["state"]
    assert run["parameters"]["parameters"]["k"] == 8
    assert "gate PASSED" in run["state"]["message"]


# --- a host crash: the serving process and the flow-run processes die by SIGKILL -------------

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

    _wait(all_staged, timeout, f"staging folders in {dataset_dirs}", interval=0.02)
    return list(frozen.values())


def _alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _screenshot_run(port: int, run_id: str, name: str) -> None:
    """The run's page in Chromium, on its task-runs tab (kept in test-artifacts/)."""
    sync_playwright = _browser_or_skip()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/runs/flow-run/{run_id}")
            page.get_by_text("Failed").first.wait_for(timeout=30_000)
            page.get_by_text("Task Runs", exact=True).first.click()
            page.get_by_text("utility-gate").first.wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / name), full_page=True)
        finally:
            browser.close()


def _retry_from_the_ui(port: int, run_id: str) -> None:
    """Click Retry on the Crashed run's page, as an operator would (screenshots kept)."""
    sync_playwright = _browser_or_skip()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/runs/flow-run/{run_id}")
            page.get_by_text("Crashed").first.wait_for(timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "ui-crashed-run.png"), full_page=True)
            page.get_by_role("button", name="Retry", exact=True).click()
            page.get_by_role("dialog").get_by_role("button", name="Retry", exact=True).click()
            page.wait_for_timeout(1000)
            page.screenshot(path=str(ARTIFACTS / "ui-crashed-run-retried.png"), full_page=True)
        finally:
            browser.close()


def test_runs_killed_with_their_worker_become_crashed_and_a_retry_publishes_once(
    server, served, tmp_path
):
    """A host crash mid-run: a k-anonymous and a DP release are running in the served process;
    each is frozen once it has staged its release, then the serving process and both flow-run
    processes are SIGKILLed. Nothing reports their end, yet the crash automation marks both
    Crashed within heartbeat + window + 5 s. Retried (the k-anonymous one from the UI), each
    publishes exactly one release, sweeping the dead run's staging folder; the search is not
    run again and the DP release's ε is charged once, its noise replayed from the journal."""
    from privgate.core.dp.ledger import BudgetLedger, default_ledger_url

    api = server["api"]
    output = tmp_path / "out"
    dp_policy = tmp_path / "adult-dp-crash.yaml"
    _write_dp_policy(dp_policy, output, max_relative_noise=0.5, dataset="adult-dp-crash")
    runs = {}
    for name, parameters in (
        ("k", {"policy_path": str(REPO / "policies" / "adult.yaml"), "k": 9,
               "overrides": {"output.directory": str(output)}}),
        ("dp", {"policy_path": str(dp_policy)}),
    ):  # fmt: skip
        created = _create_run(
            api,
            served.deployment["id"],
            json={"parameters": {"parameters": parameters}},
            timeout=10,
        )
        assert created.status_code == 201, created.text
        runs[name] = created.json()["id"]
    frozen = _freeze_when_staged([output / "adult", output / "adult-dp-crash"])
    served.kill()
    killed_at = time.monotonic()
    _wait(lambda: not any(_alive(pid) for pid in frozen), 30, "the flow-run processes to die")
    for run_id in runs.values():
        assert _run_state(api, run_id)["state"]["type"] == "RUNNING"
    ledger = BudgetLedger(default_ledger_url(server["home"] / "privgate-data"))
    (dp_release,) = ledger.account("adult-dp-crash").releases()
    drawn = [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp-crash", dp_release)]
    assert drawn and ledger.account("adult-dp-crash").spent_epsilon == pytest.approx(0.5)
    served.start()  # the operator brings the host back

    limit = 30 + CRASH_AFTER + 5
    for run_id in runs.values():
        crashed = _wait(
            lambda run_id=run_id: _run_state(api, run_id)["state"]["type"] == "CRASHED",
            limit + 60,
            f"flow run {run_id} to be marked Crashed",
            interval=1.0,
        )
        assert crashed
    took = time.monotonic() - killed_at
    assert took <= limit + 15, f"Crashed only {took:.0f}s after the kill (stated: {limit}s)"
    message = _run_state(api, runs["k"])["state"]["message"]
    assert "no heartbeat" in message, message

    _retry_from_the_ui(server["port"], runs["k"])
    prefect = str(Path(sys.executable).with_name("prefect"))
    subprocess.run(
        [prefect, "flow-run", "retry", runs["dp"]], env=server["env"], check=True,
        capture_output=True, timeout=60,
    )  # fmt: skip
    for name, run_id in runs.items():
        run = _wait_terminal(api, run_id)
        assert run["state"]["type"] == "COMPLETED", (name, run["state"])
        assert run["run_count"] >= 2, name
    for dataset in ("adult", "adult-dp-crash"):
        folder = output / dataset
        assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [], dataset
        assert len([m for m in folder.glob("*/manifest.json")]) == 1, dataset
    anonymize = [
        t["state"]["name"] for t in _task_runs(api, runs["k"]) if t["name"].startswith("anonymize")
    ]
    assert anonymize[-1] == "Cached" and anonymize.count("Completed") <= 1, anonymize
    account = ledger.account("adult-dp-crash")
    assert account.spent_epsilon == pytest.approx(0.5)  # charged once
    assert [
        (d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp-crash", dp_release)
    ] == drawn
    assert list(account.published) == [dp_release]
    shutil.rmtree(output)
