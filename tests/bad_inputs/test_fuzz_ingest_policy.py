"""Property-based fuzzing of policy loading and ingest (hypothesis).

Whatever the policy text or the input bytes: no traceback (every refusal is a
:class:`PrivgateError`, which the CLI turns into one line and exit 2), and no published release
without a passing gate: a release that does get published is re-checked here with the standard
library only (classes of at least k records, no identifier column, suppression within limit).
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

import yaml
from bad_input_corpus import GOOD_ROWS, HEADER, POLICY_YAML
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from privgate.core import stages
from privgate.core.anonymize import SearchSetup
from privgate.core.exceptions import GateBlockedError, PrivgateError
from privgate.core.manifest import build_manifest, release_id_for
from privgate.core.policy import load_policy
from privgate.core.publish import discard, publish
from privgate.flows.cli import main
from privgate.validations.expectations import (
    raise_for_input,
    raise_for_release,
    validate_input_expectations,
    validate_release_expectations,
)
from privgate.validations.schema import validate_input

RELEASE_DATE = date(2026, 11, 22)
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------------------------

ANY_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10**6)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["arx", "interval", "masking", "taxonomy", "quasi_identifier", "*"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=8,
)


def _paths(node: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a nested mapping / list."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, child in node.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            out += _paths(child, (*prefix, i))
    return out


def _mutate(policy: dict, path: tuple, value: object, delete: bool) -> None:
    node = policy
    for part in path[:-1]:
        node = node[part]
    if delete and isinstance(node, dict):
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


def _valid_policy_dict(folder: Path) -> dict:
    text = POLICY_YAML.format(data=folder / "input.csv", out=folder / "releases", k=2)
    return yaml.safe_load(text)


def _no_traceback(call) -> None:
    with contextlib.suppress(PrivgateError):
        call()


@FUZZ
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_any_text_or_bytes_as_a_policy(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.yaml"
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        _no_traceback(lambda: stages.load_hierarchies(load_policy(path)))


@FUZZ
@given(st.data())
def test_mutated_policies_load_or_fail_with_a_policy_error(data):
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        policy = _valid_policy_dict(folder)
        for _ in range(data.draw(st.integers(1, 4))):
            paths = _paths(policy)
            if not paths:
                break
            path = data.draw(st.sampled_from(paths))
            _mutate(policy, path, data.draw(ANY_VALUE), data.draw(st.booleans()))
        path = folder / "policy.yaml"
        path.write_text(yaml.safe_dump(policy), encoding="utf-8")
        _no_traceback(lambda: stages.load_hierarchies(load_policy(path)))


# ---------------------------------------------------------------------------------------------
# Inputs, through the whole release (as the flow runs it, without Prefect)
# ---------------------------------------------------------------------------------------------

GOOD_CELLS = sorted({cell for row in GOOD_ROWS for cell in row})
JUNK_CELLS = [
    "",
    "NaN",
    "nan",
    "inf",
    "-1",
    "1e3",
    "130",
    " 31",
    "31.5",
    "Other",
    "123",
    "123456",
    "*",
    '"',
    '""',
    '"a,b"',
    ",",
    ";",
    "\n",
    "\r",
    "\t",
    "\x00",
    "\ufeff",
    "é",
    "1987-05-02",
]
CELL = st.sampled_from(GOOD_CELLS + JUNK_CELLS) | st.text(max_size=6)


@st.composite
def valid_rows(draw) -> list[list[str]]:
    """A table the policy accepts: unique ids, ages 0-120, known sexes, 5-digit codes."""
    n = draw(st.integers(1, 30))
    ages = st.integers(0, 120) | st.sampled_from([30, 31, 32, 33])
    return [
        [
            f"P{i:04d}",
            str(draw(ages)),
            draw(st.sampled_from(["Male", "Female"])),
            draw(st.sampled_from(["12340", "12341", "12342", "99999"])),
            draw(st.sampled_from(["flu", "cold", "none"])),
            draw(st.sampled_from(["ok", "", "a b", '"q"', "x,y"])),
        ]
        for i in range(n)
    ]


@st.composite
def table_rows(draw) -> list[list[str]]:
    """Valid tables, valid tables with a few broken cells or rows, and random cells."""
    kind = draw(st.sampled_from(["valid", "valid", "damaged", "random"]))
    if kind == "random":
        return draw(st.lists(st.lists(CELL, min_size=5, max_size=7), max_size=20))
    rows = draw(valid_rows())
    if kind == "damaged":
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(rows) - 1))
            if draw(st.booleans()) and rows[i]:
                rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(CELL)
            else:
                rows[i] = draw(st.lists(CELL, min_size=5, max_size=7))
    return rows


CSV_BODY = table_rows()


def _csv_bytes(
    header: list[str], rows: list[list[str]], noise: bytes, sep: str, quoted: bool = True
) -> bytes:
    """The table as CSV: properly quoted by the csv module, or cells joined raw."""
    if quoted:
        buffer = io.StringIO()
        csv.writer(buffer, delimiter=sep, lineterminator="\n").writerows([header, *rows])
        text = buffer.getvalue()
    else:
        text = "".join(sep.join(row) + "\n" for row in [header, *rows])
    return text.encode("utf-8") + noise


def _check_published(folder: Path, policy, input_rows: int) -> None:
    """A published release, re-checked with the standard library alone."""
    with open(folder / "release.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    assert not set(header) & set(policy.identifiers), "a direct identifier was published"
    assert set(header) == set(policy.released_columns)
    qi = [header.index(q) for q in policy.quasi_identifiers]
    classes = Counter(tuple(row[i] for i in qi) for row in body)
    assert body and min(classes.values()) >= policy.privacy.k, "a class below k was published"
    allowed = math.floor(policy.privacy.suppression_limit * input_rows + 1e-9)
    assert input_rows - allowed <= len(body) <= input_rows


def release_like_the_flow(policy, with_expectations: bool) -> Path | None:
    """flows/release.py's steps on plain functions; returns the published folder, if any."""
    hierarchies = stages.load_hierarchies(policy)
    ingested = stages.ingest(policy)
    validated = validate_input(ingested.frame, policy, hierarchies)
    release_id = release_id_for(policy, ingested.sha256, RELEASE_DATE)
    if with_expectations:
        input_summary = validate_input_expectations(validated, policy, hierarchies)
        raise_for_input(input_summary)
    table = stages.anonymize(validated, SearchSetup.from_policy(policy, hierarchies))[-1]
    staged = stages.stage(table, policy, release_id)
    decision = stages.verify(
        staged.release_file, SearchSetup.from_policy(policy, hierarchies), ingested.rows
    )
    try:
        if not decision.passed:
            raise GateBlockedError(decision.summary, decision)
        manifest = build_manifest(
            policy=policy,
            release_id=release_id,
            release_date=RELEASE_DATE,
            ingested=ingested,
            table=table,
            staged=staged,
            decision=decision,
        )
        if with_expectations:
            summary = validate_release_expectations(
                staged.release_file, policy, hierarchies, manifest
            )
            raise_for_release(summary)
        folder = publish(staged, manifest)
    finally:
        if staged.staging_dir.exists():
            discard(staged)
    _check_published(folder, policy, ingested.rows)
    return folder


