"""The solution space of full-domain generalization and the checker that evaluates its nodes.

A *node* (a transformation) is one generalization level per quasi-identifier; the lattice is
every combination, ordered componentwise. Evaluating a node means grouping the table into its
equivalence classes and checking the privacy models on them. The checker never touches rows:
it starts from the frequency set (distinct tuples with counts) and, when it can, *rolls up* the
class table of an already-evaluated finer node, which has fewer rows than the frequency set.

The class table of a node is what every later question needs: class sizes for k, per-class
sensitive histograms for l-diversity and t-closeness, and the class codes from which the
information-loss metrics of the suppressed classes are computed.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property, partial

import numpy as np

from privgate.core.anonymize._population import population_index, with_population_counts
from privgate.core.encoding import ClassStats, FrequencySet, sort_order
from privgate.core.exceptions import AnonymizationError
from privgate.core.privacy import PrivacyModel, suppress_to_meet

__all__ = ["MAX_LISTED", "ClassTable", "Lattice", "NodeChecker", "NodeOutcome"]

#: Keys from which :func:`_group` sorts the two halves of their value range on two threads;
#: below it the threads do not pay (local recoding's many small searches stay serial).
PARALLEL_GROUP_ROWS = 1 << 17


def _group(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A representative row of each distinct key and each row's group id (groups in the
    keys' sorted order).

    ``np.unique(return_index=True, return_inverse=True)`` needs a stable sort; any member of a
    group is a valid representative here, so an unstable sort does, about three times faster.
    From :data:`PARALLEL_GROUP_ROWS` keys the work is split in two by value
    (:func:`_split_group`).
    """
    if len(key) >= PARALLEL_GROUP_ROWS:
        return _split_group(key)
    order, group_of_sorted, first = _sorted_runs(key)
    inverse = np.empty(len(key), dtype=np.int64)
    inverse[order] = group_of_sorted
    return first, inverse


