"""The bad-input corpus: every way a real input arrives broken stops the release.

For each item: the pipeline's stages (in the release flow's order, up to anonymization) raise
the item's own error type with a message naming the row, column or line; ``privgate run``
exits 2 with that message on one line and publishes nothing; ``privgate validate`` exits 2; and
the input file's sha256 is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from bad_input_corpus import GOOD_ROWS, HEADER, Case, csv_text, sha256

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import (
    AnonymizationError,
    HierarchyError,
    IngestError,
    PrivgateError,
    SchemaValidationError,
)
from privgate.core.ingest import MAX_FIELD_CHARS
from privgate.core.policy import load_policy
from privgate.validations.expectations import (
    InputContractError,
    raise_for_input,
    validate_input_expectations,
)
from privgate.validations.schema import HierarchyCoverageError, validate_input

RELEASE_DATE = "2026-11-22"


def rows_with(changes: dict[tuple[int, str], str]) -> list[list[str]]:
    """The good rows with some cells replaced: ``{(row, column): text}``."""
    rows = [list(r) for r in GOOD_ROWS]
    for (i, column), value in changes.items():
        rows[i][HEADER.index(column)] = value
    return rows


def latin1_file() -> bytes:
    rows = rows_with({(4, "notes"): "Zürich"})
    return csv_text(rows).encode("latin-1")


def runaway_quote_file() -> str:
    """An unbalanced quote in a big file: its field swallows the rest of the file."""
    rows = rows_with({(2, "notes"): '"never closed'})
    filler = [[f"Q{i:06d}", "31", "Male", "12341", "flu", "x" * 40] for i in range(4000)]
    return csv_text(rows + filler)


@dataclass
class Item:
    """One corpus item: a file (or a k) and what refusing it must look like."""

    data: str | bytes | Callable[[], str | bytes]
    error: type[PrivgateError]
    fragments: list[str]
    k: int = 2
    marks: list = field(default_factory=list)


CORPUS: dict[str, Item] = {
    "unbalanced_quote": Item(
        csv_text(rows_with({(3, "notes"): '"oops'})),
        IngestError,
        ["line 5", "unbalanced quote", "never closed"],
    ),
    "unbalanced_quote_runaway_field": Item(
        runaway_quote_file,
        IngestError,
        ["line 4", f"longer than {MAX_FIELD_CHARS} characters"],
    ),
    "wrong_delimiter": Item(
        csv_text(GOOD_ROWS, sep=";"),
        IngestError,
        ["line 1", "splits into 6 columns on ';'", "set input.delimiter"],
    ),
    "stray_delimiter": Item(
        csv_text(rows_with({(2, "notes"): "ok,stray"})),
        IngestError,
        ["line 4", "ragged row with 7 field(s), expected 6", "stray delimiter"],
    ),
    "ragged_short_row": Item(
        csv_text(GOOD_ROWS[:5] + [GOOD_ROWS[5][:4]] + GOOD_ROWS[6:]),
        IngestError,
        ["line 7", "ragged row with 4 field(s), expected 6"],
    ),
    "utf16_byte_order_mark": Item(
        csv_text(GOOD_ROWS).encode("utf-16"),
        IngestError,
        ["line 1", "UTF-16 byte-order mark", "set input.encoding: utf-16"],
    ),
    "non_utf8_encoding": Item(
        latin1_file,
        IngestError,
        ["line 6", "not valid utf-8 text", "byte offset", "input.encoding"],
    ),
    "empty_file": Item(b"", IngestError, ["the file is empty"]),
    "blank_lines_only": Item("\n\n\n", IngestError, ["the file is empty"]),
    "header_only": Item(csv_text([]), IngestError, ["no data rows (only a header)"]),
    "duplicate_column_names": Item(
        csv_text(GOOD_ROWS, header=[*HEADER[:5], "age"]),
        IngestError,
        ["line 1", "duplicate column name 'age'"],
    ),
    "missing_column": Item(
        csv_text([r[:5] for r in GOOD_ROWS], header=HEADER[:5]),
        SchemaValidationError,
        ["missing column 'notes' (declared in the policy)"],
    ),
    "unexpected_column_forgotten_identifier": Item(
        csv_text(
            [[*r, f"123-45-{i:04d}"] for i, r in enumerate(GOOD_ROWS)], header=[*HEADER, "ssn"]
        ),
        SchemaValidationError,
        ["unexpected column 'ssn' (not declared in the policy)"],
    ),
    "date_in_the_age_column": Item(
        csv_text(rows_with({(2, "age"): "1987-05-02"})),
        SchemaValidationError,
        ["column 'age' at row 2", "'1987-05-02'", "Int64"],
    ),
    "age_out_of_range": Item(
        csv_text(rows_with({(0, "age"): "130"})),
        SchemaValidationError,
        ["column 'age' at row 0", "'130'", "value <= 120"],
    ),
    "all_missing_quasi_identifier": Item(
        csv_text(rows_with({(i, "sex"): "" for i in range(len(GOOD_ROWS))})),
        SchemaValidationError,
        ["column 'sex': all 12 values are missing (not_nullable)"],
    ),
    "missing_quasi_identifier_cell": Item(
        csv_text(rows_with({(5, "sex"): ""})),
        SchemaValidationError,
        ["column 'sex' at row 5", "not_nullable"],
    ),
    "value_outside_taxonomy": Item(
        csv_text(rows_with({(3, "sex"): "Other"})),
        HierarchyCoverageError,
        ["column 'sex' at row 3", "'Other'", "not covered by its hierarchy"],
    ),
    "code_outside_masking_hierarchy": Item(
        csv_text(rows_with({(1, "zip"): "123"})),
        HierarchyCoverageError,
        ["column 'zip' at row 1", "'123'", "code of 5 characters"],
    ),
    "nan_in_numeric_quasi_identifier": Item(
        csv_text(rows_with({(4, "age"): "NaN"})),
        SchemaValidationError,
        ["column 'age' at row 4", "'NaN'"],
    ),
    "nan_in_categorical_quasi_identifier": Item(
        csv_text(rows_with({(4, "sex"): "NaN"})),
        HierarchyCoverageError,
        ["column 'sex' at row 4", "'NaN'"],
    ),
    "single_row_with_k_5": Item(
        csv_text(GOOD_ROWS[:1]),
        AnonymizationError,
        ["privacy.k = 5 is larger than the table (1 rows)"],
        k=5,
    ),
    "huge_field": Item(
        csv_text(rows_with({(2, "notes"): "x" * 200_000})),
        IngestError,
        ["column 'notes', data row 2", "200000 characters", f"{MAX_FIELD_CHARS} allowed"],
    ),
    "huge_field_in_a_quasi_identifier": Item(
        csv_text(rows_with({(7, "sex"): "M" * 150_000})),
        IngestError,
        ["column 'sex', data row 7", "150000 characters"],
    ),
    "duplicate_identifier": Item(
        csv_text(rows_with({(11, "person_id"): "P000"})),
        InputContractError,
        ["identifier 'person_id' is unique", "2 unexpected value(s) at row(s) 0, 11", "'P000'"],
    ),
}


def _content(item: Item) -> str | bytes:
    return item.data() if callable(item.data) else item.data


def run_stages(policy_path: Path) -> None:
    """The release flow's stages, in its order, up to anonymization (no Prefect)."""
    policy = load_policy(policy_path)
    hierarchies = stages.load_hierarchies(policy)
    ingested = stages.ingest(policy)
    validated = validate_input(ingested.frame, policy, hierarchies)
    raise_for_input(validate_input_expectations(validated, policy, hierarchies))
    stages.anonymize(validated, SearchSetup.from_policy(policy, hierarchies))[-1]


