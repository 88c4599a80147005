"""Read a table with dask.dataframe and build its frequency set partition by partition."""

from __future__ import annotations

import glob
from collections.abc import Mapping, Sequence
from pathlib import Path

import dask
import dask.dataframe as dd

from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import IngestError
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import InputSpec
from privgate.core.scale._dictionary import frequency_set_from_histogram
from privgate.core.scale._histogram import PartialHistogram, merge_histograms, partition_histogram

__all__ = ["frequency_set_of", "histogram_of", "read_input"]

#: Partial histograms merged per task of the reduction tree.
FAN_IN = 8


def read_input(
    spec: InputSpec,
    columns: Sequence[str] | None = None,
    blocksize: str | int = "64MB",
    engine: str = "pyarrow",
) -> dd.DataFrame:
    """The policy's input as a lazy, partitioned dask DataFrame.

    CSV is read in blocks of ``blocksize`` bytes (a file larger than memory is never held
    whole) by pandas' ``engine`` (pyarrow by default), every column as text in pandas' ``str``
    dtype (Arrow buffers, no Python string per cell; ``02139`` stays ``02139``), the policy's
    missing-value markers as missing, nothing guessed. Each block is reduced to integer codes
    as soon as it is read (see :func:`histogram_of`), so only one block per worker is ever
    held as text.
    Parquet (a file, a folder of part files or a glob) is read as stored, one partition per
    row group or file.

    Raises
    ------
    IngestError
        The input does not exist, has no header (CSV), or lacks a requested column.
    """
    path = str(spec.path)
    if not Path(path).exists() and not glob.glob(path):
        raise IngestError(f"input file not found: {path} (input.path)")
    if spec.format == "csv":
        if not spec.header:
            raise IngestError("the dask path reads CSV with a header line only (input.header)")
        encoding = (
            "utf-8-sig" if spec.encoding.lower().replace("_", "-") == "utf-8" else spec.encoding
        )
        frame = dd.read_csv(
            path,
            sep=spec.delimiter,
            dtype="str",
            engine=engine,
            na_values=spec.missing_values,
            keep_default_na=False,
            encoding=encoding,
            blocksize=blocksize,
            usecols=list(columns) if columns is not None else None,
        )
    elif spec.format == "parquet":
        frame = dd.read_parquet(path, columns=list(columns) if columns is not None else None)
    else:
        raise IngestError(f"input.format {spec.format!r}: the dask path reads csv and parquet")
    if columns is not None:
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            raise IngestError(f"{path}: missing column(s) {absent} (declared in the policy)")
    return frame


def _reduce(parts: list, fan_in: int = FAN_IN):
    """A tree of delayed merges over delayed partial histograms."""
    merge = dask.delayed(merge_histograms, pure=True)
    while len(parts) > 1:
        parts = [merge(parts[i : i + fan_in]) for i in range(0, len(parts), fan_in)]
    return parts[0]


def histogram_of(
    frame: dd.DataFrame, columns: Sequence[str], text: bool = False
) -> PartialHistogram:
    """The merged histogram of ``columns`` over every partition of ``frame``.

    Each partition is summarized where it is read (its distinct tuples and counts), and the
    summaries are merged along a tree of fan-in :data:`FAN_IN`; only distinct tuples are moved.
    Runs on whatever dask scheduler is active (a ``distributed.Client`` if one is set).
    """
    columns = list(columns)
    build = dask.delayed(partition_histogram, pure=True)
    parts = [build(p, columns, text) for p in frame[columns].to_delayed()]
    return _reduce(parts).compute()


def frequency_set_of(
    frame: dd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    sensitive: Sequence[str] = (),
) -> FrequencySet:
    """The table's frequency set (global dictionaries), built partition by partition."""
    histogram = histogram_of(frame, [*hierarchies, *sensitive])
    return frequency_set_from_histogram(histogram, hierarchies, sensitive)
