"""Nightly releases of a changing table, and the attack that intersects them all.

A simulation for the benchmark and the tests: a table changes every night (some people leave,
some arrive, some change a quasi-identifier), is released every night by the policy's
algorithm, and an attacker who downloaded every release and knows everyone's quasi-identifiers
and presence intersects them (:func:`~privgate.core.history.exposure`). Run with
``protect=False`` it measures the attack on plain nightly releases; with ``protect=True`` each
night's release first goes through the cross-release criterion, removing the people it would
expose within the suppression limit, or publishing nothing that night. The history is kept
as a :class:`~privgate.core.history.CrossReleaseState` across nights: each night's check and
the final attack recount only what that night changed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privgate.core.history._criterion import exposure, protect_across_releases, release_snapshot
from privgate.core.history._incremental import CrossReleaseState
from privgate.core.history._release import history_requirements
from privgate.core.history._store import PastRelease

__all__ = ["Churn", "NightResult", "SimulationResult", "simulate_nightly_releases"]


@dataclass(frozen=True)
class Churn:
    """Shares of the table that change each night, and how many nights."""

    nights: int = 30
    inserts: float = 0.01
    deletes: float = 0.01
    updates: float = 0.01
    seed: int = 0


@dataclass(frozen=True)
class NightResult:
    night: int
    rows: int
    released: int
    suppressed_by_search: int
    removed_by_history: int
    published: bool
    granularity: float | None
    levels: dict
    seconds: float


@dataclass
class SimulationResult:
    nights: list[NightResult] = field(default_factory=list)
    attack: dict = field(default_factory=dict)
    #: The published releases, oldest first (what a release history would hold).
    releases: list[PastRelease] = field(default_factory=list)

    def summary(self) -> dict:
        published = [n for n in self.nights if n.published]
        return {
            "nights_published": len(published),
            "nights_blocked": len(self.nights) - len(published),
            "mean_granularity": float(np.mean([n.granularity for n in published]))
            if published
            else None,
            "mean_suppressed": float(
                np.mean([n.suppressed_by_search + n.removed_by_history for n in published])
            )
            if published
            else None,
            "mean_removed_by_history": float(np.mean([n.removed_by_history for n in published]))
            if published
            else None,
            "distinct_generalizations": len({tuple(sorted(n.levels.items())) for n in published}),
            **self.attack,
        }


def _churn(
    table: pd.DataFrame, pool: pd.DataFrame, key: str, qis: list[str], churn: Churn, rng, next_id
) -> tuple[pd.DataFrame, int]:
    n = len(table)
    leaving = rng.choice(n, size=int(round(churn.deletes * n)), replace=False)
    table = table.drop(table.index[leaving])
    arriving = pool.iloc[rng.choice(len(pool), size=int(round(churn.inserts * n)), replace=True)]
    arriving = arriving.assign(**{key: [f"p{next_id + i}" for i in range(len(arriving))]})
    next_id += len(arriving)
    table = pd.concat([table, arriving], ignore_index=True)
    changing = rng.choice(len(table), size=int(round(churn.updates * len(table))), replace=False)
    for row in changing:
        column = qis[rng.integers(len(qis))]
        donor = pool.iloc[rng.integers(len(pool))]
        table.iloc[row, table.columns.get_loc(column)] = donor[column]
    return table.reset_index(drop=True), next_id


def simulate_nightly_releases(
    base: pd.DataFrame,
    pool: pd.DataFrame,
    policy,
    hierarchies: dict,
    *,
    key: str,
    churn: Churn,
    protect: bool,
    margin: float = 0.0,
    progress=None,
) -> SimulationResult:
    """Release ``base`` every night while it changes; measure what every release exposes.

    Parameters
    ----------
    base : DataFrame
        Night 1's table, with a person-key column ``key`` (not a policy column).
    pool : DataFrame
        Rows new people and updated values are drawn from (same policy columns).
    policy, hierarchies
        A k-anonymous release policy and its hierarchies (the engine's :func:`anonymize`).
    protect : bool
        Apply the cross-release criterion before each night's release.
    margin : float, default=0.0
        Search each night for classes of at least ``ceil(k * (1 + margin))`` (the policy's k
        still being what is checked), so that people leaving later do not take a class below
        k: the forward-looking half of the protection.
    """
    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup

    rng = np.random.default_rng(churn.seed)
    qis = list(policy.quasi_identifiers)
    k, l_required = history_requirements(policy)  # the same criterion as the release flow
    searched = policy
    if margin:
        searched = policy.with_overrides(**{"privacy.k": math.ceil(k * (1 + margin))})
    table = base.reset_index(drop=True)
    next_id = len(table) + 1_000_000
    history = CrossReleaseState()  # every published night, folded in as it is published
    result = SimulationResult()
    for night in range(churn.nights):
        started = time.perf_counter()
        if night:
            table, next_id = _churn(table, pool, key, qis, churn, rng, next_id)
        frame = table.drop(columns=[key])
        [anonymized] = stages.anonymize(frame, SearchSetup.from_policy(searched, hierarchies))
        release = anonymized.frame
        people = table.loc[release.index, key].to_numpy()
        class_ids = pd.factorize(pd.MultiIndex.from_frame(release[qis].astype(str)))[0]
        sensitive = {c: release[c].astype(str).to_numpy() for c in l_required}
        removed = 0
        published = True
        if protect:
            budget = math.floor(policy.privacy.suppression_limit * len(frame))
            budget -= anonymized.result.n_suppressed
            keep, check = protect_across_releases(
                f"night-{night}", people, class_ids, sensitive, history,
                k=k, l_required=l_required, max_removed=max(budget, 0),
            )  # fmt: skip
            published = check.passed
            removed = int((~keep).sum())
            people, class_ids = people[keep], class_ids[keep]
            sensitive = {c: v[keep] for c, v in sensitive.items()}
        if published:
            snapshot = release_snapshot(f"night-{night}", people, class_ids, sensitive)
            history.add(snapshot)
            result.releases.append(snapshot)
        night_result = NightResult(
            night=night + 1,
            rows=len(frame),
            released=len(people) if published else 0,
            suppressed_by_search=anonymized.result.n_suppressed,
            removed_by_history=removed,
            published=published,
            granularity=anonymized.metrics.get("granularity"),
            levels=dict(anonymized.result.levels or {}),
            seconds=round(time.perf_counter() - started, 2),
        )
        result.nights.append(night_result)
        if progress is not None:
            progress(night_result)
    if len(history):
        attack = exposure(history, k=k, l_required=l_required)
        several = attack.measurements["people_in_several_releases"]
        people_total = attack.measurements["people_checked"]
        result.attack = {
            "people_published": people_total,
            "people_in_several_releases": several,
            "share_below_k": len(attack.exposed_k) / people_total if people_total else 0.0,
            "share_disclosed": len(attack.exposed_l) / people_total if people_total else 0.0,
            "share_confident": float(
                (attack.confidence > 1 / max(l_required.values(), default=1) + 1e-12).mean()
            )
            if l_required and people_total
            else 0.0,
            "below_k": len(attack.exposed_k),
            "disclosed": len(attack.exposed_l),
            "min_candidates": attack.measurements["min_candidates"],
        }
    return result
