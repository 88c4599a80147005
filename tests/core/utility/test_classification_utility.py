"""Classification utility on Adult: paired folds, stratified sample, faithful features."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.core.utility import classification_utility, describe_domains

FAST = {"cv": 3, "sample_size": 1500, "seed": 0}


@pytest.fixture(scope="module")
def features(adult):
    qis = adult.policy.quasi_identifiers
    return describe_domains(adult.frame, {q: adult.hierarchies[q] for q in qis}, {"age"})


def test_identical_release_scores_exactly_like_the_original(adult, features) -> None:
    result = classification_utility(
        adult.frame, adult.frame.astype("string"), features, "salary-class", **FAST
    )
    assert [s.model for s in result.scores] == ["svm", "random_forest", "logistic_regression"]
    for s in result.scores:
        assert s.auc_release == s.auc_original and s.accuracy_release == s.accuracy_original
        assert s.auc_ratio == 1.0 and 0.75 < s.auc_original < 1.0
    assert result.sample_rows == result.release_rows == 1500


def test_release_scores_and_sample(adult, adult_k5, features) -> None:
    table, release = adult_k5
    result = classification_utility(
        adult.frame, release, features, "salary-class", models=("svm", "random_forest"), **FAST
    )
    assert result.sample_rows == 1500
    # suppressed records of the sample are absent from the release's folds
    assert 1500 - 100 < result.release_rows < 1500
    # the sample is stratified: the class shares are the table's (up to one record)
    share = (adult.frame["salary-class"] == "<=50K").mean()
    assert abs(result.majority_accuracy - share) <= 1 / 1500
    for s in result.scores:
        assert 0.5 < s.auc_release <= 1.0 and 0.5 < s.auc_original <= 1.0
        assert 0.0 < s.auc_ratio < 1.1
        assert s.auc_std_release >= 0.0
    again = classification_utility(
        adult.frame, release, features, "salary-class", models=("svm", "random_forest"), **FAST
    )
    assert [s.to_dict() for s in again.scores] == [s.to_dict() for s in result.scores]
    assert table.result.n_suppressed > 0


def test_numeric_bounds_encoding_runs(adult, adult_mondrian, features) -> None:
    _, release = adult_mondrian
    result = classification_utility(
        adult.frame,
        release,
        features,
        "salary-class",
        models=("logistic_regression",),
        numeric="bounds",
        **FAST,
    )
    assert result.release_rows == 1500  # Mondrian suppresses nothing
    assert np.isfinite(result.scores[0].auc_release)


def test_parameters_are_checked(adult, features) -> None:
    frame = adult.frame
    with pytest.raises(ValueError, match="must not also be a feature"):
        classification_utility(frame, frame, features, "age")
    with pytest.raises(ValueError, match="'models' parameter.*'xgboost'"):
        classification_utility(frame, frame, features, "salary-class", models=("xgboost",))
    with pytest.raises(ValueError, match="'cv' parameter"):
        classification_utility(frame, frame, features, "salary-class", cv=1)
    with pytest.raises(ValueError, match="index of its original record"):
        classification_utility(
            frame, frame.set_axis(frame.index + 10**6), features, "salary-class", **FAST
        )
