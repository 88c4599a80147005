"""DP releases of record-level tables from a policy: MST and AIM synthetic data, SafePub.

The DP branch's other methods release noisy counts (DPHeter); these release one row per record:
synthetic records (:mod:`~privgate.core.dp.synthetic`) or sampled, generalized real records
(:mod:`~privgate.core.dp.safepub`). This module reads their public inputs from the policy (the
released columns and their declared domains, the settings), runs them through the release's
accountant, and describes the result as a :class:`~privgate.core.dp.release.DPTable`, so the
flow, the ledger, the gate and the report treat every DP method alike.
"""

from __future__ import annotations

import time

import pandas as pd

from privgate.core.dp._accountant import Accountant
from privgate.core.dp.journal import JournaledAccountant
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.release import DPTable
from privgate.core.dp.safepub import SafePubConfig, safepub_release
from privgate.core.dp.synthetic import (
    SyntheticConfig,
    SyntheticDomains,
    records_from_draw,
    synthesize,
)
from privgate.core.hierarchy import Hierarchy, value_key
from privgate.core.policy import ColumnType, ReleasePolicy

__all__ = ["allowed_values", "microdata_release", "rederived_rows", "synthetic_domains"]


def synthetic_domains(policy: ReleasePolicy, hierarchies: dict[str, Hierarchy]) -> SyntheticDomains:
    """The released columns' declared domains (the policy model has already required them)."""
    categorical: dict[str, list[str]] = {}
    numeric: dict[str, tuple[float, float]] = {}
    integer = set()
    for name in policy.dp_released_columns:
        spec = policy.columns[name]
        if spec.type in (ColumnType.INTEGER, ColumnType.FLOAT):
            numeric[name] = (float(spec.minimum), float(spec.maximum))
            if spec.type is ColumnType.INTEGER:
                integer.add(name)
            continue
        categorical[name] = _listed(name, policy, hierarchies)
    return SyntheticDomains(policy.dp_released_columns, categorical, numeric, frozenset(integer))


def _listed(name: str, policy: ReleasePolicy, hierarchies: dict[str, Hierarchy]) -> list[str]:
    hierarchy = hierarchies.get(name)
    listed = getattr(hierarchy, "domain", None) if hierarchy is not None else None
    values = listed if listed is not None else policy.columns[name].categories
    return [value_key(v) for v in values]


def allowed_values(policy: ReleasePolicy, table: DPTable) -> dict[str, set[str] | tuple]:
    """What the gate accepts in each released column (from the declared domains only).

    Categorical: the declared values (SafePub: the labels of its scheme's level). Numeric:
    ``(minimum, maximum, integer)``.
    """
    domains = table.domains
    allowed: dict[str, set[str] | tuple] = {}
    for name, values in domains.get("released_labels", domains.get("categorical", {})).items():
        allowed[name] = set(values)
    for name, (low, high) in domains.get("numeric", {}).items():
        allowed[name] = (low, high, name in domains.get("integer", []))
    return allowed


def microdata_release(
    frame: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: dict[str, Hierarchy],
    accountant: Accountant,
) -> DPTable:
    """Run the policy's mst, aim or safepub release through ``accountant``."""
    dp = policy.differential_privacy
    started = time.perf_counter()
    if dp.method in ("mst", "aim"):
        domains = synthetic_domains(policy, hierarchies)
        config = SyntheticConfig(
            dp.method,
            dp.epsilon,
            dp.delta,
            numeric_bins=dp.numeric_bins,
            max_integer_keys=dp.max_integer_keys,
            aim_degree=dp.aim_degree,
            aim_rounds=dp.aim_rounds,
        )
        result = synthesize(frame, domains, config, accountant)
        public = result.public()
        declared = domains.to_dict()
        owner = result.owner
        split = {"zcdp_rho": result.rho}
    else:
        listed = {name: _listed(name, policy, hierarchies) for name in policy.dp_released_columns}
        qi_hierarchies = {q: hierarchies[q] for q in policy.quasi_identifiers if q in hierarchies}
        config = SafePubConfig(dp.epsilon, dp.delta, dp.search_share, dp.steps)
        result = safepub_release(frame, listed, qi_hierarchies, config, accountant)
        public = result.to_dict()
        labels = {}
        for name, values in listed.items():
            level = result.scheme.get(name, 0)
            hierarchy = qi_hierarchies.get(name)
            labels[name] = (
                sorted({str(v) for v in hierarchy.generalize(values)[:, level]})
                if hierarchy is not None
                else values
            )
        declared = {"columns": list(listed), "categorical": listed, "released_labels": labels}
        owner = result.owner
        split = {
            "epsilon_anon": result.epsilon_anon,
            "epsilon_search": result.epsilon_search,
            "epsilon_selections": result.epsilon_selections,
            "schemes": result.schemes,
        }
    epsilon, delta = accountant.total
    draws = (
        [r.to_dict() for r in accountant.used_draws]
        if isinstance(accountant, JournaledAccountant)
        else []
    )
    return DPTable(
        frame=result.frame,
        epsilon=epsilon,
        delta=delta,
        spends=[spend.to_dict() for spend in accountant.entries],
        budget_split=split,
        specializations=[],
        cuts={},
        domains=declared,
        draws=draws,
        count_draw=None,
        metrics={
            "algorithm": dp.method,
            "rows": len(result.frame),
            "epsilon": epsilon,
            "delta": delta,
            dp.method: public,
        },
        owner={
            **owner,
            "replayed_draws": getattr(accountant, "replayed", 0),
            "seconds": round(time.perf_counter() - started, 4),
        },
    )


def rederived_rows(policy: ReleasePolicy, table: DPTable, ledger: BudgetLedger, release_id: str):
    """The synthetic records the ledger's journaled draw yields (None for SafePub).

    The gate compares them with the written file: every published record is post-processing of
    the draw the ledger holds, re-derived from the ledger rather than taken from the run.
    """
    dp = policy.differential_privacy
    if dp.method not in ("mst", "aim") or len(table.draws) != 1:
        return None
    used = table.draws[0]
    journal = {(d.seq, d.attempt): d for d in ledger.draws(policy.dataset, release_id)}
    record = journal.get((used["seq"], used["attempt"]))
    if record is None or not record.completed:
        return None  # the gate's ledger check names the missing draw
    declared = table.domains
    domains = SyntheticDomains(
        list(declared["columns"]),
        {k: list(v) for k, v in declared["categorical"].items()},
        {k: (float(v[0]), float(v[1])) for k, v in declared["numeric"].items()},
        frozenset(declared["integer"]),
    )
    config = SyntheticConfig(
        dp.method,
        dp.epsilon,
        dp.delta,
        numeric_bins=dp.numeric_bins,
        max_integer_keys=dp.max_integer_keys,
        aim_degree=dp.aim_degree,
        aim_rounds=dp.aim_rounds,
    )
    frame, _, _, _ = records_from_draw(record.value, domains, config)
    return list(frame.itertuples(index=False, name=None))
