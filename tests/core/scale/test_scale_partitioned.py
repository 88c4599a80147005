"""The Dask path on partitioned Parquet input: the single-file release, a tampered part blocked.

The input is scaled Adult written by :func:`privgate.core.scaled_adult.write_scaled_adult` as
part files (the form a 100M-row table comes in); the same rows as one CSV file go through the
one-machine (pandas) path. Dask's threaded scheduler runs the partitions here; the 2-process
cluster is exercised by ``test_scale_dask_cluster.py``.
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import GateBlockedError
from privgate.core.gate import verify_table
from privgate.core.scale import anonymize_dask, input_overrides, verify_parquet_release
from privgate.core.scaled_adult import write_scaled_adult

#: Two anonymizations of 40k rows and the pandas path on the same rows: about 10 s.
pytestmark = pytest.mark.slow

ROWS, PER_PART = 40_000, 6_000


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


@pytest.fixture(scope="module")
def parts(shared_data, tmp_path_factory):
    """40,000 rows of scaled Adult in 7 part files, and the same rows as one CSV file."""
    folder = tmp_path_factory.mktemp("partitioned")
    written = write_scaled_adult(
        ROWS, folder / "parts", source=shared_data("arx/adult.csv"), seed=5, rows_per_part=PER_PART
    )
    csv = folder / "whole.csv"
    pd.read_parquet(written.folder).astype(str).to_csv(csv, sep=";", index=False)
    return written, csv


def _sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    text = frame.astype("str").reset_index(drop=True)
    return text.sort_values(list(text.columns)).reset_index(drop=True)


@pytest.mark.parametrize("form", ["folder", "glob"])
def test_partitioned_parquet_gives_the_single_file_release(adult_policy, parts, tmp_path, form):
    written, csv = parts
    source = written.folder if form == "folder" else written.folder / "*.parquet"
    assert input_overrides(source)["input.format"] == "parquet"
    policy = adult_policy.with_overrides(**{"privacy.k": 3}, **input_overrides(source))
    single = adult_policy.with_overrides(**{"privacy.k": 3}, **input_overrides(csv))
    assert single.input.format == "csv"
    ingested = stages.ingest(single, "test")
    setup = SearchSetup.from_policy(single)
    [expected] = stages.anonymize(ingested.frame, setup)
    expected_decision = verify_table(
        expected.frame,
        list(setup.quasi_identifiers),
        list(setup.models),
        **setup.gate_limits(ingested.rows),
    )

    run = anonymize_dask(policy, tmp_path / "release", shuffle_seed=3)

    assert run.summary["input_rows"] == ROWS
    assert run.decision.passed
    assert run.levels == expected.result.levels
    assert run.summary["suppressed"] == expected.result.n_suppressed > 0
    written_release = pd.read_parquet(run.output)
    assert list(written_release.columns) == policy.released_columns
    pd.testing.assert_frame_equal(_sorted_rows(written_release), _sorted_rows(expected.frame))
    assert run.decision.measurements == expected_decision.measurements
    # One release part per input part: the rows were generalized and written part by part.
    assert len(list(run.output.glob("*.parquet"))) == len(written.parts) == 7


def _tamper(folder, quasi_identifiers) -> tuple[str, str]:
    """Give one row of one written part a QI combination no other released row has."""
    release = pd.read_parquet(folder).astype(str)
    combos = set(map(tuple, release[quasi_identifiers].to_numpy().tolist()))
    part = sorted(folder.glob("*.parquet"))[2]
    frame = pq.read_table(part).to_pandas().astype(str)
    sexes = sorted(set(release["sex"]))
    for i in range(len(frame)):
        row = frame.loc[i, quasi_identifiers].copy()
        row["sex"] = sexes[1] if row["sex"] == sexes[0] else sexes[0]
        if tuple(row.tolist()) not in combos:
            frame.loc[i, "sex"] = row["sex"]
            frame.to_parquet(part, index=False)
            return part.name, row["sex"]
    raise AssertionError("no row to tamper with")


def test_a_tampered_written_part_is_blocked(adult_policy, parts, tmp_path):
    written, _ = parts
    policy = adult_policy.with_overrides(**input_overrides(written.folder))
    setup = SearchSetup.from_policy(policy)
    run = anonymize_dask(policy, tmp_path / "release", shuffle_seed=4)
    assert run.decision.passed and run.decision.measurements["min_class_size"] >= 5

    _tamper(run.output, list(setup.quasi_identifiers))
    decision = verify_parquet_release(
        run.output, list(setup.quasi_identifiers), list(setup.models), **setup.gate_limits(ROWS)
    )

    assert not decision.passed
    assert any("5-anonymity" in reason for reason in decision.reasons)
    assert decision.measurements["min_class_size"] == 1


def test_written_parts_missing_a_whole_class_are_not_the_searched_release(
    adult_policy, parts, tmp_path
):
    """A writer that loses rows can leave parts that are still k-anonymous (a whole class gone
    looks like more suppression, within the limit): the gate checks the written rows against
    the plan's count, so such parts are blocked; the manifest's ``output.rows`` is that count."""
    written, _ = parts
    policy = adult_policy.with_overrides(**input_overrides(written.folder))
    setup = SearchSetup.from_policy(policy)
    run = anonymize_dask(policy, tmp_path / "release", shuffle_seed=6)
    planned = run.summary["input_rows"] - run.summary["suppressed"]
    qis = list(setup.quasi_identifiers)
    release = pd.read_parquet(run.output).astype(str)
    sizes = release.groupby(qis).size()
    smallest = sizes.idxmin()  # the class whose loss keeps suppression lowest
    for part in run.output.glob("*.parquet"):
        frame = pq.read_table(part).to_pandas()
        keep = [tuple(r) != smallest for r in frame[qis].astype(str).to_numpy().tolist()]
        frame[keep].to_parquet(part, index=False)
    limits = setup.gate_limits(ROWS)

    unchecked = verify_parquet_release(run.output, qis, list(setup.models), **limits)
    assert unchecked.passed, unchecked.reasons  # k-anonymous and within the limit as written
    assert unchecked.measurements["rows"] == planned - sizes.min()

    decision = verify_parquet_release(
        run.output, qis, list(setup.models), expected_rows=planned, **limits
    )
    assert not decision.passed
    assert decision.reasons == [
        f"the written release has {planned - sizes.min()} rows, the search's plan releases "
        f"{planned}: the parts are not the release that was searched"
    ]


def test_a_release_tampered_before_the_gate_is_not_published(
    adult_policy, parts, tmp_path, monkeypatch
):
    """The gate reads the parts as written: a part changed between writing and verifying
    (one class of one record) blocks the run, and nothing is published."""
    import privgate.core.scale._pipeline as pipeline

    written, _ = parts
    policy = adult_policy.with_overrides(**input_overrides(written.folder))
    setup = SearchSetup.from_policy(policy)
    write = pipeline.write_stage

    def write_then_tamper(*args, **kwargs):
        staging = write(*args, **kwargs)
        _tamper(staging, list(setup.quasi_identifiers))
        return staging

    monkeypatch.setattr(pipeline, "write_stage", write_then_tamper)
    with pytest.raises(GateBlockedError, match="5-anonymity"):
        anonymize_dask(policy, tmp_path / "out" / "release", shuffle_seed=4)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_staging_folder_left_by_a_killed_run_is_removed_by_the_next(
    adult_policy, parts, tmp_path
):
    """A run killed between writing its parts and renaming them left the unverified release
    in its hidden staging folder for good; the next run to the same output removes it once
    its owner is gone."""
    import subprocess

    from privgate.core.publish import staging_owner

    written, _ = parts
    child = subprocess.Popen(["true"])
    child.wait()
    host = staging_owner().split(".")[0]
    stale = tmp_path / f".release.{host}.{child.pid}.1.tmp"
    stale.mkdir()
    (stale / "part.0.parquet").write_bytes(b"unverified")
    policy = adult_policy.with_overrides(**input_overrides(written.folder))
    run = anonymize_dask(policy, tmp_path / "release", shuffle_seed=4)
    assert run.decision.passed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release"]


def test_input_overrides_keep_csv_as_csv(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    assert input_overrides(tmp_path / "a.csv") == {"input.path": str(tmp_path / "a.csv")}
    assert input_overrides(tmp_path)["input.format"] == "parquet"
    assert np.all([input_overrides(tmp_path / "*.csv").get("input.format") is None])
