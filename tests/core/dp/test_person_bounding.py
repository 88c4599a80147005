"""The person bounding is 1-stable: brute force over random small tables (hypothesis)."""

from __future__ import annotations

from collections import Counter

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.dp.person_bounding import keep_one_record_per_person

SECRET = b"test-secret"
records = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(["a", "b", "c"]), st.integers(-3, 3)),
    min_size=1,
    max_size=12,
)


def _table(rows: list[tuple[int, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["person", "city", "value"])


def _multiset(frame: pd.DataFrame) -> Counter:
    return Counter(frame.itertuples(index=False, name=None))


@settings(max_examples=60, deadline=None)
@given(records)
def test_removing_any_person_changes_the_bounded_table_by_at_most_one_record(rows):
    table = _table(rows)
    bounded = _multiset(keep_one_record_per_person(table, "person", SECRET))
    assert sum(bounded.values()) == table["person"].nunique()
    for person in table["person"].unique():
        without = _multiset(
            keep_one_record_per_person(table[table["person"] != person], "person", SECRET)
        )
        assert without <= bounded
        assert sum((bounded - without).values()) == 1


@settings(max_examples=60, deadline=None)
@given(records, records)
def test_a_persons_kept_record_does_not_depend_on_other_persons(rows, others):
    mine = [row for row in rows if row[0] == rows[0][0]]
    strangers = [(person + 10, city, value) for person, city, value in others]
    alone = _multiset(keep_one_record_per_person(_table(mine), "person", SECRET))
    apart = _multiset(keep_one_record_per_person(_table(strangers), "person", SECRET))
    crowd = _table(mine + strangers).sample(frac=1, random_state=len(others))
    kept = keep_one_record_per_person(crowd, "person", SECRET)
    assert _multiset(kept) == alone + apart
    assert list(kept.columns) == ["city", "value"]
