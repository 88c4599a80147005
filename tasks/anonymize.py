"""Anonymization task: the policy's algorithm over the validated table."""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from core import stages
from core.hierarchy import Hierarchy
from core.policy import ReleasePolicy


@task(name="anonymize")
def anonymize_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    shuffle_seed: int,
) -> stages.AnonymizedTable:
    """Generalize and suppress until the policy's privacy models hold."""
    table = stages.anonymize(frame, policy, hierarchies, shuffle_seed=shuffle_seed)
    m = table.metrics
    chosen = table.result.levels or f"{m.get('search_partitions')} partitions"
    get_run_logger().info(
        "anonymize: %s chose %s; %d records suppressed, granularity %.3f, %.2fs",
        m["algorithm"],
        chosen,
        m["suppressed"],
        m["granularity"],
        m["seconds"],
    )
    return table
