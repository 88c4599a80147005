"""Privacy models, shared by the algorithms (to search) and the gate (to verify).

Each model is a frozen value that checks equivalence classes summarized as
:class:`privgate.core.encoding.ClassStats` and reports the level a table reaches.
:func:`models_from_policy` turns a policy's privacy section into models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from privgate.core.exceptions import AnonymizationError
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
    class_entropies_grassberger,
    grassberger_g,
)
from privgate.core.privacy._likeness import BetaLikeness, likeness_gains
from privgate.core.privacy._persons import (
    PERSON_COUNTED_MODELS,
    PERSON_MODELS,
    person_class_stats,
    person_histograms,
    person_samples,
    persons_per_class,
    unsupported_with_persons,
)
from privgate.core.privacy._population import Population, PopulationIndex, population_of
from privgate.core.privacy._presence import PresenceLowerBound, PresenceUpperBound, presence_shares
from privgate.core.privacy._risk import (
    AverageRisk,
    HighestRisk,
    PopulationUniques,
    RiskShareAbove,
    record_risks,
    suppress_to_meet,
)
from privgate.core.privacy._t_closeness import TCloseness, class_distances, hierarchical_distances
from privgate.core.textcsv import read_text_columns

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
    "read_population",
    "DistinctLDiversity",
    "HighestRisk",
    "RiskShareAbove",
    "PopulationUniques",
    "suppress_to_meet",
    "record_risks",
    "EntropyLDiversity",
    "KAnonymity",
    "PrivacyModel",
    "RecursiveCLDiversity",
    "TCloseness",
    "class_distances",
    "class_entropies",
    "class_entropies_grassberger",
    "grassberger_g",
    "hierarchical_distances",
    "models_from_policy",
    "sensitive_columns",
    "persons_per_class",
    "reference_columns",
    "person_class_stats",
    "person_histograms",
    "person_samples",
    "PERSON_COUNTED_MODELS",
    "PERSON_MODELS",
    "unsupported_with_persons",
]


def sensitive_columns(models: Sequence[PrivacyModel]) -> list[str]:
    """The sensitive columns the models read (each l-diversity or t-closeness model names its
    own ``column``), sorted; k-anonymity and the risk models read none."""
    return sorted({m.column for m in models if getattr(m, "column", None) is not None})


def reference_columns(models: Sequence[PrivacyModel]) -> list[str]:
    """The sensitive columns whose classes the models compare with the input's distribution
    (t-closeness, β-likeness, δ-disclosure), sorted: the gate must receive that reference
    (:func:`privgate.core.gate.sensitive_reference`), as the search compares with the input's
    distribution, suppressed records (or persons) included."""
    comparing = (TCloseness, BetaLikeness, DeltaDisclosure)
    return sorted({m.column for m in models if isinstance(m, comparing)})


def read_population(spec: PrivacySpec, hierarchies: Mapping[str, Hierarchy]) -> Population | None:
    """The population table a policy declares (``privacy.population``), summarized over the
    quasi-identifiers ``hierarchies`` (``None`` when it declares none).

    Raises
    ------
    IngestError
        The file cannot be read as CSV.
    AnonymizationError, HierarchyError
        A quasi-identifier column is missing, a cell is empty, or a value is not covered.
    """
    if spec.population is None:
        return None
    declared = spec.population
    columns = read_text_columns(declared.path, declared.delimiter, declared.encoding)
    return Population.from_columns(columns, hierarchies, str(declared.path))


def models_from_policy(
    spec: PrivacySpec,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    population: Population | None = None,
) -> list[PrivacyModel]:
    """k-anonymity first, then every l-diversity, t-closeness, β-likeness, δ-disclosure,
    risk, k-map and δ-presence criterion.

    ``hierarchies`` supplies the sensitive columns' hierarchies that hierarchical
    t-closeness needs; ``population`` the table k-map and δ-presence compare with (see
    :func:`read_population`).
    """
    hierarchies = hierarchies or {}
    models: list[PrivacyModel] = [KAnonymity(k=spec.k)]
    for ld in spec.l_diversity:
        if ld.variant == "distinct":
            models.append(DistinctLDiversity(column=ld.column, l=ld.l))
        elif ld.variant == "entropy":
            models.append(
                EntropyLDiversity(column=ld.column, l=ld.l, estimator=ld.estimator or "shannon")
            )
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
    for bl in spec.beta_likeness:
        models.append(BetaLikeness(column=bl.column, beta=bl.beta, variant=bl.variant))
    for dd in spec.delta_disclosure:
        models.append(
            DeltaDisclosure(column=dd.column, delta=dd.delta, absent_values=dd.absent_values)
        )
    risk = spec.risk
    if risk is not None:
        if risk.highest is not None:
            models.append(HighestRisk(limit=risk.highest))
        if risk.average is not None:
            models.append(AverageRisk(limit=risk.average, suppress=risk.suppress))
        if risk.share_above is not None:
            models.append(
                RiskShareAbove(
                    threshold=risk.threshold, limit=risk.share_above, suppress=risk.suppress
                )
            )
        if risk.population_uniques is not None:
            models.append(
                PopulationUniques(
                    limit=risk.population_uniques,
                    population_size=risk.population_size,
                    estimator=risk.estimator,
                    suppress=risk.suppress,
                )
            )
    needs_table = spec.k_map is not None and spec.k_map.population_size is None
    if (needs_table or spec.delta_presence is not None) and population is None:
        raise AnonymizationError(
            "k_map and delta_presence need the population table (privacy.population)"
        )
    if spec.k_map is not None:
        km = spec.k_map
        if km.population_size is None:
            models.append(KMap(k=km.k, population=population))
        else:
            models.append(
                EstimatedKMap(
                    k=km.k,
                    population_size=km.population_size,
                    significance=km.significance,
                    estimator=km.estimator,
                )
            )
    if spec.delta_presence is not None:
        models.append(PresenceUpperBound(delta_max=spec.delta_presence.max, population=population))
        if spec.delta_presence.min > 0:
            models.append(
                PresenceLowerBound(delta_min=spec.delta_presence.min, population=population)
            )
    return models
