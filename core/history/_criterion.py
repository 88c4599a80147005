"""The cross-release criterion: what every release published so far, combined, still protects.

The attacker downloads every release of a dataset and knows a target's quasi-identifiers and
which nights the target was present (the strongest, prosecutor-style assumption). In each
release the target sits in one published class. Intersecting them:

* **candidates**: the people who share the target's published class *in every release the
  target appears in* (and appear in each of them). Each release may be k-anonymous on its own,
  yet two different generalizations, or a class whose membership churns between nights, leave
  fewer than k people consistent with all of them. The criterion needs at least k.
* **sensitive values** (the composition attack, Ganta, Kasiviswanathan & Smith 2008; the
  re-publication setting of m-invariance, Xiao & Tao 2007): the target's value must be among
  the published values of its class in every release, so the attacker intersects those sets.
  The criterion needs at least l distinct values left in the intersection for every column the
  policy protects with l-diversity (distinct-l on the intersection: the stated equivalent of
  m-invariance's condition, which holds under insertions, deletions and updates because it is
  evaluated on what was actually published, whatever changed between nights).

A person with several rows in one release (visits) is in each class one of their rows is in;
a candidate must share all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privgate.core.history._store import PastRelease

__all__ = ["CrossReleaseResult", "check_cross_release", "release_snapshot"]


@dataclass(frozen=True)
class CrossReleaseResult:
    """The criterion's verdict on a new release given the recorded history.

    Attributes
    ----------
    passed : bool
    candidates : Series
        Person -> number of people consistent with them across every release they are in.
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

    @property
    def exposed(self) -> list:
        """Everyone the combined releases expose (sorted, each once)."""
        return sorted(set(self.exposed_k) | set(self.exposed_l), key=str)

    def reasons(self, k: int, l_required: Mapping[str, int]) -> list[str]:
        out = []
        if self.exposed_k:
            out.append(
                f"release history: {len(self.exposed_k)} person(s) present in earlier releases "
                f"would be left with fewer than k = {k} candidates once this release is combined "
                f"with them (fewest: {self.measurements.get('min_candidates')})"
            )
        if self.exposed_l:
            required = ", ".join(f"{c} (l = {n})" for c, n in l_required.items())
            out.append(
                f"release history: {len(self.exposed_l)} person(s) would be left with fewer "
                f"than l possible sensitive values across releases: {required}"
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
    membership = pd.Series(
        np.asarray(class_ids, dtype=np.int64),
        index=pd.Index([str(p) for p in people], dtype=object),
    )
    sets: dict[int, dict[str, frozenset[str]]] = {}
    for column, values in (sensitive or {}).items():
        frame = pd.DataFrame({"class_id": membership.to_numpy(), "value": list(values)})
        for class_id, group in frame.groupby("class_id"):
            sets.setdefault(int(class_id), {})[column] = frozenset(str(v) for v in group["value"])
    return PastRelease(release_id, membership, sets)


def _class_sets(release: PastRelease, people: pd.Index) -> tuple[np.ndarray, list[frozenset]]:
    """Per person of ``people``: a code for the set of classes they are in (-1 if absent)."""
    grouped = release.membership.groupby(level=0).agg(lambda ids: frozenset(int(i) for i in ids))
    present = grouped.reindex(people)
    codes = np.full(len(people), -1, dtype=np.int64)
    mask = present.notna().to_numpy()
    if mask.any():
        factor, uniques = pd.factorize(present[mask])
        codes[mask] = factor
    return codes, list(present)


def check_cross_release(
    new: PastRelease,
    past: Sequence[PastRelease],
    *,
    k: int,
    l_required: Mapping[str, int] | None = None,
) -> CrossReleaseResult:
    """Combine ``new`` with the ``past`` releases and check every person of ``new``.

    Only people present in ``new`` are checked: a person the new release leaves out gains the
    attacker nothing from it. ``l_required`` maps each protected sensitive column to its l.
    """
    l_required = dict(l_required or {})
    people = pd.Index(new.membership.index.unique(), dtype=object)
    releases = [*past, new]
    matrix = np.empty((len(people), len(releases)), dtype=np.int64)
    member_sets: list[list] = []
    for j, release in enumerate(releases):
        matrix[:, j], sets = _class_sets(release, people)
        member_sets.append(sets)
    presence = matrix >= 0
    candidates = np.zeros(len(people), dtype=np.int64)
    patterns, pattern_of = np.unique(presence, axis=0, return_inverse=True)
    pattern_of = pattern_of.reshape(-1)
    for index, pattern in enumerate(patterns):
        columns = np.flatnonzero(pattern)
        keys = matrix[:, columns]
        _, group, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        mine = pattern_of == index
        candidates[mine] = counts[group.reshape(-1)[mine]]
    several = presence.sum(axis=1) >= 2
    exposed_k = [people[i] for i in np.flatnonzero(candidates < k)]

    exposed_l: list = []
    fewest: dict[str, int] = {}
    for column, required in l_required.items():
        low = None
        for i in np.flatnonzero(several):
            values: frozenset | None = None
            for j, release in enumerate(releases):
                classes = member_sets[j][i]
                if not isinstance(classes, frozenset):
                    continue
                published = frozenset().union(
                    *(release.sensitive.get(c, {}).get(column, frozenset()) for c in classes)
                )
                values = published if values is None else values & published
            count = len(values or ())
            low = count if low is None else min(low, count)
            if count < required:
                exposed_l.append(people[i])
        if low is not None:
            fewest[column] = low
    result = pd.Series(candidates, index=people)
    measurements = {
        "earlier_releases": len(past),
        "people_checked": len(people),
        "people_in_several_releases": int(several.sum()),
        "min_candidates": int(candidates.min()) if len(candidates) else None,
        "min_candidates_across_releases": int(candidates[several].min()) if several.any() else None,
        "min_sensitive_values": fewest,
        "exposed_by_k": len(exposed_k),
        "exposed_by_l": len(set(exposed_l)),
        "k": k,
        "l": l_required,
    }
    return CrossReleaseResult(
        not exposed_k and not exposed_l, result, exposed_k, sorted(set(exposed_l), key=str),
        measurements,
    )  # fmt: skip
