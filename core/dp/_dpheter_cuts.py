"""The cut of one attribute during DPHeter's top-down specialization, and how records follow it.

A *cut* is the attribute's current set of generalized values; records are generalized to the
cut element that covers their value, so the elements of one cut partition the records. One
round of the algorithm replaces one element of one cut by its children. Each attribute kind has
its own dimension class with the same interface (:class:`Dimension`):

* :class:`CategoricalDimension`: elements are taxonomy nodes; children are the node's children;
* :class:`NumericDimension`: elements are intervals of a public grid; the children are the two
  halves at a split point the exponential mechanism chose when the interval was created;
* :class:`~privgate.core.dp._dpheter_setvalued.SetValuedDimension` (its own module).

A dimension keeps the generalized element of every record of the input (to score candidates)
and, once the run is over, hands out a :class:`Router` that places *any* record in the final cut
without holding the input's records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privgate.core.dp._accountant import Accountant, Charger
from privgate.core.dp._dpheter_scoring import score_children, split_scores
from privgate.core.dp._dpheter_taxonomy import NumericGrid, Taxonomy
from privgate.core.dp.mechanisms import exponential_select

__all__ = [
    "Candidate",
    "CategoricalDimension",
    "Dimension",
    "NumericDimension",
    "Router",
    "SelectionContext",
]


@dataclass(frozen=True)
class SelectionContext:
    """What a dimension needs to run its own private steps (split points, pruning counts).

    Attributes
    ----------
    accountant : Accountant
        Charged by every mechanism.
    step_epsilon : float
        The epsilon of one selection step (DiffGen's ``epsilon'``).
    sensitivity : float
        Sensitivity of the score (``log2`` of the number of classes).
    set_threshold : float
        Noisy-count threshold below which a set-valued child is pruned.
    max_set_children : int
        Set-valued nodes with more children are not specialized (``2^m - 1`` subsets).
    score : str
        ``"info_gain"`` or ``"max"`` (:mod:`privgate.core.dp._dpheter_scoring`).
    """

    accountant: Accountant
    step_epsilon: float
    sensitivity: float
    set_threshold: float
    max_set_children: int
    score: str


@dataclass(frozen=True)
class Candidate:
    """One possible specialization: an element of a cut (and, set-valued, the node to open).

    ``score`` is the exact information gain: it feeds the exponential mechanism and must never
    be published as is.
    """

    dimension: Dimension
    element: int
    score: float
    grows_to: int
    node: int = -1


class Router(ABC):
    """Places records of a table in the final cut of one attribute (no data inside)."""

    @abstractmethod
    def positions(self, column: pd.Series) -> np.ndarray:
        """The position in the final cut of each record's value."""


class Dimension(ABC):
    """The cut of one attribute and the generalized element of every input record.

    Element ids are stable (a specialized element keeps its id and leaves the cut); ``order``
    lists the ids in the cut, in release order.
    """

    kind: str = ""

    def __init__(self, name: str, classes: np.ndarray, n_classes: int, score: str) -> None:
        self.name = name
        self.score = score
        self.classes = classes
        self.n_classes = n_classes
        self.order: list[int] = [0]

    @property
    def size(self) -> int:
        return len(self.order)

    def _replace(self, element: int, children: list[int]) -> None:
        """Put ``children`` in the cut where ``element`` was."""
        at = self.order.index(element)
        self.order[at : at + 1] = children

    def _position_lookup(self, n_ids: int) -> np.ndarray:
        lookup = np.full(n_ids, -1, dtype=np.int64)
        lookup[self.order] = np.arange(len(self.order))
        return lookup

    @abstractmethod
    def record_positions(self) -> np.ndarray:
        """The position in the cut of every input record."""

    @abstractmethod
    def candidates(self) -> list[Candidate]:
        """Every specialization of this cut, scored (exactly) on the input."""

    @abstractmethod
    def specialize(self, candidate: Candidate, context: SelectionContext, step: str) -> dict:
        """Apply ``candidate``; run the follow-up private steps; describe what changed."""

    @abstractmethod
    def labels(self) -> list:
        """The release label of each cut element, in cut order."""

    @abstractmethod
    def cut(self) -> dict:
        """The final cut as JSON-ready data."""

    @abstractmethod
    def router(self) -> Router:
        """A data-free router for the current cut."""

    def initial_steps(self, context: SelectionContext) -> float:
        """Private steps the root needs before round 1; return the epsilon charged."""
        return 0.0


