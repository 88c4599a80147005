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
  target's releases must be at least k. (A release read back from the history keeps no
  row-to-person link for its values: there the candidates are its matching records, which
  overstates them when a person has several rows in it.)

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
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privgate.core.history._store import PastRelease

__all__ = [
    "CrossReleaseResult",
    "check_cross_release",
    "exposure",
    "protect_across_releases",
    "release_snapshot",
]


@dataclass(frozen=True)
class CrossReleaseResult:
    """The criterion's verdict.

    Attributes
    ----------
    passed : bool
    candidates : Series
        Person -> the fewest candidates (people whose records can still be theirs) left in
        their class of any release they are in.
    exposed_k : list
        People with fewer than ``k`` candidate records.
    exposed_l : list
        People left with fewer than ``l`` possible values of a protected sensitive column.
    measurements : dict
        For the manifest and the report.
    """

    passed: bool
    candidates: pd.Series
    exposed_k: list = field(default_factory=list)
    exposed_l: list = field(default_factory=list)
    measurements: dict = field(default_factory=dict)
    #: Person -> the largest share one protected value has among their candidate records: an
    #: attacker's confidence in that value using the published frequencies too (reported; the
    #: criterion enforces the distinct-value form of l, as the policy's distinct l-diversity).
    confidence: pd.Series | None = None

    @property
    def exposed(self) -> list:
        """Everyone the combined releases expose (sorted, each once)."""
        return sorted(set(self.exposed_k) | set(self.exposed_l), key=str)

    def reasons(self, k: int, l_required: Mapping[str, int]) -> list[str]:
        out = []
        if self.exposed_k:
            out.append(
                f"release history: combined with the earlier releases, {len(self.exposed_k)} "
                f"person(s) would be left with fewer than k = {k} candidate records (fewest: "
                f"{self.measurements.get('min_candidates')})"
            )
        if self.exposed_l:
            required = ", ".join(f"{c} (l = {n})" for c, n in l_required.items())
            out.append(
                f"release history: combined with the earlier releases, {len(self.exposed_l)} "
                f"person(s) would be left with fewer than l possible values of {required}"
            )
        return out


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
    past: Sequence[PastRelease],
    *,
    k: int,
    l_required: Mapping[str, int] | None = None,
) -> CrossReleaseResult:
    """Combine ``new`` with the ``past`` releases and check every person of ``new``.

    Only people present in ``new`` are checked (a person the new release leaves out gains the
    attacker nothing from it), against their class in ``new``. ``l_required`` maps each
    protected sensitive column to its l.
    """
    people = pd.Index(new.membership.index.unique(), dtype=object)
    return exposure([*past, new], people, k=k, l_required=l_required, earlier=len(past))


def exposure(
    releases: Sequence[PastRelease],
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
    l_required = dict(l_required or {})
    if people is None:
        people = pd.Index(
            pd.unique(np.concatenate([r.membership.index.to_numpy() for r in releases])),
            dtype=object,
        )
    classes_of = [_classes_by_person(r) for r in releases]
    class_values = [_values_by_class(r) for r in releases]
    candidates = np.zeros(len(people), dtype=np.int64)
    confidence = np.zeros(len(people), dtype=np.float64)
    values_left: dict[str, np.ndarray] = {c: np.zeros(len(people), np.int64) for c in l_required}
    several = np.zeros(len(people), dtype=bool)
    for i, person in enumerate(people):
        possible: list[set | None] | None = None
        last: tuple[PastRelease, frozenset] | None = None
        seen = 0
        for release, classes, values in zip(releases, classes_of, class_values, strict=True):
            mine = classes.get(person)
            if mine is None:
                continue
            seen += 1
            last = (release, mine)
            if len(mine) == 1:
                published = values[next(iter(mine))]
            else:
                published = [
                    frozenset().union(*(values[c][j] for c in mine))
                    for j in range(len(release.columns))
                ]
            if possible is None:
                possible = published
            else:
                possible = [a & b for a, b in zip(possible, published, strict=True)]
        several[i] = seen >= 2
        if last is None:
            continue
        release, mine = last
        columns = release.columns
        for j, column in enumerate(columns):
            if column in values_left:
                values_left[column][i] = len(possible[j])
        # The intersection narrows the target's class in *every* release they are in, not
        # only the last: the fewest candidates over those releases is what is left.
        candidates[i] = min(
            _candidates(r, classes[person], possible)[0]
            for r, classes in zip(releases, classes_of, strict=True)
            if person in classes
        )
        matching = _candidates(release, mine, possible)[1]
        for j in range(len(columns)):
            by_value = Counter()
            for record, count in matching.items():
                by_value[record[j]] += count
            if by_value and candidates[i]:
                confidence[i] = max(confidence[i], max(by_value.values()) / candidates[i])
    exposed_k = [people[i] for i in np.flatnonzero(candidates < k)]
    exposed_l = sorted(
        {people[i] for c, n in l_required.items() for i in np.flatnonzero(values_left[c] < n)},
        key=str,
    )
    result = pd.Series(candidates, index=people)
    measurements = {
        "max_confidence": float(confidence.max()) if len(confidence) else None,
        "earlier_releases": len(releases) - 1 if earlier is None else earlier,
        "people_checked": len(people),
        "people_in_several_releases": int(several.sum()),
        "min_candidates": int(candidates.min()) if len(candidates) else None,
        "min_possible_values": {c: int(v.min()) for c, v in values_left.items() if len(v)},
        "exposed_by_k": len(exposed_k),
        "exposed_by_l": len(exposed_l),
        "k": k,
        "l": l_required,
    }
    return CrossReleaseResult(
        not exposed_k and not exposed_l,
        result,
        exposed_k,
        exposed_l,
        measurements,
        pd.Series(confidence, index=people),
    )


def _candidates(release: PastRelease, mine: frozenset, possible: list) -> tuple[int, Counter]:
    """The target's candidates in one release (people, as k counts them: one person's three
    matching admissions hide the target among one person, not three; records for a release
    read back from the history, which keeps no row-to-person link) and the matching records."""
    matching = Counter()
    owners: set = set()
    for class_id in mine:
        for record, count in release.records.get(class_id, {}).items():
            if all(value in possible[j] for j, value in enumerate(record)):
                matching[record] += count
                if release.owners is not None:
                    owners |= release.owners[class_id][record]
    found = len(owners) if release.owners is not None else sum(matching.values())
    return found, matching


def _classes_by_person(release: PastRelease) -> dict:
    """Person -> frozenset of their classes (most people have one row: no grouping needed)."""
    membership = release.membership
    people = membership.index.to_numpy()
    ids = membership.to_numpy()
    if membership.index.is_unique:
        return {person: frozenset((int(c),)) for person, c in zip(people, ids, strict=True)}
    out: dict = {}
    for person, c in zip(people, ids, strict=True):
        out.setdefault(person, set()).add(int(c))
    return {person: frozenset(c) for person, c in out.items()}


def _values_by_class(release: PastRelease) -> dict:
    """Class id -> per protected column, the frozenset of its published values."""
    width = len(release.columns)
    return {
        class_id: [frozenset(record[j] for record in records) for j in range(width)]
        for class_id, records in release.records.items()
    }


def protect_across_releases(
    release_id: str,
    people: Sequence[object],
    class_ids: Sequence[int],
    sensitive: Mapping[str, Sequence[object]],
    past: Sequence[PastRelease],
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
