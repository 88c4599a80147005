"""Tests for validations.expectations: the Great Expectations input and release suites."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from e2e_server import CHROMIUM as E2E_CHROMIUM
from e2e_server import CHROMIUM_FLAGS

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import (
    AnonymizationError,
    GateBlockedError,
    HierarchyError,
    SchemaValidationError,
)
from privgate.core.policy import ReleasePolicy, load_policy
from privgate.flows.cli import main
from privgate.validations.expectations import (
    InputContractError,
    ReleaseContractError,
    build_input_suite,
    build_release_suite,
    check_policy_input,
    format_check,
    raise_for_input,
    raise_for_release,
    report,
    typed_view,
    validate_input_expectations,
    validate_release_expectations,
    write_data_docs,
)
from privgate.validations.schema import HierarchyCoverageError, validate_input

SharedData = Callable[[str], Path]
REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(E2E_CHROMIUM)

POLICY = ReleasePolicy.model_validate(
    {
        "dataset": "toy",
        "input": {"path": "toy.csv"},
        "columns": {
            "id": {"role": "identifier", "type": "string"},
            "age": {
                "role": "quasi_identifier",
                "type": "integer",
                "minimum": 0,
                "maximum": 120,
                "hierarchy": {"kind": "interval", "bands": [10, 20]},
            },
            "sex": {
                "role": "quasi_identifier",
                "hierarchy": {"kind": "taxonomy", "tree": {"Person": ["Male", "Female"]}},
            },
            "zip": {
                "role": "quasi_identifier",
                "type": "string",
                "hierarchy": {"kind": "masking", "length": 3},
            },
            "disease": {"role": "sensitive", "categories": ["flu", "cold"]},
        },
        "privacy": {"k": 2, "suppression_limit": 0.25},
    }
)
HIERARCHIES = stages.load_hierarchies(POLICY)


def text_frame(**columns: list[str | None]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.array(cells, dtype="string") for name, cells in columns.items()})


def good_text() -> pd.DataFrame:
    return text_frame(
        id=["a", "b", "c", "d", "e", "f"],
        age=["31", "35", "38", "52", "55", "57"],
        sex=["Male", "Male", "Male", "Female", "Female", "Female"],
        zip=["123", "124", "125", "123", "124", "125"],
        disease=["flu", "cold", "flu", "cold", "flu", None],
    )


def checks(summary: dict, success: bool | None = None) -> dict[str, list[dict]]:
    """Entries by their ``check`` tag (only failing or passing ones if asked)."""
    out: dict[str, list[dict]] = {}
    for entry in summary["expectations"]:
        if success is None or entry["success"] is success:
            out.setdefault(entry["check"], []).append(entry)
    return out


def release_for(
    frame: pd.DataFrame, tmp_path: Path, policy: ReleasePolicy = POLICY, hierarchies=None
):
    """Anonymize ``frame`` (text cells), write the release and a manifest-like dict."""
    hierarchies = hierarchies or HIERARCHIES
    validated = validate_input(frame, policy, hierarchies)
    table = stages.anonymize(validated, SearchSetup.from_policy(policy, hierarchies))[-1]
    path = tmp_path / "release.csv"
    table.frame.to_csv(path, index=False)
    manifest = {
        "release_id": "2026-11-22-test",
        "input": {"rows": len(frame)},
        "output": {"rows": len(table.frame)},
        "transformation": table.result.levels or {},
    }
    return path, manifest, table


# ---------------------------------------------------------------------------------------------
# The input suite
# ---------------------------------------------------------------------------------------------


def test_input_suite_is_generated_from_the_policy():
    suite = build_input_suite(POLICY, HIERARCHIES)
    assert suite.name == "toy.input"
    by_column: dict[str | None, set[str]] = {}
    for e in suite.expectations:
        by_column.setdefault(getattr(e, "column", None), set()).add(e.expectation_type)
    assert by_column[None] == {
        "expect_table_columns_to_match_set",
        "expect_table_row_count_to_be_between",
    }
    assert by_column["id"] == {
        "expect_column_values_to_be_in_type_list",
        "expect_column_values_to_be_unique",
    }
    assert "expect_column_values_to_not_be_null" in by_column["age"]  # QIs are non-null
    assert "expect_column_values_to_be_between" in by_column["age"]
    assert "expect_column_values_to_be_in_set" in by_column["sex"]  # the taxonomy's domain
    assert "expect_column_value_lengths_to_equal" in by_column["zip"]  # masking length
    assert "expect_column_values_to_not_be_null" not in by_column["disease"]
    sex_domain = next(
        e
        for e in suite.expectations
        if getattr(e, "column", None) == "sex" and getattr(e, "value_set", None)
    )
    assert sorted(sex_domain.value_set) == ["Female", "Male"]
    rows = next(
        e
        for e in suite.expectations
        if e.expectation_type == "expect_table_row_count_to_be_between"
    )
    assert rows.min_value == POLICY.privacy.k
    # Every expectation says in words what it checks and where the policy asks for it.
    assert all(e.meta["privgate"]["text"] and e.notes for e in suite.expectations)


def test_input_suite_passes_on_a_valid_table():
    frame = validate_input(good_text(), POLICY, HIERARCHIES)
    summary = validate_input_expectations(frame, POLICY, HIERARCHIES)
    assert summary["success"], [e for e in summary["expectations"] if not e["success"]]
    assert summary["failed"] == 0 and summary["evaluated"] == len(summary["expectations"])
    assert summary["rows"] == 6 and summary["suite"] == "toy.input"
    json.dumps(summary)  # plain, JSON-ready data
    raise_for_input(summary)  # nothing to raise


def test_input_suite_names_every_failure_with_rows_and_values():
    frame = good_text()
    frame.loc[1, "id"] = "a"  # duplicate identifier
    frame.loc[2, "age"] = "1987-05-02"  # a date in the age column
    frame.loc[3, "sex"] = "Other"  # outside the taxonomy
    frame.loc[4, "zip"] = "12"  # wrong code length
    frame.loc[5, "disease"] = "plague"  # outside the declared categories
    frame.loc[0, "sex"] = None  # missing quasi-identifier
    summary = validate_input_expectations(typed_view(frame, POLICY), POLICY, HIERARCHIES)
    failed = checks(summary, success=False)
    assert set(failed) == {
        "identifier_unique",
        "type",
        "range",
        "not_null",
        "hierarchy_domain",
        "categories",
    }
    (unique,) = failed["identifier_unique"]
    assert unique["unexpected_rows"] == [0, 1] and unique["unexpected_values"] == ["a", "a"]
    (age_type,) = failed["type"]
    assert age_type["column"] == "age" and age_type["unexpected_values"] == ["1987-05-02"]
    assert age_type["unexpected_rows"] == [2]
    domains = {e["column"]: e for e in failed["hierarchy_domain"]}
    assert domains["sex"]["unexpected_values"] == ["Other"]
    assert domains["sex"]["unexpected_rows"] == [3]
    assert domains["zip"]["unexpected_values"] == ["12"]
    (null,) = failed["not_null"]
    assert null["column"] == "sex" and null["unexpected_rows"] == [0]
    (range_,) = failed["range"]  # a column holding text cannot be compared with numbers
    assert "not numbers" in format_check(range_)

    with pytest.raises(InputContractError) as info:
        raise_for_input(summary)
    message = str(info.value)
    assert isinstance(info.value, SchemaValidationError)
    assert "input fails 7 of " in message
    assert "identifier 'id' is unique: 2 unexpected value(s) at row(s) 0, 1: 'a', 'a'" in message
    assert (
        "column 'sex' in its hierarchy's domain (2 values): 1 unexpected value(s) at row(s) "
        "3: 'Other'"
    ) in message
    assert len(info.value.failures) == 7


def _one_summary_validation(suite, frame: pd.DataFrame, kind: str) -> dict:
    """Great Expectations' own validation of ``suite`` on ``frame``: one pass, ``SUMMARY``
    (data source and asset named as privgate names them: they are part of each result)."""
    import great_expectations as gx
    from great_expectations.util import convert_to_json_serializable

    context = gx.get_context(mode="ephemeral")
    batch = (
        context.data_sources.add_pandas("privgate")
        .add_dataframe_asset(kind)
        .add_batch_definition_whole_dataframe("whole table")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    result = batch.validate(
        context.suites.add(suite),
        result_format={"result_format": "SUMMARY", "partial_unexpected_count": 10},
    )
    return convert_to_json_serializable(result.to_json_dict())


def _results(result: dict) -> list[dict]:
    """Each expectation's result, without the id its context gave the expectation."""
    return [
        {**r, "expectation_config": {k: v for k, v in r["expectation_config"].items() if k != "id"}}
        for r in result["results"]
    ]


