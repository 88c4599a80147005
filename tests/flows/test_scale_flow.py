"""The dask release flow: on its own local cluster and on an existing scheduler."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from privgate.core.policy import load_policy
from privgate.flows.scale import run_scale_release

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def adult_policy_path(shared_data) -> str:
    shared_data("arx/adult.csv")
    return str(ROOT / "policies" / "adult.yaml")


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


def test_scale_flow_on_an_existing_scheduler(prefect_harness, adult_policy_path, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit="1GiB",
        dashboard_address=None,
    ) as cluster:
        output = tmp_path / "release"
        result = run_scale_release(
            adult_policy_path,
            str(output),
            scheduler_address=cluster.scheduler_address,
            blocksize="1MB",
        )
        _check_adult_release(result, output, adult_policy_path)
