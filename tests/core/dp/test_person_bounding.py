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


def test_a_parquet_person_with_a_missing_number_changes_one_kept_record(tmp_path):
    """Review finding F1: with ``str`` cells, one added patient whose age is missing turned the
    Parquet age column from int64 into float64 (``45`` -> ``45.0``), re-hashed every admission
    and changed the kept admission of about a sixth of the other patients."""
    from privgate.core.hospital_data import generate_admissions
    from privgate.core.ingest import read_table
    from privgate.core.policy import InputSpec

    admissions = generate_admissions(300, seed=5)
    newcomer = admissions.iloc[[0, 1]].assign(subject_id="S-new", age=None)
    tables = {}
    for name, frame in (("d", admissions), ("d_prime", pd.concat([admissions, newcomer]))):
        path = tmp_path / f"{name}.parquet"
        frame.reset_index(drop=True).to_parquet(path)
        tables[name] = read_table(InputSpec(path=path, format="parquet"))
    assert str(tables["d"]["age"].dtype) != str(tables["d_prime"]["age"].dtype)  # the trap

    def kept(frame: pd.DataFrame) -> Counter:
        bounded = keep_one_record_per_person(frame, "subject_id", SECRET)
        return Counter(
            (row.admission_id, None if pd.isna(row.age) else int(row.age))
            for row in bounded.itertuples()
        )

    base, grown = kept(tables["d"]), kept(tables["d_prime"])
    assert not base - grown
    assert sum((grown - base).values()) == 1
