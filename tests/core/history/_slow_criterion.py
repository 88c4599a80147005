"""The cross-release criterion as it was computed before it became incremental: every person,
every release, recounted from scratch (a verbatim copy of ``exposure`` and its helpers at
f448906). Slow (the whole history per check), but a direct reading of the definition: the
fast, incremental criterion must give exactly its verdict, candidates, values and confidence.

One deliberate change: the reported confidence is the largest share one value has among the
target's matching records in their last release. At f448906 it divided that count by the
fewest candidates over *all* their releases (people), so it exceeded 1 whenever an earlier
class was narrower than the last one or a person had several matching rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from privgate.core.history import CrossReleaseResult, PastRelease


def slow_check_cross_release(new, past, *, k, l_required=None):
    """``check_cross_release`` before it became incremental."""
    people = pd.Index(new.membership.index.unique(), dtype=object)
    return slow_exposure([*past, new], people, k=k, l_required=l_required, earlier=len(past))


def slow_exposure(
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
            if by_value:  # a share of the matching records of the last release (see below)
                confidence[i] = max(confidence[i], max(by_value.values()) / sum(matching.values()))
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
