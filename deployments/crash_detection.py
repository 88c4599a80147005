"""Crash detection for served and work-pool runs: see :mod:`privgate.flows.crash_detection`.

``deployments/`` imports ``flows/``, never the other way round; this module keeps the import
path for scripts that used it.
"""

from privgate.flows.crash_detection import (
    AUTOMATION_NAME,
    CRASH_AFTER_SECONDS,
    HEARTBEAT_SECONDS,
    RUN_TAG,
    build_automation,
    check_crash_after,
    ensure_crash_automation,
    heartbeat_seconds,
)

__all__ = [
    "AUTOMATION_NAME",
    "CRASH_AFTER_SECONDS",
    "HEARTBEAT_SECONDS",
    "RUN_TAG",
    "build_automation",
    "check_crash_after",
    "ensure_crash_automation",
    "heartbeat_seconds",
]
