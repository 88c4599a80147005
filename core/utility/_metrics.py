"""The engine's quality metrics, measured on a release and its original rows.

The optimal search scores lattice nodes (:mod:`core.metrics`); a Mondrian release has no node.
These functions measure the same quantities from the two tables alone (release rows matched to
their originals by index, a missing index being a suppressed record), so full-domain and local
recodings are scored on one scale, and each agrees with the engine's objective on a full-domain
release (the tests check it on Adult).

* information loss per attribute and in total: :func:`privgate.core.metrics.table_loss` (numeric:
  ``(hi - lo) / (max - min)``; categorical: ``(leaves under the label - 1) / (leaves - 1)``;
  ``*`` and suppressed records: 1);
* Sweeney's precision: :func:`core.metrics.precision` (full-domain releases only: it needs one
  level per quasi-identifier);
* discernibility ``(sum_classes |E|^2 + n_suppressed * n) / n^2`` (Bayardo and Agrawal, 2005);
* normalized average class size ``(n_kept / #classes) / k`` (LeFevre et al., 2006);
* non-uniform entropy: a cell whose original value ``v`` is released as ``g`` costs
  ``log2(f(g) / f(v))`` bits, ``f`` counting original records and ``f(g)`` those whose value
  ``g`` covers; a suppressed record costs ``log2(n / f(v))``; normalized by the cost of
  suppressing every record (Gionis and Tassa, 2009).

Equivalence classes are the release's rows grouped by the text of their quasi-identifiers
(:func:`privgate.core.gate.class_stats_of`, the gate's own grouping).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from privgate.core.gate import class_stats_of
from privgate.core.utility._encoding import AttributeDomain, factorize_labels

__all__ = ["release_metrics"]


def _positions(original: pd.DataFrame, release: pd.DataFrame) -> np.ndarray:
    """Position in ``original`` of every release row (rows are matched by index)."""
    if not release.index.is_unique:
        raise ValueError("The release's index must be unique (one row per original record)")
    positions = original.index.get_indexer(release.index)
    if (positions < 0).any():
        missing = release.index[positions < 0]
        raise ValueError(
            f"{len(missing)} release row(s) have no original record with the same index "
            f"(first: {missing[0]!r}); keep the input's index in the release"
        )
    return positions


def _entropy_bits(
    domain: AttributeDomain,
    original: pd.Series,
    released: pd.Series,
    positions: np.ndarray,
) -> tuple[float, float]:
    """(bits lost by the release, bits lost if every record were suppressed) for one column.

    A column with no present value (missing in every record: allowed with ``nullable: true``,
    and a validation warning) holds no information, so no release can lose any of it.
    """
    if len(domain.leaves) == 0:
        return 0.0, 0.0
    n = float(len(original))
    leaf_of = {str(leaf): i for i, leaf in enumerate(domain.leaves)}
    counts = domain.counts.astype(float)
    orig_codes, orig_labels = factorize_labels(original)
    orig_leaf = np.array([leaf_of.get(label, -1) for label in orig_labels], dtype=np.int64)
    leaf = orig_leaf[orig_codes]  # -1 for a missing original cell: it loses nothing
    log_own = np.where(leaf >= 0, np.log2(counts[np.maximum(leaf, 0)]), np.log2(n))
    worst = float((np.log2(n) - log_own).sum())
    rel_codes, rel_labels = factorize_labels(released)
    log_label = np.array([np.log2(counts[domain.cover(label)].sum()) for label in rel_labels])
    kept = np.zeros(len(original), dtype=bool)
    kept[positions] = True
    lost = float((log_label[rel_codes] - log_own[positions]).sum())
    lost += float((np.log2(n) - log_own[~kept]).sum())
    return lost, worst


def release_metrics(
    original: pd.DataFrame,
    release: pd.DataFrame,
    domains: Mapping[str, AttributeDomain],
    *,
    k: int,
    levels: Mapping[str, int] | None = None,
    heights: Mapping[str, int] | None = None,
    quasi_identifiers: Sequence[str] | None = None,
) -> dict:
    """Precision, discernibility, average class size and entropy of a release.

    Parameters
    ----------
    original : DataFrame
        The input before anonymization.
    release : DataFrame
        The release; each row's index is its original record's index, and an original index
        absent from it is a suppressed record.
    domains : mapping of str to AttributeDomain
        The quasi-identifiers' domains (:func:`~privgate.core.utility.describe_domains`).
    k : int
        The release's k, which normalizes the average class size.
    levels, heights : mapping of str to int, optional
        The full-domain transformation (level and hierarchy height per quasi-identifier);
        without them precision is ``None`` (a local recoding has no level per column).
    quasi_identifiers : sequence of str, optional
        Default: the columns of ``domains``.

    Returns
    -------
    dict
        ``precision`` (or ``None``), ``discernibility``, ``average_class_size``, ``entropy``,
        ``classes``, ``min_class_size``, ``suppressed``.

    Examples
    --------
    >>> from core.hierarchy import taxonomy_hierarchy
    >>> from core.utility import describe_domains
    >>> original = pd.DataFrame({"sex": ["M", "F", "M", "F"]})
    >>> sex = taxonomy_hierarchy("sex", {"any": ["M", "F"]})
    >>> domains = describe_domains(original, {"sex": sex})
    >>> release = pd.DataFrame({"sex": ["any", "any", "any"]}, index=[0, 1, 2])
    >>> m = release_metrics(original, release, domains, k=3)
    >>> m["discernibility"], m["average_class_size"], m["entropy"]
    (0.8125, 1.0, 1.0)
    """
    from privgate.core.metrics import precision

    if k < 1:
        raise ValueError(f"The 'k' parameter of release_metrics must be >= 1. Got {k} instead.")
    qis = list(quasi_identifiers) if quasi_identifiers is not None else list(domains)
    positions = _positions(original, release)
    n = len(original)
    if n == 0:
        raise ValueError("The original table has no records")
    n_kept = len(release)
    suppressed = n - n_kept
    sizes = class_stats_of(release, qis, []).sizes.astype(float)
    discernibility = (float(sizes @ sizes) + suppressed * float(n)) / float(n) ** 2
    average = (n_kept / len(sizes) / k) if len(sizes) else n / k
    lost = worst = 0.0
    for q in qis:
        col_lost, col_worst = _entropy_bits(domains[q], original[q], release[q], positions)
        lost, worst = lost + col_lost, worst + col_worst
    prec = None
    if levels is not None and heights is not None and set(levels) == set(qis):
        prec = precision(dict(levels), dict(heights), n, suppressed)
    return {
        "precision": prec,
        "discernibility": discernibility,
        "average_class_size": average,
        "entropy": lost / worst if worst > 0 else 0.0,
        "classes": len(sizes),
        "min_class_size": int(sizes.min()) if len(sizes) else 0,
        "suppressed": suppressed,
    }
