"""The gate's check that each column released as it is holds its input column's values
(:func:`privgate.core.gate.written_counts`, the row engine's and the release flow's fact)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.gate import sensitive_reference, written_counts
from privgate.core.policy import ReleasePolicy


@pytest.mark.parametrize("output_format", ["csv", "parquet"])
def test_written_counts_name_cells_as_the_release_writes_them(output_format):
    """From the distinct values alone, the counts the whole column written and read back
    gives (sensitive_reference's definition), for every kind of column: floats, nullable
    numbers, text with quotes and "\\r", an object column where 1 == True, categories."""
    rng = np.random.default_rng(0)
    n = 2000
    objects = np.array([1, "1", 1.5, None, True], dtype=object)
    frame = pd.DataFrame(
        {
            "f": rng.choice([0.1, 1.0, 1e20, 1e-7, np.nan, 2.5, -0.0, 123456789.123456789], n),
            "F": pd.array(rng.choice([0.1, 1.0, None, 1e16], n), dtype="Float64"),
            "i": pd.array(rng.choice([1, None, 30, -5], n), dtype="Int64"),
            "s": pd.array(rng.choice(["a", "", None, "x\ry", 'q,"r'], n), dtype="string"),
            "o": pd.Series(rng.choice(objects, n), dtype=object),
            "c": pd.Categorical(rng.choice(["u", "v"], n)),
            "b": rng.choice([True, False], n),
        }
    )
    names = list(frame.columns)
    found = written_counts(frame, names, output_format)
    merged = {}  # a missing and an empty cell are one key (Parquet keeps "" apart)
    for name, counts in sensitive_reference(frame, names, output_format).items():
        merged[name] = {k: n for k, n in counts.items() if k not in (None, "")}
        empty = counts.get(None, 0) + counts.get("", 0)
        merged[name].update({None: empty} if empty else {})
    assert {n: c.to_dict() for n, c in found.items()} == merged
    times = pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "2021-05-06 10:00"], format="mixed")})
    assert written_counts(times, ["d"]) == {}  # its text depends on the other rows


POLICY = ReleasePolicy.model_validate(
    {
        "dataset": "toy",
        "input": {"path": "toy.csv"},
        "columns": {
            "age": {
                "role": "quasi_identifier",
                "type": "integer",
                "hierarchy": {"kind": "interval", "bands": [10, 20]},
            },
            "sex": {
                "role": "quasi_identifier",
                "hierarchy": {"kind": "taxonomy", "tree": {"Person": ["Male", "Female"]}},
            },
            "disease": {"role": "sensitive"},
            "note": {"role": "insensitive", "type": "string"},
        },
        "privacy": {"k": 3, "suppression_limit": 0},
    }
)


@pytest.mark.parametrize("algorithm", ["optimal", "mondrian"])
def test_the_gate_blocks_a_column_that_is_not_its_inputs(tmp_path, algorithm):
    """A written file whose ``disease`` column holds the records' exact ages (a writer that
    took the wrong column), or one more 'flu' than the input has, stays 3-anonymous over the
    quasi-identifiers and passed; it is blocked, and the release as made passes."""
    policy = POLICY.with_overrides(**{"algorithm.name": algorithm})
    frame = pd.DataFrame(
        {
            "age": pd.array([31, 35, 38, 52, 55, 57], dtype="Int64"),
            "sex": pd.array(["Male", "Male", "Male", "Female", "Female", "Female"], "string"),
            "disease": pd.array(["flu", "cold", "flu", "cold", "flu", "cold"], "string"),
            "note": pd.array(["a", "a", "b", "b", None, "a"], "string"),
        }
    )
    setup = SearchSetup.from_policy(policy, stages.load_hierarchies(policy))
    [table] = stages.anonymize(frame, setup)
    assert set(table.marginals) == {"disease", "note"}
    path = tmp_path / "release.csv"
    facts = table.gate_facts()
    table.frame.to_csv(path, index=False)
    assert stages.verify(path, setup, 6, **facts).passed
    ages = frame["age"].astype("string").to_numpy()
    for wrong in (ages, ["flu", "flu", "flu", "flu", "cold", "cold"]):
        table.frame.assign(disease=wrong).to_csv(path, index=False)
        decision = stages.verify(path, setup, 6, **facts)
        assert not decision.passed
        [reason] = decision.reasons
        assert reason.startswith("column 'disease': ") and "not a release of the input" in reason
