"""Loaders for real, public microdata files in their original distribution formats.

Each loader reads one well-known public dataset *exactly as it is distributed* (no header added,
no cleaning done beforehand) and returns a :class:`pandas.DataFrame` with stable column names
and explicit dtypes:

* integer columns use the nullable ``Int64`` dtype, so a missing value stays ``<NA>`` instead of
  silently turning the whole column into ``float64``;
* text columns use the ``"string"`` dtype with surrounding whitespace removed, so that values
  compare equal to the spellings used in generalization hierarchies.

The loaders are deliberately strict. A privacy release must describe the records it was given,
so a ragged row, an unexpected label or an empty file is never skipped or padded silently:
it raises :class:`privgate.core.exceptions.IngestError` whose message names the file and the 1-based
physical line number of the offending row.

The release policy selects a loader by name through :data:`DATASET_LOADERS`
(``input.format: adult`` and so on).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from privgate.core.exceptions import IngestError

__all__ = [
    "ADULT_COLUMNS",
    "BANK_MARKETING_FEATURE_COLUMNS",
    "BREAST_CANCER_WISCONSIN_COLUMNS",
    "DATASET_LOADERS",
    "load_adult",
    "load_bank_marketing",
    "load_breast_cancer_wisconsin",
]

PathLike = str | os.PathLike[str]

#: Column names of UCI Adult, in file order (``adult.names`` lists them without a header row).
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
_ADULT_INT_COLUMNS = frozenset(
    {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}
)
_ADULT_LABELS = frozenset({"<=50K", ">50K"})

#: The 16 feature columns of UCI Bank Marketing (``bank.csv``/``bank-full.csv`` and the
#: Kaggle 11,162-row variant), in file order. The label column follows them.
BANK_MARKETING_FEATURE_COLUMNS: tuple[str, ...] = (
    "age",
    "job",
    "marital",
    "education",
    "default",
    "balance",
    "housing",
    "loan",
    "contact",
    "day",
    "month",
    "duration",
    "campaign",
    "pdays",
    "previous",
    "poutcome",
)
#: UCI names the label ``y``; the Kaggle re-upload renamed it to ``deposit``.
_BANK_LABEL_COLUMNS = ("y", "deposit")
_BANK_INT_COLUMNS = frozenset(
    {"age", "balance", "day", "duration", "campaign", "pdays", "previous"}
)
_BANK_DELIMITER_CANDIDATES = (";", ",", "\t")

#: Column names of UCI Breast Cancer Wisconsin (Original), in file order.
BREAST_CANCER_WISCONSIN_COLUMNS: tuple[str, ...] = (
    "sample_code_number",
    "clump_thickness",
    "uniformity_of_cell_size",
    "uniformity_of_cell_shape",
    "marginal_adhesion",
    "single_epithelial_cell_size",
    "bare_nuclei",
    "bland_chromatin",
    "normal_nucleoli",
    "mitoses",
    "class",
)
_BREAST_CANCER_CLASSES = frozenset({2, 4})


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------


def _read_lines(path: Path) -> list[str]:
    """Return the file's lines without line terminators, with trailing blank lines removed.

    The file is decoded as UTF-8 (a byte-order mark is tolerated) with universal newlines, so
    LF and CRLF files give the same result. Trailing blank lines are dropped because several
    UCI files end with an extra empty line that is not a record.
    """
    try:
        with path.open("r", encoding="utf-8-sig", newline=None) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError as exc:
        raise IngestError(f"{path}: file not found") from exc
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: not valid UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc
    except OSError as exc:
        raise IngestError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise IngestError(f"{path}: file is empty (no lines to read)")
    return lines


def _split_records(
    path: Path,
    lines: Sequence[str],
    first_line_number: int,
    *,
    delimiter: str,
    n_fields: int,
) -> tuple[list[list[str]], list[int]]:
    """Split each line into stripped fields and check that every row has ``n_fields`` fields.

    Lines are parsed one at a time with :mod:`csv` so that a stray quote cannot swallow the
    following lines, which keeps the reported line numbers exact. None of the supported formats
    has quoted fields spanning several lines.

    Returns
    -------
    records, line_numbers
        The fields of every row and the 1-based physical line number each row came from.
    """
    records: list[list[str]] = []
    numbers: list[int] = []
    for offset, line in enumerate(lines):
        line_number = first_line_number + offset
        if not line.strip():
            raise IngestError(
                f"{path}: line {line_number}: blank line inside the data "
                f"(expected {n_fields} fields); the file may be truncated or concatenated"
            )
        fields = next(csv.reader([line], delimiter=delimiter, quotechar='"'))
        if len(fields) != n_fields:
            raise IngestError(
                f"{path}: line {line_number}: expected {n_fields} fields, found "
                f"{len(fields)} (separator {delimiter!r})"
            )
        records.append([field.strip() for field in fields])
        numbers.append(line_number)
    if not records:
        raise IngestError(f"{path}: file has no data rows")
    return records, numbers


def _build_frame(
    path: Path,
    records: list[list[str]],
    line_numbers: list[int],
    columns: Sequence[str],
    int_columns: frozenset[str],
    missing: str,
    categorical_missing: str | None = None,
) -> pd.DataFrame:
    """Turn parsed string records into a typed frame.

    ``missing`` becomes NA in every column; ``categorical_missing`` (if given) becomes NA in the
    text columns only. Integer columns are converted to ``Int64``; a value that is neither an
    integer nor a missing marker raises :class:`IngestError` naming its line and column.
    """
    raw = pd.DataFrame(records, columns=list(columns), dtype="string")
    out: dict[str, pd.Series] = {}
    for column in columns:
        values = raw[column].mask(raw[column] == missing)
        if column in int_columns:
            bad = values.notna() & ~values.str.fullmatch(r"[+-]?[0-9]+").fillna(False)
            if bad.any():
                position = int(bad.to_numpy(dtype=bool).nonzero()[0][0])
                raise IngestError(
                    f"{path}: line {line_numbers[position]}: column {column!r}: "
                    f"expected an integer, found {values.iloc[position]!r}"
                )
            out[column] = values.astype("Int64")
        else:
            if categorical_missing is not None:
                values = values.mask(values == categorical_missing)
            out[column] = values.astype("string")
    return pd.DataFrame(out)


def _first_bad_label(values: pd.Series, allowed: frozenset) -> int | None:
    """Return the position of the first value not in ``allowed`` (NA counts as bad), or None."""
    bad = ~values.isin(list(allowed)).fillna(False).to_numpy(dtype=bool)
    positions = bad.nonzero()[0]
    return int(positions[0]) if len(positions) else None


# --------------------------------------------------------------------------------------------
# UCI Adult
# --------------------------------------------------------------------------------------------


def load_adult(path: PathLike) -> pd.DataFrame:
    """Load UCI Adult (``adult.data`` or ``adult.test``) as distributed by UCI.

    Parameters
    ----------
    path : str or os.PathLike
        Path to ``adult.data`` or ``adult.test`` (any file in the same format works).

    Returns
    -------
    pandas.DataFrame
        One row per record with the 15 columns of :data:`ADULT_COLUMNS`. ``age``, ``fnlwgt``,
        ``education-num``, ``capital-gain``, ``capital-loss`` and ``hours-per-week`` are
        ``Int64``; all other columns are ``"string"``. ``income`` is ``"<=50K"`` or ``">50K"``.

    Raises
    ------
    core.exceptions.IngestError
        If the file is missing or empty, a row does not have exactly 15 fields, an integer
        column holds a non-integer, or a label is not one of the two income classes. The
        message names the file and the 1-based line number.

    Notes
    -----
    The quirks handled here all come from the original C4.5-style distribution:

    * **No header row.** Column names are only given in ``adult.names``, so they are fixed here
      rather than guessed; a file *with* a header fails loudly on the integer ``age`` column
      instead of becoming a frame whose first record is the header.
    * **Delimiter ``", "``** (comma plus a space). Fields are split on the comma and stripped;
      otherwise every text value would carry a leading space and never match a hierarchy.
    * **Banner line in ``adult.test``.** Its first line is ``|1x3 Cross validator``, a C4.5
      comment. Leading lines that start with ``|`` are detected by content and skipped, not by
      file name, so a renamed copy of the test split still loads.
    * **Label spelling differs between the splits.** ``adult.test`` writes ``<=50K.`` and
      ``>50K.`` (trailing period). The period is stripped so that train and test share one
      label domain; without this, concatenating the splits yields four classes.
    * **Missing marker ``?``.** Converted to ``<NA>`` so that missing values are counted as
      missing (e.g. by suppression or l-diversity checks) instead of forming a category ``"?"``.
    * **Extra empty line at the end** of both files. Trailing blank lines are ignored; a blank
      line *between* records is reported as an error, because it signals a damaged file.
    """
    file_path = Path(path)
    lines = _read_lines(file_path)
    skip = 0
    while skip < len(lines) and lines[skip].lstrip().startswith("|"):
        skip += 1
    records, numbers = _split_records(
        file_path,
        lines[skip:],
        first_line_number=skip + 1,
        delimiter=",",
        n_fields=len(ADULT_COLUMNS),
    )
    frame = _build_frame(
        file_path, records, numbers, ADULT_COLUMNS, _ADULT_INT_COLUMNS, missing="?"
    )
    income = frame["income"].str.removesuffix(".")
    bad = _first_bad_label(income, _ADULT_LABELS)
    if bad is not None:
        raise IngestError(
            f"{file_path}: line {numbers[bad]}: column 'income': expected '<=50K' or '>50K' "
            f"(optionally with a trailing '.'), found {frame['income'].iloc[bad]!r}"
        )
    frame["income"] = income
    return frame


# --------------------------------------------------------------------------------------------
# UCI Bank Marketing
# --------------------------------------------------------------------------------------------


def _sniff_delimiter(path: Path, header: str) -> tuple[str, list[str]]:
    """Pick the delimiter that splits the header line into the most fields."""
    best: tuple[str, list[str]] | None = None
    for candidate in _BANK_DELIMITER_CANDIDATES:
        names = [name.strip() for name in next(csv.reader([header], delimiter=candidate))]
        if best is None or len(names) > len(best[1]):
            best = (candidate, names)
    assert best is not None
    if len(best[1]) < 2:
        raise IngestError(
            f"{path}: line 1: cannot detect the delimiter of the header line "
            f"(tried {', '.join(repr(d) for d in _BANK_DELIMITER_CANDIDATES)})"
        )
    return best


def load_bank_marketing(path: PathLike) -> pd.DataFrame:
    """Load UCI Bank Marketing (``bank.csv``, ``bank-full.csv``) or its Kaggle re-upload.

    Parameters
    ----------
    path : str or os.PathLike
        Path to a UCI file (``;``-delimited, quoted strings, label ``y``) or to the Kaggle
        11,162-row file (``,``-delimited, unquoted, label ``deposit``).

    Returns
    -------
    pandas.DataFrame
        The 16 columns of :data:`BANK_MARKETING_FEATURE_COLUMNS` followed by the label column,
        named as in the file (``y`` or ``deposit``). ``age``, ``balance``, ``day``,
        ``duration``, ``campaign``, ``pdays`` and ``previous`` are ``Int64``; all other columns
        are ``"string"``, with the literal value ``unknown`` converted to ``<NA>``.

    Raises
    ------
    core.exceptions.IngestError
        If the file is empty or has no data rows, the header is not the Bank Marketing header,
        a row has the wrong number of fields, or a numeric column holds a non-integer. The
        message names the file and the 1-based line number.

    Notes
    -----
    * **Two delimiters in circulation.** UCI ships ``;``-separated files with every string in
      double quotes; the widely used Kaggle copy is ``,``-separated without quotes. Rather than
      trusting the file name, the delimiter is sniffed from the header line (the candidate that
      splits it into the most fields wins) and quotes are removed by the CSV parser.
    * **Two label names.** UCI calls the label ``y``; Kaggle renamed it ``deposit``. Both are
      accepted and kept as they are, so a policy can name the column it was written for.
    * **``unknown`` is the missing marker.** There is no ``?``; UCI codes unknown categorical
      values as the literal word ``unknown``. It becomes ``<NA>`` in text columns so that it is
      treated as missing, not as a real (and potentially rare, hence identifying) category.
    * **``pdays = -1``** means "not previously contacted". It is a sentinel, not a missing
      value, and is kept as ``-1`` so no information is lost; callers decide how to treat it.
    """
    file_path = Path(path)
    lines = _read_lines(file_path)
    delimiter, header = _sniff_delimiter(file_path, lines[0])
    expected_prefix = list(BANK_MARKETING_FEATURE_COLUMNS)
    if (
        len(header) != len(expected_prefix) + 1
        or header[:-1] != expected_prefix
        or header[-1] not in _BANK_LABEL_COLUMNS
    ):
        raise IngestError(
            f"{file_path}: line 1: not a Bank Marketing header; expected "
            f"{delimiter.join(expected_prefix)}{delimiter}y (or deposit), "
            f"found {delimiter.join(header)}"
        )
    records, numbers = _split_records(
        file_path,
        lines[1:],
        first_line_number=2,
        delimiter=delimiter,
        n_fields=len(header),
    )
    return _build_frame(
        file_path,
        records,
        numbers,
        header,
        _BANK_INT_COLUMNS,
        missing="",
        categorical_missing="unknown",
    )


# --------------------------------------------------------------------------------------------
# UCI Breast Cancer Wisconsin (Original)
# --------------------------------------------------------------------------------------------


def load_breast_cancer_wisconsin(path: PathLike) -> pd.DataFrame:
    """Load UCI Breast Cancer Wisconsin (Original), ``breast-cancer-wisconsin.data``.

    Parameters
    ----------
    path : str or os.PathLike
        Path to ``breast-cancer-wisconsin.data``.

    Returns
    -------
    pandas.DataFrame
        The 11 columns of :data:`BREAST_CANCER_WISCONSIN_COLUMNS`, all ``Int64``. ``class`` is
        kept as the original code: 2 = benign, 4 = malignant.

    Raises
    ------
    core.exceptions.IngestError
        If the file is empty, a row does not have exactly 11 fields, a value is not an integer
        (or ``?``), or a class code is not 2 or 4. The message names the file and line.

    Notes
    -----
    * **No header row**; names are taken from the ``.names`` file and fixed here.
    * **Missing marker ``?``** (16 times, all in ``bare_nuclei``). Converting it to ``<NA>`` and
      using ``Int64`` keeps the column integer-valued; with plain NumPy dtypes the single ``?``
      would turn the column into strings or floats.
    * **``sample_code_number`` repeats** (699 rows, 645 distinct codes), so it is *not* a row
      key; it is still a direct identifier and a policy should drop or pseudonymize it.
    * **Class codes 2/4** are kept as integers rather than mapped to labels, so results can be
      compared with the literature, which reports them in the original coding.
    """
    file_path = Path(path)
    lines = _read_lines(file_path)
    records, numbers = _split_records(
        file_path,
        lines,
        first_line_number=1,
        delimiter=",",
        n_fields=len(BREAST_CANCER_WISCONSIN_COLUMNS),
    )
    frame = _build_frame(
        file_path,
        records,
        numbers,
        BREAST_CANCER_WISCONSIN_COLUMNS,
        frozenset(BREAST_CANCER_WISCONSIN_COLUMNS),
        missing="?",
    )
    bad = _first_bad_label(frame["class"], _BREAST_CANCER_CLASSES)
    if bad is not None:
        raise IngestError(
            f"{file_path}: line {numbers[bad]}: column 'class': expected 2 (benign) or "
            f"4 (malignant), found {frame['class'].iloc[bad]!r}"
        )
    return frame


#: Loader per ``input.format`` name in the release policy.
DATASET_LOADERS: dict[str, Callable[[PathLike], pd.DataFrame]] = {
    "adult": load_adult,
    "bank_marketing": load_bank_marketing,
    "breast_cancer_wisconsin": load_breast_cancer_wisconsin,
}


# --------------------------------------------------------------------------------------------
# UCI Soybean (Large)
# --------------------------------------------------------------------------------------------

#: Column names of UCI Soybean (Large): the class, then the 35 attributes in file order. The
#: names follow ``soybean-large.names``; the two containing a space there (``external decay``,
#: ``fruit spots``) are hyphenated like all the others.
SOYBEAN_LARGE_COLUMNS: tuple[str, ...] = (
    "class",
    "date",
    "plant-stand",
    "precip",
    "temp",
    "hail",
    "crop-hist",
    "area-damaged",
    "severity",
    "seed-tmt",
    "germination",
    "plant-growth",
    "leaves",
    "leafspots-halo",
    "leafspots-marg",
    "leafspot-size",
    "leaf-shread",
    "leaf-malf",
    "leaf-mild",
    "stem",
    "lodging",
    "stem-cankers",
    "canker-lesion",
    "fruiting-bodies",
    "external-decay",
    "mycelium",
    "int-discolor",
    "sclerotia",
    "fruit-pods",
    "fruit-spots",
    "seed",
    "mold-growth",
    "seed-discolor",
    "seed-size",
    "shriveling",
    "roots",
)
#: The 19 disease classes of the UCI training file (the test file uses the same names).
_SOYBEAN_LARGE_CLASSES = frozenset(
    {
        "diaporthe-stem-canker",
        "charcoal-rot",
        "rhizoctonia-root-rot",
        "phytophthora-rot",
        "brown-stem-rot",
        "powdery-mildew",
        "downy-mildew",
        "brown-spot",
        "bacterial-blight",
        "bacterial-pustule",
        "purple-seed-stain",
        "anthracnose",
        "phyllosticta-leaf-spot",
        "alternarialeaf-spot",
        "frog-eye-leaf-spot",
        "diaporthe-pod-&-stem-blight",
        "cyst-nematode",
        "2-4-d-injury",
        "herbicide-injury",
    }
)


def _soybean_header_name(name: str) -> str:
    """Normalise a header cell the way :data:`SOYBEAN_LARGE_COLUMNS` spells names."""
    return "-".join(name.strip().lower().split())


def load_soybean_large(path: PathLike) -> pd.DataFrame:
    """Load UCI Soybean (Large), ``soybean-large.data`` or the common copy with a header row.

    Parameters
    ----------
    path : str or os.PathLike
        Path to UCI's ``soybean-large.data`` (no header) or to a copy whose first line is the
        attribute names (``Class,date,plant-stand,...``), such as the ``soybean-large.csv`` in
        ``shared/data/soybean_large``.

    Returns
    -------
    pandas.DataFrame
        The 36 columns of :data:`SOYBEAN_LARGE_COLUMNS`: ``class`` as ``"string"`` (one of the
        19 disease names) and the 35 attributes as ``Int64`` codes, ``<NA>`` where the file has
        ``?``.

    Raises
    ------
    core.exceptions.IngestError
        If the file is missing or empty, a header row does not name the 36 columns, a row does
        not have 36 fields, an attribute is neither an integer nor ``?``, or a class is not one
        of the 19 diseases. The message names the file and the 1-based line number.

    Notes
    -----
    * **Header or not.** UCI ships no header; the widely copied CSV adds one (first cell
      ``Class``). A first line whose first cell is ``class`` (any case) is read as a header and
      checked against the expected names (case, surrounding space and inner spaces vs hyphens
      ignored), so both layouts load to the same frame and a shuffled header fails loudly.
    * **CRLF line endings** of the CSV copy are handled by universal newlines.
    * **Missing marker ``?``** (712 times in the training file, in 34 of the 35 attributes,
      concentrated in a few classes). It becomes ``<NA>``; the loader neither imputes nor drops,
      so the caller's choice is visible (FELP, for instance, needs a complete matrix).
    * **Attributes are categorical codes** (small integers, some ordinal such as ``date`` or
      ``severity``, some nominal); they are kept as integers, not one-hot encoded.
    """
    file_path = Path(path)
    lines = _read_lines(file_path)
    first = next(csv.reader([lines[0]], delimiter=","))
    skip = 0
    if first and first[0].strip().lower() == "class":
        names = [_soybean_header_name(name) for name in first]
        if names != list(SOYBEAN_LARGE_COLUMNS):
            raise IngestError(
                f"{file_path}: line 1: not a Soybean (Large) header; expected "
                f"{','.join(SOYBEAN_LARGE_COLUMNS)}, found {lines[0].strip()}"
            )
        skip = 1
    records, numbers = _split_records(
        file_path,
        lines[skip:],
        first_line_number=skip + 1,
        delimiter=",",
        n_fields=len(SOYBEAN_LARGE_COLUMNS),
    )
    frame = _build_frame(
        file_path,
        records,
        numbers,
        SOYBEAN_LARGE_COLUMNS,
        frozenset(SOYBEAN_LARGE_COLUMNS[1:]),
        missing="?",
    )
    bad = _first_bad_label(frame["class"], _SOYBEAN_LARGE_CLASSES)
    if bad is not None:
        raise IngestError(
            f"{file_path}: line {numbers[bad]}: column 'class': expected one of the 19 Soybean "
            f"(Large) diseases, found {frame['class'].iloc[bad]!r}"
        )
    return frame
