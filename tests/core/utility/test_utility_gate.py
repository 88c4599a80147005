"""The utility gate and the policy's ``utility`` section.

The end-to-end check runs the stages the way the release flow does (anonymize, measure, stage,
gate) and shows that a violated threshold leaves no release behind, only the blocked run's
report.
"""

from __future__ import annotations

import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import PolicyError
from privgate.core.policy import UtilityThresholds
from privgate.core.publish import discard
from privgate.core.report import blocked_report_path, build_report, write_report
from privgate.core.utility import check_utility, measure_utility

ADULT_UTILITY = {
    "target": "salary-class",
    "models": ["random_forest", "logistic_regression"],
    "sample_size": 1500,
    "cv_folds": 3,
    "clusters": [3],
    "clustering": ["kmeans"],
}


@pytest.fixture(scope="module")
def measured(adult, adult_k5):
    table, release = adult_k5
    policy = adult.policy_for(utility=ADULT_UTILITY)
    utility = measure_utility(
        adult.frame, release, policy, adult.hierarchies, levels=table.result.levels
    )
    return policy, table, utility


@pytest.mark.slow  # classifiers cross-validated on Adult: 15 s under load
def test_reachable_thresholds_pass(measured) -> None:
    _, _, utility = measured
    decision = check_utility(
        utility,
        UtilityThresholds(
            min_auc_ratio=0.5, max_loss=0.9, min_f_measure=0.1, max_total_variation=1.0
        ),
    )
    assert decision.passed and decision.reasons == []
    checks = decision.measurements["checks"]
    assert {c["threshold"] for c in checks} == {
        "min_auc_ratio",
        "max_loss",
        "min_f_measure",
        "max_total_variation",
    }
    assert all(c["held"] for c in checks)
    assert decision.summary.startswith("PASSED: 13 utility check(s)")


def test_unreachable_thresholds_block_with_the_numbers(measured) -> None:
    _, _, utility = measured
    decision = check_utility(utility, UtilityThresholds(min_auc_ratio=1.5, max_loss=0.0))
    assert not decision.passed
    loss = utility.loss["total"]
    assert f"information loss {loss:.4f} (mean over the quasi-identifiers), above max_loss = 0" in (
        decision.reasons
    )
    rf = utility.classification.score("random_forest")
    assert any(
        r.startswith(f"random_forest: ROC AUC on the release {rf.auc_release:.4f} is ")
        and r.endswith("below min_auc_ratio = 1.5")
        for r in decision.reasons
    )
    assert len(decision.reasons) == 3  # two models and the loss
    assert decision.summary.startswith("BLOCKED: ")


def test_no_thresholds_pass_and_unmeasured_ones_block(measured, adult, adult_k5) -> None:
    _, _, utility = measured
    assert check_utility(utility, None).passed
    assert check_utility(utility, None).summary == "PASSED: no utility threshold set"
    table, release = adult_k5
    bare = measure_utility(adult.frame, release, adult.policy, adult.hierarchies)
    decision = check_utility(bare, UtilityThresholds(min_auc_ratio=0.9, min_match_point=0.5))
    assert decision.reasons == [
        "min_auc_ratio = 0.9 cannot be checked: no classification was run",
        "min_match_point = 0.5 cannot be checked: no clustering was run",
    ]


@pytest.mark.slow
def test_blocked_utility_publishes_nothing(adult, measured, tmp_path) -> None:
    """The flow's order: anonymize, measure, stage, gate; a utility block discards the stage.

    The anonymized table and its measured utility are the module's (``adult_k5``, scored by
    ``measured``): the same search and the same classifiers as this policy's, whose threshold
    only the check reads (a second whole-Adult search and cross-validation: 3 CPU s)."""
    policy = adult.policy_for(
        utility={**ADULT_UTILITY, "thresholds": {"min_auc_ratio": 1.5}},
        **{"output.directory": str(tmp_path)},
    )
    measured_policy, table, utility = measured
    assert table.metrics["algorithm"] == policy.algorithm.name
    assert measured_policy.privacy == policy.privacy
    assert measured_policy.utility.model_dump(exclude={"thresholds"}) == (
        policy.utility.model_dump(exclude={"thresholds"})
    )
    udecision = check_utility(utility, policy.utility.thresholds)
    release_id = "2026-11-22-0123456789ab"
    staged = stages.stage(table, policy, release_id)
    setup = SearchSetup.from_policy(policy, adult.hierarchies)
    pdecision = stages.verify(staged.release_file, setup, len(adult.frame))
    assert pdecision.passed and not udecision.passed
    discard(staged)
    report = build_report(
        policy=policy,
        release_id=release_id,
        original=adult.frame,
        table=table,
        privacy_decision=pdecision,
        status="blocked",
        utility=utility,
        utility_decision=udecision,
        hierarchies=adult.hierarchies,
    )
    path = write_report(report, blocked_report_path(tmp_path, policy.dataset, release_id))
    assert report.blocked_by == ["utility"]
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert files == [
        "adult",
        "adult/blocked",
        f"adult/blocked/{release_id}",
        f"adult/blocked/{release_id}/report.html",
    ]
    assert "below min_auc_ratio = 1.5" in path.read_text()


# ----------------------------------------------------------------------------------------------
# The policy's utility section


def test_policy_without_utility_keeps_its_dump_and_fingerprint(adult) -> None:
    assert "utility" not in adult.policy.model_dump()
    with_section = adult.policy_for(utility={"target": "salary-class"})
    assert with_section.fingerprint() != adult.policy.fingerprint()
    assert with_section.utility.models == ["svm", "random_forest", "logistic_regression"]
    assert (with_section.utility.cv_folds, with_section.utility.sample_size) == (5, 5000)
    assert with_section.utility.clusters == [3, 5]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"target": "nope"}, r"utility\.target: unknown column 'nope'"),
        ({"target": "age"}, r"utility\.target: 'age' is a quasi_identifier"),
        ({"thresholds": {"min_auc_ratio": 0.95}}, r"utility: thresholds\.min_auc_ratio needs"),
        (
            {"clusters": [], "thresholds": {"min_f_measure": 0.5}},
            r"utility: thresholds\.min_f_measure needs a clustering",
        ),
        ({"models": ["svm", "svm"]}, r"utility\.models: values must not repeat"),
        ({"models": ["xgboost"]}, r"utility\.models\.0: Input should be"),
        ({"clusters": [1]}, r"utility\.clusters\.0: Input should be greater than or equal to 2"),
        ({"cv_folds": 1}, r"utility\.cv_folds: Input should be greater than or equal to 2"),
        ({"sample_size": 10}, r"utility\.sample_size: Input should be greater"),
        ({"thresholds": {"max_loss": 2}}, r"utility\.thresholds\.max_loss: Input should be"),
        ({"thresholds": {"max_lost": 0.5}}, r"utility\.thresholds\.max_lost: unknown key"),
    ],
)
def test_bad_utility_sections_name_the_key(adult, section, message) -> None:
    with pytest.raises(PolicyError, match=message):
        adult.policy_for(utility=section)
