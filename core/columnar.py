"""CSV files as dictionary-coded text columns, read and written with pyarrow.

Why: a table of 10M rows read cell by cell into Python strings (:mod:`core.textcsv`) costs
seconds per million rows and gigabytes of objects, although an Adult-like column holds a few
dozen distinct texts. Here each column is a :class:`TextCodes`: one code per row into the
column's sorted distinct texts, in the narrowest signed integer type its texts allow
(:func:`code_dtype`: one byte a cell for a column of fewer than 127 texts). The engine
(``privgate anonymize``) and the gate's re-reading of the written file both work on these
codes; no Python object is made per cell.

The cells are exactly those :func:`core.textcsv.read_text_columns` reads (the reference
reader): pyarrow splits the file with quoting *off*, and a file in which any value holds a
quote character, a NUL byte or more characters than the ``csv`` module's field limit, or has
a blank line, or starts with a byte-order mark and has no header (pyarrow drops the mark),
or whose rows pyarrow cannot split into the header's width, is read again by
the reference reader, which either reads it (the same cells) or refuses it with its own
message. Without a quote character a CSV line is split on the delimiter alone, so the two
readers cannot disagree on a file pyarrow accepts. A file of few distinct lines (a release,
which the gate reads with ``lines=True``) is first read as lines (:func:`_read_lines`): each
distinct line split once, on the same rule (no quote, no carriage return, no NUL, every line
of the header's width), and handed to the cell reader when any line breaks it or the
distinct lines are many. Writing is the mirror image: a column set
of two or more columns whose texts hold no delimiter, quote or line break is written unquoted
by pyarrow, which is the text :func:`core.textcsv.write_text_columns` writes; any other is
written by that function.
"""

from __future__ import annotations

import csv
import mmap
import os
from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from privgate.core.arrow_numpy import arrow_of, numpy_of, text_array
from privgate.core.encoding import factorize, hash_factorize
from privgate.core.textcsv import read_text_columns, write_text_columns

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CodedLines",
    "TextCodes",
    "code_dtype",
    "read_coded_csv",
    "read_coded_csv_lines",
    "release_freed_memory",
    "write_coded_csv",
]

#: Bytes pyarrow parses per block (a block is held as text while it is coded; one per core).
#: 4 MiB: the read of 1M Adult rows peaked 0.07 GiB lower than with 16 MiB blocks, and its
#: parse took no more CPU time (benchmarks/BENCHMARKS.md, issue 18). 1 MiB: pyarrow's read of
#: the same file peaked 30 MiB lower again (+90 MiB over the process before it, against +121
#: with 4 MiB; 10M rows: 490 against 520 MiB), its CPU time the same within the load's noise.
BLOCK_BYTES = 1 << 20
#: Bytes pyarrow parses per block in a file of at least :data:`LARGE_FILE_BYTES`. Why: each
#: block is a dictionary per column that :func:`_column_codes` merges in Python (10M Adult
#: rows: 787 blocks, 7,083 dictionaries); with 4 MiB blocks the read took 3.55-3.62 user CPU s
#: against 3.80-4.08 with 1 MiB (three pairs alternated, load 5.4), for 6-30 MiB more of a
#: peak that is not the command's there (5M rows: 1.67/1.75 against 1.76/1.90 s, +38 MiB).
#: 8 MiB: 80 MiB more, no clear further cut.
LARGE_BLOCK_BYTES = 4 << 20
#: From this file size, :data:`LARGE_BLOCK_BYTES` (the 5M and 10M scaled Adult files, not the
#: 1M one, whose peak is held to 0.23 GiB).
LARGE_FILE_BYTES = 256 << 20
#: Rows written per pyarrow batch (memory held as text at once when writing: two batches).
#: 2**17: two batches of an Adult-like release are about 20 MiB of text; 2**19 held 80 MiB,
#: the peak of the whole command at 1M rows (issue 18).
WRITE_ROWS = 1 << 17
#: A file is written from its distinct lines when it has at most this many of them, or at
#: most one per :data:`LINES_PER_ROW_SHARE` rows; else cell by cell (each distinct line is
#: made as a Python string: 1M of them took 1.5 CPU s, the cell-by-cell writer 2.8 s for 10M
#: rows).
MAX_DISTINCT_LINES = 1 << 16
LINES_PER_ROW_SHARE = 16


