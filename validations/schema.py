"""The pandera schema of an input table, derived from its release policy.

The schema is the fast in-code contract at ingest: it coerces every declared column to its
declared type and checks ranges, allowed categories, nullability and hierarchy coverage. It is
strict (an undeclared column may be an identifier nobody reviewed, so it stops the run) and
validated lazily, so one error lists every failing column and row at once.

A value that its quasi-identifier's hierarchy does not cover (a category outside an ARX file or
a taxonomy, a code of the wrong length for a masking hierarchy) is caught here too, with its row;
when that is the only kind of problem, the error is a :class:`HierarchyCoverageError`, which is
both a :class:`SchemaValidationError` and a :class:`HierarchyError`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaError, SchemaErrors

from privgate.core.exceptions import HierarchyError, SchemaValidationError
from privgate.core.hierarchy import (
    ARXHierarchy,
    Hierarchy,
    MaskingHierarchy,
    parse_iso_date,
    quote_values,
    value_key,
)
from privgate.core.policy import DATE_TYPES, ColumnSpec, ColumnType, ReleasePolicy

__all__ = [
    "HierarchyCoverageError",
    "build_input_schema",
    "input_warnings",
    "validate_columns",
    "validate_distinct_values",
    "validate_input",
]


class HierarchyCoverageError(SchemaValidationError, HierarchyError):
    """Every problem of the input is a value its quasi-identifier's hierarchy does not cover."""


_DTYPES = {
    ColumnType.CATEGORICAL: "string",
    ColumnType.STRING: "string",
    ColumnType.INTEGER: "Int64",
    ColumnType.FLOAT: "Float64",
    ColumnType.DATE: "string",
    ColumnType.DATETIME: "string",
}

#: At most this many failing cells are quoted in the error message (all are in ``failures``).
_QUOTED_FAILURES = 20

#: A failing value longer than this is quoted by its start and its length.
_QUOTED_CHARS = 60

#: Names (pandera ``error`` texts) of the hierarchy-coverage checks.
_DOMAIN_CHECK = "value in its hierarchy's domain"
_LENGTH_CHECK = "code of {} characters (masking hierarchy)"


def _coverage_check(spec: ColumnSpec, hierarchy: Hierarchy) -> pa.Check | None:
    """Values the hierarchy can generalize: an ARX file's or taxonomy's domain, masking lengths.

    Interval hierarchies are covered by the dtype and the declared range. A cell that failed
    coercion is not judged here (the coercion failure already names it).
    """
    numeric = spec.is_numeric
    if isinstance(hierarchy, ARXHierarchy):
        domain = set(hierarchy.domain)
        name = _DOMAIN_CHECK

        def covered(value: object) -> bool:
            return value_key(value) in domain
    elif isinstance(hierarchy, MaskingHierarchy):
        length = hierarchy.length
        name = _LENGTH_CHECK.format(length)

        def covered(value: object) -> bool:
            return len(value_key(value)) == length
    else:
        return None

    def check(series: pd.Series) -> pd.Series:
        present = series.dropna()
        good = [v for v in pd.unique(present) if (numeric and isinstance(v, str)) or covered(v)]
        return series.isna() | series.isin(good)

    return pa.Check(check, element_wise=False, error=name)


def _is_coverage(check: str) -> bool:
    return check == _DOMAIN_CHECK or (
        check.startswith("code of ") and check.endswith("(masking hierarchy)")
    )


def _date_check(spec: ColumnSpec) -> pa.Check:
    """ISO dates (``date``) or ISO dates and timestamps (``datetime``), checked once per value."""
    timestamp = spec.type is ColumnType.DATETIME

    def parses(value: object) -> bool:
        try:
            parse_iso_date(str(value), timestamp=timestamp)
        except ValueError:
            return False
        return True

    def check(series: pd.Series) -> pd.Series:
        good = [v for v in pd.unique(series.dropna()) if parses(v)]
        return series.isna() | series.isin(good)

    name = "ISO date or timestamp" if timestamp else "ISO date (YYYY-MM-DD)"
    return pa.Check(check, element_wise=False, error=name)


def _categories_check(categories: list[str]) -> pa.Check:
    """Declared categories, compared in Unicode NFC (as hierarchies compare values)."""
    allowed = {unicodedata.normalize("NFC", c) for c in categories}

    def check(series: pd.Series) -> pd.Series:
        good = [v for v in pd.unique(series.dropna()) if value_key(v) in allowed]
        return series.isna() | series.isin(good)

    return pa.Check(check, element_wise=False, error="value in the declared categories")


def _checks(spec: ColumnSpec, hierarchy: Hierarchy | None) -> list[pa.Check]:
    checks = []
    if spec.minimum is not None:
        checks.append(pa.Check.ge(spec.minimum, error=f"value >= {spec.minimum:g}"))
    if spec.maximum is not None:
        checks.append(pa.Check.le(spec.maximum, error=f"value <= {spec.maximum:g}"))
    if spec.type in DATE_TYPES:
        checks.append(_date_check(spec))
    if spec.categories is not None:
        checks.append(_categories_check(spec.categories))
    if hierarchy is not None:
        coverage = _coverage_check(spec, hierarchy)
        if coverage is not None:
            checks.append(coverage)
    return checks


