"""Permutation (out-of-bag) and drop-column importance, on real Adult records and tiny tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_QI
from sklearn.ensemble import RandomForestClassifier

from privgate.core.datasets import ADULT_COLUMNS
from privgate.core.exceptions import PolicyError, PrivgateError
from privgate.core.ranking import (
    Ranking,
    drop_column_importance,
    oob_permutation_importance,
    ordinal_matrix,
    rank_attributes,
)
from privgate.core.ranking._permutation import _tree_drops

ADULT_QIS = [column for column in ADULT_COLUMNS if column in ADULT_QI]


def _with_leak_and_noise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Adult QIs plus a column that *is* the label (as text) and one of pure noise."""
    rng = np.random.default_rng(seed)
    out = frame[ADULT_QIS].copy()
    out["leak"] = frame["income"].map({"<=50K": "low", ">50K": "high"}).astype("string")
    out["noise"] = rng.random(len(frame))
    return out


def test_perfectly_predictive_column_first_and_noise_low(adult_sample):
    X = _with_leak_and_noise(adult_sample)
    importance = oob_permutation_importance(X, adult_sample["income"], n_estimators=30)
    assert importance.index[0] == "leak"
    assert importance["leak"] > 0.1
    assert abs(importance["noise"]) < 0.01
    assert list(importance.index).index("noise") >= len(importance) // 2
    assert importance.is_monotonic_decreasing


def test_noise_is_only_important_on_rows_the_tree_trained_on(adult_sample):
    """The score really comes from out-of-bag rows: on in-bag rows noise looks important."""
    X = _with_leak_and_noise(adult_sample).drop(columns="leak")
    y = adult_sample["income"]
    oob = oob_permutation_importance(X, y, n_estimators=30, random_state=3)
    matrix = ordinal_matrix(X)
    codes = pd.factorize(y, sort=True)[0]
    forest = RandomForestClassifier(n_estimators=30, random_state=3, n_jobs=1).fit(matrix, codes)
    rng = np.random.default_rng(3)
    noise = list(X.columns).index("noise")
    in_bag = [
        _tree_drops(tree, matrix[np.unique(rows)], codes[np.unique(rows)], rng)[noise]
        for tree, rows in zip(forest.estimators_, forest.estimators_samples_, strict=True)
    ]
    assert np.mean(in_bag) > 0.02  # memorized training rows lean on the noise
    assert abs(oob["noise"]) < 0.01  # unseen rows do not


def _brute_force(X: pd.DataFrame, y: pd.Series, n_estimators: int, seed: int) -> pd.Series:
    """Breiman's definition, row by row: per tree, per column, permute within its OOB rows."""
    matrix = ordinal_matrix(X)
    codes = pd.factorize(y, sort=True)[0]
    forest = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=1)
    forest.fit(matrix, codes)
    rng = np.random.default_rng(seed)
    sums = np.zeros(X.shape[1])
    for tree, rows in zip(forest.estimators_, forest.estimators_samples_, strict=True):
        in_bag = set(rows.tolist())
        oob = [i for i in range(len(matrix)) if i not in in_bag]
        base = sum(tree.predict(matrix[[i]])[0] == codes[i] for i in oob) / len(oob)
        shuffled_columns = [rng.permutation(matrix[oob, j]) for j in range(X.shape[1])]
        for j in range(X.shape[1]):
            hits = 0
            for position, i in enumerate(oob):
                row = matrix[i].copy()
                row[j] = shuffled_columns[j][position]
                hits += tree.predict(row[None, :])[0] == codes[i]
            sums[j] += base - hits / len(oob)
    return pd.Series(sums / n_estimators, index=X.columns)


def test_matches_brute_force_reference_on_tiny_table(adult_sample):
    tiny = adult_sample.head(60)
    X = tiny[["age", "education", "sex", "hours-per-week"]]
    got = oob_permutation_importance(X, tiny["income"], n_estimators=5, random_state=7)
    expected = _brute_force(X, tiny["income"], n_estimators=5, seed=7)
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False)
    assert got.abs().sum() > 0  # the reference is not trivially all zero


def test_column_the_forest_cannot_use_scores_exactly_zero(adult_sample):
    X = adult_sample[["age", "education"]].assign(constant="same")
    importance = oob_permutation_importance(X, adult_sample["income"], n_estimators=10)
    assert importance["constant"] == 0.0
    assert importance["age"] > 0