@pytest.mark.parametrize("name", list(CORPUS))
def test_bad_input_is_refused_with_its_own_error(name, make_case, cli):
    item = CORPUS[name]
    case: Case = make_case(_content(item), k=item.k)
    before = sha256(case.data)

    with pytest.raises(item.error) as info:
        run_stages(case.policy)
    message = str(info.value)
    for fragment in item.fragments:
        assert fragment in message, (fragment, message)
    # Sibling kinds stay apart: a file-format problem is not a value problem, and so on.
    for other in (IngestError, SchemaValidationError, HierarchyError, AnonymizationError):
        if not issubclass(item.error, other):
            assert not isinstance(info.value, other), (type(info.value), other)

    code, _, err = cli("validate", str(case.policy))
    assert code == 2

    code, out, err = cli("run", str(case.policy), "--release-date", RELEASE_DATE)
    ours = [line for line in err.splitlines() if line.startswith("privgate:")]
    assert code == 2, (code, out, err)
    assert len(ours) == 1 and ours[0].startswith("privgate: error: "), err
    for fragment in item.fragments:
        assert fragment in ours[0], (fragment, ours[0])
    assert "Traceback" not in out + err
    assert case.published() == [], "a refused input must publish nothing"
    assert sha256(case.data) == before, "the input file must never be modified"


def test_validate_prints_each_failed_expectation_with_rows(make_case, cli):
    case = make_case(csv_text(rows_with({(3, "sex"): "Other", (11, "person_id"): "P000"})))
    code, out, _ = cli("validate", str(case.policy))
    assert code == 2
    assert "rows:     12" in out
    assert "schema:   FAILED (pandera, HierarchyCoverageError)" in out
    assert (
        "FAIL  column 'sex' in its hierarchy's domain (2 values): 1 unexpected value(s) at "
        "row(s) 3: 'Other'" in out
    )
    assert "FAIL  identifier 'person_id' is unique" in out
    assert "PASS  column 'age': 0 <= value <= 120" in out
    assert "result:   INVALID (schema: 1 problem(s); expectations: 2 of " in out


def test_utf8_byte_order_mark_is_accepted(make_case, cli):
    """Excel's UTF-8 BOM is not an error: the first column keeps its plain name."""
    case = make_case(b"\xef\xbb\xbf" + csv_text(GOOD_ROWS).encode())
    before = sha256(case.data)
    policy = load_policy(case.policy)
    assert list(stages.ingest(policy).frame.columns)[0] == "person_id"
    code, out, _ = cli("validate", str(case.policy))
    assert code == 0, out
    assert "result:   VALID" in out
    assert sha256(case.data) == before


def test_a_good_input_publishes(make_case, cli):
    """The corpus's control: the same policy on the unbroken file publishes one release."""
    case = make_case()
    before = sha256(case.data)
    code, out, err = cli("run", str(case.policy), "--release-date", RELEASE_DATE)
    assert code == 0, err
    assert "gate: PASSED" in out
    (release,) = (case.out / "toy").iterdir()
    assert (release / "release.csv").is_file() and (release / "manifest.json").is_file()
    assert "person_id" not in (release / "release.csv").read_text().splitlines()[0]
    assert sha256(case.data) == before
