"""Cell suppression on top of the full-domain optimum (local suppression, as in sdcMicro).

The optimal full-domain node removes whole records whose class fails. Most of those records
are lost for one or two rare values: local suppression releases them instead with those cells
set to the top of their hierarchy (``*``), keeping the node's labels elsewhere.

How. The optimal search runs as the policy says. Its suppressed records are then placed by
suppression *patterns*, fewest cells first (every set of one quasi-identifier, then every pair,
...): under a pattern, the records still unplaced are grouped by their node labels with the
pattern's cells starred, and every group that satisfies the models is released that way. What
no pattern places (the last pattern stars every cell) is suppressed whole, within the limit.

Semantics the gate can check. Unlike sdcMicro, whose ``NA`` matches any value when it counts
k, a ``*`` cell here is the top of its hierarchy and counts as the text ``*``, exactly as the
gate reads the written file: a starred record shares a class only with records showing the
same cells, so the release is k-anonymous as written, with no assumption about what ``*``
could hide. A class of the file may join groups of several patterns (the same text reached
twice) or a node class: a union of satisfying classes, which the models allowed here survive
(k, distinct l-diversity, the highest risk; the policy refuses the others).

Cost: at most ``2^m`` patterns for ``m`` quasi-identifiers, each a grouping of the records
still unplaced (a few hundred on Adult); beyond ``MAX_PATTERNS`` the remaining records go
straight to the all-``*`` pattern.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from privgate.core.anonymize._contract import AnonymizationAlgorithm, SearchInput
from privgate.core.anonymize._generalize import generalized_labels
from privgate.core.anonymize._local_recoding import LocalRecoding
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import ClassStats, factorize
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import PrivacyModel

__all__ = ["LocalSuppression"]

#: Patterns tried before the all-``*`` one (``2^12``: every pattern of up to 12 attributes).
MAX_PATTERNS = 4096


def _patterns(m: int):
    tried = 0
    for size in range(1, m):
        for pattern in combinations(range(m), size):
            if tried >= MAX_PATTERNS:
                return
            tried += 1
            yield pattern


class LocalSuppression(AnonymizationAlgorithm):
    """The optimal full-domain node, then cell suppression instead of record suppression.

    Parameters
    ----------
    models, suppression_limit, metric
        As for :class:`OptimalLattice`; only models that survive a union of satisfying
        classes (the same as :class:`LocalRecoding`).
    """

    name = "local_suppression"

    def __init__(
        self, models: Sequence[PrivacyModel], suppression_limit: float = 0.0, metric: str = "loss"
    ) -> None:
        LocalRecoding(models)  # the same refusal, by name
        self.models = list(models)
        self.suppression_limit = suppression_limit
        self.metric = metric

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> LocalSuppression:
        return cls(setup.models, setup.suppression_limit, metric=setup.search_metric())

    def _satisfied(self, data: SearchInput, rows: np.ndarray, class_ids: np.ndarray, n: int):
        encoded = data.encoded
        codes = {s: encoded.sensitive_codes[s][rows] for s in encoded.sensitive_codes}
        stats = ClassStats.from_labels(
            class_ids, n, np.ones(len(rows)), codes, encoded.sensitive_values
        )
        ok = np.ones(n, dtype=bool)
        for model in self.models:
            ok &= model.satisfied_by(stats)
        return ok

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        if data.persons is not None:
            raise AnonymizationError(
                "local suppression counts records; a person key needs 'optimal'"
            )
        encoded = data.encoded
        found = OptimalLattice(self.models, self.suppression_limit, self.metric).search(
            data.frequency_set
        )
        n, m = encoded.n_rows, len(encoded.columns)
        text = generalized_labels(encoded, found.levels, np.zeros(n, dtype=bool))
        columns = [np.asarray(text[c.name], dtype=object) for c in encoded.columns]
        tops = [c.labels[c.height][0] for c in encoded.columns]
        remaining = np.flatnonzero(found.suppressed)
        starred = np.zeros((n, m), dtype=bool)
        steps = []
        for pattern in [*_patterns(m), tuple(range(m))]:
            if not len(remaining):
                break
            key = np.zeros(len(remaining), dtype=np.int64)
            for j in range(m):
                values = (
                    columns[j][remaining]
                    if j not in pattern
                    else np.full(len(remaining), tops[j], dtype=object)
                )
                codes, uniques = factorize(values)
                key = key * (len(uniques) + 1) + codes
                key = np.unique(key, return_inverse=True)[1].reshape(-1)
            n_groups = int(key.max()) + 1
            ok = self._satisfied(data, remaining, key, n_groups)
            placed = ok[key]
            if placed.any():
                starred[np.ix_(remaining[placed], list(pattern))] = True
                steps.append({"pattern": [encoded.columns[j].name for j in pattern],
                              "records": int(placed.sum())})  # fmt: skip
                remaining = remaining[~placed]
        allowed = math.floor(self.suppression_limit * n + 1e-9)
        if len(remaining) > allowed:  # cannot happen: the optimum already fits the limit
            raise AnonymizationError(
                f"local suppression leaves {len(remaining)} records, more than {allowed}"
            )
        suppressed = np.zeros(n, dtype=bool)
        suppressed[remaining] = True
        keep = ~suppressed
        labels = {}
        for j, col in enumerate(encoded.columns):
            out = columns[j].copy()
            out[starred[:, j]] = tops[j]
            labels[col.name] = out[keep]
        heights = dict(zip(encoded.names, encoded.heights, strict=True))
        cells = int(starred[keep].sum())
        return AnonymizationResult(
            algorithm=self.name,
            covered=tuple(encoded.names),
            suppressed=suppressed,
            labels=labels,
            transformation={
                q: f"level {lvl}/{heights[q]}, {int(starred[keep, j].sum())} cells suppressed"
                for j, (q, lvl) in enumerate(found.levels.items())
            },
            levels=None,
            steps=steps,
            details={
                "node": dict(found.levels),
                "records_suppressed_by_the_node": int(found.n_suppressed),
                "cells_suppressed": cells,
                "loss": found.details.get("loss"),
            },
        )
