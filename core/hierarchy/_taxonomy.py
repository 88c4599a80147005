"""Categorical taxonomies written inline in a policy."""

from __future__ import annotations

from collections.abc import Mapping

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._arx import ARXHierarchy
from privgate.core.hierarchy._base import SUPPRESSED


def _paths(node: object, trail: list[str], column: str) -> list[list[str]]:
    """Root-to-leaf paths of a nested mapping whose innermost nodes are lists of values."""
    if isinstance(node, Mapping):
        if not node:
            raise HierarchyError(f"taxonomy of column {column!r}: empty group under {trail}")
        out: list[list[str]] = []
        for label, child in node.items():
            out.extend(_paths(child, [*trail, str(label)], column))
        return out
    if isinstance(node, list):
        if not node:
            raise HierarchyError(f"taxonomy of column {column!r}: empty group {trail[-1]!r}")
        return [[*trail, str(value)] for value in node]
    raise HierarchyError(
        f"taxonomy of column {column!r}: under {trail} expected a mapping or a list, "
        f"got {type(node).__name__}"
    )


def taxonomy_hierarchy(column: str, tree: Mapping[str, object]) -> ARXHierarchy:
    """Build a lookup hierarchy from ``{group: {subgroup: [values]}}``.

    Every leaf must be at the same depth (otherwise levels would mix granularities), and ``*``
    is added as the root above the top groups.

    Examples
    --------
    >>> h = taxonomy_hierarchy("marital", {"Married": ["Wed"], "Single": ["Never", "Divorced"]})
    >>> h.generalize(["Divorced"]).tolist()
    [['Divorced', 'Single', '*']]
    """
    paths = _paths(tree, [], column)
    depths = {len(p) for p in paths}
    if len(depths) != 1:
        raise HierarchyError(
            f"taxonomy of column {column!r}: hierarchy levels of unequal depth "
            f"(leaves at depths {sorted(depths)})"
        )
    rows = [[*reversed(path), SUPPRESSED] for path in paths]
    return ARXHierarchy(column, rows, source="policy taxonomy")
