"""Projection bounds: records that every node at given levels must suppress, found cheaply.

Group the table by a few quasi-identifiers only (a *projection*) at some levels. A record in a
projected group smaller than the minimum class size ``k`` is, at any node with those levels, in
a class at most as large (the node's classes refine the projection's groups), so it fails. The
records of such small groups are therefore a lower bound on the records a node must suppress,
and a node whose bound exceeds the suppression limit fails without being evaluated.

Finer projections give larger bounds: a three-attribute projection refines its two-attribute
ones, so only the widest projections are kept. The group sizes of every projection at every
combination of levels do not depend on ``k``: they are computed once per table, and the bound
for any ``k`` is then a binary search per level combination.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from privgate.core.encoding import FrequencySet

__all__ = ["ProjectionBounds"]


class ProjectionBounds:
    """Sorted group sizes of every ``arity``-attribute projection at every level combination.

    Parameters
    ----------
    freq : FrequencySet
    arity : int, default=3
        Attributes per projection (capped at the number of quasi-identifiers).

    Notes
    -----
    Preparation costs one weighted bincount over the distinct tuples per projection, then one
    small bincount per level combination of that projection: with 8 quasi-identifiers and
    arity 3, 56 projections and a few thousand combinations in all.
    """

    def __init__(self, freq: FrequencySet, arity: int = 3) -> None:
        table = freq.table
        q = len(table.columns)
        self.arity = min(arity, q)
        weights = freq.counts.astype(np.float64)
        self._projections: list[tuple[tuple[int, ...], tuple[int, ...], int, int]] = []
        groups: list[np.ndarray] = []
        n_combos = 0
        for attrs in itertools.combinations(range(q), self.arity):
            cols = [table.columns[a] for a in attrs]
            radices = [c.distinct_at(0) for c in cols]
            key = np.zeros(len(weights), dtype=np.int64)
            for a, radix in zip(attrs, radices, strict=True):
                key = key * radix + freq.qi_codes[:, a]
            joint = np.bincount(key, weights=weights, minlength=math.prod(radices))
            present = np.flatnonzero(joint)
            w = joint[present]
            base = []
            rest = present
            for radix in reversed(radices):
                rest, digit = np.divmod(rest, radix)
                base.append(digit)
            base.reverse()
            for levels in itertools.product(*[range(c.height + 1) for c in cols]):
                combo = np.zeros(len(w), dtype=np.int64)
                for col, lvl, b in zip(cols, levels, base, strict=True):
                    combo = combo * col.distinct_at(lvl) + col.level_maps[lvl][b]
                g = np.bincount(combo, weights=w)
                groups.append(np.sort(g[g > 0]))
            shape = tuple(c.height + 1 for c in cols)
            self._projections.append((attrs, shape, n_combos, n_combos + math.prod(shape)))
            n_combos += math.prod(shape)
        # All level combinations of all projections in one sorted array of (combo, size) keys,
        # so that the bound for a given k is a single vectorized binary search.
        lengths = np.array([len(g) for g in groups], dtype=np.int64)
        sizes = np.concatenate(groups) if groups else np.zeros(0)
        self._scale = float(freq.table.n_rows + 1)
        combo_of = np.repeat(np.arange(len(groups), dtype=np.float64), lengths)
        self._keys = combo_of * self._scale + sizes
        self._cumulative = np.concatenate([[0.0], np.cumsum(sizes)])
        self._starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]

    def suppressed_at_least(self, nodes: np.ndarray, min_class_size: int) -> np.ndarray:
        """Per node, records certainly in classes smaller than ``min_class_size``."""
        bound = np.zeros(len(nodes), dtype=np.int64)
        if min_class_size <= 1 or not self._projections:
            return bound
        combos = np.arange(len(self._starts), dtype=np.float64)
        ends = np.searchsorted(self._keys, combos * self._scale + min_class_size, side="left")
        small = (self._cumulative[ends] - self._cumulative[self._starts]).astype(np.int64)
        for attrs, shape, first, last in self._projections:
            per_levels = small[first:last].reshape(shape)
            np.maximum(bound, per_levels[tuple(nodes[:, a] for a in attrs)], out=bound)
        return bound

    def for_size(self, min_class_size: int) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`suppressed_at_least` for one ``min_class_size``, prepared once: a function of
        a few nodes (rows of an array), for a search that asks about a handful of nodes at a
        time instead of the whole lattice at once."""
        if min_class_size <= 1 or not self._projections:
            return lambda nodes: np.zeros(len(np.atleast_2d(nodes)), dtype=np.int64)
        combos = np.arange(len(self._starts), dtype=np.float64)
        ends = np.searchsorted(self._keys, combos * self._scale + min_class_size, side="left")
        small = (self._cumulative[ends] - self._cumulative[self._starts]).astype(np.int64)
        attrs = np.array([a for a, _, _, _ in self._projections], dtype=np.int64)
        strides = np.array(
            [
                [math.prod(shape[i + 1 :]) for i in range(len(shape))]
                for _, shape, _, _ in self._projections
            ],
            dtype=np.int64,
        )
        offsets = np.array([first for _, _, first, _ in self._projections], dtype=np.int64)

        def bound(nodes: np.ndarray) -> np.ndarray:
            nodes = np.atleast_2d(np.asarray(nodes, dtype=np.int64))
            index = offsets + (nodes[:, attrs] * strides).sum(axis=2)
            return small[index].max(axis=1)

        return bound
