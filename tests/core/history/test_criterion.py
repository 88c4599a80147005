"""The cross-release criterion against a brute-force reading of its definition."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.history import check_cross_release, exposure, release_snapshot


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
    """Straight from the definition, with Python sets and lists."""
    classes_of = {}  # (release, person) -> set of classes
    values = {}  # (release, class) -> list of published values (one per record)
    for release_id, rows in releases:
        for person, class_id, value in rows:
            classes_of.setdefault((release_id, person), set()).add(class_id)
            values.setdefault((release_id, class_id), []).append(value)
    ids = [r for r, _ in releases]
    candidates, few_values = {}, set()
    for person in sorted({p for p, _, _ in releases[-1][1]}):
        present = [r for r in ids if (r, person) in classes_of]
        possible = None
        for r in present:
            published = {v for c in classes_of[(r, person)] for v in values[(r, c)]}
            possible = published if possible is None else possible & published
        candidates[person] = min(  # people, as k counts them, in each release they are in
            len({q for q, c, v in rows if c in classes_of[(r, person)] and v in possible})
            for r, rows in releases
            if (r, person) in classes_of
        )
        if len(possible) < l_required:
            few_values.add(person)
    return candidates, {p for p, n in candidates.items() if n < k}, few_values


@settings(max_examples=300, deadline=None)
@given(histories())
def test_the_criterion_matches_a_brute_force_reading_of_its_definition(case):
    releases, k, l_required = case
    snapshots = [_snapshot(r, rows) for r, rows in releases]
    result = check_cross_release(snapshots[-1], snapshots[:-1], k=k, l_required={"s": l_required})
    candidates, low_k, low_l = _brute_force(releases, k, l_required)
    assert result.candidates.to_dict() == candidates
    assert set(result.exposed_k) == low_k
    assert set(result.exposed_l) == low_l
    assert result.passed == (not low_k and not low_l)


def test_changing_classes_intersect_the_possible_values():
    """Monday p1's class publishes {flu, hiv}, Tuesday {hiv, cold}: p1 has hiv."""
    monday = release_snapshot("mon", ["p1", "p2"], [0, 0], {"diagnosis": ["flu", "hiv"]})
    tuesday = release_snapshot("tue", ["p1", "p3"], [0, 0], {"diagnosis": ["hiv", "cold"]})
    result = check_cross_release(tuesday, [monday], k=2, l_required={"diagnosis": 2})
    assert result.exposed_l == ["p1"] and result.exposed_k == ["p1"]  # 1 value, 1 record left
    assert result.candidates.to_dict() == {"p1": 1, "p3": 2}  # p3 is new: its class counts
    assert result.measurements["min_possible_values"] == {"diagnosis": 1}
    assert "fewer than l possible values" in result.reasons(2, {"diagnosis": 2})[1]


def test_a_class_that_keeps_its_values_keeps_everyone_safe():
    """The m-invariance situation: churn inside a class that keeps its value set is harmless."""
    monday = release_snapshot("mon", ["p1", "p2", "p3"], [0, 0, 0], {"d": ["a", "b", "a"]})
    tuesday = release_snapshot("tue", ["p1", "p4", "p5"], [0, 0, 0], {"d": ["a", "b", "b"]})
    assert check_cross_release(tuesday, [monday], k=3, l_required={"d": 2}).passed


def test_without_protected_values_records_cannot_be_told_apart():
    monday = release_snapshot("mon", ["p1", "p2"], [0, 0])
    tuesday = release_snapshot("tue", ["p1", "p9"], [0, 0])
    result = check_cross_release(tuesday, [monday], k=2)
    assert result.passed and result.candidates.to_dict() == {"p1": 2, "p9": 2}


def test_the_attack_at_the_end_of_a_history_uses_each_persons_last_release():
    first = release_snapshot("r1", ["a", "b"], [0, 0], {"s": ["x", "y"]})
    second = release_snapshot("r2", ["a", "c"], [0, 0], {"s": ["x", "z"]})
    third = release_snapshot("r3", ["c", "d"], [0, 0], {"s": ["z", "w"]})
    result = exposure([first, second, third], k=2, l_required={"s": 2})
    assert result.candidates.to_dict() == {"a": 1, "b": 2, "c": 1, "d": 2}
    assert set(result.exposed_l) == {"a", "c"}


def test_candidates_are_people_not_a_persons_several_rows():
    """Review finding F2: the target's three admissions are three matching records but one
    person; with B the target hides among two people, below k = 3 (the criterion counted
    four records and passed)."""
    monday = release_snapshot("mon", ["A", "P", "Q"], [0, 0, 0], {"d": ["flu", "hiv", "y"]})
    tuesday = release_snapshot(
        "tue", ["A", "A", "A", "B", "C"], [0] * 5, {"d": ["flu", "flu", "flu", "hiv", "cold"]}
    )
    result = check_cross_release(tuesday, [monday], k=3, l_required={"d": 2})
    assert result.candidates["A"] == 2
    assert not result.passed and result.exposed_k == ["A"]


def test_the_intersection_narrows_the_earlier_releases_too():
    """Review finding F7: Tuesday leaves A the values {flu, hiv}; Tuesday's class still has
    three people with them, but Monday's class only two (A and B): A's Monday record is one of
    two. The criterion looked at the last release only and passed."""
    monday = release_snapshot("mon", list("ABCDE"), [0] * 5, {"d": ["flu", "hiv", "x", "x", "x"]})
    tuesday = release_snapshot("tue", list("AFGH"), [0] * 4, {"d": ["flu", "hiv", "flu", "cold"]})
    result = check_cross_release(tuesday, [monday], k=3, l_required={"d": 2})
    assert result.candidates["A"] == 2
    assert not result.passed and result.exposed_k == ["A"]
