"""review8 F4: a part of a partitioned release says nothing about where its rows were in the input.

The in-memory path publishes its rows in a random order. Generalizing partition by partition kept
each input block in one part: with an input sorted by age, each part held a few years of ages
(finer than the released 20-year bands), and a part held a single band. Rows are now spread over
the parts at random, so every part shows the whole table's mix of bands.
"""

from __future__ import annotations

import dask
import pandas as pd
from adult_reference import ADULT_POLICY

from privgate.core.policy import load_policy
from privgate.core.scale import anonymize_dask, input_overrides


def test_parts_of_a_release_of_an_age_sorted_input_each_hold_every_age_band(shared_data, tmp_path):
    frame = pd.read_csv(shared_data("arx/adult.csv"), sep=";", dtype=str, keep_default_na=False)
    frame = frame.iloc[frame["age"].astype(int).argsort(kind="stable")]
    source = tmp_path / "adult_by_age.csv"
    frame.to_csv(source, sep=";", index=False)
    policy = load_policy(ADULT_POLICY).with_overrides(**input_overrides(source))
    with dask.config.set(scheduler="sync"):
        run = anonymize_dask(policy, tmp_path / "out", blocksize="300KB", shuffle_seed=5)
    assert run.decision.passed and run.levels["age"] == 3  # 20-year bands
    parts = sorted((tmp_path / "out").glob("*.parquet"))
    released = pd.concat(
        [pd.read_parquet(p).assign(part=i) for i, p in enumerate(parts)], ignore_index=True
    )
    assert released["part"].nunique() >= 4
    bands = ["0-19", "20-39", "40-59", "60-79"]  # each 5 % or more of the released rows
    for part, rows in released.groupby("part"):
        if len(rows) >= 1000:
            present = set(rows["age"].astype(str))
            assert set(bands) <= present, (part, len(rows), sorted(present))


def test_rows_are_spread_evenly_over_the_parts(shared_data, tmp_path):
    """Every part of the release gets its share of the rows: none empty, none doubled. (Part
    numbers drawn from 0..n-1 and then hashed onto n parts by dask's shuffle sent whole numbers
    to one part and left others empty; each row now draws a 64-bit key.)"""
    policy = load_policy(ADULT_POLICY).with_overrides(
        **input_overrides(shared_data("arx/adult.csv"))
    )
    with dask.config.set(scheduler="sync"):
        run = anonymize_dask(policy, tmp_path / "out", blocksize="300KB", shuffle_seed=5)
    sizes = [len(pd.read_parquet(p)) for p in sorted((tmp_path / "out").glob("*.parquet"))]
    assert len(sizes) >= 8 and sum(sizes) == run.summary["input_rows"] - run.summary["suppressed"]
    mean = sum(sizes) / len(sizes)
    assert all(0.8 * mean <= size <= 1.2 * mean for size in sizes), sizes
