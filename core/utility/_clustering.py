"""Clustering utility: cluster the original and the release, then compare the clusterings.

Both tables are encoded into the same space with the expected one-hot encoding over leaves and
scaled numeric midpoints (``categorical="leaves"`` in :func:`~core.utility.encode_features`),
whose squared Euclidean distance is the expected squared distance between records whose values
are uniform under their labels. k-means (``KMeans(n_init=10, random_state=seed)``) or bisecting
k-means (``BisectingKMeans(random_state=seed)``) then runs on each table with the same number
of clusters and seed, and the two labelings of the original records are compared:

F-measure
    For every original cluster ``C_i``, the best F score ``2 |C_i & A_j| / (|C_i| + |A_j|)``
    over the release's clusters ``A_j`` (the harmonic mean of precision and recall), averaged
    with weights ``|C_i| / n``. B. Larsen, C. Aone, "Fast and effective text mining using
    linear-time document clustering", KDD 1999; used for anonymized data by B. Fung, K. Wang,
    L. Wang, P. Hung, "Privacy-preserving data publishing for cluster analysis", DKE 68(6),
    2009.
MatchPoint
    The share of ordered record pairs ``(r, s)`` (``n^2`` of them, ``r = s`` included) on which
    both clusterings agree about "same cluster / different cluster" (Fung et al., 2009). With
    the contingency table ``n_ij`` (row sums ``a_i``, column sums ``b_j``), the pairs on which
    they disagree number ``sum a_i^2 + sum b_j^2 - 2 sum n_ij^2``, so MatchPoint is computed in
    ``O(n + cells)`` and never builds the ``n x n`` matrices of the paper; a million records
    take a fraction of a second. It is Rand's index counted over ordered pairs with the
    diagonal: ``MP = (n + (n^2 - n) * Rand) / n^2``.

A suppressed record has no cluster in the release. It counts against the release: it belongs to
no ``A_j`` (it lowers the recall of its original cluster), and every pair that contains it
counts as a disagreement. Without suppression both measures are exactly the published ones; a
release identical to its original scores 1 on both.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from privgate.core.utility._encoding import AttributeDomain, encode_features

__all__ = [
    "CLUSTERINGS",
    "ClusteringScore",
    "ClusteringUtility",
    "cluster_labels",
    "clustering_utility",
    "f_measure",
    "match_point",
]

#: Clustering methods by policy name.
CLUSTERINGS = ("kmeans", "bisecting_kmeans")


# ------------------------------------------------------------------------------------------------
# Comparing two clusterings


def _contingency(
    labels_true: np.ndarray, labels_pred: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Sparse contingency table of the records the release kept, plus the true row sums.

    Returns ``(rows, columns, cells, true_sizes, n)``: the nonzero cells ``n_ij`` with their
    row (original cluster) and column (release cluster) indices, every original cluster's size
    over all records, and the number of records.
    """
    labels_true = np.asarray(labels_true).reshape(-1)
    labels_pred = np.asarray(labels_pred).reshape(-1)
    if labels_true.shape != labels_pred.shape:
        raise ValueError(
            f"The two labelings must have the same length. Got {len(labels_true)} and "
            f"{len(labels_pred)}."
        )
    n = len(labels_true)
    if n == 0:
        raise ValueError("The labelings are empty")
    _, true_codes = np.unique(labels_true, return_inverse=True)
    true_codes = true_codes.reshape(-1).astype(np.int64)
    true_sizes = np.bincount(true_codes).astype(np.int64)
    kept = labels_pred >= 0
    if not kept.any():
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, true_sizes, n
    _, pred_codes = np.unique(labels_pred[kept], return_inverse=True)
    pred_codes = pred_codes.reshape(-1).astype(np.int64)
    n_pred = int(pred_codes.max()) + 1
    cells, counts = np.unique(true_codes[kept] * n_pred + pred_codes, return_counts=True)
    return cells // n_pred, cells % n_pred, counts.astype(np.int64), true_sizes, n


def f_measure(labels_true: Sequence[int], labels_pred: Sequence[int]) -> float:
    """Size-weighted best-match F score of a clustering against a reference one.

    Parameters
    ----------
    labels_true : array-like of int, shape (n,)
        The reference clustering (of the original records).
    labels_pred : array-like of int, shape (n,)
        The compared clustering of the same records; a negative label marks a record without a
        cluster (suppressed from the release).

    Returns
    -------
    float
        In ``[0, 1]``; 1 when the two clusterings are equal up to the names of the clusters.

    Examples
    --------
    >>> f_measure([0, 0, 1, 1], [5, 5, 7, 7])
    1.0
    >>> round(f_measure([0, 0, 1, 1], [0, 1, 1, 1]), 4)
    0.7333
    """
    rows, cols, cells, true_sizes, n = _contingency(
        np.asarray(labels_true), np.asarray(labels_pred)
    )
    if len(cells) == 0:
        return 0.0
    pred_sizes = np.bincount(cols, weights=cells).astype(float)
    scores = 2.0 * cells / (true_sizes[rows] + pred_sizes[cols])
    best = np.zeros(len(true_sizes))
    np.maximum.at(best, rows, scores)
    return float(true_sizes @ best / n)


