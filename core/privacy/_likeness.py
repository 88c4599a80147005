"""β-likeness of a sensitive column (Cao and Karras, "Publishing microdata with a robust
privacy guarantee", PVLDB 5(11), 2012).

t-closeness bounds a distance between distributions, which lets a rare sensitive value become
much more frequent in a class (a small absolute change, a large relative one). β-likeness
bounds the *relative* gain in confidence instead: for every value ``s`` present in a class,

    basic:     (p_class(s) - p_table(s)) / p_table(s) <= β
    enhanced:  (p_class(s) - p_table(s)) / p_table(s) <= min(β, -ln p_table(s))

The enhanced form also caps the gain of a frequent value by ``-ln p``, so that no class can
reveal a common value with near certainty. Only gains are bounded (a value rarer in the class
than in the table reveals nothing positive), which is what makes the model monotone under
generalization: the gain bound is a cap on ``p_class(s)``, and a merged class's frequencies
are a weighted mean of its parts'. ``p_table`` is the *input's* distribution, as for
t-closeness (the search's, and the gate's through
:func:`privgate.core.privacy.reference_columns`): suppression does not change it, but
suppressing a class's records can still make a node pass that a coarser node fails, so the
model is not monotone with suppression. With a person key, both distributions weigh each
person 1, split over their records (docs/PERSONS.md).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel

__all__ = ["BetaLikeness", "likeness_gains"]

_TOLERANCE = 1e-12


def likeness_gains(stats: ClassStats, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Relative gains ``(p_class - p_table) / p_table`` of every (class, value), ``-inf``
    where the class does not hold the value, and ``-ln p_table`` per value."""
    hist = stats.histograms[column]
    overall = stats.overall[column]
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = np.where(hist > 0, (p - overall[None, :]) / overall[None, :], -np.inf)
        cap = np.where(overall > 0, -np.log(overall), np.inf)
    return gains, cap


class BetaLikeness(PrivacyModel):
    """Basic or enhanced β-likeness of ``column``.

    The achieved level is the smallest β the table satisfies: the largest gain over classes
    and values, or, for the enhanced form, ``inf`` when some gain exceeds its ``-ln p`` cap
    (then no β is enough).
    """

    monotonic_with_suppression: ClassVar[bool] = False

    column: str
    beta: float = Field(gt=0)
    variant: Literal["basic", "enhanced"] = "basic"

    def _class_levels(self, stats: ClassStats) -> np.ndarray:
        gains, cap = likeness_gains(stats, self.column)
        worst = gains.max(axis=1) if gains.shape[1] else np.zeros(gains.shape[0])
        if self.variant == "enhanced":
            over_cap = (gains > cap[None, :] + _TOLERANCE).any(axis=1)
            worst = np.where(over_cap, np.inf, worst)
        return worst

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._class_levels(stats) <= self.beta + _TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        levels = self._class_levels(stats)
        return float(max(levels.max(), 0.0)) if len(levels) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.beta + _TOLERANCE

    def __str__(self) -> str:
        return f"{self.variant} {self.beta:g}-likeness({self.column})"