@pytest.mark.parametrize("broken", [False, True])
def test_results_are_those_of_one_summary_validation(tmp_path, broken):
    """A suite is validated in two passes: every expectation without the unexpected rows'
    index, then again with it only those that found unexpected values. Every result, the
    statistics and the verdict must be those of Great Expectations' single ``SUMMARY``
    validation (what the messages and Data Docs read): the failing ones with their rows, the
    passing ones with their empty lists."""
    frame = good_text()
    path, manifest, _ = release_for(frame, tmp_path)
    release = pd.read_csv(path, dtype=object)  # an empty cell is missing, as the suite reads it
    if broken:
        frame.loc[1, "id"] = "a"  # duplicate identifier
        frame.loc[2, "age"] = "1987-05-02"  # not a number
        frame.loc[3, "sex"] = "Other"  # outside the taxonomy
        frame.loc[0, "zip"] = None  # missing quasi-identifier
        release.loc[0, "disease"] = "*"  # a suppression marker outside the quasi-identifiers
        release.loc[2, "age"] = "*"  # a starred cell below the top level
        release.to_csv(path, index=False)
    typed = typed_view(frame, POLICY)
    runs = [
        (
            validate_input_expectations(typed, POLICY, HIERARCHIES),
            _one_summary_validation(build_input_suite(POLICY, HIERARCHIES), typed, "input"),
        ),
        (
            validate_release_expectations(path, POLICY, HIERARCHIES, manifest),
            _one_summary_validation(
                build_release_suite(POLICY, HIERARCHIES, manifest),
                release,
                "release",
            ),
        ),
    ]
    for summary, expected in runs:
        assert summary["success"] is (not broken) is expected["success"]
        assert summary["gx_result"]["statistics"] == expected["statistics"]
        assert _results(summary["gx_result"]) == _results(expected)
    if broken:  # the failing ones name their rows (the second pass ran)
        assert any(e["unexpected_rows"] for s, _ in runs for e in s["expectations"])


