"""Seeded generator of a wide, census-like table: many categorical quasi-identifiers.

Users ask to release tables of 20 to 240 columns, where the exact search's lattice cannot be
listed. This generator makes such a table without external data, for the tests and benchmarks
of the ``heuristic`` search: ``n_attributes`` categorical quasi-identifiers ``attr_01``,
``attr_02``, ... with 4 to 12 values each, skewed (a few common values and a tail of rare
ones, as census answers are) and correlated through one hidden trait per person, plus a
sensitive target column ``income`` that depends on the same trait (so a classifier on the
release has something to learn). Each attribute's hierarchy is a taxonomy value -> group ->
``*`` (:func:`wide_taxonomies`, :func:`wide_hierarchies`): 2 levels, so 30 attributes make a
lattice of 3^30 nodes.

The value lists and groups depend only on the number of attributes, never on the seed, so one
set of hierarchies fits every table of that width. Every record is invented: a plain
:class:`numpy.random.Generator` is appropriate here; this module produces data, not
differential-privacy noise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privgate.core.hierarchy import Hierarchy, taxonomy_hierarchy

__all__ = [
    "DEFAULT_WIDE_ATTRIBUTES",
    "DEFAULT_WIDE_SEED",
    "WIDE_TARGET",
    "generate_wide_table",
    "wide_attributes",
    "wide_hierarchies",
    "wide_taxonomies",
]

DEFAULT_WIDE_ATTRIBUTES = 30
DEFAULT_WIDE_SEED = 20261125
#: The sensitive (target) column.
WIDE_TARGET = "income"
INCOME_VALUES = ("<=50K", ">50K")


def wide_attributes(n_attributes: int = DEFAULT_WIDE_ATTRIBUTES) -> list[str]:
    """The quasi-identifier columns, in order: ``attr_01`` ... ``attr_NN``."""
    if n_attributes < 1:
        raise ValueError(f"n_attributes must be >= 1, got {n_attributes}")
    return [f"attr_{i + 1:02d}" for i in range(n_attributes)]


def _shape(i: int) -> tuple[int, int]:
    """Values and groups of attribute ``i`` (0-based): 4..12 values in 2..4 groups."""
    n_values = 4 + (5 * i) % 9
    return n_values, min(2 + i % 3, n_values)


def wide_taxonomies(n_attributes: int = DEFAULT_WIDE_ATTRIBUTES) -> dict[str, dict[str, list]]:
    """Each attribute's taxonomy ``{group: [values]}``, consecutive values in a group."""
    out = {}
    for i, name in enumerate(wide_attributes(n_attributes)):
        n_values, n_groups = _shape(i)
        tree: dict[str, list] = {}
        for v in range(n_values):
            g = v * n_groups // n_values
            tree.setdefault(f"g{i + 1:02d}_{g}", []).append(f"v{i + 1:02d}_{v:02d}")
        out[name] = tree
    return out


def wide_hierarchies(n_attributes: int = DEFAULT_WIDE_ATTRIBUTES) -> dict[str, Hierarchy]:
    """Each attribute's hierarchy: value -> group -> ``*``."""
    return {
        name: taxonomy_hierarchy(name, tree) for name, tree in wide_taxonomies(n_attributes).items()
    }


def generate_wide_table(
    n_rows: int,
    n_attributes: int = DEFAULT_WIDE_ATTRIBUTES,
    seed: int = DEFAULT_WIDE_SEED,
) -> pd.DataFrame:
    """A wide census-like table: ``n_attributes`` skewed, correlated categorical columns and
    the binary target ``income``; the same ``seed`` gives the same table.

    Every value of every attribute is in its taxonomy (:func:`wide_taxonomies`).
    """
    if n_rows < 1:
        raise ValueError(f"n_rows must be >= 1, got {n_rows}")
    rng = np.random.default_rng(seed)
    trait = rng.standard_normal(n_rows)  # the hidden person trait the columns share
    columns: dict[str, np.ndarray] = {}
    for i, name in enumerate(wide_attributes(n_attributes)):
        n_values, _ = _shape(i)
        ranks = np.arange(n_values)
        base = -1.1 * np.log1p(ranks)  # Zipf-like: a few common values, a rare tail
        slope = 0.8 * (1 if i % 2 == 0 else -1) * (ranks - ranks.mean()) / max(ranks.std(), 1)
        logits = base[None, :] + trait[:, None] * slope[None, :] * 0.5
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        u = rng.random(n_rows)[:, None]
        code = np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), n_values - 1)
        columns[name] = np.array([f"v{i + 1:02d}_{v:02d}" for v in range(n_values)])[code]
    income = trait + 0.7 * rng.standard_normal(n_rows) > 0.9
    columns[WIDE_TARGET] = np.where(income, INCOME_VALUES[1], INCOME_VALUES[0])
    return pd.DataFrame(columns)
