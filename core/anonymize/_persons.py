"""People, not rows: evaluating a node when a table holds several records per person.

With a person key, a class protects the people in it, not its rows: k-anonymity asks for ``k``
distinct persons per class (a class of 17 admissions of 3 patients is 3-anonymous, not
17-anonymous), the l-diversity variants, t-closeness, β-likeness and δ-disclosure read the
class's sensitive values with every person weighing 1, and the risk limits read each
person's risk (one definition, shared with the gate:
:func:`privgate.core.privacy.person_class_stats`; the argument is in ``docs/PERSONS.md``).
Suppression removes people, never a part of one (a person whose record is suppressed from one
class loses every record). With ``risk.suppress: true``, a whole-table
limit (average risk, risk share) that fails after the fixed point is met by removing the
riskiest persons, every person of the smallest classes first, as the row search removes the
smallest classes' records (:meth:`PersonNodeChecker._suppress_riskiest`).

**The fixed-point rule.** At a node, the people of every class that fails a per-class model
are removed (with all their records, so other classes lose them too), and the classes are
checked again, until none fails; the set of people only shrinks, so this terminates. The node
is accepted when the removed people fit the suppression limit, someone is left, and every
whole-table limit (average risk, risk share, population uniques) holds on what is left. What
is left is exactly what the release holds, so the gate, which checks the written release with
the same definitions, accepts every node the search accepts.

For models whose satisfaction survives adding records to a class (k-anonymity, distinct
l-diversity, the highest prosecutor risk: :data:`privgate.core.privacy.PERSON_MODELS`), the
fixed point is the *largest* set of people whose records can all be released: a person in a
failing class belongs to no releasable set (any subset of a failing class fails, unless
empty), and the union of two releasable sets is releasable. A coarser node merges classes, so
every set releasable at a node is releasable at its generalizations; the people suppressed
only shrink up the lattice and the optimal search prunes by monotonicity.

Entropy and recursive l-diversity, t-closeness and the whole-table limits can fail by a class
*gaining* a person (a person's records can also move the weights of a class they already sit
in): there, the fixed point is a deterministic rule but not always the largest releasable
set, and a coarser node may keep fewer people, so the search evaluates every node the loss
bound leaves that passes the monotone models alone (:attr:`PersonNodeChecker.monotone`;
the optimal search prunes with those, see ``_optimal._monotone_pruner``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from privgate.core.anonymize._lattice import ClassTable, NodeChecker, NodeOutcome
from privgate.core.encoding import ClassStats, FrequencySet
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import (
    PERSON_MODELS,
    PrivacyModel,
    person_class_stats,
    person_histograms,
    unsupported_with_persons,
)

__all__ = ["PersonNodeChecker", "check_person_models"]


def check_person_models(models: Sequence[PrivacyModel]) -> None:
    """Refuse, by name, a model a person-keyed search cannot guarantee."""
    other = unsupported_with_persons(models)
    if other:
        raise AnonymizationError(
            f"with a person key, {', '.join(other)} cannot be guaranteed per person (no "
            "per-person definition: k-map with a population table and delta-presence); remove "
            "them or privacy.person_key"
        )


class PersonNodeChecker(NodeChecker):
    """A :class:`NodeChecker` that counts distinct persons and suppresses whole persons.

    Parameters
    ----------
    freq : FrequencySet
    persons : ndarray of int, shape (n_rows,)
        Each row's person, as codes ``0..n_persons-1``.
    models : sequence of PrivacyModel
        Models with a per-person definition (see :func:`check_person_models`).
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
        #: Every model survives a class gaining records: the search may prune the lattice.
        self.monotone = all(isinstance(m, PERSON_MODELS) for m in self.models)
        table = freq.table
        self._person_overall = {  # t-closeness' reference: the input, each person weighing 1
            name: _distribution(self.persons, codes, len(table.sensitive_values[name]))
            for name, codes in table.sensitive_codes.items()
        }
        self._suppressed_rows: dict[tuple[int, ...], np.ndarray] = {}

    def _row_stats(self, row_class: np.ndarray, n_classes: int, keep: np.ndarray) -> ClassStats:
        """The kept rows' classes as the models check them (the gate's definition)."""
        table = self.freq.table
        stats = person_class_stats(
            row_class[keep],
            n_classes,
            self.persons[keep],
            {n: codes[keep] for n, codes in table.sensitive_codes.items()},
            table.sensitive_values,
            self._person_overall,
        )
        # Estimated k-map's fraction: the input's persons, as the gate reads it (docs/PERSONS.md)
        return replace(stats, sampled_units=self.n_persons)

    def kept_rows(self, node: Sequence[int]) -> tuple[np.ndarray, np.ndarray, ClassStats]:
        """Rows kept at ``node`` by the fixed-point rule (then, with ``suppress: true`` on a
        failing whole-table limit, by :meth:`_suppress_riskiest`), each row's class, and the
        kept classes' statistics (only the classes that keep someone)."""
        class_ids, n_classes = self.freq.classes(node)
        row_class = class_ids[self.freq.row_to_tuple]
        keep, stats = self._fixed_point(row_class, n_classes, np.ones(self.n_rows, dtype=bool))
        keep, stats = self._suppress_riskiest(row_class, n_classes, keep, stats)
        return keep, row_class, _occupied(stats)

    def _fixed_point(
        self, row_class: np.ndarray, n_classes: int, keep: np.ndarray
    ) -> tuple[np.ndarray, ClassStats]:
        """Remove the persons of every class failing a per-class model until none fails."""
        keep = keep.copy()
        while True:
            stats = self._row_stats(row_class, n_classes, keep)
            ok = np.ones(n_classes, dtype=bool)
            for model in self.models:
                ok &= model.satisfied_by(stats)
            bad_rows = keep & ~ok[row_class]
            if not bad_rows.any():
                return keep, stats
            keep &= ~np.isin(self.persons, np.unique(self.persons[bad_rows]))

    def _suppress_riskiest(
        self, row_class: np.ndarray, n_classes: int, keep: np.ndarray, stats: ClassStats
    ) -> tuple[np.ndarray, ClassStats]:
        """``risk.suppress: true`` counted in persons: while a whole-table limit fails and
        every failing limit allows suppression, remove every person of the smallest classes
        (in persons: the riskiest persons, whose risk is ``1 / that size``) with all their
        records, then apply the fixed-point rule again (a class that lost them may now fail
        k); stop when the limits hold, nobody is left, or the removed persons exceed the
        suppression limit (the node then fails in :meth:`evaluate`). The row version
        (:func:`privgate.core.privacy.suppress_to_meet`) suppresses the smallest classes'
        records the same way, one whole size at a time."""
        while keep.any():
            occupied = _occupied(stats)
            failing = [m for m in self.models if not m.table_satisfied(occupied)]
            if not failing or not all(getattr(m, "suppress", False) for m in failing):
                break
            if self.n_persons - len(np.unique(self.persons[keep])) > self.allowance:
                break
            smallest = occupied.sizes.min()
            riskiest = keep & (stats.sizes[row_class] == smallest)
            keep = keep & ~np.isin(self.persons, np.unique(self.persons[riskiest]))
            keep, stats = self._fixed_point(row_class, n_classes, keep)
        return keep, stats

    def evaluate(self, node: Sequence[int]) -> NodeOutcome:
        node = tuple(int(v) for v in node)
        if node in self._outcomes:
            return self._outcomes[node]
        self.evaluations += 1
        keep, row_class, stats = self.kept_rows(node)
        kept_persons = len(np.unique(self.persons[keep]))
        outliers = self.n_persons - kept_persons
        satisfied = outliers <= self.allowance and bool(keep.any())
        satisfied = satisfied and all(m.table_satisfied(stats) for m in self.models)
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


def _distribution(persons: np.ndarray, codes: np.ndarray, n_values: int) -> np.ndarray:
    """The table's distribution of a sensitive column with every person weighing 1."""
    total = person_histograms(np.zeros(len(codes), np.int64), persons, codes, 1, n_values)[0]
    return total / max(total.sum(), 1.0)


def _occupied(stats: ClassStats) -> ClassStats:
    """The classes that hold someone (a node's classes whose people were all suppressed are
    not in the release, and a whole-table limit must not count them)."""
    held = stats.sizes > 0
    return ClassStats(
        stats.sizes[held],
        {name: h[held] for name, h in stats.histograms.items()},
        stats.overall,
        stats.ordered_values,
        person_risks=stats.person_risks,
        person_samples=None
        if stats.person_samples is None
        else {name: s[held] for name, s in stats.person_samples.items()},
        sampled_units=stats.sampled_units,
    )
