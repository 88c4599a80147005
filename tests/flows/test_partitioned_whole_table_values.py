"""review8: on the partitioned path the schema runs on a seeded sample of the rows, but the
sensitive values the privacy models count are checked on every row: they are in the frequency set
the search counted from every row, so checking them costs nothing.

Without that check a salary class outside the declared categories, in a row the sample left out,
counted as a second salary class for distinct 2-diversity: the gate passed a class whose real
values were all one class, and the release was published (the in-memory path's schema reads
every row and stops the same input).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from adult_reference import ADULT_POLICY

from privgate.flows.cli import main
from privgate.validations.expectations import expectation_sample


@pytest.fixture(scope="module")
def adult_60k(shared_data, tmp_path_factory) -> Path:
    """60,000 rows drawn from Adult (rows repeated: enough for the partitioned path's switch)."""
    lines = shared_data("arx/adult.csv").read_text(encoding="utf-8").splitlines()
    rows = [ln for ln in lines[1:] if ln]
    picked = np.random.default_rng(8).integers(0, len(rows), 60_000)
    path = tmp_path_factory.mktemp("values") / "adult_60k.csv"
    path.write_text("\n".join([lines[0], *(rows[i] for i in picked)]) + "\n", encoding="utf-8")
    return path


def _l_diverse_policy(tmp_path: Path) -> Path:
    text = ADULT_POLICY.read_text().replace("../../shared", str(ADULT_POLICY.parents[2] / "shared"))
    text = text.replace(
        "privacy:\n  k: 5\n", "privacy:\n  k: 5\n  l_diversity: [{column: salary-class, l: 2}]\n"
    )
    assert "l_diversity" in text
    policy = tmp_path / "adult_l2.yaml"
    policy.write_text(text)
    return policy


def test_a_bad_sensitive_value_outside_the_validation_sample_stops_the_run(
    adult_60k, tmp_path, monkeypatch
):
    monkeypatch.setenv("PRIVGATE_PARTITIONED_MIN_ROWS", "50000")
    monkeypatch.setenv("PRIVGATE_EXPECTATIONS_MAX_ROWS", "20000")
    sampled = set(expectation_sample(60_000).rows.tolist())
    outside = next(r for r in range(5_000, 60_000) if r not in sampled)
    lines = adult_60k.read_text(encoding="utf-8").splitlines()
    fields = lines[outside + 1].split(";")
    fields[-1] = "maybe"  # salary-class: categories ["<=50K", ">50K"]
    lines[outside + 1] = ";".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    policy = _l_diverse_policy(tmp_path)
    out, err = io.StringIO(), io.StringIO()  # not capsys: Prefect's console handler outlives it
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["run", str(policy), "--release-date", "2026-11-26", "--input", str(bad),
             "--output", str(tmp_path / "out")]
        )  # fmt: skip
    out, err = out.getvalue(), err.getvalue()
    assert out.startswith("engine: partitioned path")
    assert code == 2, out + err
    assert "salary-class" in err and "'maybe'" in err and "sensitive values of every row" in err
    assert not list((tmp_path / "out").rglob("manifest.json"))
