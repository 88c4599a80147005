"""Adult (ARX's table and hierarchies) anonymized once per session for the utility tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from privgate.core import stages
from privgate.core.policy import ReleasePolicy, load_policy
from privgate.core.utility import align_release
from privgate.validations.schema import validate_input

REPO = Path(__file__).resolve().parents[3]
ADULT_POLICY = REPO / "policies" / "adult.yaml"
SHUFFLE_SEED = 20261122


@dataclass(frozen=True)
class Adult:
    policy: ReleasePolicy
    hierarchies: dict
    frame: pd.DataFrame  # validated input

    def release(self, algorithm: str = "optimal", **overrides):
        """(AnonymizedTable, release aligned to the input's index) as the flow would make it."""
        policy = self.policy_for(algorithm, **overrides)
        table = stages.anonymize(self.frame, policy, self.hierarchies, shuffle_seed=SHUFFLE_SEED)
        aligned = align_release(
            table.frame, self.frame.index, table.result.suppressed, SHUFFLE_SEED
        )
        return table, aligned

    def policy_for(self, algorithm: str = "optimal", **overrides) -> ReleasePolicy:
        changes = dict(overrides)
        if algorithm != "optimal":
            changes["algorithm"] = {"name": algorithm}
        return self.policy.with_overrides(**changes) if changes else self.policy


@pytest.fixture(scope="session")
def adult(shared_data) -> Adult:
    shared_data("arx/adult.csv")
    policy = load_policy(ADULT_POLICY)
    hierarchies = stages.load_hierarchies(policy)
    frame = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    return Adult(policy, hierarchies, frame)


@pytest.fixture(scope="session")
def adult_k5(adult):
    """The optimal release at k=5 with 2 % suppression: (AnonymizedTable, aligned release)."""
    return adult.release("optimal")


@pytest.fixture(scope="session")
def adult_mondrian(adult):
    """Strict Mondrian at k=5: (AnonymizedTable, aligned release)."""
    return adult.release("mondrian")
