"""Partial histograms, their merge, and the frequency set built from them (no cluster)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privgate.core.encoding import encode_table
from privgate.core.gate import class_stats_of
from privgate.core.hierarchy import hierarchies_for, taxonomy_hierarchy
from privgate.core.ingest import read_table
from privgate.core.scale import (
    class_stats_from_histogram,
    frequency_set_from_histogram,
    merge_histograms,
    partition_histogram,
)


def _histogram_rows(h):
    """The histogram as a set of (value tuple, count) with missing cells as None."""
    rows = []
    for codes, count in zip(h.tuples.tolist(), h.counts.tolist(), strict=True):
        cells = tuple(None if c < 0 else h.values[j][c] for j, c in enumerate(codes))
        rows.append((cells, count))
    return sorted(rows, key=repr)


def _pieces(frame: pd.DataFrame, cuts) -> list[pd.DataFrame]:
    bounds = [0, *[int(c) for c in cuts], len(frame)]
    return [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _even(frame: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    return _pieces(frame, np.linspace(0, len(frame), n + 1)[1:-1])


def test_merge_of_any_partitioning_is_the_whole_histogram():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z", None], 2000),
            "b": rng.choice(["1", "2", "10"], 2000),
            "c": pd.Categorical(rng.choice(["p", "q"], 2000)),
        }
    )
    whole = partition_histogram(frame, ["a", "b", "c"])
    cuts = np.sort(rng.choice(np.arange(1, 2000), 9, replace=False))
    pieces = [partition_histogram(p, ["a", "b", "c"]) for p in _pieces(frame, cuts)]
    merged = merge_histograms([merge_histograms(pieces[:4]), merge_histograms(pieces[4:])])
    assert _histogram_rows(merged) == _histogram_rows(whole)
    assert merged.n_rows == 2000
    assert [list(v) for v in merged.values] == [["x", "y", "z"], ["1", "10", "2"], ["p", "q"]]


def test_frequency_set_equals_the_one_machine_encoding(adult_policy):
    frame = read_table(adult_policy.input)
    hierarchies = hierarchies_for(adult_policy)
    sensitive = ["salary-class"]
    expected = encode_table(frame, hierarchies, sensitive).frequency_set()
    columns = [*hierarchies, *sensitive]
    pieces = [partition_histogram(p, columns) for p in _even(frame, 7)]
    freq = frequency_set_from_histogram(merge_histograms(pieces), hierarchies, sensitive)
    np.testing.assert_array_equal(freq.qi_codes, expected.qi_codes)
    np.testing.assert_array_equal(freq.sensitive, expected.sensitive)
    np.testing.assert_array_equal(freq.counts, expected.counts)
    assert freq.table.n_rows == expected.table.n_rows
    for ours, theirs in zip(freq.table.columns, expected.table.columns, strict=True):
        assert ours.domain_size == theirs.domain_size
        for a, b in zip(ours.level_maps, theirs.level_maps, strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(ours.labels, theirs.labels, strict=True):
            np.testing.assert_array_equal(a, b)
    for name in sensitive:
        np.testing.assert_array_equal(
            freq.table.sensitive_values[name], expected.table.sensitive_values[name]
        )


def test_missing_quasi_identifier_cells_encode_as_on_one_machine():
    """A missing cell is a value of its own: the histogram path places it as encode_table does."""
    hierarchies = {
        "q": taxonomy_hierarchy("q", {"AB": ["a", "b"], "C": ["c"]}),
        "r": taxonomy_hierarchy("r", {"low": ["1", "2"], "high": ["3"]}),
    }
    rng = np.random.default_rng(11)
    frame = pd.DataFrame(
        {"q": rng.choice(["a", "b", "c", None], 400), "r": rng.choice(["1", "2", "3"], 400)},
        dtype="str",
    )
    expected = encode_table(frame, hierarchies, []).frequency_set()
    pieces = [partition_histogram(p, ["q", "r"]) for p in _even(frame, 3)]
    freq = frequency_set_from_histogram(merge_histograms(pieces), hierarchies)
    assert sorted(freq.counts.tolist()) == sorted(expected.counts.tolist())
    for ours, theirs in zip(freq.table.columns, expected.table.columns, strict=True):
        assert ours.domain_size == theirs.domain_size
        assert sorted(map(repr, ours.labels[1])) == sorted(map(repr, theirs.labels[1]))
    assert None in list(freq.table.columns[0].labels[0])  # the missing cell, kept missing
    # The missing cell moves from first (code -1) to last: the tuples are sorted again, not
    # left in the histogram's order.
    assert (merge_histograms(pieces).tuples[:, 0] < 0).any()
    order = np.lexsort(freq.qi_codes.T[::-1])
    np.testing.assert_array_equal(order, np.arange(len(freq.counts)))


def test_class_stats_equal_the_gates_on_text_with_missing_cells():
    rng = np.random.default_rng(5)
    n = 3000
    frame = pd.DataFrame(
        {
            "q1": rng.choice(["a", "b", None], n),
            "q2": rng.choice([1, 2, 3], n),
            "s": rng.choice(["lo", "hi", None], n),
        }
    )
    pieces = [partition_histogram(p, ["q1", "q2", "s"], text=True) for p in _even(frame, 4)]
    ours = class_stats_from_histogram(merge_histograms(pieces), 2)
    gate = class_stats_of(frame, ["q1", "q2"], ["s"])
    assert sorted(ours.sizes.tolist()) == sorted(gate.sizes.tolist())
    assert list(ours.ordered_values["s"]) == list(gate.ordered_values["s"])
    np.testing.assert_allclose(ours.overall["s"], gate.overall["s"])
    rows = sorted(map(tuple, ours.histograms["s"].tolist()))
    assert rows == sorted(map(tuple, gate.histograms["s"].tolist()))
