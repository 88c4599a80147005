"""Anonymization algorithms, one per private module.

Full-domain algorithms (:class:`OptimalLattice`, :class:`Datafly`,
:class:`MultiAttributeDatafly`) take a frequency set and return an
:class:`AnonymizationResult` (one level per quasi-identifier plus suppressed records), which
:func:`apply_generalization` turns into the release. :class:`Mondrian` recodes locally and
returns the release itself. :func:`make_algorithm` builds a full-domain algorithm by its
policy name.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from privgate.core.anonymize._datafly import Datafly, MultiAttributeDatafly, approximation_degree
from privgate.core.anonymize._optimal import OptimalLattice
from privgate.core.anonymize._result import AnonymizationResult
from privgate.core.exceptions import AnonymizationError
from privgate.core.policy import Algorithm, ReleasePolicy
from privgate.core.privacy import PrivacyModel

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
    "require_full_domain",
]

if TYPE_CHECKING:
    from privgate.core.anonymize._generalize import apply_generalization
    from privgate.core.anonymize._mondrian import Mondrian, MondrianResult

# The search engine needs only numpy; these two build pandas tables. They are imported on
# first use so that `privgate anonymize` starts without paying for pandas' import (~0.9 s).
_LAZY = {
    "apply_generalization": "privgate.core.anonymize._generalize",
    "Mondrian": "privgate.core.anonymize._mondrian",
    "MondrianResult": "privgate.core.anonymize._mondrian",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


FULL_DOMAIN_ALGORITHMS = {
    Algorithm.OPTIMAL: OptimalLattice,
    Algorithm.DATAFLY: Datafly,
    Algorithm.MULTI_ATTRIBUTE_DATAFLY: MultiAttributeDatafly,
}


def require_full_domain(policy: ReleasePolicy, where: str) -> None:
    """Refuse, by name, a policy a full-domain-only path cannot release (``where`` says which).

    The engine-only command and the Dask path run the full-domain searches; Mondrian, RFKA,
    tiered and differentially private releases go through ``privgate run``.
    """
    if policy.is_differentially_private:
        raise AnonymizationError(
            f"a differential_privacy policy is not available in {where}; use `privgate run`"
        )
    if policy.algorithm.name not in FULL_DOMAIN_ALGORITHMS:
        raise AnonymizationError(
            f"algorithm.name {policy.algorithm.name.value} is not available in {where} "
            "(full-domain algorithms only); use `privgate run`"
        )


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
