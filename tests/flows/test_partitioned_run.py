"""`privgate run` switches to the partitioned path by itself above its stated size (issue 18).

Real data: scaled Adult (60,000 rows, made as ../shared/tools/make_scaled_adult.py makes it)
with PRIVGATE_PARTITIONED_MIN_ROWS lowered, so that a small table takes the path a 10M-row
nightly table takes by default.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from adult_reference import ADULT_POLICY, ADULT_QI, write_resampled_adult
from task_runs import final_task_states

from privgate.flows.cli import main


@pytest.fixture(scope="module")
def scaled_csv(shared_data, tmp_path_factory) -> Path:
    """60,000 rows resampled from Adult with p = 0.3 per quasi-identifier cell."""
    folder = tmp_path_factory.mktemp("auto")
    return write_resampled_adult(
        shared_data("arx/adult.csv"), folder / "adult_60k.csv", rows=60_000, seed=18
    )


def _main(*args: str) -> tuple[int, str, str]:
    """``privgate ARGS`` in this process, its output captured without capsys: Prefect's
    console log handler must not be bound to a per-test stream that pytest closes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _run(*args: str) -> tuple[int, str, str]:
    return _main("run", str(ADULT_POLICY), "--release-date", "2026-11-26", *args)


def _release_rows(frame: pd.DataFrame) -> list[tuple]:
    text = frame.astype("string").fillna("<NA>")
    return sorted(map(tuple, text.itertuples(index=False)))


def test_above_the_threshold_run_takes_the_partitioned_path_and_publishes_the_same_release(
    scaled_csv, tmp_path, monkeypatch
):
    """The auto path's release is verified on its written parts and equals the in-memory
    path's: the same levels, suppressed records, rows (up to order), loss and precision; the
    input suites ran on the seeded sample the manifest and the report state."""
    from privgate.core.scale import verify_parquet_release

    monkeypatch.setenv("PRIVGATE_PARTITIONED_MIN_ROWS", "50000")
    monkeypatch.setenv("PRIVGATE_EXPECTATIONS_MAX_ROWS", "20000")
    code, out, _ = _run("--input", str(scaled_csv), "--output", str(tmp_path / "auto"))
    assert code == 0, out
    engine_line = out.splitlines()[0]
    assert engine_line.startswith("engine: partitioned path (")
    assert "rows estimated" in engine_line and "PRIVGATE_PARTITIONED_MIN_ROWS=50,000" in engine_line
    assert "validation: schema and input suite on a seeded sample of 20,000 of 60,000 rows" in out
    (auto,) = (tmp_path / "auto" / "adult").iterdir()
    manifest = json.loads((auto / "manifest.json").read_text())
    assert manifest["engine"]["path"] == "partitioned"
    assert manifest["gate"]["passed"] is True
    assert manifest["expectations"]["input"]["sample"] == {
        "rows": 20_000, "of_rows": 60_000, "seed": 0,
        "note": manifest["expectations"]["input"]["sample"]["note"],
    }  # fmt: skip
    assert manifest["expectations"]["input"]["success"] is True
    # The schema ran on that sample too (review9 F4), the sensitive values on every row.
    assert manifest["input"]["validated"] == {
        "schema": {"rows": 20_000, "of_rows": 60_000, "seed": 0},
        "sensitive_values": "every row",
    }
    report = (auto / "report.html").read_text()
    assert "a seeded random sample of 20,000 of 60,000 rows (seed 0)" in report

    code, out, _ = _run(  # the reference: its manifest and rows, not its HTML pages
        "--input", str(scaled_csv), "--output", str(tmp_path / "mem"), "--engine", "memory",
        "--no-data-docs",
    )  # fmt: skip
    assert code == 0, out
    assert out.splitlines()[0] == "engine: in-memory path (--engine memory)"
    (mem,) = (tmp_path / "mem" / "adult").iterdir()
    memory = json.loads((mem / "manifest.json").read_text())
    assert manifest["transformation"] == memory["transformation"]
    assert manifest["metrics"]["suppressed"] == memory["metrics"]["suppressed"] > 0
    for key in ("loss", "granularity", "precision"):
        assert manifest["metrics"][key] == pytest.approx(memory["metrics"][key], abs=1e-12)
    assert manifest["output"]["rows"] == memory["output"]["rows"]
    assert manifest["input"]["sha256"] == memory["input"]["sha256"]
    parts = pd.read_parquet(auto / "release")
    written = pd.read_csv(mem / "release.csv", dtype=str, keep_default_na=False, na_values=[""])
    assert list(parts.columns) == list(written.columns)
    assert _release_rows(parts) == _release_rows(written)

    from privgate.core.anonymize import SearchSetup
    from privgate.core.policy import load_policy

    setup = SearchSetup.from_policy(load_policy(ADULT_POLICY))
    again = verify_parquet_release(
        auto / "release", ADULT_QI, list(setup.models), **setup.gate_limits(60_000)
    )
    assert again.passed and again.measurements["min_class_size"] >= 5


