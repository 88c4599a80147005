"""`privgate anonymize`: the engine alone (no Prefect) on real Adult, and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from adult_reference import ADULT_QI
from pycanon import anonymity

from privgate.flows.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_engine_only_release_is_verified_k_anonymous(shared_data, tmp_path, capsys):
    shared_data("arx/adult.csv")
    out = tmp_path / "release.csv"
    code = main(
        ["anonymize", str(REPO / "policies" / "adult.yaml"), "--output", str(out), "--k", "10"]
    )
    shown = capsys.readouterr().out
    assert code == 0, shown
    assert "gate: PASSED" in shown
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert anonymity.k_anonymity(release, ADULT_QI) >= 10
    assert 30162 - len(release) <= int(0.02 * 30162)


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        ("adult-rfka.yaml", "algorithm.name rfka is not available in `privgate anonymize`"),
        ("adult-tiered.yaml", "algorithm.name tiered is not available"),
        ("adult-dp.yaml", "a differential_privacy policy is not available"),
    ],
)
def test_algorithms_beyond_full_domain_are_refused_by_name(
    shared_data, tmp_path, capsys, policy, fragment
):
    shared_data("arx/adult.csv")
    out = tmp_path / "release.csv"
    assert main(["anonymize", str(REPO / "policies" / policy), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "use `privgate run`" in err
    assert not out.exists()
