"""privgate: a privacy publishing pipeline for tabular microdata.

The Python API, without Prefect::

    import privgate

    policy = privgate.load_policy("policies/adult.yaml")
    release = privgate.anonymize(frame, policy)   # a Release: .frame, .metrics, .decision
    release.write("adult-release.csv")            # rows shuffled, the file verified
    privgate.verify("adult-release.csv", policy)  # the gate on any release file

``privgate.release_flow`` is the Prefect flow (ingest -> validate -> rank -> anonymize ->
utility -> gate -> publish) that scheduled and UI-triggered runs execute. Every name is
imported on first use: ``import privgate`` imports neither Prefect nor pandas, so the command
line (``privgate.flows.cli``) and the engine-only path start fast.

The repository's top-level folders are this package's subpackages: ``privgate.core`` (the
engine, no Prefect), ``privgate.validations``, ``privgate.tasks``, ``privgate.flows`` and
``privgate.deployments``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privgate.api import Release, anonymize, load_policy, releases, verify
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

__all__ = [
    "Release",
    "ReleaseParameters",
    "anonymize",
    "load_policy",
    "release_flow",
    "releases",
    "verify",
]

_LAZY = {
    **dict.fromkeys(["Release", "anonymize", "load_policy", "releases", "verify"], "privgate.api"),
    "release_flow": "privgate.flows.release",
    "ReleaseParameters": "privgate.flows.parameters",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'privgate' has no attribute {name!r}")
