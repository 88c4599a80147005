"""Anonymization algorithms: each takes a frequency set and returns an AnonymizationResult.

One algorithm per private module; :func:`make_algorithm` picks one by its policy name.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.anonymize._datafly import Datafly, MultiAttributeDatafly, approximation_degree
from core.anonymize._generalize import apply_generalization
from core.anonymize._result import AnonymizationResult
from core.policy import Algorithm
from core.privacy import PrivacyModel

__all__ = [
    "ALGORITHMS",
    "AnonymizationResult",
    "Datafly",
    "MultiAttributeDatafly",
    "apply_generalization",
    "approximation_degree",
    "make_algorithm",
]

ALGORITHMS = {
    Algorithm.DATAFLY: Datafly,
    Algorithm.MULTI_ATTRIBUTE_DATAFLY: MultiAttributeDatafly,
}


def make_algorithm(
    name: Algorithm | str, models: Sequence[PrivacyModel], suppression_limit: float
) -> Datafly:
    """The algorithm a policy names, configured with its privacy models."""
    return ALGORITHMS[Algorithm(name)](models, suppression_limit)
