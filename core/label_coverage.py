"""Whether a release's numeric labels can state the input's values: a check on the written file.

Why: the gate measures k and the other models on the written cells, and the release suite
checks that each cell is a label the column's domain allows; neither asks whether the labels
say something true of the records. A local recoding release (Mondrian, greedy partition) labels
each record with its region's range (``28-32``); a writer or an algorithm that put a record
under a range that does not hold its value (``52-57`` for an age of 30) still passes both, and
the published file misstates the data. Released rows are shuffled, so a record cannot be
followed into the file; but every released row is one input record, so the file's labels must
be matchable to *distinct* input values, each label holding its value. For one column that is
an interval matching, decided exactly by the greedy rule (ranges by their high end, each taking
the smallest free value it holds). It is a per-column check: necessary, not sufficient for the
records' joint truth, and cheap (one pass over the distinct labels and distinct values).

A label of the column's hierarchy stands for the span of the input values the hierarchy maps
to it (:func:`hierarchy_spans`: ARX's Adult hierarchy puts age 90 under ``85-89``, so its
labels cannot be read as numbers). Any other cell that is neither a number nor a range
(``*``, ``90+``, a missing cell) may stand for any value here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["hierarchy_spans", "label_interval", "unmatched_labels"]

_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_PLAIN = re.compile(_NUMBER)
_CLOSED = re.compile(rf"({_NUMBER})-({_NUMBER})")
_HALF_OPEN = re.compile(rf"\[({_NUMBER}), ({_NUMBER})\)")


def label_interval(cell: str | None) -> tuple[float, float] | None:
    """The closed interval of numbers ``cell`` states (``None``: it may stand for any value).

    ``39`` is ``[39, 39]``, ``28-32`` is ``[28, 32]``, ``[28.5, 32)`` is ``[28.5, x]`` with
    ``x`` the largest float below 32. An inverted range holds no number: ``(1, 0)``.
    """
    if cell is None:
        return None
    if _PLAIN.fullmatch(cell):
        value = float(cell)
        return value, value
    closed = _CLOSED.fullmatch(cell)
    if closed:
        return float(closed.group(1)), float(closed.group(2))
    half_open = _HALF_OPEN.fullmatch(cell)
    if half_open:
        low, high = float(half_open.group(1)), float(half_open.group(2))
        return low, math.nextafter(high, -math.inf)
    return None


def hierarchy_spans(hierarchy: object, values: np.ndarray) -> dict[str, tuple[float, float] | None]:
    """Each label the hierarchy gives the input's ``values`` above level 0: the smallest and
    largest value it maps there, or ``None`` when it also maps a missing value there (the
    label may then stand for any record)."""
    numbers = np.asarray(values, dtype=float)
    present = np.unique(numbers[~np.isnan(numbers)])
    distinct: list = [int(v) if float(v).is_integer() else float(v) for v in present.tolist()]
    if np.isnan(numbers).any():
        distinct.append(None)
    if not distinct:
        return {}
    table = hierarchy.generalize(distinct)  # type: ignore[attr-defined]
    spans: dict[str, tuple[float, float] | None] = {}
    for row, value in zip(table, distinct, strict=True):
        for label in row[1:]:
            key = str(label)
            if value is None or (key in spans and spans[key] is None):
                spans[key] = None
                continue
            low, high = spans.get(key, (value, value))  # type: ignore[misc]
            spans[key] = (min(low, value), max(high, value))
    return spans


def unmatched_labels(
    labels: Sequence[str | None],
    counts: Sequence[int],
    values: np.ndarray,
    spans: Mapping[str, tuple[float, float] | None] | None = None,
) -> int:
    """How many released cells cannot each be given a distinct input value their label holds.

    Parameters
    ----------
    labels, counts : the column's distinct released cells and how many rows hold each.
    values : the column's input values as numbers (every input record, suppressed or not;
        ``NaN`` for a missing one).
    spans : what a hierarchy label stands for (:func:`hierarchy_spans`); a label that also
        reads as a range stands for the hull of both.

    Returns
    -------
    int
        0 when the labels can state the input's values; otherwise the smallest number of
        released cells that must be stating a value no unused input record has.
    """
    present = np.asarray(values, dtype=float)
    present = present[~np.isnan(present)]
    points, available = np.unique(present, return_counts=True)
    available = available.astype(np.int64)
    free_total = int(available.sum()) + int(np.isnan(np.asarray(values, dtype=float)).sum())
    ranges, anywhere = [], 0
    for label, count in zip(labels, counts, strict=True):
        interval = label_interval(label)
        if spans is not None and label is not None and label in spans:
            span = spans[label]
            # A hierarchy label holds what the hierarchy maps to it; one that also reads as a
            # range (a region's own "20-39") may mean either: the hull of both.
            interval = (
                None
                if span is None
                else span
                if interval is None
                else (min(span[0], interval[0]), max(span[1], interval[1]))
            )
        if interval is None:
            anywhere += int(count)
        else:
            ranges.append((interval[1], interval[0], int(count)))
    ranges.sort()
    # following[i]: the smallest index >= i whose value is still free (len(points): none).
    following = np.arange(len(points) + 1)

    def free_from(i: int) -> int:
        root = i
        while following[root] != root:
            root = following[root]
        while following[i] != root:
            following[i], i = root, following[i]
        return root

    unmatched = 0
    for high, low, count in ranges:
        i = free_from(int(np.searchsorted(points, low, side="left")))
        while count and i < len(points) and points[i] <= high:
            taken = min(count, int(available[i]))
            available[i] -= taken
            count -= taken
            free_total -= taken
            if not available[i]:
                following[i] = i + 1
                i = free_from(i + 1)
        unmatched += count
    return unmatched + max(0, anywhere - free_total)