def test_a_policy_the_partitioned_path_cannot_honour_is_refused_before_prefect_starts(
    scaled_csv, tmp_path, monkeypatch
):
    import privgate.flows.release as release_module

    def never(*args, **kwargs):
        raise AssertionError("the flow started")

    monkeypatch.setattr(release_module, "release_flow", never)
    monkeypatch.setenv("PRIVGATE_PARTITIONED_MIN_ROWS", "50000")
    policy = tmp_path / "mondrian.yaml"
    text = ADULT_POLICY.read_text().replace("name: optimal\n  metric: loss", "name: mondrian")
    text = text.replace("../../shared", str(ADULT_POLICY.parents[2] / "shared"))
    text = text.replace("directory: ../releases", f"directory: {tmp_path / 'out'}")
    policy.write_text(text)
    code, _, err = _main("run", str(policy), "--input", str(scaled_csv))
    assert code == 2
    assert "cannot honour algorithm.name mondrian" in err
    assert "--engine memory" in err and "PRIVGATE_PARTITIONED_MIN_ROWS" in err
    assert not (tmp_path / "out").exists()


def test_an_invalid_value_stops_the_partitioned_run_before_anything_is_written(
    scaled_csv, tmp_path, monkeypatch
):
    """The schema runs on the partitioned path too: a salary class outside the declared
    categories (a sensitive cell, which the search and the gate accept) stops the run with
    the row named, and nothing is published."""
    monkeypatch.setenv("PRIVGATE_PARTITIONED_MIN_ROWS", "50000")
    lines = scaled_csv.read_text(encoding="utf-8").splitlines()
    fields = lines[4001].split(";")
    fields[-1] = "maybe"
    lines[4001] = ";".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = _run("--input", str(bad), "--output", str(tmp_path / "out"))
    assert code == 2, err
    assert out.startswith("engine: partitioned path")
    assert "salary-class" in err and "'maybe'" in err and "4000" in err
    assert not list((tmp_path / "out").rglob("manifest.json"))


def test_a_folder_of_parquet_parts_is_sized_by_its_metadata_and_a_dry_run_publishes_nothing(
    shared_data, tmp_path, monkeypatch
):
    """`--input FOLDER` of Parquet parts (scaled Adult as `privgate.core.scaled_adult` writes
    it) is read as Parquet; its exact row count comes from the parts' metadata; a dry run
    verifies the written parts and leaves nothing behind."""
    from privgate.core.scaled_adult import write_scaled_adult

    shared_data("arx/adult.csv")
    table = write_scaled_adult(45_000, tmp_path / "parts", rows_per_part=20_000)
    monkeypatch.setenv("PRIVGATE_PARTITIONED_MIN_ROWS", "40000")
    out_dir = tmp_path / "out"
    code, out, err = _run("--input", str(table.folder), "--output", str(out_dir), "--dry-run")
    assert code == 0, err
    assert out.splitlines()[0].startswith(
        "engine: partitioned path (45,000 rows (Parquet metadata of 3 file(s)) >= "
        "PRIVGATE_PARTITIONED_MIN_ROWS=40,000"
    )
    assert "gate: PASSED (" in out
    assert "dry run: release " in out and "verified, nothing published" in out
    assert list((out_dir / "adult").iterdir()) == []


