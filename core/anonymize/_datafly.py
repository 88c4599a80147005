"""Datafly (Sweeney, 1998) and its multi-attribute variant.

L. Sweeney, "Datafly: a system for providing anonymity in medical data", Database Security XI,
1998; and "Achieving k-anonymity privacy protection using generalization and suppression",
IJUFKS 10(5), 2002.

Both are greedy full-domain generalizations. While more records sit in failing equivalence
classes than the suppression limit allows, generalize one quasi-identifier by one level: the one
with the most distinct values in the current table. Then suppress the records of the classes
that still fail. They differ only in how a tie on the number of distinct values is broken:

* Datafly takes the first tied attribute in declaration order, an arbitrary choice;
* the multi-attribute variant looks at the tied attributes' value distributions and takes the
  one with the highest *approximation degree*, the standard deviation of its values'
  frequencies. A skewed attribute is the one whose rare values create the small classes, so
  generalizing it first removes more outliers per level of information given up.

Complexity: at most ``sum(heights)`` steps, each a pass over the distinct tuples of the
frequency set (never over the rows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np

from privgate.core.anonymize._generalize import FullDomainAlgorithm
from privgate.core.anonymize._lattice import NodeChecker
from privgate.core.anonymize._population import (
    class_codes_of,
    population_index,
    with_population_counts,
)
from privgate.core.anonymize._result import Generalization
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import PrivacyModel, suppress_to_meet


def approximation_degree(codes: np.ndarray, counts: np.ndarray) -> float:
    """Standard deviation of the frequencies of an attribute's (generalized) values."""
    freq = np.bincount(codes, weights=counts)
    freq = freq[freq > 0]
    return float(freq.std()) if len(freq) else 0.0


def _failing_mask(
    freq: FrequencySet,
    levels: Sequence[int],
    models: Sequence[PrivacyModel],
    allowance: int | None = None,
):
    stats, class_ids = freq.class_stats(levels)
    index = population_index(freq, models)
    if index is not None:
        codes = class_codes_of(freq, levels, class_ids, len(stats.sizes))
        stats = with_population_counts(stats, index, levels, codes)
    ok = np.ones(len(stats.sizes), dtype=bool)
    for model in models:
        ok &= model.satisfied_by(stats)
    if allowance is not None and int(stats.sizes[~ok].sum()) <= allowance:
        # A risk limit allowed to suppress: the same classes NodeChecker.evaluate suppressed
        # (whole class sizes at a time, so the classes' order does not matter).
        kept = partial(NodeChecker._kept, stats)
        if not all(m.table_satisfied(kept(ok)) for m in models):
            meets = suppress_to_meet(models, stats.sizes, ok, allowance, kept)
            ok = ok if meets is None else meets
    return ~ok[class_ids], int(stats.sizes[~ok].sum()), len(stats.sizes)


def _table_level_ok(
    freq: FrequencySet, levels: Sequence[int], failing: np.ndarray, models: Sequence[PrivacyModel]
) -> bool:
    """Whole-table conditions (average risk, ...) on the records that would be kept."""
    if all(type(m).table_satisfied is PrivacyModel.table_satisfied for m in models):
        return True
    kept = ~failing
    sub = FrequencySet(
        freq.table,
        freq.qi_codes[kept],
        freq.sensitive[kept],
        freq.counts[kept],
        np.zeros(0, dtype=np.int64),
    )
    stats, class_ids = sub.class_stats(levels)
    index = population_index(freq, models)
    if index is not None:
        codes = class_codes_of(sub, levels, class_ids, len(stats.sizes))
        stats = with_population_counts(stats, index, levels, codes)
    return all(m.table_satisfied(stats) for m in models)


def failing_tuples(
    freq: FrequencySet,
    levels: Sequence[int],
    models: Sequence[PrivacyModel],
    allowance: int | None = None,
) -> np.ndarray:
    """Which distinct tuples fall in a class that fails a model at ``levels`` (with
    ``allowance``, also those a risk limit suppresses to meet itself, as the optimal search's
    :class:`NodeChecker` does)."""
    return _failing_mask(freq, levels, models, allowance)[0]


class Datafly(FullDomainAlgorithm):
    """Sweeney's Datafly: generalize the attribute with the most distinct values first.

    Parameters
    ----------
    models : sequence of PrivacyModel
        Every class of the release must satisfy all of them.
    suppression_limit : float
        Largest fraction of input records that may be suppressed.
    """

    name = "datafly"

    def __init__(self, models: Sequence[PrivacyModel], suppression_limit: float = 0.0) -> None:
        if not models:
            raise ValueError("Datafly needs at least one privacy model")
        if not 0.0 <= suppression_limit <= 1.0:
            raise ValueError(
                f"The 'suppression_limit' parameter must be in [0, 1]. Got {suppression_limit}."
            )
        self.models = list(models)
        self.suppression_limit = suppression_limit

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> Datafly:
        return cls(setup.models, setup.suppression_limit)

    def _tie_break(self, freq: FrequencySet, codes: np.ndarray, tied: list[int]) -> int:
        """Among attributes tied on distinct values, the first in declaration order."""
        return tied[0]

    def search(self, freq: FrequencySet) -> Generalization:
        """Search the generalization levels and the records to suppress.

        Raises
        ------
        AnonymizationError
            If even the fully generalized table fails the models beyond the suppression limit
            (for example ``k`` larger than the table).
        """
        table = freq.table
        n_rows = table.n_rows
        allowance = math.floor(self.suppression_limit * n_rows + 1e-9)
        heights = table.heights
        levels = [0] * len(heights)
        steps: list[dict] = []
        while True:
            failing, outliers, n_classes = _failing_mask(freq, levels, self.models)
            if outliers <= allowance and _table_level_ok(freq, levels, failing, self.models):
                break
            candidates = [j for j, h in enumerate(heights) if levels[j] < h]
            if not candidates:
                names = ", ".join(str(m) for m in self.models)
                raise AnonymizationError(
                    f"{names} cannot be reached: even with every quasi-identifier fully "
                    f"generalized, {outliers} of {n_rows} records fail, and the suppression "
                    f"limit allows {allowance}"
                )
            codes = freq.generalized_codes(levels)
            distinct = {j: len(np.unique(codes[:, j])) for j in candidates}
            most = max(distinct.values())
            tied = [j for j in candidates if distinct[j] == most]
            chosen = tied[0] if len(tied) == 1 else self._tie_break(freq, codes, tied)
            steps.append(
                {
                    "generalize": table.names[chosen],
                    "to_level": levels[chosen] + 1,
                    "distinct_values": most,
                    "tied_with": [table.names[j] for j in tied if j != chosen],
                    "outliers_before": outliers,
                    "classes_before": n_classes,
                }
            )
            levels[chosen] += 1
        suppressed = failing[freq.row_to_tuple]
        return Generalization(
            algorithm=self.name,
            levels=dict(zip(table.names, levels, strict=True)),
            suppressed=suppressed,
            steps=steps,
        )


class MultiAttributeDatafly(Datafly):
    """Datafly whose ties are broken by the highest approximation degree (see module notes)."""

    name = "multi_attribute_datafly"

    def _tie_break(self, freq: FrequencySet, codes: np.ndarray, tied: list[int]) -> int:
        degrees = [approximation_degree(codes[:, j], freq.counts) for j in tied]
        return tied[int(np.argmax(degrees))]  # argmax keeps declaration order on equal degrees
