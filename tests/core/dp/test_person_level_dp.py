"""Person-level DP: a policy's ``differential_privacy.person_key`` makes the privacy unit a person.

The neighbouring relation is then "one person added or removed with all of their records". The
DP branch bounds each person to one record (:mod:`privgate.core.dp.person_bounding`) before the
declared-domain rule and every mechanism, so each record-level sensitivity holds per person.
The audit below runs the release on multi-admission hospital tables D and D' = D + one patient
with several admissions: the bounded release holds its ε, and the same release without the
bounding (the planted bug: the unit silently left at one record) is caught.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest
import yaml

from privgate.core.attacks import split_control
from privgate.core.dp import Accountant
from privgate.core.dp.audit import audit_epsilon
from privgate.core.dp.ledger import BudgetLedger
from privgate.core.dp.person_bounding import (
    BOUNDING_SECRET_FILE,
    bound_persons,
    bounding_secret,
    privacy_unit,
)
from privgate.core.dp.release import dp_release, run_dp_release
from privgate.core.exceptions import PolicyError
from privgate.core.hospital_data import generate_admissions
from privgate.core.policy import load_policy
from privgate.core.stages import load_hierarchies

REPO = Path(__file__).resolve().parents[3]
HOSPITAL_DP = REPO / "policies" / "hospital-dp.yaml"
EPSILON = 0.5
SECRET = b"a fixed test secret, 32 bytes...."


def _policy(
    tmp_path: Path,
    quasi_identifiers: list[str] | None = None,
    sections: dict | None = None,
    identifiers: tuple[str, ...] = (),
    **dp_changes,
):
    data = yaml.safe_load(HOSPITAL_DP.read_text())
    data.update(sections or {})
    for name in identifiers:
        data["columns"][name] = {"role": "identifier"}
    data["input"]["path"] = str(tmp_path / "admissions.csv")
    for name, column in data["columns"].items():
        dropped = quasi_identifiers is not None and name not in quasi_identifiers
        if dropped and column["role"] == "quasi_identifier":
            data["columns"][name] = {"role": "insensitive"}
    data["differential_privacy"].update(dp_changes)
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_policy(path)


# ----------------------------------------------------------------------------------------------
# The policy


def test_the_hospital_dp_example_declares_the_patient_as_the_unit():
    policy = load_policy(HOSPITAL_DP)
    assert policy.person_key == "subject_id"
    assert "subject_id" not in policy.dp_released_columns


@pytest.mark.parametrize(
    ("key", "message"),
    [("patient", "unknown column 'patient'"), ("gender", "must have role 'identifier'")],
)
def test_a_person_key_must_be_a_declared_identifier(tmp_path, key, message):
    with pytest.raises(PolicyError, match=f"differential_privacy.person_key: .*{message}"):
        _policy(tmp_path, person_key=key)


# ----------------------------------------------------------------------------------------------
# The bounding step


def test_without_a_person_key_the_table_is_the_input():
    frame = generate_admissions(50, seed=1)
    bounded = bound_persons(frame, None)
    assert bounded.frame is frame
    assert bounded.unit == privacy_unit(None) == "one record (added or removed)"


def test_with_a_person_key_each_patient_keeps_one_admission_and_the_key_is_dropped():
    frame = generate_admissions(300, seed=2)
    assert frame["subject_id"].duplicated().any()  # several admissions per patient
    bounded = bound_persons(frame, "subject_id", SECRET)
    assert len(bounded.frame) == frame["subject_id"].nunique()
    assert "subject_id" not in bounded.frame.columns
    assert bounded.owner == {
        "bounded_input_rows": len(frame),
        "bounded_persons": frame["subject_id"].nunique(),
    }
    assert "one person" in bounded.unit and "subject_id" in bounded.unit
    # Every kept record is one of that patient's own admissions.
    admissions = set(frame.drop(columns="subject_id").itertuples(index=False, name=None))
    assert set(bounded.frame.itertuples(index=False, name=None)) <= admissions


def test_a_record_without_its_person_is_excluded_whatever_the_table_holds():
    """A data-independent rule, not a refusal: D and D + keyless records bound to the same
    table, so whether a release appears never depends on such a record (review2 F4)."""
    frame = generate_admissions(60, seed=3)
    keyless = frame.iloc[[4, 9]].assign(subject_id=None, age=97)
    with_keyless = pd.concat([frame, keyless], ignore_index=True)
    bounded = bound_persons(with_keyless, "subject_id", SECRET)
    assert bounded.frame.equals(bound_persons(frame, "subject_id", SECRET).frame)
    assert bounded.owner["excluded_without_person"] == 2
    assert bounded.owner["bounded_persons"] == frame["subject_id"].nunique()


def test_the_secret_is_made_once_private_and_kept(tmp_path):
    first = bounding_secret(tmp_path)
    assert len(first) == 32
    path = tmp_path / BOUNDING_SECRET_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert bounding_secret(tmp_path) == first  # the same secret on every later run
    assert [p.name for p in tmp_path.iterdir()] == [BOUNDING_SECRET_FILE]  # no temporary left
    path.write_text("abcd\n")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        bounding_secret(tmp_path)


def test_the_default_secret_lives_in_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(tmp_path / "owner"))
    frame = generate_admissions(40, seed=4)
    one = bound_persons(frame, "subject_id").frame
    assert (tmp_path / "owner" / BOUNDING_SECRET_FILE).exists()
    assert bound_persons(frame, "subject_id").frame.equals(one)


def test_the_attack_control_split_holds_out_whole_patients(tmp_path):
    """With a person key the held-out coin is the person's: no patient is split between the
    release and the control records (the split stays 1-stable at the person level)."""
    dp = {"method": "mst", "delta": 1e-6, "class_column": None, "score": "info_gain",
          "budget": {"epsilon": 4.0, "delta": 1e-5}}  # fmt: skip
    sections = {"attacks": {"control_fraction": 0.3}}
    policy = _policy(tmp_path, sections=sections, identifiers=("admitted",), **dp)
    frame = generate_admissions(300, seed=6)
    split = split_control(frame, policy)
    kept, held = set(split.kept["subject_id"]), set(split.control["subject_id"])
    assert kept and held and not kept & held
    assert split.facts["unit"] == "persons"
    assert 0.2 < len(held) / (len(kept) + len(held)) < 0.4


def test_a_one_sided_dp_split_never_decides_publication(tmp_path):
    """Whether any person is held out is a function of the private data: for a DP release it
    must not refuse the run (review2 F4), it only leaves the owner-side evidence unmeasured."""
    dp = {"method": "mst", "delta": 1e-6, "class_column": None, "score": "info_gain",
          "budget": {"epsilon": 4.0, "delta": 1e-5}}  # fmt: skip
    sections = {"attacks": {"control_fraction": 0.01}}
    policy = _policy(tmp_path, sections=sections, identifiers=("admitted",), **dp)
    frame = generate_admissions(3, seed=6)
    split = split_control(frame, policy)
    assert len(split.kept) + len(split.control) == len(frame)
    assert split.control.empty or split.kept.empty


# ----------------------------------------------------------------------------------------------
# Wired into the release: the mechanisms see one record per patient


def test_a_release_is_drawn_from_one_record_per_patient(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVGATE_DATA_DIR", str(tmp_path / "owner"))
    policy = _policy(tmp_path, rounds=2)
    frame = generate_admissions(200, seed=5)
    ledger = BudgetLedger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    table = run_dp_release(
        frame, policy, load_hierarchies(policy), release_id="r1", run_id="run-1", ledger=ledger
    )
    persons = frame["subject_id"].nunique()
    assert table.owner["bounded_persons"] == persons
    assert table.owner["bounded_input_rows"] == len(frame) > persons
    assert table.owner["input_rows"] == persons  # what the declared-domain rule and DPHeter saw
    assert "subject_id" not in table.frame.columns


# ----------------------------------------------------------------------------------------------
# The audit: person-level neighbours


def _patient_tables(tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """D: 150 patients; D' = D + one patient with six admissions (a frequent patient)."""
    base = generate_admissions(150, seed=11)
    extra = generate_admissions(400, seed=12)
    counts = extra["subject_id"].value_counts()
    frequent = counts[counts >= 6].index[0]
    newcomer = extra[extra["subject_id"] == frequent].head(6).assign(subject_id="P-NEW")
    return base, pd.concat([base, newcomer], ignore_index=True)


