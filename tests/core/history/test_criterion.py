"""The cross-release criterion against a brute-force intersection over random small histories."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.history import check_cross_release, release_snapshot


@st.composite
def histories(draw):
    """People, 1-4 releases; each release: who is present (rows, maybe several per person),
    their class, and a sensitive value per row."""
    n_people = draw(st.integers(2, 9))
    people = [f"p{i}" for i in range(n_people)]
    releases = []
    for r in range(draw(st.integers(1, 4))):
        rows = []
        for person in people:
            for _ in range(draw(st.integers(0, 2))):  # absent, one row, or two rows
                rows.append(
                    (person, draw(st.integers(0, 2)), draw(st.sampled_from(["a", "b", "c"])))
                )
        if not rows:
            rows.append((people[0], 0, "a"))
        releases.append((f"r{r}", rows))
    return releases, draw(st.integers(1, 4)), draw(st.integers(1, 3))


def _snapshot(release_id, rows):
    people, classes, values = zip(*rows, strict=True)
    return release_snapshot(release_id, people, classes, {"s": values})


def _brute_force(releases, k, l_required):
    """Straight from the definition, with Python sets."""
    membership = {}  # (release, person) -> set of classes
    values = {}  # (release, class) -> set of sensitive values
    for release_id, rows in releases:
        for person, class_id, value in rows:
            membership.setdefault((release_id, person), set()).add(class_id)
            values.setdefault((release_id, class_id), set()).add(value)
    ids = [r for r, _ in releases]
    new_id = ids[-1]
    new_people = sorted({p for p, _, _ in releases[-1][1]})
    counts, low_l = {}, set()
    for p in new_people:
        present = [r for r in ids if (r, p) in membership]
        candidates = [
            q
            for q in new_people
            if all(membership.get((r, q)) == membership[(r, p)] for r in present)
        ]
        counts[p] = len(candidates)
        if len(present) >= 2:
            possible = None
            for r in present:
                published = set().union(*(values[(r, c)] for c in membership[(r, p)]))
                possible = published if possible is None else possible & published
            if len(possible) < l_required:
                low_l.add(p)
    assert new_id == ids[-1]
    return counts, {p for p, c in counts.items() if c < k}, low_l


@settings(max_examples=300, deadline=None)
@given(histories())
def test_the_criterion_matches_a_brute_force_intersection(case):
    releases, k, l_required = case
    snapshots = [_snapshot(r, rows) for r, rows in releases]
    result = check_cross_release(snapshots[-1], snapshots[:-1], k=k, l_required={"s": l_required})
    counts, low_k, low_l = _brute_force(releases, k, l_required)
    assert result.candidates.to_dict() == counts
    assert set(result.exposed_k) == low_k
    assert set(result.exposed_l) == low_l
    assert result.passed == (not low_k and not low_l)


def test_two_k_anonymous_releases_can_expose_a_person_together():
    """Monday generalizes by age, Tuesday by zip: each class has 2 people, yet only p1 is in
    both of p1's classes (a k = 2 release pair that leaves p1 alone)."""
    monday = release_snapshot("mon", ["p1", "p2", "p3", "p4"], [0, 0, 1, 1])
    tuesday = release_snapshot("tue", ["p1", "p3", "p2", "p4"], [0, 0, 1, 1])
    result = check_cross_release(tuesday, [monday], k=2)
    assert not result.passed
    assert result.candidates.to_dict() == {"p1": 1, "p3": 1, "p2": 1, "p4": 1}
    # The same generalization on both nights keeps everyone with 2 candidates.
    same = release_snapshot("tue", ["p1", "p2", "p3", "p4"], [0, 0, 1, 1])
    assert check_cross_release(same, [monday], k=2).passed


def test_churn_in_a_class_shrinks_the_candidates():
    """Same classes every night, but p2 leaves and p9 arrives: p1's class still has 2 people,
    yet only p1 was in it on both nights."""
    monday = release_snapshot("mon", ["p1", "p2"], [0, 0])
    tuesday = release_snapshot("tue", ["p1", "p9"], [0, 0])
    result = check_cross_release(tuesday, [monday], k=2)
    assert result.exposed_k == ["p1"] and result.measurements["min_candidates"] == 1


def test_intersected_sensitive_values_fall_below_l():
    monday = release_snapshot("mon", ["p1", "p2"], [0, 0], {"diagnosis": ["flu", "hiv"]})
    tuesday = release_snapshot("tue", ["p1", "p3"], [0, 0], {"diagnosis": ["hiv", "cold"]})
    result = check_cross_release(tuesday, [monday], k=1, l_required={"diagnosis": 2})
    assert result.exposed_l == ["p1"]  # {flu, hiv} & {hiv, cold} = {hiv}
    assert result.measurements["min_sensitive_values"] == {"diagnosis": 1}
    assert "fewer than l possible sensitive values" in result.reasons(1, {"diagnosis": 2})[0]


def test_a_person_missing_from_the_new_release_is_not_checked():
    monday = release_snapshot("mon", ["p1", "p2"], [0, 0])
    tuesday = release_snapshot("tue", ["p2", "p3"], [0, 0])
    result = check_cross_release(tuesday, [monday], k=2)
    assert set(result.candidates.index) == {"p2", "p3"}
    # p2 is alone in its class on both nights; p3 (new) shares Tuesday's class with p2.
    assert result.exposed_k == ["p2"] and result.candidates["p3"] == 2
    assert isinstance(result.candidates, pd.Series)
