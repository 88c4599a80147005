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

Population uniqueness (:class:`PopulationUniques`) bounds the journalist's success instead:
the share of the *population* estimated to be unique on the release's quasi-identifiers
(:func:`privgate.core.risk.population_uniques`: Pitman, Zayatz, SNB or Dankar's rule).

The whole-table limits may **suppress records to meet their limit**, as ARX's risk criteria
do, when the policy says ``suppress: true`` (:func:`suppress_to_meet`, one definition for the
search; the gate only verifies the written release, whose suppressed records are absent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel
from privgate.core.risk import SizeHistogram, population_uniques

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

    With a person key (``stats.person_risks``), the mean over persons of each person's risk,
    ``1 / persons`` of the smallest class holding one of their records (a person whose
    records sit in one class each: ``#classes / #persons``).

    A property of the whole table, not of one class: every class passes
    :meth:`satisfied_by`, and :meth:`table_satisfied` decides.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    limit: float = Field(gt=0, le=1)
    #: May the search suppress records (smallest classes first) to meet the limit.
    suppress: bool = False

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return np.ones(len(stats.sizes), dtype=bool)

    def achieved(self, stats: ClassStats) -> float:
        if stats.person_risks is not None:  # per person: the mean of each person's risk
            risks = stats.person_risks
            return float(risks.mean()) if len(risks) else 0.0
        total = stats.sizes.sum()
        return float(len(stats.sizes) / total) if total else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.limit + _TOLERANCE

    def table_satisfied(self, stats: ClassStats) -> bool:
        return self.holds(self.achieved(stats))

    def __str__(self) -> str:
        return f"average prosecutor risk <= {self.limit:g}"


class RiskShareAbove(PrivacyModel):
    """At most ``limit`` of the records have a prosecutor risk above ``threshold``.

    With a person key (``stats.person_risks``), at most ``limit`` of the persons: a person's
    risk is that of the smallest class holding one of their records.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    threshold: float = Field(gt=0, le=1)
    limit: float = Field(ge=0, le=1)
    #: May the search suppress records (smallest classes first) to meet the limit.
    suppress: bool = False

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return np.ones(len(stats.sizes), dtype=bool)

    def achieved(self, stats: ClassStats) -> float:
        if stats.person_risks is not None:  # per person: the share of persons above
            risks = stats.person_risks
            return float((risks > self.threshold + _TOLERANCE).mean()) if len(risks) else 0.0
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


class PopulationUniques(PrivacyModel):
    """At most ``limit`` of the population is estimated to be unique on the quasi-identifiers.

    The release is a sample of ``population_size`` people; the estimate reads only the
    release's class sizes (the gate: as written; the search: the kept classes), so search and
    gate share this one definition. An estimator that does not converge gives ``nan``, which
    never holds: the gate blocks rather than guess. Not known to be monotone under
    generalization (the fitted estimators are not), so the search does not prune with it.

    With a person key, class sizes are persons and the release a sample of persons; that
    holds only when every person sits in exactly one class. A release where some person's
    records sit in several classes has no such sample: ``nan``, which never holds.
    """

    monotonic: bool = False
    monotonic_with_suppression: ClassVar[bool] = False

    limit: float = Field(gt=0, lt=1)
    population_size: int = Field(ge=1)
    estimator: Literal["pitman", "zayatz", "snb", "dankar"] = "dankar"
    suppress: bool = False

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return np.ones(len(stats.sizes), dtype=bool)

    def achieved(self, stats: ClassStats) -> float:
        if stats.person_risks is not None and len(stats.person_risks) != stats.sizes.sum():
            return math.nan  # a person in several classes: the sample is not one of persons
        hist = SizeHistogram.from_class_sizes(stats.sizes)
        if hist.records == 0:
            return 0.0
        if hist.records > self.population_size:
            return math.nan  # not a sample of that population: nothing to estimate
        value, _ = population_uniques(hist, self.population_size, self.estimator)
        return value / self.population_size

    def holds(self, achieved: float) -> bool:
        return not math.isnan(achieved) and achieved <= self.limit + _TOLERANCE

    def table_satisfied(self, stats: ClassStats) -> bool:
        return self.holds(self.achieved(stats))

    def __str__(self) -> str:
        return (
            f"estimated population uniques ({self.estimator}, population "
            f"{self.population_size}) <= {self.limit:g}"
        )


def suppress_to_meet(
    models: Sequence[PrivacyModel],
    sizes: np.ndarray,
    ok: np.ndarray,
    allowance: int,
    kept: Callable[[np.ndarray], ClassStats],
) -> np.ndarray | None:
    """The classes to keep so that every whole-table limit holds, suppressing more records.

    Called when the classes ``ok`` (the others already suppressed) fail a whole-table limit
    and a model that failed allows suppression (``suppress``). Classes are suppressed in
    ascending size (the riskiest first, as ARX does), one whole size at a time (every class
    of size 1, then of size 2, ...), while the suppressed records stay within ``allowance``;
    the first prefix at which every model's table condition holds is returned, ``None`` when
    none does. Deterministic, so the release it produces is the one the gate verifies.

    Parameters
    ----------
    sizes : ndarray
        Class sizes (records, or persons).
    kept : callable
        Maps a keep-mask to the statistics of the kept classes.
    """
    failing = [m for m in models if not m.table_satisfied(kept(ok))]
    if not failing or not all(getattr(m, "suppress", False) for m in failing):
        return None
    outliers = int(sizes[~ok].sum())
    keep = ok.copy()
    for size in np.unique(sizes[ok]):
        group = keep & (sizes == size)
        outliers += int(sizes[group].sum())
        if outliers > allowance:
            return None
        keep &= ~group
        if not keep.any():
            return None
        stats = kept(keep)
        if all(m.table_satisfied(stats) for m in models):
            return keep
    return None
