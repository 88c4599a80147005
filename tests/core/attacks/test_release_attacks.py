"""A policy's ``attacks`` section on real Adult releases: the control split, the gate's attack
criterion on the written file, and the policy's refusals.

The oracles are independent of the code under test where they can be: the control split is
re-drawn here from its stated definition, the written file is re-read with pandas (not the
gate's reader), and the unique exact-match rate is counted by brute force.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.attacks import AttackSettings, run_attacks, split_control
from privgate.core.exceptions import PolicyError

LIMITS = {"max_singling_out": 0.05, "max_linkability": 0.05, "max_inference": 0.1}
#: Released as they are in the weak release (only sex and race stay quasi-identifiers).
RAW = ("age", "marital-status", "education", "native-country", "workclass", "occupation")


def _weak_columns(adult) -> dict:
    columns = adult.policy.model_dump(mode="python")["columns"]
    for name in RAW:
        columns[name] = {**columns[name], "role": "insensitive", "hierarchy": None}
    return columns


def _stated_draw(n: int, fraction: float, seed: int) -> np.ndarray:
    """The held-out rows as core/attacks/_release.py's docstring states the draw."""
    held = np.zeros(n, dtype=bool)
    held[np.random.default_rng(seed).permutation(n)[: max(1, round(fraction * n))]] = True
    return held


def test_policy_attacks_section_is_validated(adult):
    policy = adult.policy.with_overrides(attacks={**LIMITS, "seed": 3})
    assert policy.attacks.limits() == LIMITS and policy.attacks.control_fraction == 0.2
    refusals = {
        "attacks.columns: 'name' is not a released column": {"columns": ["age", "name"]},
        "attacks.secrets: \\['age'\\] are not among attacks.columns": {
            "columns": ["sex", "race"],
            "secrets": ["age"],
        },
        "need at least two attacked columns": {"columns": ["sex"]},
        "attacks.max_singling_out: Input should be less than 1": {"max_singling_out": 1.0},
        "attacks.control_fraction: Input should be less than or equal to 0.5": {
            "control_fraction": 0.9
        },
        "attacks.max_singling_oot: unknown key": {"max_singling_oot": 0.1},
    }
    for message, section in refusals.items():
        with pytest.raises(PolicyError, match=message):
            adult.policy.with_overrides(attacks=section)


def _mst_policy(adult, attacks: dict):
    """Adult as an MST (DP synthetic) release, every categorical domain declared."""
    from privgate.core.policy import ReleasePolicy

    policy = adult.policy.model_dump(mode="python")
    del policy["privacy"], policy["algorithm"]
    policy["differential_privacy"] = {
        "method": "mst",
        "epsilon": 1.0,
        "delta": 1e-6,
        "budget": {"epsilon": 4.0, "delta": 1e-5},
    }
    policy["attacks"] = attacks
    for name in policy["columns"]:
        if name != "age":
            policy["columns"][name]["categories"] = sorted(set(adult.frame[name]))
    return ReleasePolicy.model_validate(policy)


def test_a_dp_policy_refuses_attack_limits_and_says_why(adult):
    with pytest.raises(ValueError, match="exact functions of the private records") as refused:
        _mst_policy(adult, {"max_singling_out": 0.05})
    assert "attacks.max_singling_out: a differentially private release cannot be blocked" in str(
        refused.value
    )
    assert "would break the ε guarantee" in str(refused.value)
    # Without limits the attacks run, owner-side; a release of noisy counts has no records.
    assert _mst_policy(adult, {}).attacks is not None
    from privgate.core.policy import load_policy

    dp = load_policy(Path(__file__).resolve().parents[3] / "policies" / "adult-dp.yaml")
    with pytest.raises(PolicyError, match="'dpheter' releases noisy counts, not records"):
        dp.with_overrides(attacks={})


