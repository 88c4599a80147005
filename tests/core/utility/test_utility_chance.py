"""A utility gate whose baseline model is at chance says so (issue 16).

The rule (:data:`privgate.core.utility.CHANCE_RULE`): a model's baseline on the original is at
chance when its ROC AUC is within two standard errors of 0.5, or its accuracy is no higher than
the majority rate. On Adult with only race and native country as quasi-identifiers (the other
columns dropped as identifiers), both classifiers' accuracy equals or trails the majority rate:
the gate passes its ratios but flags that they compare with a model that learned nothing. On
the full Adult policy it flags nothing.
"""

from __future__ import annotations

import pytest

from privgate.core.policy import ReleasePolicy, UtilityThresholds
from privgate.core.utility import (
    CHANCE_RULE,
    ModelScore,
    baseline_at_chance,
    check_utility,
    measure_utility,
)

DROPPED = ["sex", "age", "marital-status", "education", "workclass", "occupation"]


def _score(auc: float, auc_std: float, accuracy: float) -> ModelScore:
    return ModelScore("m", auc, auc, accuracy, accuracy, auc_std_original=auc_std)


@pytest.mark.parametrize(
    ("auc", "std", "folds", "expected"),
    [
        (0.5, 0.0, 5, True),
        (0.52, 0.03, 4, True),  # 0.02 <= 2 * 0.03 / 2
        (0.52, 0.01, 4, False),  # 0.02 > 2 * 0.01 / 2
        (0.45, 0.0, 3, True),  # worse than chance is at chance
        (0.85, 0.01, 5, False),
    ],
)
def test_auc_rule(auc: float, std: float, folds: int, expected: bool) -> None:
    assert baseline_at_chance(_score(auc, std, 0.9), folds, 0.5)["auc"] is expected


def test_accuracy_rule_is_the_majority_rate() -> None:
    assert baseline_at_chance(_score(0.9, 0.0, 0.75), 5, 0.75)["accuracy"] is True
    assert baseline_at_chance(_score(0.9, 0.0, 0.70), 5, 0.75)["accuracy"] is True
    assert baseline_at_chance(_score(0.9, 0.0, 0.76), 5, 0.75)["accuracy"] is False


@pytest.fixture(scope="module")
def race_and_country(adult):
    """Adult released over race and native country only, its utility measured."""
    from privgate.core import stages
    from privgate.core.anonymize import SearchSetup

    data = adult.policy.model_dump(mode="json", exclude_none=True)
    for name in DROPPED:
        data["columns"][name] = {"role": "identifier", "type": data["columns"][name]["type"]}
    data["utility"] = {
        "target": "salary-class",
        "models": ["logistic_regression", "random_forest"],
        "cv_folds": 3,
        "sample_size": 1500,
        "clusters": [],
        "clustering": [],
    }
    policy = ReleasePolicy.model_validate(data)
    setup = SearchSetup.from_policy(policy)
    (table,) = stages.anonymize(adult.frame, setup)
    utility = measure_utility(
        adult.frame, table.frame, policy, setup.hierarchies, levels=table.result.levels
    )
    return policy, setup, table, utility


def test_a_baseline_at_chance_on_adult_passes_but_is_flagged(race_and_country) -> None:
    utility = race_and_country[-1]
    cls = utility.classification
    decision = check_utility(utility, UtilityThresholds(min_accuracy_ratio=0.9))
    assert decision.passed
    m = decision.measurements
    assert m["chance_rule"] == CHANCE_RULE
    for s in cls.scores:  # each model's accuracy is no better than guessing '<=50K'
        assert s.accuracy_original <= cls.majority_accuracy + 1e-12
        assert m["baseline_at_chance"][s.model]["accuracy"] is True
    assert all(c["baseline_at_chance"] for c in m["checks"])
    assert len(decision.flags) == 2
    assert all("at chance" in f and "majority rate" in f for f in decision.flags)
    assert decision.summary.count("; FLAGGED: ") == 2
    assert decision.to_dict()["flags"] == decision.flags


def test_full_adult_baselines_are_not_at_chance(adult, adult_k5) -> None:
    from privgate.core.anonymize import SearchSetup

    table, release = adult_k5
    policy = adult.policy_for(
        utility={
            "target": "salary-class",
            "models": ["logistic_regression"],
            "cv_folds": 3,
            "sample_size": 1500,
            "clusters": [],
            "clustering": [],
        }
    )
    hierarchies = SearchSetup.from_policy(policy).hierarchies
    utility = measure_utility(adult.frame, release, policy, hierarchies, levels=table.result.levels)
    decision = check_utility(utility, UtilityThresholds(min_auc_ratio=0.5))
    assert decision.passed and decision.flags == []
    assert decision.measurements["baseline_at_chance"] == {
        "logistic_regression": {"auc": False, "accuracy": False}
    }
    assert "FLAGGED" not in decision.summary


def test_the_report_shows_the_flags_and_the_rule(adult, race_and_country) -> None:
    from privgate.core import stages
    from privgate.core.report import build_report, markdown_summary, render_html

    policy, setup, table, utility = race_and_country
    decision = check_utility(utility, policy.utility.thresholds)
    privacy = stages.verify(table.frame, setup, len(adult.frame), **table.gate_facts())
    report = build_report(
        policy=policy,
        release_id="r1",
        original=adult.frame,
        table=table,
        privacy_decision=privacy,
        status="published",
        utility=utility,
        utility_decision=decision,
        hierarchies=setup.hierarchies,
        setup=setup,
    )
    html = render_html(report)
    banner = html[html.index('class="banner ok"') : html.index("<h3>Privacy gate</h3>")]
    assert banner.count("at chance") == 2 and "Flagged" in banner
    gate_part = html[html.index("<h3>Utility gate</h3>") :]
    assert "Baseline (the model on the original) at chance?" in gate_part
    assert "within two standard errors of 0.5" in gate_part
    assert "**Flagged**" in markdown_summary(report)
