"""Projection bounds: records that every node at given levels must suppress, found cheaply.

Group the table by a few quasi-identifiers only (a *projection*) at some levels. A record in a
projected group smaller than the minimum class size ``k`` is, at any node with those levels, in
a class at most as large (the node's classes refine the projection's groups), so it fails. The
records of such small groups are therefore a lower bound on the records a node must suppress,
and a node whose bound exceeds the suppression limit fails without being evaluated.

Finer projections give larger bounds: a three-attribute projection refines its two-attribute
ones, so only the widest projections are kept. The group sizes of every projection at every
combination of levels do not depend on ``k``: they are computed once per table (all the level
combinations of a projection by one vectorized count), and the bound for any ``k`` is then one
pass over the groups.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from privgate.core.encoding import FrequencySet

__all__ = ["ProjectionBounds", "cannot_prune"]

#: Distinct tuples from which the projections are counted on threads, one prefix's
#: projections per task. 2**19: two projections' temporaries at once raised ``privgate
#: anonymize``'s peak on 1M rows (263k tuples) from 0.21 to 0.28 GiB, over issue 18's 0.23;
#: 10M rows have 1.07M tuples.
PARALLEL_TUPLES = 1 << 19


class ProjectionBounds:
    """Group sizes of every ``arity``-attribute projection at every level combination.

    Parameters
    ----------
    freq : FrequencySet
    arity : int, default=3
        Attributes per projection (capped at the number of quasi-identifiers).

    Notes
    -----
    Preparation costs, per projection, one weighted bincount over the distinct tuples and one
    over its present cells at all its level combinations: with 8 quasi-identifiers and arity
    3, 56 projections and 1,646 combinations in all (Adult: 2.3 million cell-combinations).
    """

    def __init__(self, freq: FrequencySet, arity: int = 3) -> None:
        table = freq.table
        q = len(table.columns)
        self.arity = min(arity, q)
        weights = freq.counts.astype(np.float64)
        self._projections: list[tuple[tuple[int, ...], tuple[int, ...], int, int]] = []
        sizes: list[np.ndarray] = []
        combos: list[np.ndarray] = []
        n_combos = 0
        # Each quasi-identifier's codes as one contiguous column (a column of the tuples'
        # row-major array is a strided read: at 1M distinct tuples, building the 56 keys
        # from it took 0.8 of the 0.9 CPU s the bounds cost), and each key built from the
        # previous projection's key of its first ``arity - 1`` attributes: the combinations
        # come in lexicographic order, so consecutive ones share that prefix.
        columns = [np.ascontiguousarray(freq.qi_codes[:, j], dtype=np.int32) for j in range(q)]
        radices = [c.distinct_at(0) for c in table.columns]
        projections = list(itertools.combinations(range(q), self.arity))
        # The projections sharing a prefix form one task (one prefix key), the tasks run one
        # per core: numpy's passes release the GIL, and at 10M rows (1.07M distinct tuples)
        # the 56 projections took 0.66 CPU s on one core while the other idled.
        order = range(len(projections))
        tasks = [list(g) for _, g in itertools.groupby(order, lambda i: projections[i][:-1])]

        def prepare(task: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
            prefix = _level0_key(columns, radices, projections[task[0]][:-1], len(weights))
            out = []
            for i in task:
                attrs = projections[i]
                key = prefix * radices[attrs[-1]]
                key += columns[attrs[-1]]
                out.append(_projection_groups(freq, weights, attrs, key))
            return out

        threads = max(1, min(len(tasks), os.cpu_count() or 1, 2))
        if threads == 1 or len(weights) < PARALLEL_TUPLES:
            prepared = [found for task in tasks for found in prepare(task)]
        else:
            with ThreadPoolExecutor(threads) as pool:
                prepared = [found for task in pool.map(prepare, tasks) for found in task]
        for attrs, (group_sizes, group_combos) in zip(projections, prepared, strict=True):
            shape = tuple(table.columns[a].height + 1 for a in attrs)
            sizes.append(group_sizes)
            combos.append(group_combos + n_combos)
            self._projections.append((attrs, shape, n_combos, n_combos + math.prod(shape)))
            n_combos += math.prod(shape)
        #: Every group of every projection at every level combination: its size, and the
        #: combination (numbered across projections) it belongs to.
        self._sizes = np.concatenate(sizes) if sizes else np.zeros(0)
        self._combo_of = np.concatenate(combos) if combos else np.zeros(0, dtype=np.int64)
        self._n_combos = n_combos
        self._small: dict[int, np.ndarray] = {}
        self._index_strides: np.ndarray | None = None

    def _small_records(self, min_class_size: int) -> np.ndarray:
        """Per level combination, the records in its groups smaller than ``min_class_size``
        (computed once per size: a pass over the groups)."""
        if min_class_size not in self._small:
            small = np.where(self._sizes < min_class_size, self._sizes, 0.0)
            counted = np.bincount(self._combo_of, weights=small, minlength=self._n_combos)
            self._small[min_class_size] = np.rint(counted).astype(np.int64)
        return self._small[min_class_size]

    def _combination_index(self, nodes: np.ndarray) -> np.ndarray:
        """Per node (row) and projection, the index of the node's level combination."""
        if self._index_strides is None:
            self._index_attrs = np.array([a for a, _, _, _ in self._projections], np.int64)
            self._index_strides = np.array(
                [
                    [math.prod(shape[i + 1 :]) for i in range(len(shape))]
                    for _, shape, _, _ in self._projections
                ],
                dtype=np.int64,
            )
            self._index_offsets = np.array([f for _, _, f, _ in self._projections], np.int64)
        picked = nodes[:, self._index_attrs] * self._index_strides
        return self._index_offsets + picked.sum(axis=2)

    def suppressed_at_least(self, nodes: np.ndarray, min_class_size: int) -> np.ndarray:
        """Per node, records certainly in classes smaller than ``min_class_size``."""
        bound = np.zeros(len(nodes), dtype=np.int64)
        if min_class_size <= 1 or not self._projections:
            return bound
        small = self._small_records(min_class_size)
        for attrs, shape, first, last in self._projections:
            per_levels = small[first:last].reshape(shape)
            np.maximum(bound, per_levels[tuple(nodes[:, a] for a in attrs)], out=bound)
        return bound

    def for_lattice(self, heights: Sequence[int], min_class_size: int) -> np.ndarray:
        """:meth:`suppressed_at_least` for every node of the lattice of ``heights``, in the
        lattice's index order (row-major over the levels, as :attr:`Lattice.nodes` lists them).

        Each projection's bounds are broadcast over the whole lattice instead of gathered
        node by node: a few array-wide maxima, no index arithmetic per node.
        """
        shape = tuple(int(h) + 1 for h in heights)
        bound = np.zeros(shape, dtype=np.int64)
        if min_class_size <= 1 or not self._projections:
            return bound.reshape(-1)
        small = self._small_records(min_class_size)
        for attrs, levels, first, last in self._projections:
            view = [1] * len(shape)
            for a, size in zip(attrs, levels, strict=True):
                view[a] = size
            np.maximum(bound, small[first:last].reshape(view), out=bound)
        return bound.reshape(-1)

    def for_size(self, min_class_size: int) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`suppressed_at_least` for one ``min_class_size``, prepared once: a function of
        a few nodes (rows of an array), for a search that asks about a handful of nodes at a
        time instead of the whole lattice at once."""
        if min_class_size <= 1 or not self._projections:
            return lambda nodes: np.zeros(len(np.atleast_2d(nodes)), dtype=np.int64)
        small = self._small_records(min_class_size)

        def bound(nodes: np.ndarray) -> np.ndarray:
            nodes = np.atleast_2d(np.asarray(nodes, dtype=np.int64))
            return small[self._combination_index(nodes)].max(axis=1)

        return bound


def cannot_prune(freq: FrequencySet, arity: int, min_class_size: int, allowance: int) -> bool:
    """Whether no node's projection bound (:class:`ProjectionBounds` of ``arity``) can exceed
    ``allowance``, so that the bounds would prune nothing and need not be built.

    A projection's bound is largest at its level-0 combination (a group of a coarser
    combination is a union of level-0 groups, so each of its records flagged as small was
    flagged at level 0 too), and there it is at most ``min_class_size - 1`` records per cell
    of its level-0 key space. Only the projections whose key space allows more than
    ``allowance`` records are counted (largest first, stopping at the first that exceeds it).

    Why: on a 10M-row table (1.07M distinct tuples, k = 5, 2 %: 200,000 records may go) no
    3-attribute projection holds more than 28,308 records in small groups, and the bounds,
    0.44 CPU s to build (56 projections at 1,646 level combinations), pruned none of the
    6,480 nodes; one projection's key space allows more (73 x 17 x 42 cells x 4), counted in
    a few milliseconds.
    """
    if min_class_size <= 1:
        return True
    if int(freq.counts.sum()) <= allowance:
        return True
    q = len(freq.table.columns)
    radices = [c.distinct_at(0) for c in freq.table.columns]
    spaces = {
        attrs: math.prod(radices[a] for a in attrs)
        for attrs in itertools.combinations(range(q), min(arity, q))
    }
    doubtful = [a for a, space in spaces.items() if space * (min_class_size - 1) > allowance]
    if not doubtful:
        return True
    columns = [np.ascontiguousarray(freq.qi_codes[:, j], dtype=np.int32) for j in range(q)]
    weights = freq.counts.astype(np.float64)
    for attrs in sorted(doubtful, key=spaces.__getitem__, reverse=True):
        key = _level0_key(columns, radices, attrs, len(weights))
        if spaces[attrs] <= max(4 * len(key), 1 << 20):
            sizes = np.bincount(key, weights=weights, minlength=spaces[attrs])
            sizes = sizes[sizes > 0]
        else:
            _, cell_of = np.unique(key, return_inverse=True)
            sizes = np.bincount(cell_of.reshape(-1), weights=weights)
        if int(np.rint(sizes[sizes < min_class_size].sum())) > allowance:
            return False
    return True


def _level0_key(
    columns: Sequence[np.ndarray], radices: Sequence[int], attrs: tuple[int, ...], n: int
) -> np.ndarray:
    """Each tuple's mixed-radix key (int64) over the level-0 codes of ``attrs``."""
    key = np.zeros(n, dtype=np.int64)
    for a in attrs:
        key *= radices[a]
        key += columns[a]
    return key


