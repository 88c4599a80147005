"""The one interface every generalization hierarchy implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

SUPPRESSED = "*"


def value_key(value: object) -> str:
    """The text form under which a cell is looked up in a hierarchy.

    Integers and integral floats print without a decimal point so that an integer column read as
    ``39`` or ``39.0`` matches the hierarchy row ``39``.
    """
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


class Hierarchy(ABC):
    """Maps each original value to one label per generalization level.

    Level 0 is the original value, level ``height`` is the most general (``*``). Subclasses
    decide how labels are obtained (a lookup table, arithmetic on numbers, masking codes); the
    anonymization engine sees only :meth:`generalize`.

    Parameters
    ----------
    column : str
        The column the hierarchy belongs to, used in error messages.
    """

    def __init__(self, column: str) -> None:
        self.column = column

    @property
    @abstractmethod
    def height(self) -> int:
        """Number of generalization steps above the original values."""

    @abstractmethod
    def generalize(self, values: Sequence[object]) -> np.ndarray:
        """Labels of each distinct value at every level.

        Parameters
        ----------
        values : sequence
            Distinct values of the column (no missing values).

        Returns
        -------
        ndarray of str, shape (len(values), height + 1)
            Column ``i`` holds the level-``i`` labels; column 0 is the value's own text.

        Raises
        ------
        HierarchyError
            If a value is not covered by the hierarchy (never silently mapped to ``*``).
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(column={self.column!r}, height={self.height})"
