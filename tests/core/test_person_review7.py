"""Review 7 of the per-person privacy models (issue #16): counterexamples that must stay fixed.

Each test is a small table built to break a claim of docs/PERSONS.md (review 7 of issue #16):
it failed before its fix.
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import pandas as pd

from privgate.core.anonymize._persons import PersonNodeChecker
from privgate.core.encoding import encode_table
from privgate.core.gate import sensitive_reference, verify_table
from privgate.core.hierarchy import taxonomy_hierarchy
from privgate.core.privacy import DeltaDisclosure, KAnonymity


def _frequent_patient() -> tuple[pd.DataFrame, list[str]]:
    """Ward a: one patient's ten admissions; ward b: ten patients admitted once each."""
    persons = ["P0"] * 10 + [f"P{i}" for i in range(1, 11)]
    frame = pd.DataFrame({"subject_id": persons, "ward": ["a"] * 10 + ["b"] * 10, "s": ["x"] * 20})
    return frame, persons


def test_report_measures_the_release_risk_in_persons_as_the_input() -> None:
    """The report's re-identification risk section set the input, counted in persons, beside
    the release counted in records (the person key is never written): ward a's ten
    admissions of one patient read as a class of ten, a highest prosecutor risk of 0.1,
    where the patient's risk is 1 (the gate's figure)."""
    from privgate.core.policy import _validate
    from privgate.core.report._data import _risk_section
    from privgate.core.report._html import _risk

    frame, persons = _frequent_patient()
    policy = _validate(
        {
            "dataset": "hospital",
            "input": {"path": "x.csv"},
            "columns": {
                "subject_id": {"role": "identifier"},
                "ward": {
                    "role": "quasi_identifier",
                    "hierarchy": {"kind": "taxonomy", "tree": {"*": ["a", "b"]}},
                },
                "s": {"role": "sensitive"},
            },
            "privacy": {"k": 2, "person_key": "subject_id"},
        },
        "test",
    )
    release = frame[["ward", "s"]]
    section = _risk_section(frame, release, policy, persons)
    before, after = section["before"], section["after"]
    assert before["prosecutor"]["highest"] == 1.0
    assert after["prosecutor"]["highest"] == 1.0  # P0 alone in ward a (rows: 0.1)
    assert after["prosecutor"]["average"] == before["prosecutor"]["average"]
    assert after["records"] == 11  # persons
    # Without the mapping (a release read back alone), records, as before.
    assert _risk_section(frame, release, policy)["after"]["prosecutor"]["highest"] == 0.1
    # The page says so (it showed two numbers without their unit).
    assert "Both columns count persons" in _risk(SimpleNamespace(risk=section))


def test_report_names_suppressed_persons_as_persons() -> None:
    """With a person key the gate counts suppression in persons (``suppressed_unit``); the
    report's card and summary table called that number "suppressed records" (1 suppressed
    patient with ten admissions read as one record)."""
    from privgate.core.gate import verify_table
    from privgate.core.privacy import KAnonymity
    from privgate.core.report._html import _privacy
    from privgate.core.report._summary import summary_table

    frame, persons = _frequent_patient()
    kept = frame[frame["subject_id"] != "P0"]
    decision = verify_table(
        kept[["ward", "s"]],
        ["ward"],
        [KAnonymity(k=2)],
        persons=kept["subject_id"].to_numpy(),
        input_persons=11,
        suppression_limit=0.1,
    )
    assert decision.passed and decision.measurements["suppressed"] == 1
    gate = decision.to_dict()
    privacy = {"k": 2, "criteria": [], "class_sizes": {10: 1}, "class_size_unit": "persons"}
    report = SimpleNamespace(privacy=privacy, privacy_gate=gate, utility_gate=None, utility=None)
    rows = {r["measure"]: r for r in summary_table(report)}
    assert "suppressed persons" in rows and "suppressed records" not in rows
    html = _privacy(report)
    assert "suppressed persons" in html and "suppressed records" not in html
    # The risk bands weigh persons too (class sizes count persons), and say so.
    assert "share of persons" in html and "% of released persons" in html
    assert "share of records" not in html and "% of released records" not in html


# δ-disclosure per person: an exact tie never passes by rounding


