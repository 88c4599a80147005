"""t-closeness of a sensitive column (Li, Li and Venkatasubramanian, ICDE 2007).

The distance between a class's distribution of ``column`` and the whole table's is the Earth
Mover's Distance under one of two ground distances:

* ``equal``: every pair of distinct values is at distance 1, so EMD = total variation
  = ``0.5 * sum_i |p_i - q_i|`` (for categorical values);
* ``ordered``: values sorted, adjacent values at distance ``1/(m-1)``, so
  EMD = ``1/(m-1) * sum_i |sum_{j<=i} (p_j - q_j)|`` (for numeric values);
* ``hierarchical``: two values are at distance ``level(lowest common ancestor) / H`` in the
  column's hierarchy of height ``H``, and the EMD is computed bottom-up: a node's *extra* is
  the sum of its children's ``p - q``; moving mass between its children costs
  ``level(node) / H`` times ``min(positive extras, negative extras)`` of those children
  (Li, Li, Venkatasubramanian, section 4.2).

Not monotone in general under suppression, but monotone under generalization for both ground
distances (merging classes gives a mixture, and EMD to a fixed distribution is convex).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from privgate.core.encoding import ClassStats
from privgate.core.privacy._base import PrivacyModel

_T_TOLERANCE = 1e-12


def class_distances(
    hist: np.ndarray, overall: np.ndarray, distance: Literal["equal", "ordered"]
) -> np.ndarray:
    """EMD of each row distribution of ``hist`` to ``overall`` (columns in value order)."""
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    diff = p - overall[None, :]
    m = hist.shape[1]
    if distance == "equal":
        return 0.5 * np.abs(diff).sum(axis=1)
    if m < 2:
        return np.zeros(hist.shape[0])
    return np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / (m - 1)


def _value_order(values: np.ndarray) -> np.ndarray:
    """Column permutation that sorts sensitive values numerically when they are numbers."""
    try:
        keys = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        keys = np.array([str(v) for v in values], dtype=object)
    return np.argsort(keys, kind="stable")


def hierarchical_distances(hist: np.ndarray, overall: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Hierarchical EMD of each row distribution of ``hist`` to ``overall``.

    ``labels`` has shape (n_values, H + 1): column ``l`` is each value's level-``l`` ancestor
    (column 0 the value itself, column ``H`` the root).
    """
    sizes = hist.sum(axis=1, keepdims=True)
    p = np.divide(hist, sizes, out=np.zeros(hist.shape, dtype=float), where=sizes > 0)
    extra = p - overall[None, :]  # extras of the level-0 nodes (the values)
    node_of = np.arange(labels.shape[0])  # each value's level-0 node id
    height = labels.shape[1] - 1
    cost = np.zeros(hist.shape[0])
    for level in range(1, height + 1):
        # Parent (level-l node) of every level-(l-1) node.
        parent_codes, parent_of_value = np.unique(labels[:, level], return_inverse=True)
        n_children = int(node_of.max()) + 1
        parent_of_child = np.zeros(n_children, dtype=np.int64)
        parent_of_child[node_of] = parent_of_value.reshape(-1)
        positive = np.zeros((hist.shape[0], len(parent_codes)))
        negative = np.zeros((hist.shape[0], len(parent_codes)))
        for child in range(n_children):
            e = extra[:, child]
            positive[:, parent_of_child[child]] += np.maximum(e, 0.0)
            negative[:, parent_of_child[child]] += np.maximum(-e, 0.0)
        cost += (level / height) * np.minimum(positive, negative).sum(axis=1)
        extra = positive - negative
        node_of = parent_of_value.reshape(-1)
    return cost


class TCloseness(PrivacyModel):
    """Each class's distribution of ``column`` is within EMD ``t`` of the table's.

    The table's distribution is the input's (``ClassStats.overall``; the gate receives it as
    its ``reference``), so suppression changes no class's distance. With a person key, both
    distributions weigh each person 1, split over their records (in the class, and in the
    whole input): :func:`privgate.core.privacy.person_class_stats`.

    ``hierarchy`` (a :class:`privgate.core.hierarchy.Hierarchy` of the sensitive column) is required
    for the hierarchical distance and ignored otherwise.
    """

    monotonic_with_suppression: ClassVar[bool] = False

    model_config = {"arbitrary_types_allowed": True}

    column: str
    t: float = Field(gt=0, le=1)
    distance: Literal["equal", "ordered", "hierarchical"] = "equal"
    hierarchy: Any = Field(default=None, exclude=True, repr=False)

    @model_validator(mode="after")
    def _hierarchy_for_hierarchical(self) -> TCloseness:
        if self.distance == "hierarchical" and self.hierarchy is None:
            raise ValueError(
                f"hierarchical t-closeness of {self.column!r} needs the column's hierarchy"
            )
        return self

    def _distances(self, stats: ClassStats) -> np.ndarray:
        hist, overall = stats.histograms[self.column], stats.overall[self.column]
        if self.distance == "ordered":
            order = _value_order(stats.ordered_values[self.column])
            hist, overall = hist[:, order], overall[order]
        if self.distance == "hierarchical":
            labels = self.hierarchy.generalize(list(stats.ordered_values[self.column]))
            return hierarchical_distances(hist, overall, labels)
        return class_distances(hist, overall, self.distance)

    def satisfied_by(self, stats: ClassStats) -> np.ndarray:
        return self._distances(stats) <= self.t + _T_TOLERANCE

    def achieved(self, stats: ClassStats) -> float:
        d = self._distances(stats)
        return float(d.max()) if len(d) else 0.0

    def holds(self, achieved: float) -> bool:
        return achieved <= self.t + _T_TOLERANCE

    def __str__(self) -> str:
        return f"{self.t:g}-closeness({self.column}, {self.distance} distance)"
