"""The one interface every generalization hierarchy implements."""

from __future__ import annotations

import math
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from privgate.core.exceptions import HierarchyError

SUPPRESSED = "*"


def is_missing_cell(value: object) -> bool:
    """A missing cell in any container: None, NaN, pandas NA or NaT (no pandas import)."""
    return (
        value is None
        or type(value).__name__ in ("NAType", "NaTType")
        or (isinstance(value, float) and math.isnan(value))
    )


def value_key(value: object) -> str:
    """The text form under which a cell is looked up in a hierarchy.

    Integers and integral floats print without a decimal point so that an integer column read as
    ``39`` or ``39.0`` matches the hierarchy row ``39``. Text is put in Unicode normal form C, so
    a value typed as ``e`` + combining accent (NFD, as some systems export) matches the same
    value written precomposed (NFC) in a hierarchy file or a policy: two strings that look
    identical are one value.
    """
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return unicodedata.normalize("NFC", str(value))


class Hierarchy(ABC):
    """Maps each original value to one label per generalization level.

    Level 0 is the original value, level ``height`` is the most general (``*``). Subclasses
    decide how labels are obtained (a lookup table, arithmetic on numbers, masking codes, dates)
    by implementing :meth:`_generalize` for present values; the anonymization engine sees only
    :meth:`generalize`.

    A missing cell is a value too: by default a leaf of its own whose only ancestor is the root,
    so it stays missing (an empty cell in the release) at every level below the top and becomes
    ``*`` at the top. A lookup hierarchy may place it explicitly with a row for the empty value
    (see :meth:`missing_labels`).

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
    def _generalize(self, values: Sequence[object]) -> np.ndarray:
        """Labels of present (non-missing) values; the contract of :meth:`generalize`."""

    def missing_labels(self) -> list[object]:
        """The labels of a missing cell at every level: missing below the top, ``*`` at it."""
        return [None] * self.height + [SUPPRESSED]

    def generalize(self, values: Sequence[object]) -> np.ndarray:
        """Labels of each distinct value at every level.

        Parameters
        ----------
        values : sequence
            Distinct values of the column; a missing cell (None, NaN, NA) is placed by
            :meth:`missing_labels`.

        Returns
        -------
        ndarray of object, shape (len(values), height + 1)
            Column ``i`` holds the level-``i`` labels; column 0 is the value's own text
            (``None`` for a missing cell).

        Raises
        ------
        HierarchyError
            If a value is not covered by the hierarchy (never silently mapped to ``*``).
        """
        values = list(values)
        missing = [i for i, v in enumerate(values) if is_missing_cell(v)]
        out = np.empty((len(values), self.height + 1), dtype=object)
        if not missing:
            if values:
                out[:] = self._generalize(values)
                self._refuse_merged_spellings(values, out[:, 0])
            return out
        gone = set(missing)
        present = [i for i in range(len(values)) if i not in gone]
        if present:
            out[present] = self._generalize([values[i] for i in present])
            self._refuse_merged_spellings([values[i] for i in present], out[present, 0])
        out[missing] = np.array(self.missing_labels(), dtype=object)
        return out

    def _refuse_merged_spellings(self, values: list, own_labels: np.ndarray) -> None:
        """Refuse two different texts that the hierarchy reads as one value (the same text
        once put in Unicode normal form C).

        Why: the search would count them as one value and every level above would merge
        them, while the released cell keeps each spelling; both engines failed deep inside
        the search with an index error instead of naming the values (review11 F2). Equal
        values listed twice, and ``39`` beside ``"39"`` (one value by design), are looked up
        as before.
        """
        labels = own_labels.tolist()
        if len(set(labels)) == len(values):
            return
        first: dict[object, object] = {}
        for value, label in zip(values, labels, strict=True):
            seen = first.setdefault(label, value)
            if isinstance(seen, str) and isinstance(value, str) and seen != value:
                raise HierarchyError(
                    f"column {self.column!r}: the values {ascii(seen)} and {ascii(value)} "
                    f"are one value ({label!r}) to its hierarchy, the same text in Unicode "
                    "normal form C spelled two ways; write it one way in the input"
                )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(column={self.column!r}, height={self.height})"
