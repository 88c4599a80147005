"""Run-time overrides of a policy, shared by the flow and the command line.

Kept apart from the flow module so that the command line can validate a policy, or run the
engine alone, without importing Prefect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privgate.core.exceptions import PolicyError
from privgate.core.policy import ReleasePolicy, load_policy


def resolve_policy(
    policy_path: str | Path,
    k: int | None = None,
    suppression_limit: float | None = None,
    overrides: dict[str, Any] | None = None,
    epsilon: float | None = None,
) -> ReleasePolicy:
    """Load a policy and apply run-time overrides (validated like the file itself).

    ``k`` and ``suppression_limit`` apply to k-anonymous releases, ``epsilon`` to
    differentially private ones; an override the policy cannot take is refused by name rather
    than ignored.
    """
    policy = load_policy(policy_path)
    changes = dict(overrides or {})
    if policy.is_differentially_private:
        for name, value in (("k", k), ("suppression_limit", suppression_limit)):
            if value is not None:
                raise PolicyError(
                    f"{policy_path}: override {name}: the policy makes a differentially "
                    "private release (differential_privacy), which has no privacy."
                    f"{name}; override epsilon instead"
                )
        if epsilon is not None:
            changes["differential_privacy.epsilon"] = epsilon
    elif epsilon is not None:
        raise PolicyError(
            f"{policy_path}: override epsilon: the policy makes a k-anonymous release "
            "(privacy); epsilon applies to differential_privacy policies only"
        )
    if k is not None:
        changes["privacy.k"] = k
    if suppression_limit is not None:
        changes["privacy.suppression_limit"] = suppression_limit
    return policy.with_overrides(**changes) if changes else policy
