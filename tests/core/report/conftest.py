"""An Adult release (k=5, 2 % suppression, l-diversity and t-closeness) and its report inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from privgate.core import stages
from privgate.core.gate import verify_table
from privgate.core.policy import load_policy
from privgate.core.privacy import models_from_policy
from privgate.core.utility import align_release, check_utility, measure_utility
from privgate.validations.schema import validate_input

REPO = Path(__file__).resolve().parents[3]
SEED = 4242
UTILITY = {
    "target": "salary-class",
    "models": ["svm", "random_forest"],
    "sample_size": 1500,
    "cv_folds": 3,
    "clusters": [3, 5],
    "clustering": ["kmeans"],
    "thresholds": {"min_auc_ratio": 0.5, "max_loss": 0.8},
}


def _run(policy, frame, hierarchies):
    table = stages.anonymize(frame, policy, hierarchies, shuffle_seed=SEED)
    release = align_release(table.frame, frame.index, table.result.suppressed, SEED)
    utility = measure_utility(frame, release, policy, hierarchies, levels=table.result.levels)
    udecision = check_utility(utility, policy.utility.thresholds)
    pdecision = verify_table(
        table.frame,
        policy.quasi_identifiers,
        models_from_policy(policy.privacy),
        input_rows=len(frame),
        suppression_limit=policy.privacy.suppression_limit,
        expected_columns=policy.released_columns,
    )
    return {
        "policy": policy,
        "original": frame,
        "table": table,
        "privacy_decision": pdecision,
        "utility": utility,
        "utility_decision": udecision,
        "hierarchies": hierarchies,
        "release_id": "2026-11-22-0123456789ab",
        "run": {"run_id": "test", "policy_sha256": policy.fingerprint()},
    }


@pytest.fixture(scope="session")
def adult_run(shared_data):
    """Everything :func:`privgate.core.report.build_report` takes, for a published Adult release."""
    shared_data("arx/adult.csv")
    policy = load_policy(REPO / "policies" / "adult.yaml").with_overrides(
        **{
            "utility": UTILITY,
            "privacy.l_diversity": [{"column": "salary-class", "l": 2}],
            "privacy.t_closeness": [{"column": "salary-class", "t": 0.3}],
        }
    )
    hierarchies = stages.load_hierarchies(policy)
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    return _run(policy, frame, hierarchies)


@pytest.fixture(scope="session")
def adult_mondrian_run(adult_run):
    policy = adult_run["policy"].with_overrides(
        **{"algorithm": {"name": "mondrian"}, "privacy.l_diversity": [], "privacy.t_closeness": []}
    )
    return _run(policy, adult_run["original"], adult_run["hierarchies"])
