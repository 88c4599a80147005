"""Non-uniform entropy (information loss in bits)."""

from __future__ import annotations

import numpy as np

from privgate.core.metrics._base import DecomposableMetric, ancestor_frequencies


class NonUniformEntropy(DecomposableMetric):
    """Bits an analyst loses about each original value, given its generalized value.

    A record whose value ``v`` is released as ``g`` costs ``-log2(P(v | g)) = -log2(f(v) /
    f(g))``, with ``f`` the frequencies in the input; a suppressed record costs
    ``-log2(f(v) / n)`` (the generalized value is the whole domain). The value is normalized by
    the cost of suppressing every record, so it lies in [0, 1].

    A. Gionis, T. Tassa, "k-Anonymization with minimal loss of information", IEEE TKDE 21(2),
    2009; ARX's "Non-uniform entropy" (Prasser, Kohlmayer et al.).
    """

    name = "entropy"

    def _costs(self):
        n = float(self.n_rows_)
        totals, extras, worst = [], [], 0.0
        for col, freq in zip(self.columns_, self.frequencies_, strict=True):
            present = freq > 0
            with np.errstate(divide="ignore"):
                own = np.where(present, np.log2(np.where(present, freq, 1.0)), 0.0)
            worst += float(freq[present] @ (np.log2(n) - own[present]))
            per_level_total, per_level_extra = [], []
            for level in range(col.height + 1):
                anc = ancestor_frequencies(col, freq, level)
                anc_log = np.log2(np.maximum(anc, 1.0))
                per_level_total.append(float(freq @ (anc_log[col.level_maps[level]] - own)))
                per_level_extra.append(np.log2(n) - anc_log)
            totals.append(np.array(per_level_total))
            extras.append(per_level_extra)
        return totals, extras, max(worst, 1e-12)
