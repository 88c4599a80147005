"""Which quasi-identifiers drive uniqueness: the share of sample uniques per combination.

For a set of columns, a record is a *sample unique* when no other record shares its values on
those columns. The share grows with every column added (a finer key can only split classes),
so the combinations that reach a high share with few columns name the attributes to coarsen.

How it scales. Every evaluation groups ``n`` records once (``O(n log n)``, factorized codes).
With ``m`` quasi-identifiers there are ``2^m - 1`` combinations: when that is at most
``max_combinations`` (1023 by default, i.e. ``m <= 10``) all are evaluated. Beyond, a level-wise
beam search keeps the ``beam`` combinations with the highest share at each size and extends
each by every other column: at most ``beam * m`` evaluations per level and ``m`` levels, so
``O(beam * m^2)`` evaluations. There is no cap on ``m`` (ARX refuses more than 10); the
beam search may miss a combination whose subsets all rank low, and says so (``exhaustive``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

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


def _unique_share(codes: np.ndarray, picked: Sequence[int]) -> float:
    n = len(codes)
    if n == 0:
        return 0.0
    key = np.zeros(n, dtype=np.int64)
    for j in picked:
        column = codes[:, j]
        key = key * (int(column.max()) + 1) + column
        key = np.unique(key, return_inverse=True)[1].reshape(-1)  # keep the key small
    counts = np.bincount(key)
    return float((counts == 1).sum() / n)


def uniqueness_drivers(
    frame: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    max_combinations: int = 1023,
    beam: int = 20,
) -> UniquenessDrivers:
    """The share of sample uniques for each combination of ``quasi_identifiers``."""
    columns = list(quasi_identifiers)
    m = len(columns)
    codes = _codes(frame, columns)
    found: dict[tuple[int, ...], float] = {}
    exhaustive = (2**m - 1) <= max_combinations
    if exhaustive:
        for size in range(1, m + 1):
            for combo in combinations(range(m), size):
                found[combo] = _unique_share(codes, combo)
    else:
        level = [(j,) for j in range(m)]
        for _size in range(1, m + 1):
            for combo in level:
                if combo not in found:
                    found[combo] = _unique_share(codes, combo)
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
