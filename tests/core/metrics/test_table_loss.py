"""Cell-level information loss of a release, on tiny tables computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgate.core.anonymize._mondrian import Mondrian
from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy import ARXHierarchy, IntervalHierarchy, taxonomy_hierarchy
from privgate.core.metrics._table_loss import attribute_loss, table_loss
from privgate.core.privacy import KAnonymity

CITY = taxonomy_hierarchy("city", {"East": ["Boston", "NYC", "DC"], "West": ["LA", "SF"]})
AGE = IntervalHierarchy("age", [5, 10])


# --------------------------------------------------------------------------------------------
# Numeric attributes


def test_numeric_ranges_plain_values_and_star() -> None:
    original = pd.Series([20, 30, 40, 60])  # range 40
    released = pd.Series(["20-30", "20-30", "40", "*"])
    # (10/40 + 10/40 + 0 + 1) / 4
    assert attribute_loss(original, released, None, numeric=True) == pytest.approx(0.375)


def test_numeric_interval_hierarchy_labels() -> None:
    original = pd.Series([17, 22, 37, 57])  # range 40
    released = pd.Series(AGE.generalize(list(original))[:, 1])  # 15-19, 20-24, 35-39, 55-59
    assert attribute_loss(original, released, AGE, numeric=True) == pytest.approx(4 / 40)
    released = pd.Series(AGE.generalize(list(original))[:, 2])  # 10-19, 20-29, 30-39, 50-59
    assert attribute_loss(original, released, AGE, numeric=True) == pytest.approx(9 / 40)


def test_numeric_range_wider_than_the_column_is_capped_at_one() -> None:
    original = pd.Series([17, 27])  # range 10; the ARX band 0-19 spans 19
    released = pd.Series(["0-19", "27"])
    assert attribute_loss(original, released, None, numeric=True) == pytest.approx(0.5)


def test_numeric_half_open_and_negative_ranges() -> None:
    original = pd.Series([-10.0, -2.0, 2.5, 10.0])  # range 20
    released = pd.Series(["-10--2", "-10--2", "[2.5, 5)", "10"])
    # (8/20 + 8/20 + 2.5/20 + 0) / 4
    assert attribute_loss(original, released, None, numeric=True) == pytest.approx(18.5 / 80)


def test_numeric_label_that_is_not_a_range_is_looked_up_in_the_hierarchy() -> None:
    h = ARXHierarchy("age", [["20", "young", "*"], ["30", "young", "*"], ["60", "old", "*"]])
    original = pd.Series([20, 30, 60])  # range 40
    released = pd.Series(["young", "30", "old"])  # young covers 20..30, old covers 60
    assert attribute_loss(original, released, h, numeric=True) == pytest.approx(10 / 40 / 3)
    with pytest.raises(HierarchyError, match="'adult'"):
        attribute_loss(original, pd.Series(["adult", "30", "60"]), h, numeric=True)


def test_numeric_constant_column_costs_nothing_but_star() -> None:
    original = pd.Series([5, 5, 5])
    assert attribute_loss(original, pd.Series(["5", "5-5", "*"]), None, numeric=True) == 1 / 3


def test_numeric_column_stored_as_text() -> None:
    original = pd.Series(["20", "30", "40", "60"])
    released = pd.Series(["20-30", "20-30", "40", "60"])
    assert attribute_loss(original, released, None, numeric=True) == pytest.approx(0.125)


# --------------------------------------------------------------------------------------------
# Categorical attributes


def test_categorical_leaves_under_the_label() -> None:
    original = pd.Series(["Boston", "NYC", "DC", "LA", "SF"])  # 5 leaves
    released = pd.Series(["Boston", "East", "East", "West", "*"])
    # (0 + 2/4 + 2/4 + 1/4 + 1) / 5: East covers 3 leaves, West 2
    assert attribute_loss(original, released, CITY, numeric=False) == pytest.approx(0.45)


def test_categorical_leaves_are_the_distinct_original_values() -> None:
    original = pd.Series(["Boston", "NYC", "LA", "SF"])  # DC absent: East covers 2 of 4 leaves
    released = pd.Series(["East", "NYC", "West", "SF"])
    assert attribute_loss(original, released, CITY, numeric=False) == pytest.approx(
        (1 / 3 + 1 / 3) / 4
    )


def test_categorical_unknown_label_raises() -> None:
    original = pd.Series(["Boston", "LA"])
    with pytest.raises(HierarchyError, match="'Europe'"):
        attribute_loss(original, pd.Series(["Europe", "LA"]), CITY, numeric=False)
    with pytest.raises(ValueError, match="needs a hierarchy"):
        attribute_loss(original, original, None, numeric=False)


def test_categorical_single_leaf_domain() -> None:
    original = pd.Series(["LA", "LA"])
    assert attribute_loss(original, pd.Series(["LA", "West"]), CITY, numeric=False) == 0.0
    assert attribute_loss(original, pd.Series(["LA", "*"]), CITY, numeric=False) == 0.5


def test_categorical_integer_codes_match_text_labels() -> None:
    h = ARXHierarchy("code", [["1", "low", "*"], ["2", "low", "*"], ["9", "high", "*"]])
    original = pd.Series([1, 2, 9])
    released = pd.Series(["1", "low", "9"])
    assert attribute_loss(original, released, h, numeric=False) == pytest.approx(0.5 / 3)


# --------------------------------------------------------------------------------------------
# Missing cells, suppressed records and whole tables


def _tiny() -> tuple[pd.DataFrame, dict]:
    df = pd.DataFrame({
        "age": [20, 30, 40, 60],
        "city": ["Boston", "NYC", "LA", "SF"],
        "disease": ["flu", "cold", "flu", "cold"],
    })  # fmt: skip
    return df, {"age": AGE, "city": CITY}


def test_missing_released_cells_cost_one() -> None:
    original = pd.Series([20, 30, 40, 60])
    released = pd.Series(["20", None, np.nan, "60"], dtype=object)
    assert attribute_loss(original, released, None, numeric=True) == 0.5
    released = pd.Series(["Boston", pd.NA], dtype="string")
    assert attribute_loss(pd.Series(["Boston", "LA"]), released, CITY, numeric=False) == 0.5


def test_suppressed_records_cost_one_on_every_attribute() -> None:
    df, hierarchies = _tiny()
    released = df.loc[[0, 2]]  # records 1 and 3 suppressed, the others unchanged
    loss = table_loss(df, released, hierarchies, {"age"})
    assert loss["per_attribute"] == {"age": 0.5, "city": 0.5}
    assert loss["total"] == 0.5
    assert loss["granularity"] == 0.5
    assert loss["n_original"] == 4
    assert loss["n_suppressed"] == 2


def test_identical_release_loses_nothing() -> None:
    df, hierarchies = _tiny()
    loss = table_loss(df, df, hierarchies, {"age"})
    assert loss["per_attribute"] == {"age": 0.0, "city": 0.0}
    assert loss["granularity"] == 1.0
    as_text = df.astype("string")  # as the gate reads a release back
    assert table_loss(df, as_text, hierarchies, {"age"})["total"] == 0.0


def test_all_star_release_loses_everything() -> None:
    df, hierarchies = _tiny()
    released = df.assign(age="*", city="*")
    loss = table_loss(df, released, hierarchies, {"age"})
    assert loss["per_attribute"] == {"age": 1.0, "city": 1.0}
    assert loss["total"] == 1.0
    assert loss["granularity"] == 0.0


def test_mixed_release_hand_computed() -> None:
    df, hierarchies = _tiny()
    released = pd.DataFrame(
        {"age": ["20-30", "20-30", "40-60"], "city": ["East", "East", "West"]}, index=[0, 1, 3]
    )
    loss = table_loss(df, released, hierarchies, {"age"})
    # age: (10/40 + 10/40 + 20/40 + 1 suppressed) / 4 = 0.5
    # city (4 leaves; East covers Boston, NYC; West covers LA, SF): (1/3 * 3 + 1) / 4 = 0.5
    assert loss["per_attribute"] == pytest.approx({"age": 0.5, "city": 0.5})
    assert loss["granularity"] == pytest.approx(0.5)


def test_mondrian_release_of_a_tiny_table() -> None:
    df, hierarchies = _tiny()
    result = Mondrian([KAnonymity(k=2)]).anonymize_table(df, hierarchies, numeric={"age"})
    # age first at the root (QI order): {20, 30} | {40, 60}; the halves are too small to cut
    assert result.release["age"].tolist() == ["20-30", "20-30", "40-60", "40-60"]
    assert result.release["city"].tolist() == ["East", "East", "West", "West"]
    loss = table_loss(df, result.release, hierarchies, {"age"})
    # age: (10 + 10 + 20 + 20) / 40 / 4 = 0.375; city: 1/3 on every record
    assert loss["per_attribute"] == pytest.approx({"age": 0.375, "city": 1 / 3})


def test_release_rows_must_match_original_rows() -> None:
    df, hierarchies = _tiny()
    with pytest.raises(ValueError, match="no original record"):
        table_loss(df, df.set_index(pd.Index([0, 1, 2, 99])), hierarchies, {"age"})
    with pytest.raises(ValueError, match="unique"):
        table_loss(df, df.loc[[0, 0]], hierarchies, {"age"})
    with pytest.raises(ValueError, match="'numeric' parameter"):
        table_loss(df, df, hierarchies, {"disease"})


# --------------------------------------------------------------------------------------------
# Counting distinct cells (issue 18: the per-cell pass cost 112 s of the stage at 1M rows)


def _per_cell_reference(original: pd.Series, released: pd.Series, hierarchy, numeric: bool):
    """The earlier definition, one label per cell then np.unique: what the counted one must
    equal exactly."""
    from privgate.core.hierarchy import SUPPRESSED, value_key
    from privgate.core.metrics import _table_loss as module

    kept_missing = released.isna() & original.reindex(released.index).isna()
    cells = released[~kept_missing].astype(object)
    cells = cells.where(cells.notna(), None)
    labels, counts = np.unique(
        np.array([SUPPRESSED if c is None else value_key(c) for c in cells], dtype=object),
        return_counts=True,
    )
    real = module._label_counts
    try:
        module._label_counts = lambda _cells: (list(labels), [int(c) for c in counts])
        return attribute_loss(original, released, hierarchy, numeric)
    finally:
        module._label_counts = real


def test_counted_labels_give_exactly_the_per_cell_loss_on_adult(shared_data) -> None:
    from pathlib import Path

    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup
    from privgate.core.policy import load_policy

    shared_data("arx/adult.csv")
    policy = load_policy(Path(__file__).resolve().parents[3] / "policies" / "adult.yaml")
    frame = stages.ingest(policy).frame
    setup = SearchSetup.from_policy(policy)
    (table,) = stages.anonymize(frame, setup)
    release = table.frame.copy()
    release.iloc[::50, release.columns.get_loc("workclass")] = pd.NA  # missing cells cost 1
    for q in setup.quasi_identifiers:
        h = setup.hierarchies[q]
        got = attribute_loss(frame[q], release[q], h, numeric=False)
        assert got == _per_cell_reference(frame[q], release[q], h, numeric=False), q
    # Cells equal as values (39, 39.0, "39") and missing ones of several kinds, in one column.
    original = pd.Series([39, 40, 41, 42, 43, 44], dtype=object)
    mixed = pd.Series([39, 39.0, "39", None, np.nan, "40-44"], dtype=object)
    got = attribute_loss(original, mixed, None, numeric=True)
    assert got == _per_cell_reference(original, mixed, None, numeric=True)
