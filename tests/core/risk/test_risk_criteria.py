"""Risk limits as gate criteria: population uniques, and limits that suppress to meet themselves.

The property: for every node of the lattice, the search's verdict (NodeChecker, including the
records a risk limit suppresses) equals the gate's verdict on the release that node writes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from privgate.core.anonymize import (
    Generalization,
    NodeChecker,
    OptimalLattice,
    apply_generalization,
    failing_tuples,
)
from privgate.core.encoding import ClassStats, encode_table
from privgate.core.gate import verify_table
from privgate.core.hierarchy import ARXHierarchy, taxonomy_hierarchy
from privgate.core.policy import PrivacySpec, RiskSpec
from privgate.core.privacy import (
    AverageRisk,
    HighestRisk,
    KAnonymity,
    PopulationUniques,
    RiskShareAbove,
    models_from_policy,
)
from privgate.core.risk import SizeHistogram, population_uniques


def stats_of(*sizes: int) -> ClassStats:
    return ClassStats(np.array(sizes, dtype=np.int64), {}, {}, {})


def test_population_uniques_level_is_the_estimate_over_the_population() -> None:
    model = PopulationUniques(limit=0.05, population_size=100, estimator="zayatz")
    stats = stats_of(1, 1, 2, 3, 3)
    value, _ = population_uniques(SizeHistogram.from_class_sizes([1, 1, 2, 3, 3]), 100, "zayatz")
    assert model.achieved(stats) == pytest.approx(value / 100)
    assert model.holds(model.achieved(stats)) == (value / 100 <= 0.05)
    assert model.achieved(stats_of(2, 3)) == 0.0  # no sample uniques
    # A table larger than its population is not a sample of it: the gate cannot pass it.
    assert math.isnan(model.achieved(stats_of(*[1] * 101)))
    assert not model.holds(model.achieved(stats_of(*[1] * 101)))
    assert "population uniques" in str(model)


def test_policy_risk_section() -> None:
    spec = PrivacySpec(
        k=2,
        risk={"highest": 0.09, "population_uniques": 0.0005, "population_size": 300000,
              "suppress": True},
    )  # fmt: skip
    models = models_from_policy(spec)
    assert HighestRisk(limit=0.09) in models
    assert (
        PopulationUniques(limit=0.0005, population_size=300000, estimator="dankar", suppress=True)
        in models
    )
    with pytest.raises(ValidationError, match="needs 'population_size'"):
        RiskSpec(population_uniques=0.01)
    with pytest.raises(ValidationError):
        RiskSpec(population_uniques=1.0, population_size=10)


def test_average_risk_suppresses_smallest_classes_when_allowed() -> None:
    """Classes of 1, 1, 2 and 8 (12 records): average risk 4/12. With suppress, the two
    singletons go (2/10 <= 0.2): the bottom node is accepted with 2 records suppressed; without,
    the search must generalize."""
    df = pd.DataFrame({"a": ["x", "y", "z", "z"] + ["w"] * 8})
    hierarchies = {"a": ARXHierarchy("a", [[v, "*"] for v in "xyzw"])}
    encoded = encode_table(df, hierarchies)
    freq = encoded.frequency_set()
    models = [KAnonymity(k=1), AverageRisk(limit=0.2, suppress=True)]
    result = OptimalLattice(models, 0.2).search(freq)
    assert result.levels == {"a": 0} and result.n_suppressed == 2
    release = apply_generalization(df, encoded, result, ["a"])
    assert sorted(release["a"].unique()) == ["w", "z"]
    decision = verify_table(release, ["a"], models, input_rows=12, suppression_limit=0.2)
    assert decision.passed, decision.reasons
    plain = OptimalLattice([KAnonymity(k=1), AverageRisk(limit=0.2)], 0.2).search(freq)
    assert plain.levels == {"a": 1}
    # Within a smaller allowance (1 record) the singletons cannot both go: generalize.
    tight = OptimalLattice(models, 1 / 12).search(freq)
    assert tight.levels == {"a": 1}


@st.composite
def problems(draw):
    n = draw(st.integers(8, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    columns, hierarchies = {}, {}
    for j in range(draw(st.integers(1, 3))):
        name = f"q{j}"
        m = draw(st.integers(2, 6))
        domain = [f"{name}v{i}" for i in range(m)]
        columns[name] = rng.choice(domain, size=n, p=rng.dirichlet(np.ones(m)))
        if draw(st.booleans()):
            hierarchies[name] = ARXHierarchy(name, [[v, "*"] for v in domain])
        else:
            tree = {f"{name}g0": domain[: m // 2], f"{name}g1": domain[m // 2 :]}
            hierarchies[name] = taxonomy_hierarchy(name, tree)
    model = draw(
        st.sampled_from([
            AverageRisk(limit=0.3, suppress=True),
            RiskShareAbove(threshold=0.3, limit=0.1, suppress=True),
            PopulationUniques(limit=0.05, population_size=5 * n, estimator="zayatz",
                              suppress=True),
            PopulationUniques(limit=0.05, population_size=20 * n, suppress=True),
        ])
    )  # fmt: skip
    models = [KAnonymity(k=draw(st.integers(1, 3))), model]
    return pd.DataFrame(columns), hierarchies, models, draw(st.sampled_from([0.0, 0.1, 0.3]))


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(problem=problems())
def test_search_and_gate_agree_on_every_node(problem) -> None:
    df, hierarchies, models, limit = problem
    qis = list(hierarchies)
    encoded = encode_table(df, hierarchies)
    freq = encoded.frequency_set()
    checker = NodeChecker(freq, models, limit)
    for node in np.ndindex(*[h + 1 for h in encoded.heights]):
        outcome = checker.evaluate(node)
        failing = failing_tuples(freq, node, models, checker.allowance)[freq.row_to_tuple]
        assert int(failing.sum()) == outcome.outliers or not outcome.satisfied
        found = Generalization("test", dict(zip(qis, node, strict=True)), failing)
        release = apply_generalization(df, encoded, found, qis)
        decision = verify_table(release, qis, models, input_rows=len(df),
                                suppression_limit=limit)  # fmt: skip
        assert decision.passed == outcome.satisfied, (node, models, limit, decision.reasons)


@pytest.fixture(scope="module")
def adult(shared_data):
    df = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str)
    qis = ["sex", "age", "race", "marital-status", "education"]
    hierarchies = {
        q: ARXHierarchy.from_csv(q, shared_data(f"arx/adult_hierarchy_{q}.csv")) for q in qis
    }
    return df, qis, encode_table(df, hierarchies)


def test_hipaa_style_limits_on_adult(adult) -> None:
    """Highest prosecutor risk <= 0.09 and at most 0.05 % of a population ten times the sample
    estimated unique. The highest-risk limit alone leaves no sample unique (every class has
    12 records or more), so the population limit binds only on its own: alone, it forces
    generalization, and suppressing (within 2 %) reaches a node at most as coarse."""
    df, qis, encoded = adult
    freq = encoded.frequency_set()
    for suppress in (False, True):
        uniques = PopulationUniques(limit=0.0005, population_size=10 * len(df), suppress=suppress)
        for models in ([KAnonymity(k=1), HighestRisk(limit=0.09), uniques],
                       [KAnonymity(k=1), uniques]):  # fmt: skip
            result = OptimalLattice(models, 0.02).search(freq)
            release = apply_generalization(df, encoded, result, qis)
            decision = verify_table(release, qis, models, input_rows=len(df),
                                    suppression_limit=0.02)  # fmt: skip
            assert decision.passed, decision.reasons
            assert decision.measurements["achieved"][str(uniques)] <= 0.0005
        if not suppress:
            plain = result
    assert sum(plain.levels.values()) > 0  # the original table has population uniques
    assert result.details["loss"] <= plain.details["loss"]
    assert result.n_suppressed > 0


@pytest.mark.parametrize(
    ("privacy", "algorithm", "message"),
    [
        ({"risk": {"highest": 0.2, "suppress": True}}, "optimal", "whole-table limits"),
        ({"risk": {"average": 0.2, "suppress": True}}, "optimal", "suppression_limit is 0"),
        ({"suppression_limit": 0.1, "risk": {"average": 0.2, "suppress": True}}, "datafly",
         "does not suppress records to meet a risk limit"),
        ({"risk": {"population_uniques": 0.01, "population_size": 100}}, "mondrian",
         "Mondrian checks each partition"),
    ],
)  # fmt: skip
def test_policy_refuses_suppression_that_cannot_happen(privacy, algorithm, message) -> None:
    from privgate.core.exceptions import PolicyError
    from privgate.core.policy import _validate

    data = {
        "dataset": "d",
        "input": {"path": "x.csv"},
        "columns": {"a": {"role": "quasi_identifier", "hierarchy": {"kind": "taxonomy",
                                                                    "tree": {"*": ["x"]}}}},
        "privacy": {"k": 2, **privacy},
        "algorithm": {"name": algorithm},
    }  # fmt: skip
    with pytest.raises(PolicyError, match=message):
        _validate(data, "policy.yaml")


def test_preflight_refuses_a_population_smaller_than_the_input(
    tmp_path, shared_data, adult_policy
) -> None:
    from privgate.core.exceptions import AnonymizationError
    from privgate.core.preflight import preflight

    with open(shared_data("arx/adult.csv"), encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(101)]
    data = tmp_path / "adult.csv"
    data.write_text("".join(lines), encoding="utf-8")
    policy = adult_policy.with_overrides(
        **{"input.path": str(data), "privacy.risk": {"population_uniques": 0.01,
                                                      "population_size": 99}}
    )  # fmt: skip
    with pytest.raises(AnonymizationError, match="population_size = 99 is smaller than the table"):
        preflight(policy)


def test_k_1_only_beside_a_population_uniques_limit() -> None:
    """Any k >= 2 leaves no sample unique, so the estimate is 0 and the limit binds only with
    k = 1: the policy accepts k = 1 beside it (as beside k-map), and still refuses it alone."""
    spec = PrivacySpec(k=1, risk={"population_uniques": 0.001, "population_size": 1000})
    assert any(isinstance(m, PopulationUniques) for m in models_from_policy(spec))
    with pytest.raises(ValidationError, match="protects nobody"):
        PrivacySpec(k=1, risk={"highest": 0.5})


def test_a_risk_section_written_before_keeps_its_dump() -> None:
    """The new fields are left out when unset: older policies keep fingerprints and ids."""
    assert RiskSpec(highest=0.2).model_dump() == {
        "highest": 0.2, "average": None, "threshold": None, "share_above": None,
    }  # fmt: skip
