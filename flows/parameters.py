"""The release flow's run parameters, as one typed model.

Prefect renders this model as the form of a deployment's "Custom run" (titles, descriptions,
defaults, bounds) and rejects invalid values before a run starts; the command line and the
tests build the same model.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from privgate.core.policy import K_MINIMUM, ReleasePolicy


class ReleaseParameters(BaseModel):
    """What one release run needs: a policy and, optionally, run-time overrides."""

    model_config = ConfigDict(extra="forbid", title="Release parameters")

    policy_path: str = Field(
        title="Policy",
        description="Path of the release policy (YAML), relative to the working directory.",
        min_length=1,
    )
    k: int | None = Field(
        default=None,
        ge=K_MINIMUM,
        description="Override privacy.k for this run (blank: the policy's).",
    )
    suppression_limit: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Override privacy.suppression_limit, a fraction of the records (0-1).",
    )
    epsilon: float | None = Field(
        default=None,
        gt=0.0,
        allow_inf_nan=False,
        description="Override differential_privacy.epsilon, the privacy budget this run spends "
        "(DP policies only; blank: the policy's). Charged to the dataset's lifetime budget.",
    )
    release_date: date | None = Field(
        default=None,
        description="Date of the release, part of its id (blank: today, UTC). A rerun for the "
        "same data, policy and date publishes once.",
    )
    dry_run: bool = Field(
        default=False, description="Run every stage and verify, but publish nothing."
    )
    release_history: bool = Field(
        default=False,
        description="Check the release against the dataset's earlier releases and record it, "
        "for a policy that names a person key or a single identifier column and has no history "
        "section of its own (nightly deployments turn this on).",
    )
    data_docs: bool = Field(
        default=True,
        title="Data Docs",
        description="Write Great Expectations' Data Docs (HTML pages of both suites, about "
        "9 MB on Adult) into the release folder; off: both suites still run and stop a failing "
        "release, and expectations.json still records every expectation's result.",
    )
    engine: Literal["auto", "memory", "partitioned"] = Field(
        default="auto",
        title="Engine",
        description="auto: the partitioned path (bounded memory, the release as Parquet parts) "
        "when the input's estimated rows reach PRIVGATE_PARTITIONED_MIN_ROWS (default "
        "2000000), else the in-memory path; memory or partitioned forces one.",
    )
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description='Further dotted-key policy overrides, e.g. {"output.directory": "/srv/out"}.',
    )

    _policy: ReleasePolicy | None = PrivateAttr(default=None)
    _history_note: str | None = PrivateAttr(default=None)

    def policy(self) -> ReleasePolicy:
        """The policy with this run's overrides, validated (once: the command line resolves it
        before Prefect starts, and the flow reuses it)."""
        if self._policy is None:
            from privgate.flows.policy_overrides import resolve_policy

            policy = resolve_policy(
                self.policy_path, self.k, self.suppression_limit, self.overrides, self.epsilon
            )
            if self.release_history:
                from privgate.core.history import history_by_default

                policy, self._history_note = history_by_default(policy)
            self._policy = policy
        return self._policy

    @property
    def history_note(self) -> str | None:
        """Why the release history is on or off for this run (``release_history`` runs only;
        after :meth:`policy`)."""
        return self._history_note
