"""Serve nightly release deployments from one long-running process (no worker needed).

The deployments are built by :mod:`privgate.flows.serve` (``privgate serve POLICY...`` runs the
same, refusing to take over a work-pool deployment of the same name);
``python -m privgate.deployments.serve POLICY...`` serves them with the default nightly
schedule. For a work pool and workers instead, see ``deployments/prefect.yaml``.
"""

from __future__ import annotations

import sys

from privgate.flows.serve import (
    FLOW_NAME,
    NIGHTLY_CRON,
    build_deployments,
    deployment_name,
    describe,
    refuse_to_replace,
    serve,
)

__all__ = [
    "FLOW_NAME",
    "NIGHTLY_CRON",
    "build_deployments",
    "deployment_name",
    "describe",
    "refuse_to_replace",
    "serve",
]

if __name__ == "__main__":
    serve(sys.argv[1:])
