"""Ingest: read the input table exactly as the policy declares it.

Cells are read as text first (nothing is guessed), with the policy's missing-value markers,
delimiter and encoding; the schema stage then coerces and checks types. Reading fails with one
:class:`IngestError` naming the file and, where the parser knows it, the line, for every way a
CSV export breaks: a ragged row or a stray delimiter, an unbalanced quote, a wrong delimiter, a
wrong encoding or a UTF-16 byte-order mark, an empty file, a header without rows, duplicated
column names, a field too large to be real data.
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import pandas as pd

from privgate.core.exceptions import IngestError
from privgate.core.policy import InputSpec

__all__ = ["read_table"]

_SNIFF_BYTES = 1 << 16

#: Largest field accepted, in characters: the standard library's csv limit, which the gate uses to
#: read a release back. A larger field is almost always an unbalanced quote that swallowed the
#: rest of the file, and a release containing one could not be verified.
MAX_FIELD_CHARS = 131_072

#: Delimiters tried when the header does not split on the declared one.
_OTHER_DELIMITERS = (",", ";", "\t", "|")

_BOMS = {
    codecs.BOM_UTF32_LE: "utf-32",
    codecs.BOM_UTF32_BE: "utf-32",
    codecs.BOM_UTF16_LE: "utf-16",
    codecs.BOM_UTF16_BE: "utf-16",
}


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
    if len(header) == 1:
        _check_delimiter(path, spec, first)
    seen: set[str] = set()
    for position, name in enumerate(header, start=1):
        if not name:
            raise IngestError(f"{path}, line 1: column {position} has an empty name")
        if name in seen:
            raise IngestError(f"{path}, line 1: duplicate column name {name!r}")
        seen.add(name)


def _check_delimiter(path: Path, spec: InputSpec, first: str) -> None:
    """A header that does not split on the declared delimiter but does on another one."""
    best, width = "", 1
    for other in _OTHER_DELIMITERS:
        if other in spec.delimiter:
            continue
        names = next(csv.reader(io.StringIO(first), delimiter=other))
        if len(names) > width and all(n.strip() for n in names):
            best, width = other, len(names)
    if best:
        raise IngestError(
            f"{path}, line 1: the header is one column with input.delimiter "
            f"{spec.delimiter!r}, but splits into {width} columns on {best!r}: the file looks "
            f"{best!r}-delimited; set input.delimiter in the policy"
        )


def _check_bom(path: Path, spec: InputSpec) -> None:
    """A UTF-16/32 byte-order mark in a file declared as another encoding."""
    with open(path, "rb") as fh:
        start = fh.read(4)
    declared = codecs.lookup(spec.encoding).name
    for bom, family in _BOMS.items():
        if start.startswith(bom) and not declared.startswith(family):
            raise IngestError(
                f"{path}, line 1: the file starts with a {family.upper()} byte-order mark "
                f"({bom.hex(' ').upper()}) but input.encoding is {spec.encoding!r}; set "
                f"input.encoding: {family} in the policy"
            )


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


def _scan_records(
    path: Path, spec: InputSpec, encoding: str, width: int, *, strict: bool
) -> IngestError | None:
    """Walk the records with the standard library and explain the first broken one.

    Used when pandas refused the file (its messages count records, not lines, and say nothing
    of where an unclosed quote starts) and when a row may be short (pandas pads it with NA).
    Returns an error naming the physical line, or ``None`` if every record is well formed.
    """
    if len(spec.delimiter) != 1:
        return None  # the csv module cannot split on a multi-character delimiter
    with open(path, encoding=encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=spec.delimiter, strict=strict)
        start = 1  # physical line on which the next record starts
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return None
            except csv.Error as exc:
                if "field larger than field limit" in str(exc):
                    return IngestError(
                        f"{path}, line {start}: a field longer than {MAX_FIELD_CHARS} characters "
                        "starts here (an unbalanced quote swallows the rest of the file into one "
                        "field)"
                    )
                if "unexpected end of data" in str(exc):
                    return IngestError(
                        f"{path}, line {start}: malformed CSV: unbalanced quote, the quoted field "
                        "starting on this line is never closed (EOF inside string)"
                    )
                return IngestError(f"{path}, line {reader.line_num}: malformed CSV: {exc}")
            if row and not (len(row) == 1 and not row[0].strip()) and len(row) != width:
                hint = " (a stray delimiter?)" if len(row) > width else ""
                return IngestError(
                    f"{path}, line {start}: ragged row with {len(row)} field(s), expected "
                    f"{width}{hint}"
                )
            start = reader.line_num + 1


def _check_field_sizes(path: Path, df: pd.DataFrame) -> None:
    """Refuse a field larger than :data:`MAX_FIELD_CHARS` (only possible in a file that big)."""
    if path.stat().st_size <= MAX_FIELD_CHARS:
        return
    for name in df.columns:
        lengths = df[name].str.len()
        longest = lengths.max()
        if pd.notna(longest) and longest > MAX_FIELD_CHARS:
            row = int(lengths.idxmax())
            raise IngestError(
                f"{path}: column {str(name).strip()!r}, data row {row}: a field of "
                f"{int(lengths[row])} characters, more than the {MAX_FIELD_CHARS} allowed (an "
                "unbalanced quote can swallow the rest of the file into one field)"
            )


def _header_width(path: Path, spec: InputSpec, encoding: str) -> int:
    """Number of fields of the first record (0 if it cannot be told)."""
    if len(spec.delimiter) != 1:
        return 0
    with open(path, encoding=encoding, newline="") as fh:
        try:
            return len(next(csv.reader(fh, delimiter=spec.delimiter)))
        except (StopIteration, csv.Error):
            return 0


def _read_csv(path: Path, spec: InputSpec) -> pd.DataFrame:
    # A UTF-8 byte-order mark is legitimate (Excel writes one); strip it instead of letting it
    # become part of the first column's name.
    encoding = "utf-8-sig" if spec.encoding.lower().replace("_", "-") == "utf-8" else spec.encoding
    if path.stat().st_size == 0:
        raise IngestError(f"{path}: the file is empty")
    _check_bom(path, spec)
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
        width = _header_width(path, spec, encoding)
        found = _scan_records(path, spec, encoding, width, strict=True) if width else None
        raise (found or IngestError(f"{path}: malformed CSV: {exc}".strip())) from None
    except UnicodeDecodeError:
        raise _decode_error(path, spec, encoding) from None
    if not isinstance(df.index, pd.RangeIndex):
        # The first data row has one field more than the header: pandas silently made the
        # first column the index (shifting every value one column to the right).
        found = _scan_records(path, spec, encoding, df.shape[1], strict=False)
        raise found or IngestError(f"{path}: the data rows have more fields than the header")
    # A short row can only show up as a missing last cell: scan the file only in that case.
    if len(df) and df.shape[1] > 1 and df.iloc[:, -1].isna().any():
        found = _scan_records(path, spec, encoding, df.shape[1], strict=False)
        if found is not None:
            raise found
    _check_field_sizes(path, df)
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
        from privgate.core.datasets import DATASET_LOADERS

        df = DATASET_LOADERS[spec.format](path)
    if len(df) == 0:
        raise IngestError(f"{path}: no data rows (only a header)")
    return df