def _noisy_total(policy, hierarchies, person_key):
    """The release's noisy total: bound (a deterministic function of the table, computed once
    per table), then the declared-domain rule and DPHeter's noisy count, drawn in every trial."""
    bounded: dict[int, pd.DataFrame] = {}

    def release(frame: pd.DataFrame) -> int:
        if id(frame) not in bounded:
            bounded[id(frame)] = bound_persons(frame, person_key, SECRET).frame
        table = dp_release(bounded[id(frame)], policy, hierarchies, Accountant()).frame
        return int(table["count"].sum())

    return release


@pytest.mark.slow
def test_a_person_level_release_holds_its_epsilon_and_the_audit_catches_row_level_bounding(
    tmp_path,
):
    policy = _policy(tmp_path, ["gender", "age"], rounds=0, epsilon=EPSILON)
    hierarchies = load_hierarchies(policy)
    d, d_prime = _patient_tables(tmp_path)
    honest = audit_epsilon(
        _noisy_total(policy, hierarchies, "subject_id"),
        d,
        d_prime,
        trials=500,
        claimed_epsilon=EPSILON,
    )
    assert not honest.violated, honest

    # Planted bug: the unit left at one record. The new patient's six admissions move the
    # count by six, and the audit sees far more than the claimed epsilon.
    rows = audit_epsilon(
        _noisy_total(policy, hierarchies, None), d, d_prime, trials=500, claimed_epsilon=EPSILON
    )
    assert rows.violated, rows
    assert rows.epsilon_lower_bound > 2 * EPSILON
