"""Information loss measured on a written release, cell by cell.

Sweeney's precision (:func:`privgate.core.metrics.precision`) needs one generalization level per
column, which a local recoding such as Mondrian does not have: two records of the same column
may carry ``35-39`` and ``17-90``. This metric reads only the labels in the release, so it
scores global and local recodings, and a release read back from disk, on the same scale.

Definitions
-----------
The loss of one released cell of a quasi-identifier, between 0 (the original value) and 1
(nothing left):

* numeric attribute: ``(hi - lo) / (max - min)``, where ``lo-hi`` is the released range
  (``35-39``, a Mondrian ``17-35``, or a half-open ``[2.5, 5)``) and ``max - min`` is the range of
  the original column. A plain number costs 0. A label that is not a range is looked up in the
  hierarchy and costs the range of the original values it covers. Ranges wider than the column
  (an ARX band ``0-19`` over ages from 17) are capped at 1, the cost of ``*``.
* categorical attribute: ``(leaves(label) - 1) / (leaves - 1)``, where the leaves are the
  distinct original values of the column and ``leaves(label)`` counts those the label covers: a
  label at level ``i`` of the hierarchy covers the values whose level-``i`` label equals it (a
  text appearing at several levels covers the union, the reading a recipient cannot rule out).
  An original value costs 0.
* ``*``, a missing cell, and a record absent from the release (suppressed) cost 1, except a
  cell missing in the input too: a missing quasi-identifier cell is a value (a leaf of its
  own, counted in the domain) that stays missing below the top level and costs 0 there.

An attribute's loss is the mean over the *original* records (``n_original``), so suppressing a
record is never free; the table's loss is the mean over the quasi-identifiers and its
granularity is ``1 - loss``. This is the normalized certainty penalty of Xu et al., "Utility-
based anonymization using local recoding", KDD 2006, with suppressed records charged in full.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from privgate.core.exceptions import HierarchyError
from privgate.core.hierarchy import SUPPRESSED, Hierarchy, value_key

__all__ = ["attribute_loss", "attribute_loss_from_counts", "table_loss"]

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*-\s*({_NUMBER})\s*$")
_HALF_OPEN = re.compile(rf"^\s*\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*$")


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _parse_range(text: str) -> tuple[float, float] | None:
    """``(lo, hi)`` of a ``lo-hi`` or ``[lo, hi)`` label, or ``None``."""
    match = _RANGE.match(text) or _HALF_OPEN.match(text)
    if match is None:
        return None
    return float(match.group(1)), float(match.group(2))


def _coverage(hierarchy: Hierarchy, distinct: list[object]) -> dict[str, np.ndarray]:
    """For every label of the hierarchy table of ``distinct``: the indices of values it covers."""
    table = hierarchy.generalize(distinct)
    covered: dict[str, set[int]] = {}
    for level in range(table.shape[1]):
        for i, label in enumerate(table[:, level]):
            covered.setdefault(str(label), set()).add(i)
    return {label: np.fromiter(sorted(ix), dtype=np.int64) for label, ix in covered.items()}


def _check_alignment(original: pd.Series | pd.DataFrame, released: pd.Series | pd.DataFrame):
    if not released.index.is_unique:
        raise ValueError("The released table's index must be unique (one row per record)")
    unknown = released.index.difference(original.index)
    if len(unknown):
        raise ValueError(
            f"{len(unknown)} released row(s) have no original record with the same index "
            f"(first: {unknown[0]!r}); keep the input's index in the release"
        )
    if len(original) == 0:
        raise ValueError("The original table has no records")


def attribute_loss(
    original: pd.Series, released: pd.Series, hierarchy: Hierarchy | None, numeric: bool
) -> float:
    """Mean loss of one quasi-identifier over the original records (definitions in the module).

    Parameters
    ----------
    original : Series
        The attribute before anonymization.
    released : Series
        The same attribute in the release; rows match ``original`` by index, and an index
        missing from it is a suppressed record.
    hierarchy : Hierarchy or None
        The attribute's hierarchy. Required for categorical attributes; for numeric ones it is
        only consulted for labels that are not ranges and may be ``None``.
    numeric : bool
        Score labels as numeric ranges (``True``) or as hierarchy nodes.

    Returns
    -------
    float
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        The release has rows the original does not, or the original is empty.
    HierarchyError
        A released label is neither ``*`` nor a label of the hierarchy (or a range).

    Examples
    --------
    >>> original = pd.Series([20, 30, 40, 60])
    >>> attribute_loss(original, pd.Series(["20-30", "20-30", "40", "*"]), None, numeric=True)
    0.375
    """
    _check_alignment(original, released)
    n_original = len(original)
    present = original.dropna()
    # A cell missing in the input and in the release lost nothing (a missing quasi-identifier
    # cell is a value of its own, kept below the top level); any other missing cell costs 1.
    kept_missing = released.isna() & original.reindex(released.index).isna()
    labels, counts = _label_counts(released[~kept_missing])
    return _loss_of_labels(
        original.name,
        list(pd.unique(present)),
        n_original,
        len(present) < n_original,
        labels,
        counts,
        len(released),
        hierarchy,
        numeric,
    )


def attribute_loss_from_counts(
    name: str,
    distinct: list[object],
    n_original: int,
    has_missing: bool,
    label_counts: Mapping[str | None, int],
    n_released: int,
    hierarchy: Hierarchy | None,
    numeric: bool,
) -> float:
    """:func:`attribute_loss` from counts alone: what a path that never holds the records (the
    partitioned one: a frequency set and a plan) knows, with the same definitions.

    Parameters
    ----------
    name : str
        The attribute (for messages).
    distinct : list
        Its distinct non-missing original values.
    n_original : int
        Original records.
    has_missing : bool
        Some original cell is missing (one more leaf of the domain).
    label_counts : mapping of str or None to int
        Released cells per label; ``None`` is a missing released cell that was missing in the
        input too (it costs nothing); a released ``*`` or other missing cell is ``"*"``.
    n_released : int
        Released records (the rest were suppressed, at cost 1 each).
    hierarchy, numeric
        As for :func:`attribute_loss`.
    """
    if n_original == 0:
        raise ValueError("The original table has no records")
    by_label: dict[str, int] = {}
    for label, count in label_counts.items():
        if label is None:
            continue
        key = SUPPRESSED if pd.isna(label) else value_key(label)
        by_label[key] = by_label.get(key, 0) + int(count)
    labels = sorted(by_label)
    return _loss_of_labels(
        name,
        distinct,
        n_original,
        has_missing,
        labels,
        [by_label[label] for label in labels],
        n_released,
        hierarchy,
        numeric,
    )


def _loss_of_labels(
    name: object,
    distinct: list[object],
    n_original: int,
    has_missing: bool,
    labels: list[str],
    counts: list[int],
    n_released: int,
    hierarchy: Hierarchy | None,
    numeric: bool,
) -> float:
    """The mean cost over the original records of released ``labels`` carried by ``counts``
    cells (cells missing in input and release left out), suppressed records at 1."""
    # The missing cell is one more leaf of the domain, as in the search's encoding.
    n_leaves = len(distinct) + int(has_missing)
    coverage: dict[str, np.ndarray] = {}
    if numeric:
        distinct_values = pd.to_numeric(pd.Series(distinct, dtype=object)).to_numpy(dtype=float)
        span = float(distinct_values.max() - distinct_values.min()) if n_leaves else 0.0
        needs_lookup = any(
            label != SUPPRESSED and _as_number(label) is None and _parse_range(label) is None
            for label in labels
        )
        if needs_lookup and hierarchy is not None:
            coverage = _coverage(hierarchy, distinct)
    elif hierarchy is None:
        raise ValueError(f"categorical attribute {name!r} needs a hierarchy")
    else:
        coverage = _coverage(hierarchy, distinct)

    total = float(n_original - n_released)  # suppressed records cost 1 each
    for label, count in zip(labels, counts, strict=True):
        if label == SUPPRESSED:
            cost = 1.0
        elif numeric:
            cost = _numeric_cost(label, span, coverage, distinct_values, name)
        else:
            covered = coverage.get(label)
            if covered is None:
                raise HierarchyError(
                    f"column {name!r}: released label {label!r} is not a label of its "
                    "hierarchy (over the column's original values)"
                )
            cost = (len(covered) - 1) / (n_leaves - 1) if n_leaves > 1 else 0.0
        total += cost * int(count)
    return total / n_original


def _label_counts(cells: pd.Series) -> tuple[list[str], list[int]]:
    """The released labels (a missing cell as ``*``) and how many cells carry each, in sorted
    label order.

    The cells are counted by a hash table first and only each distinct cell is turned into its
    label: on a release of millions of rows with a few dozen labels per column this is a pass
    in C instead of a Python call and an object sort per cell. Cells equal as Python values
    (``39``, ``39.0``) have one label under :func:`value_key`, so counting them together first
    changes nothing.
    """
    by_label: dict[str, int] = {}
    for cell, count in cells.value_counts(dropna=False, sort=False).items():
        label = SUPPRESSED if pd.isna(cell) else value_key(cell)
        by_label[label] = by_label.get(label, 0) + int(count)
    labels = sorted(by_label)
    return labels, [by_label[label] for label in labels]


def _numeric_cost(
    label: str,
    span: float,
    coverage: Mapping[str, np.ndarray],
    distinct_values: np.ndarray,
    column: object,
) -> float:
    """Cost of one numeric label; ``coverage`` resolves labels that are not ranges."""
    number = _as_number(label)
    if number is not None:
        return 1.0 if math.isnan(number) else 0.0  # a 'nan' cell is a missing one
    bounds = _parse_range(label)
    if bounds is None:
        covered = coverage.get(label)
        if covered is not None:
            chosen = distinct_values[covered]
            bounds = float(chosen.min()), float(chosen.max())
        else:
            raise HierarchyError(
                f"column {column!r}: released label {label!r} is neither a number, a range "
                "'lo-hi' or '[lo, hi)', nor a label of its hierarchy"
            )
    if span <= 0:
        return 0.0
    return min(max(bounds[1] - bounds[0], 0.0) / span, 1.0)


def table_loss(
    original: pd.DataFrame,
    released: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy | None],
    numeric: set[str],
) -> dict:
    """Information loss of a release over its quasi-identifiers (definitions in the module).

    Parameters
    ----------
    original : DataFrame
        The input before anonymization.
    released : DataFrame
        The release, rows matching ``original`` by index; missing indices are suppressed
        records. Works for full-domain (Datafly) and local (Mondrian) recodings alike.
    hierarchies : mapping of str to Hierarchy or None
        One entry per quasi-identifier; ``None`` is allowed for numeric ones.
    numeric : set of str
        The quasi-identifiers scored as numeric ranges.

    Returns
    -------
    dict
        ``per_attribute`` (QI -> loss), ``total`` (mean over the QIs), ``granularity``
        (``1 - total``), ``n_original`` and ``n_suppressed``.

    Examples
    --------
    >>> from core.hierarchy import taxonomy_hierarchy
    >>> original = pd.DataFrame({"age": [20, 30, 40, 60], "sex": ["M", "F", "M", "F"]})
    >>> release = pd.DataFrame({"age": ["20-30", "20-30", "40-60"], "sex": ["*", "*", "M"]})
    >>> sex = taxonomy_hierarchy("sex", {"any": ["M", "F"]})
    >>> table_loss(original, release, {"age": None, "sex": sex}, {"age"})["per_attribute"]
    {'age': 0.5, 'sex': 0.75}
    """
    unknown = sorted(set(numeric) - set(hierarchies))
    if unknown:
        raise ValueError(
            "The 'numeric' parameter of table_loss must be a subset of the quasi-identifiers "
            f"{list(hierarchies)}. Got {sorted(numeric)} instead."
        )
    if not hierarchies:
        raise ValueError("The 'hierarchies' parameter of table_loss must name at least one QI")
    _check_alignment(original, released)
    per_attribute = {
        q: attribute_loss(original[q], released[q], h, numeric=q in numeric)
        for q, h in hierarchies.items()
    }
    total = float(np.mean(list(per_attribute.values())))
    return {
        "per_attribute": per_attribute,
        "total": total,
        "granularity": 1.0 - total,
        "n_original": len(original),
        "n_suppressed": len(original) - len(released),
    }
