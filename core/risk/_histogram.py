"""Class sizes summarized as a histogram: how many classes hold 1, 2, 3, ... records.

Every population-uniqueness estimator reads only this summary (Pitman, Zayatz, SNB and
Dankar's rule all depend on the sample through the frequencies of frequencies), so it is
computed once per table and shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SizeHistogram:
    """``count[i]`` classes of ``size[i]`` records, sizes ascending and distinct.

    Attributes
    ----------
    size : ndarray of int64
    count : ndarray of int64
    """

    size: np.ndarray
    count: np.ndarray

    @classmethod
    def from_class_sizes(cls, sizes: Sequence[int] | np.ndarray) -> SizeHistogram:
        sizes = np.asarray(sizes, dtype=np.int64)
        sizes = sizes[sizes > 0]
        size, count = np.unique(sizes, return_counts=True)
        return cls(size.astype(np.int64), count.astype(np.int64))

    @property
    def records(self) -> int:
        return int((self.size * self.count).sum())

    @property
    def classes(self) -> int:
        return int(self.count.sum())

    def classes_of_size(self, size: int) -> int:
        hit = self.size == size
        return int(self.count[hit].sum())
