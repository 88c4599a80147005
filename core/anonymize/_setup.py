"""The search setup: everything the algorithms, the gate and the report take from a policy.

A k-anonymous policy is turned into a :class:`SearchSetup` once per run: the quasi-identifiers
and their hierarchies, the privacy models (each l-diversity or t-closeness model knows the
sensitive column it reads), the numeric quasi-identifiers, the suppression limit, the columns
released and the column naming the individual. Every stage reads these facts from the setup
rather than deriving them from the policy again, so a new capability (a person key, a new
privacy model) is threaded through one place.

:meth:`SearchSetup.check_feasible` holds the refusals that need the table's size (``k`` larger
than the table); :func:`check_k` is the same refusal for callers that only have a ``k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from privgate.core.exceptions import AnonymizationError
from privgate.core.hierarchy import Hierarchy, hierarchies_for, sensitive_hierarchies_for
from privgate.core.metrics import LossMetric, make_metric
from privgate.core.policy import Algorithm, ReleasePolicy
from privgate.core.privacy import (
    KAnonymity,
    PrivacyModel,
    models_from_policy,
    read_population,
    sensitive_columns,
)

if TYPE_CHECKING:
    from privgate.core.policy import MetricName

__all__ = ["SearchSetup", "check_k"]


def check_k(k: int, n_rows: int) -> None:
    """Refuse a ``k`` that no release of an ``n_rows``-row table can meet.

    Raises
    ------
    AnonymizationError
        ``k`` is not an integer >= 1, or it is larger than the table.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AnonymizationError(f"privacy.k = {k!r} must be an integer >= 1")
    if k > n_rows:
        raise AnonymizationError(
            f"privacy.k = {k} is larger than the table ({n_rows} rows): no release of it can "
            f"be {k}-anonymous"
        )


