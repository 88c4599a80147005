"""Apply an anonymization result to the table: the release as it will be written."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.anonymize._result import AnonymizationResult
from core.encoding import EncodedTable


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
    keep = ~result.suppressed
    out = {}
    by_name = {c.name: c for c in encoded.columns}
    for name in released_columns:
        if name in by_name:
            col = by_name[name]
            level = result.levels[name]
            labels = col.labels[level][col.level_maps[level][col.codes[keep]]]
            out[name] = pd.array(labels, dtype="string")
        else:
            out[name] = df[name].to_numpy()[keep]
    release = pd.DataFrame(out, index=df.index[keep])
    for name in released_columns:
        if name not in by_name:
            release[name] = release[name].astype(df[name].dtype)
    if shuffle_seed is not None:
        release = shuffle_rows(release, shuffle_seed)
    return release


def shuffle_rows(release: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Rows in a seeded random order with a fresh index: the order reveals nothing."""
    order = np.random.default_rng(seed).permutation(len(release))
    return release.iloc[order].reset_index(drop=True)
