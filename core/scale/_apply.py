"""Apply a chosen generalization to every partition: labels for QIs, failing classes removed.

The search returns levels; which rows are suppressed follows from them: a row is suppressed
when its class (its generalized QI tuple) fails a privacy model. A
:class:`GeneralizationPlan` carries what a partition needs to decide that on its own: each QI's
global dictionary, the level-code map and labels at the chosen level, and the sorted keys of
the failing classes. No per-row array crosses partitions.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from privgate.core.anonymize import failing_tuples
from privgate.core.encoding import FrequencySet
from privgate.core.exceptions import HierarchyError
from privgate.core.privacy import PrivacyModel
from privgate.core.scale._dictionary import DICTIONARIES

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "GeneralizationPlan",
    "generalize_codes",
    "generalize_frame",
    "generalize_partition",
    "plan_generalization",
]


@dataclass(frozen=True)
class GeneralizationPlan:
    """Everything a partition needs to produce its share of the release.

    Attributes
    ----------
    quasi_identifiers : tuple of str
    values : tuple of ndarray
        Per QI, the global dictionary (sorted distinct level-0 values).
    level_codes : tuple of ndarray of int32
        Per QI, the generalized code of each dictionary entry at the chosen level.
    labels : tuple of ndarray of object
        Per QI, the text of each generalized code.
    failing_keys : ndarray of int64
        Sorted mixed-radix keys (radix = number of labels) of the classes to suppress.
    released_columns : tuple of str
    levels : dict of str to int
    suppressed : int
        Records the plan suppresses over the whole table.
    """

    quasi_identifiers: tuple[str, ...]
    values: tuple[np.ndarray, ...]
    level_codes: tuple[np.ndarray, ...]
    labels: tuple[np.ndarray, ...]
    failing_keys: np.ndarray
    released_columns: tuple[str, ...]
    levels: dict[str, int] = field(default_factory=dict)
    suppressed: int = 0

    @property
    def radices(self) -> list[int]:
        return [len(lab) for lab in self.labels]


def _check_key_space(radices: Sequence[int]) -> None:
    if float(np.prod(radices, dtype=float)) >= 2.0**62:
        raise NotImplementedError(
            "the generalized QI space is larger than 2**62 classes; the dask path keys classes "
            "by one int64"
        )


def plan_generalization(
    freq: FrequencySet,
    levels: Mapping[str, int],
    models: Sequence[PrivacyModel],
    released_columns: Sequence[str],
    dictionaries: Sequence[np.ndarray] | None = None,
) -> GeneralizationPlan:
    """The plan for ``levels`` on ``freq`` (suppressing every class that fails a model).

    ``dictionaries`` are the QIs' raw distinct values behind the level-0 codes; by default
    those :func:`frequency_set_from_histogram` left in ``freq.cache``, else the level-0 labels.
    """
    table = freq.table
    if dictionaries is None:
        dictionaries = freq.cache.get(DICTIONARIES) or tuple(c.labels[0] for c in table.columns)
    level_list = [int(levels[c.name]) for c in table.columns]
    failing = failing_tuples(freq, level_list, models)
    generalized = freq.generalized_codes(level_list)[failing]
    radices = [c.distinct_at(lvl) for c, lvl in zip(table.columns, level_list, strict=True)]
    _check_key_space(radices)
    key = np.zeros(len(generalized), dtype=np.int64)
    for j, radix in enumerate(radices):
        key = key * radix + generalized[:, j]
    return GeneralizationPlan(
        quasi_identifiers=tuple(table.names),
        values=tuple(np.asarray(d, dtype=object) for d in dictionaries),
        level_codes=tuple(
            c.level_maps[lvl].astype(np.int32)
            for c, lvl in zip(table.columns, level_list, strict=True)
        ),
        labels=tuple(c.labels[lvl] for c, lvl in zip(table.columns, level_list, strict=True)),
        failing_keys=np.unique(key),
        released_columns=tuple(released_columns),
        levels=dict(zip(table.names, level_list, strict=True)),
        suppressed=int(freq.counts[failing].sum()),
    )


def _global_codes(series: pd.Series, values: np.ndarray, name: str) -> np.ndarray:
    """Codes of a partition's cells in the global dictionary ``values`` (level-0 text)."""
    import pandas as pd  # the partitioned path's frames; the codes path never gets here

    position = {v: i for i, v in enumerate(values.tolist())}
    if isinstance(series.dtype, pd.CategoricalDtype):
        local, categories = series.cat.codes.to_numpy(), series.cat.categories.tolist()
    else:
        local, uniques = pd.factorize(series, use_na_sentinel=True)
        categories = list(uniques)
    lut = np.fromiter((position.get(c, -1) for c in categories), np.int32, len(categories))
    if (lut < 0).any():
        # A categorical (a Parquet dictionary column) may list values no cell of the partition
        # holds, and the dictionary built at ingest has only the values cells held: only a
        # category some cell uses must be in it.
        used = np.bincount(local[local >= 0], minlength=len(categories)) > 0
        unknown = [c for c, bad in zip(categories, (lut < 0) & used, strict=True) if bad]
        if unknown:
            raise HierarchyError(
                f"column {name!r}: value(s) {unknown[:5]} not in the dictionary built at ingest "
                "(the input changed between reading passes?)"
            )
    if (local < 0).any():  # a missing cell: the dictionary lists it last when the input had one
        if None not in position:
            raise HierarchyError(
                f"column {name!r}: a missing cell not seen when the dictionary was built (the "
                "input changed between reading passes?)"
            )
        lut = np.append(lut, np.int32(position[None]))
    return lut[local]


