"""Anonymization task: the policy's algorithm over the validated table."""

from __future__ import annotations

import pandas as pd
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.policy import ReleasePolicy
from privgate.core.ranking import Ranking
from privgate.tasks._caching import stage_task
from privgate.tasks._progress import forward_progress


@stage_task(name="anonymize", timeout_seconds=3600)
def anonymize_task(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    setup: SearchSetup,
    cache_token: str,
    ranking: Ranking | None = None,
) -> list[stages.AnonymizedTable]:
    """Transform the table until the policy's privacy models hold: one release table, or one
    per tier of a tiered policy (:func:`privgate.core.stages.anonymize`).

    ``policy``, ``setup`` and ``ranking`` are excluded from the cache key: ``cache_token``
    covers the policy sections, hierarchy files and ranking settings they come from (the
    policy's dataset names the folder the result is kept in).
    """
    log = get_run_logger()
    log.info("anonymize: %s over %d rows ...", setup.algorithm.value, len(frame))
    with forward_progress():
        tables = stages.anonymize(frame, setup, ranking)
    for table in tables:
        m = table.metrics
        log.info(
            "anonymize: %s%s: %s; %d records suppressed, loss %.3f, %.2fs",
            m["algorithm"],
            "" if table.tier is None else f" tier {table.tier} (covers {table.covered})",
            ", ".join(f"{q} {how}" for q, how in table.transformation.items()),
            m["suppressed"],
            m["loss"],
            m["seconds"],
        )
    return tables
