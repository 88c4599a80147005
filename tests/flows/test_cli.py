"""The privgate command line: one clear line and a non-zero exit for every refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pycanon import anonymity

from privgate.flows.cli import main

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
    return subprocess.run(
        [sys.executable, "-m", "privgate.flows.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bad_policy_fails_fast_with_one_line(tmp_path):
    policy = tmp_path / "bad.yaml"
    policy.write_text(
        "dataset: x\ninput: {path: x.csv}\ncolumns:\n  a: {role: quasi_identifier}\n"
        "privacy: {k: 0}\n"
    )
    result = _cli("run", str(policy), cwd=REPO)
    assert result.returncode == 2
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("privgate: error: invalid policy")
    assert "columns.a: a quasi_identifier needs a 'hierarchy'" in err[0]
    assert "privacy.k" in err[0]
    assert "Traceback" not in result.stderr + result.stdout


def test_demo_command_publishes_a_verified_release(prefect_harness, tmp_path):
    # No capsys here: Prefect's console log handler must not be bound to a per-test stream.
    code = main(["demo", "--workdir", str(tmp_path), "--rows", "4000"])
    assert code == 0
    (release_dir,) = (tmp_path / "releases" / "census-demo").iterdir()
    assert (release_dir / "manifest.json").is_file()
    release = pd.read_csv(release_dir / "release.csv", dtype=str, keep_default_na=False)
    assert "person_id" not in release.columns
    qi = [
        "age",
        "sex",
        "race",
        "marital-status",
        "education",
        "education-num",
        "occupation",
        "workclass",
        "native-country",
    ]
    assert anonymity.k_anonymity(release, qi) >= 5
    assert anonymity.l_diversity(release, qi, ["income"]) >= 2


def test_verify_command_reports_levels_and_exit_code(tmp_path, capsys):
    path = tmp_path / "table.csv"
    pd.DataFrame({"zip": ["1", "1", "2", "2", "2"], "d": ["a", "b", "a", "b", "c"]}).to_csv(
        path, index=False
    )
    assert main(["verify", str(path), "--qi", "zip", "--k", "2"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert main(["verify", str(path), "--qi", "zip", "--k", "3"]) == 3
    assert "3-anonymity not met: the release reaches 2" in capsys.readouterr().out
    assert (
        main(["verify", str(path), "--qi", "zip", "--k", "2", "--sensitive", "d", "--l", "3"]) == 3
    )


def test_verify_missing_file_is_a_blocked_decision(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nope.csv"), "--qi", "a", "--k", "2"]) == 3
    assert "release file not found" in capsys.readouterr().out


@pytest.mark.slow
def test_run_in_a_fresh_process_blocks_impossible_k(shared_data, tmp_path):
    """A whole `privgate run` process, with Prefect's temporary server, exits non-zero."""
    shared_data("arx/adult.csv")
    result = _cli("run", "policies/adult.yaml", "--k", "40000", "--output", str(tmp_path), cwd=REPO)
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("privgate:")]
    assert ours == [
        "privgate: error: privacy.k = 40000 is larger than the table (30162 rows): "
        "no release of it can be 40000-anonymous"
    ]
    assert "Traceback" not in result.stderr + result.stdout
    assert not any(tmp_path.iterdir())


def test_dp_dry_run_through_the_cli_draws_reserves_and_creates_nothing(
    shared_data, tmp_path, _private_data_dir
):
    """A fresh process, as a user runs it: the dry run reports what would be spent, exit 0,
    and leaves no ledger file, no account and no release behind."""
    shared_data("arx/adult.csv")
    result = _cli(
        "run", "policies/adult-dp.yaml", "--dry-run", "--output", str(tmp_path / "out"),
        cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "would reserve epsilon 0.5 of the 2 left (1.5 after it)" in result.stdout
    assert "Traceback" not in result.stderr
    assert not (_private_data_dir / "privacy-ledger.sqlite").exists()
    assert not (tmp_path / "out" / "adult-dp").exists() or not any(
        (tmp_path / "out" / "adult-dp").iterdir()
    )
