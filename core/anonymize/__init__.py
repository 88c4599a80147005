"""Anonymization algorithms, one per private module.

Full-domain algorithms (:class:`OptimalLattice`, :class:`Datafly`,
:class:`MultiAttributeDatafly`) take a frequency set and return an
:class:`AnonymizationResult` (one level per quasi-identifier plus suppressed records), which
:func:`apply_generalization` turns into the release. :class:`Mondrian` recodes locally and
returns the release itself. :func:`make_algorithm` builds a full-domain algorithm by its
policy name.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.anonymize._datafly import Datafly, MultiAttributeDatafly, approximation_degree
from core.anonymize._generalize import apply_generalization
from core.anonymize._mondrian import Mondrian, MondrianResult
from core.anonymize._optimal import OptimalLattice
from core.anonymize._result import AnonymizationResult
from core.policy import Algorithm
from core.privacy import PrivacyModel

__all__ = [
    "FULL_DOMAIN_ALGORITHMS",
    "AnonymizationResult",
    "Datafly",
    "Mondrian",
    "MondrianResult",
    "MultiAttributeDatafly",
    "OptimalLattice",
    "apply_generalization",
    "approximation_degree",
    "make_algorithm",
]

FULL_DOMAIN_ALGORITHMS = {
    Algorithm.OPTIMAL: OptimalLattice,
    Algorithm.DATAFLY: Datafly,
    Algorithm.MULTI_ATTRIBUTE_DATAFLY: MultiAttributeDatafly,
}


def make_algorithm(
    name: Algorithm | str,
    models: Sequence[PrivacyModel],
    suppression_limit: float,
    metric: str | None = None,
) -> Datafly | OptimalLattice:
    """The full-domain algorithm a policy names, configured with its privacy models."""
    algorithm = Algorithm(name)
    if algorithm not in FULL_DOMAIN_ALGORITHMS:
        raise ValueError(f"{algorithm} is not a full-domain algorithm")
    if algorithm is Algorithm.OPTIMAL:
        return OptimalLattice(models, suppression_limit, metric=metric or "loss")
    return FULL_DOMAIN_ALGORITHMS[algorithm](models, suppression_limit)
