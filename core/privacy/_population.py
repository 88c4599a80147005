"""A declared population table, and how many of its records fall in each class of a release.

k-map and δ-presence compare a release with the people it was drawn from: a class of the
release is safe when it matches at least ``k`` people of the population (k-map), or when the
share of the matching people who are in the release stays within bounds (δ-presence). Both
need, per class, the number of *population* records whose quasi-identifiers generalize to the
class's values. Two independent counts produce it, as for the class sizes themselves:

* the search counts by codes (:class:`PopulationIndex`): the population's values are mapped
  once onto the input's hierarchy codes, then each evaluated node groups the population's
  distinct tuples with the same keys as the input's classes;
* the gate counts by text (:meth:`Population.counts_for_labels`): it reads the release's cells
  as a recipient does and matches them against the population generalized along the declared
  hierarchies, never trusting the levels the search chose.

A release cell names the set of values whose generalization shows that text. When one text is
the label of different sets of population values at two levels of a hierarchy (a value left
unchanged by one level and widened by another), the release does not say which it means; the
gate then refuses to count rather than guess (see :meth:`Population.counts_for_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from privgate.core.encoding import EncodedTable, factorize, is_missing
from privgate.core.exceptions import AnonymizationError, HierarchyError
from privgate.core.hierarchy import Hierarchy

__all__ = ["Population", "PopulationIndex", "population_of"]


def _text(values: Sequence[object]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [None if is_missing(v) else str(v) for v in values]
    return out


@dataclass(frozen=True, eq=False)
class Population:
    """The quasi-identifiers of a population table, summarized as distinct tuples.

    Build it with :meth:`from_columns`. Only the quasi-identifiers are kept (nothing else of
    the population is needed), as distinct tuples with their counts.

    Attributes
    ----------
    source : str
        Where the table came from (for messages and the report).
    hierarchies : mapping of str to Hierarchy
        The policy's hierarchies, one per quasi-identifier, in policy order.
    values : dict of str to ndarray
        Per quasi-identifier, the distinct values of the population (text).
    labels : dict of str to ndarray, shape (n_values, height + 1)
        Per quasi-identifier, each distinct value's label at every level.
    tuples : ndarray of int64, shape (n_tuples, n_qi)
        The distinct tuples, as indexes into ``values``.
    counts : ndarray of int64, shape (n_tuples,)
    """

    source: str
    hierarchies: Mapping[str, Hierarchy]
    values: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    tuples: np.ndarray
    counts: np.ndarray
    _label_sets: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_columns(
        cls,
        columns: Mapping[str, Sequence[object]],
        hierarchies: Mapping[str, Hierarchy],
        source: str,
    ) -> Population:
        """Summarize a population table (``{column: values}``) over the quasi-identifiers.

        Raises
        ------
        AnonymizationError
            A quasi-identifier is missing from the table, a cell is empty, or the table has
            no records.
        HierarchyError
            A population value the quasi-identifier's hierarchy does not cover.
        """
        absent = [q for q in hierarchies if q not in columns]
        if absent:
            raise AnonymizationError(
                f"population table {source}: quasi-identifier column(s) {absent} are missing"
            )
        values, labels, codes = {}, {}, []
        for name, hierarchy in hierarchies.items():
            column_codes, uniques = factorize(_text(list(columns[name])))
            if (column_codes < 0).any():
                row = int(np.flatnonzero(column_codes < 0)[0])
                raise AnonymizationError(
                    f"population table {source}: column {name!r} has an empty cell (row "
                    f"{row + 1}); every population record needs its quasi-identifier values"
                )
            try:
                labels[name] = np.vectorize(str, otypes=[object])(
                    hierarchy.generalize(list(uniques))
                )
            except HierarchyError as exc:
                raise HierarchyError(f"population table {source}: {exc}") from None
            values[name] = uniques
            codes.append(column_codes.astype(np.int64))
        if not codes or len(codes[0]) == 0:
            raise AnonymizationError(f"population table {source} has no records")
        tuples, counts = np.unique(np.column_stack(codes), axis=0, return_counts=True)
        return cls(source, dict(hierarchies), values, labels, tuples, counts.astype(np.int64))

    @property
    def size(self) -> int:
        """Records in the population."""
        return int(self.counts.sum())

    @property
    def quasi_identifiers(self) -> tuple[str, ...]:
        return tuple(self.hierarchies)

    # --- the gate: counting by the release's text --------------------------------------

    def counts_for_labels(
        self, class_labels: Mapping[str, Sequence[object]]
    ) -> tuple[np.ndarray, int, list[str]]:
        """Population records matching each class of a release, read from its cells' text.

        A population record matches a class when, for every quasi-identifier, the class's cell
        is the record's value generalized to some level of the hierarchy. When every cell of
        a column is a label of one level (a full-domain release), only those levels are
        read, which resolves most texts that two levels share.

        Parameters
        ----------
        class_labels : mapping of str to sequence
            Per quasi-identifier, each class's cell text (``None`` for an empty cell).

        Returns
        -------
        counts : ndarray of int64, shape (n_classes,)
            Population records matching each class.
        unmatched : int
            Population records matching no class of the release.
        problems : list of str
            Texts that name different sets of population values at different levels: the
            counts cannot be trusted and the gate must block.
        """
        names = list(class_labels)
        unknown = [n for n in names if n not in self.labels]
        if unknown:
            raise AnonymizationError(f"population table {self.source} has no column(s) {unknown}")
        position = {q: i for i, q in enumerate(self.quasi_identifiers)}
        n_classes = len(next(iter(class_labels.values()))) if class_labels else 0
        problems: list[str] = []
        # Per column: for each distinct population value, the class-label ids it matches.
        pairs: list[tuple[np.ndarray, np.ndarray]] = []
        label_codes: list[np.ndarray] = []
        for name in names:
            cells = _text(list(class_labels[name]))
            codes, texts = factorize(cells)
            label_codes.append(codes)
            value_ids, label_ids, issue = self._matches(name, texts)
            if issue:
                problems.append(issue)
            pairs.append((value_ids, label_ids))
        if problems or n_classes == 0:
            return np.zeros(n_classes, np.int64), self.size, problems
        # Explode each population tuple into every combination of labels it matches.
        rows = np.arange(len(self.counts))
        combo = np.zeros((len(rows), 0), dtype=np.int64)
        for j, (value_ids, label_ids) in enumerate(pairs):
            order = np.argsort(value_ids, kind="stable")
            value_ids, label_ids = value_ids[order], label_ids[order]
            values_of_rows = self.tuples[rows, position[names[j]]]
            start = np.searchsorted(value_ids, values_of_rows, side="left")
            stop = np.searchsorted(value_ids, values_of_rows, side="right")
            repeat = stop - start
            keep = np.repeat(np.arange(len(rows)), repeat)
            offsets = np.arange(int(repeat.sum())) - np.repeat(np.cumsum(repeat) - repeat, repeat)
            chosen = label_ids[np.repeat(start, repeat) + offsets]
            rows = rows[keep]
            combo = np.column_stack([combo[keep], chosen]) if combo.shape[1] else chosen[:, None]
        class_keys = np.column_stack(label_codes).astype(np.int64)
        counts = np.zeros(n_classes, dtype=np.int64)
        matched_rows = np.zeros(len(self.counts), dtype=bool)
        if len(rows):
            both = np.vstack([class_keys, combo])
            _, inverse = np.unique(both, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            class_of_key = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
            class_of_key[inverse[:n_classes]] = np.arange(n_classes)
            target = class_of_key[inverse[n_classes:]]
            hit = target >= 0
            np.add.at(counts, target[hit], self.counts[rows[hit]])
            matched_rows[rows[hit]] = True
        unmatched = int(self.counts[~matched_rows].sum())
        return counts, unmatched, problems

    def _matches(self, name: str, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
        """Pairs (population value id, release text id) of ``name`` that match, and a problem
        when a text names different population values at different levels."""
        table = self.labels[name]
        wanted = {str(t): i for i, t in enumerate(texts)}
        levels = range(table.shape[1])
        full_domain = [lvl for lvl in levels if wanted.keys() <= set(table[:, lvl].tolist())]
        readable = full_domain or list(levels)
        found: dict[int, dict[int, frozenset[int]]] = {}
        for lvl in readable:
            for value_id, text in enumerate(table[:, lvl].tolist()):
                label = wanted.get(text)
                if label is not None:
                    found.setdefault(label, {}).setdefault(lvl, set()).add(value_id)
        value_ids, label_ids = [], []
        for label, by_level in found.items():
            sets = {frozenset(s) for s in by_level.values()}
            if len(sets) > 1:
                return (
                    np.zeros(0, np.int64),
                    np.zeros(0, np.int64),
                    f"column {name!r}: the release's value {texts[label]!r} names different "
                    f"population values at levels {sorted(by_level)} of its hierarchy",
                )
            members = sorted(next(iter(sets)))
            value_ids += members
            label_ids += [label] * len(members)
        return np.asarray(value_ids, np.int64), np.asarray(label_ids, np.int64), ""


class PopulationIndex:
    """The population mapped onto an encoded input's codes, for counting per lattice node.

    For each quasi-identifier and level, every distinct population value gets the input's
    level code of its label (``-1`` when no input record shows that label at that level, so
    the value falls in no class of the input).

    Parameters
    ----------
    population : Population
    table : EncodedTable
        The encoded input; its columns must be the population's quasi-identifiers (a subset,
        in any order).
    """

    def __init__(self, population: Population, table: EncodedTable) -> None:
        self.population = population
        self.table = table
        missing = [c.name for c in table.columns if c.name not in population.labels]
        if missing:
            raise AnonymizationError(
                f"population table {population.source} has no column(s) {missing}"
            )
        position = {q: i for i, q in enumerate(population.quasi_identifiers)}
        self._columns = [position[c.name] for c in table.columns]
        self._maps: list[list[np.ndarray]] = []
        for col in table.columns:
            labels = population.labels[col.name]
            per_level = []
            for lvl in range(col.height + 1):
                code_of = {str(t): i for i, t in enumerate(col.labels[lvl].tolist())}
                per_level.append(
                    np.fromiter(
                        (code_of.get(t, -1) for t in labels[:, lvl].tolist()),
                        np.int64,
                        len(labels),
                    )
                )
            self._maps.append(per_level)

    @property
    def total(self) -> int:
        return self.population.size

    def counts(self, node: Sequence[int], class_codes: Sequence[np.ndarray]) -> np.ndarray:
        """Population records in each class of ``node``.

        ``class_codes[j][c]`` is class ``c``'s level-``node[j]`` code of quasi-identifier
        ``j`` (the input's codes, as in the search's class tables).
        """
        n_classes = len(class_codes[0]) if len(class_codes) else 0
        pop = self.population
        codes = []
        valid = np.ones(len(pop.counts), dtype=bool)
        for j, lvl in enumerate(node):
            mapped = self._maps[j][lvl][pop.tuples[:, self._columns[j]]]
            valid &= mapped >= 0
            codes.append(mapped)
        if n_classes == 0 or not valid.any():
            return np.zeros(n_classes, dtype=np.int64)
        radices = [len(self.table.columns[j].labels[lvl]) for j, lvl in enumerate(node)]
        if float(np.prod(radices, dtype=float)) < 2.0**62:
            class_keys = np.zeros(n_classes, dtype=np.int64)
            pop_keys = np.zeros(int(valid.sum()), dtype=np.int64)
            for j, radix in enumerate(radices):
                class_keys = class_keys * radix + np.asarray(class_codes[j], np.int64)
                pop_keys = pop_keys * radix + codes[j][valid]
            order = np.argsort(class_keys, kind="stable")
            position = np.searchsorted(class_keys, pop_keys, sorter=order)
            position = np.minimum(position, n_classes - 1)
            hit = class_keys[order[position]] == pop_keys
            target = order[position[hit]]
        else:  # the key would overflow: group the code rows directly (slower, exact)
            pop_codes = np.column_stack(codes)[valid]
            cls_codes = np.column_stack([np.asarray(c, np.int64) for c in class_codes])
            _, inverse = np.unique(np.vstack([cls_codes, pop_codes]), axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            class_of_key = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
            class_of_key[inverse[:n_classes]] = np.arange(n_classes)
            target = class_of_key[inverse[n_classes:]]
            hit = target >= 0
            target = target[hit]
        return np.bincount(target, weights=pop.counts[valid][hit], minlength=n_classes).astype(
            np.int64
        )


def population_of(models: Sequence[object]) -> Population | None:
    """The population the models compare with (one per policy), or ``None``.

    Raises
    ------
    AnonymizationError
        Two models declare different populations.
    """
    found = {id(p): p for m in models if (p := getattr(m, "population", None)) is not None}
    if len(found) > 1:
        raise AnonymizationError("the privacy models declare different population tables")
    return next(iter(found.values()), None)
