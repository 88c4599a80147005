"""The dask release flow: on its own local cluster and on an existing scheduler.

The flow's own cluster is started by :func:`test_scale_flow_on_a_local_cluster` only; the
other runs on worker processes go to one module cluster (:func:`scheduler`), as a user's runs
go to a scheduler that is already up: a cluster's start and its workers' imports of pandas,
pyarrow and privgate were paid once per test.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from task_runs import final_task_states

from privgate.core.policy import load_policy
from privgate.flows.scale import run_scale_release

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def adult_policy_path(shared_data) -> str:
    shared_data("arx/adult.csv")
    return str(ROOT / "policies" / "adult.yaml")


@pytest.fixture(scope="module")
def scheduler():
    """An existing scheduler with two worker processes (one thread, 1 GiB each): its address.
    The runs sent to it write to folders of their own and keep nothing on the workers."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit="1GiB",
        dashboard_address=None,
    ) as cluster:
        yield cluster.scheduler_address


def _check_adult_release(result: dict, output: Path, policy_path: str) -> None:
    assert result["passed"], result["gate"]
    assert result["levels"] == {
        "sex": 0,
        "age": 3,
        "race": 0,
        "marital-status": 1,
        "education": 2,
        "native-country": 1,
        "workclass": 1,
        "occupation": 2,
    }
    assert result["suppressed"] == 552
    release = pd.read_parquet(output)
    assert len(release) == 30162 - 552
    assert list(release.columns) == load_policy(policy_path).released_columns


def test_scale_flow_on_a_local_cluster(prefect_harness, adult_policy_path, tmp_path):
    output = tmp_path / "release"
    result = run_scale_release(adult_policy_path, str(output), n_workers=2, blocksize="1MB")
    _check_adult_release(result, output, adult_policy_path)


def test_scale_flow_reads_a_folder_of_parquet_parts(
    prefect_harness, adult_policy_path, shared_data, scheduler, tmp_path
):
    """``--input FOLDER`` of Parquet part files (Adult split in three) is read as Parquet,
    one partition per part: the CSV file's release, written as one part per input part.
    (On the module's scheduler: how the parts are read does not depend on who started the
    cluster; the flow's own cluster is the test above.)"""
    adult = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype="str", keep_default_na=False)
    parts = tmp_path / "parts"
    parts.mkdir()
    for number, start in enumerate(range(0, len(adult), 11_000)):
        chunk = adult.iloc[start : start + 11_000].astype("category")
        chunk.to_parquet(parts / f"part-{number:05d}.parquet", index=False)
    output = tmp_path / "release"
    result = run_scale_release(
        adult_policy_path, str(output), input_path=str(parts), scheduler_address=scheduler
    )
    _check_adult_release(result, output, adult_policy_path)
    assert len(list(output.glob("*.parquet"))) == 3


def test_scale_flow_on_an_existing_scheduler(
    prefect_harness, adult_policy_path, scheduler, tmp_path
):
    output = tmp_path / "release"
    result = run_scale_release(
        adult_policy_path, str(output), scheduler_address=scheduler, blocksize="1MB"
    )
    _check_adult_release(result, output, adult_policy_path)


def test_a_blocked_scale_release_fails_its_gate_task_the_run_and_the_cli(
    task_run_records, adult_policy_path, tmp_path, monkeypatch, capfd
):
    """A gate stricter than the search (k = 10^6 at the gate only): verify-and-gate fails, the
    flow run is Failed, nothing is published nor left in staging, and the CLI exits 3. The
    cluster runs in this process (threads), so the stricter gate reaches its tasks."""
    distributed = pytest.importorskip("distributed")

    from privgate.core.exceptions import GateBlockedError
    from privgate.core.privacy import KAnonymity
    from privgate.core.scale import verify_parquet_release
    from privgate.flows import scale
    from privgate.tasks import scale as scale_tasks

    def strict_gate(staging, setup, input_rows, reference=None, expected_rows=None):
        return verify_parquet_release(staging, setup.quasi_identifiers, [KAnonymity(k=10**6)])

    monkeypatch.setattr(scale_tasks, "verify_stage", strict_gate)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        runner = scale.make_task_runner(cluster.scheduler_address)
        flow = scale.scale_release_flow.with_options(task_runner=runner)
        state = flow(adult_policy_path, str(tmp_path / "a"), blocksize="2MB", return_state=True)
        assert state.is_failed()
        with pytest.raises(GateBlockedError):
            state.result()
        by_name = final_task_states(state.state_details.flow_run_id, "verify-and-gate", "search")
        assert by_name["verify-and-gate"].is_failed()
        assert by_name["search"].is_completed()
        code = scale.main(
            [
                adult_policy_path,
                str(tmp_path / "b"),
                "--scheduler-address",
                cluster.scheduler_address,
                "--blocksize",
                "2MB",
            ]
        )
    assert code == 3
    err = capfd.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("privgate: gate blocked release") and "1000000-anonymity" in err
    assert list(tmp_path.iterdir()) == []  # neither release, no staging folder left
