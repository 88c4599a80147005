"""Re-identification risk under the prosecutor model.

The prosecutor knows their target is in the release and knows the target's quasi-identifier
values, so they pick uniformly among the records of the target's class: a record in a class of
size ``|E|`` is re-identified with probability ``1 / |E|``. Three limits a policy can set:

* highest risk: ``max 1/|E|`` over records (``<= 1/k`` is k-anonymity);
* average risk: the mean of ``1/|E|`` over records, which is ``#classes / #records``;
* share of records whose risk exceeds a threshold.

K. El Emam, F. Dankar, "Protecting privacy using k-anonymity", JAMIA 15(5), 2008; ARX's risk
model (Prasser et al.). All three only fall when classes merge or failing classes are
suppressed, so they are monotone under generalization. The average and the share are not
monotone *with suppression*: suppressing a node's small classes can meet them, while a coarser
node that keeps those records in merged classes does not (see
:attr:`PrivacyModel.monotonic_with_suppression`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel

_TOLERANCE = 1e-12


def record_risks(sizes: np.ndarray) -> np.ndarray:
    """Prosecutor risk of a record in each class: ``1 / size``."""
    return 1.0 / np.maximum(sizes, 1)


class HighestRisk(PrivacyModel):
    """No record's prosecutor risk exceeds ``limit`` (every class has ``>= 1/limit`` records)."""

    limit: float = Field(gt=0, le=1)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return record_risks(stats.sizes) <= self.limit + _TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        return float(record_risks(stats.sizes).max()) if len(stats.sizes) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.limit + _TOLERANCE

    @property
    def min_class_size(self) -> int:
        return int(np.ceil(1.0 / self.limit - 1e-9))

    def __str__(self) -> str:
        return f"highest prosecutor risk <= {self.limit:g}"


class AverageRisk(PrivacyModel):
    """The mean prosecutor risk over records, ``#classes / #records``, is at most ``limit``.

    A property of the whole table, not of one class: every class passes
    :meth:`satisfied_by`, and :meth:`table_satisfied` decides.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    limit: float = Field(gt=0, le=1)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return np.ones(len(stats.sizes), dtype=bool)

    def achieved(self, stats: ClassStats) -> float:
        total = stats.sizes.sum()
        return float(len(stats.sizes) / total) if total else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.limit + _TOLERANCE

    def table_satisfied(self, stats: ClassStats) -> bool:
        return self.holds(self.achieved(stats))

    def __str__(self) -> str:
        return f"average prosecutor risk <= {self.limit:g}"


class RiskShareAbove(PrivacyModel):
    """At most ``limit`` of the records have a prosecutor risk above ``threshold``."""

    monotonic_with_suppression: ClassVar[bool] = False

    threshold: float = Field(gt=0, le=1)
    limit: float = Field(ge=0, le=1)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return np.ones(len(stats.sizes), dtype=bool)

    def achieved(self, stats: ClassStats) -> float:
        total = stats.sizes.sum()
        if not total:
            return 0.0
        above = record_risks(stats.sizes) > self.threshold + _TOLERANCE
        return float(stats.sizes[above].sum() / total)

    def holds(self, achieved: float) -> bool:
        return achieved <= self.limit + _TOLERANCE

    def table_satisfied(self, stats: ClassStats) -> bool:
        return self.holds(self.achieved(stats))

    def __str__(self) -> str:
        return f"share of records with risk > {self.threshold:g} <= {self.limit:g}"
