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

#: A 2-process Dask cluster per module and whole-Adult releases: slow (not in make test-fast).
pytestmark = pytest.mark.slow


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


@pytest.fixture(scope="module")
def adult_k5_run(client, adult_policy, tmp_path_factory):
    """The policy's own release (5-anonymity) on Dask, 300 KB blocks, run once per module: the
    comparison with the pandas path and the distributed gate's verdict read the same folder."""
    folder = tmp_path_factory.mktemp("adult-k5") / "release"
    return anonymize_dask(adult_policy, folder, blocksize="300KB", shuffle_seed=1)


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
    request, client, adult_policy, scaled_adult, tmp_path, data, overrides, blocksize
):
    policy = adult_policy.with_overrides(**overrides)
    if data == "scaled":
        policy = policy.with_overrides(**{"input.path": str(scaled_adult)})
    expected, expected_decision = _pandas_release(policy)

    if data == "adult":  # the module's run of this very policy and block size
        run = request.getfixturevalue("adult_k5_run")
    else:
        run = anonymize_dask(policy, tmp_path / "release", blocksize=blocksize, shuffle_seed=1)

    written = pd.read_parquet(run.output)
    assert run.decision.passed
    assert run.levels == expected.result.levels
    assert run.summary["suppressed"] == expected.result.n_suppressed
    assert list(written.columns) == policy.released_columns
    pd.testing.assert_frame_equal(_sorted_rows(written), _sorted_rows(expected.frame))
    assert run.decision.measurements == expected_decision.measurements
    assert len(list(run.output.glob("*.parquet"))) > 1  # really partitioned


def test_distributed_gate_blocks_what_the_gate_blocks(adult_k5_run, adult_policy):
    run = adult_k5_run
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

    def strict_gate(staging, setup, input_rows, reference=None, expected_rows=None):
        return verify_parquet_release(staging, setup.quasi_identifiers, [KAnonymity(k=10**6)])

    monkeypatch.setattr(pipeline, "verify_stage", strict_gate)
    with pytest.raises(GateBlockedError):
        anonymize_dask(adult_policy, tmp_path / "release", blocksize="1MB")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def t_closeness_run(client, arx_t_closeness, tmp_path_factory):
    """ARX's t-closeness case (``arx_t_closeness`` in ``tests/conftest.py``) released on Dask
    once per module (1 MB blocks): the pandas comparison and the wrong-reference check read the
    same release folder."""
    policy, *_ = arx_t_closeness
    folder = tmp_path_factory.mktemp("t-closeness") / "release"
    return anonymize_dask(policy, folder, blocksize="1MB", shuffle_seed=2)


def test_arx_t_closeness_case_publishes_on_dask_with_the_pandas_gates_numbers(
    t_closeness_run, arx_t_closeness
):
    """One t-closeness definition on both paths: the Dask gate compares each class with the
    input's distribution (suppressed records included), as the search and the pandas gate do.
    Measured against the released records instead, the same release is blocked at 0.202777.
    The pandas path's release is the session's (the stages :func:`privgate.anonymize` runs,
    also read by ``tests/core/privacy/test_t_closeness_reference.py``); its gate is run here."""
    policy, frame, release = arx_t_closeness
    setup = SearchSetup.from_policy(policy)
    table = release.table
    expected = verify_table(
        table.frame,
        list(setup.quasi_identifiers),
        list(setup.models),
        reference=table.reference,
        **setup.gate_limits(len(frame)),
    )

    run = t_closeness_run

    assert run.summary["suppressed"] == table.result.n_suppressed == 1384
    assert run.levels == table.result.levels
    assert run.decision.passed and expected.passed
    assert run.decision.measurements == expected.measurements
    old = verify_parquet_release(
        run.output, list(setup.quasi_identifiers), list(setup.models), **setup.gate_limits(30162)
    )
    assert not old.passed and "reaches 0.202777" in old.reasons[0]


def test_a_reference_that_does_not_name_the_released_values_blocks(
    t_closeness_run, arx_t_closeness
):
    policy, *_ = arx_t_closeness
    setup = SearchSetup.from_policy(policy)
    run = t_closeness_run
    wrong = {"occupation": {"Tech-support": 30162}}
    decision = verify_parquet_release(
        run.output,
        list(setup.quasi_identifiers),
        list(setup.models),
        reference=wrong,
        **setup.gate_limits(30162),
    )
    assert not decision.passed
    assert "are not in the input" in decision.reasons[-1]
