"""Prosecutor re-identification risk: the models' levels, the gate, the policy and the searches."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from adult_reference import ADULT_QI

from privgate.core.anonymize import (
    Datafly,
    MultiAttributeDatafly,
    OptimalLattice,
    apply_generalization,
)
from privgate.core.encoding import ClassStats, encode_table
from privgate.core.exceptions import PolicyError
from privgate.core.gate import verify_table
from privgate.core.hierarchy import ARXHierarchy, taxonomy_hierarchy
from privgate.core.policy import RiskSpec, _validate, load_policy
from privgate.core.privacy import (
    AverageRisk,
    HighestRisk,
    KAnonymity,
    RiskShareAbove,
    models_from_policy,
    record_risks,
)

QI = ["zip", "age"]


def sizes(*values: int) -> ClassStats:
    return ClassStats(np.array(values, dtype=np.int64), {}, {}, {})


def release_2_3_5() -> pd.DataFrame:
    """Ten records in classes of 2, 3 and 5: risks 1/2, 1/3 and 1/5."""
    return pd.DataFrame({
        "zip": ["130**"] * 2 + ["148**"] * 3 + ["150**"] * 5,
        "age": ["<30"] * 2 + [">=40"] * 3 + ["30-39"] * 5,
    })  # fmt: skip


# --------------------------------------------------------------------------------------------
# Levels reached, by hand


def test_record_risk_is_one_over_the_class_size() -> None:
    assert record_risks(np.array([1, 2, 4])).tolist() == [1.0, 0.5, 0.25]


def test_highest_risk_level() -> None:
    stats = sizes(2, 3, 5)
    model = HighestRisk(limit=0.5)
    assert model.achieved(stats) == 0.5
    assert model.holds(0.5) and not model.holds(0.51)
    assert model.satisfied_by(stats).tolist() == [True, True, True]
    assert HighestRisk(limit=0.4).satisfied_by(stats).tolist() == [False, True, True]
    # the smallest class that can pass: 1/0.4 = 2.5 -> 3, 1/0.25 = 4 exactly -> 4
    assert HighestRisk(limit=0.4).min_class_size == 3
    assert HighestRisk(limit=0.25).min_class_size == 4


def test_average_risk_level_is_classes_over_records() -> None:
    stats = sizes(2, 3, 5)
    model = AverageRisk(limit=0.3)
    # mean over records of 1/|E|: (2 * 1/2 + 3 * 1/3 + 5 * 1/5) / 10 = 3 / 10
    assert model.achieved(stats) == pytest.approx(0.3)
    assert model.achieved(stats) == pytest.approx(np.mean(np.repeat(record_risks(stats.sizes),
                                                                    stats.sizes)))  # fmt: skip
    assert model.table_satisfied(stats)
    assert not AverageRisk(limit=0.29).table_satisfied(stats)
    assert model.satisfied_by(stats).all()  # a whole-table condition: no class fails alone
    assert model.min_class_size == 1


def test_share_of_records_above_a_risk_threshold() -> None:
    stats = sizes(2, 3, 5)
    # risks 0.5, 0.333, 0.2: above 0.3 are the classes of 2 and 3, 5 of 10 records
    assert RiskShareAbove(threshold=0.3, limit=0.5).achieved(stats) == pytest.approx(0.5)
    # above 0.4 is only the class of 2; a risk equal to the threshold is not above it
    assert RiskShareAbove(threshold=0.4, limit=0.5).achieved(stats) == pytest.approx(0.2)
    assert RiskShareAbove(threshold=1 / 3, limit=0.5).achieved(stats) == pytest.approx(0.2)
    assert RiskShareAbove(threshold=0.5, limit=0.0).achieved(stats) == 0.0
    assert RiskShareAbove(threshold=0.3, limit=0.5).table_satisfied(stats)
    assert not RiskShareAbove(threshold=0.3, limit=0.49).table_satisfied(stats)


def test_empty_table_has_no_risk() -> None:
    empty = sizes()
    assert AverageRisk(limit=0.1).achieved(empty) == 0.0
    assert RiskShareAbove(threshold=0.1, limit=0.0).achieved(empty) == 0.0
    assert HighestRisk(limit=0.1).achieved(empty) == 0.0


# --------------------------------------------------------------------------------------------
# The gate


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (HighestRisk(limit=0.4),
         "highest prosecutor risk <= 0.4 not met: the release reaches 0.5"),
        (AverageRisk(limit=0.25),
         "average prosecutor risk <= 0.25 not met: the release reaches 0.3"),
        (RiskShareAbove(threshold=0.3, limit=0.4),
         "share of records with risk > 0.3 <= 0.4 not met: the release reaches 0.5"),
    ],
)  # fmt: skip
def test_gate_blocks_a_release_over_each_limit_naming_it(model, reason: str) -> None:
    decision = verify_table(release_2_3_5(), QI, [KAnonymity(k=2), model])
    assert not decision.passed
    assert decision.reasons == [reason]


@pytest.mark.parametrize(
    "model",
    [HighestRisk(limit=0.5), AverageRisk(limit=0.3), RiskShareAbove(threshold=0.3, limit=0.5)],
)
def test_gate_passes_a_release_exactly_at_each_limit(model) -> None:
    decision = verify_table(release_2_3_5(), QI, [KAnonymity(k=2), model])
    assert decision.passed, decision.reasons
    assert decision.measurements["achieved"][str(model)] == pytest.approx(
        {"HighestRisk": 0.5, "AverageRisk": 0.3, "RiskShareAbove": 0.5}[type(model).__name__]
    )


# --------------------------------------------------------------------------------------------
# The policy


def _policy(risk: dict) -> dict:
    return {
        "dataset": "toy",
        "input": {"path": "toy.csv"},
        "columns": {
            "age": {"role": "quasi_identifier", "type": "integer",
                    "hierarchy": {"kind": "interval", "bands": [5, 10]}},
            "disease": {"role": "sensitive"},
        },
        "privacy": {"k": 2, "risk": risk},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("risk", "message"),
    [
        ({"threshold": 0.2}, "privacy.risk: 'threshold' and 'share_above' go together"),
        ({"share_above": 0.1}, "privacy.risk: 'threshold' and 'share_above' go together"),
        ({"highest": 0.2, "threshold": 0.2}, "'threshold' and 'share_above' go together"),
        ({}, "privacy.risk: set at least one of 'highest', 'average', 'share_above'"),
        ({"average": 1.5}, "privacy.risk.average"),
        ({"highest": 0}, "privacy.risk.highest"),
        ({"share_above": -0.1, "threshold": 0.2}, "privacy.risk.share_above"),
        ({"highest": 0.2, "everage": 0.1}, "privacy.risk.everage: unknown key"),
    ],
)
def test_invalid_risk_section_names_privacy_risk(risk: dict, message: str) -> None:
    with pytest.raises(PolicyError, match="privacy.risk") as info:
        _validate(_policy(risk), source="test")
    assert message in str(info.value)


def test_threshold_without_share_above_in_a_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(_policy({"threshold": 0.2})))
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    text = str(info.value)
    assert "privacy.risk" in text and "'threshold' and 'share_above' go together" in text
    assert str(path) in text


def test_risk_section_becomes_models() -> None:
    policy = _validate(
        _policy({"highest": 0.2, "average": 0.05, "threshold": 0.1, "share_above": 0.02}), "test"
    )
    assert policy.privacy.risk == RiskSpec(highest=0.2, average=0.05, threshold=0.1,
                                           share_above=0.02)  # fmt: skip
    models = models_from_policy(policy.privacy)
    assert models == [
        KAnonymity(k=2),
        HighestRisk(limit=0.2),
        AverageRisk(limit=0.05),
        RiskShareAbove(threshold=0.1, limit=0.02),
    ]


# --------------------------------------------------------------------------------------------
# The searches


def _average_risk_by_hand(release: pd.DataFrame, qis: list[str]) -> float:
    return release.groupby(qis).ngroups / len(release)


def test_suppressing_small_classes_meets_an_average_risk_the_coarser_nodes_miss() -> None:
    """At (0, 0) the two singletons are suppressed and the rest is one class of 10: average
    risk 1/10. Generalizing b merges the singletons into a kept class of 2 (2/12 > 0.1), so
    every coarser node but the top fails: a search that treats the average risk as monotone
    with suppression prunes (0, 0) and returns the top node (loss 1 instead of 1/6)."""
    df = pd.DataFrame({"a": ["a0"] * 10 + ["a1"] * 2, "b": ["b0"] * 10 + ["b1", "b2"]})
    hierarchies = {
        "a": ARXHierarchy("a", [["a0", "*"], ["a1", "*"]]),
        "b": taxonomy_hierarchy("b", {"B0": ["b0"], "B1": ["b1", "b2"]}),
    }
    freq = encode_table(df, hierarchies).frequency_set()
    for model in (AverageRisk(limit=0.1), RiskShareAbove(threshold=0.2, limit=0.0)):
        models = [KAnonymity(k=2), model]
        result = OptimalLattice(models, 0.2).search(freq)  # allowance: 2 records
        assert result.levels == {"a": 0, "b": 0}, model
        assert result.n_suppressed == 2
        assert result.details["loss"] == pytest.approx(4 / 24)
        greedy = Datafly(models, 0.2).search(freq)
        assert greedy.levels == {"a": 0, "b": 0}


@pytest.fixture(scope="module")
def adult(shared_data):
    df = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    hierarchies = {
        qi: ARXHierarchy.from_csv(qi, shared_data(f"arx/adult_hierarchy_{qi}.csv"))
        for qi in ADULT_QI
    }
    encoded = encode_table(df, hierarchies)
    return df, encoded, encoded.frequency_set()


@pytest.mark.parametrize("algorithm", [OptimalLattice, Datafly, MultiAttributeDatafly])
@pytest.mark.parametrize(("k", "average", "limit"), [(2, 0.02, 0.02), (1, 0.1, 0.02),
                                                     (2, 0.05, 0.0)])  # fmt: skip
def test_adult_releases_meet_the_average_risk(adult, algorithm, k, average, limit) -> None:
    df, encoded, freq = adult
    models = [KAnonymity(k=k), AverageRisk(limit=average)]
    result = algorithm(models, limit).search(freq)
    release = apply_generalization(df, encoded, result, list(df.columns))
    assert result.n_suppressed <= math.floor(limit * len(df) + 1e-9)
    assert len(release) == len(df) - result.n_suppressed
    assert _average_risk_by_hand(release, ADULT_QI) <= average
    assert release.groupby(ADULT_QI).size().min() >= k
    decision = verify_table(release, ADULT_QI, models, input_rows=len(df),
                            suppression_limit=limit)  # fmt: skip
    assert decision.passed, decision.reasons


def test_adult_average_risk_is_binding(adult) -> None:
    """The limit changes the optimum: k = 2 alone leaves an average risk above 0.02."""
    df, encoded, freq = adult
    alone = OptimalLattice([KAnonymity(k=2)], 0.02).search(freq)
    release = apply_generalization(df, encoded, alone, list(df.columns))
    assert _average_risk_by_hand(release, ADULT_QI) > 0.02
    with_risk = OptimalLattice([KAnonymity(k=2), AverageRisk(limit=0.02)], 0.02).search(freq)
    assert with_risk.levels != alone.levels
    assert with_risk.details["loss"] > alone.details["loss"]
