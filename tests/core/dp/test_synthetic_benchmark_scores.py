"""The utility scores of benchmarks/synthetic_adult.py measure the data, not its dtypes.

The benchmark reads Adult as text while MST/AIM release age as integers; the k-marginal score
once compared 39 with "39" and scored every marginal holding age as disjoint (identical data:
667/1000; MST on Adult: 486). A release that equals the original must score 1000.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its sibling helper module
    try:
        spec = importlib.util.spec_from_file_location(
            "synthetic_adult_bench", BENCHMARKS / "synthetic_adult.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def _table(bench, rows: int = 40) -> pd.DataFrame:
    values = {c: [f"{c}-{i % (2 + j)}" for i in range(rows)] for j, c in enumerate(bench.COLUMNS)}
    values["age"] = [str(17 + i % 7) for i in range(rows)]
    return pd.DataFrame(values)


def test_an_identical_release_with_integer_ages_scores_1000(bench) -> None:
    original = _table(bench)
    release = original.assign(age=original["age"].astype(int))  # as MST/AIM release it
    assert bench.k_marginal(release, original) == pytest.approx(1000.0)
    assert bench.tv(release, original, 1) == pytest.approx(0.0)
    assert bench.tv(release, original, 2) == pytest.approx(0.0)


def test_a_different_release_scores_below_1000(bench) -> None:
    original = _table(bench)
    release = original.assign(sex="someone-else")
    assert bench.k_marginal(release, original) < 1000.0
    assert bench.tv(release, original, 1) > 0.0
