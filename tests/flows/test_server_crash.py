"""Against a real Prefect server (``tests/e2e_server.py``): a host crash mid-run. The serving
process and its flow-run processes die by SIGKILL; the crash automation marks the runs Crashed,
and a retry (from the UI for one of them) publishes each release once.

Most of this file's time is Prefect's own clock, which a test cannot shorten without changing
the mechanism: a flow run's heartbeat period has a floor of 30 s in Prefect 3.8
(``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, ``MINIMUM_HEARTBEAT_INTERVAL``) and privgate refuses a
crash window shorter than heartbeat + 10 s, so a frozen run is marked Crashed 10 to 45 s after
it stopped sending heartbeats.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from e2e_server import (
    CRASH_AFTER,
    REPO,
    create_run,
    retry_from_the_cli,
    retry_from_the_ui,
    run_state,
    task_runs,
    wait,
    wait_terminal,
    write_dp_policy,
)

#: A real server, a serving process and browsers (``tests/conftest.py`` marks a test slow by
#: its fixtures; this file does not use the session's test server).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _prefect():
    """Replaces ``tests/flows/conftest.py``'s: these tests talk to their own server
    (``server``), never to the session's Prefect test server, so they do not start it."""
    yield


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


def test_runs_killed_with_their_worker_become_crashed_and_a_retry_publishes_once(
    server, served, browser, tmp_path
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
    write_dp_policy(dp_policy, output, max_relative_noise=0.5, dataset="adult-dp-crash")
    runs = {}
    for name, parameters in (
        ("k", {"policy_path": str(REPO / "policies" / "adult.yaml"), "k": 9,
               "overrides": {"output.directory": str(output)}}),
        ("dp", {"policy_path": str(dp_policy)}),
    ):  # fmt: skip
        created = create_run(
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
    wait(lambda: not any(_alive(pid) for pid in frozen), 30, "the flow-run processes to die")
    for run_id in runs.values():
        assert run_state(api, run_id)["state"]["type"] == "RUNNING"
    ledger = BudgetLedger(default_ledger_url(server["home"] / "privgate-data"))
    (dp_release,) = ledger.account("adult-dp-crash").releases()
    drawn = [(d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp-crash", dp_release)]
    assert drawn and ledger.account("adult-dp-crash").spent_epsilon == pytest.approx(0.5)
    served.start()  # the operator brings the host back

    limit = 30 + CRASH_AFTER + 5
    for run_id in runs.values():
        crashed = wait(
            lambda run_id=run_id: run_state(api, run_id)["state"]["type"] == "CRASHED",
            limit + 60,
            f"flow run {run_id} to be marked Crashed",
            interval=0.5,
        )
        assert crashed
    took = time.monotonic() - killed_at
    assert took <= limit + 15, f"Crashed only {took:.0f}s after the kill (stated: {limit}s)"
    message = run_state(api, runs["k"])["state"]["message"]
    assert "no heartbeat" in message, message

    retry_from_the_ui(browser, server["port"], runs["k"])
    retry_from_the_cli(server, runs["dp"])
    for name, run_id in runs.items():
        run = wait_terminal(api, run_id)
        assert run["state"]["type"] == "COMPLETED", (name, run["state"])
        assert run["run_count"] >= 2, name
    for dataset in ("adult", "adult-dp-crash"):
        folder = output / dataset
        assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [], dataset
        assert len([m for m in folder.glob("*/manifest.json")]) == 1, dataset
    anonymize = [
        t["state"]["name"] for t in task_runs(api, runs["k"]) if t["name"].startswith("anonymize")
    ]
    assert anonymize[-1] == "Cached" and anonymize.count("Completed") <= 1, anonymize
    account = ledger.account("adult-dp-crash")
    assert account.spent_epsilon == pytest.approx(0.5)  # charged once
    assert [
        (d.seq, d.attempt, d.value) for d in ledger.draws("adult-dp-crash", dp_release)
    ] == drawn
    assert list(account.published) == [dp_release]
    shutil.rmtree(output)