def _fuzz_release(data, with_expectations: bool) -> None:
    header = list(HEADER)
    if data.draw(st.integers(0, 9)) == 0:  # sometimes a broken header
        header = data.draw(st.lists(st.sampled_from([*HEADER, "ssn", "", "age"]), max_size=8))
    rows = data.draw(CSV_BODY)
    noise = data.draw(st.sampled_from([b""] * 9 + [b"\xff\xfe", b"\xe9\n", b'"']))
    sep = data.draw(st.sampled_from([","] * 9 + [";"]))
    k = data.draw(st.integers(2, 4))
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        data_file = folder / "input.csv"
        content = _csv_bytes(header, rows, noise, sep, quoted=data.draw(st.integers(0, 4)) > 0)
        data_file.write_bytes(content)
        policy_file = folder / "policy.yaml"
        policy_file.write_text(
            POLICY_YAML.format(data=data_file, out=folder / "releases", k=k), encoding="utf-8"
        )
        policy = load_policy(policy_file)
        try:
            release_like_the_flow(policy, with_expectations)
            event("published (and re-checked)")
        except PrivgateError as exc:
            event(f"refused: {type(exc).__name__}")
            published = list((folder / "releases").glob("*/[!.]*"))
            assert published == [], "a refused run published something"
        assert data_file.read_bytes() == content, "the input file must never be modified"


@settings(FUZZ, max_examples=150)
@given(st.data())
def test_fuzzed_inputs_never_crash_nor_publish_unverified(data):
    _fuzz_release(data, with_expectations=False)


@settings(FUZZ, max_examples=40)
@given(st.data())
def test_fuzzed_inputs_through_both_expectation_suites(data):
    _fuzz_release(data, with_expectations=True)


@settings(FUZZ, max_examples=20)
@given(rows=CSV_BODY, noise=st.sampled_from([b"", b"\xff", b'"\n']))
def test_fuzzed_inputs_through_privgate_validate(rows, noise):
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        data_file = folder / "input.csv"
        data_file.write_bytes(_csv_bytes(HEADER, rows, noise, ","))
        policy_file = folder / "policy.yaml"
        policy_file.write_text(
            POLICY_YAML.format(data=data_file, out=folder / "releases", k=2), encoding="utf-8"
        )
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["validate", str(policy_file)])
        assert code in (0, 2)
        event(f"exit {code}")
        assert "Traceback" not in out.getvalue() + err.getvalue()
        if code == 2 and not out.getvalue():
            assert err.getvalue().startswith("privgate: error: ")
