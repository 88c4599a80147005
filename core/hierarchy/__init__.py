"""Generalization hierarchies: ARX files, numeric intervals, code masking, inline taxonomies.

:func:`build_hierarchy` turns a policy's hierarchy declaration into a :class:`Hierarchy`.
"""

from __future__ import annotations

from privgate.core.hierarchy._arx import ARXHierarchy
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key
from privgate.core.hierarchy._interval import IntervalHierarchy
from privgate.core.hierarchy._masking import MaskingHierarchy
from privgate.core.hierarchy._taxonomy import taxonomy_hierarchy
from privgate.core.policy import (
    ARXHierarchySpec,
    ColumnSpec,
    IntervalHierarchySpec,
    MaskingHierarchySpec,
    ReleasePolicy,
    TaxonomyHierarchySpec,
)

__all__ = [
    "ARXHierarchy",
    "SUPPRESSED",
    "Hierarchy",
    "IntervalHierarchy",
    "MaskingHierarchy",
    "build_hierarchy",
    "hierarchies_for",
    "sensitive_hierarchies_for",
    "taxonomy_hierarchy",
    "value_key",
]


def build_hierarchy(column: str, spec: ColumnSpec) -> Hierarchy:
    """The hierarchy a policy declares for ``column``."""
    h = spec.hierarchy
    if isinstance(h, ARXHierarchySpec):
        return ARXHierarchy.from_csv(column, h.path, delimiter=h.delimiter)
    if isinstance(h, IntervalHierarchySpec):
        return IntervalHierarchy(column, h.bands, h.start, spec.minimum, spec.maximum)
    if isinstance(h, MaskingHierarchySpec):
        return MaskingHierarchy(column, h.length, h.levels, h.mask_char)
    if isinstance(h, TaxonomyHierarchySpec):
        return taxonomy_hierarchy(column, h.tree)
    raise TypeError(f"column {column!r} has no hierarchy")


def hierarchies_for(policy: ReleasePolicy) -> dict[str, Hierarchy]:
    """One hierarchy per quasi-identifier of ``policy``, in policy order."""
    return {name: build_hierarchy(name, policy.columns[name]) for name in policy.quasi_identifiers}


def sensitive_hierarchies_for(policy: ReleasePolicy) -> dict[str, Hierarchy]:
    """Hierarchies declared on sensitive columns (for hierarchical t-closeness)."""
    return {
        name: build_hierarchy(name, policy.columns[name])
        for name in policy.sensitive_columns
        if policy.columns[name].hierarchy is not None
    }
