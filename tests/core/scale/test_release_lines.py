"""`privgate anonymize`'s release as distinct lines and row line ids (issue 18): the same
frequency set and the same written rows as generalizing every row column by column, in a
random order of their own."""

from __future__ import annotations

import numpy as np
import pytest
from adult_reference import ADULT_POLICY

from privgate.core.anonymize import full_domain_setup
from privgate.core.columnar import TextCodes, read_coded_csv, write_coded_csv
from privgate.core.policy import load_policy
from privgate.core.scale import (
    anonymize_codes,
    frequency_set_from_codes,
    release_lines,
    shuffled_rows,
    tuples_from_codes,
)

CASES = {
    # salary-class released but not searched: the tuples hold a column the search does not
    "k5": {"privacy.k": 5},
    # salary-class searched (sensitive), some of its cells missing (the fixture's)
    "l-diversity": {"privacy.k": 5, "privacy.l_diversity": [{"column": "salary-class", "l": 2}]},
    "k50-no-suppression": {"privacy.k": 50, "privacy.suppression_limit": 0.0},
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("missing_workclass", [False, True])
def test_line_release_writes_the_bytes_of_the_row_by_row_release(
    scaled_adult, tmp_path, case, missing_workclass
):
    policy = load_policy(ADULT_POLICY).with_overrides(
        **{"input.path": str(scaled_adult), **CASES[case]}
    )
    setup = full_domain_setup(policy, "test")
    spec = policy.input
    columns = read_coded_csv(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    if missing_workclass:  # a missing quasi-identifier cell: its hierarchy's own value
        work = columns["workclass"]
        codes = work.codes.copy()
        codes[::97] = -1
        columns["workclass"] = TextCodes(codes, work.values)

    coded = tuples_from_codes(columns, setup)
    expected_freq = frequency_set_from_codes(columns, setup)
    np.testing.assert_array_equal(coded.freq.qi_codes, expected_freq.qi_codes)
    np.testing.assert_array_equal(coded.freq.sensitive, expected_freq.sensitive)
    np.testing.assert_array_equal(coded.freq.counts, expected_freq.counts)
    assert len(coded.row_to_tuple) == len(columns["age"]) == int(coded.freq.counts.sum())

    rows_release = anonymize_codes(columns, setup, shuffle_seed=5)
    lines_release = release_lines(coded, setup, shuffle_seed=5)
    assert lines_release.plan.levels == rows_release.plan.levels
    assert len(lines_release.ids) == len(rows_release.rows)
    assert list(lines_release.lines) == list(rows_release.columns)
    # far fewer lines than rows: the writer gathers them instead of keying every row
    assert len(lines_release.lines["age"]) < len(lines_release.ids) // 4

    write_coded_csv(tmp_path / "rows.csv", rows_release.columns)
    write_coded_csv(tmp_path / "lines.csv", lines_release.lines, lines_release.ids)
    written = (tmp_path / "lines.csv").read_bytes().splitlines()
    expected = (tmp_path / "rows.csv").read_bytes().splitlines()
    assert written[0] == expected[0]  # the header
    assert sorted(written[1:]) == sorted(expected[1:])  # the same rows, byte for byte
    if missing_workclass and rows_release.plan.levels["workclass"] == 0:
        assert any(b",," in line for line in written)  # a missing cell released as empty

    # the order: not the input's (the kept rows in input order), drawn anew without a seed
    in_input_order = anonymize_codes(columns, setup, shuffle=False)
    write_coded_csv(tmp_path / "input_order.csv", in_input_order.columns)
    assert written != (tmp_path / "input_order.csv").read_bytes().splitlines()
    again = release_lines(coded, setup, shuffle_seed=5)
    np.testing.assert_array_equal(again.ids, lines_release.ids)  # a seed reproduces it
    fresh = release_lines(coded, setup)
    assert not np.array_equal(fresh.ids, lines_release.ids)
    assert np.array_equal(np.sort(fresh.ids), np.sort(lines_release.ids))


def test_the_published_order_keeps_nothing_of_the_input_order(scaled_adult):
    """Each released row is traced back to its input row (a unique, released row number):
    the rows released are exactly the plan's kept rows, and their published order is a
    uniformly random one. A rotation of the input order (a random start, then the input's
    sequence), a shuffle within blocks, an order by line or a reversed order each keep the
    input's sequence visible to a reader of the file; each fails here."""
    policy = load_policy(ADULT_POLICY).with_overrides(
        **{"input.path": str(scaled_adult), "privacy.k": 5, "columns.row": {"role": "insensitive"}}
    )
    setup = full_domain_setup(policy, "test")
    spec = policy.input
    columns = read_coded_csv(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    n = len(columns["age"])
    numbers = np.array([f"{i:06d}" for i in range(n)], dtype=object)  # sorted: code == row
    columns["row"] = TextCodes(np.arange(n, dtype=np.int32), numbers)
    assert "row" in setup.released_columns

    release = release_lines(tuples_from_codes(columns, setup), setup, shuffle_seed=7)
    source = release.lines["row"].codes[release.ids]  # each published row's input row
    kept = anonymize_codes(columns, setup, shuffle=False).rows  # the plan's rows, in order
    assert 0 < len(kept) < n  # some rows suppressed, so their positions could leak
    np.testing.assert_array_equal(np.sort(source), kept)  # exactly the plan's rows

    rank = np.searchsorted(kept, source)  # a permutation of 0..m-1 if the order is uniform
    m = len(rank)
    # in input sequence next to each other: about 1 pair for a uniform order (Poisson(1))
    assert int(np.count_nonzero(np.diff(rank) == 1)) < 12
    assert int(np.count_nonzero(np.diff(rank) == -1)) < 12
    position = np.arange(m, dtype=float)
    rho = np.corrcoef(position, rank.astype(float))[0, 1]
    assert abs(rho) < 5 / np.sqrt(m)  # about 0.02 at 60k rows: no trend of the input order
    first_half = rank[: m // 2]
    assert abs(float(np.mean(first_half < m // 2)) - 0.5) < 5 * 0.5 / np.sqrt(m // 2)


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 300_001])
def test_the_published_order_is_the_seeded_permutation_drawn_in_place(n):
    """The rows' order is drawn by shuffling a copy of each row's tuple (4 bytes a row), not
    by gathering through ``rng.permutation(n)`` (8 more): the same array for a seed, so a
    seeded release is the same file as before."""
    from privgate.core.scale._lines import _permuted_tuples

    row_to_tuple = np.random.default_rng(n).integers(0, 5000, n).astype(np.int32)
    for seed in (0, 7, 2**40 + 3):
        expected = row_to_tuple[np.random.default_rng(seed).permutation(n)]
        got = _permuted_tuples(row_to_tuple, seed)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 300_001])
def test_rows_shuffled_from_their_count_are_the_seeded_permutation(n):
    """The order ``privgate anonymize`` draws while it groups the rows: the seed's
    ``permutation(n)``, as int32."""
    for seed in (0, 7, 2**40 + 3):
        got = shuffled_rows(n, seed)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, np.random.default_rng(seed).permutation(n))


def test_a_release_in_an_order_drawn_beforehand_is_the_seeded_release(scaled_adult):
    """``row_order`` (drawn by :func:`shuffled_rows` before the search, as the command does)
    gives the ids the same seed gives when the order is drawn beside the search: a seeded
    release is the same file either way."""
    policy = load_policy(ADULT_POLICY).with_overrides(**{"input.path": str(scaled_adult)})
    setup = full_domain_setup(policy, "test")
    spec = policy.input
    columns = read_coded_csv(
        spec.path, spec.delimiter, spec.encoding, spec.header, spec.missing_values
    )
    coded = tuples_from_codes(columns, setup)
    n = len(coded.row_to_tuple)
    for seed in (5, 2026):
        beside = release_lines(coded, setup, shuffle_seed=seed)
        before = release_lines(coded, setup, row_order=shuffled_rows(n, seed))
        np.testing.assert_array_equal(before.ids, beside.ids)
        assert before.plan.levels == beside.plan.levels
