"""review8: an input the partitioned path cannot read is refused by name before Prefect starts
(it used to fail later, inside the flow, when dask opened the file)."""

from __future__ import annotations

import pytest
from adult_reference import ADULT_POLICY

from privgate.core.engine_choice import (
    PARTITIONED_MIN_ROWS_VARIABLE,
    choose_engine,
    partitioned_blockers,
)
from privgate.core.exceptions import PolicyError
from privgate.core.policy import load_policy


@pytest.fixture
def adult_policy(shared_data):
    shared_data("arx/adult.csv")
    return load_policy(ADULT_POLICY)


def test_a_csv_without_a_header_line_is_refused_above_the_threshold(adult_policy, monkeypatch):
    monkeypatch.setenv(PARTITIONED_MIN_ROWS_VARIABLE, "1000")  # Adult's 30,162 rows are above
    policy = adult_policy.with_overrides(**{"input.header": False})
    assert partitioned_blockers(policy) == [
        "input.header false (the partitioned path reads CSV with a header line)"
    ]
    with pytest.raises(PolicyError, match="cannot honour input.header false"):
        choose_engine(policy)
    assert choose_engine(policy, "memory").engine == "memory"
    assert partitioned_blockers(adult_policy) == []


def test_a_loader_format_forced_onto_the_partitioned_path_is_refused(adult_policy):
    policy = adult_policy.with_overrides(**{"input.format": "adult"})
    with pytest.raises(PolicyError, match="cannot honour input.format adult"):
        choose_engine(policy, "partitioned")
