"""A quasi-identifier generalized away is published but flagged (issue 16).

The gate measures, on the written cells, which quasi-identifiers hold one value in every
released record; a release that passes carries them as a flag in its summary (the log and the
CLI line), its decision's data (the manifest) and the report's banner. On the hospital
generator with ``policies/hospital.yaml``, the optimum generalizes age (and more) to the top.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from privgate.core.gate import GateDecision, gate_flags, generalized_away, verify_table
from privgate.core.hospital_data import write_admissions_csv
from privgate.core.privacy import KAnonymity

HOSPITAL_POLICY = Path(__file__).resolve().parents[2] / "policies" / "hospital.yaml"


def test_a_column_of_one_value_is_measured_and_flagged() -> None:
    release = pd.DataFrame({
        "zip": ["*", "*", "*", "*"],
        "age": ["<30", "<30", ">=30", ">=30"],
        "sex": [None, None, None, None],
    })  # fmt: skip
    assert generalized_away(release, ["zip", "age", "sex"]) == {"zip": "*", "sex": None}
    decision = verify_table(release, ["zip", "age", "sex"], [KAnonymity(k=2)])
    assert decision.passed
    assert decision.measurements["generalized_away"] == {"zip": "*", "sex": None}
    (flag,) = decision.flags
    assert flag == (
        "2 quasi-identifier(s) generalized away, one value in every released record: "
        "'zip' ('*'), 'sex' (None)"
    )
    assert decision.summary.endswith(f"; FLAGGED: {flag}")
    assert decision.to_dict()["flags"] == [flag]


def test_no_flag_when_every_column_still_varies_or_the_release_is_empty() -> None:
    release = pd.DataFrame({"zip": ["1*", "1*", "2*", "2*"], "age": ["a", "a", "b", "b"]})
    decision = verify_table(release, ["zip", "age"], [KAnonymity(k=2)])
    assert decision.measurements["generalized_away"] == {}
    assert decision.flags == [] and "FLAGGED" not in decision.summary
    assert generalized_away(release.iloc[:0], ["zip", "age"]) == {}
    assert gate_flags({}) == []


def test_a_blocked_release_keeps_its_reasons_as_summary() -> None:
    release = pd.DataFrame({"zip": ["*", "*", "*"], "age": ["a", "a", "b"]})
    decision = verify_table(release, ["zip", "age"], [KAnonymity(k=2)])
    assert not decision.passed
    assert decision.summary.startswith("BLOCKED: ") and "FLAGGED" not in decision.summary
    assert decision.flags  # still measured, and in the manifest/report data
    assert GateDecision(True).flags == []


@pytest.fixture(scope="module")
def hospital(tmp_path_factory):
    """The hospital example policy's optimum on 2,000 generated patients (the default)."""
    import privgate
    from privgate.core.ingest import read_table
    from privgate.core.policy import load_policy

    data = write_admissions_csv(tmp_path_factory.mktemp("hospital") / "admissions.csv")
    policy = load_policy(HOSPITAL_POLICY).with_overrides(**{"input.path": str(data)})
    frame = read_table(policy.input)
    return policy, frame, privgate.anonymize(frame, policy)


@pytest.mark.slow  # the hospital table's search and report (module fixture)
def test_hospital_optimum_generalizes_quasi_identifiers_away_and_says_so(hospital) -> None:
    policy, frame, release = hospital
    decision = release.decision
    assert decision.passed
    away = decision.measurements["generalized_away"]
    assert "age" in away and set(away.values()) == {"*"}
    # The flagged columns are exactly those of one value in the release; those at '*' are at
    # the top level of their hierarchy (the search's own account of what it did).
    from privgate.core.anonymize import SearchSetup

    heights = {q: h.height for q, h in SearchSetup.from_policy(policy).hierarchies.items()}
    levels = release.table.result.levels
    for q in policy.quasi_identifiers:
        assert (q in away) == (release.frame[q].nunique(dropna=False) == 1), q
    assert all(levels[q] == heights[q] for q in away if away[q] == "*")
    assert len(frame[["age"]].drop_duplicates()) > 1  # the input's ages vary
    # Counted in patients (the API's gate has the person of each row, as the flow's does).
    assert decision.measurements["suppressed_unit"] == "persons"
    assert "FLAGGED: " in decision.summary and "'age' ('*')" in decision.summary


@pytest.mark.slow  # the hospital table's search and report (module fixture)
def test_hospital_release_written_is_verified_in_patients(hospital, tmp_path) -> None:
    """Release.write verifies the written file with each written row's patient (shuffled with
    the rows), as the flow does: the same classes, persons and suppression in persons."""
    _, _, release = hospital
    written = release.write(tmp_path / "hospital.csv")
    assert written.passed, written.reasons
    for key in ("persons", "suppressed", "suppressed_unit", "classes", "min_class_size"):
        assert written.measurements[key] == release.decision.measurements[key], key
    assert written.flags == release.decision.flags


@pytest.mark.slow  # the hospital table's search and report (module fixture)
def test_hospital_report_banner_shows_the_flag(hospital) -> None:
    from privgate.core.anonymize import SearchSetup
    from privgate.core.report import build_report, render_html

    policy, frame, release = hospital
    setup = SearchSetup.from_policy(policy)
    report = build_report(
        policy=policy,
        release_id="r1",
        original=frame,
        table=release.table,
        privacy_decision=release.decision,
        status="published",
        hierarchies=setup.hierarchies,
        setup=setup,
    )
    assert report.privacy_gate["flags"] == release.decision.flags
    html = render_html(report)
    banner = html[html.index('class="banner ok"') : html.index("<h3>Privacy gate</h3>")]
    assert "Flagged" in banner and "generalized away" in banner and "&#x27;age&#x27;" in banner
