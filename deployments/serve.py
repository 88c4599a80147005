"""Serve nightly release deployments from one long-running process (no worker needed).

``privgate serve policies/adult.yaml policies/demo.yaml`` registers one deployment per policy,
named ``<dataset>-nightly``, scheduled by cron (default ``0 2 * * *`` in UTC), and runs each
scheduled or UI-triggered run in this process. For a work pool and workers instead, see
``deployments/prefect.yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privgate.core.policy import load_policy

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
        parameters: dict[str, Any] = {"policy_path": str(path)}
        if overrides:
            parameters["overrides"] = dict(overrides)
        deployments.append(
            release_flow.to_deployment(
                name=name,
                schedules=[Cron(cron, timezone=timezone)],
                parameters={"parameters": parameters},
                description=f"Nightly privacy-gated release of {path}",
                tags=["privgate", "nightly"],
            )
        )
    return deployments


def serve(
    policy_paths: Sequence[str | Path],
    cron: str = NIGHTLY_CRON,
    timezone: str = "UTC",
    overrides: dict[str, Any] | None = None,
) -> None:
    """Serve the deployments until interrupted."""
    from prefect import serve as prefect_serve

    prefect_serve(*build_deployments(policy_paths, cron, timezone, overrides))
