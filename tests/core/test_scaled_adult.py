"""The partitioned Parquet generator of scaled Adult: Adult's columns and domains, seeded."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgate.core.scaled_adult import ADULT_QUASI_IDENTIFIERS, write_scaled_adult


@pytest.fixture(scope="module")
def adult(shared_data) -> tuple:
    path = shared_data("arx/adult.csv")
    return path, pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)


def _read(folder) -> pd.DataFrame:
    return pd.read_parquet(folder).astype(str)


def test_parts_have_adults_columns_and_values(adult, tmp_path):
    source, table = adult
    written = write_scaled_adult(25_000, tmp_path / "parts", source=source, rows_per_part=10_000)

    assert [p.name for p in written.parts] == [f"part-{i:05d}.parquet" for i in range(3)]
    sizes = [len(pd.read_parquet(p)) for p in written.parts]
    assert sizes == [10_000, 10_000, 5_000]
    frame = _read(written.folder)
    assert list(frame.columns) == list(table.columns) == list(written.columns)
    for name in table.columns:
        assert set(frame[name]) <= set(table[name]), name
    # 25,000 draws from 30,162 rows: most values of every small domain show up.
    assert set(frame["education"]) == set(table["education"])


def test_same_seed_same_table_other_seed_other_table(adult, tmp_path):
    source, _ = adult
    first = write_scaled_adult(8_000, tmp_path / "a", source=source, seed=3, rows_per_part=3_000)
    again = write_scaled_adult(8_000, tmp_path / "b", source=source, seed=3, rows_per_part=3_000)
    other = write_scaled_adult(8_000, tmp_path / "c", source=source, seed=4, rows_per_part=3_000)

    pd.testing.assert_frame_equal(_read(first.folder), _read(again.folder))
    assert not _read(first.folder).equals(_read(other.folder))


def test_without_perturbation_every_row_is_an_adult_row(adult, tmp_path):
    source, table = adult
    frame = _read(write_scaled_adult(5_000, tmp_path / "p0", source=source, p=0.0).folder)
    rows = set(map(tuple, table.to_numpy().tolist()))
    assert all(row in rows for row in map(tuple, frame.to_numpy().tolist()))


def test_perturbation_resamples_quasi_identifiers_only(adult, tmp_path):
    """At p = 0.3 about 1 - 0.7**8 = 94 % of rows have a swapped cell, so most rows are no
    Adult row; a swapped cell equals the picked row's own with Adult's own odds, so the
    share of rows matching an Adult row is well above 0.7**8 = 5.8 % but far below 1."""
    source, table = adult
    frame = _read(write_scaled_adult(20_000, tmp_path / "p3", source=source, p=0.3).folder)
    rows = set(map(tuple, table.to_numpy().tolist()))
    share = np.mean([row in rows for row in map(tuple, frame.to_numpy().tolist())])
    assert 0.058 < share < 0.5
    # The sensitive column is never resampled: its share of '>50K' is Adult's (+- sampling).
    high = (frame["salary-class"] == ">50K").mean()
    assert abs(high - (table["salary-class"] == ">50K").mean()) < 0.02
    assert "salary-class" not in ADULT_QUASI_IDENTIFIERS


def test_missing_value_markers_become_missing_cells(tmp_path):
    source = tmp_path / "tiny.csv"
    source.write_text("sex;age;salary-class\nMale;39;<=50K\n?;50;>50K\nFemale;;<=50K\n")
    written = write_scaled_adult(
        2_000, tmp_path / "parts", source=source, quasi_identifiers=("sex", "age"), p=0.5
    )
    frame = pd.read_parquet(written.folder)
    assert frame["sex"].isna().any() and frame["age"].isna().any()
    assert set(frame["sex"].dropna()) == {"Male", "Female"}
    assert "?" not in set(frame["sex"].astype(str))


def test_refuses_a_folder_holding_other_parts(adult, tmp_path):
    source, _ = adult
    write_scaled_adult(100, tmp_path / "parts", source=source)
    with pytest.raises(ValueError, match="not empty"):
        write_scaled_adult(100, tmp_path / "parts", source=source)
