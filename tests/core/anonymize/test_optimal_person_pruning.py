"""A person-keyed search with models it cannot prune with still prunes with the ones it can.

With entropy l-diversity or t-closeness counted in persons, satisfaction is not monotone over
the lattice, so the search used to evaluate every node the loss bound left (minutes on the
hospital table). The monotone models of the same policy (k-anonymity, distinct l-diversity)
still prune: the people the full fixed point keeps are a subset of the largest set those
models release, so a node failing them fails the full search, and so does its down-set. The
pruned search must find the same release as the unpruned one.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

import privgate
from privgate.core.anonymize import _optimal
from privgate.core.hospital_data import write_admissions_csv
from privgate.core.policy import load_policy

REPO = Path(__file__).resolve().parents[3]
KEPT_QIS = ["gender", "age", "marital_status", "insurance", "admission_type"]


def _policy(tmp_path: Path, privacy: dict):
    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=150, seed=3)
    policy = yaml.safe_load((REPO / "policies" / "hospital.yaml").read_text())
    for name, column in policy["columns"].items():
        if column["role"] == "quasi_identifier" and name not in KEPT_QIS:
            policy["columns"][name] = {"role": "insensitive"}
    policy["privacy"].update(privacy)
    policy["input"]["path"] = str(data)
    policy["output"]["directory"] = str(tmp_path / "releases")
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return load_policy(path), pd.read_csv(data, dtype=str, keep_default_na=False)


@pytest.mark.parametrize(
    "privacy",
    [
        {"l_diversity": [{"column": "diagnosis", "variant": "entropy", "l": 2}]},
        {"t_closeness": [{"column": "diagnosis", "t": 0.35}], "suppression_limit": 0.1},
        {
            "l_diversity": [
                {"column": "diagnosis", "variant": "distinct", "l": 2},
                {"column": "diagnosis", "variant": "recursive", "c": 3, "l": 2},
            ]
        },
    ],
    ids=["entropy", "t-closeness", "recursive"],
)
def test_pruning_with_the_monotone_models_finds_the_unpruned_release(
    tmp_path, monkeypatch, privacy
):
    policy, frame = _policy(tmp_path, privacy)
    pruners = []
    real = _optimal._monotone_pruner

    def spy(*args, **kwargs):
        pruners.append(real(*args, **kwargs))
        return pruners[-1]

    monkeypatch.setattr(_optimal, "_monotone_pruner", spy)
    pruned = privgate.anonymize(frame, policy)
    monkeypatch.setattr(_optimal, "_monotone_pruner", lambda *args, **kwargs: None)
    unpruned = privgate.anonymize(frame, policy)

    assert pruned.passed and unpruned.passed
    assert pruned.decision.summary == unpruned.decision.summary
    pd.testing.assert_frame_equal(pruned.frame, unpruned.frame)
    assert pruners and pruners[0] is not None and pruners[0].evaluations > 0
    # ... and it evaluated fewer nodes with every model (what made the search slow)
    assert pruned.metrics["search_evaluated"] < unpruned.metrics["search_evaluated"]