def _projection_groups(
    freq: FrequencySet, weights: np.ndarray, attrs: tuple[int, ...], key: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sizes of the groups of the projection on ``attrs`` at every level combination, and
    the combination (row-major over the levels) each group belongs to.

    ``key``: each tuple's mixed-radix key over the level-0 codes of ``attrs``
    (:func:`_level0_key`). All combinations at once: each cell present at level 0 gets its
    projected key at every combination (an array of shape ``levels + (cells,)``), each
    combination offset into a block of its own in one key space, and the groups are counted
    by one bincount over that space, or by one sort when the space is much larger than the
    keys.
    """
    cols = [freq.table.columns[a] for a in attrs]
    radices = [c.distinct_at(0) for c in cols]
    if math.prod(radices) <= max(4 * len(key), 1 << 20):
        joint = np.bincount(key, weights=weights, minlength=math.prod(radices))
        present = np.flatnonzero(joint)
        w = joint[present]
    else:  # a sparse projection: sort instead of counting over its whole key space
        present, cell_of = np.unique(key, return_inverse=True)
        w = np.bincount(cell_of.reshape(-1), weights=weights, minlength=len(present))
    digits = []
    rest = present
    for radix in reversed(radices):
        rest, digit = np.divmod(rest, radix)
        digits.append(digit)
    digits.reverse()
    shape = tuple(c.height + 1 for c in cols)
    local = np.zeros((1,) * len(cols) + (len(w),), dtype=np.int64)
    space = np.ones((1,) * len(cols), dtype=np.int64)
    for i, (col, digit) in enumerate(zip(cols, digits, strict=True)):
        at = [1] * len(cols)
        at[i] = shape[i]
        codes = np.stack([m[digit] for m in col.level_maps]).astype(np.int64)
        distinct = np.array([col.distinct_at(lvl) for lvl in range(shape[i])], dtype=np.int64)
        local = local * distinct.reshape(at + [1]) + codes.reshape(at + [len(w)])
        space = space * distinct.reshape(at)
    block = space.reshape(-1)
    offsets = np.concatenate([[0], np.cumsum(block)[:-1]])
    keys = (local.reshape(len(block), len(w)) + offsets[:, None]).reshape(-1)
    key_weights = np.tile(w, len(block))
    total = int(block.sum())
    if total <= max(4 * len(keys), 1 << 16):
        groups = np.bincount(keys, weights=key_weights, minlength=total)
        filled = np.flatnonzero(groups)
        return groups[filled], np.searchsorted(offsets, filled, side="right") - 1
    distinct_keys, group_of = np.unique(keys, return_inverse=True)
    groups = np.bincount(group_of.reshape(-1), weights=key_weights, minlength=len(distinct_keys))
    return groups, np.searchsorted(offsets, distinct_keys, side="right") - 1
