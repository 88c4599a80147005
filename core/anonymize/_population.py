"""Population counts for the full-domain searches (k-map, δ-presence).

The models read each class's population count from :class:`~privgate.core.encoding.ClassStats`;
this module adds it to the class statistics a search computes, from one
:class:`~privgate.core.privacy.PopulationIndex` per frequency set (built once, reused by every
node and every later search on the same table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from privgate.core.encoding import ClassStats, FrequencySet
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import (
    PopulationIndex,
    PresenceLowerBound,
    PresenceUpperBound,
    PrivacyModel,
    population_of,
)

__all__ = [
    "class_codes_of",
    "population_index",
    "require_population_support",
    "with_population_counts",
]


def population_index(freq: FrequencySet, models: Sequence[PrivacyModel]) -> PopulationIndex | None:
    """The population of ``models`` mapped onto ``freq``'s codes (``None``: no population).

    Raises
    ------
    AnonymizationError
        δ-presence is asked for and the input is not a subset of the population: some input
        records have fewer matching population records than input records with their values.
    """
    population = population_of(models)
    if population is None:
        return None
    key = ("population_index", id(population))
    if key not in freq.cache:
        index = PopulationIndex(population, freq.table)
        freq.cache[key] = index
        if any(isinstance(m, PresenceLowerBound | PresenceUpperBound) for m in models):
            _check_subset(freq, index)
    return freq.cache[key]


def _check_subset(freq: FrequencySet, index: PopulationIndex) -> None:
    """Refuse an input that is not a research subset of the population (δ-presence's
    shares would exceed 1 and mean nothing)."""
    bottom = [0] * len(freq.table.columns)
    class_ids, n_classes = freq.classes(bottom)
    sizes = np.bincount(class_ids, weights=freq.counts, minlength=n_classes)
    first = np.unique(class_ids, return_index=True)[1]
    codes = freq.generalized_codes(bottom)[first]
    counts = index.counts(bottom, [codes[:, j] for j in range(codes.shape[1])])
    excess = sizes - counts
    if (excess > 0).any():
        worst = int(np.argmax(excess))
        values = {
            col.name: str(col.labels[0][codes[worst, j]])
            for j, col in enumerate(freq.table.columns)
        }
        raise AnonymizationError(
            f"δ-presence needs the input to be a subset of the population table "
            f"{index.population.source}: {int(excess[excess > 0].sum())} input record(s) have "
            f"no population record left to match, e.g. {values} ({int(sizes[worst])} in the "
            f"input, {int(counts[worst])} in the population)"
        )


def with_population_counts(
    stats: ClassStats,
    index: PopulationIndex | None,
    levels: Sequence[int],
    class_codes: Sequence[np.ndarray],
) -> ClassStats:
    """``stats`` with each class's population count at ``levels`` (unchanged without an
    index); ``class_codes[j]`` holds each class's code of quasi-identifier ``j``."""
    if index is None:
        return stats
    counts = index.counts(levels, class_codes)
    return replace(
        stats, population_sizes=counts, population_outside=index.total - int(counts.sum())
    )


def class_codes_of(
    freq: FrequencySet, levels: Sequence[int], class_ids: np.ndarray, n_classes: int
) -> list[np.ndarray]:
    """Each class's generalized code per quasi-identifier, from the tuples' class ids."""
    first = np.zeros(n_classes, dtype=np.int64)
    first[class_ids[::-1]] = np.arange(len(class_ids))[::-1]
    codes = freq.generalized_codes(levels)[first]
    return [codes[:, j] for j in range(codes.shape[1])]


def require_population_support(models: Sequence[PrivacyModel], algorithm: str) -> None:
    """Refuse, before any work, an algorithm that cannot count a population."""
    if population_of(models) is not None:
        raise AnonymizationError(
            f"algorithm {algorithm!r} cannot check k-map or δ-presence (they compare each "
            "class with the population table); use algorithm 'optimal' or 'datafly'"
        )
