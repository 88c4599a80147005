"""Pre-flight: the checks a run can make in well under two seconds, before an orchestrator starts.

Starting Prefect costs seconds (its imports, a temporary server), so a typo in a policy, a
missing input file, a renamed column or a hierarchy that does not cover a value must be found
before that. :func:`preflight` checks, in this order, and raises the first problem as one
:class:`~privgate.core.exceptions.PrivgateError` naming the file, column or value:

1. the input file exists, is a file and is not empty;
2. its header holds exactly the declared columns (CSV and Parquet);
3. every hierarchy loads (ARX files exist and are well formed, taxonomies are balanced);
4. the table has at least k records (when it was read whole);
5. every value of every quasi-identifier (and of a sensitive column with a hierarchy) is
   covered by its hierarchy, for up to :data:`MAX_ROWS` records (the release's validation stage
   checks the whole table again).

Nothing is written and the input is only read. Differentially private policies skip steps 4 and 5:
records outside a declared domain are excluded by design, not an error. The pipeline's own
stages stay the authority; pre-flight refuses nothing the pipeline would accept.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from privgate.core.exceptions import AnonymizationError, HierarchyError, IngestError
from privgate.core.policy import ColumnType, ReleasePolicy

if TYPE_CHECKING:
    from privgate.core.hierarchy import Hierarchy

__all__ = ["MAX_ROWS", "PreflightReport", "is_final", "preflight"]

#: Records whose hierarchy coverage pre-flight checks (about a second of reading on this
#: machine); a larger input is checked in full by the pipeline's validation stage.
MAX_ROWS = 500_000


@dataclass
class PreflightReport:
    """What pre-flight looked at, for a progress line and the benchmarks."""

    input_path: Path
    columns: list[str]
    rows_checked: int
    complete: bool
    hierarchies: list[str]
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        scope = "all" if self.complete else f"the first {self.rows_checked}"
        return (
            f"pre-flight: {self.input_path.name}: {len(self.columns)} columns as declared; "
            f"{len(self.hierarchies)} hierarchies cover {scope} records"
        )


def preflight(policy: ReleasePolicy, max_rows: int = MAX_ROWS) -> PreflightReport:
    """Check the policy's input and hierarchies; raise the first problem found.

    Raises
    ------
    IngestError
        The input is missing, a folder, empty, unreadable, or its header differs from the
        declared columns.
    HierarchyError
        A hierarchy file is missing or malformed, or a value is not covered by its hierarchy.
    """
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    spec = policy.input
    path = Path(spec.path)
    if not path.exists():
        raise _final(IngestError(f"input file not found: {path} (input.path)"))
    if not path.is_file():
        raise _final(IngestError(f"input.path is not a file: {path}"))
    if path.stat().st_size == 0:
        raise IngestError(f"{path}: the file is empty")
    seconds["input"] = time.perf_counter() - started

    mark = time.perf_counter()
    # Imported here (numpy): a missing input file is reported before paying for it.
    from privgate.core.hierarchy import hierarchies_for, sensitive_hierarchies_for

    hierarchies = dict(hierarchies_for(policy))
    hierarchies.update(sensitive_hierarchies_for(policy))
    seconds["hierarchies"] = time.perf_counter() - mark

    mark = time.perf_counter()
    wanted = [] if policy.is_differentially_private else list(hierarchies)
    if spec.format == "csv":
        columns, values, rows, complete = _scan_csv(policy, wanted, max_rows)
    elif spec.format == "parquet":
        columns, values, rows, complete = _scan_parquet(policy, wanted)
    else:  # a public dataset's own layout: its loader knows the columns
        columns, values, rows, complete = list(policy.columns), {}, 0, False
    _check_columns(path, columns, list(policy.columns))
    seconds["read"] = time.perf_counter() - mark
    if complete and policy.privacy is not None and policy.privacy.k > rows:
        too_small = AnonymizationError(
            f"privacy.k = {policy.privacy.k} is larger than the table ({rows} rows): no "
            f"release of it can be {policy.privacy.k}-anonymous"
        )
        # An input with no data rows at all is the ingest stage's to name.
        raise _final(too_small) if rows else too_small
    risk = policy.privacy.risk if policy.privacy is not None else None
    if risk is not None and risk.population_size is not None and rows > risk.population_size:
        # Counted on the rows read so far: more rows than the population is final already.
        raise _final(
            AnonymizationError(
                f"privacy.risk.population_size = {risk.population_size} is smaller than the "
                f"table ({'at least ' if not complete else ''}{rows} rows): the input cannot "
                "be a sample of that population"
            )
        )

    mark = time.perf_counter()
    for name in wanted:
        _check_coverage(name, values.get(name, ()), hierarchies[name], policy)
    seconds["coverage"] = time.perf_counter() - mark
    return PreflightReport(path, columns, rows, complete, sorted(hierarchies), seconds)


def is_final(error: BaseException) -> bool:
    """Whether pre-flight's error already says all there is (a missing input file, k larger
    than the table); otherwise the pipeline's own stages can say where (line, row) the input
    breaks, and the command line asks them."""
    return bool(getattr(error, "preflight_final", False))


def _final(error: Exception) -> Exception:
    error.preflight_final = True  # type: ignore[attr-defined]
    return error


def _check_columns(path: Path, found: list[str], declared: list[str]) -> None:
    missing = [c for c in declared if c not in found]
    extra = [c for c in found if c not in declared]
    parts = []
    if missing:
        parts.append(f"missing column(s) {missing} (declared in the policy)")
    if extra:
        parts.append(f"unexpected column(s) {extra} (not declared in the policy)")
    if parts:
        raise IngestError(f"{path}: " + "; ".join(parts))


def _scan_csv(
    policy: ReleasePolicy, wanted: list[str], max_rows: int
) -> tuple[list[str], dict[str, set[str]], int, bool]:
    """The header and the distinct values of ``wanted`` columns, streamed (no dataframe)."""
    spec = policy.input
    path = Path(spec.path)
    codec = "utf-8-sig" if spec.encoding.lower().replace("_", "-") == "utf-8" else spec.encoding
    markers = set(spec.missing_values)
    values: dict[str, set[str]] = {name: set() for name in wanted}
    rows = 0
    complete = True
    try:
        with open(path, encoding=codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=spec.delimiter[0], strict=True)
            first = next(reader, None)
            if first is None:
                raise IngestError(f"{path}: the file is empty (no header line)")
            if spec.header:
                columns = [name.strip() for name in first]
                body: Iterable[list[str]] = reader
            else:
                columns = [f"column_{i}" for i in range(1, len(first) + 1)]
                body = _chain_first(first, reader)
            if len(columns) == 1 and len(policy.columns) > 1:
                raise IngestError(
                    f"{path}, line 1: the header does not split on the delimiter "
                    f"{spec.delimiter!r} (input.delimiter): is the file separated by another "
                    "character?"
                )
            index = {name: columns.index(name) for name in wanted if name in columns}
            width = len(columns)
            for record in body:
                if rows >= max_rows:
                    complete = False
                    break
                if not record:
                    continue
                rows += 1
                if len(record) != width:
                    complete = False  # a ragged row: ingest names it exactly; stop here
                    break
                for name, position in index.items():
                    cell = record[position]
                    if cell not in markers:
                        values[name].add(cell)
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: not valid {spec.encoding} text ({exc.reason}; input.encoding)"
        ) from None
    except csv.Error:
        complete = False  # malformed quoting: ingest reports the line; keep what was read
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc.strerror}") from None
    return columns, values, rows, complete


def _chain_first(first: list[str], rest: Iterable[list[str]]) -> Iterable[list[str]]:
    yield first
    yield from rest


def _scan_parquet(
    policy: ReleasePolicy, wanted: list[str]
) -> tuple[list[str], dict[str, set[str]], int, bool]:
    import pyarrow.parquet as pq

    path = Path(policy.input.path)
    try:
        columns = list(pq.read_schema(path).names)
        present = [name for name in wanted if name in columns]
        table = pq.read_table(path, columns=present)
    except Exception as exc:  # pyarrow raises several unrelated types
        raise IngestError(f"{path}: cannot read as Parquet: {exc}") from None
    markers = set(policy.input.missing_values)
    values = {
        name: {v for v in table.column(name).unique().to_pylist() if v is not None}
        for name in present
    }
    values = {name: {v for v in found if str(v) not in markers} for name, found in values.items()}
    return columns, values, table.num_rows, True


def _check_coverage(
    name: str, found: Iterable[object], hierarchy: Hierarchy, policy: ReleasePolicy
) -> None:
    """Generalize every distinct value once: the hierarchy raises, naming what it misses.

    Numbers are compared as the pipeline compares them after coercion (``039`` and ``39.0``
    are the value 39), so pre-flight never refuses a value the pipeline would accept.
    """
    numeric = policy.columns[name].type in (ColumnType.INTEGER, ColumnType.FLOAT)
    distinct = sorted({_as_number(v) if numeric else v for v in found}, key=str)
    if not distinct:
        return
    try:
        hierarchy.generalize(distinct)
    except HierarchyError as exc:
        raise HierarchyError(f"{policy.input.path}: {exc}") from None


def _as_number(value: object) -> object:
    from privgate.core.hierarchy import value_key

    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return value  # not a number: the validation stage names it
    return value_key(number) if number == number else value
