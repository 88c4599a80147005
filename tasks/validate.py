"""Validation task: the pandera schema derived from the policy."""

from __future__ import annotations

import time

import pandas as pd
from prefect.logging import get_run_logger

from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy
from privgate.tasks._caching import stage_task
from privgate.validations.schema import validate_input


@stage_task(name="validate", timeout_seconds=1800)
def validate_task(
    frame: pd.DataFrame, policy: ReleasePolicy, hierarchies: dict[str, Hierarchy], cache_token: str
) -> pd.DataFrame:
    """Coerce and check the input; every failing cell is reported at once."""
    started = time.perf_counter()
    validated = validate_input(frame, policy, hierarchies)
    get_run_logger().info(
        "validate: %d rows, %d columns match the policy schema (%.2fs)",
        *validated.shape,
        time.perf_counter() - started,
    )
    return validated
