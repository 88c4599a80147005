"""The cross-release criterion kept up to date release by release instead of recounted.

Why: the criterion's verdict for a person depends on every release they are in (the possible
values intersect over all of them, and the fewest candidates are taken over all of them), so
recounting it from the whole history for every new release costs the history's length times
its size, every night, and again for every pass of the protection. But what the history tells
about a person is a function of the releases so far that changes only when a new release
contains them. :class:`CrossReleaseState` keeps, per person, that function's value:

* the possible values of each protected column (a bit set over the column's value codes);
* the fewest candidates over the releases already folded in, *under those possible values*;
* the largest share one value has among the matching records of their latest release (the
  reported confidence).

A new release changes a person's possible values only if their new class does not publish
all of them. If it does, their past minimum stands and only the new class is counted; if it
narrows them, their earlier classes are recounted under the narrower values (each count is
memoized per release, class set and value set, so people sharing a class share the work).
This is exactly the definition in :mod:`privgate.core.history._criterion`, computed in another
order; ``tests/core/history/test_incremental.py`` checks it against a from-scratch recount.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privgate.core.history._store import PastRelease

__all__ = ["CrossReleaseState", "CrossReleaseResult"]


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
        People with fewer than ``k`` candidates.
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
    #: Person -> the largest share one protected value has among their candidate records in
    #: their last release: an attacker's confidence in that value using the published
    #: frequencies too (reported, at most 1; the criterion enforces the distinct-value form of
    #: l, as the policy's distinct l-diversity).
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


class _Indexed:
    """One release with its values as codes: per class, its rows (codes, records, owners),
    the bit set of values it publishes per column, and how many candidates it holds whole."""

    def __init__(self, release: PastRelease, codes: list[dict]) -> None:
        self.release_id = release.release_id
        self.counts_people = release.owners is not None
        self.rows: dict[int, list[tuple[tuple[int, ...], int, frozenset | None]]] = {}
        self.masks: dict[int, tuple[int, ...]] = {}
        self.whole: dict[int, int] = {}
        for class_id, records in release.records.items():
            rows = []
            masks = [0] * len(codes)
            everyone: set = set()
            for record, count in records.items():
                coded = tuple(
                    table.setdefault(value, len(table))
                    for table, value in zip(codes, record, strict=True)
                )
                for j, code in enumerate(coded):
                    masks[j] |= 1 << code
                owners = None
                if self.counts_people:
                    owners = frozenset(release.owners[class_id][record])
                    everyone |= owners
                rows.append((coded, int(count), owners))
            self.rows[int(class_id)] = rows
            self.masks[int(class_id)] = tuple(masks)
            self.whole[int(class_id)] = (
                len(everyone) if self.counts_people else sum(c for _, c, _ in rows)
            )
        self.classes_of = _classes_by_person(release.membership)
        self._memo: dict[tuple, tuple[int, float]] = {}

    def published(self, classes: frozenset, width: int) -> tuple[int, ...]:
        """The values the classes publish, per column (the union of their bit sets)."""
        if len(classes) == 1:
            return self.masks.get(next(iter(classes)), (0,) * width)
        out = [0] * width
        for c in classes:
            for j, mask in enumerate(self.masks.get(c, (0,) * width)):
                out[j] |= mask
        return tuple(out)

    def count(self, classes: frozenset, possible: tuple[int, ...]) -> tuple[int, float]:
        """(candidates, the largest share one value of a column has among the matching
        records) in ``classes`` when the target's values are ``possible``. Candidates are
        people where the release knows its rows' people, else records."""
        key = (classes, possible)
        found = self._memo.get(key)
        if found is not None:
            return found
        if len(classes) == 1 and self.masks.get(next(iter(classes))) == possible:
            [c] = classes  # every record of the class matches: its count is known
            candidates = self.whole.get(c, 0)
            matching = self.rows.get(c, [])
        else:
            matching = [
                row
                for c in classes
                for row in self.rows.get(c, [])
                if all((p >> code) & 1 for p, code in zip(possible, row[0], strict=True))
            ]
            if self.counts_people:
                candidates = len(frozenset().union(*(owners for _, _, owners in matching)))
            else:
                candidates = sum(count for _, count, _ in matching)
        top, records = 0, sum(count for _, count, _ in matching)
        for j in range(len(possible)):
            by_value: Counter = Counter()
            for coded, count, _ in matching:
                by_value[coded[j]] += count
            if by_value:
                top = max(top, max(by_value.values()))
        share = top / records if records else 0.0
        self._memo[key] = (candidates, share)
        return candidates, share


def _classes_by_person(membership: pd.Series) -> dict:
    """Person -> frozenset of their classes (most people have one row: no grouping needed)."""
    people = membership.index.to_numpy()
    ids = membership.to_numpy()
    if membership.index.is_unique:
        return {p: frozenset((int(c),)) for p, c in zip(people, ids, strict=True)}
    out: dict = {}
    for p, c in zip(people, ids, strict=True):
        out.setdefault(p, set()).add(int(c))
    return {p: frozenset(c) for p, c in out.items()}


@dataclass
class _Person:
    possible: tuple[int, ...]
    past_min: int
    share: float
    seen: list[tuple[int, frozenset]]


