"""Tests for core.ingest.read_table: every way a CSV export breaks fails with one IngestError."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from privgate.core.datasets import load_adult
from privgate.core.exceptions import IngestError
from privgate.core.ingest import read_table
from privgate.core.policy import InputSpec

SharedData = Callable[[str], Path]


def csv_file(tmp_path: Path, content: str | bytes, name: str = "input.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def read(path: Path, **options: Any) -> pd.DataFrame:
    return read_table(InputSpec(path=path, **options))


def read_error(path: Path, **options: Any) -> str:
    with pytest.raises(IngestError) as info:
        read(path, **options)
    message = str(info.value)
    assert str(path) in message  # every ingest error names the file
    return message


# ---------------------------------------------------------------------------------------------
# Happy paths
# ---------------------------------------------------------------------------------------------


def test_semicolon_delimiter_and_missing_markers(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "name;age;city\nAda;36;?\n;41;Paris\nBob;?;NA\n")
    df = read(path, delimiter=";", missing_values=["", "?"])
    assert list(df.columns) == ["name", "age", "city"]
    assert len(df) == 3
    assert all(isinstance(dtype, pd.StringDtype) for dtype in df.dtypes)
    assert df.loc[0, "city"] is pd.NA
    assert df.loc[1, "name"] is pd.NA
    assert df.loc[2, "age"] is pd.NA
    # Only the declared markers are missing: pandas' default 'NA' stays text, nothing is typed.
    assert df.loc[2, "city"] == "NA"
    assert df.loc[0, "age"] == "36"


def test_quoted_fields_keep_delimiters(tmp_path: Path) -> None:
    path = csv_file(tmp_path, 'a,b\n1,"x,y"\n2,"say ""hi"""\n')
    df = read(path)
    assert df["b"].tolist() == ["x,y", 'say "hi"']


def test_header_names_are_stripped(tmp_path: Path) -> None:
    df = read(csv_file(tmp_path, " a , b\n1,2\n"))
    assert list(df.columns) == ["a", "b"]


def test_utf8_bom_is_stripped_from_the_first_column_name(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "\ufeffage,sex\n39,Male\n".encode())
    df = read(path)
    assert list(df.columns) == ["age", "sex"]
    assert df.loc[0, "age"] == "39"


def test_declared_encoding(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "city,n\nZürich,1\n".encode("latin-1"))
    df = read(path, encoding="latin-1")
    assert df.loc[0, "city"] == "Zürich"


def test_no_header(tmp_path: Path) -> None:
    df = read(csv_file(tmp_path, "1,2\n3,4\n"), header=False)
    assert list(df.columns) == ["column_1", "column_2"]
    assert len(df) == 2


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    df = read(csv_file(tmp_path, "a,b\n1,2\n\n3,4\n"))
    assert df.values.tolist() == [["1", "2"], ["3", "4"]]


def test_trailing_missing_value_is_not_a_ragged_row(tmp_path: Path) -> None:
    df = read(csv_file(tmp_path, "a,b\n1,\n2,3\n"))
    assert df.loc[0, "b"] is pd.NA


# ---------------------------------------------------------------------------------------------
# Broken files
# ---------------------------------------------------------------------------------------------


def test_non_utf8_bytes_in_a_data_row(tmp_path: Path) -> None:
    path = csv_file(tmp_path, b"name,city\nAda,Z\xfcrich\n")
    message = read_error(path)
    assert "not valid utf-8" in message
    assert "line 2" in message
    assert "input.encoding" in message


def test_non_utf8_bytes_in_the_header(tmp_path: Path) -> None:
    path = csv_file(tmp_path, b"name,caf\xe9\nAda,1\n")
    message = read_error(path)
    assert "not valid utf-8" in message
    assert "line 1" in message


