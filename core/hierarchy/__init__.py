"""Generalization hierarchies: ARX files, intervals, bands, dates, code masking, taxonomies.

:func:`build_hierarchy` turns a policy's hierarchy declaration into a :class:`Hierarchy`.
"""

from __future__ import annotations

from privgate.core.hierarchy._arx import ARXHierarchy, quote_values
from privgate.core.hierarchy._bands import BandsHierarchy
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, is_missing_cell, value_key
from privgate.core.hierarchy._date import DATE_STEPS, DateHierarchy, parse_iso_date
from privgate.core.hierarchy._interval import IntervalHierarchy
from privgate.core.hierarchy._masking import MaskingHierarchy
from privgate.core.hierarchy._taxonomy import taxonomy_hierarchy
from privgate.core.policy import (
    ARXHierarchySpec,
    BandsHierarchySpec,
    ColumnSpec,
    ColumnType,
    DateHierarchySpec,
    IntervalHierarchySpec,
    MaskingHierarchySpec,
    ReleasePolicy,
    TaxonomyHierarchySpec,
)

__all__ = [
    "ARXHierarchy",
    "BandsHierarchy",
    "DATE_STEPS",
    "DateHierarchy",
    "SUPPRESSED",
    "Hierarchy",
    "IntervalHierarchy",
    "is_missing_cell",
    "parse_iso_date",
    "quote_values",
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
    if isinstance(h, BandsHierarchySpec):
        return BandsHierarchy(
            column,
            [h.edges, *h.coarser],
            integer=spec.type is ColumnType.INTEGER,
            bottom_coding=h.bottom_coding,
            top_coding=h.top_coding,
        )
    if isinstance(h, DateHierarchySpec):
        timestamp = spec.type is ColumnType.DATETIME
        default = ["day", "month", "year", "5-year"] if timestamp else ["month", "year", "5-year"]
        return DateHierarchy(column, h.steps or default, timestamp=timestamp)
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
