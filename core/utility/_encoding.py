"""Faithful encoding of released values: what a generalized cell says, as numbers.

A release holds labels, not values: ``35-39``, ``Married``, ``*``. The utility measures read
every label for exactly what it says about the original value, never more:

* a **numeric** label is a range ``[lo, hi]``: a plain number ``v`` is ``[v, v]``, ``lo-hi``
  and ``[lo, hi)`` are parsed (the same label forms :func:`core.metrics.table_loss` reads), a
  hierarchy label that is not a range (``young``) spans the original values it covers, and
  ``*`` spans the whole column. Ranges are clipped to the column's observed ``[min, max]`` (an
  ARX band ``0-19`` over ages from 17 says ``17-19``) and scaled to ``[0, 1]`` by that range.
* a **categorical** label covers a set of *leaves* (the column's distinct original values): a
  leaf covers itself, a hierarchy label the leaves under it at any level (a text appearing at
  several levels covers the union), ``*`` every leaf.
* a missing cell says as little as ``*``.

Two encodings are built from this (:func:`encode_features`):

``categorical="onehot"`` (classification)
    One indicator column per distinct label *of the table being encoded*: a generalized
    category is a category of its own, as a recipient of the release would treat it, and
    ``*`` is one more category. A numeric column is its range's midpoint (``numeric=
    "midpoint"``) or its two bounds (``"bounds"``), plus an indicator ``col=*`` when the
    table has suppressed cells, so that suppression is its own category there too.
``categorical="leaves"`` (clustering)
    One column per leaf holding ``1/m`` on each of the ``m`` leaves a label covers (the expected
    one-hot vector of the record if its value were uniform under the label), scaled by
    ``1/sqrt(2)`` so that two different leaves are at squared distance 1, like the two ends of a
    numeric column. Original and released tables land in the same space.

Why the expected vector is the right input for k-means: if a record is uniform over the values
its labels allow, its expected squared distance to a centre ``c`` is ``||E[x] - c||^2 +
tr Var(x)``, and the variance does not depend on ``c``. k-means on the expected vectors thus
minimizes the expected squared distance of the uncertain records (the reduction of UK-means to
k-means: S. D. Lee, B. Kao, R. Cheng, "Reducing UK-means to K-means", ICDM Workshops 2007): a
distance that understands generalized values, while a leaf and its ancestor stay close and two
disjoint labels stay far.

Complexity: labels are resolved once per distinct label (``O(distinct labels x leaves)``), and
rows are then gathered, so encoding is ``O(n x features)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy import SUPPRESSED, Hierarchy, value_key

__all__ = ["AttributeDomain", "describe_domains", "encode_features", "factorize_labels"]

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$")
_HALF_OPEN = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*$")
_LEAF_SCALE = 1.0 / math.sqrt(2.0)


def factorize_labels(column: pd.Series) -> tuple[np.ndarray, list[str | None]]:
    """Codes of a column's cells into its distinct text keys; a missing cell is ``None``.

    Values are keyed with :func:`~privgate.core.hierarchy.value_key` (``39`` and ``39.0`` are one
    key). Only the distinct values are converted, so this is one ``pd.factorize`` plus work
    proportional to the number of distinct values.

    Returns
    -------
    codes : ndarray of int64, shape (n_rows,)
    labels : list of str or None
        ``labels[codes[i]]`` is row ``i``'s key.
    """
    raw_codes, uniques = pd.factorize(column, use_na_sentinel=True)
    keys = [value_key(u) for u in uniques]
    key_codes, labels = pd.factorize(pd.Series(keys, dtype=object))
    labels = [str(label) for label in labels]
    lookup = np.append(key_codes.astype(np.int64), len(labels))  # raw -1 (missing) -> last
    codes = lookup[raw_codes]
    if (raw_codes < 0).any():
        labels.append(None)
    return codes, labels


def _as_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return None if math.isnan(number) else number


@dataclass(frozen=True)
class AttributeDomain:
    """What the original column holds, and how to read a released label against it.

    Build it with :func:`describe_domains`.

    Attributes
    ----------
    name : str
    numeric : bool
        Read labels as numeric ranges (``True``) or as sets of categories.
    leaves : ndarray of object
        The column's distinct original values as text keys; sorted by value when numeric.
    values : ndarray of float
        The leaves as numbers (numeric columns; empty otherwise).
    counts : ndarray of int64
        Original records per leaf.
    n_missing : int
        Original records with a missing cell.
    """

    name: str
    numeric: bool
    leaves: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    n_missing: int
    _lookup: Mapping[str, np.ndarray] = field(repr=False, default_factory=dict)

    @property
    def low(self) -> float:
        return float(self.values[0]) if len(self.values) else 0.0

    @property
    def high(self) -> float:
        return float(self.values[-1]) if len(self.values) else 0.0

    def cover(self, label: str | None) -> np.ndarray:
        """Indices of the leaves ``label`` stands for (``*`` and missing: all of them).

        Raises
        ------
        HierarchyError
            The label is neither a leaf, a range, nor a label of the column's hierarchy, or
            it covers no original value.
        """
        if label is None or label == SUPPRESSED:
            return np.arange(len(self.leaves))
        if self.numeric:
            bounds = self._parsed(label)
            if bounds is not None:
                lo, hi, closed = bounds
                upper = self.values <= hi if closed else self.values < hi
                covered = np.flatnonzero((self.values >= lo) & upper)
                if len(covered):
                    return covered
                raise HierarchyError(
                    f"column {self.name!r}: released label {label!r} covers none of the "
                    "column's original values"
                )
        covered = self._lookup.get(label)
        if covered is None:
            raise HierarchyError(
                f"column {self.name!r}: released label {label!r} is not "
                + (
                    "a number, a range 'lo-hi' or '[lo, hi)', nor a label of its hierarchy"
                    if self.numeric
                    else "an original value nor a label of its hierarchy"
                )
            )
        return covered

    def bounds(self, label: str | None) -> tuple[float, float]:
        """``(lo, hi)`` of a numeric label in original units, clipped to ``[min, max]``."""
        if not self.numeric:
            raise TypeError(f"column {self.name!r} is not numeric")
        if label is None or label == SUPPRESSED:
            return self.low, self.high
        parsed = self._parsed(label)
        if parsed is not None:
            lo, hi = parsed[0], parsed[1]
        else:
            chosen = self.values[self.cover(label)]
            lo, hi = float(chosen.min()), float(chosen.max())
        lo, hi = min(max(lo, self.low), self.high), min(max(hi, self.low), self.high)
        return lo, max(lo, hi)

    @staticmethod
    def _parsed(label: str) -> tuple[float, float, bool] | None:
        """``(lo, hi, hi included)`` of a number or range label, or ``None``."""
        number = _as_number(label)
        if number is not None:
            return number, number, True
        match = _RANGE.match(label)
        if match is not None:
            return float(match.group(1)), float(match.group(2)), True
        match = _HALF_OPEN.match(label)
        if match is not None:
            return float(match.group(1)), float(match.group(2)), False
        return None


def _domain(
    name: str, column: pd.Series, hierarchy: Hierarchy | None, numeric: bool
) -> AttributeDomain:
    codes, labels = factorize_labels(column)
    per_label = np.bincount(codes, minlength=len(labels))
    kept = [i for i, label in enumerate(labels) if label is not None]
    leaves = np.array([labels[i] for i in kept], dtype=str)
    counts = per_label[kept]
    order = np.argsort(leaves, kind="stable")
    leaves, counts = leaves[order], counts[order]
    values = np.zeros(0)
    if numeric:
        try:
            values = np.array([float(v) for v in leaves])
        except ValueError:
            raise ValueError(f"column {name!r} is declared numeric but holds text") from None
        order = np.argsort(values, kind="stable")
        leaves, counts, values = leaves[order], counts[order], values[order]
    leaves = leaves.astype(object)
    lookup: dict[str, set[int]] = {str(leaf): {i} for i, leaf in enumerate(leaves)}
    if hierarchy is not None and len(leaves):
        table = hierarchy.generalize(list(leaves))
        for level in range(1, table.shape[1]):
            for i, label in enumerate(table[:, level]):
                lookup.setdefault(str(label), set()).add(i)
    frozen = {label: np.fromiter(sorted(ix), dtype=np.int64) for label, ix in lookup.items()}
    return AttributeDomain(
        name,
        numeric,
        leaves,
        values,
        counts.astype(np.int64),
        int(len(column) - counts.sum()),
        frozen,
    )


def describe_domains(
    original: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy | None],
    numeric: Collection[str] = (),
) -> dict[str, AttributeDomain]:
    """The domain of every column named in ``hierarchies``, read from the original table.

    Parameters
    ----------
    original : DataFrame
        The input before anonymization.
    hierarchies : mapping of str to Hierarchy or None
        The columns to describe, each with its hierarchy (``None`` for a column released as
        is, or a numeric column whose labels are all ranges).
    numeric : collection of str
        The columns whose labels are numeric ranges.

    Returns
    -------
    dict of str to AttributeDomain

    Examples
    --------
    >>> from core.hierarchy import taxonomy_hierarchy
    >>> df = pd.DataFrame({"age": [21, 23, 25, 41, 43, 45],
    ...                    "sex": ["M", "F", "M", "F", "M", "F"]})
    >>> sex = taxonomy_hierarchy("sex", {"any": ["M", "F"]})
    >>> domains = describe_domains(df, {"age": None, "sex": sex}, numeric={"age"})
    >>> domains["age"].bounds("20-30")
    (21.0, 30.0)
    >>> domains["sex"].cover("any").tolist()
    [0, 1]
    """
    unknown = [c for c in hierarchies if c not in original.columns]
    if unknown:
        raise ValueError(f"column(s) not in the original table: {unknown}")
    bad = sorted(set(numeric) - set(hierarchies))
    if bad:
        raise ValueError(
            "The 'numeric' parameter of describe_domains must be a subset of the described "
            f"columns {list(hierarchies)}. Got {sorted(numeric)} instead."
        )
    return {
        name: _domain(name, original[name], hierarchy, name in numeric)
        for name, hierarchy in hierarchies.items()
    }


def _numeric_block(
    domain: AttributeDomain, labels: list[str | None], mode: str, indicator: bool
) -> tuple[np.ndarray, list[str]]:
    span = domain.high - domain.low
    bounds = np.array([domain.bounds(label) for label in labels], dtype=float).reshape(-1, 2)
    scaled = (bounds - domain.low) / span if span > 0 else np.zeros_like(bounds)
    if mode == "midpoint":
        block, names = scaled.mean(axis=1, keepdims=True), [domain.name]
    else:
        block, names = scaled, [f"{domain.name}.lo", f"{domain.name}.hi"]
    suppressed = np.array([label is None or label == SUPPRESSED for label in labels])
    if indicator and suppressed.any():
        block = np.hstack([block, suppressed[:, None].astype(float)])
        names.append(f"{domain.name}={SUPPRESSED}")
    return block, names


def _onehot_block(
    domain: AttributeDomain, labels: list[str | None]
) -> tuple[np.ndarray, list[str]]:
    for label in labels:
        domain.cover(label)  # every label must mean something: raises on an unknown one
    texts = [SUPPRESSED if label is None else label for label in labels]
    categories = sorted(set(texts))
    position = {c: i for i, c in enumerate(categories)}
    block = np.zeros((len(labels), len(categories)))
    block[np.arange(len(labels)), [position[t] for t in texts]] = 1.0
    return block, [f"{domain.name}={c}" for c in categories]


def _leaves_block(
    domain: AttributeDomain, labels: list[str | None]
) -> tuple[np.ndarray, list[str]]:
    block = np.zeros((len(labels), len(domain.leaves)))
    for i, label in enumerate(labels):
        covered = domain.cover(label)
        block[i, covered] = _LEAF_SCALE / len(covered)
    return block, [f"{domain.name}~{leaf}" for leaf in domain.leaves]


def encode_features(
    table: pd.DataFrame,
    domains: Mapping[str, AttributeDomain],
    *,
    categorical: Literal["onehot", "leaves"] = "onehot",
    numeric: Literal["midpoint", "bounds"] = "midpoint",
    dtype: type = np.float64,
) -> tuple[np.ndarray, list[str]]:
    """Encode the columns of ``domains`` of an original or released table as numbers.

    Parameters
    ----------
    table : DataFrame
        Original values or released labels; every column named in ``domains`` must be there.
    domains : mapping of str to AttributeDomain
        From :func:`describe_domains` on the *original* table, so both tables are read against
        the same domains and scaled alike.
    categorical : {"onehot", "leaves"}, default="onehot"
        One indicator per distinct label of ``table`` (a generalized category and ``*`` are
        categories of their own), or the expected one-hot vector over the leaves (see the
        module docstring).
    numeric : {"midpoint", "bounds"}, default="midpoint"
        A numeric range as its midpoint, or as its two bounds; scaled to ``[0, 1]``.
    dtype : numpy dtype, default=float64

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
    names : list of str
        One name per feature: ``col`` (midpoint), ``col.lo``/``col.hi`` (bounds),
        ``col=label`` (indicator), ``col~leaf`` (leaf share).

    Raises
    ------
    HierarchyError
        A label means nothing for its column (not a value, range or hierarchy label).

    Examples
    --------
    >>> from core.hierarchy import taxonomy_hierarchy
    >>> original = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["M", "F", "M", "F"]})
    >>> sex = taxonomy_hierarchy("sex", {"any": ["M", "F"]})
    >>> domains = describe_domains(original, {"age": None, "sex": sex}, numeric={"age"})
    >>> release = pd.DataFrame({"age": ["20-30", "20-30", "*"], "sex": ["any", "any", "M"]})
    >>> X, names = encode_features(release, domains)
    >>> names
    ['age', 'age=*', 'sex=M', 'sex=any']
    >>> X[:, 0].tolist()
    [0.125, 0.125, 0.5]
    """
    if categorical not in ("onehot", "leaves"):
        raise ValueError(
            "The 'categorical' parameter of encode_features must be 'onehot' or 'leaves'. "
            f"Got {categorical!r} instead."
        )
    if numeric not in ("midpoint", "bounds"):
        raise ValueError(
            "The 'numeric' parameter of encode_features must be 'midpoint' or 'bounds'. "
            f"Got {numeric!r} instead."
        )
    absent = [c for c in domains if c not in table.columns]
    if absent:
        raise ValueError(f"column(s) not in the table to encode: {absent}")
    blocks, names = [], []
    for name, domain in domains.items():
        codes, labels = factorize_labels(table[name])
        if domain.numeric:
            block, block_names = _numeric_block(domain, labels, numeric, categorical == "onehot")
        elif categorical == "onehot":
            block, block_names = _onehot_block(domain, labels)
        else:
            block, block_names = _leaves_block(domain, labels)
        blocks.append(block.astype(dtype, copy=False)[codes])
        names.extend(block_names)
    if not blocks:
        return np.zeros((len(table), 0), dtype=dtype), []
    return np.hstack(blocks), names
