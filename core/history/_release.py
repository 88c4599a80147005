"""The release history in a run: what the search asks for, what the gate checks, what is recorded.

A policy with ``history: {check: true}`` makes the release flow (1) search for classes of
``ceil(k * (1 + margin))`` records (:func:`searched_policy`), so people who leave on later
nights do not take a class below k; (2) remove, before staging, the people the new release
combined with every recorded one would expose, within the suppression limit
(:func:`~privgate.core.history.protect_across_releases`); (3) check the *written* release
against the history in the gate (:func:`check_written_release`), blocking it when anyone is
still exposed; and (4) record it in the history in the same transaction as publishing it.

The criterion's k is the policy's k and its l the policy's l-diversity levels read in their
distinct-value form (``ceil(l)`` distinct values: necessary for every l-diversity variant,
since entropy and recursive l-diversity both imply it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from privgate.core.exceptions import HistoryError
from privgate.core.gate import GateDecision, read_release
from privgate.core.history._criterion import (
    CrossReleaseResult,
    CrossReleaseState,
    check_cross_release,
    release_snapshot,
)
from privgate.core.history._store import PastRelease
from privgate.core.policy import ReleasePolicy

__all__ = [
    "HistoryEntry",
    "check_entry_is_published",
    "check_written_release",
    "history_by_default",
    "history_requirements",
    "removal_budget",
    "searched_policy",
    "with_history",
]


def history_requirements(policy: ReleasePolicy) -> tuple[int, dict[str, int]]:
    """The criterion's k and, per sensitive column with l-diversity, its distinct-value l."""
    privacy = policy.privacy
    if privacy is None:
        raise ValueError("the release history is for k-anonymous policies")
    l_required: dict[str, int] = {}
    for spec in privacy.l_diversity or []:
        l_required[spec.column] = max(l_required.get(spec.column, 1), math.ceil(spec.l))
    return int(privacy.k), l_required


def history_by_default(policy: ReleasePolicy) -> tuple[ReleasePolicy, str]:
    """The policy with the release history turned on where it can be, and why (or why not).

    What nightly deployments run: a k-anonymous, single-release policy that names who a row
    is — its person key, else its only identifier column — is checked against the dataset's
    earlier releases and recorded. A policy's own ``history`` section always wins (including
    ``check: false``); a DP policy composes through the ε ledger; a policy with no key, or
    several identifiers and no person key, cannot follow anyone from one night to the next.
    """
    if policy.differential_privacy is not None:
        return policy, "differentially private: releases compose through the ε ledger"
    if policy.history is not None:
        on = "on" if policy.history.check else "off"
        return policy, f"the policy's own history section ({on})"
    if policy.algorithm.name.value == "tiered":
        return policy, "a tiered run makes several releases at once (not checked)"
    key = policy.privacy.person_key
    if key is None and len(policy.identifiers) == 1:
        key = policy.identifiers[0]
    if key is None:
        found = ", ".join(policy.identifiers) or "none"
        return policy, (
            f"no person key and not exactly one identifier column ({found}): nobody can be "
            "followed from one release to the next (not checked)"
        )
    checked = policy.with_overrides(**{"history.check": True, "history.key": key})
    return checked, f"on, following {key!r} from one release to the next"


def searched_policy(policy: ReleasePolicy) -> ReleasePolicy:
    """The policy the search runs with: ``k`` raised by ``history.margin`` (the gate and the
    criterion still check the policy's own k)."""
    if policy.history_key is None or policy.history is None or not policy.history.margin:
        return policy
    k = int(policy.privacy.k)
    return policy.with_overrides(**{"privacy.k": math.ceil(k * (1 + policy.history.margin))})


@dataclass(frozen=True)
class HistoryEntry:
    """What publishing a release adds to the history (owner-only, never published)."""

    snapshot: PastRelease
    key: str
    class_labels: dict[int, list[str]] = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    #: The release file's name in its folder (:func:`check_entry_is_published` re-reads it).
    file_name: str = ""
    #: The history key of each row of the file, in its order (written owner-only before the
    #: release is published, so a release published and not recorded can be recorded later).
    row_keys: tuple[str, ...] = ()


