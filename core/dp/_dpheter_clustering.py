"""Clustering for DPHeter: the data owner's class labels, and the release clustered the same way.

Evaluation protocol (Fung et al., DKE 2009; DPHeter): the data owner clusters the original
records (:func:`cluster_class_labels`); those labels are the class DPHeter specializes for. A
recipient clusters the release the same way (:func:`cluster_release`), and the two clusterings of
the *original records* are compared with F-measure and MatchPoint
(:func:`privgate.core.utility.f_measure`, :func:`privgate.core.utility.match_point`).

Both tables live in one feature space, the one :func:`core.utility.encode_features` builds with
``categorical="leaves"`` (read its module docstring): a categorical value is the expected one-hot
vector over the original values its label covers, a numeric value its range's midpoint scaled to
``[0, 1]`` by the original's range. A set-valued cell adds one block over its items: an original
set ``{a, b}`` puts ``1/2`` on ``a`` and on ``b``; a released set of taxonomy nodes puts
``1 / |set|`` on each node, spread evenly over the items under it (every block scaled by
``1/sqrt(2)`` like the categorical leaves). A released label that covers no original value (a
partition that exists only through noise) is encoded as uninformative as ``*``.

Mapping records to the release: every original record lies in exactly one leaf partition of the
final cuts (:meth:`~core.dp.dpheter.DPHeterResult.partition_index`); it gets the cluster that the
release's clustering assigns to that partition. The release is clustered as the microdata it
stands for (each partition repeated ``count`` times, see ``expand``), computed without
materializing the copies: k-means and bisecting k-means run on the partitions with their noisy
counts as sample weights, which is the same objective. Partitions with count 0 carry no weight;
if original records fall in one, it still gets the label of its nearest centre.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from privgate.core.dp.heterogeneous import as_item_set
from privgate.core.utility import (
    AttributeDomain,
    cluster_labels,
    describe_domains,
    encode_features,
)


class _PartitionedRelease(Protocol):
    """What the clustering reads of a :class:`privgate.core.dp.dpheter.DPHeterResult`
    (declared here, not imported: the algorithm's module imports this one)."""

    cuts: dict
    attributes: Sequence[str]
    table: pd.DataFrame
    _routers: Any

    def partition_index(self, frame: pd.DataFrame) -> np.ndarray: ...


__all__ = ["cluster_class_labels", "cluster_release"]

_LEAF_SCALE = 1.0 / math.sqrt(2.0)
_METHODS = {
    "kmeans": "kmeans",
    "bisecting": "bisecting_kmeans",
    "bisecting_kmeans": "bisecting_kmeans",
}


def _method(method: str) -> str:
    try:
        return _METHODS[method]
    except KeyError:
        raise ValueError(
            f"The 'method' parameter must be one of {sorted(_METHODS)}. Got {method!r} instead."
        ) from None


def _is_set_column(column: pd.Series) -> bool:
    first = column.dropna()
    return bool(len(first)) and isinstance(first.iloc[0], frozenset | set | list | tuple)


class _Space:
    """The shared feature space of an original table's columns."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str], kinds: dict[str, str]) -> None:
        self.columns = list(columns)
        self.kinds = kinds
        plain = [c for c in self.columns if kinds[c] != "set-valued"]
        numeric = [c for c in plain if kinds[c] == "numeric"]
        self.domains: dict[str, AttributeDomain] = describe_domains(
            frame, {c: None for c in plain}, numeric
        )
        self.items: dict[str, list[str]] = {}
        for c in self.columns:
            if kinds[c] == "set-valued":
                cells = frame[c].tolist()
                self.items[c] = sorted(
                    {item for i, cell in enumerate(cells) for item in as_item_set(cell, c, i)}
                )

    def encode_original(self, frame: pd.DataFrame) -> np.ndarray:
        X, _ = encode_features(frame, self.domains, categorical="leaves", dtype=np.float32)
        blocks = [X]
        for c, items in self.items.items():
            index = {item: i for i, item in enumerate(items)}
            block = np.zeros((len(frame), len(items)), dtype=np.float32)
            for row, cell in enumerate(frame[c].tolist()):
                chosen = [index[item] for item in as_item_set(cell, c, row) if item in index]
                if chosen:
                    block[row, chosen] = _LEAF_SCALE / len(chosen)
                else:
                    block[row, :] = _LEAF_SCALE / len(items)
            blocks.append(block)
        return np.hstack(blocks)

    def encode_release(self, result: _PartitionedRelease) -> tuple[list[np.ndarray], list[str]]:
        """One block per released attribute: a row per element of its final cut."""
        routers = dict(result._routers)
        blocks, names = [], []
        order = [c for c in self.columns if self.kinds[c] != "set-valued"] + list(self.items)
        for c in order:
            router = routers[c]
            size = len(result.cuts[c]["values"])
            if self.kinds[c] == "numeric":
                domain = self.domains[c]
                span = domain.high - domain.low
                block = np.zeros((size, 1), dtype=np.float32)
                for p in range(size):
                    lo, hi = router.bounds(p)
                    lo = min(max(lo, domain.low), domain.high)
                    hi = min(max(hi, domain.low), domain.high)
                    block[p, 0] = ((lo + hi) / 2 - domain.low) / span if span > 0 else 0.0
            elif self.kinds[c] == "categorical":
                leaves = list(self.domains[c].leaves)
                block = np.zeros((size, len(leaves)), dtype=np.float32)
                for p in range(size):
                    block[p] = _spread(leaves, router.leaf_labels(p))
            else:
                leaves = self.items[c]
                block = np.zeros((size, len(leaves)), dtype=np.float32)
                for p in range(size):
                    nodes = router.leaf_labels(p)
                    for under in nodes:
                        block[p] += _spread(leaves, under) / len(nodes)
            blocks.append(block)
            names.append(c)
        return blocks, names


def _spread(leaves: list[str], covered: Sequence[str]) -> np.ndarray:
    """``1/sqrt(2)`` spread evenly over the observed leaves in ``covered`` (all if none)."""
    wanted = set(covered)
    hit = np.array([leaf in wanted for leaf in leaves])
    if not hit.any():
        hit[:] = True
    return np.where(hit, _LEAF_SCALE / hit.sum(), 0.0).astype(np.float32)


def _kinds(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, str]:
    kinds = {}
    for c in columns:
        if _is_set_column(frame[c]):
            kinds[c] = "set-valued"
        elif pd.api.types.is_numeric_dtype(frame[c].dtype):
            kinds[c] = "numeric"
        else:
            kinds[c] = "categorical"
    return kinds


def cluster_class_labels(
    frame: pd.DataFrame,
    columns: Sequence[str],
    n_clusters: int,
    method: str = "kmeans",
    seed: int = 0,
) -> np.ndarray:
    """The data owner's cluster label of every original record: DPHeter's class attribute.

    Numeric columns (numeric dtype) are scaled to ``[0, 1]``, categorical ones one-hot over
    their values, set-valued ones (cells are sets) spread over their items; then
    :func:`privgate.core.utility.cluster_labels` runs (``KMeans(n_init=10, random_state=seed)`` or
    ``BisectingKMeans(random_state=seed)``).

    Parameters
    ----------
    frame : DataFrame
        The original records.
    columns : sequence of str
        The attributes to cluster on (the ones the release will hold).
    n_clusters : int
        Number of clusters (>= 2).
    method : {"kmeans", "bisecting"}, default="kmeans"
        ``"bisecting_kmeans"`` is accepted as well.
    seed : int, default=0

    Returns
    -------
    ndarray of int, shape (len(frame),)
    """
    method = _method(method)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"column(s) {missing} not in the table")
    space = _Space(frame, columns, _kinds(frame, columns))
    return np.asarray(cluster_labels(space.encode_original(frame), n_clusters, method, seed))


def cluster_release(
    result: _PartitionedRelease,
    frame: pd.DataFrame,
    n_clusters: int,
    method: str = "kmeans",
    seed: int = 0,
) -> np.ndarray:
    """The cluster of every original record under the release's clustering.

    The release is clustered like the original (same feature space, same estimator and seed;
    partitions weighted by their noisy counts), and every record of ``frame`` takes the cluster
    of its leaf partition (see the module docstring).

    Parameters
    ----------
    result : DPHeterResult
    frame : DataFrame
        The original records the release was made from (its domains define the feature space,
        as in :func:`cluster_class_labels`).
    n_clusters : int
    method : {"kmeans", "bisecting"}, default="kmeans"
    seed : int, default=0

    Returns
    -------
    ndarray of int, shape (len(frame),)
        Compare with :func:`cluster_class_labels` by :func:`privgate.core.utility.f_measure` and
        :func:`privgate.core.utility.match_point`.
    """
    from sklearn.cluster import BisectingKMeans, KMeans

    method = _method(method)
    kinds = {name: cut["kind"] for name, cut in result.cuts.items()}
    columns = list(result.attributes)
    space = _Space(frame, columns, kinds)
    blocks, names = space.encode_release(result)
    sizes = tuple(len(result.cuts[c]["values"]) for c in columns)
    record_partition = result.partition_index(frame)
    weights = result.table["count"].to_numpy(dtype=float)
    weighted = np.flatnonzero(weights > 0)
    needed, record_slot = np.unique(record_partition, return_inverse=True)

    def features(partitions: np.ndarray) -> np.ndarray:
        grid = np.unravel_index(partitions, sizes)
        where = dict(zip(columns, grid, strict=True))
        return np.hstack([block[where[name]] for block, name in zip(blocks, names, strict=True)])

    if len(weighted) < 2:
        return np.zeros(len(frame), dtype=np.int64)
    k = min(int(n_clusters), len(weighted))
    if method == "kmeans":
        model = KMeans(n_clusters=k, n_init=10, random_state=seed)
    else:
        model = BisectingKMeans(n_clusters=k, random_state=seed)
    model.fit(features(weighted), sample_weight=weights[weighted])
    labels = model.predict(features(needed))
    return np.asarray(labels, dtype=np.int64)[record_slot.reshape(-1)]
