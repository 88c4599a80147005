"""k-map: every record of the release matches at least ``k`` people of the population.

L. Sweeney, "Computational disclosure control", PhD thesis, MIT, 2001 (k-map); K. El Emam,
F. Dankar, "Protecting privacy using k-anonymity", JAMIA 15(5), 2008. k-anonymity counts the
records *of the release* that share a record's values; an attacker who matches the release
against a register of the population meets every person of the population with those values.
k-map asks that this number be at least ``k``, so a sample can stay finer than k-anonymity
would allow.

Two ways to know the population (as in ARX):

* :class:`KMap` with a declared population table: the count is exact (each class's matching
  population records, see :mod:`privgate.core.privacy._population`);
* :class:`EstimatedKMap` with only the population's size: a class's population count is
  modelled as Poisson (or zero-truncated Poisson) with mean ``f * k`` at the sampling fraction
  ``f = records / population size``, and the release must be ``k'``-anonymous for the
  smallest ``k'`` at which a class of fewer than ``k`` people would have been seen at most
  with probability ``significance`` (ARX's ``KMap`` with a ``CellSizeEstimator``). The
  guarantee is statistical, at that significance level.

Both are monotone: merging classes adds their population counts, and suppressing a class
leaves every other class's count unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy._base import PrivacyModel

__all__ = ["EstimatedKMap", "KMap", "derived_k"]


def require_population(stats: ClassStats, model: PrivacyModel) -> np.ndarray:
    """The population counts of ``stats``, or a refusal naming the model that needs them."""
    if stats.population_sizes is None:
        raise AnonymizationError(
            f"{model} needs each class's population count, which this step did not provide "
            "(only the optimal and the full-domain searches and the gate count a population)"
        )
    return stats.population_sizes


class KMap(PrivacyModel):
    """Every class matches at least ``k`` records of the declared population table."""

    model_config = {"arbitrary_types_allowed": True}

    k: int = Field(ge=1)
    population: Any = Field(exclude=True, repr=False)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return require_population(stats, self) >= self.k

    def achieved(self, stats: ClassStats) -> float:
        counts = require_population(stats, self)
        return float(counts.min()) if len(counts) else float("inf")

    def holds(self, achieved: float) -> bool:
        return achieved >= self.k

    def __str__(self) -> str:
        return f"{self.k}-map (population {self.population.source})"


def derived_k(
    k: int,
    sampling_fraction: float,
    significance: float,
    estimator: Literal["poisson", "zero_truncated_poisson"],
) -> tuple[int, float]:
    """The class size ``k'`` a sample needs for ``k``-map at a significance level, and the
    type-I error it reaches (ARX's ``KMap.calculateKPoisson`` / ``calculateKZeroPoisson``).

    A sampled class of the population's class of size ``F`` has about ``Poisson(f * F)``
    records; ``k'`` is the smallest count whose cumulative probability under ``F = k`` reaches
    ``1 - significance`` (so a class of at least ``k'`` records comes from fewer than ``k``
    people with probability at most ``significance``). Never above ``k``.
    """
    from scipy.stats import poisson  # here, not at import: scipy.stats takes ~1 s to import

    lam = sampling_fraction * k
    threshold = 1.0 - significance
    if estimator == "poisson":
        counter, value = 0, 0.0
        while value < threshold:
            value = float(poisson.cdf(counter, lam))
            counter += 1
            if counter >= k:
                value = 1.0
                break
        return min(k, counter + 1), 1.0 - value
    not_zero = 1.0 - float(poisson.pmf(0, lam))
    counter, value = 1, 0.0
    while value < threshold:
        value += float(poisson.pmf(counter, lam)) / not_zero
        counter += 1
        if counter >= k:
            value = 1.0
            break
    return min(k, counter), 1.0 - value


class EstimatedKMap(PrivacyModel):
    """k-map estimated from the population's size: each class has at least ``k'`` records.

    ``k'`` (:func:`derived_k`) depends on the sampling fraction ``records / population_size``,
    where ``records`` are the *input's* in the search and in the gate alike
    (``stats.sampled_units``, which the gate sets from the input's size it is given): the
    released classes are cells of that sample, and suppressed records were sampled too and
    are still in the population. (The gate once used the release's own records: with 38 of
    50 suppressed, classes of 4 passed a ``k'`` of 4 where the input's fraction asks 5.)
    A table checked alone, its size unknown, reads its own records.

    With a person key (``stats.person_risks``), the release is a sample of *persons*: class
    sizes are distinct persons, the fraction is ``input persons / population_size`` (the
    population counts people), and the model holds only when every released person sits in
    exactly one class. A person whose records sit in several classes (an age at admission that
    moved) is not one draw of one population cell, the Poisson model's premise: the estimate
    is then undefined (``nan``, never holds), as for population uniques.
    """

    k: int = Field(ge=1)
    population_size: int = Field(ge=1)
    significance: float = Field(default=0.01, ge=0, le=1)
    estimator: Literal["poisson", "zero_truncated_poisson"] = "zero_truncated_poisson"

    def required_size(self, records: int) -> int:
        """``k'`` for a table of ``records`` records (1 for an empty one: no class to check)."""
        if records <= 0:
            return 1
        fraction = min(1.0, records / self.population_size)
        return derived_k(self.k, fraction, self.significance, self.estimator)[0]

    @staticmethod
    def _units(stats: ClassStats) -> int:
        """The sampled units: the input's when known (``stats.sampled_units``: the suppressed
        units were sampled too), else the classes' records, or with a person key persons."""
        if stats.sampled_units is not None:
            return stats.sampled_units
        if stats.person_risks is not None:
            return len(stats.person_risks)
        return int(stats.sizes.sum())

    @staticmethod
    def _spans_classes(stats: ClassStats) -> bool:
        """With a person key, whether some person's records sit in several classes."""
        return stats.person_risks is not None and len(stats.person_risks) != stats.sizes.sum()

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return stats.sizes >= self.required_size(self._units(stats))

    def table_satisfied(self, stats: ClassStats) -> bool:
        return not self._spans_classes(stats)

    def achieved(self, stats: ClassStats) -> float:
        """The smallest class size measured against ``k'``, rescaled to ``k``: ``k`` times
        ``min size / k'`` capped at ``k`` (``>= k`` exactly when every class reaches ``k'``);
        ``nan`` when a person sits in several classes."""
        if not len(stats.sizes):
            return float("inf")
        if self._spans_classes(stats):
            return float("nan")
        need = self.required_size(self._units(stats))
        smallest = float(stats.sizes.min())
        return float(self.k) if smallest >= need else self.k * smallest / need

    def holds(self, achieved: float) -> bool:
        return achieved >= self.k - 1e-9

    @property
    def min_class_size(self) -> int:
        return 1

    def __str__(self) -> str:
        return (
            f"{self.k}-map estimated ({self.estimator.replace('_', '-')}, population "
            f"{self.population_size}, significance {self.significance:g})"
        )
