"""Pre-flight: every problem it can see before Prefect starts, named; nothing the pipeline
accepts is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from privgate.core.exceptions import AnonymizationError, HierarchyError, IngestError
from privgate.core.policy import load_policy
from privgate.core.preflight import preflight
from privgate.core.stages import ingest, load_hierarchies
from privgate.validations.schema import validate_input

POLICIES = Path(__file__).resolve().parents[2] / "policies"


@pytest.fixture(scope="module")
def adult_lines(shared_data) -> list[str]:
    """The header and the first 300 records of ARX's Adult table."""
    with open(shared_data("arx/adult.csv"), encoding="utf-8") as fh:
        return [next(fh) for _ in range(301)]


def _policy(tmp_path: Path, lines: list[str], **overrides):
    data = tmp_path / "adult.csv"
    data.write_text("".join(lines), encoding="utf-8")
    policy = load_policy(POLICIES / "adult.yaml")
    return policy.with_overrides(**{"input.path": str(data), **overrides})


def test_adult_passes_whole(shared_data):
    shared_data("arx/adult.csv")
    report = preflight(load_policy(POLICIES / "adult.yaml"))
    assert report.complete and report.rows_checked == 30162
    assert len(report.hierarchies) == 8 and len(report.columns) == 9
    assert "8 hierarchies cover all records" in report.summary()


def test_missing_input_is_named(tmp_path, adult_lines):
    policy = _policy(tmp_path, adult_lines, **{"input.path": str(tmp_path / "nope.csv")})
    with pytest.raises(IngestError, match=r"input file not found: .*nope.csv \(input.path\)"):
        preflight(policy)


def test_a_renamed_column_is_named(tmp_path, adult_lines):
    lines = [adult_lines[0].replace("occupation", "job"), *adult_lines[1:]]
    with pytest.raises(IngestError) as err:
        preflight(_policy(tmp_path, lines))
    assert "missing column(s) ['occupation']" in str(err.value)
    assert "unexpected column(s) ['job']" in str(err.value)


def test_a_wrong_delimiter_is_named(tmp_path, adult_lines):
    lines = [line.replace(";", ",") for line in adult_lines]
    with pytest.raises(IngestError, match="input.delimiter"):
        preflight(_policy(tmp_path, lines))


def test_an_uncovered_value_is_named_with_its_column(tmp_path, adult_lines):
    lines = list(adult_lines)
    lines[120] = lines[120].replace("United-States", "Atlantis", 1)
    assert "Atlantis" in lines[120]
    with pytest.raises(HierarchyError, match=r"'native-country'.*not covered.*'Atlantis'"):
        preflight(_policy(tmp_path, lines))


def test_a_missing_hierarchy_file_is_named(tmp_path, adult_lines):
    policy = _policy(tmp_path, adult_lines, **{"columns.sex.hierarchy.path": "/nope/sex.csv"})
    with pytest.raises(HierarchyError, match="/nope/sex.csv"):
        preflight(policy)


def test_k_larger_than_the_table_is_refused_before_any_run(tmp_path, adult_lines):
    with pytest.raises(AnonymizationError, match=r"privacy.k = 301 is larger than the table"):
        preflight(_policy(tmp_path, adult_lines, **{"privacy.k": 301}))


def test_numbers_are_compared_as_the_pipeline_compares_them(tmp_path, adult_lines):
    """'039' in an integer column is the value 39 after coercion: covered, not refused. The
    pipeline's own stages accept the same file, so pre-flight is not stricter than they are."""
    lines = list(adult_lines)
    lines[5] = lines[5].replace(";39;", ";039;", 1) if ";39;" in lines[5] else lines[5]
    lines[1] = "Male;039;White;Never-married;Bachelors;United-States;State-gov;Adm-clerical;<=50K\n"
    policy = _policy(tmp_path, lines)
    preflight(policy)
    validated = validate_input(ingest(policy).frame, policy, load_hierarchies(policy))
    assert 39 in set(validated["age"])


def test_a_large_input_is_checked_up_to_the_row_limit(tmp_path, adult_lines):
    lines = list(adult_lines)
    lines[250] = lines[250].replace("United-States", "Atlantis", 1)
    report = preflight(_policy(tmp_path, lines), max_rows=100)
    assert not report.complete and report.rows_checked == 100
    assert "the first 100 records" in report.summary()


def test_dp_policies_do_not_refuse_values_outside_the_declared_domain(tmp_path, adult_lines):
    """A DP release excludes such records by design (see docs/PRIVACY.md)."""
    lines = list(adult_lines)
    lines[120] = lines[120].replace("United-States", "Atlantis", 1)
    data = tmp_path / "adult.csv"
    data.write_text("".join(lines), encoding="utf-8")
    policy = load_policy(POLICIES / "adult-dp.yaml").with_overrides(**{"input.path": str(data)})
    assert preflight(policy).hierarchies