def test_only_values_outside_a_hierarchy_is_a_hierarchy_error():
    frame = good_text()
    frame.loc[3, "sex"] = "Other"
    summary = validate_input_expectations(typed_view(frame, POLICY), POLICY, HIERARCHIES)
    with pytest.raises(HierarchyCoverageError, match=r"at row\(s\) 3: 'Other'") as info:
        raise_for_input(summary)
    assert isinstance(info.value, HierarchyError)


def test_fewer_rows_than_k_is_an_anonymization_error():
    frame = validate_input(good_text().head(1), POLICY, HIERARCHIES)
    summary = validate_input_expectations(frame, POLICY, HIERARCHIES)
    assert [e["check"] for e in summary["expectations"] if not e["success"]] == ["row_count_k"]
    with pytest.raises(AnonymizationError, match=r"privacy\.k = 2 is larger than the table"):
        raise_for_input(summary)


def test_row_bounds_never_go_below_k():
    suite = build_input_suite(POLICY, HIERARCHIES, row_bounds=(0, 1000))
    rows = next(e for e in suite.expectations if e.meta["privgate"]["check"] == "row_count_k")
    assert (rows.min_value, rows.max_value) == (2, 1000)


def test_typed_view_keeps_unparseable_cells_as_text():
    frame = text_frame(age=["30", "x", None], zip=["123", "456", "789"])
    view = typed_view(frame, POLICY)
    assert view["age"].tolist() == [30, "x", None]
    assert view["zip"].dtype == "string"
    assert typed_view(text_frame(age=["30", "31"]), POLICY)["age"].dtype == "Int64"


