"""Heterogeneous Adult: merging occupations into sets loses nothing and invents nothing."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from privgate.core.datasets import load_adult
from privgate.core.dp.heterogeneous import expand_set_valued, heterogeneous_adult, merge_set_valued
from privgate.core.exceptions import SchemaValidationError


@pytest.fixture(scope="module")
def adult(shared_data) -> pd.DataFrame:
    return load_adult(shared_data("adult/adult.data"))


def _pairs(frame: pd.DataFrame, column: str) -> Counter:
    others = [c for c in frame.columns if c != column]
    return Counter(
        (tuple(row[:-1]), row[-1]) for row in frame[[*others, column]].itertuples(index=False)
    )


def test_heterogeneous_adult_merges_and_expands_back_to_the_same_multiset(adult):
    complete = adult.drop(columns=["fnlwgt"]).dropna().reset_index(drop=True)
    merged = heterogeneous_adult(adult)

    assert len(complete) == 30162
    assert len(merged) < len(complete)  # records merged
    assert all(isinstance(cell, frozenset) and cell for cell in merged["occupation"])
    assert (merged["occupation"].map(len) > 1).sum() > 1000  # many people get several jobs
    assert "fnlwgt" not in merged.columns
    # No information lost: every (other attributes, occupation) pair, with its multiplicity.
    expanded = expand_set_valued(merged, "occupation")
    assert len(expanded) == len(complete)
    assert _pairs(expanded, "occupation") == _pairs(complete, "occupation")


def test_merged_records_are_distinct_on_other_attributes_except_for_repeat_layers(adult):
    merged = heterogeneous_adult(adult)
    others = [c for c in merged.columns if c != "occupation"]
    dup = merged[merged.duplicated(others, keep=False)]
    # A group appears again only for repeated values (layer 2+): its sets then nest.
    for _, group in dup.groupby(others, sort=False):
        sets = list(group["occupation"])
        assert all(later <= earlier for earlier, later in zip(sets, sets[1:], strict=False))


def test_merge_layers_repeated_values_instead_of_dropping_them():
    df = pd.DataFrame(
        {"age": [30, 30, 30, 30, 41], "job": ["Sales", "Tech", "Sales", "Sales", "Sales"]}
    )
    merged = merge_set_valued(df, "job")
    assert merged["job"].tolist() == [
        frozenset({"Sales", "Tech"}),
        frozenset({"Sales"}),
        frozenset({"Sales"}),
        frozenset({"Sales"}),
    ]
    assert merged["age"].tolist() == [30, 30, 30, 41]
    assert _pairs(expand_set_valued(merged, "job"), "job") == _pairs(df, "job")


def test_merge_refuses_missing_values_naming_the_column():
    df = pd.DataFrame({"age": [30, None], "job": ["Sales", "Tech"]})
    with pytest.raises(SchemaValidationError, match="'age'"):
        merge_set_valued(df, "job")
    with pytest.raises(SchemaValidationError, match="'nope'"):
        merge_set_valued(df.dropna(), "nope")
