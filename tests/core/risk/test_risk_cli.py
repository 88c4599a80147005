"""`privgate risk POLICY`: the input's analysis, the release's, and clear errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privgate.flows.cli import main

POLICY = """
dataset: tiny
input: {{path: {data}, format: csv, delimiter: ",", header: true}}
columns:
  zip:
    role: quasi_identifier
    hierarchy: {{kind: taxonomy, tree: {{"130**": ["13053", "13068"], "148**": ["14853"]}}}}
  sex:
    role: quasi_identifier
    hierarchy: {{kind: taxonomy, tree: {{Person: [M, F]}}}}
  disease: {{role: sensitive}}
privacy: {{k: 2, risk: {{highest: 0.5, population_uniques: 0.01, population_size: {size}}}}}
output: {{directory: {out}}}
"""

ROWS = "zip,sex,disease\n13053,M,flu\n13053,M,cold\n13068,F,flu\n14853,F,cancer\n14853,M,flu\n"


def _policy(tmp_path: Path, size: int = 50) -> Path:
    (tmp_path / "in.csv").write_text(ROWS)
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY.format(data=tmp_path / "in.csv", size=size, out=tmp_path / "rel"))
    return policy


def test_input_and_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = _policy(tmp_path)
    assert main(["risk", str(policy)]) == 0
    text = capsys.readouterr().out
    # 3 uniques of 5 records; classes 2,1,1,1: prosecutor average 4/5
    assert "5 records in 4 classes" in text and "sample uniques: 3 (60 %)" in text
    assert "dankar" in text and "input only" in text
    release = tmp_path / "release.csv"
    release.write_text("zip,sex\n130**,Person\n130**,Person\n130**,Person\n148**,Person\n"
                       "148**,Person\n")  # fmt: skip
    assert main(["risk", str(policy), "--release", str(release), "--json"]) == 0
    before, after = json.loads(capsys.readouterr().out)
    assert before["prosecutor"]["average"] == pytest.approx(4 / 5)
    assert after["prosecutor"]["highest"] == pytest.approx(1 / 2)
    assert after["sample_uniques"] == 0
    assert after["uniqueness"]["estimates"]["dankar"] == 0.0


def test_latest_published_release_is_found(tmp_path: Path, capsys) -> None:
    policy = _policy(tmp_path)
    folder = tmp_path / "rel" / "tiny" / "r1"
    folder.mkdir(parents=True)
    (folder / "release.csv").write_text("zip,sex\n" + "130**,Person\n" * 5)
    (folder / "manifest.json").write_text("{}")
    assert main(["risk", str(policy)]) == 0
    assert f"release {folder / 'release.csv'}: 5 records in 1 classes" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--population-size", "3"], "smaller than the input"),
        (["--release", "missing.csv"], "release file not found"),
    ],
)
def test_errors_exit_2(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    policy = _policy(tmp_path)
    args = [str(tmp_path / a) if a.endswith(".csv") else a for a in args]
    assert main(["risk", str(policy), *args]) == 2
    assert message in capsys.readouterr().err


def test_release_without_a_quasi_identifier(tmp_path: Path, capsys) -> None:
    policy = _policy(tmp_path)
    (tmp_path / "r.csv").write_text("zip\n130**\n")
    assert main(["risk", str(policy), "--release", str(tmp_path / "r.csv")]) == 2
    assert "no quasi-identifier column(s) ['sex']" in capsys.readouterr().err
