"""The attacks of core/attacks: statistics, generalized cells, and each attack's power.

Each attack must *find* a leak it is shown (a release that copies its records) and report none
for a release that carries no information about individuals (independently shuffled columns),
on real Adult records. The cross-check against anonymeter itself is in
``test_anonymeter_crosscheck.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privgate.core.attacks import (
    AttackOutcome,
    AttackSettings,
    Condition,
    ReleaseSpace,
    check_attack_limits,
    inference_attack,
    linkability_attack,
    residual_success,
    run_attacks,
    singling_out_attack,
    success_rate,
    unique_exact_match,
)
from privgate.core.hierarchy import ARXHierarchy, IntervalHierarchy

COLUMNS = ["sex", "age", "race", "marital-status", "education", "occupation", "salary-class"]


@pytest.fixture(scope="module")
def adult(shared_data) -> pd.DataFrame:
    frame = pd.read_csv(shared_data("arx/adult.csv"), sep=";")
    return frame[COLUMNS].sample(n=4200, random_state=7).reset_index(drop=True)


@pytest.fixture(scope="module")
def split(adult):
    control = adult.iloc[:600].reset_index(drop=True)
    ori = adult.iloc[600:2400].reset_index(drop=True)
    return ori, control


@pytest.fixture(scope="module")
def unrelated(adult) -> pd.DataFrame:
    """A release that says nothing about ori's records: other Adult records, columns shuffled."""
    rng = np.random.default_rng(0)
    other = adult.iloc[2400:].reset_index(drop=True)
    return pd.DataFrame({c: rng.permutation(other[c].to_numpy()) for c in other.columns})


# ----------------------------------------------------------------------------------------------
# Statistics


def test_wilson_interval_matches_the_closed_form():
    rate = success_rate(100, 30, 0.95)
    z = 1.959963984540054
    centre = (30 + z * z / 2) / (100 + z * z)
    half = z / (100 + z * z) * math.sqrt(30 * 70 / 100 + z * z / 4)
    assert rate.value == pytest.approx(centre, abs=1e-12)
    assert rate.error == pytest.approx(half, abs=1e-12)


def test_residual_risk_is_the_success_beyond_the_control():
    attack, control = success_rate(500, 300, 0.95), success_rate(500, 100, 0.95)
    residual = residual_success(attack, control)
    assert residual.value == pytest.approx(
        (attack.value - control.value) / (1 - control.value), abs=1e-12
    )
    outcome = AttackOutcome(500, 300, 10, 100)
    risk = outcome.risk()
    assert 0 < risk.low < risk.value < risk.high < 1
    # A control easier to attack than the released records is no risk (clipped to 0).
    assert AttackOutcome(500, 50, 10, 100).risk().value == 0.0


# ----------------------------------------------------------------------------------------------
# Reading generalized cells


def test_generalized_cells_cover_what_they_stand_for(shared_data):
    originals = pd.DataFrame({"age": [23, 37, 52], "race": ["White", "Black", "Other"]})
    release = pd.DataFrame({"age": ["20-29", "*", "[30, 40)"], "race": ["White", "*", "Other"]})
    race = ARXHierarchy.from_csv("race", shared_data("arx/adult_hierarchy_race.csv"))
    space = ReleaseSpace(release, [originals], ["age", "race"], ["age"], {"race": race})
    targets = space.encode(originals)
    in_twenties = space.condition_from_cell("age", 0, median=None)
    assert in_twenties.kind == "range"
    assert space.holds_on_originals(in_twenties, targets).tolist() == [True, False, False]
    # A '*' cell is at distance 0 from everything; a range from values outside it grows.
    spans = space.spans(targets, ["age"])
    assert space.distances(targets, 0, ["age"], spans).tolist()[1] == 0.0
    assert space.distances(targets, 2, ["age"], spans)[2] > 0
    # A released row certainly satisfies a condition only when its whole region does.
    thirties = Condition("age", "range", lo=30, hi=40, hi_open=True)
    assert space.holds_on_cells(thirties)[space.column("age").row_cell].tolist() == [
        False,
        False,
        True,
    ]


def test_an_unparseable_numeric_cell_is_refused():
    from privgate.core.exceptions import PolicyError

    frame = pd.DataFrame({"age": [23]})
    with pytest.raises(PolicyError, match="released cell 'young'"):
        ReleaseSpace(pd.DataFrame({"age": ["young"]}), [frame], ["age"], ["age"])


# ----------------------------------------------------------------------------------------------
# Each attack finds a leak and reports none where there is none


