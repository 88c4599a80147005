"""A release as its distinct lines and one line number per released row (``privgate anonymize``).

Why: a release of 10M rows holds about a hundred thousand distinct lines (its classes times
the other released columns' values). Generalizing every row column by column, permuting each
column and keying the rows again to find their lines (:func:`anonymize_codes`, then the
writer) costs several CPU seconds and one ``int32`` array per column per step. Here the rows
are grouped once, over every column the release needs (:func:`tuples_from_codes`): the
search's frequency set is that grouping projected on the quasi-identifiers and sensitive
columns (the same array for array as :func:`frequency_set_from_codes` builds), and
everything after the search is done per distinct tuple: generalized and kept by the plan's own
:func:`generalize_codes`, turned into lines, and the rows reach their lines through one
integer gather. The input's columns can be dropped as soon as the tuples are known.

The published order is drawn while the search runs, on the other core: a uniformly random
order of all rows (by default from the operating system's entropy), of which the kept rows are
taken in turn. A seeded run writes the rows :func:`anonymize_codes` releases, in another order.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from privgate.core.anonymize import FullDomainAlgorithm, SearchSetup, make_algorithm
from privgate.core.columnar import TextCodes, code_dtype
from privgate.core.encoding import FrequencySet, group_codes
from privgate.core.scale._apply import GeneralizationPlan, generalize_codes, plan_generalization
from privgate.core.scale._columnar import sorted_labels
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._histogram import PartialHistogram

__all__ = ["CodedTuples", "LineRelease", "release_lines", "shuffled_rows", "tuples_from_codes"]


@dataclass(frozen=True)
class CodedTuples:
    """A table held as its distinct tuples over every column a release needs.

    Attributes
    ----------
    names : tuple of str
        The quasi-identifiers, the sensitive columns, then the other released columns.
    values : tuple of ndarray of object
        Per column, its sorted distinct present texts (the input's ``TextCodes.values``).
    tuples : ndarray of a signed integer type, shape (n_tuples, len(names))
        Codes into ``values`` (``-1``: a missing cell), distinct, sorted; the narrowest type
        holding every column's codes and its number of texts
        (:func:`privgate.core.columnar.code_dtype`).
    row_to_tuple : ndarray of int32, shape (n_rows,)
        Each input row's tuple.
    freq : FrequencySet
        The search's frequency set (quasi-identifiers and sensitive columns only).
    """

    names: tuple[str, ...]
    values: tuple[np.ndarray, ...]
    tuples: np.ndarray
    row_to_tuple: np.ndarray
    freq: FrequencySet


@dataclass(frozen=True)
class LineRelease:
    """A release as codes of its distinct lines and each released row's line.

    Attributes
    ----------
    lines : dict of str to TextCodes
        Per released column (in release order), the cell of every distinct line.
    ids : ndarray of int32
        Each released row's line, rows in their published (permuted) order: the rows written
        are ``lines[c].codes[ids]`` for every column ``c``.
    plan : GeneralizationPlan
    algorithm : str
    details : dict
        The search's facts and ``distinct_tuples``.
    """

    lines: dict[str, TextCodes]
    ids: np.ndarray
    plan: GeneralizationPlan
    algorithm: str
    details: dict


def tuples_from_codes(columns: Mapping[str, TextCodes], setup: SearchSetup) -> CodedTuples:
    """Group the rows of ``columns`` over the quasi-identifiers, the sensitive columns and the
    other released columns, and build the search's frequency set from those tuples.

    Raises
    ------
    HierarchyError
        A quasi-identifier value its hierarchy does not cover.
    """
    searched = list(dict.fromkeys([*setup.quasi_identifiers, *setup.sensitive]))
    others = [c for c in setup.released_columns if c not in set(searched) and c in columns]
    names = [*searched, *others]
    values = [np.asarray(columns[n].values, dtype=object) for n in names]
    n = len(columns[names[0]]) if names else 0
    radices = [len(v) + 1 for v in values]  # one more value: missing
    # The tuples in the columns' own code type (int8 for Adult): they live through the search.
    narrow = code_dtype(max(radices, default=1))
    tuples, row_to_tuple, counts = group_codes(
        [columns[c].codes for c in names],
        radices,
        n,
        offset=1,
        dtype=narrow,
        inverse_dtype=np.int32 if n < 2**31 else np.int64,  # placed as int32: no copy after
    )
    assert row_to_tuple is not None  # inverse=True
    width = len(searched)
    if width == len(names):
        histogram_tuples, histogram_counts = tuples, counts
    else:  # the same grouping's tuples projected on the searched columns, counts summed
        histogram_tuples, histogram_counts = _prefix_groups(tuples, counts, width)
    histogram = PartialHistogram(
        tuple(searched),
        tuple(values[:width]),
        histogram_tuples.astype(np.int32),
        histogram_counts.astype(np.int64),
    )
    freq = frequency_set_from_histogram(histogram, setup.hierarchies, setup.sensitive)
    return CodedTuples(tuple(names), tuple(values), tuples, row_to_tuple, freq)


def _prefix_groups(
    tuples: np.ndarray, counts: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``tuples[:, :width]`` (sorted) and the summed ``counts`` of each.

    Why not a second grouping: ``tuples`` are distinct and sorted lexicographically, column 0
    first (:func:`group_codes`), so their projection on the leading ``width`` columns is
    sorted too and each distinct projected row is one run of equal rows: a comparison of
    neighbours finds the runs, where hashing the million tuples of a 10M-row table again took
    0.5 s (issue 18).
    """
    if not len(tuples):
        return tuples[:, :width], counts[:0]
    prefix = tuples[:, :width]
    starts = np.empty(len(tuples), dtype=bool)
    starts[0] = True
    np.any(prefix[1:] != prefix[:-1], axis=1, out=starts[1:])
    first = np.flatnonzero(starts)
    return prefix[first], np.add.reduceat(counts, first)


def release_lines(
    coded: CodedTuples,
    setup: SearchSetup,
    shuffle_seed: int | None = None,
    row_order: np.ndarray | None = None,
) -> LineRelease:
    """Search ``coded.freq``, plan, and make the release as distinct lines and row line ids.

    The rows are published in the order of ``np.random.default_rng(shuffle_seed)``'s
    permutation of all input rows, suppressed rows left out (by default drawn from the
    operating system's entropy, so nothing published lets anyone recompute the input's order).
    ``row_order``: that permutation drawn beforehand (:func:`shuffled_rows`, e.g. while the
    rows were grouped, as ``privgate anonymize`` does), used instead of ``shuffle_seed``.

    Raises
    ------
    AnonymizationError
        No release can meet the models.
    """
    freq = coded.freq
    algorithm = make_algorithm(setup)
    assert isinstance(algorithm, FullDomainAlgorithm)  # full_domain_setup checked it
    with ThreadPoolExecutor(1) as pool:  # the rows' order, on the other core
        if row_order is None:
            shuffled = pool.submit(_permuted_tuples, coded.row_to_tuple, shuffle_seed)
        else:  # drawn already: each row's tuple in that order
            shuffled = pool.submit(np.take, coded.row_to_tuple, row_order)
        found = algorithm.search(freq)
        order = shuffled.result()
    plan = plan_generalization(freq, found.levels, list(setup.models), setup.released_columns)
    position = {name: j for j, name in enumerate(coded.names)}
    level0 = []
    for name, dictionary in zip(plan.quasi_identifiers, plan.values, strict=True):
        j = position[name]
        codes = coded.tuples[:, j]
        if len(dictionary) != len(coded.values[j]):  # a missing cell: listed last
            codes = np.where(codes < 0, len(coded.values[j]), codes)
        level0.append(codes)
    kept, generalized = generalize_codes(level0, plan)  # per tuple, the plan's own rule
    del level0
    by_qi = {name: j for j, name in enumerate(plan.quasi_identifiers)}
    cells: dict[str, TextCodes] = {}
    for name in setup.released_columns:
        if name in by_qi:
            j = by_qi[name]
            cells[name] = sorted_labels(generalized[j][kept], plan.labels[j])
        elif name in position:
            j = position[name]
            cells[name] = TextCodes(coded.tuples[kept, j].astype(np.int32), coded.values[j])
    lines, line_of_kept = _distinct_lines(cells)
    tuple_line = np.full(len(coded.tuples), -1, dtype=np.int32)
    tuple_line[kept] = line_of_kept
    row_line = tuple_line[order]  # every row's line, rows permuted; -1: suppressed
    del order
    ids = row_line[row_line >= 0]
    details = {**found.details, "distinct_tuples": int(len(freq.counts))}
    return LineRelease(lines, ids, plan, algorithm.name, details)


def shuffled_rows(n_rows: int, shuffle_seed: int | None = None) -> np.ndarray:
    """``np.random.default_rng(shuffle_seed).permutation(n_rows)`` as ``int32`` (the same
    permutation: a shuffle's swaps do not depend on what it moves), for
    :func:`release_lines`' ``row_order``.

    Why: the shuffle of 10M rows takes about 0.6 CPU s; drawn from the row count alone, it
    runs while the rows are grouped (mostly on one core) instead of beside the search, whose
    projection bounds then have the other core.
    """
    dtype = np.int32 if n_rows < 2**31 else np.int64
    order = np.arange(n_rows, dtype=dtype)
    np.random.default_rng(shuffle_seed).shuffle(order)
    return order


def _permuted_tuples(row_to_tuple: np.ndarray, shuffle_seed: int | None) -> np.ndarray:
    """Each row's tuple, the rows in a uniformly random order.

    Why all rows, not the kept ones: the order can then be drawn while the search runs (it
    does not depend on the plan), and the kept rows, taken in this order, are in a uniformly
    random order of their own whatever the plan keeps.
    """
    # ``row_to_tuple[rng.permutation(n)]``, the same array (``permutation`` is a shuffle of
    # ``arange(n)``, and a shuffle's swaps do not depend on what it moves), without the int64
    # permutation: 8 bytes a row held while the search runs.
    order = row_to_tuple.copy()
    np.random.default_rng(shuffle_seed).shuffle(order)
    return order


def _distinct_lines(cells: dict[str, TextCodes]) -> tuple[dict[str, TextCodes], np.ndarray]:
    """The distinct rows of ``cells`` (as columns of codes) and each row's place among them."""
    n = len(next(iter(cells.values()))) if cells else 0
    if not cells:
        return {}, np.zeros(n, dtype=np.int32)
    radices = [len(c.values) + 1 for c in cells.values()]  # + 1: a missing cell
    distinct, inverse, _ = group_codes([c.codes for c in cells.values()], radices, n, offset=1)
    assert inverse is not None
    lines = {
        name: TextCodes(distinct[:, j].astype(np.int32), column.values)
        for j, (name, column) in enumerate(cells.items())
    }
    return lines, inverse.astype(np.int32)
