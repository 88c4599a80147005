"""Hierarchies checked when they load, Unicode NFC, missing cells, and the bands/date builders."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from privgate.core.exceptions import HierarchyError, PolicyError
from privgate.core.hierarchy import (
    ARXHierarchy,
    BandsHierarchy,
    DateHierarchy,
    build_hierarchy,
    taxonomy_hierarchy,
    value_key,
)
from privgate.core.policy import ColumnSpec, _validate

# ---------------------------------------------------------------------------------------------
# ARX files must be trees
# ---------------------------------------------------------------------------------------------


def test_arx_file_with_two_parents_names_file_line_and_value(tmp_path: Path) -> None:
    path = tmp_path / "diagnosis.csv"
    # 'Flu' sits under 'Respiratory' on line 1 and under 'Infectious' on line 4 (line 3 blank).
    path.write_text(
        "flu-a;Flu;Respiratory;*\nasthma;Asthma;Respiratory;*\n\nflu-b;Flu;Infectious;*\n",
        encoding="utf-8",
    )
    with pytest.raises(HierarchyError) as info:
        ARXHierarchy.from_csv("diagnosis", path)
    message = str(info.value)
    assert str(path) in message
    assert "line 4" in message and "(line 1)" in message
    assert "'Flu'" in message and "two parents" in message


def test_taxonomy_group_under_two_parents_is_refused() -> None:
    with pytest.raises(HierarchyError, match="'X' at level 1 has two parents"):
        taxonomy_hierarchy("c", {"A": {"X": ["a"]}, "B": {"X": ["b"]}})


def test_real_arx_adult_hierarchies_are_trees(shared_data) -> None:
    for column in ("age", "education", "native-country", "occupation", "workclass"):
        ARXHierarchy.from_csv(column, shared_data(f"arx/adult_hierarchy_{column}.csv"))


# ---------------------------------------------------------------------------------------------
# Unicode: values compared in NFC
# ---------------------------------------------------------------------------------------------


def test_nfd_data_matches_an_nfc_hierarchy(tmp_path: Path) -> None:
    nfc = unicodedata.normalize("NFC", "Sèvres")
    nfd = unicodedata.normalize("NFD", "Sèvres")
    assert nfc != nfd
    path = tmp_path / "town.csv"
    path.write_text(f"{nfc};Île-de-France;*\nLyon;Rhône;*\n", encoding="utf-8")
    hierarchy = ARXHierarchy.from_csv("town", path)
    table = hierarchy.generalize([nfd, "Lyon"])
    assert table[0].tolist() == [nfc, "Île-de-France", "*"]
    assert value_key(nfd) == nfc


def test_one_value_spelled_in_nfc_and_nfd_is_refused_by_name(tmp_path: Path) -> None:
    """Both spellings in one column: the search would count one value, the release two; both
    engines failed inside the search with an index error (review11 F2)."""
    nfc = unicodedata.normalize("NFC", "Sèvres")
    nfd = unicodedata.normalize("NFD", "Sèvres")
    path = tmp_path / "town.csv"
    path.write_text(f"{nfc};Île-de-France;*\nLyon;Rhône;*\n", encoding="utf-8")
    hierarchy = ARXHierarchy.from_csv("town", path)
    with pytest.raises(HierarchyError, match=r"column 'town'.*S\\xe8vres.*Se\\u0300vres"):
        hierarchy.generalize([nfc, None, nfd, "Lyon"])
    assert hierarchy.generalize([nfd, None, "Lyon"])[0].tolist() == [nfc, "Île-de-France", "*"]
    assert len(hierarchy.generalize([nfd, nfd, "Lyon"])) == 3  # one spelling twice: a lookup


@pytest.mark.parametrize("engine", ["privgate anonymize", "row engine"])
def test_both_engines_refuse_two_spellings_of_one_value(tmp_path: Path, engine: str) -> None:
    from privgate.core.anonymize import SearchInput, full_domain_setup, make_algorithm
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.policy import load_policy
    from privgate.core.textcsv import read_text_columns

    nfc, nfd = unicodedata.normalize("NFC", "é"), unicodedata.normalize("NFD", "é")
    rows = [nfc, nfc, nfd, nfd, "x", "x"]
    (tmp_path / "data.csv").write_text("a;s\n" + "".join(f"{v};s1\n" for v in rows))
    (tmp_path / "ha.csv").write_text(f"{nfc};G;*\nx;G;*\n")
    (tmp_path / "policy.yaml").write_text(
        "dataset: nfd\n"
        "input: {path: data.csv, format: csv, delimiter: ';', header: true}\n"
        "columns:\n"
        "  a: {role: quasi_identifier, hierarchy: {kind: arx, path: ha.csv}}\n"
        "  s: {role: sensitive}\n"
        "privacy: {k: 2, suppression_limit: 0.0}\n"
        "algorithm: {name: optimal, metric: loss}\n"
        "output: {directory: out, format: csv}\n"
    )
    policy = load_policy(tmp_path / "policy.yaml")
    with pytest.raises(HierarchyError, match=r"column 'a'.*(\\xe9.*e\\u0301|e\\u0301.*\\xe9)"):
        if engine == "privgate anonymize":
            anonymize_csv(policy, tmp_path / "release.csv")
        else:
            setup = full_domain_setup(policy, "test")
            text = read_text_columns(tmp_path / "data.csv", ";", "utf-8", True, [""])
            make_algorithm(setup).anonymize(SearchInput.prepare(text, setup))
    assert not (tmp_path / "release.csv").exists()


def test_uncovered_values_quoted_at_most_five_with_escapes(tmp_path: Path) -> None:
    path = tmp_path / "town.csv"
    path.write_text("Lyon;FR;*\n", encoding="utf-8")
    hierarchy = ARXHierarchy.from_csv("town", path)
    values = [f"town{i}" for i in range(8)] + ["Lyon\u00a0"]
    with pytest.raises(HierarchyError) as info:
        hierarchy.generalize(values)
    message = str(info.value)
    assert "\n" not in message and len(message) < 400
    assert "9 value(s)" in message and "and 4 more" in message
    assert str(path) in message
    assert "'Lyon\\xa0'" in message  # the non-breaking space is visible


# ---------------------------------------------------------------------------------------------
# Missing cells
# ---------------------------------------------------------------------------------------------


def test_arx_row_for_the_empty_value_places_missing_cells(tmp_path: Path) -> None:
    path = tmp_path / "religion.csv"
    path.write_text("Catholic;Christian;*\n;Unknown;*\nNone;Unknown;*\n", encoding="utf-8")
    hierarchy = ARXHierarchy.from_csv("religion", path)
    assert hierarchy.places_missing
    assert "" not in hierarchy.domain
    assert hierarchy.generalize([None, "None"]).tolist() == [
        [None, "Unknown", "*"],
        ["None", "Unknown", "*"],
    ]


def test_missing_cell_default_is_a_leaf_under_the_root() -> None:
    h = taxonomy_hierarchy("m", {"Married": ["Wed"], "Single": ["Never"]})
    assert not h.places_missing
    table = h.generalize([float("nan"), "Wed"])
    assert table.tolist() == [[None, None, "*"], ["Wed", "Married", "*"]]


# ---------------------------------------------------------------------------------------------
# Bands: uneven edges, top- and bottom-coding, overlap and gap errors
# ---------------------------------------------------------------------------------------------


def _column(hierarchy: dict, **extra) -> dict:
    return {"role": "quasi_identifier", "type": "integer", "hierarchy": hierarchy, **extra}


def _policy(column: dict) -> dict:
    return {
        "dataset": "toy",
        "input": {"path": "x.csv"},
        "columns": {"age": column},
        "privacy": {"k": 2},
    }


def test_bands_issue_example() -> None:
    spec = ColumnSpec.model_validate(_column({"kind": "bands", "edges": [0, 18, 45, 65, 90]}))
    hierarchy = build_hierarchy("age", spec)
    assert isinstance(hierarchy, BandsHierarchy)
    assert hierarchy.labels_of_level(1) == ["<18", "18-44", "45-64", "65-89", "90+"]
    table = hierarchy.generalize([0, 17, 18, 44, 45, 89, 90, 117])
    assert table[:, 1].tolist() == ["<18", "<18", "18-44", "18-44", "45-64", "65-89", "90+", "90+"]
    assert table[:, 2].tolist() == ["*"] * 8


def test_bands_coarser_levels_nest_and_coding_can_be_turned_off() -> None:
    h = BandsHierarchy(
        "age", [[0, 18, 45, 65, 90], [0, 45, 90]], integer=True, bottom_coding=False,
        top_coding=False,
    )  # fmt: skip
    assert h.labels_of_level(1) == ["0-17", "18-44", "45-64", "65-89"]
    assert h.labels_of_level(2) == ["0-44", "45-89"]
    assert h.generalize([50]).tolist() == [["50", "45-64", "45-89", "*"]]
    with pytest.raises(HierarchyError, match="value 90 is in no band"):
        h.generalize([90])
    with pytest.raises(HierarchyError, match="value -1 is in no band"):
        h.generalize([-1])


def test_float_bands_are_half_open() -> None:
    h = BandsHierarchy("bmi", [[0, 18.5, 25, 30]], integer=False)
    assert h.labels_of_level(1) == ["<18.5", "[18.5, 25)", "[25, 30)", "30+"]


@pytest.mark.parametrize(
    ("hierarchy", "extra", "fragment"),
    [
        ({"edges": [0, 45, 18]}, {}, "edges must increase; 18 after 45 would make bands overlap"),
        ({"edges": [0, 18, 45], "coarser": [[0, 30, 45]]}, {},
         "edge 30 lies inside the band [18, 45)"),
        ({"edges": [0, 18, 45], "coarser": [[18, 45]]}, {}, "(a gap)"),
        ({"edges": [0, 18, 45], "top_coding": False, "coarser": [[0, 18]]}, {}, "(a gap)"),
        ({"edges": [18, 45, 65]}, {"minimum": 0}, "values from 0 to 18 would be in no band"),
        ({"edges": [0, 45, 65], "top_coding": False}, {"maximum": 90},
         "values from 65 up would be in no band"),
        ({"edges": [0, 17.5, 45]}, {}, "whole-number edges"),
    ],
)  # fmt: skip
def test_band_overlaps_and_gaps_are_policy_errors(hierarchy, extra, fragment) -> None:
    column = _column({"kind": "bands", **hierarchy}, **extra)
    with pytest.raises(PolicyError) as info:
        _validate(_policy(column), "test")
    assert "columns.age" in str(info.value)
    assert fragment in str(info.value)


def test_bands_need_a_numeric_column() -> None:
    column = {"role": "quasi_identifier", "hierarchy": {"kind": "bands", "edges": [0, 1]}}
    with pytest.raises(PolicyError, match="needs a numeric type"):
        _validate(_policy(column), "test")


# ---------------------------------------------------------------------------------------------
# Dates
# ---------------------------------------------------------------------------------------------


def test_date_column_default_steps() -> None:
    spec = ColumnSpec.model_validate(
        {"role": "quasi_identifier", "type": "date", "hierarchy": {"kind": "date"}}
    )
    h = build_hierarchy("admitted", spec)
    assert isinstance(h, DateHierarchy) and h.height == 4
    assert h.generalize(["2023-07-04", "2019-12-31"]).tolist() == [
        ["2023-07-04", "2023-07", "2023", "2020-2024", "*"],
        ["2019-12-31", "2019-12", "2019", "2015-2019", "*"],
    ]


def test_timestamp_column_starts_with_the_day() -> None:
    spec = ColumnSpec.model_validate(
        {"role": "quasi_identifier", "type": "datetime", "hierarchy": {"kind": "date"}}
    )
    h = build_hierarchy("admitted", spec)
    assert h.generalize(["2023-07-04T23:59:00+02:00", "2023-07-05 08:00"]).tolist() == [
        ["2023-07-04T23:59:00+02:00", "2023-07-04", "2023-07", "2023", "2020-2024", "*"],
        ["2023-07-05 08:00", "2023-07-05", "2023-07", "2023", "2020-2024", "*"],
    ]


def test_date_steps_can_be_chosen_and_are_checked() -> None:
    h = DateHierarchy("d", ["year", "10-year"], timestamp=False)
    assert h.generalize(["2023-07-04"]).tolist() == [["2023-07-04", "2023", "2020-2029", "*"]]
    with pytest.raises(HierarchyError, match="is not an ISO date"):
        h.generalize(["04/07/2023"])
    bad = {"role": "quasi_identifier", "type": "date",
           "hierarchy": {"kind": "date", "steps": ["year", "month"]}}  # fmt: skip
    with pytest.raises(PolicyError, match="finest first"):
        _validate({**_policy(bad), "columns": {"d": bad}}, "test")


def test_date_hierarchy_needs_a_date_column() -> None:
    bad = {"role": "quasi_identifier", "hierarchy": {"kind": "date"}}
    with pytest.raises(PolicyError, match="needs type 'date' or 'datetime'"):
        _validate({**_policy(bad), "columns": {"d": bad}}, "test")


# ---------------------------------------------------------------------------------------------
# k < 2 protects nobody
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 1])
def test_k_below_two_is_a_policy_error_with_a_reason(k: int) -> None:
    column = _column({"kind": "bands", "edges": [0, 18]})
    data = {**_policy(column), "privacy": {"k": k}}
    with pytest.raises(PolicyError) as info:
        _validate(data, "test")
    assert f"privacy.k: k = {k} protects nobody" in str(info.value)
    assert "use k >= 2" in str(info.value)


@pytest.mark.parametrize(
    ("privacy", "fragment"),
    [
        ({"t_closeness": [{"column": "d", "t": 1}]}, "t = 1 protects nothing"),
        ({"risk": {"highest": 1}}, "highest = 1 protects nothing"),
        ({"risk": {"average": 1}}, "average = 1 protects nothing"),
        ({"risk": {"threshold": 1, "share_above": 0.1}}, "threshold = 1 protects nothing"),
        ({"risk": {"threshold": 0.2, "share_above": 1}}, "share_above = 1 protects nothing"),
    ],
)
def test_settings_that_protect_nothing_are_policy_errors(privacy: dict, fragment: str) -> None:
    column = _column({"kind": "bands", "edges": [0, 18]})
    data = _policy(column)
    data["columns"]["d"] = {"role": "sensitive"}
    data["privacy"] = {"k": 2, **privacy}
    with pytest.raises(PolicyError, match=fragment):
        _validate(data, "test")
