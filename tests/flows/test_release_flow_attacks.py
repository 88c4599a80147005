"""The release flow with an ``attacks`` section, on Adult: the attack evidence in the manifest
and the report of a published release, and a weak release blocked by its attack limit. A DP
release's attack evidence (owner-side only): ``test_dp_synthetic_release.py``."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
from adult_reference import ADULT_POLICY

from privgate.core.attacks import AttackSettings, run_attacks
from privgate.core.exceptions import GateBlockedError

LIMITS = {"max_singling_out": 0.05, "max_linkability": 0.05, "max_inference": 0.1}


def _run(tmp_path: Path, overrides: dict):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    return release_flow(
        ReleaseParameters(
            policy_path=str(ADULT_POLICY),
            release_date=date(2026, 11, 24),
            overrides={"output.directory": str(tmp_path / "releases"), **overrides},
        ),
        return_state=True,
    )


def test_attack_evidence_is_published_and_a_weak_release_blocked(
    prefect_harness, shared_data, tmp_path, adult
):
    shared_data("arx/adult.csv")
    state = _run(tmp_path, {"attacks": {**LIMITS, "n_attacks": 200, "seed": 5}})
    assert state.is_completed(), state.message
    folder = Path(state.result()["path"])
    manifest = json.loads((folder / "manifest.json").read_text())
    attacks = manifest["attacks"]
    control = attacks["control"]
    assert control["control_rows"] == round(0.2 * 30162) and control["published"] is False
    assert manifest["input"]["rows"] == 30162
    assert manifest["input"]["released_from_rows"] == 30162 - control["control_rows"]
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert len(release) == manifest["output"]["rows"] <= control["released_from_rows"]
    assert attacks["limits"] == LIMITS and all(c["held"] for c in attacks["checks"])
    for measure in ("singling_out", "linkability", "inference", "unique_exact_match"):
        risk = attacks["risks"][measure]
        assert 0 <= risk["ci"][0] <= risk["value"] <= risk["ci"][1] <= 1
    assert manifest["gate"]["measurements"]["attacks"]["risks"] == attacks["risks"]
    # The manifest's numbers again, from the published file and the stated draw alone.
    held = np.zeros(30162, dtype=bool)
    held[np.random.default_rng(5).permutation(30162)[: round(0.2 * 30162)]] = True
    written = release.where(release != "", None)
    evidence = run_attacks(
        written,
        adult.frame[~held].reset_index(drop=True),
        adult.frame[held].reset_index(drop=True),
        list(written.columns),
        numeric=["age"],
        hierarchies=adult.hierarchies,
        settings=AttackSettings(n_attacks=200, seed=5, secrets=("salary-class",)),
    )
    assert evidence.to_dict()["risks"] == attacks["risks"]
    report = (folder / "report.html").read_text()
    assert '<section id="attacks"><h2>Attacks on the release</h2>' in report
    assert '<svg class="plot"' in report and 'aria-label="attack risks"' in report
    assert f"{control['control_rows']:,} records of the input" in report

    # Sex and race only generalized, every other column released as it is: 5-anonymous over
    # those two, and singled out almost every time.
    raw = ("age", "marital-status", "education", "native-country", "workclass", "occupation")
    columns = {f"columns.{name}": {"role": "insensitive"} for name in raw}
    columns["columns.age"]["type"] = "integer"
    weak = {**columns, "attacks": {"max_singling_out": 0.05, "n_attacks": 200}}
    state = _run(tmp_path, weak)
    assert state.is_failed()
    refusal = state.result(raise_on_failure=False)
    assert isinstance(refusal, GateBlockedError)
    assert "attacks.max_singling_out = 0.05 exceeded: singling out risk" in state.message
    assert "lower bound" in state.message
    [reason] = refusal.decision.reasons
    blocked = Path(state.message.rsplit("; report: ", 1)[1])
    assert 'id="attacks"' in blocked.read_text()
    assert len(list((tmp_path / "releases" / "adult").glob("2026-*"))) == 1  # the first only
