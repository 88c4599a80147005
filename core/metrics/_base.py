"""What a search objective provides: a cheap lower bound per node and its exact value."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from privgate.core.encoding import EncodedColumn


class LossMetric(ABC):
    """An information-loss metric of full-domain generalization with record suppression.

    Lower is better. A metric is *prepared* once for a table (its per-attribute, per-level
    costs), then gives a vectorized lower bound for every lattice node, valid whatever records
    end up suppressed, and the exact value of an evaluated node from its class table. The
    optimal search visits nodes by increasing lower bound and stops once the bound exceeds the
    best exact value found: the bound is what makes the search fast, and it is never allowed to
    overestimate.
    """

    name: str = ""

    def prepare(
        self,
        columns: Sequence[EncodedColumn],
        frequencies: Sequence[np.ndarray],
        n_rows: int,
        min_class_size: int = 1,
    ) -> LossMetric:
        """Precompute the costs for a table.

        Parameters
        ----------
        columns : sequence of EncodedColumn
            The encoded quasi-identifiers.
        frequencies : sequence of ndarray
            Per quasi-identifier, the number of records holding each level-0 code.
        n_rows : int
        min_class_size : int
            Smallest size a kept class can have under the privacy models (for bounds).
        """
        self.columns_ = list(columns)
        self.frequencies_ = [np.asarray(f, dtype=float) for f in frequencies]
        self.n_rows_ = int(n_rows)
        self.min_class_size_ = int(min_class_size)
        self._prepare()
        return self

    def _prepare(self) -> None:  # noqa: B027 - optional hook
        """Subclass hook run by :meth:`prepare`."""

    @abstractmethod
    def lower_bound(self, nodes: np.ndarray) -> np.ndarray:
        """A value no larger than the metric of each node, shape (n_nodes,)."""

    def bound_above(self, sizes: np.ndarray) -> float | None:
        """A lower bound of the metric at every node at or above an evaluated one, from the
        sizes of all the evaluated node's classes (suppressed ones included), or ``None``
        when the metric has none better than :meth:`lower_bound`.

        A coarser node's classes are unions of the finer node's classes (records, not
        persons), so a quantity that merging classes never lowers, read on the finer node,
        bounds every coarser one. The optimal search raises the bound of the evaluated node's
        whole up-set with it.
        """
        return None

    @abstractmethod
    def value(
        self,
        node: Sequence[int],
        codes: Sequence[np.ndarray],
        sizes: np.ndarray,
        suppressed: np.ndarray,
    ) -> float:
        """The metric of ``node`` given its classes and which of them are suppressed.

        Parameters
        ----------
        node : sequence of int
        codes : sequence of ndarray
            Per quasi-identifier, each class's code at the node's level.
        sizes : ndarray of int
            Records per class.
        suppressed : ndarray of bool
            Classes whose records are suppressed.
        """


#: Suppressed classes up to which a node's loss is summed by BLAS dots: OpenBLAS computes a dot
#: of at most 10,000 entries on one thread, and numpy's calls cost more than they save on the
#: many small tables local recoding searches (issue 18).
_ONE_THREAD_DOT = 10_000
#: Nodes up to which :meth:`DecomposableMetric.lower_bound` looks every cell up at once (a
#: nodes x attributes array); a whole lattice is summed one attribute at a time.
_FEW_NODES = 4096


class DecomposableMetric(LossMetric):
    """A metric that sums a per-cell cost over records and quasi-identifiers.

    Its value for a node is ``(sum_j A_j[l_j] + sum_{suppressed classes c} size_c * sum_j
    D_j[l_j][code_cj]) / norm``: ``A_j[l]`` is the total cost of attribute ``j`` over all
    records at level ``l`` (it needs only the attribute's own frequencies), and ``D_j[l][c]``
    is the extra cost of suppressing a record whose level-``l`` code is ``c``. Because
    ``D >= 0``, ``sum_j A_j[l_j] / norm`` is a lower bound, and it grows with every level.
    """

    #: per attribute, per level: total cost A_j[l] (set by ``_costs``)
    totals_: list[np.ndarray]
    #: per attribute, per level: extra cost per suppressed record by code, D_j[l][code]
    extras_: list[list[np.ndarray]]
    norm_: float

    @abstractmethod
    def _costs(self) -> tuple[list[np.ndarray], list[list[np.ndarray]], float]:
        """``(A, D, norm)`` for the prepared table."""

    def _prepare(self) -> None:
        self.totals_, self.extras_, self.norm_ = self._costs()
        # The lookup of the costs is built from them on first use: a metric prepared again
        # (local recoding prepares one object for each round's remaining records) must not
        # keep the previous table's, which bounded a few nodes by the wrong costs.
        self.__dict__.pop("_lookup", None)

    def for_min_class_size(self, min_class_size: int) -> DecomposableMetric:
        """This prepared metric for another ``min_class_size``, its costs shared, not
        recomputed: ``A`` and ``D`` need only the attributes' frequencies, so one table's
        costs serve a search for every k (the searches for several k on one encoded table)."""
        other = copy.copy(self)
        other.min_class_size_ = int(min_class_size)
        return other

    def lower_bound(self, nodes: np.ndarray) -> np.ndarray:
        nodes = np.atleast_2d(nodes)
        if 0 < len(nodes) <= _FEW_NODES and len(self.totals_):
            # The heuristic asks for a few nodes at a time (a node's generalizations), 14,000
            # times on a 30-attribute table: one lookup of every cell, then a running sum
            # over the attributes, instead of a pass per attribute (a tenth of that search's
            # CPU). The running sum adds the attributes left to right, as the loop below
            # does: the same bits.
            flat, offsets = self._level_lookup()
            return np.cumsum(flat[nodes + offsets], axis=1)[:, -1] / self.norm_
        total = np.zeros(len(nodes))
        for j, per_level in enumerate(self.totals_):
            total += per_level[nodes[:, j]]
        return total / self.norm_

    def _level_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        """Every ``A_j[l]`` in one array, and where each attribute's levels start in it."""
        lookup = self.__dict__.get("_lookup")
        if lookup is None:
            sizes = [len(per_level) for per_level in self.totals_]
            offsets = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)
            lookup = (np.concatenate(self.totals_).astype(float), offsets)
            self._lookup = lookup
        return lookup

    def value(self, node, codes, sizes, suppressed) -> float:
        total = sum(float(self.totals_[j][lvl]) for j, lvl in enumerate(node))
        rows = np.flatnonzero(suppressed)
        if 0 < len(rows) <= _ONE_THREAD_DOT:
            weights = sizes[rows].astype(float)
            for j, lvl in enumerate(node):
                total += float(weights @ self.extras_[j][lvl][codes[j][rows]])
        elif len(rows):
            # Summed by numpy in one call, not a BLAS dot per attribute: OpenBLAS splits a dot
            # of more than 10,000 entries over its threads, which cost 2-8 ms of CPU per call
            # against 0.2 on this 2-core machine (9 calls took 0.7-1.6 s of the 10M-row
            # search) and made the sum depend on the thread count.
            weights = sizes[rows].astype(float)
            costs = np.stack([self.extras_[j][lvl][codes[j][rows]] for j, lvl in enumerate(node)])
            for part in (costs * weights).sum(axis=1).tolist():
                total += part
        return total / self.norm_

    def cell_totals(self, node: Sequence[int]) -> list[float]:
        """Per attribute, its normalized share of the metric without suppression."""
        q = len(self.totals_)
        return [float(self.totals_[j][lvl]) * q / self.norm_ for j, lvl in enumerate(node)]


def ancestor_frequencies(column: EncodedColumn, frequency: np.ndarray, level: int) -> np.ndarray:
    """Records per level-``level`` code (the frequency of each generalized value)."""
    return np.bincount(
        column.level_maps[level], weights=frequency, minlength=column.distinct_at(level)
    )