def generalize_codes(
    codes: Sequence[np.ndarray], plan: GeneralizationPlan
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The kept rows and every row's generalized QI codes, from level-0 codes.

    ``codes[j]`` indexes QI ``j``'s global dictionary ``plan.values[j]``. Returns the indices of
    the rows whose class the plan keeps (in row order) and, per QI, each row's code into
    ``plan.labels[j]``. One pass of integer arithmetic; no text is looked at.
    """
    n = len(codes[0]) if len(codes) else 0
    key = np.zeros(n, dtype=np.int64)
    generalized = []
    for level_codes, column, radix in zip(plan.level_codes, codes, plan.radices, strict=True):
        level = level_codes[column]
        generalized.append(level)
        key *= radix
        key += level
    if not len(plan.failing_keys):
        return np.arange(n), generalized
    # A hash lookup (one pass) rather than a binary search per row: about 5x faster on a
    # million rows against tens of thousands of failing classes. pyarrow's, not pandas':
    # ``privgate anonymize`` runs without importing pandas (1M keys against 30k failing
    # ones: 19 ms, pandas' get_indexer 13 ms, np.searchsorted 87 ms).
    import pyarrow.compute as pc

    from privgate.core.arrow_numpy import arrow_of, numpy_of

    failing = pc.is_in(arrow_of(key), value_set=arrow_of(plan.failing_keys))
    keep = numpy_of(failing) == 0
    return np.flatnonzero(keep), generalized


def generalize_partition(
    frame: pd.DataFrame, plan: GeneralizationPlan, shuffle_seed: int | None = None
) -> pd.DataFrame:
    """One partition of the release: QIs as categorical labels, failing classes removed.

    ``shuffle_seed`` permutes the partition's kept rows (seeded; the caller varies it per
    partition) so that their order within the partition reveals nothing.
    """
    import pandas as pd

    codes = [
        _global_codes(frame[name], values, name)
        for name, values in zip(plan.quasi_identifiers, plan.values, strict=True)
    ]
    rows, generalized = generalize_codes(codes, plan)
    if shuffle_seed is not None:
        rows = rows[np.random.default_rng(shuffle_seed).permutation(len(rows))]
    by_name = dict(zip(plan.quasi_identifiers, range(len(generalized)), strict=True))
    out = {}
    for name in plan.released_columns:
        if name in by_name:
            j = by_name[name]
            out[name] = pd.Categorical.from_codes(
                generalized[j][rows], categories=_categories(plan.labels[j])
            )
        else:  # taken as stored (codes of a categorical, Arrow text): no Python string per cell
            out[name] = frame[name].array.take(rows)
    return pd.DataFrame(out, index=pd.RangeIndex(len(rows)))


def _categories(labels: np.ndarray) -> pd.Index:
    import pandas as pd

    return pd.Index([str(v) for v in labels.tolist()], dtype="str")


def _meta(frame, plan: GeneralizationPlan) -> pd.DataFrame:
    import pandas as pd

    by_name = dict(zip(plan.quasi_identifiers, plan.labels, strict=True))
    meta = {}
    for name in plan.released_columns:
        if name in by_name:
            dtype = pd.CategoricalDtype(_categories(by_name[name]))
            meta[name] = pd.Series(pd.Categorical([], dtype=dtype))
        else:
            meta[name] = frame._meta[name].iloc[:0]
    return pd.DataFrame(meta)


def _apply(frame, plan, root_seed, partition_info=None):
    number = partition_info["number"] if partition_info else 0
    seed = int(np.random.SeedSequence([root_seed, number]).generate_state(1)[0])
    return generalize_partition(frame, plan, seed)


def generalize_frame(frame, plan: GeneralizationPlan, shuffle_seed: int | None = None):
    """The release as a lazy dask DataFrame (``map_partitions`` of :func:`generalize_partition`).

    The rows within each partition are permuted with a seed derived from a root seed and the
    partition number. The root is ``shuffle_seed`` when given (a test reproducing an order),
    else drawn from the operating system's entropy, so nothing published lets anyone recompute
    the permutation. Partitions keep the input's order: a row's partition (its block of the
    input) is not hidden.
    """
    root = secrets.randbits(64) if shuffle_seed is None else shuffle_seed
    return frame.map_partitions(_apply, plan, root, meta=_meta(frame, plan), align_dataframes=False)
