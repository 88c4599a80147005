"""Nightly releases checked against the release history, through the release flow (issue 20).

The hospital example with ``history: {check: true, key: subject_id}``: each night's release is
searched with a margin, loses the patients its combination with the earlier releases would
expose, is re-checked on the written file by the gate and is recorded in the history in the
same transaction as its publication. An independent re-check combines every recorded release
the way the attacker would; a rerun records nothing twice; a release the criterion cannot save
within the suppression limit is blocked and not recorded; a failed history write takes the
publication back.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from privgate.core.history import ReleaseHistory, exposure, history_exists
from privgate.core.hospital_data import generate_admissions

HOSPITAL = Path(__file__).resolve().parents[2] / "policies" / "hospital.yaml"
HISTORY = {"history.check": True, "history.key": "subject_id"}


def _run(tmp_path: Path, rows: pd.DataFrame, day: int, **overrides):
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.release import release_flow

    source = tmp_path / f"admissions-{day}.csv"
    rows.to_csv(source, index=False)
    return release_flow(
        ReleaseParameters(
            policy_path=str(HOSPITAL),
            release_date=date(2026, 11, day),
            data_docs=False,  # the history is the point here, not the releases' HTML pages
            overrides={
                "input.path": str(source),
                "output.directory": str(tmp_path / "releases"),
                **HISTORY,
                **overrides,
            },
        ),
        return_state=True,
    )


def _recorded() -> list:
    with ReleaseHistory() as history:
        return history.releases("hospital-admissions")


def _night_two(night_one: pd.DataFrame) -> pd.DataFrame:
    """30 patients leave, 30 arrive (new ids), 4 come back with another diagnosis (a
    correction: intersecting their two classes can single out their value), the rest come
    back unchanged."""
    patients = night_one["subject_id"].drop_duplicates()
    leaving = patients.iloc[:30]
    staying = night_one[~night_one["subject_id"].isin(leaving)].copy()
    corrected = staying["subject_id"].isin(patients.iloc[30:34])
    staying.loc[corrected, "diagnosis"] = "Appendicitis"
    arriving = generate_admissions(30, seed=77)
    arriving["subject_id"] = "N" + arriving["subject_id"].astype(str)
    arriving["admission_id"] = "N" + arriving["admission_id"].astype(str)
    return pd.concat([staying, arriving], ignore_index=True)


def test_nightly_releases_are_checked_against_and_recorded_in_the_history(tmp_path):
    night_one = generate_admissions(500, seed=31)
    first = _run(tmp_path, night_one, 1)
    assert first.is_completed(), first.message
    [recorded] = _recorded()
    manifest = json.loads((Path(first.result()["path"]) / "manifest.json").read_text())
    checks = manifest["gate"]["measurements"]["history"]
    assert checks["passed"] is True and checks["past_releases"] == 0
    assert recorded.people == night_one["subject_id"].nunique() - manifest["gate"][
        "measurements"
    ].get("suppressed", 0)
    assert "S000" not in (Path(first.result()["path"]) / "release.csv").read_text()
    report = (Path(first.result()["path"]) / "report.html").read_text()
    assert "Earlier releases</h2>" in report and "exposed below k" in report
    assert "S000" not in report  # who went where stays in the private history

    second = _run(tmp_path, _night_two(night_one), 2)
    assert second.is_completed(), second.message
    manifest = json.loads((Path(second.result()["path"]) / "manifest.json").read_text())
    assert manifest["gate"]["measurements"]["history"]["past_releases"] == 1
    assert "removed_by_history" in manifest["metrics"]  # the protection ran (its removals:
    # tests/core/history/test_release_protection.py)
    assert len(_recorded()) == 2

    # The attacker's view, recomputed from the history: nobody below k or l.
    with ReleaseHistory() as history:
        past = history.past_releases("hospital-admissions")
    attack = exposure(past, k=5, l_required={"diagnosis": 2})
    assert not attack.exposed_k and not attack.exposed_l
    assert attack.measurements["people_in_several_releases"] > 400

    # A rerun of the same night publishes nothing new and records nothing twice.
    again = _run(tmp_path, _night_two(night_one), 2)
    assert again.is_completed(), again.message
    assert again.result()["already_published_by"]
    assert len(_recorded()) == 2


def test_a_release_the_history_would_expose_is_blocked_and_not_recorded(tmp_path):
    """Night 2 gives every returning patient another diagnosis: intersecting the two nights'
    classes leaves many with fewer than l possible values, more than the suppression limit can
    remove (no margin, no suppression allowed), so the gate blocks and nothing is recorded."""
    night_one = generate_admissions(400, seed=41)
    assert _run(tmp_path, night_one, 1, **{"history.margin": 0.0}).is_completed()
    changed = night_one.copy()
    diagnoses = sorted(changed["diagnosis"].unique())
    shift = {d: diagnoses[(i + 3) % len(diagnoses)] for i, d in enumerate(diagnoses)}
    changed["diagnosis"] = changed["diagnosis"].map(shift)
    blocked = _run(
        tmp_path, changed, 2, **{"history.margin": 0.0, "privacy.suppression_limit": 0.0}
    )
    assert blocked.is_failed()
    assert "release history: combined with the earlier releases" in blocked.message
    assert len(_recorded()) == 1
    assert len(list((tmp_path / "releases" / "hospital-admissions").glob("*/manifest.json"))) == 1


def test_a_failed_history_write_takes_the_publication_back(tmp_path, monkeypatch):
    from privgate.core.exceptions import HistoryError

    def unreachable(*args, **kwargs):
        raise HistoryError("the release history is unreachable (test)")

    monkeypatch.setattr(ReleaseHistory, "record", unreachable)
    state = _run(tmp_path, generate_admissions(300, seed=51), 1)
    assert state.is_failed()
    assert not list((tmp_path / "releases").rglob("release.csv"))
    assert not history_exists() or not _recorded()


def test_a_retry_records_only_the_release_that_was_published(tmp_path, monkeypatch):
    """Review finding F3: night 2 is published, then the run dies before the history write
    (forgotten here, as a crash leaves it). Its retry finds the release published and checks a
    table of its own, which differs from the published file when the history gained a release
    meanwhile (here: one that pins three patients, so the retry's protection removes them).
    Recording the retry's classes would tell every later check that those three patients are
    not in a file that holds them: the record is refused instead, and the run says why."""
    from privgate.core import stages
    from privgate.core.history import release_snapshot, row_keys_dir
    from privgate.flows.cli import main
    from privgate.tasks import history as history_tasks

    night_one = generate_admissions(400, seed=61)
    first = _run(tmp_path, night_one, 1)
    assert first.is_completed(), first.message
    night_two = _night_two(night_one)
    # The run dies between the publishing rename and the history write: the release is out,
    # its row keys (written before the rename) are kept, nothing is recorded.
    with monkeypatch.context() as crash:
        crash.setattr(history_tasks, "discard_row_keys", lambda *args: 0)
        published = _run(tmp_path, night_two, 2)
    assert published.is_completed(), published.message
    folder = Path(published.result()["path"])
    with ReleaseHistory() as history:
        as_published = history.past_releases("hospital-admissions")[-1]
        history.forget("hospital-admissions", folder.name, force=True)
    assert len(_recorded()) == 1
    [kept] = row_keys_dir("hospital-admissions").glob(f"{folder.name}.*.json")

    protect = stages.protect_against_history

    def with_a_release_recorded_meanwhile(table, policy, past, release_id):
        pinned = list(dict.fromkeys(table.history_keys.tolist()))[:3]
        between = release_snapshot("between", pinned, [0] * 3, {"diagnosis": ["Unheard-of"] * 3})
        meanwhile = past.copy()  # the run's folded history, and one more release
        meanwhile.add(between)
        return protect(table, policy, meanwhile, release_id)

    monkeypatch.setattr(stages, "protect_against_history", with_a_release_recorded_meanwhile)
    retry = _run(tmp_path, night_two, 2)
    assert retry.is_failed()
    assert "is not the release this run checked" in retry.message
    assert [r.release_id for r in _recorded()] == [Path(first.result()["path"]).name]
    assert (folder / "release.csv").exists()  # published by the first run: left in place
    assert "privgate history hospital-admissions --record-published" in retry.message

    # The operator's recovery: record the published file with the row keys kept for it.
    written_by_retry = [
        p for p in row_keys_dir("hospital-admissions").glob(f"{folder.name}.*.json") if p != kept
    ]
    assert written_by_retry  # the retry's own (staged, never published) file's row keys
    command = ["history", "hospital-admissions", "--record-published", str(folder)]
    assert main([*command, "--row-keys", str(written_by_retry[0])]) == 2  # another file's
    assert len(_recorded()) == 1
    assert main(command) == 0
    recorded = _recorded()
    assert [r.release_id for r in recorded][-1] == folder.name
    with ReleaseHistory() as history:
        recovered = history.past_releases("hospital-admissions")[-1]
    assert recovered.release_id == folder.name
    # Exactly who the published file holds, in which class, with which values: the classes
    # are numbered in the file's order by both, so the records compare as they are.
    assert set(recovered.membership.items()) == set(as_published.membership.items())
    assert recovered.records == as_published.records and recovered.owners == as_published.owners
    assert not list(row_keys_dir("hospital-admissions").glob(f"{folder.name}.*.json"))
    assert main(command) == 0  # already recorded: nothing twice
    assert len(_recorded()) == 2


@pytest.mark.parametrize("key", ["admission_id"])
def test_the_history_follows_the_person_key(key):
    from privgate.core.exceptions import PolicyError
    from privgate.core.policy import load_policy

    with pytest.raises(PolicyError, match="history.key: with privacy.person_key 'subject_id'"):
        load_policy(HOSPITAL).with_overrides(**{"history.check": True, "history.key": key})
