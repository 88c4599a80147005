"""ARX's metrics, defined as ARX defines them, so that a search can say what ARX says.

privgate's own metrics (``loss``, ``entropy``, ``average_class_size``, ``discernibility``)
measure a column against the values present in the data and charge a suppressed record in
full. ARX (Prasser, Kohlmayer et al., ``org.deidentifier.arx.metric.v2``) makes three other
choices, and the two tools then pick different optimal nodes on the same table:

* **the domain is the hierarchy's**: a generalized value's share is the number of the
  hierarchy's values under it divided by the number the hierarchy lists (100 ages, where Adult
  has 72), so these metrics need a hierarchy that lists its domain (a table or a taxonomy);
* **generalization is weighed against suppression** by a factor ``gs_factor`` in [0, 1]
  (ARX's default 0.5 weighs them equally): ``g = 1`` and ``s = 2 * gs`` below one half,
  ``s = 1`` and ``g = 1 - 2 * (gs - 0.5)`` above;
* **attributes are aggregated** by a function (ARX's loss: the geometric mean
  ``prod(1 + w_i v_i) ** (1 / d) - 1``; its entropy: the sum), with per-attribute weights
  scaled so that the largest is 1 (all zero means all equal). A weight says "keep this one".

The classes mirror ARX's ``MetricMDNMLoss`` (:class:`ArxLoss`), ``MetricMDNUEntropyPrecomputed``
and ``MetricMDNUNMEntropyPrecomputed`` (:class:`ArxEntropy`, ``monotonic`` chooses), and
``MetricSDAECS`` (:class:`ArxAverageClassSize`); ARX's suppression-free discernibility
``DM*`` is :class:`DiscernibilityStar`. Each docstring states its formula; the agreement with
ARX's published test expectations is in ``benchmarks/BENCHMARKS.md``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from privgate.core.encoding import EncodedColumn
from privgate.core.metrics._base import LossMetric, ancestor_frequencies

__all__ = [
    "AGGREGATES",
    "ArxAverageClassSize",
    "ArxEntropy",
    "ArxLoss",
    "DiscernibilityStar",
    "gs_factors",
]

#: How per-attribute values are combined (ARX's ``AggregateFunction``).
AGGREGATES = ("geometric_mean", "arithmetic_mean", "sum", "max")


def gs_factors(gs_factor: float) -> tuple[float, float]:
    """ARX's ``(generalization factor, suppression factor)`` of a gs-factor in [0, 1]."""
    if not 0.0 <= gs_factor <= 1.0:
        raise ValueError(f"gs_factor must be in [0, 1]. Got {gs_factor!r} instead.")
    suppression = 2.0 * gs_factor if gs_factor < 0.5 else 1.0
    generalization = 1.0 if gs_factor <= 0.5 else 1.0 - 2.0 * (gs_factor - 0.5)
    return generalization, suppression


def _aggregate(values: np.ndarray, weights: np.ndarray, how: str) -> np.ndarray:
    """Combine per-attribute values, shape (n_nodes, d), into one value per node."""
    weighted = values * weights
    if how == "geometric_mean":
        return np.exp(np.log1p(weighted).mean(axis=1)) - 1.0
    if how == "arithmetic_mean":
        return weighted.mean(axis=1)
    if how == "sum":
        return weighted.sum(axis=1)
    return weighted.max(axis=1)