def _sorted_runs(
    key: np.ndarray, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rows`` (default: all) sorted by ``key``, the group (0, 1, ...) of each in that order,
    and a representative row of each group."""
    order = sort_order(key) if rows is None else rows[sort_order(key[rows])]
    ordered = key[order]
    starts = np.empty(len(order), dtype=bool)
    if len(order):
        starts[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    del ordered
    group_of_sorted = np.cumsum(starts) - 1
    return order, group_of_sorted, order[starts]


def _split_group(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_group` with the keys split at a pivot, each side sorted and grouped on a thread
    of its own (numpy's sorts, gathers and scatters release the GIL). Every key below the
    pivot sorts before every key at or above it, so the low side's groups come first, the
    high side's ids follow them and the result is the serial one's (groups and ids;
    representatives are any member, as there).

    Why: the optimal search's class tables are rolled up one after the other, and sorting
    their keys was most of the search of a 10M-row table (21 sorts of 0.25-1.1M keys, 0.8 of
    its 1.7 CPU s) on one core while the other waited.
    """
    sample = np.sort(key[:: max(1, len(key) // 1024)])
    pivot = sample[len(sample) // 2]
    sides = [np.flatnonzero(key < pivot), np.flatnonzero(key >= pivot)]
    inverse = np.empty(len(key), dtype=np.int64)
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda rows: _sorted_runs(key, rows), sides))
        del sides
        offsets = [0, len(runs[0][2])]

        def place(i: int) -> None:
            order, group_of_sorted, _ = runs[i]
            if offsets[i]:
                group_of_sorted += offsets[i]
            inverse[order] = group_of_sorted

        list(pool.map(place, range(2)))
    return np.concatenate([runs[0][2], runs[1][2]]), inverse


def _group_dense(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and each row's group id, by marking the keys present in the key
    space.

    Why a flag per key and ranks in the key's own type: the space is up to 8 keys per row, and
    counting into it (``np.bincount``: 8 bytes a slot) then ranking in ``int64`` moved 16
    times the bytes of one flag a slot and ranks of 4; the class tables of the 10M-row search
    spend most of their time in these passes.
    """
    present = np.zeros(space, dtype=bool)
    present[key] = True
    rank = np.cumsum(present, dtype=key.dtype)
    rank -= 1
    return np.flatnonzero(present), rank[key]


def _decode(keys: np.ndarray, radices: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Per-column codes of mixed-radix keys (the inverse of the key construction)."""
    out = []
    rest = keys.astype(np.int64)
    for radix in reversed(radices[1:]):
        rest, digit = np.divmod(rest, radix)
        out.append(digit.astype(np.int32))
    out.append(rest.astype(np.int32))
    return tuple(reversed(out))


#: The most nodes :attr:`Lattice.nodes` lists (5 million nodes x 30 levels is 1.2 GB): a
#: larger lattice is searched by the heuristic, which never lists it.
MAX_LISTED = 5_000_000


class Lattice:
    """All generalization nodes of a set of hierarchies, with their order.

    The nodes are listed on first use only: a wide table's lattice (30 quasi-identifiers with
    three levels each has 3^30 nodes) cannot be listed, but its size, order and index can still
    be used by a search that visits a few nodes (see the ``heuristic`` algorithm).

    Parameters
    ----------
    heights : sequence of int
        Height of each quasi-identifier's hierarchy.
    """

    def __init__(self, heights: Sequence[int]) -> None:
        self.heights = np.asarray(heights, dtype=np.int64)
        self._strides = np.ones(len(self.heights), dtype=np.int64)
        for j in range(len(self.heights) - 2, -1, -1):
            self._strides[j] = self._strides[j + 1] * (self.heights[j + 1] + 1)

    @property
    def size(self) -> int:
        """How many nodes the lattice has: the product of (height + 1), never listed."""
        return math.prod(int(h) + 1 for h in self.heights)

    @cached_property
    def nodes(self) -> np.ndarray:
        """Every node, shape (size, n_quasi_identifiers), in index order.

        Raises
        ------
        AnonymizationError
            The lattice has more than :data:`MAX_LISTED` nodes.
        """
        if self.size > MAX_LISTED:
            raise AnonymizationError(
                f"the generalization lattice has {self.size:,} nodes ({len(self.heights)} "
                f"quasi-identifiers), more than the {MAX_LISTED:,} an exact search lists; use "
                "algorithm 'heuristic' (algorithm.name: heuristic), which searches it without "
                "listing it"
            )
        shape = tuple(int(h) + 1 for h in self.heights)
        return np.indices(shape, dtype=np.int64).reshape(len(shape), -1).T.copy()

    def __len__(self) -> int:
        return self.size

    def index(self, node: Sequence[int]) -> int:
        """Position of ``node`` in :attr:`nodes` (mixed-radix number of its levels)."""
        return int(np.dot(np.asarray(node, dtype=np.int64), self._strides))

    @property
    def top(self) -> tuple[int, ...]:
        return tuple(int(h) for h in self.heights)

    @property
    def bottom(self) -> tuple[int, ...]:
        return (0,) * len(self.heights)


@dataclass(frozen=True)
class ClassTable:
    """The equivalence classes of one node.

    Attributes
    ----------
    node : tuple of int
    codes : tuple of ndarray of int32, one per quasi-identifier, each shape (n_classes,)
        Each class's generalized code per quasi-identifier (at the node's levels).
    sizes : ndarray of int64, shape (n_classes,)
    histograms : tuple of ndarray, each shape (n_classes, n_values)
        Per sensitive column (in the checker's order), each class's value counts.
    """

    node: tuple[int, ...]
    codes: np.ndarray
    sizes: np.ndarray
    histograms: tuple[np.ndarray, ...] = ()

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays (codes, sizes, histograms)."""
        arrays = [*self.codes, self.sizes, *self.histograms]
        return sum(a.nbytes for a in arrays)


#: How many bytes of class tables a :class:`NodeChecker` keeps as roll-up sources, per cell of
#: the searched columns (quasi-identifiers and sensitive ones): the bytes of the table's own
#: ``int32`` codes, a budget that grows with the table. ``privgate anonymize`` lets those codes
#: go before the search, so at 10M rows the tables (327 MiB at most) fit in what was freed and
#: no roll-up is lost, while at 1M rows they no longer hold 91 MiB (48 tables), the largest
#: part of the command's peak, but about 34 (benchmarks/BENCHMARKS.md, issue 18). A budget of
#: twice the frequency set's own table instead cost 0.5-0.8 CPU s of roll-ups at 10M rows.
CACHE_BYTES_PER_CELL = 4
#: ... but never fewer than this many: a small table's tables fit in it whatever their count,
#: and local recoding, which searches many small subsets, took 15 % more CPU when its
#: checkers kept two tables each.
CACHE_MIN_BYTES = 16 << 20


@dataclass(frozen=True)
class NodeOutcome:
    """Whether a node satisfies the models, and with which classes suppressed."""

    node: tuple[int, ...]
    satisfied: bool
    outliers: int
    #: ``None`` in an outcome kept after its table left the checker's cache (see
    #: :meth:`NodeChecker.known`); :meth:`NodeChecker.evaluate` returns it with its table.
    table: ClassTable | None
    failing: np.ndarray  # bool per class: records of these classes are suppressed


class NodeChecker:
    """Evaluates lattice nodes against privacy models with a suppression limit.

    A node satisfies the models when the records of the classes that fail any model number at
    most ``floor(suppression_limit * n_rows)``; those records are then suppressed. Every model
    here is monotone under generalization (merging two satisfying classes gives a satisfying
    class), so satisfaction is monotone over the lattice, which the searches rely on.

    Parameters
    ----------
    freq : FrequencySet
    models : sequence of PrivacyModel
    suppression_limit : float
    cache_size : int, default=48
        How many evaluated class tables are kept as roll-up sources, at most.
    cache_bytes : int, optional
        How many bytes of them, at most (the oldest used leave first; two are always kept).
        Default: :data:`CACHE_BYTES_PER_CELL` per cell of the searched columns, at least
        :data:`CACHE_MIN_BYTES`. It bounds the cache only: a table that ``cache_size`` evicts
        while the cache is within these bytes stays with its node's kept outcome, outside the
        budget (``remember``).
    remember : bool, default=True
        Keep every outcome for :meth:`known`, with its class table until the byte budget
        evicts it. A search that evaluates thousands of nodes of a wide table keeps its own
        verdicts instead: the class tables would hold gigabytes.
    """

    def __init__(
        self,
        freq: FrequencySet,
        models: Sequence[PrivacyModel],
        suppression_limit: float,
        cache_size: int = 48,
        remember: bool = True,
        cache_bytes: int | None = None,
    ) -> None:
        table = freq.table
        self.freq = freq
        self.models = list(models)
        self.n_rows = table.n_rows
        self.allowance = math.floor(suppression_limit * self.n_rows + 1e-9)
        self.min_class_size = max((m.min_class_size for m in self.models), default=1)
        self.evaluations = 0
        self._cache_size = max(2, cache_size)
        if "solution_space" not in freq.cache:  # independent of the models: build once
            freq.cache["solution_space"] = (
                Lattice(table.heights),
                [
                    np.array([c.distinct_at(lvl) for lvl in range(c.height + 1)], np.int64)
                    for c in table.columns
                ],
                [self._up_maps(c.level_maps) for c in table.columns],
                self._bottom_table(),
            )
        self.lattice, self._nv, self._up, bottom = freq.cache["solution_space"]
        self._sensitive = list(table.sensitive_codes)
        self._overall = {
            name: hist.sum(axis=0) / max(hist.sum(), 1)
            for name, hist in zip(self._sensitive, bottom.histograms, strict=True)
        }
        self._values = dict(table.sensitive_values)
        self._cache: OrderedDict[tuple[int, ...], ClassTable] = OrderedDict()
        self._cache_index: tuple | None = None
        self._last: tuple[int, ...] | None = None
        self._bottom = bottom
        if cache_bytes is None:
            cells = self.n_rows * (len(table.columns) + len(self._sensitive))
            cache_bytes = max(CACHE_BYTES_PER_CELL * cells, CACHE_MIN_BYTES)
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        self._outcomes: dict[tuple[int, ...], NodeOutcome] = {}
        self._remember = remember
        self._population = population_index(freq, self.models)

    # --- set-up -------------------------------------------------------------------------

    @staticmethod
    def _up_maps(level_maps: list[np.ndarray]) -> list[list[np.ndarray | None]]:
        """``up[a][b][code at level a] = code at level b`` for every a <= b."""
        h = len(level_maps)
        up: list[list[np.ndarray | None]] = [[None] * h for _ in range(h)]
        for a in range(h):
            n_a = int(level_maps[a].max()) + 1 if len(level_maps[a]) else 0
            for b in range(a, h):
                arr = np.zeros(n_a, dtype=np.int32)
                arr[level_maps[a]] = level_maps[b]
                up[a][b] = arr
        return up

    def _bottom_table(self) -> ClassTable:
        f = self.freq
        hists = []
        for i, name in enumerate(f.table.sensitive_codes):
            m = len(f.table.sensitive_values[name])
            hist = np.zeros((len(f.counts), m), dtype=np.int64)
            hist[np.arange(len(f.counts)), f.sensitive[:, i]] = f.counts
            hists.append(hist)
        node = (0,) * f.qi_codes.shape[1]
        codes = tuple(
            np.ascontiguousarray(f.qi_codes[:, j], dtype=np.int32) for j in range(len(node))
        )
        return ClassTable(node, codes, f.counts.astype(np.int64), tuple(hists))

    # --- class tables -------------------------------------------------------------------

    def _source_for(self, node: tuple[int, ...]) -> ClassTable:
        """The smallest cached class table of a node at or below ``node``."""
        if not self._cache:
            return self._bottom
        if self._cache_index is None:
            tables = list(self._cache.values())
            self._cache_index = (
                np.array([t.node for t in tables], dtype=np.int64),
                np.array([len(t) for t in tables], dtype=np.int64),
                tables,
            )
        nodes, sizes, tables = self._cache_index
        below = np.all(nodes <= np.asarray(node), axis=1)
        if not below.any():
            return self._bottom
        candidates = np.flatnonzero(below)
        best = candidates[np.argmin(sizes[candidates])]
        return tables[best] if sizes[best] < len(self._bottom) else self._bottom

    def class_table(self, node: Sequence[int]) -> ClassTable:
        """Equivalence classes of ``node``, rolled up from the smallest finer cached table."""
        node = tuple(int(v) for v in node)
        if node in self._cache:
            self._cache.move_to_end(node)
            return self._cache[node]
        src = self._source_for(node)
        if src is self._bottom and self._last is not None and len(src) > 4096:
            # A node rolled up from the frequency set is the slowest case. Materialize the
            # meet of this node and the previous one first: nodes the search visits next are
            # usually above it, and its table is much smaller than the frequency set.
            hub = tuple(min(a, b) for a, b in zip(node, self._last, strict=True))
            if hub != node and any(hub):
                self._last = None
                src = self.class_table(hub)
        self._last = node
        codes = [
            col if a == b else self._up[j][a][b][col]
            for j, (col, a, b) in enumerate(zip(src.codes, src.node, node, strict=True))
        ]
        radices = [int(self._nv[j][lvl]) for j, lvl in enumerate(node)]
        space = math.prod(radices)
        if space < 2**62:
            key = codes[0].astype(np.int32 if space < 2**31 else np.int64)
            for col, radix in zip(codes[1:], radices[1:], strict=True):
                key *= radix
                key += col
            if space <= max(8 * len(key), 1 << 16):
                # Small key space: count directly instead of sorting, and decode each class's
                # codes from its key.
                present_keys, inverse = _group_dense(key, space)
                class_codes = _decode(present_keys, radices)
            else:
                first, inverse = _group(key)
                class_codes = tuple(col[first] for col in codes)
        else:
            # The mixed-radix key would overflow (a wide table): fold the columns in one at a
            # time and renumber the partial key densely (its distinct values, in order) before
            # it would overflow. Much faster than grouping the code rows with np.unique.
            key = codes[0].astype(np.int64)
            partial_space = radices[0]
            for col, radix in zip(codes[1:], radices[1:], strict=True):
                if partial_space * radix >= 2**62:
                    present, key = _group(key)
                    partial_space = len(present)
                key = key * radix + col
                partial_space *= radix
            first, inverse = _group(key)
            class_codes = tuple(col[first] for col in codes)
        n_classes = len(class_codes[0]) if class_codes else 1
        sizes = np.bincount(inverse, weights=src.sizes, minlength=n_classes).astype(np.int64)
        hists = tuple(
            np.column_stack(
                [
                    np.bincount(inverse, weights=h[:, v], minlength=n_classes)
                    for v in range(h.shape[1])
                ]
            ).astype(np.int64)
            for h in src.histograms
        )
        table = ClassTable(node, class_codes, sizes, hists)
        self._cache[node] = table
        self._cached_bytes += table.nbytes
        while len(self._cache) > 2 and (
            len(self._cache) > self._cache_size or self._cached_bytes > self._cache_bytes
        ):
            self._evict(forget=self._cached_bytes > self._cache_bytes)
        self._cache_index = None
        return table

    def _evict(self, forget: bool) -> None:
        """Let go of the least recently used cached table; with ``forget`` (the byte budget is
        exceeded) also from its node's kept outcome, which :meth:`evaluate` rebuilds when
        asked again. A table the count limit alone evicts stays with its outcome: a search
        that asks again about nodes it evaluated (local recoding's many small searches) would
        otherwise roll them up again (7,000 more roll-ups in test_local_recoding.py)."""
        node, table = self._cache.popitem(last=False)
        self._cached_bytes -= table.nbytes
        outcome = self._outcomes.get(node)
        if forget and outcome is not None and outcome.table is table:
            self._outcomes[node] = replace(outcome, table=None)

    # --- evaluation ---------------------------------------------------------------------

    def stats(self, table: ClassTable) -> ClassStats:
        """The table in the form the privacy models check (with each class's population
        count when a model compares with a population)."""
        stats = ClassStats(
            table.sizes,
            dict(zip(self._sensitive, table.histograms, strict=True)),
            self._overall,
            self._values,
        )
        return with_population_counts(stats, self._population, table.node, table.codes)

    @staticmethod
    def _kept(stats: ClassStats, ok: np.ndarray) -> ClassStats:
        """The statistics of the classes ``ok`` (the others' records suppressed): their
        population records then match no class of the release."""
        population = stats.population_sizes
        return ClassStats(
            stats.sizes[ok],
            {name: h[ok] for name, h in stats.histograms.items()},
            stats.overall,
            stats.ordered_values,
            None if population is None else population[ok],
            stats.population_outside + (0 if population is None else int(population[~ok].sum())),
        )

    def evaluate(self, node: Sequence[int]) -> NodeOutcome:
        """Check ``node``: which classes fail, and whether their records fit the limit."""
        node = tuple(int(v) for v in node)
        if node in self._outcomes:
            outcome = self._outcomes[node]
            if outcome.table is None:
                # Its table left the cache: rebuilt, the same classes in the same order (a
                # node's classes are ordered by their codes, whichever table they roll up).
                outcome = replace(outcome, table=self.class_table(node))
                self._outcomes[node] = outcome
            return outcome
        self.evaluations += 1
        table = self.class_table(node)
        ok = np.ones(len(table), dtype=bool)
        satisfied = True
        stats = None
        if self.models:
            stats = self.stats(table)
            for model in self.models:
                ok &= model.satisfied_by(stats)
        failing = ~ok
        outliers = int(table.sizes[failing].sum())
        satisfied = outliers <= self.allowance
        if satisfied and stats is not None:
            kept = self._kept(stats, ok)
            satisfied = all(model.table_satisfied(kept) for model in self.models)
            if not satisfied:  # a risk limit that may suppress records to meet it
                meets = suppress_to_meet(
                    self.models, table.sizes, ok, self.allowance, partial(self._kept, stats)
                )
                if meets is not None:
                    ok, satisfied = meets, True
                    failing = ~ok
                    outliers = int(table.sizes[failing].sum())
        outcome = NodeOutcome(node, satisfied, outliers, table, failing)
        if self._remember:
            self._outcomes[node] = outcome
        return outcome

    def known(self, node: Sequence[int]) -> NodeOutcome | None:
        """The outcome of an already-evaluated node, if any (its ``table`` is ``None`` once the
        table has left the cache: :meth:`evaluate` returns it with its table)."""
        return self._outcomes.get(tuple(int(v) for v in node))
