"""The privacy gate: verify the release *as written*, independently of how it was produced.

The gate trusts nothing the algorithm computed. It re-reads the release file (all cells as text,
exactly as a recipient would see them), recomputes the equivalence classes over the quasi-
identifier columns with a plain group-by, and measures every criterion of the policy on them:
k, l-diversity, t-closeness, the number of suppressed records, and that no direct identifier or
undeclared column is present; for local recoding, also that the numeric ranges written can
each hold a distinct input record's value (:mod:`privgate.core.label_coverage`). The decision
and its reasons are data, written to the manifest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from privgate.core.columnar import CodedLines, TextCodes, read_coded_csv, read_coded_csv_lines
from privgate.core.encoding import (
    PARALLEL_ROWS,
    ClassStats,
    factorize,
    hash_factorize,
    hash_groups,
    is_missing,
)
from privgate.core.exceptions import VerificationError
from privgate.core.label_coverage import unmatched_labels
from privgate.core.marginals import TextCounts, excess_cells, text_counts, unknown_texts
from privgate.core.privacy import (
    Population,
    PrivacyModel,
    person_class_stats,
    person_histograms,
    population_of,
    sensitive_columns,
    unsupported_with_persons,
)
from privgate.core.textcsv import frame_csv_quoting, read_text_columns

if TYPE_CHECKING:  # the attacks import pandas: a release without attack limits never needs it
    from privgate.core.attacks import AttackEvidence

__all__ = [
    "ATTACK_RULE",
    "HASH_ROWS",
    "GateDecision",
    "check_attacks",
    "check_columns",
    "check_coverage",
    "class_stats_of",
    "decide",
    "gate_flags",
    "generalized_away",
    "group_rows",
    "read_release",
    "read_release_codes",
    "sensitive_columns_of",
    "sensitive_reference",
    "with_reference",
    "verify_release",
    "written_counts",
    "verify_table",
    "with_population",
]


@dataclass(frozen=True)
class GateDecision:
    """The gate's verdict.

    Attributes
    ----------
    passed : bool
    reasons : list of str
        Why the release was blocked (empty when it passed).
    measurements : dict
        What was measured: rows, classes, smallest class, suppressed records, the level
        each privacy model reached, and ``generalized_away`` (see :func:`generalized_away`).
    """

    passed: bool
    reasons: list[str] = field(default_factory=list)
    measurements: dict = field(default_factory=dict)

    @property
    def flags(self) -> list[str]:
        """What a data owner must see about a release that passed: :func:`gate_flags`."""
        return gate_flags(self.measurements)

    @property
    def summary(self) -> str:
        """One line for logs and the CLI (a passed release's flags at its end)."""
        if self.passed:
            m = self.measurements
            text = (
                f"PASSED: {m.get('rows')} rows in {m.get('classes')} classes, smallest class "
                f"{m.get('min_class_size')}"
            )
            if "persons" in m:
                text += f" ({m['persons']} persons, each counted once per class)"
            if "suppressed" in m:
                text += f", {m['suppressed']} {m.get('suppressed_unit', 'records')} suppressed"
            return text + "".join(f"; FLAGGED: {flag}" for flag in self.flags)
        return "BLOCKED: " + "; ".join(self.reasons)

    def to_dict(self) -> dict:
        """The decision as data, with its :attr:`flags` (for the manifest and the report)."""
        return {**asdict(self), "flags": self.flags}


def generalized_away(table: object, quasi_identifiers: Sequence[str]) -> dict[str, str | None]:
    """The quasi-identifiers whose every released cell holds one and the same text.

    Such a column was generalized away (typically every cell is its hierarchy's top, ``*``;
    a taxonomy's single root such as ``Person`` counts too, and so does a column the input
    already held constant): it tells a recipient nothing. The release may still be published
    (the privacy models hold), but a data owner must be told, so the gate measures it on the
    written cells (``{column: the one value}``, ``None`` for a column of empty cells). An
    empty release has no such column.
    """
    if _n_rows(table) == 0:
        return {}
    out: dict[str, str | None] = {}
    for name in quasi_identifiers:
        column = table[name]  # type: ignore[index]
        if isinstance(column, TextCodes):
            if (column.codes == column.codes[0]).all():
                out[name] = column.text(np.array([0]))[0]
            continue
        cells = _as_text(column)
        first = cells[0]
        if all(cell == first for cell in cells):
            out[name] = first
    return out


def gate_flags(measurements: Mapping) -> list[str]:
    """Sentences about a release that holds but says less than it seems to (empty when none).

    One flag today: quasi-identifiers generalized away (:func:`generalized_away`)."""
    away = measurements.get("generalized_away") or {}
    if not away:
        return []
    named = ", ".join(f"{name!r} ({value!r})" for name, value in away.items())
    return [
        f"{len(away)} quasi-identifier(s) generalized away, one value in every released "
        f"record: {named}"
    ]


def read_release(path: str | Path) -> dict[str, np.ndarray]:
    """Read a written release back as text cells: ``{column: array of str or None}``.

    CSV is read with the standard library (no type guessing: ``02139`` stays ``02139``, and only
    an empty cell is missing); Parquet through pyarrow, every cell turned to text.
    """
    path = Path(path)
    if not path.exists():
        raise VerificationError(f"release file not found: {path}")
    try:
        if path.suffix == ".parquet":
            import pandas as pd  # only Parquet releases need it

            frame = pd.read_parquet(path).astype("string")
            return {
                name: np.array([None if v is pd.NA else str(v) for v in frame[name]], object)
                for name in frame.columns
            }
        return read_text_columns(path)
    except Exception as exc:  # any parser failure means the release is unreadable
        raise VerificationError(f"cannot read release {path}: {exc}") from None


def read_release_codes(path: str | Path) -> dict[str, TextCodes]:
    """:func:`read_release`'s cells as dictionary codes (``{column: TextCodes}``).

    A CSV release is read columnar (:func:`privgate.core.columnar.read_coded_csv`: the same
    cells as the standard library's reader, no Python string per cell), so the gate's group-by
    runs on integer codes; a Parquet release is read as :func:`read_release` reads it.
    """
    path = Path(path)
    if not path.exists():
        raise VerificationError(f"release file not found: {path}")
    if path.suffix == ".parquet":
        return {name: TextCodes.from_text(cells) for name, cells in read_release(path).items()}
    try:
        return read_coded_csv(path, lines=True)  # a release: few distinct lines
    except Exception as exc:  # any parser failure means the release is unreadable
        raise VerificationError(f"cannot read release {path}: {exc}") from None


def _read_release_lines(path: str | Path) -> CodedLines:
    """:func:`read_release_codes`'s cells as a CSV release's distinct lines with their counts
    when it was read as lines (:func:`privgate.core.columnar.read_coded_csv_lines`), else as
    its rows."""
    path = Path(path)
    if path.suffix == ".parquet" or not path.exists():
        return CodedLines(read_release_codes(path), None)
    try:
        return read_coded_csv_lines(path)  # a release: few distinct lines
    except Exception as exc:  # any parser failure means the release is unreadable
        raise VerificationError(f"cannot read release {path}: {exc}") from None


def _n_rows(table: object) -> int:
    """Rows of a DataFrame or of a ``{column: array}`` mapping."""
    if hasattr(table, "shape"):
        return int(table.shape[0])
    columns = list(table.values())  # type: ignore[attr-defined]
    return len(columns[0]) if columns else 0


def class_stats_of(
    table: object,
    quasi_identifiers: Sequence[str],
    sensitive: Sequence[str],
    persons: Sequence[object] | None = None,
    weights: np.ndarray | None = None,
) -> ClassStats:
    """Equivalence classes of a table (DataFrame or column mapping) over its QI columns.

    Each QI column is factorized on its text (a missing cell is a value of its own), and rows
    with equal code tuples form a class: a plain group-by on the file's cells, sharing no
    state with the search. It shares code with it: the hash grouping of
    :mod:`privgate.core.encoding` (``hash_factorize``, ``hash_groups``), which also groups the
    input's tuples; a fault there could agree with itself, so both are tested against
    ``np.unique`` (``test_encoding.py``, ``test_gate.py``), and the release suite's class sizes (a
    pandas group-by, when the release is validated whole) are a second reading.
    With ``persons`` (each row's person, aligned with the rows), the classes are counted in
    persons with the search's definition (:func:`privgate.core.privacy.person_class_stats`):
    a class's size is its distinct persons, its sensitive histogram weighs each person 1.
    ``weights``: how many rows of the file each row of ``table`` stands for (a release read
    as its distinct lines, :func:`privgate.core.columnar.read_coded_csv_lines`; not with
    ``persons``): each class's size and histograms count them.
    """
    n = _n_rows(table)
    if weights is not None and (persons is not None or len(weights) != n):
        raise ValueError("class_stats_of: weights need one count per row, and no persons")
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return ClassStats(empty, {}, {}, {})
    class_ids, _ = _classes(table, quasi_identifiers)
    n_classes = int(class_ids.max()) + 1
    sens_codes, sens_values = {}, {}
    for name in sensitive:
        column_codes, uniques = _text_codes(table[name])
        if (column_codes < 0).any():
            column_codes = np.where(column_codes < 0, len(uniques), column_codes)
            uniques = np.append(uniques, np.array([None], dtype=object))
        sens_codes[name] = column_codes
        sens_values[name] = uniques
    if persons is None:
        weights = np.ones(n) if weights is None else weights.astype(np.float64)
        return ClassStats.from_labels(class_ids, n_classes, weights, sens_codes, sens_values)
    person_codes = _person_codes(persons, n)
    return person_class_stats(class_ids, n_classes, person_codes, sens_codes, sens_values)


def with_reference(
    stats: ClassStats, reference: Mapping[str, Mapping[str | None, float]]
) -> ClassStats:
    """The same classes, compared with the input's distribution of each sensitive column.

    ``reference`` gives each value's count, or with a person key its person weight (see
    :func:`sensitive_reference`); only the proportions matter.

    A value of the input that no released record holds (all its records suppressed) is a
    column of zeros in every class's histogram: the class is still compared with a
    distribution that includes it, as the search compares it.
    """
    histograms, overall, values = dict(stats.histograms), dict(stats.overall), {}
    values = dict(stats.ordered_values)
    for name, counts in reference.items():
        if name not in stats.histograms:
            continue
        released = [None if v is None else str(v) for v in stats.ordered_values[name]]
        extra = [v for v in counts if v not in set(released)]
        unknown = [v for v in released if v not in counts]
        if unknown:
            raise VerificationError(
                f"column {name!r}: released value(s) {unknown[:5]} are not in the input"
            )
        order = released + extra
        hist = stats.histograms[name]
        histograms[name] = np.hstack([hist, np.zeros((hist.shape[0], len(extra)), hist.dtype)])
        total = np.array([counts[v] for v in order], dtype=float)
        overall[name] = total / max(total.sum(), 1.0)
        values[name] = np.array(order, dtype=object)
    return replace(stats, histograms=histograms, overall=overall, ordered_values=values)


def sensitive_reference(
    frame: object,
    columns: Sequence[str],
    output_format: str = "csv",
    persons: Sequence[object] | None = None,
) -> dict[str, dict[str | None, float]]:
    """The input's count of each value of ``columns``, as text the gate reads back.

    The release writes cells with pandas (CSV) or pyarrow (Parquet) and the gate reads them
    back as text; the reference must name values the same way, so each column is written and
    read back exactly as the release is. A missing cell is the key ``None``.

    With ``persons`` (each input row's person), each value's *person weight* instead: every
    person weighs 1, split evenly over their records (the search's reference with a person
    key, :func:`privgate.core.privacy.person_histograms`).
    """

    out: dict[str, dict[str, int]] = {}
    for name in columns:
        cells = _written_cells(frame[name], output_format)  # type: ignore[index]
        counts: dict = {}
        for cell in cells:
            counts[cell] = counts.get(cell, 0) + 1
        if persons is not None:
            counts = _person_weights(cells, persons)
        out[name] = counts
    return out


def _written_cells(column: object, output_format: str) -> list[str | None]:
    """The cells of ``column`` as the release writes them and the gate reads them back."""
    import csv
    import io

    import pandas as pd

    frame = pd.DataFrame({"c": column})
    if output_format == "parquet":
        return [None if v is pd.NA else str(v) for v in frame["c"].astype("string")]
    # quoted in full when a cell holds "\r", as core.publish.stage_release writes it
    # (the csv module quotes only "\n"; a bare "\r" made csv.reader raise here)
    quoting = frame_csv_quoting(frame)
    text = frame.to_csv(index=False, lineterminator="\n", quoting=quoting)
    rows = list(csv.reader(io.StringIO(text)))[1:]
    return [row[0] if row and row[0] != "" else None for row in rows]


def written_counts(
    frame: object, columns: Sequence[str], output_format: str = "csv"
) -> dict[str, TextCounts]:
    """Each column's count of each cell text as the release writes it (missing: empty):
    the gate's ``marginals`` fact for columns released as they are (:mod:`.marginals`).

    Only the column's distinct values are written out (a number's or a text's cell does not
    depend on the other rows), so a table of 10M rows costs one ``value_counts`` per column.
    Two kinds differ: an object column, whose equal values may have different texts (``1``,
    ``True``), is written whole; a date-time column is left out, as pandas writes its times
    only when some row has one (a release without that row writes ``2020-01-01`` where the
    input wrote ``2020-01-01 00:00:00``).
    """
    import pandas as pd

    out: dict[str, TextCounts] = {}
    for name in columns:
        column = frame[name]  # type: ignore[index]
        if column.dtype.kind in "mM" or isinstance(column.dtype, pd.DatetimeTZDtype):
            continue
        if column.dtype == object:
            cells = _written_cells(column, output_format)
            counts = np.ones(len(cells), dtype=np.int64)
        else:
            found = column.value_counts(dropna=False, sort=False)
            cells = _written_cells(pd.Series(found.index, dtype=column.dtype), output_format)
            counts = found.to_numpy(dtype=np.int64)
        texts = np.empty(len(cells), dtype=object)
        texts[:] = ["" if cell is None else cell for cell in cells]
        distinct, inverse = np.unique(texts, return_inverse=True)  # two values, one text
        summed = np.bincount(inverse.reshape(-1), weights=counts, minlength=len(distinct))
        out[name] = TextCounts.from_arrays(distinct, summed.astype(np.int64))
    return out


def _person_weights(cells: Sequence[str | None], persons: Sequence[object]) -> dict:
    """Each value's weight when every person weighs 1, split over their records."""
    person_codes = _person_codes(persons, len(cells))
    keys = list(dict.fromkeys(cells))
    index = {key: i for i, key in enumerate(keys)}
    codes = np.array([index[c] for c in cells], dtype=np.int64)
    weights = person_histograms(np.zeros(len(codes), np.int64), person_codes, codes, 1, len(keys))
    return dict(zip(keys, weights[0].tolist(), strict=True))


def _person_codes(persons: Sequence[object], n_rows: int) -> np.ndarray:
    """Each row's person as a code; a missing person key cannot be counted and is refused."""
    codes, _ = factorize(_as_text(persons))
    if len(codes) != n_rows:
        raise VerificationError(f"{len(codes)} person keys for a release of {n_rows} rows")
    if (codes < 0).any():
        raise VerificationError(
            f"{int((codes < 0).sum())} released row(s) have no person key: they cannot be "
            "counted as people"
        )
    return codes


def _classes(table: object, quasi_identifiers: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Class id of every row (classes ordered by their key) and one row of each class."""
    n = _n_rows(table)
    columns = [table[name] for name in quasi_identifiers]
    if n >= PARALLEL_ROWS and all(isinstance(c, TextCodes) for c in columns):
        radices = [len(c.values) + 1 for c in columns]  # one more code for a missing cell
        if math.prod(radices) < 2**62:
            return _classes_in_ranges(columns, radices)
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for column in columns:
        column_codes, uniques = _text_codes(column)
        radix = len(uniques) + 1  # one more code for a missing cell
        if space * radix >= 2**62:  # compact the key so far before it could overflow
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            space = int(key.max()) + 1
        # key * radix + code, a missing cell (-1) coded len(uniques): in place, as the
        # row-by-row arrays of 10M rows cost two temporaries of 80 MB per column otherwise.
        key *= radix
        key += column_codes
        if n and column_codes.min() < 0:
            key[column_codes < 0] += radix
        space *= radix
    return group_rows(key)


def _classes_in_ranges(
    columns: Sequence[TextCodes], radices: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_classes` of columns of codes, one range of rows per core: each range keyed and
    hashed on its own thread (:func:`privgate.core.encoding.hash_groups`, which ranks the
    keys and finds each class's first row as :func:`group_rows` does).

    Why: keying and hashing a release of 10M rows took about 1 CPU s on one core while the
    other idled, in the gate of ``privgate anonymize``.
    """

    def build_key(start: int, stop: int) -> np.ndarray:
        key = np.zeros(stop - start, dtype=np.int64)
        for column, radix in zip(columns, radices, strict=True):
            codes = column.codes[start:stop]
            key *= radix
            key += codes
            if len(codes) and codes.min() < 0:
                key[codes < 0] += radix  # a missing cell (-1) coded len(values)
        return key

    class_ids, _, firsts, _ = hash_groups(build_key, len(columns[0]))
    return class_ids, firsts


#: Rows from which :func:`group_rows` groups by hashing instead of sorting (below, the hash
#: pass does not pay for itself). 2**14: on 980k keys of 7k classes the hash took 0.04-0.08 s
#: and 23 MiB against np.unique's 0.2-0.3 s and 39 MiB (pyarrow's hash; pandas', which this
#: was 2**20 for, cost an import of 48 MiB).
HASH_ROWS = 1 << 14


def group_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_index=True, return_inverse=True)``'s inverse and first rows.

    Why: that call sorts every row with a stable sort (2.3 CPU s on 10M rows); from
    :data:`HASH_ROWS` rows the rows are grouped by one hash pass instead and only the distinct
    keys are sorted (0.9 s), with the same result: class ids in the keys' order, the first
    row of each class.
    """
    if len(key) < HASH_ROWS:
        _, first, class_ids = np.unique(key, return_index=True, return_inverse=True)
        return class_ids.reshape(-1), first
    seen, uniques = hash_factorize(key)  # ids in order of first appearance
    order = np.argsort(uniques, kind="stable")
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[order] = np.arange(len(uniques), dtype=np.int64)
    # id c first appears where the running maximum of the ids grows to c
    firsts = np.flatnonzero(np.diff(np.maximum.accumulate(seen), prepend=-1) > 0)
    return rank[seen], firsts[order]


def with_population(
    stats: ClassStats, table: object, quasi_identifiers: Sequence[str], population: Population
) -> tuple[ClassStats, list[str]]:
    """``stats`` with each class's population count, matched on the release's cell text
    (:meth:`privgate.core.privacy.Population.counts_for_labels`), and the reasons the counts
    cannot be trusted (texts naming different population values at different levels)."""
    if not len(stats.sizes):
        return stats, []
    _, first = _classes(table, quasi_identifiers)
    labels = {q: _text_at(table[q], first) for q in quasi_identifiers}
    counts, outside, problems = population.counts_for_labels(labels)
    reasons = [f"cannot count the population in the release's classes: {p}" for p in problems]
    return replace(stats, population_sizes=counts, population_outside=outside), reasons


def _text_codes(column: object) -> tuple[np.ndarray, np.ndarray]:
    """A column's codes and sorted distinct texts (``factorize`` of its text cells)."""
    if isinstance(column, TextCodes):
        return column.codes, column.values
    if _text_exact_dtype(column):
        # Distinct cells first (a hash pass in C), then each distinct cell as text: the same
        # codes and texts as factorize(_as_text(column)), without a Python string per row.
        raw, uniques = column.factorize(sort=False)  # type: ignore[attr-defined]
        texts = np.empty(len(uniques), dtype=object)
        texts[:] = [None if is_missing(v) else str(v) for v in uniques.tolist()]
        codes, values = factorize(texts)
        return np.append(codes, np.int32(-1))[raw].astype(np.int32, copy=False), values
    return factorize(_as_text(column))


def _text_exact_dtype(column: object) -> bool:
    """A pandas column whose equal cells are exactly those with equal text: text or integers
    (not objects, where ``1 == 1.0 == True``, nor floats, where ``0.0 == -0.0``)."""
    import pandas as pd

    if not isinstance(column, pd.Series):
        return False
    dtype = column.dtype
    return isinstance(dtype, pd.StringDtype) or pd.api.types.is_integer_dtype(dtype)


def _text_at(column: object, rows: np.ndarray) -> np.ndarray:
    """The text cells of ``rows`` only."""
    if isinstance(column, TextCodes):
        return column.text(rows)
    return _as_text(column)[rows]


def _as_text(column: object) -> np.ndarray:
    """Cells as ``str`` or ``None``, whatever the column's container and dtype."""
    if isinstance(column, TextCodes):
        return column.text()
    if isinstance(column, np.ndarray) and column.dtype == object:
        return column  # cells as read back by read_release: text or None
    values = column.tolist() if hasattr(column, "tolist") else list(column)  # type: ignore[attr-defined]
    out = np.empty(len(values), dtype=object)
    out[:] = [None if is_missing(v) else str(v) for v in values]
    return out


def verify_table(
    release: object,
    quasi_identifiers: Sequence[str],
    models: Sequence[PrivacyModel],
    *,
    input_rows: int | None = None,
    suppression_limit: float = 0.0,
    expected_columns: Sequence[str] | None = None,
    forbidden_columns: Sequence[str] = (),
    persons: Sequence[object] | None = None,
    input_persons: int | None = None,
    reference: Mapping[str, Mapping[str, int]] | None = None,
    input_numbers: Mapping[str, tuple[np.ndarray, Mapping]] | None = None,
    marginals: Mapping[str, TextCounts] | None = None,
    label_sets: Mapping[str, set] | None = None,
    row_counts: np.ndarray | None = None,
) -> GateDecision:
    """Measure a release table against the privacy models and the policy's other limits.

    Parameters
    ----------
    release : DataFrame or mapping of str to array
        The release as read back from disk.
    quasi_identifiers : sequence of str
    models : sequence of PrivacyModel
    input_rows : int, optional
        Rows of the input; records missing from the release count as suppressed.
    suppression_limit : float, default=0
        Largest fraction of ``input_rows`` that may be suppressed.
    expected_columns : sequence of str, optional
        The exact columns the release must have (no more, no fewer).
    forbidden_columns : sequence of str
        Direct identifiers: their presence blocks the release whatever else holds.
    persons : sequence, optional
        The person key of each released row, aligned with the release's rows: kept privately
        by the data owner, never in the release. Classes are then counted in distinct
        persons, and suppression in persons (``input_persons`` of the input).
    input_persons : int, optional
        Distinct persons of the input (with ``persons``; replaces ``input_rows`` for the
        suppression limit, which a person key counts in people).
    reference : mapping of str to mapping of str to int, optional
        Per sensitive column, the input's count of each value (as text, the way the release
        writes it; see :func:`sensitive_reference`). t-closeness compares every class with
        this distribution, as the search does: with suppression, the input's distribution,
        not the released records'. Without it, the released records' distribution is used,
        which equals the input's when nothing is suppressed.
    input_numbers : mapping of str to (ndarray, dict), optional
        Per numeric column, every input record's value (``NaN``: missing) and what each of
        its hierarchy's labels stands for (:func:`privgate.core.label_coverage.hierarchy_spans`):
        the released cells must each be matchable to a distinct value their label holds, or
        the file misstates the data. Given for local recoding, whose ranges are its own.
    marginals : mapping of str to TextCounts, optional
        Per column, how many cells of each text (``None``: empty) the input allows it
        (:mod:`privgate.core.marginals`): a column holding more of a text than that is not
        a release of its input column (a writer that put one column's codes under another's
        name), and is blocked.
    label_sets : mapping of str to set, optional
        Per quasi-identifier, the texts it may hold (its input values' labels at the plan's
        level, :func:`privgate.core.marginals.generalized_texts`); another text blocks.
    row_counts : ndarray of int, optional
        How many rows of the written file each row of ``release`` stands for (a release read
        as its distinct lines, :func:`verify_release`; not with ``persons``): every count,
        the classes, the rows and the suppression are of the file's rows.
    """
    reasons = check_columns(
        list(release), quasi_identifiers, models, expected_columns, forbidden_columns
    )
    if row_counts is not None and persons is not None:
        raise ValueError("verify_table: row_counts and persons cannot be given together")
    n_rows = _n_rows(release) if row_counts is None else int(row_counts.sum())
    if any(r.startswith("cannot verify") for r in reasons):
        return GateDecision(False, reasons, {"rows": n_rows})
    try:
        sensitive = sensitive_columns_of(models)
        stats = class_stats_of(release, quasi_identifiers, sensitive, persons, row_counts)
        if reference:
            stats = with_reference(stats, reference)
    except VerificationError as exc:
        return GateDecision(False, [*reasons, str(exc)], {"rows": n_rows})
    population = population_of(models)
    if population is not None:
        stats, problems = with_population(stats, release, quasi_identifiers, population)
        reasons += problems
    reasons += _misstated(release, input_numbers or {}, row_counts)
    reasons += _beyond_input(release, marginals or {}, label_sets or {}, row_counts)
    away = generalized_away(release, quasi_identifiers)
    if persons is None:
        decision = decide(stats, n_rows, models, reasons, input_rows, suppression_limit)
        decision.measurements["generalized_away"] = away
        return decision
    reasons += [
        f"{name} cannot be verified per person" for name in unsupported_with_persons(models)
    ]
    released_persons = len(set(_as_text(persons).tolist()))
    decision = decide(
        stats, released_persons, models, reasons, input_persons, suppression_limit, unit="persons"
    )
    decision.measurements.update(rows=n_rows, persons=released_persons, generalized_away=away)
    return decision


def _beyond_input(
    release: object,
    marginals: Mapping[str, TextCounts],
    label_sets: Mapping[str, set],
    row_counts: np.ndarray | None = None,
) -> list[str]:
    """Reasons to block: columns holding texts their input column does not hold (as often)."""
    reasons = []
    for name, allowed_texts in label_sets.items():
        if name not in release:  # type: ignore[operator]
            continue  # reported by check_columns
        _, texts = _text_codes(release[name])  # type: ignore[index]
        unknown = unknown_texts(texts, allowed_texts)
        if unknown:
            reasons.append(
                f"column {name!r}: {len(unknown)} written text(s) are no label of the input's "
                f"values at the plan's level (e.g. {unknown[:3]}): the file is not a release of "
                "the input"
            )
    for name, allowed in marginals.items():
        if name not in release:  # type: ignore[operator]
            continue  # reported by check_columns
        codes, texts = _text_codes(release[name])  # type: ignore[index]
        excess, examples = excess_cells(text_counts(codes, texts, row_counts), allowed)
        if excess:
            reasons.append(
                f"column {name!r}: {excess} written cell(s) beyond what the input's column "
                f"holds (e.g. {examples}): the file is not a release of the input"
            )
    return reasons


def _misstated(
    release: object,
    input_numbers: Mapping[str, tuple[np.ndarray, Mapping]],
    row_counts: np.ndarray | None = None,
) -> list[str]:
    """Reasons to block: released numeric labels no distinct input values can stand under."""
    reasons = []
    for name, (values, spans) in input_numbers.items():
        if name not in release:  # type: ignore[operator]
            continue  # reported by check_columns
        codes, texts = _text_codes(release[name])  # type: ignore[index]
        counts = _cell_counts(codes, len(texts), row_counts)
        labels = [None, *texts.tolist()]
        unmatched = unmatched_labels(labels, counts.tolist(), values, spans)
        if unmatched:
            reasons.append(
                f"column {name!r}: {unmatched} released cell(s) state values the input does "
                "not hold (no distinct input record's value lies in each cell's range)"
            )
    return reasons


def _cell_counts(codes: np.ndarray, n_values: int, row_counts: np.ndarray | None) -> np.ndarray:
    """How many of the file's rows hold a missing cell (first) and each of a column's
    ``n_values`` texts; ``row_counts``: the rows each entry of ``codes`` stands for."""
    index = codes.astype(np.int64) + 1
    if row_counts is None:
        return np.bincount(index, minlength=n_values + 1)
    return np.bincount(index, weights=row_counts, minlength=n_values + 1).astype(np.int64)


def sensitive_columns_of(models: Sequence[PrivacyModel]) -> list[str]:
    """The sensitive columns the models read, sorted (see
    :func:`privgate.core.privacy.sensitive_columns`)."""
    return sensitive_columns(models)


def check_columns(
    present: Sequence[str],
    quasi_identifiers: Sequence[str],
    models: Sequence[PrivacyModel],
    expected_columns: Sequence[str] | None = None,
    forbidden_columns: Sequence[str] = (),
) -> list[str]:
    """Reasons to block found in the release's column list alone.

    A reason starting with ``cannot verify`` means a column the checks need is absent.
    """
    reasons: list[str] = []
    leaked = [c for c in forbidden_columns if c in present]
    if leaked:
        reasons.append(f"direct identifier column(s) present in the release: {leaked}")
    if expected_columns is not None:
        extra = [c for c in present if c not in expected_columns]
        missing = [c for c in expected_columns if c not in present]
        if extra:
            reasons.append(f"undeclared column(s) in the release: {extra}")
        if missing:
            reasons.append(f"column(s) missing from the release: {missing}")
    needed = [*quasi_identifiers, *sensitive_columns_of(models)]
    absent = [c for c in needed if c not in present]
    if absent:
        reasons.append(f"cannot verify: columns not in the release: {absent}")
    return reasons


def decide(
    stats: ClassStats,
    n_rows: int,
    models: Sequence[PrivacyModel],
    reasons: Sequence[str] = (),
    input_rows: int | None = None,
    suppression_limit: float = 0.0,
    unit: str = "records",
) -> GateDecision:
    """The decision from a release's equivalence classes (however they were counted).

    Shared by the in-memory gate and the distributed one, so that both reach the same verdict
    and the same measurements from the same class statistics. With a person key, ``n_rows``
    and ``input_rows`` count persons and ``unit`` is ``"persons"``.
    """
    reasons = list(reasons)
    measurements: dict = {"rows": n_rows}
    if input_rows is not None and input_rows >= n_rows:
        # Estimated k-map's sampling fraction is the input's (records or persons): the
        # released classes are cells of that sample, and suppressed units are still in the
        # population. With the release's own units the fraction, and k', would be smaller.
        stats = replace(stats, sampled_units=input_rows)
    if n_rows == 0:
        reasons.append("the release has no rows")
    if input_rows is not None:
        suppressed = input_rows - n_rows
        allowed = math.floor(suppression_limit * input_rows + 1e-9)
        measurements.update(
            suppressed=suppressed, suppression_allowed=allowed, input_rows=input_rows
        )
        if unit != "records":
            measurements.update(suppressed_unit=unit, input_persons=input_rows)
            del measurements["input_rows"]
        if suppressed < 0:
            reasons.append(
                f"the release has more {'rows' if unit == 'records' else unit} ({n_rows}) "
                f"than the input ({input_rows})"
            )
        elif suppressed > allowed:
            reasons.append(
                f"{suppressed} {unit} suppressed, more than the limit of {allowed} "
                f"({suppression_limit:.2%} of {input_rows})"
            )
    measurements["classes"] = len(stats.sizes)
    measurements["min_class_size"] = int(stats.sizes.min()) if len(stats.sizes) else 0
    measurements["average_class_size"] = float(stats.sizes.mean()) if len(stats.sizes) else 0.0
    achieved: dict[str, float] = {}
    for model in models:
        level = model.achieved(stats) if len(stats.sizes) else float("nan")
        achieved[str(model)] = level
        if len(stats.sizes) and not model.holds(level):
            reasons.append(f"{model} not met: the release reaches {level:g}")
    measurements["achieved"] = achieved
    return GateDecision(not reasons, reasons, measurements)


def verify_release(
    path: str | Path,
    quasi_identifiers: Sequence[str],
    models: Sequence[PrivacyModel],
    expected_rows: int | None = None,
    **limits,
) -> GateDecision:
    """Read the release file at ``path`` and :func:`verify_table` it.

    The file is read as dictionary codes (:func:`read_release_codes`): the same cells as
    :func:`read_release`, grouped on integers, never on a Python string per cell; a file read
    as its distinct lines is measured on those lines, each weighing its count of rows.

    An unreadable file is a blocked release, not a crash: the decision says why.
    ``expected_rows``: the rows the search's plan releases; a file holding another number is
    not the release that was searched (a writer that lost or repeated rows: a lost whole class
    still looks k-anonymous, as more suppression within the limit), so it is blocked.
    """
    try:
        if limits.get("persons") is not None:  # each row's person: the rows, not the lines
            coded = CodedLines(read_release_codes(path), None)
        else:
            coded = _read_release_lines(path)
    except VerificationError as exc:
        return GateDecision(False, [str(exc)], {})
    decision = verify_table(
        coded.columns, quasi_identifiers, models, row_counts=coded.counts, **limits
    )
    written = decision.measurements.get("rows")
    if expected_rows is not None and written != expected_rows:
        mismatch = (
            f"the written release has {written} rows, the search's plan releases "
            f"{expected_rows}: the file is not the release that was searched"
        )
        decision = GateDecision(False, [*decision.reasons, mismatch], decision.measurements)
    return decision


def check_coverage(
    decision: GateDecision,
    covered: Sequence[str],
    declared: Sequence[str],
    *,
    narrower_accepted: bool = False,
) -> GateDecision:
    """Add the coverage rule to a decision: whose quasi-identifiers its k-anonymity covers.

    A tiered release E is verified over the attributes of tiers 1..E only; the others are
    released as they are. The gate demands coverage of every declared quasi-identifier unless
    the policy explicitly accepts a narrower release (``algorithm.accept_narrower_coverage``),
    so a narrower guarantee is never published silently. The covered and uncovered columns are
    recorded in the measurements either way (and so in the manifest).
    """
    uncovered = [q for q in declared if q not in set(covered)]
    unknown = [q for q in covered if q not in set(declared)]
    reasons = list(decision.reasons)
    if unknown:
        reasons.append(f"covered columns {unknown} are not declared quasi-identifiers")
    if uncovered and not narrower_accepted:
        reasons.append(
            f"k-anonymity covers {len(covered)} of {len(declared)} quasi-identifiers; "
            f"{uncovered} are released unprotected. Set algorithm.accept_narrower_coverage: "
            "true to publish a narrower release"
        )
    measurements = dict(decision.measurements)
    measurements["covered_quasi_identifiers"] = list(covered)
    measurements["uncovered_quasi_identifiers"] = uncovered
    measurements["narrower_coverage_accepted"] = bool(uncovered and narrower_accepted)
    return GateDecision(not reasons, reasons, measurements)


#: How the gate reads an attack limit (one definition, stated in the manifest and the report).
ATTACK_RULE = (
    "a release is blocked when the lower bound of an attack risk's confidence interval is above "
    "its attacks.max_* limit"
)


def check_attacks(
    decision: GateDecision, evidence: AttackEvidence, limits: Mapping[str, float]
) -> GateDecision:
    """Add the attack criterion to a decision: the risks measured on the written release.

    Every measured risk (with its interval), the exact-match rate of unique records and the
    attack's counts go into ``measurements["attacks"]`` whatever the limits; a limit whose
    risk's lower confidence bound lies above it blocks the release
    (:func:`privgate.core.attacks.check_attack_limits`).
    """
    from privgate.core.attacks import check_attack_limits

    reasons, checks = check_attack_limits(evidence, limits)
    measured = evidence.to_dict()
    measured.update(limits=dict(limits), checks=checks, rule=ATTACK_RULE)
    measurements = {**decision.measurements, "attacks": measured}
    all_reasons = [*decision.reasons, *reasons]
    return GateDecision(not all_reasons, all_reasons, measurements)