def build_input_schema(
    policy: ReleasePolicy, hierarchies: Mapping[str, Hierarchy] | None = None
) -> pa.DataFrameSchema:
    """The pandera schema of the policy's input table.

    Parameters
    ----------
    policy : ReleasePolicy
    hierarchies : mapping of str to Hierarchy, optional
        When given, a quasi-identifier must take values its hierarchy covers: the domain of an
        ARX file or a taxonomy, codes of the right length for a masking hierarchy.
    """
    hierarchies = hierarchies or {}
    columns = {
        name: pa.Column(
            _DTYPES[spec.type],
            checks=_checks(spec, hierarchies.get(name)),
            nullable=spec.allows_missing,
            coerce=True,
            required=True,
        )
        for name, spec in policy.columns.items()
    }
    return pa.DataFrameSchema(columns, strict=True, name=f"{policy.dataset} input")


def _clean(failures: pd.DataFrame) -> pd.DataFrame:
    """Drop the echoes of a failed coercion (a dtype check, range checks that raised)."""
    failures = failures.copy()
    failures["check"] = failures["check"].astype(str)
    coerce_failed = set(failures.loc[failures["check"].str.startswith("coerce_dtype"), "column"])
    echo = failures["column"].isin(coerce_failed) & (
        failures["check"].str.startswith("dtype(")
        | failures["failure_case"].astype(str).str.startswith("TypeError(")
    )
    return failures[~echo].reset_index(drop=True)


def _quote(value: object) -> str:
    text = str(value)
    if len(text) <= _QUOTED_CHARS:
        return repr(text)
    return f"{text[:40]!r}... ({len(text)} characters)"


def _source(hierarchy: Hierarchy | None) -> str:
    source = getattr(hierarchy, "source", None)
    return f" ({source})" if source else ""


def _coverage_lines(
    failures: pd.DataFrame, hierarchies: Mapping[str, Hierarchy]
) -> tuple[list[str], pd.DataFrame]:
    """One line per column for the values its hierarchy does not cover, and the other failures.

    A value missing from a hierarchy usually fills many rows; quoting each row would bury the
    one fact that matters (which values, in which file) under repetitions of it.
    """
    coverage = failures["check"].map(_is_coverage)
    lines = []
    for column, group in failures[coverage].groupby("column", sort=False):
        keys = group["failure_case"].map(value_key)
        counts = keys.value_counts(sort=True)
        first = group.assign(key=keys).groupby("key")["index"].min()
        first_row = int(group["index"].min())
        others = len(group) - 1
        rows = f" (and {others} more row(s))" if others else ""
        details = ", ".join(
            f"{value!r}: {n} row(s), first at row {int(first[value])}"
            for value, n in list(counts.items())[:5]
        )
        check = group["check"].iloc[0]
        what = "not covered by its hierarchy" if check == _DOMAIN_CHECK else f"not a {check}"
        lines.append(
            f"column {column!r} at row {first_row}{rows}: {len(counts)} value(s) {what}"
            f"{_source(hierarchies.get(str(column)))} in {len(group)} row(s): "
            f"{quote_values(list(counts.index))} ({details})"
        )
    return lines, failures[~coverage]


