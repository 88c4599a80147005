"""CSV files as columns of text, with the standard library only.

The gate reads a release exactly as a recipient would: every cell as text, nothing guessed.
That needs no dataframe library, and not importing one keeps a command-line run of the engine
well under a second. Used by the gate to re-read CSV releases and by ``privgate anonymize``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from privgate.core.exceptions import IngestError

__all__ = ["frame_csv_quoting", "read_text_columns", "write_text_columns"]


def read_text_columns(
    path: str | Path,
    delimiter: str = ",",
    encoding: str = "utf-8",
    header: bool = True,
    missing: Iterable[str] = ("",),
) -> dict[str, np.ndarray]:
    """Read a CSV file into ``{column: object array of str or None}``.

    Cells equal to a ``missing`` marker become ``None``. A UTF-8 byte-order mark is dropped.

    Raises
    ------
    IngestError
        Empty file, blank or duplicate column name, a row with the wrong number of fields
        (naming its line), undecodable bytes, or unbalanced quotes.
    """
    path = Path(path)
    markers = set(missing)
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") == "utf-8" else encoding
    try:
        with open(path, encoding=codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, strict=True)
            rows = list(reader)
    except FileNotFoundError:
        raise IngestError(f"file not found: {path}") from None
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not valid {encoding} text ({exc.reason})") from None
    except csv.Error as exc:
        raise IngestError(f"{path}, line {reader.line_num}: malformed CSV: {exc}") from None
    while rows and rows[-1] == []:
        rows.pop()
    if not rows:
        raise IngestError(f"{path}: the file is empty")
    if header:
        names = [name.strip() for name in rows[0]]
        body = rows[1:]
        first_line = 2
    else:
        names = [f"column_{i}" for i in range(1, len(rows[0]) + 1)]
        body = rows
        first_line = 1
    seen: set[str] = set()
    for position, name in enumerate(names, start=1):
        if not name:
            raise IngestError(f"{path}, line 1: column {position} has an empty name")
        if name in seen:
            raise IngestError(f"{path}, line 1: duplicate column name {name!r}")
        seen.add(name)
    width = len(names)
    for offset, row in enumerate(body):
        if len(row) != width:
            raise IngestError(
                f"{path}, line {first_line + offset}: {len(row)} field(s), expected {width}"
            )
    columns: dict[str, np.ndarray] = {}
    for j, name in enumerate(names):
        column = np.empty(len(body), dtype=object)
        column[:] = [None if row[j] in markers else row[j] for row in body]
        columns[name] = column
    return columns


def write_text_columns(
    path: str | Path, columns: Mapping[str, np.ndarray], delimiter: str = ","
) -> None:
    """Write ``{column: array}`` as CSV with a header (``None`` becomes an empty cell).

    A row holding a carriage return is written with every field quoted. Why: the ``csv``
    module quotes only the delimiter, the quote character and the line terminator's own
    characters (``"\\n"`` here), so a lone ``"\\r"`` inside a cell was written bare and every
    reader split the row there: a release holding one could not be read back and the gate
    blocked it with a misleading "2 field(s), expected 3".
    """
    names = list(columns)
    n = len(columns[names[0]]) if names else 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        quoting_all = csv.writer(
            fh, delimiter=delimiter, lineterminator="\n", quoting=csv.QUOTE_ALL
        )
        (quoting_all if _holds_cr(names) else writer).writerow(names)
        data = [columns[name].tolist() for name in names]
        rows = (["" if v is None else v for v in row] for row in zip(*data, strict=True))
        if not n:
            return
        if not any(_holds_cr(set(column)) for column in data):  # each distinct text once
            writer.writerows(rows)
            return
        for cells in rows:
            (quoting_all if _holds_cr(cells) else writer).writerow(cells)


def _holds_cr(cells: Iterable) -> bool:
    return any(isinstance(c, str) and "\r" in c for c in cells)


def frame_csv_quoting(frame: object) -> int:
    """The ``quoting`` for ``DataFrame.to_csv``: ``csv.QUOTE_ALL`` when a column name or a text
    cell holds ``"\\r"``, else ``csv.QUOTE_MINIMAL``.

    Why: the ``csv`` module (and pandas with it) quotes only the line terminator's characters
    (``"\\n"`` here), so a lone ``"\\r"`` went out bare and every reader split its row; such a
    table is written with every field quoted (the same cells read back). One rule for the
    release flow's writer (:func:`privgate.core.publish.stage_release`) and the gate's
    t-closeness reference, which writes a column exactly as the release is written.
    """
    columns = frame.columns  # type: ignore[attr-defined]
    if any("\r" in str(name) for name in columns):
        return csv.QUOTE_ALL
    for name in columns:
        column = frame[name]  # type: ignore[index]
        if column.dtype.kind in "biufcmM":
            continue
        if column.astype("string").str.contains("\r", regex=False).fillna(False).any():
            return csv.QUOTE_ALL
    return csv.QUOTE_MINIMAL