# ---------------------------------------------------------------------------------------------
# The release suite
# ---------------------------------------------------------------------------------------------


def test_release_suite_passes_on_a_real_release(tmp_path):
    path, manifest, table = release_for(good_text(), tmp_path)
    summary = validate_release_expectations(path, POLICY, HIERARCHIES, manifest)
    assert summary["success"], [e for e in summary["expectations"] if not e["success"]]
    by = checks(summary)
    assert set(by) == {
        "no_identifier",
        "columns",
        "row_count_manifest",
        "row_count_suppression",
        "generalized_domain",
        "ordered_ranges",
        "suppression_marker",
        "min_class_size",
    }
    (k,) = by["min_class_size"]
    assert k["expectation"] == "expect_equivalence_class_size_to_be_at_least"
    assert k["observed"] >= 2 and k["details"]["classes_below_k"] == 0
    raise_for_release(summary)


def test_release_suite_catches_what_must_never_be_published(tmp_path):
    path, manifest, _ = release_for(good_text(), tmp_path)
    release = pd.read_csv(path, dtype=str, keep_default_na=False)
    bad = release.copy()
    bad.insert(0, "id", [f"P{i}" for i in range(len(bad))])  # the identifier came back
    bad.loc[0, "disease"] = "*"  # a suppression marker outside the quasi-identifiers
    bad.loc[1, "sex"] = "Male"  # a level-0 value where the chosen level is higher
    bad.loc[2, "age"] = "*"  # a starred cell below the top level
    bad.to_csv(path, index=False)
    summary = validate_release_expectations(path, POLICY, HIERARCHIES, manifest)
    failed = checks(summary, success=False)
    assert failed["no_identifier"][0]["observed"] == ["id"]
    assert "columns" in failed
    markers = {e["column"] for e in failed["suppression_marker"]}
    assert markers == {"disease", "age"}
    domains = {e["column"] for e in failed["generalized_domain"]}
    assert {"age"} <= domains
    with pytest.raises(ReleaseContractError, match="no direct identifier column") as info:
        raise_for_release(summary)
    assert isinstance(info.value, GateBlockedError) and info.value.exit_code == 3
    assert info.value.decision is summary


def test_release_suite_measures_classes_below_k_and_row_counts(tmp_path):
    path, manifest, _ = release_for(good_text(), tmp_path)
    release = pd.read_csv(path, dtype=str, keep_default_na=False)
    release.iloc[:1].to_csv(path, index=False)  # one row: a class of 1, rows != manifest
    summary = validate_release_expectations(path, POLICY, HIERARCHIES, manifest)
    failed = checks(summary, success=False)
    (k,) = failed["min_class_size"]
    assert k["observed"] == 1 and k["details"]["records_in_classes_below_k"] == 1
    assert failed["row_count_manifest"][0]["observed"] == 1
    assert failed["row_count_suppression"][0]["observed"] == 1


def test_min_class_size_is_measured_by_great_expectations_not_by_the_gate(tmp_path, monkeypatch):
    from privgate.core import gate as core_gate

    def no_gate(*args, **kwargs):
        raise AssertionError("the release suite must not call the gate's class statistics")

    monkeypatch.setattr(core_gate, "class_stats_of", no_gate)
    monkeypatch.setattr(core_gate, "verify_table", no_gate)
    path, manifest, _ = release_for(good_text(), tmp_path)
    summary = validate_release_expectations(path, POLICY, HIERARCHIES, manifest)
    assert checks(summary)["min_class_size"][0]["success"]