def _describe(
    failures: pd.DataFrame,
    n_rows: int | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> str:
    parts, failures = _coverage_lines(failures, hierarchies or {})
    # A column missing in every row is one problem, not one per row.
    empty = set()
    if n_rows:
        nulls = failures[failures["check"] == "not_nullable"].groupby("column").size()
        empty = {column for column, count in nulls.items() if count == n_rows}
        for column in sorted(empty):
            parts.append(f"column {column!r}: all {n_rows} values are missing (not_nullable)")
        failures = failures[
            ~(failures["column"].isin(empty) & (failures["check"] == "not_nullable"))
        ]
    for row in failures.head(_QUOTED_FAILURES).itertuples(index=False):
        if row.check == "column_in_schema":
            parts.append(f"unexpected column {row.failure_case!r} (not declared in the policy)")
            continue
        if row.check == "column_in_dataframe":
            parts.append(f"missing column {row.failure_case!r} (declared in the policy)")
            continue
        where = f" at row {int(row.index)}" if pd.notna(row.index) else ""
        case = "" if pd.isna(row.failure_case) else f" {_quote(row.failure_case)}"
        parts.append(f"column {row.column!r}{where}:{case} fails {row.check}")
    more = len(failures) - _QUOTED_FAILURES
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def validate_columns(df: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Check only the table's structure: exactly the declared columns, returned in policy order.

    The input check of a differentially private release. Its values are not judged one by one:
    a run that stops because one record holds an unexpected value would make publication an
    exact function of the private data. The DP stage applies the declared-domain rule instead
    (records outside a declared domain are excluded, numbers clamped; see docs/PRIVACY.md), and
    the counts go to the data owner's log. The column names are the policy's, hence public.

    Raises
    ------
    SchemaValidationError
        Naming every missing and every undeclared column.
    """
    declared = list(policy.columns)
    missing = [c for c in declared if c not in df.columns]
    undeclared = [str(c) for c in df.columns if c not in policy.columns]
    problems = []
    if missing:
        problems.append(f"declared column(s) missing from the input: {missing}")
    if undeclared:
        problems.append(
            f"undeclared column(s) in the input: {undeclared} (declare every column in the "
            "policy; an unreviewed column may be an identifier)"
        )
    if problems:
        raise SchemaValidationError("input does not match the policy: " + "; ".join(problems))
    return df[declared]


def validate_input(
    df: pd.DataFrame,
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> pd.DataFrame:
    """Coerce and check ``df`` against the policy's schema, reporting every failure at once.

    Returns the coerced table with columns in policy order. Row numbers in messages are
    0-based data rows (for a CSV with a header, line = row + 2).

    Raises
    ------
    SchemaValidationError
        With one entry per failing cell in ``failures``.
    """
    schema = build_input_schema(policy, hierarchies)
    try:
        validated = schema.validate(df, lazy=True)
    except SchemaErrors as exc:
        failures = _clean(exc.failure_cases)
        records = failures[["column", "check", "failure_case", "index"]].to_dict("records")
        error = (
            HierarchyCoverageError
            if len(failures) and failures["check"].map(_is_coverage).all()
            else SchemaValidationError
        )
        raise error(
            f"input does not match the policy ({len(failures)} problem(s)): "
            f"{_describe(failures, len(df), hierarchies)}",
            failures=records,
        ) from None
    except SchemaError as exc:  # raised instead of SchemaErrors for some table-level checks
        raise SchemaValidationError(f"input does not match the policy: {exc}") from None
    return _nfc(validated[list(policy.columns)])


def validate_distinct_values(
    values: Mapping[str, Sequence[object]],
    policy: ReleasePolicy,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    where: str = "",
) -> None:
    """The policy's checks of some columns on their distinct values (``None``: a missing cell).

    Why: a path that validates a sample of the rows (the partitioned one) still holds every
    row's distinct values of the quasi-identifiers and the sensitive columns in its frequency
    set. A sensitive value is released as it is, so a bad one (outside the declared categories
    or range, or missing where the column is not nullable) must stop the run wherever it is,
    not only when the sample happens to hold it.

    Raises
    ------
    SchemaValidationError
        Naming each failing value of each column (``where`` says which rows were read).
    """
    schema = build_input_schema(policy, hierarchies)
    problems = []
    for name, distinct in values.items():
        column = pa.DataFrameSchema({name: schema.columns[name]})
        frame = pd.DataFrame({name: pd.array(list(distinct), dtype="string")})
        try:
            column.validate(frame, lazy=True)
        except SchemaErrors as exc:
            failures = _clean(exc.failure_cases)
            for row in failures.itertuples(index=False):
                case = "missing" if pd.isna(row.failure_case) else _quote(row.failure_case)
                problems.append(f"column {name!r}: {case} fails {row.check}")
    if problems:
        shown = "; ".join(problems[:_QUOTED_FAILURES])
        more = (
            f"; ... and {len(problems) - _QUOTED_FAILURES} more"
            if len(problems) > _QUOTED_FAILURES
            else ""
        )
        raise SchemaValidationError(
            f"input does not match the policy ({len(problems)} problem(s){where}): {shown}{more}"
        )


def _nfc(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells in Unicode normal form C, so that every later stage compares one spelling.

    The checks above already compare in NFC; without this, the expectation suites, the search
    and the gate would still see a decomposed ``é`` and a precomposed one as two values.
    """
    out = None
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_string_dtype(column.dtype):
            continue
        if column.dropna().str.isascii().all():  # ASCII is always in NFC
            continue
        normalized = column.str.normalize("NFC")
        if not normalized.equals(column):
            out = frame.copy() if out is None else out
            out[name] = normalized
    return frame if out is None else out


def input_warnings(df: pd.DataFrame, policy: ReleasePolicy) -> list[str]:
    """Facts about a valid input that a data owner should see before the release.

    A quasi-identifier that is missing in every row is allowed (``nullable: true``) but protects
    nothing and tells a recipient nothing: it is one class of missing cells, generalized to
    ``*`` only at its top level. It usually means a wrong column mapping or an empty export.
    """
    warnings = []
    for name in policy.quasi_identifiers:
        if name in df.columns and len(df) and df[name].isna().all():
            warnings.append(
                f"column {name!r} (quasi_identifier) is missing in all {len(df)} rows: check the "
                "export and the policy's column mapping; it carries no information"
            )
    return warnings
