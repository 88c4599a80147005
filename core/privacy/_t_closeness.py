"""t-closeness of a sensitive column (Li, Li and Venkatasubramanian, ICDE 2007).

The distance between a class's distribution of ``column`` and the whole table's is the Earth
Mover's Distance under one of two ground distances:

* ``equal``: every pair of distinct values is at distance 1, so EMD = total variation
  = ``0.5 * sum_i |p_i - q_i|`` (for categorical values);
* ``ordered``: values sorted, adjacent values at distance ``1/(m-1)``, so
  EMD = ``1/(m-1) * sum_i |sum_{j<=i} (p_j - q_j)|`` (for numeric values).

Not monotone in general under suppression, but monotone under generalization for both ground
distances (merging classes gives a mixture, and EMD to a fixed distribution is convex).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from core.encoding import ClassStats
from core.privacy._base import PrivacyModel

_T_TOLERANCE = 1e-12


def class_distances(
    hist: np.ndarray, overall: np.ndarray, distance: Literal["equal", "ordered"]
) -> np.ndarray:
    """EMD of each row distribution of ``hist`` to ``overall`` (columns in value order)."""
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    diff = p - overall[None, :]
    m = hist.shape[1]
    if distance == "equal":
        return 0.5 * np.abs(diff).sum(axis=1)
    if m < 2:
        return np.zeros(hist.shape[0])
    return np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / (m - 1)


def _value_order(values: np.ndarray) -> np.ndarray:
    """Column permutation that sorts sensitive values numerically when they are numbers."""
    try:
        keys = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        keys = np.array([str(v) for v in values], dtype=object)
    return np.argsort(keys, kind="stable")


class TCloseness(PrivacyModel):
    """Each class's distribution of ``column`` is within EMD ``t`` of the table's."""

    column: str
    t: float = Field(gt=0, le=1)
    distance: Literal["equal", "ordered"] = "equal"

    def _distances(self, stats: ClassStats) -> np.ndarray:
        hist, overall = stats.histograms[self.column], stats.overall[self.column]
        if self.distance == "ordered":
            order = _value_order(stats.ordered_values[self.column])
            hist, overall = hist[:, order], overall[order]
        return class_distances(hist, overall, self.distance)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._distances(stats) <= self.t + _T_TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        d = self._distances(stats)
        return float(d.max()) if len(d) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.t + _T_TOLERANCE

    def __str__(self) -> str:
        return f"{self.t:g}-closeness({self.column}, {self.distance} distance)"
