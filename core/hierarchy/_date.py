"""Dates and timestamps: ``2024-03-15T10:22 -> 2024-03-15 -> 2024-03 -> 2024 -> 2020-2024 -> *``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key

__all__ = ["DATE_STEPS", "DateHierarchy", "parse_iso_date"]

#: The generalization steps a date hierarchy may take, finest first.
DATE_STEPS = ("day", "month", "year", "5-year", "10-year")


def parse_iso_date(text: str, *, timestamp: bool) -> date:
    """The calendar day of an ISO 8601 date (``2024-03-15``) or timestamp (``...T10:22:05Z``).

    The day is the one written in the value: a timestamp with a UTC offset is not converted,
    since converting would move records across days (and months, and years) depending on a
    zone the data owner did not ask for.

    Raises
    ------
    ValueError
        Not an ISO date (``timestamp=False``) or not an ISO date or timestamp.
    """
    text = text.strip()
    if not timestamp:
        return date.fromisoformat(text)
    return datetime.fromisoformat(text.replace("Z", "+00:00")).date()


def _label(day: date, step: str) -> str:
    if step == "day":
        return day.isoformat()
    if step == "month":
        return f"{day.year:04d}-{day.month:02d}"
    if step == "year":
        return f"{day.year:04d}"
    width = 5 if step == "5-year" else 10
    low = day.year - day.year % width
    return f"{low:04d}-{low + width - 1:04d}"


class DateHierarchy(Hierarchy):
    """Calendar generalization of ISO dates or timestamps, one step per level, then ``*``.

    Level 0 is the value as written; each level ``i`` applies ``steps[i-1]``: ``day``
    (``2024-03-15``), ``month`` (``2024-03``), ``year`` (``2024``), ``5-year`` (``2020-2024``)
    or ``10-year`` (``2020-2029``), always finest first, so each label nests in the next.

    Parameters
    ----------
    column : str
    steps : sequence of str
        A subsequence of :data:`DATE_STEPS`.
    timestamp : bool
        Whether values are timestamps (``datetime`` columns) rather than dates.

    Examples
    --------
    >>> DateHierarchy("admitted", ["month", "year", "5-year"], timestamp=False).generalize(
    ...     ["2023-07-04"]).tolist()
    [['2023-07-04', '2023-07', '2023', '2020-2024', '*']]
    """

    def __init__(self, column: str, steps: Sequence[str], *, timestamp: bool) -> None:
        super().__init__(column)
        positions = [DATE_STEPS.index(s) for s in steps]  # ValueError for an unknown step
        if not positions or positions != sorted(set(positions)):
            raise HierarchyError(
                f"date hierarchy of column {column!r}: steps must be distinct and in the order "
                f"{list(DATE_STEPS)}; got {list(steps)}"
            )
        self.steps = list(steps)
        self.timestamp = timestamp

    @property
    def height(self) -> int:
        return len(self.steps) + 1

    def _generalize(self, values: Sequence[object]) -> np.ndarray:
        out = np.empty((len(values), self.height + 1), dtype=object)
        kind = "an ISO date or timestamp" if self.timestamp else "an ISO date (YYYY-MM-DD)"
        for row, raw in enumerate(values):
            text = value_key(raw)
            try:
                day = parse_iso_date(text, timestamp=self.timestamp)
            except ValueError:
                raise HierarchyError(
                    f"column {self.column!r}: value {text!r} is not {kind}, so its date "
                    "hierarchy cannot generalize it"
                ) from None
            out[row, 0] = text
            for level, step in enumerate(self.steps, start=1):
                out[row, level] = _label(day, step)
            out[row, -1] = SUPPRESSED
        return out