def match_point(labels_true: Sequence[int], labels_pred: Sequence[int]) -> float:
    """Share of ordered record pairs on which two clusterings agree (same / different cluster).

    Computed from the contingency table in ``O(n + cells)`` time and memory (see the module
    docstring); pairs with a record without a cluster (negative label) count as disagreements.

    Parameters
    ----------
    labels_true, labels_pred : array-like of int, shape (n,)

    Returns
    -------
    float
        In ``[0, 1]``; 1 when the clusterings are equal up to the names of the clusters.

    Examples
    --------
    >>> match_point([0, 0, 1, 1], [5, 5, 7, 7])
    1.0
    >>> match_point([0, 0, 1, 1], [0, 1, 1, 1])
    0.625
    """
    rows, cols, cells, _, n = _contingency(np.asarray(labels_true), np.asarray(labels_pred))
    if len(cells) == 0:
        return 0.0
    # Exact integer arithmetic: every sum is at most n^2 (1e12 for a million records).
    kept_rows = np.bincount(rows, weights=cells).astype(np.int64)
    kept_cols = np.bincount(cols, weights=cells).astype(np.int64)
    n_kept = int(cells.sum())
    same_true = int((kept_rows * kept_rows).sum())
    same_pred = int((kept_cols * kept_cols).sum())
    same_both = int((cells * cells).sum())
    agree = n_kept * n_kept - (same_true + same_pred - 2 * same_both)
    return agree / (n * n)


# ------------------------------------------------------------------------------------------------
# Clustering a table


def cluster_labels(X: np.ndarray, n_clusters: int, method: str = "kmeans", seed: int = 0):
    """Cluster labels of the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
    n_clusters : int
    method : {"kmeans", "bisecting_kmeans"}, default="kmeans"
    seed : int, default=0

    Returns
    -------
    ndarray of int, shape (n_rows,)
    """
    from sklearn.cluster import BisectingKMeans, KMeans

    if method not in CLUSTERINGS:
        raise ValueError(
            f"The 'method' parameter of cluster_labels must be one of {CLUSTERINGS}. "
            f"Got {method!r} instead."
        )
    if not isinstance(n_clusters, (int, np.integer)) or n_clusters < 2:
        raise ValueError(
            f"The 'n_clusters' parameter of cluster_labels must be an int >= 2. Got {n_clusters!r}."
        )
    if len(X) < n_clusters:
        raise ValueError(f"n_samples={len(X)} should be >= n_clusters={n_clusters}")
    if method == "kmeans":
        model = KMeans(n_clusters=int(n_clusters), n_init=10, random_state=seed)
    else:
        model = BisectingKMeans(n_clusters=int(n_clusters), random_state=seed)
    return model.fit_predict(X)


@dataclass(frozen=True)
class ClusteringScore:
    """One clustering of the original and of the release, compared."""

    method: str
    n_clusters: int
    f_measure: float
    match_point: float
    #: clusters the release's clustering actually used (a degenerate release may use fewer)
    release_clusters: int = 0


@dataclass(frozen=True)
class ClusteringUtility:
    """Clustering comparisons of a release against its original.

    Attributes
    ----------
    features : list of str
        The columns clustered.
    scores : list of ClusteringScore
    rows : int
        Original records clustered.
    release_rows : int
        Released records clustered.
    seed : int
    seconds : float
    """

    features: list[str]
    scores: list[ClusteringScore]
    rows: int
    release_rows: int
    seed: int
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def clustering_utility(
    original: pd.DataFrame,
    release: pd.DataFrame,
    domains: Mapping[str, AttributeDomain],
    *,
    n_clusters: Sequence[int] = (3, 5),
    methods: Sequence[str] = CLUSTERINGS,
    seed: int = 0,
) -> ClusteringUtility:
    """Cluster the original and the release the same way and compare the clusterings.

    Parameters
    ----------
    original : DataFrame
    release : DataFrame
        Each row's index is its original record's index (suppressed records are absent).
    domains : mapping of str to AttributeDomain
        The columns to cluster on, with their domains read from the original.
    n_clusters : sequence of int, default=(3, 5)
    methods : sequence of str, default=("kmeans", "bisecting_kmeans")
    seed : int, default=0

    Returns
    -------
    ClusteringUtility
    """
    started = time.perf_counter()
    positions = original.index.get_indexer(release.index)
    if (positions < 0).any() or not release.index.is_unique:
        raise ValueError(
            "every release row must carry the index of its original record (unique); "
            "as privgate.core.stages.anonymize returns it"
        )
    if not domains:
        raise ValueError("The 'domains' parameter of clustering_utility must name a column")
    X_original, _ = encode_features(original, domains, categorical="leaves", dtype=np.float32)
    X_release, _ = encode_features(release, domains, categorical="leaves", dtype=np.float32)
    scores = []
    for method in methods:
        for k in n_clusters:
            truth = cluster_labels(X_original, k, method, seed)
            released = cluster_labels(X_release, k, method, seed)
            predicted = np.full(len(original), -1, dtype=np.int64)
            predicted[positions] = released
            scores.append(
                ClusteringScore(
                    method,
                    int(k),
                    f_measure(truth, predicted),
                    match_point(truth, predicted),
                    int(len(np.unique(released))),
                )
            )
    return ClusteringUtility(
        features=list(domains),
        scores=scores,
        rows=len(original),
        release_rows=len(release),
        seed=seed,
        seconds=round(time.perf_counter() - started, 3),
    )
