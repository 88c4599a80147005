"""The release history store: idempotent records, refusals, owner-only files, PostgreSQL."""

from __future__ import annotations

import stat

import pytest

from privgate.core.exceptions import HistoryError
from privgate.core.history import (
    ReleaseHistory,
    check_cross_release,
    configured_history_url,
    release_snapshot,
)


def _record(history: ReleaseHistory, release_id: str, people, classes, dataset="adult") -> bool:
    income = ["<=50K" if i % 2 else ">50K" for i in range(len(people))]
    snapshot = release_snapshot(release_id, people, classes, {"income": income})
    labels = {c: [f"group-{c}", "*"] for c in set(classes)}
    return history.record(
        dataset,
        snapshot,
        key="person_id",
        class_labels=labels,
        checks={"min_candidates": 2},
        path=f"/releases/{dataset}/{release_id}",
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def history(request):
    url = None if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    store = ReleaseHistory(url)
    yield store
    for dataset in store.datasets():
        for release in store.releases(dataset):
            store.forget(dataset, release.release_id, force=True)
    store.close()


def test_records_are_idempotent_and_read_back_for_the_criterion(history):
    assert _record(history, "r1", ["a", "b", "c", "d"], [0, 0, 1, 1])
    assert not _record(history, "r1", ["a", "b", "c", "d"], [0, 0, 1, 1])  # a retry: no twice
    assert _record(history, "r2", ["a", "c", "b", "d"], [0, 0, 1, 1])
    past = history.past_releases("adult")
    assert [p.release_id for p in past] == ["r1", "r2"]
    assert past[0].membership.to_dict() == {"a": 0, "b": 0, "c": 1, "d": 1}
    assert past[0].columns == ("income",)
    assert past[0].records[0] == {(">50K",): 1, ("<=50K",): 1}
    result = check_cross_release(past[1], past[:1], k=2, l_required={"income": 2})
    # Read back, the same verdict as on the snapshots themselves.
    income = ["<=50K" if i % 2 else ">50K" for i in range(4)]
    direct = check_cross_release(
        release_snapshot("r2", ["a", "c", "b", "d"], [0, 0, 1, 1], {"income": income}),
        [release_snapshot("r1", ["a", "b", "c", "d"], [0, 0, 1, 1], {"income": income})],
        k=2,
        l_required={"income": 2},
    )
    assert result.candidates.to_dict() == direct.candidates.to_dict()
    listed = history.releases("adult")
    assert [(r.release_id, r.people, r.classes) for r in listed] == [("r1", 4, 2), ("r2", 4, 2)]
    assert "4 people in 2 classes" in listed[0].describe()


def test_forgetting_a_recorded_release_needs_force(history):
    _record(history, "r1", ["a", "b"], [0, 0])
    with pytest.raises(HistoryError, match="only with --force"):
        history.forget("adult", "r1")
    assert [r.release_id for r in history.releases("adult")] == ["r1"]
    history.forget("adult", "r1", force=True)
    assert history.releases("adult") == [] and history.past_releases("adult") == []
    with pytest.raises(HistoryError, match="not in the history"):
        history.forget("adult", "r1", force=True)


def test_the_default_history_is_an_owner_only_file_in_the_data_directory(_private_data_dir):
    url = configured_history_url()
    assert url == f"sqlite:///{_private_data_dir / 'release-history.sqlite'}"
    with ReleaseHistory() as history:
        _record(history, "r1", ["a", "b"], [0, 0])
    assert stat.S_IMODE((_private_data_dir / "release-history.sqlite").stat().st_mode) == 0o600


def test_the_history_command_lists_and_refuses_to_forget_without_force(capsys):
    from privgate.flows.cli import main

    assert main(["history", "adult"]) == 2
    assert "no release history at" in capsys.readouterr().err
    with ReleaseHistory() as history:
        _record(history, "2026-12-01-aaa", ["a", "b", "c"], [0, 0, 0])
    assert main(["history", "adult"]) == 0
    shown = capsys.readouterr().out
    assert (
        "1 release(s)" in shown and "2026-12-01-aaa" in shown and "3 people in 1 classes" in shown
    )
    assert main(["history", "adult", "--forget", "2026-12-01-aaa"]) == 2
    assert "only with --force" in capsys.readouterr().err
    assert main(["history", "adult", "--forget", "2026-12-01-aaa", "--force"]) == 0
    assert main(["history", "adult"]) == 0
    assert "no release recorded" in capsys.readouterr().out


def test_a_release_read_back_counts_its_candidates_in_people(history):
    """Review residual of F2/F7: Monday (recorded) has the target A's three admissions, B and
    C in one class; Tuesday leaves A the values {flu, hiv}. In Monday's class four records but
    only two people (A, B) can be A's: below k = 3. Read back without who published which
    values, the history counted four records and Tuesday passed."""
    from sqlalchemy import text

    monday = release_snapshot(
        "mon", ["A", "A", "A", "B", "C"], [0] * 5, {"d": ["flu", "flu", "flu", "hiv", "cold"]}
    )
    tuesday = release_snapshot("tue", list("APQR"), [0] * 4, {"d": ["flu", "hiv", "flu", "y"]})
    history.record("hospital", monday, key="patient", class_labels={0: ["*"]}, checks={})
    [past] = history.past_releases("hospital")
    assert past.owners == {0: {("flu",): {"A"}, ("hiv",): {"B"}, ("cold",): {"C"}}}
    assert past.records == monday.records
    result = check_cross_release(tuesday, [past], k=3, l_required={"d": 2})
    assert result.candidates["A"] == 2 and result.exposed_k == ["A"]
    assert result.candidates.to_dict() == (
        check_cross_release(tuesday, [monday], k=3, l_required={"d": 2}).candidates.to_dict()
    )
    # A release recorded before the history kept who published what is counted in records.
    with history._transaction(write=True) as connection:
        connection.execute(text("DELETE FROM privgate_history_owners"))
    [old] = history.past_releases("hospital")
    assert old.owners is None
    assert check_cross_release(tuesday, [old], k=3, l_required={"d": 2}).candidates["A"] == 3
