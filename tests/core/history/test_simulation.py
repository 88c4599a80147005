"""The attack on nightly releases, small enough for CI (the benchmark runs 30 nights of Adult)."""

from __future__ import annotations

import numpy as np
import pytest

from privgate.core import stages
from privgate.core.history.simulation import Churn, simulate_nightly_releases
from privgate.validations.schema import validate_input


@pytest.fixture(scope="module")
def adult_nights(adult_policy):
    policy = adult_policy
    columns = policy.model_dump(mode="json")["columns"]
    columns["occupation"] = {"role": "sensitive"}
    policy = policy.with_overrides(
        **{"columns": columns, "privacy.l_diversity": [{"column": "occupation", "l": 2}]}
    )
    hierarchies = stages.load_hierarchies(policy)
    adult = validate_input(stages.ingest(policy).frame, policy, hierarchies)
    order = np.random.default_rng(0).permutation(len(adult))
    base = adult.iloc[order[:3000]].assign(person=[f"p{i}" for i in range(3000)])
    return base, adult.iloc[order[3000:]], policy, hierarchies


@pytest.mark.slow  # nightly releases of Adult and the attack on them
def test_the_attack_succeeds_without_the_criterion_and_fails_with_it(adult_nights):
    base, pool, policy, hierarchies = adult_nights
    churn = Churn(nights=6, inserts=0.02, deletes=0.02, updates=0.02, seed=0)
    plain = simulate_nightly_releases(
        base, pool, policy, hierarchies, key="person", churn=churn, protect=False
    ).summary()
    assert plain["nights_published"] == 6
    assert plain["below_k"] > 0  # every release 5-anonymous, yet combined they expose people
    protected = simulate_nightly_releases(
        base, pool, policy, hierarchies, key="person", churn=churn, protect=True, margin=1.0
    ).summary()
    assert protected["nights_published"] >= 5
    assert protected["below_k"] == 0 and protected["disclosed"] == 0
    assert protected["min_candidates"] >= 5
