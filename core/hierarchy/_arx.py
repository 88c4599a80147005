"""ARX-format hierarchy files, as shipped with ARX and used in its benchmarks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key


class ARXHierarchy(Hierarchy):
    """A lookup table: one row per original value, column ``i`` = its label at level ``i``.

    Parameters
    ----------
    column : str
        Column name (for messages).
    rows : list of list of str
        Each row ``[value, level1, ..., '*']``; all rows must have the same length.
    source : str, default="<table>"
        Where the rows came from, for messages.

    Raises
    ------
    HierarchyError
        Rows of unequal depth, duplicate values, or a last level that is not a single root.
    """

    def __init__(self, column: str, rows: list[list[str]], source: str = "<table>") -> None:
        super().__init__(column)
        if not rows:
            raise HierarchyError(f"hierarchy for column {column!r} ({source}) is empty")
        depth = len(rows[0])
        table: dict[str, list[str]] = {}
        for line_no, row in enumerate(rows, start=1):
            if len(row) != depth:
                raise HierarchyError(
                    f"hierarchy for column {column!r} ({source}), line {line_no}: "
                    f"levels of unequal depth ({len(row)} levels, line 1 has {depth})"
                )
            if row[0] in table:
                raise HierarchyError(
                    f"hierarchy for column {column!r} ({source}), line {line_no}: "
                    f"value {row[0]!r} appears twice"
                )
            table[row[0]] = row
        roots = {row[-1] for row in rows}
        if depth > 1 and len(roots) != 1:
            raise HierarchyError(
                f"hierarchy for column {column!r} ({source}): the last level must be one root "
                f"value such as '{SUPPRESSED}', found {sorted(roots)[:5]}"
            )
        self._table = table
        self._height = depth - 1
        self.source = source

    @classmethod
    def from_csv(cls, column: str, path: str | Path, delimiter: str = ";") -> ARXHierarchy:
        """Read an ARX hierarchy file (no header, ``delimiter``-separated, one row per value)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise HierarchyError(
                f"hierarchy file for column {column!r} not found: {path}"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise HierarchyError(f"cannot read hierarchy file {path}: {exc}") from None
        rows = [line.split(delimiter) for line in text.splitlines() if line.strip()]
        return cls(column, rows, source=str(path))

    @property
    def height(self) -> int:
        return self._height

    @property
    def domain(self) -> list[str]:
        """Every original value the hierarchy covers, in file order."""
        return list(self._table)

    def generalize(self, values: Sequence[object]) -> np.ndarray:
        keys = [value_key(v) for v in values]
        missing = [k for k in keys if k not in self._table]
        if missing:
            raise HierarchyError(
                f"column {self.column!r}: {len(missing)} value(s) not covered by its hierarchy "
                f"({self.source}): {', '.join(repr(m) for m in sorted(missing)[:10])}"
            )
        return np.array([self._table[k] for k in keys], dtype=object).reshape(
            len(keys), self._height + 1
        )