def test_release_suite_for_local_recoding_accepts_any_level(tmp_path):
    """Mondrian's release passes; an age range or value outside the declared 0-120 (the
    integer interval hierarchy's local recoding accepted any number: ``200-300``) fails."""
    policy = POLICY.with_overrides(**{"algorithm.name": "mondrian"})
    path, manifest, _ = release_for(good_text(), tmp_path, policy)
    assert manifest["transformation"] == {}
    summary = validate_release_expectations(path, policy, HIERARCHIES, manifest)
    assert summary["success"], [e for e in summary["expectations"] if not e["success"]]
    release = pd.read_csv(path, dtype=object)
    assert release["age"].str.fullmatch(r"\d+-\d+").all()  # ranges (31-38, 52-57)
    outside = ["200-300", "121", "30-130", "-5-30", "28.5-32", "[30, 40)"]
    release.loc[release.index[: len(outside)], "age"] = outside
    release.to_csv(path, index=False)
    summary = validate_release_expectations(path, policy, HIERARCHIES, manifest)
    [failed] = checks(summary, success=False)["generalized_domain"]
    assert failed["column"] == "age" and failed["unexpected_count"] == len(outside)
    suite = build_release_suite(policy, HIERARCHIES, manifest)
    assert not any(
        e.meta["privgate"]["check"] == "suppression_marker" and e.column in policy.quasi_identifiers
        for e in suite.expectations
    )


def test_release_suite_refuses_ranges_that_hold_no_number(tmp_path):
    """Mondrian's ranges are "lo-hi" with lo < hi; a range with its ends swapped ("57-31") or
    a half-open one that is empty passed every check (the domain checks take each end alone),
    stating an age no record has. Every such cell is now an unexpected value; the release's
    own ranges and a width-1 band ("30-30") still pass."""
    policy = POLICY.with_overrides(**{"algorithm.name": "mondrian"})
    path, manifest, _ = release_for(good_text(), tmp_path, policy)
    release = pd.read_csv(path, dtype=object)
    inverted = ["57-31", "38-31", "120-0"]
    release.loc[release.index[: len(inverted)], "age"] = inverted
    release.to_csv(path, index=False)
    summary = validate_release_expectations(path, policy, HIERARCHIES, manifest)
    failed = checks(summary, success=False)
    # Each end is an age of the declared range, so the domain check passes them; the changed
    # cells also split classes (min_class_size), which says nothing of the ranges.
    assert set(failed) == {"ordered_ranges", "min_class_size"}, failed
    [ordered] = failed["ordered_ranges"]
    assert ordered["column"] == "age" and ordered["unexpected_count"] == len(inverted)
    assert set(ordered["unexpected_values"]) == set(inverted)
    assert "every range holds a number" in format_check(ordered)
    with pytest.raises(ReleaseContractError, match="57-31"):
        raise_for_release(summary)


@pytest.mark.parametrize(
    ("cell", "ordered"),
    [
        ("31-57", True),
        ("30-30", True),
        ("57-31", False),
        ("-5--3", True),
        ("-3--5", False),
        ("28.5-32", True),
        ("32-28.5", False),
        ("[30.0, 40.0)", True),
        ("[40.0, 40.0)", False),
        ("[50, 40)", False),
        ("2020-05", False),
        ("Male", True),
        ("*", True),
        ("", True),
    ],
)
def test_is_ordered_range(cell, ordered):
    from privgate.validations.expectations._gx import is_ordered_range

    assert is_ordered_range(cell) is ordered
    assert is_ordered_range(cell, {cell}) is True  # a hierarchy's own label, as it is


