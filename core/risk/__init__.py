"""Re-identification risk analysis: attacker models, population uniqueness, uniqueness drivers.

Reads tables (an input or a written release) and reports; the gate criteria that enforce
limits live in :mod:`privgate.core.privacy` and use the same estimators.
"""

from privgate.core.risk._analysis import DEFAULT_THRESHOLD, RiskAnalysis, analyse, format_analysis
from privgate.core.risk._attackers import (
    AttackerRisk,
    journalist_risk,
    marketer_risk,
    person_risks,
    prosecutor_risk,
)
from privgate.core.risk._drivers import CombinationUniqueness, UniquenessDrivers, uniqueness_drivers
from privgate.core.risk._histogram import SizeHistogram
from privgate.core.risk._policy import analyse_policy, latest_release, read_release_frame
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
