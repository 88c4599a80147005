"""Heterogeneous microdata: relational attributes plus one set-valued attribute per record.

DPHeter-style releases work on *heterogeneous* records: ordinary (relational) attributes and a
set-valued one, such as a person's several occupations or a patient's set of diagnosis codes. A
relational table becomes heterogeneous the way the published experiments build it from UCI Adult:
records that are identical on every other attribute are merged into one record whose set-valued
cell holds the set of their values (:func:`merge_set_valued`).

A set cannot count: two identical rows ``(other attributes, Sales)`` would merge into ``{Sales}``
and one of them would be lost. The merge is therefore *layered*: inside a group of records
identical on the other attributes, layer ``k`` (``k = 1, 2, ...``) holds every value seen at
least ``k`` times, and each non-empty layer is one merged record. Expanding every merged record
back into one row per value (:func:`expand_set_valued`) gives exactly the multiset of rows the
merge started from; no information is lost and none is invented.

A set-valued cell is a ``frozenset`` of the original values (text keys, as
:func:`privgate.core.hierarchy.value_key` prints them, so they match hierarchy rows).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from privgate.core.exceptions import SchemaValidationError
from privgate.core.hierarchy import value_key

__all__ = ["ADULT_SET_VALUED", "expand_set_valued", "heterogeneous_adult", "merge_set_valued"]

#: The set-valued attribute of heterogeneous Adult.
ADULT_SET_VALUED = "occupation"

#: Adult columns left out of heterogeneous Adult by default. ``fnlwgt`` is the census sampling
#: weight of the record (how many people it stands for), not an attribute of the person; it is
#: almost unique per record (30,099 distinct values over 30,162 complete records), so keeping it
#: would leave nothing to merge.
_ADULT_DROPPED = ("fnlwgt",)


def merge_set_valued(
    frame: pd.DataFrame, column: str, *, on: Sequence[str] | None = None
) -> pd.DataFrame:
    """Merge records identical on ``on`` into records whose ``column`` is a set of values.

    Parameters
    ----------
    frame : DataFrame
        Relational records; ``column`` holds one value per record.
    column : str
        The attribute that becomes set-valued.
    on : sequence of str, optional
        The attributes records must share to merge; by default every other column.

    Returns
    -------
    DataFrame
        The columns ``on`` followed by ``column``, one row per merged record (groups in order of
        first appearance, then layers), with a fresh ``RangeIndex``. ``column`` holds a
        ``frozenset`` of text keys. A value repeated ``m`` times inside a group appears in the
        first ``m`` layers of that group (see the module docstring).

    Raises
    ------
    SchemaValidationError
        If ``column`` or a column of ``on`` is missing from ``frame`` or holds a missing value
        (a missing value can neither be put in a set nor matched on).

    Examples
    --------
    >>> df = pd.DataFrame({"age": [30, 30, 30, 41], "job": ["Sales", "Tech", "Sales", "Sales"]})
    >>> merge_set_valued(df, "job")["job"].map(sorted).tolist()
    [['Sales', 'Tech'], ['Sales'], ['Sales']]
    """
    keys = [c for c in frame.columns if c != column] if on is None else list(on)
    absent = [c for c in [*keys, column] if c not in frame.columns]
    if absent:
        raise SchemaValidationError(
            f"merge_set_valued: column(s) {absent} not in the table (columns: {list(frame)})"
        )
    if column in keys:
        raise SchemaValidationError(
            f"merge_set_valued: the set-valued column {column!r} cannot also be a merge key"
        )
    for name in [*keys, column]:
        missing = int(frame[name].isna().sum())
        if missing:
            raise SchemaValidationError(
                f"merge_set_valued: column {name!r} has {missing} missing value(s); drop or "
                "impute them first (a missing value cannot be merged on or put in a set)"
            )
    work = frame[[*keys, column]]
    values = [value_key(v) for v in work[column].tolist()]
    group = work[keys].groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    # The k-th occurrence of a (group, value) pair goes to layer k: one layer = one set.
    layer = (
        pd.DataFrame({"group": group, "value": values})
        .groupby(["group", "value"], sort=False)
        .cumcount()
        .to_numpy()
    )
    sets: dict[tuple[int, int], set[str]] = {}
    first_row: dict[tuple[int, int], int] = {}
    for row, (g, k, value) in enumerate(zip(group.tolist(), layer.tolist(), values, strict=True)):
        sets.setdefault((g, k), set()).add(value)
        first_row.setdefault((g, k), row)
    order = sorted(sets)  # groups by first appearance, then their layers
    out = work[keys].iloc[[first_row[key] for key in order]].reset_index(drop=True)
    out[column] = pd.Series([frozenset(sets[key]) for key in order], dtype=object)
    return out


def expand_set_valued(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """One row per (record, value) pair of a set-valued column: the inverse of the merge.

    Parameters
    ----------
    frame : DataFrame
        Records whose ``column`` holds sets (any iterable that is not a string; a string is a
        set of one value).
    column : str

    Returns
    -------
    DataFrame
        The same columns, ``column`` now holding single values (sorted within a record), with a
        fresh ``RangeIndex``.

    Raises
    ------
    SchemaValidationError
        If ``column`` is missing or a cell is an empty set or missing.
    """
    if column not in frame.columns:
        raise SchemaValidationError(f"expand_set_valued: column {column!r} not in the table")
    values = []
    for position, cell in enumerate(frame[column].tolist()):
        items = as_item_set(cell, column, position)
        values.append(sorted(items))
    out = frame.copy()
    out[column] = values
    out = out.explode(column, ignore_index=True)
    out[column] = out[column].astype(object)
    return out


def as_item_set(cell: object, column: str, position: int) -> frozenset[str]:
    """The non-empty set of text keys a set-valued cell holds (a string is one value).

    Raises
    ------
    SchemaValidationError
        If the cell is missing or an empty set; the message names the column and row position.
    """
    if isinstance(cell, str):
        return frozenset({cell})
    if cell is None or (not hasattr(cell, "__iter__") and pd.isna(cell)):
        raise SchemaValidationError(
            f"set-valued column {column!r}, row {position}: missing value (expected a set)"
        )
    items = frozenset(value_key(v) for v in cell)  # type: ignore[union-attr]
    if not items:
        raise SchemaValidationError(
            f"set-valued column {column!r}, row {position}: empty set (every record needs a value)"
        )
    return items


def heterogeneous_adult(
    frame: pd.DataFrame, *, drop: Sequence[str] = _ADULT_DROPPED
) -> pd.DataFrame:
    """Heterogeneous Adult: complete records, ``fnlwgt`` dropped, occupation merged into sets.

    Parameters
    ----------
    frame : DataFrame
        UCI Adult as :func:`privgate.core.datasets.load_adult` returns it.
    drop : sequence of str, default=("fnlwgt",)
        Columns removed before merging (see ``_ADULT_DROPPED`` for why ``fnlwgt`` goes).

    Returns
    -------
    DataFrame
        Records with a missing value are removed first (the usual 30,162 complete records of
        ``adult.data``), then records identical on every other remaining column are merged with
        :func:`merge_set_valued`; ``occupation`` holds a ``frozenset``.

    Raises
    ------
    SchemaValidationError
        If ``occupation`` or a column of ``drop`` is not in ``frame``.
    """
    absent = [c for c in [ADULT_SET_VALUED, *drop] if c not in frame.columns]
    if absent:
        raise SchemaValidationError(
            f"heterogeneous_adult: column(s) {absent} not in the table (is it UCI Adult?)"
        )
    complete = frame.drop(columns=list(drop)).dropna().reset_index(drop=True)
    return merge_set_valued(complete, ADULT_SET_VALUED)
