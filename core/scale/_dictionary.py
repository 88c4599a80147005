"""Global dictionaries: the merged histogram turned into the engine's own encoded table.

Each quasi-identifier's global dictionary is its sorted distinct values over the whole table
(the union of the partitions' dictionaries, see :mod:`core.scale._histogram`). Each distinct
value is mapped through the hierarchy once, exactly as :func:`privgate.core.encoding.encode_table`
maps a column's distinct values, so the level maps, labels and domain sizes are the ones a
one-machine run builds, and the :class:`~core.encoding.FrequencySet` is the same array for array
(same codes, same tuple order, same counts). The lattice search then runs on it unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from privgate.core.encoding import EncodedTable, FrequencySet, encode_column
from privgate.core.hierarchy import Hierarchy
from privgate.core.scale._histogram import PartialHistogram

__all__ = ["DICTIONARIES", "frequency_set_from_histogram"]

#: Key in ``FrequencySet.cache`` of the QIs' global dictionaries (raw sorted distinct values).
DICTIONARIES = "scale_dictionaries"


def frequency_set_from_histogram(
    histogram: PartialHistogram,
    hierarchies: Mapping[str, Hierarchy],
    sensitive: Sequence[str] = (),
) -> FrequencySet:
    """The frequency set of a whole table from its merged histogram.

    Parameters
    ----------
    histogram : PartialHistogram
        Over the columns ``[*hierarchies, *sensitive]``, in that order.
    hierarchies : mapping of str to Hierarchy
        One per quasi-identifier, in QI order.
    sensitive : sequence of str

    Returns
    -------
    FrequencySet
        Equal to ``encode_table(df, hierarchies, sensitive).frequency_set()`` of the full table
        except that no per-row array is kept: ``row_to_tuple`` and the columns' ``codes`` are
        empty (the rows stay in their partitions; see :mod:`privgate.core.scale._apply`). The QIs'
        global dictionaries are in ``cache[DICTIONARIES]``.

    Raises
    ------
    HierarchyError
        A quasi-identifier has values its hierarchy does not cover.
    """
    qis = list(hierarchies)
    sensitive = list(sensitive)
    if list(histogram.columns) != qis + sensitive:
        raise ValueError(
            f"histogram columns {list(histogram.columns)} are not the QIs then the sensitive "
            f"columns {qis + sensitive}"
        )
    q = len(qis)
    columns, parts, dictionaries = [], [], []
    # int32 codes (a column's distinct values are far fewer than 2**31): the search reads each
    # column as contiguous int32 (the class tables, the projection bounds), which a column of
    # this column-major int32 matrix already is, so neither copies it (at 1M rows, 263k
    # tuples x 8 QIs: 16 MiB less held through the search than int64, and 8 MiB of copies).
    for j, name in enumerate(qis):
        codes = histogram.tuples[:, j].astype(np.int32)
        values = histogram.values[j]
        if (codes < 0).any():  # a missing cell is a value of its own, listed last
            codes = np.where(codes < 0, len(values), codes)
            values = np.append(values, np.array([None], dtype=object))
        # The distinct values as a column of their own: the same hierarchy mapping as
        # encode_table's, applied once per distinct value instead of once per table.
        encoded = encode_column(name, values, hierarchies[name])
        columns.append(replace(encoded, codes=np.zeros(0, dtype=np.int32)))
        parts.append(codes)
        dictionaries.append(values)
    sensitive_values = {}
    for i, name in enumerate(sensitive):
        codes = histogram.tuples[:, q + i].astype(np.int32)
        values = histogram.values[q + i]
        if (codes < 0).any():  # a missing sensitive value is a value of its own, listed last
            codes = np.where(codes < 0, len(values), codes)
            values = np.append(values, np.array([None], dtype=object))
        parts.append(codes)
        sensitive_values[name] = values
    table = EncodedTable(
        columns,
        {name: np.zeros(0, dtype=np.int32) for name in sensitive},
        sensitive_values,
        n_rows=histogram.n_rows,
    )
    # Column-major, each column contiguous: the search reads the tuples a column at a time
    # (projection bounds, the metric's frequencies, the class tables), and a column of a
    # row-major array of 1M tuples x 9 is a strided read (see benchmarks/BENCHMARKS.md).
    matrix = np.vstack(parts).T if parts else np.empty((len(histogram.counts), 0), np.int32)
    counts = histogram.counts
    if matrix.shape[1] and not _lex_sorted(matrix):
        order = np.lexsort(matrix.T[::-1])
        matrix = np.vstack([part[order] for part in parts]).T
        counts = counts[order]
    # else: the histogram's order already (no missing cell moved last): a check, not a sort
    freq = FrequencySet(
        table=table,
        qi_codes=matrix[:, :q],
        sensitive=matrix[:, q:],
        counts=counts.astype(np.int64),
        row_to_tuple=np.zeros(0, dtype=np.int64),
    )
    # The raw distinct values behind the level-0 codes (labels[0] is their text form), which
    # the partitions need to find a cell's code when the generalization is applied.
    freq.cache[DICTIONARIES] = tuple(dictionaries)
    return freq


def _lex_sorted(matrix: np.ndarray) -> bool:
    """Whether the rows of ``matrix`` increase lexicographically (column 0 first).

    Why: a merged histogram comes out of :func:`privgate.core.encoding.group_codes` sorted
    already, unless a missing cell (code ``-1`` there) is moved last here; checking costs one
    pass over the columns (0.08 CPU s on 1.3M tuples x 9) where ``np.lexsort`` costs 1.4 s.
    """
    undecided = np.ones(max(len(matrix) - 1, 0), dtype=bool)  # pairs equal so far
    for j in range(matrix.shape[1]):
        before, after = matrix[:-1, j], matrix[1:, j]
        if (undecided & (before > after)).any():
            return False
        undecided &= before == after
    return not undecided.any()
