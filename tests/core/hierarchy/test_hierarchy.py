"""Tests for core.hierarchy: ARX files, intervals, masking, taxonomies and build_hierarchy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy import (
    SUPPRESSED,
    ARXHierarchy,
    IntervalHierarchy,
    MaskingHierarchy,
    build_hierarchy,
    taxonomy_hierarchy,
    value_key,
)
from privgate.core.policy import ColumnSpec

SharedData = Callable[[str], Path]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# ARX hierarchy files (the real ones shipped with ARX)
# ---------------------------------------------------------------------------------------------

ARX_HEIGHTS = {
    "age": 4,
    "education": 3,
    "sex": 1,
    "native-country": 2,
    "marital-status": 2,
    "occupation": 2,
    "race": 1,
    "workclass": 2,
    "salary-class": 1,
}


@pytest.mark.parametrize(("column", "height"), sorted(ARX_HEIGHTS.items()))
def test_arx_files_load_with_their_height(
    shared_data: SharedData, column: str, height: int
) -> None:
    path = shared_data(f"arx/adult_hierarchy_{column}.csv")
    hierarchy = ARXHierarchy.from_csv(column, path)
    assert hierarchy.height == height
    assert hierarchy.column == column
    assert hierarchy.source == str(path)
    assert hierarchy.domain
    top = hierarchy.generalize(hierarchy.domain)[:, -1]
    assert set(top) == {SUPPRESSED}


def test_arx_generalizes_values(shared_data: SharedData) -> None:
    age = ARXHierarchy.from_csv("age", shared_data("arx/adult_hierarchy_age.csv"))
    labels = age.generalize([1, 39, "39", 39.0])
    assert labels.shape == (4, 5)
    assert labels[0].tolist() == ["1", "0-4", "0-9", "0-19", "*"]
    assert labels[1].tolist()[0] == "39"
    assert labels[1].tolist()[-1] == "*"
    # 39, '39' and 39.0 are one value: the key form drops the decimal point.
    assert labels[1].tolist() == labels[2].tolist() == labels[3].tolist()

    education = ARXHierarchy.from_csv("education", shared_data("arx/adult_hierarchy_education.csv"))
    assert education.generalize(["Bachelors"]).tolist() == [
        ["Bachelors", "Undergraduate", "Higher education", "*"]
    ]
    sex = ARXHierarchy.from_csv("sex", shared_data("arx/adult_hierarchy_sex.csv"))
    assert sex.generalize(["Male", "Female"]).tolist() == [["Male", "*"], ["Female", "*"]]
    assert sorted(sex.domain) == ["Female", "Male"]


def test_arx_uncovered_value_names_column_and_value(shared_data: SharedData) -> None:
    sex = ARXHierarchy.from_csv("sex", shared_data("arx/adult_hierarchy_sex.csv"))
    with pytest.raises(HierarchyError) as info:
        sex.generalize(["Male", "Unknown"])
    message = str(info.value)
    assert "'sex'" in message
    assert "'Unknown'" in message
    assert "1 value(s) not covered" in message


def test_arx_from_csv_strips_bom_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_bytes(b"\xef\xbb\xbfa;x;*\n\nb;x;*\n")
    hierarchy = ARXHierarchy.from_csv("c", path)
    assert hierarchy.domain == ["a", "b"]
    assert hierarchy.height == 2


def test_arx_custom_delimiter(tmp_path: Path) -> None:
    path = write(tmp_path / "h.csv", "a,x,*\nb,y,*\n")
    hierarchy = ARXHierarchy.from_csv("c", path, delimiter=",")
    assert hierarchy.generalize(["b"]).tolist() == [["b", "y", "*"]]


def test_arx_ragged_file_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "ragged.csv", "a;x;*\nb;x;*\nc;*\n")
    with pytest.raises(HierarchyError) as info:
        ARXHierarchy.from_csv("code", path)
    message = str(info.value)
    assert "line 3" in message
    assert "'code'" in message
    assert "unequal depth" in message
    assert str(path) in message


def test_arx_duplicate_value(tmp_path: Path) -> None:
    path = write(tmp_path / "dup.csv", "a;x;*\nb;x;*\na;y;*\n")
    with pytest.raises(HierarchyError, match=r"line 3: value 'a' appears twice"):
        ARXHierarchy.from_csv("code", path)


def test_arx_needs_a_single_root(tmp_path: Path) -> None:
    path = write(tmp_path / "roots.csv", "a;x;*\nb;y;ANY\n")
    with pytest.raises(HierarchyError, match="one root"):
        ARXHierarchy.from_csv("code", path)


def test_arx_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.csv", "\n\n")
    with pytest.raises(HierarchyError, match="empty"):
        ARXHierarchy.from_csv("code", path)


def test_arx_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HierarchyError, match=r"hierarchy file for column 'code' not found"):
        ARXHierarchy.from_csv("code", tmp_path / "absent.csv")


def test_arx_file_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"caf\xe9;*\n")
    with pytest.raises(HierarchyError, match="cannot read hierarchy file"):
        ARXHierarchy.from_csv("code", path)


def test_value_key() -> None:
    assert value_key(39) == "39"
    assert value_key(39.0) == "39"
    assert value_key(np.int64(39)) == "39"
    assert value_key(np.float64(39.0)) == "39"
    assert value_key(39.5) == "39.5"
    assert value_key("Male") == "Male"


# ---------------------------------------------------------------------------------------------
# Interval hierarchies
# ---------------------------------------------------------------------------------------------


def test_interval_integer_bands_use_arx_labels() -> None:
    hierarchy = IntervalHierarchy("age", [5, 10, 20], minimum=0, maximum=100)
    assert hierarchy.height == 4
    assert hierarchy.generalize([37, 40, 0, 100]).tolist() == [
        ["37", "35-39", "30-39", "20-39", "*"],
        ["40", "40-44", "40-49", "40-59", "*"],
        ["0", "0-4", "0-9", "0-19", "*"],
        ["100", "100-104", "100-109", "100-119", "*"],
    ]


def test_interval_start_anchors_the_bands() -> None:
    hierarchy = IntervalHierarchy("education-num", [4, 8], start=1)
    assert hierarchy.generalize([1, 4, 5, 16]).tolist() == [
        ["1", "1-4", "1-8", "*"],
        ["4", "1-4", "1-8", "*"],
        ["5", "5-8", "1-8", "*"],
        ["16", "13-16", "9-16", "*"],
    ]


def test_interval_fractional_bands_are_half_open() -> None:
    hierarchy = IntervalHierarchy("dose", [2.5, 5])
    assert hierarchy.generalize([3, 4.9, 5, -1]).tolist() == [
        ["3", "[2.5, 5)", "[0, 5)", "*"],
        ["4.9", "[2.5, 5)", "[0, 5)", "*"],
        ["5", "[5, 7.5)", "[5, 10)", "*"],
        ["-1", "[-2.5, 0)", "[-5, 0)", "*"],
    ]


def test_interval_accepts_numeric_text() -> None:
    hierarchy = IntervalHierarchy("age", [10])
    assert hierarchy.generalize(["42", "42.0"]).tolist() == [
        ["42", "40-49", "*"],
        ["42.0", "40-49", "*"],
    ]


@pytest.mark.parametrize("value", [-1, 101, 1000])
def test_interval_out_of_range(value: int) -> None:
    hierarchy = IntervalHierarchy("age", [5, 10], minimum=0, maximum=100)
    with pytest.raises(HierarchyError) as info:
        hierarchy.generalize([50, value])
    message = str(info.value)
    assert "'age'" in message
    assert repr(value) in message
    assert "outside the hierarchy's range" in message


@pytest.mark.parametrize("value", ["abc", "", "12a"])
def test_interval_non_numeric(value: object) -> None:
    hierarchy = IntervalHierarchy("age", [5])
    with pytest.raises(HierarchyError, match="is not a number") as info:
        hierarchy.generalize([value])
    assert "'age'" in str(info.value)


@pytest.mark.parametrize("missing", [None, float("nan"), np.nan])
def test_a_missing_cell_is_a_leaf_under_the_root(missing: object) -> None:
    """Missing stays missing below the top level and becomes '*' at the top."""
    table = IntervalHierarchy("age", [5]).generalize([37, missing])
    assert table.tolist() == [["37", "35-39", "*"], [None, None, "*"]]


def test_interval_integer_bands_refuse_fractions() -> None:
    with pytest.raises(HierarchyError, match="not an integer"):
        IntervalHierarchy("age", [5, 10]).generalize([3.5])


# ---------------------------------------------------------------------------------------------
# Masking hierarchies
# ---------------------------------------------------------------------------------------------


def test_masking_full() -> None:
    hierarchy = MaskingHierarchy("zip", 5)
    assert hierarchy.height == 5
    assert hierarchy.generalize(["12345", 54321]).tolist() == [
        ["12345", "1234*", "123**", "12***", "1****", "*"],
        ["54321", "5432*", "543**", "54***", "5****", "*"],
    ]


def test_masking_fewer_levels_adds_a_root() -> None:
    hierarchy = MaskingHierarchy("zip", 5, levels=2)
    assert hierarchy.height == 3
    assert hierarchy.generalize(["12345"]).tolist() == [["12345", "1234*", "123**", "*"]]


def test_masking_custom_mask_char() -> None:
    hierarchy = MaskingHierarchy("zip", 3, levels=2, mask_char="#")
    assert hierarchy.generalize(["123"]).tolist() == [["123", "12#", "1##", "*"]]


@pytest.mark.parametrize("code", ["1234", "123456", 1234])
def test_masking_wrong_length(code: object) -> None:
    with pytest.raises(HierarchyError) as info:
        MaskingHierarchy("zip", 5).generalize(["12345", code])
    message = str(info.value)
    assert "'zip'" in message
    assert repr(str(code)) in message
    assert "expects 5" in message


# ---------------------------------------------------------------------------------------------
# Taxonomies
# ---------------------------------------------------------------------------------------------


def test_taxonomy_two_levels() -> None:
    tree = {
        "Higher": {"Graduate": ["Masters", "Doctorate"], "College": ["Bachelors"]},
        "Basic": {"High-school": ["HS-grad", "11th"]},
    }
    hierarchy = taxonomy_hierarchy("education", tree)
    assert isinstance(hierarchy, ARXHierarchy)
    assert hierarchy.height == 3
    assert hierarchy.domain == ["Masters", "Doctorate", "Bachelors", "HS-grad", "11th"]
    assert hierarchy.generalize(["Doctorate", "11th"]).tolist() == [
        ["Doctorate", "Graduate", "Higher", "*"],
        ["11th", "High-school", "Basic", "*"],
    ]


def test_taxonomy_unequal_depth() -> None:
    tree = {"Higher": {"Graduate": ["Masters"]}, "Basic": ["HS-grad"]}
    with pytest.raises(HierarchyError, match="unequal depth") as info:
        taxonomy_hierarchy("education", tree)
    assert "'education'" in str(info.value)


def test_taxonomy_uncovered_value() -> None:
    hierarchy = taxonomy_hierarchy("sex", {"Person": ["Male", "Female"]})
    with pytest.raises(HierarchyError, match=r"'sex'.*'Other'"):
        hierarchy.generalize(["Other"])


@pytest.mark.parametrize(
    ("tree", "fragment"),
    [
        ({"Person": []}, "empty group 'Person'"),
        ({"Person": {}}, "empty group"),
        ({"Person": "Male"}, "expected a mapping or a list"),
    ],
)
def test_taxonomy_malformed(tree: dict, fragment: str) -> None:
    with pytest.raises(HierarchyError, match=fragment):
        taxonomy_hierarchy("sex", tree)


def test_taxonomy_duplicate_leaf() -> None:
    with pytest.raises(HierarchyError, match="appears twice"):
        taxonomy_hierarchy("sex", {"A": ["Male"], "B": ["Male"]})


# ---------------------------------------------------------------------------------------------
# build_hierarchy: one per spec kind
# ---------------------------------------------------------------------------------------------


def test_build_arx(tmp_path: Path) -> None:
    path = write(tmp_path / "h.csv", "a|x|*\nb|x|*\n")
    spec = ColumnSpec.model_validate(
        {"role": "quasi_identifier", "hierarchy": {"kind": "arx", "path": path, "delimiter": "|"}}
    )
    hierarchy = build_hierarchy("code", spec)
    assert isinstance(hierarchy, ARXHierarchy)
    assert hierarchy.height == 2
    assert hierarchy.generalize(["a"]).tolist() == [["a", "x", "*"]]


def test_build_interval_uses_the_declared_range() -> None:
    spec = ColumnSpec.model_validate(
        {
            "role": "quasi_identifier",
            "type": "integer",
            "minimum": 17,
            "maximum": 90,
            "hierarchy": {"kind": "interval", "bands": [5, 10], "start": 0},
        }
    )
    hierarchy = build_hierarchy("age", spec)
    assert isinstance(hierarchy, IntervalHierarchy)
    assert hierarchy.height == 3
    assert hierarchy.generalize([17]).tolist() == [["17", "15-19", "10-19", "*"]]
    with pytest.raises(HierarchyError, match="outside"):
        hierarchy.generalize([16])


def test_build_masking() -> None:
    spec = ColumnSpec.model_validate(
        {
            "role": "quasi_identifier",
            "type": "string",
            "hierarchy": {"kind": "masking", "length": 4, "levels": 2, "mask_char": "x"},
        }
    )
    hierarchy = build_hierarchy("zip", spec)
    assert isinstance(hierarchy, MaskingHierarchy)
    assert hierarchy.generalize(["1234"]).tolist() == [["1234", "123x", "12xx", "*"]]


def test_build_taxonomy() -> None:
    spec = ColumnSpec.model_validate(
        {
            "role": "quasi_identifier",
            "hierarchy": {"kind": "taxonomy", "tree": {"Person": ["Male", "Female"]}},
        }
    )
    hierarchy = build_hierarchy("sex", spec)
    assert isinstance(hierarchy, ARXHierarchy)
    assert hierarchy.height == 2
    assert hierarchy.generalize(["Female"]).tolist() == [["Female", "Person", "*"]]


def test_build_without_hierarchy_is_a_type_error() -> None:
    spec = ColumnSpec.model_validate({"role": "insensitive"})
    with pytest.raises(TypeError, match="'hours'"):
        build_hierarchy("hours", spec)
