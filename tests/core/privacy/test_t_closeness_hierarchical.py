"""Hierarchical-distance t-closeness: hand-computed EMDs, policy wiring, search and gate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgate.core.encoding import ClassStats
from privgate.core.exceptions import PolicyError
from privgate.core.gate import verify_table
from privgate.core.hierarchy import taxonomy_hierarchy
from privgate.core.policy import ReleasePolicy, _validate
from privgate.core.privacy import TCloseness, hierarchical_distances, models_from_policy

LABELS = np.array([["a", "X", "*"], ["b", "X", "*"], ["c", "Y", "*"]], dtype=object)
UNIFORM = np.array([1 / 3, 1 / 3, 1 / 3])


def test_hand_computed_hierarchical_emd():
    # p = (1, 0, 0) vs uniform: moving 1/3 from a to b costs 1/2 * 1/3 (inside X), and 1/3
    # from X to Y costs 1 * 1/3 (through the root): 1/6 + 1/3 = 1/2.
    # p = (1/2, 1/2, 0): only X -> Y moves, 1/3 at full cost: 1/3. The table's own
    # distribution is at distance 0.
    hist = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert hierarchical_distances(hist, UNIFORM, LABELS) == pytest.approx([0.5, 1 / 3, 0.0])


def test_hierarchical_distance_never_exceeds_equal_distance():
    """Within a common group values are closer than 1, so the EMD can only shrink."""
    rng = np.random.default_rng(4)
    hist = rng.integers(0, 5, size=(50, 3))
    hist[hist.sum(axis=1) == 0, 0] = 1
    from privgate.core.privacy import class_distances

    hier = hierarchical_distances(hist, UNIFORM, LABELS)
    equal = class_distances(hist, UNIFORM, "equal")
    assert np.all(hier <= equal + 1e-12)


def _hierarchy():
    return taxonomy_hierarchy("disease", {"flu-like": ["flu", "cold"], "chronic": ["asthma"]})


def test_model_uses_the_column_hierarchy_and_needs_it():
    stats = ClassStats(
        np.array([2, 2]),
        {"disease": np.array([[2, 0, 0], [0, 1, 1]])},
        {"disease": np.array([0.25, 0.25, 0.5])},
        {"disease": np.array(["asthma", "cold", "flu"], dtype=object)},
    )
    model = TCloseness(column="disease", t=0.5, distance="hierarchical", hierarchy=_hierarchy())
    # Table: asthma 1/4, cold 1/4, flu 1/2. Class 1 (all asthma): 3/4 must move from chronic
    # to flu-like through the root (cost 1): 0.75. Class 2 (cold 1/2, flu 1/2): 1/4 moves
    # from flu-like to chronic through the root: 0.25. The table reaches the larger one.
    assert model.achieved(stats) == pytest.approx(0.75)
    assert model.satisfied_by(stats).tolist() == [False, True]
    assert model.holds(0.5) and not model.holds(0.51)
    with pytest.raises(ValueError, match="needs the column's hierarchy"):
        TCloseness(column="disease", t=0.5, distance="hierarchical")


POLICY = {
    "dataset": "toy",
    "input": {"path": "x.csv"},
    "columns": {
        "zip": {"role": "quasi_identifier", "hierarchy": {"kind": "masking", "length": 3}},
        "disease": {"role": "sensitive"},
    },
    "privacy": {"k": 2, "t_closeness": [{"column": "disease", "t": 0.4,
                                         "distance": "hierarchical"}]},
}  # fmt: skip


def test_policy_requires_a_hierarchy_on_the_sensitive_column():
    with pytest.raises(PolicyError, match=r"t_closeness\[0\]\.distance.*needs a 'hierarchy'"):
        _validate(POLICY, "test")
    data = {**POLICY, "columns": {**POLICY["columns"]}}
    data["columns"]["disease"] = {
        "role": "sensitive",
        "hierarchy": {"kind": "taxonomy", "tree": {"flu-like": ["flu", "cold"],
                                                   "chronic": ["asthma"]}},
    }  # fmt: skip
    policy = _validate(data, "test")
    assert isinstance(policy, ReleasePolicy)


def test_gate_measures_hierarchical_t_on_a_release():
    release = pd.DataFrame({
        "zip": ["12*", "12*", "13*", "13*"],
        "disease": ["flu", "cold", "asthma", "flu"],
    })  # fmt: skip
    data = {**POLICY, "columns": {**POLICY["columns"]}}
    data["columns"]["disease"] = {
        "role": "sensitive",
        "hierarchy": {"kind": "taxonomy", "tree": {"flu-like": ["flu", "cold"],
                                                   "chronic": ["asthma"]}},
    }  # fmt: skip
    policy = _validate(data, "test")
    models = models_from_policy(policy.privacy, {"disease": _hierarchy()})
    decision = verify_table(release, ["zip"], models)
    # overall: flu 1/2, cold 1/4, asthma 1/4. Class 12*: flu 1/2, cold 1/2 -> within flu-like
    # 1/4 moves flu->cold? no: cold +1/4, asthma -1/4: 1/4 through the root = 0.25.
    # Class 13*: asthma 1/2, flu 1/2 -> cold -1/4, asthma +1/4: 0.25 through the root.
    assert decision.measurements["achieved"][str(models[1])] == pytest.approx(0.25)
    assert decision.passed