def check_written_release(
    release_file,
    keys: Sequence[object],
    policy: ReleasePolicy,
    past: Sequence[PastRelease] | CrossReleaseState,
    release_id: str,
) -> tuple[CrossReleaseResult, HistoryEntry]:
    """The cross-release criterion on the release as written.

    ``keys`` are the history key of each written row, in the written order (kept in memory by
    the staging step, never written). Classes are the rows with equal quasi-identifier cells as
    the file holds them, so the check sees exactly what a recipient downloads.
    """
    k, l_required = history_requirements(policy)
    rows = len(keys)
    frame, sensitive = _written_classes(release_file, policy)
    if len(frame) != rows:
        raise ValueError(f"{rows} history keys for {len(frame)} written rows")
    class_ids, uniques = pd.factorize(pd.MultiIndex.from_frame(frame)) if rows else ([], [])
    snapshot = release_snapshot(release_id, list(keys), class_ids, sensitive)
    result = check_cross_release(snapshot, past, k=k, l_required=l_required)
    labels = {i: [str(v) for v in values] for i, values in enumerate(uniques)}
    checks = {
        "passed": result.passed,
        "past_releases": len(past),
        **result.measurements,
    }
    entry = HistoryEntry(
        snapshot,
        policy.history_key or "",
        labels,
        checks,
        file_name=Path(release_file).name,
        row_keys=tuple(str(k) for k in keys),
    )
    return result, entry


def _written_classes(release_file, policy: ReleasePolicy) -> tuple[pd.DataFrame, dict]:
    """The written quasi-identifier cells (a missing cell is empty) and protected values."""
    cells = read_release(release_file)
    frame = pd.DataFrame({q: cells[q] for q in policy.quasi_identifiers}).fillna("")
    _, l_required = history_requirements(policy)
    return frame, {c: np.asarray(cells[c], dtype=object) for c in l_required}


def _class_rows(labels: Sequence[object], values: Sequence[object]) -> tuple:
    return (tuple(str(v) for v in labels), tuple(str(v) for v in values))


def check_entry_is_published(entry: HistoryEntry, release_file, policy: ReleasePolicy) -> None:
    """Refuse to record ``entry`` unless it describes the release file as published.

    Why: a run that finds its release already published (a retry after a crash between the
    publishing rename and the history write, or a rerun) records the membership *it*
    computed, while recipients hold the file the earlier run wrote. Between the two the
    history may have gained a release (the protection then removes other people) or the
    search may have ended elsewhere; recording the rerun's classes would hide from every
    later check who is really in the published file. The written rows (their classes'
    quasi-identifier labels and protected values) must be the rows the entry describes.

    Raises
    ------
    HistoryError
        The published file's rows differ from the entry's (nothing is recorded).
    """
    frame, sensitive = _written_classes(release_file, policy)
    published = Counter(
        _class_rows(labels, values)
        for labels, values in zip(
            frame.itertuples(index=False, name=None),
            zip(*sensitive.values(), strict=True) if sensitive else [()] * len(frame),
            strict=True,
        )
    )
    described = Counter()
    for class_id, records in entry.snapshot.records.items():
        for values, count in records.items():
            described[_class_rows(entry.class_labels[class_id], values)] += count
    if published != described:
        differ = sum(((published - described) + (described - published)).values())
        raise HistoryError(
            f"release {entry.snapshot.release_id}: the published file {release_file} is not "
            f"the release this run checked ({differ} row(s) differ; it was published by an "
            "earlier run). Nothing recorded: the history must describe what recipients hold. "
            "Record the published file with `privgate history "
            f"{policy.dataset} --record-published {Path(release_file).parent}` (it uses the "
            "row keys the publishing run kept)."
        )


def with_history(
    decision: GateDecision,
    result: CrossReleaseResult,
    policy: ReleasePolicy,
    entry: HistoryEntry,
) -> GateDecision:
    """The gate's decision with the cross-release criterion added (a block says how many
    people the combination exposes, never who)."""
    k, l_required = history_requirements(policy)
    measurements = {**decision.measurements, "history": dict(entry.checks)}
    if result.passed:
        return GateDecision(decision.passed, list(decision.reasons), measurements)
    reasons = [*decision.reasons, *result.reasons(k, l_required)]
    return GateDecision(False, reasons, measurements)


def removal_budget(policy: ReleasePolicy, units: int, suppressed: int) -> int:
    """How many more rows the criterion may remove: what is left of the suppression limit."""
    return max(math.floor(policy.privacy.suppression_limit * units) - suppressed, 0)
