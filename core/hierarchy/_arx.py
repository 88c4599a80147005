"""ARX-format hierarchy files, as shipped with ARX and used in its benchmarks."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy._base import SUPPRESSED, Hierarchy, value_key

#: A value missing from a hierarchy is quoted at most this many times in an error.
QUOTED_VALUES = 5


def quote_values(values: Sequence[str], limit: int = QUOTED_VALUES) -> str:
    """``'a', 'b', ... and 3 more``: a short, unambiguous list for one error line.

    A value holding non-ASCII characters is shown with :func:`ascii` escapes as well, so that
    two strings that look alike but differ (a decomposed accent, a non-breaking space) can be
    told apart in the message.
    """
    shown = []
    for value in list(values)[:limit]:
        text = repr(value)
        if not value.isascii():
            text += f" ({ascii(value)})"
        shown.append(text)
    more = len(values) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


class ARXHierarchy(Hierarchy):
    """A lookup table: one row per original value, column ``i`` = its label at level ``i``.

    The rows must form a tree, which the search's pruning relies on: every label at level ``i``
    has exactly one parent at level ``i + 1``, and the last level is a single root. Cells are
    compared in Unicode normal form C. A row whose value is empty places the missing cell (for
    example ``;Unknown;*`` puts missing values under ``Unknown``); without one, a missing cell
    is a leaf directly under the root.

    Parameters
    ----------
    column : str
        Column name (for messages).
    rows : list of list of str
        Each row ``[value, level1, ..., '*']``; all rows must have the same length.
    source : str, default="<table>"
        Where the rows came from, for messages.
    lines : list of int, optional
        The line of each row in ``source`` (default: 1, 2, ...), for messages.

    Raises
    ------
    HierarchyError
        Rows of unequal depth, duplicate values, a label with two parents, or a last level that
        is not a single root; the message names the source, the line and the value.
    """

    def __init__(
        self,
        column: str,
        rows: list[list[str]],
        source: str = "<table>",
        lines: Sequence[int] | None = None,
    ) -> None:
        super().__init__(column)
        self.source = source
        self._unit = "line" if lines is not None else "row"
        if not rows:
            raise HierarchyError(f"hierarchy for column {column!r} ({source}) is empty")
        lines = list(lines) if lines is not None else list(range(1, len(rows) + 1))
        rows = [[unicodedata.normalize("NFC", cell) for cell in row] for row in rows]
        depth = len(rows[0])
        table: dict[str, list[str]] = {}
        first_line: dict[str, int] = {}
        for line_no, row in zip(lines, rows, strict=True):
            if len(row) != depth:
                raise HierarchyError(
                    f"{self._where(line_no)}: levels of unequal depth ({len(row)} levels, "
                    f"{self._unit} {lines[0]} has {depth})"
                )
            if row[0] in table:
                raise HierarchyError(
                    f"{self._where(line_no)}: value {row[0]!r} appears twice (first on "
                    f"{self._unit} {first_line[row[0]]})"
                )
            table[row[0]] = row
            first_line[row[0]] = line_no
        roots = {row[-1] for row in rows}
        if depth > 1 and len(roots) != 1:
            raise HierarchyError(
                f"hierarchy for column {column!r} ({source}): the last level must be one root "
                f"value such as '{SUPPRESSED}', found {sorted(roots)[:5]}"
            )
        self._check_tree(rows, lines)
        self._table = table
        self._height = depth - 1

    def _where(self, line_no: int) -> str:
        return f"hierarchy for column {self.column!r} ({self.source}), {self._unit} {line_no}"

    def _check_tree(self, rows: list[list[str]], lines: list[int]) -> None:
        """Every label has one parent: ``a;X;P`` and ``b;X;Q`` put ``X`` under two groups."""
        for level in range(1, len(rows[0]) - 1):
            parent: dict[str, tuple[str, int]] = {}
            for line_no, row in zip(lines, rows, strict=True):
                label, up = row[level], row[level + 1]
                seen = parent.setdefault(label, (up, line_no))
                if seen[0] != up:
                    raise HierarchyError(
                        f"{self._where(line_no)}: value {label!r} at level {level} has two "
                        f"parents, {seen[0]!r} ({self._unit} {seen[1]}) and {up!r}; a "
                        "hierarchy must be a tree (one parent per value per level)"
                    )

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
        numbered = [
            (number, line.split(delimiter))
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()
        ]
        rows = [row for _, row in numbered]
        return cls(column, rows, source=str(path), lines=[number for number, _ in numbered])

    @property
    def height(self) -> int:
        return self._height

    @property
    def domain(self) -> list[str]:
        """Every original value the hierarchy covers, in file order (the empty value excluded)."""
        return [value for value in self._table if value != ""]

    @property
    def places_missing(self) -> bool:
        """Whether a row for the empty value says where a missing cell goes."""
        return "" in self._table

    def missing_labels(self) -> list[object]:
        row = self._table.get("")
        if row is None:
            return super().missing_labels()
        return [None, *row[1:]]

    def uncovered(self, values: Sequence[object]) -> list[str]:
        """The keys of ``values`` (present cells) that the hierarchy does not list, sorted."""
        return sorted({k for k in (value_key(v) for v in values) if k not in self._table})

    def _generalize(self, values: Sequence[object]) -> np.ndarray:
        keys = [value_key(v) for v in values]
        missing = sorted({k for k in keys if k not in self._table})
        if missing:
            raise HierarchyError(
                f"column {self.column!r}: {len(missing)} value(s) not covered by its hierarchy "
                f"({self.source}): {quote_values(missing)}"
            )
        return np.array([self._table[k] for k in keys], dtype=object).reshape(
            len(keys), self._height + 1
        )
