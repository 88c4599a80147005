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


def _cli(*args: str, cwd: Path, **extra_env: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1", **extra_env)
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


_PROBE = """
import sys
from privgate.flows.cli import main
code = main(sys.argv[1:])
heavy = sorted(
    {m.split(".")[0] for m in sys.modules}
    & {"prefect", "great_expectations", "pandas", "sklearn", "scipy"}
)
print("imported:", ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def _probe(*args: str) -> subprocess.CompletedProcess:
    """`privgate ARGS` in a fresh process that reports which heavy packages it imported."""
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--k", "40000"],
            "privgate: error: privacy.k = 40000 is larger than the table (30162 rows): "
            "no release of it can be 40000-anonymous",
        ),
        (["--input", "/nonexistent/adult.csv"], "privgate: error: input file not found: "),
    ],
    ids=["k-larger-than-the-table", "missing-input"],
)
def test_run_refuses_before_prefect_starts(shared_data, tmp_path, args, message):
    """Pre-flight: one line, exit 2, nothing written, and neither Prefect nor Great
    Expectations nor pandas imported (the error path's time is in benchmarks/BENCHMARKS.md)."""
    source = shared_data("arx/adult.csv")
    uncovered = tmp_path / "adult.csv"
    uncovered.write_text(source.read_text().replace("United-States", "Atlantis", 1))
    args = [a.format(uncovered=uncovered) for a in args]
    out = tmp_path / "out"
    result = _probe("run", "policies/adult.yaml", *args, "--output", str(out))
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("privgate:")]
    assert len(ours) == 1 and ours[0].startswith(message.format(uncovered=uncovered)), ours
    assert result.stderr.splitlines()[-1] == "imported: ", result.stderr[-500:]
    assert "Traceback" not in result.stderr + result.stdout
    assert not out.exists()


def test_run_names_the_row_of_an_uncovered_value_before_prefect_starts(shared_data, tmp_path):
    """Pre-flight finds the uncovered value; the pipeline's own validation names its row, still
    before Prefect is imported (pandas and Great Expectations are, to find the row)."""
    source = shared_data("arx/adult.csv")
    uncovered = tmp_path / "adult.csv"
    uncovered.write_text(source.read_text().replace("United-States", "Atlantis", 1))
    out = tmp_path / "out"
    result = _probe("run", "policies/adult.yaml", "--input", str(uncovered), "--output", str(out))
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("privgate:")]
    assert len(ours) == 1 and "column 'native-country' at row" in ours[0], ours
    assert "Atlantis" in ours[0], ours
    assert "prefect" not in result.stderr.splitlines()[-1], result.stderr[-500:]
    assert "Traceback" not in result.stderr + result.stdout
    assert not out.exists()


@pytest.mark.slow
def test_a_temporary_server_that_does_not_start_is_one_line_and_exit_2(shared_data, tmp_path):
    """What a run on an overloaded machine met before the start-up limit was raised: the
    temporary server not answering in time. Forced here with a limit of 0 s."""
    shared_data("arx/adult.csv")
    env = dict(
        os.environ,
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="0",
    )
    env.pop("PREFECT_API_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "privgate.flows.cli", "run", "policies/adult.yaml", "--output",
         str(tmp_path / "out")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("privgate:")]
    assert len(ours) == 1, result.stderr[-3000:]
    assert ours[0].startswith("privgate: error: Prefect's temporary server did not start within")
    assert "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in ours[0]
    assert "Traceback" not in result.stderr + result.stdout


def test_an_unreachable_server_is_one_line_and_exit_2(prefect_harness, tmp_path, capfd):
    """PREFECT_API_URL names a server that is down: say so and what to do, exit 2."""
    from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

    dead = "http://127.0.0.1:9/api"
    settings = {PREFECT_API_URL: dead, PREFECT_CLIENT_MAX_RETRIES: 0}
    with temporary_settings(settings), pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_API_URL", dead)
        code = main(["demo", "--workdir", str(tmp_path), "--rows", "300"])
    assert code == 2
    err = capfd.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("privgate:")]
    assert ours == [
        f"privgate: error: the Prefect server at {dead} does not answer: start it (`prefect "
        "server start`), or unset PREFECT_API_URL to let privgate start a temporary one"
    ]
    assert not (tmp_path / "releases").exists()


