"""Utility metrics: how much information a release keeps.

Each metric has its own module and its definition in its docstring. The classes are search
objectives for the optimal lattice search (:func:`make_metric` by name); :func:`precision` and
:func:`granularity` are plain functions for reports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from privgate.core.metrics._base import DecomposableMetric, LossMetric
from privgate.core.metrics._class_metrics import AverageClassSize, Discernibility
from privgate.core.metrics._entropy import NonUniformEntropy
from privgate.core.metrics._loss import Loss, granularity
from privgate.core.metrics._precision import PrecisionLoss, precision

if TYPE_CHECKING:
    from privgate.core.metrics._table_loss import attribute_loss, table_loss

# Measuring a written release needs pandas; the search objectives do not (see
# core.anonymize for why the engine's import stays light).
_LAZY = {"attribute_loss", "table_loss"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module("privgate.core.metrics._table_loss"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
