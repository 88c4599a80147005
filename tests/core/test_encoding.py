"""The grouping behind every frequency set (``group_codes``) and the text factorization,
against their definitions: a row-wise ``np.unique`` and pandas' ``factorize(sort=True)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privgate.core.encoding as encoding
from privgate.core.encoding import encode_table, factorize, group_codes, hash_groups
from privgate.core.hierarchy import ARXHierarchy
from privgate.core.scale import histogram_from_codes, partition_histogram


def _reference(parts: list[np.ndarray], n: int):
    """The definition: distinct rows of the stacked codes, sorted, with counts."""
    matrix = np.column_stack(parts) if parts else np.empty((n, 0), np.int64)
    tuples, inverse, counts = np.unique(matrix, axis=0, return_inverse=True, return_counts=True)
    return tuples, inverse.reshape(-1), counts


@st.composite
def _code_columns(draw):
    """Up to 6 code columns; some radices huge, so that their product overflows int64."""
    n = draw(st.integers(0, 300))
    width = draw(st.integers(1, 6))
    radices = [draw(st.sampled_from([1, 2, 3, 7, 50, 1 << 20, 1 << 40])) for _ in range(width)]
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # Few distinct values per column even when the radix is huge, so that rows repeat.
    parts = [
        rng.choice(rng.integers(0, r, size=min(r, 4)), size=n).astype(np.int64) for r in radices
    ]
    return parts, radices, n


@settings(max_examples=150, deadline=None)
@given(_code_columns())
def test_group_codes_is_the_row_wise_unique(case):
    parts, radices, n = case
    tuples, inverse, counts = group_codes(parts, radices, n)
    expected = _reference(parts, n)
    np.testing.assert_array_equal(tuples, expected[0])
    np.testing.assert_array_equal(inverse, expected[1])
    np.testing.assert_array_equal(counts, expected[2])


@settings(max_examples=100, deadline=None)
@given(_code_columns())
def test_group_codes_with_missing_codes_and_an_offset(case):
    parts, radices, n = case
    # -1 (a missing cell) wherever the code was 0; the radix counts it as a value.
    shifted = [p - 1 for p in parts]
    tuples, inverse, counts = group_codes(shifted, radices, n, offset=1)
    expected = _reference(shifted, n)
    np.testing.assert_array_equal(tuples, expected[0])
    np.testing.assert_array_equal(inverse, expected[1])
    np.testing.assert_array_equal(counts, expected[2])
    _, none, same_counts = group_codes(shifted, radices, n, offset=1, inverse=False)
    assert none is None
    np.testing.assert_array_equal(same_counts, expected[2])


def test_group_codes_overflowing_key_is_exact():
    """Nine columns of 2**20 values: the product (2**180) cannot be one int64 key."""
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, 3, 5000) * (1 << 18) for _ in range(9)]
    tuples, inverse, counts = group_codes(parts, [1 << 20] * 9, 5000)
    expected = _reference(parts, 5000)
    np.testing.assert_array_equal(tuples, expected[0])
    np.testing.assert_array_equal(inverse, expected[1])
    np.testing.assert_array_equal(counts, expected[2])


@pytest.mark.parametrize(
    "keys", ["signed", "under 2**32", "over 2**32"]
)  # the distinct keys sorted by radix only under 2**32 (RADIX_ROWS lowered to 1)
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
@pytest.mark.parametrize("rows", [0, 1, 5, 4000])
def test_hash_groups_is_np_unique_whatever_the_ranges(rows, parts, keys, monkeypatch):
    """The rows keyed and hashed one range per thread: np.unique's group ids (the keys'
    order), distinct keys, first rows and counts, for any number of ranges; every row keyed
    once, in contiguous ranges; ``firsts=False`` leaves the first rows out. With the merged
    distinct keys sorted by radix passes where they fit 32 bits, by np.argsort elsewhere."""
    monkeypatch.setattr(encoding, "RADIX_ROWS", 1)
    rng = np.random.default_rng(rows * 10 + parts)
    if keys == "signed":
        key = rng.integers(-30, 300, rows).astype(np.int64) * 1_000_003
    elif keys == "under 2**32":  # both 16-bit halves, neighbouring high halves
        key = (rng.integers(60_000, 60_004, rows) << 16) + rng.integers(0, 40, rows)
    else:
        key = rng.integers(0, 40, rows) << 31
    ranges: list[tuple[int, int]] = []

    def build_key(start: int, stop: int) -> np.ndarray:
        ranges.append((start, stop))
        return key[start:stop]

    group, distinct, firsts, counts = hash_groups(build_key, rows, parts)
    want, first, inverse, want_counts = np.unique(
        key, return_index=True, return_inverse=True, return_counts=True
    )
    np.testing.assert_array_equal(distinct, want)
    np.testing.assert_array_equal(group, inverse.reshape(-1))
    np.testing.assert_array_equal(firsts, first)
    np.testing.assert_array_equal(counts, want_counts)
    ranges.sort()
    assert ranges[0][0] == 0 and ranges[-1][1] == rows and len(ranges) == max(1, min(parts, rows))
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    _, _, none, same_counts = hash_groups(build_key, rows, parts, firsts=False)
    assert none is None
    np.testing.assert_array_equal(same_counts, want_counts)


@pytest.mark.parametrize("offset", [0, 1])
def test_group_codes_in_ranges_is_the_serial_grouping(monkeypatch, offset):
    """From PARALLEL_ROWS rows (lowered here) the key is built and hashed one range per core:
    the same tuples (in their narrow type), row tuples and counts as the serial pass and the
    row-wise unique; a key that would overflow stays on the serial pass, still exact."""
    rng = np.random.default_rng(offset)
    n, radices = 20_000, [3, 7, 50, 2, 1]
    parts = [(rng.integers(0, r, n) - offset).astype(np.int8) for r in radices]
    serial = group_codes(parts, radices, n, offset=offset, dtype=np.int8)
    used = []
    ranged_groups = encoding.hash_groups
    monkeypatch.setattr(encoding, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(
        encoding, "hash_groups", lambda *a, **k: used.append(1) or ranged_groups(*a, **k)
    )
    ranged = group_codes(parts, radices, n, offset=offset, dtype=np.int8)
    assert used, "the ranged grouping was not used"
    expected = _reference([p.astype(np.int64) for p in parts], n)
    for got, want, reference in zip(ranged, serial, expected, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, reference)
    # keys built a few rows at a time (ragged last blocks), row tuples placed as int32
    monkeypatch.setattr(encoding, "KEY_BLOCK_ROWS", 777)
    blocked = group_codes(parts, radices, n, offset=offset, dtype=np.int8, inverse_dtype=np.int32)
    assert blocked[1].dtype == np.int32
    for got, reference in zip(blocked, expected, strict=True):
        np.testing.assert_array_equal(got, reference)
    monkeypatch.setattr(encoding, "PARALLEL_ROWS", 1 << 40)
    assert group_codes(parts, radices, n, offset=offset, inverse_dtype=np.int32)[1].dtype == (
        np.int32
    )  # the serial pass too
    monkeypatch.setattr(encoding, "PARALLEL_ROWS", 1)
    _, none, counts = group_codes(parts, radices, n, offset=offset, inverse=False)
    assert none is None
    np.testing.assert_array_equal(counts, expected[2])
    used.clear()
    wide = [rng.integers(0, 3, 5000) * (1 << 18) for _ in range(9)]
    tuples, inverse, counts = group_codes(wide, [1 << 20] * 9, 5000)
    assert not used  # 2**180 keys: ranked column by column, serially
    for got, want in zip((tuples, inverse, counts), _reference(wide, 5000), strict=True):
        np.testing.assert_array_equal(got, want)


def _old_frequency_set(encoded):
    """The frequency set as defined before the hash grouping: a row-wise unique over the
    QI codes then the sensitive codes."""
    parts = [c.codes.astype(np.int64) for c in encoded.columns]
    parts += [encoded.sensitive_codes[s].astype(np.int64) for s in encoded.sensitive_codes]
    return _reference(parts, encoded.n_rows)


def _assert_same_frequency_set(freq, encoded):
    tuples, inverse, counts = _old_frequency_set(encoded)
    q = len(encoded.columns)
    np.testing.assert_array_equal(freq.qi_codes, tuples[:, :q])
    np.testing.assert_array_equal(freq.sensitive, tuples[:, q:])
    np.testing.assert_array_equal(freq.counts, counts)
    np.testing.assert_array_equal(freq.row_to_tuple, inverse)


def test_adult_frequency_set_is_the_row_wise_unique(adult):
    encoded = encode_table(adult.frame, adult.hierarchies, ["salary-class"])
    freq = encoded.frequency_set()
    _assert_same_frequency_set(freq, encoded)
    assert int(freq.counts.sum()) == 30162


_VOCAB = ["a", "b", "c", "dé", "Z", "10", "9"]


@st.composite
def _tables(draw):
    n = draw(st.integers(1, 200))
    width = draw(st.integers(1, 4))
    cells = st.one_of(st.none(), st.sampled_from(_VOCAB))
    data = {f"q{j}": draw(st.lists(cells, min_size=n, max_size=n)) for j in range(width)}
    sensitive = st.one_of(st.none(), st.sampled_from(["x", "y"]))
    data["s"] = draw(st.lists(sensitive, min_size=n, max_size=n))
    text = draw(st.booleans())
    frame = pd.DataFrame(data, dtype="str" if text else object)
    return frame, [f"q{j}" for j in range(width)]


@settings(max_examples=80, deadline=None)
@given(_tables())
def test_random_tables_with_missing_cells(case):
    frame, qis = case
    hierarchies = {q: ARXHierarchy(q, [[v, "*"] for v in _VOCAB]) for q in qis}
    encoded = encode_table(frame, hierarchies, ["s"])
    _assert_same_frequency_set(encoded.frequency_set(), encoded)
    # The columnar path's and a partition's histogram hold the same tuples and counts.
    columns = [*qis, "s"]
    coded = [factorize(frame[c]) for c in columns]
    whole = histogram_from_codes(columns, [v for _, v in coded], [c for c, _ in coded])
    part = partition_histogram(frame, columns)
    expected = _reference([c.astype(np.int64) for c, _ in coded], len(frame))
    for h in (whole, part):
        order = np.lexsort(h.tuples.T[::-1])
        np.testing.assert_array_equal(h.tuples[order], expected[0])
        np.testing.assert_array_equal(h.counts[order], expected[2])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(_VOCAB), st.text(max_size=3)), max_size=60))
def test_factorize_of_arrow_text_is_pandas_sorted_factorize(cells):
    series = pd.Series(cells, dtype="str")
    codes, uniques = factorize(series)
    expected_codes, expected_uniques = series.astype(object).factorize(sort=True)
    np.testing.assert_array_equal(codes, expected_codes)
    assert list(uniques) == list(expected_uniques)
    assert codes.dtype == np.int32


@settings(max_examples=60, deadline=None)
@given(_tables(), st.data())
def test_classes_by_radix_order_are_np_unique_of_the_generalized_tuples(case, data):
    """A frequency set's classes at any levels (``int32`` keys, ordered by two radix passes
    from RADIX_ROWS tuples, lowered here to one): each distinct tuple's rank among the
    distinct generalized tuples, as ``np.unique`` over the rows gives it."""
    frame, qis = case
    hierarchies = {q: ARXHierarchy(q, [[v, "*"] for v in _VOCAB]) for q in qis}
    freq = encode_table(frame, hierarchies, ["s"]).frequency_set()
    levels = [data.draw(st.integers(0, c.height)) for c in freq.table.columns]
    want = np.unique(freq.generalized_codes(levels), axis=0, return_inverse=True)[1]
    for threshold in (1, 1 << 40):
        saved = encoding.RADIX_ROWS
        encoding.RADIX_ROWS = threshold
        try:
            class_ids, n_classes = freq.classes(levels)
        finally:
            encoding.RADIX_ROWS = saved
        np.testing.assert_array_equal(class_ids, want.reshape(-1))
        assert n_classes == (int(want.max()) + 1 if len(want) else 0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sort_order_sorts_negative_keys(dtype, monkeypatch):
    """A key with negative values is ordered as np.argsort orders it: the radix passes would
    wrap a negative key's high half and put it after every non-negative one (equal keys
    still adjacent, the order :func:`group_codes` promises broken)."""
    monkeypatch.setattr(encoding, "RADIX_ROWS", 1)
    rng = np.random.default_rng(3)
    key = rng.integers(-70_000, 70_000, 5000).astype(dtype)
    ordered = key[encoding.sort_order(key)]
    np.testing.assert_array_equal(ordered, np.sort(key))
