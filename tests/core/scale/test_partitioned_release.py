"""The partitioned release's bounded stages on real data: the rows the validation sample reads,
and the loss counted on the frequency set against the in-memory utility stage's."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from adult_reference import ADULT_POLICY

from privgate.core.policy import load_policy
from privgate.core.scale import (
    frequency_stage,
    input_overrides,
    read_rows,
    release_loss,
    scale_setup,
    search_stage,
)


@pytest.fixture
def scaled_policy(scaled_adult):
    return load_policy(ADULT_POLICY).with_overrides(**input_overrides(scaled_adult))


def test_read_rows_returns_the_rows_at_the_positions_as_text(scaled_policy, scaled_adult):
    columns = list(scaled_policy.columns)
    positions = np.sort(np.random.default_rng(3).choice(60_000, 5_000, replace=False))
    got = read_rows(scaled_policy.input, columns, positions)
    whole = pd.read_csv(
        scaled_adult, sep=";", dtype="string", na_values=["", "?"], keep_default_na=False
    )
    expected = whole.iloc[positions]
    assert list(got.index) == positions.tolist()
    assert got.dtypes.map(str).tolist() == ["string"] * len(columns)
    pd.testing.assert_frame_equal(got, expected[columns], check_dtype=False)
    assert got["salary-class"].isna().sum() == expected["salary-class"].isna().sum() > 0


def test_read_rows_says_when_the_input_is_shorter(scaled_policy):
    from privgate.core.exceptions import IngestError

    with pytest.raises(IngestError, match="60000 rows read, 60001 expected"):
        read_rows(scaled_policy.input, ["age"], np.arange(60_001))


@pytest.mark.slow  # two anonymizations of 60,000 rows, one on dask
@pytest.mark.parametrize("k", [5, 50])
def test_release_loss_on_the_frequency_set_is_the_utility_stages_loss(scaled_policy, k):
    """Counted on the distinct tuples, the loss per attribute, in total and the precision
    are those the in-memory path measures on the records (scaled Adult, 60,000 rows)."""
    import privgate

    policy = scaled_policy.with_overrides(**{"privacy.k": k})
    setup = scale_setup(policy)
    with dask.config.set(scheduler="sync"):
        freq = frequency_stage(policy, setup, "1MB")
    plan, _ = search_stage(freq, setup)
    loss = release_loss(freq, plan, setup)

    frame = pd.read_csv(policy.input.path, sep=";", dtype=str, keep_default_na=False)
    frame = frame.replace({"?": None, "": None})
    memory = privgate.anonymize(frame, policy)
    assert memory.metrics["suppressed"] == loss["n_suppressed"] == plan.suppressed
    assert memory.metrics["loss"] == pytest.approx(loss["total"], abs=1e-12)
    assert memory.metrics["precision"] == pytest.approx(loss["precision"], abs=1e-12)
    for name, value in memory.metrics["loss_per_attribute"].items():
        assert loss["per_attribute"][name] == pytest.approx(value, abs=1e-12), name


def test_input_fingerprint_of_a_file_a_folder_and_a_glob_of_parts(tmp_path):
    """Every cached stage and the release id are keyed by it: a glob of parts is
    fingerprinted by the files it matches (another part, another digest), a missing input
    by "" (the reading stage names the problem)."""
    from privgate.core.publish import sha256_file
    from privgate.core.scale import input_fingerprint

    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.parquet").write_bytes(b"a")
    (folder / "b.parquet").write_bytes(b"b")
    assert input_fingerprint(folder / "a.parquet") == sha256_file(folder / "a.parquet")
    of_folder = input_fingerprint(folder)
    of_glob = input_fingerprint(f"{folder}/*.parquet")
    assert len(of_folder) == len(of_glob) == 64
    (folder / "c.parquet").write_bytes(b"c")
    assert input_fingerprint(f"{folder}/*.parquet") != of_glob
    assert input_fingerprint(folder) != of_folder
    assert input_fingerprint(tmp_path / "missing.csv") == ""
    assert input_fingerprint(f"{tmp_path}/none/*.parquet") == ""
