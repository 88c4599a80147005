"""Re-identification risk analysis: attacker models, population uniqueness, uniqueness drivers.

Reads tables (an input or a written release) and reports; the gate criteria that enforce
limits live in :mod:`privgate.core.privacy` and use the same estimators.

The estimators the gate's criteria use (attacker models, size histograms, population
uniqueness) are plain numpy and imported with the package. The analysis of a whole table, its
uniqueness drivers and the policy-level reading import pandas, so their names are loaded on
first use (:func:`__getattr__`): the engine's ``privgate anonymize`` imports
:mod:`privgate.core.privacy`, hence this package, and never needs pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privgate.core.lazy_names import lazy_names
from privgate.core.risk._attackers import (
    AttackerRisk,
    journalist_risk,
    marketer_risk,
    person_risks,
    prosecutor_risk,
)
from privgate.core.risk._histogram import SizeHistogram
from privgate.core.risk._uniqueness import (
    ESTIMATORS,
    PopulationUniqueness,
    estimate_population_uniqueness,
    pitman,
    pitman_parameters,
    population_uniques,
    shlosser,
    snb,
    snb_probabilities,
    zayatz,
)

if TYPE_CHECKING:
    from privgate.core.risk._analysis import (
        DEFAULT_THRESHOLD,
        RiskAnalysis,
        analyse,
        format_analysis,
    )
    from privgate.core.risk._drivers import (
        CombinationUniqueness,
        UniquenessDrivers,
        uniqueness_drivers,
    )
    from privgate.core.risk._policy import analyse_policy, latest_release, read_release_frame

#: Names whose modules import pandas, by module (loaded by :func:`__getattr__` on first use).
_PANDAS_BOUND = {
    "privgate.core.risk._analysis": (
        "DEFAULT_THRESHOLD",
        "RiskAnalysis",
        "analyse",
        "format_analysis",
    ),
    "privgate.core.risk._drivers": (
        "CombinationUniqueness",
        "UniquenessDrivers",
        "uniqueness_drivers",
    ),
    "privgate.core.risk._policy": ("analyse_policy", "latest_release", "read_release_frame"),
}
__getattr__ = lazy_names(__name__, _PANDAS_BOUND)


__all__ = [
    "DEFAULT_THRESHOLD",
    "ESTIMATORS",
    "AttackerRisk",
    "CombinationUniqueness",
    "PopulationUniqueness",
    "RiskAnalysis",
    "SizeHistogram",
    "UniquenessDrivers",
    "analyse",
    "analyse_policy",
    "latest_release",
    "read_release_frame",
    "estimate_population_uniqueness",
    "format_analysis",
    "journalist_risk",
    "marketer_risk",
    "person_risks",
    "pitman",
    "pitman_parameters",
    "population_uniques",
    "prosecutor_risk",
    "shlosser",
    "snb",
    "snb_probabilities",
    "uniqueness_drivers",
    "zayatz",
]
