"""The pandera schema of an input table, derived from its release policy.

The schema is the fast in-code contract at ingest: it coerces every declared column to its
declared type and checks ranges, allowed categories, nullability and hierarchy coverage. It is
strict (an undeclared column may be an identifier nobody reviewed, so it stops the run) and
validated lazily, so one error lists every failing column and row at once.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaError, SchemaErrors

from core.exceptions import SchemaValidationError
from core.hierarchy import ARXHierarchy, Hierarchy
from core.policy import ColumnSpec, ColumnType, ReleasePolicy

__all__ = ["build_input_schema", "validate_input"]

_DTYPES = {
    ColumnType.CATEGORICAL: "string",
    ColumnType.STRING: "string",
    ColumnType.INTEGER: "Int64",
    ColumnType.FLOAT: "Float64",
}

#: At most this many failing cells are quoted in the error message (all are in ``failures``).
_QUOTED_FAILURES = 20


def _checks(spec: ColumnSpec, hierarchy: Hierarchy | None) -> list[pa.Check]:
    checks = []
    if spec.minimum is not None:
        checks.append(pa.Check.ge(spec.minimum, error=f"value >= {spec.minimum:g}"))
    if spec.maximum is not None:
        checks.append(pa.Check.le(spec.maximum, error=f"value <= {spec.maximum:g}"))
    allowed = spec.categories
    if (
        allowed is None
        and isinstance(hierarchy, ARXHierarchy)
        and spec.type
        in (
            ColumnType.CATEGORICAL,
            ColumnType.STRING,
        )
    ):
        allowed = hierarchy.domain
    if allowed is not None:
        checks.append(pa.Check.isin(allowed, error="value in the declared categories"))
    return checks


def build_input_schema(
    policy: ReleasePolicy, hierarchies: Mapping[str, Hierarchy] | None = None
) -> pa.DataFrameSchema:
    """The pandera schema of the policy's input table.

    Parameters
    ----------
    policy : ReleasePolicy
    hierarchies : mapping of str to Hierarchy, optional
        When given, a categorical quasi-identifier without declared ``categories`` must take
        values from its hierarchy's domain.
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


def _describe(failures: pd.DataFrame) -> str:
    parts = []
    for row in failures.head(_QUOTED_FAILURES).itertuples(index=False):
        if row.check == "column_in_schema":
            parts.append(f"unexpected column {row.failure_case!r} (not declared in the policy)")
            continue
        if row.check == "column_in_dataframe":
            parts.append(f"missing column {row.failure_case!r} (declared in the policy)")
            continue
        where = f" at row {int(row.index)}" if pd.notna(row.index) else ""
        case = "" if pd.isna(row.failure_case) else f" {str(row.failure_case)!r}"
        parts.append(f"column {row.column!r}{where}:{case} fails {row.check}")
    more = len(failures) - _QUOTED_FAILURES
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


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
        raise SchemaValidationError(
            f"input does not match the policy ({len(failures)} problem(s)): {_describe(failures)}",
            failures=records,
        ) from None
    except SchemaError as exc:  # raised instead of SchemaErrors for some table-level checks
        raise SchemaValidationError(f"input does not match the policy: {exc}") from None
    return validated[list(policy.columns)]
