"""Tests for core.demo_data: the seeded, synthetic Adult-like census generator."""

from __future__ import annotations

import builtins
import pathlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core.demo_data import CENSUS_COLUMNS, generate_census, write_census_csv

# Written out independently of the module under test (Adult's coding, see adult.names).
EXPECTED_EDUCATION_NUM = {
    "Preschool": 1, "1st-4th": 2, "5th-6th": 3, "7th-8th": 4, "9th": 5, "10th": 6, "11th": 7,
    "12th": 8, "HS-grad": 9, "Some-college": 10, "Assoc-voc": 11, "Assoc-acdm": 12,
    "Bachelors": 13, "Masters": 14, "Prof-school": 15, "Doctorate": 16,
}  # fmt: skip

# Column in the generated table -> ARX hierarchy file that must cover it.
ARX_HIERARCHIES = {
    "sex": "adult_hierarchy_sex.csv",
    "age": "adult_hierarchy_age.csv",
    "race": "adult_hierarchy_race.csv",
    "marital-status": "adult_hierarchy_marital-status.csv",
    "education": "adult_hierarchy_education.csv",
    "native-country": "adult_hierarchy_native-country.csv",
    "workclass": "adult_hierarchy_workclass.csv",
    "occupation": "adult_hierarchy_occupation.csv",
    "income": "adult_hierarchy_salary-class.csv",
}

TEXT_COLUMNS = ["person_id", "sex", "race", "marital-status", "education", "occupation",
                "workclass", "native-country", "income"]  # fmt: skip


@pytest.fixture(scope="module")
def census() -> pd.DataFrame:
    return generate_census()


