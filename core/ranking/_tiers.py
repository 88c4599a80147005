"""Tiers of attributes: k-means over their importance scores, solved exactly in one dimension.

Why exact: Lloyd's k-means (scikit-learn's ``KMeans``) starts from random centres and can stop in
a local optimum, so two seeds may cut the same scores into different tiers, and a release's
coverage would then depend on a seed. In one dimension an optimal k-means partition is a cut of
the *sorted* scores into contiguous groups, so the global optimum of the same objective (the
within-tier sum of squared distances to the tier's mean) is found by dynamic programming over
the cut points (H. Wang and M. Song, "Ckmeans.1d.dp: optimal k-means clustering in one
dimension by dynamic programming", The R Journal 3(2), 2011). Its inertia is never above what
``KMeans`` reaches, and it is the same for every seed.

Equal scores always share a tier: the programme runs over the distinct scores, weighted by how
many attributes have each. Complexity ``O(n_tiers * m^2)`` for ``m`` distinct scores.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from privgate.core.exceptions import PolicyError

__all__ = ["importance_tiers", "kmeans_1d"]


def _segment_cost(prefix_w: np.ndarray, prefix_wx: np.ndarray, prefix_wxx: np.ndarray):
    """Weighted sum of squared deviations of ``values[i:j]`` from their mean, in O(1)."""

    def cost(i: int, j: int) -> float:
        w = prefix_w[j] - prefix_w[i]
        wx = prefix_wx[j] - prefix_wx[i]
        wxx = prefix_wxx[j] - prefix_wxx[i]
        return max(wxx - wx * wx / w, 0.0)

    return cost


def kmeans_1d(values: np.ndarray, weights: np.ndarray, n_clusters: int) -> tuple[np.ndarray, float]:
    """Optimal k-means of sorted, distinct 1-d ``values`` (see module notes).

    Parameters
    ----------
    values : ndarray, shape (m,)
        Strictly increasing.
    weights : ndarray, shape (m,)
        Positive multiplicities.
    n_clusters : int
        ``1 <= n_clusters <= m``.

    Returns
    -------
    labels : ndarray of int, shape (m,)
        Cluster of each value, ``0`` for the lowest values up to ``n_clusters - 1``.
    inertia : float
        Weighted within-cluster sum of squares of the optimum.
    """
    m = len(values)
    prefix_w = np.concatenate([[0.0], np.cumsum(weights)])
    prefix_wx = np.concatenate([[0.0], np.cumsum(weights * values)])
    prefix_wxx = np.concatenate([[0.0], np.cumsum(weights * values * values)])
    cost = _segment_cost(prefix_w, prefix_wx, prefix_wxx)
    # best[c][j]: least cost of values[:j] in c + 1 clusters; start[c][j]: where the last begins.
    best = np.full((n_clusters, m + 1), math.inf)
    start = np.zeros((n_clusters, m + 1), dtype=np.int64)
    for j in range(1, m + 1):
        best[0, j] = cost(0, j)
    for c in range(1, n_clusters):
        for j in range(c + 1, m + 1):
            for i in range(c, j):  # the last cluster is values[i:j]; strict < keeps the first
                candidate = best[c - 1, i] + cost(i, j)
                if candidate < best[c, j]:
                    best[c, j], start[c, j] = candidate, i
    labels = np.empty(m, dtype=np.int64)
    j = m
    for c in range(n_clusters - 1, -1, -1):
        i = start[c, j] if c > 0 else 0
        labels[i:j] = c
        j = i
    return labels, float(best[n_clusters - 1, m])


def importance_tiers(
    importance: pd.Series, n_tiers: int = 5, random_state: int = 0
) -> dict[str, int]:
    """Group attributes into tiers by k-means over their importance, tier 1 the most important.

    Parameters
    ----------
    importance : Series of float
        Index = attribute names, values = importance scores (any order).
    n_tiers : int, default=5
        Number of k-means clusters, i.e. tiers.
    random_state : int, default=0
        Accepted for symmetry with the ranking functions. The one-dimensional k-means is solved
        exactly (see module notes), so there is no random initialization and the tiers are the
        same for every seed: the argument cannot change the result.

    Returns
    -------
    dict of str to int
        Tier of every attribute, ``1`` = the cluster with the highest centre, numbered down to
        the lowest; in order of decreasing importance.

    Raises
    ------
    PolicyError
        ``importance`` is empty, has a missing or non-finite score or duplicated names, or
        ``n_tiers`` is not a positive integer.

    Warns
    -----
    RuntimeWarning
        Fewer distinct scores than ``n_tiers``: every distinct score becomes its own tier, so
        fewer tiers are returned than asked for (there is no meaningful way to split equal
        scores).
    """
    del random_state  # documented above: the exact solver has no randomness
    if isinstance(n_tiers, bool) or not isinstance(n_tiers, int) or n_tiers < 1:
        raise PolicyError(f"The 'n_tiers' parameter must be an integer >= 1. Got {n_tiers!r}.")
    if len(importance) == 0:
        raise PolicyError("importance is empty: there is no attribute to put into tiers")
    if importance.index.has_duplicates:
        duplicated = importance.index[importance.index.duplicated()].tolist()
        raise PolicyError(f"importance has duplicated attribute names {duplicated}")
    scores = pd.to_numeric(importance, errors="coerce").to_numpy(dtype=float)
    bad = [str(n) for n, s in zip(importance.index, scores, strict=True) if not math.isfinite(s)]
    if bad:
        raise PolicyError(f"importance of {bad} is missing or not a finite number")
    distinct, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    n_clusters = n_tiers
    if len(distinct) < n_tiers:
        warnings.warn(
            f"n_tiers={n_tiers} but the importance has only {len(distinct)} distinct score(s): "
            f"returning {len(distinct)} tier(s), one per distinct score",
            RuntimeWarning,
            stacklevel=2,
        )
        n_clusters = len(distinct)
    labels, _ = kmeans_1d(distinct, counts.astype(float), n_clusters)
    tiers = n_clusters - labels[inverse]  # highest cluster -> tier 1
    order = np.argsort(-scores, kind="stable")
    names = importance.index
    return {str(names[i]): int(tiers[i]) for i in order}
