"""The dask path on a 2-worker local cluster gives the pandas path's release and verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import GateBlockedError
from privgate.core.gate import verify_table
from privgate.core.privacy import KAnonymity
from privgate.core.scale import anonymize_dask, verify_parquet_release

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two worker processes, one thread each, 1 GiB each: what CI's 2 cores afford."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="1GiB",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    text = frame.astype("str").reset_index(drop=True)
    return text.sort_values(list(text.columns)).reset_index(drop=True)


def _pandas_release(policy):
    ingested = stages.ingest(policy, "test")
    setup = SearchSetup.from_policy(policy)
    [table] = stages.anonymize(ingested.frame, setup)
    decision = verify_table(
        table.frame,
        list(setup.quasi_identifiers),
        list(setup.models),
        **setup.gate_limits(ingested.rows),
    )
    return table, decision


@pytest.mark.parametrize(
    ("data", "overrides", "blocksize"),
    [
        ("adult", {}, "300KB"),
        ("scaled", {"privacy.k": 3}, "1MB"),
        (
            "scaled",
            {"privacy.k": 4, "privacy.l_diversity": [{"column": "salary-class", "l": 2}]},
            "700KB",
        ),
    ],
    ids=["adult-k5", "scaled60k-k3", "scaled60k-k4-l2"],
)
def test_dask_release_equals_pandas_release(
    client, adult_policy, scaled_adult, tmp_path, data, overrides, blocksize
):
    policy = adult_policy.with_overrides(**overrides)
    if data == "scaled":
        policy = policy.with_overrides(**{"input.path": str(scaled_adult)})
    expected, expected_decision = _pandas_release(policy)

    run = anonymize_dask(policy, tmp_path / "release", blocksize=blocksize, shuffle_seed=1)

    written = pd.read_parquet(run.output)
    assert run.decision.passed
    assert run.levels == expected.result.levels
    assert run.summary["suppressed"] == expected.result.n_suppressed
    assert list(written.columns) == policy.released_columns
    pd.testing.assert_frame_equal(_sorted_rows(written), _sorted_rows(expected.frame))
    assert run.decision.measurements == expected_decision.measurements
    assert len(list(run.output.glob("*.parquet"))) > 1  # really partitioned


def test_distributed_gate_blocks_what_the_gate_blocks(client, adult_policy, tmp_path):
    run = anonymize_dask(adult_policy, tmp_path / "release", blocksize="300KB")
    models = [KAnonymity(k=50)]
    ours = verify_parquet_release(
        run.output, adult_policy.quasi_identifiers, models, input_rows=30162, suppression_limit=0.0
    )
    gate = verify_table(
        pd.read_parquet(run.output),
        adult_policy.quasi_identifiers,
        models,
        input_rows=30162,
        suppression_limit=0.0,
    )
    assert not ours.passed
    assert ours.reasons == gate.reasons
    assert ours.measurements == gate.measurements


def test_blocked_release_is_not_published(client, adult_policy, tmp_path, monkeypatch):
    import privgate.core.scale._pipeline as pipeline

    def strict_gate(staging, setup, input_rows):
        return verify_parquet_release(staging, setup.quasi_identifiers, [KAnonymity(k=10**6)])

    monkeypatch.setattr(pipeline, "verify_stage", strict_gate)
    with pytest.raises(GateBlockedError):
        anonymize_dask(adult_policy, tmp_path / "release", blocksize="1MB")
    assert list(tmp_path.iterdir()) == []
