"""δ-presence: the release does not tell whether a person of the population is in it.

M. E. Nergiz, M. Atzori, C. Clifton, "Hiding the presence of individuals from shared
databases", SIGMOD 2007. The release is a research subset of a declared population table. An
attacker who knows someone is in the population and sees the release estimates the chance that
this person is in it as ``release records of their class / population records of their class``.
δ-presence keeps that chance within ``[delta_min, delta_max]`` for *every* person of the
population, so it is two conditions:

* :class:`PresenceUpperBound`: every class's share is at most ``delta_max``;
* :class:`PresenceLowerBound`: every class's share is at least ``delta_min``, and (when
  ``delta_min > 0``) no person of the population falls outside every class: the release would
  tell that person's presence (zero) outright. A class whose records are suppressed is such a
  case, as the release shows it (ARX checks these population classes too; it treats records it
  suppressed as still present).

Both are monotone under generalization (a merged class's share is a weighted mean of its
parts'), not with suppression: a passing class merged with a failing one can fail.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel
from privgate.core.privacy._k_map import require_population

__all__ = ["PresenceLowerBound", "PresenceUpperBound", "presence_shares"]

_TOLERANCE = 1e-12


def presence_shares(stats: ClassStats, model: PrivacyModel) -> np.ndarray:
    """Each class's records divided by its population records (``inf`` when the population
    has no one in the class: the release holds people the population does not)."""
    population = require_population(stats, model).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(population > 0, stats.sizes / np.maximum(population, 1), np.inf)


class PresenceUpperBound(PrivacyModel):
    """Every class's share of its population is at most ``delta_max``."""

    model_config = {"arbitrary_types_allowed": True}
    monotonic_with_suppression: ClassVar[bool] = False

    delta_max: float = Field(gt=0, le=1)
    population: Any = Field(exclude=True, repr=False)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return presence_shares(stats, self) <= self.delta_max + _TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        shares = presence_shares(stats, self)
        return float(shares.max()) if len(shares) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.delta_max + _TOLERANCE

    def __str__(self) -> str:
        return f"δ-presence share <= {self.delta_max:g} (population {self.population.source})"


class PresenceLowerBound(PrivacyModel):
    """Every person of the population is in a class whose share is at least ``delta_min``."""

    model_config = {"arbitrary_types_allowed": True}
    monotonic_with_suppression: ClassVar[bool] = False

    delta_min: float = Field(gt=0, le=1)
    population: Any = Field(exclude=True, repr=False)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return presence_shares(stats, self) >= self.delta_min - _TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        """The smallest share of any person of the population (0 when one is outside every
        class)."""
        shares = presence_shares(stats, self)
        if stats.population_outside > 0 or not len(shares):
            return 0.0
        return float(shares.min())

    def holds(self, achieved: float) -> bool:
        return achieved >= self.delta_min - _TOLERANCE

    def table_satisfied(self, stats: ClassStats) -> bool:
        return self.holds(self.achieved(stats))

    def __str__(self) -> str:
        return f"δ-presence share >= {self.delta_min:g} (population {self.population.source})"
