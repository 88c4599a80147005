"""The task runs of a finished flow run, read back once the server has recorded them.

A run's task runs reach the server as events, sent by a background worker of this process and
turned into task runs by the server's task-run recorder after the flow call has returned: a
read right after the call may find a task run without its final state (``state`` None or
Running) while every stage of the run has ended. The flow runs of this process used to end
with Prefect's heartbeat thread joined (up to a second), which hid the lag; they send no
heartbeats to the test server any more (``conftest.no_heartbeats``).

So the events this process still holds are sent first, then the server's record is read until
it holds every task the caller names (those its assertions read) and every task run in it is
final (a test reading them requests the ``task_run_records`` fixture: the other tests' runs
send no events to the test server, ``conftest.no_task_run_events``). Nothing is inferred: a
read still incomplete after the deadline is returned as it is, and the caller's assertions say
what is missing. A task the caller asserts never ran is not
named: a run that never started it sent no event of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

#: Seconds to wait for the server's record (a busy 2-core machine: far more than it takes).
DEADLINE = 120.0
#: Seconds between two reads.
POLL = 0.05


def _task_name(run: Any) -> str:
    return run.name.rsplit("-", 1)[0]  # without Prefect's suffix


def final_task_runs(flow_run_id: Any, expected: Iterable[str]) -> list:
    """The flow run's task runs (Prefect ``TaskRun`` objects), each with its final state, once
    those named ``expected`` (task names) are among them."""
    expected = set(expected)
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.events.clients import NullEventsClient
    from prefect.events.worker import EventsWorker

    if EventsWorker.instance().client_type is NullEventsClient:
        raise RuntimeError(
            "this test's runs sent no events, so the server has no task runs of them: "
            "request the task_run_records fixture (tests/conftest.py)"
        )
    EventsWorker.drain_all()  # send what this process still holds (a new worker starts on use)
    deadline = time.monotonic() + DEADLINE
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
            )
            final = all(run.state is not None and run.state.is_final() for run in runs)
            if (final and expected <= {_task_name(r) for r in runs}) or time.monotonic() > deadline:
                return runs
            time.sleep(POLL)


def final_task_states(flow_run_id: Any, *expected: str) -> dict[str, Any]:
    """Task name (without Prefect's suffix) -> final state, of one flow run, once the tasks
    named ``expected`` are recorded."""
    return {_task_name(run): run.state for run in final_task_runs(flow_run_id, expected)}
