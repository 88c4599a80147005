"""The coverage rule: a release protecting fewer quasi-identifiers is never published silently."""

from __future__ import annotations

import pandas as pd

from privgate.core.gate import GateDecision, check_coverage, verify_table
from privgate.core.privacy import KAnonymity

QIS = ["age", "zip", "sex"]


def _decision_over(frame: pd.DataFrame, covered: list[str]) -> GateDecision:
    cells = {c: frame[c].astype(str).to_numpy() for c in frame.columns}
    return verify_table(cells, covered, [KAnonymity(k=2)])


def test_narrower_release_is_blocked_unless_accepted() -> None:
    # k = 2 over age alone, but zip and sex single out every record.
    frame = pd.DataFrame(
        {"age": ["30-39"] * 4, "zip": ["1", "2", "3", "4"], "sex": ["F", "M", "F", "M"]}
    )
    narrow = _decision_over(frame, ["age"])
    assert narrow.passed  # k-anonymous over the covered column ...
    blocked = check_coverage(narrow, ["age"], QIS)
    assert not blocked.passed  # ... but the gate demands every declared quasi-identifier
    assert "covers 1 of 3 quasi-identifiers" in blocked.reasons[0]
    assert "['zip', 'sex']" in blocked.reasons[0]
    assert "accept_narrower_coverage" in blocked.reasons[0]
    accepted = check_coverage(narrow, ["age"], QIS, narrower_accepted=True)
    assert accepted.passed
    assert accepted.measurements["covered_quasi_identifiers"] == ["age"]
    assert accepted.measurements["uncovered_quasi_identifiers"] == ["zip", "sex"]
    assert accepted.measurements["narrower_coverage_accepted"] is True


def test_full_coverage_passes_and_keeps_failures() -> None:
    frame = pd.DataFrame({"age": ["30-39"] * 4, "zip": ["1*"] * 4, "sex": ["F", "M", "F", "M"]})
    full = check_coverage(_decision_over(frame, QIS), QIS, QIS)
    assert full.passed
    assert full.measurements["uncovered_quasi_identifiers"] == []
    assert full.measurements["narrower_coverage_accepted"] is False
    failing = GateDecision(False, ["2-anonymity not met"], {})
    assert check_coverage(failing, QIS, QIS).reasons == ["2-anonymity not met"]


def test_covering_an_undeclared_column_is_blocked() -> None:
    decision = check_coverage(
        GateDecision(True, [], {}), ["age", "income"], QIS, narrower_accepted=True
    )
    assert not decision.passed
    assert "['income'] are not declared quasi-identifiers" in decision.reasons[0]
