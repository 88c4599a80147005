"""A few thousand real Adult records, loaded once, for the ranking and tiered-release tests."""

from __future__ import annotations

import pandas as pd
import pytest
from adult_reference import ADULT_QI

from privgate.core.datasets import ADULT_COLUMNS, load_adult
from privgate.core.hierarchy import ARXHierarchy

#: The quasi-identifiers ARX ships hierarchies for, under their names in ``adult.data``.
ADULT_QIS = [column for column in ADULT_COLUMNS if column in ADULT_QI]


@pytest.fixture(scope="session")
def adult_qis() -> list[str]:
    return list(ADULT_QIS)


@pytest.fixture(scope="session")
def adult_full(shared_data) -> pd.DataFrame:
    """UCI ``adult.data`` without the records that miss a quasi-identifier (30,162 rows)."""
    return load_adult(shared_data("adult/adult.data")).dropna(subset=ADULT_QIS)


@pytest.fixture(scope="session")
def adult_sample(adult_full) -> pd.DataFrame:
    """4,000 records drawn with a fixed seed: enough for a forest, quick to fit."""
    return adult_full.sample(4000, random_state=0)


@pytest.fixture(scope="session")
def adult_hierarchies(shared_data) -> dict[str, ARXHierarchy]:
    return {
        q: ARXHierarchy.from_csv(q, shared_data(f"arx/adult_hierarchy_{q}.csv")) for q in ADULT_QIS
    }
