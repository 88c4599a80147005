"""The utility stage: every utility measure of one release, configured by its policy."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ReleasePolicy, Role, UtilitySpec
from privgate.core.utility._classification import ClassificationUtility, classification_utility
from privgate.core.utility._clustering import ClusteringUtility, clustering_utility
from privgate.core.utility._distribution import distribution_distances
from privgate.core.utility._encoding import describe_domains
from privgate.core.utility._metrics import release_metrics

__all__ = ["UtilityReport", "measure_utility", "utility_spec"]


@dataclass(frozen=True)
class UtilityReport:
    """What a release keeps of its original, measured.

    Attributes
    ----------
    loss : dict
        :func:`privgate.core.metrics.table_loss`: ``per_attribute``, ``total``, ``granularity``, ...
    metrics : dict
        :func:`~core.utility.release_metrics`: precision, discernibility, average class size,
        entropy.
    distribution : dict of str to float
        Total variation per released column.
    classification : ClassificationUtility or None
        ``None`` when the policy names no target (or no model).
    clustering : ClusteringUtility or None
        ``None`` when the policy asks for no clustering.
    settings : dict
        The utility settings the measures ran with.
    seconds : float
    """

    loss: dict
    metrics: dict
    distribution: dict[str, float]
    classification: ClassificationUtility | None = None
    clustering: ClusteringUtility | None = None
    settings: dict = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """Plain data (JSON-able) for the manifest and the report."""
        return {
            "loss": self.loss,
            "metrics": self.metrics,
            "distribution": self.distribution,
            "classification": self.classification.to_dict() if self.classification else None,
            "clustering": self.clustering.to_dict() if self.clustering else None,
            "settings": self.settings,
            "seconds": self.seconds,
        }


def utility_spec(policy: ReleasePolicy) -> UtilitySpec:
    """The policy's utility settings; without a ``utility`` section, the cheap measures only.

    A policy without the section gets loss, the engine's metrics and total variation (a
    fraction of a second on Adult), but no classifier and no clustering, so that existing
    releases do not slow down.
    """
    if policy.utility is not None:
        return policy.utility
    return UtilitySpec(models=[], clusters=[], clustering=[])


def measure_utility(
    original: pd.DataFrame,
    release: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy],
    *,
    levels: Mapping[str, int] | None = None,
) -> UtilityReport:
    """Measure the utility of a release as its policy asks.

    Parameters
    ----------
    original : DataFrame
        The validated input.
    release : DataFrame
        The release, each row indexed by its original record (as
        :func:`privgate.core.stages.anonymize` returns it: rows are shuffled only when
        written).
    policy : ReleasePolicy
        Its ``utility`` section sets the target, models, folds, sample, clusters; without one,
        only loss, the engine's metrics and total variation are measured
        (:func:`utility_spec`).
    hierarchies : mapping of str to Hierarchy
        One per quasi-identifier.
    levels : mapping of str to int, optional
        The full-domain transformation, for Sweeney's precision.

    Returns
    -------
    UtilityReport
    """
    from privgate.core.metrics import table_loss

    started = time.perf_counter()
    spec = utility_spec(policy)
    qis = policy.quasi_identifiers
    numeric = {c for c in policy.released_columns if policy.columns[c].is_numeric}
    released = policy.released_columns
    domains = describe_domains(
        original, {c: hierarchies.get(c) if c in qis else None for c in released}, numeric
    )
    qi_domains = {q: domains[q] for q in qis}
    loss = table_loss(
        original[qis], release[qis], {q: hierarchies[q] for q in qis}, numeric & set(qis)
    )
    heights = {q: hierarchies[q].height for q in qis}
    metrics = release_metrics(
        original, release, qi_domains, k=policy.privacy.k, levels=levels or None, heights=heights
    )
    distribution = distribution_distances(release, domains)

    classification = None
    if spec.target is not None and spec.models:
        features = {c: d for c, d in domains.items() if c != spec.target}
        classification = classification_utility(
            original,
            release,
            features,
            spec.target,
            models=spec.models,
            cv=spec.cv_folds,
            sample_size=spec.sample_size,
            seed=spec.seed,
        )
    clustering = None
    if spec.clusters and spec.clustering:
        # Cluster on what the recipient analyses: every released column but the target and the
        # sensitive columns (protected values; the classification measures their use).
        features = {
            c: d
            for c, d in domains.items()
            if c != spec.target and policy.columns[c].role is not Role.SENSITIVE
        }
        clustering = clustering_utility(
            original,
            release,
            features,
            n_clusters=spec.clusters,
            methods=spec.clustering,
            seed=spec.seed,
        )
    return UtilityReport(
        loss=loss,
        metrics=metrics,
        distribution=distribution,
        classification=classification,
        clustering=clustering,
        settings=spec.model_dump(mode="json", exclude={"thresholds"}),
        seconds=round(time.perf_counter() - started, 3),
    )