# ------------------------------------------------------------------------------------------
# Categorical


class CategoricalRouter(Router):
    """Leaf -> position in a categorical cut."""

    def __init__(self, taxonomy: Taxonomy, leaf_position: np.ndarray, order: list[int]) -> None:
        self.taxonomy = taxonomy
        self.leaf_position = leaf_position
        self.order = list(order)

    def positions(self, column: pd.Series) -> np.ndarray:
        return self.leaf_position[self.taxonomy.leaf_codes(column.tolist())]

    def leaf_labels(self, position: int) -> list[str]:
        """The original values under the cut element at ``position``."""
        node = self.order[position]
        return [self.taxonomy.leaves[i] for i in self.taxonomy.node_leaves[node]]


class CategoricalDimension(Dimension):
    """A categorical attribute: a cut of taxonomy nodes (element id = node id)."""

    kind = "categorical"

    def __init__(
        self,
        name: str,
        taxonomy: Taxonomy,
        leaves: np.ndarray,
        classes: np.ndarray,
        n_classes: int,
        score: str,
    ) -> None:
        super().__init__(name, classes, n_classes, score)
        self.taxonomy = taxonomy
        n_leaves = len(taxonomy.leaves)
        self.leaves = leaves
        self.leaf_class = np.bincount(
            leaves * n_classes + classes, minlength=n_leaves * n_classes
        ).reshape(n_leaves, n_classes)
        self.leaf_element = np.zeros(n_leaves, dtype=np.int64)  # every leaf under the root
        self._scores: dict[int, float] = {}

    def _score(self, node: int) -> float:
        if node not in self._scores:
            children = np.stack(
                [
                    self.leaf_class[self.taxonomy.node_leaves[c]].sum(axis=0)
                    for c in self.taxonomy.children[node]
                ]
            )
            self._scores[node] = score_children(children, self.score)
        return self._scores[node]

    def record_positions(self) -> np.ndarray:
        lookup = self._position_lookup(len(self.taxonomy.labels))
        return lookup[self.leaf_element[self.leaves]]

    def candidates(self) -> list[Candidate]:
        return [
            Candidate(
                self, node, self._score(node), self.size - 1 + len(self.taxonomy.children[node])
            )
            for node in self.order
            if not self.taxonomy.is_leaf(node)
        ]

    def specialize(self, candidate: Candidate, context: SelectionContext, step: str) -> dict:
        node = candidate.element
        children = list(self.taxonomy.children[node])
        for child in children:
            self.leaf_element[self.taxonomy.node_leaves[child]] = child
        self._replace(node, children)
        return {
            "value": self.taxonomy.labels[node],
            "children": [self.taxonomy.labels[c] for c in children],
            "follow_up_epsilon": 0.0,
            "follow_up": None,
        }

    def labels(self) -> list[str]:
        return [self.taxonomy.labels[node] for node in self.order]

    def cut(self) -> dict:
        return {"kind": self.kind, "values": self.labels()}

    def router(self) -> CategoricalRouter:
        lookup = self._position_lookup(len(self.taxonomy.labels))
        return CategoricalRouter(self.taxonomy, lookup[self.leaf_element], self.order)


# ------------------------------------------------------------------------------------------
# Numeric


class NumericRouter(Router):
    """Value -> grid cell -> position in a numeric cut."""

    def __init__(
        self, grid: NumericGrid, cell_position: np.ndarray, intervals: list[tuple[int, int]]
    ) -> None:
        self.grid = grid
        self.cell_position = cell_position
        self.intervals = list(intervals)

    def positions(self, column: pd.Series) -> np.ndarray:
        values = column.to_numpy(dtype=float, na_value=np.nan)
        return self.cell_position[self.grid.cells(values)]

    def bounds(self, position: int) -> tuple[float, float]:
        """``(lo, hi)`` of the interval at ``position``, in original units."""
        return self.grid.bounds(*self.intervals[position])


