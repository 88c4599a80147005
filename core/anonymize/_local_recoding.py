"""Local recoding by iterated full-domain generalization (ARX's approach to local recoding).

A full-domain optimum generalizes every record to one level per attribute: a few rare records
force a whole column up. Local recoding lets different records sit at different levels. This
algorithm does it in rounds, as ARX does:

1. the optimal full-domain search runs on the records still to place, allowed to suppress any
   of them (the loss metric charges a suppressed record as fully generalized, so it keeps
   every record whose node is worth keeping);
2. the records it keeps are released at that round's node; the ones it would have suppressed
   go to the next round, which searches again on them alone (a coarser node, fitted to them);
3. when a round keeps nothing new, or fewer records than the smallest class remain, the rest
   is suppressed, within the policy's suppression limit.

Why the release is k-anonymous as written. Each round's kept records form classes that satisfy
the models on their own. Records of different rounds whose released text coincides fall into
one class of the written file: a union of satisfying classes. The models allowed here hold
under such unions (k-anonymity, distinct l-diversity, the highest prosecutor risk: a class
only grows or gains values); the others are refused by the policy. A `*` cell is the top of
its hierarchy, counted by the gate as the text ``*`` like any other value, so the gate verifies
the written file with no knowledge of the rounds.

What it does not hide: a recipient sees that records were generalized to different levels
(e.g. ``37`` beside ``30-39``), as with every local recoding; k-anonymity of the written table,
the guarantee stated, does not depend on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privgate.core.anonymize._contract import AnonymizationAlgorithm, SearchInput
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.anonymize._setup import SearchSetup
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import PERSON_MODELS, PrivacyModel

__all__ = ["LocalRecoding"]

#: Rounds before the remaining records are suppressed (each round needs at least one record
#: placed, so the loop ends anyway; this bounds the run time on adversarial tables).
MAX_ROUNDS = 16


def _subset(freq: FrequencySet, rows: np.ndarray) -> FrequencySet:
    """The frequency set of ``rows`` alone (tuples renumbered, counts recounted)."""
    tuples = freq.row_to_tuple[rows]
    counts = np.bincount(tuples, minlength=len(freq.counts))
    present = np.flatnonzero(counts)
    renumber = np.full(len(freq.counts), -1, dtype=np.int64)
    renumber[present] = np.arange(len(present))
    return FrequencySet(
        freq.table,
        freq.qi_codes[present],
        freq.sensitive[present],
        counts[present].astype(np.int64),
        renumber[tuples],
    )


class LocalRecoding(AnonymizationAlgorithm):
    """Records at different full-domain nodes, found by repeated optimal searches.

    Parameters
    ----------
    models : sequence of PrivacyModel
        Only models that survive a union of satisfying classes (k-anonymity, distinct
        l-diversity, highest risk).
    suppression_limit : float
        Largest fraction of the input left out at the end.
    metric : str
        The optimal search's objective in every round.
    """

    name = "local_recoding"

    def __init__(
        self, models: Sequence[PrivacyModel], suppression_limit: float = 0.0, metric: str = "loss"
    ) -> None:
        unsupported = [str(m) for m in models if not isinstance(m, PERSON_MODELS)]
        if unsupported:
            raise AnonymizationError(
                f"local recoding cannot guarantee {', '.join(unsupported)}: a class of the "
                "release may join records of several rounds, and only k-anonymity, distinct "
                "l-diversity and the highest risk hold for such a union"
            )
        self.models = list(models)
        self.suppression_limit = suppression_limit
        self.metric = metric

    @classmethod
    def from_setup(cls, setup: SearchSetup) -> LocalRecoding:
        return cls(setup.models, setup.suppression_limit, metric=setup.search_metric())

    def anonymize(self, data: SearchInput) -> AnonymizationResult:
        if data.persons is not None:
            raise AnonymizationError("local recoding counts records; a person key needs 'optimal'")
        freq, encoded = data.frequency_set, data.encoded
        n = encoded.n_rows
        smallest = max((m.min_class_size for m in self.models), default=1)
        level_of = np.full((n, len(encoded.columns)), -1, dtype=np.int64)
        remaining = np.arange(n)
        steps: list[dict] = []
        search = OptimalLattice(self.models, 1.0, metric=self.metric)
        while len(remaining) >= smallest and len(steps) < MAX_ROUNDS:
            sub = _subset(freq, remaining)
            try:
                found = search.search(sub)
            except AnonymizationError:
                break  # not even the top node holds for these records: they are suppressed
            kept = remaining[~found.suppressed]
            if not len(kept):
                break
            node = [found.levels[c.name] for c in encoded.columns]
            level_of[kept] = node
            steps.append({"round": len(steps) + 1, "records": int(len(kept)),
                          "levels": dict(found.levels)})  # fmt: skip
            remaining = remaining[found.suppressed]
        allowed = math.floor(self.suppression_limit * n + 1e-9)
        if len(remaining) > allowed:
            raise AnonymizationError(
                f"local recoding leaves {len(remaining)} records it cannot place, more than the "
                f"suppression limit of {allowed} ({self.suppression_limit:.2%} of {n})"
            )
        suppressed = np.zeros(n, dtype=bool)
        suppressed[remaining] = True
        keep = ~suppressed
        labels = {}
        for j, col in enumerate(encoded.columns):
            rows_levels, codes = level_of[keep, j], col.codes[keep]
            out = np.empty(len(codes), dtype=object)
            for level in np.unique(rows_levels):
                at = rows_levels == level
                out[at] = col.labels[level][col.level_maps[level][codes[at]]]
            labels[col.name] = out
        heights = dict(zip(encoded.names, encoded.heights, strict=True))
        transformation = {
            q: "local recoding, levels "
            + ", ".join(str(s["levels"][q]) for s in steps)
            + f" of {heights[q]}"
            for q in encoded.names
        }
        return AnonymizationResult(
            algorithm=self.name,
            covered=tuple(encoded.names),
            suppressed=suppressed,
            labels=labels,
            transformation=transformation,
            levels=None,
            steps=steps,
            details={"rounds": len(steps), "distinct_tuples": int(len(freq.counts))},
        )
