"""The contract every anonymization algorithm follows.

One input, one result type, one registry (:data:`privgate.core.anonymize.ALGORITHMS`):

* :class:`SearchInput` is the table prepared for the search: the rows (read, never modified),
  their encoding (quasi-identifiers along their hierarchies, sensitive columns factorized) and
  the :class:`~privgate.core.anonymize.SearchSetup` with the privacy models built from the policy;
* :meth:`AnonymizationAlgorithm.anonymize` returns an
  :class:`~privgate.core.anonymize.AnonymizationResult`, from which the release follows;
* :meth:`AnonymizationAlgorithm.plan` says which releases one run makes: one covering every
  quasi-identifier, except for the tiered algorithm (one per tier of the ranking).

A new algorithm is one module: a subclass with a ``name``, :meth:`~AnonymizationAlgorithm.
from_setup` and :meth:`~AnonymizationAlgorithm.anonymize`, listed in the registry and in
:class:`privgate.core.policy.Algorithm`. Nothing else in the pipeline names it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, ClassVar, Protocol

import numpy as np

from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import EncodedTable, FrequencySet, encode_table, factorize
from privgate.core.exceptions import AnonymizationError

__all__ = ["AnonymizationAlgorithm", "PlannedRelease", "RankedAttributes", "SearchInput"]


class RankedAttributes(Protocol):
    """What a search reads of a sensitivity ranking (:class:`privgate.core.ranking.Ranking`):
    the attributes, most important first, and each one's tier (1 = most important)."""

    @property
    def order(self) -> list[str]: ...

    @property
    def tiers(self) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class PlannedRelease:
    """One release of a run: the quasi-identifiers its guarantee covers (and its tier)."""

    covered: tuple[str, ...]
    #: The tier E of a tiered release (it covers tiers 1..E), else ``None``.
    tier: int | None = None


@dataclass(frozen=True)
class SearchInput:
    """A table prepared for the search, shared by every algorithm.

    Attributes
    ----------
    rows : DataFrame or mapping of str to array
        The validated input; algorithms read it and never modify it.
    setup : SearchSetup
        The privacy models, hierarchies, numeric columns and limits from the policy.
    encoded : EncodedTable
        The quasi-identifiers this search covers, encoded along their hierarchies, and the
        sensitive columns the models read.
    ranking : RankedAttributes, optional
        The sensitivity ranking (RFKA and the tiered releases order attributes by it).
    """

    rows: Mapping[str, Any]
    setup: SearchSetup
    encoded: EncodedTable
    ranking: RankedAttributes | None = None
    #: Each row's person as a code ``0..n_persons-1`` (a person-keyed setup), else ``None``.
    persons: np.ndarray | None = None

    @classmethod
    def prepare(
        cls,
        rows: Mapping[str, Any],
        setup: SearchSetup,
        ranking: RankedAttributes | None = None,
    ) -> SearchInput:
        """Check the table against the setup, then encode it (once per run).

        Raises
        ------
        AnonymizationError
            A column the setup needs is missing, or no release can meet the models (``k``
            larger than the table).
        HierarchyError
            A quasi-identifier value is missing or not covered by its hierarchy.
        """
        columns = rows.columns if hasattr(rows, "columns") else list(rows)
        needed = [*setup.quasi_identifiers, *setup.sensitive]
        absent = [c for c in needed if c not in set(columns)]
        if absent:
            raise AnonymizationError(f"column(s) not in the table: {absent}")
        setup.check_feasible(_n_rows(rows))
        encoded = encode_table(rows, setup.hierarchies, setup.sensitive)
        return cls(rows, setup, encoded, ranking, _person_codes(rows, setup.person_key))

    @property
    def covered(self) -> tuple[str, ...]:
        """The quasi-identifiers this search applies the models to."""
        return tuple(self.encoded.names)

    @property
    def n_rows(self) -> int:
        return self.encoded.n_rows

    @cached_property
    def frequency_set(self) -> FrequencySet:
        """The distinct (QI, sensitive) tuples with their counts, built on first use."""
        return self.encoded.frequency_set()

    def covering(self, columns: Sequence[str]) -> SearchInput:
        """The same input, searching only the quasi-identifiers ``columns`` (policy order);
        the others are released as they are."""
        covered = self.setup.covering(columns)
        if covered == self.covered:
            return self
        return replace(self, encoded=self.encoded.select(covered))

    def require_ranking(self, algorithm: str) -> RankedAttributes:
        """The ranking, or a refusal naming the algorithm that needs it."""
        if self.ranking is None:
            raise AnonymizationError(
                f"algorithm {algorithm!r} needs the sensitivity ranking; run the ranking stage "
                "first (the policy's 'ranking' section)"
            )
        return self.ranking


def _person_codes(rows: Mapping[str, Any], person_key: str | None) -> np.ndarray | None:
    """Each row's person as a code; a row without a person key cannot be counted."""
    if person_key is None:
        return None
    if person_key not in rows:
        raise AnonymizationError(f"the person key column {person_key!r} is not in the table")
    codes, _ = factorize(rows[person_key])
    if (codes < 0).any():
        first = int(np.flatnonzero(codes < 0)[0])
        raise AnonymizationError(
            f"column {person_key!r} (privacy.person_key): {int((codes < 0).sum())} row(s) have "
            f"no person key (first at row {first}); every record must name its person"
        )
    return codes.astype(np.int64)


def _n_rows(rows: Mapping[str, Any]) -> int:
    """Rows of a DataFrame or of a ``{column: array}`` mapping."""
    if hasattr(rows, "shape"):
        return int(rows.shape[0])
    return len(next(iter(rows.values()), ()))


class AnonymizationAlgorithm(ABC):
    """An anonymization algorithm: a configured search that transforms a prepared table.

    Subclasses set :attr:`name` (the policy's ``algorithm.name``), build themselves from a
    :class:`SearchSetup` and implement :meth:`anonymize`. They never read files, policies or
    the clock.
    """

    #: The name a policy selects the algorithm by (``algorithm.name``).
    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_setup(cls, setup: SearchSetup) -> AnonymizationAlgorithm:
        """The algorithm configured as the policy asks (models, limits, options).

        Raises
        ------
        AnonymizationError
            The setup asks for something this algorithm cannot guarantee.
        """

    def plan(self, data: SearchInput) -> list[PlannedRelease]:
        """The releases one run makes: by default one, covering every quasi-identifier."""
        return [PlannedRelease(data.covered)]

    @abstractmethod
    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        """Transform the table so that every class of the release satisfies the models.

        Raises
        ------
        AnonymizationError
            No transformation this algorithm can find meets the models within the limits.
        """
