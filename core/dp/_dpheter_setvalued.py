"""The set-valued attribute of a heterogeneous record in DPHeter's top-down specialization.

A record's set-valued cell (a person's occupations) is generalized to a *set-value*: a set of
taxonomy nodes such that every node covers at least one of the record's items and every item is
covered. The root set-value is ``{root}`` (every record). Specializing node ``u`` of set-value
``S`` follows DiffPart (Chen, Mohammed, Fung, Desai, Xiong, VLDB 2011): the children are
``S - {u} | T`` for every **non-empty subset** ``T`` of ``u``'s children, and a record goes to
the child whose ``T`` is exactly the set of ``u``'s children that cover one of its items.

Most of the ``2^m - 1`` subsets hold nobody, so their counts are released with discrete Laplace
noise (one histogram over the disjoint children: one epsilon) and a child whose noisy count is
below the threshold is **pruned**. Records of pruned children are not lost: they stay in a
*residual* element labeled ``S`` itself (their value is still correctly generalized to ``S``),
which is not specialized further. So the cut's elements still partition every record.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from privgate.core.dp._dpheter_cuts import Candidate, Dimension, Router, SelectionContext
from privgate.core.dp._dpheter_scoring import score_children
from privgate.core.dp._dpheter_taxonomy import Taxonomy
from privgate.core.dp.heterogeneous import as_item_set
from privgate.core.dp.mechanisms import discrete_laplace_counts

__all__ = ["SetValuedDimension", "SetValuedRouter", "covered_nodes"]


def covered_nodes(taxonomy: Taxonomy, cells: Sequence[object], column: str) -> np.ndarray:
    """``(records, nodes)`` booleans: does the record have an item under the node?

    Raises
    ------
    SchemaValidationError
        A cell is missing or an empty set.
    HierarchyError
        An item is not a leaf of the taxonomy.
    """
    sets = [as_item_set(cell, column, i) for i, cell in enumerate(cells)]
    lengths = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    items = taxonomy.leaf_codes([item for s in sets for item in sorted(s)])
    rows = np.repeat(np.arange(len(sets)), lengths)
    has_leaf = np.zeros((len(sets), len(taxonomy.leaves)), dtype=bool)
    has_leaf[rows, items] = True
    return np.stack([has_leaf[:, leaves].any(axis=1) for leaves in taxonomy.node_leaves], axis=1)


def _subset_masks(covered: np.ndarray, children: Sequence[int]) -> np.ndarray:
    """Bit ``i`` set when the record has an item under ``children[i]``."""
    masks = np.zeros(len(covered), dtype=np.int64)
    for bit, child in enumerate(children):
        masks |= covered[:, child].astype(np.int64) << bit
    return masks


class SetValuedRouter(Router):
    """Replays the set-valued specializations to place any record in the final cut."""

    def __init__(
        self,
        taxonomy: Taxonomy,
        history: list[tuple[int, int, dict[int, int], int | None]],
        position: np.ndarray,
        nodes: list[frozenset[int]],
        name: str,
    ) -> None:
        self.taxonomy = taxonomy
        self.history = list(history)
        self.position = position
        self.nodes = list(nodes)
        self.name = name

    def positions(self, column: pd.Series) -> np.ndarray:
        covered = covered_nodes(self.taxonomy, column.tolist(), self.name)
        return self.position[replay(self.taxonomy, covered, self.history)]

    def leaf_labels(self, position: int) -> list[list[str]]:
        """The original values under each node of the set-value at ``position``."""
        return [
            [self.taxonomy.leaves[i] for i in self.taxonomy.node_leaves[node]]
            for node in sorted(self.nodes[position])
        ]


def replay(
    taxonomy: Taxonomy,
    covered: np.ndarray,
    history: list[tuple[int, int, dict[int, int], int | None]],
) -> np.ndarray:
    """The set-value id of each record after the specializations in ``history``."""
    element = np.zeros(len(covered), dtype=np.int64)
    for parent, node, kept, residual in history:
        inside = np.flatnonzero(element == parent)
        masks = _subset_masks(covered[inside], taxonomy.children[node])
        fallback = parent if residual is None else residual
        element[inside] = [kept.get(m, fallback) for m in masks.tolist()]
    return element


class SetValuedDimension(Dimension):
    """A set-valued attribute: a cut of set-values (element 0 = ``{root}``)."""

    kind = "set-valued"

    def __init__(
        self,
        name: str,
        taxonomy: Taxonomy,
        covered: np.ndarray,
        classes: np.ndarray,
        n_classes: int,
        score: str,
        max_set_children: int,
    ) -> None:
        super().__init__(name, classes, n_classes, score)
        self.taxonomy = taxonomy
        self.covered = covered
        self.max_set_children = max_set_children
        self.nodes: list[frozenset[int]] = [frozenset({0})]
        self.terminal: set[int] = set()
        self.element = np.zeros(len(covered), dtype=np.int64)
        self.history: list[tuple[int, int, dict[int, int], int | None]] = []
        self.pruned = 0
        self._scores: dict[tuple[int, int], float] = {}

    def _score(self, element: int, node: int) -> float:
        key = (element, node)
        if key not in self._scores:
            inside = self.element == element
            children = self.taxonomy.children[node]
            masks = _subset_masks(self.covered[inside], children)
            counts = np.bincount(
                masks * self.n_classes + self.classes[inside],
                minlength=(1 << len(children)) * self.n_classes,
            ).reshape(-1, self.n_classes)
            self._scores[key] = score_children(counts[1:], self.score)
        return self._scores[key]

    def record_positions(self) -> np.ndarray:
        return self._position_lookup(len(self.nodes))[self.element]

    def candidates(self) -> list[Candidate]:
        out = []
        for element in self.order:
            if element in self.terminal:
                continue
            for node in sorted(self.nodes[element]):
                m = len(self.taxonomy.children[node])
                if m == 0 or m > self.max_set_children:
                    continue
                grows_to = self.size - 1 + (1 << m)  # 2^m - 1 children and a residual
                out.append(Candidate(self, element, self._score(element, node), grows_to, node))
        return out

    def _label(self, nodes: frozenset[int]) -> frozenset[str]:
        return frozenset(self.taxonomy.labels[n] for n in nodes)

    def specialize(self, candidate: Candidate, context: SelectionContext, step: str) -> dict:
        element, node = candidate.element, candidate.node
        children = self.taxonomy.children[node]
        inside = np.flatnonzero(self.element == element)
        masks = _subset_masks(self.covered[inside], children)
        counts = np.bincount(masks, minlength=1 << len(children))[1:]
        before = context.accountant.total[0]
        noisy = discrete_laplace_counts(
            counts,
            context.step_epsilon,
            accountant=context.accountant,
            step=f"{step}: set-valued children counts (pruning)",
        )
        spent = context.accountant.total[0] - before
        base = self.nodes[element] - {node}
        kept: dict[int, int] = {}
        new_elements = []
        for mask in range(1, 1 << len(children)):
            if noisy[mask - 1] < context.set_threshold:
                continue
            chosen = {child for bit, child in enumerate(children) if mask >> bit & 1}
            kept[mask] = len(self.nodes)
            new_elements.append(len(self.nodes))
            self.nodes.append(base | chosen)
        pruned = (1 << len(children)) - 1 - len(kept)
        residual = None
        if pruned:
            residual = len(self.nodes)
            self.nodes.append(self.nodes[element])
            self.terminal.add(residual)
            new_elements.append(residual)
        self.pruned += pruned
        self.history.append((element, node, kept, residual))
        fallback = element if residual is None else residual
        self.element[inside] = [kept.get(m, fallback) for m in masks.tolist()]
        self._replace(element, new_elements)
        return {
            "value": sorted(self._label(self.nodes[element])),
            "node": self.taxonomy.labels[node],
            "children": [sorted(self._label(self.nodes[e])) for e in new_elements],
            "pruned": pruned,
            "residual": residual is not None,
            "follow_up_epsilon": spent,
            "follow_up": "set-valued pruning counts",
        }

    def labels(self) -> list[frozenset[str]]:
        return [self._label(self.nodes[e]) for e in self.order]

    def cut(self) -> dict:
        return {
            "kind": self.kind,
            "values": [sorted(label) for label in self.labels()],
            "residual": [e in self.terminal for e in self.order],
            "pruned_children": self.pruned,
        }

    def router(self) -> SetValuedRouter:
        return SetValuedRouter(
            self.taxonomy,
            self.history,
            self._position_lookup(len(self.nodes)),
            [self.nodes[e] for e in self.order],
            self.name,
        )
