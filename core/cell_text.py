"""The text of one table cell, the same whatever dtype the rest of its column has.

Why: the DP stages that must be 1-stable (the person bounding's keyed hash, the DP attack
split's per-record coin) hash each record's cells. A cell's ``str`` depends on its column's
dtype, and that dtype depends on *other* records: pandas reads a Parquet integer column as
``int64`` (``45`` -> ``"45"``) unless one row is missing, then as ``float64`` (``"45.0"``). One
added person with a missing value would then re-hash every record and change the bounded table
or the split in many records, not one. :func:`cell_text` writes every number that is an integer
as an integer and every missing marker (``None``, ``NaN``, ``pd.NA``, ``NaT``) the same way, so
a record's text depends on that record only. CSV input is text already and keeps its text.
(An integer above 2**53 in a column that becomes ``float64`` is rounded by pandas itself before
this sees it; Parquet inputs with such columns should store them as text.)
"""

from __future__ import annotations

import numbers

import pandas as pd

__all__ = ["cell_text"]


def cell_text(value: object, missing: str = "") -> str:
    """``value`` as text that does not depend on its column's dtype (``missing`` if missing)."""
    if isinstance(value, str):
        return value
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return missing
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)
    return str(value)
