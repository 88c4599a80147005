"""How far each released column's distribution moved from the original's: total variation.

Both distributions live on the column's original values (its *leaves*, see
:class:`~privgate.core.utility.AttributeDomain`) plus one bucket for missing cells:

* the original's: the share of original records holding each leaf;
* the release's: every released cell spreads its weight uniformly over the leaves its label
  covers (a leaf keeps it, ``35-39`` spreads it over the original ages 35..39, ``*`` over every
  leaf); the shares are taken over the release's rows, so suppressed records simply are not
  there, as for any reader of the release.

``TV(P, Q) = 1/2 sum_v |P(v) - Q(v)|`` lies in [0, 1]: 0 when the release keeps the column's
distribution exactly (a column released as is, without suppression), 1 when the two have
disjoint support. A column released as is still moves when suppression removes records
unevenly, which is what TV shows for a sensitive column.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from privgate.core.utility._encoding import AttributeDomain, factorize_labels

__all__ = ["distribution_distances", "total_variation"]


def _original_distribution(domain: AttributeDomain) -> np.ndarray:
    weights = np.append(domain.counts.astype(float), float(domain.n_missing))
    return weights / max(weights.sum(), 1.0)


def _released_distribution(domain: AttributeDomain, released: pd.Series) -> np.ndarray:
    codes, labels = factorize_labels(released)
    per_label = np.bincount(codes, minlength=len(labels)).astype(float)
    weights = np.zeros(len(domain.leaves) + 1)
    for label, count in zip(labels, per_label, strict=True):
        if label is None:
            weights[-1] += count
        else:
            covered = domain.cover(label)
            weights[covered] += count / len(covered)
    return weights / max(weights.sum(), 1.0)


def total_variation(domain: AttributeDomain, released: pd.Series) -> float:
    """Total variation distance between the original column and its release.

    Parameters
    ----------
    domain : AttributeDomain
        The column's domain, from :func:`~privgate.core.utility.describe_domains` on the original.
    released : Series
        The column in the release.

    Returns
    -------
    float
        In ``[0, 1]``.

    Examples
    --------
    >>> from core.utility import describe_domains
    >>> original = pd.DataFrame({"age": [20, 30, 40, 60]})
    >>> domain = describe_domains(original, {"age": None}, numeric={"age"})["age"]
    >>> total_variation(domain, pd.Series(["20-30", "20-30", "40", "60"]))
    0.0
    >>> total_variation(domain, pd.Series(["20", "20", "40", "60"]))
    0.25
    """
    if len(released) == 0:
        return 1.0
    p = _original_distribution(domain)
    q = _released_distribution(domain, released)
    return float(0.5 * np.abs(p - q).sum())


def distribution_distances(
    release: pd.DataFrame, domains: Mapping[str, AttributeDomain]
) -> dict[str, float]:
    """:func:`total_variation` of every column of ``domains``, in their order."""
    absent = [c for c in domains if c not in release.columns]
    if absent:
        raise ValueError(f"column(s) not in the release: {absent}")
    return {name: total_variation(domain, release[name]) for name, domain in domains.items()}
