"""Tests for core.datasets: loaders for the real UCI files in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from privgate.core.datasets import (
    ADULT_COLUMNS,
    BANK_MARKETING_FEATURE_COLUMNS,
    BREAST_CANCER_WISCONSIN_COLUMNS,
    DATASET_LOADERS,
    load_adult,
    load_bank_marketing,
    load_breast_cancer_wisconsin,
)
from privgate.core.exceptions import IngestError

ADULT_INT_COLUMNS = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                     "hours-per-week"]  # fmt: skip
BANK_INT_COLUMNS = ["age", "balance", "day", "duration", "campaign", "pdays", "previous"]

ADULT_ROW = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K"
)
ADULT_ROW_TEST = (
    "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, "
    "0, 0, 40, ?, >50K."
)
BANK_HEADER_UCI = (
    '"age";"job";"marital";"education";"default";"balance";"housing";"loan";"contact";"day";'
    '"month";"duration";"campaign";"pdays";"previous";"poutcome";"y"'
)
BANK_ROW_UCI = (
    '30;"unemployed";"married";"primary";"no";1787;"no";"no";"cellular";19;"oct";79;1;-1;0;'
    '"unknown";"no"'
)
BREAST_ROW = "1000025,5,1,1,1,2,1,3,1,1,2"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------


def test_dataset_loaders_registry() -> None:
    expected = {
        "adult": load_adult,
        "bank_marketing": load_bank_marketing,
        "breast_cancer_wisconsin": load_breast_cancer_wisconsin,
    }
    assert dict(DATASET_LOADERS) == expected


# --------------------------------------------------------------------------------------------
# Adult (real files)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult_data(shared_data) -> pd.DataFrame:
    return load_adult(shared_data("adult/adult.data"))


@pytest.fixture(scope="module")
def adult_test(shared_data) -> pd.DataFrame:
    return load_adult(shared_data("adult/adult.test"))


def test_adult_data_shape_and_columns(adult_data: pd.DataFrame) -> None:
    assert adult_data.shape == (32_561, 15)
    assert list(adult_data.columns) == list(ADULT_COLUMNS)
    assert ADULT_COLUMNS == (
        "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
        "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
        "hours-per-week", "native-country", "income",
    )  # fmt: skip


def test_adult_dtypes(adult_data: pd.DataFrame) -> None:
    for column in ADULT_COLUMNS:
        expected = "Int64" if column in ADULT_INT_COLUMNS else "string"
        assert adult_data[column].dtype == expected, column
    assert adult_data["age"].min() == 17
    assert adult_data["age"].max() == 90


def test_adult_data_labels(adult_data: pd.DataFrame) -> None:
    assert adult_data["income"].value_counts().to_dict() == {"<=50K": 24_720, ">50K": 7_841}


def test_adult_data_missing_counts(adult_data: pd.DataFrame) -> None:
    missing = adult_data.isna().sum()
    assert missing[missing > 0].to_dict() == {
        "workclass": 1_836,
        "occupation": 1_843,
        "native-country": 583,
    }
    assert int(adult_data.isna().any(axis=1).sum()) == 2_399
    assert not (adult_data.select_dtypes("string") == "?").any().any()


def test_adult_text_is_stripped(adult_data: pd.DataFrame) -> None:
    for column in adult_data.select_dtypes("string"):
        values = adult_data[column].dropna()
        assert (values == values.str.strip()).all(), column
    assert adult_data.loc[0, "workclass"] == "State-gov"
    assert adult_data.loc[0, "native-country"] == "United-States"


def test_adult_test_banner_skipped_and_labels_stripped(adult_test: pd.DataFrame) -> None:
    assert adult_test.shape == (16_281, 15)
    assert adult_test["income"].value_counts().to_dict() == {"<=50K": 12_435, ">50K": 3_846}
    # First record after the "|1x3 Cross validator" banner.
    assert adult_test.loc[0, "age"] == 25
    assert adult_test.loc[0, "education"] == "11th"


def test_adult_test_missing_counts(adult_test: pd.DataFrame) -> None:
    missing = adult_test.isna().sum()
    assert missing[missing > 0].to_dict() == {
        "workclass": 963,
        "occupation": 966,
        "native-country": 274,
    }
    assert int(adult_test.isna().any(axis=1).sum()) == 1_221


def test_adult_splits_share_schema(adult_data: pd.DataFrame, adult_test: pd.DataFrame) -> None:
    assert adult_data.dtypes.equals(adult_test.dtypes)
    assert set(adult_data["income"]) == set(adult_test["income"]) == {"<=50K", ">50K"}


# --------------------------------------------------------------------------------------------
# Adult (format quirks and malformed files)
# --------------------------------------------------------------------------------------------


def test_adult_banner_detected_by_content_not_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "renamed.csv", f"|1x3 Cross validator\n{ADULT_ROW_TEST}\n\n")
    frame = load_adult(path)
    assert len(frame) == 1
    assert frame.loc[0, "income"] == ">50K"
    assert pd.isna(frame.loc[0, "native-country"])


def test_adult_crlf_and_trailing_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "adult.data", f"{ADULT_ROW}\r\n{ADULT_ROW}\r\n\r\n\r\n")
    frame = load_adult(path)
    assert len(frame) == 2
    assert frame.loc[1, "income"] == "<=50K"


@pytest.mark.parametrize("drop", [1, -1], ids=["too-few", "too-many"])
def test_adult_ragged_row_names_file_and_line(tmp_path: Path, drop: int) -> None:
    fields = ADULT_ROW.split(", ")
    ragged = ", ".join(fields[:-1] if drop == 1 else [*fields, "extra"])
    path = _write(tmp_path, "ragged.data", f"{ADULT_ROW}\n{ADULT_ROW}\n{ragged}\n{ADULT_ROW}\n")
    with pytest.raises(IngestError, match=r"ragged\.data: line 3: expected 15 fields") as info:
        load_adult(path)
    assert str(path) in str(info.value)


def test_adult_ragged_row_after_banner_counts_physical_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "adult.test", f"|1x3 Cross validator\n{ADULT_ROW_TEST}\n1, 2, 3\n")
    with pytest.raises(IngestError, match=r"line 3: expected 15 fields, found 3"):
        load_adult(path)


@pytest.mark.parametrize("text", ["", "\n\n", "   \n"], ids=["zero-bytes", "newlines", "blank"])
def test_adult_empty_file(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, "empty.data", text)
    with pytest.raises(IngestError, match=r"empty\.data: file is empty"):
        load_adult(path)


def test_adult_banner_only_has_no_rows(tmp_path: Path) -> None:
    path = _write(tmp_path, "banner.test", "|1x3 Cross validator\n\n")
    with pytest.raises(IngestError, match=r"banner\.test: file has no data rows"):
        load_adult(path)


def test_adult_blank_line_inside_data(tmp_path: Path) -> None:
    path = _write(tmp_path, "gap.data", f"{ADULT_ROW}\n\n{ADULT_ROW}\n")
    with pytest.raises(IngestError, match=r"gap\.data: line 2: blank line"):
        load_adult(path)


def test_adult_header_row_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "with_header.csv", ", ".join(ADULT_COLUMNS) + f"\n{ADULT_ROW}\n")
    with pytest.raises(IngestError, match=r"line 1: column 'age': expected an integer"):
        load_adult(path)


def test_adult_unknown_label(tmp_path: Path) -> None:
    path = _write(tmp_path, "labels.data", f"{ADULT_ROW}\n{ADULT_ROW.replace('<=50K', 'rich')}\n")
    with pytest.raises(IngestError, match=r"labels\.data: line 2: column 'income'"):
        load_adult(path)


def test_adult_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="file not found"):
        load_adult(tmp_path / "nope.data")


# --------------------------------------------------------------------------------------------
# Bank Marketing (real files)
# --------------------------------------------------------------------------------------------

BANK_FILES = {
    "bank.csv": ("bank_marketing/bank.csv", "y", 4_521, {"no": 4_000, "yes": 521},
                 {"job": 38, "education": 187, "contact": 1_324, "poutcome": 3_705}),
    "bank-full.csv": ("bank_marketing/bank-full.csv", "y", 45_211, {"no": 39_922, "yes": 5_289},
                      {"job": 288, "education": 1_857, "contact": 13_020, "poutcome": 36_959}),
    "kaggle-11162": ("bank_marketing/kaggle-11162/bank.csv", "deposit", 11_162,
                     {"no": 5_873, "yes": 5_289},
                     {"job": 70, "education": 497, "contact": 2_346, "poutcome": 8_326}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BANK_FILES))
def test_bank_marketing_real_files(shared_data, name: str) -> None:
    relative, label, n_rows, label_counts, unknown_counts = BANK_FILES[name]
    frame = load_bank_marketing(shared_data(relative))

    assert frame.shape == (n_rows, 17)
    assert list(frame.columns) == [*BANK_MARKETING_FEATURE_COLUMNS, label]
    assert frame[label].value_counts().to_dict() == label_counts

    missing = frame.isna().sum()
    assert missing[missing > 0].to_dict() == unknown_counts
    text = frame.select_dtypes("string")
    assert not (text == "unknown").any().any()
    assert not text.apply(lambda s: s.str.contains('"', regex=False).any()).any()

    for column in frame.columns:
        expected = "Int64" if column in BANK_INT_COLUMNS else "string"
        assert frame[column].dtype == expected, column
    # pdays = -1 is a sentinel ("not previously contacted"), kept as a value, not as missing.
    assert (frame["pdays"] == -1).sum() > 0
    assert frame[BANK_INT_COLUMNS].notna().all().all()


# --------------------------------------------------------------------------------------------
# Bank Marketing (format quirks and malformed files)
# --------------------------------------------------------------------------------------------


def test_bank_delimiter_sniffed_from_header(tmp_path: Path) -> None:
    semicolon = load_bank_marketing(
        _write(tmp_path, "a.txt", f"{BANK_HEADER_UCI}\n{BANK_ROW_UCI}\n")
    )
    comma_header = BANK_HEADER_UCI.replace(";", ",").replace('"', "").replace(",y", ",deposit")
    comma_row = BANK_ROW_UCI.replace(";", ",").replace('"', "")
    comma = load_bank_marketing(_write(tmp_path, "b.txt", f"{comma_header}\n{comma_row}\n"))
    assert semicolon.drop(columns="y").equals(comma.drop(columns="deposit"))
    assert semicolon.loc[0, "job"] == "unemployed"
    assert pd.isna(semicolon.loc[0, "poutcome"])
    assert semicolon.loc[0, "balance"] == 1787


def test_bank_ragged_row_names_file_and_line(tmp_path: Path) -> None:
    ragged = BANK_ROW_UCI.rsplit(";", 1)[0]
    path = _write(tmp_path, "bank.csv", f"{BANK_HEADER_UCI}\n{BANK_ROW_UCI}\n{ragged}\n")
    with pytest.raises(IngestError, match=r"bank\.csv: line 3: expected 17 fields"):
        load_bank_marketing(path)


def test_bank_empty_and_header_only(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"empty\.csv: file is empty"):
        load_bank_marketing(_write(tmp_path, "empty.csv", ""))
    with pytest.raises(IngestError, match=r"header\.csv: file has no data rows"):
        load_bank_marketing(_write(tmp_path, "header.csv", BANK_HEADER_UCI + "\n"))


def test_bank_wrong_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "other.csv", "a;b;c\n1;2;3\n")
    with pytest.raises(IngestError, match=r"other\.csv: line 1: not a Bank Marketing header"):
        load_bank_marketing(path)


def test_bank_non_integer_balance(tmp_path: Path) -> None:
    row = BANK_ROW_UCI.replace(";1787;", ";12.5;")
    path = _write(tmp_path, "bank.csv", f"{BANK_HEADER_UCI}\n{BANK_ROW_UCI}\n{row}\n")
    with pytest.raises(IngestError, match=r"line 3: column 'balance': expected an integer"):
        load_bank_marketing(path)


# --------------------------------------------------------------------------------------------
# Breast Cancer Wisconsin
# --------------------------------------------------------------------------------------------


def test_breast_cancer_real_file(shared_data) -> None:
    path = shared_data("breast_cancer_wisconsin/breast-cancer-wisconsin.data")
    frame = load_breast_cancer_wisconsin(path)

    # Count "?" independently, straight from the raw text.
    raw_rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    expected_missing = sum(row[6].strip() == "?" for row in raw_rows)
    assert expected_missing == 16  # as documented in PROVENANCE.md and the .names file

    assert frame.shape == (699, 11)
    assert list(frame.columns) == list(BREAST_CANCER_WISCONSIN_COLUMNS)
    assert (frame.dtypes == "Int64").all()
    missing = frame.isna().sum()
    assert missing[missing > 0].to_dict() == {"bare_nuclei": expected_missing}
    assert frame["class"].value_counts().to_dict() == {2: 458, 4: 241}
    assert frame["sample_code_number"].nunique() == 645
    features = frame[list(BREAST_CANCER_WISCONSIN_COLUMNS[1:10])]
    assert features.min().min() == 1
    assert features.max().max() == 10


def test_breast_cancer_ragged_row(tmp_path: Path) -> None:
    path = _write(tmp_path, "bcw.data", f"{BREAST_ROW}\n{BREAST_ROW},7\n")
    with pytest.raises(IngestError, match=r"bcw\.data: line 2: expected 11 fields, found 12"):
        load_breast_cancer_wisconsin(path)


def test_breast_cancer_empty_file(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"bcw\.data: file is empty"):
        load_breast_cancer_wisconsin(_write(tmp_path, "bcw.data", ""))


def test_breast_cancer_bad_class(tmp_path: Path) -> None:
    path = _write(tmp_path, "bcw.data", f"{BREAST_ROW}\n{BREAST_ROW[:-1]}3\n")
    with pytest.raises(IngestError, match=r"bcw\.data: line 2: column 'class'"):
        load_breast_cancer_wisconsin(path)
