"""Sweeney's precision."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privgate.core.metrics._base import DecomposableMetric


def precision(
    levels: Mapping[str, int], heights: Mapping[str, int], n_rows: int, n_suppressed: int = 0
) -> float:
    """Sweeney's precision ``Prec``: one minus the average normalized generalization height.

    ``Prec = 1 - sum_records sum_QI (level / height) / (n_rows * n_QI)``, where a suppressed
    record counts as fully generalized on every quasi-identifier (``level = height``), so that
    suppressing records is never free. 1 means the original data, 0 means nothing is left.

    L. Sweeney, "Achieving k-anonymity privacy protection using generalization and
    suppression", IJUFKS 10(5), 2002.

    Examples
    --------
    >>> precision({"age": 1, "sex": 0}, {"age": 4, "sex": 1}, n_rows=10)
    0.875
    >>> precision({"age": 1, "sex": 0}, {"age": 4, "sex": 1}, n_rows=10, n_suppressed=10)
    0.0
    """
    if n_rows <= 0:
        raise ValueError(f"The 'n_rows' parameter must be positive. Got {n_rows}.")
    if not 0 <= n_suppressed <= n_rows:
        raise ValueError(
            f"The 'n_suppressed' parameter must be in [0, {n_rows}]. Got {n_suppressed}."
        )
    n_qi = len(levels)
    kept = n_rows - n_suppressed
    per_record = sum(levels[q] / heights[q] for q in levels if heights[q] > 0)
    loss = kept * per_record + n_suppressed * n_qi
    return 1.0 - loss / (n_rows * n_qi)


class PrecisionLoss(DecomposableMetric):
    """``1 - Prec`` as a search objective (see :func:`precision`)."""

    name = "precision"

    def _costs(self):
        totals, extras = [], []
        for col in self.columns_:
            h = max(col.height, 1)
            per_level = np.arange(col.height + 1) / h
            totals.append(per_level * self.n_rows_)
            extras.append(
                [np.full(col.distinct_at(lvl), 1.0 - lvl / h) for lvl in range(col.height + 1)]
            )
        return totals, extras, float(self.n_rows_ * len(self.columns_))
