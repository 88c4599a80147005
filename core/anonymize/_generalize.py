"""Apply an anonymization result to the table: the release as it will be written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.encoding import EncodedTable

if TYPE_CHECKING:
    import pandas as pd


def generalize_columns(
    columns: Mapping[str, np.ndarray],
    encoded: EncodedTable,
    result: AnonymizationResult,
    released_columns: Sequence[str],
) -> dict[str, np.ndarray]:
    """Released columns as arrays: QIs as their labels, suppressed records removed.

    Works on any ``{column: array}`` mapping (no dataframe library needed); the order of the
    kept rows is the input's.
    """
    keep = ~result.suppressed
    by_name = {c.name: c for c in encoded.columns}
    out: dict[str, np.ndarray] = {}
    for name in released_columns:
        if name in by_name:
            col = by_name[name]
            level = result.levels[name]
            out[name] = col.labels[level][col.level_maps[level][col.codes[keep]]]
        else:
            out[name] = np.asarray(columns[name])[keep]
    return out


def apply_generalization(
    df: pd.DataFrame,
    encoded: EncodedTable,
    result: AnonymizationResult,
    released_columns: Sequence[str],
    shuffle_seed: int | None = None,
) -> pd.DataFrame:
    """The release table: QIs replaced by their labels, suppressed records removed.

    Parameters
    ----------
    df : DataFrame
        The validated input (row order matching ``encoded``).
    encoded : EncodedTable
    result : AnonymizationResult
    released_columns : sequence of str
        Columns to keep, in order; direct identifiers are never among them.
    shuffle_seed : int, optional
        Permute the released rows so that their order does not reveal the input's order
        (which may be sorted by a name or an id). ``None`` keeps the input order and the
        input's index, so released rows can be matched with their originals.
    """
    import pandas as pd

    keep = ~result.suppressed
    arrays = generalize_columns(
        {name: df[name].to_numpy() for name in released_columns if name in df},
        encoded,
        result,
        released_columns,
    )
    qis = {c.name for c in encoded.columns}
    release = pd.DataFrame(
        {
            name: pd.array(values, dtype="string") if name in qis else values
            for name, values in arrays.items()
        },
        index=df.index[keep],
    )
    for name in released_columns:
        if name not in qis:
            release[name] = release[name].astype(df[name].dtype)
    if shuffle_seed is not None:
        release = shuffle_rows(release, shuffle_seed)
    return release


def shuffle_rows(release: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Rows in a seeded random order with a fresh index: the order reveals nothing."""
    order = np.random.default_rng(seed).permutation(len(release))
    return release.iloc[order].reset_index(drop=True)