def test_the_dp_control_split_is_one_stable(adult):
    """Neighbours D and D + r (r new, or a copy of a record of D) keep released parts that are
    equal or neighbours: the split judges each record on its own values, as the DP analysis
    needs (a permutation of len(D) rows would reshuffle everyone)."""
    dp = _mst_policy(adult, {"seed": 4})
    frame = adult.frame.iloc[:3000]
    base = split_control(frame, dp)
    assert 0.15 < base.facts["control_rows"] / 3000 < 0.25
    kept = Counter(map(tuple, base.kept.astype(str).to_numpy().tolist()))
    for extra in (frame.iloc[[17]], frame.iloc[[17]].assign(age=18)):
        neighbour = split_control(pd.concat([extra, frame], ignore_index=True), dp)
        grown = Counter(map(tuple, neighbour.kept.astype(str).to_numpy().tolist()))
        assert sum((grown - kept).values()) <= 1 and not kept - grown


def test_the_control_split_is_the_stated_draw_and_disjoint(adult):
    policy = adult.policy.with_overrides(attacks={"control_fraction": 0.1, "seed": 11})
    split = split_control(adult.frame, policy)
    held = _stated_draw(len(adult.frame), 0.1, 11)
    pd.testing.assert_frame_equal(split.control, adult.frame[held].reset_index(drop=True))
    pd.testing.assert_frame_equal(split.kept, adult.frame[~held].reset_index(drop=True))
    assert split.facts["control_rows"] == round(0.1 * len(adult.frame)) == held.sum()
    assert split.facts["published"] is False
    other = split_control(adult.frame, policy.with_overrides(**{"attacks.seed": 12}))
    assert not other.control.equals(split.control)
    with pytest.raises(PolicyError, match="too few records"):
        split_control(adult.frame.iloc[:1], policy)


@pytest.fixture(scope="module")
def releases(adult, tmp_path_factory):
    """A k=5 release of Adult within its attack limits and a weak one (2 of 8 quasi-identifiers
    generalized, the others released as they are), each staged and gated as the flow does."""
    out = tmp_path_factory.mktemp("attack-releases")
    made = {}
    cases = {
        "k5": {"attacks": {**LIMITS, "n_attacks": 200}},
        "weak": {
            "columns": _weak_columns(adult),
            "attacks": {"max_singling_out": 0.05, "n_attacks": 200, "seed": 1},
        },
    }
    for name, overrides in cases.items():
        policy = adult.policy.with_overrides(**overrides, **{"output.directory": str(out)})
        hierarchies = stages.load_hierarchies(policy)
        setup = SearchSetup.from_policy(policy, hierarchies)
        split = split_control(adult.frame, policy)
        [table] = stages.anonymize(split.kept, setup)
        staged, decision = stages.stage_and_verify(
            table, setup, policy, f"2026-11-24-{name}", len(split.kept), split
        )
        made[name] = (policy, hierarchies, split, staged, decision)
    return made


@pytest.mark.slow
def test_k_anonymous_release_within_its_attack_limits_passes(releases):
    *_, decision = releases["k5"]
    assert decision.passed, decision.reasons
    attacks = decision.measurements["attacks"]
    assert attacks["limits"] == LIMITS and all(c["held"] for c in attacks["checks"])
    for measure in ("singling_out", "linkability", "inference", "unique_exact_match"):
        low, high = attacks["risks"][measure]["ci"]
        assert 0 <= low <= attacks["risks"][measure]["value"] <= high <= 1
    assert attacks["details"]["control"]["control_rows"] == round(0.2 * 30162)
    # Generalized to classes of >= 5, no record unique in the input is published verbatim.
    assert attacks["unique_exact_match"]["matched"] == 0
    # ... and its interval starts at 0 exactly, so even a limit of 0 holds.
    assert attacks["unique_exact_match"]["ci"][0] == 0.0


@pytest.mark.slow
def test_weak_release_is_blocked_naming_the_attack_and_the_bound(releases):
    *_, decision = releases["weak"]
    assert not decision.passed
    [reason] = decision.reasons  # 5-anonymous over sex and race: only the attack blocks it
    risk = decision.measurements["attacks"]["risks"]["singling_out"]
    assert reason.startswith("attacks.max_singling_out = 0.05 exceeded: singling out risk")
    assert f"the lower bound {risk['ci'][0]:.3f} of its 95 % confidence interval" in reason
    assert risk["ci"][0] > 0.5
    assert decision.measurements["attacks"]["unique_exact_match"]["value"] > 0.9
    # What the blocked report and the run's artifacts show.
    from privgate.core.report import ReleaseReport, markdown_summary, render_html, summary_table

    report = ReleaseReport("adult", "2026-11-24-weak", "blocked", ["privacy"], decision.to_dict())
    low = f"{risk['ci'][0]:.4f}"
    assert f"attack: singling out risk {risk['value']:.4f} [{low}," in markdown_summary(report)
    assert "(limit 0.05 on the lower bound, holds no)" in markdown_summary(report)
    [row] = [r for r in summary_table(report) if r["measure"].startswith("singling out")]
    assert (row["section"], row["limit"], row["holds"]) == ("attacks", "0.0500", "no")
    html = render_html(report)
    section = html[html.index('<section id="attacks">') :]
    section = section[: section.index("</section>")]
    assert f"[{low}, " in section and '<span class="pill bad">fails</span>' in section


