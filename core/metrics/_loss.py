"""Iyengar's loss metric (LM) and ARX's granularity."""

from __future__ import annotations

import numpy as np

from privgate.core.metrics._base import DecomposableMetric


class Loss(DecomposableMetric):
    """Normalized loss: the average, over records and quasi-identifiers, of a cell's loss.

    A cell generalized to a value that stands for ``m`` of the attribute's ``M`` domain values
    loses ``(m - 1) / (M - 1)``: 0 for the original value, 1 for ``*``. A suppressed record
    loses 1 on every attribute. For numbers generalized to intervals this is the interval's
    share of the domain. ``granularity = 1 - loss``.

    The domain is the *data's* distinct values (``EncodedColumn.domain_size``), and the
    attributes are averaged arithmetically with a suppressed record charged in full. ARX's
    "Loss" differs in all three (hierarchy domain, geometric mean, a generalization/suppression
    factor): that one is :class:`~privgate.core.metrics.ArxLoss` (``arx_loss``).

    V. Iyengar, "Transforming data to satisfy privacy constraints", KDD 2002.
    """

    name = "loss"

    def _costs(self):
        totals, extras = [], []
        for col, freq in zip(self.columns_, self.frequencies_, strict=True):
            denominator = max(col.domain_size - 1, 1)
            per_level_total, per_level_extra = [], []
            for level in range(col.height + 1):
                cell = (col.domain_leaves[level] - 1) / denominator  # per level-l code
                cell = np.clip(cell, 0.0, 1.0)
                per_level_total.append(float(freq @ cell[col.level_maps[level]]))
                per_level_extra.append(1.0 - cell)
            totals.append(np.array(per_level_total))
            extras.append(per_level_extra)
        return totals, extras, float(self.n_rows_ * len(self.columns_))


def granularity(loss: float) -> float:
    """ARX's granularity: ``1 - loss`` (1 = original data, 0 = everything suppressed)."""
    return 1.0 - loss
