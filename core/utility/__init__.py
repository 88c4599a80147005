"""Utility of a release: what it keeps of the original table, measured and gated.

* :func:`measure_utility` runs every measure a policy's ``utility`` section asks for on a
  release and its original rows (matched by index) and returns a :class:`UtilityReport`;
* :func:`check_utility` evaluates the policy's thresholds on it and returns a
  :class:`UtilityDecision`, which blocks the release like a privacy gate does.

The measures, one module each: faithful encoding of generalized values
(:func:`encode_features`), classification (:func:`classification_utility`), clustering
(:func:`clustering_utility`, :func:`f_measure`, :func:`match_point`), the engine's metrics on a
release (:func:`release_metrics`) and per-column total variation (:func:`total_variation`).
Information loss is :func:`privgate.core.metrics.table_loss`.

scikit-learn is imported when a classifier or a clustering runs, not on import.
"""

from __future__ import annotations

from privgate.core.utility._classification import (
    CLASSIFIERS,
    ClassificationUtility,
    ModelScore,
    classification_utility,
)
from privgate.core.utility._clustering import (
    CLUSTERINGS,
    ClusteringScore,
    ClusteringUtility,
    cluster_labels,
    clustering_utility,
    f_measure,
    match_point,
)
from privgate.core.utility._distribution import distribution_distances, total_variation
from privgate.core.utility._encoding import (
    AttributeDomain,
    describe_domains,
    encode_features,
    factorize_labels,
)
from privgate.core.utility._gate import (
    CHANCE_RULE,
    UtilityDecision,
    baseline_at_chance,
    check_utility,
)
from privgate.core.utility._measure import (
    UtilityReport,
    measure_utility,
    utility_spec,
)
from privgate.core.utility._metrics import release_metrics

__all__ = [
    "CHANCE_RULE",
    "CLASSIFIERS",
    "CLUSTERINGS",
    "AttributeDomain",
    "ClassificationUtility",
    "ClusteringScore",
    "ClusteringUtility",
    "ModelScore",
    "UtilityDecision",
    "UtilityReport",
    "baseline_at_chance",
    "check_utility",
    "classification_utility",
    "cluster_labels",
    "clustering_utility",
    "describe_domains",
    "distribution_distances",
    "encode_features",
    "f_measure",
    "factorize_labels",
    "match_point",
    "measure_utility",
    "release_metrics",
    "total_variation",
    "utility_spec",
]