@pytest.mark.slow
@pytest.mark.parametrize("name", ["k5", "weak"])
def test_gate_numbers_equal_a_recomputation_from_the_written_file(releases, adult, name):
    policy, hierarchies, _, staged, decision = releases[name]
    spec = policy.attacks
    written = pd.read_csv(staged.release_file, dtype=str, keep_default_na=False)
    written = written.where(written != "", None)
    held = _stated_draw(len(adult.frame), spec.control_fraction, spec.seed)
    kept, control = adult.frame[~held], adult.frame[held]
    columns = policy.released_columns
    evidence = run_attacks(
        written,
        kept.reset_index(drop=True),
        control.reset_index(drop=True),
        columns,
        numeric=["age"],
        hierarchies={q: hierarchies[q] for q in policy.quasi_identifiers},
        settings=AttackSettings(
            n_attacks=spec.n_attacks, seed=spec.seed, secrets=("salary-class",)
        ),
    )
    gate = decision.measurements["attacks"]
    assert evidence.to_dict()["risks"] == gate["risks"]

    # Brute force: records unique in the kept input, as text, found verbatim in the file.
    def rows(frame):
        return [
            tuple("" if pd.isna(v) else str(v) for v in r)
            for r in frame[columns].itertuples(index=False)
        ]

    counts = Counter(rows(kept))
    published = set(rows(written.fillna("")))
    uniques = [r for r, c in counts.items() if c == 1]
    matched = sum(r in published for r in uniques)
    uem = gate["unique_exact_match"]
    assert (uem["unique_records"], uem["matched"]) == (len(uniques), matched)


def test_paths_without_a_control_split_refuse_an_attacks_policy(adult):
    """The Python API, `privgate anonymize` and the Dask path never draw the control records,
    so they refuse the policy rather than report PASSED without the attack criterion."""
    import privgate
    from privgate.core.anonymize import full_domain_setup
    from privgate.core.exceptions import AnonymizationError

    policy = adult.policy.with_overrides(attacks=LIMITS)
    with pytest.raises(PolicyError, match="the Python API does not hold out control records"):
        privgate.anonymize(adult.frame, policy)
    with pytest.raises(PolicyError, match="attacks: the Python API"):
        privgate.verify(adult.frame, policy)
    with pytest.raises(AnonymizationError, match="attacks is not available in the Dask path"):
        full_domain_setup(policy, "the Dask path")


def test_a_person_keyed_split_holds_out_whole_persons():
    """Several admissions per patient: a patient's admissions are all held out or all kept
    (otherwise the control would hold people the release describes)."""
    from privgate.core.hospital_data import generate_admissions
    from privgate.core.policy import load_policy

    hospital = Path(__file__).resolve().parents[3] / "policies" / "hospital.yaml"
    policy = load_policy(hospital).with_overrides(attacks={"control_fraction": 0.25, "seed": 9})
    frame = generate_admissions(800, seed=3)
    split = split_control(frame, policy)
    kept, held = set(split.kept["subject_id"]), set(split.control["subject_id"])
    assert not kept & held and kept | held == set(frame["subject_id"])
    assert len(held) == split.facts["control_persons"] == round(0.25 * 800)
    assert split.facts["unit"] == "persons" and len(frame) > 800
    assert len(split.kept) + len(split.control) == len(frame)