def test_l_diversity_and_t_closeness_hold_alike_on_both_paths(scaled_csv, tmp_path):
    """The models the partitioned path accepts besides k (distinct 2-diversity and
    0.3-closeness of the salary class, against the input's distribution counted in one more
    pass) give the in-memory path's levels, suppression and measured levels."""
    text = ADULT_POLICY.read_text().replace("../../shared", str(ADULT_POLICY.parents[2] / "shared"))
    text = text.replace(
        "  suppression_limit: 0.02\n",
        "  suppression_limit: 0.02\n"
        "  l_diversity: [{column: salary-class, l: 2}]\n"
        "  t_closeness: [{column: salary-class, t: 0.3}]\n",
    )
    policy = tmp_path / "adult-lt.yaml"
    policy.write_text(text)
    manifests = {}
    for engine in ("partitioned", "memory"):
        out = tmp_path / engine
        args = ["--input", str(scaled_csv), "--output", str(out), "--engine", engine]
        if engine == "memory":  # the reference: its manifest, not its HTML pages
            args.append("--no-data-docs")
        code, _, err = _main("run", str(policy), "--release-date", "2026-11-26", *args)
        assert code == 0, err
        (folder,) = (out / "adult").iterdir()
        manifests[engine] = json.loads((folder / "manifest.json").read_text())
    part, mem = manifests["partitioned"], manifests["memory"]
    assert part["engine"]["path"] == "partitioned" and "engine" not in mem
    assert part["transformation"] == mem["transformation"]
    assert part["metrics"]["suppressed"] == mem["metrics"]["suppressed"]
    achieved = part["gate"]["measurements"]["achieved"]
    assert achieved == pytest.approx(mem["gate"]["measurements"]["achieved"])
    assert achieved["distinct-2-diversity(salary-class)"] >= 2
    assert achieved["0.3-closeness(salary-class, equal distance)"] <= 0.3


def test_a_blocked_partitioned_release_leaves_its_report_and_publishes_nothing(
    scaled_csv, tmp_path
):
    """A loss limit the release cannot meet (utility.thresholds.max_loss, counted on the
    frequency set) blocks it after the gate, as in the release flow: exit 3, the report at
    <output>/<dataset>/blocked/<release-id>/report.html naming the limit, no release."""
    text = ADULT_POLICY.read_text().replace("../../shared", str(ADULT_POLICY.parents[2] / "shared"))
    policy = tmp_path / "adult-strict.yaml"
    policy.write_text(text + "\nutility:\n  clusters: []\n  thresholds: {max_loss: 0.01}\n")
    out = tmp_path / "out"
    code, stdout, stderr = _main("run", str(policy), "--input", str(scaled_csv), "--output",
                                 str(out), "--engine", "partitioned", "--release-date",
                                 "2026-11-26")  # fmt: skip
    assert code == 3, stderr
    assert "utility gate blocked release" in stderr and "max_loss" in stderr
    (report,) = (out / "adult" / "blocked").glob("*/report.html")
    assert f"report: {report}" in stdout
    html = report.read_text()
    assert "blocked" in html and "max_loss" in html and "Privacy gate" in html
    assert [p.name for p in (out / "adult").iterdir()] == ["blocked"]


def _task_states(flow_run_id, *expected: str) -> dict[str, str]:
    """Task name -> state name of one flow run, read through the API once the ``expected``
    tasks are recorded."""
    states = final_task_states(flow_run_id, *expected)
    return {name: state.name for name, state in states.items()}


#: The stages of a partitioned run up to its gate.
_TO_THE_GATE = ("frequency-set", "validate-sample", "search", "generalize-write", "verify-and-gate")