@dataclass(frozen=True)
class SearchSetup:
    """One k-anonymous policy, prepared for the search, the gate and the report.

    Build it with :meth:`from_policy`; the fields are plain values, so tests and benchmarks may
    also build one directly.

    Attributes
    ----------
    algorithm : Algorithm
        The algorithm the policy names (see :data:`privgate.core.anonymize.ALGORITHMS`).
    quasi_identifiers : tuple of str
        In policy order (the order breaks the algorithms' ties).
    hierarchies : mapping of str to Hierarchy
        One per quasi-identifier, in the same order.
    models : tuple of PrivacyModel
        k-anonymity first, then every l-diversity, t-closeness and risk criterion.
    numeric : frozenset of str
        The quasi-identifiers declared ``integer`` or ``float`` (Mondrian cuts them at medians;
        the loss measures them as ranges).
    suppression_limit : float
        Largest fraction of the input's records a release may suppress.
    released_columns : tuple of str
        The release's columns, in order: every declared column but the direct identifiers.
    identifiers : tuple of str
        Direct identifiers: never released (the gate blocks a release that holds one).
    metric : str, default="loss"
        The optimal search's objective.
    metric_options : tuple of (str, object) pairs
        The objective's options (ARX's gs-factor, aggregate, attribute weights, monotonic),
        as :func:`privgate.core.metrics.make_metric` takes them.
    strict : bool, default=True
        Mondrian's strict (or relaxed) median partitioning.
    release_tiers : tuple of int or None
        Tiered policies: the tiers to publish (``None``: the last one, which covers every
        quasi-identifier).
    accept_narrower_coverage : bool
        Tiered policies: whether a release covering fewer quasi-identifiers may be published.
    person_key : str or None
        The column naming the individual when a table holds several records per person
        (issue #16); ``None``: every record is a different person.
    max_evaluations : int, default=3000
        The heuristic search's node evaluations after its greedy climbs.
    max_seconds : float, default=600
        The greedy partitioning's time budget.
    """

    algorithm: Algorithm
    quasi_identifiers: tuple[str, ...]
    hierarchies: Mapping[str, Hierarchy]
    models: tuple[PrivacyModel, ...]
    numeric: frozenset[str]
    suppression_limit: float
    released_columns: tuple[str, ...]
    identifiers: tuple[str, ...] = ()
    metric: MetricName = "loss"
    metric_options: tuple[tuple[str, object], ...] = ()
    strict: bool = True
    release_tiers: tuple[int, ...] | None = None
    accept_narrower_coverage: bool = False
    person_key: str | None = None
    #: The identifier naming a record or person from one release to the next, when the policy
    #: checks releases against the release history (``history.check``); never published.
    history_key: str | None = None
    #: The release's file format (``csv`` or ``parquet``): how the gate reads values back.
    output_format: str = "csv"
    max_evaluations: int = 3000
    max_seconds: float = 600.0

    @classmethod
    def from_policy(
        cls, policy: ReleasePolicy, hierarchies: Mapping[str, Hierarchy] | None = None
    ) -> SearchSetup:
        """The setup of a k-anonymous policy (``hierarchies``: already loaded ones to reuse).

        Raises
        ------
        AnonymizationError
            The policy is differentially private (it has no k-anonymity search).
        HierarchyError, PolicyError
            A hierarchy cannot be loaded.
        """
        if policy.privacy is None:
            raise AnonymizationError(
                "a differential_privacy policy has no k-anonymity search; its release is made "
                "by differential_privacy.method"
            )
        qis = policy.quasi_identifiers
        if hierarchies is None:
            hierarchies = hierarchies_for(policy)
        population = read_population(policy.privacy, {q: hierarchies[q] for q in qis})
        models = models_from_policy(policy.privacy, sensitive_hierarchies_for(policy), population)
        spec = policy.algorithm
        return cls(
            algorithm=spec.name,
            quasi_identifiers=tuple(qis),
            hierarchies={q: hierarchies[q] for q in qis},
            models=tuple(models),
            numeric=frozenset(q for q in qis if policy.columns[q].is_numeric),
            suppression_limit=policy.privacy.suppression_limit,
            released_columns=tuple(policy.released_columns),
            identifiers=tuple(policy.identifiers),
            metric=spec.metric or "loss",
            metric_options=tuple(
                (key, value) for key, value in spec.metric_options.items() if value is not None
            ),
            strict=True if spec.strict is None else spec.strict,
            release_tiers=tuple(spec.release_tiers) if spec.release_tiers else None,
            accept_narrower_coverage=bool(spec.accept_narrower_coverage),
            person_key=policy.privacy.person_key,
            history_key=policy.history_key,
            output_format=policy.output.format,
            max_evaluations=spec.max_evaluations or 3000,
            max_seconds=spec.max_seconds or 600.0,
        )

    def search_metric(self) -> LossMetric:
        """A fresh instance of the search's objective, with its options."""
        options = {key: value for key, value in self.metric_options}
        return make_metric(self.metric, **options)

    @property
    def k(self) -> int:
        """k-anonymity's ``k`` (1 when the models hold no k-anonymity)."""
        return next((m.k for m in self.models if isinstance(m, KAnonymity)), 1)

    @property
    def sensitive(self) -> list[str]:
        """The sensitive columns the privacy models read, sorted."""
        return sensitive_columns(self.models)

    def check_feasible(self, n_rows: int) -> None:
        """Refuse, before any search, what no release of an ``n_rows``-row table can meet.

        Raises
        ------
        AnonymizationError
            ``k`` larger than the table, or a table with no records.
        """
        if n_rows == 0:
            raise AnonymizationError("the table has no records to anonymize")
        check_k(self.k, n_rows)

    def gate_limits(self, input_rows: int | None) -> dict:
        """The gate's limits besides the models, as keyword arguments of
        :func:`privgate.core.gate.verify_table` and its file and Dask variants
        (``input_rows=None``: the suppression limit cannot be checked)."""
        return {
            "input_rows": input_rows,
            "suppression_limit": self.suppression_limit,
            "expected_columns": list(self.released_columns),
            "forbidden_columns": list(self.identifiers),
        }

    def covering(self, columns: Sequence[str]) -> tuple[str, ...]:
        """``columns`` checked against the quasi-identifiers, in policy order."""
        unknown = [c for c in columns if c not in self.hierarchies]
        if unknown:
            raise AnonymizationError(f"{unknown} are not quasi-identifiers of the policy")
        wanted = set(columns)
        return tuple(q for q in self.quasi_identifiers if q in wanted)
