"""Anonymization task: the policy's algorithm over the validated table."""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from core import stages
from core.hierarchy import Hierarchy
from core.policy import ReleasePolicy
from tasks._caching import CACHED_STAGE


@task(name="anonymize", timeout_seconds=3600, **CACHED_STAGE)
def anonymize_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    shuffle_seed: int,
    cache_token: str,
) -> stages.AnonymizedTable:
    """Generalize and suppress until the policy's privacy models hold."""
    log = get_run_logger()
    log.info("anonymize: %s over %d rows ...", policy.algorithm.name.value, len(frame))
    table = stages.anonymize(frame, policy, hierarchies, shuffle_seed=shuffle_seed)
    m = table.metrics
    chosen = table.result.levels or f"{m.get('search_partitions')} partitions"
    log.info(
        "anonymize: %s chose %s; %d records suppressed, granularity %.3f, %.2fs",
        m["algorithm"],
        chosen,
        m["suppressed"],
        m["granularity"],
        m["seconds"],
    )
    return table
