"""Histograms of distinct code tuples, built per partition and merged by summing counts.

A :class:`PartialHistogram` summarizes a piece of a table (one partition, or several merged)
by its own dictionaries: per column the sorted distinct values present, and the distinct tuples
of codes into those dictionaries with their counts. Two partial histograms merge by taking the
union of each column's dictionary, re-coding both tuple sets into it and summing the counts of
equal tuples, so the merge is associative and a tree of merges over the partitions gives the
histogram of the whole table, whatever the partitioning. Only distinct tuples travel between
workers, never rows.

Missing cells get code ``-1`` (the dictionaries hold present values only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from privgate.core.encoding import group_codes

if TYPE_CHECKING:  # only a partition's frame needs pandas; the codes path runs without it
    import pandas as pd

__all__ = ["PartialHistogram", "histogram_from_codes", "merge_histograms", "partition_histogram"]


@dataclass(frozen=True)
class PartialHistogram:
    """Distinct code tuples of some rows, with their counts.

    Attributes
    ----------
    columns : tuple of str
    values : tuple of ndarray of object
        ``values[j]``: the sorted distinct present values of column ``j``.
    tuples : ndarray of int32, shape (n_tuples, n_columns)
        Codes into ``values`` (``-1`` = missing); every row distinct.
    counts : ndarray of int64, shape (n_tuples,)
    """

    columns: tuple[str, ...]
    values: tuple[np.ndarray, ...]
    tuples: np.ndarray
    counts: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.counts.sum())


def _sorted_values(values: Sequence[object]) -> np.ndarray:
    found = list(values)
    try:
        found.sort()
    except TypeError:  # mixed types: order by text, as core.encoding.factorize does
        found.sort(key=str)
    out = np.empty(len(found), dtype=object)
    out[:] = found
    return out


def _group(codes: np.ndarray, sizes: Sequence[int], weights: np.ndarray | None) -> tuple:
    """Distinct rows of ``codes`` (``-1`` allowed) and their summed weights (the engine's
    one grouping, :func:`privgate.core.encoding.group_codes`)."""
    n, width = codes.shape
    columns = [codes[:, j] for j in range(width)]
    return _group_columns(columns, sizes, n, weights)


def _group_columns(
    columns: Sequence[np.ndarray], sizes: Sequence[int], n: int, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of code columns (``-1`` = missing) and their (weighted) counts."""
    radices = [s + 1 for s in sizes]  # one more value: missing
    tuples, inverse, counts = group_codes(
        columns, radices, n, offset=1, inverse=weights is not None
    )
    if weights is not None:
        counts = np.bincount(inverse, weights=weights, minlength=len(tuples))
    return tuples.astype(np.int32), counts.astype(np.int64)


def _column_codes(series: pd.Series, text: bool) -> tuple[np.ndarray, Sequence[object]]:
    """Codes (``-1`` = missing) and the distinct values they index, unsorted is fine."""
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        categories = series.cat.categories
    else:
        codes, categories = pd.factorize(series, use_na_sentinel=True)
    values = [str(v) for v in categories] if text else list(categories)
    return codes, values


def partition_histogram(
    frame: pd.DataFrame, columns: Sequence[str], text: bool = False
) -> PartialHistogram:
    """The histogram of one partition's distinct ``columns`` tuples.

    Parameters
    ----------
    frame : DataFrame
        One partition (any dtypes; categoricals are read through their codes, so no Python
        object is made per row).
    columns : sequence of str
    text : bool, default=False
        Compare cells as text (``str(value)``), as the gate reads a release back.
    """
    codes, values = [], []
    for name in columns:
        column_codes, column_values = _column_codes(frame[name], text)
        codes.append(column_codes)
        values.append(column_values)
    matrix = (
        np.column_stack(codes).astype(np.int32, copy=False)
        if codes
        else np.empty((len(frame), 0), np.int32)
    )
    tuples, counts = _group(matrix, [len(v) for v in values], None)
    return _normalize(tuple(columns), values, tuples, counts)


def histogram_from_codes(
    columns: Sequence[str], values: Sequence[np.ndarray], codes: Sequence[np.ndarray]
) -> PartialHistogram:
    """The histogram of a whole table already held as dictionary codes.

    ``codes[j]`` indexes ``values[j]`` (sorted distinct present values, each used), ``-1`` for
    a missing cell: the form :class:`privgate.core.columnar.TextCodes` holds. The rows are
    keyed column by column, so no (rows x columns) matrix is built.
    """
    n = len(codes[0]) if len(codes) else 0
    tuples, counts = _group_columns(list(codes), [len(v) for v in values], n, None)
    return PartialHistogram(
        tuple(columns), tuple(np.asarray(v, dtype=object) for v in values), tuples, counts
    )


def _normalize(
    columns: tuple[str, ...], values: list, tuples: np.ndarray, counts: np.ndarray
) -> PartialHistogram:
    """Sort each dictionary, drop values no tuple uses, and merge values equal as keys."""
    out_values, out = [], np.empty_like(tuples)
    for j, raw in enumerate(values):
        raw_list = list(raw)
        used = np.unique(tuples[:, j])
        used = used[used >= 0]
        ordered = _sorted_values(set(raw_list[i] for i in used.tolist()))
        lut = np.full(len(raw_list) + 1, -1, dtype=np.int32)  # last slot: missing (-1)
        position = {v: i for i, v in enumerate(ordered.tolist())}
        for i in used.tolist():
            lut[i] = position[raw_list[i]]
        out[:, j] = lut[tuples[:, j]]
        out_values.append(ordered)
    sizes = [len(v) for v in out_values]
    if len(tuples) and any(len(v) != len(r) for v, r in zip(out_values, values, strict=True)):
        # Two raw values mapped to one (e.g. equal text): regroup.
        out, counts = _group(out, sizes, counts.astype(np.float64))
    return PartialHistogram(columns, tuple(out_values), out, counts)


def merge_histograms(parts: Sequence[PartialHistogram]) -> PartialHistogram:
    """One histogram of all rows of ``parts`` (same columns): union dictionaries, sum counts."""
    parts = [p for p in parts if p is not None]
    if not parts:
        raise ValueError("merge_histograms needs at least one histogram")
    if len(parts) == 1:
        return parts[0]
    columns = parts[0].columns
    if any(p.columns != columns for p in parts):
        raise ValueError("histograms over different columns cannot be merged")
    union = [
        _sorted_values(set().union(*(p.values[j].tolist() for p in parts)))
        for j in range(len(columns))
    ]
    positions = [{v: i for i, v in enumerate(u.tolist())} for u in union]
    recoded = []
    for p in parts:
        block = np.empty_like(p.tuples)
        for j in range(len(columns)):
            lut = np.fromiter(
                (positions[j][v] for v in p.values[j].tolist()), np.int32, len(p.values[j])
            )
            block[:, j] = np.append(lut, np.int32(-1))[p.tuples[:, j]]
        recoded.append(block)
    matrix = np.concatenate(recoded)
    weights = np.concatenate([p.counts for p in parts]).astype(np.float64)
    tuples, counts = _group(matrix, [len(u) for u in union], weights)
    return PartialHistogram(columns, tuple(union), tuples, counts)
