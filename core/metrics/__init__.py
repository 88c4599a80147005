"""Utility metrics: how much information a release keeps.

Each metric has its own module and its definition in its docstring. The classes are search
objectives for the optimal lattice search (:func:`make_metric` by name); :func:`precision` and
:func:`granularity` are plain functions for reports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from privgate.core.metrics._arx import (
    AGGREGATES,
    ArxAverageClassSize,
    ArxEntropy,
    ArxLoss,
    DiscernibilityStar,
    gs_factors,
)
from privgate.core.metrics._base import DecomposableMetric, LossMetric
from privgate.core.metrics._class_metrics import AverageClassSize, Discernibility
from privgate.core.metrics._entropy import NonUniformEntropy
from privgate.core.metrics._loss import Loss, granularity
from privgate.core.metrics._precision import PrecisionLoss, precision

if TYPE_CHECKING:
    from privgate.core.metrics._table_loss import (
        attribute_loss,
        attribute_loss_from_counts,
        table_loss,
    )

# Measuring a written release needs pandas; the search objectives do not (see
# core.anonymize for why the engine's import stays light).
_LAZY = {"attribute_loss", "attribute_loss_from_counts", "table_loss"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module("privgate.core.metrics._table_loss"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AGGREGATES",
    "ARX_METRICS",
    "METRICS",
    "ArxAverageClassSize",
    "ArxEntropy",
    "ArxLoss",
    "DiscernibilityStar",
    "AverageClassSize",
    "DecomposableMetric",
    "Discernibility",
    "Loss",
    "LossMetric",
    "NonUniformEntropy",
    "PrecisionLoss",
    "attribute_loss",
    "attribute_loss_from_counts",
    "granularity",
    "gs_factors",
    "make_metric",
    "precision",
    "table_loss",
]

METRICS: dict[str, type[LossMetric]] = {
    cls.name: cls
    for cls in (
        Loss,
        PrecisionLoss,
        Discernibility,
        AverageClassSize,
        NonUniformEntropy,
        ArxLoss,
        ArxEntropy,
        ArxAverageClassSize,
        DiscernibilityStar,
    )
}

#: Which options each metric takes (ARX's gs-factor, aggregate function, attribute weights,
#: and the entropy's monotonic variant); the others take none.
ARX_METRICS: dict[str, frozenset[str]] = {
    "arx_loss": frozenset({"gs_factor", "aggregate", "weights"}),
    "arx_entropy": frozenset({"gs_factor", "aggregate", "weights", "monotonic"}),
    "arx_average_class_size": frozenset({"gs_factor"}),
}


def make_metric(name: str, **options: object) -> LossMetric:
    """A fresh metric by its name (see :data:`METRICS`), with its options.

    Parameters
    ----------
    name : str
        loss, precision, discernibility, average_class_size, entropy (privgate's definitions,
        over the data's domain), or arx_loss, arx_entropy, arx_average_class_size,
        discernibility_star (ARX's definitions, see :mod:`privgate.core.metrics._arx`).
    **options
        ``gs_factor``, ``aggregate``, ``weights`` (by column), ``monotonic``: only for the
        metrics of :data:`ARX_METRICS` that take them; ``None`` values are ignored.
    """
    try:
        cls = METRICS[name]
    except KeyError:
        raise ValueError(
            f"The 'metric' parameter must be one of {sorted(METRICS)}. Got {name!r} instead."
        ) from None
    given = {key: value for key, value in options.items() if value is not None}
    refused = sorted(set(given) - ARX_METRICS.get(name, frozenset()))
    if refused:
        raise ValueError(f"metric {name!r} takes no option {', '.join(map(repr, refused))}")
    return cls(**given)
