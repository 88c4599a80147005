"""The release an :class:`~privgate.core.anonymize.AnonymizationResult` describes.

Every algorithm's result turns into the release the same way: the kept records in input order,
each recoded quasi-identifier replaced by its released text, every other released column as in
the input. Rows are put in a random order once, when the release is written
(:func:`shuffle_rows`), so the published order reveals nothing about the input's (which may be
sorted by a name or an id) while every stage before that can match a released row with its
original record by index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privgate.core.anonymize._result import AnonymizationResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["release_columns", "release_table", "shuffle_rows"]


def release_columns(
    rows: Mapping[str, Any], result: AnonymizationResult, released_columns: Sequence[str]
) -> dict[str, np.ndarray]:
    """The release as ``{column: array}`` (no dataframe library needed), kept rows in input
    order."""
    keep = ~result.suppressed
    out: dict[str, np.ndarray] = {}
    for name in released_columns:
        if name in result.labels:
            out[name] = np.asarray(result.labels[name])
        else:
            out[name] = np.asarray(rows[name])[keep]
    return out


def release_table(
    frame: pd.DataFrame, result: AnonymizationResult, released_columns: Sequence[str]
) -> pd.DataFrame:
    """The release as a DataFrame: recoded quasi-identifiers as text (``string`` dtype), the
    other columns with their input dtype, and each kept row's original index."""
    import pandas as pd

    keep = ~result.suppressed
    data = {}
    for name in released_columns:
        if name in result.labels:
            data[name] = pd.array(np.asarray(result.labels[name], dtype=object), dtype="string")
        else:
            data[name] = frame[name].to_numpy()[keep]
    release = pd.DataFrame(data, index=frame.index[keep])
    for name in released_columns:
        if name not in result.labels:
            release[name] = release[name].astype(frame[name].dtype)
    return release


def shuffle_rows(release: pd.DataFrame, seed: int | None = None) -> pd.DataFrame:
    """Rows in a random order with a fresh index: the order reveals nothing.

    ``seed=None`` (the default, and what every release uses) draws the permutation from the
    operating system's entropy, so no one can recompute it from anything published; tests pass
    a seed to reproduce an order.
    """
    order = np.random.default_rng(seed).permutation(len(release))
    return release.iloc[order].reset_index(drop=True)