class _WeightedMultiDimensional(LossMetric):
    """Per-attribute values, weighted and aggregated as ARX does."""

    default_aggregate = "geometric_mean"

    def __init__(
        self,
        gs_factor: float = 0.5,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        self.gs_factor = float(gs_factor)
        self.g_factor_, self.s_factor_ = gs_factors(self.gs_factor)
        self.aggregate = aggregate or self.default_aggregate
        if self.aggregate not in AGGREGATES:
            raise ValueError(
                f"The 'aggregate' parameter must be one of {list(AGGREGATES)}. "
                f"Got {self.aggregate!r} instead."
            )
        self.weights = dict(weights or {})
        for column, weight in self.weights.items():
            if not (isinstance(weight, int | float) and weight >= 0 and np.isfinite(weight)):
                raise ValueError(f"weight of {column!r} must be a number >= 0, not {weight!r}")

    def _weight_vector(self) -> np.ndarray:
        names = [c.name for c in self.columns_]
        unknown = sorted(set(self.weights) - set(names))
        if unknown:
            raise ValueError(
                f"attribute weights name {unknown}, which are not quasi-identifiers {names}"
            )
        raw = np.array([float(self.weights.get(n, 1.0)) for n in names])
        top = raw.max(initial=0.0)
        return np.ones(len(names)) if top == 0 else raw / top

    def _combine(self, per_attribute: np.ndarray) -> np.ndarray:
        return _aggregate(np.atleast_2d(per_attribute), self.weights_, self.aggregate)

    def _prepare(self) -> None:
        self.weights_ = self._weight_vector()
        self._prepare_attributes()

    def _prepare_attributes(self) -> None:  # noqa: B027 - optional hook
        """Subclass hook: per-attribute costs."""


def _hierarchy_shares(column: EncodedColumn) -> list[np.ndarray]:
    """Per level, each present code's share of the hierarchy's domain (ARX's DomainShare)."""
    if column.hierarchy_leaves is None or column.hierarchy_domain_size == 0:
        raise ValueError(
            f"column {column.name!r}: ARX's metrics take an attribute's domain from its "
            "hierarchy, and this hierarchy does not list its values (only table and taxonomy "
            "hierarchies do); use the metric 'loss' or 'entropy', which measure against the data"
        )
    size = float(column.hierarchy_domain_size)
    return [np.minimum(leaves / size, 1.0) for leaves in column.hierarchy_leaves]


class ArxLoss(_WeightedMultiDimensional):
    """ARX's ``Loss`` (``MetricMDNMLoss``): Iyengar's loss over the hierarchy's domain.

    For attribute ``j`` at level ``l``, a record released as a value whose share of the
    hierarchy's ``M`` values is ``s`` costs ``g * s``; a suppressed record costs
    ``s + sf * (1 - s)`` (1 at the default). The attribute's sum ``L`` is normalized as ARX
    does, ``max(0, (L - g * n / M) / (n - g * n / M))`` (0 for the original table, 1 for
    ``*``), then the attributes are weighted and aggregated (default: geometric mean). With
    ``gs_factor`` 0.5, equal weights and the data's domain equal to the hierarchy's, each
    attribute's value is exactly :class:`~privgate.core.metrics.Loss`'s.

    Lower bound: every record charged ``g * s`` (a suppressed record costs at least that,
    since ``s + sf (1 - s) >= s >= g s``); the normalization and the aggregate are
    non-decreasing in each attribute, so the bound never exceeds the value.
    """

    name = "arx_loss"

    def _prepare_attributes(self) -> None:
        g, sf = self.g_factor_, self.s_factor_
        n = float(self.n_rows_)
        self.totals_, self.extras_, self.floors_ = [], [], []
        for col, freq in zip(self.columns_, self.frequencies_, strict=True):
            shares = _hierarchy_shares(col)
            levels = range(col.height + 1)
            cost = [g * float(freq @ shares[lvl][col.level_maps[lvl]]) for lvl in levels]
            self.totals_.append(np.array(cost))
            self.extras_.append([s + sf * (1.0 - s) - g * s for s in shares])
            self.floors_.append(g * n / float(col.hierarchy_domain_size))

    def _normalize(self, raw: np.ndarray) -> np.ndarray:
        n = float(self.n_rows_)
        floors = np.array(self.floors_)
        span = np.where(n - floors > 0, n - floors, 1.0)
        return np.maximum((raw - floors) / span, 0.0)

    def attribute_values(self, node, codes, sizes, suppressed) -> np.ndarray:
        """Each attribute's normalized loss at ``node`` (before weights and aggregation)."""
        raw = np.array([float(self.totals_[j][lvl]) for j, lvl in enumerate(node)])
        if suppressed.any():
            weights = sizes[suppressed].astype(float)
            for j, lvl in enumerate(node):
                raw[j] += float(weights @ self.extras_[j][lvl][codes[j][suppressed]])
        return self._normalize(raw)

    def lower_bound(self, nodes):
        nodes = np.atleast_2d(nodes)
        raw = np.column_stack([self.totals_[j][nodes[:, j]] for j in range(nodes.shape[1])])
        return self._combine(self._normalize(raw))

    def value(self, node, codes, sizes, suppressed) -> float:
        return float(self._combine(self.attribute_values(node, codes, sizes, suppressed))[0])


class ArxEntropy(_WeightedMultiDimensional):
    """ARX's precomputed non-uniform entropy, in bits (not normalized), summed by default.

    Attribute ``j`` at level ``l`` costs ``g * sum_v f(v) * log2(f(anc_l(v)) / f(v))`` over its
    original values ``v`` (the bits an analyst loses about a value given its generalization,
    :class:`~privgate.core.metrics.NonUniformEntropy` before normalization), counted over *all*
    records. With ``monotonic=True`` (ARX's ``MetricMDNUEntropyPrecomputed``) that is the whole
    value: suppression is ignored. With ``monotonic=False`` (``MetricMDNUNMEntropyPrecomputed``)
    the suppressed records add ``sf * sum_c c * log2(S / c)``, where ``S`` records are
    suppressed and ``c`` of them share a level-``l`` value: the entropy of what suppression
    hides among them. These are ARX's definitions, stated, not endorsed: a suppressed record
    costs no more than a generalized one when it hides nothing the other suppressed records
    do not.

    Lower bound: the generalization part, which suppression only adds to.
    """

    name = "arx_entropy"
    default_aggregate = "sum"

    def __init__(
        self,
        gs_factor: float = 0.5,
        aggregate: str | None = None,
        weights: Mapping[str, float] | None = None,
        monotonic: bool = True,
    ) -> None:
        super().__init__(gs_factor, aggregate, weights)
        self.monotonic = bool(monotonic)

    def _prepare_attributes(self) -> None:
        self.totals_ = []
        for col, freq in zip(self.columns_, self.frequencies_, strict=True):
            present = freq > 0
            own = np.log2(np.where(present, freq, 1.0))
            per_level = []
            for lvl in range(col.height + 1):
                anc = np.log2(np.maximum(ancestor_frequencies(col, freq, lvl), 1.0))
                per_level.append(float(freq[present] @ (anc[col.level_maps[lvl]] - own)[present]))
            self.totals_.append(self.g_factor_ * np.array(per_level))

    def attribute_values(self, node, codes, sizes, suppressed) -> np.ndarray:
        """Each attribute's bits at ``node`` (before weights and aggregation)."""
        bits = np.array([float(self.totals_[j][lvl]) for j, lvl in enumerate(node)])
        if not self.monotonic and suppressed.any():
            weights = sizes[suppressed].astype(float)
            total = float(weights.sum())
            for j in range(len(node)):
                counts = np.bincount(codes[j][suppressed], weights=weights)
                counts = counts[counts > 0]
                bits[j] += self.s_factor_ * float(counts @ np.log2(total / counts))
        return bits

    def lower_bound(self, nodes):
        nodes = np.atleast_2d(nodes)
        bits = np.column_stack([self.totals_[j][nodes[:, j]] for j in range(nodes.shape[1])])
        return self._combine(bits)

    def value(self, node, codes, sizes, suppressed) -> float:
        return float(self._combine(self.attribute_values(node, codes, sizes, suppressed))[0])


class ArxAverageClassSize(LossMetric):
    """ARX's average equivalence class size (``MetricSDAECS``), in records per class.

    ``n / (g' * kept classes + s')``, where the suppressed records, if any, form one more class
    weighted ``s'``; ARX switches the factors on purpose here (``g'`` is the suppression
    factor, ``s'`` the generalization factor of ``gs_factor``). At the default both are 1:
    ``n / (kept classes + 1 if any record is suppressed)``. Where privgate's
    ``average_class_size`` divides the *kept* records by the kept classes (and by ``k``), this
    divides *all* records, so suppressing records lowers it.

    Lower bound: a node has at most ``min(n, prod_j distinct values at its level)`` classes.
    """

    name = "arx_average_class_size"

    def __init__(self, gs_factor: float = 0.5) -> None:
        self.gs_factor = float(gs_factor)
        generalization, suppression = gs_factors(self.gs_factor)
        self.class_weight_, self.suppressed_weight_ = suppression, generalization

    def lower_bound(self, nodes):
        nodes = np.atleast_2d(nodes)
        n = float(self.n_rows_)
        most = np.ones(len(nodes))
        for j, col in enumerate(self.columns_):
            distinct = np.array([col.distinct_at(lvl) for lvl in range(col.height + 1)], float)
            most = np.minimum(most * distinct[nodes[:, j]], n)
        denominator = self.class_weight_ * most + self.suppressed_weight_
        with np.errstate(divide="ignore"):
            return np.where(denominator > 0, n / denominator, np.inf)

    def value(self, node, codes, sizes, suppressed) -> float:
        kept = int((sizes[~suppressed] > 0).sum())
        denominator = self.class_weight_ * kept
        if suppressed.any() and sizes[suppressed].sum() > 0:
            denominator += self.suppressed_weight_
        return float(self.n_rows_) / denominator if denominator > 0 else float("inf")


class DiscernibilityStar(LossMetric):
    """ARX's monotonic discernibility ``DM*`` (``MetricSDDiscernability``): every record is
    charged the size of its class *as if nothing were suppressed*, ``sum_E |E|^2 / n^2``.

    The suppression-free variant of :class:`~privgate.core.metrics.Discernibility` (which
    charges a suppressed record ``n``): a search with it prefers nodes with small classes and
    does not care how many records it suppresses within the limit.

    Lower bound: ``n / n^2``; every class holds at least one record.
    """

    name = "discernibility_star"

    def lower_bound(self, nodes):
        n = float(self.n_rows_)
        return np.full(len(np.atleast_2d(nodes)), n / n**2 if n else 0.0)

    def value(self, node, codes, sizes, suppressed) -> float:
        all_sizes = sizes.astype(float)
        n = float(self.n_rows_)
        return float(all_sizes @ all_sizes) / n**2