def code_dtype(n_values: int) -> np.dtype:
    """The narrowest of ``int8``, ``int16``, ``int32``, ``int64`` for codes into ``n_values``
    texts: it holds ``-1`` (a missing cell), every code, and ``n_values`` itself (``code + 1``,
    and the place consumers give a missing cell when they list it last).

    Why: a CSV column of 10M rows held as ``int32`` codes is 40 MB; an Adult-like column has
    a few dozen distinct texts, whose codes fit one byte (issue 18: the command's peak memory).
    """
    for dtype in (np.int8, np.int16, np.int32):
        if n_values < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


@dataclass(frozen=True)
class TextCodes:
    """One text column as codes into its sorted distinct texts.

    Attributes
    ----------
    codes : ndarray of a signed integer type, shape (n_rows,)
        ``values[codes[i]]`` is row ``i``'s text; ``-1`` is a missing cell. The readers
        (:func:`read_coded_csv`, :meth:`from_text`) give :func:`code_dtype`'s type, ``int8``
        for fewer than 127 texts; arithmetic on codes must widen first (``int8`` 125 + 4
        wraps).
    values : ndarray of object
        The distinct present texts, sorted as :func:`privgate.core.encoding.factorize` sorts
        them, so ``(codes, values)`` is what ``factorize`` returns for the text column.
    """

    codes: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    @classmethod
    def from_text(cls, cells: object) -> TextCodes:
        """Codes of a column of ``str``/``None`` cells (the reference reader's form)."""
        codes, values = factorize(cells)
        return cls(codes.astype(code_dtype(len(values)), copy=False), values)

    def text(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The cells (``str`` or ``None``) as an object array, of ``rows`` only if given."""
        codes = self.codes if rows is None else self.codes[rows]
        lookup = np.empty(len(self.values) + 1, dtype=object)
        lookup[: len(self.values)] = self.values
        lookup[-1] = None
        return lookup[codes]

    def tolist(self) -> list:
        return self.text().tolist()

    def take(self, rows: np.ndarray) -> TextCodes:
        """The same column restricted to (and ordered as) ``rows``."""
        return TextCodes(self.codes[rows], self.values)


@dataclass(frozen=True)
class CodedLines:
    """A file's distinct lines as codes and how many of its rows are each of them, or its
    rows (``counts`` ``None``) when it was read row by row.

    Attributes
    ----------
    columns : dict of str to TextCodes
        One :class:`TextCodes` per column, an entry per distinct line (or per row), with the
        ``values`` (so the codes) the file's columns read row by row have.
    counts : ndarray of int64, shape (n_lines,), or None
        The file's rows holding each line (each at least 1; they sum to the file's rows);
        ``None``: each entry is one row.
    """

    columns: dict[str, TextCodes]
    counts: np.ndarray | None


def release_freed_memory() -> None:
    """Hand memory freed so far back to the operating system: pyarrow's pool, then the C heap.

    Why: glibc keeps freed arrays of up to 32 MiB (its mmap threshold grows to the largest
    array freed) in the process's heap, so a command that frees its input's codes and the
    search's arrays still holds their pages when it reads the next large file: at 1M rows,
    about 0.08 GiB of the gate's peak was such freed memory. ``malloc_trim`` returns it (a few
    milliseconds); where the C library has none (not glibc), nothing is done.
    """
    import ctypes

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return
    trim(0)


def _sorted_rank(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The rank of each of ``texts`` among them sorted (``-1`` appended, for a missing cell)
    and the sorted texts."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    rank = np.empty(len(texts) + 1, dtype=np.int32)
    rank[order] = np.arange(len(texts), dtype=np.int32)
    rank[-1] = -1
    values = np.empty(len(texts), dtype=object)
    values[:] = [texts[i] for i in order]
    return rank, values


def _header(path: Path, delimiter: str, codec: str, header: bool) -> list[str] | None:
    """The column names from the first record, or ``None`` when pyarrow should not read the
    file (it needs the reference reader's checks or messages)."""
    try:
        with open(path, encoding=codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, strict=True)
            first = next(reader, None)
            if first is None or reader.line_num != 1:
                return None
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    names = (
        [name.strip() for name in first]
        if header
        else [f"column_{i}" for i in range(1, len(first) + 1)]
    )
    if len(names) < 2 or any(not n for n in names) or len(set(names)) != len(names):
        return None  # one column (a blank line is a row of it), or a bad header
    if not header and first[0].startswith("\ufeff"):
        return None  # a byte-order mark the codec keeps (utf-16-le): pyarrow would drop it
    return names


def _has_bom(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(3) == b"\xef\xbb\xbf"


def _block_bytes(file_bytes: int) -> int:
    """The block size pyarrow parses a file of ``file_bytes`` in (see :data:`BLOCK_BYTES`)."""
    return LARGE_BLOCK_BYTES if file_bytes >= LARGE_FILE_BYTES else BLOCK_BYTES


def _column_codes(chunks: list, n_rows: int) -> tuple[TextCodes, bool] | None:
    """One column's pyarrow dictionary chunks (a dictionary per block) as :class:`TextCodes`,
    and whether any cell is empty or missing; ``None`` if a text needs the reference reader.

    Each chunk's codes go through one lookup table (its dictionary's place among the
    column's sorted distinct texts) straight into the result: one pass over the rows.
    """
    seen: dict[str, int] = {}
    local_parts = []
    for array in chunks:
        texts = array.dictionary.to_pylist()
        lut = np.fromiter((seen.setdefault(t, len(seen)) for t in texts), np.int32, len(texts))
        local = array.indices.fill_null(len(texts)) if array.null_count else array.indices
        local_parts.append((lut, numpy_of(local)))  # in [0, len(texts)]
    texts = list(seen)
    limit = csv.field_size_limit()
    if any('"' in t or "\x00" in t or len(t) > limit for t in texts):
        return None  # quoting, NUL bytes, a cell over the csv module's limit: its call
    rank, values = _sorted_rank(texts)
    dtype = code_dtype(len(values))
    rank = rank.astype(dtype)  # ranks in [-1, len(values)): they fit
    codes = np.empty(n_rows, dtype=dtype)
    start = 0
    for lut, local in local_parts:
        stop = start + len(local)
        np.take(rank[np.append(lut, np.int32(-1))], local, out=codes[start:stop], mode="clip")
        start = stop
    has_empty = any(a.null_count for a in chunks) or "" in seen
    return TextCodes(codes, values), has_empty


#: Bytes of the file one thread splits into lines at once (:func:`_read_lines` holds three
#: such buffers: one being filled while two are split). 16 MiB: on a release of 9.8M rows
#: and 111k distinct lines, 8 MiB chunks held 2.3M distinct lines between them, 16 MiB 1.6M
#: (each chunk's distinct lines are looked up among the file's).
LINE_CHUNK_BYTES = 16 << 20
#: :func:`_read_lines` hands a file to the cell-by-cell reader once its distinct lines are more
#: than this share of the rows read (and more than :data:`MAX_DISTINCT_LINES`): each chunk's
#: lines are looked up among all distinct lines so far, a cost that grows with them, and a
#: table of mostly distinct lines is read cell by cell at less cost (10M scaled Adult rows:
#: 1.27M distinct lines, 60 % of each 8 MiB chunk's rows).
MAX_LINE_SHARE = 1 / 8
#: Chunks whose distinct lines :func:`_read_lines` merges into the file's at once: each merge
#: hashes the file's distinct lines so far once more (a release of 111k distinct lines in 50
#: chunks: 0.8 CPU s merged chunk by chunk, 0.3 s eight at a time, 0.2 s all at once, which
#: would hold every chunk's distinct lines: 1.6M, 0.14 GiB).
MERGE_CHUNKS = 8


def _chunk_lines(buf: mmap.mmap, length: int) -> tuple[np.ndarray, pa.Array]:
    """The lines of ``buf[:length]`` (which ends with a line feed) as each row's index among
    the chunk's distinct lines, and those lines (binary, each with its line feed).

    Runs on a worker thread: numpy and pyarrow do the work with the GIL released; nothing
    returned refers to ``buf``, which is filled again once this returns.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=length) == 10)
    offsets = np.empty(len(ends) + 1, dtype=np.int32)
    offsets[0] = 0
    np.add(ends, 1, out=offsets[1:], casting="unsafe")
    lines = pa.Array.from_buffers(
        pa.binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(buf)]
    )
    encoded = pc.dictionary_encode(lines)
    return numpy_of(encoded.indices), encoded.dictionary


def _read_lines(
    path: Path, names: list[str], delimiter: str, header: bool, markers: set, rows_wanted: bool
) -> tuple[dict[str, TextCodes] | None, CodedLines] | None:
    """The cells of a UTF-8 file read as lines: each distinct line split into its cells once,
    each row given its line's cells; ``None`` when the file needs the cell-by-cell reader (a
    line of another width, a carriage return, a quote character, a NUL byte, a cell over the
    ``csv`` module's field limit, bytes that are not UTF-8, or too many distinct lines: see
    :data:`MAX_LINE_SHARE`).

    Why: a release has few distinct lines (its classes times its other columns' values:
    111k of 9.8M rows on 10M Adult rows), so splitting and hashing each cell of each row,
    as the cell-by-cell reader does, repeats the same work on copies: the gate's re-read of
    that release took 4.1 CPU s cell by cell (issue 18).

    The cells are the reference reader's: without a quote character or a carriage return, a
    record of the ``csv`` module is the bytes up to a line feed (the last one may lack it),
    split on the delimiter; a blank line has one field, not ``len(names)``, and goes back to
    the callers, as does a line longer than a chunk.
    """
    import pyarrow as pa

    known = pa.nulls(0, pa.binary())  # the distinct lines so far, in order (pa.array: pandas)
    held: list[pa.DictionaryArray] = []  # chunks not yet merged into ``known``
    rows: list[np.ndarray] = []  # each chunk's rows as indices into ``known``
    n_rows = 0

    def merge() -> bool:
        """Merge the held chunks' lines into ``known`` by one pass of pyarrow's dictionary
        unifier (each distinct line hashed once per merge, not once per chunk); ``False``
        when the file's distinct lines grew past :data:`MAX_LINE_SHARE`."""
        nonlocal known, n_rows
        head = pa.DictionaryArray.from_arrays(pa.nulls(0, pa.int32()), known)
        unified = pa.chunked_array([head, *held]).unify_dictionaries()
        lines = unified.chunk(0).dictionary
        if not lines.slice(0, len(known)).equals(known):  # the rows so far index ``known``
            return False  # pyarrow reordered them (it does not today): read cell by cell
        known = lines
        for chunk in unified.chunks[1:]:
            rows.append(numpy_of(chunk.indices))
            n_rows += len(chunk)
        held.clear()
        return len(known) <= max(MAX_DISTINCT_LINES, MAX_LINE_SHARE * n_rows)

    def hold(found: tuple[np.ndarray, pa.Array]) -> bool:
        held.append(pa.DictionaryArray.from_arrays(arrow_of(found[0]), found[1]))
        # the first chunk at once: a file of mostly distinct lines leaves after one chunk
        return (len(held) < MERGE_CHUNKS and n_rows > 0) or merge()

    # a sixteenth of the file, 1 MiB to LINE_CHUNK_BYTES: three 16 MiB buffers were 10 MiB of
    # the command's peak at 1M rows (82 MB; issue 18's target there is 0.23 GiB)
    size = min(LINE_CHUNK_BYTES, max(1 << 20, os.path.getsize(path) >> 4))
    with open(path, "rb") as fh, ThreadPoolExecutor(2) as pool:
        if header and b"\r" in fh.readline():
            return None
        pending: deque = deque()
        # Anonymous maps, not the C heap: three buffers reused for the whole file, and glibc's
        # threshold for mapping large arrays is left as it was (freeing a mapped 16 MiB array
        # raises it, and the heap keeps the command's later arrays below it after they are
        # freed).
        free: list[mmap.mmap] = []
        carry = b""
        while True:
            buf = free.pop() if free else mmap.mmap(-1, size + 1)
            buf[: len(carry)] = carry
            got = fh.readinto(memoryview(buf)[len(carry) : size])
            end = len(carry) + got
            if not got:  # the end of the file: its last line may lack a line feed
                if end:
                    buf[end] = 10
                    pending.append((pool.submit(_chunk_lines, buf, end + 1), buf))
                break
            cut = buf.rfind(b"\n", 0, end) + 1
            if not cut:
                if end == size:
                    return None  # a line longer than a chunk
                carry = bytes(buf[:end])  # the last line, without a line feed: read on
                free.append(buf)
                continue
            carry = bytes(buf[cut:end])
            pending.append((pool.submit(_chunk_lines, buf, cut), buf))
            if len(pending) > 2 or not n_rows:  # the first chunk alone: it may be the last
                future, done = pending.popleft()
                if not hold(future.result()):
                    return None
                free.append(done)
        while pending:
            if not hold(pending.popleft()[0].result()):
                return None
        if held and not merge():
            return None
        return _line_columns(known, rows, n_rows, names, delimiter, markers, pool, rows_wanted)


def _line_columns(
    lines: pa.Array,
    rows: list[np.ndarray],
    n_rows: int,
    names: list[str],
    delimiter: str,
    markers: set,
    pool: ThreadPoolExecutor,
    rows_wanted: bool,
) -> tuple[dict[str, TextCodes] | None, CodedLines] | None:
    """:func:`_read_lines`' distinct lines (each with its line feed) and each chunk's rows as
    indices into them, as ``{column: TextCodes}`` and the lines' own :class:`CodedLines`;
    ``None`` for the callers (a line of another width, a text the reference reader must
    judge, bytes that are not UTF-8)."""
    import pyarrow.compute as pc

    width = len(names)
    fields = pc.split_pattern(pc.binary_slice(lines, 0, -1), pattern=delimiter.encode("ascii"))
    counts = numpy_of(pc.list_value_length(fields))
    if len(counts) and (counts.min() != width or counts.max() != width):
        return None  # a short, long or blank line: the cell reader (or the reference) judges
    flat = fields.flatten()
    limit = csv.field_size_limit()
    per_line = []  # each column's code of each distinct line
    for j in range(width):
        cells = pc.dictionary_encode(
            flat.take(arrow_of(np.arange(j, len(flat), width, dtype=np.int64)))
        )
        try:
            texts = [b.decode("utf-8") for b in cells.dictionary.to_pylist()]
        except UnicodeDecodeError:
            return None
        if any('"' in t or "\x00" in t or "\r" in t or len(t) > limit for t in texts):
            return None
        present = [t for t in texts if t not in markers]
        rank, values = _sorted_rank(present)  # rank[-1] == -1: a missing cell
        dtype = code_dtype(len(values))
        ranks = iter(rank[:-1].tolist())
        lut = np.array([-1 if t in markers else next(ranks) for t in texts], dtype=dtype)
        per_line.append((lut[numpy_of(cells.indices)], values))

    def gather(j: int) -> TextCodes:
        codes_of_line, values = per_line[j]
        codes = np.empty(n_rows, dtype=codes_of_line.dtype)
        start = 0
        for ids in rows:
            stop = start + len(ids)
            np.take(codes_of_line, ids, out=codes[start:stop], mode="clip")  # ids in range
            start = stop
        return TextCodes(codes, values)

    columns = None
    if rows_wanted:  # each column's gather over the rows releases the GIL: one per core
        columns = dict(zip(names, pool.map(gather, range(width)), strict=True))
    counts = np.zeros(len(lines), dtype=np.int64)
    for ids in rows:
        counts += np.bincount(ids, minlength=len(lines))
    distinct = {name: TextCodes(*per_line[j]) for j, name in enumerate(names)}
    return columns, CodedLines(distinct, counts)


def _read_arrow(
    path: Path, names: list[str], delimiter: str, encoding: str, header: bool, markers: set
) -> dict[str, TextCodes] | None:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    text_type = pa.dictionary(pa.int32(), pa.string())
    # The whole file at once, its blocks parsed and dictionary-encoded on every core (the
    # streaming reader converts one block at a time); held as codes, 4 bytes a cell.
    table = pcsv.read_csv(
        path,
        read_options=pcsv.ReadOptions(
            column_names=[f"c{j}" for j in range(len(names))],
            skip_rows=1 if header else 0,
            block_size=_block_bytes(path.stat().st_size),
            encoding=encoding,
            use_threads=True,
        ),
        parse_options=pcsv.ParseOptions(
            delimiter=delimiter, quote_char=False, escape_char=False, ignore_empty_lines=False
        ),
        convert_options=pcsv.ConvertOptions(
            column_types={f"c{j}": text_type for j in range(len(names))},
            null_values=sorted(markers),
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        ),
    )
    n_rows = table.num_rows
    chunks = [table.column(j).chunks for j in range(len(names))]
    del table  # each column's blocks are freed once coded
    try:
        return _coded_columns(chunks, n_rows, names)
    finally:
        # pyarrow's allocator keeps freed blocks (the whole file's codes: 0.45 GiB at 10M rows)
        # as its own until told: hand them back before the search allocates its arrays.
        pa.default_memory_pool().release_unused()


def _coded_columns(
    chunks: list[list], n_rows: int, names: list[str]
) -> dict[str, TextCodes] | None:
    """:func:`_read_arrow`'s columns (a dictionary chunk per block; each column's list is
    emptied once coded) as ``{column: TextCodes}``, or ``None`` for the reference reader (a
    blank line, or a text it must judge)."""

    def code(j: int) -> tuple[TextCodes, bool] | None:
        coded = _column_codes(chunks[j], n_rows)
        chunks[j] = []
        return coded

    # A column's codes are numpy and pyarrow work that releases the GIL: one column per core
    # (at 10M rows, 0.9 CPU s for nine columns).
    with ThreadPoolExecutor(max(1, min(len(names), os.cpu_count() or 1))) as pool:
        results = list(pool.map(code, range(len(names))))
    columns: dict[str, TextCodes] = {}
    blank: np.ndarray | None = None  # rows whose every cell so far is empty
    maybe_blank = True  # False once a column has no empty cell at all
    for name, coded in zip(names, results, strict=True):
        if coded is None:
            return None
        column, has_empty = coded
        columns[name] = column
        maybe_blank = maybe_blank and has_empty
        if maybe_blank:
            empty = column.codes < 0
            if len(column.values) and column.values[0] == "":  # "" sorts first
                empty |= column.codes == 0
            blank = empty if blank is None else blank & empty
    if maybe_blank and blank is not None and blank.any():
        # pyarrow reads a blank line as a row of empty cells, the reference reader refuses
        # it (or drops it at the end of the file): let the reference reader decide.
        return None
    return columns


def read_coded_csv(
    path: str | Path,
    delimiter: str = ",",
    encoding: str = "utf-8",
    header: bool = True,
    missing: Iterable[str] = ("",),
    *,
    lines: bool = False,
) -> dict[str, TextCodes]:
    """Read a CSV file into ``{column: TextCodes}``: the cells
    :func:`privgate.core.textcsv.read_text_columns` reads, as codes.

    Same parameters and errors as ``read_text_columns``; a file pyarrow cannot read quote-free
    is read by it (see the module docstring). ``lines``: the file is expected to hold few
    distinct lines (a release: its classes times its other columns' values), so a UTF-8 file
    is first read as lines, each distinct line split once (:func:`_read_lines`: at 10M rows
    less than half the CPU time), and cell by cell only if it turns out otherwise. Without
    it the cell-by-cell reader reads it: an input table's lines are mostly distinct, and
    finding that out cost a chunk's work and 40 MiB (10M scaled Adult rows).
    """
    rows = _read_coded(path, delimiter, encoding, header, missing, lines, rows_wanted=True)[0]
    assert rows is not None  # asked for
    return rows


def read_coded_csv_lines(
    path: str | Path,
    delimiter: str = ",",
    encoding: str = "utf-8",
    header: bool = True,
    missing: Iterable[str] = ("",),
) -> CodedLines:
    """:func:`read_coded_csv` with ``lines=True``, as the file's distinct lines with their
    counts when it was read as lines (as its rows, ``counts`` ``None``, when it was read
    cell by cell).

    Why: the gate measures a release on its cells; as its distinct lines, each weighing its
    count, the 9.8M rows of the 10M Adult release are 111k lines to group and count, and no
    row's codes are made (9 gathers of 9.8M rows), issue 18.
    """
    rows, lines = _read_coded(path, delimiter, encoding, header, missing, True, rows_wanted=False)
    if lines is not None:
        return lines
    assert rows is not None  # read cell by cell
    return CodedLines(rows, None)


def _read_coded(
    path: str | Path,
    delimiter: str,
    encoding: str,
    header: bool,
    missing: Iterable[str],
    lines: bool,
    rows_wanted: bool,
) -> tuple[dict[str, TextCodes] | None, CodedLines | None]:
    """The file's rows (``None`` only when read as lines and not ``rows_wanted``) and its
    distinct lines when it was read as lines."""
    path = Path(path)
    markers = set(missing)
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") == "utf-8" else encoding
    names = _header(path, delimiter, codec, header)
    columns = None
    # A marker holding a quote or a NUL byte: pyarrow would read a cell equal to it (quoting
    # off) as missing, which the reference reader parses as quoted text or refuses.
    plain_markers = not any('"' in m or "\x00" in m for m in markers)
    if names is not None and delimiter != '"' and plain_markers and (header or not _has_bom(path)):
        arrow_codec = "utf8" if codec == "utf-8-sig" else codec  # the BOM is on the header line
        if lines and codec == "utf-8-sig" and delimiter.isascii() and delimiter not in "\r\n":
            found = _read_lines(path, names, delimiter, header, markers, rows_wanted)
            if found is not None:
                return found
        try:
            columns = _read_arrow(path, names, delimiter, arrow_codec, header, markers)
        except Exception:  # pyarrow refused the file: the reference reader says why
            columns = None
    if columns is None:
        text = read_text_columns(path, delimiter, encoding, header, markers)
        columns = {name: TextCodes.from_text(cells) for name, cells in text.items()}
    return columns, None


def _needs_quotes(text: str, delimiter: str) -> bool:
    return any(ch in text for ch in (delimiter, '"', "\n", "\r")) or text == ""


def write_coded_csv(
    path: str | Path,
    columns: Mapping[str, TextCodes],
    rows: np.ndarray | None = None,
    delimiter: str = ",",
) -> None:
    """Write ``{column: TextCodes}`` (``rows`` of them, in that order, if given) as CSV with a
    header, a missing cell as an empty one: the bytes
    :func:`privgate.core.textcsv.write_text_columns` writes for the same cells.
    """
    names = list(columns)
    texts = [*names, *(t for c in columns.values() for t in c.values.tolist())]
    # One column: the csv module writes a missing cell as ``""``, pyarrow as an empty line
    # (a blank line, which a reader refuses mid-file and drops at its end).
    if len(names) < 2 or any(_needs_quotes(str(t), delimiter) for t in texts):
        cells = {name: column.text(rows) for name, column in columns.items()}
        write_text_columns(path, cells, delimiter)
        return
    header = (delimiter.join(names) + "\n").encode("utf-8")
    n = len(next(iter(columns.values()))) if rows is None else len(rows)
    with open(path, "wb") as fh:
        fh.write(header)
        if not _write_lines(fh, columns, rows, delimiter, n):
            _write_cells(fh, columns, rows, delimiter, n)


def _line_ids(
    columns: Mapping[str, TextCodes], rows: np.ndarray | None, n: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Each written row's distinct line (an id) and each line's codes per column (rows of an
    ``(n_lines, n_columns)`` array), or ``None`` when lines are too many or too varied to key.

    When ``rows`` picks from columns no longer than the lines allowed (a release given as its
    distinct lines and each row's line, :mod:`privgate.core.scale._lines`), the columns' own
    rows are the lines and ``rows`` the ids: nothing is keyed or hashed per row.
    """
    entries = len(next(iter(columns.values())))
    if rows is not None and entries <= max(n // LINES_PER_ROW_SHARE, MAX_DISTINCT_LINES):
        digits = np.column_stack([c.codes for c in columns.values()]).astype(np.int64)
        return rows, digits
    radices = [len(c.values) + 1 for c in columns.values()]  # + 1: a missing cell
    if float(np.prod(radices, dtype=float)) >= 2.0**62:
        return None
    key = np.zeros(n, dtype=np.int64)
    for column, radix in zip(columns.values(), radices, strict=True):
        codes = column.codes if rows is None else column.codes[rows]
        key *= radix
        key += codes
        key += 1
    ids, lines = hash_factorize(key)  # one hash pass, no sort of the rows
    del key
    if len(lines) > max(n // LINES_PER_ROW_SHARE, MAX_DISTINCT_LINES):
        return None
    digits = np.empty((len(lines), len(radices)), dtype=np.int64)
    rest = np.asarray(lines, dtype=np.int64)
    for j in range(len(radices) - 1, -1, -1):
        rest, digits[:, j] = np.divmod(rest, radices[j])
    return ids, digits - 1


def _write_lines(
    fh: BinaryIO,
    columns: Mapping[str, TextCodes],
    rows: np.ndarray | None,
    delimiter: str,
    n: int,
) -> bool:
    """Write the rows as copies of their distinct lines; ``False`` (nothing written) when the
    rows have too many distinct lines for that to pay.

    Why: a release's rows are a few distinct lines (its classes times its other columns'
    values), so each distinct line's bytes are made once and the file is gathered from them
    by pyarrow's ``take``, one copy per row, instead of formatting every cell of every row.
    """
    import pyarrow as pa

    found = _line_ids(columns, rows, n)
    if found is None:
        return False
    ids, digits = found
    lookups = []
    for column in columns.values():
        lookup = np.empty(len(column.values) + 1, dtype=object)
        lookup[:-1] = column.values
        lookup[-1] = ""  # a missing cell: empty, as the reference writer writes it
        lookups.append(lookup)
    cells = [lookup[digits[:, j]].tolist() for j, lookup in enumerate(lookups)]
    lines = text_array([delimiter.join(parts) + "\n" for parts in zip(*cells, strict=True)])

    def gather(start: int) -> pa.Array:
        return lines.take(arrow_of(ids[start : start + WRITE_ROWS]))

    # The next batch is gathered on the other core while this one is written (both release
    # the GIL): two batches of text are held at once.
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(gather, 0)
        for start in range(0, n, WRITE_ROWS):
            chunk = pending.result()
            if start + WRITE_ROWS < n:
                pending = pool.submit(gather, start + WRITE_ROWS)
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)
            first, last = offsets[chunk.offset], offsets[chunk.offset + len(chunk)]
            fh.write(memoryview(chunk.buffers()[2])[first:last])
            del chunk, offsets
    pa.default_memory_pool().release_unused()  # the chunks' text, back before the gate reads
    return True


def _write_cells(
    fh: BinaryIO,
    columns: Mapping[str, TextCodes],
    rows: np.ndarray | None,
    delimiter: str,
    n: int,
) -> None:
    """Write the rows cell by cell with pyarrow's CSV writer, unquoted."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = list(columns)
    # Each column's texts and a null last: a missing cell (-1) is gathered as the null.
    dictionaries = {
        name: pa.concat_arrays([text_array(c.values.tolist()), pa.nulls(1, pa.large_string())])
        for name, c in columns.items()
    }
    schema = pa.schema([(name, pa.large_string()) for name in names])
    # pyarrow quotes the header whatever the style: the header line is written by the caller.
    options = pcsv.WriteOptions(delimiter=delimiter, quoting_style="none", include_header=False)
    with pcsv.CSVWriter(fh, schema, write_options=options) as writer:
        for start in range(0, n, WRITE_ROWS):
            stop = min(n, start + WRITE_ROWS)
            arrays = []
            for name, column in columns.items():
                codes = column.codes[start:stop] if rows is None else column.codes[rows[start:stop]]
                missing = len(column.values)  # the null's place in the column's texts
                indices = np.where(codes < 0, missing, codes).astype(np.int32, copy=False)
                arrays.append(dictionaries[name].take(arrow_of(indices)))
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