class NumericDimension(Dimension):
    """A numeric attribute: a cut of intervals of a public grid, each with a private split."""

    kind = "numeric"

    def __init__(
        self,
        name: str,
        grid: NumericGrid,
        cells: np.ndarray,
        classes: np.ndarray,
        n_classes: int,
        score: str,
    ) -> None:
        super().__init__(name, classes, n_classes, score)
        self.grid = grid
        self.cells = cells
        n_cells = grid.n_cells
        self.cell_class = np.bincount(
            cells * n_classes + classes, minlength=n_cells * n_classes
        ).reshape(n_cells, n_classes)
        self.intervals: list[tuple[int, int]] = [(0, n_cells)]
        self.split: dict[int, int] = {}  # element -> absolute boundary index of its split
        self.split_score: dict[int, float] = {}
        self.cell_element = np.zeros(n_cells, dtype=np.int64)

    def splittable(self, element: int) -> bool:
        start, stop = self.intervals[element]
        return stop - start >= 2

    def choose_split(
        self, element: int, context: SelectionContext, charger: Charger, step: str
    ) -> None:
        """Pick the element's split point with the exponential mechanism over its candidates."""
        start, stop = self.intervals[element]
        gains = split_scores(self.cell_class[start:stop], self.score)
        pick = exponential_select(
            gains,
            context.step_epsilon,
            sensitivity=context.sensitivity,
            accountant=charger,
            step=step,
        )
        self.split[element] = start + 1 + pick
        self.split_score[element] = float(gains[pick])

    def initial_steps(self, context: SelectionContext) -> float:
        if not self.splittable(0):
            return 0.0
        before = context.accountant.total[0]
        self.choose_split(0, context, context.accountant, f"split point of {self.name!r} (root)")
        return context.accountant.total[0] - before

    def record_positions(self) -> np.ndarray:
        lookup = self._position_lookup(len(self.intervals))
        return lookup[self.cell_element[self.cells]]

    def candidates(self) -> list[Candidate]:
        return [
            Candidate(self, element, self.split_score[element], self.size + 1)
            for element in self.order
            if element in self.split
        ]

    def specialize(self, candidate: Candidate, context: SelectionContext, step: str) -> dict:
        element = candidate.element
        start, stop = self.intervals[element]
        cut_at = self.split[element]
        children = []
        for interval in ((start, cut_at), (cut_at, stop)):
            children.append(len(self.intervals))
            self.intervals.append(interval)
            self.cell_element[interval[0] : interval[1]] = children[-1]
        self._replace(element, children)
        needing = [child for child in children if self.splittable(child)]
        spent = 0.0
        if needing:
            before = context.accountant.total[0]
            # The children hold disjoint records: their two selections compose in parallel.
            with context.accountant.parallel_group(f"{step}: split points") as group:
                for child in needing:
                    self.choose_split(child, context, group, f"{step}: split point")
            spent = context.accountant.total[0] - before
        return {
            "value": self.grid.label(start, stop),
            "children": [self.grid.label(*self.intervals[c]) for c in children],
            "split": float(self.grid.boundaries[cut_at]),
            "follow_up_epsilon": spent,
            "follow_up": "numeric split points" if needing else None,
        }

    def labels(self) -> list[str]:
        return [self.grid.label(*self.intervals[e]) for e in self.order]

    def cut(self) -> dict:
        return {
            "kind": self.kind,
            "values": self.labels(),
            "intervals": [list(self.grid.bounds(*self.intervals[e])) for e in self.order],
            "bounds": list(self.grid.bounds(0, self.grid.n_cells)),
            "grid_cells": self.grid.n_cells,
        }

    def router(self) -> NumericRouter:
        lookup = self._position_lookup(len(self.intervals))
        return NumericRouter(
            self.grid, lookup[self.cell_element], [self.intervals[e] for e in self.order]
        )
