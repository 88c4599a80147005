"""Navigable domains for DPHeter: taxonomy trees for categories, split grids for numbers.

Top-down specialization walks a domain from its root to its leaves, so it needs what a
:class:`~core.hierarchy.Hierarchy` does not offer directly: the children of a node. Both domain
types here are *public*: they are built from the hierarchy (or the declared bounds), never from
which values happen to occur in the data, because the set of candidate specializations of a
differentially private algorithm must not depend on the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy import SUPPRESSED, Hierarchy, value_key

__all__ = ["NumericGrid", "Taxonomy"]


@dataclass(frozen=True)
class Taxonomy:
    """A rooted tree over a categorical domain, read from a hierarchy's levels.

    Nodes are numbered breadth-first from the root (node 0). A node with a single child is
    skipped (its child takes its place): specializing it would change nothing and waste a round.

    Attributes
    ----------
    column : str
    labels : tuple of str
        The label of each node (the hierarchy's text at that node's level).
    children : tuple of tuple of int
        The children of each node; empty for a leaf.
    leaves : tuple of str
        The original values (leaves), in the hierarchy's order.
    leaf_node : ndarray of int
        The node id of each leaf.
    node_leaves : tuple of ndarray
        The leaf indices under each node.
    """

    column: str
    labels: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    leaves: tuple[str, ...]
    leaf_node: np.ndarray
    node_leaves: tuple[np.ndarray, ...]

    @classmethod
    def from_hierarchy(
        cls, hierarchy: Hierarchy, declared: Sequence[object] | None = None
    ) -> Taxonomy:
        """Build the tree of ``hierarchy`` over its *declared* domain.

        An :class:`~core.hierarchy.ARXHierarchy` (an ARX file or an inline taxonomy) lists its
        whole domain, which is then the set of leaves. Other hierarchies (masking) only
        generalize the values they are given, so the policy must declare the domain
        (``declared``, e.g. a column's ``categories``). The values present in the data are
        never used: which leaves and candidate specializations exist must not depend on the
        private records (one added record with a new value would otherwise show in the cuts).

        Raises
        ------
        HierarchyError
            If neither the hierarchy nor ``declared`` gives a domain, the levels do not form a
            tree (a label with two parents), or two nodes share a label.
        """
        domain = getattr(hierarchy, "domain", None)
        if domain is None and declared is None:
            raise HierarchyError(
                f"column {hierarchy.column!r}: a differentially private release needs the "
                "column's whole domain declared (an ARX or taxonomy hierarchy, or the column's "
                "'categories'); it is never taken from the data"
            )
        values = list(domain) if domain is not None else [value_key(v) for v in declared]
        if not values:
            raise HierarchyError(f"column {hierarchy.column!r}: the hierarchy has no values")
        table = hierarchy.generalize(values)
        height = table.shape[1] - 1
        column = hierarchy.column
        # Nodes are (level, label); level 0 = leaves. A virtual root sits above a top level with
        # several labels.
        top = {str(label) for label in table[:, height]} if height else set()
        root: tuple[int, str] = (height, next(iter(top))) if len(top) == 1 else (-1, SUPPRESSED)
        parent: dict[tuple[int, str], tuple[int, str]] = {}
        kids: dict[tuple[int, str], list[tuple[int, str]]] = {root: []}
        for row in table:
            path = [(level, str(row[level])) for level in range(height + 1)]
            if path[-1] != root:
                path.append(root)
            for child, up in zip(path, path[1:], strict=False):
                known = parent.get(child)
                if known is None:
                    parent[child] = up
                    kids.setdefault(up, []).append(child)
                    kids.setdefault(child, [])
                elif known != up:
                    raise HierarchyError(
                        f"column {column!r}: hierarchy label {child[1]!r} has two parents "
                        f"({known[1]!r} and {up[1]!r}); top-down specialization needs a tree"
                    )

        def collapse(node: tuple[int, str]) -> tuple[int, str]:
            while len(kids[node]) == 1:
                node = kids[node][0]
            return node

        order = [collapse(root)]
        ids = {order[0]: 0}
        child_ids: list[tuple[int, ...]] = []
        position = 0
        while position < len(order):
            node = order[position]
            mine = []
            for child in kids[node]:
                child = collapse(child)
                ids[child] = len(order)
                order.append(child)
                mine.append(ids[child])
            child_ids.append(tuple(mine))
            position += 1
        labels = tuple(label for _, label in order)
        duplicates = sorted({x for x in labels if labels.count(x) > 1})
        if duplicates:
            raise HierarchyError(
                f"column {column!r}: label(s) {duplicates[:5]} name several hierarchy nodes; "
                "released labels must be unambiguous"
            )
        leaf_node = np.array([ids[(0, value)] for value in values], dtype=np.int64)
        under: list[list[int]] = [[] for _ in order]
        for leaf, node in enumerate(leaf_node.tolist()):
            under[node].append(leaf)
        for node in reversed(range(len(order))):
            for child in child_ids[node]:
                under[node].extend(under[child])
        return cls(
            column=column,
            labels=labels,
            children=tuple(child_ids),
            leaves=tuple(values),
            leaf_node=leaf_node,
            node_leaves=tuple(np.array(sorted(u), dtype=np.int64) for u in under),
        )

    def leaf_codes(self, values: Sequence[object]) -> np.ndarray:
        """The leaf index of each value.

        Raises
        ------
        HierarchyError
            If a value is not a leaf of the taxonomy.
        """
        lookup = {leaf: i for i, leaf in enumerate(self.leaves)}
        keys = [value_key(v) for v in values]
        missing = sorted({k for k in keys if k not in lookup})
        if missing:
            raise HierarchyError(
                f"column {self.column!r}: {len(missing)} value(s) not covered by its hierarchy: "
                + ", ".join(repr(m) for m in missing[:10])
            )
        return np.fromiter((lookup[k] for k in keys), dtype=np.int64, count=len(keys))

    def is_leaf(self, node: int) -> bool:
        """Whether ``node`` has no children."""
        return not self.children[node]


@dataclass(frozen=True)
class NumericGrid:
    """The public split grid of a numeric attribute: cells between sorted boundaries.

    Cell ``k`` is ``[boundaries[k], boundaries[k + 1])`` (the last one closed). An interval of
    the cut is a run of cells ``[i, j)``; its candidate split points are the inner boundaries
    ``boundaries[i + 1 .. j - 1]``, so a split point is always one of the grid's values.

    For an integer attribute whose range has at most ``max_cells`` values, every integer is a
    cell (and every integer a candidate split point); a wider range gets ``max_cells`` cells of
    (rounded) equal width, as does a non-integer attribute.

    Attributes
    ----------
    column : str
    boundaries : ndarray of float, shape (cells + 1,)
    integer : bool
        Labels print integer ranges ``lo-hi`` (both included).
    """

    column: str
    boundaries: np.ndarray
    integer: bool

    @classmethod
    def build(
        cls, column: str, low: float, high: float, integer: bool, max_cells: int
    ) -> NumericGrid:
        """The grid over the public bounds ``[low, high]``.

        Raises
        ------
        HierarchyError
            If the bounds are not finite or ``low > high``.
        """
        if not (np.isfinite(low) and np.isfinite(high)) or low > high:
            raise HierarchyError(
                f"column {column!r}: numeric bounds must be finite with low <= high; "
                f"got ({low!r}, {high!r})"
            )
        if integer:
            low, high = float(np.floor(low)), float(np.floor(high))
            if high - low + 1 <= max_cells:
                edges = np.arange(low, high + 2, dtype=float)
            else:
                edges = np.unique(np.round(np.linspace(low, high + 1, max_cells + 1)))
        elif high > low:
            edges = np.linspace(low, high, max_cells + 1)
        else:
            edges = np.array([low, high], dtype=float)
        return cls(column, edges.astype(float), integer)

    @property
    def n_cells(self) -> int:
        return len(self.boundaries) - 1

    def cells(self, values: np.ndarray) -> np.ndarray:
        """The cell of each value; values outside the bounds fall in the first or last cell."""
        cells = np.searchsorted(self.boundaries, values, side="right") - 1
        return np.clip(cells, 0, self.n_cells - 1).astype(np.int64)

    def bounds(self, start: int, stop: int) -> tuple[float, float]:
        """``(lo, hi)`` of the interval of cells ``[start, stop)`` in original units.

        Integer grids give both ends included; others give ``[lo, hi)`` (``hi`` included for the
        last cell).
        """
        low = float(self.boundaries[start])
        high = float(self.boundaries[stop])
        return (low, high - 1) if self.integer else (low, high)

    def label(self, start: int, stop: int) -> str:
        """The release label of cells ``[start, stop)``: ``lo-hi`` (closed) or ``[lo, hi)``."""
        low, high = self.bounds(start, stop)
        if self.integer:
            return f"{int(low)}-{int(high)}"
        if stop == self.n_cells:
            return f"{low:.10g}-{high:.10g}"
        return f"[{low:.10g}, {high:.10g})"
