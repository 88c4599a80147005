"""Privacy models, shared by the algorithms (to search) and the gate (to verify).

Each model is a frozen value that checks equivalence classes summarized as
:class:`privgate.core.encoding.ClassStats` and reports the level a table reaches.
:func:`models_from_policy` turns a policy's privacy section into models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from privgate.core.policy import PrivacySpec
from privgate.core.privacy._base import PrivacyModel
from privgate.core.privacy._disclosure import DeltaDisclosure, disclosure_ratios
from privgate.core.privacy._k_anonymity import KAnonymity
from privgate.core.privacy._k_map import EstimatedKMap, KMap, derived_k
from privgate.core.privacy._l_diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    class_entropies,
)
from privgate.core.privacy._persons import (
    PERSON_MODELS,
    persons_per_class,
    unsupported_with_persons,
)
from privgate.core.privacy._likeness import BetaLikeness, likeness_gains
from privgate.core.privacy._population import Population, PopulationIndex, population_of
from privgate.core.privacy._presence import PresenceLowerBound, PresenceUpperBound, presence_shares
from privgate.core.privacy._risk import AverageRisk, HighestRisk, RiskShareAbove, record_risks
from privgate.core.privacy._t_closeness import TCloseness, class_distances, hierarchical_distances

if TYPE_CHECKING:
    from privgate.core.hierarchy import Hierarchy

__all__ = [
    "AverageRisk",
    "BetaLikeness",
    "DeltaDisclosure",
    "EstimatedKMap",
    "KMap",
    "Population",
    "PopulationIndex",
    "PresenceLowerBound",
    "PresenceUpperBound",
    "derived_k",
    "disclosure_ratios",
    "likeness_gains",
    "population_of",
    "presence_shares",
    "DistinctLDiversity",
    "HighestRisk",
    "RiskShareAbove",
    "record_risks",
    "EntropyLDiversity",
    "KAnonymity",
    "PrivacyModel",
    "RecursiveCLDiversity",
    "TCloseness",
    "class_distances",
    "class_entropies",
    "hierarchical_distances",
    "models_from_policy",
    "sensitive_columns",
    "persons_per_class",
    "PERSON_MODELS",
    "unsupported_with_persons",
]


def sensitive_columns(models: Sequence[PrivacyModel]) -> list[str]:
    """The sensitive columns the models read (each l-diversity or t-closeness model names its
    own ``column``), sorted; k-anonymity and the risk models read none."""
    return sorted({m.column for m in models if getattr(m, "column", None) is not None})


def models_from_policy(
    spec: PrivacySpec, hierarchies: Mapping[str, Hierarchy] | None = None
) -> list[PrivacyModel]:
    """k-anonymity first, then every l-diversity, t-closeness and risk criterion.

    ``hierarchies`` supplies the sensitive columns' hierarchies that hierarchical
    t-closeness needs.
    """
    hierarchies = hierarchies or {}
    models: list[PrivacyModel] = [KAnonymity(k=spec.k)]
    for ld in spec.l_diversity:
        if ld.variant == "distinct":
            models.append(DistinctLDiversity(column=ld.column, l=ld.l))
        elif ld.variant == "entropy":
            models.append(EntropyLDiversity(column=ld.column, l=ld.l))
        else:
            models.append(RecursiveCLDiversity(column=ld.column, c=ld.c, l=ld.l))
    for tc in spec.t_closeness:
        models.append(
            TCloseness(
                column=tc.column,
                t=tc.t,
                distance=tc.distance,
                hierarchy=hierarchies.get(tc.column),
            )
        )
    risk = spec.risk
    if risk is not None:
        if risk.highest is not None:
            models.append(HighestRisk(limit=risk.highest))
        if risk.average is not None:
            models.append(AverageRisk(limit=risk.average))
        if risk.share_above is not None:
            models.append(RiskShareAbove(threshold=risk.threshold, limit=risk.share_above))
    return models
