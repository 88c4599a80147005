"""Serve nightly release deployments from one long-running process (no worker needed).

``privgate serve policies/adult.yaml policies/demo.yaml`` registers one deployment per policy,
named ``<dataset>-nightly``, scheduled by cron (default ``0 2 * * *`` in UTC), and runs each
scheduled or UI-triggered run in this process. The policy path is stored absolute, so a run
does not depend on the folder the server or the UI was started from, and the schedule's
timezone is written into the description (the deployment page does not show it otherwise).

For a work pool and workers instead, see ``deployments/prefect.yaml``: its deployments are
named ``<dataset>-nightly-pool``, so the two ways to deploy never replace each other, and
:func:`refuse_to_replace` stops ``privgate serve`` from taking over a work-pool deployment that
has the served name. This module belongs to ``flows/`` (the CLI's ``serve`` uses it);
``deployments/`` imports it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privgate.core.exceptions import PrivgateError
from privgate.core.policy import load_policy

#: The flow's name, the first half of every deployment's full name.
FLOW_NAME = "privgate-release"

#: The nightly schedule every deployment gets unless told otherwise.
NIGHTLY_CRON = "0 2 * * *"


def deployment_name(policy_path: str | Path) -> str:
    """``<dataset>-nightly``: the dataset named in the policy."""
    return f"{load_policy(policy_path).dataset}-nightly"


def build_deployments(
    policy_paths: Sequence[str | Path],
    cron: str = NIGHTLY_CRON,
    timezone: str = "UTC",
    overrides: dict[str, Any] | None = None,
) -> list:
    """One scheduled deployment of the release flow per policy (policies validated first)."""
    from prefect.schedules import Cron

    from privgate.flows.release import release_flow

    deployments = []
    for path in policy_paths:
        name = deployment_name(path)  # loads and validates the policy: fail before serving
        absolute = Path(path).resolve()
        # Nightly: every release of a keyed dataset is checked against the earlier ones.
        parameters: dict[str, Any] = {"policy_path": str(absolute), "release_history": True}
        if overrides:
            parameters["overrides"] = dict(overrides)
        deployments.append(
            release_flow.to_deployment(
                name=name,
                schedules=[Cron(cron, timezone=timezone)],
                parameters={"parameters": parameters},
                description=describe(absolute, cron, timezone),
                tags=["privgate", "nightly"],
            )
        )
    return deployments


def describe(policy_path: Path, cron: str, timezone: str) -> str:
    """The deployment's description: what it releases and when, with the timezone."""
    return (
        f"Privacy-gated release of {policy_path}, scheduled `{cron}` in the timezone "
        f"{timezone}; served by `privgate serve` (no work pool)."
    )


def refuse_to_replace(deployments: Sequence) -> None:
    """Refuse to serve a deployment whose name belongs to a work-pool deployment.

    Serving registers the deployment under its name and would silently take over one that
    ``prefect deploy`` created (moving its runs off the work pool and resetting its schedule).

    Raises
    ------
    PrivgateError
        Naming the deployment, its work pool and what to do.
    """
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        for deployment in deployments:
            full = f"{FLOW_NAME}/{deployment.name}"
            try:
                existing = client.read_deployment_by_name(full)
            except ObjectNotFound:
                continue
            if existing.work_pool_name:
                raise PrivgateError(
                    f"deployment {full} already exists on the work pool "
                    f"{existing.work_pool_name!r} (created by `prefect deploy`); serving it "
                    "would take it over. Delete it first (`prefect deployment delete "
                    f"{full}`) or serve with another policy dataset name"
                )


def serve(
    policy_paths: Sequence[str | Path],
    cron: str = NIGHTLY_CRON,
    timezone: str = "UTC",
    overrides: dict[str, Any] | None = None,
) -> None:
    """Serve the deployments until interrupted."""
    from prefect import serve as prefect_serve

    prefect_serve(*build_deployments(policy_paths, cron, timezone, overrides))