def _exact_tie() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ward b holds p3 (y), p2 (z) and p4 (x): z weighs 1/3 there. In the input, p2's three
    records hold y once and z twice (1/3 and 2/3 of their weight), so z weighs
    ``(2/3) / 4 persons = 1/6``: ward b's log ratio for z is exactly ``log2 2 = 1``. In floating
    point the input's weights sum to 4 - ulp, z's reference comes out a hair above 1/6 and the
    ratio a hair below 2 (``log2`` gives 0.9999999999999999)."""
    frame = pd.DataFrame(
        {
            "person": ["p3", "p2", "p1", "p2", "p2", "p4"],
            "ward": ["b", "b", "a", "a", "a", "b"],
            "s": ["y", "z", "x", "y", "z", "x"],
        }
    )
    return frame, frame[["ward", "s"]]


def test_delta_disclosure_per_person_never_passes_an_exact_tie_by_rounding() -> None:
    """δ-disclosure is strict (``|log2(p_class / p_table)| < δ``): a class whose exact ratio is
    ``2^δ`` must fail, per person as over rows. Person weights are sums of fractions, so the
    gate and the search must not let the rounding decide (as recursive (c,l) already does)."""
    frame, release = _exact_tie()
    # The exact claim, from the definition in fractions: ward b's z ratio is exactly 2.
    prior_z = Fraction(2, 3) / 4  # p2's two z records of three, over the input's 4 persons
    assert Fraction(1, 3) / prior_z == 2
    model = DeltaDisclosure(column="s", delta=1.0)
    persons = frame["person"].to_numpy()
    decision = verify_table(
        release,
        ["ward"],
        [KAnonymity(k=1), model],
        persons=persons,
        input_persons=4,
        reference=sensitive_reference(frame, ["s"], persons=frame["person"]),
    )
    assert not decision.passed, decision.measurements["achieved"]
    assert decision.measurements["achieved"][str(model)] >= 1.0
    # The search agrees: at the ward level the tie class fails, so its persons are removed.
    hierarchy = {"ward": taxonomy_hierarchy("ward", {"*": ["a", "b"]})}
    encoded = encode_table(frame, hierarchy, ["s"])
    codes, _ = pd.factorize(frame["person"])
    checker = PersonNodeChecker(encoded.frequency_set(), codes, [KAnonymity(k=1), model], 0.0)
    assert not checker.evaluate((0,)).satisfied
    # A looser δ, above the exact ratio's log, passes in both.
    looser = DeltaDisclosure(column="s", delta=1.0 + 1e-6)
    assert math.log2(2) < looser.delta
    again = verify_table(
        release,
        ["ward"],
        [KAnonymity(k=1), looser],
        persons=persons,
        input_persons=4,
        reference=sensitive_reference(frame, ["s"], persons=frame["person"]),
    )
    assert again.passed, again.reasons


# ---------------------------------------------------------------------------------------------
# privgate.verify on a person-keyed policy
# ---------------------------------------------------------------------------------------------


def _ward_policy() -> object:
    from privgate.core.policy import _validate

    return _validate(
        {
            "dataset": "hospital",
            "input": {"path": "x.csv"},
            "columns": {
                "subject_id": {"role": "identifier"},
                "ward": {
                    "role": "quasi_identifier",
                    "hierarchy": {"kind": "taxonomy", "tree": {"*": ["a", "b"]}},
                },
                "s": {"role": "sensitive"},
            },
            "privacy": {"k": 2, "person_key": "subject_id", "suppression_limit": 0.1},
        },
        "test",
    )


def test_verify_never_passes_a_person_keyed_policy_counted_in_records(tmp_path) -> None:
    """``privgate.verify(release, policy)`` ("the gate on any release file") counted records
    whatever the policy: ward a, one patient's ten admissions, passed the hospital policy's
    k = 2 (PASSED: smallest class 10) where the gate counts one person. Without each row's
    person the gate cannot count people, so it blocks; with them it counts persons."""
    import privgate

    frame, persons = _frequent_patient()
    release = frame[["ward", "s"]]
    policy = _ward_policy()
    blind = privgate.verify(release, policy)
    assert not blind.passed and "counts persons" in blind.reasons[0]
    path = tmp_path / "release.csv"
    release.to_csv(path, index=False)
    assert not privgate.verify(path, policy).passed
    counted = privgate.verify(release, policy, persons=persons, input_persons=11)
    assert not counted.passed
    assert counted.measurements["min_class_size"] == 1  # P0 alone in ward a
    # The ten patients of ward b alone pass, counted in persons (P0 suppressed: 1 of 11).
    kept = frame[frame["subject_id"] != "P0"]
    ok = privgate.verify(
        kept[["ward", "s"]], policy, persons=kept["subject_id"].tolist(), input_persons=11
    )
    assert ok.passed, ok.reasons
    assert ok.measurements["persons"] == 10


# ---------------------------------------------------------------------------------------------
# Estimated k-map: the sampling fraction is the input's, in the gate as in the search
# ---------------------------------------------------------------------------------------------


def test_estimated_k_map_reads_the_input_fraction_in_the_gate() -> None:
    """Population 100, an input of 50 (fraction 0.5): k = 5 needs classes of k' = 5. A release
    keeping 12 of them in three classes of 4 (38 suppressed within an 80 % limit) passed the
    gate, which derived k' from the release's own 12 (fraction 0.12, k' = 4); the suppressed
    were sampled too and are still in the population. Rows and persons alike."""
    from privgate.core.privacy import EstimatedKMap

    model = EstimatedKMap(k=5, population_size=100)
    assert model.required_size(50) == 5 and model.required_size(12) == 4
    release = pd.DataFrame({"q": ["a"] * 4 + ["b"] * 4 + ["c"] * 4, "s": ["x"] * 12})
    persons = [f"p{i}" for i in range(12)]
    by_persons = verify_table(
        release, ["q"], [model], persons=persons, input_persons=50, suppression_limit=0.8
    )
    by_rows = verify_table(release, ["q"], [model], input_rows=50, suppression_limit=0.8)
    for decision in (by_persons, by_rows):
        assert not decision.passed
        assert decision.measurements["achieved"][str(model)] == 4  # 5 * 4 / 5
    # The same classes from an input of 12 (nothing suppressed): fraction 0.12, k' = 4.
    alone = verify_table(release, ["q"], [model], persons=persons, input_persons=12)
    assert alone.passed, alone.reasons
