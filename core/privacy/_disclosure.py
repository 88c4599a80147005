"""δ-disclosure privacy of a sensitive column (Brickell and Shmatikov, "The cost of privacy:
destruction of data-mining utility in anonymized data publishing", KDD 2008).

For every class and every sensitive value ``s`` of the table,

    | log2( p_class(s) / p_table(s) ) | < δ

so that seeing a record's class changes the odds of no sensitive value by a factor ``2^δ`` or
more, in either direction. Base-2 logarithms, as ARX's ``DDisclosurePrivacy``.

A value absent from a class (``p_class(s) = 0``) has an infinite log ratio. The paper's
definition counts it (every class must hold every value): ``absent_values="fail"``, the
default. ARX skips absent values (``absent_values="ignored"``), which is weaker: a class that
holds only some values can then reveal that a person does *not* have the others. The strict
form is monotone under generalization (the condition is an interval on ``p_class(s)``, and a
merged class's frequencies are a weighted mean of its parts'); ARX's is not (a value present in
only one part is diluted by the merge), so a search over it evaluates every node.

``p_table`` is the *input's* distribution, as for t-closeness (the search's, and the gate's
through :func:`privgate.core.privacy.reference_columns`). With a person key, both
distributions weigh each person 1, split over their records (docs/PERSONS.md).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel

__all__ = ["DeltaDisclosure", "disclosure_ratios"]

#: Relative slack on person-weighted log ratios (conservative: never lenient), see
#: :func:`disclosure_ratios`.
_RATIO_SLACK = 1e-9


def disclosure_ratios(stats: ClassStats, column: str, ignore_absent: bool) -> np.ndarray:
    """``|log2(p_class / p_table)|`` of every (class, value) whose table frequency is
    positive; absent values give ``inf``, or ``0`` when ``ignore_absent``."""
    hist = stats.histograms[column]
    overall = stats.overall[column]
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    present = overall > 0
    p, q, held = p[:, present], overall[present], hist[:, present] > 0
    with np.errstate(divide="ignore"):
        ratios = np.abs(np.log2(p / q[None, :]))
    if np.issubdtype(hist.dtype, np.floating):
        # Person weights are sums of fractions: a class whose exact ratio is 2^δ (the only
        # exact ties, δ a whole number) can come out a hair below it (4 - ulp persons in the
        # input's total). The log ratios are raised by this relative slack before the strict
        # comparison, so an exact tie never passes by rounding (as recursive (c,l)).
        ratios = ratios * (1 + _RATIO_SLACK)
    return np.where(held, ratios, 0.0 if ignore_absent else np.inf)


class DeltaDisclosure(PrivacyModel):
    """δ-disclosure privacy of ``column``: every log ratio strictly below ``delta``.

    The achieved level is the largest log ratio over classes and values; the model holds when
    it is strictly below ``delta``.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    column: str
    delta: float = Field(gt=0)
    absent_values: Literal["fail", "ignored"] = "fail"

    @model_validator(mode="before")
    @classmethod
    def _monotone_when_strict(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "monotonic": data.get("absent_values", "fail") == "fail"}
        return data

    def _class_levels(self, stats: ClassStats) -> np.ndarray:
        ratios = disclosure_ratios(stats, self.column, self.absent_values == "ignored")
        return ratios.max(axis=1) if ratios.shape[1] else np.zeros(ratios.shape[0])

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._class_levels(stats) < self.delta

    def achieved(self, stats: ClassStats) -> float:
        levels = self._class_levels(stats)
        return float(levels.max()) if len(levels) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved < self.delta

    def __str__(self) -> str:
        suffix = ", absent values ignored" if self.absent_values == "ignored" else ""
        return f"{self.delta:g}-disclosure privacy({self.column}{suffix})"
