"""Full-domain generalization: what optimal search and Datafly share.

A full-domain algorithm searches a frequency set for one generalization level per
quasi-identifier (:meth:`FullDomainAlgorithm.search`, which needs no row: the Dask path runs it
on a merged histogram). Through the contract, the levels found are applied to the encoded rows:
every kept record's quasi-identifiers become their labels at those levels.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from privgate.core.anonymize._contract import AnonymizationAlgorithm, SearchInput
from privgate.core.anonymize._release import release_table
from privgate.core.anonymize._result import AnonymizationResult, Generalization
from privgate.core.encoding import EncodedTable, FrequencySet

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FullDomainAlgorithm",
    "apply_generalization",
    "generalization_result",
    "generalized_labels",
]


def generalized_labels(
    encoded: EncodedTable, levels: dict[str, int], suppressed: np.ndarray
) -> dict[str, np.ndarray]:
    """Each encoded quasi-identifier's label at its level, for every kept row (input order)."""
    keep = ~np.asarray(suppressed, dtype=bool)
    labels = {}
    for col in encoded.columns:
        level = levels[col.name]
        labels[col.name] = col.labels[level][col.level_maps[level][col.codes[keep]]]
    return labels


def generalization_result(
    found: Generalization, encoded: EncodedTable, algorithm: str | None = None
) -> AnonymizationResult:
    """The contract's result of a full-domain generalization of the ``encoded`` rows."""
    heights = dict(zip(encoded.names, encoded.heights, strict=True))
    return AnonymizationResult(
        algorithm=algorithm or found.algorithm,
        covered=tuple(encoded.names),
        suppressed=found.suppressed,
        labels=generalized_labels(encoded, found.levels, found.suppressed),
        transformation={q: f"level {lvl}/{heights[q]}" for q, lvl in found.levels.items()},
        levels=dict(found.levels),
        steps=found.steps,
        details=dict(found.details),
    )


def apply_generalization(
    frame: pd.DataFrame,
    encoded: EncodedTable,
    found: Generalization,
    released_columns: Sequence[str],
) -> pd.DataFrame:
    """The release of a generalization found on ``encoded``'s frequency set, for experiments
    that call :meth:`FullDomainAlgorithm.search` directly (benchmarks, tests): QIs replaced by
    their labels, suppressed records removed, input order and index kept."""
    return release_table(frame, generalization_result(found, encoded), released_columns)


class FullDomainAlgorithm(AnonymizationAlgorithm):
    """Global recoding: one level per quasi-identifier for the whole table, plus suppression."""

    @abstractmethod
    def search(self, freq: FrequencySet) -> Generalization:
        """The levels and the suppressed records, found on the frequency set alone."""

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        freq = data.frequency_set
        result = generalization_result(self.search(freq), data.encoded, self.name)
        result.details["distinct_tuples"] = int(len(freq.counts))
        return result
