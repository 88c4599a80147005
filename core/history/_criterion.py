"""The cross-release criterion: what every release published so far, combined, still protects.

The attacker downloads every release of a dataset and knows a target's quasi-identifiers and
on which nights the target was present (the strongest assumption). In each release the target
sits in one published class, and the target's sensitive value is one of that class's published
values. Combining the releases (the composition attack of Ganta, Kasiviswanathan & Smith 2008;
the re-publication setting of m-invariance, Xiao & Tao 2007):

* **possible values**: for each sensitive column the policy protects with l-diversity, the
  target's value must be among the published values of its class in *every* release the target
  appears in, so the attacker intersects those sets. At least l distinct values must be left.
* **candidates**: in every release the target is in, the records of the target's class whose
  protected values lie in those intersections are the records that can still be the target's;
  the others are ruled out. The people those records belong to are the target's candidates
  there (with a person key a class protects persons, not rows, as the single-release check
  counts them). The intersection narrows earlier releases too (Monday's class of five can
  shrink to two candidates once Tuesday rules values out), so the fewest candidates over the
  target's releases must be at least k. (The history keeps which person published which
  values in which class, so a release read back from it counts people too; only a release
  recorded before the history kept that is counted in matching records, which overstates the
  candidates when a person has several rows in it.)

The verdict is computed incrementally (:mod:`privgate.core.history._incremental`): a person's
possible values and fewest candidates so far are kept release by release, and only what a new
release changes is recounted.

This is the stated equivalent of m-invariance's condition (every person's class keeps the same
set of sensitive values across releases) that privgate enforces: instead of demanding that
signatures never change, it measures what their changes reveal, so it holds under insertions,
deletions and updates of any kind between nights, evaluated on what was actually published.
Values are assumed static per person (the attacker's best case); a released column that is not
a protected sensitive column is not used to link records (declare it a quasi-identifier if it
can). A person with several rows in one release is in each class one of their rows is in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from privgate.core.history._incremental import CrossReleaseResult, CrossReleaseState
from privgate.core.history._store import PastRelease

__all__ = [
    "CrossReleaseResult",
    "CrossReleaseState",
    "check_cross_release",
    "exposure",
    "protect_across_releases",
    "release_snapshot",
]


def release_snapshot(
    release_id: str,
    people: Sequence[object],
    class_ids: Sequence[int],
    sensitive: Mapping[str, Sequence[object]] | None = None,
) -> PastRelease:
    """A release in the criterion's terms, from one row per released record.

    Parameters
    ----------
    people : sequence
        The record's person (or record) key, aligned with the release's rows.
    class_ids : sequence of int
        The published class of each row (rows with the same generalized quasi-identifiers).
    sensitive : mapping, optional
        Per protected sensitive column, the published value of each row.
    """
    class_ids = np.asarray(class_ids, dtype=np.int64)
    membership = pd.Series(class_ids, index=pd.Index([str(p) for p in people], dtype=object))
    columns = tuple(sensitive or {})
    records = list(
        zip(*[[str(v) for v in (sensitive or {})[c]] for c in columns], strict=True)
    ) if columns else [()] * len(class_ids)  # fmt: skip
    counts: dict[int, Counter] = {}
    owners: dict[int, dict[tuple, set]] = {}
    for person, class_id, record in zip(membership.index, class_ids.tolist(), records, strict=True):
        counts.setdefault(int(class_id), Counter())[record] += 1
        owners.setdefault(int(class_id), {}).setdefault(record, set()).add(person)
    return PastRelease(release_id, membership, columns, counts, owners)


def check_cross_release(
    new: PastRelease,
    past: Sequence[PastRelease] | CrossReleaseState,
    *,
    k: int,
    l_required: Mapping[str, int] | None = None,
) -> CrossReleaseResult:
    """Combine ``new`` with the ``past`` releases and check every person of ``new``.

    Only people present in ``new`` are checked (a person the new release leaves out gains the
    attacker nothing from it), against every release they are in. ``l_required`` maps each
    protected sensitive column to its l. ``past`` is the earlier releases, oldest first, or
    the :class:`CrossReleaseState` they fold into (kept across checks, it is not recounted).
    """
    return _state(past).check(new, k=k, l_required=l_required)


def exposure(
    releases: Sequence[PastRelease] | CrossReleaseState,
    people: pd.Index | None = None,
    *,
    k: int,
    l_required: Mapping[str, int] | None = None,
    earlier: int | None = None,
) -> CrossReleaseResult:
    """What an attacker holding ``releases`` learns about each of ``people``.

    For each person: the possible values of each protected column (intersected over the
    releases they appear in) and the fewest candidates of their class over those releases.
    ``people`` defaults to everyone who appears in any release (the attack at
    the end of a history, as the benchmark measures it).
    """
    return _state(releases).exposure(people, k=k, l_required=l_required, earlier=earlier)


def _state(releases: Sequence[PastRelease] | CrossReleaseState) -> CrossReleaseState:
    if isinstance(releases, CrossReleaseState):
        return releases
    return CrossReleaseState.of(releases)


def protect_across_releases(
    release_id: str,
    people: Sequence[object],
    class_ids: Sequence[int],
    sensitive: Mapping[str, Sequence[object]],
    past: Sequence[PastRelease] | CrossReleaseState,
    *,
    k: int,
    l_required: Mapping[str, int] | None = None,
    max_removed: int,
) -> tuple[np.ndarray, CrossReleaseResult]:
    """Remove from a release the people its combination with ``past`` would expose.

    Repeats until the criterion holds (removing a person changes their classes' values and
    candidates, which can expose someone else). Returns the mask of rows to keep (all rows of a
    removed person go) and the final result. It removes at most ``max_removed`` people (what is
    left of the suppression budget, in people: rows when every row is its own person); beyond
    that the release is returned as it is with a failing result, so the gate blocks it.
    """
    people = np.asarray([str(p) for p in people], dtype=object)
    class_ids = np.asarray(class_ids)
    past = _state(past)  # folded once, checked on every pass
    keep = np.ones(len(people), dtype=bool)
    while True:
        snapshot = release_snapshot(
            release_id,
            people[keep],
            class_ids[keep],
            {c: np.asarray(v, dtype=object)[keep] for c, v in sensitive.items()},
        )
        result = check_cross_release(snapshot, past, k=k, l_required=l_required)
        if result.passed:
            return keep, result
        doomed = np.isin(people, np.asarray(result.exposed, dtype=object)) & keep
        if len(set(people[~keep | doomed].tolist())) > max_removed:
            return keep, result
        keep &= ~doomed
