"""Tests for validations.schema: the pandera contract derived from the policy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pandera.pandas as pa
import pytest

from privgate.core.exceptions import SchemaValidationError
from privgate.core.hierarchy import Hierarchy
from privgate.core.ingest import read_table
from privgate.core.policy import ReleasePolicy
from privgate.core.stages import load_hierarchies
from privgate.validations.schema import build_input_schema, input_warnings, validate_input

SharedData = Callable[[str], Path]
REPO = Path(__file__).resolve().parents[2]

POLICY = ReleasePolicy.model_validate(
    {
        "dataset": "toy",
        "input": {"path": "toy.csv"},
        "columns": {
            "age": {
                "role": "quasi_identifier",
                "type": "integer",
                "minimum": 0,
                "maximum": 120,
                "hierarchy": {"kind": "interval", "bands": [5, 10]},
            },
            "sex": {
                "role": "quasi_identifier",
                "hierarchy": {"kind": "taxonomy", "tree": {"Person": ["Male", "Female"]}},
            },
            "hours": {"role": "insensitive", "type": "integer", "minimum": 1, "maximum": 99},
            "weight": {"role": "insensitive", "type": "float"},
            "disease": {"role": "sensitive", "categories": ["flu", "cold"]},
        },
        "privacy": {"k": 2},
    }
)


@pytest.fixture(scope="module")
def hierarchies() -> dict[str, Hierarchy]:
    return load_hierarchies(POLICY)


def text_frame(**columns: list[str | None]) -> pd.DataFrame:
    """A frame as ingest returns it: every cell text."""
    return pd.DataFrame({name: pd.array(cells, dtype="string") for name, cells in columns.items()})


def good_frame() -> pd.DataFrame:
    return text_frame(
        sex=["Male", "Female", "Male"],
        age=["30", "41", "77"],
        hours=["40", None, "20"],
        weight=["70.5", "60", None],
        disease=["flu", "cold", None],
    )


def test_valid_frame_is_coerced_and_reordered(hierarchies: dict[str, Hierarchy]) -> None:
    df = validate_input(good_frame(), POLICY, hierarchies)
    assert list(df.columns) == ["age", "sex", "hours", "weight", "disease"]  # policy order
    assert df["age"].dtype == "Int64"
    assert df["hours"].dtype == "Int64"
    assert df["weight"].dtype == "Float64"
    assert df["age"].tolist() == [30, 41, 77]
    assert df["weight"].tolist()[:2] == [70.5, 60.0]
    assert df.loc[1, "hours"] is pd.NA  # insensitive columns may be missing
    assert df["sex"].tolist() == ["Male", "Female", "Male"]


def test_build_input_schema_is_strict_and_coercing(hierarchies: dict[str, Hierarchy]) -> None:
    schema = build_input_schema(POLICY, hierarchies)
    assert isinstance(schema, pa.DataFrameSchema)
    assert schema.strict is True
    assert set(schema.columns) == set(POLICY.columns)
    assert all(column.coerce for column in schema.columns.values())
    assert not schema.columns["age"].nullable  # quasi-identifiers default to non-null
    assert schema.columns["hours"].nullable


def test_hierarchy_domain_only_checked_when_hierarchies_are_given() -> None:
    frame = good_frame()
    frame["sex"] = pd.array(["Male", "Unknown", "Female"], dtype="string")
    validate_input(frame, POLICY)  # no hierarchies: any text is accepted
    with pytest.raises(SchemaValidationError, match="'Unknown'"):
        validate_input(frame, POLICY, load_hierarchies(POLICY))


def test_all_failures_are_reported_at_once(hierarchies: dict[str, Hierarchy]) -> None:
    bad = text_frame(
        age=["30", "abc", "45", "50"],  # row 1: wrong type
        sex=["Male", "Female", "Other", None],  # row 2: outside the hierarchy, row 3: null QI
        hours=["40", "20", "30", "200"],  # row 3: out of range
        weight=["1", "2", "3", "4"],
        nickname=["a", "b", "c", "d"],  # unexpected column
        # 'disease' is missing
    )
    with pytest.raises(SchemaValidationError) as info:
        validate_input(bad, POLICY, hierarchies)
    error = info.value
    message = str(error)

    cells = {(f["column"], f["index"]) for f in error.failures if f["index"] is not None}
    assert cells == {("age", 1), ("sex", 2), ("sex", 3), ("hours", 3)}
    table_level = {f["check"]: f["failure_case"] for f in error.failures if f["index"] is None}
    assert table_level == {"column_in_schema": "nickname", "column_in_dataframe": "disease"}
    assert len(error.failures) == 6  # one entry per failing cell, no echoes
    assert "(6 problem(s))" in message

    by_cell = {(f["column"], f["index"]): f for f in error.failures}
    assert by_cell[("age", 1)]["failure_case"] == "abc"
    assert by_cell[("age", 1)]["check"].startswith("coerce_dtype")
    assert by_cell[("sex", 2)]["failure_case"] == "Other"
    assert by_cell[("sex", 3)]["check"] == "not_nullable"
    assert by_cell[("hours", 3)]["check"] == "value <= 99"

    for fragment in (
        "column 'age' at row 1: 'abc'",
        "column 'sex' at row 2: 1 value(s) not covered by its hierarchy (policy taxonomy) in 1 "
        "row(s): 'Other' ('Other': 1 row(s), first at row 2)",
        "column 'sex' at row 3",
        "not_nullable",
        "column 'hours' at row 3: '200' fails value <= 99",
        "unexpected column 'nickname'",
        "missing column 'disease'",
    ):
        assert fragment in message


def test_range_and_declared_categories(hierarchies: dict[str, Hierarchy]) -> None:
    frame = good_frame()
    frame["age"] = pd.array(["-1", "41", "77"], dtype="string")
    frame["disease"] = pd.array(["flu", "plague", None], dtype="string")
    with pytest.raises(SchemaValidationError) as info:
        validate_input(frame, POLICY, hierarchies)
    assert {(f["column"], f["index"]) for f in info.value.failures} == {
        ("age", 0),
        ("disease", 1),
    }
    assert "value >= 0" in str(info.value)
    assert "'plague'" in str(info.value)


def test_message_quotes_at_most_twenty_failures(hierarchies: dict[str, Hierarchy]) -> None:
    frame = text_frame(
        age=["x"] * 25,
        sex=["Male"] * 25,
        hours=[None] * 25,
        weight=[None] * 25,
        disease=[None] * 25,
    )
    with pytest.raises(SchemaValidationError) as info:
        validate_input(frame, POLICY, hierarchies)
    assert len(info.value.failures) == 25
    assert "... and 5 more" in str(info.value)


def test_real_arx_adult_passes_its_policy(adult_policy) -> None:
    policy = adult_policy  # the fixture skips (or fails in CI) when the data is absent
    hierarchies = load_hierarchies(policy)
    raw = read_table(policy.input)
    df = validate_input(raw, policy, hierarchies)
    assert len(df) == len(raw) == 30_162
    assert list(df.columns) == list(policy.columns)
    assert df["age"].dtype == "Int64"
    assert df[policy.quasi_identifiers].notna().all().all()
    assert set(df["salary-class"].unique()) == {"<=50K", ">50K"}


def test_values_missing_from_a_hierarchy_are_one_line_per_column(tmp_path: Path) -> None:
    path = tmp_path / "religion.csv"
    path.write_text("Catholic;Christian;*\nProtestant;Christian;*\n", encoding="utf-8")
    policy = ReleasePolicy.model_validate(
        {
            "dataset": "toy",
            "input": {"path": "toy.csv"},
            "columns": {
                "religion": {"role": "quasi_identifier",
                             "hierarchy": {"kind": "arx", "path": str(path)}},
            },
            "privacy": {"k": 2},
        }
    )  # fmt: skip
    values = ["Catholic"] * 5 + [f"faith{i % 7}" for i in range(70)]
    with pytest.raises(SchemaValidationError) as info:
        validate_input(text_frame(religion=values), policy, load_hierarchies(policy))
    message = str(info.value)
    assert message.count("column 'religion'") == 1
    assert "7 value(s) not covered by its hierarchy" in message
    assert str(path) in message and "in 70 row(s)" in message
    assert "and 2 more" in message and "'faith0': 10 row(s), first at row 5" in message
    assert len(message) < 700
    assert len(info.value.failures) == 70  # every cell stays in the structured failures


def test_categories_compare_in_unicode_nfc(hierarchies: dict[str, Hierarchy]) -> None:
    import unicodedata

    policy = POLICY.with_overrides(**{"columns.disease.categories": ["grippe", "rhume épais"]})
    frame = good_frame()
    nfd = unicodedata.normalize("NFD", "rhume épais")
    frame["disease"] = pd.array(["grippe", nfd, None], dtype="string")
    validate_input(frame, policy, hierarchies)


def test_date_columns_are_checked_as_iso() -> None:
    policy = ReleasePolicy.model_validate(
        {
            "dataset": "toy",
            "input": {"path": "toy.csv"},
            "columns": {
                "admitted": {"role": "quasi_identifier", "type": "date",
                             "hierarchy": {"kind": "date"}},
                "discharged": {"role": "insensitive", "type": "datetime"},
            },
            "privacy": {"k": 2},
        }
    )  # fmt: skip
    good = text_frame(admitted=["2024-03-15", "2023-01-02"],
                      discharged=["2024-03-19T10:00:00", "2023-01-05 08:30"])  # fmt: skip
    validate_input(good, policy, load_hierarchies(policy))
    bad = text_frame(admitted=["15/03/2024", "2023-01-02T10:00"],
                     discharged=["yesterday", None])  # fmt: skip
    with pytest.raises(SchemaValidationError) as info:
        validate_input(bad, policy, load_hierarchies(policy))
    assert {(f["column"], f["index"]) for f in info.value.failures} == {
        ("admitted", 0),
        ("admitted", 1),
        ("discharged", 0),
    }
    assert "ISO date (YYYY-MM-DD)" in str(info.value)


def test_nullable_quasi_identifier_validates_and_an_empty_one_warns(
    hierarchies: dict[str, Hierarchy],
) -> None:
    policy = POLICY.with_overrides(**{"columns.sex.nullable": True})
    frame = good_frame()
    frame["sex"] = pd.array(["Male", None, "Female"], dtype="string")
    validate_input(frame, policy, hierarchies)
    assert input_warnings(frame, policy) == []
    frame["sex"] = pd.array([None, None, None], dtype="string")
    validate_input(frame, policy, hierarchies)
    assert input_warnings(frame, policy) == [
        "column 'sex' (quasi_identifier) is missing in all 3 rows: check the export and the "
        "policy's column mapping; it carries no information"
    ]
