"""Greedy Hamdist: the k-anonymous feature-selection baseline RFKA is compared with (issue #5).

Source. Greedy selection by Hamming distance comes from the literature on feature selection
under a k-anonymity constraint for classification (B. Zhang, N. Mohammed, V. Dave and
M. Al Hasan, "Feature Selection for Classification under Anonymity Constraint", Transactions
on Data Privacy, 2017, arXiv:1512.07158, which works on binary data). It is implemented here as
issue #5 specifies it, not as a port of that paper's code:

1. the table is one-hot binarized (:func:`binarize`: one 0/1 feature ``"column=value"`` per
   value of every attribute);
2. starting from no feature, greedily add the binary feature that most increases the total
   Hamming distance between records of *different* classes, as long as the table projected
   on the features kept stays k-anonymous.

The idea: a feature that separates records of different labels makes the released projection
useful to a classifier, and the Hamming distance between differently labelled records counts
exactly those separations.

Why one sorted pass is the greedy algorithm. The Hamming distance is a sum over features, so
the total distance of a feature set is the sum of each feature's own contribution (its *gain*),
independent of the other features chosen. And adding a feature only splits classes, so a
feature that breaks k-anonymity now breaks it after any later addition too. Hence "add the
feasible feature of largest gain, repeat" equals "examine features in decreasing gain, keep
each one that leaves the projection k-anonymous". Ties keep the binarized column order; a
feature of zero gain (it separates no differently labelled pair) increases nothing and is
not added.

Gain of a feature ``f`` in ``O(classes)``, no ``n x n`` matrix. With ``o_c`` / ``z_c`` the
numbers of records of class ``c`` with ``f = 1`` / ``f = 0``, the pairs of records of classes
``a != b`` that differ on ``f`` number ``o_a z_b + z_a o_b``; summed over unordered class
pairs this is ``sum_{a != b} o_a z_b = O Z - sum_c o_c z_c`` with ``O``, ``Z`` the totals.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from privgate.core.anonymize._rfka import FeatureSelection, check_columns, select_in_order
from privgate.core.anonymize._setup import check_k
from privgate.core.exceptions import AnonymizationError

__all__ = ["MISSING_LABEL", "binarize", "greedy_hamdist_select", "hamming_gain"]

#: How a missing value is spelled in a binary feature's name (``"workclass=<NA>"``).
MISSING_LABEL = "<NA>"


def binarize(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """One-hot encode attributes into 0/1 features named ``"column=value"``.

    Parameters
    ----------
    frame : pandas.DataFrame
    columns : sequence of str, optional
        Attributes to encode, in the order their features appear (default: all columns).
        Within a column, features follow the sorted values; a missing value gets a feature of
        its own, ``"column=<NA>"``, so it counts as a value as in :func:`rfka_select`.

    Returns
    -------
    pandas.DataFrame
        ``uint8`` columns, same index as ``frame``; each row has exactly one 1 per attribute.

    Raises
    ------
    core.exceptions.AnonymizationError
        If a column is missing or repeated, or two features would get the same name.
    """
    names = check_columns(frame, frame.columns if columns is None else columns, "binarize")
    blocks: dict[str, np.ndarray] = {}
    for name in names:
        codes, uniques = pd.factorize(frame[name], sort=True)
        labels = [str(value) for value in uniques]
        if (codes < 0).any():  # missing values: one feature of their own, after the values
            codes = np.where(codes < 0, len(labels), codes)
            labels.append(MISSING_LABEL)
        onehot = np.eye(len(labels), dtype=np.uint8)[codes]
        for position, label in enumerate(labels):
            feature = f"{name}={label}"
            if feature in blocks:
                raise AnonymizationError(
                    f"binarize: feature name {feature!r} would be produced twice (column "
                    f"{name!r} has two values that print as {label!r})"
                )
            blocks[feature] = onehot[:, position]
    return pd.DataFrame(blocks, index=frame.index, dtype=np.uint8)


def _binary_matrix(binary: pd.DataFrame) -> np.ndarray:
    values = binary.to_numpy()
    if values.dtype == bool:
        return values.astype(np.uint8)
    if not np.issubdtype(values.dtype, np.number):
        raise AnonymizationError("greedy_hamdist: the binary table must be numeric or boolean")
    bad = ~np.isin(values, (0, 1))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise AnonymizationError(
            f"greedy_hamdist: feature {binary.columns[col]!r} is not binary: "
            f"{values[row, col].item()!r} in row {binary.index[row]!r}"
        )
    return values.astype(np.uint8)


def _label_codes(labels: Sequence | pd.Series | np.ndarray, n_rows: int) -> np.ndarray:
    series = pd.Series(np.asarray(labels) if not isinstance(labels, pd.Series) else labels)
    if len(series) != n_rows:
        raise AnonymizationError(
            f"greedy_hamdist: {len(series)} labels for a table of {n_rows} rows"
        )
    if series.isna().any():
        position = int(np.flatnonzero(series.isna().to_numpy())[0])
        raise AnonymizationError(f"greedy_hamdist: label missing at position {position}")
    codes, _ = pd.factorize(series)
    return codes.astype(np.int64, copy=False)


def hamming_gain(binary: pd.DataFrame, labels: Sequence | pd.Series | np.ndarray) -> pd.Series:
    """Each binary feature's contribution to the Hamming distance between differently labelled
    records.

    Parameters
    ----------
    binary : pandas.DataFrame
        0/1 (or boolean) features.
    labels : array-like, length ``len(binary)``
        The class of each record (any hashable values, no missing one).

    Returns
    -------
    pandas.Series
        Integer gain per feature, indexed like ``binary.columns``: the number of unordered
        pairs of records with different labels whose values of the feature differ.

    Notes
    -----
    Computed from per-class counts (``O Z - sum_c o_c z_c``, see the module docstring):
    ``O(rows x features)`` for the counts plus ``O(classes x features)``.
    """
    gain = _gain(_binary_matrix(binary), _label_codes(labels, len(binary)))
    return pd.Series(gain, index=binary.columns, dtype=np.int64, name="hamming_gain")


def _gain(matrix: np.ndarray, codes: np.ndarray) -> np.ndarray:
    n_classes = int(codes.max()) + 1 if len(codes) else 0
    ones = np.zeros((n_classes, matrix.shape[1]), dtype=np.int64)
    np.add.at(ones, codes, matrix)
    sizes = np.bincount(codes, minlength=n_classes).astype(np.int64)[:, None]
    zeros = sizes - ones
    return ones.sum(axis=0) * zeros.sum(axis=0) - (ones * zeros).sum(axis=0)


def greedy_hamdist_select(
    binary: pd.DataFrame, labels: Sequence | pd.Series | np.ndarray, k: int
) -> FeatureSelection:
    """Greedy Hamdist: add binary features by Hamming gain while the projection stays k-anonymous.

    Parameters
    ----------
    binary : pandas.DataFrame
        0/1 (or boolean) features, typically :func:`binarize`'s output.
    labels : array-like
        The class of each record.
    k : int

    Returns
    -------
    FeatureSelection
        ``kept`` are binary feature names in the order added (decreasing gain); every step
        carries the feature's ``gain``; ``seconds`` includes computing the gains.

    Raises
    ------
    core.exceptions.AnonymizationError
        If ``k`` is not an integer >= 1 or exceeds the rows, a feature is not binary, or the
        labels are missing or of the wrong length.
    """
    started = time.perf_counter()
    check_k(k, len(binary))
    matrix = _binary_matrix(binary)
    gain = _gain(matrix, _label_codes(labels, len(binary)))
    # Stable sort: equal gains keep the binarized column order.
    ranked = np.argsort(-gain, kind="stable")
    candidates = (
        (
            str(binary.columns[j]),
            matrix[:, j].astype(np.int64),
            2,
            {"gain": int(gain[j]), "skip": "no gain" if gain[j] <= 0 else None},
        )
        for j in ranked
    )
    kept, rejected, steps, smallest = select_in_order(candidates, len(binary), k)
    return FeatureSelection(
        algorithm="greedy_hamdist",
        kept=kept,
        rejected=rejected,
        steps=steps,
        k=int(k),
        smallest_class=smallest,
        seconds=time.perf_counter() - started,
    )
