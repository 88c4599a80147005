"""validate_distinct_values: the schema's checks of a column, applied to its distinct values
(what the partitioned path holds of every row for the sensitive columns its models count)."""

from __future__ import annotations

import pytest
from adult_reference import ADULT_POLICY

from privgate.core.exceptions import SchemaValidationError
from privgate.core.policy import load_policy
from privgate.validations.schema import validate_distinct_values


def test_declared_values_pass_and_each_bad_one_is_named():
    policy = load_policy(ADULT_POLICY)
    validate_distinct_values({"salary-class": ["<=50K", ">50K", None]}, policy)
    with pytest.raises(SchemaValidationError) as raised:
        validate_distinct_values(
            {"salary-class": ["<=50K", "maybe", ">50K", "<=50K "]}, policy, where=", somewhere"
        )
    text = str(raised.value)
    assert "(2 problem(s), somewhere)" in text
    assert "'maybe'" in text and "'<=50K '" in text and "salary-class" in text


def test_a_missing_value_of_a_column_that_is_not_nullable_is_named():
    policy = load_policy(ADULT_POLICY).with_overrides(**{"columns.salary-class.nullable": False})
    with pytest.raises(SchemaValidationError, match="missing fails not_nullable"):
        validate_distinct_values({"salary-class": ["<=50K", None]}, policy)