def test_the_control_split_is_part_of_the_cache_keys(adult):
    """A release made from other records is another result: the rank and anonymize tokens
    change with the split's settings (not with a limit), the ingest token does not."""
    from privgate.core.cache_keys import stage_tokens

    def tokens(**attacks):
        return stage_tokens(adult.policy.with_overrides(attacks=attacks), "sha")

    base = tokens(seed=1)
    assert tokens(seed=2).anonymize != base.anonymize and tokens(seed=2).rank != base.rank
    assert tokens(seed=1, control_fraction=0.3).anonymize != base.anonymize
    assert tokens(seed=1, control_fraction=0.3).ingest == base.ingest
    assert tokens(seed=1, max_singling_out=0.1).anonymize == base.anonymize  # a limit: no
    assert stage_tokens(adult.policy, "sha").anonymize != base.anonymize


@pytest.mark.slow
def test_a_release_the_attacks_cannot_read_is_blocked(releases, tmp_path):
    """Fail closed: a declared attack that cannot run on the written file blocks the release."""
    from privgate.core.gate import GateDecision

    policy, hierarchies, split, staged, _ = releases["k5"]
    written = pd.read_csv(staged.release_file, dtype=str, keep_default_na=False)
    passed = GateDecision(True, [], {"rows": len(written)})
    for name, tampered in (
        ("dropped", written.drop(columns=["occupation"])),
        ("unreadable", written.assign(age="young")),
    ):
        path = tmp_path / f"{name}.csv"
        tampered.to_csv(path, index=False)
        decision = stages.attack(path, passed, split, policy, hierarchies)
        assert not decision.passed
        [reason] = decision.reasons
        assert reason.startswith("attacks could not be run on the written release")
    assert (
        "['occupation']"
        in stages.attack(tmp_path / "dropped.csv", passed, split, policy, hierarchies).reasons[0]
    )


def test_the_inference_limit_holds_for_every_secret():
    """A secret attacked on few records has a wide interval (the worst by its upper bound);
    another, narrower, has a lower bound above the limit: the gate blocks on that one, and the
    evidence's inference risk (manifest, report) is that one too."""
    from privgate.core.attacks import AttackEvidence, AttackOutcome, check_attack_limits

    wide, narrow = AttackOutcome(10, 5, 0, 3), AttackOutcome(500, 200, 10, 50)
    assert wide.risk().high > narrow.risk().high and wide.risk().low < 0.1 < narrow.risk().low
    evidence = AttackEvidence(None, None, {"wide": wide, "narrow": narrow}, {})
    assert evidence.worst_secret() == "narrow" and evidence.risks()["inference"] == narrow.risk()
    reasons, [check] = check_attack_limits(evidence, {"max_inference": 0.1})
    assert check["held"] is False and check["measured"] == narrow.risk().to_dict()
    assert reasons[0].startswith("attacks.max_inference = 0.1 exceeded: inference of 'narrow'")


def test_the_dp_control_split_is_one_stable_on_parquet_input(adult, tmp_path):
    """Review finding F1: the coin hashed ``str`` cells, so one added record with a missing age
    turned the Parquet age column from int64 into float64 (``39`` -> ``39.0``) and moved about a
    third of the records across the split. The coin now reads each cell's dtype-free text."""
    from privgate.core.ingest import read_table
    from privgate.core.policy import InputSpec

    dp = _mst_policy(adult, {"seed": 4})
    frame = adult.frame.iloc[:3000].reset_index(drop=True)
    if not pd.api.types.is_integer_dtype(frame["age"]):
        frame = frame.astype({"age": "int64"})
    read = {}
    for name, table in (
        ("d", frame),
        ("d_prime", pd.concat([frame.iloc[[17]].assign(age=None), frame])),
    ):
        path = tmp_path / f"{name}.parquet"
        table.reset_index(drop=True).to_parquet(path)
        read[name] = read_table(InputSpec(path=path, format="parquet"))
    assert str(read["d"]["age"].dtype) != str(read["d_prime"]["age"].dtype)  # the trap

    def kept(table: pd.DataFrame) -> Counter:
        part = split_control(table, dp).kept.astype({"age": "float64"})
        return Counter(map(tuple, part.astype(str).to_numpy().tolist()))

    base, grown = kept(read["d"]), kept(read["d_prime"])
    assert sum((grown - base).values()) <= 1 and not base - grown