def test_singling_out_finds_copied_records_not_unrelated_ones(split, unrelated):
    ori, control = split
    results = {}
    for name, release in (("copy", ori), ("unrelated", unrelated)):
        space = ReleaseSpace(release, [ori, control], COLUMNS, ["age"])
        outcome, details = singling_out_attack(
            space, ori, control, COLUMNS, n_attacks=150, rng=np.random.default_rng(1)
        )
        results[name] = outcome.risk()
        assert details["queries"] == 150
    assert results["copy"].low > 0.5
    assert results["unrelated"].low < 0.05


def test_linkability_finds_records_whose_halves_are_unique():
    rng = np.random.default_rng(3)
    ori = pd.DataFrame({"a": rng.permutation(3000), "b": rng.permutation(3000)}).astype(float)
    control = pd.DataFrame({"a": rng.random(800) * 3000, "b": rng.random(800) * 3000})
    space = ReleaseSpace(ori, [ori, control], ["a", "b"], ["a", "b"])
    outcome, _ = linkability_attack(
        space, ori, control, (["a"], ["b"]), n_attacks=200, rng=np.random.default_rng(0)
    )
    assert outcome.n_success == 200  # every copied record links to itself
    assert outcome.risk().low > 0.9


def test_inference_separates_memorized_secrets_from_learnable_ones(split, adult):
    ori, control = split
    rng = np.random.default_rng(5)
    secret = pd.Series(rng.integers(0, 10, len(ori)).astype(str), name="secret")
    memorized = ori.assign(secret=secret)
    other = control.assign(secret=rng.integers(0, 10, len(control)).astype(str))
    columns = [*COLUMNS, "secret"]
    space = ReleaseSpace(memorized, [memorized, other], columns, ["age"])
    outcome, _ = inference_attack(
        space, memorized, other, COLUMNS, "secret", n_attacks=200, rng=np.random.default_rng(2)
    )
    assert outcome.risk().low > 0.3  # the release gives away the random secret of its records
    # A release of *other* records of the same population keeps the relation between the
    # columns: salary-class is guessed about as well for records outside the release as for
    # those the release was made from, so the residual risk is small although the attack works.
    other = adult.iloc[2400:].reset_index(drop=True)
    space = ReleaseSpace(other, [ori, control], COLUMNS, ["age"])
    outcome, _ = inference_attack(
        space, ori, control, COLUMNS[:-1], "salary-class", n_attacks=300,
        rng=np.random.default_rng(2),
    )  # fmt: skip
    assert outcome.attack_rate.value > 0.65 and outcome.control_rate.value > 0.65
    assert outcome.risk().low < 0.05


def test_unique_exact_match(split, unrelated):
    ori, _ = split
    copy = unique_exact_match(ori, ori, COLUMNS, 0.95)
    assert copy["unique_records"] > 100 and copy["value"] == 1.0
    assert unique_exact_match(ori, unrelated, COLUMNS, 0.95)["value"] < 0.1  # chance matches


def test_k_anonymous_generalized_release_resists_singling_out(split, shared_data):
    """Records generalized to age decades and '*' elsewhere but sex: classes of dozens."""
    ori, control = split
    age = IntervalHierarchy("age", [10])

    def generalize(frame):
        out = frame.copy()
        out["age"] = age.generalize(frame["age"].tolist())[:, 1]
        for c in COLUMNS:
            if c not in ("age", "sex"):
                out[c] = "*"
        return out

    release = generalize(ori)
    evidence = run_attacks(
        release,
        ori,
        control,
        COLUMNS,
        numeric=["age"],
        hierarchies={"age": age},
        settings=AttackSettings(
            n_attacks=100, seed=4, secrets=("salary-class",), max_attempts=3000
        ),
    )
    risks = evidence.risks()
    assert risks["singling_out"].low < 0.05
    assert risks["unique_exact_match"].value == 0.0
    assert evidence.to_dict()["risks"]["linkability"] is not None


def test_gate_reads_the_lower_confidence_bound(split):
    ori, control = split
    evidence = run_attacks(
        ori, ori, control, COLUMNS, numeric=["age"],
        settings=AttackSettings(n_attacks=100, seed=2, secrets=("salary-class",)),
    )  # fmt: skip
    reasons, checks = check_attack_limits(evidence, {"max_singling_out": 0.05})
    assert reasons and "attacks.max_singling_out = 0.05 exceeded" in reasons[0]
    assert checks[0]["held"] is False
    risk = evidence.risks()["singling_out"]
    # A limit inside the interval (above its lower bound) holds: the excess is not shown.
    reasons, checks = check_attack_limits(evidence, {"max_singling_out": risk.low + 1e-9})
    assert reasons == [] and checks[0]["held"] is True