def test_release_suite_accepts_local_recoding_ranges_of_a_numeric_column_with_a_label_hierarchy(
    adult, tmp_path
):
    """Adult's ``age`` is an integer column with ARX's label hierarchy: Mondrian labels a region
    with its smallest and largest age (``"28-32"``), which no level of that hierarchy lists. The
    suite accepts such ranges (it blocked every Mondrian release of ``policies/adult.yaml``)
    and still refuses a cell that is neither a number, a range nor a label, and a range or
    number outside the hierarchy's domain of ages 1-100 (it accepted ``200-300``)."""
    policy = adult.policy.with_overrides(algorithm={"name": "mondrian"})
    [table] = stages.anonymize(adult.frame, SearchSetup.from_policy(policy, adult.hierarchies))
    assert table.frame["age"].str.fullmatch(r"\d+-\d+").any()  # ranges, not hierarchy labels
    manifest = {
        "release_id": "2026-11-26-test",
        "input": {"rows": len(adult.frame)},
        "output": {"rows": len(table.frame)},
        "transformation": {},
    }
    path = tmp_path / "release.csv"
    table.frame.to_csv(path, index=False)
    summary = validate_release_expectations(path, policy, adult.hierarchies, manifest)
    assert summary["success"], [e for e in summary["expectations"] if not e["success"]]
    outside = ["about 30", "200-300", "0-30", "30-101", "101", "28.5-32", "-5-30"]
    tampered = table.frame.copy()
    tampered.loc[tampered.index[: len(outside)], "age"] = outside
    tampered.to_csv(path, index=False)
    summary = validate_release_expectations(path, policy, adult.hierarchies, manifest)
    [failed] = checks(summary, success=False)["generalized_domain"]
    assert failed["column"] == "age" and failed["unexpected_count"] == len(outside)


# ---------------------------------------------------------------------------------------------
# Data Docs, offline
# ---------------------------------------------------------------------------------------------


def _summaries(tmp_path: Path) -> list[dict]:
    frame = validate_input(good_text(), POLICY, HIERARCHIES)
    input_summary = validate_input_expectations(frame, POLICY, HIERARCHIES, run_name="r1")
    path, manifest, _ = release_for(good_text(), tmp_path)
    return [input_summary, validate_release_expectations(path, POLICY, HIERARCHIES, manifest)]


def test_data_docs_for_both_suites(tmp_path):
    docs = write_data_docs(_summaries(tmp_path), tmp_path / "docs")
    assert set(docs) == {"input", "release"}
    for kind, index in docs.items():
        html = Path(index).read_text(encoding="utf-8")
        # The static summary: readable without the CDN scripts that fill GE's own tables.
        assert f"toy.{kind}: PASSED" in html
        assert 'id="privgate-offline"' in html
        (page,) = (Path(index).parent / "validations").rglob("*.html")
        page_html = page.read_text(encoding="utf-8")
        assert "Expectation Validation Result" in page_html
        assert 'id="privgate-offline"' in page_html
        assert (Path(index).parent / "expectations" / "toy" / f"{kind}.html").is_file()
    release_html = Path(docs["release"]).read_text(encoding="utf-8")
    assert "every equivalence class over the 3 quasi-identifiers holds at least k = 2" in (
        release_html
    )
    page = next((Path(docs["release"]).parent / "validations").rglob("*.html"))
    assert "Every equivalence class over age, sex, zip must hold at least 2 records" in (
        visible_text(page.read_text())
    )


