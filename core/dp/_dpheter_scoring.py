"""The score of a specialization: information gain (or Max) with respect to the class.

DiffGen (Mohammed, Chen, Fung, Yu, KDD 2011, Sec. 4) scores the specialization of a cut value
``v`` into its children ``c`` by

    InfoGain(D, v) = H(D_v) - sum_c |D_c| / |D_v| * H(D_c),

where ``D_v`` are the records generalized to ``v`` and ``H`` is the Shannon entropy (bits) of
the class distribution. Every term lies in ``[0, log2 |classes|]``, so adding or removing one
record moves the score by at most ``log2 |classes|``: that is the sensitivity the exponential
mechanism is calibrated with (:func:`info_gain_sensitivity`).

The alternative score, ``"max"``, is DiffGen's Max made relative to the parent: the number of
records a majority vote classifies correctly after the specialization minus before it,
``sum_c max_cls |D_c^cls| - max_cls |D_v^cls|``. One record raises each of the two terms by 0
or 1, so the score moves by at most 1 (sensitivity 1); it is measured in records, so on a large
table the exponential mechanism separates good and bad candidates far more sharply than with
the information gain, whose range is only ``log2 |classes|`` whatever the table's size.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "SCORES",
    "entropy_rows",
    "info_gain",
    "info_gain_sensitivity",
    "max_gain",
    "score_children",
    "score_sensitivity",
    "split_gains",
    "split_scores",
]

#: Score functions by name.
SCORES = ("info_gain", "max")


def entropy_rows(counts: np.ndarray) -> np.ndarray:
    """The class entropy (bits) of every row of a ``(groups, classes)`` count matrix.

    An empty row has entropy 0.
    """
    counts = np.asarray(counts, dtype=float)
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(totals > 0, counts / totals, 0.0)
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=1)


def info_gain(children: np.ndarray) -> float:
    """Information gain of splitting the union of ``children`` into them.

    Parameters
    ----------
    children : ndarray of shape (n_children, n_classes)
        Class counts of each child; the parent is their sum.

    Returns
    -------
    float
        In ``[0, log2 n_classes]``; 0 for an empty parent.
    """
    children = np.asarray(children, dtype=float)
    parent = children.sum(axis=0, keepdims=True)
    total = float(parent.sum())
    if total <= 0:
        return 0.0
    sizes = children.sum(axis=1)
    gain = float(entropy_rows(parent)[0] - (sizes / total) @ entropy_rows(children))
    return max(gain, 0.0)  # rounding can give -1e-16


def split_gains(cells: np.ndarray) -> np.ndarray:
    """Information gain of splitting a run of cells at each of its inner boundaries.

    Parameters
    ----------
    cells : ndarray of shape (n_cells, n_classes)
        Class counts per cell of a numeric interval, in order.

    Returns
    -------
    ndarray of shape (n_cells - 1,)
        Entry ``k`` is the gain of the split into cells ``[0, k]`` and ``[k + 1, n_cells)``.
    """
    cells = np.asarray(cells, dtype=float)
    if len(cells) < 2:
        return np.zeros(0)
    left = np.cumsum(cells, axis=0)[:-1]
    total = cells.sum(axis=0, keepdims=True)
    right = total - left
    n = float(total.sum())
    if n <= 0:
        return np.zeros(len(cells) - 1)
    left_n, right_n = left.sum(axis=1), right.sum(axis=1)
    gains = (
        entropy_rows(total)[0]
        - (left_n / n) * entropy_rows(left)
        - (right_n / n) * entropy_rows(right)
    )
    return np.maximum(gains, 0.0)


def info_gain_sensitivity(n_classes: int) -> float:
    """``log2(n_classes)``: the range, hence the sensitivity, of the information gain."""
    return math.log2(n_classes)


def max_gain(children: np.ndarray) -> float:
    """Records a majority vote gets right after splitting into ``children`` minus before."""
    children = np.asarray(children, dtype=float)
    return float(children.max(axis=1).sum() - children.sum(axis=0).max())


def split_max_gains(cells: np.ndarray) -> np.ndarray:
    """:func:`max_gain` of splitting a run of cells at each inner boundary (see split_gains)."""
    cells = np.asarray(cells, dtype=float)
    if len(cells) < 2:
        return np.zeros(0)
    left = np.cumsum(cells, axis=0)[:-1]
    total = cells.sum(axis=0, keepdims=True)
    return left.max(axis=1) + (total - left).max(axis=1) - total.max()


def score_children(children: np.ndarray, score: str) -> float:
    """The ``score`` (``"info_gain"`` or ``"max"``) of a specialization into ``children``."""
    return info_gain(children) if score == "info_gain" else max_gain(children)


def split_scores(cells: np.ndarray, score: str) -> np.ndarray:
    """The ``score`` of every split point of a run of cells."""
    return split_gains(cells) if score == "info_gain" else split_max_gains(cells)


def score_sensitivity(score: str, n_classes: int) -> float:
    """``log2(n_classes)`` for the information gain, 1 for the max score."""
    return info_gain_sensitivity(n_classes) if score == "info_gain" else 1.0
