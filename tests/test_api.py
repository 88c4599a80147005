"""The Python API: ``privgate.anonymize`` on a DataFrame, in a notebook, without Prefect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from pycanon import anonymity

import privgate
import privgate.api as privgate_api
from privgate.core.exceptions import AnonymizationError, PolicyError

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.filterwarnings("ignore:In a future version, the keys of `groups`")


@pytest.fixture(scope="module")
def raw(adult) -> pd.DataFrame:
    """Adult as a data scientist reads it: every cell text, no validation yet."""
    return pd.read_csv(adult.policy.input.path, sep=";", dtype=str, keep_default_na=False)


def test_anonymize_a_dataframe_and_write_the_release(adult, raw, tmp_path) -> None:
    release = privgate.anonymize(raw, adult.policy)

    assert isinstance(release.frame, pd.DataFrame) and release.passed
    assert release.decision.measurements["min_class_size"] >= 5
    assert release.metrics["input_rows"] == len(raw) == 30162
    assert release.metrics["release_rows"] == len(release.frame)
    assert anonymity.k_anonymity(release.frame, adult.quasi_identifiers) >= 5
    # until it is written, the release keeps each record's index
    assert release.frame.index.isin(raw.index).all()

    path = tmp_path / "adult-release.csv"
    decision = release.write(path)
    assert decision.passed and decision.measurements == release.decision.measurements
    written = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(written.columns) == adult.policy.released_columns
    assert not written.equals(release.frame.astype(str).reset_index(drop=True))  # shuffled
    assert privgate.verify(path, adult.policy, input_rows=len(raw)).passed


def test_refusals_name_their_reason(adult, raw, tmp_path) -> None:
    data = adult.policy.model_dump(mode="json")
    data["privacy"]["k"] = 40000
    path = tmp_path / "strict.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(AnonymizationError, match="larger than the table"):
        privgate.anonymize(raw, path)  # a policy by path works too
    with pytest.raises(PolicyError, match="differential_privacy"):
        privgate.anonymize(raw, REPO / "policies" / "adult-dp.yaml")


def test_a_table_that_is_not_k_anonymous_is_a_decision_not_an_error(adult) -> None:
    table = adult.frame[adult.policy.released_columns].astype(str)
    decision = privgate.verify(table, adult.policy, input_rows=len(table))
    assert not decision.passed
    assert any("5-anonymity not met" in reason for reason in decision.reasons)


@pytest.mark.slow  # a child Python process importing the engine: ~10 s under load
def test_the_api_runs_without_prefect(adult) -> None:
    """In a fresh interpreter: anonymize Adult through the API; Prefect is never imported."""
    code = "\n".join(
        [
            "import sys, pandas as pd, privgate",
            f"policy = privgate.load_policy({str(REPO / 'policies' / 'adult.yaml')!r})",
            "raw = pd.read_csv(policy.input.path, sep=';', dtype=str, keep_default_na=False)",
            "assert privgate.anonymize(raw, policy).passed",
            "print('prefect' in sys.modules)",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("fails", ["raises", "blocks", "passes"])
def test_write_puts_only_a_verified_release_under_its_name(
    adult, raw, tmp_path, monkeypatch, fails
):
    """Release.write wrote the file at its path, then verified it: a gate that raised (out of
    memory) left the unverified release there. It is now written under a hidden name, renamed
    once the gate has passed it, and removed otherwise; nothing else is left in the folder."""
    from privgate.core.gate import GateDecision

    release = privgate.anonymize(raw, adult.policy)
    real_verify = privgate_api.stages.verify

    def gate(*args, **kwargs):
        if fails == "raises":
            raise MemoryError("the gate ran out of memory")
        decision = real_verify(*args, **kwargs)
        return decision if fails == "passes" else GateDecision(False, ["blocked"], {})

    monkeypatch.setattr(privgate_api.stages, "verify", gate)
    path = tmp_path / "release.csv"
    if fails == "raises":
        with pytest.raises(MemoryError):
            release.write(path)
    else:
        assert release.write(path).passed is (fails == "passes")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == (["release.csv"] if fails == "passes" else [])
