"""Masking hierarchies for codes such as ZIP codes: ``12345 -> 1234* -> 123** -> ... -> *``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key


class MaskingHierarchy(Hierarchy):
    """Replace the last ``i`` characters with ``mask_char`` at level ``i``; the top is ``*``.

    Parameters
    ----------
    column : str
    length : int
        Every code must have exactly this many characters (a shorter code usually means a lost
        leading zero, which must not be masked silently).
    levels : int, optional
        Number of masking steps (default ``length``).
    mask_char : str, default="*"

    Examples
    --------
    >>> MaskingHierarchy("zip", 3, levels=2).generalize(["123"]).tolist()
    [['123', '12*', '1**', '*']]
    """

    def __init__(
        self, column: str, length: int, levels: int | None = None, mask_char: str = "*"
    ) -> None:
        super().__init__(column)
        self.length = length
        self.levels = levels if levels is not None else length
        self.mask_char = mask_char

    @property
    def height(self) -> int:
        # A full mask already hides everything: do not add a duplicate '*' level after it.
        return self.levels if self.levels == self.length else self.levels + 1

    def _generalize(self, values: Sequence[object]) -> np.ndarray:
        out = np.empty((len(values), self.height + 1), dtype=object)
        for i, raw in enumerate(values):
            code = value_key(raw)
            if len(code) != self.length:
                raise HierarchyError(
                    f"column {self.column!r}: code {code!r} has {len(code)} characters, the "
                    f"masking hierarchy expects {self.length}"
                )
            for level in range(self.levels + 1):
                out[i, level] = code[: self.length - level] + self.mask_char * level
            out[i, -1] = SUPPRESSED
        return out
