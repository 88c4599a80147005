"""Mark release runs whose process died as *Crashed*, so the UI offers Retry.

When the process that serves the deployments (``privgate serve``, or a worker) and the flow-run
process die together — a host crash, an OOM kill of the whole group — nobody is left to report
the run's end: Prefect keeps it *Running* forever, Cancel sticks in *Cancelling* and Retry is
refused. Prefect 3's own remedy (docs: "How to detect and respond to zombie flows") is used
here, unchanged:

- every flow run emits a ``prefect.flow-run.heartbeat`` event every
  ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (Prefect's minimum is 30; we set 30 for the
  runs we serve unless the operator set it);
- a server-side automation with a *proactive* trigger expects, after each heartbeat, another
  heartbeat or a final state within ``crash_after`` seconds; when none comes, it sets the run
  to *Crashed*. From *Crashed*, the UI's Retry and ``prefect flow-run retry`` rerun it, reusing
  the stages that finished (and the DP ledger's journal: no second spend).

The automation only watches runs tagged ``privgate`` (every deployment we create has the tag),
so it never touches other flows on the same server. A run is marked Crashed at most
``crash_after`` + 5 s (the server's proactive evaluation period) after its last heartbeat, so
within ``heartbeat + crash_after + 5`` seconds of its death: 155 s with the defaults.
``crash_after`` must leave room for a late heartbeat on a busy machine (a live run wrongly
marked Crashed would invite a second, concurrent attempt), hence the floor of heartbeat + 10 s.
"""

from __future__ import annotations

import os
from datetime import timedelta

from privgate.core.exceptions import PrivgateError

#: Seconds between a flow run's heartbeats (Prefect's minimum).
HEARTBEAT_SECONDS = 30

#: Seconds without a heartbeat after which a run counts as crashed (default).
CRASH_AFTER_SECONDS = 120

#: The tag every privgate deployment (and so every run it creates) carries.
RUN_TAG = "privgate"

#: The automation's name: the key by which it is found and updated, never duplicated.
AUTOMATION_NAME = "privgate: mark release runs without heartbeats Crashed"

_HEARTBEAT_VARIABLE = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"
_FINAL_EVENTS = ("Completed", "Failed", "Cancelled", "Crashed")


def heartbeat_seconds() -> int:
    """The heartbeat period the flow runs started from this process will use.

    Sets ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` to :data:`HEARTBEAT_SECONDS` unless the operator
    set it (the served runs inherit this process's environment).
    """
    value = os.environ.setdefault(_HEARTBEAT_VARIABLE, str(HEARTBEAT_SECONDS))
    try:
        seconds = int(value)
    except ValueError:
        raise PrivgateError(f"{_HEARTBEAT_VARIABLE}={value!r} is not a whole number") from None
    if seconds < 30:
        raise PrivgateError(f"{_HEARTBEAT_VARIABLE}={seconds}: Prefect's minimum is 30 seconds")
    return seconds


def check_crash_after(crash_after: float, heartbeat: int) -> None:
    """Refuse a window that a merely late heartbeat could exceed."""
    if crash_after < heartbeat + 10:
        raise PrivgateError(
            f"--crash-after {crash_after:g}: must be at least the heartbeat period plus 10 s "
            f"({heartbeat + 10} s), or a live run could be marked Crashed"
        )


def build_automation(crash_after: float):
    """The automation, as Prefect's zombie-flow recipe, limited to runs tagged ``privgate``."""
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    return AutomationCore(
        name=AUTOMATION_NAME,
        description=(
            f"Sets a privgate release run to Crashed when it has sent no heartbeat for "
            f"{crash_after:g} s (its process died), so that it can be retried. Created by "
            "`privgate serve` / `privgate crash-detection`."
        ),
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={
                "prefect.flow-run.heartbeat",
                *(f"prefect.flow-run.{s}" for s in _FINAL_EVENTS),
            },
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            match_related=ResourceSpecification(
                {"prefect.resource.role": "tag", "prefect.resource.id": f"prefect.tag.{RUN_TAG}"}
            ),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=crash_after),
        ),
        actions=[
            ChangeFlowRunState(
                state=StateType.CRASHED,
                message=(
                    f"no heartbeat for {crash_after:g} s: the run's process died (host crash "
                    "or killed worker); Retry reruns it, reusing the stages that finished"
                ),
            )
        ],
    )


def ensure_crash_automation(crash_after: float = CRASH_AFTER_SECONDS) -> str:
    """Create the automation on the current Prefect server, or update it in place.

    Returns
    -------
    str
        The automation's id.
    """
    from prefect.client.orchestration import get_client

    check_crash_after(crash_after, heartbeat_seconds())
    wanted = build_automation(crash_after)
    with get_client(sync_client=True) as client:
        found = client.read_automations_by_name(AUTOMATION_NAME)
        if not found:
            return str(client.create_automation(wanted))
        for extra in found[1:]:  # two `privgate serve` started at once: keep one
            client.delete_automation(extra.id)
        # Updating an automation gives its trigger a new identity, which forgets the heartbeats
        # it has seen: a serve restarted after a crash would then never mark that crash. So an
        # unchanged automation is left alone.
        if _settings(found[0]) != _settings(wanted):
            client.update_automation(found[0].id, wanted)
        return str(found[0].id)


def _settings(automation) -> dict:
    """What an automation does, without the identities the server assigns."""
    data = automation.model_dump(mode="json", exclude={"id", "created", "updated"})
    data["trigger"].pop("id", None)
    for key in ("after", "expect", "for_each"):  # sets: their order means nothing
        data["trigger"][key] = sorted(data["trigger"].get(key) or [])
    return {key: data[key] for key in ("name", "description", "enabled", "trigger", "actions")}