class CrossReleaseState:
    """What the releases folded in so far tell an attacker about each person.

    Build it with :meth:`of` (every recorded release, oldest first) or :meth:`add` one release
    at a time (the state after release n is a function of releases 1..n, so a nightly loop
    keeps it across nights); :meth:`check` answers the criterion for a new release without
    changing the state, :meth:`exposure` the attack on the releases folded in.
    """

    def __init__(self) -> None:
        self.columns: tuple[str, ...] | None = None
        self._codes: list[dict] = []
        self._releases: list[_Indexed] = []
        self._people: dict = {}

    @classmethod
    def of(cls, releases: Iterable[PastRelease]) -> CrossReleaseState:
        """The state after ``releases`` (oldest first)."""
        state = cls()
        for release in releases:
            state.add(release)
        return state

    def copy(self) -> CrossReleaseState:
        """An independent state holding the same releases (adding to one leaves the other:
        :meth:`add` replaces a person's entry, never changes it)."""
        other = CrossReleaseState()
        other.columns = self.columns
        other._codes = self._codes  # value codes only ever grow: shared
        other._releases = list(self._releases)
        other._people = dict(self._people)
        return other

    def __len__(self) -> int:
        return len(self._releases)

    @property
    def release_ids(self) -> list[str]:
        return [r.release_id for r in self._releases]

    def _index(self, release: PastRelease) -> _Indexed:
        if self.columns is None:
            self.columns = tuple(release.columns)
            self._codes = [{} for _ in self.columns]
        elif tuple(release.columns) != self.columns:
            raise ValueError(
                f"release {release.release_id} protects {list(release.columns)}, the earlier "
                f"releases {list(self.columns)}: the criterion intersects the same columns"
            )
        return _Indexed(release, self._codes)

    def _update(self, indexed: _Indexed, position: int) -> dict:
        """Each person of ``indexed`` as the state would hold them once it is added."""
        width = len(self._codes)
        updated = {}
        for person, classes in indexed.classes_of.items():
            published = indexed.published(classes, width)
            before = self._people.get(person)
            if before is None:
                possible, past_min, seen = published, None, []
            else:
                possible = tuple(a & b for a, b in zip(before.possible, published, strict=True))
                past_min, seen = before.past_min, before.seen
                if possible != before.possible:  # narrowed: the earlier classes shrink too
                    past_min = min(self._releases[r].count(mine, possible)[0] for r, mine in seen)
            candidates, share = indexed.count(classes, possible)
            if past_min is not None:
                candidates = min(candidates, past_min)
            updated[person] = _Person(possible, candidates, share, [*seen, (position, classes)])
        return updated

    def add(self, release: PastRelease) -> None:
        """Fold ``release`` in (the next one published)."""
        indexed = self._index(release)
        updated = self._update(indexed, len(self._releases))
        self._releases.append(indexed)
        self._people.update(updated)

    def check(
        self,
        new: PastRelease,
        *,
        k: int,
        l_required: Mapping[str, int] | None = None,
    ) -> CrossReleaseResult:
        """The criterion for ``new`` combined with the releases folded in (nothing changes):
        every person of ``new``, against every release they are in."""
        indexed = self._index(new)
        updated = self._update(indexed, len(self._releases))
        people = pd.Index(new.membership.index.unique(), dtype=object)
        return self._result(
            people, updated, tuple(new.columns), k, l_required, earlier=len(self._releases)
        )

    def exposure(
        self,
        people: Sequence[object] | None = None,
        *,
        k: int,
        l_required: Mapping[str, int] | None = None,
        earlier: int | None = None,
    ) -> CrossReleaseResult:
        """What an attacker holding the releases folded in learns about ``people`` (default:
        everyone in any of them)."""
        if people is None:
            people = list(self._people)
        people = pd.Index(people, dtype=object)
        if earlier is None:
            earlier = len(self._releases) - 1
        return self._result(people, self._people, self.columns or (), k, l_required, earlier)

    def _result(
        self,
        people: pd.Index,
        known: Mapping,
        columns: tuple[str, ...],
        k: int,
        l_required: Mapping[str, int] | None,
        earlier: int,
    ) -> CrossReleaseResult:
        l_required = dict(l_required or {})
        candidates = np.zeros(len(people), dtype=np.int64)
        confidence = np.zeros(len(people), dtype=np.float64)
        values_left = {c: np.zeros(len(people), np.int64) for c in l_required}
        several = np.zeros(len(people), dtype=bool)
        where = {c: columns.index(c) for c in l_required if c in columns}
        for i, person in enumerate(people):
            state = known.get(person)
            if state is None:
                state = self._people.get(person)
            if state is None:
                continue
            several[i] = len(state.seen) >= 2
            candidates[i] = state.past_min
            for column, j in where.items():
                values_left[column][i] = state.possible[j].bit_count()
            confidence[i] = state.share
        exposed_k = [people[i] for i in np.flatnonzero(candidates < k)]
        exposed_l = sorted(
            {people[i] for c, n in l_required.items() for i in np.flatnonzero(values_left[c] < n)},
            key=str,
        )
        measurements = {
            "max_confidence": float(confidence.max()) if len(confidence) else None,
            "earlier_releases": earlier,
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
            pd.Series(candidates, index=people),
            exposed_k,
            exposed_l,
            measurements,
            pd.Series(confidence, index=people),
        )
