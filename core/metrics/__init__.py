"""Utility metrics: how much information a release keeps.

Each metric has its own module and its definition in its docstring. The classes are search
objectives for the optimal lattice search (:func:`make_metric` by name); :func:`precision` and
:func:`granularity` are plain functions for reports.
"""

from __future__ import annotations

from core.metrics._base import DecomposableMetric, LossMetric
from core.metrics._class_metrics import AverageClassSize, Discernibility
from core.metrics._entropy import NonUniformEntropy
from core.metrics._loss import Loss, granularity
from core.metrics._precision import PrecisionLoss, precision
from core.metrics._table_loss import attribute_loss, table_loss

__all__ = [
    "METRICS",
    "AverageClassSize",
    "DecomposableMetric",
    "Discernibility",
    "Loss",
    "LossMetric",
    "NonUniformEntropy",
    "PrecisionLoss",
    "attribute_loss",
    "granularity",
    "make_metric",
    "precision",
    "table_loss",
]

METRICS: dict[str, type[LossMetric]] = {
    cls.name: cls
    for cls in (Loss, PrecisionLoss, Discernibility, AverageClassSize, NonUniformEntropy)
}


def make_metric(name: str) -> LossMetric:
    """A fresh metric by its name: loss, precision, discernibility, average_class_size, entropy."""
    try:
        return METRICS[name]()
    except KeyError:
        raise ValueError(
            f"The 'metric' parameter must be one of {sorted(METRICS)}. Got {name!r} instead."
        ) from None
