"""Which quasi-identifiers drive uniqueness: the share of sample uniques per combination.

For a set of columns, a record is a *sample unique* when no other record shares its values on
those columns. The share grows with every column added (a finer key can only split classes),
so the combinations that reach a high share with few columns name the attributes to coarsen.

How it scales. Refining a class key by one column is one hash grouping of ``n`` codes
(``O(n)``). With ``m`` quasi-identifiers there are ``2^m - 1`` combinations: when that is at
most ``max_combinations`` (1023 by default, i.e. ``m <= 10``) all are evaluated, each refined
from its prefix's key in a depth-first walk: ``2^m - 1`` groupings, ``m`` keys in memory
(Adult's 9 columns, 30,162 rows: 0.2 s). Beyond, a level-wise beam search keeps the ``beam``
combinations with the highest share at each size and extends each by every other column: at
most ``beam * m`` combinations per size and ``m`` sizes, each grouped from scratch (``s``
groupings for ``s`` columns), so ``O(beam * m^3)`` groupings of ``n`` codes: polynomial, with
no cap on ``m`` (ARX refuses more than 10). The beam may miss a combination whose subsets
all rank low; the result says whether it is ``exhaustive``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class CombinationUniqueness:
    columns: tuple[str, ...]
    unique_share: float


@dataclass(frozen=True)
class UniquenessDrivers:
    """Uniqueness per combination, best first within each size.

    Attributes
    ----------
    combinations : list of CombinationUniqueness
        Sorted by number of columns, then share descending.
    exhaustive : bool
        Every combination was evaluated (else a beam search of width ``beam``).
    """

    combinations: list[CombinationUniqueness]
    exhaustive: bool
    beam: int

    def top(self, size: int, count: int = 5) -> list[CombinationUniqueness]:
        return [c for c in self.combinations if len(c.columns) == size][:count]


def _codes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    out = np.empty((len(frame), len(columns)), dtype=np.int64)
    for j, name in enumerate(columns):
        values = frame[name].astype("string").fillna("\x00<missing>")
        out[:, j] = pd.factorize(values, sort=False)[0]
    return out


def _distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``codes`` and how many records each stands for.

    A class of any combination of columns is a union of distinct full rows, and its record
    count is the sum of their counts; so the shares can be computed on the distinct rows
    (weighted) instead of every record: the same numbers, with ``distinct`` instead of ``n``
    codes per grouping (a 10M-row table of a few hundred thousand distinct tuples).
    """
    key = np.zeros(len(codes), dtype=np.int64)
    for j in range(codes.shape[1]):
        key, _ = _extend(key, codes[:, j], None, need_share=False)
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    return codes[first], counts.astype(np.float64)


def _share(key: np.ndarray, persons: np.ndarray | None, weights: np.ndarray | None = None) -> float:
    """Share of records (or of persons) alone in their class of ``key``: with ``persons``,
    a person is unique when some class holds their records and nobody else's. With
    ``weights``, row ``i`` of ``key`` stands for ``weights[i]`` records (distinct rows)."""
    if persons is None and weights is not None:
        return float((np.bincount(key, weights=weights) == 1).sum() / weights.sum())
    if persons is None:
        return float((np.bincount(key) == 1).sum() / len(key))
    n_persons = int(persons.max()) + 1
    pairs = np.unique(key * n_persons + persons)
    persons_per_key = np.bincount(pairs // n_persons)
    alone = persons_per_key[key] == 1
    return float(len(np.unique(persons[alone])) / n_persons)


def _extend(
    key: np.ndarray,
    column: np.ndarray,
    persons: np.ndarray | None,
    weights: np.ndarray | None = None,
    need_share: bool = True,
) -> tuple[np.ndarray, float]:
    """The compact class key of ``key`` refined by ``column``, and its share of uniques."""
    combined = key * (int(column.max()) + 1) + column  # key < n and column < n: no overflow
    refined = pd.factorize(combined, sort=False)[0].astype(np.int64)
    return refined, _share(refined, persons, weights) if need_share else 0.0


def _unique_share(
    codes: np.ndarray,
    picked: Sequence[int],
    persons: np.ndarray | None,
    weights: np.ndarray | None = None,
) -> float:
    key, share = np.zeros(len(codes), dtype=np.int64), 0.0
    for j in picked:
        key, share = _extend(key, codes[:, j], persons, weights)
    return share


def _all_combinations(
    codes: np.ndarray, persons: np.ndarray | None, weights: np.ndarray | None = None
) -> dict[tuple[int, ...], float]:
    """Every combination, each refined from its prefix in a depth-first walk: one grouping
    per combination, and at most ``m`` keys of ``n`` codes held at once."""
    m = codes.shape[1]
    found: dict[tuple[int, ...], float] = {}
    stack = [((), np.zeros(len(codes), dtype=np.int64))]
    while stack:
        combo, key = stack.pop()
        for j in range((combo[-1] + 1) if combo else 0, m):
            refined, share = _extend(key, codes[:, j], persons, weights)
            found[(*combo, j)] = share
            if j + 1 < m:
                stack.append(((*combo, j), refined))
    return found


def uniqueness_drivers(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    max_combinations: int = 1023,
    beam: int = 20,
    persons: np.ndarray | None = None,
) -> UniquenessDrivers:
    """The share of sample uniques for each combination of ``quasi_identifiers``
    (with ``persons``, each row's person code ``0..p-1``: the share of persons)."""
    columns = list(quasi_identifiers)
    m = len(columns)
    codes = _codes(frame, columns)
    weights = None
    if persons is None and len(frame) and m:  # records: group the distinct rows, weighted
        codes, weights = _distinct_rows(codes)
    found: dict[tuple[int, ...], float] = {}
    exhaustive = (2**m - 1) <= max_combinations
    if not len(frame):
        exhaustive = True
    elif exhaustive:
        found = _all_combinations(codes, persons, weights)
    else:
        level = [(j,) for j in range(m)]
        for _size in range(1, m + 1):
            for combo in level:
                if combo not in found:
                    found[combo] = _unique_share(codes, combo, persons, weights)
            kept = sorted(level, key=lambda c: -found[c])[:beam]
            level = sorted({tuple(sorted((*c, j))) for c in kept for j in range(m) if j not in c})
            if not level:
                break
    result = [
        CombinationUniqueness(tuple(columns[j] for j in combo), share)
        for combo, share in found.items()
    ]
    result.sort(key=lambda c: (len(c.columns), -c.unique_share, c.columns))
    return UniquenessDrivers(result, exhaustive, beam)
