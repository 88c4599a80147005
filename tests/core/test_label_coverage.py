"""The gate's check that a local recoding release's numeric labels can state the input's values.

Each released cell must be matchable to a distinct input value its label holds
(:mod:`privgate.core.label_coverage`); the count of cells that cannot is checked against a
maximum bipartite matching (scipy), and a written Mondrian release whose ranges were moved off
their records' values is blocked by the gate although every other check passes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.hierarchy import taxonomy_hierarchy
from privgate.core.label_coverage import hierarchy_spans, label_interval, unmatched_labels
from privgate.core.policy import ReleasePolicy

POLICY = ReleasePolicy.model_validate(
    {
        "dataset": "toy",
        "input": {"path": "toy.csv"},
        "columns": {
            "age": {
                "role": "quasi_identifier",
                "type": "integer",
                "minimum": 0,
                "maximum": 120,
                "hierarchy": {"kind": "interval", "bands": [10, 20]},
            },
            "sex": {
                "role": "quasi_identifier",
                "hierarchy": {"kind": "taxonomy", "tree": {"Person": ["Male", "Female"]}},
            },
            "disease": {"role": "sensitive"},
        },
        "privacy": {"k": 3, "suppression_limit": 0},
        "algorithm": {"name": "mondrian"},
    }
)


@pytest.mark.parametrize(
    ("cell", "interval"),
    [
        ("39", (39.0, 39.0)),
        ("-5", (-5.0, -5.0)),
        ("28-32", (28.0, 32.0)),
        ("-5--3", (-5.0, -3.0)),
        ("28.5-32", (28.5, 32.0)),
        ("57-31", (57.0, 31.0)),
        ("*", None),
        ("90+", None),
        ("<18", None),
        (None, None),
    ],
)
def test_label_interval(cell, interval):
    assert label_interval(cell) == interval


def test_a_half_open_band_leaves_out_its_end():
    low, high = label_interval("[30, 40)")
    assert low == 30 and 39.99 < high < 40
    assert unmatched_labels(["[30, 40)"], [1], np.array([40.0])) == 1
    assert unmatched_labels(["[30, 40)"], [1], np.array([30.0])) == 0


def test_a_hierarchy_label_stands_for_what_the_hierarchy_maps_to_it():
    """ARX's Adult hierarchy puts age 90 under "85-89": read as a range, that label held no
    90 and local recoding's Adult release was blocked (405 cells); read through the
    hierarchy, it holds 85 and 90. A label that also maps a missing value may stand for any."""
    hierarchy = taxonomy_hierarchy("age", {"85-89": ["85", "90"], "<20": ["17", ""]})
    values = np.array([85.0, 90.0, 17.0, np.nan])
    spans = hierarchy_spans(hierarchy, values)
    assert spans["85-89"] == (85, 90) and spans["<20"] is None and spans["*"] is None
    assert unmatched_labels(["85-89"], [2], values[:2]) == 1
    assert unmatched_labels(["85-89"], [2], values[:2], spans) == 0
    assert unmatched_labels(["85-89"], [3], values, spans) == 1  # only two such records
    assert unmatched_labels(["<20"], [2], values, spans) == 0  # 17 and the missing one
    # a region's own range that reads like a label means either: "85-89" also holds 87
    assert unmatched_labels(["85-89"], [1], np.array([87.0]), {"85-89": (85, 85)}) == 0


def _matching_deficit(labels, counts, values) -> int:
    """Cells left unmatched by a maximum bipartite matching (cells x input records)."""
    cells = [label for label, count in zip(labels, counts, strict=True) for _ in range(count)]
    rows, cols = [], []
    for i, cell in enumerate(cells):
        interval = label_interval(cell)
        for j, value in enumerate(values):
            holds = interval is None or (
                not np.isnan(value) and interval[0] <= value <= interval[1]
            )
            if holds:
                rows.append(i)
                cols.append(j)
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(cells), len(values)))
    matched = maximum_bipartite_matching(graph, perm_type="column")
    return int((matched < 0).sum())


def test_unmatched_labels_is_a_maximum_matching():
    rng = np.random.default_rng(7)
    for _ in range(300):
        values = rng.integers(0, 12, rng.integers(1, 14)).astype(float)
        if rng.random() < 0.3:
            values[rng.integers(len(values))] = np.nan
        labels, counts = [], []
        for _ in range(rng.integers(1, 6)):
            kind = rng.random()
            low, high = sorted(rng.integers(-1, 13, 2).tolist())
            if kind < 0.4:
                label = f"{low}-{high}"
            elif kind < 0.55:
                label = f"{high}-{low}"  # inverted
            elif kind < 0.75:
                label = str(low)
            elif kind < 0.85:
                label = "*"
            elif kind < 0.95:
                label = f"[{low}, {high})"
            else:
                label = None
            labels.append(label)
            counts.append(int(rng.integers(1, 4)))
        found = unmatched_labels(labels, counts, values)
        assert found == _matching_deficit(labels, counts, values), (labels, counts, values)


def _toy() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": pd.array([31, 35, 38, 52, 55, 57], dtype="Int64"),
            "sex": pd.array(["Male", "Male", "Male", "Female", "Female", "Female"], "string"),
            "disease": pd.array(["flu", "cold", "flu", "cold", "flu", "cold"], "string"),
        }
    )


def test_the_gate_blocks_a_release_whose_ranges_do_not_hold_the_records(tmp_path):
    """Mondrian's release passes; the same file with a class's range narrowed ("31-35" for
    ages 31, 35, 38) or moved ("40-50") is still 3-anonymous with ordered ranges inside the
    declared ages, and is blocked only by this check. A full-domain release has no such
    facts (its labels are the hierarchy's)."""
    setup = SearchSetup.from_policy(POLICY, stages.load_hierarchies(POLICY))
    [table] = stages.anonymize(_toy(), setup)
    assert set(table.frame["age"]) == {"31-38", "52-57"}
    assert table.input_numbers is not None and set(table.input_numbers) == {"age"}
    path = tmp_path / "release.csv"
    table.frame.to_csv(path, index=False)
    facts = table.gate_facts()
    assert stages.verify(path, setup, 6, **facts).passed
    for wrong in ("31-35", "40-50", "38"):
        table.frame.assign(age=table.frame["age"].replace("31-38", wrong)).to_csv(path, index=False)
        decision = stages.verify(path, setup, 6, **facts)
        assert not decision.passed, wrong
        [reason] = decision.reasons
        assert reason.startswith("column 'age': ")
        assert "state values the input does not hold" in reason
    full_domain = POLICY.with_overrides(**{"algorithm.name": "optimal"})
    setup = SearchSetup.from_policy(full_domain, stages.load_hierarchies(full_domain))
    [table] = stages.anonymize(_toy(), setup)
    assert table.input_numbers is None


@pytest.mark.parametrize("algorithm", ["mondrian", "greedy_partition", "local_recoding"])
def test_adult_local_recoding_releases_pass_with_their_facts(adult, algorithm, tmp_path):
    """The releases of every local recoding algorithm on Adult, written and verified with the
    input's values, pass: no false block. local_recoding labels age with ARX's hierarchy,
    which maps 90 to "85-89" (read as a range, 405 cells were unmatched and it was blocked)."""
    policy = adult.policy.with_overrides(algorithm={"name": algorithm})
    setup = SearchSetup.from_policy(policy, adult.hierarchies)
    [table] = stages.anonymize(adult.frame, setup)
    assert table.input_numbers is not None and "age" in table.input_numbers
    path = tmp_path / "release.csv"
    table.frame.to_csv(path, index=False)
    decision = stages.verify(path, setup, len(adult.frame), **table.gate_facts())
    assert decision.passed, decision.reasons
