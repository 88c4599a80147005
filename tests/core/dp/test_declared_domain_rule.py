"""The declared-domain rule keeps each record on its own values (restrict_records).

The rule computes each cell's ``value_key`` once per distinct ``(type, value)`` of a column; the
records it keeps and the values it releases must be the ones the per-cell definition gives, on
real Adult records and on cells that compare equal in Python without having one key.
"""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal

import numpy as np
import pandas as pd

from privgate.core.dp.release import restrict_records
from privgate.core.hierarchy import value_key


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _by_definition(frame: pd.DataFrame, categorical: dict) -> tuple[np.ndarray, dict]:
    """Each record judged cell by cell: in every declared domain (value_key of the cell), and
    the released column (value_key of each cell, a missing cell as it is, through pandas' map
    as the rule always did: the same dtype)."""
    keep = np.ones(len(frame), dtype=bool)
    released = {}
    for name, values in categorical.items():
        cells = frame[name].tolist()
        keep &= np.array([not _missing(v) and value_key(v) in set(values) for v in cells])
        released[name] = frame[name].map(lambda v: v if _missing(v) else value_key(v))
    return keep, released


def _check(frame: pd.DataFrame, categorical: dict) -> dict:
    restricted, report = restrict_records(frame, categorical, {})
    keep, released = _by_definition(frame, categorical)
    assert report["kept_rows"] == int(keep.sum()) == len(restricted)
    for name in categorical:
        expected = released[name][keep].reset_index(drop=True)
        pd.testing.assert_series_equal(restricted[name], expected, check_names=False)
    return report


def test_real_adult_records_are_kept_and_released_as_cell_by_cell(shared_data) -> None:
    frame = pd.read_csv(shared_data("arx/adult.csv"), sep=";")
    names = ["sex", "race", "marital-status", "education", "workclass", "salary-class"]
    # Declared domains that leave some records out (one value of each column undeclared).
    categorical = {name: sorted(set(frame[name].dropna()))[1:] for name in names}
    report = _check(frame, categorical)
    assert 0 < report["kept_rows"] < len(frame)


def test_cells_equal_in_python_but_not_one_key_are_judged_apart() -> None:
    """1, 1.0 and True share value_key "1"; numpy's True (equal to 1, same hash) does not
    ("True"), nor does Decimal("1.0"), nor the equal Decimal("1.00"), nor one time printed in
    two zones; an NFD string is the NFC one; every kind of missing cell is excluded; an
    unhashable cell is still judged."""
    nfd = unicodedata.normalize("NFD", "café")
    noon = pd.Timestamp("2026-01-01 12:00", tz="UTC")
    cells = [1, np.True_, Decimal("1.0"), 1.0, True, Decimal("1.00"), Decimal("1.0"), "café",
             nfd, None, float("nan"), pd.NA, np.float64("nan"), np.int64(1), [1], "2", noon,
             noon.tz_convert("Europe/Paris")]  # fmt: skip
    frame = pd.DataFrame({"c": pd.Series(cells, dtype=object)})
    report = _check(frame, {"c": ["1", "1.00", "café", "[1]", str(noon)]})
    # 1, 1.0, True, Decimal("1.00"), café, café (NFD), np.int64(1), [1], noon in UTC
    assert report["kept_rows"] == 9
    assert report["excluded_by_column"] == {"c": 9}
