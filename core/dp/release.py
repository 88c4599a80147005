"""A differentially private release of a policy's table, charged to the ε ledger as it runs.

The accounting is write-ahead: :class:`LedgerAccountant` commits every mechanism's spend to the
dataset's lifetime account *before* the mechanism draws its noise (the mechanisms charge their
accountant first, see :mod:`core.dp.mechanisms`). So a crash after noise was drawn has already
been counted, and a release that would overspend is refused before any noise exists for it. The
caller keeps the noisy result (Prefect persists it) so that a rerun of the same release reuses
it and spends nothing more.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pandas as pd

from privgate.core.dp import Accountant, Spend
from privgate.core.dp.ledger import BudgetLedger, default_ledger_url
from privgate.core.hierarchy import Hierarchy
from privgate.core.policy import ColumnType, ReleasePolicy

__all__ = [
    "COUNT_COLUMN",
    "DPTable",
    "LedgerAccountant",
    "check_dp_utility",
    "dp_release",
    "ledger_for",
    "ledger_url_for",
]

#: The column of noisy counts in a DP release (one row per leaf partition).
COUNT_COLUMN = "count"
#: The class column added when the class is the data owner's clustering of the original data.
CLUSTER_COLUMN = "cluster"


def ledger_url_for(policy: ReleasePolicy) -> str:
    """The ledger a DP policy charges: ``differential_privacy.ledger`` or a SQLite file next
    to the releases (``<output.directory>/privacy-ledger.sqlite``)."""
    dp = policy.differential_privacy
    if dp is not None and dp.ledger:
        return dp.ledger
    return default_ledger_url(policy.output.directory)


def ledger_for(policy: ReleasePolicy) -> BudgetLedger:
    """The :class:`BudgetLedger` at :func:`ledger_url_for`."""
    return BudgetLedger(ledger_url_for(policy))


class LedgerAccountant(Accountant):
    """An accountant whose every charge is first committed to the dataset's lifetime account.

    The per-release cap (the policy's ε, δ) is enforced by the accountant, the lifetime budget by
    the ledger; a charge that fails either raises
    :class:`~privgate.core.exceptions.BudgetExceededError` before the mechanism draws.
    """

    def __init__(
        self,
        ledger: BudgetLedger,
        dataset: str,
        release_id: str,
        run_id: str,
        budget: tuple[float, float],
    ) -> None:
        super().__init__(budget=budget)
        self._ledger = ledger
        self._dataset = dataset
        self._release_id = release_id
        self._run_id = run_id

    def charge(self, spend: Spend) -> None:
        label = f"{spend.mechanism} for {spend.step!r}" if spend.step else spend.mechanism
        self.check_affordable(spend.epsilon, spend.delta, what=label)
        self._ledger.charge(
            self._dataset, release_id=self._release_id, run_id=self._run_id, spends=[spend]
        )
        super().charge(spend)


@dataclass(frozen=True)
class DPTable:
    """The DP release table and how its budget was spent."""

    frame: pd.DataFrame
    epsilon: float
    delta: float
    spends: list[dict]
    budget_split: dict
    specializations: list[dict]
    cuts: dict
    class_source: str
    metrics: dict = field(default_factory=dict)
    #: The flow run that drew the noise (and whose ledger entries paid for it).
    run_id: str = ""
    #: The data owner's utility check (clustering releases): F-measure and MatchPoint of the
    #: release's clustering against the owner's clustering of the original records. Computed
    #: on the private data, so it is *not* differentially private: it goes to the run's log and
    #: artifacts, never into the published manifest.
    utility: dict = field(default_factory=dict)


def _class_column(frame: pd.DataFrame, policy: ReleasePolicy) -> tuple[pd.DataFrame, str, str]:
    """The class the specializations are scored by: a column, or the owner's clustering."""
    from privgate.core.dp.dpheter import cluster_class_labels

    dp = policy.differential_privacy
    if dp.class_column is not None:
        return frame, dp.class_column, f"column {dp.class_column!r}"
    method = "bisecting" if dp.clustering == "bisecting_kmeans" else "kmeans"
    labels = cluster_class_labels(frame, policy.quasi_identifiers, dp.clusters, method=method)
    scored = frame.assign(**{CLUSTER_COLUMN: [f"c{label}" for label in labels]})
    return scored, CLUSTER_COLUMN, f"{dp.clustering} clustering into {dp.clusters} clusters"


def dp_release(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    accountant: Accountant,
    run_id: str = "",
) -> DPTable:
    """DPHeter: differentially private top-down specialization of the quasi-identifiers.

    Categorical quasi-identifiers are specialized down their hierarchies, numeric ones
    (``type: integer`` or ``float``) by split points chosen with the exponential mechanism; the
    leaf partitions are released with noisy counts. Every spend goes through ``accountant``.
    """
    from privgate.core.dp.dpheter import DPHeterConfig, dpheter_release

    dp = policy.differential_privacy
    started = time.perf_counter()
    qis = policy.quasi_identifiers
    numeric = [q for q in qis if policy.columns[q].type in (ColumnType.INTEGER, ColumnType.FLOAT)]
    categorical = {q: hierarchies[q] for q in qis if q not in numeric}
    scored, class_column, class_source = _class_column(frame, policy)
    config = DPHeterConfig(
        epsilon=dp.epsilon, rounds=dp.rounds, count_share=dp.count_share, score=dp.score
    )
    # Numeric domains must be public (DiffGen's assumption): the policy's declared bounds, never
    # the data's own minimum and maximum (the policy requires them for a DP release).
    bounds = {q: (policy.columns[q].minimum, policy.columns[q].maximum) for q in numeric}
    result = dpheter_release(
        scored,
        class_column=class_column,
        categorical=categorical,
        numeric=numeric,
        config=config,
        accountant=accountant,
        numeric_bounds=bounds,
    )
    # The exact information-gain scores are the data owner's audit, not publishable.
    public = result.to_dict()
    epsilon, delta = accountant.total
    table = result.table
    utility = {}
    if dp.clusters is not None:
        # The noise is drawn and paid for: a failure of this (non-private, owner-side) check
        # must not lose it, or a rerun would draw and pay again. It is reported instead.
        try:
            utility = _clustering_agreement(result, scored, policy)
        except Exception as exc:  # noqa: BLE001 - any failure, reported as data
            utility = {"error": f"{type(exc).__name__}: {exc}"}
    metrics = {
        "algorithm": "dpheter",
        "input_rows": len(frame),
        "partitions": len(table),
        "noisy_total": int(table[COUNT_COLUMN].sum()),
        "epsilon": epsilon,
        "delta": delta,
        "seconds": round(time.perf_counter() - started, 4),
    }
    return DPTable(
        frame=table,
        epsilon=epsilon,
        delta=delta,
        spends=[spend.to_dict() for spend in accountant.entries],
        budget_split=dict(public["budget"]),
        specializations=list(public["specializations"]),
        cuts=dict(public["cuts"]),
        class_source=class_source,
        metrics=metrics,
        run_id=run_id,
        utility=utility,
    )


def _clustering_agreement(result, scored: pd.DataFrame, policy: ReleasePolicy) -> dict:
    """Cluster the release as the owner clustered the original; compare the two labelings."""
    from privgate.core.dp.dpheter import cluster_release
    from privgate.core.utility import f_measure, match_point

    dp = policy.differential_privacy
    method = "bisecting" if dp.clustering == "bisecting_kmeans" else "kmeans"
    original = scored[CLUSTER_COLUMN].to_numpy()
    released = cluster_release(result, scored, dp.clusters, method=method)
    return {
        "clustering": dp.clustering,
        "clusters": dp.clusters,
        "f_measure": float(f_measure(original, released)),
        "match_point": float(match_point(original, released)),
    }


def check_dp_utility(table: DPTable, policy: ReleasePolicy):
    """The utility gate of a DP release: the policy's ``min_f_measure`` / ``min_match_point``
    against the owner's clustering agreement (see :attr:`DPTable.utility`)."""
    from privgate.core.utility import UtilityDecision

    thresholds = policy.utility.thresholds if policy.utility is not None else None
    checks, reasons = [], []
    for key, measure in (("min_f_measure", "f_measure"), ("min_match_point", "match_point")):
        limit = getattr(thresholds, key, None) if thresholds is not None else None
        if limit is None:
            continue
        measured = table.utility.get(measure)
        held = measured is not None and measured >= limit
        if "error" in table.utility:
            reasons.append(f"utility.thresholds.{key}: not measured ({table.utility['error']})")
            checks.append({"threshold": key, "limit": limit, "subject": measure, "held": False})
            continue
        checks.append(
            {
                "threshold": key,
                "limit": limit,
                "subject": measure,
                "measured": measured,
                "held": held,
            }
        )
        if not held:
            reasons.append(
                f"utility.thresholds.{key} = {limit:g} not met: {measure} of the release's "
                f"clustering is {measured:.4f}"
                if measured is not None
                else f"utility.thresholds.{key}: not measured (set differential_privacy.clusters)"
            )
    return UtilityDecision(not reasons, reasons, {"checks": checks, "measured": table.utility})
