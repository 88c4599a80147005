"""Ranking-based releases through the whole flow: RFKA and tiered (RFK-anonymity) on Adult.

The ranking stage runs inside the flow (a small forest keeps the test fast); the releases go
through the same gate, report and manifest as any other, and are cross-checked with pycanon.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from pycanon import anonymity

from privgate.core.exceptions import GateBlockedError
from privgate.core.policy import load_policy

REPO = Path(__file__).resolve().parents[2]
RELEASE_DATE = date(2026, 11, 22)
#: Small forests on a sample: the ranking is exercised, not benchmarked.
FAST_RANKING = {"target": "salary-class", "n_estimators": 25, "sample_size": 4000, "tiers": 5}


def _run(policy: str, tmp_path: Path, overrides: dict):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    return release_flow(
        ReleaseParameters(
            policy_path=str(REPO / "policies" / policy),
            release_date=RELEASE_DATE,
            # This file checks the releases; their HTML Data Docs are checked where they are
            # written (tests/tasks/test_expectation_tasks.py, test_release_flow.py, ...).
            data_docs=False,
            overrides={"output.directory": str(tmp_path / "releases"), **overrides},
        )
    )


def _read(folder: Path) -> tuple[pd.DataFrame, dict]:
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    return release, json.loads((folder / "manifest.json").read_text())


def test_rfka_release_keeps_important_attributes_and_is_k_anonymous(
    prefect_harness, shared_data, tmp_path
):
    adult_csv = shared_data("arx/adult.csv")
    original = pd.read_csv(adult_csv, sep=";", dtype=str, keep_default_na=False)
    qis = load_policy(REPO / "policies" / "adult-rfka.yaml").quasi_identifiers
    outcome = _run("adult-rfka.yaml", tmp_path, {"ranking": FAST_RANKING})
    release, manifest = _read(Path(outcome["path"]))

    ranking = manifest["ranking"]
    assert set(ranking["importance"]) == set(qis)
    kept = manifest["metrics"]["search_kept"]
    suppressed = manifest["metrics"]["search_suppressed_attributes"]
    assert kept and set(kept) | set(suppressed) == set(qis)
    # the most important attribute alone is 5-anonymous on Adult, so RFKA keeps it
    assert kept[0] == max(ranking["importance"], key=ranking["importance"].get)
    for column in suppressed:
        assert set(release[column]) == {"*"}
    for column in kept:  # kept attributes are released exactly as they are
        assert sorted(release[column]) == sorted(original[column])
    assert anonymity.k_anonymity(release, qis) >= 5
    assert len(release) == len(original)  # RFKA suppresses attributes, never records
    assert manifest["gate"]["passed"]
    assert manifest["k_anonymity_covers"] == qis
    # --no-data-docs: both suites ran on this release and their results are published,
    # without the HTML pages
    folder = Path(outcome["path"])
    expectations = manifest["expectations"]
    assert expectations["release"]["success"]
    assert expectations["data_docs"].startswith("not built")  # said, not just missing
    assert (folder / "expectations.json").is_file() and not (folder / "data_docs").exists()


def test_tiered_releases_state_their_coverage_and_hold_on_it(
    prefect_harness, shared_data, tmp_path
):
    shared_data("arx/adult.csv")
    outcome = _run("adult-tiered.yaml", tmp_path, {"ranking": FAST_RANKING})

    tiers = {t["tier"]: t["covers"] for t in outcome["tiers"]}
    assert sorted(tiers) == [1, 2, 3, 4, 5]
    for e in range(1, 5):  # each tier adds attributes to the previous one's
        assert set(tiers[e]) < set(tiers[e + 1])
    published = sorted(Path(r["path"]) for r in outcome["releases"])
    assert [p.name[-3:] for p in published] == ["-e3", "-e4", "-e5"]
    qis = load_policy(REPO / "policies" / "adult-tiered.yaml").quasi_identifiers
    for folder in published:
        tier = int(folder.name[-1])
        release, manifest = _read(folder)
        assert manifest["tier"] == tier
        assert sorted(manifest["k_anonymity_covers"]) == sorted(tiers[tier])
        gate = manifest["gate"]["measurements"]
        assert sorted(gate["covered_quasi_identifiers"]) == sorted(tiers[tier])
        assert gate["narrower_coverage_accepted"] is (tier < 5)
        assert anonymity.k_anonymity(release, tiers[tier]) >= 5
        report = (folder / "report.html").read_text()
        assert "Sensitivity ranking" in report and "covered by k-anonymity" in report
        assert f"tiered release E = {tier}" in report
        if tier < 5:
            # the release really is narrower: over every QI it is not 5-anonymous
            assert anonymity.k_anonymity(release, qis) < 5
    assert sorted(tiers[5]) == sorted(qis)


def test_narrower_tier_is_blocked_unless_the_policy_accepts_it(
    prefect_harness, shared_data, tmp_path
):
    shared_data("arx/adult.csv")
    algorithm = {"name": "tiered", "release_tiers": [3]}
    with pytest.raises(GateBlockedError, match="accept_narrower_coverage"):
        _run("adult-tiered.yaml", tmp_path, {"ranking": FAST_RANKING, "algorithm": algorithm})
    releases = tmp_path / "releases" / "adult-tiered"
    assert not list(releases.glob("*/manifest.json"))
    assert not list(releases.glob(".staging-*"))


def test_bank_marketing_tiered_releases(prefect_harness, shared_data, tmp_path):
    shared_data("bank_marketing/kaggle-11162/bank.csv")
    ranking = {"target": "deposit", "n_estimators": 25, "tiers": 5}
    outcome = _run("bank-tiered.yaml", tmp_path, {"ranking": ranking})
    qis = load_policy(REPO / "policies" / "bank-tiered.yaml").quasi_identifiers
    tiers = {t["tier"]: t["covers"] for t in outcome["tiers"]}
    assert sorted(tiers[max(tiers)]) == sorted(qis)
    for release in outcome["releases"]:
        folder = Path(release["path"])
        frame, manifest = _read(folder)
        covered = manifest["k_anonymity_covers"]
        assert anonymity.k_anonymity(frame, covered) >= 5
        assert len(frame) >= 11162 - int(0.02 * 11162)


def test_tiered_run_publishes_all_requested_tiers_or_none(
    prefect_harness, shared_data, tmp_path, monkeypatch
):
    """The last tier's publication fails: the tiers already renamed into place are taken out
    again (one Prefect transaction), so no reader ever sees part of the run."""
    shared_data("arx/adult.csv")
    from privgate.tasks import publish as tasks_publish

    real_publish = tasks_publish.publish

    def publish_fails_for_e5(staged, manifest):
        if staged.release_id.endswith("-e5"):
            raise OSError("disk full")
        return real_publish(staged, manifest)

    monkeypatch.setattr(tasks_publish, "publish", publish_fails_for_e5)
    with pytest.raises(OSError, match="disk full"):
        _run("adult-tiered.yaml", tmp_path, {"ranking": FAST_RANKING})
    releases = tmp_path / "releases" / "adult-tiered"
    assert not list(releases.glob("*/manifest.json"))  # e3 and e4 were rolled back
    assert not list(releases.glob(".staging-*")) and not list(releases.glob(".rolled-back-*"))
