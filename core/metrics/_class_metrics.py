"""Metrics of the equivalence-class structure: discernibility and average class size."""

from __future__ import annotations

import numpy as np

from privgate.core.metrics._base import LossMetric


class Discernibility(LossMetric):
    """Discernibility: every record is charged the size of its class; a suppressed record is
    charged the size of the table. ``DM = sum_kept |E|^2 + n_suppressed * n``, normalized by
    ``n^2`` (the table in one class).

    R. Bayardo, R. Agrawal, "Data privacy through optimal k-anonymization", ICDE 2005.

    The lower bound, ``n * min_class_size / n^2``, holds because every kept class has at least
    ``min_class_size`` records and a suppressed record costs ``n``: weak, so a search with this
    objective evaluates more nodes. Once a node is evaluated, its ``sum_E |E|^2`` over all its
    classes bounds every node above it (:meth:`bound_above`).
    """

    name = "discernibility"

    def lower_bound(self, nodes):
        bound = self.n_rows_ * min(self.min_class_size_, self.n_rows_) / self.n_rows_**2
        return np.full(len(np.atleast_2d(nodes)), bound)

    def bound_above(self, sizes: np.ndarray) -> float:
        """``sum_E |E|^2 / n^2`` over all the node's classes: no more than its own value (a
        suppressed class costs ``|E| * n >= |E|^2``), and merging classes never lowers it
        (``(a + b)^2 >= a^2 + b^2``), so no more than the value of any coarser node."""
        all_sizes = sizes.astype(float)
        return float(all_sizes @ all_sizes) / float(self.n_rows_) ** 2

    def value(self, node, codes, sizes, suppressed) -> float:
        kept = sizes[~suppressed].astype(float)
        n = float(self.n_rows_)
        return (float(kept @ kept) + float(sizes[suppressed].sum()) * n) / n**2


class AverageClassSize(LossMetric):
    """LeFevre's normalized average equivalence class size ``C_AVG = (n_kept / |classes|) /
    min_class_size``: 1 is the ideal (every class as small as the model allows). Suppressed
    records form no class but count as kept-out rows of the table, so a node that suppresses
    everything scores ``n / min_class_size``.

    K. LeFevre, D. DeWitt, R. Ramakrishnan, "Mondrian multidimensional k-anonymity", ICDE 2006.
    """

    name = "average_class_size"

    def lower_bound(self, nodes):
        return np.full(len(np.atleast_2d(nodes)), 1.0 if self.min_class_size_ > 0 else 0.0)

    def value(self, node, codes, sizes, suppressed) -> float:
        k = max(self.min_class_size_, 1)
        n_classes = int((~suppressed).sum())
        if n_classes == 0:
            return self.n_rows_ / k
        return float(sizes[~suppressed].sum()) / n_classes / k
