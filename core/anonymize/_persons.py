"""People, not rows: evaluating a node when a table holds several records per person.

With a person key, a class protects the people in it, not its rows: k-anonymity asks for ``k``
distinct persons per class (a class of 17 admissions of 3 patients is 3-anonymous, not
17-anonymous), and suppression removes people, never a part of one (a person whose record is
suppressed from one class loses every record). Which people a node suppresses is therefore a
fixed point: removing a person may shrink another class below ``k``, whose people are removed
in turn.

The fixed point is the *largest* set of people whose records can all be released. For a model
whose satisfaction survives adding records to a class (k-anonymity, distinct l-diversity, the
highest prosecutor risk: :data:`privgate.core.privacy.PERSON_MODELS`), a person in a failing
class belongs to no releasable set (any subset of a failing class fails, unless empty), and
the union of two releasable sets is releasable; removing the people of failing classes until
none fails therefore reaches the largest releasable set. A coarser node merges classes, so every set
releasable at a node is releasable at its generalizations: the people suppressed only shrink
up the lattice and the optimal search's pruning stays exact.

Models whose classes can fail by *gaining* records (entropy and recursive l-diversity,
t-closeness, the average and share risk limits) have no such largest set and are refused with
a person key (the policy refuses them when it loads).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from privgate.core.anonymize._lattice import ClassTable, NodeChecker, NodeOutcome
from privgate.core.encoding import ClassStats, FrequencySet
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import PrivacyModel, persons_per_class, unsupported_with_persons

__all__ = ["PersonNodeChecker", "check_person_models"]


def check_person_models(models: Sequence[PrivacyModel]) -> None:
    """Refuse, by name, a model a person-keyed search cannot guarantee."""
    other = unsupported_with_persons(models)
    if other:
        raise AnonymizationError(
            f"with a person key, {', '.join(other)} cannot be guaranteed per person (a class "
            "can fail by gaining a person's records); use k-anonymity, distinct l-diversity "
            "and the highest-risk limit, or remove privacy.person_key"
        )


class PersonNodeChecker(NodeChecker):
    """A :class:`NodeChecker` that counts distinct persons and suppresses whole persons.

    Parameters
    ----------
    freq : FrequencySet
    persons : ndarray of int, shape (n_rows,)
        Each row's person, as codes ``0..n_persons-1``.
    models : sequence of PrivacyModel
        Only :data:`PERSON_MODELS`.
    suppression_limit : float
        Largest fraction of the *persons* that may be suppressed.
    """

    def __init__(
        self,
        freq: FrequencySet,
        persons: np.ndarray,
        models: Sequence[PrivacyModel],
        suppression_limit: float,
    ) -> None:
        check_person_models(models)
        super().__init__(freq, models, suppression_limit)
        self.persons = np.asarray(persons, dtype=np.int64)
        if len(self.persons) != self.n_rows:
            raise ValueError(f"{len(self.persons)} person codes for {self.n_rows} rows")
        self.n_persons = int(self.persons.max()) + 1 if len(self.persons) else 0
        self.allowance = math.floor(suppression_limit * self.n_persons + 1e-9)
        self._suppressed_rows: dict[tuple[int, ...], np.ndarray] = {}

    def _row_stats(self, row_class: np.ndarray, n_classes: int, keep: np.ndarray) -> ClassStats:
        """The kept rows' classes, sized in persons, with their sensitive histograms."""
        table = self.freq.table
        names = list(table.sensitive_codes)
        stats = ClassStats.from_labels(
            row_class[keep],
            n_classes,
            np.ones(int(keep.sum())),
            {n: table.sensitive_codes[n][keep] for n in names},
            table.sensitive_values,
        )
        sizes = persons_per_class(row_class[keep], self.persons[keep], n_classes)
        overall = {n: self._overall[n] for n in names}  # the input's, as the row search uses
        return ClassStats(sizes, stats.histograms, overall, stats.ordered_values)

    def kept_rows(self, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray, int]:
        """Rows kept at ``node`` (the largest releasable set of people), each row's class."""
        class_ids, n_classes = self.freq.classes(node)
        row_class = class_ids[self.freq.row_to_tuple]
        keep = np.ones(self.n_rows, dtype=bool)
        while True:
            stats = self._row_stats(row_class, n_classes, keep)
            ok = np.ones(n_classes, dtype=bool)
            for model in self.models:
                ok &= model.satisfied_by(stats)
            bad_rows = keep & ~ok[row_class]
            if not bad_rows.any():
                return keep, row_class, n_classes
            keep &= ~np.isin(self.persons, np.unique(self.persons[bad_rows]))

    def evaluate(self, node: Sequence[int]) -> NodeOutcome:
        node = tuple(int(v) for v in node)
        if node in self._outcomes:
            return self._outcomes[node]
        self.evaluations += 1
        keep, row_class, n_classes = self.kept_rows(node)
        kept_persons = len(np.unique(self.persons[keep]))
        outliers = self.n_persons - kept_persons
        satisfied = outliers <= self.allowance and bool(keep.any())
        # Classes for the loss metric: each class split into its kept and suppressed records.
        group = row_class.astype(np.int64) * 2 + keep
        _, first, inverse = np.unique(group, return_index=True, return_inverse=True)
        sizes = np.bincount(inverse.reshape(-1), minlength=len(first)).astype(np.int64)
        codes = self.freq.generalized_codes(node)[self.freq.row_to_tuple[first]]
        table = ClassTable(node, tuple(codes[:, j] for j in range(codes.shape[1])), sizes)
        outcome = NodeOutcome(node, satisfied, outliers, table, ~keep[first])
        self._outcomes[node] = outcome
        self._suppressed_rows[node] = ~keep
        return outcome

    def suppressed_rows(self, node: Sequence[int]) -> np.ndarray:
        """Rows suppressed at an evaluated node (every record of each suppressed person)."""
        return self._suppressed_rows[tuple(int(v) for v in node)]
