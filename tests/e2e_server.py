"""A real Prefect server and ``privgate serve`` against it, for the end-to-end file
(``tests/flows/test_server_e2e.py``, which also holds the host-crash test that had a file, a
server and a serving process of its own): the fixtures ``server`` and ``served`` (module-scoped,
so a file using them has its own server, home and database), and what a user does through the
API or the UI.

Only Prefect's *timing* settings differ from production, never the mechanism: the serving
process looks for runs to start every :data:`POLL_SECONDS` instead of Prefect's default 10 s
(each run created from the UI or retried waited up to 10 s, 5 s on average, before it started;
the tests create eleven). The heartbeat (30 s) and the crash window (40 s) are already the
shortest that Prefect and privgate accept.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import prefect_db
import pytest

REPO = Path(__file__).resolve().parents[1]
DEPLOYMENT = "privgate-release/adult-nightly"
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}

#: Seconds between the serving process's queries for runs to start
#: (``PREFECT_RUNNER_POLL_FREQUENCY``; Prefect's default, the production one, is 10).
POLL_SECONDS = 1

#: The crash window of the served deployments in these tests (the default is 120 s; privgate
#: accepts no less than heartbeat + 10 s = 40 s): a killed run is marked Crashed at most
#: heartbeat (30 s) + this + 5 s after it died.
CRASH_AFTER = 40


_HTTP: httpx.Client | None = None


def http() -> httpx.Client:
    """The tests' one HTTP client to the API (every call names its own timeout).

    ``httpx.get`` made a new client per call, with a new SSL context (certifi's bundle read
    again): 26 ms of CPU a call against 1 ms on one client's kept connection, and the file makes
    hundreds (a run's state is read every 0.5 s). The Prefect API sets no cookies, so nothing
    one call receives reaches another; a client is only connections and their pool.
    """
    global _HTTP
    if _HTTP is None:
        _HTTP = httpx.Client()
        atexit.register(_HTTP.close)
    return _HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(predicate, timeout: float, what: str, interval: float = 0.5):
    """Poll ``predicate`` until it returns something true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM a process group (SIGKILL if it does not end)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real `prefect server` on a free loopback port, with its own home and database.

    The database starts as a copy of one already migrated (:mod:`prefect_db`), as on any
    restart of a user's server: the first start's migrations took most of its start-up.
    """
    home = tmp_path_factory.mktemp("prefect-home")
    seeded = prefect_db.seed(home / "prefect.db")  # where Prefect puts it by default
    port = free_port()
    env = dict(
        os.environ,
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
        PREFECT_LOCAL_STORAGE_PATH=str(home / "results"),
        PREFECT_UI_ENABLED="true",
        PRIVGATE_DATA_DIR=str(home / "privgate-data"),  # the served runs' ε ledger
        PREFECT_RUNNER_POLL_FREQUENCY=str(POLL_SECONDS),  # read by `privgate serve`
    )
    prefect = str(Path(sys.executable).with_name("prefect"))
    global _SERVER_LOG
    _SERVER_LOG = home / "server.log"
    log = open(_SERVER_LOG, "w")  # noqa: SIM115 - closed in teardown
    process = subprocess.Popen(
        [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    api = f"http://127.0.0.1:{port}/api"

    def healthy() -> bool:
        try:
            return http().get(f"{api}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait(healthy, 300, "the Prefect server", interval=0.1)
        if not seeded:
            prefect_db.keep(home / "prefect.db")  # before anything else is written
        yield {"api": api, "env": env, "home": home, "port": port}
    finally:
        stop(process)
        log.close()


class Serving:
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
            r = read_api("GET", f"{api}/deployments/name/{DEPLOYMENT}")
            return r.json() if r.status_code == 200 else None

        # On the first start the deployment appears once serving began (after the crash
        # automation was set up); a restart finds it at once and picks up runs when ready.
        self.deployment = wait(deployment, 120, "the served deployment")

    def kill(self) -> None:
        """SIGKILL the serving process and every flow-run process it started: a host crash."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


@pytest.fixture(scope="module")
def served(server, tmp_path_factory):
    serving = Serving(server, tmp_path_factory.mktemp("releases"))
    try:
        serving.start()
        yield serving
    finally:
        serving.stop()


def create_run(api: str, deployment_id: str, json: dict, timeout: float = 90) -> httpx.Response:
    """What the UI's Run button sends. A busy server may answer 503 for a moment (its SQLite
    database locked by the scheduler): the UI shows an error and the user clicks again. A
    request that times out is not sent again (it may have created the run), so it waits up to
    ``timeout`` seconds for the answer: the server once left reads unanswered for a minute."""
    deadline = time.monotonic() + 60
    while True:
        response = http().post(
            f"{api}/deployments/{deployment_id}/create_flow_run", json=json, timeout=timeout
        )
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(2)


#: Seconds a read waits out a Prefect server that does not answer (see :func:`read_api`).
READ_PATIENCE = 180

#: The log of the file's Prefect server, quoted when it stops answering.
_SERVER_LOG: Path | None = None


def server_log_tail(lines: int = 60) -> str:
    """The end of the Prefect server's log: what it was doing when it stopped answering."""
    if _SERVER_LOG is None or not _SERVER_LOG.exists():
        return "(no server log)"
    return "\n".join(_SERVER_LOG.read_text(errors="replace").splitlines()[-lines:])


def read_api(method: str, url: str, **kwargs) -> httpx.Response:
    """A read from the API that waits out a busy server.

    Prefect's server keeps its state in SQLite; while served runs, retries and the crash
    automation write, its requests queue on the database lock (``busy_timeout`` is 60 s) and
    a read can go unanswered for a minute: a clean clone's CI run saw three 20-second reads
    in a row time out, after the run had failed as the test expected and its retry had been
    scheduled. The server's latency on a loaded machine is not what these tests check, and a
    read is safe to repeat; a server silent for :data:`READ_PATIENCE` seconds still fails the
    test, with the end of the server's log in the message. Each stall is printed (pytest shows
    it with a failure)."""
    started = time.monotonic()
    deadline = started + READ_PATIENCE
    while True:
        try:
            response = http().request(method, url, timeout=20, **kwargs)
        except httpx.TimeoutException as error:
            waited = time.monotonic() - started
            print(f"e2e: the Prefect server has not answered {method} {url} for {waited:.0f} s")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the Prefect server did not answer {method} {url} within "
                    f"{READ_PATIENCE} s; the end of its log:\n{server_log_tail()}"
                ) from error
            continue
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(2)


