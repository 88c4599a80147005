"""Missing cells in quasi-identifiers: a value hierarchies place, counted alike everywhere.

The search (encoded frequency set), the gate (the written file read back as text) and pycanon
(an independent implementation, given the release with missing cells spelled as one marker)
must see the same equivalence classes; a policy that cannot place a missing cell is refused
when it loads, naming the column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pycanon import anonymity

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import PolicyError
from privgate.core.gate import class_stats_of, read_release, verify_table
from privgate.core.policy import ReleasePolicy, _validate
from privgate.core.privacy import KAnonymity
from privgate.validations.schema import validate_input

pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")


def _policy(tmp_path, algorithm: str = "optimal", numeric_nullable: bool = True) -> dict:
    return {
        "dataset": "toy",
        "input": {"path": str(tmp_path / "in.csv")},
        "columns": {
            "age": {"role": "quasi_identifier", "type": "integer", "nullable": numeric_nullable,
                    "hierarchy": {"kind": "bands", "edges": [0, 30, 60]}},
            "religion": {"role": "quasi_identifier", "nullable": True,
                         "hierarchy": {"kind": "taxonomy",
                                       "tree": {"Christian": ["Catholic", "Protestant"],
                                                "Other": ["Muslim", "Jewish"]}}},
            "diagnosis": {"role": "sensitive"},
        },
        "privacy": {"k": 3, "suppression_limit": 0.1},
        "algorithm": {"name": algorithm},
        "output": {"directory": str(tmp_path / "out")},
    }  # fmt: skip


def _table(seed: int = 3, n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ages = rng.integers(0, 90, n).astype(object)
    ages[rng.random(n) < 0.15] = None
    religion = rng.choice(["Catholic", "Protestant", "Muslim", "Jewish"], n).astype(object)
    religion[rng.random(n) < 0.2] = None
    frame = pd.DataFrame(
        {
            "age": pd.array([None if a is None else str(a) for a in ages], dtype="string"),
            "religion": pd.array(religion, dtype="string"),
            "diagnosis": pd.array(rng.choice(["flu", "cold", "asthma"], n), dtype="string"),
        }
    )
    return frame


def _release(tmp_path, policy: ReleasePolicy, frame: pd.DataFrame):
    hierarchies = stages.load_hierarchies(policy)
    validated = validate_input(frame, policy, hierarchies)
    (table,) = stages.anonymize(validated, SearchSetup.from_policy(policy, hierarchies))
    path = tmp_path / "release.csv"
    table.frame.to_csv(path, index=False)
    return validated, table, read_release(path)


def test_optimal_search_gate_and_pycanon_count_missing_cells_alike(tmp_path) -> None:
    policy = _validate(_policy(tmp_path), "test")
    validated, table, written = _release(tmp_path, policy, _table())
    assert validated["religion"].isna().any() and validated["age"].isna().any()
    levels = table.result.levels
    # Below the top level a missing cell stays missing in the release (an empty cell).
    for name in ("age", "religion"):
        if levels[name] < 2:
            assert any(v is None for v in written[name])
    stats = class_stats_of(written, ["age", "religion"], [])
    frame = pd.DataFrame({q: pd.Series(written[q], dtype=object).fillna("<missing>")
                          for q in ("age", "religion")})  # fmt: skip
    assert anonymity.k_anonymity(frame, ["age", "religion"]) == int(stats.sizes.min()) >= 3
    decision = verify_table(
        written,
        ["age", "religion"],
        [KAnonymity(k=3)],
        input_rows=len(validated),
        suppression_limit=0.1,
    )
    assert decision.passed, decision.reasons
    assert decision.measurements["suppressed"] == table.result.n_suppressed
    # The search's classes are the gate's: same count, same smallest class.
    assert decision.measurements["classes"] == len(stats.sizes)


def test_mondrian_places_missing_categories(tmp_path) -> None:
    data = _policy(tmp_path, algorithm="mondrian", numeric_nullable=False)
    data["privacy"] = {"k": 3}
    policy = _validate(data, "test")
    frame = _table()
    frame["age"] = frame["age"].fillna("40")
    _, table, written = _release(tmp_path, policy, frame)
    stats = class_stats_of(written, ["age", "religion"], [])
    assert stats.sizes.min() >= 3
    assert table.frame["religion"].isna().any() or (table.frame["religion"] == "*").any()


def test_mondrian_with_a_nullable_numeric_quasi_identifier_is_refused_at_load(tmp_path) -> None:
    with pytest.raises(PolicyError) as info:
        _validate(_policy(tmp_path, algorithm="mondrian"), "test")
    assert "columns.age: Mondrian cuts numeric quasi-identifiers" in str(info.value)


def test_not_nullable_quasi_identifier_still_refuses_missing_cells(tmp_path) -> None:
    from privgate.core.exceptions import SchemaValidationError

    data = _policy(tmp_path)
    data["columns"]["religion"]["nullable"] = False
    policy = _validate(data, "test")
    with pytest.raises(SchemaValidationError, match="column 'religion'"):
        validate_input(_table(), policy, stages.load_hierarchies(policy))
