"""The incremental criterion gives exactly the from-scratch recount's verdict.

:class:`~privgate.core.history.CrossReleaseState` keeps each person's possible values and
fewest candidates release by release; ``_slow_criterion`` is the criterion as it was computed
before (every person, every release, recounted for every check). On random small histories
(several rows per person, people leaving and coming back, releases with and without the
row-to-person link) both must agree on everything they report.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
from _slow_criterion import slow_check_cross_release, slow_exposure
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.history import (
    CrossReleaseState,
    PastRelease,
    check_cross_release,
    exposure,
    release_snapshot,
)


@st.composite
def histories(draw):
    """1-6 releases of up to 10 people (absent, one row or two rows each), classes 0-3, two
    protected columns; some releases without owners (as read back from an old history)."""
    n_people = draw(st.integers(2, 10))
    people = [f"p{i}" for i in range(n_people)]
    releases = []
    for r in range(draw(st.integers(1, 6))):
        rows = []
        for person in people:
            for _ in range(draw(st.integers(0, 2))):
                rows.append(
                    (
                        person,
                        draw(st.integers(0, 3)),
                        draw(st.sampled_from("abcd")),
                        draw(st.sampled_from("xy")),
                    )
                )
        if not rows:
            rows.append((people[0], 0, "a", "x"))
        people_, classes, s, t = zip(*rows, strict=True)
        snapshot = release_snapshot(f"r{r}", people_, classes, {"s": s, "t": t})
        if draw(st.booleans()):
            snapshot = PastRelease(
                snapshot.release_id, snapshot.membership, snapshot.columns, snapshot.records
            )
        releases.append(snapshot)
    return releases, draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 2))


def _same(fast, slow) -> None:
    assert fast.passed == slow.passed
    assert fast.candidates.to_dict() == slow.candidates.to_dict()
    assert list(fast.exposed_k) == list(slow.exposed_k)
    assert list(fast.exposed_l) == list(slow.exposed_l)
    assert fast.confidence.to_dict() == slow.confidence.to_dict()
    assert ((fast.confidence >= 0) & (fast.confidence <= 1)).all()  # a share
    assert fast.measurements == slow.measurements


@settings(max_examples=250, deadline=None)
@given(histories())
def test_the_incremental_check_gives_the_recounts_verdict(case):
    releases, k, l_s, l_t = case
    l_required = {"s": l_s, "t": l_t}
    state = CrossReleaseState()
    for n, new in enumerate(releases):
        past = releases[:n]
        slow = slow_check_cross_release(new, past, k=k, l_required=l_required)
        _same(state.check(new, k=k, l_required=l_required), slow)  # kept across nights
        _same(check_cross_release(new, past, k=k, l_required=l_required), slow)  # folded
        state.add(new)
    _same(
        exposure(state, k=k, l_required=l_required),
        slow_exposure(releases, k=k, l_required=l_required),
    )


def test_a_check_changes_nothing_and_a_narrowing_recounts_the_earlier_classes():
    """Monday's class of five keeps A among five until Tuesday rules out A's other values;
    a check of Tuesday leaves the state as it was, adding Tuesday narrows Monday to two."""
    monday = release_snapshot("mon", list("ABCDE"), [0] * 5, {"d": ["flu", "hiv", "x", "x", "x"]})
    tuesday = release_snapshot("tue", list("AFGH"), [0] * 4, {"d": ["flu", "hiv", "flu", "cold"]})
    state = CrossReleaseState.of([monday])
    assert state.exposure(k=3, l_required={"d": 2}).candidates["A"] == 5
    assert state.check(tuesday, k=3, l_required={"d": 2}).candidates["A"] == 2
    assert state.exposure(k=3, l_required={"d": 2}).candidates["A"] == 5  # unchanged
    state.add(tuesday)
    result = state.exposure(k=3, l_required={"d": 2})
    assert result.candidates["A"] == 2 and result.exposed_k == ["A"]
    assert state.release_ids == ["mon", "tue"]
    before = CrossReleaseState.of([monday])
    after = before.copy()
    after.add(tuesday)
    assert before.exposure(k=3).candidates["A"] == 5 and len(before) == 1
    assert after.exposure(k=3).candidates["A"] == 2 and len(after) == 2


def test_releases_protecting_other_columns_are_refused():
    monday = release_snapshot("mon", ["a"], [0], {"d": ["flu"]})
    other = release_snapshot("tue", ["a"], [0], {"e": ["x"]})
    state = CrossReleaseState.of([monday])
    try:
        state.check(other, k=1)
    except ValueError as exc:
        assert "the criterion intersects the same columns" in str(exc)
    else:
        raise AssertionError("a release protecting another column was combined")


def test_counts_in_people_where_the_release_knows_them():
    monday = release_snapshot("mon", ["A", "A", "B"], [0, 0, 0], {"d": ["x", "x", "y"]})
    records = PastRelease("mon", monday.membership, monday.columns, monday.records)
    assert Counter(monday.records[0]) == Counter({("x",): 2, ("y",): 1})
    assert exposure([monday], k=1).candidates.to_dict() == {"A": 2, "B": 2}
    assert exposure([records], k=1).candidates.to_dict() == {"A": 3, "B": 3}
    assert isinstance(exposure([monday], k=1).candidates, pd.Series)