def _hierarchy_domain(path: Path) -> set[str]:
    """Level-0 values of an ARX hierarchy file (``;``-separated, no header)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {line.split(";")[0].strip() for line in lines if line.strip()}


# --------------------------------------------------------------------------------------------
# Shape, schema, determinism
# --------------------------------------------------------------------------------------------


def test_default_shape_and_columns(census: pd.DataFrame) -> None:
    assert census.shape == (30_000, 14)
    assert list(census.columns) == list(CENSUS_COLUMNS)
    assert list(CENSUS_COLUMNS) == [
        "person_id", "age", "sex", "race", "marital-status", "education", "education-num",
        "occupation", "workclass", "native-country", "hours-per-week", "capital-gain",
        "capital-loss", "income",
    ]  # fmt: skip
    assert census.notna().all().all()


def test_dtypes(census: pd.DataFrame) -> None:
    for column in CENSUS_COLUMNS:
        if column in TEXT_COLUMNS:
            assert census[column].dtype == "string", column
        else:
            assert census[column].dtype == np.int64, column


def test_person_id_is_a_unique_direct_identifier(census: pd.DataFrame) -> None:
    assert census["person_id"].is_unique
    assert census["person_id"].iloc[0] == "P000001"
    assert census["person_id"].iloc[-1] == "P030000"
    assert census["person_id"].str.fullmatch(r"P\d{6}").all()


def test_same_seed_gives_identical_frame() -> None:
    pd.testing.assert_frame_equal(generate_census(2_000, seed=7), generate_census(2_000, seed=7))


def test_different_seeds_give_different_frames() -> None:
    a = generate_census(2_000, seed=1)
    b = generate_census(2_000, seed=2)
    assert not a.drop(columns="person_id").equals(b.drop(columns="person_id"))
    assert (a["age"] != b["age"]).mean() > 0.5


def test_default_seed_is_stable() -> None:
    pd.testing.assert_frame_equal(generate_census(500), generate_census(500, seed=20261122))


def test_small_and_empty_sizes() -> None:
    assert len(generate_census(1, seed=3)) == 1
    empty = generate_census(0)
    assert empty.shape == (0, 14)
    assert list(empty.columns) == list(CENSUS_COLUMNS)
    with pytest.raises(ValueError, match="n_rows"):
        generate_census(-1)


def test_does_not_read_files_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("generate_census must not open files")

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(pathlib.Path, "open", refuse)
    assert len(generate_census(100, seed=11)) == 100


# --------------------------------------------------------------------------------------------
# Value sets
# --------------------------------------------------------------------------------------------


def test_education_num_matches_education_exactly(census: pd.DataFrame) -> None:
    mapped = census["education"].map(EXPECTED_EDUCATION_NUM)
    assert mapped.notna().all()
    assert (mapped.astype(np.int64) == census["education-num"]).all()
    assert set(census["education"]) == set(EXPECTED_EDUCATION_NUM)


def test_values_within_arx_hierarchy_domains(census: pd.DataFrame, shared_data) -> None:
    for column, file_name in ARX_HIERARCHIES.items():
        domain = _hierarchy_domain(shared_data(f"arx/{file_name}"))
        values = set(census[column].astype(str))
        assert values <= domain, (column, sorted(values - domain))


def test_value_sets_cover_the_adult_domains(census: pd.DataFrame, shared_data) -> None:
    for column in ["sex", "race", "marital-status", "education", "occupation", "income"]:
        domain = _hierarchy_domain(shared_data(f"arx/{ARX_HIERARCHIES[column]}"))
        assert set(census[column]) == domain, column
    workclass_domain = _hierarchy_domain(shared_data("arx/adult_hierarchy_workclass.csv"))
    assert set(census["workclass"]) == workclass_domain - {"Never-worked"}
    # 41 countries; the rarest (Holand-Netherlands, 1 in 32,561 in Adult) may be absent.
    assert census["native-country"].nunique() >= 38


def test_numeric_ranges(census: pd.DataFrame) -> None:
    assert census["age"].between(17, 90).all()
    assert census["age"].min() == 17
    assert census["age"].max() >= 85
    assert census["hours-per-week"].between(1, 99).all()
    assert census["hours-per-week"].mode().iloc[0] == 40
    assert (census["capital-gain"] >= 0).all()
    assert (census["capital-loss"] >= 0).all()
    assert census["capital-gain"].max() == 99_999


# --------------------------------------------------------------------------------------------
# Marginals close to Adult
# --------------------------------------------------------------------------------------------


def test_marginals_are_adult_like(census: pd.DataFrame) -> None:
    share = {c: census[c].value_counts(normalize=True) for c in CENSUS_COLUMNS}
    assert 0.21 <= share["income"][">50K"] <= 0.27
    assert 0.87 <= share["native-country"]["United-States"] <= 0.94
    assert 0.63 <= share["sex"]["Male"] <= 0.71
    assert 0.80 <= share["race"]["White"] <= 0.89
    assert 0.65 <= share["workclass"]["Private"] <= 0.80
    assert 0.40 <= share["marital-status"]["Married-civ-spouse"] <= 0.50
    assert 0.28 <= share["education"]["HS-grad"] <= 0.36
    assert 34 <= census["age"].median() <= 40
    assert census["age"].skew() > 0.3  # right-skewed like the labour force


def test_capital_gain_and_loss_mostly_zero(census: pd.DataFrame) -> None:
    gain_zero = (census["capital-gain"] == 0).mean()
    loss_zero = (census["capital-loss"] == 0).mean()
    assert 0.90 <= gain_zero <= 0.94
    assert 0.93 <= loss_zero <= 0.97
    assert not ((census["capital-gain"] > 0) & (census["capital-loss"] > 0)).any()
    positive = census.loc[census["capital-gain"] > 0, "capital-gain"]
    assert positive.mean() > 1.5 * positive.median()  # heavy right tail


# --------------------------------------------------------------------------------------------
# Dependencies
# --------------------------------------------------------------------------------------------


def test_marital_status_depends_on_age(census: pd.DataFrame) -> None:
    married = census["marital-status"] == "Married-civ-spouse"
    young = census["age"] < 25
    middle = census["age"].between(35, 55)
    assert married[young].mean() < 0.15
    assert married[middle].mean() > 0.45
    widowed = census["marital-status"] == "Widowed"
    assert widowed[census["age"] >= 70].mean() > 5 * widowed[census["age"] < 50].mean()


def test_young_people_rarely_have_advanced_degrees(census: pd.DataFrame) -> None:
    young = census[census["age"] < 24]
    assert (young["education"] == "Doctorate").sum() == 0
    assert young["education"].isin(["Masters", "Prof-school"]).mean() < 0.01


def test_occupation_depends_on_education(census: pd.DataFrame) -> None:
    prof = census["occupation"] == "Prof-specialty"
    graduate = census["education"].isin(["Masters", "Prof-school", "Doctorate"])
    no_diploma = census["education-num"] <= 8
    assert prof[graduate].mean() > 0.4
    assert prof[no_diploma].mean() < 0.05


def test_income_depends_on_predictors(census: pd.DataFrame) -> None:
    high = census["income"] == ">50K"
    married = census["marital-status"] == "Married-civ-spouse"
    assert high[married].mean() > 2 * high[~married].mean()
    degree = census["education-num"] >= 13
    at_most_high_school = census["education-num"] <= 9
    assert high[degree].mean() > 2 * high[at_most_high_school].mean()
    assert high[census["capital-gain"] >= 7_000].mean() > 0.8


def test_classifier_can_learn_income(census: pd.DataFrame) -> None:
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = ["age", "education-num", "hours-per-week", "capital-gain", "capital-loss"]
    categorical = ["sex", "race", "marital-status", "occupation", "workclass"]
    features = census[numeric + categorical].copy()
    features[categorical] = features[categorical].astype(object)
    target = (census["income"] == ">50K").to_numpy()

    model = make_pipeline(
        ColumnTransformer(
            [
                ("num", StandardScaler(), numeric),
                ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
            ]
        ),
        LogisticRegression(max_iter=1_000),
    )
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    auc = cross_val_score(model, features, target, cv=folds, scoring="roc_auc")
    assert auc.min() > 0.75, auc


# --------------------------------------------------------------------------------------------
# CSV writer
# --------------------------------------------------------------------------------------------


def test_write_census_csv_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "dir" / "census.csv"
    written = write_census_csv(target, n_rows=1_000, seed=5)
    assert written == target
    assert isinstance(written, Path)

    raw = target.read_bytes()
    raw.decode("utf-8")
    assert raw.startswith(b"person_id,age,sex,race,marital-status,education,education-num,")
    assert b"\r\n" not in raw
    assert raw.count(b"\n") == 1_001

    back = pd.read_csv(target, sep=",", encoding="utf-8")
    back[TEXT_COLUMNS] = back[TEXT_COLUMNS].astype("string")
    pd.testing.assert_frame_equal(back, generate_census(1_000, seed=5))


def test_write_census_csv_accepts_str_path(tmp_path: Path) -> None:
    written = write_census_csv(str(tmp_path / "c.csv"), n_rows=10)
    assert written == tmp_path / "c.csv"
    assert len(pd.read_csv(written)) == 10