def run_state(api: str, run_id: str) -> dict:
    return read_api("GET", f"{api}/flow_runs/{run_id}").json()


def wait_terminal(api: str, run_id: str, timeout: float = 240) -> dict:
    def done():
        run = run_state(api, run_id)
        return run if run["state"]["type"] in TERMINAL else None

    return wait(done, timeout, f"flow run {run_id} to finish", interval=0.5)


def task_runs(api: str, run_id: str) -> list[dict]:
    body = {"flow_runs": {"id": {"any_": [run_id]}}, "sort": "EXPECTED_START_TIME_ASC"}
    return read_api("POST", f"{api}/task_runs/filter", json=body).json()


def retry_from_the_cli(server: dict, run_id: str) -> None:
    """`prefect flow-run retry RUN_ID`, as the data owner types it."""
    with retrying_from_the_cli(server, run_id):
        pass


@contextmanager
def retrying_from_the_cli(server: dict, run_id: str):
    """`prefect flow-run retry RUN_ID` typed while the block runs (someone else clicks Retry
    on another run in the UI, say): the command starts on entry and must have succeeded, within
    60 s, when the block ends (``CalledProcessError`` otherwise, with its output)."""
    prefect = str(Path(sys.executable).with_name("prefect"))
    process = subprocess.Popen(
        [prefect, "flow-run", "retry", run_id], env=server["env"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        yield
    finally:
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, process.args, output)


def write_policy(path: Path, max_loss: float) -> None:
    """Adult's policy with absolute paths and a utility threshold on the total loss."""
    import yaml

    from privgate.core.policy import load_policy

    data = load_policy(REPO / "policies" / "adult.yaml").model_dump(mode="json")
    data["utility"] = {"clusters": [], "clustering": [], "thresholds": {"max_loss": max_loss}}
    data["algorithm"] = {"name": "optimal"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def write_dp_policy(
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


# --- the UI in Chromium ------------------------------------------------------------------------

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


def browser_or_skip():
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


@pytest.fixture(scope="module")
def browser():
    """One Chromium for a file's steps in the UI (each opens its own page in a fresh context):
    a browser's start cost about 3 s of CPU and a few seconds of wall time per step."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


#: Milliseconds a UI step waits for the page or an element. Playwright's default (30 s) failed a
#: clean clone's CI run: the first load of the UI (a few MB of JavaScript parsed by a Chromium
#: sharing two busy cores with the other xdist worker and the served flow runs) passed 30 s.
UI_TIMEOUT_MS = 90_000


@contextmanager
def new_page(browser):
    """A page of a fresh browser context (no cookies or storage from an earlier step), whose
    waits allow :data:`UI_TIMEOUT_MS`."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def open_ui(page, url: str) -> None:
    """Open a page of the UI as a user does, and once more if it did not load in time.

    It waits for the document and its scripts (``domcontentloaded``), not for every image and
    font (``load``): what a step reads next is rendered by those scripts, and each step waits
    for the element it needs. A second try covers a request the busy server dropped."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.goto(url, wait_until="domcontentloaded")
    except PlaywrightTimeout:
        page.screenshot(path=str(ARTIFACTS / "ui-open-timed-out.png"))
        page.goto(url, wait_until="domcontentloaded")


def screenshot_failed_run(browser, port: int, run_id: str, name: str) -> None:
    """The failed run's page in Chromium, on its task-runs tab (kept in test-artifacts/)."""
    with new_page(browser) as page:
        open_ui(page, f"http://127.0.0.1:{port}/runs/flow-run/{run_id}")
        page.get_by_text("Failed").first.wait_for()
        page.get_by_text("Task Runs", exact=True).first.click()
        page.get_by_text("utility-gate").first.wait_for()
        page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def retry_from_the_ui(browser, port: int, run_id: str) -> None:
    """Click Retry on the Crashed run's page, as an operator would (screenshots kept)."""
    with new_page(browser) as page:
        open_ui(page, f"http://127.0.0.1:{port}/runs/flow-run/{run_id}")
        page.get_by_text("Crashed").first.wait_for()
        page.screenshot(path=str(ARTIFACTS / "ui-crashed-run.png"), full_page=True)
        page.get_by_role("button", name="Retry", exact=True).click()
        page.get_by_role("dialog").get_by_role("button", name="Retry", exact=True).click()
        page.wait_for_timeout(1000)
        page.screenshot(path=str(ARTIFACTS / "ui-crashed-run-retried.png"), full_page=True)