def test_everything_runs_offline_with_analytics_off(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("Great Expectations tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    docs = write_data_docs(_summaries(tmp_path), tmp_path / "docs")
    assert Path(docs["release"]).is_file()
    assert os.environ["GX_ANALYTICS_ENABLED"] == "false"


def test_report_drops_the_great_expectations_payloads(tmp_path):
    data = report(_summaries(tmp_path))
    assert set(data) == {"input", "release"}
    assert not any(key.startswith("gx_") for s in data.values() for key in s)
    json.dumps(data)


def visible_text(html: str) -> str:
    """The text of an HTML page, tags dropped and whitespace collapsed."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _render(url: str, tmp_path: Path) -> str:
    """The DOM after Chromium has loaded the page (headless, no network)."""
    result = subprocess.run(
        [
            str(CHROMIUM),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return visible_text(result.stdout)


@pytest.mark.slow
def test_adult_data_docs_render_in_chromium(shared_data: SharedData, tmp_path):
    """Input and release Data Docs of a real Adult run, opened in headless Chromium."""
    shared_data("arx/adult.csv")
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} not found (apt-get install -y chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    policy = load_policy(REPO / "policies" / "adult.yaml")
    hierarchies = stages.load_hierarchies(policy)
    ingested = stages.ingest(policy)
    frame = validate_input(ingested.frame, policy, hierarchies)
    input_summary = validate_input_expectations(frame, policy, hierarchies)
    path, manifest, _ = release_for(ingested.frame, tmp_path, policy, hierarchies)
    release_summary = validate_release_expectations(path, policy, hierarchies, manifest)
    assert input_summary["success"] and release_summary["success"]
    docs = write_data_docs([input_summary, release_summary], tmp_path / "docs")

    index = _render(Path(docs["input"]).as_uri(), tmp_path)
    assert "adult.input: PASSED, 29 of 29 expectations met" in index
    assert "column 'native-country' in its hierarchy's domain (41 values)" in index
    index = _render(Path(docs["release"]).as_uri(), tmp_path)
    assert "adult.release: PASSED, 21 of 21 expectations met" in index
    assert "every equivalence class over the 8 quasi-identifiers holds at least k = 5" in index
    page = next((Path(docs["release"]).parent / "validations").rglob("*.html"))
    rendered = _render(page.as_uri(), tmp_path)
    assert "Expectation Validation Result" in rendered
    assert "Must have exactly 29610 rows." in rendered
    assert "smallest class size, k-anonymity" in rendered


# ---------------------------------------------------------------------------------------------
# privgate validate
# ---------------------------------------------------------------------------------------------


def test_check_policy_input_reports_schema_and_expectations(tmp_path):
    data = tmp_path / "toy.csv"
    good_text().to_csv(data, index=False)
    policy = POLICY.with_overrides(**{"input.path": str(data)})
    outcome = check_policy_input(policy, docs_dir=tmp_path / "docs")
    assert outcome["valid"] and outcome["schema"]["success"]
    assert outcome["input"]["rows"] == 6 and outcome["input"]["sha256"]
    assert Path(outcome["data_docs"]["input"]).is_file()


def test_validate_command_on_adult(shared_data: SharedData, capsys):
    shared_data("arx/adult.csv")
    code = main(["validate", str(REPO / "policies" / "adult.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "rows:     30162" in out
    assert "columns:  9: sex, age, race" in out
    assert "schema:   OK (pandera): 9 columns match the policy" in out
    assert "expectations: 29 of 29 passed (Great Expectations suite adult.input)" in out
    assert "  PASS  column 'age': 1 <= value <= 100" in out
    assert out.rstrip().endswith("result:   VALID")


def test_validate_command_json_and_exit_code(tmp_path, capsys):
    data = tmp_path / "toy.csv"
    frame = good_text()
    frame.loc[2, "sex"] = "Other"
    frame.to_csv(data, index=False)
    policy = tmp_path / "toy.yaml"
    spec = POLICY.model_dump(mode="json")
    spec["input"]["path"] = str(data)
    policy.write_text(json.dumps(spec))  # JSON is YAML
    assert main(["validate", str(policy), "--json"]) == 2
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["valid"] is False
    assert outcome["schema"]["error"] == "HierarchyCoverageError"
    assert outcome["input"]["rows"] == 6
    assert outcome["expectations"]["failed"] == 1
    assert not any(key.startswith("gx_") for key in outcome["expectations"])


@pytest.mark.slow
def test_validate_command_needs_no_prefect(tmp_path):
    """A fresh process: the command imports neither Prefect nor starts a server."""
    data = tmp_path / "toy.csv"
    good_text().to_csv(data, index=False)
    policy = tmp_path / "toy.yaml"
    spec = POLICY.model_dump(mode="json")
    spec["input"]["path"] = str(data)
    policy.write_text(json.dumps(spec))
    code = (
        "import sys; from privgate.flows.cli import main; rc = main(['validate', sys.argv[1]]); "
        "assert 'prefect' not in sys.modules, 'prefect was imported'; sys.exit(rc)"
    )
    env = {k: v for k, v in os.environ.items() if k != "GX_ANALYTICS_ENABLED"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(policy)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result:   VALID" in result.stdout
    assert "Calculating Metrics" not in result.stderr  # no progress bars