def test_dp_dry_run_through_the_cli_draws_reserves_and_creates_nothing(
    shared_data, tmp_path, _private_data_dir
):
    """A fresh process, as a user runs it: the dry run reports what would be spent, exit 0,
    and leaves no ledger file, no account and no release behind. A DP release imports neither
    scikit-learn nor SciPy (``opendp.prelude`` did, through OpenDP's extras: most of a DP
    process's start-up, see ``privgate.core.dp._opendp``)."""
    shared_data("arx/adult.csv")
    result = _probe("run", "policies/adult-dp.yaml", "--dry-run", "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr[-2000:]
    # (Prefect's temporary server logs its stop after the probe's line.)
    (imported,) = [x for x in result.stderr.splitlines() if x.startswith("imported: ")]
    assert "sklearn" not in imported and "scipy" not in imported, imported
    assert "would reserve epsilon 0.5 of the 2 left (1.5 after it)" in result.stdout
    assert "Traceback" not in result.stderr
    assert not (_private_data_dir / "privacy-ledger.sqlite").exists()
    assert not (tmp_path / "out" / "adult-dp").exists() or not any(
        (tmp_path / "out" / "adult-dp").iterdir()
    )


def test_a_person_level_dp_dry_run_through_the_cli_draws_and_creates_nothing(
    tmp_path, _private_data_dir
):
    """The hospital DP example (the patient is the privacy unit) as a user with a running
    Prefect server dry-runs it: exit 0, the spend it would reserve, and no ledger, no bounding
    secret, no release behind. (The test above runs on Prefect's temporary server; this one
    talks to the session's test server, as ``privgate run`` does when PREFECT_API_URL is set,
    instead of starting a second temporary server.)"""
    from prefect.settings import PREFECT_API_URL

    from privgate.core.dp.person_bounding import BOUNDING_SECRET_FILE
    from privgate.core.hospital_data import write_admissions_csv

    data = write_admissions_csv(tmp_path / "admissions.csv", n_patients=200, seed=3)
    result = _cli(
        "run", "policies/hospital-dp.yaml", "--dry-run", "--input", str(data),
        "--output", str(tmp_path / "out"), cwd=REPO, PREFECT_API_URL=PREFECT_API_URL.value(),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "would reserve epsilon 1 of the 4 left (3 after it)" in result.stdout
    assert "Traceback" not in result.stderr
    assert not (_private_data_dir / "privacy-ledger.sqlite").exists()
    assert not (_private_data_dir / BOUNDING_SECRET_FILE).exists()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("release.csv"))


def test_a_blocked_run_prints_its_report_path(tmp_path, capsys, monkeypatch):
    """The refusal's report path goes to stdout (scripts read it), the decision to stderr."""
    from privgate.core.exceptions import GateBlockedError
    from privgate.flows import cli

    def blocked(*args, **kwargs):
        error = GateBlockedError("gate blocked release r1: BLOCKED: 5-anonymity not met", None)
        error.report_path = str(tmp_path / "blocked" / "r1" / "report.html")
        raise error

    monkeypatch.setattr(cli, "_run_release", blocked)
    assert main(["run", str(REPO / "policies" / "adult.yaml")]) == 3
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == f"report: {tmp_path / 'blocked' / 'r1' / 'report.html'}"
    assert err.strip() == "privgate: blocked: gate blocked release r1: BLOCKED: 5-anonymity not met"


def test_a_tiered_run_prints_every_tiers_gate_line_with_its_own_flags(
    shared_data, monkeypatch, capsys
):
    """Each tier is its own release with its own gate: the earlier tiers' flags are printed
    beside their paths, not only the last tier's."""
    shared_data("arx/adult.csv")
    from privgate.flows import release

    def tier(name, rows, flags):
        measurements = {"rows": rows, "classes": 9, "min_class_size": 5, "suppressed": 0}
        return {
            "gate": {"measurements": measurements, "flags": flags},
            "path": f"/releases/adult-tiered/{name}",
            "release_id": name,
            "published": True,
        }

    releases = [tier("r-e3", 100, ["1 quasi-identifier(s) generalized away"]), tier("r-e5", 90, [])]
    outcome = {
        **releases[-1],
        "tiers": [{"tier": 3, "covers": ["age"]}, {"tier": 5, "covers": ["age", "sex"]}],
        "releases": releases,
    }
    monkeypatch.setattr(release, "release_flow", lambda parameters: outcome)
    assert main(["run", str(REPO / "policies" / "adult-tiered.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = lines.index("release: /releases/adult-tiered/r-e3")
    assert lines[first - 1] == (
        "gate: PASSED (100 rows, 9 classes, smallest class 5, 0 suppressed); "
        "FLAGGED: 1 quasi-identifier(s) generalized away"
    )
    assert "gate: PASSED (90 rows, 9 classes, smallest class 5, 0 suppressed)" in lines
    assert lines[-1] == "release: /releases/adult-tiered/r-e5"


def test_no_data_docs_reaches_the_flow_and_data_docs_stay_the_default(
    shared_data, monkeypatch, capsys
):
    """`privgate run --no-data-docs` hands ``data_docs=False`` to the release flow; without the
    flag the flow builds the Data Docs (what the flow then does with it is
    tests/tasks/test_expectation_tasks.py's)."""
    shared_data("arx/adult.csv")
    from privgate.flows import release

    seen = []

    def recorded(parameters):
        seen.append(parameters.data_docs)
        measurements = {"rows": 100, "classes": 9, "min_class_size": 5, "suppressed": 0}
        return {
            "gate": {"measurements": measurements, "flags": []},
            "path": "/releases/adult/r1",
            "release_id": "r1",
            "published": True,
        }

    monkeypatch.setattr(release, "release_flow", recorded)
    policy = str(REPO / "policies" / "adult.yaml")
    assert main(["run", policy, "--no-data-docs"]) == 0
    assert main(["run", policy]) == 0
    assert seen == [False, True]
    assert capsys.readouterr().out.splitlines()[-1] == "release: /releases/adult/r1"


def test_cli_children_use_a_throwaway_prefect_home_not_the_users():
    """The `privgate run` children above start Prefect's temporary server, whose database lives
    in PREFECT_HOME: tests/conftest.py points it at a temporary folder before Prefect is
    imported, so neither they nor this process create or migrate ~/.prefect/prefect.db."""
    from prefect.settings import PREFECT_HOME

    home = Path(os.environ["PREFECT_HOME"]).resolve()
    assert home != (Path.home() / ".prefect").resolve()
    assert Path(PREFECT_HOME.value()).resolve() == home
