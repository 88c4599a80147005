"""Utility tasks: measure what the release keeps (cached), then apply the utility thresholds.

Measuring runs classifiers and clusterings (seconds to minutes), so its result is persisted and
keyed by :func:`privgate.core.cache_keys.utility_token`: the anonymization's token plus the
utility *settings*. The thresholds are left out of the key and applied by the separate,
uncached gate task, so tuning a threshold and rerunning re-decides in milliseconds without
measuring again.
"""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.exceptions import UtilityBlockedError
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy
from privgate.core.utility import UtilityDecision, UtilityReport, check_utility, measure_utility
from privgate.tasks._caching import stage_task


@stage_task(name="utility", timeout_seconds=3600)
def utility_task(
    frame: pd.DataFrame,
    table: stages.AnonymizedTable,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    cache_token: str,
) -> UtilityReport:
    """Classification, clustering, loss, engine metrics and distribution shift of the release
    (whose rows still carry their original records' index: they are shuffled when written)."""
    utility = measure_utility(frame, table.frame, policy, hierarchies, levels=table.result.levels)
    get_run_logger().info(
        "utility: loss %.4f, measured in %.1fs", utility.loss["total"], utility.seconds
    )
    return utility


@task(name="utility-gate", timeout_seconds=120)
def utility_gate_task(
    utility: UtilityReport, policy: ReleasePolicy, release_id: str
) -> UtilityDecision:
    """The policy's utility thresholds on the measured utility.

    A violated threshold fails this task (red in the UI, the reasons as its state message) with
    :class:`UtilityBlockedError`, which carries the decision for the flow's report.
    """
    decision = check_utility(utility, policy.utility.thresholds if policy.utility else None)
    log = get_run_logger()
    (log.info if decision.passed else log.error)("utility gate: %s", decision.summary)
    if not decision.passed:
        raise UtilityBlockedError(
            f"utility gate blocked release {release_id}: {decision.summary}", decision
        )
    return decision
