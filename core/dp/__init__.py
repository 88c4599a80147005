"""Differential privacy: OpenDP noise mechanisms and the one accountant that composes them.

Every noise draw goes through OpenDP (:mod:`privgate.core.dp.mechanisms`); every privacy cost is a
:class:`Spend` charged to an :class:`Accountant`, which composes sequentially (sums) or, across
disjoint partitions, in parallel (maxima) and enforces an optional (epsilon, delta) cap. Other
modules of this package (ledgers, algorithms) are imported by their own module path.
"""

from __future__ import annotations

from privgate.core.dp._accountant import (
    ROUNDING_TOLERANCE,
    Accountant,
    Charger,
    ParallelGroup,
    PrivacyParameterError,
    Spend,
    parallel,
    sequential,
)
from privgate.core.dp.mechanisms import (
    discrete_laplace_counts,
    exponential_select,
    gaussian_values,
    laplace_values,
)

__all__ = [
    "ROUNDING_TOLERANCE",
    "Accountant",
    "Charger",
    "ParallelGroup",
    "PrivacyParameterError",
    "Spend",
    "discrete_laplace_counts",
    "exponential_select",
    "gaussian_values",
    "laplace_values",
    "parallel",
    "sequential",
]
