"""Interval hierarchies for numbers: nested bands of growing width, then ``*``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key


class IntervalHierarchy(Hierarchy):
    """Level ``i`` puts a number into a band of width ``bands[i-1]`` anchored at ``start``.

    Integer bands are labelled like ARX's (``35-39``: both ends included); fractional bands as
    half-open intervals (``[2.5, 5)``). Because each width divides the next, every band sits
    inside exactly one wider band, which keeps generalization monotone.

    Parameters
    ----------
    column : str
    bands : sequence of float
        Band widths, each dividing the next.
    start : float, default=0
        Anchor of the bands.
    minimum, maximum : float, optional
        The declared range; values outside it are not covered.

    Examples
    --------
    >>> IntervalHierarchy("age", [5, 10]).generalize([37, 40]).tolist()
    [['37', '35-39', '30-39', '*'], ['40', '40-44', '40-49', '*']]
    """

    def __init__(
        self,
        column: str,
        bands: Sequence[float],
        start: float = 0.0,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> None:
        super().__init__(column)
        self.bands = [float(b) for b in bands]
        self.start = float(start)
        self.minimum = minimum
        self.maximum = maximum
        self._integer = all(b.is_integer() for b in self.bands) and self.start.is_integer()

    @property
    def height(self) -> int:
        return len(self.bands) + 1

    def _label(self, value: float, width: float) -> str:
        low = self.start + math.floor((value - self.start) / width) * width
        if self._integer:
            return f"{int(low)}-{int(low + width - 1)}"
        return f"[{low:g}, {low + width:g})"

    def _generalize(self, values: Sequence[object]) -> np.ndarray:
        out = np.empty((len(values), self.height + 1), dtype=object)
        for i, raw in enumerate(values):
            try:
                number = float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise HierarchyError(
                    f"column {self.column!r}: value {raw!r} is not a number, so the interval "
                    "hierarchy cannot generalize it"
                ) from None
            if math.isnan(number) or (
                (self.minimum is not None and number < self.minimum)
                or (self.maximum is not None and number > self.maximum)
            ):
                raise HierarchyError(
                    f"column {self.column!r}: value {raw!r} is outside the hierarchy's range "
                    f"[{self.minimum}, {self.maximum}]"
                )
            if self._integer and not number.is_integer():
                raise HierarchyError(
                    f"column {self.column!r}: value {raw!r} is not an integer but the bands "
                    f"{self.bands} are integer bands"
                )
            out[i, 0] = value_key(raw)
            for level, width in enumerate(self.bands, start=1):
                out[i, level] = self._label(number, width)
            out[i, -1] = SUPPRESSED
        return out
