"""k-anonymity (Sweeney, 2002)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel


class KAnonymity(PrivacyModel):
    """Every record shares its quasi-identifier values with at least ``k - 1`` others.

    L. Sweeney, "k-anonymity: a model for protecting privacy", IJUFKS 10(5), 2002.
    Monotone: merging classes (generalizing) or removing a class (suppressing) never creates a
    class smaller than ``k``.
    """

    k: int = Field(ge=1)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return stats.sizes >= self.k

    def achieved(self, stats: ClassStats) -> float:
        return float(stats.sizes.min()) if len(stats.sizes) else float("inf")

    def holds(self, achieved: float) -> bool:
        return achieved >= self.k

    @property
    def min_class_size(self) -> int:
        return self.k

    def __str__(self) -> str:
        return f"{self.k}-anonymity"