def test_mixed_dtypes_and_missing_values_are_encoded():
    rng = np.random.default_rng(0)
    n = 300
    label = rng.integers(0, 2, n)
    X = pd.DataFrame(
        {
            "text": pd.array(np.where(label == 1, "yes", "no"), dtype="string"),
            "obj": np.where(rng.random(n) < 0.5, "a", "b").astype(object),
            "cat": pd.Categorical(rng.choice(["x", "y", "z"], n)),
            "nullable": pd.array(rng.integers(0, 5, n), dtype="Int64"),
            "flag": rng.random(n) < 0.5,
        }
    )
    X.loc[::7, "text"] = pd.NA
    X.loc[::5, "nullable"] = pd.NA
    matrix = ordinal_matrix(X)
    assert matrix.dtype == np.float64
    assert np.isnan(matrix[::7, 0]).all() and np.isnan(matrix[::5, 3]).all()
    assert set(np.unique(matrix[~np.isnan(matrix[:, 0]), 0])) == {0.0, 1.0}  # 'no' < 'yes'
    importance = oob_permutation_importance(X, label, n_estimators=20)
    assert importance.index[0] == "text"
    assert np.isfinite(importance).all()


def test_drop_column_finds_the_leak_and_averages_its_runs(adult_sample):
    small = adult_sample.head(800)
    X = _with_leak_and_noise(small)[["leak", "noise", "age", "sex"]]
    y = small["income"]
    averaged = drop_column_importance(X, y, runs=3, n_estimators=15, random_state=4)
    assert averaged.index[0] == "leak"
    assert averaged["leak"] > 0.05
    assert averaged["noise"] < averaged["leak"] / 5
    singles = [
        drop_column_importance(X, y, runs=1, n_estimators=15, random_state=4 + r) for r in range(3)
    ]
    mean = pd.concat(singles, axis=1).mean(axis=1)
    pd.testing.assert_series_equal(averaged.sort_index(), mean.sort_index(), check_names=False)
    assert not singles[0].sort_index().equals(singles[1].sort_index())  # the seeds differ


def test_rank_attributes_permutation(adult_sample):
    ranking = rank_attributes(adult_sample, ADULT_QIS, "income", n_estimators=30)
    assert isinstance(ranking, Ranking)
    assert ranking.method == "permutation" and ranking.runs == 1
    assert sorted(ranking.order) == sorted(ADULT_QIS)
    scores = list(ranking.importance.values())
    assert scores == sorted(scores, reverse=True)
    assert ranking.order[0] == "marital-status"  # the strongest QI for income in Adult
    assert ranking.tiers[ranking.order[0]] == 1
    assert set(ranking.columns_in_tiers(5)) == set(ADULT_QIS)
    assert ranking.columns_in_tiers(1) == [n for n in ranking.order if ranking.tiers[n] == 1]
    encoded = json.loads(json.dumps(ranking.to_dict()))
    assert encoded["order"] == ranking.order and encoded["tiers"] == ranking.tiers
    frame = ranking.to_frame()
    assert list(frame.columns) == ["attribute", "importance", "tier", "approximation_degree"]
    assert frame["attribute"].tolist() == ranking.order


def test_rank_attributes_drop_column_records_runs(adult_sample):
    small = adult_sample.head(500)
    ranking = rank_attributes(
        small, ["sex", "age"], "income", method="drop_column", runs=2, n_estimators=10, n_tiers=1
    )
    assert ranking.method == "drop_column" and ranking.runs == 2 and ranking.n_estimators == 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "shap"}, "'shap' is unknown"),
        ({"target": "salary"}, "'salary' is not in the table"),
        ({"columns": ["age", "income"]}, "among the columns"),
        ({"columns": ["age", "zip"]}, "['zip']"),
        ({"n_estimators": 0}, "'n_estimators'"),
    ],
)
def test_rank_attributes_refuses_bad_requests(adult_sample, kwargs, message):
    args = {"columns": ["age", "sex"], "target": "income"} | kwargs
    with pytest.raises(PolicyError, match=None) as info:
        rank_attributes(adult_sample.head(50), **args)
    assert message in str(info.value)


def test_single_class_and_missing_target_are_refused(adult_sample):
    one_class = adult_sample.head(50).assign(income="<=50K")
    with pytest.raises(PrivgateError, match="single class"):
        rank_attributes(one_class, ["age"], "income")
    gap = adult_sample.head(50).copy()
    gap.loc[gap.index[3], "income"] = pd.NA
    with pytest.raises(PolicyError, match="1 missing value"):
        rank_attributes(gap, ["age"], "income")
