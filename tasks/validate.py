"""Validation task: the pandera schema derived from the policy."""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.logging import get_run_logger

from core.hierarchy import Hierarchy
from core.policy import ReleasePolicy
from validations.schema import validate_input


@task(name="validate")
def validate_task(
    frame: pd.DataFrame, policy: ReleasePolicy, hierarchies: dict[str, Hierarchy]
) -> pd.DataFrame:
    """Coerce and check the input; every failing cell is reported at once."""
    validated = validate_input(frame, policy, hierarchies)
    get_run_logger().info("validate: %d rows, %d columns match the policy schema", *validated.shape)
    return validated
