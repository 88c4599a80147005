"""Anonymization task: the policy's algorithm over the validated table."""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy
from privgate.core.ranking import Ranking
from privgate.tasks._caching import CACHED_STAGE
from privgate.tasks._progress import forward_progress


@task(name="anonymize", timeout_seconds=3600, **CACHED_STAGE)
def anonymize_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    shuffle_seed: int,
    cache_token: str,
    ranking: Ranking | None = None,
) -> stages.AnonymizedTable:
    """Generalize and suppress until the policy's privacy models hold.

    ``ranking`` (RFKA) is excluded from the cache key: ``cache_token`` covers the ranking's
    inputs and settings.
    """
    log = get_run_logger()
    log.info("anonymize: %s over %d rows ...", policy.algorithm.name.value, len(frame))
    with forward_progress():
        table = stages.anonymize(
            frame, policy, hierarchies, shuffle_seed=shuffle_seed, ranking=ranking
        )
    m = table.metrics
    details = table.result.details
    if "kept" in details:
        chosen = f"attributes {details['kept']} (suppressed: {details['suppressed_attributes']})"
    else:
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


@task(name="anonymize-tiers", timeout_seconds=3600, **CACHED_STAGE)
def anonymize_tiers_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    shuffle_seed: int,
    cache_token: str,
    ranking: Ranking | None = None,
) -> list[stages.AnonymizedTable]:
    """RFK-anonymity: the tiered releases E = 1..n, each k-anonymous over tiers 1..E."""
    log = get_run_logger()
    log.info(
        "anonymize: %d tiered releases over %d rows ...",
        len(set(ranking.tiers.values())),
        len(frame),
    )
    with forward_progress():
        tables = stages.anonymize_tiers(
            frame, policy, hierarchies, ranking, shuffle_seed=shuffle_seed
        )
    for table in tables:
        m = table.metrics
        log.info(
            "anonymize: tier %d covers %s; %d records suppressed, loss %.3f, %.2fs",
            table.tier,
            table.covered,
            m["suppressed"],
            m["loss"],
            m["seconds"],
        )
    return tables
