"""publish_task in a transaction that rolls back after losing the publish race.

Two runs of one release id can both pass the check for an earlier release; the second one's
rename then fails and :func:`privgate.core.publish.publish` returns the first run's folder. If
the second run's transaction rolls back afterwards (a later task in it fails: the history
record, the DP ledger's publish mark), its rollback must not take the first run's release out.
"""

from __future__ import annotations

import pandas as pd
import pytest
from prefect import flow, task
from prefect.transactions import transaction

from privgate.core.publish import stage_release
from privgate.tasks import publish as publish_tasks

RELEASE_ID = "2024-05-01-0123456789ab"
ROWS = {"rows": 2}


@task
def _fail_after_publishing() -> None:
    raise RuntimeError("the next task of the transaction fails")


@flow
def _publish_then_fail(staged, manifest) -> None:
    with transaction():
        publish_tasks.publish_task(staged, manifest)
        _fail_after_publishing()


@pytest.mark.parametrize(
    "manifest",
    [
        {
            "release_id": RELEASE_ID,
            "run_id": "run-b",
            "output": ROWS,
        },  # a k-anonymous release's manifest
        {"release_id": RELEASE_ID, "output": ROWS},  # a DP release's manifest: it has no run id
    ],
    ids=["k-anonymous", "dp"],
)
def test_a_run_losing_the_race_does_not_roll_back_the_other_runs_release(
    tmp_path, monkeypatch, manifest
):
    table = pd.DataFrame({"age": ["30-39", "30-39"]})
    theirs = stage_release(table, tmp_path, "toy", RELEASE_ID)
    ours = stage_release(table, tmp_path, "toy", RELEASE_ID)
    real_publish = publish_tasks.publish

    def publish_after_the_other_run(staged, written_manifest):
        # the concurrent run's rename lands between our check and our rename
        real_publish(theirs, {"release_id": RELEASE_ID, "run_id": "run-a", "output": ROWS})
        return real_publish(staged, written_manifest)

    monkeypatch.setattr(publish_tasks, "publish", publish_after_the_other_run)
    with pytest.raises(RuntimeError, match="next task"):
        _publish_then_fail(ours, manifest)
    final = tmp_path / "toy" / RELEASE_ID
    assert (final / "manifest.json").is_file(), "the other run's release was rolled back"
    assert '"run-a"' in (final / "manifest.json").read_text()


def test_a_run_that_published_rolls_its_own_release_back(tmp_path):
    """The counterpart: this run's own rename is undone when its transaction rolls back (with
    or without a run id in its manifest)."""
    table = pd.DataFrame({"age": ["30-39", "30-39"]})
    for manifest in (
        {"release_id": RELEASE_ID, "run_id": "run-b", "output": ROWS},
        {"release_id": RELEASE_ID, "output": ROWS},
    ):
        ours = stage_release(table, tmp_path, "toy", RELEASE_ID)
        with pytest.raises(RuntimeError, match="next task"):
            _publish_then_fail(ours, manifest)
        assert not (tmp_path / "toy" / RELEASE_ID).exists(), manifest
