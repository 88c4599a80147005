"""Data for the dask-path tests: ARX's Adult and a resampled, larger Adult-like table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from adult_reference import ADULT_QI

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def scaled_adult(shared_data, tmp_path_factory) -> Path:
    """60,000 rows made as ../shared/tools/make_scaled_adult.py makes them (p = 0.3), with a few
    missing salary cells so that a missing sensitive value is exercised."""
    source = shared_data("arx/adult.csv")
    lines = source.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(";")
    table = np.array([ln.split(";") for ln in lines[1:] if ln], dtype=object)
    rng = np.random.default_rng(11)
    out = table[rng.integers(0, len(table), 60_000)]
    for col in ADULT_QI:
        j = header.index(col)
        swap = rng.random(len(out)) < 0.3
        out[swap, j] = table[rng.integers(0, len(table), int(swap.sum())), j]
    out[rng.random(len(out)) < 0.001, header.index("salary-class")] = "?"
    path = tmp_path_factory.mktemp("scaled") / "adult_60k.csv"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(";".join(header) + "\n")
        fh.writelines(";".join(row) + "\n" for row in out)
    return path
