"""The columnar CSV reader and writer: the reference reader's cells and the reference writer's
bytes, as codes; and the gate reading a written release columnar still blocks what it must."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privgate.core.columnar import TextCodes, read_coded_csv, write_coded_csv
from privgate.core.exceptions import IngestError
from privgate.core.gate import read_release, read_release_codes, verify_release
from privgate.core.privacy import DistinctLDiversity, KAnonymity
from privgate.core.textcsv import read_text_columns, write_text_columns

#: Files on which pyarrow and the standard library's reader could part ways; each must give
#: the same cells (or the same refusal) through read_coded_csv as through read_text_columns.
EDGE_FILES = {
    "plain": "a,b\n1,2\n3,\n",
    "quoted_delimiter": 'a,b\n"x,y",1\n"q""r",2\n',
    "quoted_newline": 'a,b\n"x\ny",1\n2,3\n',
    "quote_inside_field": 'a,b\nx"y,2\n',
    "text_after_quote": 'a,b\n"x"y,2\n',
    "blank_line_inside": "a,b\n1,2\n\n3,4\n",
    "blank_lines_at_end": "a,b\n1,2\n3,4\n\n\n",
    "all_empty_row": "a,b\n1,2\n,\n",
    "short_row": "a,b\n1,2\n3\n",
    "long_row": "a,b\n1,2\n3,4,5\n",
    "byte_order_mark": "\ufeffa,b\n1,2\n",
    "crlf": "a,b\r\n1,2\r\n,4\r\n",
    "cr_only": "a,b\r1,2\r3,4\r",
    "nul_byte": "a,b\n1,\x002\n",
    "one_column_blank_line": "a\n1\n\n2\n",
    "header_only": "a,b\n",
    "empty": "",
    "spaces_kept_in_cells": " a , b\n 1 , 2 \n",
    "duplicate_header": "a,a\n1,2\n",
    "leading_zeros": "zip,n\n02139,007\n2139,7\n",
    "no_final_newline": "a,b\n1,2",
    "cell_over_the_csv_field_limit": "a,b\n" + "x" * 131_073 + ",2\n",
}


def _cells(read, path: Path, **options):
    try:
        columns = read(path, **options)
    except IngestError as exc:
        return ("refused", str(exc))
    return {name: list(column.tolist()) for name, column in columns.items()}


@pytest.mark.parametrize("name", sorted(EDGE_FILES))
@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("lines", [False, True])
def test_coded_reader_reads_the_reference_readers_cells(tmp_path, name, header, lines):
    path = tmp_path / f"{name}.csv"
    path.write_bytes(EDGE_FILES[name].encode("utf-8"))
    assert _cells(read_coded_csv, path, header=header, lines=lines) == _cells(
        read_text_columns, path, header=header
    )


def test_coded_reader_refuses_undecodable_bytes_like_the_reference(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"a,b\n1,\xff\xfe\n")
    assert _cells(read_coded_csv, path) == _cells(read_text_columns, path)
    assert _cells(read_coded_csv, path)[0] == "refused"


@pytest.mark.parametrize(
    ("text", "missing"),
    [('a,b\n",1\n3,4\n', ['"', ""]), ('a,b\nx"y,1\n3,4\n', ['x"y']), ("a,b\n\x00,1\n", ["\x00"])],
)
def test_coded_reader_reads_a_marker_holding_a_quote_as_the_reference(tmp_path, text, missing):
    """A cell equal to a missing marker that holds a quote character (or a NUL byte) is
    judged by the reference reader: pyarrow, splitting with quoting off, read ``"`` as a
    missing cell where the reference reader refuses the file (an unclosed quote)."""
    path = tmp_path / "marker.csv"
    path.write_bytes(text.encode("utf-8"))
    options = {"missing": missing}
    assert _cells(read_coded_csv, path, **options) == _cells(read_text_columns, path, **options)


def test_coded_reader_on_adult_with_markers(shared_data):
    path = shared_data("arx/adult.csv")
    options = {"delimiter": ";", "missing": ["", "?"]}
    coded = read_coded_csv(path, **options)
    text = read_text_columns(path, **options)
    assert list(coded) == list(text)
    for name, cells in text.items():
        assert coded[name].codes.dtype == np.int8  # every Adult column has < 127 texts
        assert coded[name].tolist() == cells.tolist()
        assert list(coded[name].values) == sorted(set(cells.tolist()) - {None})


def test_coded_reader_joins_many_blocks_into_the_reference_readers_cells(
    shared_data, tmp_path, monkeypatch
):
    """Adult read in 64 KiB blocks (each block has its own dictionaries, parsed on every
    core): the reference reader's cells, without falling back to it; a blank line many blocks
    down (pyarrow reads it as a row of empty cells) still goes to the reference reader, which
    refuses it."""
    import privgate.core.columnar as columnar

    monkeypatch.setattr(columnar, "BLOCK_BYTES", 64 << 10)
    path = shared_data("arx/adult.csv")
    options = {"delimiter": ";", "missing": ["", "?"]}
    text = read_text_columns(path, **options)
    with monkeypatch.context() as patched:
        patched.setattr(columnar, "read_text_columns", None)  # a fallback would fail
        coded = read_coded_csv(path, **options)
    assert {name: c.tolist() for name, c in coded.items()} == {
        name: cells.tolist() for name, cells in text.items()
    }
    lines = Path(path).read_text().splitlines(keepends=True)
    blank = tmp_path / "blank.csv"
    blank.write_text("".join([*lines[:20_000], "\n", *lines[20_000:]]))
    refused = _cells(read_coded_csv, blank, **options)
    assert refused == _cells(read_text_columns, blank, **options)
    assert refused[0] == "refused"


@pytest.mark.parametrize("by", ["lines", "cells", "lines in batches"])
def test_coded_writer_writes_the_reference_writers_bytes(shared_data, tmp_path, monkeypatch, by):
    """Both ways of writing without quotes: copies of the distinct lines (a release's case)
    and cell by cell (a table of too many distinct lines; forced here); the lines also in
    many batches, each gathered while the one before is written."""
    import privgate.core.columnar as columnar

    if by == "lines in batches":
        monkeypatch.setattr(columnar, "WRITE_ROWS", 997)
        by = "lines"
    written = []
    by_lines = columnar._write_lines
    if by == "cells":
        monkeypatch.setattr(columnar, "_write_lines", lambda *args: False)
    else:
        monkeypatch.setattr(
            columnar, "_write_lines", lambda *args: written.append(by_lines(*args)) or written[-1]
        )
    cells = read_text_columns(shared_data("arx/adult.csv"), delimiter=";", missing=["?"])
    cells["age"][[3, 7]] = None
    coded = {name: TextCodes.from_text(column) for name, column in cells.items()}
    rows = np.random.default_rng(3).permutation(len(cells["age"]))[:5000]
    write_text_columns(tmp_path / "reference.csv", {n: c[rows] for n, c in cells.items()})
    write_coded_csv(tmp_path / "coded.csv", coded, rows)
    assert (tmp_path / "coded.csv").read_bytes() == (tmp_path / "reference.csv").read_bytes()
    write_text_columns(tmp_path / "reference_all.csv", cells)
    write_coded_csv(tmp_path / "coded_all.csv", coded)
    assert (tmp_path / "coded_all.csv").read_bytes() == (
        tmp_path / "reference_all.csv"
    ).read_bytes()


def test_coded_writer_writes_a_table_of_mostly_distinct_lines_cell_by_cell(tmp_path, monkeypatch):
    """Above 2^16 distinct lines and one per 16 rows, lines are not made one by one (1M of
    them cost more than writing 10M rows cell by cell): the cell by cell writer runs, and
    writes the reference writer's bytes."""
    import privgate.core.columnar as columnar

    by_cells = columnar._write_cells
    used = []
    monkeypatch.setattr(columnar, "_write_cells", lambda *args: used.append(1) or by_cells(*args))
    n = 200_000  # 100,000 distinct lines: one per 2 rows
    cells = {
        "id": np.array([f"p{i % 100_000}" for i in range(n)], dtype=object),
        "group": np.array(["a", "b", None, "c"] * (n // 4), dtype=object),
    }
    write_text_columns(tmp_path / "reference.csv", cells)
    write_coded_csv(tmp_path / "coded.csv", {k: TextCodes.from_text(v) for k, v in cells.items()})
    assert (tmp_path / "coded.csv").read_bytes() == (tmp_path / "reference.csv").read_bytes()
    assert used == [1]


def test_coded_writer_quotes_like_the_reference_when_a_value_needs_it(tmp_path):
    cells = {
        "a": np.array(['x,"y', "z", None], dtype=object),
        "b": np.array(["1", "line\nbreak", "3"], dtype=object),
    }
    write_text_columns(tmp_path / "reference.csv", cells)
    write_coded_csv(tmp_path / "coded.csv", {n: TextCodes.from_text(c) for n, c in cells.items()})
    assert (tmp_path / "coded.csv").read_bytes() == (tmp_path / "reference.csv").read_bytes()
    assert read_coded_csv(tmp_path / "coded.csv")["b"].tolist() == ["1", "line\nbreak", "3"]


@pytest.mark.parametrize("writer", ["reference", "coded"])
def test_a_cell_holding_a_lone_carriage_return_is_written_so_it_reads_back(tmp_path, writer):
    """The csv module quotes only the line terminator's characters ("\\n"), so "\\r" went out
    bare and both readers split its row (review11 F4): the release could not be read back."""
    cells = {
        "a": np.array(["x", "cr\rx", None, "y"], dtype=object),
        "b": np.array(["1", "2", "3", "a;b"], dtype=object),
    }
    path = tmp_path / "out.csv"
    if writer == "reference":
        write_text_columns(path, cells, delimiter=";")
    else:
        write_coded_csv(path, {n: TextCodes.from_text(c) for n, c in cells.items()}, None, ";")
    expected = {n: c.tolist() for n, c in cells.items()}
    assert _cells(read_text_columns, path, delimiter=";") == expected
    assert _cells(read_coded_csv, path, delimiter=";") == expected
    assert b"\n1;" not in path.read_bytes()  # rows without a carriage return stay unquoted


def test_privgate_anonymize_releases_a_column_holding_a_carriage_return(tmp_path):
    from privgate.core.fastpath import anonymize_csv
    from privgate.core.policy import load_policy

    (tmp_path / "data.csv").write_bytes(b"a;note;s\n" + b'x;"cr\rx";s1\n' * 3 + b"y;plain;s2\n" * 3)
    (tmp_path / "ha.csv").write_text("x;G;*\ny;G;*\n")
    (tmp_path / "policy.yaml").write_text(
        "dataset: cr\n"
        "input: {path: data.csv, format: csv, delimiter: ';', header: true}\n"
        "columns:\n"
        "  a: {role: quasi_identifier, hierarchy: {kind: arx, path: ha.csv}}\n"
        "  note: {role: insensitive}\n"
        "  s: {role: sensitive}\n"
        "privacy: {k: 2, suppression_limit: 0.0}\n"
        "algorithm: {name: optimal, metric: loss}\n"
        "output: {directory: out, format: csv}\n"
    )
    policy = load_policy(tmp_path / "policy.yaml")
    decision, _ = anonymize_csv(policy, tmp_path / "release.csv", shuffle_seed=3)
    assert decision.passed, decision
    written = read_text_columns(tmp_path / "release.csv")
    assert sorted(written["note"].tolist()) == ["cr\rx"] * 3 + ["plain"] * 3


@pytest.mark.parametrize("missing_at", [1, 2])
def test_coded_writer_writes_a_one_column_tables_missing_cell_as_the_reference_does(
    tmp_path, missing_at
):
    """One column, one missing cell: the csv module writes ``""`` (an empty line would be a
    blank line, which the reader refuses mid-file and drops at its end), pyarrow an empty line."""
    cells = {"a": np.array(["x", "y", "z"], dtype=object)}
    cells["a"][missing_at] = None
    write_text_columns(tmp_path / "reference.csv", cells)
    write_coded_csv(tmp_path / "coded.csv", {n: TextCodes.from_text(c) for n, c in cells.items()})
    assert (tmp_path / "coded.csv").read_bytes() == (tmp_path / "reference.csv").read_bytes()
    assert read_coded_csv(tmp_path / "coded.csv")["a"].tolist() == cells["a"].tolist()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_coded_reader_keeps_a_byte_order_mark_the_codec_keeps_without_a_header(tmp_path, encoding):
    """A codec that does not strip the byte-order mark (utf-16-le) leaves it on the first
    cell in the reference reader; pyarrow's UTF-8 reader (after transcoding) dropped it."""
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffx,y\np,q\n".encode(encoding))
    options = {"encoding": encoding, "header": False}
    assert _cells(read_coded_csv, path, **options) == _cells(read_text_columns, path, **options)
    assert _cells(read_coded_csv, path, **options)["column_1"] == ["\ufeffx", "p"]


def _write_release(path: Path, rows: list[tuple[str, str, str]]) -> None:
    lines = ["age,zip,disease", *(",".join(r) for r in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_columnar_gate_blocks_a_tampered_release_with_one_class_below_k(shared_data, tmp_path):
    """A release that passed, edited after writing so that one class has k-1 records, is
    blocked by the gate reading it columnar, with the numbers the text reader gives."""
    from privgate.flows.cli import main

    shared_data("arx/adult.csv")
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "release.csv"
    assert main(["anonymize", str(repo / "policies" / "adult.yaml"), "--output", str(out)]) == 0
    qis = [
        "sex",
        "age",
        "race",
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
    ]
    models = [KAnonymity(k=5)]
    assert verify_release(out, qis, models).passed
    lines = out.read_text(encoding="utf-8").splitlines()
    header, body = lines[0], lines[1:]
    # The smallest class: drop records of it until k-1 remain.
    keys = [",".join(line.split(",")[:8]) for line in body]
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    victim = min(counts, key=counts.__getitem__)
    drop = counts[victim] - 4
    kept = []
    for line, key in zip(body, keys, strict=True):
        if key == victim and drop > 0:
            drop -= 1
            continue
        kept.append(line)
    tampered = tmp_path / "tampered.csv"
    tampered.write_text("\n".join([header, *kept]) + "\n", encoding="utf-8")
    decision = verify_release(tampered, qis, models)
    assert not decision.passed
    assert decision.measurements["min_class_size"] == 4
    assert any("5-anonymity not met: the release reaches 4" in r for r in decision.reasons)
    # The same file through the text reader: the same decision and measurements.
    text = read_release(tampered)
    coded = read_release_codes(tampered)
    assert {n: c.tolist() for n, c in coded.items()} == {n: c.tolist() for n, c in text.items()}


def test_columnar_gate_measures_l_diversity_as_the_text_reader(tmp_path):
    from privgate.core.gate import verify_table

    path = tmp_path / "release.csv"
    _write_release(
        path,
        [("30", "021*", "flu"), ("30", "021*", "flu"), ("30", "021*", "cold")]
        + [("40", "", "flu"), ("40", "", "hiv"), ("40", "", "")],
    )
    models = [KAnonymity(k=3), DistinctLDiversity(column="disease", l=2)]
    columnar = verify_release(path, ["age", "zip"], models)
    reference = verify_table(read_release(path), ["age", "zip"], models)
    assert columnar.passed == reference.passed is True
    assert columnar.measurements == reference.measurements


def test_code_dtype_holds_minus_one_every_code_and_the_count():
    from privgate.core.columnar import code_dtype

    for n_values, dtype in [
        (0, np.int8),
        (126, np.int8),
        (127, np.int16),
        (32_766, np.int16),
        (32_767, np.int32),
        (2**31 - 2, np.int32),
        (2**31 - 1, np.int64),
    ]:
        assert code_dtype(n_values) == dtype, n_values
        info = np.iinfo(code_dtype(n_values))
        assert info.min <= -1 and n_values <= info.max


@pytest.mark.parametrize(
    ("distinct", "dtype"),
    [(5, np.int8), (126, np.int8), (127, np.int16), (300, np.int16), (70_000, np.int32)],
)
def test_codes_take_the_narrowest_type_their_texts_allow(tmp_path, monkeypatch, distinct, dtype):
    """A column of more than 126 (255) or 32,766 (65,535) distinct texts is read into int16
    or int32 codes, never wrapped: the cells, and the bytes written back from the codes (by
    lines and cell by cell), are the reference reader's and writer's, missing cells included.
    The file is read in many blocks, so the blocks' dictionaries are merged into the wide one."""
    import privgate.core.columnar as columnar

    monkeypatch.setattr(columnar, "BLOCK_BYTES", 64 << 10)
    rng = np.random.default_rng(distinct)
    n = max(2 * distinct, 2_000)
    texts = np.array([f"v{i:06d}" for i in range(distinct)], dtype=object)
    wide = texts[np.concatenate([np.arange(distinct), rng.integers(0, distinct, n - distinct)])]
    wide[distinct + rng.permutation(n - distinct)[:7]] = None  # code -1 in the narrow type
    small = np.array(["a", "b", None], dtype=object)[rng.integers(0, 3, n)]
    path = tmp_path / "wide.csv"
    write_text_columns(path, {"wide": wide, "small": small})

    coded = read_coded_csv(path)
    text = read_text_columns(path)
    assert coded["wide"].codes.dtype == dtype
    assert coded["small"].codes.dtype == np.int8
    for name in ("wide", "small"):
        assert coded[name].tolist() == text[name].tolist()
    assert len(coded["wide"].values) == distinct
    assert int(coded["wide"].codes.max()) == distinct - 1
    assert int((coded["wide"].codes < 0).sum()) == 7
    rows = rng.permutation(n)[: n // 2]
    write_text_columns(tmp_path / "reference.csv", {k: c[rows] for k, c in text.items()})
    for by in ("lines", "cells"):
        if by == "cells":
            monkeypatch.setattr(columnar, "_write_lines", lambda *args: False)
        write_coded_csv(tmp_path / f"{by}.csv", coded, rows)
        assert (tmp_path / f"{by}.csv").read_bytes() == (tmp_path / "reference.csv").read_bytes()
    assert TextCodes.from_text(text["wide"]).codes.dtype == dtype


#: More files on which the two readers could part ways (review15): line ends mixed or lone
#: "\r" blank lines, byte-order marks off the first byte, bytes that are not UTF-8 (an
#: overlong NUL, an encoded surrogate), characters that other line splitters take for line
#: ends (U+2028, NEL, VT, FF, FS), a trailing delimiter, a row of one space.
EDGE_BYTES = {
    "mixed_line_ends": b"a,b\n1,2\r\n3,4\r5,6",
    "lone_cr_blank_line": b"a,b\n1,2\r\r3,4\n",
    "cr_ended_header_then_lf": b"a,b\r\n1,2\n",
    "header_only_no_newline": b"a,b",
    "header_cr_only": b"a,b\r",
    "byte_order_mark_in_a_cell": b"a,b\n\xef\xbb\xbf1,2\n",
    "two_byte_order_marks": b"\xef\xbb\xbf\xef\xbb\xbfa,b\n1,2\n",
    "overlong_nul": b"a,b\n\xc0\x80,2\n",
    "encoded_surrogate": b"a,b\n\xed\xa0\x80,2\n",
    "line_separator_u2028": "a,b\n1\u2028x,2\n".encode(),
    "next_line_nel": "a,b\n1\x85x,2\n".encode(),
    "vt_ff_fs": b"a,b\n1\x0bx,2\n1\x0cy,3\n1\x1cz,4\n",
    "tab_in_cell": b"a,b\n\t1,2\n",
    "trailing_delimiter": b"a,b\n1,2,\n",
    "one_space_row": b"a,b\n \n",
    "only_blank_lines": b"\n\n",
}


@pytest.mark.parametrize("name", sorted(EDGE_BYTES))
@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("lines", [False, True])
def test_coded_reader_reads_the_reference_readers_cells_on_odd_bytes(tmp_path, name, header, lines):
    path = tmp_path / f"{name}.csv"
    path.write_bytes(EDGE_BYTES[name])
    assert _cells(read_coded_csv, path, header=header, lines=lines) == _cells(
        read_text_columns, path, header=header
    )


def _few_lines_table(n_rows: int, seed: int) -> bytes:
    """A release-like ';' file: rows drawn from a few hundred distinct lines, with missing
    markers ('' and '?'), a row of empty cells, non-ASCII text and a byte-order mark's
    character inside a cell; no final line feed."""
    rng = np.random.default_rng(seed)
    values = [["", "?", "x", "ä€", "a b"], ["1", "22", "?", "\ufeffz", "n"], ["p", "q", ""]]
    distinct = [";".join(rng.choice(v) for v in values) for _ in range(300)] + [";;"]
    picks = rng.integers(0, len(distinct), n_rows)
    return ("u;v;w\n" + "\n".join(distinct[i] for i in picks)).encode("utf-8")


def _no_cell_reader(monkeypatch) -> None:
    """Make any hand-off of the line reader to the cell reader or the reference fail."""
    import privgate.core.columnar as columnar

    def refuse(*args, **kwargs):
        raise AssertionError("the line reader handed the file on")

    monkeypatch.setattr(columnar, "_read_arrow", refuse)
    monkeypatch.setattr(columnar, "read_text_columns", refuse)


@pytest.mark.parametrize(("chunk", "merge"), [(1 << 20, 8), (4096, 3), (97, 1)])
def test_line_reader_reads_the_reference_readers_cells_across_chunks(
    tmp_path, monkeypatch, chunk, merge
):
    """A file of few distinct lines read as lines (chunks of 97 bytes to 1 MiB, lines cut
    at chunk ends, chunks merged one, three or eight at a time): the reference reader's cells
    and the cell reader's codes, without handing the file on; with a final line feed too."""
    import privgate.core.columnar as columnar

    monkeypatch.setattr(columnar, "LINE_CHUNK_BYTES", chunk)
    monkeypatch.setattr(columnar, "MERGE_CHUNKS", merge)
    options = {"delimiter": ";", "missing": ["", "?"]}
    for ending in (b"", b"\n"):
        path = tmp_path / f"few{len(ending)}.csv"
        path.write_bytes(_few_lines_table(20_000, chunk) + ending)
        text = read_text_columns(path, **options)
        cells = read_coded_csv(path, **options)  # cell by cell
        with monkeypatch.context() as patched:
            _no_cell_reader(patched)
            coded = read_coded_csv(path, **options, lines=True)
        assert list(coded) == list(text)
        for name, column in coded.items():
            assert column.tolist() == text[name].tolist()
            assert column.codes.dtype == cells[name].codes.dtype
            assert np.array_equal(column.codes, cells[name].codes)
            assert list(column.values) == list(cells[name].values)


def test_line_reader_hands_a_file_of_mostly_distinct_lines_to_the_cell_reader(
    tmp_path, monkeypatch
):
    """Distinct lines past MAX_LINE_SHARE of the rows (and past MAX_DISTINCT_LINES) end the
    line reading after its first chunk: the cell reader reads the file, the same cells."""
    import privgate.core.columnar as columnar

    monkeypatch.setattr(columnar, "LINE_CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(columnar, "MAX_DISTINCT_LINES", 100)
    path = tmp_path / "distinct.csv"
    path.write_text("a,b\n" + "".join(f"{i},{i % 7}\n" for i in range(50_000)))
    calls = []
    read_arrow = columnar._read_arrow
    split = columnar._chunk_lines

    def counted(name, function):
        def run(*args, **kwargs):
            calls.append(name)
            return function(*args, **kwargs)

        return run

    monkeypatch.setattr(columnar, "_read_arrow", counted("cells", read_arrow))
    monkeypatch.setattr(columnar, "_chunk_lines", counted("chunk", split))
    coded = read_coded_csv(path, lines=True)
    assert calls == ["chunk", "cells"]  # one chunk of 64 KiB, then cell by cell
    text = read_text_columns(path)
    assert {k: c.tolist() for k, c in coded.items()} == {k: c.tolist() for k, c in text.items()}


_PLAIN = st.sampled_from(["", "?", "a", "b", "ä", "x y", "\ufeff"])
#: Cells that send a file on (quotes, line ends, NUL) or that another splitter treats apart.
_ODD = st.sampled_from(['"', 'q"r', "\r", "\n", "\r\n", "\x00", ",", "\x01", "\u2028"])


@st.composite
def _random_csv(draw) -> str:
    """A small CSV text: half of them plain (two cells a row, so most are read as lines to
    the end), the others with odd cells, rows of one to three cells and blank lines."""
    plain = draw(st.booleans())
    cell = _PLAIN if plain else st.one_of(_PLAIN, _PLAIN, _ODD)
    width = st.just(2) if plain else st.sampled_from([2, 2, 2, 1, 3])
    rows = draw(st.lists(width.flatmap(lambda w: st.lists(cell, min_size=w, max_size=w))))
    return "\n".join(["h,k", *(",".join(row) for row in rows)]) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=300, deadline=None)
@given(
    text=_random_csv(),
    header=st.booleans(),
    chunk=st.integers(4, 64),
    merge=st.integers(1, 4),
)
def test_line_reader_reads_the_reference_readers_cells_on_random_files(text, header, chunk, merge):
    """Random small files (cells holding delimiters, quotes, line ends, NUL, markers; rows
    of one to three cells, blank lines) read as lines in chunks of 4-64 bytes: the reference
    reader's cells, or its refusal."""
    import tempfile

    import privgate.core.columnar as columnar

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "random.csv"
        path.write_bytes(text.encode("utf-8"))
        options = {"header": header, "missing": ["", "?"]}
        saved = columnar.LINE_CHUNK_BYTES, columnar.MERGE_CHUNKS
        columnar.LINE_CHUNK_BYTES, columnar.MERGE_CHUNKS = chunk, merge
        try:
            coded = _cells(read_coded_csv, path, **options, lines=True)
        finally:
            columnar.LINE_CHUNK_BYTES, columnar.MERGE_CHUNKS = saved
        assert coded == _cells(read_text_columns, path, **options)


def test_large_files_are_parsed_in_larger_blocks_to_the_same_cells(shared_data, monkeypatch):
    """From LARGE_FILE_BYTES a file is parsed in LARGE_BLOCK_BYTES blocks (fewer dictionaries
    to merge), below in BLOCK_BYTES; either way the reference reader's cells (Adult, with the
    threshold lowered under its size and 64 KiB blocks: many blocks merged)."""
    import privgate.core.columnar as columnar

    assert columnar._block_bytes(columnar.LARGE_FILE_BYTES - 1) == columnar.BLOCK_BYTES
    assert columnar._block_bytes(columnar.LARGE_FILE_BYTES) == columnar.LARGE_BLOCK_BYTES
    assert columnar.LARGE_BLOCK_BYTES > columnar.BLOCK_BYTES
    path = shared_data("arx/adult.csv")
    monkeypatch.setattr(columnar, "LARGE_FILE_BYTES", 1 << 10)
    monkeypatch.setattr(columnar, "LARGE_BLOCK_BYTES", 64 << 10)
    options = {"delimiter": ";", "missing": ["", "?"]}
    text = read_text_columns(path, **options)
    with monkeypatch.context() as patched:
        patched.setattr(columnar, "read_text_columns", None)  # a fallback would fail
        coded = read_coded_csv(path, **options)
    assert {k: c.tolist() for k, c in coded.items()} == {k: c.tolist() for k, c in text.items()}