def test_a_run_that_failed_at_the_gate_is_retried_from_its_cached_search_and_publishes_once(
    task_run_records, scaled_csv, tmp_path, monkeypatch
):
    """The gate's read of the written parts fails (an I/O error): nothing is published and
    no staging folder is left. The retry takes the frequency set, the validation and the search
    from their persisted results (Cached), writes the parts again and runs the gate on exactly
    the parts it wrote, then publishes once; a third run finds the release in place."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.partitioned import partitioned_release_flow
    from privgate.tasks import scale as scale_tasks

    out = tmp_path / "out"
    params = ReleaseParameters(
        policy_path=str(ADULT_POLICY),
        release_date=date(2026, 11, 27),
        k=6,  # a k no other test uses: the first run computes every stage itself
        overrides={"input.path": str(scaled_csv), "output.directory": str(out)},
    )
    real_verify = scale_tasks.verify_stage

    def failing_verify(parts, *args, **kwargs):
        assert list(Path(parts).glob("*.parquet"))  # written, then the read fails
        raise OSError(5, "I/O error while reading the parts")

    monkeypatch.setattr(scale_tasks, "verify_stage", failing_verify)
    failed = partitioned_release_flow(params, return_state=True)
    assert failed.is_failed() and "I/O error" in failed.message
    first = _task_states(failed.state_details.flow_run_id, *_TO_THE_GATE)
    for stage in ("frequency-set", "validate-sample", "search", "generalize-write"):
        assert first[stage] == "Completed", (stage, first)
    assert first["verify-and-gate"] == "Failed" and "publish" not in first
    assert list((out / "adult").iterdir()) == []  # no release, no staging folder

    verified: list[tuple[Path, list[str]]] = []

    def counting_verify(parts, *args, **kwargs):
        verified.append((Path(parts), sorted(p.name for p in Path(parts).glob("*.parquet"))))
        return real_verify(parts, *args, **kwargs)

    monkeypatch.setattr(scale_tasks, "verify_stage", counting_verify)
    retried = partitioned_release_flow(params, return_state=True)
    assert retried.is_completed(), retried.message
    second = _task_states(retried.state_details.flow_run_id, *_TO_THE_GATE, "publish")
    for stage in ("frequency-set", "validate-sample", "search"):
        assert second[stage] == "Cached", (stage, second)
    for stage in ("generalize-write", "verify-and-gate", "publish"):
        assert second[stage] == "Completed", (stage, second)
    (release,) = (out / "adult").iterdir()
    manifest = json.loads((release / "manifest.json").read_text())
    ((gated, parts),) = verified  # the gate ran once, on this run's staged parts
    assert gated.parent.name.startswith(f".staging-{release.name}-") and parts
    published_parts = sorted(p.name for p in (release / "release").iterdir())
    assert manifest["output"]["parts"] == parts == published_parts
    assert manifest["gate"]["passed"] and manifest["policy"]["privacy"]["k"] == 6
    assert retried.result()["already_published_by"] is None

    again = partitioned_release_flow(params, return_state=True)
    assert again.is_completed() and "already published by run" in again.message
    assert list((out / "adult").iterdir()) == [release] and len(verified) == 2
    assert json.loads((release / "manifest.json").read_text()) == manifest


def test_an_input_rewritten_while_the_run_reads_it_is_refused_not_published(
    scaled_csv, tmp_path, monkeypatch
):
    """The partitioned path reads its input in several passes (frequency set, sample, write)
    after fingerprinting it once; a nightly export rewriting the file in place between them
    made a release from rows other than those searched and validated, published under the
    first file's sha256 (review9 F3). Here the rows are put in reverse order just before the
    write pass (same rows, so the gate itself passes): the run is refused, nothing published,
    no staging folder left."""
    from privgate.flows.parameters import ReleaseParameters
    from privgate.flows.partitioned import partitioned_release_flow
    from privgate.tasks import scale as scale_tasks

    source = tmp_path / "nightly.csv"
    source.write_bytes(scaled_csv.read_bytes())
    out = tmp_path / "out"
    params = ReleaseParameters(
        policy_path=str(ADULT_POLICY),
        release_date=date(2026, 11, 28),
        k=7,
        overrides={"input.path": str(source), "output.directory": str(out)},
    )
    real_write = scale_tasks.write_stage

    def rewritten_then_write(*args, **kwargs):
        header, *rows = source.read_text(encoding="utf-8").splitlines(keepends=True)
        source.write_text(header + "".join(reversed(rows)), encoding="utf-8")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(scale_tasks, "write_stage", rewritten_then_write)
    state = partitioned_release_flow(params, return_state=True)
    assert state.is_failed(), state.message
    assert "changed while" in state.message
    assert list((out / "adult").iterdir()) == []  # no release, no staging folder
