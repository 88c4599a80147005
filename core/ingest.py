"""Ingest: read the input table exactly as the policy declares it.

Cells are read as text first (nothing is guessed), with the policy's missing-value markers,
delimiter and encoding; the schema stage then coerces and checks types. Reading fails with one
:class:`IngestError` naming the file and, where the parser knows it, the line, for every way a
CSV export breaks: a ragged row, an unbalanced quote, a wrong encoding, an empty file, a header
without rows, duplicated column names.
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import pandas as pd

from core.exceptions import IngestError
from core.policy import InputSpec

__all__ = ["read_table"]

_SNIFF_BYTES = 1 << 16


def _check_header(path: Path, spec: InputSpec, encoding: str) -> None:
    """Reject duplicate or blank column names before pandas silently renames them."""
    try:
        with open(path, encoding=encoding, newline="") as fh:
            first = fh.readline()
    except UnicodeDecodeError:
        # Text mode decodes a whole buffer, so the bad byte may sit in any early line.
        raise _decode_error(path, spec, encoding) from None
    if not first.strip():
        raise IngestError(f"{path}: the file is empty (no header line)")
    header = next(csv.reader(io.StringIO(first), delimiter=spec.delimiter[0]))
    header = [h.strip() for h in header]
    seen: set[str] = set()
    for position, name in enumerate(header, start=1):
        if not name:
            raise IngestError(f"{path}, line 1: column {position} has an empty name")
        if name in seen:
            raise IngestError(f"{path}, line 1: duplicate column name {name!r}")
        seen.add(name)


def _decode_error(path: Path, spec: InputSpec, encoding: str) -> IngestError:
    """An error naming the line and byte offset of the first byte that is not ``encoding``."""
    decoder = codecs.getincrementaldecoder(encoding)()
    line, offset = 1, 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_SNIFF_BYTES):
            try:
                line += decoder.decode(chunk).count("\n")
            except UnicodeDecodeError as exc:
                # exc.object ends where this chunk ends (it may start with buffered bytes).
                start = offset + len(chunk) - len(exc.object)
                good = exc.object[: exc.start]
                line += codecs.decode(good, encoding, errors="replace").count("\n")
                return IngestError(
                    f"{path}, line {line}: not valid {spec.encoding} text (byte offset "
                    f"{start + exc.start}); set input.encoding in the policy"
                )
            offset += len(chunk)
    return IngestError(f"{path}: not valid {spec.encoding} text; set input.encoding in the policy")


def _check_row_lengths(path: Path, spec: InputSpec, encoding: str, width: int) -> None:
    """Reject a row with fewer fields than the header (pandas silently pads it with NA).

    Rows with too many fields are already refused by the parser.
    """
    if len(spec.delimiter) != 1:
        return  # the csv module cannot split on a multi-character delimiter
    with open(path, encoding=encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=spec.delimiter)
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank lines are skipped by the parser too
            if len(row) != width:
                raise IngestError(
                    f"{path}, line {reader.line_num}: ragged row with {len(row)} field(s), "
                    f"expected {width}"
                )


def _read_csv(path: Path, spec: InputSpec) -> pd.DataFrame:
    # A UTF-8 byte-order mark is legitimate (Excel writes one); strip it instead of letting it
    # become part of the first column's name.
    encoding = "utf-8-sig" if spec.encoding.lower().replace("_", "-") == "utf-8" else spec.encoding
    if path.stat().st_size == 0:
        raise IngestError(f"{path}: the file is empty")
    if spec.header:
        _check_header(path, spec, encoding)
    try:
        df = pd.read_csv(
            path,
            sep=spec.delimiter,
            header=0 if spec.header else None,
            dtype="string",
            na_values=spec.missing_values,
            keep_default_na=False,
            encoding=encoding,
            engine="python" if len(spec.delimiter) > 1 else "c",
            skipinitialspace=False,
            on_bad_lines="error",
        )
    except pd.errors.EmptyDataError:
        raise IngestError(f"{path}: the file is empty") from None
    except pd.errors.ParserError as exc:
        raise IngestError(f"{path}: malformed CSV: {exc}".strip()) from None
    except UnicodeDecodeError:
        raise _decode_error(path, spec, encoding) from None
    # A short row can only show up as a missing last cell: scan the file only in that case.
    if len(df) and df.shape[1] > 1 and df.iloc[:, -1].isna().any():
        _check_row_lengths(path, spec, encoding, df.shape[1])
    if spec.header:
        df.columns = [str(c).strip() for c in df.columns]
    else:
        df.columns = [f"column_{i}" for i in range(1, df.shape[1] + 1)]
    return df


def read_table(spec: InputSpec) -> pd.DataFrame:
    """Read the table described by ``spec``.

    Parameters
    ----------
    spec : InputSpec
        The policy's ``input`` section (paths already resolved).

    Returns
    -------
    DataFrame
        Text cells (``string`` dtype) for CSV; the stored types for Parquet and the public
        dataset loaders. Missing-value markers become ``<NA>``.

    Raises
    ------
    IngestError
        The file is missing, unreadable, malformed, or holds no data rows.
    """
    path = Path(spec.path)
    if not path.exists():
        raise IngestError(f"input file not found: {path} (input.path)")
    if path.is_dir():
        raise IngestError(f"input.path is a folder, not a file: {path}")
    if spec.format == "csv":
        df = _read_csv(path, spec)
    elif spec.format == "parquet":
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several unrelated types
            raise IngestError(f"{path}: cannot read as Parquet: {exc}") from None
        df = df.replace({m: pd.NA for m in spec.missing_values if m != ""})
    else:
        from core.datasets import DATASET_LOADERS

        df = DATASET_LOADERS[spec.format](path)
    if len(df) == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    return df
