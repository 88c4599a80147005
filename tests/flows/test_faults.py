"""No partial release survives a run killed at every stage boundary.

Each run dies by SIGKILL right after a stage (``ingest``, ``anonymize``, ``verify-and-gate``,
``report``) or on either side of the atomic rename that publishes; afterwards the release folder
holds no partial release, the dead run's cached stages are kept for its retry, and the next run
leaves no ``.staging-*`` behind and publishes exactly once. The killed runs, and the demo input
(where the fault, not the data, is the point), are in ``tests/fault_runs.py``. The other faults
(around the history record, the server stopping, a full disk) are in
``test_faults_other.py``, so that two pytest-xdist workers can share them.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from fault_runs import (
    DATASET,
    dataset_dir,
    parameters_for,
    releases,
    run_killed_at,
    working_folders,
)

from privgate.flows.release import release_flow

#: The stage boundaries of a release (task names), and the two sides of the atomic rename.
BOUNDARIES = [
    "ingest",
    "anonymize",
    "verify-and-gate",
    "report",
    "publish:before-rename",
    "publish:after-rename",
]


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_a_run_killed_at_a_stage_boundary_leaves_no_partial_release(demo_csv, tmp_path, boundary):
    from privgate.core.retention import dataset_results_dir

    day = BOUNDARIES.index(boundary) + 1
    output = tmp_path / "releases"
    parameters = parameters_for(demo_csv, output, day)
    exitcode = run_killed_at(boundary, parameters)
    assert exitcode == -signal.SIGKILL, f"the run was not killed at {boundary}"
    # What the crash left: at most a complete release, never a partial one.
    published = releases(output)
    assert published == ([] if boundary != "publish:after-rename" else published)
    for release in published:
        assert {p.name for p in release.iterdir()} >= {"release.csv", "manifest.json"}
    if boundary in ("verify-and-gate", "report", "publish:before-rename"):
        assert any(n.startswith(".staging-") for n in working_folders(output)), boundary
    # The dead run's cached stages are in this test's private data directory, for its retry.
    cached = dataset_results_dir(DATASET)
    assert any(p.is_file() for p in cached.rglob("*")), boundary

    # The next run sweeps what the dead process left, and publishes exactly once.
    outcome = release_flow(parameters)
    assert outcome["published"]
    (release,) = releases(output)
    assert Path(outcome["path"]) == release
    assert working_folders(output) == []
    assert [p.name for p in dataset_dir(output).iterdir()] == [release.name]
