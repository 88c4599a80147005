"""Ranking task: how much each quasi-identifier reveals about the target (scikit-learn).

Random forests over a bounded sample take seconds to minutes, so the ranking is persisted and
keyed like the other stages; a rerun reuses it. Its result is attached to the run as a table
artifact (importance, tier, approximation degree per attribute) and goes into the report and the
manifest of the releases that use it.
"""

from __future__ import annotations

import re

import pandas as pd
from prefect.artifacts import create_table_artifact
from prefect.logging import get_run_logger

from privgate.core import stages
from privgate.core.policy import ReleasePolicy
from privgate.core.ranking import Ranking
from privgate.tasks._caching import stage_task
from privgate.tasks._progress import forward_progress


def ranking_artifact_key(dataset: str) -> str:
    """A Prefect artifact key (lowercase letters, digits, dashes) for the dataset's ranking."""
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", f"privgate-ranking-{dataset}".lower()))


@stage_task(name="rank-attributes", timeout_seconds=3600)
def rank_task(frame: pd.DataFrame, policy: ReleasePolicy, cache_token: str) -> Ranking:
    """Rank the quasi-identifiers by importance for ``ranking.target`` and group them in tiers."""
    log = get_run_logger()
    spec = policy.ranking
    log.info(
        "rank: %s importance of %d attributes for %r (%d trees%s) ...",
        spec.method,
        len(policy.quasi_identifiers),
        spec.target,
        spec.n_estimators,
        f", {spec.runs} runs" if spec.method == "drop_column" else "",
    )
    with forward_progress():
        ranking = stages.rank(frame, policy)
    rows = ranking.to_frame().to_dict(orient="records")
    create_table_artifact(
        table=rows,
        key=ranking_artifact_key(policy.dataset),
        description=f"{policy.dataset}: attribute importance for {spec.target!r} and tiers",
    )
    log.info(
        "rank: order %s; tiers %s (%.2fs)",
        ranking.order,
        ranking.tiers,
        ranking.seconds,
    )
    return ranking
