"""Data for the dask-path tests: ARX's Adult and a resampled, larger Adult-like table."""

from __future__ import annotations

from pathlib import Path

import pytest
from adult_reference import write_resampled_adult

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def scaled_adult(shared_data, tmp_path_factory) -> Path:
    """60,000 rows made as ../shared/tools/make_scaled_adult.py makes them (p = 0.3), with a few
    missing salary cells so that a missing sensitive value is exercised."""
    folder = tmp_path_factory.mktemp("scaled")
    source = shared_data("arx/adult.csv")
    return write_resampled_adult(
        source, folder / "adult_60k.csv", rows=60_000, seed=11, missing_salary=0.001
    )
