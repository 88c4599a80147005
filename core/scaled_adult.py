"""Scaled Adult as partitioned Parquet: 100M rows in minutes, for the Dask path's benchmarks.

``../shared/tools/make_scaled_adult.py`` makes a larger Adult-like table without making it
trivially anonymous: each output row is a random Adult row whose quasi-identifier cells are
each, with probability ``p``, replaced by that column's value in another random Adult row
(marginal resampling); the sensitive column is kept. It writes one CSV file through Python
strings, about a minute per 10M rows, too slow (and too large) at 100M rows.

:func:`write_scaled_adult` applies the same method with numpy on dictionary codes: the source
table is read once (pyarrow, every cell as text, the policy's missing-value markers as
missing cells), each column dictionary-encoded, and the output is drawn part by part,
``rows_per_part`` rows at a time, as integer indices into the source rows, written by pyarrow
as Parquet part files whose columns are dictionary arrays over the source's own texts. No
Python object is made per row, and only one part is held at a time.

A part's draws come from its own generator, seeded by ``(seed, part number)``
(:class:`numpy.random.SeedSequence`), so a table is a function of ``(source, rows, p, seed,
rows_per_part)`` and a part can be regenerated alone. The random stream differs from the CSV
tool's (one stream for the whole table), so the rows are not the same rows; the distribution
is the same. Every record is resampled from a public table: a plain numpy generator is
appropriate here; this module produces test data, not differential-privacy noise.

The source is read at run time from where it lives (``../shared/data/arx/adult.csv`` next to
the repository); nothing is copied into the repository.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

__all__ = [
    "ADULT_QUASI_IDENTIFIERS",
    "DEFAULT_ADULT_SOURCE",
    "ScaledTable",
    "read_source",
    "write_scaled_adult",
]

#: The columns the CSV tool resamples (ARX's 8 Adult quasi-identifiers); the rest are kept.
ADULT_QUASI_IDENTIFIERS: tuple[str, ...] = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
)

#: ARX's Adult table, next to the repository (``../shared/data``).
DEFAULT_ADULT_SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "arx" / "adult.csv"


@dataclass(frozen=True)
class ScaledTable:
    """What :func:`write_scaled_adult` wrote.

    Attributes
    ----------
    folder : Path
        The folder of part files (``part-00000.parquet``, ...), the input a policy names.
    rows : int
    parts : tuple of Path
        The part files, in order.
    columns : tuple of str
        The source's columns, in its order.
    """

    folder: Path
    rows: int
    parts: tuple[Path, ...]
    columns: tuple[str, ...]


def read_source(
    source: str | Path = DEFAULT_ADULT_SOURCE,
    delimiter: str = ";",
    missing_values: Sequence[str] = ("", "?"),
) -> pa.Table:
    """The source table, every column dictionary-encoded text (``missing_values`` missing).

    Read the way the policy reads the CSV (``policies/adult.yaml``: ``;``, a header, ``""``
    and ``"?"`` missing), so the Parquet table holds what the CSV path would have read.
    """
    table = pacsv.read_csv(
        source,
        parse_options=pacsv.ParseOptions(delimiter=delimiter),
        convert_options=pacsv.ConvertOptions(
            column_types=None,
            strings_can_be_null=True,
            null_values=list(missing_values),
            auto_dict_encode=False,
        ),
        read_options=pacsv.ReadOptions(use_threads=False),
    )
    # Every column as text (pyarrow would infer age as int64): the CSV path reads text too.
    encoded = [
        pc.dictionary_encode(pc.cast(table[name], pa.string()).combine_chunks())
        for name in table.column_names
    ]
    return pa.table(encoded, names=table.column_names)


def _part(
    source: pa.Table,
    indices: Sequence[np.ndarray],
    rows: int,
    p: float,
    resampled: frozenset[str],
    rng: np.random.Generator,
) -> pa.Table:
    """``rows`` resampled rows: one draw of source rows, then per resampled column a swap."""
    n = source.num_rows
    picked = rng.integers(0, n, rows)
    arrays = []
    for name, codes in zip(source.column_names, indices, strict=True):
        column = codes[picked]
        if name in resampled:
            swap = rng.random(rows) < p
            column[swap] = codes[rng.integers(0, n, int(swap.sum()))]
        dictionary = source[name].chunk(0).dictionary
        mask = column < 0
        arrays.append(
            pa.DictionaryArray.from_arrays(
                pa.array(column, type=pa.int32(), mask=mask if mask.any() else None), dictionary
            )
        )
    return pa.table(arrays, names=source.column_names)


def write_scaled_adult(
    rows: int,
    out: str | Path,
    *,
    p: float = 0.3,
    seed: int = 7,
    rows_per_part: int = 1_000_000,
    source: str | Path = DEFAULT_ADULT_SOURCE,
    quasi_identifiers: Sequence[str] = ADULT_QUASI_IDENTIFIERS,
    delimiter: str = ";",
    missing_values: Sequence[str] = ("", "?"),
) -> ScaledTable:
    """Write ``rows`` rows of scaled Adult into the folder ``out`` as Parquet part files.

    Parameters
    ----------
    rows : int
        Rows in all, at least 1.
    out : path
        A folder that does not exist yet or is empty.
    p : float, default=0.3
        Probability that a quasi-identifier cell is replaced by the column's value in another
        random source row (the CSV tool's ``--p``).
    seed : int, default=7
        The table's seed; part ``i`` draws from ``SeedSequence([seed, i])``.
    rows_per_part : int, default=1_000_000
        Rows per part file (the last part holds the rest).
    source, delimiter, missing_values
        The source CSV and how to read it (ARX's Adult as ``policies/adult.yaml`` reads it).
    quasi_identifiers : sequence of str
        The columns resampled; every other column is the picked row's own.

    Returns
    -------
    ScaledTable

    Raises
    ------
    ValueError
        ``rows`` or ``rows_per_part`` below 1, ``p`` outside [0, 1], an unknown column in
        ``quasi_identifiers``, or ``out`` not empty.
    """
    if rows < 1 or rows_per_part < 1:
        raise ValueError(f"rows and rows_per_part must be >= 1, got {rows} and {rows_per_part}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    table = read_source(source, delimiter, missing_values)
    unknown = [c for c in quasi_identifiers if c not in table.column_names]
    if unknown:
        raise ValueError(f"{source}: no column(s) {unknown} to resample")
    folder = Path(out)
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"{folder} is not empty: the parts of another table would mix in")
    folder.mkdir(parents=True, exist_ok=True)
    indices = [
        table[name].chunk(0).indices.fill_null(-1).to_numpy().astype(np.int32)
        for name in table.column_names
    ]
    resampled = frozenset(quasi_identifiers)
    parts = []
    for number, start in enumerate(range(0, rows, rows_per_part)):
        rng = np.random.default_rng(np.random.SeedSequence([seed, number]))
        part = _part(table, indices, min(rows_per_part, rows - start), p, resampled, rng)
        path = folder / f"part-{number:05d}.parquet"
        pq.write_table(part, path, compression="snappy")
        parts.append(path)
    return ScaledTable(folder, rows, tuple(parts), tuple(table.column_names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int)
    parser.add_argument("out", help="a new folder for the part files")
    parser.add_argument("--p", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rows-per-part", type=int, default=1_000_000)
    parser.add_argument("--src", default=str(DEFAULT_ADULT_SOURCE))
    a = parser.parse_args(argv)
    written = write_scaled_adult(
        a.rows, a.out, p=a.p, seed=a.seed, rows_per_part=a.rows_per_part, source=a.src
    )
    print(f"{written.rows} rows -> {written.folder} ({len(written.parts)} parts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
