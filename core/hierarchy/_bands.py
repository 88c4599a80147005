"""Numeric bands with uneven edges, bottom- and top-coding: ``<18, 18-44, 45-64, 65-89, 90+``."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key
from privgate.core.policy import check_band_levels

__all__ = ["BandsHierarchy"]


def _text(number: float) -> str:
    return value_key(number) if float(number).is_integer() else f"{number:g}"


class BandsHierarchy(Hierarchy):
    """Numbers put into bands with uneven edges; the first may be bottom-coded, the last top-coded.

    Level ``i`` (1-based) uses ``levels[i-1]``, a list of increasing edges: the bands are
    ``[e0, e1), [e1, e2), ...``. With ``top_coding`` the last edge opens a final band that holds
    every value from it up (``90+``); without it, the last edge closes the last band and larger
    values are not covered. With ``bottom_coding`` the first band is labelled by its upper end
    only (``<18``), hiding how low its values go. Values below the first edge are not covered.
    The top level is ``*``.

    Integer columns get labels with both ends included, like ARX's (``18-44``); others get
    half-open intervals (``[18.5, 45)``).

    Parameters
    ----------
    column : str
    levels : sequence of sequence of float
        Edges of each level, finest first; coarser levels use a subset of the finer edges
        (checked by :func:`check_band_levels`).
    integer : bool
        Whether the column holds integers.
    bottom_coding, top_coding : bool, default=True

    Examples
    --------
    >>> h = BandsHierarchy("age", [[0, 18, 45, 65, 90], [0, 45, 90]], integer=True)
    >>> h.generalize([5, 44, 90, 103]).tolist()  # doctest: +NORMALIZE_WHITESPACE
    [['5', '<18', '<45', '*'], ['44', '18-44', '<45', '*'],
     ['90', '90+', '90+', '*'], ['103', '90+', '90+', '*']]
    """

    def __init__(
        self,
        column: str,
        levels: Sequence[Sequence[float]],
        *,
        integer: bool,
        bottom_coding: bool = True,
        top_coding: bool = True,
    ) -> None:
        super().__init__(column)
        self.levels = [[float(e) for e in edges] for edges in levels]
        try:
            check_band_levels(self.levels, top_coding)
        except ValueError as exc:
            raise HierarchyError(f"bands of column {column!r}: {exc}") from None
        if integer and not all(e.is_integer() for edges in self.levels for e in edges):
            raise HierarchyError(
                f"bands of column {column!r}: an integer column needs whole-number edges"
            )
        self.integer = integer
        self.bottom_coding = bottom_coding
        self.top_coding = top_coding

    @property
    def height(self) -> int:
        return len(self.levels) + 1

    @property
    def lowest(self) -> float:
        return self.levels[0][0]

    @property
    def highest(self) -> float | None:
        """The end of the covered range (exclusive), or ``None`` with top-coding."""
        return None if self.top_coding else self.levels[0][-1]

    def _band(self, low: float, high: float | None, first: bool) -> str:
        if high is None:
            return f"{_text(low)}+"
        if first and self.bottom_coding:
            return f"<{_text(high)}"
        if self.integer:
            return f"{_text(low)}-{_text(high - 1)}"
        return f"[{_text(low)}, {_text(high)})"

    def labels_of_level(self, level: int) -> list[str]:
        """Every band label of level ``level`` (1-based), lowest first."""
        edges = self.levels[level - 1]
        bands = [
            self._band(low, high, i == 0)
            for i, (low, high) in enumerate(zip(edges, edges[1:], strict=False))
        ]
        if self.top_coding:
            bands.append(self._band(edges[-1], None, len(edges) == 1))
        return bands

    def _label(self, number: float, edges: list[float]) -> str:
        i = bisect.bisect_right(edges, number) - 1  # the band [edges[i], edges[i+1]) holds it
        high = edges[i + 1] if i + 1 < len(edges) else None
        return self._band(edges[i], high, i == 0)

    def _generalize(self, values: Sequence[object]) -> np.ndarray:
        out = np.empty((len(values), self.height + 1), dtype=object)
        for row, raw in enumerate(values):
            try:
                number = float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise HierarchyError(
                    f"column {self.column!r}: value {raw!r} is not a number, so its bands "
                    "cannot generalize it"
                ) from None
            if (
                math.isnan(number)
                or number < self.lowest
                or (self.highest is not None and number >= self.highest)
            ):
                end = "" if self.highest is None else f" and below {_text(self.highest)}"
                raise HierarchyError(
                    f"column {self.column!r}: value {raw!r} is in no band (the bands cover "
                    f"{_text(self.lowest)} and above{end})"
                )
            if self.integer and not number.is_integer():
                raise HierarchyError(
                    f"column {self.column!r}: value {raw!r} is not an integer but the column's "
                    "bands are integer bands"
                )
            out[row, 0] = value_key(raw)
            for level, edges in enumerate(self.levels, start=1):
                out[row, level] = self._label(number, edges)
            out[row, -1] = SUPPRESSED
        return out
