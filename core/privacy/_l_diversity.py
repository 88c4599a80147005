"""l-diversity of a sensitive column: distinct, entropy and recursive (c,l) variants.

A. Machanavajjhala, D. Kifer, J. Gehrke, M. Venkitasubramaniam, "l-diversity: privacy beyond
k-anonymity", ACM TKDD 1(1), 2007. All three are monotone under generalization (merging two
classes cannot lower the number of distinct values, the entropy's minimum, or break the
recursive condition when both parts satisfy it).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel

#: Entropy comparisons allow this much floating-point slack (log/exp round trips).
_ENTROPY_TOLERANCE = 1e-9


class DistinctLDiversity(PrivacyModel):
    """Every class holds at least ``l`` distinct values of ``column``."""

    column: str
    l: int = Field(ge=1)  # noqa: E741

    def _distinct(self, stats: ClassStats) -> np.ndarray:
        return (stats.histograms[self.column] > 0).sum(axis=1)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._distinct(stats) >= self.l

    def achieved(self, stats: ClassStats) -> float:
        d = self._distinct(stats)
        return float(d.min()) if len(d) else float("inf")

    def holds(self, achieved: float) -> bool:
        return achieved >= self.l

    @property
    def min_class_size(self) -> int:
        return self.l

    def __str__(self) -> str:
        return f"distinct-{self.l}-diversity({self.column})"


def class_entropies(hist: np.ndarray) -> np.ndarray:
    """Shannon entropy (natural log) of each row of a count matrix."""
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1)


class EntropyLDiversity(PrivacyModel):
    """The entropy of ``column`` in every class is at least ``log(l)``.

    The achieved level is ``exp(min entropy)``: the largest real ``l`` the table satisfies.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    column: str
    l: float = Field(ge=1)  # noqa: E741

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        h = class_entropies(stats.histograms[self.column])
        return h >= np.log(self.l) - _ENTROPY_TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        h = class_entropies(stats.histograms[self.column])
        return float(np.exp(h.min())) if len(h) else float("inf")

    def holds(self, achieved: float) -> bool:
        return np.log(achieved) >= np.log(self.l) - _ENTROPY_TOLERANCE

    @property
    def min_class_size(self) -> int:
        return int(np.ceil(self.l - _ENTROPY_TOLERANCE))

    def __str__(self) -> str:
        return f"entropy-{self.l:g}-diversity({self.column})"


class RecursiveCLDiversity(PrivacyModel):
    """In every class, ``r_1 < c * (r_l + r_{l+1} + ... + r_m)``.

    ``r_i`` is the count of the i-th most frequent value of ``column``. The most frequent value
    must not dominate the tail that starts at the l-th value. The achieved level is the largest
    ratio ``r_1 / (r_l + ... + r_m)`` over classes (``inf`` when a class has fewer than ``l``
    distinct values); the model holds when it is strictly below ``c``.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    column: str
    c: float = Field(gt=0)
    l: int = Field(ge=2)  # noqa: E741

    def _ratios(self, stats: ClassStats) -> np.ndarray:
        hist = np.sort(stats.histograms[self.column], axis=1)[:, ::-1]
        if hist.shape[1] < self.l:
            return np.full(hist.shape[0], np.inf)
        tail = hist[:, self.l - 1 :].sum(axis=1)
        with np.errstate(divide="ignore"):
            return np.where(tail > 0, hist[:, 0] / np.maximum(tail, 1), np.inf)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._ratios(stats) < self.c

    def achieved(self, stats: ClassStats) -> float:
        r = self._ratios(stats)
        return float(r.max()) if len(r) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved < self.c

    @property
    def min_class_size(self) -> int:
        return self.l

    def __str__(self) -> str:
        return f"recursive-({self.c:g},{self.l})-diversity({self.column})"
