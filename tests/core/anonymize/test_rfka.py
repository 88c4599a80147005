"""RFKA feature selection: hand-worked cases, k-anonymity checked independently, real data."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

from privgate.core.anonymize._rfka import SUPPRESSED, rfka_release, rfka_select
from privgate.core.datasets import load_breast_cancer_wisconsin
from privgate.core.exceptions import AnonymizationError, PrivgateError

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: pycanon groups by a one-element list, which pandas 3 warns about on every call.
pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")

BCW_CELLS = [
    "clump_thickness",
    "uniformity_of_cell_size",
    "uniformity_of_cell_shape",
    "marginal_adhesion",
    "single_epithelial_cell_size",
    "bland_chromatin",
    "normal_nucleoli",
    "mitoses",
]


def smallest_class(frame: pd.DataFrame, columns: list[str]) -> int:
    """Smallest class of the projection, by pandas itself (missing values grouped, not dropped)."""
    if not columns:
        return len(frame)
    return int(frame.groupby(columns, dropna=False, sort=False).size().min())


@pytest.fixture
def six_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": ["x", "x", "y", "y", "y", "y"],
            "b": [1, 2, 1, 1, 2, 2],
            "c": ["p", "p", "q", "q", "r", "r"],
            "label": [0, 1, 0, 1, 0, 1],
        }
    )


# ------------------------------------------------------------------------------------------
# Hand-worked examples


def test_hand_worked_selection(six_rows: pd.DataFrame) -> None:
    # a alone: classes x (2), y (4) -> kept. a+b: (x,1) has 1 row -> b rejected.
    # a+c: (x,p) 2, (y,q) 2, (y,r) 2 -> c kept.
    selection = rfka_select(six_rows, ["a", "b", "c"], k=2)
    assert selection.kept == ["a", "c"]
    assert selection.rejected == ["b"]
    assert [s["smallest_class"] for s in selection.steps] == [2, 1, 2]
    assert [s["kept"] for s in selection.steps] == [True, False, True]
    assert selection.smallest_class == 2
    assert selection.algorithm == "rfka" and selection.k == 2


def test_order_decides_what_is_kept(six_rows: pd.DataFrame) -> None:
    # b first: classes 1 (3), 2 (3) -> kept; then a splits (x,1) off, c splits (1,p) off.
    selection = rfka_select(six_rows, ["b", "a", "c"], k=2)
    assert selection.kept == ["b"]
    assert selection.rejected == ["a", "c"]
    assert selection.smallest_class == 3


def test_k_equal_rows_keeps_only_constant_attributes(six_rows: pd.DataFrame) -> None:
    frame = six_rows.assign(constant="same")
    selection = rfka_select(frame, ["a", "constant", "b"], k=6)
    assert selection.kept == ["constant"]
    assert selection.smallest_class == 6


def test_missing_value_is_a_value_of_its_own() -> None:
    # Dropping NA (pandas' default group-by) would see one class of 3 and keep the column.
    frame = pd.DataFrame({"m": pd.Series([None, "u", "u", "u"], dtype="string")})
    assert rfka_select(frame, ["m"], k=2).rejected == ["m"]
    frame = pd.DataFrame({"m": pd.Series([None, None, "u", "u", "u"], dtype="string")})
    selection = rfka_select(frame, ["m"], k=2)
    assert selection.kept == ["m"]
    assert selection.smallest_class == 2


def test_to_dict_is_json_ready(six_rows: pd.DataFrame) -> None:
    data = rfka_select(six_rows, ["a", "b", "c"], k=2).to_dict()
    again = json.loads(json.dumps(data))
    assert again["kept"] == ["a", "c"]
    assert again["steps"][1] == {
        "name": "b",
        "kept": False,
        "smallest_class": 1,
        "reason": "a class of 1 < k = 2",
    }
    assert data["seconds"] >= 0


# ------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("k", [7, 100])
def test_k_larger_than_rows_is_refused(six_rows: pd.DataFrame, k: int) -> None:
    with pytest.raises(AnonymizationError, match=f"privacy.k = {k} is larger than the table"):
        rfka_select(six_rows, ["a"], k=k)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_invalid_k_is_refused(six_rows: pd.DataFrame, k) -> None:
    with pytest.raises(AnonymizationError, match="privacy.k"):
        rfka_select(six_rows, ["a"], k=k)


def test_unknown_or_repeated_column_is_named(six_rows: pd.DataFrame) -> None:
    with pytest.raises(PrivgateError, match="'zip'"):
        rfka_select(six_rows, ["a", "zip"], k=2)
    with pytest.raises(AnonymizationError, match="'a' repeated"):
        rfka_select(six_rows, ["a", "b", "a"], k=2)
    with pytest.raises(AnonymizationError, match="'nope'"):
        rfka_release(six_rows, ["a"], 2, ["a", "nope"])


# ------------------------------------------------------------------------------------------
# The release


def test_release_suppresses_rejected_attributes(six_rows: pd.DataFrame) -> None:
    release, selection = rfka_release(six_rows, ["a", "b", "c"], 2, ["a", "b", "c", "label"])
    assert list(release.columns) == ["a", "b", "c", "label"]
    assert release.index.equals(six_rows.index)
    assert (release["b"] == SUPPRESSED).all()
    pd.testing.assert_series_equal(release["a"], six_rows["a"])
    pd.testing.assert_series_equal(release["label"], six_rows["label"])
    assert anonymity.k_anonymity(release, ["a", "b", "c"]) >= 2
    assert selection.kept == ["a", "c"]
    # The input is not modified.
    assert six_rows["b"].tolist() == [1, 2, 1, 1, 2, 2]


def test_release_defaults_to_all_columns(six_rows: pd.DataFrame) -> None:
    release, _ = rfka_release(six_rows, ["b", "a", "c"], 2)
    assert list(release.columns) == list(six_rows.columns)
    assert (release["a"] == SUPPRESSED).all() and (release["c"] == SUPPRESSED).all()
    assert release["b"].tolist() == six_rows["b"].tolist()


# ------------------------------------------------------------------------------------------
# Properties: k-anonymous, and nothing rejected could have been kept


@st.composite
def tables(draw) -> tuple[pd.DataFrame, list[str], int]:
    n_rows = draw(st.integers(1, 30))
    n_cols = draw(st.integers(1, 5))
    columns = {}
    for j in range(n_cols):
        cardinality = draw(st.integers(1, 4))
        values = draw(st.lists(st.integers(0, cardinality), min_size=n_rows, max_size=n_rows))
        # Value ``cardinality`` stands for a missing value.
        columns[f"q{j}"] = pd.array(
            [None if v == cardinality and cardinality > 1 else v for v in values], dtype="Int64"
        )
    frame = pd.DataFrame(columns)
    order = draw(st.permutations(list(frame.columns)))
    k = draw(st.integers(1, n_rows))
    return frame, list(order), k


@PROPERTY
@given(tables())
def test_selection_is_k_anonymous_and_maximal(case) -> None:
    frame, order, k = case
    selection = rfka_select(frame, order, k)
    assert sorted(selection.kept + selection.rejected) == sorted(order)
    assert selection.kept == [c for c in order if c in selection.kept]  # importance order
    measured = smallest_class(frame, selection.kept)
    assert measured >= k
    assert measured == selection.smallest_class
    for step in selection.steps:
        if not step["kept"]:
            # Splitting only shrinks classes: a rejected attribute still breaks k-anonymity
            # when added to the final kept set.
            assert smallest_class(frame, [*selection.kept, step["name"]]) < k


@PROPERTY
@given(tables())
def test_release_is_k_anonymous_for_pycanon(case) -> None:
    frame, order, k = case
    release, _ = rfka_release(frame.fillna(-1), order, k)
    assert anonymity.k_anonymity(release, order) >= k


# ------------------------------------------------------------------------------------------
# Real data


def test_breast_cancer_wisconsin(shared_data) -> None:
    frame = load_breast_cancer_wisconsin(
        shared_data("breast_cancer_wisconsin/breast-cancer-wisconsin.data")
    )
    assert len(frame) == 699
    # All 8 attributes together are far from 10-anonymous, so RFKA must drop some.
    assert smallest_class(frame, BCW_CELLS) < 10
    release, selection = rfka_release(frame, BCW_CELLS, 10, [*BCW_CELLS, "class"])
    assert selection.kept and selection.rejected
    assert selection.kept[0] == BCW_CELLS[0]  # 10 values, each shared by >= 10 samples
    assert smallest_class(frame, selection.kept) >= 10
    assert anonymity.k_anonymity(release, BCW_CELLS) >= 10
    for name in selection.rejected:
        assert (release[name] == SUPPRESSED).all()
        assert smallest_class(frame, [*selection.kept, name]) < 10
    assert np.array_equal(release["class"].to_numpy(), frame["class"].to_numpy())
