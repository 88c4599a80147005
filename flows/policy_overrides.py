"""Run-time overrides of a policy, shared by the flow and the command line.

Kept apart from the flow module so that the command line can validate a policy, or run the
engine alone, without importing Prefect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.policy import ReleasePolicy, load_policy


def resolve_policy(
    policy_path: str | Path,
    k: int | None = None,
    suppression_limit: float | None = None,
    overrides: dict[str, Any] | None = None,
) -> ReleasePolicy:
    """Load a policy and apply run-time overrides (validated like the file itself)."""
    policy = load_policy(policy_path)
    changes = dict(overrides or {})
    if k is not None:
        changes["privacy.k"] = k
    if suppression_limit is not None:
        changes["privacy.suppression_limit"] = suppression_limit
    return policy.with_overrides(**changes) if changes else policy