def test_non_utf8_bytes_far_into_the_file(tmp_path: Path) -> None:
    rows = b"a,b\n" + b"x,y\n" * 20_000 + b"x,\xff\n"
    bad_offset = rows.index(b"\xff")
    message = read_error(csv_file(tmp_path, rows))
    assert "line 20002" in message
    assert f"byte offset {bad_offset}" in message


def test_empty_file(tmp_path: Path) -> None:
    assert "empty" in read_error(csv_file(tmp_path, b""))


def test_blank_file(tmp_path: Path) -> None:
    assert "empty" in read_error(csv_file(tmp_path, "\n\n"))


def test_header_only(tmp_path: Path) -> None:
    assert "no data rows" in read_error(csv_file(tmp_path, "a,b,c\n"))


def test_duplicate_column_names(tmp_path: Path) -> None:
    message = read_error(csv_file(tmp_path, "age,sex,age\n1,M,2\n"))
    assert "duplicate column name 'age'" in message
    assert "line 1" in message


def test_empty_column_name(tmp_path: Path) -> None:
    message = read_error(csv_file(tmp_path, "age,,sex\n1,2,M\n"))
    assert "column 2 has an empty name" in message


def test_ragged_row_with_too_many_fields(tmp_path: Path) -> None:
    message = read_error(csv_file(tmp_path, "a,b\n1,2\n3,4,5\n6,7\n"))
    assert "line 3" in message


def test_ragged_row_with_too_few_fields(tmp_path: Path) -> None:
    message = read_error(csv_file(tmp_path, "a,b,c\n1,2,3\n4,5,6\n7,8\n9,10,11\n"))
    assert "line 4" in message
    assert "ragged row" in message


def test_ragged_row_after_a_quoted_newline(tmp_path: Path) -> None:
    message = read_error(csv_file(tmp_path, 'a;b\n1;"two\nlines"\n3\n'), delimiter=";")
    assert "line 4" in message


def test_unbalanced_quote(tmp_path: Path) -> None:
    message = read_error(csv_file(tmp_path, 'a,b\n1,"unclosed\n3,4\n'))
    assert "malformed CSV" in message
    assert "EOF inside string" in message


def test_missing_file(tmp_path: Path) -> None:
    message = read_error(tmp_path / "absent.csv")
    assert "not found" in message
    assert "input.path" in message


def test_folder_instead_of_file(tmp_path: Path) -> None:
    assert "folder" in read_error(tmp_path)


# ---------------------------------------------------------------------------------------------
# Parquet and public-dataset layouts
# ---------------------------------------------------------------------------------------------


def test_parquet_round_trip(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "age": pd.array([39, 50, None], dtype="Int64"),
            "sex": pd.array(["Male", "?", "Female"], dtype="string"),
            "score": [0.5, 1.5, 2.5],
        }
    )
    path = tmp_path / "input.parquet"
    frame.to_parquet(path, index=False)
    df = read(path, format="parquet", missing_values=["", "?"])
    assert list(df.columns) == ["age", "sex", "score"]
    assert df["age"].dtype == "Int64"
    assert df["age"].tolist()[:2] == [39, 50]
    assert df.loc[2, "age"] is pd.NA
    assert df.loc[1, "sex"] is pd.NA  # the '?' marker became missing
    assert df["score"].tolist() == [0.5, 1.5, 2.5]


def test_parquet_unreadable(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "a,b\n1,2\n", name="input.parquet")
    assert "cannot read as Parquet" in read_error(path, format="parquet")


def test_parquet_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pd.DataFrame({"a": pd.array([], dtype="string")}).to_parquet(path)
    assert "no data rows" in read_error(path, format="parquet")


def test_adult_format_delegates_to_load_adult(shared_data: SharedData) -> None:
    path = shared_data("adult/adult.test")
    df = read(path, format="adult")
    pd.testing.assert_frame_equal(df, load_adult(path))
    assert len(df) > 16_000
    assert set(df["income"].dropna().unique()) <= {"<=50K", ">50K"}
